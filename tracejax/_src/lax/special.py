"""Special-function primitives: erf, lgamma, digamma, polygamma, zeta, the incomplete
gamma family (igamma, igammac, igamma_grad_a, random_gamma_grad), betainc and the
scaled Bessel functions bessel_i0e/i1e.

The elementwise family of `elementwise.py`, split off by subject: each primitive is
one block (public wrapper, primitive, JVP rule, batching rule, lowering) built with
that module's helpers, and is re-exported by `tracejax.lax` like every family's.

Where StableHLO/CHLO has an op (erf, lgamma, digamma, ...) the lowering is that op.
The functions XLA has no op for (igamma, betainc, bessel_i0e, ...) lower to
compositions of lax primitives, emitted by `_EmitTrace` with `_while` for their
series and continued fractions; `linalg.py` uses the same machinery.
"""
import functools

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Trace, Tracer, current_trace, set_current_trace
from tracejax._src.interpreters import ad
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import chlo, hlo, ir
from tracejax._src.lax import utils
from tracejax._src.lax.elementwise import (
    _aval, _const, _defjvp_nary, _dtype, _float, _full_like, _ones, _wrap, _zeros, abs, add,
    and_, broadcast_operands, convert_element_type, convert_element_type_p, div, eq, exp, ge,
    gt, le, log, log1p, lt, mul, naryop, ne, neg, not_, or_, reciprocal, select, sign, sqrt,
    square, sub)

__all__ = [
    "erf", "erf_p", "erfc", "erfc_p", "erf_inv", "erf_inv_p", "lgamma", "lgamma_p", "digamma",
    "digamma_p", "polygamma", "polygamma_p", "zeta", "zeta_p", "igamma", "igamma_p", "igammac",
    "igammac_p", "igamma_grad_a", "igamma_grad_a_p", "random_gamma_grad",
    "random_gamma_grad_p", "betainc", "regularized_incomplete_beta_p", "bessel_i0e",
    "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p",
]


# ---- lowering compositions: lax ops emitted straight to StableHLO ----
#
# The special functions that XLA has no op for (igamma, betainc, bessel_i0e, ...) are
# lowered as compositions of the lax ops here. Their series and continued fractions
# iterate until every element has converged, so the composition needs a while loop.
# Rather than a loop primitive that only lowerings would ever see, a composition runs
# under `_EmitTrace`, which lowers each primitive the moment it is applied; `_while`
# then builds the StableHLO while op directly.


class _EmitTracer(Tracer):
  __slots__ = ("value", "_aval")

  def __init__(self, trace, value, aval):
    self._trace, self.value, self._aval = trace, value, aval

  @property
  def aval(self):
    return self._aval


class _EmitTrace(Trace):
  """Lowers each primitive as it is applied; its tracers carry MLIR values."""

  def __init__(self, module_context):
    self.module_context = module_context

  def value(self, x):
    """(MLIR value, aval) of a tracer of this trace or of a constant."""
    if isinstance(x, _EmitTracer) and x._trace is self:
      return x.value, x.aval
    if isinstance(x, Tracer):
      raise TypeError(f"a lowering composition closed over a foreign tracer {x}")
    aval = _aval(x)
    return mlir.ir_constant(np.asarray(x, aval.dtype)), aval

  def process_primitive(self, primitive, args, params):
    vals, avals = [], []
    for x in args:
      v, a = self.value(x)
      vals.append(v)
      avals.append(a)
    out_avals = primitive.out_avals(avals, params)
    ctx = mlir.LoweringRuleContext(self.module_context, primitive, avals, out_avals)
    rule = mlir.get_lowering(primitive, self.module_context.platform)
    outs = [_EmitTracer(self, v, a) for v, a in zip(mlir._as_values(rule(ctx, *vals, **params)),
                                                     out_avals)]
    return outs if primitive.multiple_results else outs[0]


