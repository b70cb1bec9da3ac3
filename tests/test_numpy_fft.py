"""jax.numpy.fft: every function against NumPy, under jit, vmap and differentiation.

Values are compared with `numpy.fft` (complex64/float32 results with x64 off,
double precision with x64 on); derivatives with `check_grads` (forward and
reverse, order 2, float64 with x64 on for the test), including the real
transforms whose transposes are only real-linear; `vmap` against a Python loop.
Also: NumPy's argument handling (`n`/`s` crop and pad, `-1` in `s`, `axes`
in any order, more than three axes, `norm`), the dtype rules, the errors, and
the module paths (`jnp.fft`, `import tracejax.numpy.fft`, `jax.numpy.fft`
under `python -m tracejax run`).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tracejax.numpy as jnp
from tracejax._src.api import grad, make_jaxpr, vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def _rand(shape, kind="real", seed=0, dtype=None):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if kind == "complex":
    x = x + 1j * rng.standard_normal(shape)
  return x if dtype is None else x.astype(dtype)


def _close(got, want, tol=None):
  got = np.asarray(got)
  if tol is None:
    tol = 1e-10 if got.dtype in (F64, C128) else 3e-5 * max(1.0, np.abs(want).max())
  assert got.shape == np.shape(want), (got.shape, np.shape(want))
  np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# =============================================================================
# Values against NumPy
# =============================================================================

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
_REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}


def _input_for(name, shape, seed=0, dtype=np.float32):
  kind = "real" if name in _REAL_INPUT else "complex"
  return _rand(shape, kind, seed, dtype if kind == "real" else np.complex64)


@pytest.mark.parametrize("name", ONE_D)
def test_one_d_against_numpy(name):
  x = _input_for(name, (3, 6, 5))
  jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
  # default; n crops; n pads; another axis (negative); every norm.
  cases = [{}, {"n": 4}, {"n": 9}, {"axis": 1}, {"n": 7, "axis": -3},
           {"norm": "backward"}, {"norm": "ortho", "n": 8}, {"norm": "forward", "axis": 0}]
  for kw in cases:
    got, want = jf(x, **kw), nf(x, **kw)
    _close(got, want)
    want_dtype = F32 if name in ("irfft", "hfft") else C64
    assert got.dtype == want_dtype, (kw, got.dtype)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_n_d_against_numpy(name):
  x = _input_for(name, (4, 3, 6, 5))
  jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
  cases = [
      {},                                          # all four axes: two primitive groups
      {"axes": (1,)},
      {"axes": (0, 2)},
      {"axes": (2, 0)},                            # order matters for the real transforms
      {"axes": (-1, -2)},
      {"s": (5, 4), "axes": (1, 3)},               # pad one axis, crop another
      {"s": (4, 8)},                               # s alone: the last len(s) axes
      {"s": (-1, 3, -1), "axes": (0, 1, 3)},       # NumPy 2: -1 keeps the length
      {"axes": (3, 1, 0, 2), "norm": "ortho"},
      {"axes": (0, 1, 2), "norm": "forward", "s": (3, 3, 7)},
  ]
  for kw in cases:
    nkw = dict(kw, axes=(2, 3)) if "s" in kw and "axes" not in kw else kw
    _close(jf(x, **kw), nf(x, **nkw))


def test_five_axes_against_numpy():
  x = _rand((2, 3, 2, 4, 3), "real", 3, np.float32)
  c = _rand((2, 3, 2, 4, 3), "complex", 4, np.complex64)
  _close(jnp.fft.fftn(c), np.fft.fftn(c))
  _close(jnp.fft.ifftn(c, norm="ortho"), np.fft.ifftn(c, norm="ortho"))
  _close(jnp.fft.rfftn(x), np.fft.rfftn(x))
  _close(jnp.fft.irfftn(c, s=(2, 3, 2, 4, 5)), np.fft.irfftn(c, s=(2, 3, 2, 4, 5), axes=range(5)))
  _close(jnp.fft.rfftn(x, axes=(4, 0, 3, 1, 2)), np.fft.rfftn(x, axes=(4, 0, 3, 1, 2)))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_two_d_against_numpy(name):
  x = _input_for(name, (3, 4, 6))
  jf, nf = getattr(jnp.fft, name), getattr(np.fft, name)
  for kw in [{}, {"axes": (0, 2)}, {"axes": (2, 1)}, {"s": (5, 4)},
             {"s": (2, 6), "axes": (0, 1), "norm": "ortho"}, {"norm": "forward"}]:
    _close(jf(x, **kw), nf(x, **dict({"axes": (-2, -1)}, **kw)))


def test_round_trips():
  x = _rand((4, 6), "real", 1, np.float32)
  c = _rand((4, 6), "complex", 2, np.complex64)
  for norm in (None, "ortho", "forward"):
    _close(jnp.fft.ifft(jnp.fft.fft(c, norm=norm), norm=norm), c)
    _close(jnp.fft.irfft(jnp.fft.rfft(x, norm=norm), 6, norm=norm), x)
    _close(jnp.fft.irfftn(jnp.fft.rfftn(x, norm=norm), x.shape, norm=norm), x)
    _close(jnp.fft.ihfft(jnp.fft.hfft(c[:, :4], 6, norm=norm), norm=norm)[:, 1:3], c[:, 1:3])
  # odd lengths need the explicit n
  x5 = x[:, :5]
  _close(jnp.fft.irfft(jnp.fft.rfft(x5), n=5), x5)


def test_irfft_ignores_imaginary_dc_and_nyquist():
  c = np.array([1 + 5j, 2 - 1j, 3 + 7j], np.complex64)
  _close(jnp.fft.irfft(c), np.fft.irfft(c))
  _close(jnp.fft.irfft(c, n=5), np.fft.irfft(c, n=5))


def test_empty_axes_and_lists():
  x = np.arange(6.0).reshape(2, 3)
  out = jnp.fft.fftn(x, axes=())
  assert out.dtype == C64
  _close(out, x.astype(np.complex64))
  _close(jnp.fft.fft([1.0, 2.0, 3.0]), np.fft.fft([1.0, 2.0, 3.0]))


def test_fftfreq_rfftfreq():
  for n in (1, 4, 5):
    for d in (1.0, 0.1, 2):
      _close(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d), 1e-6)
      _close(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d), 1e-6)
  assert jnp.fft.fftfreq(4).dtype == F32
  assert jnp.fft.rfftfreq(5, dtype=np.float16).dtype == np.float16
  out = jnp.fft.fftfreq(5, 0.5, dtype=np.int32)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, np.trunc(np.fft.fftfreq(5, 0.5)).astype(np.int32))
  # a traced spacing
  f = jit(lambda d: jnp.fft.fftfreq(6, d))
  _close(f(np.float32(0.25)), np.fft.fftfreq(6, 0.25), 1e-6)
  g = grad(lambda d: jnp.fft.rfftfreq(6, d).sum())(np.float32(0.5))
  _close(g, -np.fft.rfftfreq(6, 1.0).sum() / 0.25, 1e-5)


def test_fftshift_ifftshift():
  x = np.arange(30).reshape(5, 6)
  for axes in (None, 0, 1, (1,), (0, 1), (-1, 0)):
    np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
  assert jnp.fft.fftshift(x).dtype == np.int32
  np.testing.assert_array_equal(jnp.fft.ifftshift(jnp.fft.fftshift(x)), x)
  y = jit(jnp.fft.fftshift)(x)
  np.testing.assert_array_equal(y, np.fft.fftshift(x))


# =============================================================================
# dtypes
# =============================================================================

def test_dtypes_x64_off():
  for dt in (np.int32, np.uint8, np.bool_, np.float16, np.float32, np.float64,
             np.complex128):
    x = np.ones(4, dt)
    assert jnp.fft.fft(x).dtype == C64, dt
    assert jnp.fft.ifftn(x).dtype == C64, dt
    assert jnp.fft.irfft(x).dtype == F32, dt
    assert jnp.fft.hfft(x).dtype == F32, dt
    if not np.issubdtype(dt, np.complexfloating):
      assert jnp.fft.rfft(x).dtype == C64, dt
      assert jnp.fft.ihfft(x).dtype == C64, dt
  with pytest.warns(UserWarning, match="float64"):
    assert jnp.fft.fftfreq(3, dtype=np.float64).dtype == F32
  assert jnp.fft.fft(jnp.fft.fftfreq(4)).dtype == C64


def test_dtypes_and_precision_x64(x64):
  x = _rand((3, 8), "real", 5)
  c = _rand((3, 8), "complex", 6)
  assert jnp.fft.fft(x).dtype == C128
  assert jnp.fft.fft(x.astype(np.float32)).dtype == C64
  assert jnp.fft.fft(np.arange(4)).dtype == C128          # ints: the default float's
  assert jnp.fft.rfft(x).dtype == C128
  assert jnp.fft.rfft(x.astype(np.float16)).dtype == C64
  assert jnp.fft.irfft(c).dtype == F64
  assert jnp.fft.irfft(c.astype(np.complex64)).dtype == F32
  assert jnp.fft.fftfreq(4).dtype == F64
  assert jnp.fft.fftfreq(4, dtype=np.float32).dtype == F32
  _close(jnp.fft.fftn(c, norm="ortho"), np.fft.fftn(c, norm="ortho"))
  _close(jnp.fft.irfftn(c, s=(4, 7)), np.fft.irfftn(c, s=(4, 7), axes=(0, 1)))
  _close(jnp.fft.hfft(c, 9, norm="forward"), np.fft.hfft(c, 9, norm="forward"))
  _close(jnp.fft.ihfft(x, 6, axis=0), np.fft.ihfft(x, 6, axis=0))
  _close(jnp.fft.fftfreq(7, 0.3), np.fft.fftfreq(7, 0.3))


# =============================================================================
# Errors
# =============================================================================

@pytest.mark.parametrize("fun, exc, match", [
    (lambda: jnp.fft.fft(np.ones(4), norm="bad"), ValueError, '"ortho"'),
    (lambda: jnp.fft.rfftn(np.ones(4), norm="Ortho"), ValueError, "norm"),
    (lambda: jnp.fft.hfft(np.ones(4), norm=1), ValueError, "backward"),
    (lambda: jnp.fft.fft(np.ones(4), n=0), ValueError, "at least 1"),
    (lambda: jnp.fft.irfft(np.ones(4), n=-1), ValueError, "at least 1"),
    # (irfft of one element is empty, as in JAX: tests/test_fuzz_finds_more.py)
    (lambda: jnp.fft.rfft(np.ones(0)), ValueError, r"\(0\)"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), s=(2, 0)), ValueError, r"\(0\)"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), s=(2, -3)), ValueError, r"\(-3\)"),
    (lambda: jnp.fft.fft(np.ones(4), n=2.5), TypeError, "n must be an integer"),
    (lambda: jnp.fft.fft(np.ones(4), axis=1), ValueError, "out of bounds"),
    (lambda: jnp.fft.fft(np.ones((4, 4)), axis=(0, 1)), ValueError, "fftn"),
    (lambda: jnp.fft.fft(3.0), ValueError, "out of bounds"),
    (lambda: jnp.fft.fftn(np.ones((4, 4)), axes=(0, 0)), ValueError, "repeated"),
    (lambda: jnp.fft.fftn(np.ones((4, 4)), axes=(0, 2)), ValueError, "out of bounds"),
    (lambda: jnp.fft.fftn(np.ones((4, 4)), axes=("a",)), TypeError, "axes"),
    (lambda: jnp.fft.fftn(np.ones((4, 4)), s=(2,), axes=(0, 1)), ValueError, "s and axes"),
    (lambda: jnp.fft.fftn(np.ones(4), s=(2, 2)), ValueError, "more entries"),
    (lambda: jnp.fft.rfft(np.ones(4, np.complex64)), TypeError, "real input"),
    (lambda: jnp.fft.rfftn(np.ones(4), axes=()), ValueError, "at least one axis"),
    (lambda: jnp.fft.fft("abc"), TypeError, "fft"),
    (lambda: jnp.fft.fftfreq(0), ValueError, "positive"),
    (lambda: jnp.fft.fftfreq([4]), ValueError, "only takes an int"),
    (lambda: jnp.fft.rfftfreq(4, d=[1.0, 2.0]), ValueError, "single value"),
], ids=lambda v: None)
def test_errors(fun, exc, match):
  with pytest.raises(exc, match=match):
    fun()


# =============================================================================
# jit, vmap, derivatives
# =============================================================================

def test_jit_matches_eager_and_jaxpr():
  x = _rand((2, 4, 6), "real", 7, np.float32)
  for f in (lambda x: jnp.fft.rfftn(x, s=(3, 8), norm="ortho"),
            lambda x: jnp.fft.irfft(jnp.fft.fft(x, axis=0), n=7, axis=1),
            lambda x: jnp.fft.hfft(x, 5)):
    _close(jit(f)(x), f(x), 1e-6)
  # All transformed axes already trailing, in order: convert + one fft, no transpose.
  text = str(make_jaxpr(jnp.fft.fftn)(x))
  assert text.count("fft[") == 1 and "transpose" not in text, text
  # The last axis is moved to the end and back around the primitive.
  text = str(make_jaxpr(lambda x: jnp.fft.fft(x, axis=0))(x))
  assert text.count("transpose") == 2 and "fft_lengths=(2,)" in text, text


@pytest.mark.parametrize("name, kw", [
    ("fft", {"axis": 0}), ("ifft", {"n": 5}), ("rfft", {"n": 7}), ("irfft", {"n": 6}),
    ("hfft", {"n": 5}), ("ihfft", {}), ("fftn", {"axes": (1, 0)}),
    ("rfftn", {"s": (3, 5)}), ("irfftn", {"axes": (1, 0)}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_vmap_against_loop(name, kw):
  f = lambda x: getattr(jnp.fft, name)(x, **kw)
  x = _input_for(name, (3, 4, 6), seed=8)
  for in_axis in (0, 2):
    got = vmap(f, in_axes=in_axis)(x)
    want = np.stack([np.asarray(f(np.take(x, i, in_axis))) for i in range(x.shape[in_axis])])
    _close(got, want, 1e-5 * max(1.0, np.abs(want).max()))


GRAD_CASES = [
    ("fft", {"n": 5}), ("ifft", {"norm": "ortho"}), ("rfft", {"n": 6}),
    ("rfft", {"n": 5, "norm": "forward"}), ("irfft", {}), ("irfft", {"n": 5}),
    ("hfft", {"n": 6, "norm": "ortho"}), ("ihfft", {"n": 5}),
    ("fftn", {"axes": (1, 0)}), ("fftn", {}),              # four axes: two groups
    ("rfftn", {"s": (3, 4)}), ("irfftn", {"axes": (0, 2)}), ("irfftn", {}),
]


@pytest.mark.parametrize("name, kw", GRAD_CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_grads(x64, name, kw):
  shape = (2, 2, 3, 4) if name in ("fftn", "irfftn") and not kw else (3, 4)
  if name in ("rfftn", "irfftn") and kw:
    shape = (3, 2, 4)
  x = _input_for(name, shape, seed=9, dtype=np.float64).astype(
      np.float64 if name in _REAL_INPUT else np.complex128)
  f = lambda x: getattr(jnp.fft, name)(x, **kw)
  check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_grad_of_real_loss_matches_closed_form(x64):
  # d/dx sum |rfft(x)|^2 for the full spectrum is 2 n x (Parseval); with rfft's half
  # spectrum the interior frequencies count once: check against a dense Jacobian.
  x = _rand((6,), "real", 10)
  w = np.ones(4)
  loss = lambda x: jnp.sum(w * jnp.abs(jnp.fft.rfft(x)) ** 2)
  m = np.fft.rfft(np.eye(6), axis=0)  # (4, 6): rfft as a matrix
  want = 2 * (np.conj(m).T @ (w * (m @ x))).real
  _close(grad(loss)(x), want)
  # through irfft: loss = sum(irfft(c) * t) with complex c
  c = _rand((4,), "complex", 11)
  t = _rand((6,), "real", 12)
  g = grad(lambda c: jnp.sum(jnp.fft.irfft(c, 6) * t))(c)
  eps, num = 1e-6, []
  for k in range(4):
    for unit in (1.0, 1j):
      dc = np.zeros(4, complex)
      dc[k] = unit * eps
      num.append((np.sum(np.fft.irfft(c + dc, 6) * t) - np.sum(np.fft.irfft(c - dc, 6) * t))
                 / (2 * eps))
  # JAX's convention for a real function L of a complex z: grad(L)(z) = dL/dRe - i dL/dIm.
  num = np.array(num).reshape(4, 2)
  _close(np.asarray(g).real, num[:, 0], 1e-6)
  _close(-np.asarray(g).imag, num[:, 1], 1e-6)


def test_real_function_through_complex_ffts_has_the_real_gradient(x64):
  # The seed's point about non-holomorphic primitives: a real-to-real function that
  # uses FFTs inside (a circular convolution) has the gradient of its real-only form.
  x, k = _rand((7,), "real", 13), _rand((7,), "real", 14)
  direct = lambda x: jnp.sum(sum(k[j] * jnp.roll(x, j) for j in range(7)) ** 3)
  via_rfft = lambda x: jnp.sum(jnp.fft.irfft(jnp.fft.rfft(x) * jnp.fft.rfft(k), 7) ** 3)
  via_fft = lambda x: jnp.sum(jnp.real(jnp.fft.ifft(jnp.fft.fft(x) * np.fft.fft(k))) ** 3)
  want = grad(direct)(x)
  _close(grad(via_rfft)(x), want)
  _close(grad(via_fft)(x), want)
  # second order, under jit
  second = lambda f: jit(grad(lambda t: grad(f)(x * t).sum()))(1.0)
  _close(second(via_rfft), second(direct))


# =============================================================================
# Module paths
# =============================================================================

def test_module_paths():
  import importlib
  import tracejax.numpy.fft as mod
  from tracejax.numpy import fft as mod2
  assert mod is mod2 is jnp.fft is importlib.import_module("tracejax.numpy.fft")
  for name in ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
               "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq",
               "fftshift", "ifftshift"]:
    f = getattr(jnp.fft, name)
    assert callable(f) and f.__doc__ and "Example" in f.__doc__, name


def test_through_jax_alias(tmp_path):
  script = tmp_path / "use_fft.py"
  script.write_text(
      "import numpy as np\n"
      "import jax\n"
      "import jax.numpy as jnp\n"
      "import jax.numpy.fft\n"
      "from jax.numpy import fft as F\n"
      "x = np.arange(8.0)\n"
      "y = jax.jit(lambda x: jnp.fft.irfft(F.rfft(x), 8))(x)\n"
      "assert np.allclose(np.asarray(y), x, atol=1e-5)\n"
      "assert np.allclose(np.asarray(jax.numpy.fft.fft(x)), np.fft.fft(x), atol=1e-4)\n"
      "print('ok', type(jnp.fft).__name__)\n")
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  proc = subprocess.run([sys.executable, "-m", "tracejax", "run", str(script)], env=env,
                        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "ok module" in proc.stdout


def test_docstring_examples():
  import doctest
  from tracejax._src.numpy import fft as fft_impl
  result = doctest.testmod(fft_impl, extraglobs={"jnp": jnp},
                           optionflags=doctest.NORMALIZE_WHITESPACE)
  assert result.attempted >= 18 and result.failed == 0, result
