"""gather and scatter (lax), jax.ops, and NumPy indexing built on them.

The lax primitives are checked against loop-based NumPy references over several
dimension-number configurations (collapsed and offset dimensions in different
places, windows, several index components, batching dimensions) and all the
out-of-bounds modes; then check_grads, vmap against a Python loop, jax.ops's
seed examples and segment reductions, and jnp indexing against NumPy.
"""
import re

import numpy as np
import pytest

import lax_test_util as tu
import tracejax.numpy as jnp
from tracejax import ops
from tracejax._src.api import grad, jvp, make_jaxpr, vjp, vmap
from tracejax._src.config import config
from tracejax._src.jit import jit
from tracejax._src.lax import gather as G
from tracejax._src.lax import slicing as L
from tracejax._src.test_util import check_grads

GDN = G.GatherDimensionNumbers
SDN = G.ScatterDimensionNumbers
MODES = [None, "clip", "fill", "promise_in_bounds"]


# =============================================================================
# NumPy references (loops over index vectors, straight from XLA's semantics)
# =============================================================================

def _window_start(index_vec, batch_pos, operand_shape, sizes, index_map, operand_bdims,
                  indices_bdims):
  """The full start position of one window, or None if it is out of bounds."""
  start = [0] * len(operand_shape)
  for k, d in enumerate(index_map):
    start[d] = int(index_vec[k])
  for od, idd in zip(operand_bdims, indices_bdims):
    start[od] = batch_pos[idd]
  fits = all(0 <= start[d] <= operand_shape[d] - sizes[d] for d in index_map)
  clamped = [min(max(s, 0), n - z) for s, n, z in zip(start, operand_shape, sizes)]
  return clamped, fits


def gather_ref(operand, indices, dn, slice_sizes, mode=None, fill_value=None):
  mode = G.GatherScatterMode.from_any(mode) if mode is not None else None
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  batch_shape = indices.shape[:-1]
  out_rank = len(dn.offset_dims) + len(batch_shape)
  kept = [s for i, s in enumerate(slice_sizes) if i not in dropped]
  kept_it, batch_it = iter(kept), iter(batch_shape)
  out_shape = tuple(next(kept_it) if i in dn.offset_dims else next(batch_it)
                    for i in range(out_rank))
  out = np.zeros(out_shape, operand.dtype)
  batch_axes = [i for i in range(out_rank) if i not in dn.offset_dims]
  if fill_value is None:
    fill_value = (np.nan if operand.dtype in tu.INEXACT
                  else True if operand.dtype == np.bool_
                  else np.iinfo(operand.dtype).min if np.issubdtype(operand.dtype,
                                                                   np.signedinteger)
                  else np.iinfo(operand.dtype).max)
  for b in np.ndindex(*batch_shape):
    start, fits = _window_start(indices[b], b, operand.shape, slice_sizes,
                                dn.start_index_map, dn.operand_batching_dims,
                                dn.start_indices_batching_dims)
    window = operand[tuple(slice(s, s + z) for s, z in zip(start, slice_sizes))]
    window = window.reshape(kept)
    if mode == G.GatherScatterMode.FILL_OR_DROP and not fits:
      window = np.full(kept, fill_value, operand.dtype)
    pos = [slice(None)] * out_rank
    for ax, v in zip(batch_axes, b):
      pos[ax] = v
    out[tuple(pos)] = window
  return out


_COMBINE = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_sub": np.subtract,
            "scatter_mul": np.multiply, "scatter_min": np.minimum,
            "scatter_max": np.maximum}


def scatter_ref(kind, operand, indices, updates, dn, mode=None):
  mode = G.GatherScatterMode.from_any(mode)
  combine = _COMBINE[kind]
  if operand.dtype == np.bool_:
    combine = {"scatter_add": np.logical_or, "scatter_mul": np.logical_and,
               "scatter_min": np.logical_and, "scatter_max": np.logical_or}.get(kind, combine)
  out = operand.copy()
  sizes = G._scatter_window_sizes(operand.shape, updates.shape, dn)
  batch_shape = indices.shape[:-1]
  scatter_axes = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  for b in np.ndindex(*batch_shape):
    start, fits = _window_start(indices[b], b, operand.shape, sizes,
                                dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                dn.scatter_indices_batching_dims)
    if mode != G.GatherScatterMode.CLIP and not fits:
      continue  # XLA drops the windows that do not fit
    pos = [slice(None)] * updates.ndim
    for ax, v in zip(scatter_axes, b):
      pos[ax] = v
    window = updates[tuple(pos)].reshape(sizes)
    region = tuple(slice(s, s + z) for s, z in zip(start, sizes))
    out[region] = combine(out[region], window)
  return out


