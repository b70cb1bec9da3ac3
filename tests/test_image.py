"""Tests of `tracejax.image`: `resize` and `scale_and_translate` against values
recorded from real JAX 0.10.2, plus jit, vmap and gradients.

The expected arrays below were computed with JAX 0.10.2 (`/work/jaxvenv`,
`jax.image.resize(x, shape, method, antialias=...)` on the `_X` below, CPU) and
rounded to 5 decimals.
"""
import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import image
from tracejax._src.test_util import check_grads

_X = (np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5 / 3).astype(np.float32)

# (method, output shape, antialias, expected): recorded from JAX 0.10.2.
_CASES = [
    ('nearest', (5, 7), True,
      [[0.00000, 0.00000, 0.33333, 0.94281, 0.94281, 1.73205, 1.73205],
       [0.00000, 0.00000, 0.33333, 0.94281, 0.94281, 1.73205, 1.73205],
       [2.66667, 2.66667, 3.72678, 4.89898, 4.89898, 6.17342, 6.17342],
       [7.54247, 7.54247, 9.00000, 10.54092, 10.54092, 12.16096, 12.16096],
       [7.54247, 7.54247, 9.00000, 10.54092, 10.54092, 12.16096, 12.16096]]),
    ('linear', (5, 7), True,
      [[0.00000, 0.11905, 0.30952, 0.63807, 0.99918, 1.45018, 1.73205],
       [1.06667, 1.28954, 1.64614, 2.10799, 2.59552, 3.15741, 3.50860],
       [2.66667, 3.04528, 3.65106, 4.31288, 4.99001, 5.71826, 6.17342],
       [5.59215, 6.05592, 6.79796, 7.58743, 8.38999, 9.23673, 9.76594],
       [7.54247, 8.06302, 8.89589, 9.77046, 10.65664, 11.58238, 12.16096]]),
    ('cubic', (2, 3), True,
      [[0.83347, 1.69181, 2.85760],
       [6.19433, 8.00219, 9.95079]]),
    ('lanczos3', (2, 3), False,
      [[0.22179, 0.92104, 2.10496],
       [6.92484, 8.96494, 11.18881]]),
    ('lanczos5', (6, 2), True,
      [[0.24327, 1.32185],
       [0.18305, 1.45825],
       [1.53517, 3.39727],
       [5.12046, 7.81399],
       [7.70956, 10.73018],
       [8.60232, 11.61940]]),
    ('cubic-pytorch', (5, 3), False,
      [[-0.22782, 0.24037, 1.20874],
       [0.75390, 1.63665, 2.90139],
       [2.79846, 4.29279, 6.01086],
       [6.01225, 7.90202, 9.96426],
       [8.19784, 10.27962, 12.52586]]),
    ('cubic-pytorch', (2, 6), True,
      [[0.69985, 0.95993, 1.42659, 1.95739, 2.64769, 3.10808],
       [5.85468, 6.49314, 7.52405, 8.48050, 9.61378, 10.34393]]),
    ('area', (2, 2), True,
      [[1.17669, 2.73702],
       [6.57973, 9.41269]]),
    ('area', (6, 5), True,
      [[0.00000, 0.25000, 0.63807, 1.14012, 1.73205],
       [0.00000, 0.25000, 0.63807, 1.14012, 1.73205],
       [2.66667, 3.46175, 4.31288, 5.21759, 6.17342],
       [2.66667, 3.46175, 4.31288, 5.21759, 6.17342],
       [7.54247, 8.63562, 9.77046, 10.94593, 12.16096],
       [7.54247, 8.63562, 9.77046, 10.94593, 12.16096]]),
    ('linear', (2, 3), False,
      [[0.75250, 1.55677, 2.69064],
       [6.54988, 8.40607, 10.40847]]),
]

# scale_and_translate(_X, (5, 6), (0, 1), [1.5, 1.3], [0.2, -0.7], "linear") and
# scale_and_translate(_X, (4, 3), (0, 1), [0.9, 0.6], [0.5, 0.3], "cubic",
# antialias=False), recorded from JAX 0.10.2.
_SAT = [[0.14103, 0.45054, 0.91937, 1.51956, 1.73205, 0.00000],
       [1.23155, 1.73448, 2.36203, 3.10017, 3.36055, 0.00000],
       [3.28331, 4.13034, 5.04149, 6.02678, 6.37300, 0.00000],
       [6.64594, 7.69309, 8.79333, 9.95645, 10.36470, 0.00000],
       [8.15912, 9.29633, 10.48166, 11.72480, 12.16096, 0.00000]]
_SAT2 = [[-0.34929, 0.14834, 1.22481],
       [1.23728, 2.47902, 4.09264],
       [6.46010, 8.66875, 11.07687],
       [0.00000, 0.00000, 0.00000]]


