"""jax.scipy.stats of JAX 0.10.2: every distribution's functions against SciPy, plus
rankdata, mode, sem and gaussian_kde, under jit and vmap, with gradients."""
import numpy as np
import pytest
import scipy.stats as osp

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.stats as jst
from tracejax._src.test_util import check_grads

# The public functions of each distribution module in JAX 0.10.2.
JAX_0_10_2 = {
    'bernoulli': ['cdf', 'logpmf', 'pmf', 'ppf'],
    'beta': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'sf'],
    'betabinom': ['logpmf', 'pmf'], 'binom': ['logpmf', 'pmf'],
    'cauchy': ['cdf', 'isf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'chi2': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'sf'],
    'dirichlet': ['logpdf', 'pdf'],
    'expon': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'gamma': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'sf'],
    'gennorm': ['cdf', 'logpdf', 'pdf'], 'geom': ['logpmf', 'pmf'],
    'gumbel_l': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'gumbel_r': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'laplace': ['cdf', 'logpdf', 'pdf'],
    'logistic': ['cdf', 'isf', 'logpdf', 'pdf', 'ppf', 'sf'],
    'multinomial': ['logpmf', 'pmf'], 'multivariate_normal': ['logpdf', 'pdf'],
    'nbinom': ['logpmf', 'pmf'],
    'norm': ['cdf', 'isf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'pareto': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'ppf', 'sf'],
    'poisson': ['cdf', 'entropy', 'logpmf', 'pmf'], 't': ['logpdf', 'pdf'],
    'truncnorm': ['cdf', 'logcdf', 'logpdf', 'logsf', 'pdf', 'sf'],
    'uniform': ['cdf', 'logpdf', 'pdf', 'ppf'],
    'vonmises': ['logpdf', 'pdf'], 'wrapcauchy': ['logpdf', 'pdf'],
}


def test_every_name_of_jax_0_10_2_exists():
  for mod, fns in JAX_0_10_2.items():
    m = getattr(jst, mod)
    assert [f for f in fns if not callable(getattr(m, f, None))] == [], mod
  for name in ("gaussian_kde", "mode", "rankdata", "sem"):
    assert callable(getattr(jst, name))


X = np.array([-1.5, -0.2, 0., 0.3, 0.7, 1., 2.5, 6.])
K = np.array([-1., 0., 1., 2., 3., 5., 2.5, 10.])
Q = np.array([-0.1, 0., 0.1, 0.5, 0.9, 1., 0.3, 0.7])
PARAMS = {
    'bernoulli': (0.3,), 'beta': (2., 3.), 'betabinom': (6., 2., 3.), 'binom': (6., 0.3),
    'cauchy': (), 'chi2': (3.,), 'expon': (), 'gamma': (2.5,), 'gennorm': (1.5,),
    'geom': (0.3,), 'gumbel_l': (), 'gumbel_r': (), 'laplace': (), 'logistic': (),
    'nbinom': (3., 0.4), 'norm': (), 'pareto': (2.,), 'poisson': (2.5,), 't': (3.,),
    'truncnorm': (-1., 2.), 'uniform': (), 'vonmises': (2.,), 'wrapcauchy': (0.5,)}
DISCRETE = {'bernoulli', 'betabinom', 'binom', 'geom', 'nbinom', 'poisson'}
NO_LOC = {'gennorm', 'vonmises', 'wrapcauchy', 'multinomial'}


def _cases():
  for dist, params in PARAMS.items():
    for fn in JAX_0_10_2[dist]:
      if fn == 'entropy':
        yield dist, fn, (np.array([0.5, 3., 30., 300.]),), ()
        continue
      arg = Q if fn in ('ppf', 'isf') else (K if dist in DISCRETE else X)
      if dist == 'wrapcauchy':
        arg = np.abs(arg)
      extra = ()
      if dist not in NO_LOC and fn not in ('ppf', 'isf') and dist != 'bernoulli':
        extra = (0.5,) if dist in DISCRETE else (0.5, 1.5)   # loc (and scale)
      yield dist, fn, (arg,) + params, extra


def _check(dist, fn, args, extra, dtype, rtol, atol):
  ours = getattr(getattr(jst, dist), fn)
  ref = getattr(getattr(osp, dist), fn)
  cast = [np.asarray(a, dtype) for a in args]
  for ex in ((), extra):
    out = np.asarray(ours(*cast, *ex), np.float64)
    with np.errstate(all="ignore"):
      expected = ref(*[np.asarray(a, dtype).astype(np.float64) for a in args], *ex)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=f"{dist}.{fn}{' with loc/scale' if ex else ''}")


def test_distributions_against_scipy_float32():
  for dist, fn, args, extra in _cases():
    _check(dist, fn, args, extra, np.float32, 2e-5, 2e-6)


def test_distributions_against_scipy_float64(x64):
  for dist, fn, args, extra in _cases():
    _check(dist, fn, args, extra, np.float64, 1e-11, 1e-14)


