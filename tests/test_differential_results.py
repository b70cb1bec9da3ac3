"""Regression tests for issue 13, items 1-10 and 14: programs whose results differed
from JAX 0.10.2's.

Every expected value below was produced by JAX 0.10.2 (run separately, on CPU) and is
recorded here as a literal; JAX is never imported by the tests.
"""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.test_util import check_grads


@pytest.fixture
def x64():
  old = config.jax_enable_x64
  config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


def _eq(x, expected, dtype=None):
  x = np.asarray(x)
  np.testing.assert_array_equal(x, np.asarray(expected))
  if dtype is not None:
    assert x.dtype == np.dtype(dtype), (x.dtype, dtype)


# ---- 1. where / nonzero / argwhere with size= under jit, vmap and grad ----

def test_where_nonzero_argwhere_size_under_transformations():
  x = jnp.array([0., 1., 0., 2.])
  # JAX: (Array([ 1,  3, -1], dtype=int32),)
  _eq(jax.jit(lambda x: jnp.where(x > 0, size=3, fill_value=-1))(x)[0], [1, 3, -1], "int32")
  # JAX: [[1, 3, 0], [0, 2, 0]]
  xs = jnp.stack([x, x[::-1]])
  _eq(jax.vmap(lambda x: jnp.nonzero(x, size=3))(xs)[0], [[1, 3, 0], [0, 2, 0]])
  # JAX: [[[1], [3], [0]], [[0], [2], [0]]]
  _eq(jax.vmap(lambda x: jnp.argwhere(x, size=3))(xs), [[[1], [3], [0]], [[0], [2], [0]]])
  _eq(jax.jit(lambda x: jnp.argwhere(x, size=3))(x), [[1], [3], [0]])
  # JAX: grad -> [1., 1., 0., 1.] (the fill index 0 is gathered once)
  g = jax.grad(lambda x: jnp.sum(x[jnp.nonzero(x, size=3)]))(x)
  _eq(g, [1., 1., 0., 1.])
  g = jax.jit(jax.grad(lambda x: jnp.sum(x[jnp.where(x > 0, size=3, fill_value=0)[0]])))(x)
  _eq(g, [1., 1., 0., 1.])


# ---- 2. float0 tangents of integer outputs never reach XLA ----

def test_jacfwd_and_vmap_jvp_of_integer_outputs():
  x = jnp.array([0., 1., 0., 2.])
  # JAX: jacfwd of an int32 output is int32 zeros of shape out + in.
  j = jax.jacfwd(lambda x: (x * 2).astype(jnp.int32))(x)
  _eq(j, np.zeros((4, 4), np.int32), "int32")
  a, b = jax.jacfwd(lambda x: (x.sum(), jnp.round(x).astype(jnp.int32)))(x)
  _eq(a, [1., 1., 1., 1.], "float32")
  _eq(b, np.zeros((4, 4), np.int32), "int32")
  # JAX: vmap(jvp) gives float0 tangents of shape (4,) (a host array of no data).
  p, t = jax.vmap(lambda t: jax.jvp(jnp.argmax, (x,), (t,)))(jnp.eye(4))
  _eq(p, [3, 3, 3, 3])
  assert t.dtype == dtypes.float0 and t.shape == (4,)
  _, t = jax.vmap(lambda t: jax.jvp(lambda x: x > 0, (x,), (t,)), out_axes=1)(jnp.eye(4))
  assert t.dtype == dtypes.float0 and t.shape == (4, 4)


def test_vjp_with_integer_inputs_gives_float0():
  # JAX: (float0 zeros,) and (float0 zeros, Array(9.)) -- no operation sees the float0
  ct, = jax.vjp(lambda x: x * 2, 3)[1](3)
  assert ct.dtype == dtypes.float0 and ct.shape == ()
  ct_x, ct_y = jax.vjp(lambda x, y: x * y, 3, 2.)[1](3.)
  assert ct_x.dtype == dtypes.float0
  _eq(ct_y, 9.)
  _eq(jax.grad(lambda x, y: (x * y).astype(float), argnums=1)(3, 2.), 3.)


# ---- 3. scan with length 0, map over an empty axis ----

