"""Taylor-mode automatic differentiation: `jet`.

`jet(f, (x,), ([x1, x2, ...],))` pushes a truncated Taylor series through `f`.
The public convention is JAX's: the k-th term is the k-th *derivative* of the
input curve, `x(t) = x + x1 t + x2 t^2/2! + ...`, and the k-th output term is
d^k/dt^k f(x(t)) at t = 0.

Inside, the trace carries *normalized* coefficients (term_k / k!) because then
products are plain Cauchy products and every rule below is the textbook
recurrence with no factorials in it. `jet_rules[prim]` still answers in JAX's
derivative convention (a `TaylorRule` converts when called directly), so user
rules registered in that convention work; the trace calls the normalized form
of the built-in rules directly and skips the conversion.

Terms may be the symbolic `zero_term`; the series helpers skip them, so a
series like `[v, 0, 0]` costs far less than a dense one. A value none of whose
terms is nonzero leaves the trace entirely (it is a constant).
"""
import importlib
import math
import weakref

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Trace, Tracer, current_trace, set_current_trace
from tracejax._src.interpreters import ad, staging
from tracejax._src.lax import dot as lax_dot
from tracejax._src.lax import elementwise as lx
from tracejax._src.lax import misc as lmisc
from tracejax._src.lax import reductions as lred
from tracejax._src.lax import slicing as lslice
from tracejax._src.lax import special as lspecial
from tracejax._src.lax import sorting as lsort
from tracejax._src.lax import structural as lstruct
from tracejax._src.lax import windowed as lwin


class ZeroTerm:
  """A symbolic zero Taylor term (the singleton `zero_term`)."""
  __slots__ = ()

  def __repr__(self):
    return "zero_term"


class ZeroSeries:
  """A symbolic all-zero Taylor series (the singleton `zero_series`)."""
  __slots__ = ()

  def __repr__(self):
    return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()


def _is_zero(t):
  return t is zero_term


def fact(n):
  """n! as a Python int."""
  return math.factorial(n)


# =============================================================================
# Series arithmetic on terms that may be `zero_term`
# =============================================================================

def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


def _c(ref, c):
  """The Python number `c` as a scalar of `ref`'s dtype (no weak-type promotion)."""
  return np.asarray(c, _aval(ref).dtype)


def _add(a, b):
  if _is_zero(a):
    return b
  if _is_zero(b):
    return a
  return lx.add(a, b)


def _sub(a, b):
  if _is_zero(b):
    return a
  if _is_zero(a):
    return lx.neg(b)
  return lx.sub(a, b)


def _neg(a):
  return a if _is_zero(a) else lx.neg(a)


def _mul(a, b):
  if _is_zero(a) or _is_zero(b):
    return zero_term
  return lx.mul(a, b)


def _scale(a, c):
  if _is_zero(a) or c == 0:
    return zero_term
  if c == 1:
    return a
  return lx.mul(a, _c(a, c))


def _div(a, b):
  return zero_term if _is_zero(a) else lx.div(a, b)


def _sum(terms):
  acc = zero_term
  for t in terms:
    acc = _add(acc, t)
  return acc


def _cauchy(x, y, k, lo=0, hi=None, op=None):
  """sum_{j=lo..hi} x[j] * y[k-j] (hi defaults to k), with `op` the bilinear product."""
  hi = k if hi is None else hi
  op = op or _mul
  return _sum(op(x[j], y[k - j]) for j in range(lo, hi + 1))


def _weighted(x, y, k, weight):
  """sum_{j=1..k} weight(j) * x[j] * y[k-j]."""
  return _sum(_scale(_mul(x[j], y[k - j]), weight(j)) for j in range(1, k + 1))


def s_mul(x, y):
  """Product of two series (full lists, index 0 = primal)."""
  return [_cauchy(x, y, k) for k in range(len(x))]


def s_div(x, y):
  """Quotient: z y = x, solved for z term by term."""
  z = [lx.div(x[0], y[0])]
  for k in range(1, len(x)):
    z.append(_div(_sub(x[k], _cauchy(y, z, k, lo=1)), y[0]))
  return z


def s_power(x, a, z0=None):
  """x ** a for a constant exponent `a` (scalar or array): from x z' = a x' z."""
  z = [lx.pow(x[0], _c(x[0], a) if np.ndim(a) == 0 and not isinstance(a, Tracer) else a)
       if z0 is None else z0]
  for k in range(1, len(x)):
    acc = zero_term
    for j in range(1, k + 1):
      term = _mul(x[j], z[k - j])
      if _is_zero(term):
        continue
      w = _sub(_scale_any(term, a, j), _scale(term, k - j))
      acc = _add(acc, w)
    z.append(_div(_scale(acc, 1.0 / k), x[0]))
  return z


def _scale_any(term, a, j):
  """j * a * term for a Python-number or array exponent `a`."""
  if isinstance(a, (int, float)):
    return _scale(term, a * j)
  return lx.mul(_scale(term, j), a)


