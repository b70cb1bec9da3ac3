"""jax.scipy.ndimage.map_coordinates, stats.pareto and stats.multivariate_normal against
SciPy, under jit and vmap, with derivatives checked against finite differences."""
import numpy as np
import pytest
import scipy.ndimage as osp_ndimage
import scipy.stats as osp_stats

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import scipy as jsp
from tracejax.test_util import check_grads


def _close(a, b, tol=1e-5):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape, (a.shape, b.shape)
  np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# JAX's 'constant' and 'wrap' are SciPy's 'grid-constant' and 'grid-wrap'.
MODES = [("constant", "grid-constant"), ("nearest", "nearest"), ("wrap", "grid-wrap"),
         ("mirror", "mirror"), ("reflect", "reflect")]


@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_against_scipy(order):
  rng = np.random.RandomState(0)
  x = rng.randn(5, 6).astype(np.float32)
  # Coordinates well inside and far outside the grid; none at exact halves (order 0
  # rounding of ties is implementation-defined in SciPy).
  c = rng.uniform(-7, 12, size=(2, 3, 4)).astype(np.float32)
  c = np.where(np.abs(c - np.round(c) - 0.5) < 1e-3, c + 0.1, c).astype(np.float32)
  for mode, smode in MODES:
    ref = osp_ndimage.map_coordinates(x, c, order=order, mode=smode, cval=1.5)
    _close(jsp.ndimage.map_coordinates(x, c, order, mode=mode, cval=1.5), ref, 1e-5)
    _close(jax.jit(lambda a, b: jsp.ndimage.map_coordinates(a, b, order, mode, 1.5))(x, c),
           ref, 1e-5)
    # A sequence of coordinate arrays works as well as a stacked array.
    _close(jsp.ndimage.map_coordinates(x, [c[0], c[1]], order, mode=mode, cval=1.5), ref,
           1e-5)


def test_map_coordinates_misc():
  x = jnp.arange(12.0).reshape(3, 4)
  _close(jsp.ndimage.map_coordinates(x, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], 1),
         [3.5, 8.5])
  xi = jnp.arange(12).reshape(3, 4)
  out = jsp.ndimage.map_coordinates(xi, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], 1)
  assert out.dtype == np.int32
  _close(out, [4, 9])  # halves round away from zero
  # 1-D input of length one in mirror mode (a degenerate triangle wave).
  _close(jsp.ndimage.map_coordinates(jnp.array([2.]), [jnp.array([-1.3, 0., 4.2])], 1,
                                     mode="mirror"), [2., 2., 2.])
  with pytest.raises(ValueError, match="input.ndim"):
    jsp.ndimage.map_coordinates(x, [jnp.zeros(2)], 1)
  with pytest.raises(NotImplementedError, match="order"):
    jsp.ndimage.map_coordinates(x, [jnp.zeros(2), jnp.zeros(2)], 3)
  with pytest.raises(NotImplementedError, match="mode"):
    jsp.ndimage.map_coordinates(x, [jnp.zeros(2), jnp.zeros(2)], 1, mode="bogus")


def test_map_coordinates_vmap_and_grads(x64):
  rng = np.random.RandomState(1)
  x = rng.randn(4, 5)
  # Away from integer coordinates, where order-1 interpolation has kinks.
  c = np.floor(rng.uniform(-2, 6, size=(2, 3))) + rng.uniform(0.2, 0.8, size=(2, 3))
  batch = rng.randn(3, 4, 5)
  f = lambda a, b: jsp.ndimage.map_coordinates(a, b, 1, mode="reflect")
  _close(jax.vmap(f, (0, None))(batch, c), np.stack([np.asarray(f(b, c)) for b in batch]),
         1e-12)
  cs = np.stack([c, c + 0.05, c - 0.07])
  _close(jax.vmap(f, (None, 0))(x, cs), np.stack([np.asarray(f(x, b)) for b in cs]), 1e-12)
  for mode, _ in MODES:
    check_grads(jax.jit(lambda a, b: jsp.ndimage.map_coordinates(a, b, 1, mode=mode, cval=0.5)),
                (x, c), order=2)
  g = jax.grad(lambda a: jsp.ndimage.map_coordinates(a, c, 0, mode="nearest").sum())(x)
  assert np.asarray(g).sum() == pytest.approx(c.shape[1])


# ---- pareto ----

def test_pareto_against_scipy():
  x = np.array([0.5, 1., 1.7, 2., 3., 10.], np.float32)
  for args in ((2.,), (2., 0.5, 1.5), (np.array([0.5, 3.], np.float32)[:, None], -0.2, 0.7)):
    _close(jsp.stats.pareto.logpdf(x, *args), osp_stats.pareto.logpdf(x, *args), 1e-5)
    _close(jsp.stats.pareto.pdf(x, *args), osp_stats.pareto.pdf(x, *args), 1e-5)
  _close(jax.jit(jsp.stats.pareto.logpdf)(x, 2., 0.5, 1.5),
         osp_stats.pareto.logpdf(x, 2., 0.5, 1.5), 1e-5)