# Gather configurations: (name, operand shape, index batch shape, dimension numbers,
# slice sizes). The index vectors get len(start_index_map) components.
GATHER_CONFIGS = [
    ("rows", (4, 5), (3,), GDN((1,), (0,), (0,)), (1, 5)),
    ("points_2d", (4, 5), (6,), GDN((), (0, 1), (0, 1)), (1, 1)),
    ("windows", (6, 7), (2, 3), GDN((2, 3), (), (1,)), (2, 3)),
    ("offset_first", (5, 4), (3,), GDN((0,), (0,), (0,)), (1, 4)),
    ("reversed_map", (4, 5, 6), (2,), GDN((1,), (0, 2), (2, 0)), (1, 3, 1)),
    ("offset_middle", (3, 4, 5), (2, 2), GDN((1,), (0, 2), (0, 2)), (1, 2, 1)),
    ("batching", (3, 5, 4), (3, 2), GDN((2,), (1,), (1,), (0,), (0,)), (1, 1, 4)),
    ("scalar_batch", (6,), (), GDN((0,), (), (0,)), (3,)),
]


def _indices(rng, operand_shape, batch_shape, dn, slice_sizes, oob=True, dtype=np.int32):
  """Random index vectors: mostly in bounds, some beyond either end."""
  cols = []
  for d in dn.start_index_map:
    hi = operand_shape[d] - slice_sizes[d]
    lo_, hi_ = (-2, hi + 2) if oob else (0, hi)
    cols.append(rng.integers(lo_, hi_ + 1, batch_shape))
  return np.stack(cols, -1).astype(dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,oshape,bshape,dn,sizes",
                         [pytest.param(*c, id=c[0]) for c in GATHER_CONFIGS])
def test_gather_vs_numpy(name, oshape, bshape, dn, sizes, mode):
  rng = np.random.default_rng(0)
  x = tu.rand(rng, oshape, np.float32)
  idx = _indices(rng, oshape, bshape, dn, sizes)
  f = lambda x, i: G.gather(x, i, dn, sizes, mode=mode)
  expected = gather_ref(x, idx, dn, sizes, mode)
  tu.assert_close(f(x, idx), expected)
  tu.assert_close(jit(f)(x, idx), expected)
  aval = make_jaxpr(f)(x, idx).out_avals[0]
  assert aval.shape == expected.shape and aval.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, tu.bfloat16, np.complex64])
def test_gather_dtypes_and_fill(dtype):
  rng = np.random.default_rng(1)
  _, oshape, bshape, dn, sizes = GATHER_CONFIGS[0]
  x = tu.rand(rng, oshape, dtype)
  idx = np.array([[0], [3], [-1], [4]], np.int16)
  for mode, fill in [("fill", None), ("fill", 1), ("clip", None)]:
    out = G.gather(x, idx, dn, sizes, mode=mode, fill_value=fill)
    assert out.dtype == np.dtype(dtype)
    expected = gather_ref(x, idx, dn, sizes, mode,
                          None if fill is None else np.array(fill).astype(dtype))
    tu.assert_close(out, expected)


SCATTER_KINDS = {"scatter": G.scatter, "scatter_add": G.scatter_add,
                 "scatter_sub": G.scatter_sub, "scatter_mul": G.scatter_mul,
                 "scatter_min": G.scatter_min, "scatter_max": G.scatter_max}


def _scatter_case(config, seed=0, oob=True, dtype=np.float32):
  """(operand, indices, updates, scatter dnums) mirroring a gather configuration."""
  name, oshape, bshape, gdn, sizes = config
  rng = np.random.default_rng(seed)
  dn = G._scatter_dnums_of(gdn)
  idx = _indices(rng, oshape, bshape, gdn, sizes, oob=oob)
  ushape = G._gather_out_shape(tuple(bshape) + (len(gdn.start_index_map),), gdn, sizes)
  x = tu.rand(rng, oshape, dtype)
  u = tu.rand(rng, ushape, dtype)
  return x, idx, u, dn


@pytest.mark.parametrize("mode", [None, "clip", "promise_in_bounds"])
@pytest.mark.parametrize("kind", sorted(SCATTER_KINDS))
@pytest.mark.parametrize("config", [pytest.param(c, id=c[0]) for c in GATHER_CONFIGS])
def test_scatter_vs_numpy(config, kind, mode):
  x, idx, u, dn = _scatter_case(config)
  if kind == "scatter":
    # Where windows overlap the winner is unspecified, so every window writes the
    # values of one target array at its own position: any winner gives one answer.
    name, oshape, bshape, gdn, sizes = config
    target = tu.rand(np.random.default_rng(1), oshape, np.float32)
    u = gather_ref(target, idx, gdn, sizes, "clip")
  f = lambda x, i, u: SCATTER_KINDS[kind](x, i, u, dn, mode=mode)
  expected = scatter_ref(kind, x, idx, u, dn, mode)
  tu.assert_close(f(x, idx, u), expected, tol=1e-5)
  tu.assert_close(jit(f)(x, idx, u), expected, tol=1e-5)


