"""jax.numpy statistics: quantile, percentile, median and their nan* forms, cov,
corrcoef, histogram (1-D, 2-D, N-D) and its bin edges, bincount, digitize, interp.

Compared with NumPy (ints, floats, NaNs), under `jit`, with `vmap` against a
Python loop, and with derivatives checked against finite differences.
"""
import warnings

import numpy as np
import pytest

import tracejax.numpy as jnp
from tracejax._src import errors
from tracejax._src.api import vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)
XNAN = X.copy()
XNAN[0, 0, :2] = np.nan
XNAN[1, 1, :] = np.nan
METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _close(got, exp, rtol=1e-5, atol=1e-6):
  exp = np.asarray(exp)
  assert np.shape(got) == exp.shape, (np.shape(got), exp.shape)
  got = np.asarray(got)
  got = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
  np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol)


# ---- quantiles ----

@pytest.mark.parametrize("method", METHODS)
def test_quantile_methods_axes(method):
  q = np.array([0., 0.1, 0.5, 0.75, 1.], np.float32)
  for axis, keepdims in ((None, False), (1, True), ((0, 2), False), (-1, False)):
    _close(jnp.quantile(X, q, axis=axis, method=method, keepdims=keepdims),
           np.quantile(X, q, axis=axis, method=method, keepdims=keepdims))
  _close(jnp.percentile(X, 30, axis=0, method=method), np.percentile(X, 30, axis=0,
                                                                     method=method))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy: all-NaN slices
    _close(jnp.nanquantile(XNAN, q[1:4], axis=2, method=method),
           np.nanquantile(XNAN, q[1:4], axis=2, method=method))
    _close(jnp.nanpercentile(XNAN, 60., axis=(1, 2), method=method),
           np.nanpercentile(XNAN, 60., axis=(1, 2), method=method))


def test_quantile_nans_ints_and_names():
  # A NaN anywhere in a slice makes its (non-nan) quantiles NaN.
  _close(jnp.quantile(XNAN, 0.3, axis=2), np.quantile(XNAN, 0.3, axis=2))
  _close(jnp.median(XNAN, axis=-1), np.median(XNAN, axis=-1))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    _close(jnp.nanmedian(XNAN, axis=2, keepdims=True),
           np.nanmedian(XNAN, axis=2, keepdims=True))
  xi = RNG.integers(-10, 10, (6, 7)).astype(np.int32)
  _close(jnp.median(xi), np.median(xi))
  _close(jnp.median(xi, axis=[0, 1]), np.median(xi, axis=(0, 1)))
  assert jnp.median(xi).dtype == np.float32  # always inexact, as in JAX
  _close(jnp.percentile(xi, [10, 90], axis=1), np.percentile(xi, [10, 90], axis=1))
  _close(jnp.quantile(np.array([True, False, True]), 0.5), 1.0)
  # The 2020 keyword `interpolation` is the modern `method`.
  _close(jnp.percentile(xi, 25, interpolation="higher"),
         np.percentile(xi, 25, method="higher"))
  with pytest.raises(TypeError, match="interpolation"):
    jnp.quantile(xi, 0.5, method="lower", interpolation="higher")
  with pytest.raises(ValueError, match="method"):
    jnp.quantile(xi, 0.5, method="inverted_cdf")
  with pytest.raises(ValueError, match=r"\[0, 1\]"):
    jnp.quantile(xi, 1.5)
  with pytest.raises(ValueError, match=r"\[0, 100\]"):
    jnp.percentile(xi, -1)
  with pytest.raises(ValueError, match="overwrite_input"):
    jnp.median(xi, overwrite_input=True)
  with pytest.raises(ValueError, match="quantile does not support complex input"):
    jnp.median(xi + 1j)   # JAX 0.10.2: ValueError, quantile's text