def test_pareto_vmap_and_grads(x64):
  x = np.array([1.3, 2., 3.5])
  bs = np.array([0.5, 1., 3.])
  _close(jax.vmap(jsp.stats.pareto.logpdf, (None, 0))(x, bs),
         np.stack([osp_stats.pareto.logpdf(x, b) for b in bs]), 1e-12)
  check_grads(jax.jit(lambda a, b, loc, s: jsp.stats.pareto.logpdf(a, b, loc, s)),
              (x, 2.5, 0.1, 0.9), order=2)


# ---- multivariate_normal ----

def _spd(rng, n, batch=()):
  a = rng.randn(*batch, n, n)
  return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_multivariate_normal_against_scipy():
  rng = np.random.RandomState(2)
  cov = _spd(rng, 3).astype(np.float32)
  xs = rng.randn(4, 3).astype(np.float32)
  mean = rng.randn(3).astype(np.float32)
  mvn = jsp.stats.multivariate_normal
  _close(mvn.logpdf(xs, mean, cov), osp_stats.multivariate_normal.logpdf(xs, mean, cov), 1e-4)
  _close(mvn.pdf(xs, mean, cov), osp_stats.multivariate_normal.pdf(xs, mean, cov), 1e-5)
  _close(jax.jit(mvn.logpdf)(xs, mean, cov),
         osp_stats.multivariate_normal.logpdf(xs, mean, cov), 1e-4)
  # Batched means broadcast against x (and covariances against both).
  means = rng.randn(5, 1, 3).astype(np.float32)
  ref = np.stack([osp_stats.multivariate_normal.logpdf(xs, m[0], cov) for m in means])
  _close(mvn.logpdf(xs, means, cov), ref, 1e-4)
  covs = _spd(rng, 3, (2,)).astype(np.float32)
  ref = np.stack([osp_stats.multivariate_normal.logpdf(xs[i], mean, covs[i]) for i in (0, 1)])
  _close(mvn.logpdf(xs[:2], mean, covs), ref, 1e-4)
  # 0-d inputs: a univariate normal, elementwise; a 0-d covariance is isotropic; a 1-D
  # covariance is a diagonal (as in SciPy).
  _close(mvn.logpdf(1., 0., 2.), osp_stats.multivariate_normal.logpdf(1., 0., 2.), 1e-5)
  _close(mvn.logpdf(np.ones(3), 0., 2.), osp_stats.multivariate_normal.logpdf(np.ones(3), 0., 2.),
         1e-5)
  _close(mvn.logpdf(xs, mean, 2.), osp_stats.multivariate_normal.logpdf(xs, mean, 2.), 1e-4)
  d = np.array([1., 2., 3.], np.float32)
  _close(mvn.logpdf(xs, mean, d), osp_stats.multivariate_normal.logpdf(xs, mean, np.diag(d)),
         1e-4)
  # allow_singular: None/False use Cholesky; True handles a singular covariance.
  _close(mvn.logpdf(xs, mean, cov, allow_singular=False),
         osp_stats.multivariate_normal.logpdf(xs, mean, cov), 1e-4)
  sing = np.array([[1., 1., 0.], [1., 1., 0.], [0., 0., 2.]], np.float32)
  pts = np.array([[1., 1., 0.5], [1., 0., 0.5], [0.2, 0.2, -1.]], np.float32)
  _close(mvn.logpdf(pts, np.zeros(3), sing, allow_singular=True),
         osp_stats.multivariate_normal.logpdf(pts, np.zeros(3), sing, allow_singular=True),
         1e-4)
  _close(mvn.logpdf(xs, mean, cov, allow_singular=True),
         osp_stats.multivariate_normal.logpdf(xs, mean, cov), 1e-4)
  with pytest.raises(ValueError, match="incompatible shapes"):
    mvn.logpdf(xs, mean, np.eye(4))
  with pytest.raises(ValueError, match="incompatible shapes"):
    mvn.logpdf(np.ones(2), mean, cov)
  with pytest.raises(TypeError, match="allow_singular"):
    mvn.logpdf(xs, mean, cov, allow_singular="yes")


def test_multivariate_normal_vmap_and_grads(x64):
  rng = np.random.RandomState(3)
  cov = _spd(rng, 3)
  xs, means = rng.randn(4, 3), rng.randn(4, 3)
  mvn = jsp.stats.multivariate_normal
  _close(jax.vmap(mvn.logpdf, (0, 0, None))(xs, means, cov),
         np.array([osp_stats.multivariate_normal.logpdf(x, m, cov) for x, m in zip(xs, means)]),
         1e-10)
  check_grads(jax.jit(mvn.logpdf), (xs, means[0], cov), order=2)
  check_grads(jax.jit(lambda x, m: mvn.logpdf(x, m, 1.5)), (xs, means), order=2)
  check_grads(jax.jit(lambda x, m: mvn.logpdf(x, m, cov, allow_singular=True)),
              (xs[0], means[0]), order=1)