def _lower_composition(fun):
  """A lowering rule running `fun` (lax ops on operands of the output's shape).

  Rank-0 operands are broadcast first; bfloat16/float16 operands are computed in
  float32 (series and polynomial coefficients need the range and precision) and the
  result is rounded back.
  """
  def lowering(ctx, *args, **params):
    args = broadcast_operands(ctx, *args)
    shape, dt = ctx.avals_out[0].shape, ctx.avals_in[0].dtype
    trace = _EmitTrace(ctx.module_context)
    xs = [_EmitTracer(trace, v, ShapedArray(shape, a.dtype)) for v, a in zip(args, ctx.avals_in)]
    with set_current_trace(trace):
      if dt in (np.dtype(dtypes.bfloat16), np.dtype(np.float16)):
        xs = [convert_element_type(x, np.float32) for x in xs]
        out = convert_element_type(fun(*xs, **params), dt)
      else:
        out = fun(*xs, **params)
    return [trace.value(out)[0]]
  return lowering


def _reduce_any_hlo(pred, ndim):
  """OR of all elements of a bool tensor (a while condition is one bool)."""
  if ndim == 0:
    return pred
  scalar = ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))
  op = hlo.ReduceOp([scalar], [pred], [mlir.ir_constant(np.array(False))],
                    ir.DenseI64ArrayAttr.get(list(range(ndim))))
  block = op.body.blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([hlo.or_(*block.arguments)])
  return op.result


def _while(cond_fun, body_fun, init):
  """Iterate `body_fun(*carry) -> carry` while any element of the bool array
  `cond_fun(*carry)` holds: an HLO while op in a lowering composition, a
  `lax.while_loop` when traced (the JVP of random_gamma_grad)."""
  trace = current_trace()
  if not isinstance(trace, _EmitTrace):
    return _traced_while(cond_fun, body_fun, init)
  vals, avals = [], []
  for x in init:
    v, a = trace.value(x)
    vals.append(v)
    avals.append(a.strip_weak_type())
  types = [mlir.aval_to_ir_type(a) for a in avals]
  op = hlo.WhileOp(types, vals)
  # The regions may use values defined outside them (XLA's while accepts implicit
  # captures), so the closures of cond_fun and body_fun need no threading.
  cond_block = op.cond.blocks.append(*types)
  with ir.InsertionPoint(cond_block):
    pred = cond_fun(*[_EmitTracer(trace, v, a) for v, a in zip(cond_block.arguments, avals)])
    pred, pred_aval = trace.value(pred)
    hlo.return_([_reduce_any_hlo(pred, pred_aval.ndim)])
  body_block = op.body.blocks.append(*types)
  with ir.InsertionPoint(body_block):
    outs = body_fun(*[_EmitTracer(trace, v, a) for v, a in zip(body_block.arguments, avals)])
    hlo.return_([trace.value(o)[0] for o in outs])
  return [_EmitTracer(trace, r, a) for r, a in zip(op.results, avals)]



def _traced_while(cond_fun, body_fun, init):
  """`_while` outside a lowering composition: a `lax.while_loop` (looping while any
  element's condition holds), so that a composition can also be traced and
  differentiated in forward mode, as JAX's traceable implementations are."""
  from tracejax._src.control_flow.loops import while_loop  # (control flow imports lax)
  from tracejax._src.lax.reductions import reduce_or

  def cond(carry):
    pred = cond_fun(*carry)
    nd = len(_aval(pred).shape)
    return reduce_or(pred, tuple(range(nd))) if nd else pred

  init = [x if isinstance(x, Tracer) else np.asarray(x, _aval(x).dtype) for x in init]
  return list(while_loop(cond, lambda carry: list(body_fun(*carry)), init))


# =============================================================================
# Special functions
# =============================================================================

# ---- erf, erfc, erf_inv ----

erf_p = naryop("erf", _float, chlo.erf)
erf = _wrap(erf_p, "Elementwise error function: erf(x).")
ad.defjvp(erf_p, lambda g, x: mul(_const(x, 2 / np.sqrt(np.pi)), mul(g, exp(neg(square(x))))))
utils.defvectorized(erf_p)

erfc_p = naryop("erfc", _float, chlo.erfc)
erfc = _wrap(erfc_p, "Elementwise complementary error function: 1 - erf(x).")
ad.defjvp(erfc_p,
          lambda g, x: mul(_const(x, -2 / np.sqrt(np.pi)), mul(g, exp(neg(square(x))))))
