"""Structural, slicing, reduction and dot primitives.

One record per primitive over shapes and dtypes runs the three checks of
`check_primitive` (eager vs the NumPy reference, jit vs eager, abstract eval vs
actual); then the seeds' printed params, the errors for bad input (raised before
anything is compiled), and the JVP/transpose/batching rules (check_grads and vmap
against a Python loop).
"""
import numpy as np
import pytest

import lax_test_util as tu
from tracejax._src.api import jvp, make_jaxpr, vjp, vmap
from tracejax._src import dispatch
from tracejax._src.jit import jit
from tracejax._src.lax import dot as D
from tracejax._src.lax import elementwise as E
from tracejax._src.lax import reductions as R
from tracejax._src.lax import reference_shapes as ref
from tracejax._src.lax import slicing as L
from tracejax._src.lax import structural as S
from tracejax._src.test_util import check_grads

bf16 = tu.bfloat16
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint32, bf16, np.float16, np.float32,
                                np.complex64)]
NUM = DTYPES[1:]
ORDERED = DTYPES[:-1]           # no complex (argmax, max on complex is lexicographic)
INT_OR_BOOL = [np.dtype(t) for t in (np.bool_, np.int8, np.uint32)]
FLOATS = [np.dtype(t) for t in (bf16, np.float16, np.float32)]


def _name(d):
  return np.dtype(d).name


def _args(shapes, dtype, seed=0, kind="default"):
  rng = np.random.default_rng(seed)
  return [tu.rand(rng, s, dtype, kind) for s in shapes]


# =============================================================================
# Records: (name, lax fun, reference, operand shapes, dtypes)
# =============================================================================

def _rec(name, fun, reference, shapes, dtypes, kind="default"):
  return pytest.param(fun, reference, shapes, dtypes, kind, id=name)


