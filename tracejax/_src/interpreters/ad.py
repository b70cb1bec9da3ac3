"""Forward and reverse mode: JVP rules, symbolic zeros, transposition.

The rule tables live here; the primitives' families fill them. The JVP and
linearize traces and the backward pass are the subject of the autodiff issue.
"""
from tracejax._src.core.avals import ShapedArray

primitive_jvps = {}        # prim -> rule(primals, tangents, **params) -> (primal_out, tangent_out)
primitive_transposes = {}  # prim -> rule(ct, *args, **params) -> cotangents per operand
linear_primitives = set()  # primitives that are linear in all of their operands


class Zero:
  """A symbolic zero tangent or cotangent of the given aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval!r})"


zero = Zero(ShapedArray((), "float32"))  # the 2020 singleton spelling


class UndefinedPrimal:
  """Stands for a linear input during transposition."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval!r})"


def is_undefined_primal(x):
  return type(x) is UndefinedPrimal


# ---- add_any: the sum of two tangents (impl and lowering registered by lax) ----

from tracejax._src.core.trace import Primitive  # noqa: E402

add_any_p = Primitive("add_any")
# A linearized jit's tangent input typed as its primal (rules: lax/ad_zeros.py).
weak_retype_p = Primitive("weak_retype")


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_any_p.bind(x, y)


def zeros_like_aval(aval):
  """A concrete zero array of `aval` (the maker is registered by lax)."""
  return _zeros_maker[0](aval)


def _numpy_zeros(aval):
  import numpy
  return numpy.zeros(aval.shape, aval.dtype)


_zeros_maker = [_numpy_zeros]  # lax replaces it with a broadcast (no big constants)


def instantiate_zeros(t):
  return zeros_like_aval(t.aval) if type(t) is Zero else t


def zero_tangent_of(value_aval):
  return Zero(value_aval.at_least_vspace())


# ---- rule factories used by the primitives' families ----

def _out_aval(x):
  from tracejax._src.core.avals import get_aval, raise_to_shaped
  return raise_to_shaped(get_aval(x))


def defjvp(prim, *jvprules):
  """JVP from one rule per operand: `rule(g, *primals, **params) -> tangent` (None: not
  differentiable in that operand)."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(_out_aval(out).at_least_vspace())
    for rule, t in zip(jvprules, tangents):
      if rule is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, rule(t, *primals, **params))
    return out, t_out
  primitive_jvps[prim] = jvp


def defjvp2(prim, *jvprules):
  """Like `defjvp`, with rules that also see the output: `rule(g, ans, *primals)`."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(_out_aval(out).at_least_vspace())
    for rule, t in zip(jvprules, tangents):
      if rule is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, rule(t, out, *primals, **params))
    return out, t_out
  primitive_jvps[prim] = jvp