utils.defvectorized(erfc_p)

erf_inv_p = naryop("erf_inv", _float, chlo.erf_inv)
erf_inv = _wrap(erf_inv_p, "Elementwise inverse error function: erf^-1(x).")
ad.defjvp2(erf_inv_p,
           lambda g, ans, x: mul(_const(x, np.sqrt(np.pi) / 2), mul(g, exp(square(ans)))))
utils.defvectorized(erf_inv_p)

# ---- lgamma, digamma, polygamma, zeta ----

lgamma_p = naryop("lgamma", _float, chlo.lgamma)
lgamma = _wrap(lgamma_p, "Elementwise log gamma: log(|Gamma(x)|).")
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
utils.defvectorized(lgamma_p)

digamma_p = naryop("digamma", _float, chlo.digamma)
digamma = _wrap(digamma_p, "Elementwise digamma: psi(x), the derivative of lgamma.")
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))
utils.defvectorized(digamma_p)


def _polygamma_grad_m(g, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported")


polygamma_p = naryop("polygamma", _float, chlo.polygamma)
polygamma = _wrap(polygamma_p, "Elementwise polygamma: psi^(m)(x), m a non-negative integer.")
_defjvp_nary(polygamma_p, _polygamma_grad_m,
          lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))
utils.defbroadcasting(polygamma_p, size_one=True)


def _zeta_grad_x(g, x, q):
  raise ValueError("zeta gradient with respect to x is not supported")


zeta_p = naryop("zeta", _float, chlo.zeta)
zeta = _wrap(zeta_p, "Elementwise Hurwitz zeta function: zeta(x, q) = sum (q + n) ** -x.")
# d/dq sum_n (q + n)^-x = -x zeta(x + 1, q).
_defjvp_nary(zeta_p, _zeta_grad_x,
          lambda g, x, q: mul(g, mul(neg(x), zeta(add(x, _const(x, 1)), q))))
utils.defbroadcasting(zeta_p, size_one=True)

# ---- the incomplete gamma family ----
#
# P(a, x) (igamma) by its power series where x < max(1, a), and Q(a, x) (igammac) by
# Legendre's continued fraction elsewhere (Cephes' igam/igamc, as XLA's math library
# does). The derivative modes carry d/da of every term along, for igamma_grad_a and
# for random_gamma_grad (the implicit derivative of a Gamma(a) sample, -dP/da / dP/dx).


def _finfo(x):
  return dtypes.finfo(_dtype(x))


def _isnan(x):
  return ne(x, x)


def _any_of(*preds):
  return functools.reduce(or_, preds)


def _igamma_log_prefactor(a, x):
  """log(x^a e^-x / Gamma(a)), the factor in front of both the series and the fraction."""
  return sub(sub(mul(a, log(x)), x), lgamma(a))


# JAX runs the series until every element converges, which for a large `a` takes many
# terms (~sqrt(32 a) in float32: 6,000 at a = 1e6; 256,000 at 1.3e9, where float32's r + 1
# no longer changes r). It never ends where x == a > 2^24 (each term is 1); this bound,
# far beyond any converging case, only stops that.
_SERIES_MAX_TERMS = 2 ** 20


def _igamma_series(ax, x, a, enabled, mode):
  eps = _finfo(x).eps

  def cond(enabled, r, c, ans, dc_da, dans_da, i):
    return and_(enabled, lt(i, np.int32(_SERIES_MAX_TERMS)))

  def body(enabled, r, c, ans, dc_da, dans_da, i):
    r1 = add(r, _const(r, 1))
    dc_da1 = sub(mul(dc_da, div(x, r1)), div(mul(c, x), mul(r1, r1)))
    dans_da1 = add(dans_da, dc_da1)
    c1 = mul(c, div(x, r1))
    ans1 = add(ans, c1)
    if mode == "value":
      more = gt(div(c1, ans1), _const(c1, eps))
    else:
      more = gt(abs(div(dc_da1, dans_da1)), _const(c1, eps))
    keep = lambda new, old: select(enabled, new, old)  # converged elements stay put
    return [and_(enabled, more), keep(r1, r), keep(c1, c), keep(ans1, ans),
            keep(dc_da1, dc_da), keep(dans_da1, dans_da), add(i, np.int32(1))]

  init = [enabled, a, _ones(a), _ones(a), _zeros(a), _zeros(a), np.int32(0)]
  _, _, _, ans, _, dans_da, _ = _while(cond, body, init)
  if mode == "value":
    return div(mul(ans, ax), a)
  dlogax_da = sub(log(x), digamma(add(a, _const(a, 1))))
  if mode == "grad_a":
    return div(mul(ax, add(mul(ans, dlogax_da), dans_da)), a)
  return neg(div(mul(add(dans_da, mul(ans, dlogax_da)), x), a))  # "sample_grad"


