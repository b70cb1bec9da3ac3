"""Regression tests for the differential fuzzer's finds of runs 4-5 (issue 13).

Every expected value or type was recorded from JAX 0.10.2 (x64 off), not computed from
it at test time.
"""
import numpy as np

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax


def test_dynamic_update_slice_is_weak_only_when_every_input_is():
  # JAX 0.10.2: the standard weak-type rule over (operand, update, indices); the
  # indices are strong int32, so a weak operand updated anywhere gives a strong result,
  # except a 0-d update of a 0-d weak operand (no indices). Under vmap JAX batches it
  # as a scatter, which keeps the operand's weak type.
  w = jnp.full((3,), 1.0)
  ws = jnp.asarray(2.0)
  assert w.weak_type and ws.weak_type
  assert not lax.dynamic_update_slice(w, ws[None], (0,)).weak_type
  assert not lax.dynamic_update_slice(w, jnp.ones(1, jnp.float32), (0,)).weak_type
  assert not jax.jit(lambda a, b: lax.dynamic_update_slice(a, b, (0,)))(w, ws[None]).weak_type
  assert lax.dynamic_update_slice(jnp.asarray(1.0), jnp.asarray(2.0), ()).weak_type
  assert not lax.dynamic_update_slice(jnp.asarray(1.0), jnp.float32(2.0), ()).weak_type
  wb = jnp.full((2, 3), 1.0)
  out = jax.vmap(lambda a: lax.dynamic_update_slice(a, ws[None], (0,)))(wb)
  assert out.weak_type
  out = jax.vmap(lambda a, i: lax.dynamic_update_slice(a, ws[None], (i,)))(wb, jnp.arange(2))
  assert out.weak_type
  g = jax.grad(lambda a: lax.dynamic_update_slice(a, ws[None], (0,)).sum())(w)
  assert not g.weak_type
  # The fuzzer's program: lax.eq, jnp.mod, then an update (x64 off).
  x1 = np.array([2.63671875], dtype=np.float16)
  v1 = jnp.mod(lax.eq(x1, x1), 0.001)
  v2 = lax.dynamic_update_slice(v1, x1.astype(jnp.asarray(v1).dtype), (2,))
  assert v2.dtype == np.float32 and not v2.weak_type
  np.testing.assert_allclose(v2, [2.636719], rtol=1e-6)


def test_whole_array_scatter_min_max_derivatives_are_strong():
  # JAX 0.10.2 scatters for x.at[...].max(y) even when the index selects everything, and
  # the scatter's derivative is strong; add/set stay weak.
  A = lambda x: jnp.full((3,), x)
  for f, value in [(lambda x: A(x).at[:].max(x).sum(), 3.0),
                   (lambda x: A(x).at[...].min(A(x)).sum(), 3.0),
                   (lambda x: jnp.asarray(x).at[..., None].max(x, mode='clip'), 1.0),
                   (lambda x: jnp.fabs(x).at[..., None].max(jnp.fabs(x), mode='clip'), -1.0)]:
    g = jax.grad(f)(-1.5)
    assert not g.weak_type and float(g) == value
  for f, value in [(lambda x: jnp.asarray(x).at[..., None].set(x), 1.0),
                   (lambda x: jnp.asarray(x).at[..., None].add(x), 2.0)]:
    g = jax.grad(f)(-1.5)
    assert g.weak_type and float(g) == value
  x = jnp.array([[1., -2, 3], [4, 5, np.nan]], np.float32)
  y = jnp.array([[2., -2, 1], [np.nan, 7, 0]], np.float32)
  f = lambda a, b: a.at[...].max(b)
  expected = [[2., -2., 3.], [np.nan, 7., np.nan]]
  for out in (f(x, y), jax.jit(f)(x, y), jax.vmap(f)(x, y)):
    np.testing.assert_array_equal(out, expected)
  gx, gy = jax.grad(lambda a, b: f(a, b).sum(), (0, 1))(x, y)
  np.testing.assert_array_equal(gx, [[0., .5, 1.], [0., 0., 0.]])
  np.testing.assert_array_equal(gy, [[1., .5, 0.], [0., 1., 0.]])
  np.testing.assert_array_equal(f(x.astype(np.int32), y.astype(np.int32)),
                                [[2, -2, 3], [4, 7, 0]])