RECORDS = [
    # broadcast_in_dim / broadcast / expand_dims
    _rec("broadcast_in_dim_scalar", lambda x: S.broadcast_in_dim(x, (3,), ()),
         lambda x: ref.broadcast_in_dim(x, (3,), ()), [()], DTYPES),
    _rec("broadcast_in_dim_new_major", lambda x: S.broadcast_in_dim(x, (2, 3), (1,)),
         lambda x: ref.broadcast_in_dim(x, (2, 3), (1,)), [(3,)], DTYPES),
    _rec("broadcast_in_dim_unit", lambda x: S.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
         lambda x: ref.broadcast_in_dim(x, (4, 2, 3), (1, 2)), [(1, 3)], NUM[::2]),
    _rec("broadcast", lambda x: S.broadcast(x, (2, 1)),
         lambda x: ref.broadcast(x, (2, 1)), [(3,)], DTYPES[::3]),
    _rec("expand_dims", lambda x: S.expand_dims(x, (0, -1)),
         lambda x: ref.expand_dims(ref.expand_dims(x, (0,)), (-1,)), [(2, 3)], DTYPES[::3]),
    # reshape / collapse
    _rec("reshape", lambda x: S.reshape(x, (2, 3)), lambda x: ref.reshape(x, (2, 3)),
         [(6,)], DTYPES),
    _rec("reshape_dimensions", lambda x: S.reshape(x, (6,), (1, 0)),
         lambda x: ref.reshape(x, (6,), (1, 0)), [(2, 3)], DTYPES[::2]),
    _rec("reshape_to_scalar", lambda x: S.reshape(x, ()), lambda x: ref.reshape(x, ()),
         [(1, 1)], DTYPES[::3]),
    _rec("collapse", lambda x: S.collapse(x, 1, 3), lambda x: ref.collapse(x, 1, 3),
         [(2, 3, 4, 1)], DTYPES[::3]),
    # transpose / squeeze / rev
    _rec("transpose_2d", lambda x: S.transpose(x, (1, 0)),
         lambda x: ref.transpose(x, (1, 0)), [(2, 3)], DTYPES),
    _rec("transpose_3d", lambda x: S.transpose(x, (2, 0, 1)),
         lambda x: ref.transpose(x, (2, 0, 1)), [(2, 3, 4)], DTYPES[::2]),
    _rec("squeeze", lambda x: S.squeeze(x, (0, -1)), lambda x: ref.squeeze(x, (0, 2)),
         [(1, 3, 1)], DTYPES),
    _rec("rev_1d", lambda x: S.rev(x, (0,)), lambda x: ref.rev(x, (0,)), [(5,)], DTYPES),
    _rec("rev_2d", lambda x: S.rev(x, (0, 1)), lambda x: ref.rev(x, (0, 1)), [(2, 3)],
         DTYPES[::2]),
    # concatenate
    _rec("concatenate_0", lambda x, y: S.concatenate([x, y], 0),
         lambda x, y: ref.concatenate([x, y], 0), [(2, 3), (1, 3)], DTYPES),
    _rec("concatenate_3_neg", lambda x, y, z: S.concatenate([x, y, z], -1),
         lambda x, y, z: ref.concatenate([x, y, z], 1), [(2, 1), (2, 4), (2, 0)],
         DTYPES[::2]),
    # pad (edge, interior, negative)
    _rec("pad_edge", lambda x, v: S.pad(x, v, [(1, 2, 0)]),
         lambda x, v: ref.pad(x, v, [(1, 2, 0)]), [(3,), ()], DTYPES),
    _rec("pad_interior_negative", lambda x, v: S.pad(x, v, [(-1, 2, 1), (0, -2, 2)]),
         lambda x, v: ref.pad(x, v, [(-1, 2, 1), (0, -2, 2)]), [(3, 4), ()], DTYPES[::2]),
    _rec("pad_empty", lambda x, v: S.pad(x, v, [(1, 1, 3)]),
         lambda x, v: ref.pad(x, v, [(1, 1, 3)]), [(0,), ()], NUM[::3]),
    # slice
    _rec("slice", lambda x: L.slice(x, (1,), (4,)), lambda x: ref.slice(x, (1,), (4,)),
         [(5,)], DTYPES),
    _rec("slice_strided", lambda x: L.slice(x, (1, 0), (4, 6), (2, 4)),
         lambda x: ref.slice(x, (1, 0), (4, 6), (2, 4)), [(4, 6)], DTYPES[::2]),
    _rec("slice_empty", lambda x: L.slice(x, (2,), (2,)), lambda x: ref.slice(x, (2,), (2,)),
         [(3,)], NUM[::3]),
    _rec("slice_in_dim", lambda x: L.slice_in_dim(x, -3, None, 2, axis=1),
         lambda x: x[:, -3::2], [(2, 5)], DTYPES[::3]),
    _rec("index_in_dim", lambda x: L.index_in_dim(x, -1, axis=1, keepdims=False),
         lambda x: x[:, -1], [(2, 5)], DTYPES[::3]),
    # dynamic_slice / dynamic_update_slice with static indices (incl. negative, clamped)
    _rec("dynamic_slice", lambda x: L.dynamic_slice(x, (1, -2), (2, 2)),
         lambda x: ref.dynamic_slice(x, (1, -2), (2, 2)), [(4, 5)], DTYPES),
    _rec("dynamic_slice_clamped", lambda x: L.dynamic_slice(x, (4,), (3,)),
         lambda x: ref.dynamic_slice(x, (4,), (3,)), [(5,)], DTYPES[::3]),
    _rec("dynamic_slice_in_dim", lambda x: L.dynamic_slice_in_dim(x, 1, 2, axis=1),
         lambda x: x[:, 1:3], [(2, 5)], DTYPES[::3]),
    _rec("dynamic_index_in_dim", lambda x: L.dynamic_index_in_dim(x, 2, 1, keepdims=False),
         lambda x: x[:, 2], [(2, 5)], DTYPES[::3]),
    _rec("dynamic_update_slice", lambda x, u: L.dynamic_update_slice(x, u, (2, -1)),
         lambda x, u: ref.dynamic_update_slice(x, u, (2, -1)), [(4, 5), (2, 3)], DTYPES),
    _rec("dynamic_update_slice_in_dim",
         lambda x, u: L.dynamic_update_slice_in_dim(x, u, 3, axis=0),
         lambda x, u: ref.dynamic_update_slice(x, u, (3, 0)), [(4, 2), (2, 2)], DTYPES[::3]),
    _rec("dynamic_update_index_in_dim",
         lambda x, u: L.dynamic_update_index_in_dim(x, u, 1, 1),
         lambda x, u: ref.dynamic_update_slice(x, u[:, None], (0, 1)), [(3, 4), (3,)],
         DTYPES[::3]),
    # reductions
    _rec("reduce_sum", lambda x: R.reduce_sum(x, (0,)), lambda x: ref.reduce_sum(x, (0,)),
         [(4, 3)], NUM),
    _rec("reduce_sum_all", lambda x: R.reduce_sum(x, (0, 2)),
         lambda x: ref.reduce_sum(x, (0, 2)), [(2, 3, 4)], NUM[::2]),
    _rec("reduce_sum_none", lambda x: R.reduce_sum(x, ()), lambda x: ref.reduce_sum(x, ()),
         [(3,)], NUM[::3]),
    _rec("reduce_max", lambda x: R.reduce_max(x, (1,)), lambda x: ref.reduce_max(x, (1,)),
         [(3, 4)], ORDERED),
    _rec("reduce_min", lambda x: R.reduce_min(x, (0, 1)),
         lambda x: ref.reduce_min(x, (0, 1)), [(3, 4)], ORDERED),
    _rec("reduce_max_empty", lambda x: R.reduce_max(x, (0,)),
         lambda x: ref.reduce_max(x, (0,)), [(0, 2)], ORDERED[::2]),
    _rec("reduce_prod", lambda x: R.reduce_prod(x, (1,)), lambda x: ref.reduce_prod(x, (1,)),
         [(2, 3)], NUM),
    _rec("reduce_and", lambda x: R.reduce_and(x, (1,)), lambda x: ref.reduce_and(x, (1,)),
         [(3, 4)], INT_OR_BOOL),
    _rec("reduce_or", lambda x: R.reduce_or(x, (0,)), lambda x: ref.reduce_or(x, (0,)),
         [(3, 4)], INT_OR_BOOL),
    _rec("reduce_xor", lambda x: R.reduce_xor(x, (0, 1)), lambda x: ref.reduce_xor(x, (0, 1)),
         [(3, 4)], INT_OR_BOOL),
    _rec("argmax", lambda x: R.argmax(x, 1, np.int32),
         lambda x: ref.argmax(x, 1, np.int32), [(3, 5)], ORDERED, kind="int_small"),
    _rec("argmin", lambda x: R.argmin(x, 0, np.uint8),
         lambda x: ref.argmin(x, 0, np.uint8), [(6, 2)], ORDERED, kind="int_small"),
    # dot_general and friends
    _rec("dot_vv", lambda x, y: D.dot_general(x, y, (((0,), (0,)), ((), ()))),
         lambda x, y: ref.dot_general(x, y, (((0,), (0,)), ((), ()))), [(3,), (3,)], DTYPES),
    _rec("dot_mm", lambda x, y: D.dot_general(x, y, (((1,), (0,)), ((), ()))),
         lambda x, y: ref.dot_general(x, y, (((1,), (0,)), ((), ()))), [(2, 3), (3, 4)],
         DTYPES),
    _rec("dot_batch", lambda x, y: D.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
         lambda x, y: ref.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
         [(2, 2, 3), (2, 3, 4)], DTYPES[::2]),
    _rec("dot_two_contract_batch_mid",
         lambda x, y: D.dot_general(x, y, (((0, 2), (2, 0)), ((1,), (1,)))),
         lambda x, y: ref.dot_general(x, y, (((0, 2), (2, 0)), ((1,), (1,)))),
         [(3, 2, 4), (4, 2, 3)], NUM[::2]),
    _rec("dot", lambda x, y: D.dot(x, y), lambda x, y: ref.dot(x, y), [(2, 3), (3,)],
         DTYPES[::2]),
    _rec("batch_matmul", lambda x, y: D.batch_matmul(x, y),
         lambda x, y: ref.batch_matmul(x, y), [(2, 1, 3), (2, 3, 2)], NUM[::3]),
]


