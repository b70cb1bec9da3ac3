"""jax.numpy of today: the array-API names, set operations, index-notation helpers,
in-place-style updates, NaN reductions, frexp/ldexp, ufunc objects, the narrow
ml_dtypes types, the modern Array methods and *_like of a ShapeDtypeStruct.

Checked against NumPy, under jit, and with vmap/grad where they apply.
"""
import collections
import warnings

import ml_dtypes
import numpy as np
import pytest

from tracejax._src.api import grad, vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads
import tracejax.numpy as jnp


def _eq(actual, expected, **kw):
  np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), **kw)
  assert np.asarray(actual).shape == np.asarray(expected).shape


RNG = np.random.RandomState(0)


# ---- the array API's names ----

def test_aliases_are_the_numpy_functions():
  x = np.array([0.1, 0.5, 0.9], np.float32)
  for new, old in [("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan),
                   ("acosh", lambda v: np.arccosh(v + 1)), ("asinh", np.arcsinh),
                   ("atanh", np.arctanh)]:
    f = getattr(jnp, new)
    arg = x + 1 if new == "acosh" else x
    _eq(jit(f)(arg), old(x), rtol=1e-6)
  _eq(jnp.atan2(x, 1 - x), np.arctan2(x, 1 - x), rtol=1e-6)
  _eq(jnp.pow(x, 2.0), x ** 2, rtol=1e-6)
  i = np.array([1, 2, 12], np.int32)
  _eq(jnp.bitwise_left_shift(i, 2), i << 2)
  _eq(jnp.bitwise_right_shift(i, 1), i >> 1)
  _eq(jnp.bitwise_invert(i), ~i)
  _eq(jnp.bitwise_count(np.array([7, -1, 0, 255], np.int32)),
      np.bitwise_count(np.array([7, -1, 0, 255], np.int32)))
  assert jnp.bitwise_count(np.array([3], np.int16)).dtype == np.uint8


def test_astype():
  x = jnp.array([1.7, -2.5])
  out = jit(lambda v: jnp.astype(v, jnp.int32))(x)
  assert out.dtype == np.int32
  _eq(out, [1, -2])
  assert jnp.astype(x, None).dtype == np.float32
  # complex to real keeps the real part, with JAX 0.10.2's DeprecationWarning (the
  # method too; lax.convert_element_type gives NumPy's ComplexWarning instead)
  z = jnp.array([1 + 2j, 2j])
  msg = "Casting from complex to real dtypes will soon raise a ValueError"
  with pytest.warns(DeprecationWarning, match=msg) as rec:
    _eq(jnp.astype(z, jnp.float32), [1.0, 0.0])
  assert rec[0].filename == __file__                    # (points at the caller)
  with pytest.warns(DeprecationWarning, match=msg):
    _eq(jit(lambda v: v.astype(jnp.int32))(z), [1, 0])
  with warnings.catch_warnings():
    warnings.simplefilter("error")                      # (no warning for these)
    _eq(z.astype(bool), [True, True])
    assert z.astype(jnp.complex64).dtype == np.complex64
  _eq(grad(lambda v: jnp.astype(v, jnp.float32).sum())(x), [1.0, 1.0])


def test_concat_permute_unstack_matrix_transpose():
  a, b = RNG.randn(2, 3).astype(np.float32), RNG.randn(1, 3).astype(np.float32)
  _eq(jit(lambda p, q: jnp.concat([p, q]))(a, b), np.concatenate([a, b]))
  _eq(jnp.concat([a, b], axis=None), np.concatenate([a.ravel(), b.ravel()]))
  x = RNG.randn(2, 3, 4).astype(np.float32)
  _eq(jnp.permute_dims(x, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
  _eq(jnp.matrix_transpose(x), np.swapaxes(x, -1, -2))
  with pytest.raises(ValueError, match="at least 2"):
    jnp.matrix_transpose(jnp.ones(3))
  parts = jit(lambda v: jnp.unstack(v, axis=1))(x)
  assert isinstance(parts, tuple) and len(parts) == 3
  for i, p in enumerate(parts):
    _eq(p, x[:, i])
  with pytest.raises(ValueError):
    jnp.unstack(jnp.float32(1))


def test_vecdot_matvec_vecmat():
  x1 = (RNG.randn(2, 3) + 1j * RNG.randn(2, 3)).astype(np.complex64)
  x2 = (RNG.randn(3) + 1j * RNG.randn(3)).astype(np.complex64)
  _eq(jit(jnp.vecdot)(x1, x2), np.vecdot(x1, x2), rtol=1e-5)
  a = RNG.randn(4, 2, 3).astype(np.float32)
  _eq(jnp.vecdot(a, a[0], axis=-2), np.vecdot(a, a[0], axis=-2), rtol=1e-5)
  _eq(jnp.vecdot(a, a, axis=1), np.vecdot(a, a, axis=1), rtol=1e-5)
  m, v = RNG.randn(5, 2, 3).astype(np.float32), RNG.randn(3).astype(np.float32)
  _eq(jnp.matvec(m, v), np.einsum("bij,j->bi", m, v), rtol=1e-5)
  w = RNG.randn(2).astype(np.float32)
  _eq(jnp.vecmat(w, m), np.einsum("i,bij->bj", w, m), rtol=1e-5)
  _eq(vmap(jnp.vecdot)(a, a), np.stack([np.vecdot(t, t) for t in a]), rtol=1e-5)
  check_grads(lambda p, q: jnp.vecdot(p, q), (a[0], a[1]), order=2)
  with pytest.raises(ValueError):
    jnp.vecdot(jnp.ones(3), jnp.ones(4))


def test_isdtype():
  assert jnp.isdtype(jnp.float32, "real floating")
  assert jnp.isdtype(jnp.bfloat16, "real floating")
  assert jnp.isdtype(np.int8, "signed integer") and not jnp.isdtype(np.int8, "unsigned integer")
  assert jnp.isdtype(jnp.int4, "integral") and jnp.isdtype(jnp.uint4, "unsigned integer")
  assert jnp.isdtype(np.complex64, ("bool", "complex floating"))
  assert jnp.isdtype(np.int32, np.int32) and not jnp.isdtype(np.bool_, "numeric")
  with pytest.raises(ValueError):
    jnp.isdtype(np.int32, "whole numbers")


def test_from_dlpack_copy_iterable_cumulative():
  _eq(jnp.from_dlpack(np.arange(3.0, dtype=np.float32)), [0.0, 1.0, 2.0])
  _eq(jnp.copy(jnp.arange(3)), [0, 1, 2])
  assert jnp.iterable([1]) and not jnp.iterable(3)
  x = np.array([1, 2, 3], np.int8)
  out = jit(lambda v: jnp.cumulative_sum(v, include_initial=True))(x)
  _eq(out, [0, 1, 3, 6])
  assert out.dtype == np.int32  # small integers accumulate like sum
  m = RNG.rand(2, 3).astype(np.float32)
  _eq(jnp.cumulative_prod(m, axis=1, include_initial=True),
      np.concatenate([np.ones((2, 1)), np.cumprod(m, axis=1)], axis=1), rtol=1e-6)
  with pytest.raises(ValueError, match="axis"):
    jnp.cumulative_sum(m)
  check_grads(lambda v: jnp.cumulative_prod(v, axis=1), (m.astype(np.float32),), order=1,
              modes=("rev",), atol=5e-2, rtol=5e-2)


# ---- float helpers ----

def test_frexp_ldexp():
  x = np.array([3.0, 0.0, -5.5, np.inf, -np.inf, 1e-30, 65504.0, 1.0, 0.1], np.float32)
  m, e = jit(jnp.frexp)(x)
  em, ee = np.frexp(x)
  _eq(m, em)
  _eq(e, ee)
  assert e.dtype == np.int32
  assert np.isnan(np.asarray(jnp.frexp(np.float32(np.nan))[0]))
  f16 = np.array([3.0, 1e-5, 6e-8], np.float16)  # float16 subnormals are kept
  _eq(jnp.frexp(f16)[0], np.frexp(f16)[0])
  _eq(jnp.frexp(f16)[1], np.frexp(f16)[1])
  mant = np.array([0.75, 1.0, 1.5, -2.0, 0.5], np.float32)
  ex = np.array([2, -3, 127, 127, 129], np.int32)
  with np.errstate(over="ignore"):
    expected = np.ldexp(mant, ex)
  _eq(jit(jnp.ldexp)(mant, ex), expected)
  _eq(jnp.ldexp(np.float32(1.0), 300), np.inf)
  _eq(jnp.ldexp(m, e)[:3], x[:3])
  _eq(vmap(jnp.ldexp)(mant, ex), expected)
  _eq(grad(lambda v: jnp.ldexp(v, 3))(np.float32(1.5)), 8.0)
  with pytest.raises(ValueError, match="ldexp not supported for input types"):
    jnp.ldexp(1.0, 2.5)  # JAX 0.10.2: ValueError (NumPy's ufunc message)


def test_frexp_float64(x64):
  x = np.array([3.0, 1e-300, -7.25e200], np.float64)
  m, e = jnp.frexp(x)
  em, ee = np.frexp(x)
  _eq(m, em)
  _eq(e, ee)
  _eq(jnp.ldexp(m, e), x)


def test_modf_spacing_unwrap():
  x = np.array([-3.5, 2.25, np.inf, -0.0], np.float32)
  f, w = jit(jnp.modf)(x)
  ef, ew = np.modf(x)
  _eq(f, ef)
  _eq(w, ew)
  s = np.array([1.0, -1.0, 0.0, 1e10, np.inf], np.float32)
  _eq(jnp.spacing(s), np.spacing(s))
  p = np.array([0.0, 1, 2, 8, 9, 3, -4], np.float32)
  _eq(jit(jnp.unwrap)(p), np.unwrap(p), rtol=1e-5)
  p2 = RNG.randn(3, 6).astype(np.float32) * 5
  _eq(jnp.unwrap(p2, axis=0), np.unwrap(p2, axis=0), rtol=1e-5, atol=1e-5)
  _eq(jnp.unwrap(p2, discont=4.0, period=5.0), np.unwrap(p2, discont=4.0, period=5.0),
      rtol=1e-5, atol=1e-5)


# ---- construction and shape helpers ----

def test_construction_helpers():
  _eq(jnp.diagflat(np.array([[1, 2]]), 1), np.diagflat([[1, 2]], 1))
  _eq(jnp.resize(np.arange(3), (2, 4)), np.resize(np.arange(3), (2, 4)))
  _eq(jnp.resize(np.arange(6).reshape(2, 3), 4), np.resize(np.arange(6).reshape(2, 3), 4))
  _eq(jnp.indices((2, 3)), np.indices((2, 3)))
  for a, b in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
    _eq(a, b)
  _eq(jnp.fromfunction(lambda i, j: i + 2 * j, (2, 3)),
      np.fromfunction(lambda i, j: i + 2 * j, (2, 3)))
  _eq(jnp.frombuffer(b"\x01\x02", dtype=jnp.uint8), [1, 2])
  _eq(jnp.fromstring("1 2 3", dtype=int, sep=" "), [1, 2, 3])
  _eq(jnp.fromiter(range(4), dtype=float), [0.0, 1.0, 2.0, 3.0])
  _eq(jnp.trim_zeros(np.array([0, 1, 0, 2, 0, 0])), [1, 0, 2])
  _eq(jnp.trim_zeros(np.array([0, 1, 0, 2, 0, 0]), "f"), [1, 0, 2, 0, 0])
  _eq(jnp.trim_zeros(np.array([0, 0])), np.zeros(0))


def test_save_load(tmp_path):
  path = tmp_path / "x.npy"
  jnp.save(path, np.asarray(jnp.arange(3.0)))
  _eq(jnp.load(path), [0.0, 1.0, 2.0])
  raw = tmp_path / "x.bin"
  np.arange(4, dtype=np.float32).tofile(raw)
  _eq(jnp.fromfile(raw, dtype=np.float32), np.arange(4, dtype=np.float32))


def test_packbits_unpackbits():
  bits = RNG.rand(3, 10) > 0.5
  for axis in (None, 0, 1):
    for order in ("big", "little"):
      _eq(jit(lambda b: jnp.packbits(b, axis=axis, bitorder=order))(bits),
          np.packbits(bits, axis=axis, bitorder=order))
  packed = np.packbits(bits, axis=1)
  for count in (None, 5, -3, 20):
    _eq(jnp.unpackbits(packed, axis=1, count=count),
        np.unpackbits(packed, axis=1, count=count))
  _eq(jnp.unpackbits(np.array([3], np.uint8), bitorder="little"),
      np.unpackbits(np.array([3], np.uint8), bitorder="little"))


def test_apply_along_and_over_axes_piecewise():
  x = RNG.randn(2, 3, 4).astype(np.float32)
  for axis in (0, 1, 2):
    _eq(jnp.apply_along_axis(jnp.sum, axis, x), np.apply_along_axis(np.sum, axis, x),
        rtol=1e-5)
  _eq(jnp.apply_along_axis(lambda v: jnp.outer(v, v), 1, x),
      np.apply_along_axis(lambda v: np.outer(v, v), 1, x), rtol=1e-6)
  _eq(jnp.apply_over_axes(jnp.sum, x, [0, 2]), np.apply_over_axes(np.sum, x, [0, 2]),
      rtol=1e-5)
  v = np.linspace(-2, 2, 7).astype(np.float32)
  f = jit(lambda t: jnp.piecewise(t, [t < 0, t > 1], [lambda u: -u, lambda u: u * u, 0.5]))
  _eq(f(v), np.piecewise(v, [v < 0, v > 1], [lambda u: -u, lambda u: u * u, 0.5]))
  _eq(grad(lambda t: jnp.piecewise(t, [t < 0], [lambda u: -u, lambda u: u * u]))(
      np.float32(3.0)), 6.0)


# ---- set operations ----

def test_unique_variants():
  x = np.array([3.0, 1, 1, np.nan, np.nan, 2], np.float32)
  r = jnp.unique_all(x)
  assert r._fields == ("values", "indices", "inverse_indices", "counts")
  e = np.unique_all(x)
  for a, b in zip(r, e):
    _eq(a, b)
  r = jit(lambda v: jnp.unique_counts(v, size=7, fill_value=-1.0))(x)
  _eq(r.values, [1, 2, 3, np.nan, np.nan, -1, -1])
  _eq(r.counts, [2, 1, 1, 1, 1, 0, 0])
  m = np.array([[3, 1], [1, 2]])
  inv = jnp.unique_inverse(m)
  _eq(inv.values, [1, 2, 3])
  _eq(inv.inverse_indices, np.unique_inverse(m).inverse_indices)
  _eq(jnp.unique_values(x), np.unique_values(x))


def test_isin_in1d():
  e = np.array([[1, 2], [3, 4]])
  t = np.array([2, 3, 9])
  for method in ("auto", "compare_all", "sort"):
    _eq(jit(lambda a, b: jnp.isin(a, b, method=method))(e, t), np.isin(e, t))
    _eq(jnp.isin(e, t, invert=True, method=method), np.isin(e, t, invert=True))
  f = np.array([1.0, np.nan, 2.0, -0.0], np.float32)
  _eq(jnp.isin(f, np.array([np.nan, 2.0, 0.0], np.float32), method="sort"),
      np.isin(f, np.array([np.nan, 2.0, 0.0])))
  _eq(jnp.in1d(e, t), np.isin(e.ravel(), t))
  big = RNG.randint(0, 100, size=300)
  _eq(jnp.isin(big, np.arange(0, 100, 3)), np.isin(big, np.arange(0, 100, 3)))
  _eq(vmap(lambda a: jnp.isin(a, t))(e), np.isin(e, t))


def test_set_ops_against_numpy():
  a = np.array([3, 1, 2, 1, 5, 5, -2])
  b = np.array([2, 3, 7, 2, 8])
  _eq(jnp.union1d(a, b), np.union1d(a, b))
  _eq(jnp.setdiff1d(a, b), np.setdiff1d(a, b))
  _eq(jnp.setdiff1d(a, b, assume_unique=True), np.setdiff1d(a, b, assume_unique=True))
  _eq(jnp.setxor1d(a, b), np.setxor1d(a, b))
  _eq(jnp.intersect1d(a, b), np.intersect1d(a, b))
  for x, y in zip(jnp.intersect1d(a, b, return_indices=True),
                  np.intersect1d(a, b, return_indices=True)):
    _eq(x, y)
  ua, ub = np.unique(a), np.unique(b)
  _eq(jnp.setxor1d(ua, ub, assume_unique=True), np.setxor1d(ua, ub, assume_unique=True))
  _eq(jnp.intersect1d(ua, ub, assume_unique=True), np.intersect1d(ua, ub, assume_unique=True))


def test_set_ops_with_size_under_jit():
  a = np.array([3, 1, 2, 1, 5, 5])
  b = np.array([2, 3, 7, 2])
  _eq(jit(lambda p, q: jnp.union1d(p, q, size=7))(a, b), [1, 2, 3, 5, 7, 1, 1])
  _eq(jit(lambda p, q: jnp.setdiff1d(p, q, size=4))(a, b), [1, 5, 0, 0])
  _eq(jit(lambda p, q: jnp.setxor1d(p, q, size=5, fill_value=-1))(a, b), [1, 5, 7, -1, -1])
  vals, i1, i2 = jit(lambda p, q: jnp.intersect1d(p, q, size=3, return_indices=True))(a, b)
  _eq(vals, [2, 3, 2])
  _eq(i1, [2, 0, 6])
  _eq(i2, [0, 1, 4])
  _eq(jnp.intersect1d(a, np.array([9]), size=2), [0, 0])
  _eq(jnp.setdiff1d(a, b, size=1), [1])
  with pytest.raises(Exception, match="size"):
    jit(lambda p, q: jnp.setdiff1d(p, q))(a, b)


# ---- index notation ----

def test_r_c_mgrid_ogrid():
  _eq(jnp.r_[1:4, 0, np.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])])
  _eq(jnp.r_[-1:1:5j], np.r_[-1:1:5j])
  _eq(jnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]])
  _eq(jnp.r_["1,2,0", [1, 2], [3, 4]], np.r_["1,2,0", [1, 2], [3, 4]])
  _eq(jnp.r_["-1", np.ones((2, 2)), np.zeros((2, 1))], np.r_["-1", np.ones((2, 2)),
                                                           np.zeros((2, 1))])
  _eq(jnp.c_[np.array([1, 2]), np.array([3, 4])], np.c_[np.array([1, 2]), np.array([3, 4])])
  _eq(jnp.c_[np.ones((2, 2)), np.array([[5], [6]])], np.c_[np.ones((2, 2)), [[5], [6]]])
  _eq(jnp.c_[1:3, 4:6], np.c_[1:3, 4:6])
  _eq(jnp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])
  _eq(jnp.mgrid[0:1:3j], np.mgrid[0:1:3j])
  for a, b in zip(jnp.ogrid[0:2, 0:3:2], np.ogrid[0:2, 0:3:2]):
    _eq(a, b)
  assert jnp.mgrid[0:2].dtype == np.int32 and jnp.ogrid[0:1:3j].dtype == np.float32
  assert jnp.index_exp[1:2] == np.index_exp[1:2] and jnp.s_[::2] == np.s_[::2]
  r, c = jnp.mask_indices(3, jnp.triu, 1)
  er, ec = np.mask_indices(3, np.triu, 1)
  _eq(r, er)
  _eq(c, ec)