def defjvp_zero(prim):
  """The output does not depend differentiably on the inputs (comparisons, integer ops)."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero(_out_aval(o).at_least_vspace()) for o in out]
    return out, Zero(_out_aval(out).at_least_vspace())
  primitive_jvps[prim] = jvp


def deflinear(prim, transpose_rule):
  """`prim` is linear in all operands; `transpose_rule(ct, **params) -> [ct per operand]`."""
  linear_jvp(prim)
  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, **params)
  primitive_transposes[prim] = transpose
  linear_primitives.add(prim)


def deflinear2(prim, transpose_rule):
  """Like `deflinear`, with `transpose_rule(ct, *args, **params)` seeing the operands."""
  linear_jvp(prim)
  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, *args, **params)
  primitive_transposes[prim] = transpose
  linear_primitives.add(prim)


def linear_jvp(prim):
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      if prim.multiple_results:
        return out, [Zero(_out_aval(o).at_least_vspace()) for o in out]
      return out, Zero(_out_aval(out).at_least_vspace())
    return out, prim.bind(*map(instantiate_zeros, tangents), **params)
  primitive_jvps[prim] = jvp


def defbilinear(prim, lhs_rule, rhs_rule):
  """`prim(x, y)` linear in each operand (mul, dot_general). `lhs_rule(ct, x, y, **params)`
  gives x's cotangent (x an UndefinedPrimal), `rhs_rule` y's."""
  def jvp(primals, tangents, **params):
    x, y = primals
    tx, ty = tangents
    out = prim.bind(x, y, **params)
    t = Zero(_out_aval(out).at_least_vspace())
    if type(tx) is not Zero:
      t = add_tangents(t, prim.bind(tx, y, **params))
    if type(ty) is not Zero:
      t = add_tangents(t, prim.bind(x, ty, **params))
    return out, t
  primitive_jvps[prim] = jvp

  def transpose(ct, x, y, **params):
    if type(ct) is Zero:
      return [Zero(x.aval) if is_undefined_primal(x) else None,
              Zero(y.aval) if is_undefined_primal(y) else None]
    cx = lhs_rule(ct, x, y, **params) if is_undefined_primal(x) else None
    cy = rhs_rule(ct, x, y, **params) if is_undefined_primal(y) else None
    return [cx, cy]
  primitive_transposes[prim] = transpose


# =============================================================================
# The JVP trace (forward mode)
# =============================================================================

import numpy as np  # noqa: E402

from tracejax._src import dtypes, errors  # noqa: E402
from tracejax._src.core import avals as avals_mod  # noqa: E402
from tracejax._src.core import ir  # noqa: E402
from tracejax._src.core.trace import (Trace, Tracer, set_current_trace,  # noqa: E402
                                      current_trace)


class JVPTracer(Tracer):
  __slots__ = ("primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace, self.primal, self.tangent = trace, primal, tangent

  @property
  def aval(self):
    return _aval_of(self.primal)

  def to_concrete_value(self):
    p = self.primal
    if isinstance(p, Tracer):
      return p.to_concrete_value()
    return np.asarray(p)


def _aval_of(x):
  if isinstance(x, Tracer):
    return x.aval
  return avals_mod.get_aval(x)


class JVPTrace(Trace):
  """Carries (primal, tangent) pairs; rules run with the parent as the current trace."""

  def __init__(self, parent):
    self.parent = parent
    self.level = parent.level + 1

  def to_pair(self, x):
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    return x, Zero(_aval_of(x).at_least_vspace())

  def process_primitive(self, primitive, args, params):
    primals, tangents = [], []
    mine = False
    for x in args:
      if isinstance(x, JVPTracer) and x._trace is self:
        primals.append(x.primal)
        tangents.append(x.tangent)
        mine = True
      else:
        primals.append(x)
        tangents.append(Zero(_aval_of(x).at_least_vspace()))
    with set_current_trace(self.parent):
      if not mine or all(type(t) is Zero for t in tangents) and primitive not in _always_rule:
        return primitive.bind(*primals, **params)
      rule = primitive_jvps.get(primitive)
      if rule is None:
        if primitive.call_primitive and isinstance(self.parent, PartialEvalTrace):
          # Linearizing: inline the call so each equation is split known/unknown
          # (and custom_vjp calls inside it see the linearization), with the
          # known and unknown halves pruned of dead work first.
          return _linearize_call(self, params["call_jaxpr"], primals, tangents)
        if primitive.call_primitive:
          return self.process_call(primitive, primals, tangents, params)
        raise NotImplementedError(f"Differentiation rule for '{primitive.name}' not implemented")
      out, t_out = rule(primals, tangents, **params)
    if primitive.multiple_results:
      return [self._wrap(p, t) for p, t in zip(out, t_out)]
    return self._wrap(out, t_out)

  def _wrap(self, p, t):
    return JVPTracer(self, p, t)

  def process_call(self, primitive, primals, tangents, params):
    """jit under jvp: differentiate the called jaxpr, call it in the parent trace."""
    call_jaxpr = params["call_jaxpr"]
    nz = [type(t) is not Zero for t in tangents]
    jvp_jaxpr, consts, out_nz = jvp_jaxpr_of(call_jaxpr, nz)
    from tracejax._src.interpreters.staging import closed_call_jaxpr
    cj, const_args = closed_call_jaxpr(jvp_jaxpr, consts)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = primitive.bind(*const_args, *primals, *nz_tangents, **{**params, "call_jaxpr": cj})
    n = len(call_jaxpr.outvars)
    p_out, t_nz = outs[:n], iter(outs[n:])
    t_out = [next(t_nz) if z else Zero(v.aval.at_least_vspace())
             for z, v in zip(out_nz, call_jaxpr.outvars)]
    return [self._wrap(p, t) for p, t in zip(p_out, t_out)]


_always_rule = set()  # primitives whose JVP rule must run even with zero tangents


def jvp_jaxpr_of(jaxpr, nonzeros):
  """A jaxpr computing (primal outs, nonzero tangent outs) from (primals, nonzero tangents)."""
  from tracejax._src.interpreters import staging
  out_nz = []
  in_avals = [v.aval for v in jaxpr.invars]
  t_avals = [a.at_least_vspace() for a, z in zip(in_avals, nonzeros) if z]

  def f(*args):
    primals, nz_t = args[:len(in_avals)], iter(args[len(in_avals):])
    tangents = [next(nz_t) if z else Zero(a.at_least_vspace())
                for a, z in zip(in_avals, nonzeros)]
    p_out, t_out = jvp_of_jaxpr(jaxpr, primals, tangents)
    out_nz[:] = [type(t) is not Zero for t in t_out]
    return list(p_out) + [t for t in t_out if type(t) is not Zero]

  new_jaxpr, consts = staging.trace_to_jaxpr(f, in_avals + t_avals)
  return new_jaxpr, consts, out_nz


def jvp_of_jaxpr(jaxpr, primals, tangents, consts=()):
  trace = JVPTrace(current_trace())
  ins = [JVPTracer(trace, p, t) if type(t) is not Zero else p
         for p, t in zip(primals, tangents)]
  with set_current_trace(trace):
    outs = ir.eval_jaxpr(jaxpr, list(consts), *ins)
  return unzip_tracers(trace, outs)


def unzip_tracers(trace, outs):
  ps, ts = [], []
  for x in outs:
    p, t = trace.to_pair(x)
    ps.append(p)
    ts.append(t)
  return ps, ts


def jvp_flat(fun, primals, tangents):
  """Forward mode on a flat function: (primal outs, tangent outs, Zero where symbolic)."""
  trace = JVPTrace(current_trace())
  ins = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
  with set_current_trace(trace):
    outs = fun(*ins)
  return unzip_tracers(trace, outs)


# =============================================================================
# Linearize = JVP whose tangents are staged: the partial-evaluation trace
# =============================================================================

partial_eval_rules = {}  # prim -> rule(trace, args, params): custom known/unknown split


class PartialEvalTrace(Trace):
  """Splits work by knownness: a primitive with an input from the staging trace
  `tangent_trace` (an *unknown*) is staged there; all-known work goes to `parent`.
  Under a JVP trace whose tangents are unknowns, this is linearization: the
  staged jaxpr is the linear map, its constvars the residuals."""

  def __init__(self, parent, tangent_trace):
    self.parent, self.tangent_trace = parent, tangent_trace
    self.level = parent.level + 1

  def is_unknown(self, x):
    return isinstance(x, Tracer) and x._trace is self.tangent_trace

  def process_primitive(self, primitive, args, params):
    if not any(self.is_unknown(x) for x in args):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    rule = partial_eval_rules.get(primitive)
    if rule is not None:
      return rule(self, args, params)
    if primitive.call_primitive and "call_jaxpr" in params:
      # Inline calls with mixed inputs: each equation is then split on its own.
      with set_current_trace(self):
        return _fresh_forwarded(ir.eval_jaxpr(params["call_jaxpr"], [], *args), args)
    return self.tangent_trace.process_primitive(primitive, args, params)


def _linearize_call(jvp_trace, call_jaxpr, primals, tangents):
  """JVP of an inlined call under a partial-evaluation trace, with dead code removed.

  The call's JVP is first split into a staged known jaxpr and a staged unknown
  (tangent) jaxpr. The unknown one is pruned of equations no output needs (keeping
  effects), which leaves unused residuals unread; the known one is then pruned of
  the work behind them. Only then are the known equations bound in the outer trace
  and the unknown ones staged: an enclosing transformation (the outer JVP of a
  hessian) never sees a residual computation that nothing uses, such as a
  derivative-only primitive with no derivative rule of its own."""
  from tracejax._src.interpreters import staging
  pe = jvp_trace.parent
  known_st = staging.DynamicJaxprTrace(pe.parent)
  unk_st = staging.DynamicJaxprTrace(known_st)
  known_in, unk_in = [], []

  def bring_in(x):
    # Each call input becomes an input of the known or of the unknown jaxpr; host
    # constants stay constants (literals), as inlining the call would leave them.
    if type(x) is Zero or not isinstance(x, Tracer):
      return x
    if pe.is_unknown(x):
      unk_in.append(x)
      return unk_st.new_arg(x.aval)
    known_in.append(x)
    return known_st.new_arg(avals_mod.raise_to_shaped(x.aval))

  def typed_as_primal(t, p):
    # JAX types the call's tangent inputs as its primals (a weak primal's strong
    # tangent is weak inside the call); a staged tangent is retyped in the call.
    if isinstance(t, Tracer) and t._trace is unk_st:
      pw = getattr(_aval_of(p), "weak_type", False)
      if t.aval.weak_type != pw and t.aval.dtype != dtypes.float0:
        with set_current_trace(unk_st):
          return weak_retype_p.bind(t, weak_type=pw)
    return t

  in_p = [bring_in(p) for p in primals]
  in_t = [typed_as_primal(bring_in(t), p) for t, p in zip(tangents, primals)]
  inner_pe = PartialEvalTrace(known_st, unk_st)
  inner = JVPTrace(inner_pe)
  ins = [p if type(t) is Zero else JVPTracer(inner, p, t) for p, t in zip(in_p, in_t)]
  with set_current_trace(inner):
    outs = ir.eval_jaxpr(call_jaxpr, [], *ins)
  ps, ts = unzip_tracers(inner, outs)
  vals = ps + ts
  unknown = [type(v) is not Zero and inner_pe.is_unknown(v) for v in vals]
  unk_jaxpr, res = unk_st.to_jaxpr([v for v, u in zip(vals, unknown) if u])
  unk_jaxpr, _ = staging.dce_jaxpr(unk_jaxpr)
  read = {v for e in unk_jaxpr.eqns for v in e.invars if type(v) is ir.Var}
  read.update(v for v in unk_jaxpr.outvars if type(v) is ir.Var)
  used = [v in read for v in unk_jaxpr.constvars]
  res = [r for r, u in zip(res, used) if u]
  unk_jaxpr = ir.Jaxpr([v for v, u in zip(unk_jaxpr.constvars, used) if u],
                       unk_jaxpr.invars, unk_jaxpr.outvars, unk_jaxpr.eqns)
  known_res = [isinstance(r, Tracer) and r._trace is known_st for r in res]
  known_outs = [v for v, u in zip(vals, unknown) if not u and type(v) is not Zero]
  known_jaxpr, kconsts = known_st.to_jaxpr(
      known_outs + [r for r, k in zip(res, known_res) if k])
  known_jaxpr, _ = staging.dce_jaxpr(known_jaxpr)
  with set_current_trace(pe.parent):
    kvals = ir.eval_jaxpr(known_jaxpr, kconsts, *known_in)
    # A known output the staging inlined as a literal (a 0-d constant: the call
    # returned an untraced 0-d Array) is a new Array again, of the literal's weak type,
    # as a jit returns (not the literal's NumPy value).
    kvals[:len(known_outs)] = [
        _literal_array(v) if type(v) is ir.Literal else k
        for v, k in zip(known_jaxpr.outvars, kvals[:len(known_outs)])]
    # JAX runs the known part as a jit, whose outputs have the staged types; bound op
    # by op they can differ in weak type alone (add_any's abstract eval keeps its first
    # operand's, its eager result does not): retype such outputs as the jit would.
    kvals = [_weak_typed_as(k, v.aval) if type(v) is ir.Var else k
             for v, k in zip(known_jaxpr.outvars, kvals)]
  kvals_it = iter(kvals[len(known_outs):])
  res_vals = [next(kvals_it) if k else r for r, k in zip(res, known_res)]
  tt = pe.tangent_trace
  start = len(tt.eqns)
  with set_current_trace(tt):
    uvals = ir.eval_jaxpr(unk_jaxpr, res_vals, *unk_in)
  _mark_call_region(tt.eqns, start)
  k_it, u_it = iter(kvals[:len(known_outs)]), iter(uvals)
  final = [v if type(v) is Zero else next(u_it) if u else next(k_it)
           for v, u in zip(vals, unknown)]
  p_out, t_out = final[:len(ps)], final[len(ps):]
  with set_current_trace(pe):
    p_out = _fresh_forwarded(p_out, primals)
    # A tangent the call passes through unchanged is a copy in the linear map, as the
    # call's own linear (or transposed) program returns new Arrays of canonical dtype
    # (not the host tangent or cotangent the caller passed in).
    t_out = [_device_copy(t) if type(t) is not Zero and any(t is x for x in tangents)
             and _aval_of(t).dtype != dtypes.float0 else t for t in t_out]
  return [jvp_trace._wrap(p, t) for p, t in zip(p_out, t_out)]


class _CallEqn(ir.JaxprEqn):
  """A linear equation staged from inside a linearized jit call: `call` names the
  outermost such call (see `backward_pass`)."""
  __slots__ = ("call",)


def _mark_call_region(eqns, start):
  """Mark `eqns[start:]` (just staged by one inlined call) as that call's; a call
  inside it is marked again here, so each equation names its outermost call."""
  call = object()
  for i in range(start, len(eqns)):
    e = eqns[i]
    new = _CallEqn(e.invars, e.outvars, e.primitive, e.params, e.source_info)
    new.call = call
    eqns[i] = new


def _weak_typed_as(x, aval):
  """`x` with `aval`'s weak type (`x` unchanged when it already has it)."""
  xa = _aval_of(x)
  if getattr(xa, "weak_type", False) == aval.weak_type or xa.dtype != aval.dtype:
    return x
  return weak_retype_p.bind(x, weak_type=aval.weak_type)