def test_scatter_unique_overwrite():
  x = np.zeros((5, 3), np.float32)
  idx = np.array([[4], [0], [2], [7], [-1]], np.int32)
  u = np.arange(15, dtype=np.float32).reshape(5, 3)
  dn = SDN((1,), (0,), (0,))
  expected = scatter_ref("scatter", x, idx, u, dn)
  tu.assert_close(G.scatter(x, idx, u, dn, unique_indices=True), expected)
  clipped = scatter_ref("scatter", x, idx[:3], u[:3], dn, "clip")
  tu.assert_close(G.scatter(x, idx[:3], u[:3], dn, mode="clip"), clipped)


@pytest.mark.parametrize("kind", ["scatter_add", "scatter_mul", "scatter_min",
                                  "scatter_max", "scatter"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, tu.bfloat16])
def test_scatter_dtypes(kind, dtype):
  x, idx, u, dn = _scatter_case(GATHER_CONFIGS[0], seed=2, dtype=dtype)
  idx = np.array([[0], [3], [5]], np.int32)  # distinct, one out of bounds
  out = SCATTER_KINDS[kind](x, idx, u, dn)
  assert out.dtype == np.dtype(dtype)
  tu.assert_close(out, scatter_ref(kind, x, idx, u, dn), tol=2e-2)


def test_shape_errors():
  x = np.zeros((4, 5), np.float32)
  i = np.zeros((3, 1), np.int32)
  with pytest.raises(TypeError, match="collapse slice dims with bound 1"):
    G.gather(x, i, GDN((1,), (0,), (0,)), (2, 5))
  with pytest.raises(TypeError, match="start_index_map"):
    G.gather(x, np.zeros((3, 2), np.int32), GDN((1,), (0,), (0,)), (1, 5))
  with pytest.raises(TypeError, match="integer type"):
    G.gather(x, np.zeros((3, 1), np.float32), GDN((1,), (0,), (0,)), (1, 5))
  with pytest.raises(TypeError, match="GatherDimensionNumbers"):
    G.gather(x, i, ((1,), (0,), (0,)), (1, 5))
  with pytest.raises(TypeError, match="Updates tensor must be of rank"):
    G.scatter_add(x, i, np.zeros((3,), np.float32), SDN((1,), (0,), (0,)))
  with pytest.raises(TypeError, match="same dtypes"):
    G.scatter_add(x, i, np.zeros((3, 5), np.int32), SDN((1,), (0,), (0,)))
  # (complex scatter_min/max are lexicographic, as in JAX: tests/test_fuzz_finds_more.py)
  with pytest.raises(ValueError, match="Unknown gather mode"):
    G.gather(x, i, GDN((1,), (0,), (0,)), (1, 5), mode="wrap")


def test_jaxpr_params():
  x = np.zeros((4, 5), np.float32)
  i = np.zeros((3, 1), np.int32)
  text = str(make_jaxpr(lambda x, i: G.gather(x, i, GDN((1,), (0,), (0,)), (1, 5),
                                              mode="fill"))(x, i))
  assert "gather[" in text and "mode=GatherScatterMode.FILL_OR_DROP" in text
  assert "fill_value=nan" in text and "slice_sizes=(1, 5)" in text
  text = str(make_jaxpr(lambda x, i, u: G.scatter_add(x, i, u, SDN((1,), (0,), (0,))))(
      x, i, np.zeros((3, 5), np.float32)))
  assert "scatter-add[" in text


def test_index_take():
  x = np.arange(24).reshape(2, 3, 4)
  i, j = np.array([[0, 3], [1, -1]]), np.array([[1, 0], [-1, 1]])
  out = G.index_take(x, (i, j), (2, 0))
  np.testing.assert_array_equal(out, x[j, :, i])


# =============================================================================
# Derivatives
# =============================================================================

def _f64_case(config, seed=0, oob=False):
  x, idx, u, dn = _scatter_case(config, seed=seed, oob=oob, dtype=np.float64)
  return x, idx, u, dn


@pytest.mark.parametrize("mode", [None, "clip", "fill"])
@pytest.mark.parametrize("config", [pytest.param(c, id=c[0]) for c in GATHER_CONFIGS[:7]])
def test_gather_grads(x64, config, mode):
  name, oshape, bshape, dn, sizes = config
  rng = np.random.default_rng(3)
  x = rng.normal(size=oshape)
  # PROMISE_IN_BOUNDS gradients are only right in bounds; a NaN fill would make the
  # finite differences NaN.
  idx = _indices(rng, oshape, bshape, dn, sizes, oob=mode is not None)
  fill = 0. if mode == "fill" else None
  check_grads(lambda x: G.gather(x, idx, dn, sizes, mode=mode, fill_value=fill), (x,),
              order=2)