def s_exp(x):
  """exp: z' = z x'."""
  z = [lx.exp(x[0])]
  for k in range(1, len(x)):
    z.append(_scale(_weighted(x, z, k, lambda j: j), 1.0 / k))
  return z


def s_log(x, x0=None):
  """log (or log1p with `x0` = 1 + x): x z' = x'."""
  x0 = x[0] if x0 is None else x0
  z = [None]
  for k in range(1, len(x)):
    # Only j < k contributes: z[k] is the unknown being solved for.
    acc = _sum(_scale(_mul(z[j], x[k - j]), j) for j in range(1, k))
    z.append(_div(_sub(x[k], _scale(acc, 1.0 / k)), x0))
  return z


def s_quad_ode(x, z0, c0, beta, alpha):
  """z with z' = h(z) x', h(z) = c0 + beta z + alpha z^2 (exp, expm1, tanh, tan, logistic)."""
  z, h = [z0], []
  for k in range(1, len(x)):
    m = k - 1  # h_m only needs z_0..z_m, all known now
    hm = _scale(z[m], beta)
    if alpha:
      hm = _add(hm, _scale(_cauchy(z, z, m), alpha))
    if m == 0:
      hm = _add(hm, _c(z0, c0)) if c0 else hm
    h.append(hm)
    z.append(_scale(_weighted(x, h, k, lambda j: j), 1.0 / k))
  return z


def s_sincos(x, hyperbolic=False):
  """sin and cos (or sinh and cosh): s' = c x', c' = -s x' (+ for hyperbolic)."""
  s = [lx.sinh(x[0]) if hyperbolic else lx.sin(x[0])]
  c = [lx.cosh(x[0]) if hyperbolic else lx.cos(x[0])]
  sgn = 1.0 if hyperbolic else -1.0
  for k in range(1, len(x)):
    s.append(_scale(_weighted(x, c, k, lambda j: j), 1.0 / k))
    c.append(_scale(_weighted(x, s, k, lambda j: j), sgn / k))
  return s, c


def s_sqrt(x):
  z = [lx.sqrt(x[0])]
  two_z0 = lx.mul(z[0], _c(z[0], 2))
  for k in range(1, len(x)):
    z.append(_div(_sub(x[k], _cauchy(z, z, k, lo=1, hi=k - 1)), two_z0))
  return z


def s_integrate(z0, fprime, x):
  """z with z' = fprime * x', where the series `fprime` does not depend on z."""
  n = len(x)
  dx = [_scale(x[j + 1], j + 1) for j in range(n - 1)]
  z = [z0]
  for k in range(1, n):
    z.append(_scale(_cauchy(fprime, dx, k - 1), 1.0 / k))
  return z


def _const_series(value, n):
  return [value] + [zero_term] * (n - 1)


def s_add_const(x, c):
  return [lx.add(x[0], _c(x[0], c))] + list(x[1:])


def s_sq(x):
  return s_mul(x, x)


def s_neg(x):
  return [lx.neg(x[0])] + [_neg(t) for t in x[1:]]


# =============================================================================
# Rules. A normalized rule is `rule(primals, series, **params) -> (primal_out, terms_out)`
# with series[i] a list of `order` normalized terms (zero_term allowed).
# =============================================================================

class TaylorRule:
  """A jet rule. Called directly it takes and returns JAX's derivative-convention series;
  the trace uses `.taylor`, the same rule on normalized coefficients."""

  def __init__(self, taylor, name=""):
    self.taylor = taylor
    self.__name__ = f"jet_rule_{name}"

  def __call__(self, primals_in, series_in, **params):
    norm = [[_scale(t, 1.0 / fact(k + 1)) if not _is_zero(t) else t for k, t in enumerate(s)]
            for s in series_in]
    out, terms = self.taylor(list(primals_in), norm, **params)
    return out, _denormalize(out, terms)


def _denormalize(out, terms):
  if isinstance(out, (list, tuple)):
    return [[_scale(t, fact(k + 1)) for k, t in enumerate(ts)] for ts in terms]
  return [_scale(t, fact(k + 1)) for k, t in enumerate(terms)]


jet_rules = {}


def _register(prim, taylor):
  jet_rules[prim] = TaylorRule(taylor, prim.name)


def _full(primal, series):
  return [primal] + list(series)


def _unary(prim, series_fn):
  """A rule for an elementwise unary primitive from a full-series function."""
  def rule(primals, series, **params):
    z = series_fn(_full(primals[0], series[0]), **params)
    return z[0], z[1:]
  _register(prim, rule)


def _zeros_of(x):
  return ad.zeros_like_aval(_aval(x))


def _inst(t, ref):
  return _zeros_of(ref) if _is_zero(t) else t