def _literal_array(lit):
  return _host_copy(ir._literal_value(lit))


def _device_copy(x):
  from tracejax._src.lax import misc as lax_misc  # (lax registers its rules here)
  return lax_misc.copy_p.bind(x)


def _host_copy(x):
  """A new Array holding host value `x`, as a jit returns it; a float0 value (which
  has no XLA type, and which a jit makes on the host) is new host zeros instead, so
  that it never reaches the device."""
  if _aval_of(x).dtype == dtypes.float0:
    return x if isinstance(x, Tracer) else np.zeros(np.shape(x), dtypes.float0)
  return _device_copy(x)


def _fresh_forwarded(outs, args):
  """Outputs of an inlined jit call: one that is an input holding a host (NumPy or
  Python) value gets a copy, as a jit returns new Arrays (else a NumPy input would leak
  out of vmap(vjp(jit(...))) as the primal output)."""
  res = []
  for o in outs:
    if any(o is a for a in args):
      inner = o
      while isinstance(inner, Tracer):
        inner = getattr(inner, "val", getattr(inner, "primal", None))
      if isinstance(inner, (np.ndarray, np.generic)) or type(inner) in (int, float, complex):
        o = _host_copy(o)
    res.append(o)
  return res


def linearize_flat(fun, primals):
  """(primal outs, linear jaxpr, residual consts, output tangent zero-ness).

  The linear jaxpr maps input tangents to the nonzero output tangents."""
  from tracejax._src.interpreters import staging
  parent = current_trace()
  tangent_trace = staging.DynamicJaxprTrace(parent)
  pe = PartialEvalTrace(parent, tangent_trace)
  jvp_trace = JVPTrace(pe)
  t_in = [tangent_trace.new_arg(_aval_of(p).at_least_vspace()) for p in primals]
  # An integer input's tangent is float0, which no operation accepts: it enters as a
  # symbolic zero (its linear-jaxpr input stays unused; its cotangent is zero).
  ins = [JVPTracer(jvp_trace, p, Zero(t.aval) if t.aval.dtype == dtypes.float0 else t)
         for p, t in zip(primals, t_in)]
  with set_current_trace(jvp_trace):
    outs = fun(*ins)
  p_out, t_out = unzip_tracers(jvp_trace, outs)
  out_nz = [type(t) is not Zero for t in t_out]
  jaxpr, consts = tangent_trace.to_jaxpr([t for t in t_out if type(t) is not Zero])
  return p_out, jaxpr, consts, out_nz, [t.aval for t in t_out]