def test_scan_length_zero_and_map_empty():
  c, ys = lax.scan(lambda c, x: (c + 1., c * 2.), 1., None, length=0)
  # JAX: (Array(1., weak_type=True), Array([], shape=(0,), dtype=float32, weak_type=True))
  _eq(c, 1.)
  assert ys.shape == (0,) and ys.dtype == np.float32
  c, ys = jax.jit(lambda c: lax.scan(lambda c, x: (c + 1., c * 2.), c, None, length=0))(1.)
  _eq(c, 1.)
  assert ys.shape == (0,)
  _eq(jax.grad(lambda c: lax.scan(lambda c, x: (c * 2., c), c, jnp.zeros((0,)))[0])(1.), 1.)
  out = lax.map(lambda x: x * 2, jnp.zeros((0, 3)))
  assert out.shape == (0, 3)
  out = jax.vmap(lambda y: lax.map(lambda x: x * 2, y))(jnp.zeros((2, 0, 3)))
  assert out.shape == (2, 0, 3)


# ---- 4. floor_divide by zero ----

def test_floor_divide_by_zero():
  # JAX: [inf, -inf, nan]; by -0.: [-inf, inf]; divmod's remainder: nan
  _eq(jnp.floor_divide(jnp.array([1., -1., 0.]), 0.), [np.inf, -np.inf, np.nan])
  _eq(jnp.array([1., -1., 0.]) // 0., [np.inf, -np.inf, np.nan])
  _eq(jnp.floor_divide(jnp.array([1., -1.]), -0.), [-np.inf, np.inf])
  q, r = jnp.divmod(jnp.array([1., -1., 0.]), 0.)
  _eq(q, [np.inf, -np.inf, np.nan])
  _eq(r, [np.nan, np.nan, np.nan])
  # JAX (integers: XLA's division by zero, then the floor correction): [-2, -2, -1, -2]
  _eq(jnp.floor_divide(jnp.array([1, -1, 0, 7]), 0), [-2, -2, -1, -2])
  _eq(jnp.floor_divide(jnp.array([7], jnp.uint8), jnp.array([0], jnp.uint8)), [255])
  # Unchanged elsewhere: JAX [nan, 0.] and [3, -4, -4, 3]
  _eq(jnp.floor_divide(jnp.array([np.inf, 1.]), jnp.array([2., np.inf])), [np.nan, 0.])
  _eq(jnp.floor_divide(jnp.array([7, -7, 7, -7]), jnp.array([2, 2, -2, -2])), [3, -4, -4, 3])
  _eq(jax.jit(jnp.floor_divide)(jnp.array([3., -3.]), jnp.array([0., 2.])), [np.inf, -2.])


# ---- 5 (and 14). gather/scatter out-of-bounds indices ----

def test_gather_out_of_bounds_gradient_is_dropped():
  ones = jnp.ones((2, 3))
  # JAX: forward clamps ([[0, 1], [3, 4]]), the gradient drops the bad index.
  _eq(jnp.arange(6.).reshape(2, 3)[..., jnp.array([-4, 1])], [[0., 1.], [3., 4.]])
  _eq(jax.grad(lambda x: jnp.sum(x[..., jnp.array([-4, 1])]))(ones), [[0., 1., 0.]] * 2)
  _eq(jax.grad(lambda x: jnp.sum(x[..., [-4, 1]]))(ones), [[0., 1., 0.]] * 2)
  o = jnp.ones(3)
  _eq(jax.grad(lambda x: x[jnp.array([-5, 7, -1])].sum())(o), [0., 0., 1.])
  _eq(jax.grad(lambda x: x.at[jnp.array([-5, 1])].get().sum())(o), [0., 1., 0.])
  g = jax.grad(lambda x: jax.vmap(lambda r: r[jnp.array([-5, 1])])(x).sum())(ones)
  _eq(g, [[0., 1., 0.]] * 2)
  g = jax.grad(lambda x: x[jnp.array([5, -1]), jnp.array([0, 9])].sum())(ones)
  _eq(g, np.zeros((2, 3)))
  _eq(jax.grad(lambda x: x[1:, jnp.array([-4, 2])].sum())(ones), [[0., 0., 0.], [0., 0., 1.]])
  # JVP agrees with the forward: JAX [[1, 1], [1, 1]] for both
  p, t = jax.jvp(lambda x: x[..., jnp.array([-4, 1])], (ones,), (ones,))
  _eq(t, np.ones((2, 2)))


def test_scatter_static_negative_out_of_bounds_is_dropped():
  # JAX: [0., 0., 0.] (-5 counts from the end once: -2, out of bounds, dropped)
  _eq(jnp.zeros(3).at[-5].set(1.), [0., 0., 0.])
  _eq(jnp.zeros(3).at[-5].add(1.), [0., 0., 0.])
  _eq(jnp.zeros((3, 2)).at[-5, 1].set(1.), np.zeros((3, 2)))
  _eq(jnp.zeros(3).at[-1].set(1.), [0., 0., 1.])
  _eq(jnp.zeros(3).at[jnp.array([-5, 3, -1])].add(1.), [0., 0., 1.])
  _eq(jax.jit(lambda x, i: x.at[i].set(1.))(jnp.zeros(3), -5), [0., 0., 0.])
  # JAX: fill mode reads the fill value for -5: -9.
  _eq(jnp.arange(3.).at[-5].get(mode="fill", fill_value=-9.), -9.)
  _eq(jnp.arange(3.).at[-3].get(mode="fill", fill_value=-9.), 0.)
  # JAX: the update at a dropped index gets no gradient: 0.
  _eq(jax.grad(lambda y: jnp.zeros(3).at[-5].set(y).sum())(1.), 0.)


# ---- 6. complex ordering ----

def test_complex_ordering_is_lexicographic():
  c = jnp.array([1 + 2j, 1 + 1j, 0 + 5j, 2 - 1j])
  d = jnp.array([1 + 1j, 1 + 2j, 0 + 5j, 1 + 9j])
  # JAX values:
  _eq(c > d, [True, False, False, True])
  _eq(c < d, [False, True, False, False])
  _eq(c >= d, [True, False, True, True])
  _eq(c <= d, [False, True, True, False])
  _eq(jax.jit(lambda a, b: a > b)(c, d), [True, False, False, True])
  _eq(jnp.maximum(c, d), [1 + 2j, 1 + 2j, 5j, 2 - 1j])
  _eq(jnp.minimum(c, d), [1 + 1j, 1 + 1j, 5j, 1 + 9j])
  _eq(lax.max(c, d), [1 + 2j, 1 + 2j, 5j, 2 - 1j])
  _eq(jnp.sort(c), [5j, 1 + 1j, 1 + 2j, 2 - 1j])
  _eq(jnp.argsort(c), [2, 1, 0, 3])
  _eq(jnp.max(c), 2 - 1j)
  _eq(jnp.min(c), 5j)
  _eq(jax.nn.relu(c), c)
  np.testing.assert_allclose(
      jax.nn.elu(jnp.array([1 + 2j, -1 + 1j, 0 - 1j])),
      [1 + 2j, -0.8012339 + 0.30955988j, -0.45969772 - 0.84147096j], rtol=1e-6)
  # JAX raises for these: argmax/argmin and lax.gt on complex, and clip
  with pytest.raises(TypeError):
    jnp.argmax(c)
  with pytest.raises(TypeError):
    lax.gt(c, d)
  with pytest.raises(ValueError, match="complex"):
    jnp.clip(c, 1 + 0j, 1 + 5j)
  with pytest.raises(ValueError, match="complex"):
    jnp.clip(jnp.array([1.]), 0j)


# ---- 7. reverse mode through while_loop / comparisons that need no gradient ----

def _loop(x):
  return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2.), (0, x))