def test_gather_grad_matches_mode(x64):
  x = np.arange(5.)
  idx = np.array([[7], [-3], [1]])
  dn = GDN((), (0,), (0,))
  g = lambda mode: grad(lambda x: G.gather(x, idx, dn, (1,), mode=mode).sum())(x)
  np.testing.assert_allclose(g("clip"), [1, 1, 0, 0, 1])   # clamped reads count
  np.testing.assert_allclose(g("fill"), [0, 1, 0, 0, 0])   # filled reads do not


@pytest.mark.parametrize("mode", [None, "clip"])
@pytest.mark.parametrize("kind", ["scatter_add", "scatter_sub", "scatter", "scatter_min",
                                  "scatter_max"])
@pytest.mark.parametrize("config", [pytest.param(GATHER_CONFIGS[i], id=GATHER_CONFIGS[i][0])
                                    for i in (0, 2, 4, 6)])
def test_scatter_grads(x64, config, kind, mode):
  x, idx, u, dn = _f64_case(config, seed=4, oob=True)
  f = SCATTER_KINDS[kind]
  check_grads(lambda x, u: f(x, idx, u, dn, mode=mode), (x, u), order=2)


def test_scatter_mul_grads(x64):
  x, idx, u, dn = _f64_case(GATHER_CONFIGS[0], seed=5)
  check_grads(lambda x: G.scatter_mul(x, idx, u, dn), (x,), order=2)  # repeats allowed
  uidx = np.array([[3], [0], [2]])
  check_grads(lambda x, u: G.scatter_mul(x, uidx, u, dn, unique_indices=True), (x, u),
              order=2)
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    grad(lambda u: G.scatter_mul(x, idx, u, dn).sum())(u)


def test_scatter_unique_grads(x64):
  x, _, u, dn = _f64_case(GATHER_CONFIGS[0], seed=6)
  uidx = np.array([[3], [0], [2]])
  check_grads(lambda x, u: G.scatter(x, uidx, u, dn, unique_indices=True), (x, u), order=2)


def test_scatter_overwrite_duplicate_tangent(x64):
  # Whichever update wins, value and tangent must come from the same one.
  x = np.zeros(3)
  idx = np.array([[1], [1], [2]])
  u = np.array([5., 7., 9.])
  dn = SDN((), (0,), (0,))
  out, t = jvp(lambda u: G.scatter(x, idx, u, dn), (u,), (np.array([50., 70., 90.]),))
  out, t = np.asarray(out), np.asarray(t)
  assert out[1] in (5., 7.) and t[1] == out[1] * 10 and t[2] == 90. and t[0] == 0.


def test_scatter_max_tie_gradient(x64):
  x = np.array([1., 5., 0.])
  idx = np.array([[1], [1], [2]])
  u = np.array([5., 5., -1.])
  dn = SDN((), (0,), (0,))
  gx, gu = grad(lambda x, u: G.scatter_max(x, idx, u, dn).sum(), argnums=(0, 1))(x, u)
  # Position 1: the operand and two updates tie at 5 and share the gradient.
  np.testing.assert_allclose(gx, [1., 1 / 3, 1.])
  np.testing.assert_allclose(gu, [1 / 3, 1 / 3, 0.])


def test_gather_scatter_transposes(x64):
  # vjp of gather is scatter-add and vice versa (exact linear maps).
  rng = np.random.default_rng(7)
  dn = GDN((1,), (0,), (0,))
  x = rng.normal(size=(4, 3))
  idx = np.array([[1], [1], [3]])
  y, f_vjp = vjp(lambda x: G.gather(x, idx, dn, (1, 3)), x)
  ct = rng.normal(size=(3, 3))
  expected = np.zeros_like(x)
  np.add.at(expected, idx[:, 0], ct)
  np.testing.assert_allclose(f_vjp(ct)[0], expected)
  _, s_vjp = vjp(lambda u: G.scatter_add(x, idx, u, G._scatter_dnums_of(dn)), ct)
  np.testing.assert_allclose(s_vjp(x)[0], x[idx[:, 0]])


# =============================================================================
# vmap: one gather/scatter, equal to a Python loop
# =============================================================================

def _moved(a, ax):
  return a if ax is None or ax == 0 else np.moveaxis(a, 0, ax)


def _check_vmap(f, args, in_axes, tol=1e-6):
  size = next(a.shape[0] for a, ax in zip(args, in_axes) if ax is not None)
  batched = [a[0] if ax is None else _moved(a, ax) for a, ax in zip(args, in_axes)]
  out = vmap(f, in_axes=in_axes)(*batched)
  ref = np.stack([np.asarray(f(*[a[b] if ax is not None else a[0]
                                 for a, ax in zip(args, in_axes)])) for b in range(size)])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=tol, atol=tol)
  return make_jaxpr(vmap(f, in_axes=in_axes))(*batched)


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 1)])
@pytest.mark.parametrize("config", [pytest.param(GATHER_CONFIGS[i], id=GATHER_CONFIGS[i][0])
                                    for i in (0, 2, 6)])