def _igammac_continued_fraction(ax, x, a, enabled, mode):
  eps = _finfo(x).eps
  one = _const(x, 1)

  def cond(enabled, *_rest):
    return and_(enabled, lt(_rest[-1], np.int32(2000)))

  def body(enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
           dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da, i):
    c1, y1, z1 = add(c, one), add(y, one), add(z, _const(x, 2))
    yc = mul(y1, c1)
    pk = sub(mul(pkm1, z1), mul(pkm2, yc))
    qk = sub(mul(qkm1, z1), mul(qkm2, yc))
    qk_nonzero = ne(qk, _const(qk, 0))
    r = div(pk, qk)
    t1 = select(qk_nonzero, abs(div(sub(ans, r), r)), _ones(t))
    ans1 = select(qk_nonzero, r, ans)
    # d/da of the recurrences: dy/da = dz/da = -1.
    dpk_da = add(sub(sub(mul(dpkm1_da, z1), pkm1), mul(dpkm2_da, yc)), mul(pkm2, c1))
    dqk_da = add(sub(sub(mul(dqkm1_da, z1), qkm1), mul(dqkm2_da, yc)), mul(qkm2, c1))
    dans_da1 = select(qk_nonzero, div(sub(dpk_da, mul(ans1, dqk_da)), qk), dans_da)
    grad_delta = select(qk_nonzero, abs(sub(dans_da1, dans_da)), _ones(t))
    # Rescale the convergents when they grow large (their ratio is what matters).
    big = gt(abs(pk), _const(pk, 1 / eps))
    scale = lambda v: select(big, mul(v, _const(v, eps)), v)
    new_pkm2, new_pkm1, new_qkm2, new_qkm1 = map(scale, (pkm1, pk, qkm1, qk))
    new_d = list(map(scale, (dpkm1_da, dqkm1_da, dpk_da, dqk_da)))
    if mode == "value":
      more = gt(t1, _const(t1, eps))
    else:
      more = gt(grad_delta, _const(t1, eps))
    keep = lambda new, old: select(enabled, new, old)
    return [and_(enabled, more), keep(ans1, ans), keep(t1, t), keep(y1, y), keep(z1, z),
            keep(c1, c), keep(new_pkm1, pkm1), keep(new_qkm1, qkm1), keep(new_pkm2, pkm2),
            keep(new_qkm2, qkm2), keep(new_d[0], dpkm2_da), keep(new_d[1], dqkm2_da),
            keep(new_d[2], dpkm1_da), keep(new_d[3], dqkm1_da), keep(dans_da1, dans_da),
            add(i, np.int32(1))]

  y = sub(one, a)
  z = add(add(x, y), one)
  pkm1 = add(x, one)
  qkm1 = mul(z, x)
  ans = div(pkm1, qkm1)
  dqkm1_da = neg(x)
  dans_da = div(neg(mul(ans, dqkm1_da)), qkm1)
  init = [enabled, ans, _ones(x), y, z, _zeros(x), pkm1, qkm1, _ones(x), x,
          _zeros(x), _zeros(x), _zeros(x), dqkm1_da, dans_da, np.int32(0)]
  outs = _while(cond, body, init)
  ans, dans_da = outs[1], outs[14]
  if mode == "value":
    return mul(ans, ax)
  dlogax_da = sub(log(x), digamma(a))
  if mode == "grad_a":
    return mul(ax, add(mul(ans, dlogax_da), dans_da))
  return neg(mul(add(dans_da, mul(ans, dlogax_da)), x))  # "sample_grad"