def _flat_records():
  for rec in RECORDS:
    fun, reference, shapes, dtypes, kind = rec.values
    for dt in dtypes:
      yield pytest.param(fun, reference, shapes, dt, kind, id=f"{rec.id}-{_name(dt)}")


@pytest.mark.parametrize("fun,reference,shapes,dtype,kind", list(_flat_records()))
def test_primitive(fun, reference, shapes, dtype, kind):
  if kind == "int_small":  # ties and repeated values for the arg-reductions
    rng = np.random.default_rng(1)
    args = [rng.integers(-3, 3, s).astype(dtype) if dtype != np.bool_ else
            rng.random(s) < 0.5 for s in shapes]
  else:
    args = _args(shapes, dtype)
  tu.check_primitive(fun, reference, args)


# ---- records that make rather than transform arrays ----

@pytest.mark.parametrize("dtype", NUM, ids=_name)
def test_iota(dtype):
  tu.check_primitive(lambda: S.iota(dtype, 5), lambda: ref.iota(dtype, 5), [])
  tu.check_primitive(lambda: S.broadcasted_iota(dtype, (2, 3), -1),
                     lambda: ref.broadcasted_iota(dtype, (2, 3), 1), [])


@pytest.mark.parametrize("dtype", DTYPES, ids=_name)
def test_full_and_full_like(dtype):
  x = _args([(2, 3)], dtype)[0]
  tu.check_primitive(lambda: S.full((2, 3), 1, dtype), lambda: ref.full((2, 3), 1, dtype), [])
  tu.check_primitive(lambda x: S.full_like(x, 0), lambda x: np.zeros_like(x), [x])
  tu.check_primitive(lambda x: S.zeros_like_array(x), lambda x: np.zeros_like(x), [x])
  tu.check_primitive(lambda x: S.full_like(x, 1, np.float32, (4,)),
                     lambda x: np.ones(4, np.float32), [x])


