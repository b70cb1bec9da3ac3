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
from tracejax._src.test_util import check_grads


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


# ---- issue 13 remainders: float0 under jit, jacrev/grad checks, weak types, complex,
# ---- pad median / stat_length (expected values recorded from JAX 0.10.2) ----

def _msg(e):
  """The error's message without the traceback-filtering note that may follow it."""
  return str(e.value).split("\n--------------------")[0]


def _is_float0(x, shape):
  x = np.asarray(x)
  return x.dtype == dtypes.float0 and x.shape == shape


def test_jit_of_float0_outputs_stays_on_host():
  int_fn = lambda x: (x * 2).astype(jnp.int32)
  x, t = jnp.arange(3.), jnp.ones(3)
  f = jax.jit(lambda x: jax.jvp(int_fn, (x,), (t,)))
  for arg, want in ((x, [0, 2, 4]), (x, [0, 2, 4]), (x + 1, [2, 4, 6])):  # cache hits too
    y, ty = f(arg)
    _eq(y, want, "int32")
    assert _is_float0(ty, (3,))
  # JAX: (Array([[2, 2, 2], [2, 2, 2]], dtype=int32), float0[2, 3] zeros)
  jv = lambda x: jax.jvp(int_fn, (x,), (x,))
  for g in (jax.jit(jax.vmap(jv)), jax.vmap(jax.jit(jv))):
    y, ty = g(jnp.ones((2, 3)))
    _eq(y, [[2, 2, 2], [2, 2, 2]], "int32")
    assert _is_float0(ty, (2, 3))
  y, ty = jax.jvp(jax.jit(int_fn), (x,), (t,))
  _eq(y, [0, 2, 4], "int32")
  assert _is_float0(ty, (3,))
  y, ty = jax.jit(lambda x: jax.jit(lambda y: jax.jvp(int_fn, (y,), (t,)))(x))(x)
  assert _is_float0(ty, (3,))
  # float0 arguments and gradients of integer inputs (allow_int)
  a, b = jax.jit(lambda a, b: (a, b * 2))(np.zeros(3, dtypes.float0), x)
  assert _is_float0(a, (3,))
  _eq(b, [0., 2., 4.])
  assert _is_float0(jax.jit(jax.grad(lambda i, y: y * i, allow_int=True))(3, 2.0), ())
  assert _is_float0(jax.vmap(jax.jit(jax.grad(lambda i, y: y * i, allow_int=True)))(
      jnp.arange(2), jnp.ones(2)), (2,))
  gi, gy = jax.jit(lambda i, y: jax.vjp(lambda i, y: y * i, i, y)[1](1.0))(3, 2.0)
  assert _is_float0(gi, ())
  _eq(gy, 3.0)


_INT_OUT = ("{} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
            "but got {}. For differentiation of functions with integer outputs, use jax.vjp "
            "directly.")