def _igamma_impl(a, x):
  x_zero, x_inf, a_zero = eq(x, _const(x, 0)), eq(x, _const(x, np.inf)), eq(a, _const(a, 0))
  bad = _any_of(lt(x, _const(x, 0)), lt(a, _const(a, 0)), and_(a_zero, x_zero),
                _isnan(a), _isnan(x))
  use_fraction = and_(ge(x, _const(x, 1)), gt(x, a))
  log_ax = _igamma_log_prefactor(a, x)
  underflow = lt(log_ax, _const(x, -np.log(_finfo(x).max)))
  ax = exp(log_ax)
  # No special case for a == 0 < x (as in JAX 0.10.2): lgamma(0) = inf underflows the
  # prefactor, so the disabled series gives 0/0 = NaN for x < 1 and the fraction
  # 1 - 0 = 1 for x >= 1 (scipy's P(0, x) = 1 would disagree with JAX below 1).
  enabled = not_(_any_of(x_zero, bad, underflow, x_inf))
  out = select(use_fraction,
               sub(_const(x, 1), _igammac_continued_fraction(
                   ax, x, a, and_(enabled, use_fraction), "value")),
               _igamma_series(ax, x, a, and_(enabled, not_(use_fraction)), "value"))
  out = select(x_zero, _zeros(out), out)
  out = select(x_inf, _ones(out), out)
  return select(bad, _full_like(out, np.nan), out)


def _igammac_impl(a, x):
  x_zero, x_inf = eq(x, _const(x, 0)), eq(x, _const(x, np.inf))
  a_zero = eq(a, _const(a, 0))
  bad = _any_of(lt(x, _const(x, 0)), lt(a, _const(a, 0)), and_(a_zero, x_zero),
                _isnan(a), _isnan(x))
  use_series = or_(lt(x, _const(x, 1)), lt(x, a))
  log_ax = _igamma_log_prefactor(a, x)
  underflow = lt(log_ax, _const(x, -np.log(_finfo(x).max)))
  ax = exp(log_ax)
  # No case for a = inf (as in JAX 0.10.2): its prefactor is inf*log(x) - inf, NaN for
  # finite x, so Q(inf, x) is NaN, while Q(a, inf) = 0 for every a, inf included.
  enabled = not_(_any_of(bad, underflow, x_inf, a_zero))
  out = select(use_series,
               sub(_const(x, 1), _igamma_series(ax, x, a, and_(enabled, use_series),
                                                "value")),
               _igammac_continued_fraction(ax, x, a, and_(enabled, not_(use_series)),
                                           "value"))
  out = select(or_(x_inf, a_zero), _zeros(out), out)
  return select(bad, _full_like(out, np.nan), out)


def _igamma_derivative_impl(mode):
  def impl(a, x):
    x_zero = eq(x, _const(x, 0))
    bad = _any_of(lt(x, _const(x, 0)), le(a, _const(a, 0)), _isnan(a), _isnan(x))
    use_fraction = and_(gt(x, _const(x, 1)), gt(x, a))
    log_ax = _igamma_log_prefactor(a, x)
    underflow = lt(log_ax, _const(x, -np.log(_finfo(x).max)))
    ax = exp(log_ax)
    enabled = not_(_any_of(x_zero, bad, underflow))
    out = select(use_fraction,
                 neg(_igammac_continued_fraction(ax, x, a, and_(enabled, use_fraction),
                                                 mode)),
                 _igamma_series(ax, x, a, and_(enabled, not_(use_fraction)), mode))
    out = select(x_zero, _zeros(out), out)
    return select(bad, _full_like(out, np.nan), out)
  return impl


