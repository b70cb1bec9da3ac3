"""Today's `jax.lax` names (JAX 0.10.2) that the 2020 API lacked: split/stack/unstack/
tile, optimization_barrier, mulhi, approx_max_k, scatter_apply, conv patches and
unshared convolutions, ragged_dot, platform_dependent, map(batch_size=), loop unrolling,
and the small helpers. Each is checked against NumPy (or hand-derived values), under
jit, with check_grads where it is differentiable, and under vmap against a loop.
"""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.test_util import check_grads

RNG = np.random.RandomState(0)


def _vmap_vs_loop(f, xs, in_axes=0):
  out = jax.vmap(f, in_axes=in_axes)(xs)
  xs_np = np.moveaxis(np.asarray(xs), in_axes, 0)
  ref = [f(x) for x in xs_np]
  for o, leaves in zip(jax.tree_util.tree_leaves(out),
                       zip(*[jax.tree_util.tree_leaves(r) for r in ref])):
    np.testing.assert_allclose(o, np.stack(leaves), rtol=1e-5, atol=1e-6)


# ---- structural: split, stack, unstack, tile ----

def test_split_stack_unstack_tile_values():
  x = RNG.randn(5, 4).astype(np.float32)
  for got, want in zip(lax.split(x, (2, 0, 3)), np.split(x, [2, 2])):
    np.testing.assert_array_equal(got, want)
  for got, want in zip(jax.jit(lambda x: lax.split(x, (1, 3), axis=-1))(x),
                       np.split(x, [1], axis=1)):
    np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(lax.stack([x, 2 * x], axis=1), np.stack([x, 2 * x], 1))
  np.testing.assert_array_equal(jax.jit(lambda a: lax.stack([a, a], -1))(x),
                                np.stack([x, x], -1))
  for got, want in zip(lax.unstack(x, axis=1), np.moveaxis(x, 1, 0)):
    np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(lax.tile(x, (2, 3)), np.tile(x, (2, 3)))
  np.testing.assert_array_equal(jax.jit(lambda a: lax.tile(a, (1, 2)))(x), np.tile(x, (1, 2)))
  with pytest.raises(ValueError, match="Sum of sizes"):
    lax.split(x, (2, 2))
  with pytest.raises(ValueError, match="len\\(reps\\)"):
    lax.tile(x, (2,))
  with pytest.raises(TypeError, match="one shape"):
    lax.stack([x, x[:1]])


def test_structural_grads_and_vmap():
  x = RNG.randn(4, 3).astype(np.float32)
  check_grads(lambda a: lax.split(a, (1, 3))[1] * lax.split(a, (3, 1))[0], (x,), order=2)
  check_grads(lambda a: lax.stack([a, jnp.sin(a)], axis=1), (x,), order=2)
  check_grads(lambda a: lax.unstack(a, axis=1)[2] * 2., (x,), order=2)
  check_grads(lambda a: lax.tile(a, (2, 3)), (x,), order=2)
  _vmap_vs_loop(lambda a: lax.split(a, (1, 2)), x)
  _vmap_vs_loop(lambda a: lax.stack([a, a * 2]), x, in_axes=1)
  _vmap_vs_loop(lambda a: lax.unstack(a), x, in_axes=1)
  _vmap_vs_loop(lambda a: lax.tile(a, (3,)), x, in_axes=1)


# ---- optimization_barrier and the identity-like primitives ----

def test_optimization_barrier():
  x = np.arange(3, dtype=np.float32)
  a, b = lax.optimization_barrier((x, 2.))
  np.testing.assert_array_equal(a, x)
  assert float(b) == 2.
  text = jax.jit(lambda v: lax.optimization_barrier(v * 2)).lower(x).as_text()
  assert "stablehlo.optimization_barrier" in text
  check_grads(lambda v: lax.optimization_barrier(jnp.sin(v)) * v, (x,), order=2)
  _vmap_vs_loop(lambda v: lax.optimization_barrier({"a": v, "b": v * 3}), x.reshape(3, 1))
  assert "optimization_barrier" in str(jax.make_jaxpr(lax.optimization_barrier)(x))