# ---- selection and in-place-style updates ----

def test_delete_insert():
  a = np.arange(12).reshape(3, 4)
  _eq(jnp.delete(np.arange(5), np.array([0, 0, 3])), np.delete(np.arange(5), [0, 0, 3]))
  _eq(jnp.delete(a, 1, axis=1), np.delete(a, 1, axis=1))
  _eq(jnp.delete(a, slice(0, 2), axis=0), np.delete(a, slice(0, 2), axis=0))
  _eq(jit(lambda o: jnp.delete(jnp.arange(5), o, assume_unique_indices=True))(
      jnp.array([1, 3])), [0, 2, 4])
  cases = [(1, [9, 8], None), (np.array([1, 3]), 7, None), ([1, 1], [5, 6], None),
           (1, [[9], [8], [7]], 1), ([0, 2], [[5], [6], [7]], 1), (-1, 5, 0),
           (slice(1, 3), [7, 8], None), ([1], [9, 8], None), ([4, 0], [1, 2], 1)]
  for obj, vals, axis in cases:
    _eq(jnp.insert(a, obj, vals, axis), np.insert(a, obj, vals, axis))


def test_put_place_put_along_axis_fill_diagonal():
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.put(jnp.zeros(5), 0, 1.0)
  with pytest.raises(NotImplementedError, match="inplace=False"):
    jnp.fill_diagonal(jnp.zeros((2, 2)), 1.0)
  ind, v = np.array([0, 7, -1]), np.array([1.0, 2.0, 3.0], np.float32)
  for mode in ("wrap", "clip"):
    e = np.zeros(5, np.float32)
    np.put(e, ind, v, mode=mode)
    _eq(jit(lambda t, i, w: jnp.put(t, i, w, mode=mode, inplace=False))(
        np.zeros(5, np.float32), ind, v), e)
  with pytest.raises(IndexError):
    jnp.put(jnp.zeros(5), np.array([9]), 1.0, mode="raise", inplace=False)
  a = np.arange(6)
  e = a.copy()
  np.place(e, a > 1, [7, 8])
  _eq(jit(lambda t, m: jnp.place(t, m, jnp.array([7, 8]), inplace=False))(a, a > 1), e)
  x = np.zeros((3, 4), np.float32)
  idx = np.array([[1], [3], [0]])
  e = x.copy()
  np.put_along_axis(e, idx, 5.0, axis=1)
  _eq(jnp.put_along_axis(x, idx, 5.0, 1, inplace=False), e)
  for shape, wrap in [((3, 2), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)]:
    e = np.zeros(shape, np.float32)
    np.fill_diagonal(e, [1, 2], wrap=wrap)
    _eq(jnp.fill_diagonal(np.zeros(shape, np.float32), np.array([1.0, 2.0]), wrap=wrap,
                          inplace=False), e)
  g = grad(lambda t: jnp.fill_diagonal(t, 0.0, inplace=False).sum())(np.ones((2, 2), np.float32))
  _eq(g, 1 - np.eye(2))