# =============================================================================
# Transposition (the backward pass)
# =============================================================================

def get_transpose_rule(prim):
  rule = primitive_transposes.get(prim)
  if rule is None:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' not implemented")
  return rule


def backward_pass(jaxpr, consts, cts_out):
  """Cotangents of the invars of linear `jaxpr`, given output cotangents (Zero allowed)."""
  linear_vars = set(jaxpr.invars)
  known = {}
  for v, c in zip(jaxpr.constvars, consts):
    known[v] = c
  # Forward: evaluate equations with no linear inputs (e.g. zeros built from residuals).
  lin_eqns = []
  def_call = {}  # a var defined inside a linearized jit call -> that (outermost) call
  for eqn in jaxpr.eqns:
    if any(type(v) is ir.Var and v in linear_vars for v in eqn.invars):
      lin_eqns.append(eqn)
      linear_vars.update(eqn.outvars)
      if type(eqn) is _CallEqn:
        def_call.update(dict.fromkeys(eqn.outvars, eqn.call))
    else:
      vals = [ir._literal_value(v) if type(v) is ir.Literal else known[v] for v in eqn.invars]
      out = eqn.primitive.bind(*vals, **eqn.params)
      for v, x in zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]):
        known[v] = x

  ct_env = {}
  # Equations from inside a linearized jit call (`_CallEqn`s, see `_linearize_call`)
  # are transposed as JAX transposes the call: traced, so that cotangents summed inside
  # it take the first one's type (add_any's abstract eval), even when this pass runs
  # eagerly; what the call hands back joins the cotangents outside it as usual.
  pending = {}        # cotangents summed inside the call being transposed
  active = [None]     # that call

  def write_ct(v, ct):
    if type(v) is not ir.Var or ct is None or type(ct) is Zero or v not in linear_vars:
      return
    call = active[0]
    if call is not None:
      prev = pending.get(v)
      if prev is None and def_call.get(v) is call:
        prev = ct_env.pop(v, None)  # the call's output: its cotangent comes in first
      pending[v] = ct if prev is None else _traced_add(prev, ct)
      return
    prev = ct_env.get(v)
    ct_env[v] = ct if prev is None else add_tangents(prev, ct)

  def read_ct(v):
    ct = pending.pop(v, None) if pending else None
    if ct is None:
      ct = ct_env.pop(v, None)
    return Zero(v.aval) if ct is None else ct

  def enter(call):
    if call is not active[0]:
      active[0] = None
      for v, ct in list(pending.items()):
        write_ct(v, ct)
      pending.clear()
      active[0] = call

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)
  for eqn in reversed(lin_eqns):
    if def_call:
      enter(eqn.call if type(eqn) is _CallEqn else None)
    cts = [read_ct(v) for v in eqn.outvars]
    if all(type(ct) is Zero for ct in cts):
      # No cotangent reaches this equation: its inputs' cotangents are zero. Skipping
      # it (as JAX does) keeps primitives without a transpose (while_loop,
      # comparisons) out of the way when their outputs need no gradient.
      continue
    # Weak literals enter as Python scalars so that the rules keep weak types weak.
    args = [ir._literal_value(v) if type(v) is ir.Literal
            else UndefinedPrimal(v.aval) if v in linear_vars else known[v]
            for v in eqn.invars]
    rule = get_transpose_rule(eqn.primitive)
    traced = active[0] is not None
    _traced_call_depth[0] += traced
    try:
      ct_in = rule(cts if eqn.primitive.multiple_results else cts[0], *args, **eqn.params)
    finally:
      _traced_call_depth[0] -= traced
    for v, ct in zip(eqn.invars, ct_in):
      write_ct(v, ct)
  enter(None)
  return [read_ct(v) if v in ct_env else Zero(v.aval) for v in jaxpr.invars]


