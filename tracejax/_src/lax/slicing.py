"""Slicing primitives: static slices and dynamic (traced-index) slices and updates.

slice, dynamic_slice and dynamic_update_slice, with the *_in_dim and
index_in_dim conveniences. Dynamic start indices are clamped by XLA so the
slice stays in bounds; the wrappers first turn negative indices into
indices from the end, as NumPy does. (gather and scatter live elsewhere.)
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import canonicalize_shape
from tracejax._src.core.trace import Tracer, concrete_or_error
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.lax import utils
from tracejax._src.lax.structural import (_check_shapelike, _int_tuple, _shape, _aval,
                                          broadcast_in_dim, full, pad, squeeze)
from tracejax._src.lax.utils import standard_primitive


# =============================================================================
# slice
# =============================================================================

def slice(operand, start_indices, limit_indices, strides=None):
  """Wraps XLA's Slice operator: `operand[start:limit:stride]` in every dimension."""
  start_indices = _int_tuple("slice", "start_indices", start_indices)
  limit_indices = _int_tuple("slice", "limit_indices", limit_indices)
  strides = None if strides is None else _int_tuple("slice", "strides", strides)
  return slice_p.bind(operand, start_indices=start_indices, limit_indices=limit_indices,
                      strides=strides)


def _slice_shape_rule(operand, *, start_indices, limit_indices, strides):
  _check_shapelike("slice", "start_indices", start_indices)
  _check_shapelike("slice", "limit_indices", limit_indices)
  if operand.ndim != len(start_indices):
    raise TypeError("slice start_indices must have length equal to the number of "
                    f"dimensions of the operand, got indices {start_indices} for operand "
                    f"shape {operand.shape}.")
  if len(start_indices) != len(limit_indices):
    raise TypeError("slice limit_indices must have the same length as start_indices, "
                    f"got start_indices {start_indices} and limit_indices "
                    f"{limit_indices}.")
  if not all(map(operator.ge, operand.shape, limit_indices)):
    raise TypeError("slice limit_indices must be less than or equal to operand shape, "
                    f"got limit_indices {limit_indices} for operand shape "
                    f"{operand.shape}.")
  if not all(map(operator.ge, limit_indices, start_indices)):
    raise TypeError("slice limit_indices must be greater than or equal to start_indices, "
                    f"got start_indices {start_indices} and limit_indices "
                    f"{limit_indices}.")
  if strides is None:
    return tuple(hi - lo for lo, hi in zip(start_indices, limit_indices))
  _check_shapelike("slice", "strides", strides, non_zero_shape=True)
  if len(strides) != operand.ndim:
    raise TypeError("slice strides must have length equal to the number of dimensions "
                    f"of the operand, got strides {strides} for operand shape "
                    f"{operand.shape}.")
  return tuple(0 if hi == lo else 1 + (hi - lo - 1) // s
               for lo, hi, s in zip(start_indices, limit_indices, strides))


def _slice_transpose_rule(ct, operand, *, start_indices, limit_indices, strides):
  # Pad the cotangent back to the operand's shape: zeros before, after, and
  # (for strides) between the sliced elements.
  shape = operand.aval.shape
  ct_shape = _shape(ct)
  if strides is None or all(s == 1 for s in strides):
    config = [(lo, d - hi, 0) for lo, hi, d in zip(start_indices, limit_indices, shape)]
  else:
    real_limits = [lo + (0 if n == 0 else 1 + (n - 1) * s)
                   for lo, n, s in zip(start_indices, ct_shape, strides)]
    config = [(lo, d - hi, s - 1)
              for lo, hi, d, s in zip(start_indices, real_limits, shape, strides)]
  out = pad(ct, np.zeros((), _aval(ct).dtype), config)
  assert _shape(out) == shape, (_shape(out), shape)
  return [out]