@pytest.mark.parametrize("method,shape,antialias,want", _CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in _CASES])
def test_resize_matches_jax(method, shape, antialias, want):
  got = image.resize(_X, shape, method, antialias=antialias)
  assert got.shape == shape and got.dtype == np.float32
  np.testing.assert_allclose(np.asarray(got), np.array(want), atol=2e-5, rtol=1e-5)


def test_scale_and_translate_matches_jax():
  got = image.scale_and_translate(_X, (5, 6), (0, 1), jnp.array([1.5, 1.3]),
                                  jnp.array([0.2, -0.7]), "linear")
  np.testing.assert_allclose(np.asarray(got), np.array(_SAT), atol=2e-5, rtol=1e-5)
  got = image.scale_and_translate(_X, (4, 3), (0, 1), jnp.array([0.9, 0.6]),
                                  jnp.array([0.5, 0.3]), "cubic", antialias=False)
  np.testing.assert_allclose(np.asarray(got), np.array(_SAT2), atol=2e-5, rtol=1e-5)


def test_linear_upsample_by_hand():
  # Output centers of a 2x upsample map to input coordinates -0.25, 0.25, 0.75,
  # 1.25; the triangle kernel, renormalized at the borders, gives these weights.
  got = image.resize(jnp.array([0.0, 4.0]), (4,), "bilinear")
  np.testing.assert_allclose(np.asarray(got), [0.0, 1.0, 3.0, 4.0], atol=1e-6)
  # Antialiased 2x downsample with the triangle kernel stretched to radius 2.
  x = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
  w = np.array([[0.75, 0.75, 0.25, 0.0], [0.0, 0.25, 0.75, 0.75]])
  want = (w / w.sum(1, keepdims=True)) @ x
  np.testing.assert_allclose(np.asarray(image.resize(x, (2,), "linear")), want, atol=1e-6)


def test_method_names_and_dtypes():
  M = image.ResizeMethod
  assert M.from_string("trilinear") is M.LINEAR and M.from_string("tricubic") is M.CUBIC
  assert M.from_string("bicubic-pytorch") is M.CUBIC_PYTORCH
  x = jnp.arange(4, dtype=jnp.int32)
  assert image.resize(x, (8,), "nearest").dtype == np.int32
  lin = image.resize(x, (7,), "linear")
  assert lin.dtype == np.float32
  # Recorded from JAX 0.10.2.
  np.testing.assert_allclose(np.asarray(lin), [0.0, 0.357143, 0.928571, 1.5, 2.071429,
                                               2.642857, 3.0], atol=1e-5)
  assert image.resize(jnp.ones(4, jnp.bfloat16), (7,), "linear").dtype == jnp.bfloat16
  assert image.resize(jnp.ones((2, 3, 4, 1)), (2, 5, 6, 1), M.LINEAR).shape == (2, 5, 6, 1)


def test_errors():
  with pytest.raises(ValueError, match="shape must have length"):
    image.resize(_X, (5,), "linear")
  with pytest.raises(ValueError, match="Unknown resize method"):
    image.resize(_X, (5, 5), "foo")
  with pytest.raises(ValueError, match="Nearest neighbor"):
    image.scale_and_translate(_X, (5, 6), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")
  with pytest.raises(ValueError, match="scale and translation"):
    image.scale_and_translate(_X, (5, 6), (0, 1), jnp.ones(3), jnp.zeros(2), "linear")


def test_jit_and_vmap():
  f = lambda x: image.resize(x, (5, 7), "cubic")
  np.testing.assert_allclose(np.asarray(tracejax.jit(f)(_X)), np.asarray(f(_X)), atol=1e-6)
  xs = np.stack([_X, 2 * _X + 1])
  got = tracejax.vmap(f)(xs)
  want = np.stack([np.asarray(f(x)) for x in xs])
  np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)
  # Traced scale and translation.
  g = lambda s, t: image.scale_and_translate(_X, (4, 4), (0, 1), s, t, "linear")
  s, t = jnp.array([1.2, 0.8]), jnp.array([0.1, 0.3])
  np.testing.assert_allclose(np.asarray(tracejax.jit(g)(s, t)), np.asarray(g(s, t)),
                             atol=1e-6)


def test_grads(x64):
  x = np.random.RandomState(0).randn(3, 4)
  check_grads(lambda x: image.resize(x, (5,), "lanczos3"), (x[0, :3],), order=2,
              modes=("fwd", "rev"))
  check_grads(lambda x: image.resize(x, (2, 3), "linear"), (x,), order=1,
              modes=("fwd", "rev"))
  check_grads(lambda s: image.scale_and_translate(x, (4, 4), (0, 1), s,
                                                  jnp.array([0.1, 0.2]), "cubic"),
              (np.array([1.3, 0.9]),), order=1, modes=("fwd", "rev"))