_traced_call_depth = [0]   # > 0 while transposing equations of a linearized jit call


def typed_as_traced(outs, avals):
  """`outs` (of a rule that binds a call eagerly, e.g. checkpoint's transpose) typed
  as `avals`, the types tracing gives, when they are part of a linearized jit's
  transpose: JAX traces that transpose, so its weak types are the traced ones."""
  if not _traced_call_depth[0]:
    return outs
  return [weak_retype_p.bind(o, weak_type=a.weak_type)
          if o is not None and type(o) is not Zero and
          getattr(_aval_of(o), "weak_type", a.weak_type) != a.weak_type and
          _aval_of(o).dtype != dtypes.float0 else o
          for o, a in zip(outs, avals)]


def _traced_add(x, y):
  """x + y typed as traced code types it (as x): an eager add_any is weak only when
  both operands are."""
  out = add_tangents(x, y)
  xw = getattr(_aval_of(x), "weak_type", False)
  if _aval_of(out).weak_type != xw:
    out = weak_retype_p.bind(out, weak_type=xw)
  return out


def _call_transpose(ct, *args, call_jaxpr, **params):
  """Transpose of a call (xla_call) by transposing its body inline."""
  lin = [is_undefined_primal(a) for a in args]
  consts = [a for a in args if not is_undefined_primal(a)]
  # Reorder so the known args are constvars of a linear jaxpr.
  known_vars = [v for v, l in zip(call_jaxpr.invars, lin) if not l]
  lin_vars = [v for v, l in zip(call_jaxpr.invars, lin) if l]
  jaxpr = ir.Jaxpr(known_vars, lin_vars, call_jaxpr.outvars, call_jaxpr.eqns)
  cts_in = backward_pass(jaxpr, consts, ct)
  it = iter(cts_in)
  return [next(it) if l else None for l in lin]


