"""Sorting primitives: `sort` (variadic, lexicographic on the first `num_keys`
operands) and `top_k`, plus the `sort_key_val` convenience.

The sort order is JAX's total order, the same for every backend:
  * floats: -0.0 and 0.0 compare equal (a stable sort keeps their input order) and
    every NaN, whatever its sign or payload, sorts after +inf;
  * complex: lexicographic on (real, imag), each part ordered as a float;
  * signed/unsigned integers and bool (False < True): their natural order.
The comparator canonicalizes float keys (-0.0 -> 0.0, any NaN -> +NaN) and then
compares with StableHLO's TOTALORDER comparison, which is a strict weak order on
the canonical values, so sorting is deterministic and stability is meaningful.

Derivatives need no gather: sorting is linear in its non-key operands once the
keys are fixed. The JVP sorts the tangents as non-key operands alongside the
(primal) keys, and the transpose of that sort un-permutes the cotangents with a
second sort keyed by the permutation (a sort of (keys, iota)).
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import chlo, hlo, ir
from tracejax._src.lax import utils
from tracejax._src.lax.structural import _aval, _shape, broadcast_in_dim, broadcasted_iota
from tracejax._src.lax.elementwise import _convert_element_type
from tracejax._src.lax.utils import standard_primitive

__all__ = ["sort", "sort_p", "sort_key_val", "top_k", "top_k_p"]


def _index_dtype(size):
  """int32 indices unless the axis is too long for them (then int64, which needs x64)."""
  return np.dtype(np.int32) if size <= np.iinfo(np.int32).max else \
      dtypes.canonicalize_dtype(np.int64)


def _scalar_type(dtype):
  return ir.RankedTensorType.get((), mlir.dtype_to_ir_type(dtype))


# =============================================================================
# sort
# =============================================================================

def sort(operand, dimension=-1, is_stable=True, num_keys=1):
  """Wraps XLA's Sort operator.

  `operand` is one array or a sequence of arrays of equal shape. All of them are
  permuted along `dimension` by the (lexicographic) order of the first
  `num_keys`; a sequence gives back a tuple. Floats sort with -0.0 == 0.0 and
  NaNs last; complex numbers by (real, imag). With `is_stable` equal keys keep
  their input order.
  """
  if isinstance(operand, (list, tuple)):
    operands = tuple(operand)
    if not operands:
      raise TypeError("sort requires at least one operand")
    num_keys = _check_num_keys(num_keys, len(operands))
    dimension = _canonicalize_dimension(dimension, operands[0])
    return tuple(sort_p.bind(*operands, dimension=dimension, is_stable=bool(is_stable),
                             num_keys=num_keys))
  if num_keys != 1:
    raise ValueError(f"sort: num_keys={num_keys} must equal 1 for a single operand.")
  dimension = _canonicalize_dimension(dimension, operand)
  return sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
  """Sorts `keys` along `dimension` and applies the same permutation to `values`."""
  dimension = _canonicalize_dimension(dimension, keys)
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=bool(is_stable), num_keys=1)
  return k, v


def _check_num_keys(num_keys, n):
  num_keys = concrete_or_error(operator.index, num_keys, "The num_keys argument of sort.")
  if not 1 <= num_keys <= n:
    raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                     f"operands ({n}).")
  return num_keys


def _canonicalize_dimension(dimension, operand):
  ndim = np.ndim(operand)
  dimension = concrete_or_error(operator.index, dimension, "The dimension argument of sort.")
  if not -ndim <= dimension < ndim:  # (rank 0 included; JAX 0.10.2's words)
    raise ValueError(f"axis {dimension} is out of bounds for array of dimension {ndim}")
  return dimension % ndim


def _sort_shape_rule(*operands, dimension, is_stable, num_keys):
  if not operands:
    raise TypeError("sort requires at least one operand")
  shapes = [o.shape for o in operands]
  if len(set(shapes)) > 1:
    raise TypeError(f"sort arguments must all have the same shape, got "
                    f"{', '.join(map(str, shapes))}.")
  if not 1 <= num_keys <= len(operands):
    raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                     f"operands ({len(operands)}).")
  if not 0 <= dimension < len(shapes[0]):
    raise ValueError(f"sort dimension {dimension} is out of bounds for operands of shape "
                     f"{shapes[0]}.")
  return shapes


def _sort_dtype_rule(*operands, dimension, is_stable, num_keys):
  utils.check_dtypes("sort", utils._any, *operands)
  return [o.dtype for o in operands]


def _sort_weak_type_rule(*operands, dimension, is_stable, num_keys):
  return [o.weak_type for o in operands]


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  # The tangents are sorted as extra non-key operands by the same keys. Both sorts
  # are stable (whatever `is_stable` says) so that they pick the same permutation
  # among equal keys, and each tangent stays with its primal. The tangent sort has
  # known keys and linear non-key operands: that is what its transpose rule inverts.
  out = sort_p.bind(*primals, dimension=dimension, is_stable=True, num_keys=num_keys)
  nz = [i for i, t in enumerate(tangents) if type(t) is not ad.Zero]
  t_out = [ad.Zero(_aval(o).at_least_vspace()) for o in out]
  if nz:
    sorted_t = sort_p.bind(*primals[:num_keys], *[tangents[i] for i in nz],
                           dimension=dimension, is_stable=True, num_keys=num_keys)
    for i, t in zip(nz, sorted_t[num_keys:]):
      t_out[i] = t
  return out, t_out


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
  # sort is linear in its non-key operands for fixed keys: out[j] = x[perm[j]]
  # along `dimension`, where perm comes from sorting (keys, iota). The transpose
  # scatters back, ct_x[perm[j]] = ct[j], which is a sort of (perm, ct) by perm
  # (perm's entries are distinct, so that sort needs no stability).
  keys = operands[:num_keys]
  if any(ad.is_undefined_primal(k) for k in keys):
    raise NotImplementedError("sort is not linear in its key operands: it cannot be "
                              "transposed with respect to them.")
  lin = [i for i in range(num_keys, len(operands))
         if ad.is_undefined_primal(operands[i]) and type(cts[i]) is not ad.Zero]
  res = [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None for x in operands]
  res[:num_keys] = [None] * num_keys
  if not lin:
    return res
  shape = operands[lin[0]].aval.shape
  iota = broadcasted_iota(_index_dtype(shape[dimension]), shape, dimension)
  perm = sort_p.bind(*keys, iota, dimension=dimension, is_stable=True,
                     num_keys=num_keys)[-1]
  unsorted = sort_p.bind(perm, *[cts[i] for i in lin], dimension=dimension,
                         is_stable=False, num_keys=1)
  for i, ct in zip(lin, unsorted[1:]):
    # JAX's sort JVP gathers the tangents by the permutation, so its transpose is a
    # scatter-add into fresh (strong) zeros: the cotangent comes out strongly typed.
    res[i] = _convert_element_type(ct, weak_type=False) if _aval(ct).weak_type else ct
  return res


def _sort_batch_rule(args, dims, *, dimension, is_stable, num_keys):
  # Every operand gets its batch axis in front (unbatched ones are broadcast):
  # the sorted axis shifts by one.
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  args = [utils.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  out = sort_p.bind(*args, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
  return out, [0] * len(out)


def _canonical_float_key(x, dtype):
  """`x` with -0.0 -> 0.0 and every NaN -> +NaN, so TOTALORDER matches JAX's order."""
  zero = mlir.ir_constant(np.array(0, dtype))
  nan = mlir.ir_constant(np.array(np.nan, dtype))
  float_cmp = hlo.ComparisonTypeAttr.get("FLOAT")
  is_zero = hlo.compare(x, zero, hlo.ComparisonDirectionAttr.get("EQ"), compare_type=float_cmp)
  x = hlo.select(is_zero, zero, x)
  is_nan = hlo.compare(x, x, hlo.ComparisonDirectionAttr.get("NE"), compare_type=float_cmp)
  return hlo.select(is_nan, nan, x)