def _promoted(op, x, y):
  """`op(x, y)` as an operator on JAX tracers computes it (jnp promotion): a weak operand
  meeting a strong one of the same dtype is cast to strong first. JAX's igamma rule is
  written with operators, so a weak tangent or operand stages that cast, whose transpose
  gives back a weak cotangent."""
  wx, wy = dtypes.is_weakly_typed(x), dtypes.is_weakly_typed(y)
  if wx != wy and _dtype(x) == _dtype(y):
    strong = lambda v: convert_element_type_p.bind(v, new_dtype=_dtype(v), weak_type=False)
    x, y = (strong(x), y) if wx else (x, strong(y))
  return op(x, y)


def _igamma_grad_x(g, a, x):
  # dP/dx = x^(a-1) e^-x / Gamma(a); the 1 is a full_like of `a` (weak when `a` is).
  t = _promoted(add, neg(x), _promoted(mul, sub(a, _ones(a)), log(x)))
  return _promoted(mul, g, exp(_promoted(sub, t, lgamma(a))))


igamma_p = naryop("igamma", _float, None)
igamma = _wrap(igamma_p, "Elementwise regularized incomplete gamma function P(a, x).")
_defjvp_nary(igamma_p, lambda g, a, x: _promoted(mul, g, igamma_grad_a(a, x)), _igamma_grad_x)
utils.defbroadcasting(igamma_p, size_one=True)
mlir.register_lowering(igamma_p, _lower_composition(_igamma_impl))

igammac_p = naryop("igammac", _float, None)
igammac = _wrap(igammac_p,
                "Elementwise complementary regularized incomplete gamma function Q(a, x).")
_defjvp_nary(igammac_p, lambda g, a, x: neg(_promoted(mul, g, igamma_grad_a(a, x))),
          lambda g, a, x: neg(_igamma_grad_x(g, a, x)))
utils.defbroadcasting(igammac_p, size_one=True)
mlir.register_lowering(igammac_p, _lower_composition(_igammac_impl))

def _igamma_grad_a_grad_a(g, a, x):
  # (NotImplementedError, JAX 0.10.2's type for igamma_grad_a, which has no rule at all)
  raise NotImplementedError("Differentiation rule for 'igamma_grad_a' with respect to a "
                            "(the second derivative of igamma in a) not implemented")


igamma_grad_a_p = naryop("igamma_grad_a", _float, None)
igamma_grad_a = _wrap(igamma_grad_a_p,
                      "Elementwise derivative of the regularized incomplete gamma function "
                      "P(a, x) with respect to a.")
# d/dx dP/da = d/da dP/dx = dP/dx (log x - digamma(a)).
_defjvp_nary(igamma_grad_a_p, _igamma_grad_a_grad_a,
          lambda g, a, x: mul(_igamma_grad_x(g, a, x), sub(log(x), digamma(a))))
utils.defbroadcasting(igamma_grad_a_p, size_one=True)
mlir.register_lowering(igamma_grad_a_p, _lower_composition(_igamma_derivative_impl("grad_a")))

random_gamma_grad_p = naryop("random_gamma_grad", _float, None)
random_gamma_grad = _wrap(random_gamma_grad_p,
                          "Elementwise derivative of samples x from Gamma(a, 1) with respect "
                          "to a: -(dP/da) / (dP/dx).")


def _random_gamma_grad_traced(a, x):
  """random_gamma_grad as traced lax ops (a while_loop for the series and the continued
  fraction), the same computation as its lowering: what JAX's random_gamma_grad is."""
  from tracejax._src.lax import structural  # (structural imports this family)
  shape = np.broadcast_shapes(_aval(a).shape, _aval(x).shape)
  a, x = (v if _aval(v).shape == shape else structural.broadcast_in_dim(
      v, shape, tuple(range(len(_aval(v).shape)))) for v in (a, x))
  dt = _dtype(a)
  if dt in (np.dtype(dtypes.bfloat16), np.dtype(np.float16)):  # as _lower_composition
    a, x = convert_element_type(a, np.float32), convert_element_type(x, np.float32)
    return convert_element_type(_igamma_derivative_impl("sample_grad")(a, x), dt)
  return _igamma_derivative_impl("sample_grad")(a, x)


