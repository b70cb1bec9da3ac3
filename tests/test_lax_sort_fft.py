"""sort, sort_key_val, top_k and fft.

Each primitive runs the three checks of `check_primitive` (eager vs a NumPy
reference, jit vs eager, abstract eval vs actual) over shapes and dtypes; then the
sort order's corner cases (NaN, -0.0, stability), the errors for bad input, the
derivatives (`check_grads`, and `<ct, J v> == <J^T ct, v>` for every fft type),
and vmap against a Python loop with several `in_axes`.
"""
import numpy as np
import pytest

import lax_test_util as tu
import tracejax as jax
from tracejax._src.api import jvp, make_jaxpr, vjp, vmap
from tracejax._src.jit import jit
from tracejax._src.lax import elementwise as E
from tracejax._src.lax import fft as F
from tracejax._src.lax import sorting as S
from tracejax._src.test_util import check_grads

bf16 = tu.bfloat16
SORT_DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint32, np.float16, bf16,
                                     np.float32, np.complex64)]
TOPK_DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint32, np.float16, bf16,
                                     np.float32)]


def _rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_ or np.issubdtype(dtype, np.integer):
    return tu.rand(rng, shape, dtype)  # small integers: many ties
  x = tu.rand(rng, shape, dtype)
  # Round to a coarse grid so that floats tie too, and stability matters.
  if np.issubdtype(dtype, np.complexfloating):
    return (np.round(x.real) + 1j * np.round(x.imag)).astype(dtype)
  return np.round(x.astype(np.float32)).astype(dtype)


def _np_keys(x):
  """NumPy keys giving JAX's order for `x` (complex: real then imaginary part)."""
  x = np.asarray(x)
  if np.iscomplexobj(x):
    return [x.real, x.imag]
  if x.dtype == bf16 or x.dtype == np.float16:
    return [x.astype(np.float32)]  # exact: lexsort needs a native dtype
  return [x]


def _np_sort(operands, dimension, num_keys):
  """The reference: a stable lexicographic argsort of the keys applied to everything."""
  keys = [k for x in operands[:num_keys] for k in _np_keys(x)]
  perm = np.lexsort(keys[::-1], axis=dimension)  # lexsort's primary key is its last
  return tuple(np.take_along_axis(np.asarray(x), perm, dimension) for x in operands)


def _np_top_k(x, k):
  """Largest first, equal values in index order, and (XLA's total order) 0.0 ahead
  of -0.0: a stable lexsort by (-x, signbit(x)). NaN-free inputs only."""
  x = np.asarray(x)
  key = x.astype(np.float64)  # exact for every dtype tested
  idx = np.lexsort((np.signbit(key), -key), axis=-1)[..., :k]
  return np.take_along_axis(x, idx, -1), idx.astype(np.int32)


# =============================================================================
# sort: values
# =============================================================================

@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,dimension", [((9,), 0), ((3, 7), -1), ((4, 3, 5), 1),
                                             ((4, 3, 5), 0)])
def test_sort_one_operand(dtype, shape, dimension):
  x = _rand(shape, dtype)
  tu.check_primitive(lambda x: S.sort(x, dimension), lambda x: _np_sort([x], dimension, 1)[0],
                     [x])