def test_choose_compress_extract():
  choices = [np.arange(3), 10 + np.arange(3), np.array(20)]
  _eq(jnp.choose(np.array([0, 1, 2]), choices), np.choose([0, 1, 2], choices))
  _eq(jit(lambda a: jnp.choose(a, choices, mode="wrap"))(np.array([0, 4, -1])),
      np.choose([0, 4, -1], choices, mode="wrap"))
  _eq(jnp.choose(np.array([0, 5, 2]), choices, mode="clip"),
      np.choose([0, 5, 2], choices, mode="clip"))
  with pytest.raises(ValueError):
    jnp.choose(np.array([3]), choices)
  a = np.arange(12).reshape(3, 4)
  c = np.array([1, 0, 1])
  _eq(jnp.compress(c, a, axis=1), np.compress(c, a, axis=1))
  _eq(jnp.compress(c, a), np.compress(c, a))
  _eq(jit(lambda cc, aa: jnp.compress(cc, aa, size=4, fill_value=-1))(c > 0, a.ravel()),
      [0, 2, -1, -1])
  _eq(jnp.extract(a % 3 == 0, a), np.extract(a % 3 == 0, a))
  _eq(jit(lambda m, aa: jnp.extract(m, aa, size=5))(a % 3 == 0, a), [0, 3, 6, 9, 0])