def test_identity_like_helpers():
  x = jnp.arange(3.)
  np.testing.assert_array_equal(lax.copy_p.bind(x), x)
  assert isinstance(lax.stage(np.float32(2.)), jax.Array)
  assert "stage" in str(jax.make_jaxpr(lambda v: lax.stage(v))(1.))
  assert jax.grad(lambda v: lax.stage(v) * 3.)(1.) == 3.
  text = str(jax.make_jaxpr(lambda v: (lax.dce_sink(v * 2.), v)[1])(1.))
  assert "dce_sink" in text and "mul" in text  # the sunk value is kept
  assert lax.create_token_p.bind().shape == (0,)
  assert lax.after_all_p.bind(lax.create_token()).shape == (0,)
  assert lax.empty((2, 3), jnp.float32).shape == (2, 3)
  assert lax.dtype(1.0) == np.float32 and lax.dtype(np.int64) == np.int32
  np.testing.assert_array_equal(lax.shape_as_value((2, 3)), [2, 3])
  np.testing.assert_array_equal(lax.broadcast_like(jnp.array([1, 2, 3]), jnp.zeros((2, 3))),
                                [[1, 2, 3], [1, 2, 3]])
  with pytest.raises(ValueError, match="incompatible"):
    lax.broadcast_like(jnp.ones(2), jnp.zeros((2, 3)))
  full = lax.full_like(jax.ShapeDtypeStruct((2,), np.int32), 3)
  assert full.dtype == np.int32 and full.tolist() == [3, 3]
  assert lax.full_like(jnp.ones(2), 2., shape=(3,)).tolist() == [2., 2., 2.]


def test_rng_uniform():
  v = lax.rng_uniform(np.float32(2.), np.float32(3.), (50,))
  assert v.shape == (50,) and v.dtype == np.float32
  assert np.all((np.asarray(v) >= 2.) & (np.asarray(v) < 3.))
  i = jax.jit(lambda: lax.rng_uniform(np.int32(0), np.int32(5), (20,)))()
  assert i.dtype == np.int32 and np.all((np.asarray(i) >= 0) & (np.asarray(i) < 5))
  with pytest.raises(TypeError, match="one dtype"):
    lax.rng_uniform(np.float32(0), np.int32(1), (2,))


# ---- integer ----

def _mulhi_ref(a, b, dt):
  bits = 8 * np.dtype(dt).itemsize
  out = [(int(p) * int(q)) >> bits for p, q in zip(a.ravel(), b.ravel())]
  return np.array([o & (2 ** bits - 1) for o in out], dtype=np.uint64).astype(
      np.dtype(f"u{np.dtype(dt).itemsize}")).view(dt).reshape(a.shape)


@pytest.mark.parametrize("dt", [np.int8, np.uint16, np.int32, np.uint32])
def test_mulhi(dt):
  info = np.iinfo(dt)
  a = RNG.randint(info.min, info.max, (3, 4), dtype=np.int64).astype(dt)
  b = RNG.randint(info.min, info.max, (3, 4), dtype=np.int64).astype(dt)
  np.testing.assert_array_equal(lax.mulhi(a, b), _mulhi_ref(a, b, dt))
  np.testing.assert_array_equal(jax.jit(lax.mulhi)(a, b), _mulhi_ref(a, b, dt))
  np.testing.assert_array_equal(jax.vmap(lax.mulhi)(a, b), _mulhi_ref(a, b, dt))


def test_mulhi_64bit(x64):
  for dt in (np.int64, np.uint64):
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, 12345678901234, -1 if dt == np.int64 else 7, 3],
                 dtype=dt)
    b = np.array([info.max, 3, 98765432109876, 5, info.max], dtype=dt)
    np.testing.assert_array_equal(lax.mulhi(a, b), _mulhi_ref(a, b, dt))


def test_dimension_comparison_primitives():
  assert bool(lax.eq_to_p.bind(3, 3)) and bool(lax.le_to_p.bind(2, 3))
  assert not bool(lax.lt_to_p.bind(3, 3))