_ = errors


# =============================================================================
# Jaxpr-to-jaxpr versions of the transformations (for higher-order primitives)
# =============================================================================

def jvp_jaxpr(jaxpr, nonzeros, instantiate):
  """(jaxpr of (primals, nonzero tangents) -> (primal outs, tangent outs), consts, out_nz).

  Output tangents are emitted where nonzero or `instantiate` (then zeros are built)."""
  from tracejax._src.interpreters import staging
  in_avals = [v.aval for v in jaxpr.invars]
  t_avals = [a.at_least_vspace() for a, z in zip(in_avals, nonzeros) if z]
  out_nz = []

  def f(*args):
    primals, nz_t = args[:len(in_avals)], iter(args[len(in_avals):])
    tangents = [next(nz_t) if z else Zero(a.at_least_vspace())
                for a, z in zip(in_avals, nonzeros)]
    p_out, t_out = jvp_of_jaxpr(jaxpr, primals, tangents)
    out_nz[:] = [type(t) is not Zero or inst for t, inst in zip(t_out, instantiate)]
    t_keep = [instantiate_zeros(t) for t, k in zip(t_out, out_nz) if k]
    return list(p_out) + t_keep

  new, consts = staging.trace_to_jaxpr(f, in_avals + t_avals)
  return new, consts, list(out_nz)