def test_multinomial_and_tails(x64):
  x = np.array([[1., 2., 3.], [0., 6., 0.], [1., 1., 1.]])
  p = np.array([0.2, 0.3, 0.5])
  np.testing.assert_allclose(jst.multinomial.logpmf(x, 6., p), osp.multinomial.logpmf(x, 6, p),
                             rtol=1e-12)
  np.testing.assert_allclose(jst.multinomial.pmf(x[0], 6., p), osp.multinomial.pmf(x[0], 6, p),
                             rtol=1e-12)
  # Far tails, where naive formulas cancel or underflow: JAX 0.10.2's values (its
  # log_ndtr series; logcdf(8) is -6.66e-16 where SciPy has -6.22e-16).
  t = np.array([-30., -8., 8., 30.])
  want = [-4.906713927147908e-198, -6.661338147750941e-16, -35.01343715991456,
          -454.3212439565018]
  np.testing.assert_allclose(jst.norm.logsf(t), want, rtol=1e-12)
  np.testing.assert_allclose(jst.norm.logcdf(t), want[::-1], rtol=1e-12)
  np.testing.assert_allclose(jst.norm.logcdf(t[:2]), osp.norm.logcdf(t[:2]), rtol=1e-9)
  for d in ("gumbel_l", "gumbel_r"):
    for f in ("logsf", "logcdf"):
      np.testing.assert_allclose(getattr(getattr(jst, d), f)(t[1:3] / 2),
                                 getattr(getattr(osp, d), f)(t[1:3] / 2), rtol=1e-12)
  np.testing.assert_allclose(jst.expon.logcdf(1e-10), osp.expon.logcdf(1e-10), rtol=1e-12)
  z = np.array([5.5, 6., 7.5])
  for f in ("logpdf", "logcdf", "logsf"):
    np.testing.assert_allclose(getattr(jst.truncnorm, f)(z, 5., 8.),
                               getattr(osp.truncnorm, f)(z, 5., 8.), rtol=1e-9)
    np.testing.assert_allclose(getattr(jst.truncnorm, f)(-z, -8., -5.),
                               getattr(osp.truncnorm, f)(-z, -8., -5.), rtol=1e-9)


def test_jit_vmap_grad():
  x = np.array([0.3, 1.2, 2.5], np.float32)
  f = jax.jit(lambda v, a, b: jst.truncnorm.logpdf(v, a, b) + jst.chi2.logcdf(v, 3.)
              + jst.gumbel_r.logsf(v) + jst.cauchy.logsf(v) + jst.pareto.logcdf(v + 1, a + 2))
  out = f(x, -1., 3.)
  ref = (osp.truncnorm.logpdf(x, -1., 3.) + osp.chi2.logcdf(x, 3.) + osp.gumbel_r.logsf(x)
         + osp.cauchy.logsf(x) + osp.pareto.logcdf(x + 1, 1.))
  np.testing.assert_allclose(out, ref, rtol=2e-5)
  out = jax.vmap(f, in_axes=(0, 0, None))(x, -x, 3.)
  np.testing.assert_allclose(out, [f(v, -v, 3.) for v in x], rtol=1e-6)
  out = jax.vmap(jst.binom.logpmf, in_axes=(None, None, 0))(2., 5., x / 3)
  np.testing.assert_allclose(out, osp.binom.logpmf(2, 5, x / 3), rtol=2e-5)


def test_grads(x64):
  def logp(x, a):
    return (jst.truncnorm.logpdf(x, -1., 3.) + jst.chi2.logpdf(x, a)
            + jst.gumbel_l.logcdf(x) + jst.gumbel_r.logpdf(x)
            + jst.gennorm.logpdf(x, a) + jst.vonmises.logpdf(x, a) + jst.wrapcauchy.logpdf(x, 0.4)
            + jst.cauchy.logcdf(x) + jst.expon.logcdf(x) + jst.norm.logsf(x)
            + jst.pareto.logsf(x + 1, a) + jst.betabinom.logpmf(2., 5., a, x)
            + jst.nbinom.logpmf(3., a, x / 3) + jst.binom.logpmf(2., 4., x / 3)
            + jst.geom.logpmf(3., x / 3))
  check_grads(jax.jit(logp), (np.array([0.4, 1.7]), np.array([1.3, 2.6])), order=1,
              modes=("rev",), rtol=1e-5, atol=1e-5)
  check_grads(jax.jit(lambda x: jst.truncnorm.logcdf(x, -1., 3.) + jst.gumbel_r.ppf(x / 3)),
              (np.array([0.4, 1.7]),), order=2, rtol=1e-5, atol=1e-5)


def test_rankdata():
  a = np.array([3., 1., 3., 2., 1., 5., 3.], np.float32)
  for method in ("average", "min", "max", "dense", "ordinal"):
    np.testing.assert_allclose(jst.rankdata(a, method), osp.rankdata(a, method))
  b = np.random.RandomState(0).randint(0, 3, (3, 5)).astype(np.float32)
  np.testing.assert_allclose(jst.rankdata(b, axis=1), osp.rankdata(b, axis=1))
  np.testing.assert_allclose(jst.rankdata(b, "dense", axis=0), osp.rankdata(b, "dense", axis=0))
  np.testing.assert_allclose(jst.rankdata(b), osp.rankdata(b))
  assert np.isnan(np.asarray(jst.rankdata(jnp.array([3., jnp.nan, 2.])))).all()
  out = jax.jit(jax.vmap(lambda r: jst.rankdata(r, "min")))(b)
  np.testing.assert_allclose(out, [osp.rankdata(r, "min") for r in b])
  with pytest.raises(ValueError, match="method"):
    jst.rankdata(a, "bogus")
  with pytest.raises(NotImplementedError, match="nan_policy"):
    jst.rankdata(a, nan_policy="omit")