def test_gather_vmap(config, in_axes, mode):
  name, oshape, bshape, dn, sizes = config
  rng = np.random.default_rng(8)
  B = 3
  xs = rng.normal(size=(B,) + oshape).astype(np.float32)
  idxs = np.stack([_indices(rng, oshape, bshape, dn, sizes) for _ in range(B)])
  jaxpr = _check_vmap(lambda x, i: G.gather(x, i, dn, sizes, mode=mode), [xs, idxs],
                      in_axes)
  assert str(jaxpr).count("gather[") == 1  # one gather, never a loop


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 0, None),
                                     (None, None, 0), (None, 0, 0), (1, None, 1)])
@pytest.mark.parametrize("kind", ["scatter_add", "scatter_mul", "scatter_max", "scatter"])
def test_scatter_vmap(kind, in_axes):
  rng = np.random.default_rng(9)
  B = 3
  dn = SDN((1,), (0,), (0,))
  xs = rng.normal(size=(B, 5, 2)).astype(np.float32)
  # Distinct indices per member (so the overwrite winner is unique), some out of bounds.
  idxs = np.stack([rng.permutation(7)[:3] - 1 for _ in range(B)])[..., None]
  us = rng.normal(size=(B, 3, 2)).astype(np.float32)
  f = lambda x, i, u: SCATTER_KINDS[kind](x, i, u, dn)
  jaxpr = _check_vmap(f, [xs, idxs, us], in_axes)
  assert len(re.findall(r"\bscatter(-\w+)?\[", str(jaxpr))) == 1


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (1, 0)])
def test_dynamic_slice_vmap_uses_gather(in_axes):
  rng = np.random.default_rng(10)
  xs = rng.normal(size=(4, 5, 6)).astype(np.float32)
  starts = np.array([[0, 1], [3, 5], [-1, 2], [2, 0]], np.int32)
  f = lambda x, s: L.dynamic_slice(x, (s[0], s[1]), (2, 3))
  jaxpr = _check_vmap(f, [xs, starts], in_axes)
  assert "gather[" in str(jaxpr)


def test_vmap_of_grad_of_gather():
  dn = GDN((), (0,), (0,))
  idxs = np.array([[[0], [0]], [[2], [1]]], np.int32)
  g = vmap(grad(lambda x, i: G.gather(x, i, dn, (1,)).sum()), in_axes=(None, 0))
  np.testing.assert_allclose(g(np.zeros(3, np.float32), idxs), [[2, 0, 0], [0, 1, 1]])


# =============================================================================
# jax.ops
# =============================================================================

def test_ops_seed_examples():
  x = ops.index_update(jnp.zeros((3, 3)), ops.index[1, :], 1.)
  np.testing.assert_array_equal(x, [[0, 0, 0], [1, 1, 1], [0, 0, 0]])
  y = ops.index_add(jnp.ones((5, 6)), ops.index[::2, 3:], 7.)
  expected = np.ones((5, 6))
  expected[::2, 3:] = 8.
  np.testing.assert_array_equal(y, expected)
  assert ops.index[1, :] == (1, slice(None))


def test_ops_index_fns():
  x = jnp.arange(6.)
  idx = ops.index[jnp.array([0, 2, 2])]
  np.testing.assert_array_equal(ops.index_add(x, idx, 1.), [1, 1, 4, 3, 4, 5])
  np.testing.assert_array_equal(ops.index_mul(x, idx, 2.), [0, 1, 8, 3, 4, 5])
  np.testing.assert_array_equal(ops.index_min(x, ops.index[1:3], 1.5), [0, 1, 1.5, 3, 4, 5])
  np.testing.assert_array_equal(ops.index_max(x, ops.index[-1], 9.), [0, 1, 2, 3, 4, 9])
  np.testing.assert_array_equal(x, np.arange(6.))  # the original is unchanged


def test_immutability_error():
  x = jnp.zeros(3)
  with pytest.raises(TypeError, match="JAX arrays are immutable; perhaps you want "
                                      "jax.ops.index_update or jax.ops.index_add"):
    x[0] = 1


@pytest.mark.parametrize("name,np_fn,empty", [
    ("segment_sum", np.add, 0), ("segment_prod", np.multiply, 1),
    ("segment_max", np.maximum, -np.inf), ("segment_min", np.minimum, np.inf)])