def test_grad_through_jit_of_checkpoint_keeps_weak_types():
  # JAX 0.10.2 traces a jit's transpose, a checkpoint inside it included: the
  # cotangents summed in the checkpoint take the first one's (weak) type.
  f0 = lambda x: x ** x
  f = jax.jit(jax.checkpoint(f0))
  for x in (1.5, 1 - 0.5j):
    g = jax.grad(lambda d: jnp.sum(jnp.real(f(d))))(x)
    assert g.weak_type
  _, f_vjp = jax.vjp(f, 1.5)
  assert f_vjp(jnp.float32(1.0))[0].weak_type
  g = jax.grad(lambda d: jnp.sum(jnp.real(f(d))))(1 - 0.5j)
  np.testing.assert_allclose(g, 0.651551 - 0.846143j, rtol=1e-5)
  # A checkpoint alone is transposed eagerly in JAX too: a strong cotangent wins.
  _, f_vjp = jax.vjp(jax.checkpoint(f0), 1.5)
  assert not f_vjp(jnp.float32(1.0))[0].weak_type


def test_jvp_tangent_dtype_error_reads_as_jax():
  # JAX 0.10.2's message, word for word (no space after "float0.", NumPy's dtype str).
  import pytest
  with pytest.raises(TypeError) as e:
    jax.jvp(lambda x: x, (np.zeros(2, np.int32),), (np.zeros(2, np.int32),))
  assert str(e.value) == (
      "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in "
      "case of int/bool primal dtype the tangent dtype must be float0.Got primal dtype "
      "int32 and so expected tangent dtype [('float0', 'V')], but got tangent dtype int32 "
      "instead.")