def _slice_batch_rule(args, dims, *, start_indices, limit_indices, strides):
  (x,), (d,) = args, dims
  start = list(start_indices)
  start.insert(d, 0)
  limit = list(limit_indices)
  limit.insert(d, _shape(x)[d])
  if strides is not None:
    strides = list(strides)
    strides.insert(d, 1)
  return slice(x, start, limit, strides), d


def _slice_lowering(ctx, x, *, start_indices, limit_indices, strides):
  strides = [1] * len(start_indices) if strides is None else list(strides)
  return [hlo.slice(x, list(start_indices), list(limit_indices), strides)]


slice_p = standard_primitive(_slice_shape_rule, utils.input_dtype, "slice")
ad.deflinear2(slice_p, _slice_transpose_rule)
batching.primitive_batchers[slice_p] = _slice_batch_rule
mlir.register_lowering(slice_p, _slice_lowering)


def _static_index(x, what):
  return concrete_or_error(operator.index, x, f"The {what} argument of a static slice.")


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """Convenience wrapper around slice applying to only one dimension.

  `None` and negative indices mean what they mean in Python slicing."""
  shape = _shape(operand)
  axis = operator.index(axis)
  axis = axis + len(shape) if axis < 0 else axis
  if not 0 <= axis < len(shape):
    raise ValueError(f"slice_in_dim axis {axis} is out of bounds for operand of shape {shape}")
  start_indices = [0] * len(shape)
  limit_indices = list(shape)
  strides = [1] * len(shape)
  n = shape[axis]
  start = 0 if start_index is None else _static_index(start_index, "start_index")
  limit = n if limit_index is None else _static_index(limit_index, "limit_index")
  if start < 0:
    start += n
  if limit < 0:
    limit += n
  start_indices[axis], limit_indices[axis] = start, limit
  strides[axis] = operator.index(stride)
  return slice(operand, start_indices, limit_indices, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  """Convenience wrapper around slice to perform int indexing."""
  index = _static_index(index, "index")
  shape = _shape(operand)
  axis = operator.index(axis)
  axis = axis + len(shape) if axis < 0 else axis
  if not 0 <= axis < len(shape):
    raise ValueError(f"index_in_dim axis {axis} is out of bounds for operand of shape {shape}")
  size = shape[axis]
  wrapped = index + size if index < 0 else index
  if not 0 <= wrapped < size:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
  result = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return result if keepdims else squeeze(result, (axis,))


# =============================================================================
# dynamic start indices
# =============================================================================

_py_int = (int, np.integer)


def _index_dtype(indices, shape):
  """One integer dtype for all start indices (the primitives insist on it): the
  indices' own dtype when they agree, else the default integer type (64-bit if
  an index is). Static indices and dimension sizes must fit in it."""
  dts = {np.dtype(_aval(i).dtype) for i in indices if not isinstance(i, _py_int)}
  for dt in dts:
    if not dtypes.is_integer(dt):
      raise TypeError("index arguments to dynamic_slice must be integers, got "
                      f"{', '.join(_aval(i).dtype.name for i in indices)}")
  wide = any(dt.itemsize == 8 for dt in dts)
  default = dtypes.canonicalize_dtype(np.int64 if wide else np.int32)
  if len(dts) != 1:
    return default
  dtype = dts.pop()
  info = dtypes.iinfo(dtype)
  statics = [int(i) for i in indices if isinstance(i, _py_int)] + list(shape)
  if all(info.min <= v <= info.max for v in statics):
    return dtype
  return default


def _dynamic_slice_indices(fun_name, operand, start_indices):
  """Start indices as scalars of one integer dtype, negative ones counted from the end."""
  if isinstance(start_indices, (np.ndarray, Tracer)) or hasattr(start_indices, "aval"):
    if np.ndim(start_indices) != 1:
      raise ValueError(f"{fun_name}: slice indices must be a 1D sequence, got shape "
                       f"{np.shape(start_indices)}")
    if isinstance(start_indices, np.ndarray):
      start_indices = list(start_indices)
    else:
      start_indices = [index_in_dim(start_indices, i, keepdims=False)
                       for i in range(np.shape(start_indices)[0])]
  start_indices = list(start_indices)
  shape = _shape(operand)
  if len(start_indices) != len(shape):
    raise ValueError(f"{fun_name}: length of slice indices must match number of operand "
                     f"dimensions ({len(start_indices)} vs {shape})")
  for i in start_indices:
    if np.ndim(i) != 0:
      raise TypeError(f"{fun_name} start_indices must be scalars, got an index of shape "
                      f"{np.shape(i)}")
  dtype = _index_dtype(start_indices, shape)
  out = []
  for i, d in zip(start_indices, shape):
    if isinstance(i, (bool, np.bool_)):
      raise TypeError(f"{fun_name} start_indices must be integers, got bool {i}")
    if isinstance(i, _py_int):
      # Static: wrap here, so no select is staged.
      out.append(np.array(i + d if i < 0 else i, dtype))
      continue
    if _aval(i).dtype != dtype:
      from tracejax._src.lax import elementwise
      i = elementwise.convert_element_type(i, dtype)
    if dtypes.is_unsigned(dtype):
      out.append(i)
      continue
    from tracejax._src.lax import elementwise
    out.append(elementwise.select(elementwise.lt(i, np.array(0, dtype)),
                                  elementwise.add(i, np.array(d, dtype)), i))
  return out


def _check_dynamic_indices(fun_name, operand, indices):
  if len(indices) != operand.ndim:
    raise TypeError(f"{fun_name} start_indices must have length equal to the number of "
                    f"dimensions of the operand, got {len(indices)} indices for operand "
                    f"shape {operand.shape}.")
  if any(i.ndim != 0 for i in indices):
    raise TypeError(f"{fun_name} start_indices must be scalars, got indices of shapes "
                    f"{[i.shape for i in indices]}.")
  if any(i.dtype != indices[0].dtype or not dtypes.is_integer(i.dtype) for i in indices):
    raise TypeError(f"index arguments to {fun_name} must be integers of the same type, "
                    f"got: {', '.join(i.dtype.name for i in indices)}")


# =============================================================================
# dynamic_slice
# =============================================================================

def dynamic_slice(operand, start_indices, slice_sizes):
  """Wraps XLA's DynamicSlice operator.

  `start_indices` may be traced scalars; XLA clamps them so that the slice of
  sizes `slice_sizes` lies inside the operand.
  """
  slice_sizes = canonicalize_shape(slice_sizes)
  start_indices = _dynamic_slice_indices("dynamic_slice", operand, start_indices)
  return dynamic_slice_p.bind(operand, *start_indices, slice_sizes=slice_sizes)


def _dynamic_slice_shape_rule(operand, *start_indices, slice_sizes):
  _check_shapelike("dynamic_slice", "slice_sizes", slice_sizes)
  _check_dynamic_indices("dynamic_slice", operand, start_indices)
  if len(slice_sizes) != operand.ndim:
    raise TypeError("dynamic_slice slice_sizes must have the same length as the operand's "
                    f"rank, got slice_sizes {slice_sizes} for operand shape "
                    f"{operand.shape}.")
  if not all(map(operator.ge, operand.shape, slice_sizes)):
    raise TypeError("dynamic_slice slice_sizes must be less than or equal to operand "
                    f"shape, got slice_sizes {slice_sizes} for operand shape "
                    f"{operand.shape}.")
  return tuple(slice_sizes)


def _dynamic_slice_dtype_rule(operand, *start_indices, slice_sizes):
  return operand.dtype


def _dynamic_slice_weak_type_rule(operand, *start_indices, slice_sizes):
  return operand.weak_type


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  operand, *indices = primals
  out = dynamic_slice_p.bind(operand, *indices, slice_sizes=slice_sizes)
  t = tangents[0]
  if type(t) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  return out, dynamic_slice_p.bind(t, *indices, slice_sizes=slice_sizes)


def _dynamic_slice_transpose_rule(ct, operand, *start_indices, slice_sizes):
  assert ad.is_undefined_primal(operand)
  assert not any(ad.is_undefined_primal(i) for i in start_indices)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval)] + [None] * len(start_indices)
  zeros = full(operand.aval.shape, 0, operand.aval.dtype)
  return ([dynamic_update_slice_p.bind(zeros, ct, *start_indices)]
          + [None] * len(start_indices))