def test_full_weak_type_and_tie_in():
  assert S.full((2,), 1.5).aval.weak_type
  assert not S.full((2,), 1.5, np.float32).aval.weak_type
  assert S.full((2,), 1.5).dtype == np.float32
  y = np.ones(3, np.float32)
  assert S.tie_in(np.zeros(2), y) is y


def test_general_reduce():
  x = _args([(3, 4)], np.float32)[0]
  # a known monoid with its identity becomes that monoid's primitive
  jaxpr = make_jaxpr(lambda x: R.reduce(x, np.float32(0), E.add, (0,)))(x)
  assert "reduce_sum" in str(jaxpr)
  tu.check_primitive(lambda x: R.reduce(x, np.float32(-np.inf), E.max, (1,)),
                     lambda x: x.max(1), [x])
  # not the identity: the general reduce primitive with the computation as its body
  jaxpr = make_jaxpr(lambda x: R.reduce(x, np.float32(1), E.max, (1,)))(x)
  assert "reduce[" in str(jaxpr) and "max" in str(jaxpr)
  tu.check_primitive(lambda x: R.reduce(x, np.float32(1), E.max, (1,)),
                     lambda x: np.maximum(x.max(1), 1), [x])
  # a variadic reduction over a pytree: (sum, max) in one pass
  comp = lambda a, b: (E.add(a[0], b[0]), E.max(a[1], b[1]))
  tu.check_primitive(
      lambda x: R.reduce((x, x), (np.float32(0), np.float32(-5)), comp, (0,)),
      lambda x: (x.sum(0), np.maximum(x.max(0), -5)), [x])
  # a user computation that is not a lax function
  tu.check_primitive(lambda x: R.reduce(x, np.int32(0), lambda a, b: E.bitwise_or(a, b), (0,)),
                     lambda x: np.bitwise_or.reduce(x, 0), [np.arange(12, dtype=np.int32)])


def test_argmax_nan_and_ties():
  x = np.array([[1., np.nan, 3., np.nan], [2., 5., 5., 0.], [-np.inf] * 4], np.float32)
  for f, r in ((R.argmax, np.argmax), (R.argmin, np.argmin)):
    out = f(x, 1, np.int32)
    np.testing.assert_array_equal(out, r(x, 1))
    np.testing.assert_array_equal(jit(lambda x: f(x, 1, np.int32))(x), r(x, 1))


def test_reduce_max_nan_propagates():
  x = np.array([[1., np.nan], [2., 3.]], np.float32)
  np.testing.assert_array_equal(R.reduce_max(x, (1,)), [np.nan, 3.])
  np.testing.assert_array_equal(R.reduce_min(x, (0,)), [1., np.nan])


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint32, np.int32], ids=_name)
def test_dynamic_slice_traced_indices(idx_dtype):
  """Traced start indices: negative ones wrap (signed), out-of-range ones clamp."""
  x = np.arange(20, dtype=np.float32).reshape(4, 5)
  u = -np.ones((2, 2), np.float32)
  starts = [(1, 2), (3, 4), (0, 0)] + ([(-1, -3)] if np.dtype(idx_dtype).kind == "i" else [])
  ds = jit(lambda x, i, j: L.dynamic_slice(x, (i, j), (2, 2)))
  dus = jit(lambda x, u, i, j: L.dynamic_update_slice(x, u, (i, j)))
  for i, j in starts:
    i, j = idx_dtype(i), idx_dtype(j)
    np.testing.assert_array_equal(ds(x, i, j), ref.dynamic_slice(x, (i, j), (2, 2)))
    np.testing.assert_array_equal(dus(x, u, i, j), ref.dynamic_update_slice(x, u, (i, j)))
  # mixed index dtypes are converted to one dtype
  out = jit(lambda x, i: L.dynamic_slice(x, (i, np.int8(1)), (1, 2)))(x, idx_dtype(2))
  np.testing.assert_array_equal(out, x[2:3, 1:3])