def test_jacrev_and_grad_dtype_checks():
  x = jnp.arange(3.)
  for f, dt in ((lambda x: (x * 2).astype(jnp.int32), "int32"), (lambda x: x > 0, "bool"),
                (lambda x: (x * 2, x.astype(jnp.int32)), "int32")):
    with pytest.raises(TypeError) as e:
      jax.jacrev(f)(x)
    assert _msg(e) == _INT_OUT.format("jacrev", dt)
  with pytest.raises(TypeError, match=r"^jacrev requires real-valued outputs \(output dtype "
                     r"that is a sub-dtype of np.floating\), but got complex64. For holomorphic"):
    jax.jacrev(lambda x: x * 1j)(x)
  with pytest.raises(TypeError) as e:
    jax.jacrev(lambda x: jnp.real(x), holomorphic=True)(x + 0j)
  assert _msg(e) == ("jacrev with holomorphic=True requires outputs with complex dtype, "
                          "but got float32.")
  with pytest.raises(TypeError) as e:
    jax.jacrev(lambda x: x * 2, holomorphic=True)(x)
  assert _msg(e) == ("jacrev with holomorphic=True requires inputs with complex dtype, "
                          "but got float32.")
  with pytest.raises(TypeError) as e:
    jax.jacrev(lambda x: x * 2.)(jnp.arange(3))
  assert _msg(e) == (
      "jacrev requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
      "np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, use "
      "vjp or set allow_int to True.")
  with pytest.raises(TypeError) as e:   # hessian = jacfwd(jacrev): jacrev's check first
    jax.hessian(lambda x: x.astype(jnp.int32).sum())(x)
  assert _msg(e) == _INT_OUT.format("jacrev", "int32")
  # JAX: allow_int gives zeros of the integer input's dtype
  ji, jf = jax.jacrev(lambda a, b: a * b, argnums=(0, 1), allow_int=True)(
      jnp.arange(2), jnp.ones(2))
  _eq(ji, [[0, 0], [0, 0]], "int32")
  _eq(jf, [[0., 0.], [0., 1.]], "float32")
  assert jax.jacrev(lambda x: x * 2., allow_int=True)(np.arange(2, dtype=np.int16)).dtype == \
      np.int16
  _eq(jax.jacrev(lambda x, y: (x * y).sum(), argnums=1)(x, jnp.ones(3)), [0., 1., 2.])
  # jacfwd: real inputs only (complex needs holomorphic=True), JAX's words
  with pytest.raises(TypeError) as e:
    jax.jacfwd(lambda x: x * 2)(x + 0j)
  assert _msg(e) == (
      "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
      "but got complex64. For holomorphic differentiation, pass holomorphic=True. For "
      "differentiation of non-holomorphic functions involving complex inputs or integer "
      "inputs, use jax.jvp directly.")
  with pytest.raises(TypeError, match="^jacfwd with holomorphic=True requires outputs with "
                     "complex dtype, but got float32"):
    jax.jacfwd(lambda x: jnp.real(x), holomorphic=True)(x + 0j)
  # grad of non-scalar or non-array outputs, and of integer outputs
  with pytest.raises(TypeError) as e:
    jax.grad(lambda x: x.astype(jnp.int32))(x)
  assert _msg(e) == "Gradient only defined for scalar-output functions. Output had shape: (3,)."
  with pytest.raises(TypeError, match=r"^Gradient only defined for scalar-output functions. "
                     r"Output was \[DeviceArray\(3., dtype=float32\)\]"):
    jax.grad(lambda x: [x.sum()])(x)
  with pytest.raises(TypeError, match="^Gradient only defined for scalar-output functions. "
                     "Output was None"):
    jax.grad(lambda x: None)(x)
  with pytest.raises(TypeError) as e:
    jax.grad(lambda x: x.astype(jnp.int32).sum())(x)
  assert _msg(e) == _INT_OUT.format("grad", "int32")


def test_weak_bools_and_weak_gradients():
  # JAX: a comparison or is_finite of weak operands is a weak bool (printed avals too)
  outs = jax.make_jaxpr(lambda x: (x > 0, lax.is_finite(x), x == 1, jnp.isnan(x),
                                   x > jnp.float32(0)))(1.0).jaxpr.outvars
  assert [v.aval.weak_type for v in outs] == [True, True, True, True, False]
  assert lax.lt(1.0, 2.0).aval.weak_type and lax.ne(2, 1).aval.weak_type
  assert not jax.eval_shape(lambda x: x > 0, jnp.float32(1)).weak_type
  # then promotion: (x > 0) + 1 is weak int32, where(x > 0, 1, 2) weak int32
  r = jax.eval_shape(lambda x: (x > 0) + 1, 1.0)
  assert r.dtype == np.int32 and r.weak_type
  assert jax.eval_shape(lambda x: jnp.where(x > 0, 1, 2), 1.0).weak_type
  # JAX: grad of a weak (Python float) input is weak; of a strong one strong
  for f in (lambda x: x * 2, jnp.sin, lambda x: x * jnp.float32(2), lambda x: 3.0,
            lambda x: (x * jnp.ones(3)).sum()):
    assert _weak(jax.grad(f)(1.0)), f
  assert _weak(jax.jit(jax.grad(lambda x: x * 2))(1.0))
  assert _weak(jax.grad(jax.grad(lambda x: x ** 3))(1.0))
  assert not _weak(jax.grad(lambda x: x * 2)(jnp.float32(1.0)))
  gx, gy = jax.grad(lambda x, y: x * y, argnums=(0, 1))(1.0, jnp.float32(2.))
  assert _weak(gx) and not _weak(gy)
  v, g = jax.value_and_grad(lambda x: x * 2)(1.0)
  assert _weak(v) and _weak(g)