# ---- sorting: top_k(axis=), approx_max_k / approx_min_k ----

def test_top_k_axis():
  x = RNG.randn(5, 4).astype(np.float32)
  vals, idx = lax.top_k(x, 2, axis=0)
  np.testing.assert_array_equal(vals, -np.sort(-x, axis=0)[:2])
  np.testing.assert_array_equal(idx, np.argsort(-x, axis=0, kind="stable")[:2])
  vals, _ = jax.jit(lambda a: lax.top_k(a, 3, axis=-1))(x)
  np.testing.assert_array_equal(vals, -np.sort(-x, axis=1)[:, :3])


def test_approx_max_min_k():
  x = RNG.randn(3, 10).astype(np.float32)
  vals, idx = lax.approx_max_k(x, 4)
  np.testing.assert_array_equal(vals, -np.sort(-x, axis=1)[:, :4])
  np.testing.assert_array_equal(np.take_along_axis(x, np.asarray(idx), 1), vals)
  vals, idx = jax.jit(lambda a: lax.approx_min_k(a, 2, reduction_dimension=0))(x)
  np.testing.assert_array_equal(vals, np.sort(x, axis=0)[:2])
  check_grads(lambda a: lax.approx_max_k(a, 3)[0], (x,), order=2)
  _vmap_vs_loop(lambda a: lax.approx_min_k(a, 3), x)
  with pytest.raises(ValueError, match="floating"):
    lax.approx_max_k(jnp.arange(3), 1)


# ---- gather: scatter_apply ----

def test_scatter_apply():
  dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0,))
  x = np.arange(5, dtype=np.float32)
  out = lax.scatter_apply(x, np.array([[1], [3]]), lambda v: v * 10., dn, update_shape=(2,))
  np.testing.assert_array_equal(out, [0., 10., 2., 30., 4.])
  # a repeated index applies func again (as XLA's scatter does)
  out = jax.jit(lambda a: lax.scatter_apply(a, np.array([[2], [2]]), lambda v: v + 1., dn,
                                            update_shape=(2,)))(x)
  np.testing.assert_array_equal(out, [0., 1., 4., 3., 4.])
  xs = RNG.randn(3, 5).astype(np.float32)
  _vmap_vs_loop(lambda a: lax.scatter_apply(a, np.array([[0]]), jnp.exp, dn,
                                            update_shape=(1,)), xs)


# ---- convolution: patches and unshared convolutions ----

def _patches_ref(x, fh, fw):  # NCHW, stride 1, VALID; features channel-major
  n, c, h, w = x.shape
  out = np.zeros((n, c * fh * fw, h - fh + 1, w - fw + 1), x.dtype)
  for i in range(h - fh + 1):
    for j in range(w - fw + 1):
      win = x[:, :, i:i + fh, j:j + fw]          # n, c, fh, fw
      out[:, :, i, j] = win.reshape(n, -1)
  return out