@pytest.mark.parametrize("dtype", [np.int8, bf16], ids=_name)
def test_dot_preferred_element_type(dtype):
  x, y = _args([(2, 3), (3, 2)], dtype)
  pref = np.int32 if dtype == np.int8 else np.float32
  tu.check_primitive(lambda x, y: D.dot(x, y, preferred_element_type=pref),
                     lambda x, y: ref.dot(x, y, preferred_element_type=pref), [x, y],
                     out_dtype=pref)


def test_precision_spellings():
  assert D.canonicalize_precision(None) is None
  H = D.Precision.HIGHEST
  assert D.canonicalize_precision("highest") == (H, H)
  assert D.canonicalize_precision(H) == (H, H)
  assert D.canonicalize_precision(("default", "high")) == (D.Precision.DEFAULT, D.Precision.HIGH)
  with pytest.raises(ValueError, match="Precision"):
    D.canonicalize_precision("fast-ish")
  x = np.ones((2, 2), np.float32)
  for p in ("high", H, ("highest", "default")):
    np.testing.assert_allclose(D.dot(x, x, precision=p), 2 * x)
    np.testing.assert_allclose(jit(lambda a: D.dot(a, a, precision=p))(x), 2 * x)
  text = str(make_jaxpr(lambda a: D.dot(a, a, precision="highest"))(x))
  assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.complex128], ids=_name)
def test_64bit(x64, dtype):
  x, y = _args([(2, 3), (3, 2)], dtype)
  tu.check_primitive(lambda x, y: D.dot(x, y), ref.dot, [x, y])
  tu.check_primitive(lambda x: R.reduce_sum(S.transpose(x, (1, 0)), (1,)),
                     lambda x: x.T.sum(1), [x])
  tu.check_primitive(lambda x: L.dynamic_slice(x, (np.int64(1), 1), (1, 2)),
                     lambda x: x[1:2, 1:3], [x])
  tu.check_primitive(lambda x: S.pad(x, 0, [(1, -1, 1), (0, 0, 0)]),
                     lambda x: ref.pad(x, np.zeros((), x.dtype), [(1, -1, 1), (0, 0, 0)]), [x])


# =============================================================================
# Printing (the seeds' jaxprs)
# =============================================================================

def test_seed_jaxpr_params():
  text = str(make_jaxpr(lambda x: R.reduce_sum(x, (0,)))(np.zeros(8, np.float32)))
  assert "reduce_sum[ axes=(0,)" in text
  assert "input_shape=(8,) ]" in text
  a = np.zeros((2, 3), np.float32)
  text = str(make_jaxpr(lambda a, c: D.dot_general(a, c, (((1,), (0,)), ((), ()))))(a, a.T))
  assert "dot_general[ dimension_numbers=(((1,), (0,)), ((), ()))" in text
  assert "precision=None ]" in text
  text = str(make_jaxpr(lambda x: S.broadcast_in_dim(x, (8,), ()))(np.float32(1)))
  assert "broadcast_in_dim[ broadcast_dimensions=()" in text and "shape=(8,) ]" in text


# =============================================================================
# Errors: clear TypeError/ValueError, raised before anything is compiled
# =============================================================================