def test_integer_division_by_a_constant_zero_compiles():
  # seed 309 #1972 (x64 on): jit(vjp((x ^ x) // False)) killed the process (SIGFPE) in
  # XLA's constant folding, which divides integer constants natively; JAX 0.10.2 crashes
  # the same way on jit(lambda: lax.div(4, 0)). XLA's defined answers instead:
  # x / 0 = -1 (all bits set when unsigned), x % 0 = x; INT_MIN / -1 = INT_MIN.
  import subprocess
  import sys
  code = ("import numpy as np, tracejax as jax, tracejax.numpy as jnp\n"
          "from tracejax import lax\n"
          "print(int(jax.jit(lambda: lax.div(jnp.int32(4), jnp.int32(0)))()),"
          " int(jax.jit(lambda: lax.rem(jnp.int32(4), jnp.int32(0)))()),"
          " int(jax.jit(lambda: jnp.int32(0) // 0)()),"
          " int(jax.jit(lambda: lax.div(jnp.uint8(7), jnp.uint8(0)))()),"
          " int(jax.jit(lambda: lax.div(jnp.int32(-2**31), jnp.int32(-1)))()))\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.split() == ["-1", "4", "-1", "255", "-2147483648"]
  np.testing.assert_array_equal(lax.div(np.int8([7, -7, 5]), np.int8([0, 2, -1])),
                                [-1, -3, -5])
  np.testing.assert_array_equal(lax.rem(np.int8([7, -7, 5]), np.int8([0, 2, -1])),
                                [7, -1, 0])
  np.testing.assert_array_equal(jax.jit(lax.div)(np.float32([1, -2]), np.float32([0, 4])),
                                [np.inf, -0.5])


def test_hypot_of_empty_arrays_has_no_tangent():
  # seed 310 #3763: JAX's hypot ends with jnp.where, which returns the broadcast inf for an
  # empty result, so no tangent flows: grad is a (weak) literal zero. Non-empty results
  # keep JAX's strong gradient.
  x0 = np.zeros((2, 1, 0), bool)
  f = lambda d: jnp.sum(jnp.hypot(jnp.where(x0, d, x0), jnp.where(x0, d, x0)))
  g = jax.grad(f)(2.0)
  assert g.weak_type and float(g) == 0.0
  g = jax.grad(lambda d: jnp.sum(jnp.hypot(jnp.broadcast_to(d, (0,)), 1.0)))(2.0)
  assert g.weak_type and float(g) == 0.0
  g = jax.grad(lambda d: jnp.sum(jnp.hypot(jnp.broadcast_to(d, (3,)), 1.0)))(2.0)
  assert not g.weak_type
  np.testing.assert_allclose(g, 2.6832814, rtol=1e-6)
  assert jax.grad(lambda d: jnp.hypot(d, d))(2.0).weak_type
  np.testing.assert_allclose(jnp.hypot(np.float32([3, np.inf, 0]), np.float32([4, 1, 0])),
                             [5, np.inf, 0])


def test_trivial_calls_return_what_jax_returns_under_jvp_and_vmap():
  # seed 310 #5878 and a sweep of trivial calls: JAX 0.10.2 jits fftshift, moveaxis,
  # swapaxes, rot90, clip and diff (a new Array even when nothing changes), while lax's
  # identity transpose/reshape/squeeze/broadcast/concatenate and a 0-d broadcast_in_dim
  # hand the traced operand back (so vmap/jvp of a NumPy input return that input);
  # a no-op convert_element_type binds for a concrete (jvp) tracer only.
  x1, x2 = np.ones((3,), np.float32), np.ones((1, 3), np.float32)
  x0 = np.array(-2.0, np.float16)
  new = [(jnp.fft.fftshift, x0), (jnp.fft.ifftshift, x0),
         (lambda v: jnp.fft.fftshift(v, axes=()), x1), (lambda v: jnp.rot90(v, 0), x2),
         (lambda v: jnp.clip(v), x1), (lambda v: jnp.moveaxis(v, 0, 0), x1),
         (lambda v: jnp.diff(v, n=0), x1), (lambda v: jnp.swapaxes(v, 0, 0), x1),
         (lambda v: lax.broadcast_in_dim(v, (3,), (0,)), x1)]
  same = [(lambda v: lax.broadcast_in_dim(v, (), ()), np.ones((), np.float32)),
          (lambda v: lax.transpose(v, (0,)), x1), (lambda v: lax.reshape(v, (3,)), x1),
          (lambda v: lax.squeeze(v, ()), x1), (lambda v: lax.broadcast(v, ()), x1),
          (lambda v: lax.concatenate([v], 0), x1)]
  for f, x in new:
    assert isinstance(jax.jvp(f, (x,), (x,))[0], jax.Array)
    assert isinstance(jax.vmap(f)(x[None]), jax.Array)
  for f, x in same:
    assert type(jax.jvp(f, (x,), (x,))[0]) is np.ndarray
    assert type(jax.vmap(f)(x[None])) is np.ndarray
  conv = lambda v: lax.convert_element_type(v, np.float32)
  assert isinstance(jax.jvp(conv, (x1,), (x1,))[0], jax.Array)
  assert type(jax.vmap(conv)(x1[None])) is np.ndarray


def test_sort_of_a_scalar_is_jax_axis_error():
  import pytest
  with pytest.raises(ValueError, match="axis -1 is out of bounds for array of dimension 0"):
    lax.sort(np.float32(1.0))
  with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
    lax.sort(np.ones(3), dimension=1)


def test_square_is_jax_square_primitive():
  # seed 312 #595: jnp.square is lax.square (JAX 0.10.2), whose complex form does not
  # cancel to NaN/-inf: the square of sin(610.77+58.6j) is inf+infj in JAX.
  s = jnp.sin(np.complex64(610.7681884765625 + 58.599422454833984j))
  out = complex(jnp.square(s))
  assert out.real == np.inf and out.imag == np.inf
  assert complex(s * s).real == -np.inf            # the plain product, in JAX too
  assert "square" in str(jax.make_jaxpr(jnp.square)(1.0))


def test_loop_results_take_the_bodys_weak_types():
  # seed 312 #651: JAX 0.10.2 types a while_loop/scan result by the body's output, so a
  # loop's JVP ends with the body's tangent type even with no steps, and a strong init
  # carried by a body returning a Python float ends weak.
  B = lambda x: jnp.broadcast_to(x, (2,))
  for n in (0, 1, 2):
    f = lambda d: jnp.sum(lax.fori_loop(0, n, lambda i, v: jnp.square(v), B(d)))
    assert not jax.grad(f)(2.0).weak_type
    assert jax.grad(lambda d: lax.fori_loop(0, n, lambda i, v: jnp.square(v), d))(2.0).weak_type
    assert jax.grad(lambda d: jnp.sum(lax.fori_loop(0, n, lambda i, v: v * 2, B(d))))(2.0).weak_type
  t = jax.jvp(lambda d: lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, lax.square(c[1])),
                                       (0, B(d)))[1], (2.0,), (1.0,))[1]
  assert not t.weak_type
  assert lax.while_loop(lambda c: c < 3, lambda c: 5.0, jnp.float32(1.0)).weak_type
  assert lax.scan(lambda c, _: (5.0, None), jnp.float32(1.0), None, length=2)[0].weak_type
  assert not lax.while_loop(lambda c: c < 3, lambda c: jnp.float32(5.0), 1.0).weak_type
  v, g = jax.value_and_grad(lambda d: jnp.sum(lax.fori_loop(
      0, 0, lambda i, v: jnp.square(v), B(d))))(float("nan"))
  assert np.isnan(v) and float(g) == 2.0 and not g.weak_type


