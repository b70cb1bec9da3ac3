"""`jax.scipy.special`: special functions built from lax primitives (differentiable,
jittable, vmappable)."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import elementwise as lax
from tracejax._src.lax import special as lax_special


def _promote_inexact(*args):
  """Arrays of one inexact dtype (ints become the default float), as jnp does."""
  import tracejax.numpy as jnp
  from tracejax._src.numpy import util as np_util
  # jnp's promotion keeps weak types (JAX's promote_args_inexact): xlogy(3., 1-2j) and
  # logit(0.) of Python scalars are weak there.
  out = [jnp.asarray(a) for a in np_util.promote_dtypes_inexact(*args)]
  if len(out) > 1:
    out = list(jnp.broadcast_arrays(*out))
  return out


def _normal_cdf_operand(x, msg):
  """`x` as an array for ndtr/ndtri/log_ndtr, which take only float32 and float64.

  JAX 0.10.2 rejects every other dtype (ints, bool, float16, complex) with
  TypeError(msg) rather than promoting, so a Python int is an error too.
  """
  import tracejax.numpy as jnp
  x = jnp.asarray(x)
  if x.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
    raise TypeError(msg.format(x.dtype.name))
  return x


def gammaln(x):
  """Logarithm of the absolute value of the Gamma function.

  >>> gammaln(4.)
  DeviceArray(1.7917603, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.lgamma(x)


def digamma(x):
  """The digamma function (the derivative of gammaln).

  >>> digamma(1.)
  DeviceArray(-0.5772154, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.digamma(x)


def polygamma(n, x):
  """The n-th derivative of the digamma function (n a non-negative integer).

  >>> polygamma(1, 1.)   # pi**2 / 6
  DeviceArray(1.644934, dtype=float32)
  """
  n_dtype = dtypes.dtype(n, canonicalize=True)
  if not dtypes.is_integer(n_dtype):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                     f"{n_dtype}.")
  n, x = _promote_inexact(n, x)
  return lax_special.polygamma(n, x)


def zeta(x, q=None):
  """The Hurwitz zeta function sum_k (k + q)**-x, or with `q=None` the Riemann zeta
  function (continued to x < 1 by the reflection formula, as SciPy's `zeta(x)`).

  >>> zeta(2.)   # pi**2 / 6
  DeviceArray(1.644934, dtype=float32)
  """
  if q is None:
    x, = _promote_inexact(x)
    return _riemann_zeta(x)
  if not _ZETA:
    from tracejax._src.custom_derivatives import custom_jvp
    _ZETA.append(custom_jvp(_hurwitz_zeta))
    _ZETA[0].defjvp(_zeta_jvp)
  # (as in JAX, the custom_jvp takes the arguments before promotion: an integer or bool
  # x has no tangent, so the series is not differentiated in it)
  return _ZETA[0](x, q)


_ZETA = []


def _hurwitz_zeta(x, q):
  x, q = _promote_inexact(x, q)
  return lax_special.zeta(x, q)


def _bernoulli_over_factorial(m):
  """B_2j / (2j)! for j = 1..m (Bernoulli numbers by their recurrence, exactly)."""
  from fractions import Fraction
  from math import comb, factorial
  b = [Fraction(1)]
  for n in range(1, 2 * m + 1):
    b.append(-sum(comb(n + 1, k) * b[k] for k in range(n)) / (n + 1))
  return [float(b[2 * j] / factorial(2 * j)) for j in range(1, m + 1)]


def _zeta_series(s, a):
  """Hurwitz zeta by Euler-Maclaurin summation (Johansson 2015, eq. 5), written in
  differentiable jnp ops: N terms summed, then the integral and M correction terms
  at a + N (N = M = 8 in float32, 16 otherwise, in the operands' dtype)."""
  import tracejax.numpy as jnp
  s, a = _promote_inexact(s, a)
  dt = jnp.result_type(s)
  n = 8 if dt == np.float32 else 16
  k = np.arange(n, dtype=dt)
  total = jnp.sum((a[..., None] + k) ** -s[..., None], -1)
  an = a + dt.type(n)
  total = total + an ** (dt.type(1) - s) / (s - dt.type(1))
  # (s)_(2j-1) / (a + N)^(2j-1), j = 1..M: every other partial product of (s + i) / (a + N)
  ratios = (s[..., None] + np.arange(2 * n, dtype=dt)) / an[..., None]
  rising = jnp.clip(jnp.cumprod(ratios, -1)[..., ::2], max=float(jnp.finfo(dt).max))
  corr = jnp.sum(rising * np.array(_bernoulli_over_factorial(n), dt), -1)
  return total + an ** -s * (dt.type(0.5) + corr)


def _zeta_jvp(primals, tangents):
  # JAX 0.10.2 differentiates zeta in x (and q) through the same kind of series, whose
  # value is then the primal too; lax.zeta itself has no x-derivative (fuzzer seed 201).
  from tracejax._src.api import jvp
  return jvp(_zeta_series, primals, tangents)


def betaln(a, b):
  """Logarithm of the absolute value of the Beta function.

  >>> betaln(2., 3.)
  DeviceArray(-2.4849074, dtype=float32)
  """
  a, b = _promote_inexact(a, b)
  return lax.sub(lax.add(lax_special.lgamma(a), lax_special.lgamma(b)), lax_special.lgamma(lax.add(a, b)))


def betainc(a, b, x):
  """The regularized incomplete beta function.

  >>> betainc(2., 3., 0.5)
  DeviceArray(0.68749976, dtype=float32)
  """
  a, b, x = _promote_inexact(a, b, x)
  return lax_special.betainc(a, b, x)


def gammainc(a, x):
  """Regularized lower incomplete gamma function.

  >>> gammainc(1., 1.)
  DeviceArray(0.6321202, dtype=float32)
  """
  a, x = _promote_inexact(a, x)
  return lax_special.igamma(a, x)


def gammaincc(a, x):
  """Regularized upper incomplete gamma function.

  >>> gammaincc(1., 1.)
  DeviceArray(0.36787927, dtype=float32)
  """
  a, x = _promote_inexact(a, x)
  return lax_special.igammac(a, x)


def erf(x):
  """The error function.

  >>> erf(1.)
  DeviceArray(0.84270084, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.erf(x)


def erfc(x):
  """The complementary error function, 1 - erf(x).

  >>> erfc(1.)
  DeviceArray(0.15729924, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.erfc(x)


def erfinv(x):
  """The inverse of the error function.

  >>> erfinv(0.5)
  DeviceArray(0.47693628, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.erf_inv(x)


def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x)).

  >>> expit(0.)
  DeviceArray(0.5, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax.logistic(x)


def logit(x):
  """The inverse of expit: log(x / (1 - x)).

  >>> logit(0.5)
  DeviceArray(0., dtype=float32)
  """
  if not _LOGIT:
    # A custom_jvp, as JAX's: the derivative is g / (x (1 - x)), so at x = 0 or 1
    # it is inf (differentiating log(x / (1 - x)) gives 0 * inf = nan there).
    from tracejax._src.custom_derivatives import custom_jvp
    f = custom_jvp(_logit_impl)

    def rule(primals, tangents):
      from tracejax._src.lax.elementwise import _const
      x, = primals
      g, = tangents
      return f(x), lax.div(g, lax.mul(x, lax.sub(_const(x, 1), x)))
    f.defjvp(rule)
    _LOGIT.append(f)
  return _LOGIT[0](x)


_LOGIT = []


def _logit_impl(x):
  x, = _promote_inexact(x)
  from tracejax._src.lax.elementwise import _const  # weak for a weak scalar, as JAX's
  return lax.log(lax.div(x, lax.sub(_const(x, 1), x)))


def i0e(x):
  """Exponentially scaled modified Bessel function of order 0.

  >>> i0e(1.)
  DeviceArray(0.46575963, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.bessel_i0e(x)


def i1e(x):
  """Exponentially scaled modified Bessel function of order 1.

  >>> i1e(1.)
  DeviceArray(0.20791042, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax_special.bessel_i1e(x)


def i0(x):
  """Modified Bessel function of order 0.

  >>> i0(1.)
  DeviceArray(1.266066, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax_special.bessel_i0e(x))


def i1(x):
  """Modified Bessel function of order 1.

  >>> i1(1.)
  DeviceArray(0.5651591, dtype=float32)
  """
  x, = _promote_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax_special.bessel_i1e(x))


def _xlogy_impl(x, y):
  import tracejax.numpy as jnp
  x, y = _promote_inexact(x, y)
  safe_y = jnp.where(x == 0, jnp.ones_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log(safe_y))


def _xlog1py_impl(x, y):
  import tracejax.numpy as jnp
  x, y = _promote_inexact(x, y)
  safe_y = jnp.where(x == 0, jnp.zeros_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log1p(safe_y))


def _xlog_jvp(impl, log_fn, shift):
  """The JVP rule of x * log(shift + y): log(shift + y) dx + x / (shift + y) dy.

  As in JAX, the rule sees the arguments as given (not promoted): `lax.log` of an
  integer or bool `y` is a TypeError under differentiation, the x == 0 branch has no
  special case (so at x == 0 the slope in x is log(y)), and the tangent takes the
  result's dtype (strong)."""
  def rule(primals, tangents):
    import tracejax.numpy as jnp
    x, y = (jnp.asarray(a) for a in primals)
    x_dot, y_dot = tangents
    out = impl(x, y)
    denom = y if not shift else 1 + y
    t = x_dot * log_fn(y) + y_dot * x / denom
    return out, lax.convert_element_type(t, out.dtype)
  return rule


def _custom_xlog():
  import tracejax.lax as public_lax  # whose dtype errors are JAX's words
  from tracejax._src.custom_derivatives import custom_jvp
  xlogy_ = custom_jvp(_xlogy_impl)
  xlog1py_ = custom_jvp(_xlog1py_impl)
  # the rules compute the primal through the custom function itself, as JAX's do: a
  # derivative of the primal output (grad of jvp) then uses the rule again
  xlogy_.defjvp(_xlog_jvp(xlogy_, public_lax.log, False))
  xlog1py_.defjvp(_xlog_jvp(xlog1py_, public_lax.log1p, True))
  return xlogy_, xlog1py_


_XLOG = []


def xlogy(x, y):
  """x * log(y), defined as 0 where x == 0.

  Its derivative is log(y) in x and x / y in y everywhere (also at x == 0), as JAX's.

  >>> xlogy(0., 0.)
  DeviceArray(0., dtype=float32)
  """
  if not _XLOG:
    _XLOG.extend(_custom_xlog())
  return _XLOG[0](x, y)


def xlog1py(x, y):
  """x * log1p(y), defined as 0 where x == 0.

  Its derivative is log1p(y) in x and x / (1 + y) in y everywhere, as JAX's.

  >>> xlog1py(0., -1.)
  DeviceArray(0., dtype=float32)
  """
  if not _XLOG:
    _XLOG.extend(_custom_xlog())
  return _XLOG[1](x, y)


def entr(x):
  """-x log(x) for x > 0, 0 at 0, -inf for x < 0.

  >>> entr(1.)
  DeviceArray(-0., dtype=float32)
  """
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  if dtypes.issubdtype(jnp.result_type(x), np.complexfloating):
    # (JAX 0.10.2's error; fuzzer seed 202: -inf "for x < 0" means nothing for complex)
    raise ValueError("entr does not support complex-valued inputs.")
  return jnp.where(x < 0, -jnp.inf, -_xlogx(x))


def _xlogx(x):
  """x * log(x) (0 at 0) as its own custom_jvp, as JAX's entr differentiates it.

  The tangent is x_dot * (log(x) + 1) computed in x's own types, so a weakly typed
  x gives a weakly typed tangent (going through xlogy's rule would cast it strong)."""
  if not _XLOGX:
    from tracejax._src.custom_derivatives import custom_jvp
    f = custom_jvp(lambda x: _xlog_fns()[0](x, x))

    def rule(primals, tangents):
      x, = primals
      x_dot, = tangents
      return f(x), x_dot * (lax.log(x) + 1)
    f.defjvp(rule)
    _XLOGX.append(f)
  return _XLOGX[0](x)


def _xlog_fns():
  if not _XLOG:
    _XLOG.extend(_custom_xlog())
  return _XLOG


_XLOGX = []


def multigammaln(a, d):
  """Log of the multivariate gamma function of dimension d (a static int).

  >>> multigammaln(3.5, 3)
  DeviceArray(3.8958988, dtype=float32)
  """
  import tracejax.numpy as jnp
  d = int(d)
  a, = _promote_inexact(a)
  const = (d * (d - 1) / 4.) * np.log(np.pi)
  terms = [gammaln(a - j / 2.) for j in range(d)]
  total = terms[0]
  for t in terms[1:]:
    total = total + t
  return total + jnp.asarray(const, a.dtype)


def ndtr(x):
  """The standard normal CDF.

  >>> ndtr(0.)
  DeviceArray(0.5, dtype=float32)
  """
  x = _normal_cdf_operand(x, "x.dtype={} is not supported, see docstring for supported types.")
  return _ndtr(x)


def _ndtr(x):
  # JAX's formulation, op for op (its rounding and its derivatives' zeros and NaNs):
  # with w = x / sqrt(2), 1 + erf(w) for |w| < 1/sqrt(2), else from erfc(|w|).
  def c(v):
    return np.asarray(v, x.dtype)
  h = c(0.5 * np.sqrt(2.))
  w = lax.mul(x, h)
  z = lax.abs(w)
  tail = lax.select(lax.gt(w, c(0.)), lax.sub(c(2.), lax_special.erfc(z)), lax_special.erfc(z))
  return lax.mul(c(0.5), lax.select(lax.lt(z, h), lax.add(c(1.), lax_special.erf(w)), tail))


def ndtri(p):
  """The inverse of the standard normal CDF.

  >>> ndtri(0.5)
  DeviceArray(0., dtype=float32)
  """
  x = _normal_cdf_operand(p, "x.dtype={} is not supported, see docstring for supported types.")
  two = np.asarray(2., x.dtype)
  return lax.mul(np.asarray(np.sqrt(2.), x.dtype),
                 lax_special.erf_inv(lax.sub(lax.mul(two, x), np.ones((), x.dtype))))


def log_ndtr(x, series_order=3):
  """log of the standard normal CDF, accurate in both tails.

  Args:
    x: the argument.
    series_order: terms of the asymptotic series used far in the lower tail (a Python
      int from 0 to 30).

  >>> log_ndtr(0.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  # JAX's checks and words.
  if not isinstance(series_order, int):
    raise TypeError("series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = _normal_cdf_operand(x, "x.dtype={} is not supported.")
  return _log_ndtr_fn(int(series_order))(x)


def _log_ndtr_fn(series_order):
  """log_ndtr for one series order, as a custom_jvp (as JAX's): its derivative is
  t * pdf(x) / cdf(x) = t * exp(log pdf(x) - log_ndtr(x)), finite far in the lower
  tail, where differentiating the series gives NaN."""
  if series_order not in _LOG_NDTR:
    from tracejax._src.custom_derivatives import custom_jvp
    f = custom_jvp(lambda x: _log_ndtr_impl(x, series_order))

    def rule(primals, tangents):
      x, = primals
      t, = tangents
      out = f(x)  # through the custom_jvp again, so higher derivatives use this rule too
      log_pdf = lax.sub(lax.mul(np.asarray(-0.5, x.dtype), lax.square(x)),
                        np.asarray(0.5 * np.log(2 * np.pi), x.dtype))
      return out, lax.mul(t, lax.exp(lax.sub(log_pdf, out)))
    f.defjvp(rule)
    _LOG_NDTR[series_order] = f
  return _LOG_NDTR[series_order]


_LOG_NDTR = {}


def _log_ndtr_impl(x, series_order):
  # JAX's three pieces and thresholds (float32: -10 and 5; float64: -20 and 8):
  # -ndtr(-x) above the upper one (log(1 - e) ~ -e), log(ndtr(x)) in the middle and
  # the asymptotic series of the Mills ratio below the lower one.
  def c(v):
    return np.asarray(v, x.dtype)
  lower, upper = (c(-20.), c(8.)) if x.dtype == np.float64 else (c(-10.), c(5.))
  above = lax.gt(x, upper)
  cdf = _ndtr(lax.select(above, lax.neg(x), lax.max(x, lower)))
  xl = lax.min(x, lower)
  log_scale = lax.sub(lax.sub(lax.mul(c(-0.5), lax.square(xl)), lax.log(lax.neg(xl))),
                      c(0.5 * np.log(2 * np.pi)))
  # 1 - 1/x^2 + 3/x^4 - 15/x^6 + ...: odd and even terms summed apart, as JAX does.
  x2 = lax.square(xl)
  x2n, even, odd = x2, c(0.), c(0.)
  for n in range(1, series_order + 1):
    term = lax.div(c(float(np.prod(np.arange(2 * n - 1, 1, -2)))), x2n)
    if n % 2:
      odd = lax.add(odd, term)
    else:
      even = lax.add(even, term)
    x2n = lax.mul(x2n, x2)
  lo = lax.add(log_scale, lax.log(lax.sub(lax.add(c(1.), even), odd)))
  return lax.select(above, lax.neg(cdf), lax.select(lax.gt(x, lower), lax.log(cdf), lo))


def _norm_axes(axis, ndim, name="axis"):
  """`axis` (None, an int or a tuple) as a sorted tuple of non-negative ints."""
  if axis is None:
    return tuple(range(ndim))
  if isinstance(axis, (int, np.integer)):
    axes = (axis,)
  elif isinstance(axis, (tuple, list)):
    axes = tuple(axis)
  else:
    raise TypeError(f"{name} must be None, an int or a tuple of ints, got {axis!r}")
  out = []
  for ax in axes:
    if not isinstance(ax, (int, np.integer)):
      raise TypeError(f"{name} must be None, an int or a tuple of ints, got {axis!r}")
    if not -ndim <= ax < ndim:
      raise ValueError(f"{name} {ax} is out of bounds for array of dimension {ndim}")
    out.append(int(ax) % ndim)
  return tuple(sorted(set(out)))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) over `axis`, computed stably (SciPy's `logsumexp`).

  Args:
    a: the array.
    axis: None (all axes), an int or a tuple of ints.
    b: optional scale factors, broadcast against `a` (may be negative: then use
      `return_sign`, or the result is NaN where the sum is negative).
    keepdims: keep the reduced axes with size 1.
    return_sign: also return the sign (-1, 0 or 1) of the sum.
    where: optional boolean mask of the elements that take part.

  >>> logsumexp(jnp.array([0., 0.]))   # log(2)
  DeviceArray(0.6931472, dtype=float32)
  """
  import tracejax.numpy as jnp
  a, = _promote_inexact(a)
  if b is not None:
    a, b = _promote_inexact(a, b)
    # As JAX: terms with a zero weight are dropped from `a` (set to -inf) so that they
    # do not set the shift `amax`. Otherwise a zero-weight term far above the others
    # leaves a tiny sum whose square underflows in the second derivative (0 * inf).
    a = jnp.where(b != 0, a, -jnp.inf)
  axes = _norm_axes(axis, a.ndim)
  if where is not None:
    where = jnp.broadcast_to(jnp.asarray(where, bool), a.shape)
    a = jnp.where(where, a, -jnp.inf)
  # initial=-inf: an empty reduction gives log(0) = -inf, as JAX (not a max error)
  # Complex terms are shifted by the largest real part, as in JAX: the log of the sum
  # is then the principal one (imaginary part in (-pi, pi]; fuzzer seed 202).
  amax = jnp.max(jnp.real(a) if jnp.iscomplexobj(a) else a, axis=axes, keepdims=True,
                 initial=-jnp.inf)
  amax = _stop(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
  if jnp.iscomplexobj(a):
    amax = amax.astype(a.dtype)
  # lax.sub, not `-`: as in JAX, a weak `a` meets the strong shift without a promotion,
  # so no weak-to-strong cast stands on the gradient's path (grad of a Python scalar's
  # logsumexp is strong there).
  from tracejax._src.lax import elementwise as _lax_ew
  e = jnp.exp(_lax_ew.sub(a, jnp.broadcast_to(amax, a.shape)))
  if b is not None:
    e = e * b
  if where is not None:
    e = jnp.where(where, e, jnp.zeros_like(e))
  s = jnp.sum(e, axis=axes, keepdims=True)
  sign = jnp.sign(s)
  # Complex terms: the complex log keeps the phase of the sum (log|s| drops it).
  out = (jnp.log(s) if jnp.iscomplexobj(s) else jnp.log(jnp.abs(s))) + amax
  if not keepdims:
    out = jnp.squeeze(out, axis=axes)
    sign = jnp.squeeze(sign, axis=axes)
  if return_sign:
    return out, sign
  if b is not None:
    out = jnp.where(sign < 0, jnp.asarray(np.nan, out.dtype), out)
  return out


def _stop(x):
  from tracejax._src.lax.misc import stop_gradient
  return stop_gradient(x)


def _softmax_operand(x, axis):
  """`x` promoted to inexact and `axis` normalised, with JAX's errors: a bad axis,
  then bools (JAX subtracts their max with lax.sub, which refuses bools)."""
  import tracejax.lax
  from tracejax._src.numpy import util as np_util
  x = np_util.to_array(x)
  axes = _norm_axes(axis, x.ndim)
  if x.dtype == np.bool_:
    tracejax.lax.sub(x, x)  # raises JAX's TypeError
  x, = _promote_inexact(x)
  return x, axes


def softmax(x, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (None: all axes, as in SciPy).

  >>> softmax(jnp.array([0., 0.]))
  DeviceArray([0.5, 0.5], dtype=float32)
  """
  import tracejax.numpy as jnp
  x, axes = _softmax_operand(x, axis)
  unnorm = jnp.exp(x - _stop(jnp.max(x, axis=axes, keepdims=True)))
  return unnorm / jnp.sum(unnorm, axis=axes, keepdims=True)


def log_softmax(x, axis=None):
  """log(softmax(x)) over `axis` (None: all axes), computed without overflow.

  >>> log_softmax(jnp.array([0., 0.]))
  DeviceArray([-0.6931472, -0.6931472], dtype=float32)
  """
  import tracejax.numpy as jnp
  x, axes = _softmax_operand(x, axis)
  shifted = x - _stop(jnp.max(x, axis=axes, keepdims=True))
  return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=axes, keepdims=True))


# ---- gamma-function family ----

def gammasgn(x):
  """Sign of the Gamma function: 1 for x > 0, (-1)^ceil(-x) between the poles, NaN at
  the poles (non-positive integers), as in SciPy.

  >>> gammasgn(jnp.array([-1.5, -0.5, 2.]))
  DeviceArray([ 1., -1.,  1.], dtype=float32)
  """
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  fl = jnp.floor(x)
  odd = jnp.mod(fl, 2.) == 1.
  neg_sign = jnp.where(odd, -jnp.ones_like(x), jnp.ones_like(x))
  out = jnp.where(x > 0, jnp.ones_like(x), neg_sign)
  out = jnp.where((x < 0) & (x == fl), jnp.nan, out)
  return jnp.where(jnp.isnan(x), x, out)


def gamma(x):
  """The Gamma function: `gammasgn(x) * exp(gammaln(x))` (inf at 0, NaN at the negative
  integers, as in SciPy).

  >>> gamma(jnp.array([0.5, 4.]))
  DeviceArray([1.7724539, 6.       ], dtype=float32)
  """
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  return gammasgn(x) * jnp.exp(lax_special.lgamma(x))


def loggamma(x):
  """Principal branch of log Gamma for real x: gammaln(x) for x > 0 (inf at 0), NaN for
  x < 0 (where Gamma is negative or the log is complex), as SciPy's real `loggamma`.

  >>> loggamma(jnp.array([0.5, 3.]))
  DeviceArray([0.5723649, 0.6931472], dtype=float32)
  """
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  if jnp.iscomplexobj(x):
    raise TypeError("loggamma: complex arguments are not supported; x must be real")
  return jnp.where(x < 0, jnp.nan, lax_special.lgamma(x))


def beta(a, b):
  """The Beta function Gamma(a) Gamma(b) / Gamma(a + b), signs included.

  >>> beta(2., 3.)
  DeviceArray(0.08333334, dtype=float32)
  """
  import tracejax.numpy as jnp
  a, b = _promote_inexact(a, b)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * jnp.exp(betaln(a, b))


def factorial(n, exact=False):
  """n! as Gamma(n + 1) (0 for n < 0, as in SciPy); `exact=True` (arbitrary-precision
  integers) cannot be traced and is refused with NotImplementedError, as in JAX.

  >>> factorial(jnp.array([3., 4.5]))
  DeviceArray([ 6.      , 52.342777], dtype=float32)
  """
  import tracejax.numpy as jnp
  if exact:
    raise NotImplementedError("factorial with exact=True")
  n, = _promote_inexact(n)
  return jnp.where(n < 0, jnp.zeros_like(n), jnp.exp(lax_special.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
  """The number of combinations of N things taken k at a time, as SciPy's
  `comb(N, k, exact=False)`: Gamma-function based, 0 where k > N, N < 0 or k < 0.
  With `repetition=True`, combinations with repetition, comb(N + k - 1, k).

  >>> comb(5., 2.)
  DeviceArray(10., dtype=float32)
  """
  import tracejax.numpy as jnp
  N, k = _promote_inexact(N, k)
  if repetition:
    N = N + k - 1
  one = jnp.ones_like(N)
  valid = (k <= N) & (N >= 0) & (k >= 0)
  safe_N = jnp.where(valid, N, one)
  safe_k = jnp.where(valid, k, one)
  val = jnp.exp(lax_special.lgamma(safe_N + 1) - lax_special.lgamma(safe_k + 1)
                - lax_special.lgamma(safe_N - safe_k + 1))
  out = jnp.where(valid, val, jnp.zeros_like(N))
  if repetition:
    # comb(N, 0) with repetition is 1 even for N = 0 (then N + k - 1 = -1).
    out = jnp.where((k == 0) & (N >= -1), one, out)
  return out


def poch(z, m):
  """The Pochhammer symbol (z)_m = Gamma(z + m) / Gamma(z), signs included.

  >>> poch(3., 2.)   # 3 * 4
  DeviceArray(12., dtype=float32)
  """
  import tracejax.numpy as jnp
  z, m = _promote_inexact(z, m)
  sign = gammasgn(z + m) * gammasgn(z)
  val = sign * jnp.exp(lax_special.lgamma(z + m) - lax_special.lgamma(z))
  # m = 0 gives 1 even at the poles of Gamma(z).
  return jnp.where(m == 0, jnp.ones_like(z), val)


def bernoulli(n):
  """The Bernoulli numbers B_0 ... B_n (with B_1 = -1/2, as in SciPy) as an array of the
  default float dtype. `n` is a static non-negative int.

  >>> bernoulli(4)
  DeviceArray([ 1.        , -0.5       ,  0.16666667,  0.        , -0.03333334], dtype=float32)
  """
  import fractions
  import tracejax.numpy as jnp
  if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
    raise ValueError(f"bernoulli: n must be a non-negative int, got {n!r}")
  n = int(n)
  # Exact rationals from the recurrence sum_{k<=m} C(m+1, k) B_k = 0, evaluated once at
  # trace time (n is static), then rounded to the float dtype.
  from math import comb as _comb
  b = [fractions.Fraction(1)]
  for m in range(1, n + 1):
    acc = sum(_comb(m + 1, k) * b[k] for k in range(m))
    b.append(-acc / (m + 1))
  return jnp.asarray(np.array([float(v) for v in b]), dtypes.canonicalize_dtype(np.float64))


def boxcox(x, lmbda):
  """The Box-Cox transform: (x**lmbda - 1) / lmbda, log(x) where lmbda == 0.

  >>> boxcox(2., 0.)
  DeviceArray(0.6931472, dtype=float32)
  """
  import tracejax.numpy as jnp
  x, lmbda = _promote_inexact(x, lmbda)
  logx = jnp.log(x)
  safe_l = jnp.where(lmbda == 0, jnp.ones_like(lmbda), lmbda)
  return jnp.where(lmbda == 0, logx, jnp.expm1(safe_l * logx) / safe_l)


def boxcox1p(x, lmbda):
  """The Box-Cox transform of 1 + x: ((1 + x)**lmbda - 1) / lmbda, log1p(x) at lmbda 0.

  >>> boxcox1p(1., 0.)
  DeviceArray(0.6931472, dtype=float32)
  """
  import tracejax.numpy as jnp
  x, lmbda = _promote_inexact(x, lmbda)
  log1px = jnp.log1p(x)
  safe_l = jnp.where(lmbda == 0, jnp.ones_like(lmbda), lmbda)
  return jnp.where(lmbda == 0, log1px, jnp.expm1(safe_l * log1px) / safe_l)


def rel_entr(p, q):
  """Elementwise relative entropy: p log(p / q) for p, q > 0; 0 for p = 0, q >= 0;
  inf otherwise.

  >>> rel_entr(1., 2.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  import tracejax.numpy as jnp
  p, q = _promote_inexact(p, q)
  both = (p > 0) & (q > 0)
  safe_p = jnp.where(both, p, jnp.ones_like(p))
  safe_q = jnp.where(both, q, jnp.ones_like(q))
  val = safe_p * jnp.log(safe_p / safe_q)
  return jnp.where(both, val, jnp.where((p == 0) & (q >= 0), jnp.zeros_like(p), jnp.inf))


def kl_div(p, q):
  """Elementwise Kullback-Leibler term: p log(p / q) - p + q for p, q > 0; q for p = 0,
  q >= 0; inf otherwise.

  >>> kl_div(1., 2.)
  DeviceArray(0.30685282, dtype=float32)
  """
  import tracejax.numpy as jnp
  p, q = _promote_inexact(p, q)
  both = (p > 0) & (q > 0)
  safe_p = jnp.where(both, p, jnp.ones_like(p))
  safe_q = jnp.where(both, q, jnp.ones_like(q))
  val = safe_p * jnp.log(safe_p / safe_q) - safe_p + safe_q
  return jnp.where(both, val, jnp.where((p == 0) & (q >= 0), q, jnp.inf))


def _riemann_zeta(x):
  """Riemann zeta: Hurwitz zeta at q = 1 for x > 1, the reflection formula below 1."""
  import tracejax.numpy as jnp
  one = jnp.ones_like(x)
  right = lax_special.zeta(jnp.where(x > 1, x, 2 * one), one)
  # zeta(x) = 2^x pi^(x-1) sin(pi x / 2) Gamma(1 - x) zeta(1 - x) for x < 1.
  s = jnp.where(x < 1, 1 - x, 2 * one)
  refl = (jnp.exp2(x) * jnp.power(jnp.asarray(np.pi, x.dtype), x - 1)
          * jnp.sin(np.pi / 2 * x) * gamma(s) * lax_special.zeta(s, one))
  # Exact zeros at the negative even integers (sin vanishes there but rounds).
  trivial = (x < 0) & (jnp.mod(x, 2.) == 0)
  refl = jnp.where(trivial, jnp.zeros_like(x), refl)
  refl = jnp.where(x == 0, -0.5 * one, refl)
  # 0 < x < 1: the reflection would need zeta on (0, 1) again, so use Borwein's
  # accelerated alternating (eta) series there instead.
  strip = (x > 0) & (x < 1)
  mid = _zeta_borwein(jnp.where(strip, x, 0.5 * one))
  refl = jnp.where(strip, mid, refl)
  return jnp.where(x > 1, right, jnp.where(x == 1, jnp.inf, refl))


def _zeta_borwein(s, n=24):
  """zeta(s) for 0 < s < 1 by Borwein's algorithm 2 (error about 5.8**-n)."""
  import math
  import tracejax.numpy as jnp
  # d_k = n sum_{i<=k} (n+i-1)! 4^i / ((n-i)! (2i)!), exact integers at trace time.
  d, acc = [], 0
  for i in range(n + 1):
    acc += math.factorial(n + i - 1) * 4 ** i * n // (math.factorial(n - i) * math.factorial(2 * i))
    d.append(acc)
  dn = float(d[-1])
  coeffs = np.array([(-1) ** k * (d[k] - d[-1]) / dn for k in range(n)])
  ks = np.arange(1, n + 1, dtype=np.float64)
  c = jnp.asarray(coeffs, s.dtype)
  logk = jnp.asarray(np.log(ks), s.dtype)
  terms = c * jnp.exp(-s[..., None] * logk)
  eta = -jnp.sum(terms, axis=-1)
  return eta / -jnp.expm1((1 - s) * np.log(2.))