_x23 = np.zeros((2, 3), np.float32)
ERRORS = [
    ("transpose_bad_perm", lambda: S.transpose(_x23, (0, 0)), TypeError,
     "permutation isn't a permutation"),
    ("transpose_wrong_len", lambda: S.transpose(_x23, (1, 0, 2)), TypeError,
     "operand shape \\(2, 3\\)"),
    ("reshape_size", lambda: S.reshape(_x23, (4, 2)), TypeError, "total size must be unchanged"),
    ("reshape_dims", lambda: S.reshape(_x23, (6,), (0, 0)), TypeError, "permutation"),
    ("bid_rank", lambda: S.broadcast_in_dim(_x23, (3,), (0,)), TypeError, "broadcast_dimensions"),
    ("bid_size", lambda: S.broadcast_in_dim(_x23, (2, 4), (0, 1)), TypeError,
     "must either be 1, or be equal"),
    ("bid_order", lambda: S.broadcast_in_dim(_x23, (3, 2), (1, 0)), TypeError,
     "strictly increasing"),
    ("bid_out_of_range", lambda: S.broadcast_in_dim(_x23, (2, 3), (0, 5)), TypeError, "subset"),
    ("bid_negative_shape", lambda: S.broadcast_in_dim(np.float32(0), (-1,), ()), TypeError,
     "nonnegative"),
    ("concat_shapes", lambda: S.concatenate([_x23, np.zeros((3, 2), np.float32)], 0),
     TypeError, "differ in dimensions other than"),
    ("concat_dtypes", lambda: S.concatenate([_x23, _x23.astype(np.int32)], 0), TypeError,
     "same dtypes"),
    ("concat_rank", lambda: S.concatenate([_x23, np.zeros(3, np.float32)], 0), TypeError,
     "different numbers of dimensions"),
    ("concat_empty", lambda: S.concatenate([], 0), ValueError, "non-empty"),
    ("squeeze_size", lambda: S.squeeze(_x23, (0,)), ValueError, "size not equal to one"),
    ("squeeze_axis", lambda: S.squeeze(_x23, (2,)), ValueError, "out-of-bounds"),
    ("rev_dims", lambda: S.rev(_x23, (2,)), TypeError, "less than operand ndim"),
    ("pad_config_len", lambda: S.pad(_x23, np.float32(0), [(0, 0, 0)]), ValueError,
     "length of padding_config"),
    ("pad_interior", lambda: S.pad(_x23, np.float32(0), [(0, 0, -1), (0, 0, 0)]), ValueError,
     "interior padding"),
    ("pad_too_negative", lambda: S.pad(_x23, np.float32(0), [(-2, -1, 0), (0, 0, 0)]),
     ValueError, "not at least 0"),
    ("pad_dtype", lambda: S.pad(_x23, np.int32(0), [(0, 0, 0), (0, 0, 0)]), TypeError,
     "same dtype"),
    ("iota_bool", lambda: S.iota(np.bool_, 3), TypeError, "iota does not accept dtype bool"),
    ("iota_dim", lambda: S.broadcasted_iota(np.int32, (2, 3), 2), ValueError, "dimension"),
    ("full_shape", lambda: S.full((2,), np.ones(2)), TypeError, "scalar fill_value"),
    ("slice_limit", lambda: L.slice(_x23, (0, 0), (3, 3)), TypeError, "limit_indices"),
    ("slice_rank", lambda: L.slice(_x23, (0,), (1,)), TypeError, "length equal to the number"),
    ("slice_stride", lambda: L.slice(_x23, (0, 0), (2, 3), (1, 0)), TypeError,
     "strictly positive"),
    ("dynamic_slice_sizes", lambda: L.dynamic_slice(_x23, (0, 0), (3, 1)), TypeError,
     "slice_sizes must be less than or equal"),
    ("dynamic_slice_nidx", lambda: L.dynamic_slice(_x23, (0,), (1, 1)), ValueError,
     "length of slice indices"),
    ("dynamic_slice_float_idx", lambda: L.dynamic_slice(_x23, (np.float32(0), 0), (1, 1)),
     TypeError, "integers"),
    ("dus_dtype", lambda: L.dynamic_update_slice(_x23, np.zeros((1, 1), np.int32), (0, 0)),
     TypeError, "same dtype"),
    ("dus_shape", lambda: L.dynamic_update_slice(_x23, np.zeros((3, 1), np.float32), (0, 0)),
     TypeError, "update shape"),
    ("index_in_dim_oob", lambda: L.index_in_dim(_x23, 5, 1), IndexError, "out of bounds"),
    ("reduce_axes_oob", lambda: R.reduce_sum(_x23, (2,)), ValueError, "out-of-bounds"),
    ("reduce_axes_dup", lambda: R.reduce_max(_x23, (0, 0)), ValueError, "duplicate"),
    ("reduce_sum_bool", lambda: R.reduce_sum(_x23 > 0, (0,)), TypeError, "bool"),
    ("reduce_and_float", lambda: R.reduce_and(_x23, (0,)), TypeError, "float32"),
    ("argmax_empty", lambda: R.argmax(np.zeros((0, 2), np.float32), 0, np.int32), ValueError,
     "non-empty"),
    ("argmax_index_dtype", lambda: R.argmax(_x23, 0, np.float32), TypeError, "index_dtype"),
    ("reduce_tree", lambda: R.reduce((_x23, _x23), (np.float32(0),), E.add, (0,)), ValueError,
     "tree structure"),
    ("dot_contract", lambda: D.dot_general(_x23, _x23, (((1,), (0,)), ((), ()))), TypeError,
     "contracting dimensions to have the same shape"),
    ("dot_batch", lambda: D.dot_general(np.zeros((2, 3, 4), np.float32),
                                        np.zeros((3, 4, 5), np.float32),
                                        (((2,), (1,)), ((0,), (0,)))), TypeError,
     "batch dimensions to have the same shape"),
    ("dot_dims_oob", lambda: D.dot_general(_x23, _x23, (((2,), (0,)), ((), ()))), TypeError,
     "less than the number of axes"),
    # (mixed operand dtypes are promoted, as in JAX 0.10.2: tests/test_fuzz_finds_new.py)
    ("dot_shapes", lambda: D.dot(_x23, _x23), TypeError, "Incompatible shapes for dot"),
    ("dot_preferred", lambda: D.dot(_x23, _x23.T, preferred_element_type=np.int32), TypeError,
     "preferred_element_type"),
    ("batch_matmul_rank", lambda: D.batch_matmul(_x23, np.zeros((1, 3, 2), np.float32)),
     ValueError, "same ndim"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(f, e, m, id=n) for n, f, e, m in ERRORS])