def test_mode_and_sem():
  b = np.random.RandomState(1).randint(0, 4, (3, 7)).astype(np.float32)
  for axis in (1, None):
    m, c = jst.mode(b, axis=axis)
    r = osp.mode(b, axis=axis)
    np.testing.assert_allclose(m, r.mode)
    np.testing.assert_array_equal(c, r.count)
  m, c = jst.mode(b, axis=1, keepdims=True)
  assert m.shape == (3, 1)
  m, c = jax.jit(lambda v: jst.mode(v, axis=1))(b)
  np.testing.assert_allclose(m, osp.mode(b, axis=1).mode)
  m, c = jst.mode(jnp.array([1., jnp.nan, jnp.nan]))
  assert np.isnan(m) and c == 2
  np.testing.assert_allclose(jst.sem(b, axis=1), osp.sem(b, axis=1), rtol=1e-6)
  np.testing.assert_allclose(jst.sem(b, axis=None, ddof=0), osp.sem(b, axis=None, ddof=0),
                             rtol=1e-6)
  v = np.array([1., 2., np.nan, 4.], np.float32)
  np.testing.assert_allclose(jst.sem(v, nan_policy="omit"), osp.sem(v, nan_policy="omit"),
                             rtol=1e-6)
  assert np.isnan(jst.sem(v))


def test_gaussian_kde():
  rng = np.random.RandomState(0)
  data = rng.randn(2, 12).astype(np.float32)
  w = rng.rand(12).astype(np.float32)
  pts = rng.randn(2, 5).astype(np.float32)
  for bw in ("silverman", 0.7):
    ours, ref = jst.gaussian_kde(data, bw, w), osp.gaussian_kde(data, bw, w)
    np.testing.assert_allclose(ours.covariance, ref.covariance, rtol=1e-5)
    np.testing.assert_allclose(ours.evaluate(pts), ref.evaluate(pts), rtol=1e-4)
    np.testing.assert_allclose(ours.logpdf(pts), ref.logpdf(pts), rtol=1e-4)
  k, r = jst.gaussian_kde(data), osp.gaussian_kde(data)
  np.testing.assert_allclose(k.neff, r.neff, rtol=1e-6)
  np.testing.assert_allclose(k.integrate_kde(k), r.integrate_kde(r), rtol=1e-4)
  np.testing.assert_allclose(k.integrate_gaussian(np.zeros(2), np.eye(2)),
                             r.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-4)
  k1, r1 = jst.gaussian_kde(data[0]), osp.gaussian_kde(data[0])
  np.testing.assert_allclose(k1.integrate_box_1d(-0.5, 1.), r1.integrate_box_1d(-0.5, 1.),
                             rtol=1e-5)
  np.testing.assert_allclose(k1.integrate_box([-0.5], [1.]), r1.integrate_box_1d(-0.5, 1.),
                             rtol=1e-5)
  with pytest.raises(NotImplementedError):
    k.integrate_box(np.zeros(2), np.ones(2))
  # A pytree: through jit and vmap (over points), and differentiable in the points.
  out = jax.jit(lambda kde, p: kde.logpdf(p))(k, pts)
  np.testing.assert_allclose(out, r.logpdf(pts), rtol=1e-4)
  out = jax.vmap(lambda p: k.evaluate(p[:, None])[0], in_axes=1)(pts)
  np.testing.assert_allclose(out, r.evaluate(pts), rtol=1e-4)
  g = jax.grad(lambda p: jnp.sum(k.logpdf(p)))(pts)
  eps = 1e-2
  fd = (np.asarray(k.logpdf(pts + np.array([[eps], [0.]], np.float32)))
        - np.asarray(k.logpdf(pts - np.array([[eps], [0.]], np.float32)))) / (2 * eps)
  np.testing.assert_allclose(np.asarray(g)[0], fd, rtol=2e-2, atol=2e-3)
  s = k1.resample(jax.random.PRNGKey(0), (4000,))
  assert s.shape == (1, 4000)
  np.testing.assert_allclose(np.mean(s), np.mean(data[0]), atol=0.1)
  np.testing.assert_allclose(np.var(s), np.var(data[0]) + k1.covariance[0, 0], rtol=0.1)
  k1.set_bandwidth(0.5)
  r1.set_bandwidth(0.5)
  np.testing.assert_allclose(k1.covariance, r1.covariance, rtol=1e-5)
  np.testing.assert_allclose(k1.evaluate(pts[0]), r1.evaluate(pts[0]), rtol=1e-4)
  with pytest.raises(ValueError, match="weights"):
    jst.gaussian_kde(data, weights=np.ones(3))