def test_grad_ignores_while_loop_without_cotangent():
  # JAX: 3. for all three
  _eq(jax.grad(lambda x: x * 3. + 0 * _loop(x)[0])(1.), 3.)
  _eq(jax.grad(lambda x: (_loop(x), x * 3.)[1])(1.), 3.)
  _eq(jax.jit(jax.grad(lambda x: x * 3. + _loop(x)[0]))(1.), 3.)
  x = jnp.array([1., 2., 0.])
  # JAX: [3., 3., 3.] (the loop's result is a stop_gradient constant)
  f = lambda x: jnp.sum(lax.stop_gradient(
      lax.while_loop(lambda c: c < 3., lambda c: c + 1., x[0])) * x)
  _eq(jax.grad(f)(x), [3., 3., 3.])
  _eq(jax.grad(lambda x: jnp.sum(jnp.where(x != 1., x, 0.)))(jnp.arange(3.)), [1., 0., 1.])
  _eq(jax.grad(lambda x: (x != 1.).astype(float).sum() + x.sum())(jnp.arange(3.)), [1.] * 3)
  # A cotangent that really flows through the loop is still an error (JAX too).
  with pytest.raises(ValueError, match="Reverse-mode differentiation"):
    jax.grad(lambda x: _loop(x)[1])(1.)
  # Forward mode through the loop is unchanged: d/dx (x * 2**3) = 8
  _eq(jax.jvp(lambda x: _loop(x)[1], (1.,), (1.,))[1], 8.)
  check_grads(lambda x: x * 3. + _loop(x)[1] * 0., (1.5,), order=1, modes=("fwd",))