def test_conv_general_dilated_patches():
  x = RNG.randn(2, 3, 5, 6).astype(np.float32)
  got = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
  np.testing.assert_allclose(got, _patches_ref(x, 2, 3), rtol=1e-6)
  nhwc = np.transpose(x, (0, 2, 3, 1))
  got = jax.jit(lambda a: lax.conv_general_dilated_patches(
      a, (2, 3), (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")))(nhwc)
  np.testing.assert_allclose(got, np.transpose(_patches_ref(x, 2, 3), (0, 2, 3, 1)),
                             rtol=1e-6)
  assert lax.conv_general_dilated_patches(x, (2, 2), (2, 2), "SAME").shape == (2, 12, 3, 3)


def test_conv_general_dilated_local():
  x = RNG.randn(2, 3, 4, 5).astype(np.float32)
  fh, fw = 2, 2
  oh, ow = 3, 4
  rhs = RNG.randn(6, 3 * fh * fw, oh, ow).astype(np.float32)   # O, I, out H, out W
  got = lax.conv_general_dilated_local(x, rhs, (1, 1), "VALID", (fh, fw),
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"))
  patches = _patches_ref(x, fh, fw)                               # n, I, oh, ow
  want = np.einsum("nihw,oihw->nohw", patches, rhs)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
  f = lambda a, r: lax.conv_general_dilated_local(a, r, (1, 1), "VALID", (fh, fw))
  check_grads(f, (x[:1, :1], rhs[:2, :4]), order=1, atol=5e-2, rtol=5e-2)


# ---- dot: ragged_dot, algorithm presets ----

def _ragged_ref(lhs, rhs, sizes):
  out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float32)
  start = 0
  for g, s in enumerate(sizes):
    out[start:start + s] = lhs[start:start + s] @ rhs[g]
    start += s
  return out


def test_ragged_dot():
  lhs = RNG.randn(7, 4).astype(np.float32)
  rhs = RNG.randn(3, 4, 5).astype(np.float32)
  sizes = np.array([2, 3, 1], np.int32)   # the last row is in no group: zeros
  np.testing.assert_allclose(lax.ragged_dot(lhs, rhs, sizes), _ragged_ref(lhs, rhs, sizes),
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(jax.jit(lax.ragged_dot)(lhs, rhs, sizes),
                             _ragged_ref(lhs, rhs, sizes), rtol=1e-5, atol=1e-5)
  check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), (lhs, rhs), order=2, atol=2e-2,
              rtol=2e-2)


def test_ragged_dot_general_contracting_mode():
  lhs = RNG.randn(3, 6).astype(np.float32)
  rhs = RNG.randn(6, 5).astype(np.float32)
  sizes = np.array([2, 3, 1], np.int32)
  dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  got = lax.ragged_dot_general(lhs, rhs, sizes, dn)
  want = np.stack([lhs[:, 0:2] @ rhs[0:2], lhs[:, 2:5] @ rhs[2:5], lhs[:, 5:] @ rhs[5:]])
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dot_algorithm_and_accuracy_arguments():
  a = RNG.randn(3, 3).astype(np.float32)
  for p in (lax.DotAlgorithmPreset.F32_F32_F32, lax.DotAlgorithmPreset.DEFAULT,
            lax.DotAlgorithm(np.float32, np.float32, np.float32)):
    np.testing.assert_allclose(lax.dot(a, a, precision=p), a @ a, rtol=1e-5)
  assert lax.DotAlgorithmPreset.BF16_BF16_F32.accumulation_type == np.float32
  np.testing.assert_allclose(lax.exp(1., accuracy=lax.Tolerance(atol=1e-5)), np.e, rtol=1e-6)
  np.testing.assert_allclose(lax.sin(1., accuracy=lax.AccuracyMode.HIGHEST), np.sin(1.),
                             rtol=1e-6)
  with pytest.raises(TypeError, match="accuracy"):
    lax.exp(1., accuracy="high")
  with pytest.raises(ValueError, match="nonnegative"):
    lax.Tolerance(atol=-1.)


# ---- control flow: map(batch_size=), unroll, platform_dependent, switch/cond forms ----

def test_map_batch_size():
  xs = np.arange(7, dtype=np.float32)
  for bs in (None, 0, 1, 3, 7, 10):
    np.testing.assert_allclose(lax.map(lambda x: x * 2. + 1., xs, batch_size=bs), xs * 2 + 1)
  out = jax.jit(lambda t: lax.map(lambda p: {"s": p[0] + p[1]}, t, batch_size=2))(
      (xs, xs * 10))
  np.testing.assert_allclose(out["s"], xs * 11)
  g = jax.grad(lambda v: jnp.sum(lax.map(jnp.sin, v, batch_size=3)))(xs)
  np.testing.assert_allclose(g, np.cos(xs), rtol=1e-6)
  with pytest.raises(ValueError, match="nonnegative"):
    lax.map(jnp.sin, xs, batch_size=-1)


def test_fori_and_scan_unroll():
  for u in (1, 2, 3, True, False):
    assert int(lax.fori_loop(0, 7, lambda i, c: c + i, 0, unroll=u)) == 21
  xs = np.arange(1., 8., dtype=np.float32)
  f = lambda c, x: (c * x, c + x)
  want = lax.scan(f, 1., xs)
  for u in (2, 3, 7, True):
    for rev in (False, True):
      got = jax.jit(lambda v: lax.scan(f, 1., v, unroll=u, reverse=rev))(xs)
      ref = lax.scan(f, 1., xs, reverse=rev)
      np.testing.assert_allclose(got[0], ref[0], rtol=1e-6)
      np.testing.assert_allclose(got[1], ref[1], rtol=1e-6)
  np.testing.assert_allclose(lax.scan(f, 1., xs, unroll=3)[1], want[1])
  # fully unrolled: no loop in the program; unroll=2 keeps one loop of 2 steps a trip
  assert "stablehlo.while" not in jax.jit(lambda v: lax.scan(f, 1., v, unroll=True)).lower(
      xs).as_text()
  assert "stablehlo.while" in jax.jit(lambda v: lax.scan(f, 1., v, unroll=2)).lower(
      xs).as_text()
  g = jax.grad(lambda v: lax.scan(lambda c, x: (c * x, None), 1., v, unroll=2)[0])(xs[:4])
  np.testing.assert_allclose(g, [24., 12., 8., 6.], rtol=1e-6)
  with pytest.raises(ValueError, match="statically known"):
    jax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + 1, 0, unroll=2))(3)
  with pytest.raises(ValueError, match="non-negative"):
    lax.scan(f, 1., xs, unroll=-1)