# ---- reductions ----

def test_nan_reductions():
  x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2, 5, 7]], np.float32)
  _eq(jit(lambda v: jnp.nanargmax(v, axis=1))(x), [2, -1, 2])
  _eq(jnp.nanargmin(x, axis=0, keepdims=True), [[0, 2, 0]])
  _eq(jnp.nanargmax(np.array([np.nan, 2.0, 1.0])), 1)
  _eq(jnp.nanargmax(np.array([3, 1])), 0)
  with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
    ev, es = np.nanvar(x, axis=1), np.nanstd(x, axis=1, ddof=1)
  _eq(jnp.nanvar(x, axis=1), ev, rtol=1e-6)
  _eq(jit(lambda v: jnp.nanstd(v, axis=1, ddof=1))(x), es, rtol=1e-6)
  _eq(jnp.nanvar(x, keepdims=True), np.nanvar(x, keepdims=True), rtol=1e-6)
  _eq(jnp.nanvar(np.arange(4.0), mean=np.float32(0.0)), 3.5)
  _eq(jnp.nanvar(np.arange(4)), np.var(np.arange(4)))
  y = np.array([1.0, np.nan, 3.0, 4.0], np.float32)
  _eq(grad(jnp.nanvar)(y), np.where(np.isnan(y), 0, 2 * (y - np.nanmean(y)) / 3), rtol=1e-6)
  _eq(vmap(jnp.nanstd)(x[[0, 2]]), np.nanstd(x[[0, 2]], axis=1), rtol=1e-6)