def _clamped_starts(indices, operand_shape, sizes):
  """Start indices clamped as XLA does: into [0, operand_size - slice_size]."""
  from tracejax._src.lax import elementwise
  out = []
  for i, d, s in zip(indices, operand_shape, sizes):
    dt = _aval(i).dtype
    out.append(elementwise.max(np.array(0, dt),
                               elementwise.min(i, np.array(d - s, dt))))
  return out


def _dynamic_slice_batch_rule(args, dims, *, slice_sizes):
  operand, *indices = args
  operand_bdim, *index_bdims = dims
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  if all(d is None for d in index_bdims):
    # Only the operand is batched: one dynamic_slice over the whole batch.
    operand = utils.moveaxis(operand, operand_bdim, 0)
    zero = np.zeros((), _aval(indices[0]).dtype)
    out = dynamic_slice_p.bind(operand, zero, *indices,
                               slice_sizes=(size,) + tuple(slice_sizes))
    return out, 0
  # Batched indices: a dynamic slice is a gather of one window per index vector,
  # so the start indices become a (batch, rank) index array and the gather's
  # batching rule does the rest (one gather). CLIP clamps starts exactly as
  # dynamic_slice does, and keeps the gradient (a scatter-add) clamped alike.
  from tracejax._src.lax import gather as lax_gather
  from tracejax._src.lax.structural import concatenate
  rank = len(slice_sizes)
  # Each (rank-0 or batched 1-D) start index becomes a (batch, 1) column.
  cols = [broadcast_in_dim(i, (size, 1), () if d is None else (0,))
          for i, d in zip(indices, index_bdims)]
  index_array = concatenate(cols, 1) if len(cols) > 1 else cols[0]
  dnums = lax_gather.GatherDimensionNumbers(offset_dims=tuple(range(rank)),
                                            collapsed_slice_dims=(),
                                            start_index_map=tuple(range(rank)))
  return lax_gather._gather_batch_rule(
      [operand, index_array], [operand_bdim, 0], dimension_numbers=dnums,
      slice_sizes=tuple(slice_sizes), unique_indices=True, indices_are_sorted=True,
      mode=lax_gather.GatherScatterMode.CLIP, fill_value=None)