def test_segment_ops(name, np_fn, empty):
  rng = np.random.default_rng(11)
  data = rng.normal(size=(8, 2)).astype(np.float32)
  ids = np.array([0, 2, 2, -1, 5, 0, 7, 2])
  out = getattr(ops, name)(data, ids, num_segments=6)
  expected = np.full((6, 2), empty, np.float32)
  for i, s in enumerate(ids):
    if 0 <= s < 6:
      expected[s] = np_fn(expected[s], data[i])
  tu.assert_close(out, expected, tol=1e-5)
  jitted = jit(lambda d, s: getattr(ops, name)(d, s, 6))(data, ids)
  tu.assert_close(jitted, expected, tol=1e-5)


def test_segment_sum_defaults_and_grad():
  out = ops.segment_sum(jnp.arange(5), jnp.array([0, 0, 1, 1, 2]))
  assert out.dtype == jnp.int32
  np.testing.assert_array_equal(out, [1, 5, 4])
  g = grad(lambda d: (ops.segment_sum(d, np.array([1, 1, 0]), 2) ** 2).sum())(
      np.array([1., 2., 3.], np.float32))
  np.testing.assert_allclose(g, [6., 6., 6.])
  with pytest.raises(Exception, match="num_segments"):
    jit(lambda d, s: ops.segment_sum(d, s))(np.ones(3), np.array([0, 1, 1]))


# =============================================================================
# jax.numpy indexing: x[idx], x.at[idx], take, take_along_axis
# =============================================================================

from tracejax._src.numpy import indexing as I  # noqa: E402

_X = np.arange(60).reshape(3, 4, 5)

ADVANCED = [
    ([0, 2],), (np.array([[0, 1], [2, 2]]),), (slice(None), [1, 3]),
    (slice(None), 0, [1, 2]),                     # contiguous group: stays in place
    (0, slice(None), [1, 2]),                     # split group: goes first
    ([0, 1], [1, 2], [3, 4]), ([[0], [1]], [1, 2]),  # broadcasting index arrays
    (slice(None, None, -1), [1, 2]), (slice(1, None, 2), [0, -1], slice(None, None, -2)),
    (None, [0, 1], None, 2), ([0, 1], None, [1, 2]), (Ellipsis, [4, 0]),
    (1, None, slice(1, 3), [0, 0, 4]), ([],), (np.array([], int),), ([-3, 2],),
    (slice(2, 0, -1), slice(None), np.array(2)), (slice(0, 2), [0, 2], slice(1, 4)),
    (_X > 30,), (slice(None), _X[0] > 3), (slice(None), _X[0, :, 0] > 6),
    (np.array([True, False, True]), 1), (True, 0), (False,), (0, [1, 1, 3], None),
]


@pytest.mark.parametrize("idx", ADVANCED, ids=repr)
def test_advanced_getitem(idx):
  jx = jnp.asarray(_X)
  expected = _X[idx]
  out = jx[idx]
  assert out.shape == expected.shape and out.dtype == jnp.int32
  np.testing.assert_array_equal(out, expected)
  has_mask = any(isinstance(i, np.ndarray) and i.dtype == bool for i in idx)
  if not has_mask:
    np.testing.assert_array_equal(jit(lambda x: x[idx])(jx), expected)


def test_traced_index_arrays():
  x = jnp.asarray(_X)
  f = jit(lambda x, i, j: x[i, 1:, j])
  i, j = np.array([[2], [0]]), np.array([-1, 1, 3])
  np.testing.assert_array_equal(f(x, i, j), _X[i, 1:, j])
  jaxpr = str(make_jaxpr(lambda x, i: x[i, 1:3])(x, jnp.array([0, 2])))
  assert jaxpr.count("gather[") == 1 and "dynamic_slice" not in jaxpr


def test_out_of_bounds_reads_clamp_and_updates_drop():
  x = jnp.arange(10)
  assert repr(x[11]) == "DeviceArray(9, dtype=int32)"
  np.testing.assert_array_equal(x[jnp.array([11, -11, -1])], [9, 0, 9])
  np.testing.assert_array_equal(x.at[11].set(0), np.arange(10))
  np.testing.assert_array_equal(x.at[jnp.array([11, -11, 2])].add(100),
                                np.arange(10) + 100 * (np.arange(10) == 2))
  np.testing.assert_array_equal(x.at[jnp.array([11, 0])].set(-1, mode="clip"),
                                [-1] + list(range(1, 9)) + [-1])
  np.testing.assert_array_equal(jit(lambda x, i: x.at[i].set(0))(x, 12), np.arange(10))
  out = jnp.arange(4.).at[jnp.array([1, 4, -5])].get(mode="fill", fill_value=-1.)
  np.testing.assert_array_equal(out, [1., -1., -1.])
  assert np.isnan(jnp.arange(4.).at[7].get(mode="fill"))