# ---- ufunc objects ----

def test_ufunc_and_frompyfunc():
  add = jnp.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
  assert isinstance(add, jnp.ufunc) and add.nin == 2 and add.nout == 1 and add.identity == 0
  a = RNG.randn(3, 4).astype(np.float32)
  _eq(add(a, 1.0), a + 1, rtol=1e-6)
  _eq(add.outer(np.arange(2), np.arange(3)), np.add.outer(np.arange(2), np.arange(3)))
  _eq(jit(lambda v: add.reduce(v, axis=1))(a), np.add.reduce(a, axis=1), rtol=1e-5)
  _eq(add.reduce(a, axis=None), a.sum(), rtol=1e-5)
  _eq(add.accumulate(a, axis=1), np.add.accumulate(a, axis=1), rtol=1e-5)
  e = np.zeros(4, np.float32)
  np.add.at(e, [0, 0, 2], [1.0, 2.0, 3.0])
  _eq(add.at(np.zeros(4, np.float32), np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]),
             inplace=False), e)
  _eq(add.reduceat(np.arange(8.0), np.array([0, 4, 1, 5])),
      np.add.reduceat(np.arange(8.0), [0, 4, 1, 5]))
  mul = jnp.frompyfunc(lambda p, q: p * q, 2, 1)
  _eq(mul.reduce(a, where=a > 0, initial=1.0),
      np.multiply.reduce(a, axis=0, where=a > 0, initial=1.0), rtol=1e-5)
  _eq(grad(lambda v: mul.reduce(v))(np.array([2.0, 3.0, 4.0], np.float32)), [12.0, 8.0, 6.0])
  divmod_ = jnp.frompyfunc(lambda p, q: (p // q, p % q), 2, 2)
  q, r = divmod_(np.array([7, 8]), 3)
  _eq(q, [2, 2])
  _eq(r, [1, 2])
  with pytest.raises(ValueError):
    divmod_.reduce(np.array([1, 2]))


# ---- the narrow dtypes of ml_dtypes ----

@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
                                  "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4",
                                  "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "int4",
                                  "uint4", "int2", "uint2"])
