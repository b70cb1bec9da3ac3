"""More distributions of `jax.scipy.stats` (JAX 0.10.2's list), and the functions the
distributions of `distributions.py` were missing (survival functions, log-CDFs,
quantiles).

Conventions as in `distributions.py`: arguments are promoted to one inexact dtype and
broadcast, `z = (x - loc) / scale`, and everything is a jnp/lax composition, so it
differentiates, jits and vmaps. Out-of-support points give SciPy's values (0 / -inf
densities, 0 or 1 CDFs, NaN quantiles outside [0, 1]).
"""
import numpy as np

from tracejax._src.scipy import special
from tracejax._src.scipy.special import _promote_inexact


def _jnp():
  import tracejax.numpy as jnp
  return jnp


def _z(x, loc, scale):
  x, loc, scale = _promote_inexact(x, loc, scale)
  return (x - loc) / scale, scale


def _log1mexp(d):
  """log(1 - exp(d)) for d <= 0, accurate at both ends."""
  jnp = _jnp()
  return jnp.where(d > -np.log(2.), jnp.log(-jnp.expm1(d)), jnp.log1p(-jnp.exp(d)))


def _bad_q(q):
  return (q < 0) | (q > 1)


# ---- norm, expon, gamma, beta, cauchy, pareto, uniform, poisson, bernoulli ----