def test_platform_dependent():
  assert float(lax.platform_dependent(1., cpu=lambda x: x + 1, default=lambda x: x - 1)) == 2.
  assert float(lax.platform_dependent(1., tpu=lambda x: x + 1, default=lambda x: x - 1)) == 0.
  f = jax.jit(lambda x: lax.platform_dependent(x, cpu=lambda v: v * 3, tpu=lambda v: v * 2))
  assert float(f(2.)) == 6.
  assert float(jax.grad(lambda x: lax.platform_dependent(x, cpu=lambda v: v * 3.,
                                                         cuda=jnp.sin))(2.)) == 3.
  np.testing.assert_allclose(jax.vmap(lambda x: lax.platform_dependent(
      x, cpu=jnp.cos, default=jnp.sin))(jnp.arange(3.)), np.cos(np.arange(3.)), rtol=1e-6)
  with pytest.raises(NotImplementedError, match="no function for the platform"):
    lax.platform_dependent(1., tpu=lambda x: x)


def test_cond_and_switch_forms():
  assert float(lax.cond(True, lambda a, b: a + b, lambda a, b: a - b, 1., 2.)) == 3.
  assert float(lax.cond(False, lambda a: a, lambda a: -a, operand=2.)) == -2.
  assert float(lax.switch(1, [lambda a, b: a + b, lambda a, b: a * b], 3., 4.)) == 12.
  assert float(lax.switch(0, [lambda x: x, lambda x: -x], operand=2.)) == 2.
  out = lax.stop_gradient({"a": jnp.ones(2), "b": (3., jnp.arange(2))})
  assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(
      {"a": 0, "b": (0, 0)})
  assert float(jax.grad(lambda x: x * lax.stop_gradient({"k": x})["k"])(3.)) == 3.


def test_new_names_exist():
  names = ("AccuracyMode ConvGeneralDilatedDimensionNumbers DotAlgorithm DotAlgorithmPreset "
           "DotDimensionNumbers PrecisionLike RaggedDotDimensionNumbers Tolerance after_all_p "
           "approx_max_k approx_min_k approx_top_k_p broadcast_like "
           "conv_general_dilated_local conv_general_dilated_patches copy_p create_token_p "
           "dce_sink dce_sink_p dtype empty eq_to_p le_to_p lt_to_p mulhi mulhi_p "
           "optimization_barrier optimization_barrier_p platform_dependent ragged_dot "
           "ragged_dot_general rng_uniform rng_uniform_p scatter_apply shape_as_value split "
           "composite select_and_scatter_p scaled_dot "
           "split_p stack stack_p stage stage_p tile tile_p unstack unstack_p").split()
  missing = [n for n in names if not hasattr(lax, n)]
  assert not missing, missing