def test_narrow_dtypes(name):
  t = getattr(jnp, name)
  dt = np.dtype(getattr(ml_dtypes, name))
  assert np.dtype(t) == dt
  vals = np.array([1.0, 2.0, 0.5 if "float" in name and name != "float8_e8m0fnu" else 1.0],
                  np.float32)
  if name in ("int2",):
    vals = np.array([1.0, -2.0, 0.0], np.float32)
  x = jnp.asarray(vals).astype(t)
  assert x.dtype == dt
  _eq(np.asarray(x).astype(np.float32), vals.astype(dt).astype(np.float32))
  y = jit(lambda v: v.astype(jnp.float32) * 2)(x)
  _eq(y, vals.astype(dt).astype(np.float32) * 2)
  host = jnp.asarray(vals.astype(dt))
  assert host.dtype == dt
  _eq(np.asarray(host).astype(np.float32), vals.astype(dt).astype(np.float32))


def test_narrow_dtype_scalar_types_and_bool():
  assert jnp.int4(3).dtype == np.dtype(ml_dtypes.int4)
  assert jnp.float8_e4m3fn(1.5).dtype == np.dtype(ml_dtypes.float8_e4m3fn)
  assert jnp.zeros(2, jnp.bool).dtype == np.bool_
  assert jnp.bool(1).dtype == np.bool_
  assert jnp.issubdtype(jnp.int4, jnp.signedinteger)
  assert jnp.issubdtype(jnp.uint4, jnp.unsignedinteger)
  assert jnp.issubdtype(jnp.float8_e3m4, jnp.floating)
  assert jnp.finfo(jnp.float8_e4m3fn).max == 448
  assert jnp.iinfo(jnp.int4).min == -8
  assert jnp.ComplexWarning is np.exceptions.ComplexWarning