def _sort_keys(x, dtype):
  """The (scalar) comparison keys of one operand and their compare types."""
  dtype = np.dtype(dtype)
  if dtypes.issubdtype(dtype, np.complexfloating):
    part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    return [(_canonical_float_key(hlo.real(x), part), "TOTALORDER"),
            (_canonical_float_key(hlo.imag(x), part), "TOTALORDER")]
  if dtypes.issubdtype(dtype, np.floating):
    return [(_canonical_float_key(x, dtype), "TOTALORDER")]
  if dtypes.issubdtype(dtype, np.signedinteger):
    return [(x, "SIGNED")]
  return [(x, "UNSIGNED")]  # unsigned integers and bool


def _sort_lt_comparator(args, dtypes_, num_keys):
  """The comparator body: lexicographic `lhs < rhs` on the first `num_keys` operands."""
  lhs_keys, rhs_keys = [], []
  for i in range(num_keys):
    lhs_keys += _sort_keys(args[2 * i], dtypes_[i])
    rhs_keys += _sort_keys(args[2 * i + 1], dtypes_[i])
  lt = lambda a, b, ct: hlo.compare(a, b, hlo.ComparisonDirectionAttr.get("LT"),
                                    compare_type=hlo.ComparisonTypeAttr.get(ct))
  eq = lambda a, b, ct: hlo.compare(a, b, hlo.ComparisonDirectionAttr.get("EQ"),
                                    compare_type=hlo.ComparisonTypeAttr.get(ct))
  p = None
  for (a, ct), (b, _) in zip(reversed(lhs_keys), reversed(rhs_keys)):
    p = lt(a, b, ct) if p is None else hlo.or_(lt(a, b, ct), hlo.and_(eq(a, b, ct), p))
  return p


def _sort_lowering(ctx, *operands, dimension, is_stable, num_keys):
  op = hlo.SortOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(operands),
                  dimension=dimension, is_stable=is_stable)
  dts = [a.dtype for a in ctx.avals_in]
  arg_types = [t for d in dts for t in (_scalar_type(d), _scalar_type(d))]
  block = op.comparator.blocks.append(*arg_types)
  with ir.InsertionPoint(block):
    hlo.return_([_sort_lt_comparator(list(block.arguments), dts, num_keys)])
  return list(op.results)