def test_composite():
  tangent = lax.composite(lambda x, *, scale=1.: jnp.sin(x) / jnp.cos(x) * scale,
                          name="my.tangent")
  np.testing.assert_allclose(tangent(1., scale=2.), 2 * np.tan(1.), rtol=1e-6)
  f = jax.jit(lambda x: tangent(x, scale=2.))
  np.testing.assert_allclose(f(0.5), 2 * np.tan(0.5), rtol=1e-6)
  text = f.lower(1.).as_text()
  assert 'stablehlo.composite "my.tangent"' in text and "func.func private @my.tangent" in text
  assert "scale = 2.000000e+00 : f64" in text
  assert "composite[" in str(jax.make_jaxpr(lambda x: tangent(x))(1.))
  # differentiated and batched through the decomposition
  check_grads(lambda x: tangent(x, scale=3.), (0.3,), order=2)
  _vmap_vs_loop(tangent, np.array([0.1, 0.2], np.float32))
  with pytest.raises(TypeError, match="attributes must be"):
    tangent(1., scale=[1, 2])


def test_select_and_scatter_primitive():
  from tracejax._src.lax.windowed import _select_and_scatter
  x = np.array([[1., 5., 2., 0.], [3., 4., 8., 1.]], np.float32)
  src = np.array([[10., 20.]], np.float32)
  args = (np.float32(0), (2, 2), (2, 2), "VALID", lambda a, b: a + b)
  out = _select_and_scatter(x, lambda a, b: a >= b, src, *args)      # at each max
  np.testing.assert_array_equal(out, [[0., 10., 0., 0.], [0., 0., 20., 0.]])
  out = jax.jit(lambda v: _select_and_scatter(v, lambda a, b: a <= b, src, *args))(x)
  np.testing.assert_array_equal(out, [[10., 0., 0., 20.], [0., 0., 0., 0.]])
  assert "select_and_scatter" in str(jax.make_jaxpr(
      lambda v: _select_and_scatter(v, lambda a, b: a >= b, src, *args))(x))
  out = jax.vmap(lambda v, s: _select_and_scatter(v, lambda a, b: a >= b, s, np.float32(0),
                                                  (2,), (2,), "VALID", lambda a, b: a + b))(
      x, np.ones((2, 2), np.float32))
  np.testing.assert_array_equal(out, [[0., 1., 1., 0.], [0., 1., 1., 0.]])


def test_scaled_dot():
  import ml_dtypes
  bf = lambda v: v.astype(ml_dtypes.bfloat16).astype(np.float32)
  lhs = RNG.randn(2, 3, 8).astype(np.float32)
  rhs = RNG.randn(2, 8, 4).astype(np.float32)
  ls = RNG.rand(2, 3, 2).astype(np.float32)   # one scale per run of 4 contraction entries
  rs = RNG.rand(2, 2, 4).astype(np.float32)
  got = lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs,
                       preferred_element_type=jnp.float32)
  a = bf(bf(lhs) * bf(np.repeat(ls, 4, axis=2)))   # formed in bfloat16, as JAX does
  b = bf(bf(rhs) * bf(np.repeat(rs, 4, axis=1)))
  np.testing.assert_allclose(got, np.einsum("bmk,bkn->bmn", a, b), rtol=1e-5, atol=1e-5)
  assert lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs).dtype == ml_dtypes.bfloat16
  out = jax.jit(lambda x, y: lax.scaled_dot(x, y, preferred_element_type=jnp.float32))(
      lhs[0], rhs[0])
  np.testing.assert_allclose(out, bf(lhs[0]) @ bf(rhs[0]), rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="multiple"):
    lax.scaled_dot(lhs, rhs, lhs_scale=RNG.rand(2, 3, 3).astype(np.float32))
