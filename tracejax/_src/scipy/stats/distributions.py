"""Distributions of `jax.scipy.stats`, each as functions of `(x, *params, loc, scale)`.

Every function promotes its arguments to one inexact dtype and broadcasts, then
is a composition of jnp/lax operations, so it differentiates, jits and vmaps.
"""
import numpy as np

from tracejax._src.scipy import special
from tracejax._src.scipy.special import _promote_inexact


def _jnp():
  import tracejax.numpy as jnp
  return jnp


def _standardize(x, loc, scale):
  x, loc, scale = _promote_inexact(x, loc, scale)
  return (x - loc) / scale, scale


# ---- norm ----

def norm_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, scale = _standardize(x, loc, scale)
  return -0.5 * z * z - jnp.log(scale) - jnp.asarray(0.5 * np.log(2 * np.pi), z.dtype)


def norm_pdf(x, loc=0., scale=1.):
  return _jnp().exp(norm_logpdf(x, loc, scale))


def norm_cdf(x, loc=0., scale=1.):
  z, _ = _standardize(x, loc, scale)
  return special.ndtr(z)


def norm_logcdf(x, loc=0., scale=1.):
  z, _ = _standardize(x, loc, scale)
  return special.log_ndtr(z)


def norm_sf(x, loc=0., scale=1.):
  z, _ = _standardize(x, loc, scale)
  return special.ndtr(-z)


def norm_ppf(q, loc=0., scale=1.):
  q, loc, scale = _promote_inexact(q, loc, scale)
  return special.ndtri(q) * scale + loc


def norm_isf(q, loc=0., scale=1.):
  return norm_ppf(1 - _promote_inexact(q)[0], loc, scale)


# ---- expon ----

def expon_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, scale = _standardize(x, loc, scale)
  return jnp.where(z < 0, -jnp.inf, -z - jnp.log(scale))


def expon_pdf(x, loc=0., scale=1.):
  return _jnp().exp(expon_logpdf(x, loc, scale))


def expon_cdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, _ = _standardize(x, loc, scale)
  return jnp.where(z < 0, 0., -jnp.expm1(-z))


# ---- laplace ----

def laplace_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, scale = _standardize(x, loc, scale)
  return -jnp.abs(z) - jnp.log(2 * scale)


def laplace_pdf(x, loc=0., scale=1.):
  return _jnp().exp(laplace_logpdf(x, loc, scale))


def laplace_cdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, _ = _standardize(x, loc, scale)
  return jnp.where(z < 0, 0.5 * jnp.exp(z), 1 - 0.5 * jnp.exp(-z))


# ---- logistic ----

def logistic_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, scale = _standardize(x, loc, scale)
  return -z - 2 * jnp.logaddexp(0., -z) - jnp.log(scale)


def logistic_pdf(x, loc=0., scale=1.):
  return _jnp().exp(logistic_logpdf(x, loc, scale))


def logistic_cdf(x, loc=0., scale=1.):
  z, _ = _standardize(x, loc, scale)
  return special.expit(z)


def logistic_sf(x, loc=0., scale=1.):
  z, _ = _standardize(x, loc, scale)
  return special.expit(-z)


def logistic_ppf(q, loc=0., scale=1.):
  q, loc, scale = _promote_inexact(q, loc, scale)
  return special.logit(q) * scale + loc


def logistic_isf(q, loc=0., scale=1.):
  q, loc, scale = _promote_inexact(q, loc, scale)
  return -special.logit(q) * scale + loc


# ---- gamma ----

def gamma_logpdf(x, a, loc=0., scale=1.):
  jnp = _jnp()
  x, a, loc, scale = _promote_inexact(x, a, loc, scale)
  z = (x - loc) / scale
  safe = jnp.where(z > 0, z, jnp.ones_like(z))
  val = special.xlogy(a - 1, safe) - safe - special.gammaln(a) - jnp.log(scale)
  return jnp.where(z > 0, val, jnp.where((z == 0) & (a == 1), -jnp.log(scale), -jnp.inf))


def gamma_pdf(x, a, loc=0., scale=1.):
  return _jnp().exp(gamma_logpdf(x, a, loc, scale))


def gamma_cdf(x, a, loc=0., scale=1.):
  jnp = _jnp()
  x, a, loc, scale = _promote_inexact(x, a, loc, scale)
  z = jnp.maximum((x - loc) / scale, 0.)
  return special.gammainc(a, z)


# ---- beta ----

def beta_logpdf(x, a, b, loc=0., scale=1.):
  jnp = _jnp()
  x, a, b, loc, scale = _promote_inexact(x, a, b, loc, scale)
  z = (x - loc) / scale
  inside = (z > 0) & (z < 1)
  safe = jnp.where(inside, z, 0.5 * jnp.ones_like(z))
  val = (special.xlogy(a - 1, safe) + special.xlog1py(b - 1, -safe) - special.betaln(a, b)
         - jnp.log(scale))
  return jnp.where(inside, val, -jnp.inf)