def test_boolean_masks_need_concrete_values():
  x = jnp.arange(6.)
  np.testing.assert_array_equal(x[x > 2], [3., 4., 5.])
  with pytest.raises(IndexError, match="Array boolean indices must be concrete"):
    jit(lambda x: x[x > 2])(x)
  with pytest.raises(I.NonConcreteBooleanIndexError):
    jit(lambda x: x.at[x > 2].set(jnp.arange(3.)))(x)
  # A scalar update under a concrete mask is a select; a traced mask is JAX's error
  # too (JAX 0.10.2: NonConcreteBooleanIndexError under jit and vmap), so nothing
  # works here that fails there.
  np.testing.assert_array_equal(x.at[x > 2].set(0.), [0, 1, 2, 0, 0, 0])
  np.testing.assert_array_equal(grad(lambda x: x.at[x > 2].add(1.).sum())(x), [1.] * 6)
  for upd in (lambda x: x.at[x > 2].set(0.), lambda x: x.at[x > 2].mul(2.)):
    with pytest.raises(I.NonConcreteBooleanIndexError, match="got bool\\[6\\]"):
      jit(upd)(x)
    with pytest.raises(I.NonConcreteBooleanIndexError):
      vmap(upd)(x[None])
  np.testing.assert_array_equal(x.at[np.array([True, False] * 3)].add(jnp.array([1., 2., 3.])),
                                [1, 1, 4, 3, 7, 5])


def test_index_errors():
  x = jnp.zeros((3, 4))
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[1.5]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type"):
    x[jnp.array([1.0])]
  with pytest.raises(IndexError, match="Too many indices"):
    x[0, 0, 0]
  with pytest.raises(IndexError, match="shape mismatch"):
    x[[0, 1], [0, 1, 2]]
  with pytest.raises(IndexError, match="boolean index did not match"):
    x[np.array([True, False])]
  with pytest.raises(TypeError, match="non-tuple sequence"):
    x[[0, slice(None)]]
  with pytest.raises(TypeError, match="JAX arrays are immutable; perhaps you want "
                                      "jax.ops.index_update"):
    x[0] = 1.


UPDATE_INDICES = [1, -1, (0, slice(1, 3)), (slice(None, None, 2), 3), slice(4, 1, -1),
                  (slice(None), slice(None, None, -2)), (Ellipsis, 2), (slice(1, None), None),
                  ([0, 0, 4],), (np.array([[1], [3]]), [0, 5, 5]), (slice(None), [2, -1, 2]),
                  (np.array([4, 0, 4]), slice(1, None, 2)), np.arange(30).reshape(5, 6) % 4 == 1,
                  (jnp.array([1, 1]), 2), (..., None), ()]


@pytest.mark.parametrize("method,ufunc", [("set", None), ("add", np.add),
                                          ("multiply", np.multiply), ("min", np.minimum),
                                          ("max", np.maximum), ("subtract", np.subtract)])
@pytest.mark.parametrize("idx", UPDATE_INDICES, ids=repr)
def test_at_updates_vs_numpy(idx, method, ufunc):
  x = np.arange(30, dtype=np.float32).reshape(5, 6)
  np_idx = tuple(np.asarray(i) if isinstance(i, jnp.ndarray) else i for i in idx) \
      if isinstance(idx, tuple) else idx
  shape = x[np_idx].shape
  v = (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7) - 3
  expected = x.copy()
  if ufunc is None:
    if isinstance(np_idx, list) or (isinstance(np_idx, tuple) and any(
        isinstance(i, (list, np.ndarray)) for i in np_idx)):
      # Repeated positions: which update wins is unspecified; write one per position.
      v = np.broadcast_to(x[np_idx] * -2, shape).copy()
    expected[np_idx] = v
  else:
    ufunc.at(expected, np_idx, v)
  out = getattr(jnp.asarray(x).at[idx], method)(v)
  np.testing.assert_allclose(out, expected)
  if not (isinstance(idx, np.ndarray) and idx.dtype == bool):
    np.testing.assert_allclose(jit(lambda x, v: getattr(x.at[idx], method)(v))(x, v),
                               expected)


def test_at_other_methods():
  x = jnp.arange(1., 7.)
  np.testing.assert_allclose(x.at[jnp.array([0, 0, 5])].divide(2.), [.25, 2, 3, 4, 5, 3])
  np.testing.assert_allclose(x.at[1:3].power(2.), [1, 4, 9, 4, 5, 6])
  np.testing.assert_allclose(x.at[jnp.array([2, 2])].apply(jnp.negative), [1, 2, -3, 4, 5, 6])
  np.testing.assert_allclose(x.at[::2].get(), [1, 3, 5])
  np.testing.assert_allclose(x.at[4].mul(10.), [1, 2, 3, 4, 50, 6])
  assert x.at[0].set(7).dtype == x.dtype  # updates take x's dtype
  b = jnp.zeros(4, bool).at[jnp.array([1, 1])].add(True)
  np.testing.assert_array_equal(b, [False, True, False, False])


