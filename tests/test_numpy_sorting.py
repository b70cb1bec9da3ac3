"""jax.numpy sorting and searching: sort, argsort, msort, lexsort, sort_complex,
partition, argpartition, searchsorted, unique, and the `x.sort()`/`x.argsort()` methods.

Each is compared with NumPy on several dtypes (NaNs and signed zeros included
for floats), run under `jit`, mapped with `vmap` against a Python loop, and,
where differentiable, checked against finite differences.
"""
import numpy as np
import pytest

import tracejax.numpy as jnp
from tracejax._src import errors
from tracejax._src.api import vmap
from tracejax._src.jit import jit
from tracejax._src.lax import sorting as lax_sort
from tracejax._src.test_util import check_grads


def _data(dtype, shape=(4, 7), seed=0):
  rng = np.random.default_rng(seed)
  if dtype == np.bool_:
    return rng.integers(0, 2, shape).astype(bool)
  if np.issubdtype(dtype, np.integer):
    lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -5
    return rng.integers(lo, 6, shape).astype(dtype)  # many ties
  if np.issubdtype(dtype, np.complexfloating):
    return (rng.integers(-2, 3, shape) + 1j * rng.integers(-2, 3, shape)).astype(dtype)
  x = np.round(rng.standard_normal(shape), 1).astype(dtype)
  x.flat[::5] = np.nan
  x.flat[1] = -0.0
  x.flat[2] = 0.0
  x.flat[3] = np.inf
  x.flat[4] = -np.inf
  return x


DTYPES = [np.float32, np.int32, np.uint8, np.bool_, np.complex64]


