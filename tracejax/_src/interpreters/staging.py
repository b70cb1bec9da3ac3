"""Staging: tracing Python functions into jaxprs (the trace that `jit` runs).

Every primitive applied under a `DynamicJaxprTrace` becomes an equation.
Values that are not this trace's tracers are constants: scalars are written
inline as literals; arrays and tracers of outer traces become constvars
(closure conversion), so the caller can pass them in as arguments.
"""
import gc
import threading
import weakref

import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime.array import Array
from tracejax._src.core import ir
from tracejax._src.core.trace import Trace, Tracer, set_current_trace


custom_staging_rules = {}  # prim -> rule(trace, args, params): e.g. trace a callable param once


class _NameStack(threading.local):
  """The enclosing `jax.named_scope` names (pushed by api_extra.named_scope): each
  staged equation records them as its `source_info`, and the lowering names the
  operation's location after them, as JAX does."""

  def __init__(self):
    self.names = []


name_stack = _NameStack()


class DynamicJaxprTracer(Tracer):
  __slots__ = ("_aval",)

  def __init__(self, trace, aval):
    self._trace = trace
    self._aval = aval

  @property
  def aval(self):
    return self._aval


class DynamicJaxprTrace(Trace):
  """Records every primitive applied to its tracers as a jaxpr equation."""

  def __init__(self, parent=None):
    self.parent = parent
    self.level = (parent.level + 1) if parent is not None else 1
    self.eqns = []
    self.invars = []
    self.tracer_to_var = {}        # id(tracer) -> Var
    self.tracers = []              # keeps tracers alive while their ids are keys
    self.const_to_var = {}         # id(const) -> Var
    self.constvar_vals = []        # [(Var, value)]

  def __repr__(self):
    return f"DynamicJaxprTrace(level={self.level}/0)"

  def new_arg(self, aval):
    t = DynamicJaxprTracer(self, aval)
    v = ir.Var(aval)
    self.invars.append(v)
    self._register(t, v)
    return t

  def _register(self, tracer, var):
    self.tracer_to_var[id(tracer)] = var
    self.tracers.append(tracer)

  def getvar(self, x):
    """The atom (Var or Literal) standing for `x` in the jaxpr being built."""
    if isinstance(x, DynamicJaxprTracer) and x._trace is self:
      return self.tracer_to_var[id(x)]
    var = self.const_to_var.get(id(x))
    if var is not None:
      return var
    if not isinstance(x, Tracer):
      aval = avals_mod.get_aval(x)
      if not aval.shape and type(x) in _literalable:
        return ir.Literal(_literal_value(x, aval), aval)
    else:
      aval = avals_mod.raise_to_shaped(x.aval)
    var = ir.Var(aval)
    self.const_to_var[id(x)] = var
    self.constvar_vals.append((var, x))
    return var

  def process_primitive(self, primitive, args, params):
    rule = custom_staging_rules.get(primitive)
    if rule is not None:
      return rule(self, args, params)
    return self.process_primitive_default(primitive, args, params)

  def process_primitive_default(self, primitive, args, params):
    invars = [self.getvar(x) for x in args]
    out_avals = primitive.out_avals([v.aval for v in invars], params)
    outs = [DynamicJaxprTracer(self, a) for a in out_avals]
    outvars = [ir.Var(a) for a in out_avals]
    for t, v in zip(outs, outvars):
      self._register(t, v)
    names = name_stack.names
    self.eqns.append(ir.JaxprEqn(invars, outvars, primitive, params,
                                 "/".join(names) if names else None))
    return outs if primitive.multiple_results else outs[0]

  def to_jaxpr(self, out_tracers):
    outvars = [self.getvar(x) for x in out_tracers]
    constvars = [v for v, _ in self.constvar_vals]
    consts = [c for _, c in self.constvar_vals]
    jaxpr = ir.Jaxpr(constvars, self.invars, outvars, self.eqns)
    return jaxpr, consts


# Scalars of these types stage as literals (inline in the jaxpr and in the program,
# as in JAX), not as constvars that would become program parameters.
_literalable = {int, float, complex, bool, np.ndarray, Array}
_literalable.update(set(np.sctypeDict.values()))


def _literal_value(x, aval):
  return np.asarray(x, dtype=aval.dtype)


def trace_to_jaxpr(fun, in_avals):
  """Trace `fun` (flat in, flat out) at `in_avals`; returns (jaxpr, consts, out_avals)."""
  from tracejax._src.core.trace import current_trace
  trace = DynamicJaxprTrace(current_trace())
  in_tracers = [trace.new_arg(a) for a in in_avals]
  with set_current_trace(trace):
    outs = fun(*in_tracers)
  jaxpr, consts = trace.to_jaxpr(list(outs))
  jaxpr, _ = dce_jaxpr(jaxpr)  # e.g. primal values that only a gradient's caller dropped
  if config.jax_check_tracer_leaks:
    del in_tracers, outs  # our own references are not leaks
    check_trace_for_leaks(trace)
  return jaxpr, consts


