"""`jax.scipy.special`: special functions built from lax primitives (differentiable,
jittable, vmappable)."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import elementwise as lax
from tracejax._src.lax import special as lax_special
from tracejax._src.numpy import util as np_util


def _promote_inexact(*args):
  """Arrays of one inexact dtype (ints become the default float), as jnp does."""
  import tracejax.numpy as jnp
  args = [jnp.asarray(a) for a in args]
  dt = dtypes.to_inexact_dtype(dtypes.result_type(*args))
  out = [lax.convert_element_type(a, dt) if a.dtype != dt else a for a in args]
  if len(out) > 1:
    out = list(jnp.broadcast_arrays(*out))
  return out


def gammaln(x):
  """Logarithm of the absolute value of the Gamma function."""
  x, = _promote_inexact(x)
  return lax_special.lgamma(x)


def digamma(x):
  """The digamma function (the derivative of gammaln)."""
  x, = _promote_inexact(x)
  return lax_special.digamma(x)


def polygamma(n, x):
  """The n-th derivative of the digamma function."""
  n, x = _promote_inexact(n, x)
  return lax_special.polygamma(n, x)


def zeta(x, q):
  """The Hurwitz zeta function."""
  x, q = _promote_inexact(x, q)
  return lax_special.zeta(x, q)


def betaln(a, b):
  """Logarithm of the absolute value of the Beta function."""
  a, b = _promote_inexact(a, b)
  return lax.sub(lax.add(lax_special.lgamma(a), lax_special.lgamma(b)), lax_special.lgamma(lax.add(a, b)))


def betainc(a, b, x):
  """The regularized incomplete beta function."""
  a, b, x = _promote_inexact(a, b, x)
  return lax_special.betainc(a, b, x)


def gammainc(a, x):
  """Regularized lower incomplete gamma function."""
  a, x = _promote_inexact(a, x)
  return lax_special.igamma(a, x)


def gammaincc(a, x):
  """Regularized upper incomplete gamma function."""
  a, x = _promote_inexact(a, x)
  return lax_special.igammac(a, x)


def erf(x):
  """The error function."""
  x, = _promote_inexact(x)
  return lax_special.erf(x)


def erfc(x):
  """The complementary error function, 1 - erf(x)."""
  x, = _promote_inexact(x)
  return lax_special.erfc(x)


def erfinv(x):
  """The inverse of the error function."""
  x, = _promote_inexact(x)
  return lax_special.erf_inv(x)


def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x))."""
  x, = _promote_inexact(x)
  return lax.logistic(x)


def logit(x):
  """The inverse of expit: log(x / (1 - x))."""
  x, = _promote_inexact(x)
  return lax.log(lax.div(x, lax.sub(np.ones((), x.dtype), x)))


def i0e(x):
  """Exponentially scaled modified Bessel function of order 0."""
  x, = _promote_inexact(x)
  return lax_special.bessel_i0e(x)


def i1e(x):
  """Exponentially scaled modified Bessel function of order 1."""
  x, = _promote_inexact(x)
  return lax_special.bessel_i1e(x)


def i0(x):
  """Modified Bessel function of order 0."""
  x, = _promote_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax_special.bessel_i0e(x))


def i1(x):
  """Modified Bessel function of order 1."""
  x, = _promote_inexact(x)
  return lax.mul(lax.exp(lax.abs(x)), lax_special.bessel_i1e(x))


def xlogy(x, y):
  """x * log(y), defined as 0 where x == 0."""
  import tracejax.numpy as jnp
  x, y = _promote_inexact(x, y)
  safe_y = jnp.where(x == 0, jnp.ones_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log(safe_y))


def xlog1py(x, y):
  """x * log1p(y), defined as 0 where x == 0."""
  import tracejax.numpy as jnp
  x, y = _promote_inexact(x, y)
  safe_y = jnp.where(x == 0, jnp.zeros_like(y), y)
  return jnp.where(x == 0, jnp.zeros_like(x), x * jnp.log1p(safe_y))


def entr(x):
  """-x log(x) for x > 0, 0 at 0, -inf for x < 0."""
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  return jnp.where(x < 0, -jnp.inf, -xlogy(x, x))


def multigammaln(a, d):
  """Log of the multivariate gamma function of dimension d (a static int)."""
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
  """The standard normal CDF."""
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  half = jnp.asarray(0.5, x.dtype)
  z = x * jnp.asarray(np.sqrt(0.5), x.dtype)
  # erfc for the lower tail keeps precision far below zero.
  return jnp.where(z < -1, half * lax_special.erfc(-z),
                   jnp.where(z > 1, 1 - half * lax_special.erfc(z), half + half * lax_special.erf(z)))


def ndtri(p):
  """The inverse of the standard normal CDF."""
  x, = _promote_inexact(p)
  two = np.asarray(2., x.dtype)
  return lax.mul(np.asarray(np.sqrt(2.), x.dtype),
                 lax_special.erf_inv(lax.sub(lax.mul(two, x), np.ones((), x.dtype))))


def log_ndtr(x, series_order=3):
  """log of the standard normal CDF, accurate in both tails."""
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  lower = -20. if x.dtype == np.float64 else -10.
  upper = 8. if x.dtype == np.float64 else 5.
  # Moderate x: log of the CDF directly; large x: log1p(-sf); very negative x: the
  # asymptotic series of the Mills ratio.
  safe_mid = jnp.clip(x, lower, upper)
  mid = jnp.log(ndtr(safe_mid))
  hi = jnp.log1p(-ndtr(-jnp.maximum(x, upper)))
  xl = jnp.minimum(x, lower)
  x2 = xl * xl
  series, term, sign = jnp.ones_like(xl), jnp.ones_like(xl), 1.
  for n in range(1, series_order + 1):
    term = term * (2 * n - 1) / x2
    sign = -sign
    series = series + sign * term
  lo = -0.5 * x2 - jnp.log(-xl) - 0.5 * np.log(2 * np.pi) + jnp.log(series)
  return jnp.where(x > upper, hi, jnp.where(x < lower, lo, mid))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) computed stably; with `return_sign`, also the sign."""
  import tracejax.numpy as jnp
  a, = _promote_inexact(a)
  if b is not None:
    a, b = _promote_inexact(a, b)
  amax = jnp.max(a, axis=axis, keepdims=True)
  amax = _stop(jnp.where(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
  e = jnp.exp(a - amax)
  if b is not None:
    e = e * b
  s = jnp.sum(e, axis=axis, keepdims=True)
  sign = jnp.sign(s)
  out = jnp.log(jnp.abs(s)) + amax
  if not keepdims:
    axes = tuple(range(np.ndim(a))) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    out = jnp.squeeze(out, axis=axes)
    sign = jnp.squeeze(sign, axis=axes)
  if return_sign:
    return out, sign
  if b is not None:
    out = jnp.where(sign < 0, jnp.nan, out)
  return out


def _stop(x):
  from tracejax._src.lax.misc import stop_gradient
  return stop_gradient(x)


def softmax(x, axis=-1):
  """exp(x) / sum(exp(x)) along `axis`."""
  import tracejax.numpy as jnp
  x, = _promote_inexact(x)
  unnorm = jnp.exp(x - _stop(jnp.max(x, axis=axis, keepdims=True)))
  return unnorm / jnp.sum(unnorm, axis=axis, keepdims=True)


_ = np_util