def test_power_hypot_gelu_weak_types_and_values():
  x = jnp.array([1.1, 2.3, -0.7, 3.3], jnp.float32)
  # JAX: a known integer exponent is integer_pow (rounds as x * x * x), eagerly too
  want = [1.3310000896453857, 12.166999816894531, -0.34299999475479126, 35.93699645996094]
  _eq(jnp.power(x, 3), want)
  _eq(x ** 3, want)
  _eq(jnp.power(x, jnp.int32(3)), want)
  _eq(jax.jit(lambda x: jnp.power(x, 3))(x), want)
  assert _weak(jnp.power(3, 3)) and _weak(jnp.power(jnp.asarray(3) * 1, 2))
  for a, b in ((jnp.arange(3), -1), (2, -1), (jnp.arange(3), jnp.int32(-1))):
    with pytest.raises(TypeError, match="^Integers cannot be raised to negative powers, got "
                       "integer_pow"):
      jnp.power(a, b)
  # JAX: traced integer exponents give strong results
  r = jax.eval_shape(lambda x, y: jnp.power(x, y), 1, 2)
  assert r.dtype == np.int32 and not r.weak_type
  b = jnp.array([True, False])
  r = jax.eval_shape(lambda b: jnp.power(b, 2), b)
  assert r.dtype == np.int32 and not r.weak_type
  # JAX: hypot keeps a weak type only for a 0-d result
  assert not jax.eval_shape(lambda x: jnp.hypot(x, 1), b).weak_type
  assert not jax.eval_shape(lambda x: jnp.hypot(jnp.broadcast_to(x, (2,)), 1.), 1.0).weak_type
  assert jax.eval_shape(lambda x: jnp.hypot(x, x), 1.0).weak_type


def test_gelu_of_integers_x64(x64):
  # JAX (x64): int32 and bool -> float32, int64 -> float64, strong
  for a, dt in ((jnp.arange(3, dtype=jnp.int32), np.float32), (jnp.array([True]), np.float32),
                (jnp.arange(3), np.float64)):
    for approximate in (True, False):
      r = jax.nn.gelu(a, approximate=approximate)
      assert r.dtype == dt and not _weak(r), (a.dtype, approximate)
  np.testing.assert_allclose(jax.nn.gelu(jnp.arange(3, dtype=jnp.int32)),
                             [0., 0.8411920070648193, 1.954597234725952], rtol=1e-6)


_Z = np.array([1 + 2j, -0.5 + 0.1j, 0j, 3 - 1j], np.complex64)
_W = np.array([0.5 - 1j, 2 + 0j, 1j, -1 + 1j], np.complex64)