def test_quantile_jit_vmap():
  f = jit(lambda x, q: jnp.quantile(x, q, axis=1, method="midpoint"))
  q = np.array([0.2, 0.9], np.float32)
  _close(f(X, q), np.quantile(X, q, axis=1, method="midpoint"))
  g = jit(lambda x: (jnp.median(x, axis=0), jnp.nanpercentile(x, 75, axis=(0, 1))))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    m, p = g(XNAN)
    _close(m, np.median(XNAN, axis=0))
    _close(p, np.nanpercentile(XNAN, 75, axis=(0, 1)))
  out = vmap(lambda x: jnp.percentile(x, 40., axis=0))(X)
  _close(out, np.stack([np.percentile(x, 40., axis=0) for x in X]))
  out = vmap(lambda q: jnp.quantile(X[0], q), in_axes=0)(q)
  _close(out, np.stack([np.quantile(X[0], v) for v in q]))


def test_quantile_grads(x64):
  x = np.random.default_rng(1).standard_normal((3, 5))
  check_grads(lambda v: jnp.median(v, axis=1), (x,), 2)
  check_grads(lambda v, q: jnp.quantile(v, q, axis=(0, 1)), (x, np.array([0.3, 0.62])), 2)
  check_grads(lambda v: jnp.percentile(v, 35., axis=0, method="midpoint"), (x,), 1)
  check_grads(lambda v: jnp.nanquantile(v, 0.4, axis=1, method="nearest"), (x,), 1)
  xn = x.copy()
  xn[0, 1] = np.nan

  def f(v):  # the NaN entry gets no gradient
    return jnp.nanpercentile(jnp.where(jnp.isnan(xn), np.nan, v), 40., axis=1)
  check_grads(f, (x,), 1)


# ---- cov / corrcoef ----

def test_cov_all_arguments():
  rng = np.random.default_rng(2)
  x = rng.standard_normal((3, 6))
  y = rng.standard_normal((2, 6))
  fw = np.array([1, 2, 0, 3, 1, 1])
  aw = rng.uniform(size=6)
  for kw in ({}, {"bias": True}, {"ddof": 3}, {"fweights": fw}, {"aweights": aw},
             {"fweights": fw, "aweights": aw}, {"fweights": fw, "aweights": aw, "ddof": 0},
             {"aweights": aw, "bias": True}, {"fweights": fw, "ddof": 2}):
    _close(jnp.cov(x, **kw), np.cov(x, **kw), rtol=2e-5)
  _close(jnp.cov(x, y), np.cov(x, y), rtol=2e-5)
  _close(jnp.cov(x.T, y.T, rowvar=False), np.cov(x.T, y.T, rowvar=False), rtol=2e-5)
  _close(jnp.cov(x[0]), np.cov(x[0]), rtol=2e-5)
  xi = rng.integers(0, 9, (2, 5))
  _close(jnp.cov(xi), np.cov(xi), rtol=2e-5)
  c = (x[:2] + 1j * y).astype(np.complex64)
  _close(jnp.cov(c), np.cov(c), rtol=2e-5)
  assert jnp.cov(xi).dtype == np.float32
  assert jnp.cov(x, dtype=np.float32).dtype == np.float32
  _close(jit(lambda a, w: jnp.cov(a, aweights=w))(x, aw), np.cov(x, aweights=aw), rtol=2e-5)
  _close(vmap(jnp.cov)(np.stack([x, 2 * x])), np.stack([np.cov(x), np.cov(2 * x)]),
         rtol=2e-5)
  with pytest.raises(TypeError, match="fweights must be integer"):
    jnp.cov(x, fweights=aw)
  with pytest.raises(ValueError, match="negative"):
    jnp.cov(x, aweights=-aw)
  with pytest.raises(ValueError, match="incompatible"):
    jnp.cov(x, fweights=fw[:3])
  with pytest.raises(ValueError, match="more than 2"):
    jnp.cov(np.zeros((2, 2, 2)))


def test_corrcoef():
  rng = np.random.default_rng(3)
  x = rng.standard_normal((3, 8))
  y = rng.standard_normal(8)
  _close(jnp.corrcoef(x), np.corrcoef(x), rtol=2e-5, atol=2e-6)
  _close(jnp.corrcoef(x, y), np.corrcoef(x, y), rtol=2e-5, atol=2e-6)
  _close(jnp.corrcoef(x.T, rowvar=False), np.corrcoef(x.T, rowvar=False), rtol=2e-5,
         atol=2e-6)
  _close(jnp.corrcoef(x[0]), 1.0)
  _close(jit(jnp.corrcoef)(x), np.corrcoef(x), rtol=2e-5, atol=2e-6)
  with pytest.warns(DeprecationWarning):
    jnp.corrcoef(x, bias=1)