def test_errors(fn, exc, match, monkeypatch):
  compiled = []
  real = dispatch._compile_primitive

  def spy(prim, avals, params):
    out = real(prim, avals, params)  # raises for bad input before any lowering
    compiled.append(prim.name)
    return out
  monkeypatch.setattr(dispatch, "_compile_primitive", spy)
  with pytest.raises(exc, match=match):
    fn()
  with pytest.raises(exc, match=match):
    jit(fn)()  # the same check while tracing
  assert not compiled


def test_traced_shape_error():
  with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
    jit(lambda n: S.full((n,), 1.0))(3)


# =============================================================================
# Transformations: JVP/transpose (check_grads) and batching (vmap vs a loop)
# =============================================================================

f64 = np.float64


def _r(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape)


GRAD_CASES = [
    ("broadcast_in_dim", lambda x: S.broadcast_in_dim(x, (2, 3, 4), (0, 2)), [(2, 1 * 4)]),
    ("broadcast_in_dim_unit", lambda x: S.broadcast_in_dim(x, (3, 4), (0, 1)), [(1, 4)]),
    ("reshape", lambda x: S.reshape(x, (3, 2), (1, 0)), [(2, 3)]),
    ("transpose", lambda x: S.transpose(x, (2, 0, 1)), [(2, 3, 4)]),
    ("squeeze", lambda x: S.squeeze(x, (1,)), [(3, 1)]),
    ("expand_dims", lambda x: S.expand_dims(x, (0,)), [(3,)]),
    ("rev", lambda x: S.rev(x, (0,)), [(2, 3)]),
    ("concatenate", lambda x, y: S.concatenate([x, y], 1), [(2, 1), (2, 3)]),
    ("pad", lambda x, v: S.pad(x, v, [(1, -1, 1), (-1, 2, 0)]), [(3, 4), ()]),
    ("slice", lambda x: L.slice(x, (1, 0), (3, 4), (1, 2)), [(3, 4)]),
    ("dynamic_slice", lambda x: L.dynamic_slice(x, (1, 3), (2, 2)), [(3, 4)]),
    ("dynamic_update_slice", lambda x, u: L.dynamic_update_slice(x, u, (1, 1)),
     [(3, 4), (2, 2)]),
    ("reduce_sum", lambda x: R.reduce_sum(x, (0, 2)), [(2, 3, 2)]),
    ("reduce_max", lambda x: R.reduce_max(x, (1,)), [(2, 3)]),
    ("reduce_min", lambda x: R.reduce_min(x, (0,)), [(2, 3)]),
    ("reduce_prod", lambda x: R.reduce_prod(x, (1,)), [(2, 5)]),
    ("reduce_general", lambda x: R.reduce(x, np.float64(-1e9), E.max, (1,)), [(2, 3)]),
    ("dot_general", lambda x, y: D.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     [(2, 3, 4), (2, 4, 2)]),
    ("dot_general_transposed", lambda x, y: D.dot_general(x, y, (((0,), (1,)), ((), ()))),
     [(3, 2), (4, 3)]),
]


