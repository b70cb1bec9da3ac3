"""The jaxpr: a typed, first-order program in A-normal form, and its interpreter.

`Jaxpr(constvars, invars, outvars, eqns)` is the program; `ClosedJaxpr` pairs
it with the values of its constvars (the 2020 API calls it `TypedJaxpr` and
the values `literals`). `eval_jaxpr` interprets by calling `bind`, so
evaluating a jaxpr under any trace transforms it.
"""
import itertools

import numpy as np

from tracejax._src.core import avals as avals_mod
from tracejax._src.core.trace import Primitive, bind


class Var:
  """A variable of a jaxpr. Names are given when printing, in order of appearance."""
  __slots__ = ("aval", "count")
  _counter = itertools.count()

  def __init__(self, aval):
    self.aval = aval
    self.count = next(Var._counter)

  def __repr__(self):
    return f"Var(id={self.count}):{self.aval.str_short()}"


class DropVar(Var):
  """An output that no one reads (printed `_`)."""
  __slots__ = ()

  def __repr__(self):
    return "_"


class Literal:
  """A scalar constant written inline in an equation."""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval):
    self.val, self.aval = val, aval

  def __repr__(self):
    v = np.asarray(self.val)
    if v.dtype == np.bool_:
      return str(bool(v))
    return str(v[()]) if v.ndim == 0 else repr(self.val)


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params", "source_info")

  def __init__(self, invars, outvars, primitive, params, source_info=None):
    self.invars, self.outvars = list(invars), list(outvars)
    self.primitive, self.params, self.source_info = primitive, params, source_info

  def replace(self, **kw):
    new = JaxprEqn(self.invars, self.outvars, self.primitive, self.params, self.source_info)
    for k, v in kw.items():
      setattr(new, k, v)
    return new

  def __repr__(self):
    from tracejax._src.core import pp
    return pp.pp_eqn(self)


class Jaxpr:
  """`{ lambda constvars ; invars. let eqns in outvars }`."""
  __slots__ = ("constvars", "invars", "outvars", "eqns", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns):
    self.constvars, self.invars = list(constvars), list(invars)
    self.outvars, self.eqns = list(outvars), list(eqns)

  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  def __str__(self):
    from tracejax._src.core import pp
    return pp.pp_jaxpr(self)

  __repr__ = __str__


class ClosedJaxpr:
  """A jaxpr together with the values of its constvars."""
  __slots__ = ("jaxpr", "consts", "__weakref__")

  def __init__(self, jaxpr, consts):
    assert len(jaxpr.constvars) == len(consts), (len(jaxpr.constvars), len(consts))
    self.jaxpr, self.consts = jaxpr, list(consts)

  literals = property(lambda self: self.consts)  # the 2020 name
  in_avals = property(lambda self: self.jaxpr.in_avals)
  out_avals = property(lambda self: self.jaxpr.out_avals)
  eqns = property(lambda self: self.jaxpr.eqns)

  def __str__(self):
    return str(self.jaxpr)

  __repr__ = __str__

  def __call__(self, *args):
    return eval_jaxpr(self.jaxpr, self.consts, *args)


TypedJaxpr = ClosedJaxpr


# ---- unit (2020): the placeholder for a known output a jaxpr does not compute ----

class Unit:
  """The value of `unitvar`; 2020 partial evaluation returns a known output's value
  to the caller and leaves `unitvar` (printed `*`) in the jaxpr's outputs."""
  __slots__ = ()

  def __repr__(self):
    return "*"


unit = Unit()


class AbstractUnit(avals_mod.AbstractValue):
  """The aval of `unit`."""
  __slots__ = ()

  def str_short(self, *_, **__):
    return "*"

  def at_least_vspace(self):
    return self

  def __repr__(self):
    return "AbstractUnit()"


abstract_unit = AbstractUnit()


class UnitVar(Var):
  """The one variable bound to `unit` in every jaxpr (no equation defines it)."""
  __slots__ = ()

  def __repr__(self):
    return "*"


unitvar = UnitVar(abstract_unit)