def test_cov_corrcoef_grads(x64):
  x = np.random.default_rng(4).standard_normal((3, 6))
  aw = np.arange(1., 7.)
  check_grads(jnp.cov, (x,), 2)
  check_grads(lambda v: jnp.cov(v, fweights=np.array([1, 2, 1, 1, 3, 1]), aweights=aw),
              (x,), 2)
  check_grads(jnp.corrcoef, (x,), 1)


# ---- histograms ----

def test_histogram():
  rng = np.random.default_rng(5)
  a = rng.standard_normal(50).astype(np.float32)
  w = rng.uniform(size=50).astype(np.float32)
  for kw in ({}, {"bins": 4}, {"bins": 5, "range": (-1, 1.5)}, {"weights": w},
             {"density": True}, {"bins": np.array([-3., -1, 0, 0.5, 3]), "weights": w,
                                 "density": True}):
    h, e = jnp.histogram(a, **kw)
    hn, en = np.histogram(a, **kw)
    _close(h, hn, rtol=1e-5)
    _close(e, en, rtol=1e-5)
  ai = np.array([1, 2, 2, 3, 3, 3])
  h, e = jnp.histogram(ai, bins=3)
  _close(h, np.histogram(ai, bins=3)[0])
  assert h.dtype == np.float32  # JAX counts in the inexact dtype
  _close(jnp.histogram(np.full(4, 2.), bins=2)[1], np.histogram(np.full(4, 2.), bins=2)[1])
  h, e = jnp.histogram(a, bins="auto")  # NumPy's estimators work on concrete data
  _close(h, np.histogram(a, bins="auto")[0])
  _close(jnp.histogram_bin_edges(a, bins="sturges"), np.histogram_bin_edges(a, "sturges"),
         rtol=1e-5)
  f = jit(lambda x, w: jnp.histogram(x, bins=6, range=(-2, 2), weights=w))
  _close(f(a, w)[0], np.histogram(a, bins=6, range=(-2, 2), weights=w)[0], rtol=1e-5)
  _close(vmap(lambda x: jnp.histogram(x, bins=3, range=(-1, 1))[0])(a.reshape(5, 10)),
         [np.histogram(r, bins=3, range=(-1, 1))[0] for r in a.reshape(5, 10)])
  with pytest.raises(errors.ConcretizationTypeError):
    jit(lambda x: jnp.histogram(x, bins="auto"))(a)
  with pytest.raises(ValueError, match="positive"):
    jnp.histogram(a, bins=0)
  with pytest.raises(ValueError, match="range"):
    jnp.histogram(a, range=(1, 0))
  with pytest.raises(ValueError, match="weights"):
    jnp.histogram(a, weights=w[:3])


def test_histogram2d_dd():
  rng = np.random.default_rng(6)
  s = rng.standard_normal((40, 3))
  w = rng.uniform(size=40)
  for kw in ({}, {"bins": (3, 4, np.array([-1, 0, 1.]))}, {"weights": w, "density": True},
             {"bins": 2, "range": [(-1, 1), None, (0, 2)]}):
    h, e = jnp.histogramdd(s, **kw)
    hn, en = np.histogramdd(s, **kw)
    _close(h, hn, rtol=1e-4)
    for a, b in zip(e, en):
      _close(a, b, rtol=1e-5)
  h, ex, ey = jnp.histogram2d(s[:, 0], s[:, 1], bins=(3, 5), weights=w)
  hn, exn, eyn = np.histogram2d(s[:, 0], s[:, 1], bins=(3, 5), weights=w)
  _close(h, hn, rtol=1e-4)
  _close(ex, exn, rtol=1e-5)
  _close(ey, eyn, rtol=1e-5)
  edges = np.array([-2., 0, 2])
  _close(jnp.histogram2d(s[:, 0], s[:, 1], bins=edges)[0],
         np.histogram2d(s[:, 0], s[:, 1], bins=edges)[0])
  _close(jit(lambda a, b: jnp.histogram2d(a, b, bins=4)[0])(s[:, 0], s[:, 2]),
         np.histogram2d(s[:, 0], s[:, 2], bins=4)[0], rtol=1e-5)