def norm_logsf(x, loc=0., scale=1.):
  """log of the normal survival function, accurate far in the upper tail.

  >>> norm_logsf(0.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  z, _ = _z(x, loc, scale)
  return special.log_ndtr(-z)


def expon_sf(x, loc=0., scale=1.):
  """Exponential survival function exp(-z) (1 for z < 0).

  >>> expon_sf(1.)
  DeviceArray(0.36787945, dtype=float32)
  """
  return _jnp().exp(expon_logsf(x, loc, scale))


def expon_logsf(x, loc=0., scale=1.):
  """log of the exponential survival function: -z for z >= 0, 0 below.

  >>> expon_logsf(2.)
  DeviceArray(-2., dtype=float32)
  """
  jnp = _jnp()
  z, _ = _z(x, loc, scale)
  return jnp.where(z < 0, jnp.zeros_like(z), -z)


def expon_logcdf(x, loc=0., scale=1.):
  """log of the exponential CDF, log(1 - exp(-z)) (-inf for z <= 0).

  >>> expon_logcdf(1.)
  DeviceArray(-0.45867515, dtype=float32)
  """
  jnp = _jnp()
  z, _ = _z(x, loc, scale)
  safe = jnp.where(z > 0, z, jnp.ones_like(z))
  return jnp.where(z > 0, _log1mexp(-safe), -jnp.inf)


def expon_ppf(q, loc=0., scale=1.):
  """Exponential quantile function -log(1 - q) * scale + loc (NaN outside [0, 1]).

  >>> expon_ppf(0.5)
  DeviceArray(0.6931472, dtype=float32)
  """
  jnp = _jnp()
  q, loc, scale = _promote_inexact(q, loc, scale)
  return jnp.where(_bad_q(q), jnp.nan, -jnp.log1p(-q) * scale + loc)


def gamma_sf(x, a, loc=0., scale=1.):
  """Gamma survival function, the regularized upper incomplete gamma Q(a, z).

  >>> gamma_sf(1., 1.)
  DeviceArray(0.36787945, dtype=float32)
  """
  jnp = _jnp()
  x, a, loc, scale = _promote_inexact(x, a, loc, scale)
  z = jnp.maximum((x - loc) / scale, 0.)
  return special.gammaincc(a, z)


def gamma_logcdf(x, a, loc=0., scale=1.):
  """log of the Gamma CDF.

  >>> gamma_logcdf(1., 1.)
  DeviceArray(-0.45867515, dtype=float32)
  """
  from tracejax._src.scipy.stats.distributions import gamma_cdf
  return _jnp().log(gamma_cdf(x, a, loc, scale))


def gamma_logsf(x, a, loc=0., scale=1.):
  """log of the Gamma survival function.

  >>> gamma_logsf(1., 1.)
  DeviceArray(-1., dtype=float32)
  """
  return _jnp().log(gamma_sf(x, a, loc, scale))


def beta_sf(x, a, b, loc=0., scale=1.):
  """Beta survival function I_{1-z}(b, a).

  >>> beta_sf(0.5, 2., 2.)
  DeviceArray(0.5, dtype=float32)
  """
  jnp = _jnp()
  x, a, b, loc, scale = _promote_inexact(x, a, b, loc, scale)
  z = jnp.clip((x - loc) / scale, 0., 1.)
  return special.betainc(b, a, 1 - z)


def beta_logcdf(x, a, b, loc=0., scale=1.):
  """log of the Beta CDF.

  >>> beta_logcdf(0.5, 2., 2.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  from tracejax._src.scipy.stats.distributions import beta_cdf
  return _jnp().log(beta_cdf(x, a, b, loc, scale))


def beta_logsf(x, a, b, loc=0., scale=1.):
  """log of the Beta survival function.

  >>> beta_logsf(0.5, 2., 2.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  return _jnp().log(beta_sf(x, a, b, loc, scale))


def cauchy_cdf(x, loc=0., scale=1.):
  """Cauchy CDF 1/2 + arctan(z) / pi (written with arctan2 to keep the lower tail).

  >>> cauchy_cdf(1.)
  DeviceArray(0.75, dtype=float32)
  """
  jnp = _jnp()
  z, _ = _z(x, loc, scale)
  # 1/2 + arctan(z)/pi = arctan2(1, -z)/pi, which keeps precision for z -> -inf.
  return jnp.arctan2(jnp.ones_like(z), -z) / np.pi


def cauchy_sf(x, loc=0., scale=1.):
  """Cauchy survival function, cdf(-z).

  >>> cauchy_sf(1.)
  DeviceArray(0.25, dtype=float32)
  """
  jnp = _jnp()
  z, _ = _z(x, loc, scale)
  return jnp.arctan2(jnp.ones_like(z), z) / np.pi


def cauchy_logcdf(x, loc=0., scale=1.):
  """log of the Cauchy CDF.

  >>> cauchy_logcdf(1.)
  DeviceArray(-0.2876821, dtype=float32)
  """
  return _jnp().log(cauchy_cdf(x, loc, scale))


def cauchy_logsf(x, loc=0., scale=1.):
  """log of the Cauchy survival function.

  >>> cauchy_logsf(1.)
  DeviceArray(-1.3862944, dtype=float32)
  """
  return _jnp().log(cauchy_sf(x, loc, scale))


def cauchy_ppf(q, loc=0., scale=1.):
  """Cauchy quantile function loc + scale tan(pi (q - 1/2)) (NaN outside [0, 1]).

  >>> cauchy_ppf(0.75)
  DeviceArray(1., dtype=float32)
  """
  jnp = _jnp()
  q, loc, scale = _promote_inexact(q, loc, scale)
  val = loc + scale * jnp.tan(np.pi * (q - 0.5))
  val = jnp.where(q == 0, -jnp.inf, jnp.where(q == 1, jnp.inf, val))
  return jnp.where(_bad_q(q), jnp.nan, val)


def cauchy_isf(q, loc=0., scale=1.):
  """Cauchy inverse survival function loc - scale tan(pi (q - 1/2)).

  >>> cauchy_isf(0.25)
  DeviceArray(1., dtype=float32)
  """
  jnp = _jnp()
  q, loc, scale = _promote_inexact(q, loc, scale)
  val = loc - scale * jnp.tan(np.pi * (q - 0.5))
  val = jnp.where(q == 0, jnp.inf, jnp.where(q == 1, -jnp.inf, val))
  return jnp.where(_bad_q(q), jnp.nan, val)


def pareto_logsf(x, b, loc=0., scale=1.):
  """log of the Pareto survival function: -b log(z) for z >= 1, 0 below.

  >>> pareto_logsf(2., 1.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  jnp = _jnp()
  x, b, loc, scale = _promote_inexact(x, b, loc, scale)
  z = (x - loc) / scale
  safe = jnp.where(z >= 1, z, jnp.ones_like(z))
  return jnp.where(z >= 1, -b * jnp.log(safe), jnp.zeros_like(z))


def pareto_sf(x, b, loc=0., scale=1.):
  """Pareto survival function z**-b (1 for z < 1).

  >>> pareto_sf(2., 1.)
  DeviceArray(0.5, dtype=float32)
  """
  return _jnp().exp(pareto_logsf(x, b, loc, scale))


def pareto_logcdf(x, b, loc=0., scale=1.):
  """log of the Pareto CDF, log(1 - z**-b) (-inf for z <= 1).

  >>> pareto_logcdf(2., 1.)
  DeviceArray(-0.6931472, dtype=float32)
  """
  jnp = _jnp()
  lsf = pareto_logsf(x, b, loc, scale)
  safe = jnp.where(lsf < 0, lsf, -jnp.ones_like(lsf))
  return jnp.where(lsf < 0, _log1mexp(safe), -jnp.inf)


def pareto_cdf(x, b, loc=0., scale=1.):
  """Pareto CDF 1 - z**-b (0 for z < 1).

  >>> pareto_cdf(2., 1.)
  DeviceArray(0.5, dtype=float32)
  """
  return -_jnp().expm1(pareto_logsf(x, b, loc, scale))


def pareto_ppf(q, b, loc=0., scale=1.):
  """Pareto quantile function scale (1 - q)**(-1/b) + loc (NaN outside [0, 1]).

  >>> pareto_ppf(0.5, 1.)
  DeviceArray(2., dtype=float32)
  """
  jnp = _jnp()
  q, b, loc, scale = _promote_inexact(q, b, loc, scale)
  return jnp.where(_bad_q(q), jnp.nan, scale * jnp.exp(-jnp.log1p(-q) / b) + loc)


def uniform_cdf(x, loc=0., scale=1.):
  """Uniform CDF on [loc, loc + scale]: clip(z, 0, 1).

  >>> uniform_cdf(0.25)
  DeviceArray(0.25, dtype=float32)
  """
  z, _ = _z(x, loc, scale)
  return _jnp().clip(z, 0., 1.)


def uniform_ppf(q, loc=0., scale=1.):
  """Uniform quantile function loc + q scale (NaN outside [0, 1]).

  >>> uniform_ppf(0.5, 1., 2.)
  DeviceArray(2., dtype=float32)
  """
  jnp = _jnp()
  q, loc, scale = _promote_inexact(q, loc, scale)
  return jnp.where(_bad_q(q), jnp.nan, loc + q * scale)


def poisson_cdf(k, mu, loc=0):
  """Poisson CDF Q(floor(k) + 1, mu) (0 for k < 0).

  >>> poisson_cdf(1., 1.)
  DeviceArray(0.7357589, dtype=float32)
  """
  jnp = _jnp()
  k, mu, loc = _promote_inexact(k, mu, loc)
  k = jnp.floor(k - loc)
  safe = jnp.where(k < 0, jnp.zeros_like(k), k)
  return jnp.where(k < 0, jnp.zeros_like(k), special.gammaincc(safe + 1, mu))


def poisson_entropy(mu, loc=0):
  """Entropy of the Poisson distribution: the sum -pmf log pmf over k (up to a bound
  far in the tail) for moderate mu, its asymptotic expansion for large mu.

  >>> poisson_entropy(3.)
  DeviceArray(1.9314697, dtype=float32)
  """
  jnp = _jnp()
  from tracejax._src.scipy.stats.distributions import poisson_logpmf
  mu, loc = _promote_inexact(mu, loc)
  del loc  # a shift does not change the entropy
  cut = 60. if mu.dtype == np.float64 else 25.
  kmax = 240 if mu.dtype == np.float64 else 100
  ms = jnp.where(mu < cut, mu, jnp.ones_like(mu))
  ks = jnp.arange(kmax, dtype=mu.dtype)
  lp = poisson_logpmf(ks, ms[..., None])
  small = -jnp.sum(jnp.where(jnp.isfinite(lp), jnp.exp(lp) * lp, 0.), axis=-1)
  ml = jnp.where(mu < cut, jnp.full_like(mu, cut), mu)
  large = (0.5 * jnp.log(2 * np.pi * np.e * ml) - 1 / (12 * ml) - 1 / (24 * ml ** 2)
           - 19 / (360 * ml ** 3))
  out = jnp.where(mu < cut, small, large)
  out = jnp.where(mu == 0, jnp.zeros_like(mu), out)
  return jnp.where(mu < 0, jnp.nan, out)


def bernoulli_cdf(k, p):
  """Bernoulli CDF: 0 for k < 0, 1 - p for 0 <= k < 1, 1 for k >= 1.

  >>> bernoulli_cdf(0., 0.3)
  DeviceArray(0.7, dtype=float32)
  """
  jnp = _jnp()
  k, p = _promote_inexact(k, p)
  out = jnp.where(k < 0, jnp.zeros_like(k), jnp.where(k < 1, 1 - p, jnp.ones_like(k)))
  return jnp.where((p < 0) | (p > 1), jnp.nan, out)


def bernoulli_ppf(q, p):
  """Bernoulli quantile function: 0 for 0 < q <= 1 - p, else 1; -1 at q = 0 (the
  support's lower end minus one, SciPy's convention); NaN outside [0, 1].

  >>> bernoulli_ppf(0.8, 0.3)
  DeviceArray(1., dtype=float32)
  """
  jnp = _jnp()
  q, p = _promote_inexact(q, p)
  out = jnp.where(q <= 1 - p, jnp.zeros_like(q), jnp.ones_like(q))
  out = jnp.where(q == 0, -jnp.ones_like(q), out)
  return jnp.where(_bad_q(q) | (p < 0) | (p > 1), jnp.nan, out)


# ---- chi2 ----

def chi2_logpdf(x, df, loc=0., scale=1.):
  """log density of the chi-squared distribution with `df` degrees of freedom.

  >>> chi2_logpdf(1., 2.)
  DeviceArray(-1.1931472, dtype=float32)
  """
  jnp = _jnp()
  x, df, loc, scale = _promote_inexact(x, df, loc, scale)
  z = (x - loc) / scale
  k = df / 2
  safe = jnp.where(z > 0, z, jnp.ones_like(z))
  val = (special.xlogy(k - 1, safe) - safe / 2 - special.gammaln(k) - k * np.log(2.)
         - jnp.log(scale))
  at0 = jnp.where(k == 1, -np.log(2.) - jnp.log(scale), jnp.where(k < 1, jnp.inf, -jnp.inf))
  return jnp.where(z > 0, val, jnp.where(z == 0, at0, -jnp.inf))


def chi2_pdf(x, df, loc=0., scale=1.):
  """Density of the chi-squared distribution.

  >>> chi2_pdf(1., 2.)
  DeviceArray(0.30326533, dtype=float32)
  """
  return _jnp().exp(chi2_logpdf(x, df, loc, scale))


def chi2_cdf(x, df, loc=0., scale=1.):
  """Chi-squared CDF P(df/2, z/2).

  >>> chi2_cdf(2., 2.)
  DeviceArray(0.63212055, dtype=float32)
  """
  jnp = _jnp()
  x, df, loc, scale = _promote_inexact(x, df, loc, scale)
  z = jnp.maximum((x - loc) / scale, 0.)
  return special.gammainc(df / 2, z / 2)


def chi2_sf(x, df, loc=0., scale=1.):
  """Chi-squared survival function Q(df/2, z/2).

  >>> chi2_sf(2., 2.)
  DeviceArray(0.36787945, dtype=float32)
  """
  jnp = _jnp()
  x, df, loc, scale = _promote_inexact(x, df, loc, scale)
  z = jnp.maximum((x - loc) / scale, 0.)
  return special.gammaincc(df / 2, z / 2)


def chi2_logcdf(x, df, loc=0., scale=1.):
  """log of the chi-squared CDF.

  >>> chi2_logcdf(2., 2.)
  DeviceArray(-0.45867515, dtype=float32)
  """
  return _jnp().log(chi2_cdf(x, df, loc, scale))


def chi2_logsf(x, df, loc=0., scale=1.):
  """log of the chi-squared survival function.

  >>> chi2_logsf(2., 2.)
  DeviceArray(-1., dtype=float32)
  """
  return _jnp().log(chi2_sf(x, df, loc, scale))


# ---- discrete: binom, betabinom, geom, nbinom, multinomial ----

def _int_support(k, n=None):
  jnp = _jnp()
  ok = (k >= 0) & (k == jnp.floor(k))
  if n is not None:
    ok = ok & (k <= n)
  return ok


def binom_logpmf(k, n, p, loc=0):
  """log pmf of the binomial distribution: log C(n, k) + k log p + (n - k) log(1 - p).

  >>> binom_logpmf(1., 2., 0.5)
  DeviceArray(-0.6931472, dtype=float32)
  """
  jnp = _jnp()
  k, n, p, loc = _promote_inexact(k, n, p, loc)
  y = k - loc
  ok = _int_support(y, n)
  ys = jnp.where(ok, y, jnp.zeros_like(y))
  comb = special.gammaln(n + 1) - special.gammaln(ys + 1) - special.gammaln(n - ys + 1)
  val = comb + special.xlogy(ys, p) + special.xlog1py(n - ys, -p)
  return jnp.where(ok, val, -jnp.inf)


def binom_pmf(k, n, p, loc=0):
  """pmf of the binomial distribution.

  >>> binom_pmf(1., 2., 0.5)
  DeviceArray(0.5, dtype=float32)
  """
  return _jnp().exp(binom_logpmf(k, n, p, loc))


def betabinom_logpmf(k, n, a, b, loc=0):
  """log pmf of the beta-binomial distribution:
  log C(n, k) + betaln(k + a, n - k + b) - betaln(a, b).

  >>> betabinom_logpmf(1., 2., 1., 1.)   # uniform on {0, 1, 2}
  DeviceArray(-1.0986123, dtype=float32)
  """
  jnp = _jnp()
  k, n, a, b, loc = _promote_inexact(k, n, a, b, loc)
  y = k - loc
  ok = _int_support(y, n)
  ys = jnp.where(ok, y, jnp.zeros_like(y))
  comb = special.gammaln(n + 1) - special.gammaln(ys + 1) - special.gammaln(n - ys + 1)
  val = comb + special.betaln(ys + a, n - ys + b) - special.betaln(a, b)
  return jnp.where(ok, val, -jnp.inf)


def betabinom_pmf(k, n, a, b, loc=0):
  """pmf of the beta-binomial distribution.

  >>> betabinom_pmf(1., 2., 1., 1.)
  DeviceArray(0.33333334, dtype=float32)
  """
  return _jnp().exp(betabinom_logpmf(k, n, a, b, loc))


def geom_logpmf(k, p, loc=0):
  """log pmf of the geometric distribution on {1, 2, ...}: (k - 1) log(1 - p) + log p.

  >>> geom_logpmf(1., 0.5)
  DeviceArray(-0.6931472, dtype=float32)
  """
  jnp = _jnp()
  k, p, loc = _promote_inexact(k, p, loc)
  y = k - loc
  ok = (y >= 1) & (y == jnp.floor(y))
  ys = jnp.where(ok, y, jnp.ones_like(y))
  return jnp.where(ok, special.xlog1py(ys - 1, -p) + jnp.log(p), -jnp.inf)


def geom_pmf(k, p, loc=0):
  """pmf of the geometric distribution.

  >>> geom_pmf(2., 0.5)
  DeviceArray(0.25, dtype=float32)
  """
  return _jnp().exp(geom_logpmf(k, p, loc))


def nbinom_logpmf(k, n, p, loc=0):
  """log pmf of the negative binomial distribution (failures k before n successes):
  log Gamma(n + k) - log Gamma(k + 1) - log Gamma(n) + n log p + k log(1 - p).

  >>> nbinom_logpmf(0., 2., 0.5)
  DeviceArray(-1.3862944, dtype=float32)
  """
  jnp = _jnp()
  k, n, p, loc = _promote_inexact(k, n, p, loc)
  y = k - loc
  ok = _int_support(y)
  ys = jnp.where(ok, y, jnp.zeros_like(y))
  comb = special.gammaln(n + ys) - special.gammaln(ys + 1) - special.gammaln(n)
  val = comb + special.xlogy(n, p) + special.xlog1py(ys, -p)
  return jnp.where(ok, val, -jnp.inf)


def nbinom_pmf(k, n, p, loc=0):
  """pmf of the negative binomial distribution.

  >>> nbinom_pmf(0., 2., 0.5)
  DeviceArray(0.25, dtype=float32)
  """
  return _jnp().exp(nbinom_logpmf(k, n, p, loc))


def multinomial_logpmf(x, n, p):
  """log pmf of the multinomial distribution; the last axis of `x` and `p` is the
  category axis. -inf where the counts do not sum to n or are not non-negative integers.

  >>> multinomial_logpmf(jnp.array([1., 1.]), 2., jnp.array([0.5, 0.5]))
  DeviceArray(-0.6931472, dtype=float32)
  """
  jnp = _jnp()
  from tracejax._src.scipy.stats.distributions import _promote_inexact_nobroadcast
  x, n, p = _promote_inexact_nobroadcast(x, n, p)
  if x.ndim == 0 or p.ndim == 0:
    raise ValueError("multinomial.logpmf: x and p need a category (last) axis")
  ok = jnp.all(_int_support(x), axis=-1) & (jnp.sum(x, axis=-1) == n)
  val = (special.gammaln(n + 1) - jnp.sum(special.gammaln(x + 1), axis=-1)
         + jnp.sum(special.xlogy(x, p), axis=-1))
  return jnp.where(ok, val, -jnp.inf)


def multinomial_pmf(x, n, p):
  """pmf of the multinomial distribution.

  >>> multinomial_pmf(jnp.array([1., 1.]), 2., jnp.array([0.5, 0.5]))
  DeviceArray(0.5, dtype=float32)
  """
  return _jnp().exp(multinomial_logpmf(x, n, p))


# ---- gennorm, gumbel_l, gumbel_r ----

def gennorm_logpdf(x, beta):
  """log density of the generalized normal distribution with shape `beta`:
  log(beta / (2 Gamma(1/beta))) - |x|**beta.

  >>> gennorm_logpdf(0., 2.)
  DeviceArray(-0.5723649, dtype=float32)
  """
  jnp = _jnp()
  x, beta = _promote_inexact(x, beta)
  return jnp.log(0.5 * beta) - special.gammaln(1 / beta) - jnp.abs(x) ** beta


def gennorm_pdf(x, beta):
  """Density of the generalized normal distribution.

  >>> gennorm_pdf(0., 2.)
  DeviceArray(0.5641896, dtype=float32)
  """
  return _jnp().exp(gennorm_logpdf(x, beta))


def gennorm_cdf(x, beta):
  """CDF of the generalized normal distribution: 1/2 + sign(x) P(1/beta, |x|**beta) / 2.

  >>> gennorm_cdf(0., 2.)
  DeviceArray(0.5, dtype=float32)
  """
  jnp = _jnp()
  x, beta = _promote_inexact(x, beta)
  return 0.5 + 0.5 * jnp.sign(x) * special.gammainc(1 / beta, jnp.abs(x) ** beta)


def gumbel_r_logpdf(x, loc=0., scale=1.):
  """log density of the right-skewed Gumbel distribution: -z - exp(-z) - log(scale).

  >>> gumbel_r_logpdf(0.)
  DeviceArray(-1., dtype=float32)
  """
  jnp = _jnp()
  z, scale = _z(x, loc, scale)
  return -z - jnp.exp(-z) - jnp.log(scale)


def gumbel_r_pdf(x, loc=0., scale=1.):
  """Density of the right-skewed Gumbel distribution.

  >>> gumbel_r_pdf(0.)
  DeviceArray(0.36787945, dtype=float32)
  """
  return _jnp().exp(gumbel_r_logpdf(x, loc, scale))


def gumbel_r_logcdf(x, loc=0., scale=1.):
  """log CDF of the right-skewed Gumbel distribution: -exp(-z).

  >>> gumbel_r_logcdf(0.)
  DeviceArray(-1., dtype=float32)
  """
  z, _ = _z(x, loc, scale)
  return -_jnp().exp(-z)


def gumbel_r_cdf(x, loc=0., scale=1.):
  """CDF of the right-skewed Gumbel distribution: exp(-exp(-z)).

  >>> gumbel_r_cdf(0.)
  DeviceArray(0.36787945, dtype=float32)
  """
  return _jnp().exp(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_sf(x, loc=0., scale=1.):
  """Survival function of the right-skewed Gumbel distribution: 1 - exp(-exp(-z)).

  >>> gumbel_r_sf(0.)
  DeviceArray(0.63212055, dtype=float32)
  """
  return -_jnp().expm1(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_logsf(x, loc=0., scale=1.):
  """log survival function of the right-skewed Gumbel distribution.

  >>> gumbel_r_logsf(0.)
  DeviceArray(-0.45867515, dtype=float32)
  """
  return _log1mexp(gumbel_r_logcdf(x, loc, scale))


def gumbel_r_ppf(p, loc=0., scale=1.):
  """Quantile function of the right-skewed Gumbel distribution: loc - scale log(-log p).

  >>> gumbel_r_ppf(0.5)
  DeviceArray(0.36651292, dtype=float32)
  """
  jnp = _jnp()
  p, loc, scale = _promote_inexact(p, loc, scale)
  return jnp.where(_bad_q(p), jnp.nan, loc - scale * jnp.log(-jnp.log(p)))


def gumbel_l_logpdf(x, loc=0., scale=1.):
  """log density of the left-skewed Gumbel distribution: z - exp(z) - log(scale).

  >>> gumbel_l_logpdf(0.)
  DeviceArray(-1., dtype=float32)
  """
  jnp = _jnp()
  z, scale = _z(x, loc, scale)
  return z - jnp.exp(z) - jnp.log(scale)


def gumbel_l_pdf(x, loc=0., scale=1.):
  """Density of the left-skewed Gumbel distribution.

  >>> gumbel_l_pdf(0.)
  DeviceArray(0.36787945, dtype=float32)
  """
  return _jnp().exp(gumbel_l_logpdf(x, loc, scale))


def gumbel_l_logsf(x, loc=0., scale=1.):
  """log survival function of the left-skewed Gumbel distribution: -exp(z).

  >>> gumbel_l_logsf(0.)
  DeviceArray(-1., dtype=float32)
  """
  z, _ = _z(x, loc, scale)
  return -_jnp().exp(z)


def gumbel_l_sf(x, loc=0., scale=1.):
  """Survival function of the left-skewed Gumbel distribution: exp(-exp(z)).

  >>> gumbel_l_sf(0.)
  DeviceArray(0.36787945, dtype=float32)
  """
  return _jnp().exp(gumbel_l_logsf(x, loc, scale))


def gumbel_l_cdf(x, loc=0., scale=1.):
  """CDF of the left-skewed Gumbel distribution: 1 - exp(-exp(z)).

  >>> gumbel_l_cdf(0.)
  DeviceArray(0.63212055, dtype=float32)
  """
  return -_jnp().expm1(gumbel_l_logsf(x, loc, scale))


def gumbel_l_logcdf(x, loc=0., scale=1.):
  """log CDF of the left-skewed Gumbel distribution.

  >>> gumbel_l_logcdf(0.)
  DeviceArray(-0.45867515, dtype=float32)
  """
  return _log1mexp(gumbel_l_logsf(x, loc, scale))


def gumbel_l_ppf(p, loc=0., scale=1.):
  """Quantile function of the left-skewed Gumbel distribution: loc + scale log(-log(1-p)).

  >>> gumbel_l_ppf(0.5)
  DeviceArray(-0.36651292, dtype=float32)
  """
  jnp = _jnp()
  p, loc, scale = _promote_inexact(p, loc, scale)
  return jnp.where(_bad_q(p), jnp.nan, loc + scale * jnp.log(-jnp.log1p(-p)))


# ---- truncnorm ----

def _log_gauss_mass(lo, hi):
  """log(Phi(hi) - Phi(lo)) for lo <= hi, without cancellation in either tail."""
  jnp = _jnp()
  # Both in the left tail: log Phi(hi) + log(1 - Phi(lo)/Phi(hi)); the right tail mirrors.
  left = hi <= 0
  right = lo >= 0
  l_hi, l_lo = special.log_ndtr(hi), special.log_ndtr(lo)
  r_hi, r_lo = special.log_ndtr(-lo), special.log_ndtr(-hi)
  d_left = jnp.minimum(l_lo - l_hi, 0.)
  d_right = jnp.minimum(r_lo - r_hi, 0.)
  left_val = l_hi + _log1mexp(jnp.where(left, d_left, -jnp.ones_like(d_left)))
  right_val = r_hi + _log1mexp(jnp.where(right, d_right, -jnp.ones_like(d_right)))
  central = jnp.log1p(-special.ndtr(lo) - special.ndtr(-hi))
  return jnp.where(left, left_val, jnp.where(right, right_val, central))


def _truncnorm_args(x, a, b, loc, scale):
  x, a, b, loc, scale = _promote_inexact(x, a, b, loc, scale)
  return (x - loc) / scale, a, b, scale


def truncnorm_logpdf(x, a, b, loc=0., scale=1.):
  """log density of the normal truncated to [a, b] (in standard units, as SciPy).

  >>> truncnorm_logpdf(0.5, -1., 2.)
  DeviceArray(-0.8437722, dtype=float32)
  """
  jnp = _jnp()
  z, a, b, scale = _truncnorm_args(x, a, b, loc, scale)
  val = -0.5 * z * z - 0.5 * np.log(2 * np.pi) - _log_gauss_mass(a, b) - jnp.log(scale)
  return jnp.where((z >= a) & (z <= b), val, -jnp.inf)


def truncnorm_pdf(x, a, b, loc=0., scale=1.):
  """Density of the truncated normal.

  >>> truncnorm_pdf(0.5, -1., 2.)
  DeviceArray(0.43009436, dtype=float32)
  """
  return _jnp().exp(truncnorm_logpdf(x, a, b, loc, scale))


def _truncnorm_log_cdf_sf(z, a, b):
  """(log CDF, log SF) of the standardized truncated normal. Each is the log of a mass
  ratio; where one is near 0 (the other mass is small) it is taken as log(1 - exp(other))
  so that the tiny complementary mass is not lost to cancellation."""
  jnp = _jnp()
  zc = jnp.clip(z, a, b)
  total = _log_gauss_mass(a, b)
  lcdf = jnp.minimum(_log_gauss_mass(a, zc) - total, 0.)
  lsf = jnp.minimum(_log_gauss_mass(zc, b) - total, 0.)
  neg_lsf = jnp.where(lsf < 0, lsf, -jnp.ones_like(lsf))
  neg_lcdf = jnp.where(lcdf < 0, lcdf, -jnp.ones_like(lcdf))
  lcdf2 = jnp.where((lcdf > -np.log(2.)) & (lsf < 0), _log1mexp(neg_lsf), lcdf)
  lsf2 = jnp.where((lsf > -np.log(2.)) & (lcdf < 0), _log1mexp(neg_lcdf), lsf)
  return lcdf2, lsf2


def truncnorm_logcdf(x, a, b, loc=0., scale=1.):
  """log CDF of the truncated normal: log(Phi(z) - Phi(a)) - log(Phi(b) - Phi(a)).

  >>> truncnorm_logcdf(2., -1., 2.)
  DeviceArray(0., dtype=float32)
  """
  jnp = _jnp()
  z, a, b, _ = _truncnorm_args(x, a, b, loc, scale)
  val = _truncnorm_log_cdf_sf(z, a, b)[0]
  return jnp.where(z < a, -jnp.inf, jnp.where(z >= b, jnp.zeros_like(z), val))


def truncnorm_logsf(x, a, b, loc=0., scale=1.):
  """log survival function of the truncated normal.

  >>> truncnorm_logsf(-1., -1., 2.)
  DeviceArray(0., dtype=float32)
  """
  jnp = _jnp()
  z, a, b, _ = _truncnorm_args(x, a, b, loc, scale)
  val = _truncnorm_log_cdf_sf(z, a, b)[1]
  return jnp.where(z <= a, jnp.zeros_like(z), jnp.where(z > b, -jnp.inf, val))


def truncnorm_cdf(x, a, b, loc=0., scale=1.):
  """CDF of the truncated normal.

  >>> truncnorm_cdf(2., -1., 2.)
  DeviceArray(1., dtype=float32)
  """
  return _jnp().exp(truncnorm_logcdf(x, a, b, loc, scale))


def truncnorm_sf(x, a, b, loc=0., scale=1.):
  """Survival function of the truncated normal.

  >>> truncnorm_sf(2., -1., 2.)
  DeviceArray(0., dtype=float32)
  """
  return _jnp().exp(truncnorm_logsf(x, a, b, loc, scale))


# ---- vonmises, wrapcauchy ----

def vonmises_logpdf(x, kappa):
  """log density of the von Mises distribution: kappa cos(x) - log(2 pi I0(kappa))
  (written with i0e so large kappa does not overflow).

  >>> vonmises_logpdf(0., 2.)
  DeviceArray(-0.6618705, dtype=float32)
  """
  jnp = _jnp()
  x, kappa = _promote_inexact(x, kappa)
  val = kappa * (jnp.cos(x) - 1) - np.log(2 * np.pi) - jnp.log(special.i0e(kappa))
  return jnp.where(kappa > 0, val, jnp.nan)


def vonmises_pdf(x, kappa):
  """Density of the von Mises distribution.

  >>> vonmises_pdf(0., 2.)
  DeviceArray(0.5158854, dtype=float32)
  """
  return _jnp().exp(vonmises_logpdf(x, kappa))


def wrapcauchy_logpdf(x, c):
  """log density of the wrapped Cauchy distribution on [0, 2 pi]:
  log((1 - c**2) / (2 pi (1 + c**2 - 2 c cos x))), 0 < c < 1.

  >>> wrapcauchy_logpdf(0., 0.5)
  DeviceArray(-0.7392647, dtype=float32)
  """
  jnp = _jnp()
  x, c = _promote_inexact(x, c)
  val = jnp.log1p(-c * c) - np.log(2 * np.pi) - jnp.log1p(c * c - 2 * c * jnp.cos(x))
  val = jnp.where((x >= 0) & (x <= 2 * np.pi), val, -jnp.inf)
  return jnp.where((c > 0) & (c < 1), val, jnp.nan)


def wrapcauchy_pdf(x, c):
  """Density of the wrapped Cauchy distribution.

  >>> wrapcauchy_pdf(0., 0.5)
  DeviceArray(0.47746483, dtype=float32)
  """
  return _jnp().exp(wrapcauchy_logpdf(x, c))