def test_complex_arctan2_logaddexp_softplus_hypot():
  z, w = jnp.asarray(_Z), jnp.asarray(_W)
  want_atan2 = [1.908166766166687 + 0.3790868818759918j, -0.24553345143795013 + 0.04708705097436905j,
                -4.371138828673793e-08 - 0j, 1.9634953737258911 - 0.17328687012195587j]
  want_lae = [0.10499286651611328 + 1.788959264755249j, 2.0785393714904785 + 0.00757598876953125j,
              0.5625629425048828 + 0.5j, 2.9924895763397217 - 0.9832193851470947j]
  want_lae2 = [0.8491411805152893 + 0.9100141525268555j, 2.234398126602173 + 0.015015125274658203j,
               0.9115643501281738 + 0.5j, 3.019104480743408 - 0.9124741554260254j]
  want_sp = [0.9063237905502319 + 1.623828649520874j, 0.4729015827178955 + 0.03774452209472656j,
             0.6931471824645996 + 0j, 3.027376174926758 - 0.9592256546020508j]
  for f, args, want in ((jnp.arctan2, (z, w), want_atan2), (lax.atan2, (z, w), want_atan2),
                        (jnp.logaddexp, (z, w), want_lae), (jnp.logaddexp2, (z, w), want_lae2),
                        (jax.nn.softplus, (z,), want_sp)):
    for g in (f, jax.jit(f)):
      r = g(*args)
      assert r.dtype == np.complex64
      np.testing.assert_allclose(r, want, rtol=2e-6, atol=1e-7)
  # the imaginary part is wrapped into [-pi, pi)
  np.testing.assert_allclose(jnp.logaddexp(jnp.complex64(3.1j), jnp.complex64(-2.9j)),
                             0.6830892562866211 - 3.041592836380005j, rtol=1e-6)
  np.testing.assert_allclose(jnp.logaddexp2(jnp.complex64(3.1j), jnp.complex64(-2.9j)),
                             -0.03802286088466644 - 4.43235969543457j, rtol=1e-6)
  np.testing.assert_allclose(jax.grad(lambda x: jnp.logaddexp(x, 1. + 0j).real)(1. + 1j),
                             0.5 + 0.2731512486934662j, rtol=1e-6)
  ga, gb = jax.grad(lambda a, b: lax.atan2(a, b).real, argnums=(0, 1))(1 + 2j, 0.5 - 1j)
  np.testing.assert_allclose(ga, -0.21138210594654083 + 0.09756097942590714j, rtol=1e-6)
  np.testing.assert_allclose(gb, -0.09756097942590714 + 0.4552845358848572j, rtol=1e-6)
  check_grads(lambda a, b: jnp.arctan2(a, b), (jnp.asarray(_Z[:2]), jnp.asarray(_W[:2])), 1,
              modes=("fwd", "rev"))
  for a in ((z, w), (z, 1.)):
    with pytest.raises(ValueError, match="^jnp.hypot is not well defined for complex-valued "
                       r"inputs. Please convert to real values first, such as by using abs\(x\)"):
      jnp.hypot(*a)


_PX = np.array([[1., 5., 2., 8.], [3., -1., 4., 0.], [7., 6., 9., 2.]], np.float32)


def test_pad_median_and_stat_length():
  _eq(jnp.pad(_PX, ((1, 2), (2, 1)), mode="median", stat_length=2),
      [[2.0, 2.0, 2.0, 2.0, 3.0, 4.0, 3.5], [3.0, 3.0, 1.0, 5.0, 2.0, 8.0, 5.0],
       [1.0, 1.0, 3.0, -1.0, 4.0, 0.0, 2.0], [6.5, 6.5, 7.0, 6.0, 9.0, 2.0, 5.5],
       [3.75, 3.75, 5.0, 2.5, 6.5, 1.0, 3.75], [3.75, 3.75, 5.0, 2.5, 6.5, 1.0, 3.75]], "float32")
  v = jnp.array([1., 2, 3, 4, 10])
  for mode, want in (("mean", [2., 2., 7., 7., 7.]), ("maximum", [3., 3., 10., 10., 10.]),
                     ("minimum", [1., 1., 4., 4., 4.]), ("median", [2., 2., 7., 7., 7.])):
    _eq(jnp.pad(v, (2, 3), mode=mode, stat_length=(3, 2)), want[:2] + [1., 2., 3., 4., 10.] +
        want[2:], "float32")
  xi = _PX.astype(np.int32)
  xi[2, 3] = 3
  _eq(jnp.pad(xi, ((1, 1), (2, 1)), mode="median", stat_length=(2, 3)),
      [[2, 2, 2, 2, 3, 4, 3], [3, 3, 1, 5, 2, 8, 5], [1, 1, 3, -1, 4, 0, 0],
       [6, 6, 7, 6, 9, 3, 6], [4, 4, 3, 5, 4, 3, 4]], "int32")
  _eq(jnp.pad(xi, ((1, 1), (2, 1)), mode="mean", stat_length=(2, 3)),
      [[2, 2, 2, 2, 3, 4, 3], [3, 3, 1, 5, 2, 8, 5], [1, 1, 3, -1, 4, 0, 1],
       [6, 6, 7, 6, 9, 3, 6], [4, 4, 4, 3, 5, 4, 4]], "int32")
  # medians of integers round half to even; of bools: nonzero is True
  _eq(jnp.pad(np.array([1, 2, 3, 4], np.int32), 1, mode="median"), [2, 1, 2, 3, 4, 2])
  _eq(jnp.pad(np.array([1, 4, 5, 6], np.int32), 1, mode="median"), [4, 1, 4, 5, 6, 4])
  _eq(jnp.pad(np.array([[True, False, False], [True, True, False]]), 1, mode="median"),
      [[True, True, True, False, True], [False, True, False, False, False],
       [True, True, True, False, True], [True, True, True, False, True]], "bool")
  _eq(jnp.pad(np.array([1., np.nan, 3.], np.float32), 1, mode="median"),
      [np.nan, 1.0, np.nan, 3.0, np.nan])
  # stat_length larger than the axis is the whole axis; unpadded axes are untouched
  _eq(jnp.pad(_PX, 1, mode="median", stat_length=10), jnp.pad(_PX, 1, mode="median"))
  _eq(jnp.pad(_PX, ((0, 0), (1, 0)), mode="minimum", stat_length=((5, 5), (1, 1)))[:, 0],
      [1., 3., 7.])
  with pytest.raises(ValueError, match="^stat_length of 0 yields no value for padding"):
    jnp.pad(_PX, 1, mode="maximum", stat_length=((1, 0), (1, 1)))
  with pytest.raises(TypeError, match="stat_length"):
    jnp.pad(_PX, 1, mode="mean", stat_length=1.5)
  # a negative stat_length drops elements from the other end (JAX 0.10.2; NumPy raises)
  _eq(jnp.pad(jnp.array([1., 2., 4., 7.]), 2, mode="mean", stat_length=-1),
      np.array([2.3333335, 2.3333335, 1., 2., 4., 7., 4.3333335, 4.3333335], np.float32),
      "float32")