def test_bincount():
  x = np.array([0, 1, 1, 3, 2, 1, 7])
  w = np.linspace(0, 1, 7).astype(np.float32)
  np.testing.assert_array_equal(jnp.bincount(x), np.bincount(x))
  _close(jnp.bincount(x, weights=w), np.bincount(x, weights=w))
  np.testing.assert_array_equal(jnp.bincount(x, minlength=10), np.bincount(x, minlength=10))
  np.testing.assert_array_equal(jnp.bincount(np.array([True, False, True])), [1, 2])
  np.testing.assert_array_equal(jit(lambda v: jnp.bincount(v, length=5))(x),
                                np.bincount(x)[:5])
  np.testing.assert_array_equal(jnp.bincount(np.array([-1, 0, 2]), length=4), [2, 0, 1, 0])
  np.testing.assert_array_equal(vmap(lambda v: jnp.bincount(v, length=8))(x.reshape(1, 7)),
                                [np.bincount(x)])
  with pytest.raises(errors.ConcretizationTypeError, match="length"):
    jit(jnp.bincount)(x)
  with pytest.raises(TypeError, match="integer"):
    jnp.bincount(w)
  with pytest.raises(ValueError, match="shape"):
    jnp.bincount(x, weights=w[:3])


def test_digitize():
  x = np.array([-1., 0.5, 1., 2.5, 3., 7., np.nan])
  for bins in (np.array([0., 1, 2, 3]), np.array([3., 2, 1, 0]), np.array([1., 1, 2])):
    for right in (False, True):
      np.testing.assert_array_equal(jnp.digitize(x, bins, right=right),
                                    np.digitize(x, bins, right=right))
  np.testing.assert_array_equal(jit(jnp.digitize)(x, np.array([3., 2, 1])),
                                np.digitize(x, np.array([3., 2, 1])))
  np.testing.assert_array_equal(jnp.digitize([1, 5], np.array([0, 2, 4]), method="compare_all"),
                                [1, 3])
  with pytest.raises(ValueError, match="monotonically"):
    jnp.digitize(x, np.array([0., 2, 1]))


def test_interp():
  xp = np.array([0., 1., 2.5, 4.])
  fp = np.array([1., 3., -1., 0.])
  x = np.array([-1., 0., 0.3, 1., 2., 3.9, 4., 6., np.nan])
  _close(jnp.interp(x, xp, fp), np.interp(x, xp, fp))
  _close(jnp.interp(x, xp, fp, left=-9., right=9.), np.interp(x, xp, fp, left=-9., right=9.))
  _close(jnp.interp(x, xp, fp + 1j * fp[::-1]), np.interp(x, xp, fp + 1j * fp[::-1]))
  xper = np.array([-180., -170., -185., 185., -10., -5., 0., 365.])
  xpp = np.array([190., -190., 350., -350.])
  fpp = np.array([5., 10., 3., 4.])
  _close(jnp.interp(xper, xpp, fpp, period=360), np.interp(xper, xpp, fpp, period=360),
         rtol=1e-5)
  _close(jnp.interp(np.array([-1., 5.]), xp, fp, left="extrapolate", right="extrapolate"),
         [-1., 1.0 / 1.5])
  _close(jit(jnp.interp)(x, xp, fp), np.interp(x, xp, fp))
  xs = np.stack([x, x + 0.5])
  _close(vmap(jnp.interp, in_axes=(0, None, None))(xs, xp, fp),
         np.stack([np.interp(r, xp, fp) for r in xs]))
  _close(jnp.interp(2, np.array([1.]), np.array([4.])), 4.)
  with pytest.raises(ValueError, match="same length"):
    jnp.interp(x, xp, fp[:2])
  with pytest.raises(ValueError, match="period"):
    jnp.interp(x, xp, fp, period=0)


def test_interp_grads(x64):
  x = np.array([-0.4, 0.3, 1.7, 2.6, 5.])  # away from the kinks, also mod 3.5
  xp = np.array([0., 1., 2., 3.])
  fp = np.array([1., 3., -1., 2.])
  check_grads(jnp.interp, (x, xp, fp), 2)
  check_grads(lambda x, f: jnp.interp(x, xp, f, period=3.5), (x, fp), 2)