# ---- Array methods ----

def test_array_methods():
  x = jnp.arange(6).reshape(2, 3)
  _eq(x.take(np.array([0, 4])), [0, 4])
  _eq(x.take(np.array([2, 0]), axis=1), [[2, 0], [5, 3]])
  _eq(jnp.array([0, 1, 0]).choose([np.array([1, 2, 3]), np.array([10, 20, 30])]),
      [1, 20, 3])
  _eq(x.compress(np.array([True, False, True]), axis=1), [[0, 2], [3, 5]])
  f = jnp.array([1.0, 2.0], jnp.float32)
  _eq(f.view(jnp.int32), np.array([1.0, 2.0], np.float32).view(np.int32))
  _eq(f.view(np.uint8), np.array([1.0, 2.0], np.float32).view(np.uint8))
  _eq(f.view(np.uint8).view(np.float32), [1.0, 2.0])
  _eq(jnp.array([True, False]).view(np.uint8), [1, 0])
  _eq(jnp.array([1, 256], jnp.int16).byteswap(), np.array([1, 256], np.int16).byteswap())
  assert f.tobytes() == np.array([1.0, 2.0], np.float32).tobytes()
  import tracejax
  _eq(f.to_device(tracejax.devices()[0]), [1.0, 2.0])
  with pytest.raises(NotImplementedError, match="flatten"):
    x.flat  # noqa: B018
  out = jit(lambda v: (v.take(np.array([1])), v.view(jnp.int32), v.compress(v > 1, size=1)))(f)
  _eq(out[0], [2.0])
  with pytest.raises(Exception, match="item|concrete|Concret|traced"):
    jit(lambda v: v.sum().item())(f)