# ---- leaked tracers (jax_check_tracer_leaks) ----

def _referrer_lines(tracer, skip):
  lines = []
  for r in gc.get_referrers(tracer):
    if any(r is s for s in skip) or type(r).__name__ == "frame":
      continue
    if isinstance(r, Trace) or getattr(r, "__self__", None) is not None:
      continue
    lines.append(f"<{type(r).__name__} {id(r)}> refers to <{type(tracer).__name__} "
                 f"{id(tracer)}>")
  return lines


def _held_from_outside(t, *skip):
  """Whether something other than its trace's records, another tracer, a stack frame
  or the lists in `skip` refers to tracer `t`."""
  own = getattr(t._trace, "tracers", None)
  for r in gc.get_referrers(t):
    if r is own or any(r is s for s in skip) or isinstance(r, Tracer):
      continue
    if type(r).__name__ == "frame":
      continue
    return True
  return False


def leak_error(leaked):
  """The exception JAX raises for leaked tracers (message in JAX's words)."""
  by_trace = {}
  for t in leaked:
    by_trace.setdefault(type(t._trace).__name__, []).append(t)
  parts = []
  for name, ts in by_trace.items():
    body = []
    for t in ts:
      body.append(repr(t))
      # Not the caller's list, nor the trace's own record of the tracers it made.
      body += _referrer_lines(t, (leaked, getattr(t._trace, "tracers", None),
                                  *by_trace.values()))
    parts.append(f"Leaked trace {name}. Leaked tracer(s):\n\n" + "\n".join(body) + "\n")
  return Exception("\n".join(parts))


def check_trace_for_leaks(trace):
  """Raise the leaked-tracer Exception if a tracer of the finished `trace` is still
  referenced from anywhere but the trace's own bookkeeping (and stack frames).

  Meant for the end of a transformation, once its caller dropped its own references
  `trace_to_jaxpr` and `vmap` call it when `jax_check_tracer_leaks` is on."""
  gc.collect()
  candidates = [t for t in gc.get_referrers(trace)
                if isinstance(t, Tracer) and t._trace is trace]
  leaked = [t for t in candidates if _held_from_outside(t, candidates)]
  del candidates
  if leaked:
    raise leak_error(leaked)


def closed_call_jaxpr(jaxpr, consts):
  """Turn constvars into leading invars: `(jaxpr with no constvars, consts as args)`."""
  return ir.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars,
                  jaxpr.eqns), consts


# ---- dead code elimination ----

dce_rules = {}  # prim -> rule(used_outputs, eqn) -> (used_inputs, new eqn or None)
effectful_primitives = set()  # never dropped, even with no used output (io/debug callbacks)
_jaxpr_effects = weakref.WeakKeyDictionary()  # jaxpr -> bool


def jaxpr_has_effects(jaxpr):
  """Whether `jaxpr` (or one nested in its equations' params) has an effectful equation."""
  known = _jaxpr_effects.get(jaxpr)
  if known is None:
    known = _jaxpr_effects[jaxpr] = any(map(eqn_has_effects, jaxpr.eqns))
  return known


def eqn_has_effects(eqn):
  """An effectful primitive, or a higher-order one (jit, scan, cond...) around one."""
  return eqn.primitive in effectful_primitives or any(
      map(jaxpr_has_effects, ir.subjaxprs(eqn)))


def dce_jaxpr(jaxpr, used_outputs=None, prune_invars=False):
  """Drop equations whose outputs are unused; returns (jaxpr, used_invars)."""
  if used_outputs is None:
    used_outputs = [True] * len(jaxpr.outvars)
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  live = {v for v in outvars if type(v) is ir.Var}
  new_eqns = []
  for eqn in reversed(jaxpr.eqns):
    rule = dce_rules.get(eqn.primitive)
    effectful = (effectful_primitives or None) and eqn_has_effects(eqn)
    if rule is not None and not effectful:
      # A higher-order primitive can also drop the work behind its unused outputs.
      used_outs = [v in live for v in eqn.outvars]
      if any(used_outs):
        _, eqn = rule(used_outs, eqn)
        if eqn is not None:
          new_eqns.append(eqn)
          live.update(v for v in eqn.invars if type(v) is ir.Var)
      continue
    if effectful or any(v in live for v in eqn.outvars):
      new_eqns.append(eqn)
      live.update(v for v in eqn.invars if type(v) is ir.Var)
  new_eqns.reverse()
  used_invars = [v in live for v in jaxpr.invars]
  invars = [v for v, u in zip(jaxpr.invars, used_invars) if u] if prune_invars else jaxpr.invars
  return ir.Jaxpr(jaxpr.constvars, invars, outvars, new_eqns), used_invars


_ = (dtypes, np)