def defzero(prim):
  """The primitive's output has zero Taylor terms (piecewise constant, or not float)."""
  def rule(primals, series, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [[zero_term] * len(series[0]) for _ in out]
    return out, [zero_term] * len(series[0])
  _register(prim, rule)


def deflinear(prim):
  """Linear in its float operands jointly (integer/bool operands are held fixed):
  each output term is the primitive applied to the operands' terms."""
  def rule(primals, series, **params):
    out = prim.bind(*primals, **params)
    order = len(series[0])
    lin = [_is_float(p) for p in primals]
    terms = []
    for k in range(order):
      ks = [s[k] for s, l in zip(series, lin) if l]
      if all(_is_zero(t) for t in ks):
        terms.append(zero_term)
        continue
      args = [(_inst(s[k], p) if l else p) for p, s, l in zip(primals, series, lin)]
      terms.append(prim.bind(*args, **params))
    if prim.multiple_results:
      return out, [[t[i] if not _is_zero(t) else zero_term for t in terms]
                   for i in range(len(out))]
    return out, terms
  _register(prim, rule)


def _is_float(x):
  return dtypes.issubdtype(_aval(x).dtype, np.inexact)


def defbilinear(prim):
  """Bilinear in its two operands (mul, dot_general, conv): Cauchy products."""
  def rule(primals, series, **params):
    x, y = [_full(p, s) for p, s in zip(primals, series)]
    op = lambda a, b: zero_term if _is_zero(a) or _is_zero(b) else prim.bind(a, b, **params)
    out = prim.bind(*primals, **params)
    return out, [_cauchy(x, y, k, op=op) for k in range(1, len(x))]
  _register(prim, rule)


# ---- arithmetic ----

def _add_rule(prim, sign):
  def rule(primals, series, **params):
    out = prim.bind(*primals, **params)
    sx, sy = series
    terms = [_add(a, _neg(b)) if sign < 0 else _add(a, b) for a, b in zip(sx, sy)]
    return out, terms
  _register(prim, rule)


_add_rule(lx.add_p, 1)
_add_rule(ad.add_any_p, 1)
_add_rule(lx.sub_p, -1)
defbilinear(lx.mul_p)
defbilinear(lax_dot.dot_general_p)


def _div_rule(primals, series):
  x, y = primals
  if all(_is_zero(t) for t in series[1]):
    return lx.div(x, y), [_div(t, y) for t in series[0]]
  z = s_div(_full(x, series[0]), _full(y, series[1]))
  return z[0], z[1:]


_register(lx.div_p, _div_rule)


def _integer_pow_series(x, y):
  if y == 0:
    return _const_series(lx.integer_pow(x[0], 0), len(x))
  n, acc, base = abs(y), None, x
  while n:  # binary exponentiation with Cauchy products: exact at x = 0, unlike x^a
    if n & 1:
      acc = base if acc is None else s_mul(acc, base)
    n >>= 1
    if n:
      base = s_mul(base, base)
  acc[0] = lx.integer_pow(x[0], abs(y))
  if y < 0:
    return s_div(_const_series(lx.integer_pow(x[0], 0), len(x)), acc)
  return acc


_unary(lx.integer_pow_p, lambda x, y: _integer_pow_series(x, y))
_unary(lx.square_p, lambda x: s_mul(x, x))
_unary(lx.neg_p, s_neg)
_unary(lx.exp_p, lambda x: s_quad_ode(x, lx.exp(x[0]), 0, 1, 0))
_unary(lx.expm1_p, lambda x: _expm1_series(x))
_unary(lx.exp2_p, lambda x: s_quad_ode(x, lx.exp2(x[0]), 0, math.log(2.0), 0))
_unary(lx.tanh_p, lambda x: s_quad_ode(x, lx.tanh(x[0]), 1, 0, -1))
_unary(lx.tan_p, lambda x: s_quad_ode(x, lx.tan(x[0]), 1, 0, 1))
_unary(lx.logistic_p, lambda x: s_quad_ode(x, lx.logistic(x[0]), 0, 1, -1))
_unary(lx.log_p, lambda x: [lx.log(x[0])] + s_log(x)[1:])
_unary(lx.log1p_p, lambda x: [lx.log1p(x[0])] + s_log(x, lx.add(x[0], _c(x[0], 1)))[1:])
_unary(lx.sqrt_p, s_sqrt)
_unary(lx.rsqrt_p, lambda x: s_power(x, -0.5, lx.rsqrt(x[0])))
_unary(lx.cbrt_p, lambda x: s_power(x, 1.0 / 3.0, lx.cbrt(x[0])))
_unary(lx.sin_p, lambda x: s_sincos(x)[0])
_unary(lx.cos_p, lambda x: s_sincos(x)[1])
_unary(lx.sinh_p, lambda x: s_sincos(x, True)[0])
_unary(lx.cosh_p, lambda x: s_sincos(x, True)[1])


def _expm1_series(x):
  # z = e^x - 1, z' = (z + 1) x'; the primal keeps expm1's accuracy near 0.
  z = s_quad_ode(x, lx.expm1(x[0]), 1, 1, 0)
  return z


def _deriv_rule(fn_primal, fprime_series):
  """z' = f'(x) x', with the series of f'(x) (one term shorter) from `fprime_series`."""
  def series_fn(x):
    return s_integrate(fn_primal(x[0]), fprime_series(x[:-1]), x)
  return series_fn


_SQRT_PI_INV2 = 2.0 / math.sqrt(math.pi)
_unary(lx.asin_p, _deriv_rule(lx.asin, lambda x: s_power(_pm_sq(x, -1, 1), -0.5)))
_unary(lx.acos_p, _deriv_rule(lx.acos, lambda x: s_neg(s_power(_pm_sq(x, -1, 1), -0.5))))
_unary(lx.atan_p, _deriv_rule(lx.atan, lambda x: _recip(_pm_sq(x, 1, 1))))
_unary(lx.asinh_p, _deriv_rule(lx.asinh, lambda x: s_power(_pm_sq(x, 1, 1), -0.5)))
_unary(lx.acosh_p, _deriv_rule(lx.acosh, lambda x: s_power(_pm_sq(x, 1, -1), -0.5)))
_unary(lx.atanh_p, _deriv_rule(lx.atanh, lambda x: _recip(_pm_sq(x, -1, 1))))
_unary(lspecial.erf_p, _deriv_rule(
    lspecial.erf, lambda x: [_scale(t, _SQRT_PI_INV2) for t in s_exp(s_neg(s_sq(x)))]))
_unary(lspecial.erfc_p, _deriv_rule(
    lspecial.erfc, lambda x: [_scale(t, -_SQRT_PI_INV2) for t in s_exp(s_neg(s_sq(x)))]))


def _pm_sq(x, sign, const):
  """The series of const + sign * x^2."""
  sq = s_sq(x)
  out = [_scale(t, sign) for t in sq]
  out[0] = lx.add(out[0], _c(x[0], const))
  return out


def _recip(x):
  return s_div(_const_series(lstruct.full_like(x[0], 1), len(x)), x)


def _pow_rule(primals, series):
  x, y = primals
  sx, sy = series
  out = lx.pow(x, y)
  if all(_is_zero(t) for t in sy):
    # Constant exponent: x z' = y x' z (works for any real x where x^y is smooth).
    z = s_power(_full(x, sx), y, out)
    return out, z[1:]
  # General case: z = exp(y log x).
  lx_series = [lx.log(x)] + s_log(_full(x, sx))[1:]
  w = s_mul(_full(y, sy), lx_series)
  z = s_quad_ode(w, out, 0, 1, 0)
  return out, z[1:]


_register(lx.pow_p, _pow_rule)


def _atan2_rule(primals, series):
  y, x = primals
  ys, xs = _full(y, series[0]), _full(x, series[1])
  n = len(ys)
  # z' = (x y' - y x') / (x^2 + y^2)
  dy = [_scale(ys[j + 1], j + 1) for j in range(n - 1)]
  dx = [_scale(xs[j + 1], j + 1) for j in range(n - 1)]
  num = [_sub(_cauchy(xs, dy, k), _cauchy(ys, dx, k)) for k in range(n - 1)]
  den = [_add(a, b) for a, b in zip(s_sq(xs[:-1]), s_sq(ys[:-1]))]
  num[0] = _inst(num[0], y)
  g = s_div(num, den)
  out = lx.atan2(y, x)
  z = [out] + [_scale(g[k - 1], 1.0 / k) for k in range(1, n)]
  return out, z[1:]


_register(lx.atan2_p, _atan2_rule)


def _abs_rule(primals, series):
  x, = primals
  sgn = lx.sign(x)
  return lx.abs(x), [_mul(sgn, t) for t in series[0]]


_register(lx.abs_p, _abs_rule)


def _select_by(pred_gt, pred_lt, a, b, ref):
  """a where pred_gt, b where pred_lt, their mean at ties."""
  a, b = _inst(a, ref), _inst(b, ref)
  mean = lx.mul(lx.add(a, b), _c(a, 0.5))
  return lx.select_n(pred_gt, lx.select_n(pred_lt, mean, b), a)


def _minmax_rule(prim):
  def rule(primals, series):
    x, y = primals
    out = prim.bind(x, y)
    gt = lx.gt(x, y) if prim is lx.max_p else lx.lt(x, y)
    lt = lx.lt(x, y) if prim is lx.max_p else lx.gt(x, y)
    shape = _aval(out).shape
    gt, lt = (lstruct.broadcast_in_dim(p, shape, tuple(range(len(shape)))
                                       if _aval(p).shape else ()) for p in (gt, lt))
    terms = []
    for a, b in zip(*series):
      if _is_zero(a) and _is_zero(b):
        terms.append(zero_term)
      else:
        terms.append(_select_by(gt, lt, _bcast(a, shape), _bcast(b, shape), out))
    return out, terms
  _register(prim, rule)


def _bcast(t, shape):
  if _is_zero(t) or _aval(t).shape == tuple(shape):
    return t
  return lstruct.broadcast_in_dim(t, tuple(shape), ())


_minmax_rule(lx.max_p)
_minmax_rule(lx.min_p)


def _reduce_chooser_rule(prim):
  """reduce_max/min: the terms at the extremal entries (averaged over ties)."""
  def rule(primals, series, axes, **params):
    x, = primals
    out = prim.bind(x, axes=axes, **params)
    shape = _aval(x).shape
    keep = tuple(d for d in range(len(shape)) if d not in axes)
    loc = lx.convert_element_type(
        lx.eq(x, lstruct.broadcast_in_dim(out, shape, keep)), _aval(x).dtype)
    counts = lred.reduce_sum(loc, axes)
    terms = [zero_term if _is_zero(t) else lx.div(lred.reduce_sum(lx.mul(t, loc), axes), counts)
             for t in series[0]]
    return out, terms
  _register(prim, rule)


_reduce_chooser_rule(lred.reduce_max_p)
_reduce_chooser_rule(lred.reduce_min_p)


def _clamp_rule(primals, series):
  lo, x, hi = primals
  out = lx.clamp(lo, x, hi)
  shape = _aval(out).shape
  below = _bcast_pred(lx.lt(x, lo), shape)
  above = _bcast_pred(lx.gt(x, hi), shape)
  terms = []
  for tl, tx, th in zip(*series):
    if all(_is_zero(t) for t in (tl, tx, th)):
      terms.append(zero_term)
      continue
    tl, tx, th = (_inst(_bcast(t, shape), out) for t in (tl, tx, th))
    terms.append(lx.select_n(below, lx.select_n(above, tx, th), tl))
  return out, terms


def _bcast_pred(p, shape):
  return p if _aval(p).shape == tuple(shape) else lstruct.broadcast_in_dim(p, tuple(shape), ())


_register(lx.clamp_p, _clamp_rule)


def _sort_rule(primals, series, dimension, is_stable, num_keys):
  """Sorting permutes: each term is sorted along with the primal keys."""
  outs = lsort.sort_p.bind(*primals, dimension=dimension, is_stable=is_stable,
                           num_keys=num_keys)
  keys = list(primals[:num_keys])
  terms = [[zero_term if _is_zero(t) else
            lsort.sort_p.bind(*keys, t, dimension=dimension, is_stable=True,
                              num_keys=num_keys)[-1] for t in s] for s in series]
  return outs, terms


_register(lsort.sort_p, _sort_rule)

# Structural and other linear primitives: every term goes through the primitive.
for _p in (lx.neg_p, lx.convert_element_type_p, lx.real_p, lx.imag_p, lx.conj_p,
           lx.complex_p, lx.select_n_p, lx.reduce_precision_p, lred.reduce_sum_p,
           lstruct.broadcast_in_dim_p, lstruct.reshape_p, lstruct.transpose_p,
           lstruct.squeeze_p, lstruct.rev_p, lstruct.concatenate_p, lstruct.pad_p,
           lslice.slice_p, lslice.dynamic_slice_p, lslice.dynamic_update_slice_p,
           lwin.cumsum_p, lwin.reduce_window_sum_p):
  deflinear(_p)
del _p


def _register_optional_linear():
  from tracejax._src.lax import gather as lgather
  from tracejax._src.lax import fft as lfft
  for p in (lgather.gather_p, lgather.scatter_add_p, lgather.scatter_p, lfft.fft_p):
    deflinear(p)
  from tracejax._src.lax import convolution as lconv
  defbilinear(lconv.conv_general_dilated_p)


_register_optional_linear()

for _p in (lx.sign_p, lx.floor_p, lx.ceil_p, lx.round_p, lx.is_finite_p, lx.nextafter_p,
           lmisc.stop_gradient_p):
  defzero(_p)
del _p


# =============================================================================
# The trace
# =============================================================================

class JetTracer(Tracer):
  """A value with its normalized Taylor terms (a list of `order` arrays or zero_term)."""
  __slots__ = ("primal", "terms")

  def __init__(self, trace, primal, terms):
    self._trace, self.primal, self.terms = trace, primal, terms

  @property
  def aval(self):
    return _aval(self.primal)

  def to_concrete_value(self):
    p = self.primal
    if isinstance(p, Tracer):
      return p.to_concrete_value()
    return np.asarray(p)


class JetTrace(Trace):
  """Pushes truncated Taylor series of length `order` through primitives."""

  def __init__(self, parent, order):
    self.parent, self.order = parent, order
    self.level = parent.level + 1

  def to_series(self, x):
    if isinstance(x, JetTracer) and x._trace is self:
      return x.primal, x.terms
    return x, None

  def process_primitive(self, primitive, args, params):
    primals, series = [], []
    for x in args:
      p, s = self.to_series(x)
      primals.append(p)
      series.append(s)
    if all(s is None for s in series):
      with set_current_trace(self.parent):
        return primitive.bind(*primals, **params)
    if primitive.call_primitive and "call_jaxpr" in params:
      return self.process_call(primitive, primals, series, params)
    cf_rule = _control_flow_rules.get(primitive)
    if cf_rule is not None:
      with set_current_trace(self.parent):
        outs = cf_rule(self, primals, series, **params)
      return [JetTracer(self, p, ts) if ts is not None else p for p, ts in outs]
    if "call" in params and primitive.name in ("custom_jvp_call", "custom_vjp_call"):
      # Taylor-expand the function itself: its custom derivative rule only gives order 1.
      with set_current_trace(self):
        return params["call"](*args)
    series = [[zero_term] * self.order if s is None else s for s in series]
    with set_current_trace(self.parent):
      out_avals = primitive.out_avals([_aval(p) for p in primals], params)
      if not any(dtypes.issubdtype(a.dtype, np.inexact) for a in out_avals):
        return primitive.bind(*primals, **params)  # no Taylor terms through ints/bools
      rule = jet_rules.get(primitive)
      if rule is None:
        raise NotImplementedError(f"Jet rule for '{primitive.name}' not implemented")
      if isinstance(rule, TaylorRule):
        out, terms = rule.taylor(primals, series, **params)
      else:  # a user's rule, in JAX's derivative convention
        deriv = [[_inst(_scale(t, fact(k + 1)), p) for k, t in enumerate(s)]
                 for p, s in zip(primals, series)]
        out, terms = rule(primals, deriv, **params)
        if primitive.multiple_results:
          terms = [_normalize(ts) for ts in terms]
        else:
          terms = _normalize(terms)
      if primitive.multiple_results:
        return [self._wrap(o, ts, a) for o, ts, a in zip(out, terms, out_avals)]
      return self._wrap(out, terms, out_avals[0])

  def _wrap(self, out, terms, aval):
    terms = [t if _is_zero(t) else _fix_shape(t, aval) for t in terms]
    if all(_is_zero(t) for t in terms):
      return out
    return JetTracer(self, out, terms)

  def process_call(self, primitive, primals, series, params):
    """A nested jit: Taylor-expand its jaxpr into a new jaxpr and call that (cached per
    jaxpr, order, zero pattern and avals, so a jet called again does not recompile)."""
    call_jaxpr = params["call_jaxpr"]
    order = self.order
    nz_in = _in_nz(series, order)
    flat_in = _flat_operands(primals, series, nz_in)
    avals = tuple(_aval(x) for x in flat_in)
    key = (order, tuple(map(tuple, nz_in)), avals)
    per_jaxpr = _call_cache.setdefault(call_jaxpr, {})
    entry = per_jaxpr.get(key)
    if entry is None:
      out_nz = []
      fn = _jet_fn(call_jaxpr, nz_in, order, record=out_nz)
      with set_current_trace(self.parent):
        jaxpr, consts = staging.trace_to_jaxpr(fn, list(avals))
      cj, const_args = staging.closed_call_jaxpr(jaxpr, consts)
      entry = (cj, list(const_args), out_nz)
      if not any(isinstance(c, Tracer) for c in const_args):
        per_jaxpr[key] = entry
    cj, const_args, out_nz = entry
    new_params = dict(params, call_jaxpr=cj)
    if "donated_invars" in params:
      new_params["donated_invars"] = (False,) * len(cj.invars)
    with set_current_trace(self.parent):
      outs = primitive.bind(*const_args, *flat_in, **new_params)
    return [JetTracer(self, p, ts) if ts is not None else p
            for p, ts in _split_terms(list(outs), len(call_jaxpr.outvars), out_nz, order)]


_call_cache = weakref.WeakKeyDictionary()  # call_jaxpr -> {(order, zeros, avals): entry}


# =============================================================================
# Control flow: Taylor-expand the body jaxprs and rebuild the loop or switch one
# level out. Loop carries get the union of the zero patterns that reach them.
# =============================================================================

def _in_nz(series, order):
  return [[False] * order if s is None else [not _is_zero(t) for t in s] for s in series]


def _flat_operands(primals, series, nz):
  flat = list(primals)
  for p, s, z in zip(primals, series, nz):
    for k, want in enumerate(z):
      if want:
        t = s[k] if s is not None else zero_term
        flat.append(_fix_shape(_inst(t, p), _aval(p)) if not _is_zero(t) else _zeros_of(p))
  return flat


def _jet_fn(jaxpr, in_nz, order, want=None, record=None):
  """Flat function: (primals, nonzero terms) -> (primal outs, terms per `want`); with
  `want` None it emits the nonzero terms and puts their pattern in `record`."""
  n = len(in_nz)

  def fn(*flat):
    ps, rest = flat[:n], iter(flat[n:])
    trace = JetTrace(current_trace(), order)
    ins = [JetTracer(trace, p, [next(rest) if z else zero_term for z in nz]) if any(nz) else p
           for p, nz in zip(ps, in_nz)]
    with set_current_trace(trace):
      outs = ir.eval_jaxpr(jaxpr, [], *ins)
    p_out, t_out, pattern = [], [], []
    for i, o in enumerate(outs):
      p, ts = trace.to_series(o)
      ts = ts or [zero_term] * order
      p_out.append(p)
      pattern.append([not _is_zero(t) for t in ts])
      for k, t in enumerate(ts):
        if want is None or want[i][k]:
          if want is not None or not _is_zero(t):
            a = _aval(p)
            t_out.append(_zeros_of(p) if _is_zero(t) else _fix_shape(t, a))
    if record is not None:
      record[:] = pattern
    return p_out + t_out
  return fn


def _out_nz(jaxpr, in_nz, order, avals):
  rec = []
  t_avals = [a for a, nz in zip(avals, in_nz) for z in nz if z]
  staging.trace_to_jaxpr(_jet_fn(jaxpr, in_nz, order, record=rec), list(avals) + t_avals)
  return rec


def _union(a, b):
  return [[x or y for x, y in zip(r, s)] for r, s in zip(a, b)]


def _split_terms(outs, n, pattern, order):
  p_out, rest = outs[:n], iter(outs[n:])
  res = []
  for p, z in zip(p_out, pattern):
    ts = [next(rest) if w else zero_term for w in z]
    res.append((p, ts if any(z) else None))
  return res


def _cond_jet(trace, primals, series, branches):
  cond_mod = importlib.import_module("tracejax._src.control_flow.cond")
  order = trace.order
  index, ops, ser = primals[0], primals[1:], series[1:]
  in_nz = _in_nz(ser, order)
  avals = [_aval(p) for p in ops]
  out_nz = [[False] * order for _ in branches[0].outvars]
  for br in branches:
    out_nz = _union(out_nz, _out_nz(br, in_nz, order, avals))
  fns = [_jet_fn(br, in_nz, order, want=out_nz) for br in branches]
  outs = cond_mod._switch(index, fns, _flat_operands(ops, ser, in_nz), "branches")
  return _split_terms(list(outs), len(branches[0].outvars), out_nz, order)


def _carry_fixed_point(jaxpr, in_nz, carry_slice, out_carry, order, avals):
  """The smallest carry zero pattern closed under one more iteration of the body."""
  while True:
    out = _out_nz(jaxpr, in_nz, order, avals)
    cur = in_nz[carry_slice]
    new = _union(cur, out[out_carry])
    if new == cur:
      return in_nz, out
    in_nz = in_nz[:carry_slice.start] + new + in_nz[carry_slice.stop:]


def _scan_jet(trace, primals, series, jaxpr, length, reverse, num_consts, num_carry, linear,
              unroll):
  from tracejax._src.control_flow import loops
  order = trace.order
  nc, nk = num_consts, num_carry
  in_nz = _in_nz(series, order)
  avals = [_aval(p) for p in primals[:nc + nk]] + [
      _aval(p).update(shape=_aval(p).shape[1:]) for p in primals[nc + nk:]]
  carry = slice(nc, nc + nk)
  in_nz, out_nz = _carry_fixed_point(jaxpr, in_nz, carry, slice(0, nk), order, avals)
  want = in_nz[carry] + out_nz[nk:]
  fn = _jet_fn(jaxpr, in_nz, order, want=want)
  consts = _flat_operands(primals[:nc], series[:nc], in_nz[:nc])
  c_nz, x_nz = in_nz[carry], in_nz[nc + nk:]
  init = _flat_operands(primals[carry], series[carry], c_nz)
  xs = _flat_operands(primals[nc + nk:], series[nc + nk:], x_nz)
  n_cp, n_xp = nk, len(x_nz)

  def body(c, x):
    # fn takes (all primals, then all terms) in operand order: consts, carry, xs.
    c_p, c_t = c[:n_cp], c[n_cp:]
    x_p, x_t = x[:n_xp], x[n_xp:]
    const_p, const_t = consts[:nc], consts[nc:]
    outs = fn(*const_p, *c_p, *x_p, *const_t, *c_t, *x_t)
    n_out = len(want)
    p_out, t_out = outs[:n_out], outs[n_out:]
    n_ct = sum(sum(z) for z in want[:nk])
    return list(p_out[:nk]) + list(t_out[:n_ct]), list(p_out[nk:]) + list(t_out[n_ct:])

  c_out, ys = loops.scan(body, init, xs, length=length, reverse=reverse, unroll=unroll)
  res = _split_terms(list(c_out), nk, want[:nk], order)
  return res + _split_terms(list(ys), len(want) - nk, want[nk:], order)


def _while_jet(trace, primals, series, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  from tracejax._src.control_flow import loops
  order = trace.order
  cc, bc = cond_nconsts, body_nconsts
  cond_consts = primals[:cc]
  b_primals, b_series = primals[cc:], series[cc:]
  in_nz = _in_nz(b_series, order)
  avals = [_aval(p) for p in b_primals]
  nk = len(b_primals) - bc
  carry = slice(bc, bc + nk)
  in_nz, _ = _carry_fixed_point(body_jaxpr, in_nz, carry, slice(0, nk), order, avals)
  c_nz = in_nz[carry]
  fn = _jet_fn(body_jaxpr, in_nz, order, want=c_nz)
  consts = _flat_operands(b_primals[:bc], b_series[:bc], in_nz[:bc])
  init = _flat_operands(b_primals[carry], b_series[carry], c_nz)

  def cond_fn(c):
    return ir.eval_jaxpr(cond_jaxpr, [], *cond_consts, *c[:nk])[0]

  def body_fn(c):
    return fn(*consts[:bc], *c[:nk], *consts[bc:], *c[nk:])

  out = loops.while_loop(cond_fn, body_fn, init)
  return _split_terms(list(out), nk, c_nz, order)


def _register_control_flow():
  cond_mod = importlib.import_module("tracejax._src.control_flow.cond")
  from tracejax._src.control_flow import loops
  _control_flow_rules[cond_mod.cond_p] = _cond_jet
  _control_flow_rules[loops.scan_p] = _scan_jet
  _control_flow_rules[loops.while_p] = _while_jet


_control_flow_rules = {}
_register_control_flow()


def _normalize(terms):
  return [t if _is_zero(t) else _scale(t, 1.0 / fact(k + 1)) for k, t in enumerate(terms)]


def _fix_shape(t, aval):
  """Broadcast a term from a rank-0 operand (e.g. a scalar added to an array) to the output."""
  ta = _aval(t)
  if ta.shape != aval.shape:
    t = lstruct.broadcast_in_dim(t, aval.shape, ())
  if ta.dtype != aval.dtype:
    t = lx.convert_element_type(t, aval.dtype)
  return t


# =============================================================================
# The user-facing function
# =============================================================================

def jet(fun, primals, series):
  """Taylor-mode automatic differentiation: push Taylor series through `fun`.

  Args:
    fun: a function of arrays; its output may be a pytree of arrays.
    primals: a tuple (or list) with one array per positional argument of `fun`.
    series: a tuple with one list per primal, each holding the same number `K` of
      terms: the k-th term is the k-th derivative at t = 0 of the input curve,
      x(t) = x + x1 t + x2 t^2 / 2! + ... (`zero_term` / `zero_series` allowed).

  Returns:
    `(primal_out, series_out)`: `fun(*primals)` and, for each output leaf, the list
    of the `K` derivatives of t -> fun(x(t)) at t = 0.

  Example:
    >>> f = jnp.sin
    >>> y, (y1, y2, y3) = jet(f, (1.0,), ([1.0, 0.0, 0.0],))
    >>> # y1 = cos(1), y2 = -sin(1), y3 = -cos(1)
  """
  if not callable(fun):
    raise TypeError(f"jet: fun must be callable, got {fun!r}")
  if not isinstance(primals, (tuple, list)):
    raise TypeError(f"jet: primals must be a tuple or list, got {type(primals).__name__}")
  if not isinstance(series, (tuple, list)):
    raise TypeError(f"jet: series must be a tuple or list, got {type(series).__name__}")
  if len(primals) != len(series):
    raise ValueError(f"jet: primals and series must have the same length, got "
                     f"{len(primals)} and {len(series)}")
  for i, x in enumerate(primals):
    if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
  orders = set()
  for i, s in enumerate(series):
    if s is zero_series:
      continue
    if not isinstance(s, (tuple, list)):
      raise TypeError(f"jet: series[{i}] must be a list of Taylor terms, got "
                      f"{type(s).__name__}")
    orders.add(len(s))
  if len(orders) > 1:
    raise ValueError("jet terms have inconsistent lengths for different arguments")
  order = orders.pop() if orders else 0

  parent = current_trace()
  trace = JetTrace(parent, order)
  ins = []
  for i, (x, s) in enumerate(zip(primals, series)):
    a = _aval(x)
    s = [zero_term] * order if s is zero_series else list(s)
    terms = []
    for k, t in enumerate(s):
      if _is_zero(t):
        terms.append(zero_term)
        continue
      ta = _aval(t)
      if ta.shape != a.shape:
        raise ValueError(f"jet: term {k} of series[{i}] has shape {ta.shape}, but the primal "
                         f"has shape {a.shape}")
      if dtypes.issubdtype(a.dtype, np.inexact) and ta.dtype != a.dtype \
          and not ta.weak_type:
        raise TypeError(f"jet: term {k} of series[{i}] has dtype {ta.dtype}, but the primal "
                        f"has dtype {a.dtype}")
      with set_current_trace(parent):
        t = lx.convert_element_type(t, a.dtype) if ta.dtype != a.dtype else t
        terms.append(_scale(t, 1.0 / fact(k + 1)))
    if not dtypes.issubdtype(a.dtype, np.inexact) or all(_is_zero(t) for t in terms):
      ins.append(x)
    else:
      ins.append(JetTracer(trace, x, terms))
  with set_current_trace(trace):
    out = fun(*ins)
  leaves, tree = tree_util.tree_flatten(out)
  p_out, s_out = [], []
  with set_current_trace(parent):
    for o in leaves:
      p, ts = trace.to_series(o)
      p_out.append(p)
      ts = ts or [zero_term] * order
      a = _aval(p)
      fa = avals_mod.ShapedArray(a.shape, a.dtype if dtypes.issubdtype(a.dtype, np.inexact)
                                 else dtypes.canonicalize_dtype(np.float32), a.weak_type)
      s_out.append([ad.zeros_like_aval(fa) if _is_zero(t) else _scale(t, fact(k + 1))
                    for k, t in enumerate(ts)])
  return tree_util.tree_unflatten(tree, p_out), tree_util.tree_unflatten(tree, s_out)