def beta_pdf(x, a, b, loc=0., scale=1.):
  return _jnp().exp(beta_logpdf(x, a, b, loc, scale))


def beta_cdf(x, a, b, loc=0., scale=1.):
  jnp = _jnp()
  x, a, b, loc, scale = _promote_inexact(x, a, b, loc, scale)
  z = jnp.clip((x - loc) / scale, 0., 1.)
  return special.betainc(a, b, z)


# ---- t, cauchy, uniform, poisson, bernoulli, multivariate_normal, dirichlet ----

def t_logpdf(x, df, loc=0., scale=1.):
  jnp = _jnp()
  x, df, loc, scale = _promote_inexact(x, df, loc, scale)
  z = (x - loc) / scale
  return (special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
          - 0.5 * jnp.log(df * np.pi) - jnp.log(scale)
          - (df + 1) / 2 * jnp.log1p(z * z / df))


def t_pdf(x, df, loc=0., scale=1.):
  return _jnp().exp(t_logpdf(x, df, loc, scale))


def cauchy_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  z, scale = _standardize(x, loc, scale)
  return -jnp.log(np.pi * scale) - jnp.log1p(z * z)


def cauchy_pdf(x, loc=0., scale=1.):
  return _jnp().exp(cauchy_logpdf(x, loc, scale))


def uniform_logpdf(x, loc=0., scale=1.):
  jnp = _jnp()
  x, loc, scale = _promote_inexact(x, loc, scale)
  inside = (x >= loc) & (x <= loc + scale)
  return jnp.where(inside, -jnp.log(scale), -jnp.inf)


def uniform_pdf(x, loc=0., scale=1.):
  return _jnp().exp(uniform_logpdf(x, loc, scale))


def poisson_logpmf(k, mu, loc=0):
  jnp = _jnp()
  k, mu, loc = _promote_inexact(k, mu, loc)
  k = k - loc
  val = special.xlogy(k, mu) - mu - special.gammaln(k + 1)
  return jnp.where((k < 0) | (k != jnp.floor(k)), -jnp.inf, val)


def poisson_pmf(k, mu, loc=0):
  return _jnp().exp(poisson_logpmf(k, mu, loc))


def bernoulli_logpmf(k, p, loc=0):
  jnp = _jnp()
  k, p, loc = _promote_inexact(k, p, loc)
  k = k - loc
  val = special.xlogy(k, p) + special.xlog1py(1 - k, -p)
  return jnp.where((k == 0) | (k == 1), val, -jnp.inf)


def bernoulli_pmf(k, p, loc=0):
  return _jnp().exp(bernoulli_logpmf(k, p, loc))


def multivariate_normal_logpdf(x, mean, cov, allow_singular=None):
  """Log density of the multivariate normal N(mean, cov) at `x`.

  Args:
    x: points, shape (..., n) (the last axis is the event axis).
    mean: the mean, shape (..., n), broadcasting against `x` (batched means). A 0-d
      mean makes the distribution univariate: `x` is then elementwise.
    cov: the covariance: (..., n, n) (batched, broadcasting), a 0-d variance
      (isotropic) or, as in SciPy, a 1-D (n,) diagonal.
    allow_singular: None or False (Cholesky: `cov` must be positive definite; a
      singular one gives NaN rather than an error, as in JAX), or True: a singular
      positive semi-definite `cov` is handled as SciPy does (pseudo-inverse and
      pseudo-determinant from `eigh`; points off the support get -inf).

  >>> multivariate_normal_logpdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))
  DeviceArray(-1.837877, dtype=float32)
  """
  jnp = _jnp()
  if allow_singular not in (None, False, True):
    raise TypeError(f"multivariate_normal.logpdf: allow_singular must be a bool or None, "
                    f"got {allow_singular!r}")
  x, mean, cov = _promote_inexact_nobroadcast(x, mean, cov)
  log2pi = np.log(2 * np.pi)
  if mean.ndim == 0:
    return -0.5 * jnp.square(x - mean) / cov - 0.5 * (log2pi + jnp.log(cov))
  n = mean.shape[-1]
  if x.ndim == 0 or x.shape[-1] != n:
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: x "
                     f"{x.shape} and mean {mean.shape} must agree on the last axis")
  dev = x - mean
  if cov.ndim == 0:
    return (-0.5 * jnp.sum(dev * dev, axis=-1) / cov
            - 0.5 * n * (log2pi + jnp.log(cov)))
  if cov.ndim == 1:
    if cov.shape != (n,):
      raise ValueError(f"multivariate_normal.logpdf: a 1-D cov (the diagonal) must have "
                       f"shape ({n},), got {cov.shape}")
    return (-0.5 * jnp.sum(dev * dev / cov, axis=-1)
            - 0.5 * (n * log2pi + jnp.sum(jnp.log(cov), axis=-1)))
  if cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: cov "
                     f"{cov.shape} must end in ({n}, {n})")
  if allow_singular:
    return _mvn_logpdf_psd(dev, cov)
  from tracejax._src.lax import linalg as lax_linalg
  from tracejax._src.numpy.vectorize import vectorize
  L = jnp.linalg.cholesky(cov)
  solve = vectorize(lambda l, b: lax_linalg.triangular_solve(l, b, left_side=True,
                                                             lower=True),
                    signature="(n,n),(n)->(n)")
  y = solve(L, dev)
  logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
  return -0.5 * jnp.sum(y * y, axis=-1) - logdet - 0.5 * n * log2pi