# ---- *_like of a ShapeDtypeStruct ----

def test_like_functions_accept_shape_dtype_structs():
  Spec = collections.namedtuple("Spec", ["shape", "dtype"])
  s = Spec((2, 3), np.dtype(np.int32))
  z = jnp.zeros_like(s)
  assert z.shape == (2, 3) and z.dtype == np.int32
  o = jnp.ones_like(s, dtype=jnp.float32, shape=(4,))
  assert o.shape == (4,) and o.dtype == np.float32
  _eq(jnp.full_like(s, 7), np.full((2, 3), 7))
  assert jnp.empty_like(s).shape == (2, 3)
  try:
    from tracejax import ShapeDtypeStruct
  except ImportError:
    ShapeDtypeStruct = None
  if ShapeDtypeStruct is not None:
    z = jit(lambda: jnp.zeros_like(ShapeDtypeStruct((3,), np.float32)))()
    _eq(z, np.zeros(3))
  import tracejax
  _eq(jnp.ones_like(np.zeros(2), device=tracejax.devices()[0]), [1.0, 1.0])


def test_linalg_cross():
  a, b = RNG.randn(4, 3).astype(np.float32), RNG.randn(3).astype(np.float32)
  _eq(jnp.linalg.cross(a, b), np.linalg.cross(a, b), rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="size 3"):
    jnp.linalg.cross(np.ones(2), np.ones(2))


def test_complex_order_comparisons_are_lexicographic():
  a = np.array([1 + 2j, 1 + 1j, 2 + 0j, 1 + 2j, -1 - 1j], np.complex64)
  b = np.array([1 + 1j, 1 + 2j, 1 + 5j, 1 + 2j, -1 + 0j], np.complex64)
  for name in ("less", "less_equal", "greater", "greater_equal"):
    _eq(jit(getattr(jnp, name))(a, b), getattr(np, name)(a, b))
  _eq(jnp.asarray(a) < 1.5, a < 1.5)
  _eq(vmap(jnp.less)(a, b), a < b)


def test_numpy_ufuncs_have_ufunc_methods():
  a = RNG.randn(3, 4).astype(np.float32)
  assert isinstance(jnp.add, jnp.ufunc) and not isinstance(jnp.sin, jnp.ufunc)
  assert jnp.multiply.identity == 1 and jnp.add.nin == 2
  _eq(jit(lambda v: jnp.add.reduce(v, axis=1))(a), np.add.reduce(a, axis=1), rtol=1e-5)
  _eq(jnp.maximum.reduce(a, axis=None), np.maximum.reduce(a, axis=None))
  _eq(jnp.logical_and.reduce(a > -1, axis=0, initial=True),
      np.logical_and.reduce(a > -1, axis=0, initial=True))
  _eq(jnp.maximum.accumulate(a, axis=1), np.maximum.accumulate(a, axis=1))
  _eq(jnp.bitwise_xor.reduce(np.array([1, 2, 7])), np.bitwise_xor.reduce([1, 2, 7]))
  _eq(jnp.multiply.outer(np.arange(3), np.arange(2)), np.multiply.outer(np.arange(3),
                                                                        np.arange(2)))
  e = np.ones(4, np.float32)
  np.multiply.at(e, [0, 0, 3], 2.0)
  _eq(jnp.multiply.at(np.ones(4, np.float32), np.array([0, 0, 3]), 2.0, inplace=False), e)
  e = np.arange(4.0)
  np.negative.at(e, [1, 2, 2])
  _eq(jnp.negative.at(np.arange(4.0), np.array([1, 2, 2]), inplace=False), e)
  _eq(grad(lambda v: jnp.multiply.reduce(v))(np.array([2.0, 3.0], np.float32)), [3.0, 2.0])