def _dynamic_slice_lowering(ctx, x, *start_indices, slice_sizes):
  return [hlo.dynamic_slice(x, list(start_indices), list(slice_sizes))]


dynamic_slice_p = standard_primitive(_dynamic_slice_shape_rule, _dynamic_slice_dtype_rule,
                                     "dynamic_slice",
                                     weak_type_rule=_dynamic_slice_weak_type_rule)
ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose_rule
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch_rule
mlir.register_lowering(dynamic_slice_p, _dynamic_slice_lowering)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
  """Convenience wrapper around dynamic_slice applying to one dimension."""
  shape = _shape(operand)
  axis = operator.index(axis)
  axis = axis + len(shape) if axis < 0 else axis
  if not 0 <= axis < len(shape):
    raise ValueError(f"dynamic_slice_in_dim axis {axis} is out of bounds for operand of "
                     f"shape {shape}")
  start_indices = [0] * len(shape)
  slice_sizes = list(shape)
  start_indices[axis] = start_index
  slice_sizes[axis] = operator.index(slice_size)
  return dynamic_slice(operand, start_indices, slice_sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
  """Convenience wrapper around dynamic_slice to perform int indexing."""
  result = dynamic_slice_in_dim(operand, index, 1, axis)
  if keepdims:
    return result
  return squeeze(result, (axis,))


# =============================================================================
# dynamic_update_slice
# =============================================================================

def dynamic_update_slice(operand, update, start_indices):
  """Wraps XLA's DynamicUpdateSlice operator: `operand` with `update` written at
  `start_indices` (clamped by XLA so the update fits)."""
  operand, update = utils.promote_python_scalars([operand, update])
  start_indices = _dynamic_slice_indices("dynamic_update_slice", operand, start_indices)
  return dynamic_update_slice_p.bind(operand, update, *start_indices)


def _dynamic_update_slice_shape_rule(operand, update, *start_indices):
  _check_dynamic_indices("dynamic_update_slice", operand, start_indices)
  if operand.ndim != update.ndim:
    raise TypeError("dynamic_update_slice update must have the same rank as operand, got "
                    f"update shape {update.shape} for operand shape {operand.shape}.")
  if not all(map(operator.ge, operand.shape, update.shape)):
    raise TypeError("dynamic_update_slice update shape must be smaller than operand "
                    f"shape, got update shape {update.shape} for operand shape "
                    f"{operand.shape}.")
  return operand.shape


def _dynamic_update_slice_dtype_rule(operand, update, *start_indices):
  if operand.dtype != update.dtype:
    raise TypeError("dynamic_update_slice update must have the same dtype as operand, "
                    f"got update dtype {update.dtype.name} for operand dtype "
                    f"{operand.dtype.name}.")
  return operand.dtype


def _dynamic_update_slice_weak_type_rule(operand, update, *start_indices):
  # JAX's standard rule: weak only when every input is (its indices are strong int32,
  # so in practice only a 0-d update of a 0-d weak operand stays weak).
  return all(a.weak_type for a in (operand, update, *start_indices))


def _dynamic_update_slice_jvp(primals, tangents, **params):
  operand, update, *indices = primals
  g_operand, g_update = tangents[:2]
  out = dynamic_update_slice_p.bind(operand, update, *indices)
  if type(g_operand) is ad.Zero and type(g_update) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  g_operand = ad.instantiate_zeros(g_operand)
  g_update = ad.instantiate_zeros(g_update)
  return out, dynamic_update_slice_p.bind(g_operand, g_update, *indices)


def _dynamic_update_slice_transpose_rule(ct, operand, update, *start_indices):
  assert all(not ad.is_undefined_primal(i) for i in start_indices)
  upd_aval = update.aval if ad.is_undefined_primal(update) else _aval(update)
  if type(ct) is ad.Zero:
    op_ct = ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None
    up_ct = ad.Zero(update.aval) if ad.is_undefined_primal(update) else None
  else:
    # The operand's cotangent is ct with the overwritten window zeroed; the
    # update's is that window of ct.
    op_ct = None
    if ad.is_undefined_primal(operand):
      zeros = full(upd_aval.shape, 0, _aval(ct).dtype)
      op_ct = dynamic_update_slice_p.bind(ct, zeros, *start_indices)
    up_ct = None
    if ad.is_undefined_primal(update):
      up_ct = dynamic_slice_p.bind(ct, *start_indices, slice_sizes=upd_aval.shape)
  return [op_ct, up_ct] + [None] * len(start_indices)


def _dynamic_update_slice_batch_rule(args, dims):
  operand, update, *indices = args
  operand_bdim, update_bdim, *index_bdims = dims
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  operand = utils.bdim_at_front(operand, operand_bdim, size)
  update = utils.bdim_at_front(update, update_bdim, size)
  if all(d is None for d in index_bdims):
    zero = np.zeros((), _aval(indices[0]).dtype)
    out = dynamic_update_slice_p.bind(operand, update, zero, *indices)
    return _operand_weak_type(out, operand), 0
  # Batched indices: build, per batch element, the mask of the written window
  # and the update placed at its (clamped) position, then select.
  from tracejax._src.lax import elementwise
  from tracejax._src.lax.structural import broadcasted_iota
  op_shape = _shape(operand)[1:]
  upd_shape = _shape(update)[1:]
  clamped = _clamped_starts(indices, op_shape, upd_shape)
  starts = [utils.bdim_at_front(i, d, size) for i, d in zip(clamped, index_bdims)]
  full_shape = (size,) + op_shape
  # placed[b, k...] = update[b, k - start[b]...] where in range: pad the update to
  # the operand's size, then move it into place with per-dimension masks.
  dt = _aval(starts[0]).dtype
  inside = None
  placed = update
  for dim, (st, n, u) in enumerate(zip(starts, op_shape, upd_shape)):
    ax = dim + 1
    shape = _shape(placed)
    # out[b, k] = sum_j placed[b, j] * (k == start[b] + j)
    exp_shape = shape[:ax] + (n,) + shape[ax:]
    pos = elementwise.add(broadcast_in_dim(st, (size, u), (0,)),
                          broadcasted_iota(dt, (size, u), 1))
    mask = elementwise.eq(broadcasted_iota(dt, (size, n, u), 1),
                          broadcast_in_dim(pos, (size, n, u), (0, 2)))
    xs = broadcast_in_dim(placed, exp_shape, tuple(i if i < ax else i + 1
                                                   for i in range(len(shape))))
    m = broadcast_in_dim(mask, exp_shape, (0, ax, ax + 1))
    zero = broadcast_in_dim(np.zeros((), _aval(placed).dtype), exp_shape, ())
    from tracejax._src.lax.reductions import reduce_or, reduce_sum
    red = reduce_or if _aval(placed).dtype == np.bool_ else reduce_sum
    placed = red(elementwise.select(m, xs, zero), (ax + 1,))
    # the window's extent along this dimension
    k = broadcasted_iota(dt, (size, n), 1)
    st_b = broadcast_in_dim(st, (size, n), (0,))
    in_dim = elementwise.bitwise_and(
        elementwise.ge(k, st_b), elementwise.lt(k, elementwise.add(st_b, np.array(u, dt))))
    in_dim = broadcast_in_dim(in_dim, full_shape, (0, ax))
    inside = in_dim if inside is None else elementwise.bitwise_and(inside, in_dim)
  return _operand_weak_type(elementwise.select(inside, placed, operand), operand), 0


def _operand_weak_type(out, operand):
  """`out` typed weak as `operand`: JAX batches dynamic_update_slice as a scatter,
  whose result takes the operand's weak type."""
  from tracejax._src.lax import elementwise
  aval = _aval(operand)
  if _aval(out).weak_type == aval.weak_type:
    return out
  return elementwise._convert_element_type(out, aval.dtype, weak_type=aval.weak_type)


def _dynamic_update_slice_lowering(ctx, x, update, *start_indices):
  return [hlo.dynamic_update_slice(x, update, list(start_indices))]


dynamic_update_slice_p = standard_primitive(
    _dynamic_update_slice_shape_rule, _dynamic_update_slice_dtype_rule,
    "dynamic_update_slice", weak_type_rule=_dynamic_update_slice_weak_type_rule)
ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose_rule
batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch_rule
mlir.register_lowering(dynamic_update_slice_p, _dynamic_update_slice_lowering)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
  """dynamic_update_slice along one dimension (the others start at 0)."""
  shape = _shape(operand)
  axis = operator.index(axis)
  axis = axis + len(shape) if axis < 0 else axis
  if not 0 <= axis < len(shape):
    raise ValueError(f"dynamic_update_slice_in_dim axis {axis} is out of bounds for "
                     f"operand of shape {shape}")
  start_indices = [0] * len(shape)
  start_indices[axis] = start_index
  return dynamic_update_slice(operand, update, start_indices)


def dynamic_update_index_in_dim(operand, update, index, axis):
  """Writes `update` (missing the dimension `axis`, or of size 1 there) at `index`."""
  shape = _shape(operand)
  axis = operator.index(axis)
  axis = axis + len(shape) if axis < 0 else axis
  if np.ndim(update) != len(shape):
    from tracejax._src.lax.structural import expand_dims
    update = expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis)