def _mvn_logpdf_psd(dev, cov):
  """SciPy's singular-covariance density: eigenvalues below a cutoff count as zero."""
  jnp = _jnp()
  s, u = jnp.linalg.eigh(cov)
  factor = 1e6 if s.dtype == np.float64 else 1e3
  eps = factor * np.finfo(s.dtype).eps * jnp.max(jnp.abs(s), axis=-1, keepdims=True)
  keep = s > eps
  rank = jnp.sum(keep, axis=-1)
  log_pdet = jnp.sum(jnp.where(keep, jnp.log(jnp.where(keep, s, 1.)), 0.), axis=-1)
  inv_sqrt = jnp.where(keep, 1. / jnp.sqrt(jnp.where(keep, s, 1.)), 0.)
  proj = jnp.einsum("...i,...ij->...j", dev, u)
  maha = jnp.sum(jnp.square(proj * inv_sqrt), axis=-1)
  residual = jnp.sqrt(jnp.sum(jnp.square(jnp.where(keep, 0., proj)), axis=-1))
  out = -0.5 * (rank * np.log(2 * np.pi) + log_pdet + maha)
  return jnp.where(residual < 1e3 * eps[..., 0], out, -jnp.inf)


def multivariate_normal_pdf(x, mean, cov, allow_singular=None):
  """Density of N(mean, cov) at `x`: `exp(multivariate_normal_logpdf(...))`.

  >>> multivariate_normal_pdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))
  DeviceArray(0.15915494, dtype=float32)
  """
  return _jnp().exp(multivariate_normal_logpdf(x, mean, cov, allow_singular))


# ---- pareto ----

def pareto_logpdf(x, b, loc=0., scale=1.):
  """Log density of the Pareto distribution with shape `b`: `b / z**(b + 1)` for z >= 1.

  Args:
    x: points; b: shape parameter (> 0); loc, scale: `z = (x - loc) / scale`.

  Returns `log(b / scale) - (b + 1) * log(z)` where z >= 1, else -inf.

  >>> pareto_logpdf(jnp.array([0.5, 2.]), 2.)
  DeviceArray([      -inf, -1.3862944], dtype=float32)
  """
  jnp = _jnp()
  x, b, loc, scale = _promote_inexact(x, b, loc, scale)
  z = (x - loc) / scale
  safe = jnp.where(z >= 1, z, jnp.ones_like(z))
  val = jnp.log(b) - jnp.log(scale) - (b + 1) * jnp.log(safe)
  return jnp.where(z >= 1, val, -jnp.inf)


def pareto_pdf(x, b, loc=0., scale=1.):
  """Density of the Pareto distribution: `exp(pareto_logpdf(x, b, loc, scale))`.

  >>> pareto_pdf(jnp.array([0.5, 2.]), 2.)
  DeviceArray([0.  , 0.25], dtype=float32)
  """
  return _jnp().exp(pareto_logpdf(x, b, loc, scale))


def dirichlet_logpdf(x, alpha):
  jnp = _jnp()
  x, alpha = _promote_inexact_nobroadcast(x, alpha)
  norm = jnp.sum(special.gammaln(alpha), -1) - special.gammaln(jnp.sum(alpha, -1))
  return jnp.sum(special.xlogy(alpha - 1, x), -1) - norm


def dirichlet_pdf(x, alpha):
  return _jnp().exp(dirichlet_logpdf(x, alpha))


def _promote_inexact_nobroadcast(*args):
  jnp = _jnp()
  from tracejax._src import dtypes
  from tracejax._src.lax import elementwise as lax
  args = [jnp.asarray(a) for a in args]
  dt = dtypes.to_inexact_dtype(dtypes.result_type(*args))
  return [lax.convert_element_type(a, dt) if a.dtype != dt else a for a in args]