def partial_eval_jaxpr(jaxpr, in_unknowns, instantiate):
  """Split `jaxpr` by knownness of its inputs.

  Returns (known_jaxpr, known_consts, unknown_jaxpr, out_unknowns, num_res):
  `known_jaxpr` (constvars: `known_consts`) maps the known inputs to (known outputs,
  residuals); `unknown_jaxpr` maps (residuals, unknown inputs) to the unknown
  outputs. An output is unknown if it depends on an unknown input or `instantiate`
  asks for it."""
  from tracejax._src.interpreters import staging
  known_avals = [v.aval for v, u in zip(jaxpr.invars, in_unknowns) if not u]
  unknown_avals = [v.aval for v, u in zip(jaxpr.invars, in_unknowns) if u]
  result = {}

  def known_fun(*known_args):
    parent = current_trace()
    t_trace = staging.DynamicJaxprTrace(parent)
    pe = PartialEvalTrace(parent, t_trace)
    unk_in = [t_trace.new_arg(a) for a in unknown_avals]
    ki, ui = iter(known_args), iter(unk_in)
    args = [next(ui) if u else next(ki) for u in in_unknowns]
    with set_current_trace(pe):
      outs = ir.eval_jaxpr(jaxpr, [], *args)
    out_unknowns = [pe.is_unknown(o) or inst for o, inst in zip(outs, instantiate)]
    known_outs = [o for o, u in zip(outs, out_unknowns) if not u]
    unk_jaxpr, res = t_trace.to_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
    result["unknown"] = staging.closed_call_jaxpr(unk_jaxpr, [])[0]
    result["out_unknowns"] = out_unknowns
    result["num_res"] = len(res)
    return known_outs + list(res)

  known_jaxpr, known_consts = staging.trace_to_jaxpr(known_fun, known_avals)
  return (known_jaxpr, known_consts, result["unknown"], result["out_unknowns"],
          result["num_res"])