# ---- 8. x64: int/bool inputs of inexact functions ----

def test_inexact_dtype_of_int_and_bool_inputs_x64(x64):
  b, i32, i8, i64 = (jnp.array([True, False]), jnp.array([1, 2], jnp.int32),
                     jnp.array([1, 2], jnp.int8), jnp.array([1, 2], jnp.int64))
  # JAX 0.10.2 with x64: bool and ints of <= 32 bits -> float32, int64 -> float64
  for a, want in [(b, np.float32), (i32, np.float32), (i8, np.float32), (i64, np.float64)]:
    for f in (jnp.mean, jnp.arcsin, jnp.sin, jnp.sqrt, jnp.var, jnp.std, jnp.median,
              jnp.average, jnp.nanmean, jnp.reciprocal):
      assert f(a).dtype == want, (f, a.dtype)
    for f in (jnp.true_divide, jnp.arctan2, jnp.hypot, jnp.logaddexp, jnp.float_power):
      assert f(a, a).dtype == want, (f, a.dtype)
    assert (a / a).dtype == want
    assert jnp.quantile(a, 0.5).dtype == want
    # (0 and a bool array promote to the weak int64 first: float64 in JAX)
    assert jnp.linspace(0, a, 3).dtype == (np.float64 if a.dtype == np.bool_ else want)
    assert jnp.linspace(0., a, 3).dtype == np.float64
  # int32 / 2 is float32, but int32 * 1.5 is the weak float's float64 (JAX)
  assert (i32 / 2).dtype == np.float32
  assert (i32 * 1.5).dtype == np.float64
  # A float32 array with a float64 q stays float32 (JAX)
  assert jnp.quantile(jnp.array([1., 2.], jnp.float32), jnp.array(0.5)).dtype == np.float32
  # Python ints: weak float64
  r = jnp.sin(3)
  assert r.dtype == np.float64 and r.weak_type
  assert jnp.linspace(1, 3, 3).dtype == np.float64
  assert jnp.mean(True).dtype == np.float32


# ---- 9. pad mean of bools, cumulative_sum, list/array indices with ..., diff, ... ----