@pytest.mark.parametrize("fun,shapes", [pytest.param(f, s, id=n) for n, f, s in GRAD_CASES])
def test_grads(x64, fun, shapes):
  args = [_r(*s, seed=i) for i, s in enumerate(shapes)]
  check_grads(fun, args, order=2, modes=("fwd", "rev"))


def test_argmax_has_zero_tangent(x64):
  x = _r(2, 3)
  _, t = jvp(lambda x: R.argmax(x, 1, np.int32), (x,), (np.ones_like(x),))
  assert np.asarray(t).dtype == np.dtype([("float0", "V", 0)]) or not np.any(np.asarray(t))


def test_reduce_max_tie_gradient(x64):
  x = np.array([1., 3., 3.])
  _, g = vjp(lambda x: R.reduce_max(x, (0,)), x)
  np.testing.assert_allclose(g(np.float64(1.))[0], [0., .5, .5])


VMAP_CASES = [
    ("broadcast_in_dim", lambda x: S.broadcast_in_dim(x, (2, 3), (1,)), [(3,)]),
    ("reshape", lambda x: S.reshape(x, (3, 2), (1, 0)), [(2, 3)]),
    ("transpose", lambda x: S.transpose(x, (1, 0)), [(2, 3)]),
    ("squeeze", lambda x: S.squeeze(x, (0,)), [(1, 3)]),
    ("rev", lambda x: S.rev(x, (1,)), [(2, 3)]),
    ("concatenate", lambda x, y: S.concatenate([x, y], 0), [(2,), (3,)]),
    ("pad", lambda x, v: S.pad(x, v, [(1, -1, 1)]), [(3,), ()]),
    ("slice", lambda x: L.slice(x, (1,), (4,), (2,)), [(5,)]),
    ("dynamic_slice", lambda x, i: L.dynamic_slice(x, (i, 1), (2, 2)), [(4, 3), "idx"]),
    ("dynamic_update_slice", lambda x, u, i: L.dynamic_update_slice(x, u, (i, 0)),
     [(4, 3), (2, 2), "idx"]),
    ("reduce_sum", lambda x: R.reduce_sum(x, (1,)), [(2, 3)]),
    ("reduce_max", lambda x: R.reduce_max(x, (0,)), [(2, 3)]),
    ("argmax", lambda x: R.argmax(x, 0, np.int32), [(4, 3)]),
    ("reduce_general", lambda x: R.reduce(x, np.float32(-10), E.max, (0,)), [(2, 3)]),
    ("dot_general", lambda x, y: D.dot_general(x, y, (((1,), (0,)), ((), ()))),
     [(2, 3), (3, 4)]),
    ("dot_general_batch", lambda x, y: D.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
     [(2, 2, 3), (2, 3, 4)]),
]


def _vmap_args(shapes, axis, batch=3):
  """Batched arguments with the batch at `axis` (or unbatched: None) per argument."""
  rng = np.random.default_rng(0)
  out = []
  for s, ax in zip(shapes, axis):
    if s == "idx":
      v = rng.integers(-5, 5, (batch,)).astype(np.int32) if ax is not None else np.int32(2)
    else:
      v = rng.normal(size=s).astype(np.float32)
      if ax is not None:
        v = np.stack([v * (k + 1) for k in range(batch)], ax)
    out.append(v)
  return out


@pytest.mark.parametrize("fun,shapes", [pytest.param(f, s, id=n) for n, f, s in VMAP_CASES])
def test_vmap(fun, shapes):
  n = len(shapes)
  axes_choices = [tuple([0] * n), tuple([-1] * n)]
  if n > 1:
    axes_choices.append(tuple([None] + [0] * (n - 1)))
    axes_choices.append(tuple([0] + [None] * (n - 1)))
  for axes in axes_choices:
    args = _vmap_args(shapes, axes)
    out = vmap(fun, in_axes=axes)(*args)
    expected = np.stack([
        np.asarray(fun(*[a if ax is None else np.take(a, k, ax) for a, ax in zip(args, axes)]))
        for k in range(3)])
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-5,
                               err_msg=str(axes))


def test_dot_general_vmap_is_one_dot_general():
  x, y = np.ones((3, 2, 4), np.float32), np.ones((4, 5, 3), np.float32)
  f = vmap(lambda a, b: D.dot_general(a, b, (((1,), (0,)), ((), ()))), in_axes=(0, 2))
  text = str(make_jaxpr(f)(x, y))
  assert text.count("dot_general") == 1 and "while" not in text