# ---- sort / argsort ----

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_argsort_match_numpy(dtype):
  x = _data(dtype)
  for axis in (-1, 0, None):
    np.testing.assert_array_equal(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    np.testing.assert_array_equal(jnp.argsort(x, axis=axis),
                                  np.argsort(x, axis=axis, kind="stable"))
  np.testing.assert_array_equal(jit(jnp.sort)(x), np.sort(x))
  np.testing.assert_array_equal(jit(lambda v: jnp.argsort(v, axis=0))(x),
                                np.argsort(x, axis=0, kind="stable"))
  # Array methods are functional.
  np.testing.assert_array_equal(jnp.asarray(x).sort(axis=0), np.sort(x, axis=0))
  np.testing.assert_array_equal(jnp.asarray(x).argsort(), np.argsort(x, kind="stable"))


def test_sort_descending_and_kwargs():
  x = np.array([3., 1., 2., 1., 3., np.nan, 0.])
  np.testing.assert_array_equal(jnp.sort(x, descending=True), np.sort(x)[::-1])
  # Stable descending: ties keep their input order.
  np.testing.assert_array_equal(jnp.argsort(x, descending=True), [5, 0, 4, 2, 1, 3, 6])
  assert jnp.argsort(x).dtype == np.int32
  assert jnp.argsort(x, dtype=np.int16).dtype == np.int16
  for kind in ("quicksort", "mergesort", "heapsort", "stable"):
    np.testing.assert_array_equal(jnp.sort(x, kind=kind), np.sort(x))
  np.testing.assert_array_equal(jnp.sort(x, stable=False), np.sort(x))
  np.testing.assert_array_equal(jnp.sort([3, 1, 2]), [1, 2, 3])
  np.testing.assert_array_equal(jnp.sort(np.float32(2.), axis=None), [2.])
  with pytest.raises(TypeError, match="order"):
    jnp.sort(x, order="a")
  with pytest.raises(ValueError, match="kind"):
    jnp.argsort(x, kind="bogo")
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sort(x, axis=1)
  with pytest.raises(TypeError, match="integer"):
    jnp.argsort(x, dtype=np.float32)


def test_msort_sort_complex_lexsort():
  x = _data(np.int32, (5, 3))
  np.testing.assert_array_equal(jnp.msort(x), np.sort(x, axis=0))
  np.testing.assert_array_equal(jnp.sort_complex(x), np.sort_complex(x))
  assert jnp.sort_complex(x).dtype == np.complex64
  c = _data(np.complex64, (6,))
  np.testing.assert_array_equal(jnp.sort_complex(c), np.sort_complex(c))
  a, b, f = _data(np.int32, (9,), 1), _data(np.bool_, (9,), 2), _data(np.float32, (9,), 3)
  np.testing.assert_array_equal(jnp.lexsort((a, b, f)), np.lexsort((a, b, f)))
  np.testing.assert_array_equal(jit(jnp.lexsort)((a, b)), np.lexsort((a, b)))
  k2 = _data(np.int32, (2, 3, 5), 4)
  np.testing.assert_array_equal(jnp.lexsort(k2, axis=0), np.lexsort(k2, axis=0))
  with pytest.raises(TypeError, match="len > 0"):
    jnp.lexsort(())
  with pytest.raises(ValueError, match="same shape"):
    jnp.lexsort((a, a[:3]))


def test_sort_grads_and_vmap(x64):
  rng = np.random.default_rng(1)
  x = rng.standard_normal((3, 5))
  check_grads(lambda v: jnp.sort(v, axis=0), (x,), 2)
  check_grads(lambda v: jnp.sort(v, axis=None, descending=True), (x,), 2)
  # Multi-operand sort: differentiable in the values, keys fixed.
  keys = rng.permutation(5).astype(np.float64)
  check_grads(lambda v: lax_sort.sort_key_val(keys, v)[1], (x[0],), 2)
  for f in (jnp.sort, jnp.argsort, lambda v: jnp.sort(v, descending=True)):
    np.testing.assert_array_equal(vmap(f)(x), np.stack([f(r) for r in x]))
    np.testing.assert_array_equal(vmap(f, in_axes=1)(x), np.stack([f(c) for c in x.T]))
  # A batched value sorted by an unbatched key, and the other way round.
  out = vmap(lambda v: lax_sort.sort_key_val(keys, v)[1])(x)
  np.testing.assert_array_equal(out, x[:, np.argsort(keys)])
  out = vmap(lambda k: lax_sort.sort_key_val(k, keys)[1])(x)
  np.testing.assert_array_equal(out, np.stack([keys[np.argsort(r)] for r in x]))


# ---- partition ----

def _check_partition(part, x, kth, axis):
  s = np.sort(x, axis=axis)
  part = np.moveaxis(np.asarray(part), axis, -1)
  s = np.moveaxis(s, axis, -1)
  np.testing.assert_array_equal(part[..., kth], s[..., kth])
  np.testing.assert_array_equal(np.sort(part, axis=-1), s)
  assert np.all(part[..., :kth] <= part[..., kth:kth + 1])
  assert np.all(part[..., kth + 1:] >= part[..., kth:kth + 1])


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8], ids=lambda d: d.__name__)
def test_partition(dtype):
  x = _data(dtype, (4, 7))
  if dtype == np.float32:
    x = np.nan_to_num(x, nan=7.0)
  for kth, axis in ((3, -1), (0, 0), (-1, 1), (6, 1)):
    _check_partition(jnp.partition(x, kth, axis), x, kth % x.shape[axis], axis)
    idx = jnp.argpartition(x, kth, axis)
    _check_partition(np.take_along_axis(x, np.asarray(idx), axis), x, kth % x.shape[axis],
                     axis)
  # JAX's layout: the bottom part ascending, the top descending / in index order.
  v = np.array([5, 3, 8, 1, 9, 2, 7])
  np.testing.assert_array_equal(jnp.partition(v, 3), [1, 2, 3, 5, 9, 8, 7])
  np.testing.assert_array_equal(jnp.argpartition(v, 3), [3, 5, 1, 0, 2, 4, 6])
  np.testing.assert_array_equal(jnp.asarray(v).argpartition(3), [3, 5, 1, 0, 2, 4, 6])
  np.testing.assert_array_equal(jit(jnp.partition, static_argnums=1)(v, 3),
                                [1, 2, 3, 5, 9, 8, 7])
  # No overflow at the int range's ends.
  w = np.array([np.iinfo(np.int32).min, 0, np.iinfo(np.int32).max, -1], np.int32)
  np.testing.assert_array_equal(jnp.partition(w, 1)[:2], np.sort(w)[:2])
  with pytest.raises(ValueError, match="kth"):
    jnp.partition(v, 7)


def test_partition_grads_vmap(x64):
  x = np.random.default_rng(2).standard_normal((3, 6))
  check_grads(lambda v: jnp.partition(v, 2), (x,), 2)
  np.testing.assert_array_equal(vmap(lambda r: jnp.argpartition(r, 1))(x),
                                np.stack([jnp.argpartition(r, 1) for r in x]))


# ---- searchsorted ----

METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]


@pytest.mark.parametrize("method", METHODS)
def test_searchsorted(method):
  a = np.sort(_data(np.float32, (11,), 5))
  v = np.concatenate([a, [np.nan, -np.inf, np.inf, 0.05, 100.]]).reshape(4, 4)
  for side in ("left", "right"):
    expect = np.searchsorted(a, v, side=side)
    got = jnp.searchsorted(a, v, side=side, method=method)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expect)
    np.testing.assert_array_equal(
        jit(lambda a, v: jnp.searchsorted(a, v, side=side, method=method))(a, v), expect)
  ai = np.sort(_data(np.int32, (9,), 6))
  np.testing.assert_array_equal(jnp.searchsorted(ai, [-9, 0, 2, 9], method=method),
                                np.searchsorted(ai, [-9, 0, 2, 9]))
  ab = np.array([False, False, True])
  np.testing.assert_array_equal(jnp.searchsorted(ab, [True, False], side="right",
                                                 method=method), [3, 2])
  ac = np.sort_complex(_data(np.complex64, (8,), 7))
  vc = _data(np.complex64, (5,), 8)
  np.testing.assert_array_equal(jnp.searchsorted(ac, vc, method=method),
                                np.searchsorted(ac, vc))
  np.testing.assert_array_equal(jnp.searchsorted(np.zeros(0), [1., 2.], method=method), [0, 0])