def test_misc_results_match_jax():
  # JAX (and NumPy): a bool mean is not rounded
  _eq(jnp.pad(jnp.array([[True, False], [False, False]]), 1, mode="mean"),
      [[True, True, False, True], [True, True, False, True],
       [False, False, False, False], [True, True, False, True]])
  _eq(jnp.pad(jnp.array([1, 2, 4]), 1, mode="mean"), [2, 1, 2, 4, 2])
  _eq(jnp.cumulative_sum(jnp.array([[1, 2, 3], [4, 5, 6]]), axis=1, include_initial=True),
      [[0, 1, 3, 6], [0, 4, 9, 15]])
  x = jnp.arange(12.).reshape(3, 4)
  _eq(x.at[[0, 2], ...].set(-1.), [[-1.] * 4, [4., 5., 6., 7.], [-1.] * 4])
  _eq(x.at[[0, 2], ...].get(), [[0., 1., 2., 3.], [8., 9., 10., 11.]])
  _eq(x[np.array([0, 2]), ...], [[0., 1., 2., 3.], [8., 9., 10., 11.]])
  _eq(x[np.array([True, False, True]), ...], [[0., 1., 2., 3.], [8., 9., 10., 11.]])
  _eq(x.at[np.array([0, 0]), ...].add(1.), [[2., 3., 4., 5.], [4., 5., 6., 7.],
                                            [8., 9., 10., 11.]])
  assert x[np.array([[0], [2]]), ...].shape == (2, 1, 4)
  # JAX: empty results
  for r, shape in [(jnp.diff(jnp.arange(3.), n=5), (0,)),
                   (jnp.diff(jnp.ones((2, 3)), n=4, axis=0), (0, 3)),
                   (jnp.diff(jnp.arange(3.), n=5, prepend=0.), (0,)),
                   (jax.nn.softmax(jnp.zeros((2, 0))), (2, 0)),
                   (jax.nn.softmax(jnp.zeros((0, 3)), axis=0), (0, 3)),
                   (jax.nn.log_softmax(jnp.zeros((2, 0))), (2, 0)),
                   (jax.nn.softmax(jnp.zeros((0,), jnp.int32)), (0,)),
                   (jax.nn.log_softmax(jnp.zeros((0,), jnp.int32)), (0,)),
                   (jax.grad(lambda x: jax.nn.softmax(x).sum())(jnp.zeros((0,))), (0,))]:
    assert r.shape == shape
  assert jnp.diff(jnp.arange(3), n=5).dtype == np.int32
  np.testing.assert_allclose(jax.nn.softmax(jnp.array([1, 2])), [0.26894143, 0.7310586],
                             rtol=1e-6)
  # JAX (eager): nan -> 0, inf and 1e10 saturate, 2.7 truncates, ints wrap
  _eq(jnp.full_like(jnp.array([1, 2]), jnp.nan), [0, 0], "int32")
  _eq(jnp.full_like(jnp.array([1, 2]), jnp.inf), [2147483647] * 2)
  _eq(jnp.full_like(jnp.array([1, 2]), 2.7), [2, 2])
  _eq(jnp.full((2,), jnp.nan, dtype=jnp.int32), [0, 0])
  _eq(jnp.full_like(jnp.array([1], jnp.uint8), -1), [255])
  _eq(jnp.full_like(jnp.array([1], jnp.int8), 300), [44])
  _eq(jnp.full_like(jnp.array([1]), 1e10), [2147483647])


# ---- 10. weak types ----

def _weak(x):
  return dtypes.is_weakly_typed(x)


def test_weak_types_match_jax():
  w = jnp.asarray(2.5) * 1.   # a weak float32 array
  # JAX: weak results for these functions of Python scalars / weak arrays
  for f in (jnp.exp2, jnp.deg2rad, jnp.rad2deg, jnp.radians, jnp.degrees, jnp.sinc):
    for a in (3, 2.5, w):
      assert _weak(f(a)), f
  for f in (jnp.hypot, jnp.heaviside, jnp.floor_divide):
    assert _weak(f(2.5, 2.5)) and _weak(f(w, w)), f
  assert _weak(jnp.floor_divide(3, 3)) and _weak(jnp.lcm(3, 3)) and _weak(jnp.power(3, 3))
  assert _weak(jnp.asarray(3) ** 2) and _weak(2 ** jnp.asarray(3))
  assert _weak(jnp.asarray(3) // 2) and _weak(jnp.asarray(2.5) // 2)
  frac, whole = jnp.modf(2.5)
  assert _weak(frac) and _weak(whole)
  assert _weak(jnp.pad(jnp.asarray(3), 1)) and _weak(jnp.pad(w, 1))
  # JAX: strong results
  for f in (jnp.log2, jnp.log10, jnp.angle):
    assert not _weak(f(2.5)) and not _weak(f(w)), f
  assert not _weak(jnp.asarray([w, w])) and not _weak(jnp.array([w, 1.]))
  assert not _weak(jax.jit(lambda w: jnp.array([w, w]))(w))
  assert not _weak(jnp.sort(jnp.asarray([w, w])))
  # JAX: a bool made numeric is strong int32
  r = jnp.square(True)
  assert r.dtype == np.int32 and not _weak(r)
  # and x * 2 of a weak stays weak, with a strong operand becomes strong
  assert _weak(w * 2) and not _weak(w * jnp.float32(2))


def test_weak_types_x64(x64):
  # JAX (x64): bool -> int32 (not int64) in numeric functions, strong
  for f in (jnp.square, lambda a: jnp.power(a, a), lambda a: jnp.floor_divide(a, a),
            lambda a: jnp.remainder(a, a), lambda a: jnp.left_shift(a, a)):
    r = f(True)
    assert r.dtype == np.int32 and not _weak(r)
  r = jnp.exp2(3)
  assert r.dtype == np.float64 and _weak(r)