def test_indexing_grads(x64):
  x = np.random.default_rng(12).normal(size=(4, 5))
  idx = np.array([0, 3, 3, -1])
  check_grads(lambda x: x[idx, 1:4], (x,), order=2)
  check_grads(lambda x: x[:, ::-2][[1, 1], None], (x,), order=2)
  check_grads(lambda x: x[x[:, 0] > 0], (x,), order=1)
  check_grads(lambda x, v: jnp.asarray(x).at[idx, 2].add(v), (x, np.ones(4)), order=2)
  check_grads(lambda x, v: jnp.asarray(x).at[idx].set(v),
              (x, np.arange(20.).reshape(4, 5)), order=2)
  check_grads(lambda x, v: jnp.asarray(x).at[1:3, ::2].multiply(v),
              (x, np.full((2, 3), 1.5)), order=2)
  # Distinct values: at ties the derivative is an average, not a finite difference.
  offsets = np.array([[.25], [.5], [.75], [1.]])
  check_grads(lambda x, v: jnp.asarray(x).at[idx].max(v), (x, x[idx] + offsets), order=1)
  check_grads(lambda x, v: jnp.asarray(x).at[idx].min(v), (x, x[idx] - offsets), order=1)


def test_indexing_vmap():
  x = jnp.asarray(_X, jnp.float32)
  idx = np.array([[0, 1], [2, 2], [1, 0]])
  out = vmap(lambda x, i: x[i, ::2])(x, idx)
  np.testing.assert_array_equal(out, np.stack([_X[b][idx[b], ::2] for b in range(3)]))
  out = vmap(lambda i: x[:, i])(jnp.array([3, 0]))
  np.testing.assert_array_equal(out, np.stack([_X[:, 3], _X[:, 0]]))
  out = vmap(lambda x, i, v: x.at[i].add(v), in_axes=(0, 0, None))(x, idx, 1.)
  expected = _X.astype(np.float32).copy()
  for b in range(3):
    np.add.at(expected[b], idx[b], 1.)
  np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis, mode):
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  idx = np.array([[0, 5], [-1, 7]])
  out = I.take(x, idx, axis=axis, mode=mode)
  if mode in ("clip", "wrap"):
    expected = np.take(x, idx, axis=axis, mode=mode)
  else:  # 'fill': negative indices wrap once, the rest of out-of-bounds reads are NaN
    src, ax = (x.ravel(), 0) if axis is None else (x, axis % x.ndim)
    n = src.shape[ax]
    ok = (idx >= -n) & (idx < n)
    expected = np.take(src, np.where(ok, idx, 0), axis=ax)
    ok = ok.reshape((1,) * ax + idx.shape + (1,) * (src.ndim - ax - 1))
    expected = np.where(ok, expected, np.nan)
  np.testing.assert_array_equal(out, expected)


def test_take_along_axis():
  rng = np.random.default_rng(13)
  x = rng.normal(size=(3, 4, 5)).astype(np.float32)
  for axis in (0, 1, 2, -1):
    idx = np.argsort(x, axis=axis)
    np.testing.assert_array_equal(I.take_along_axis(x, idx, axis), np.sort(x, axis=axis))
  idx = np.array([[[0, 4]], [[1, 1]], [[-1, 2]]])  # broadcasts along axis 1
  np.testing.assert_array_equal(I.take_along_axis(x, idx, 2), np.take_along_axis(x, idx, 2))
  np.testing.assert_array_equal(I.take_along_axis(x, np.array([3, 59]), None),
                                x.ravel()[[3, 59]])
  out = I.take_along_axis(x, np.array([[[9]]]), 2, fill_value=-1.)
  np.testing.assert_array_equal(out, np.full((3, 4, 1), -1., np.float32))
  g = grad(lambda x: I.take_along_axis(x, np.array([[0, 0, 1]]), 1).sum())(np.ones((2, 2)))
  np.testing.assert_array_equal(g, [[2, 1], [2, 1]])


def test_public_take_and_boolean_index_error():
  import tracejax.numpy as jnp_public
  from tracejax.errors import NonConcreteBooleanIndexError
  x = np.arange(12.).reshape(3, 4)
  np.testing.assert_array_equal(jnp_public.take(x, np.array([0, 2]), axis=1),
                                np.take(x, [0, 2], axis=1))
  idx = np.array([[0], [3], [1]])
  np.testing.assert_array_equal(jnp_public.take_along_axis(x, idx, axis=1),
                                np.take_along_axis(x, idx, axis=1))
  with pytest.raises(NonConcreteBooleanIndexError):
    jit(lambda x: x[x > 2])(x)