# ---- evaluation ----

def eval_jaxpr(jaxpr, consts, *args):
  """Evaluate `jaxpr` by binding each equation's primitive; returns a list of outputs."""
  env = {unitvar: unit}

  def read(v):
    return v.val if type(v) is Literal else env[v]

  def read_in(v):  # operands: weak literals as Python scalars (outputs stay as they are)
    return _literal_value(v) if type(v) is Literal else env[v]

  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"jaxpr expects {len(jaxpr.invars)} arguments, got {len(args)}")
  for v, x in zip(jaxpr.invars, args):
    env[v] = x
  for eqn in jaxpr.eqns:
    ans = bind(eqn.primitive, *map(read_in, eqn.invars), **eqn.params)
    if not eqn.primitive.multiple_results:
      ans = (ans,)
    for v, x in zip(eqn.outvars, ans):
      if type(v) is not DropVar:
        env[v] = x
  return [read(v) for v in jaxpr.outvars]


_weak_literal_types = {"i": int, "f": float, "c": complex}


def _literal_value(v):
  """A literal's value; a weakly typed one comes back as the Python scalar it stands
  for, so evaluating a jaxpr keeps weak results weak (a NumPy value is strong)."""
  val = v.val
  if getattr(v.aval, "weak_type", False) and isinstance(val, (np.ndarray, np.generic)) \
      and val.ndim == 0:
    from tracejax._src import dtypes
    py = _weak_literal_types.get(val.dtype.kind if val.dtype.kind != "u" else "")
    if py is not None and dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[py]) == \
        val.dtype:
      return py(val.item())
  return val


def jaxpr_as_fun(closed_jaxpr):
  return lambda *args: eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


# ---- type checking ----

class JaxprTypeError(TypeError):
  pass


def _same_type(a, b):
  return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr):
  """Check that every variable is bound once before use and every equation's types agree."""
  defined = {unitvar}  # bound in every jaxpr

  def bind_var(v, what):
    if type(v) is DropVar:
      return
    if v in defined:
      raise JaxprTypeError(f"variable {v} is bound twice ({what})")
    defined.add(v)

  def read_var(v, where):
    if type(v) is Literal:
      return v.aval
    if v not in defined:
      raise JaxprTypeError(f"variable {v} is used before it is bound, in {where}")
    return v.aval

  for v in jaxpr.constvars:
    bind_var(v, "constvar")
  for v in jaxpr.invars:
    bind_var(v, "invar")
  for i, eqn in enumerate(jaxpr.eqns):
    in_avals = [read_var(v, f"equation {i} ({eqn.primitive})") for v in eqn.invars]
    try:
      out_avals = eqn.primitive.out_avals(in_avals, eqn.params)
    except NotImplementedError:
      out_avals = [v.aval for v in eqn.outvars]
    if len(out_avals) != len(eqn.outvars):
      raise JaxprTypeError(f"equation {i} ({eqn.primitive}) has {len(eqn.outvars)} outputs, "
                           f"its rule gives {len(out_avals)}")
    for v, a in zip(eqn.outvars, out_avals):
      if not _same_type(v.aval, a):
        raise JaxprTypeError(f"equation {i} ({eqn.primitive}): output {v.aval.str_short()} "
                             f"does not match the rule's {a.str_short()}")
      bind_var(v, f"equation {i}")
    for sub in subjaxprs(eqn):
      check_jaxpr(sub)
  for v in jaxpr.outvars:
    read_var(v, "the outputs")


def subjaxprs(eqn):
  """The jaxprs that are parameters of an equation (branches, bodies, call bodies)."""
  for p in eqn.params.values():
    if isinstance(p, (Jaxpr, ClosedJaxpr)):
      yield p.jaxpr if isinstance(p, ClosedJaxpr) else p
    elif isinstance(p, (tuple, list)):
      for q in p:
        if isinstance(q, (Jaxpr, ClosedJaxpr)):
          yield q.jaxpr if isinstance(q, ClosedJaxpr) else q


_ = (avals_mod, Primitive)