def _random_gamma_grad_jvp(primals, tangents):
  # JAX's random_gamma_grad is traceable lax code, so its derivative (the second
  # derivative of a gamma sample) is forward mode through the iteration itself: here
  # the JVP of the same computation traced with a while_loop. Like JAX's, it cannot be
  # transposed (reverse mode through a while_loop).
  out = random_gamma_grad_p.bind(*primals)
  if all(type(t) is ad.Zero for t in tangents):
    return out, ad.Zero(_aval(out).at_least_vspace())
  live = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]

  def fun(*live_args):
    args = list(primals)
    for i, v in zip(live, live_args):
      args[i] = v
    return [_random_gamma_grad_traced(*args)]

  _, (t_out,) = ad.jvp_flat(fun, [primals[i] for i in live], [tangents[i] for i in live])
  return out, t_out


ad.primitive_jvps[random_gamma_grad_p] = _random_gamma_grad_jvp
utils.defbroadcasting(random_gamma_grad_p, size_one=True)
mlir.register_lowering(random_gamma_grad_p,
                       _lower_composition(_igamma_derivative_impl("sample_grad")))

# ---- betainc (the regularized incomplete beta function) ----


def _betainc_continued_fraction(a, b, x):
  """The continued fraction of I_x(a, b) (DLMF 8.17.22) by the modified Lentz method."""
  finfo = _finfo(x)
  eps = finfo.eps
  fpmin = float(finfo.tiny) / float(eps)  # keeps the Lentz ratios away from zero
  one = _const(x, 1)
  max_iter = 600 if _dtype(x) == np.float64 else 200
  qab, qap, qam = add(a, b), add(a, one), sub(a, one)

  def nonzero(v):
    return select(lt(abs(v), _const(v, fpmin)), _full_like(v, fpmin), v)

  def cond(enabled, c, d, h, i):
    return and_(enabled, lt(i, np.int32(max_iter)))

  def body(enabled, c, d, h, i):
    m = convert_element_type(add(i, np.int32(1)), _dtype(x))
    m2 = mul(m, _const(x, 2))
    # even step: d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m))
    aa = div(mul(mul(m, sub(b, m)), x), mul(add(qam, m2), add(a, m2)))
    d1 = reciprocal(nonzero(add(one, mul(aa, d))))
    c1 = nonzero(add(one, div(aa, c)))
    h1 = mul(h, mul(d1, c1))
    # odd step: d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
    aa = div(neg(mul(mul(add(a, m), add(qab, m)), x)), mul(add(a, m2), add(qap, m2)))
    d2 = reciprocal(nonzero(add(one, mul(aa, d1))))
    c2 = nonzero(add(one, div(aa, c1)))
    delta = mul(d2, c2)
    h2 = mul(h1, delta)
    more = gt(abs(sub(delta, one)), _const(x, eps))
    keep = lambda new, old: select(enabled, new, old)
    return [and_(enabled, more), keep(c2, c), keep(d2, d), keep(h2, h), add(i, np.int32(1))]

  d = reciprocal(nonzero(sub(one, div(mul(qab, x), qap))))
  enabled = not_(_any_of(_isnan(a), _isnan(b), _isnan(x)))
  _, _, _, h, _ = _while(cond, body, [enabled, _ones(x), d, d, np.int32(0)])
  return h


def _betainc_impl(a, b, x):
  zero, one = _const(x, 0), _const(x, 1)
  a_zero, b_zero = eq(a, zero), eq(b, zero)
  x_zero, x_one = eq(x, zero), eq(x, one)
  bad = _any_of(lt(a, zero), lt(b, zero), lt(x, zero), gt(x, one), and_(a_zero, b_zero),
                _isnan(a), _isnan(b), _isnan(x))
  # The fraction converges fast for x < (a + 1) / (a + b + 2); elsewhere use
  # I_x(a, b) = 1 - I_{1-x}(b, a) (DLMF 8.17.4).
  flip = gt(x, div(add(a, one), add(add(a, b), _const(x, 2))))
  a2, b2, x2 = select(flip, b, a), select(flip, a, b), select(flip, sub(one, x), x)
  cf = _betainc_continued_fraction(a2, b2, x2)
  lbeta = sub(add(lgamma(a2), lgamma(b2)), lgamma(add(a2, b2)))
  front = exp(sub(add(mul(a2, log(x2)), mul(b2, log1p(neg(x2)))), lbeta))
  val = div(mul(front, cf), a2)
  out = select(flip, sub(one, val), val)
  # Degenerate parameters: a = 0 puts all mass at 0, b = 0 at 1.
  out = select(or_(and_(a_zero, not_(x_zero)), x_one), _ones(out), out)
  out = select(or_(and_(b_zero, not_(x_one)), x_zero), _zeros(out), out)
  return select(bad, _full_like(out, np.nan), out)