sort_p = standard_primitive(_sort_shape_rule, _sort_dtype_rule, "sort",
                            weak_type_rule=_sort_weak_type_rule, multiple_results=True)
ad.primitive_jvps[sort_p] = _sort_jvp
ad.primitive_transposes[sort_p] = _sort_transpose
batching.primitive_batchers[sort_p] = _sort_batch_rule
mlir.register_lowering(sort_p, _sort_lowering)


# =============================================================================
# top_k
# =============================================================================

def top_k(operand, k, *, axis=-1):
  """The `k` largest entries along `axis` (default: the last) of `operand`, and their
  int32 indices.

  Values come in decreasing order; among equal values the lower index comes first.

  Args:
    operand: an array of rank >= 1.
    k: how many entries to keep (a static int).
    axis: the axis to search (negative counts from the end).

  >>> top_k(jnp.array([[1., 5.], [3., 2.]]), 1, axis=0)[1]
  DeviceArray([[1, 0]], dtype=int32)
  """
  k = concrete_or_error(operator.index, k, "The k argument of top_k.")
  ndim = len(np.shape(operand))
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:  # (rank 0 included; JAX 0.10.2's words)
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  axis = axis % ndim
  if axis == ndim - 1:
    return tuple(top_k_p.bind(operand, k=k))
  from tracejax._src.lax import structural
  perm = tuple(i for i in range(ndim) if i != axis) + (axis,)
  inv = tuple(np.argsort(perm))
  vals, idx = top_k_p.bind(structural.transpose(operand, perm), k=k)
  return structural.transpose(vals, inv), structural.transpose(idx, inv)


def _top_k_shape_rule(operand, *, k):
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"top_k operand must have >= 1 dimension, got {operand.shape}")
  if operand.shape[-1] < k:
    raise ValueError("k argument to top_k must be no larger than minor dimension; "
                     f"{k} vs {operand.shape}")
  if operand.shape[-1] > np.iinfo(np.int32).max:
    raise ValueError("top_k returns int32 indices, which would overflow for a last "
                     f"dimension of size {operand.shape[-1]}.")
  shape = operand.shape[:-1] + (k,)
  return [shape, shape]


def _top_k_dtype_rule(operand, *, k):
  utils.check_dtypes("top_k", [np.bool_, np.integer, np.floating], operand)
  return [operand.dtype, np.dtype(np.int32)]


def _top_k_weak_type_rule(operand, *, k):
  return [operand.weak_type, False]


def _top_k_jvp(primals, tangents, *, k):
  # The output tangent is the input tangent at the selected indices: one gather along
  # the last axis (the others batched), as JAX's rule. So it keeps the tangent's weak
  # type, and its transpose scatters into (strong) zeros, as JAX's does.
  from tracejax._src.lax import gather as gather_mod
  (operand,), (t,) = primals, tangents
  values, indices = top_k_p.bind(operand, k=k)
  if type(t) is ad.Zero:
    return [values, indices], [ad.Zero(_aval(values).at_least_vspace()),
                               ad.Zero(_aval(indices).at_least_vspace())]
  nd = len(_shape(operand))
  if 0 in _shape(values):
    # An empty result (k == 0 or an empty batch axis): the gather's size-1 slices would
    # not fit the operand; the (empty) leading slice of the tangent is the same thing.
    from tracejax._src.lax.slicing import slice as lax_slice
    return [values, indices], [lax_slice(t, (0,) * nd, _shape(values)),
                               ad.Zero(_aval(indices).at_least_vspace())]
  batch = tuple(range(nd - 1))
  dnums = gather_mod.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(nd - 1,), start_index_map=(nd - 1,),
      operand_batching_dims=batch, start_indices_batching_dims=batch)
  idx = broadcast_in_dim(indices, _shape(indices) + (1,), tuple(range(nd)))
  t_out = gather_mod.gather(t, idx, dnums, (1,) * nd, indices_are_sorted=False,
                            unique_indices=True, mode=gather_mod.GatherScatterMode.PROMISE_IN_BOUNDS)
  return [values, indices], [t_out, ad.Zero(_aval(indices).at_least_vspace())]


def _top_k_batch_rule(args, dims, *, k):
  # top_k acts on the last axis: any other batch axis passes through.
  (x,), (d,) = args, dims
  if d == np.ndim(x) - 1:
    x, d = utils.moveaxis(x, d, 0), 0
  out = top_k_p.bind(x, k=k)
  return out, [d, d]


def _top_k_lowering(ctx, operand, *, k):
  out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  return list(chlo.TopKOp(operand, k, results=out_types).results)


top_k_p = standard_primitive(_top_k_shape_rule, _top_k_dtype_rule, "top_k",
                             weak_type_rule=_top_k_weak_type_rule, multiple_results=True)
ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch_rule
mlir.register_lowering(top_k_p, _top_k_lowering)