def test_disable_jit_while_loop_falls_back_when_traced():
  # jax.random.gamma under jax.disable_jit() raised TracerBoolConversionError: its
  # while_loop runs inside a vmap there. JAX 0.10.2 runs a while_loop as a Python loop
  # under disable_jit only when it can, falling back to the primitive on a traced
  # condition. Values recorded from JAX (threefry_partitionable=False).
  with jax.disable_jit():
    out = jax.vmap(lambda x: lax.while_loop(lambda c: c < x, lambda c: c + 1, 0))(
        jnp.arange(3))
    assert out.tolist() == [0, 1, 2]
    assert lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0) == 3
  prev = jax.config.jax_threefry_partitionable
  jax.config.update("jax_threefry_partitionable", False)
  try:
    with jax.disable_jit():
      g = jax.random.gamma(jax.random.PRNGKey(65), jnp.float32(1.46875))
    assert np.isfinite(float(g))
    np.testing.assert_allclose(
        g, jax.random.gamma(jax.random.PRNGKey(65), jnp.float32(1.46875)), rtol=1e-6)
  finally:
    jax.config.update("jax_threefry_partitionable", prev)


def test_all_gather_under_vmap_of_a_numpy_input_is_an_array():
  # all_gather over vmap's own axis of a NumPy input handed that input back (asarray and
  # astype now return tracers unchanged, as JAX's), so indexing it with a traced index
  # failed inside ragged_all_to_all. JAX 0.10.2 returns a new Array; its values:
  def f(a):
    ins = lax.all_gather(jnp.asarray(a).astype(np.int32), 'i')
    return ins[0][lax.axis_index('i') * 2 + 1]
  assert jax.vmap(f, axis_name='i')(np.arange(12).reshape(3, 4)).tolist() == [1, 3, 3]
  out = jax.vmap(lambda a: lax.all_gather(a, 'i'), axis_name='i')(np.arange(12).reshape(3, 4))
  assert isinstance(out, jax.Array) and out.dtype == np.int32