def _betainc_grad_not_implemented(g, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_grad_x(g, a, b, x):
  one = _const(x, 1)
  lbeta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
  return mul(g, exp(sub(add(mul(sub(b, one), log1p(neg(x))), mul(sub(a, one), log(x))),
                        lbeta)))


regularized_incomplete_beta_p = naryop("regularized_incomplete_beta", _float, None)
betainc = _wrap(regularized_incomplete_beta_p,
                "Elementwise regularized incomplete beta integral I_x(a, b).")
betainc.__name__ = betainc.__qualname__ = "betainc"
_defjvp_nary(regularized_incomplete_beta_p, _betainc_grad_not_implemented,
          _betainc_grad_not_implemented, _betainc_grad_x)
utils.defbroadcasting(regularized_incomplete_beta_p, size_one=True)
mlir.register_lowering(regularized_incomplete_beta_p, _lower_composition(_betainc_impl))

# ---- bessel_i0e, bessel_i1e ----

# Chebyshev coefficients of Cephes' i0.c: A for |x| <= 8 (in x/2 - 2), B for |x| > 8
# (in 32/x - 2). Float32 uses the trailing (largest) terms only.
_I0E_A = np.array([
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1])
_I0E_B = np.array([
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1])


def _chebyshev(x, coeffs):
  """Clenshaw's recurrence for sum' c_k T_k(x/2) (Cephes' chbevl)."""
  b0, b1, b2 = _zeros(x), _zeros(x), _zeros(x)
  for c in coeffs:
    b2, b1 = b1, b0
    b0 = add(sub(mul(x, b1), b2), _const(x, c))
  return mul(_const(x, 0.5), sub(b0, b2))


def _bessel_i0e_impl(x):
  a_coeffs, b_coeffs = (_I0E_A, _I0E_B) if _dtype(x) == np.float64 else \
      (_I0E_A[-18:], _I0E_B[-7:])
  x = abs(x)
  small = _chebyshev(sub(mul(_const(x, 0.5), x), _const(x, 2)), a_coeffs)
  large = div(_chebyshev(sub(div(_const(x, 32), x), _const(x, 2)), b_coeffs), sqrt(x))
  return select(le(x, _const(x, 8)), small, large)


bessel_i0e_p = naryop("bessel_i0e", _float, None)
bessel_i0e = _wrap(bessel_i0e_p, "Exponentially scaled modified Bessel function of order 0: "
                                 "i0e(x) = exp(-|x|) i0(x).")
ad.defjvp2(bessel_i0e_p, lambda g, y, x: mul(g, sub(bessel_i1e(x), mul(sign(x), y))))
utils.defvectorized(bessel_i0e_p)
mlir.register_lowering(bessel_i0e_p, _lower_composition(_bessel_i0e_impl))


def _bessel_i1e_jvp(g, y, x):
  # i1e'(x) = i0e(x) - y (sign(x) + 1/x), whose limit at 0 is 1/2.
  eps = _finfo(x).eps
  not_tiny = gt(abs(x), _const(x, eps))
  safe_x = select(not_tiny, x, _full_like(x, eps))
  dy_dx = sub(bessel_i0e(safe_x), mul(y, add(sign(safe_x), reciprocal(safe_x))))
  return mul(g, select(not_tiny, dy_dx, _full_like(x, 0.5)))


bessel_i1e_p = naryop("bessel_i1e", _float, chlo.bessel_i1e)
bessel_i1e = _wrap(bessel_i1e_p, "Exponentially scaled modified Bessel function of order 1: "
                                 "i1e(x) = exp(-|x|) i1(x).")
ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)
utils.defvectorized(bessel_i1e_p)