def test_pad_stat_length_under_transformations():
  f = lambda x: jnp.pad(x, (2, 1), mode="median", stat_length=3)
  x = jnp.array([1., 4., 2., 8.])
  _eq(jax.jit(f)(x), [2.0, 2.0, 1.0, 4.0, 2.0, 8.0, 4.0])
  _eq(jax.vmap(f)(jnp.array([[1., 4., 2., 8.], [0., -1., 3., 3.]])),
      [[2.0, 2.0, 1.0, 4.0, 2.0, 8.0, 4.0], [0.0, 0.0, 0.0, -1.0, 3.0, 3.0, 3.0]])
  w = jnp.arange(7.)
  _eq(jax.grad(lambda x: (f(x) * w).sum())(x), [2.0, 9.0, 5.0, 5.0])
  g = lambda x: jnp.pad(x, (2, 1), mode="mean", stat_length=(2, 3))
  _eq(jax.grad(lambda x: (g(x) * w).sum())(x), [2.5, 5.5, 6.0, 7.0])
  h = lambda x: jnp.pad(x, (1, 2), mode="maximum", stat_length=2)
  _eq(jax.grad(lambda x: (h(x) * w).sum())(x), [1.0, 2.0, 3.0, 15.0])
  check_grads(g, (jnp.array([1., 4., 2., 8.]),), 2, modes=("fwd", "rev"))
  check_grads(f, (jnp.array([1., 4., 2., 8.]),), 1, modes=("fwd", "rev"))


def test_scatter_combines_in_the_promoted_dtype():
  # Found by tools/fuzz_vs_jax.py. JAX 0.10.2: jnp.array([4, 5]).at[0].add(-1.5) ->
  # [2, 5] (4 + -1.5 = 2.5, cast back to int32), .mul(1.5) -> [6, 5], .min(2.5) at 1 ->
  # [4, 2].
  x = jnp.array([4, 5])
  np.testing.assert_array_equal(np.asarray(x.at[0].add(-1.5)), [2, 5])
  np.testing.assert_array_equal(np.asarray(x.at[0].mul(1.5)), [6, 5])
  np.testing.assert_array_equal(np.asarray(x.at[1].min(2.5)), [4, 2])
  assert x.at[0].add(-1.5).dtype == np.int32