@pytest.mark.parametrize("dtype", SORT_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("num_keys", [1, 2])
def test_sort_multiple_operands_is_a_stable_lexsort(dtype, num_keys):
  # Ties in the keys are frequent, so a wrong stability or key order shows.
  k1 = _rand((4, 9), dtype, seed=1)
  k2 = _rand((4, 9), np.int8, seed=2)
  v = np.arange(36, dtype=np.float32).reshape(4, 9)
  fun = lambda a, b, c: S.sort((a, b, c), dimension=1, num_keys=num_keys)
  out = tu.check_primitive(fun, lambda a, b, c: _np_sort([a, b, c], 1, num_keys), [k1, k2, v])
  assert isinstance(out, tuple) and len(out) == 3


def test_sort_float_total_order_nan_last_and_signed_zeros_equal():
  x = np.array([3., -0., np.nan, 1., 0., -np.nan, -np.inf, np.inf, -0., 1.], np.float32)
  idx = np.arange(x.size, dtype=np.int32)
  k, v = S.sort_key_val(x, idx)
  # NaNs (of either sign) last; -0.0 and 0.0 tie, so they keep their input order.
  np.testing.assert_array_equal(np.asarray(v), [6, 1, 4, 8, 3, 9, 0, 7, 2, 5])
  np.testing.assert_array_equal(np.asarray(k)[:8], np.sort(x)[:8])
  assert np.isnan(np.asarray(k)[8:]).all()
  np.testing.assert_array_equal(np.asarray(v), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", [np.float16, bf16, np.float32], ids=lambda d: np.dtype(d).name)
def test_sort_nan_inf_vs_numpy(dtype):
  rng = np.random.default_rng(3)
  x = rng.choice(np.array([np.nan, -np.inf, np.inf, 0., -0., 1.5, -2.]), (5, 8)).astype(dtype)
  idx = np.broadcast_to(np.arange(8, dtype=np.int32), (5, 8))
  k, v = jit(lambda a, b: S.sort_key_val(a, b))(x, idx)
  expected = np.argsort(x.astype(np.float32), axis=-1, kind="stable")
  np.testing.assert_array_equal(np.asarray(v), expected)
  np.testing.assert_array_equal(np.asarray(k).astype(np.float32),
                                np.take_along_axis(x, expected, -1).astype(np.float32))


def test_sort_complex_lexicographic_with_nan():
  x = np.array([1 + 2j, complex(np.nan, 0), 1 + 1j, 5j, complex(1, np.nan), -1 - 1j],
               np.complex64)
  idx = np.arange(x.size, dtype=np.int32)
  _, v = S.sort_key_val(x, idx)
  # By real part, then imaginary part, each with NaN last.
  np.testing.assert_array_equal(np.asarray(v), [5, 3, 2, 0, 4, 1])


def test_sort_key_val_and_unstable_sort():
  keys = _rand((3, 10), np.float32, seed=4)
  vals = _rand((3, 10), np.int8, seed=5)
  tu.check_primitive(lambda k, v: S.sort_key_val(k, v, 0), lambda k, v: _np_sort([k, v], 0, 1),
                     [keys, vals])
  # Without stability the keys still come out sorted and the pairs stay together.
  k, v = S.sort_key_val(keys, vals, is_stable=False)
  np.testing.assert_array_equal(np.asarray(k), np.sort(keys, -1))
  for row_k, row_v, ik, iv in zip(np.asarray(k), np.asarray(v), keys, vals):
    assert sorted(zip(row_k.tolist(), row_v.tolist())) == sorted(zip(ik.tolist(), iv.tolist()))


def test_sort_jaxpr_params_and_weak_type():
  jaxpr = make_jaxpr(lambda x, y: S.sort((x, y), num_keys=2))(np.ones((2, 3), np.float32),
                                                             np.ones((2, 3), np.int32))
  text = str(jaxpr)
  assert "sort[" in text and "dimension=1" in text and "is_stable=True" in text
  assert "num_keys=2" in text
  assert [a.dtype for a in jaxpr.out_avals] == [np.float32, np.int32]
  out = S.sort_p.abstract_eval(jax.core.ShapedArray((3,), np.float32, weak_type=True),
                               dimension=0, is_stable=True, num_keys=1)
  assert out[0].weak_type


@pytest.mark.parametrize("fun,exc,match", [
    (lambda: S.sort((np.ones(3), np.ones(4))), TypeError, "same shape"),
    (lambda: S.sort((np.ones(3), np.ones(3)), num_keys=3), ValueError, "num_keys"),
    (lambda: S.sort((np.ones(3), np.ones(3)), num_keys=0), ValueError, "num_keys"),
    (lambda: S.sort(np.ones(3), num_keys=2), ValueError, "num_keys"),
    (lambda: S.sort(np.ones((2, 3)), dimension=2), ValueError, "out of bounds"),
    (lambda: S.sort(np.float32(1)), ValueError, "axis -1 is out of bounds for array of dim"),
    (lambda: S.sort(()), TypeError, "at least one"),
    (lambda: S.top_k(np.ones(3), 4), ValueError, "no larger"),
    (lambda: S.top_k(np.ones(3), -1), ValueError, "nonnegative"),
    (lambda: S.top_k(np.float32(1), 1), ValueError, "axis -1 is out of bounds for array"),
    (lambda: S.top_k(np.ones(3, np.complex64), 1), TypeError, "complex64"),
], ids=["shapes", "num_keys_big", "num_keys_0", "num_keys_single", "dimension", "rank0",
        "empty", "k_big", "k_neg", "topk_rank0", "topk_complex"])
def test_sort_top_k_errors(fun, exc, match):
  with pytest.raises(exc, match=match):
    fun()


# =============================================================================
# top_k: values
# =============================================================================

@pytest.mark.parametrize("dtype", TOPK_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape,k", [((7,), 3), ((3, 8), 8), ((2, 3, 6), 1), ((4, 5), 0)])
def test_top_k(dtype, shape, k):
  x = _rand(shape, dtype, seed=6)
  out = tu.check_primitive(lambda x: S.top_k(x, k), lambda x: _np_top_k(x, k), [x])
  assert out[1].dtype == np.int32 and out[0].shape == shape[:-1] + (k,)


def test_top_k_ties_and_nan():
  x = np.array([1., 5., np.nan, 5., np.inf, 1.], np.float32)
  v, i = S.top_k(x, 4)
  # A (positive) NaN counts as the largest; equal values come in index order.
  np.testing.assert_array_equal(np.asarray(i), [2, 4, 1, 3])
  np.testing.assert_array_equal(np.asarray(v), [np.nan, np.inf, 5., 5.])
  # XLA's total order (as in JAX): 0.0 ranks above -0.0, and -NaN below -inf.
  _, i = S.top_k(np.array([-0., -np.nan, 0., -np.inf], np.float32), 4)
  np.testing.assert_array_equal(np.asarray(i), [2, 0, 3, 1])


# =============================================================================
# fft: values
# =============================================================================

FFT_LENGTHS = [(8,), (5,), (4, 6), (3, 5), (2, 3, 4), (3, 2, 5)]


def _fft_input(fft_type, lengths, lead=(2,), dtype=np.complex64, seed=0):
  rng = np.random.default_rng(seed)
  if fft_type == "irfft":
    shape = lead + lengths[:-1] + (lengths[-1] // 2 + 1,)
  else:
    shape = lead + lengths
  x = rng.standard_normal(shape)
  if fft_type == "rfft":
    return x.astype(np.float32 if dtype == np.complex64 else np.float64)
  return (x + 1j * rng.standard_normal(shape)).astype(dtype)


def _np_fft(fft_type, lengths):
  axes = tuple(range(-len(lengths), 0))
  return {
      "fft": lambda x: np.fft.fftn(x, axes=axes).astype(np.complex64),
      "ifft": lambda x: np.fft.ifftn(x, axes=axes).astype(np.complex64),
      "rfft": lambda x: np.fft.rfftn(x, axes=axes).astype(np.complex64),
      "irfft": lambda x: np.fft.irfftn(x, s=lengths, axes=axes).astype(np.float32),
  }[fft_type]


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("lengths", FFT_LENGTHS, ids=str)
def test_fft(fft_type, lengths):
  x = _fft_input(fft_type, lengths)
  tu.check_primitive(lambda x: F.fft(x, fft_type, lengths), _np_fft(fft_type, lengths), [x],
                     tol=2e-4 * np.prod(lengths))


def test_fft_rank_equal_to_lengths_and_x64(x64):
  x = _fft_input("fft", (4, 6), lead=(), dtype=np.complex128)
  out = F.fft(x, F.FftType.FFT, (4, 6))
  assert out.dtype == np.complex128
  np.testing.assert_allclose(np.asarray(out), np.fft.fft2(x), rtol=1e-12, atol=1e-12)
  r = F.fft(x.real.copy(), F.FftType.RFFT, [4, 6])
  assert r.dtype == np.complex128 and r.shape == (4, 4)
  back = F.fft(r, F.FftType.IRFFT, (4, 6))
  assert back.dtype == np.float64
  np.testing.assert_allclose(np.asarray(back), x.real, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spelling", [F.FftType.IFFT, 1, "ifft", "IFFT", "FftType.IFFT",
                                      type("JaxlibStyle", (), {"name": "IFFT"})()])
def test_fft_type_spellings(spelling):
  x = _fft_input("ifft", (8,))
  np.testing.assert_allclose(np.asarray(F.fft(x, spelling, 8)), np.fft.ifft(x), rtol=1e-4,
                             atol=1e-5)


def test_fft_jaxpr_params():
  text = str(make_jaxpr(lambda x: F.fft(x, "rfft", (8,)))(np.ones(8, np.float32)))
  assert "fft_type=FftType.RFFT" in text and "fft_lengths=(8,)" in text


@pytest.mark.parametrize("fun,exc,match", [
    (lambda: F.fft(np.ones(8, np.float32), "fft", (8,)), TypeError, "complex64"),
    (lambda: F.fft(np.ones(8, np.complex64), "rfft", (8,)), TypeError, "float32"),
    (lambda: F.fft(np.ones(8, np.float16), "rfft", (8,)), TypeError, "float32"),
    (lambda: F.fft(np.ones(5, np.float32), "irfft", (8,)), TypeError, "complex64"),
    (lambda: F.fft(np.ones(8, np.complex64), "fft", (4,)), ValueError, "trailing"),
    (lambda: F.fft(np.ones(8, np.complex64), "irfft", (8,)), ValueError, r"\(5,\)"),
    (lambda: F.fft(np.ones((2,) * 4, np.complex64), "fft", (2,) * 4), ValueError, "1 to 3"),
    (lambda: F.fft(np.ones(8, np.complex64), "fft", (2, 4)), ValueError, "rank"),
    (lambda: F.fft(np.ones(8, np.complex64), "dct", (8,)), ValueError, "fft_type"),
    (lambda: F.fft(np.ones(8, np.complex64), "fft", "8"), TypeError, "fft_lengths"),
], ids=["fft_real", "rfft_complex", "rfft_f16", "irfft_real", "fft_length", "irfft_length",
        "four_dims", "rank", "bad_type", "bad_lengths"])
def test_fft_errors(fun, exc, match):
  with pytest.raises(exc, match=match):
    fun()


# =============================================================================
# Derivatives
# =============================================================================

def _r64(shape, seed=0):
  return np.random.default_rng(seed).standard_normal(shape)


def test_sort_grads(x64):
  x, y = _r64((3, 5), 0), _r64((3, 5), 1)
  keys = np.random.default_rng(2).integers(0, 3, (3, 5)).astype(np.int32)  # ties
  check_grads(lambda x: S.sort(x, 0), (x,), order=2, modes=("fwd", "rev"))
  check_grads(lambda x, y: S.sort((x, y), 1), (x, y), order=2, modes=("fwd", "rev"))
  check_grads(lambda x, y: S.sort((x, y), 1, num_keys=2), (x, y), order=1, modes=("fwd", "rev"))
  check_grads(lambda y: S.sort((keys, y), 1, is_stable=False)[1], (y,), order=2,
              modes=("fwd", "rev"))
  check_grads(lambda x, y: S.sort_key_val(x, y, 0), (x, y), order=2, modes=("fwd", "rev"))


def test_sort_tangents_follow_their_primals_with_ties():
  # Integer keys with ties and an unstable sort: each value's tangent must still come
  # out next to that value.
  keys = np.array([2, 0, 1, 0, 2, 1, 0], np.int32)
  vals = np.arange(7, dtype=np.float32) * 1.5
  tang = np.arange(7, dtype=np.float32) + 100.
  (k, v), (_, tv) = jvp(lambda v: S.sort_key_val(keys, v, is_stable=False), (vals,), (tang,))
  np.testing.assert_array_equal(np.asarray(k), np.sort(keys))
  np.testing.assert_array_equal(np.asarray(tv), np.asarray(v) / 1.5 + 100.)


def test_top_k_grads(x64):
  x = _r64((3, 6), 3)
  check_grads(lambda x: S.top_k(x, 3)[0], (x,), order=2, modes=("fwd", "rev"))
  check_grads(lambda x: S.top_k(x, 1)[0], (_r64((5,), 4),), order=2, modes=("fwd", "rev"))
  g = jax.grad(lambda x: S.top_k(x, 2)[0].sum())(np.array([1., 7., 3., 9.]))
  np.testing.assert_array_equal(np.asarray(g), [0., 1., 0., 1.])


def _realified(fun, complex_in):
  """`fun` as a map between real arrays (real and imaginary parts as separate
  arguments and outputs), so the real-vector-space checks of check_grads apply."""
  def real_fun(*parts):
    x = E.complex(*parts) if complex_in else parts[0]
    y = fun(x)
    if np.issubdtype(y.dtype, np.complexfloating):
      return E.real(y), E.imag(y)
    return y
  return real_fun


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("lengths", [(8,), (3, 4), (2, 3, 3)], ids=str)
def test_fft_grads(x64, fft_type, lengths):
  x = _fft_input(fft_type, lengths, dtype=np.complex128)
  fun = lambda x: F.fft(x, fft_type, lengths)
  check_grads(fun, (x,), order=2, modes=("fwd",))
  complex_in = np.iscomplexobj(x)
  parts = (x.real.copy(), x.imag.copy()) if complex_in else (x,)
  check_grads(_realified(fun, complex_in), parts, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("lengths", [(8,), (7,), (4, 6), (3, 5), (2, 3, 5), (2, 4, 4)], ids=str)
def test_fft_transpose_inner_product(x64, fft_type, lengths):
  # JAX's convention: the transpose is bilinear (no conjugation), so for every v and
  # ct, Re(sum(ct * J v)) == Re(sum(J^T ct * v)). For FFT/IFFT (complex-linear) the
  # complex sums agree too.
  rng = np.random.default_rng(7)
  v = _fft_input(fft_type, lengths, dtype=np.complex128, seed=8)
  fun = lambda x: F.fft(x, fft_type, lengths)
  jv, transpose = vjp(fun, v)
  jv = np.asarray(jv)
  ct = rng.standard_normal(jv.shape) + (1j * rng.standard_normal(jv.shape)
                                        if np.iscomplexobj(jv) else 0)
  ct = ct.astype(jv.dtype)
  (jt_ct,) = transpose(ct)
  jt_ct = np.asarray(jt_ct)
  assert jt_ct.dtype == v.dtype and jt_ct.shape == v.shape
  lhs, rhs = np.sum(ct * jv), np.sum(jt_ct * v)
  np.testing.assert_allclose(lhs.real, rhs.real, rtol=1e-10, atol=1e-10)
  if fft_type in ("fft", "ifft"):
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


def test_fft_transpose_matches_explicit_matrix(x64):
  # The vjp of RFFT/IRFFT against the transposed real Jacobian built column by column.
  for fft_type, n in [("rfft", 6), ("irfft", 6), ("irfft", 5)]:
    x = _fft_input(fft_type, (n,), lead=(), dtype=np.complex128)
    real_fun = _realified(lambda x: F.fft(x, fft_type, (n,)), np.iscomplexobj(x))
    parts = (x.real.copy(), x.imag.copy()) if np.iscomplexobj(x) else (x,)
    flat = np.concatenate([p.ravel() for p in parts])

    def f_flat(z):
      ps = np.split(z, len(parts))
      out = real_fun(*ps)
      out = out if isinstance(out, tuple) else (out,)
      return np.concatenate([np.asarray(o).ravel() for o in out])
    jac = np.stack([f_flat(e) for e in np.eye(flat.size)], 1)  # the map is linear
    out, pullback = vjp(real_fun, *parts)
    out = out if isinstance(out, tuple) else (out,)
    ct = [np.random.default_rng(9).standard_normal(np.shape(o)) for o in out]
    got = pullback(tuple(ct) if len(ct) > 1 else ct[0])
    got = np.concatenate([np.asarray(g).ravel() for g in got])
    np.testing.assert_allclose(got, jac.T @ np.concatenate([c.ravel() for c in ct]),
                               rtol=1e-10, atol=1e-10)


# =============================================================================
# vmap vs a Python loop, jit vs eager
# =============================================================================

def _loop(fun, in_axes, args, size):
  outs = []
  for i in range(size):
    sl = [a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)]
    outs.append(fun(*sl))
  if isinstance(outs[0], (tuple, list)):
    return tuple(np.stack([np.asarray(o[j]) for o in outs]) for j in range(len(outs[0])))
  return np.stack([np.asarray(o) for o in outs])


def _check_vmap(fun, in_axes, args, size, tol=0):
  got = vmap(fun, in_axes)(*args)
  want = _loop(fun, in_axes, args, size)
  got = got if isinstance(got, (tuple, list)) else (got,)
  want = want if isinstance(want, tuple) else (want,)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol)


@pytest.mark.parametrize("in_axes", [(0, 0), (1, 0), (None, 2), (2, None), (0, 1)], ids=str)
@pytest.mark.parametrize("dimension", [0, 1])
def test_sort_vmap(in_axes, dimension):
  size = 3
  shapes = {0: (size, 4, 5), 1: (4, size, 5), 2: (4, 5, size), None: (4, 5)}
  k = _rand(shapes[in_axes[0]], np.float32, seed=10)
  v = _rand(shapes[in_axes[1]], np.int8, seed=11)
  _check_vmap(lambda k, v: S.sort((k, v), dimension), in_axes, [k, v], size)
  _check_vmap(lambda k, v: S.sort((v, k), dimension, num_keys=2), in_axes, [k, v], size)


@pytest.mark.parametrize("in_axes,shape", [(0, (3, 4, 6)), (1, (4, 3, 6)), (2, (4, 6, 3)),
                                           (-1, (6, 3))], ids=str)
def test_top_k_vmap(in_axes, shape):
  x = _rand(shape, np.float32, seed=12) + np.arange(np.prod(shape)).reshape(shape) * 1e-3
  _check_vmap(lambda x: S.top_k(x, 2), (in_axes,), [x], 3)


@pytest.mark.parametrize("fft_type", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("in_axis", [0, 1, 2, -1])
def test_fft_vmap(fft_type, in_axis):
  lengths = (4, 6)
  x = _fft_input(fft_type, lengths, lead=(3,))  # (3, 4, 6) or (3, 4, 4)
  x = np.moveaxis(x, 0, in_axis)
  _check_vmap(lambda x: F.fft(x, fft_type, lengths), (in_axis,), [x], 3, tol=1e-4)


def test_vmap_of_grad_and_jit_of_grad(x64):
  x = _r64((3, 6), 13)
  loss = lambda x: (S.sort(x)[::-1] * np.arange(6.)).sum() + S.top_k(x, 2)[0].sum()
  g = vmap(jax.grad(loss))(x)
  want = np.stack([np.asarray(jax.grad(loss)(r)) for r in x])
  np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12)
  np.testing.assert_allclose(np.asarray(jit(vmap(jax.grad(loss)))(x)), want, rtol=1e-12)
  spec = lambda x: (E.real(F.fft(E.complex(x, x * 0.5), "fft", (6,))) ** 2).sum()
  g = vmap(jax.grad(spec))(x)
  want = np.stack([np.asarray(jax.grad(spec)(r)) for r in x])
  np.testing.assert_allclose(np.asarray(g), want, rtol=1e-10)


def test_jit_matches_eager():
  x = _rand((4, 8), np.float32, seed=14)
  y = _rand((4, 8), np.int8, seed=15)
  f = lambda x, y: (S.sort((x, y), 0, num_keys=2), S.top_k(x, 3),
                    F.fft(F.fft(x, "rfft", (4, 8)), "irfft", (4, 8)))
  eager, jitted = f(x, y), jit(f)(x, y)
  for e, j in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
    assert e.dtype == j.dtype
    np.testing.assert_allclose(np.asarray(e), np.asarray(j), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(np.asarray(eager[2]), x, rtol=1e-5, atol=1e-5)