def test_searchsorted_sorter_vmap_errors():
  rng = np.random.default_rng(3)
  a = rng.standard_normal(10).astype(np.float32)
  v = rng.standard_normal(6).astype(np.float32)
  sorter = np.argsort(a)
  np.testing.assert_array_equal(jnp.searchsorted(a, v, sorter=sorter),
                                np.searchsorted(a, v, sorter=sorter))
  np.testing.assert_array_equal(jnp.asarray(np.sort(a)).searchsorted(v, side="right"),
                                np.searchsorted(np.sort(a), v, side="right"))
  aa = np.sort(rng.standard_normal((3, 10)).astype(np.float32), axis=1)
  np.testing.assert_array_equal(vmap(jnp.searchsorted)(aa, v[:3]),
                                [np.searchsorted(r, q) for r, q in zip(aa, v[:3])])
  np.testing.assert_array_equal(vmap(jnp.searchsorted, in_axes=(None, 0))(aa[0], v),
                                np.searchsorted(aa[0], v))
  with pytest.raises(ValueError, match="1-dimensional"):
    jnp.searchsorted(aa, v)
  with pytest.raises(ValueError, match="side"):
    jnp.searchsorted(a, v, side="middle")
  with pytest.raises(ValueError, match="method"):
    jnp.searchsorted(a, v, method="magic")


# ---- unique ----

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=lambda d: d.__name__)
def test_unique_matches_numpy(dtype):
  x = _data(dtype, (3, 8))
  for kw in ({}, {"return_index": True, "return_inverse": True, "return_counts": True}):
    got = jnp.unique(x, **kw)
    exp = np.unique(x, **kw)
    for g, e in zip(got if kw else (got,), exp if kw else (exp,)):
      assert g.shape == e.shape
      np.testing.assert_array_equal(g, e)
  if dtype == np.float32:
    np.testing.assert_array_equal(jnp.unique(x, equal_nan=False), np.unique(x, equal_nan=False))


def test_unique_axis():
  x = np.array([[3, 1, 0], [1, 5, 2], [3, 1, 0], [1, 5, 1]])
  for axis in (0, 1, -1):
    got = jnp.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    exp = np.unique(x, axis=axis, return_index=True, return_inverse=True, return_counts=True)
    for g, e in zip(got, exp):
      np.testing.assert_array_equal(g, e)
  out = jnp.unique(x, axis=0, size=5, return_counts=True)
  np.testing.assert_array_equal(out[0], [[1, 5, 1], [1, 5, 2], [3, 1, 0], [1, 5, 1],
                                         [1, 5, 1]])
  np.testing.assert_array_equal(out[1], [1, 1, 2, 0, 0])


def test_unique_size_under_jit_and_vmap():
  x = np.array([3, 1, 1, 5])
  f = jit(lambda v: jnp.unique(v, size=6, fill_value=-7, return_index=True,
                               return_inverse=True, return_counts=True))
  vals, idx, inv, cnt = f(x)
  np.testing.assert_array_equal(vals, [1, 3, 5, -7, -7, -7])
  np.testing.assert_array_equal(idx, [1, 0, 3, 1, 1, 1])
  np.testing.assert_array_equal(inv, [1, 0, 0, 2])
  np.testing.assert_array_equal(cnt, [2, 1, 1, 0, 0, 0])
  # Default fill: the smallest unique value; a smaller size truncates.
  np.testing.assert_array_equal(jnp.unique(x, size=5), [1, 3, 5, 1, 1])
  np.testing.assert_array_equal(jnp.unique(x, size=2), [1, 3])
  rows = np.array([[2, 2, 1], [0, 0, 0], [4, 3, 4]])
  np.testing.assert_array_equal(vmap(lambda r: jnp.unique(r, size=3, fill_value=9))(rows),
                                [[1, 2, 9], [0, 9, 9], [3, 4, 9]])
  with pytest.raises(errors.ConcretizationTypeError, match="size"):
    jit(jnp.unique)(x)
  np.testing.assert_array_equal(jnp.unique(np.zeros(0)), np.zeros(0))
