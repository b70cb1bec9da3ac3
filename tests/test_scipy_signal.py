"""jax.scipy.signal, jax.scipy.fft (DCTs) and jax.scipy.integrate against SciPy.

float32 with float32 tolerances by default; the `x64` fixture switches x64 on for
the float64 checks (and restores it). Transformations: jit everywhere, vmap against
a Python loop, check_grads (fwd + rev) for the convolutions and the DCT.
"""
import functools
import warnings

import numpy as np
import pytest
import scipy.fft as osp_fft
import scipy.integrate as osp_integrate
import scipy.signal as osp_signal

from tracejax._src.api import vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads
import tracejax.numpy as jnp
import tracejax.scipy as jsp
from tracejax.scipy import fft as jfft
from tracejax.scipy import integrate as jintegrate
from tracejax.scipy import signal as jsig

TOL32 = dict(atol=2e-4, rtol=2e-4)
TOL64 = dict(atol=1e-10, rtol=1e-10)


def _rand(shape, dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _j(f, *args, **kw):
  """f(*args, **kw) under jit, arrays traced and everything else static: one compile
  per case, which is also much faster than compiling each primitive eagerly."""
  is_array = [isinstance(a, (np.ndarray, jnp.ndarray)) for a in args]
  arrays = [a for a, t in zip(args, is_array) if t]

  def g(*arrs):
    it = iter(arrs)
    return f(*[next(it) if t else a for a, t in zip(args, is_array)], **kw)
  return jit(g)(*arrays)


def _close(actual, expected, tol=TOL32):
  actual = np.asarray(actual)
  expected = np.asarray(expected)
  assert actual.shape == expected.shape, (actual.shape, expected.shape)
  np.testing.assert_allclose(actual, expected, **tol)


def test_public_names():
  assert sorted(n for n in dir(jsig) if not n.startswith("_")) == [
      "convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
      "fftconvolve", "istft", "stft", "welch"]
  assert sorted(n for n in dir(jfft) if not n.startswith("_")) == [
      "dct", "dctn", "idct", "idctn"]
  assert jsp.signal is jsig and jsp.fft is jfft and jsp.integrate is jintegrate


# ---- convolutions ----

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate_modes(mode):
  x, k = _rand(9), _rand(4, seed=1)
  for method in ("direct", "fft"):   # "auto" is "direct" (as JAX)
    for a, b in ((x, k), (k, x)):   # also the 'valid' swap and a larger in2 for 'same'
      _close(_j(jsig.convolve, a, b, mode, method=method), osp_signal.convolve(a, b, mode))
      _close(_j(jsig.correlate, a, b, mode, method=method), osp_signal.correlate(a, b, mode))
  a2, b2 = _rand((5, 6)), _rand((3, 2), seed=1)
  _close(_j(jsig.convolve, a2, b2, mode), osp_signal.convolve(a2, b2, mode))
  _close(_j(jsig.correlate, a2, b2, mode), osp_signal.correlate(a2, b2, mode))
  _close(_j(jsig.fftconvolve, a2, b2, mode), osp_signal.fftconvolve(a2, b2, mode))
  xc, kc = _rand(7, np.complex64), _rand(3, np.complex64, seed=1)
  _close(_j(jsig.convolve, xc, kc, mode), osp_signal.convolve(xc, kc, mode))
  _close(_j(jsig.correlate, kc, xc, mode), osp_signal.correlate(kc, xc, mode))
  _close(_j(jsig.fftconvolve, xc, kc, mode), osp_signal.fftconvolve(xc, kc, mode))


def test_convolve_dtypes_and_errors():
  out = jsig.convolve(jnp.arange(4), jnp.arange(3))
  assert out.dtype == np.float32
  _close(out, [0., 0., 1., 4., 7., 6.])
  assert jsig.convolve(_rand(4, np.complex64), _rand(3)).dtype == np.complex64
  with pytest.raises(ValueError, match="same number of dimensions"):
    jsig.convolve(jnp.ones((3, 3)), jnp.ones(2))
  with pytest.raises(ValueError, match="at least as large"):
    jsig.convolve(jnp.ones((3, 1)), jnp.ones((2, 2)), mode="valid")
  with pytest.raises(ValueError, match="mode must be one of"):
    jsig.convolve(jnp.ones(3), jnp.ones(2), mode="foo")
  with pytest.raises(ValueError, match="method"):
    jsig.correlate(jnp.ones(3), jnp.ones(2), method="foo")
  with pytest.raises(ValueError, match="2-dimensional"):
    jsig.convolve2d(jnp.ones(3), jnp.ones(2))
  with pytest.raises(ValueError, match="boundary"):
    jsig.convolve2d(jnp.ones((3, 3)), jnp.ones((2, 2)), boundary="nope")
  with pytest.raises(TypeError):
    jsig.convolve([1., 2.], [1.])


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve2d_boundaries(mode):
  a, b = _rand((5, 6)), _rand((3, 2), seed=1)
  for boundary, fill in (("fill", 0), ("fill", 1.5), ("wrap", 0), ("symm", 0)):
    _close(_j(jsig.convolve2d, a, b, mode, boundary, fill),
           osp_signal.convolve2d(a, b, mode, boundary, fill))
    _close(_j(jsig.correlate2d, a, b, mode, boundary, fill),
           osp_signal.correlate2d(a, b, mode, boundary, fill))
  _close(_j(jsig.correlate2d, b, a, mode), osp_signal.correlate2d(b, a, mode))
  _close(_j(jsig.convolve2d, b, a, mode), osp_signal.convolve2d(b, a, mode))


def test_fftconvolve_axes():
  a, b = _rand((4, 7)), _rand((1, 3), seed=1)
  for mode in ("full", "same", "valid"):
    _close(_j(jsig.fftconvolve, a, b, mode, axes=1), osp_signal.fftconvolve(a, b, mode, axes=1))
    _close(_j(jsig.fftconvolve, a, b, mode, axes=[-1]),
           osp_signal.fftconvolve(a, b, mode, axes=[-1]))
  c = _rand((4, 3), seed=2)
  _close(_j(jsig.fftconvolve, a[:, :3], c, axes=0), osp_signal.fftconvolve(a[:, :3], c, axes=0))
  with pytest.raises(ValueError, match="incompatible shapes"):
    _j(jsig.fftconvolve, jnp.ones((2, 3)), jnp.ones((3, 3)), axes=1)


def test_convolve_float64(x64):
  x, k = _rand(9, np.float64), _rand(4, np.float64, seed=1)
  for mode in ("full", "same", "valid"):
    out = _j(jsig.convolve, x, k, mode)
    assert out.dtype == np.float64
    _close(out, osp_signal.convolve(x, k, mode), TOL64)
    _close(_j(jsig.fftconvolve, x, k, mode), osp_signal.fftconvolve(x, k, mode), TOL64)
    _close(_j(jsig.correlate2d, x[None], k[None], mode),
           osp_signal.correlate2d(x[None], k[None], mode), TOL64)


def test_convolve_jit_vmap_grad():
  x, k = _rand(8), _rand(3, seed=1)
  for mode in ("full", "same", "valid"):
    f = jit(lambda a, b, mode=mode: jsig.convolve(a, b, mode))
    _close(f(x, k), osp_signal.convolve(x, k, mode))
  xs = _rand((3, 8), seed=2)
  _close(vmap(lambda a: jsig.correlate(a, k, "same"))(xs),
         np.stack([osp_signal.correlate(r, k, "same") for r in xs]))
  _close(vmap(lambda a: jsig.fftconvolve(a, k))(xs),
         np.stack([osp_signal.fftconvolve(r, k) for r in xs]))
  check_grads(jit(lambda a, b: jsig.convolve(a, b, "same")), (x, k), order=2, atol=5e-2, rtol=5e-2)
  check_grads(jit(lambda a, b: jsig.fftconvolve(a, b)), (x, k), order=1, atol=5e-2, rtol=5e-2)
  check_grads(jit(lambda a, b: jsig.convolve2d(a, b, boundary="wrap")), (_rand((3, 4)),
              _rand((2, 2), seed=3)), order=1, atol=5e-2, rtol=5e-2)


# ---- detrend ----

def test_detrend():
  y = _rand((3, 20))
  _close(_j(jsig.detrend, y), osp_signal.detrend(y))
  _close(_j(jsig.detrend, y, bp=[5, 12]), osp_signal.detrend(y, bp=[5, 12]))
  _close(_j(jsig.detrend, y, axis=0), osp_signal.detrend(y, axis=0))
  _close(_j(jsig.detrend, y, type="constant", axis=0),
         osp_signal.detrend(y, type="constant", axis=0))
  assert _j(jsig.detrend, jnp.arange(5)).dtype == np.float32
  _close(jit(lambda v: jsig.detrend(v, bp=3))(y), osp_signal.detrend(y, bp=3))
  with pytest.raises(ValueError, match="type"):
    _j(jsig.detrend, y, type="quadratic")
  with pytest.raises(ValueError, match="breakpoints"):
    _j(jsig.detrend, y, bp=[30])


# ---- spectral analysis ----

WINDOWS = ["hann", "hamming", "boxcar", "blackman", "triang", "bartlett", "flattop", "parzen",
           "bohman", "blackmanharris", "nuttall", "cosine", "tukey", ("tukey", 0.3),
           ("kaiser", 5.0), ("gaussian", 2.0), "exponential"]


def test_window_table():
  from tracejax._src.scipy.signal import get_window
  for w in WINDOWS:
    for n in (7, 8):
      np.testing.assert_allclose(get_window(w, n), osp_signal.get_window(w, n), atol=1e-12)
  with pytest.raises(ValueError, match="Unknown window"):
    get_window("nope", 8)
  with pytest.raises(ValueError, match="needs one or more parameters"):
    get_window("kaiser", 8)


STFT_CASES = [dict(nperseg=16, noverlap=5, nfft=20),
              dict(nperseg=15, boundary="even", detrend="linear"),
              dict(nperseg=16, boundary=None, padded=False, window="hamming"),
              dict(nperseg=12, return_onesided=False, boundary="odd"),
              dict(nperseg=12, window=("kaiser", 4.0), boundary="constant")]


@pytest.mark.parametrize("kw", STFT_CASES, ids=range(len(STFT_CASES)))
def test_stft(kw):
  sig = _rand((2, 50))
  for got, want in zip(_j(jsig.stft, sig, **kw), osp_signal.stft(sig, **kw)):
    _close(got, want)
  if kw["nperseg"] == 15:
    got = _j(jsig.stft, sig.T, axis=0, **kw)
    for g, w in zip(got, osp_signal.stft(sig.T, axis=0, **kw)):
      _close(g, w)
    assert got[2].dtype == np.complex64 and got[0].dtype == np.float32


def test_stft_defaults_and_jit():
  sig = _rand(40)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")    # nperseg=256 > 40: both warn and use 40
    got, want = _j(jsig.stft, sig), osp_signal.stft(sig, nperseg=256)
  for g, w in zip(got, want):
    _close(g, w)
  f = jit(lambda s: jsig.stft(s, nperseg=8)[2])
  _close(f(sig), osp_signal.stft(sig, nperseg=8)[2])


PSD_CASES = [dict(nperseg=15, noverlap=4, window="hamming"),
             dict(nperseg=16, nfft=20, scaling="spectrum", detrend="linear"),
             dict(nperseg=16, average="median"), dict(nperseg=16, return_onesided=False),
             dict(window=np.hanning(10)), dict(nperseg=8, detrend=False, fs=10.0)]


@pytest.mark.parametrize("kw", PSD_CASES, ids=range(len(PSD_CASES)))
def test_welch_csd(kw):
  sig = _rand((2, 50))
  other = _rand((2, 50), seed=1)
  for got, want in zip(_j(jsig.welch, sig, **kw), osp_signal.welch(sig, **kw)):
    _close(got, want)
  for got, want in zip(_j(jsig.csd, sig, other, **kw), osp_signal.csd(sig, other, **kw)):
    _close(got, want)


def test_welch_axis_jit_vmap_x64(x64):
  sig = _rand((30, 3), np.float64)
  f, p = _j(jsig.welch, sig, nperseg=8, axis=0)
  ef, ep = osp_signal.welch(sig, nperseg=8, axis=0)
  assert p.dtype == np.float64
  _close(f, ef, TOL64)
  _close(p, ep, TOL64)
  got = jit(lambda s: jsig.csd(s, s[::-1], nperseg=8, axis=0)[1])(sig)
  _close(got, osp_signal.csd(sig, sig[::-1], nperseg=8, axis=0)[1], TOL64)
  rows = _rand((3, 32), np.float64)
  got = vmap(lambda r: jsig.welch(r, nperseg=8)[1])(rows)
  _close(got, np.stack([osp_signal.welch(r, nperseg=8)[1] for r in rows]), TOL64)


ISTFT_CASES = [dict(nperseg=16), dict(nperseg=16, noverlap=5, nfft=20), dict(nperseg=15),
               dict(nperseg=16, window="hamming", boundary=False)]


@pytest.mark.parametrize("kw", ISTFT_CASES, ids=range(len(ISTFT_CASES)))
def test_istft(kw):
  sig = _rand((2, 50))
  skw = {k: v for k, v in kw.items() if k != "boundary"}
  if kw.get("boundary") is False:
    skw["boundary"] = None
  Z = osp_signal.stft(sig, **skw)[2].astype(np.complex64)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")     # NOLA warnings, from both
    got, want = _j(jsig.istft, Z, **kw), osp_signal.istft(Z, **kw)
  for g, w in zip(got, want):
    _close(g, w)


def test_istft_roundtrip_axes_twosided():
  sig = _rand((3, 40))
  Z = _j(jsig.stft, sig, nperseg=8)[2]
  t, back = jit(lambda z: jsig.istft(z, nperseg=8))(Z)
  _close(back[:, :40], sig)
  Z2 = osp_signal.stft(sig, nperseg=8, return_onesided=False)[2].astype(np.complex64)
  for g, w in zip(_j(jsig.istft, Z2, nperseg=8, input_onesided=False),
                  osp_signal.istft(Z2, nperseg=8, input_onesided=False)):
    _close(g, w)
  Zt = np.moveaxis(osp_signal.stft(sig, nperseg=8)[2], 0, -1).astype(np.complex64)
  for g, w in zip(_j(jsig.istft, Zt, nperseg=8, time_axis=1, freq_axis=0),
                  osp_signal.istft(Zt, nperseg=8, time_axis=1, freq_axis=0)):
    _close(g, w)
  with pytest.raises(ValueError, match="at least 2d"):
    _j(jsig.istft, jnp.ones(4))
  with pytest.raises(ValueError, match="noverlap"):
    _j(jsig.istft, Z, nperseg=8, noverlap=8)


# ---- DCT ----

@pytest.mark.parametrize("type", [1, 2, 3, 4])
def test_dct_types(type):
  for n_in, norm, n in ((5, None, None), (8, None, 6), (5, None, 7), (8, "ortho", None),
                        (5, "ortho", 8), (8, "forward", None)):
    x = _rand((3, n_in))
    _close(_j(jfft.dct, x, type, n=n, norm=norm), osp_fft.dct(x, type, n=n, norm=norm))
    _close(_j(jfft.idct, x, type, n=n, norm=norm), osp_fft.idct(x, type, n=n, norm=norm))
  x = _rand((4, 3))
  _close(_j(jfft.dct, x, type, axis=0), osp_fft.dct(x, type, axis=0))


def test_dctn_and_errors():
  x = _rand((3, 4, 5))
  xc = _rand((3, 4, 5), np.complex64, seed=1)
  for kw in (dict(), dict(axes=(0, 2)), dict(s=(3, 7)), dict(s=(2, 6), axes=(1, 0)),
             dict(norm="ortho")):
    _close(_j(jfft.dctn, x, **kw), osp_fft.dctn(x, **kw))
    _close(_j(jfft.idctn, x, **kw), osp_fft.idctn(x, **kw))
    _close(_j(jfft.dctn, xc, **kw), osp_fft.dctn(xc, **kw))
  assert _j(jfft.dct, jnp.arange(4)).dtype == np.float32
  with pytest.raises(ValueError, match="type"):
    _j(jfft.dct, x, type=5)
  with pytest.raises(ValueError, match="norm"):
    _j(jfft.dct, x, norm="bad")
  with pytest.raises(ValueError, match="same length"):
    _j(jfft.dctn, x, s=(3, 5), axes=(0,))
  with pytest.raises(ValueError, match="at least 2"):
    _j(jfft.dct, jnp.ones(1), type=1)


def test_dct_x64_jit_vmap_grad(x64):
  x = _rand((2, 6), np.float64)
  _close(_j(jfft.dct, x, norm="ortho"), osp_fft.dct(x, norm="ortho"), TOL64)
  _close(jit(jfft.idctn)(x), osp_fft.idctn(x), TOL64)
  _close(vmap(lambda r: jfft.dct(r, 3))(x), np.stack([osp_fft.dct(r, 3) for r in x]), TOL64)
  check_grads(jit(lambda v: jfft.dct(v, norm="ortho")), (x,), order=1)   # linear
  check_grads(jit(lambda v: jfft.idctn(v, type=1)), (x,), order=1)


# ---- integrate ----

def test_trapezoid():
  y = _rand((3, 5))
  x = np.sort(_rand(5, seed=1))
  _close(_j(jintegrate.trapezoid, y), osp_integrate.trapezoid(y))
  _close(_j(jintegrate.trapezoid, y, x), osp_integrate.trapezoid(y, x))
  _close(_j(jintegrate.trapezoid, y, dx=0.3, axis=0), osp_integrate.trapezoid(y, dx=0.3, axis=0))
  xx = np.cumsum(np.abs(y), 1)
  _close(jit(jintegrate.trapezoid)(y, xx), osp_integrate.trapezoid(y, xx))
  check_grads(jit(lambda a, b: jintegrate.trapezoid(a, b)), (y, x), order=1, atol=2e-2, rtol=2e-2)
  with pytest.raises(ValueError, match="points"):
    _j(jintegrate.trapezoid, y, x[:3])