def test_linalg_and_angle_keep_weak_types_as_jax():
  # seed 312 #1896, #2033: JAX 0.10.2's linalg primitives take the standard weak-type
  # rule (weak when every input is: lu's pivots too), symmetrize divides by a Python 2,
  # and angle of a weak real array is weak (a 0-d one goes strongly to the default float).
  from tracejax.lax import linalg as L
  w = jnp.full((2, 2), 0.5)
  s = jnp.ones((2, 2), jnp.float32)
  pd = jnp.full((2, 2), 1.0) + 1.0
  weak = lambda r: [bool(x.weak_type) for x in jax.tree_util.tree_leaves(r)]
  assert weak(L.cholesky(pd)) == [True]
  assert weak(L.triangular_solve(w, w, left_side=True)) == [True]
  assert weak(L.triangular_solve(w, s, left_side=True)) == [False]
  assert weak(L.lu(w)) == [True, True, True]
  assert weak(L.qr(w)) == [True, True]
  assert weak(L.eigh(w)) == [True, True]
  assert weak(L.svd(w)) == [True, True, True]
  assert weak(L.eig(w)) == [True, True, True]
  assert weak(L.lu_pivots_to_permutation(jnp.zeros(2, jnp.int32), 2)) == [False]
  assert weak(jnp.linalg.eigvalsh(w)) == [True]
  assert weak(jnp.linalg.cond(w)) == [True]
  assert weak(jnp.linalg.inv(w)) == [False]
  # det: JAX's explicit products for 2x2 and 3x3 (weak as the input), LU beyond
  assert [weak(jnp.linalg.det(jnp.full((n, n), 0.5))) for n in (1, 2, 3, 4)] == \
      [[False], [True], [True], [False]]
  a = np.array([[[0.5, -1.25, 2.], [1.5, 0.25, -0.75], [2., 1., 3.]]], np.float32)
  np.testing.assert_array_equal(jnp.linalg.det(a), [10.25])
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.linalg.det(x))(np.ones((3, 3), np.float32)),
                                np.zeros((3, 3)))
  assert weak(jnp.linalg.lstsq(w, w)) == [False, False, False, True]
  assert weak(jnp.abs(jnp.linalg.qr(jnp.outer(0.5, 0.5))[1])) == [True]
  assert weak(jnp.angle(jnp.tile(0.5, 2))) == [True]
  assert weak(jnp.angle(jnp.asarray(0.5))) == [False]
  assert weak(jnp.angle(jnp.tile(2, 2))) == [False]
  assert jax.grad(lambda x: jnp.angle(jnp.tile(x, 2)).sum())(0.5).weak_type


def test_weak_carry_promoted_only_for_another_dtype():
  # JAX 0.10.2 promotes a weak carry only when the body's output has another dtype or
  # shape (it compares types ignoring weak types); the result then has the body's output
  # types: (weak + weak, strong) stays (weak, strong).
  S = lambda v: jnp.asarray(v, jnp.int32) * 1
  pair = (jnp.asarray(2) * 1, jnp.asarray(3) * 1)
  weak = lambda r: [bool(x.weak_type) for x in r]
  assert weak(lax.while_loop(lambda c: False, lambda c: (c[0] + c[1], S(c[1])), pair)) == \
      [True, False]
  assert weak(lax.scan(lambda c, x: ((c[0] + c[1], S(c[1])), None), pair, None,
                       length=1)[0]) == [True, False]
  assert not lax.while_loop(lambda c: False, lambda c: S(c), jnp.asarray(2) * 1).weak_type
  out = lax.fori_loop(0, 2, lambda i, c: c + jnp.float16(1), 0.)
  assert out.dtype == np.float16 and not out.weak_type