def transpose_jaxpr(jaxpr, linear, ct_zero_ok=True, ct_avals=None):
  """Jaxpr of (non-linear inputs, output cotangents) -> cotangents of the linear inputs
  (zeros instantiated). Returns (jaxpr, consts). `ct_avals`: the cotangents' own types
  (as JAX types a transposed cond's branches by the cotangents it is given: their weak
  types, not the outputs'); by default the outputs' types."""
  from tracejax._src.interpreters import staging
  nonlin_avals = [v.aval for v, l in zip(jaxpr.invars, linear) if not l]
  lin_avals = [v.aval for v, l in zip(jaxpr.invars, linear) if l]
  out_avals = [v.aval for v in jaxpr.outvars] if ct_avals is None else list(ct_avals)
  known_vars = [v for v, l in zip(jaxpr.invars, linear) if not l]
  lin_vars = [v for v, l in zip(jaxpr.invars, linear) if l]
  lin_jaxpr = ir.Jaxpr(list(jaxpr.constvars) + known_vars, lin_vars, jaxpr.outvars,
                       jaxpr.eqns)

  def f(*args):
    known, cts = args[:len(nonlin_avals)], args[len(nonlin_avals):]
    cts_in = backward_pass(lin_jaxpr, list(known), list(cts))
    return [instantiate_zeros(c) if type(c) is Zero else c for c in cts_in]

  return staging.trace_to_jaxpr(f, nonlin_avals + out_avals)
