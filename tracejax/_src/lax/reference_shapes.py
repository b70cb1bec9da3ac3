"""NumPy references for the structural, slicing, reduction and dot primitives.

Test oracles only (the lowering rules are the implementation). Each function
takes NumPy arrays and the primitive's params, with the lax wrapper's
signature, and returns what the primitive must return (dtype included).
"""
import builtins

import numpy as np

_pyslice = builtins.slice  # `slice` below is the lax reference

__all__ = []  # test oracles, not API: `tracejax.lax` must not re-export them


# ---- structural ----

def broadcast_in_dim(operand, shape, broadcast_dimensions):
  operand = np.asarray(operand)
  in_reshape = np.ones(len(shape), dtype=np.int64)
  for i, d in enumerate(broadcast_dimensions):
    in_reshape[d] = operand.shape[i]
  return np.broadcast_to(np.reshape(operand, in_reshape), shape).copy()


def broadcast(operand, sizes):
  operand = np.asarray(operand)
  return np.broadcast_to(operand, tuple(sizes) + operand.shape).copy()


def reshape(operand, new_sizes, dimensions=None):
  operand = np.asarray(operand)
  if dimensions is not None:
    operand = np.transpose(operand, dimensions)
  return np.reshape(operand, new_sizes)


def transpose(operand, permutation):
  return np.transpose(np.asarray(operand), permutation)


def squeeze(array, dimensions):
  return np.squeeze(np.asarray(array), tuple(dimensions))


def expand_dims(array, dimensions):
  return np.expand_dims(np.asarray(array), tuple(dimensions))


def rev(operand, dimensions):
  operand = np.asarray(operand)
  idx = tuple(_pyslice(None, None, -1) if d in dimensions else _pyslice(None)
              for d in range(operand.ndim))
  return operand[idx]


def concatenate(operands, dimension):
  return np.concatenate(operands, axis=dimension)


def pad(operand, padding_value, padding_config):
  """Edge padding (possibly negative) and interior padding, as XLA's Pad."""
  operand = np.asarray(operand)
  padding_value = np.asarray(padding_value, operand.dtype)
  # Interior padding first, then nonnegative edge padding, then cropping.
  shape = tuple(0 if d == 0 else d + (d - 1) * it
                for d, (_, _, it) in zip(operand.shape, padding_config))
  dilated = np.full(shape, padding_value, operand.dtype)
  idx = tuple(_pyslice(None, None, it + 1) for _, _, it in padding_config)
  dilated[idx] = operand
  pads = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
  out = np.pad(dilated, pads, mode="constant", constant_values=padding_value) \
      if dilated.ndim else dilated
  crop = tuple(_pyslice(-min(lo, 0), out.shape[i] + min(hi, 0))
               for i, (lo, hi, _) in enumerate(padding_config))
  return out[crop]


def iota(dtype, size):
  return np.arange(size, dtype=dtype)


def broadcasted_iota(dtype, shape, dimension):
  idx = np.arange(shape[dimension], dtype=dtype)
  return broadcast_in_dim(idx, shape, (dimension,))


def full(shape, fill_value, dtype=None):
  return np.full(shape, fill_value, dtype)


def collapse(operand, start_dimension, stop_dimension=None):
  operand = np.asarray(operand)
  stop = operand.ndim if stop_dimension is None else stop_dimension
  shape = operand.shape
  size = int(np.prod(shape[start_dimension:stop], dtype=np.int64))
  return operand.reshape(shape[:start_dimension] + (size,) + shape[stop:])


# ---- slicing ----

def slice(operand, start_indices, limit_indices, strides=None):
  strides = strides or [1] * len(start_indices)
  idx = tuple(_pyslice(lo, hi, s) for lo, hi, s in zip(start_indices, limit_indices, strides))
  return np.asarray(operand)[idx]


def _clamp_starts(operand_shape, start_indices, sizes):
  return [int(np.clip(int(i) + (d if int(i) < 0 else 0), 0, d - s))
          for i, d, s in zip(start_indices, operand_shape, sizes)]


def dynamic_slice(operand, start_indices, slice_sizes):
  """Negative indices count from the end (the wrapper's rule); then XLA's clamp."""
  operand = np.asarray(operand)
  starts = _clamp_starts(operand.shape, start_indices, slice_sizes)
  idx = tuple(_pyslice(st, st + s) for st, s in zip(starts, slice_sizes))
  return operand[idx]


def dynamic_update_slice(operand, update, start_indices):
  operand = np.array(operand, copy=True)
  update = np.asarray(update)
  starts = _clamp_starts(operand.shape, start_indices, update.shape)
  idx = tuple(_pyslice(st, st + s) for st, s in zip(starts, update.shape))
  operand[idx] = update
  return operand


# ---- reductions ----

def _axes(axes):
  return tuple(axes)


def _acc_dtype(dtype):
  # Half-precision sums are checked against a float32 accumulation (what XLA does).
  return np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 or \
      dtype.name == "bfloat16" else dtype


def reduce_sum(operand, axes):
  operand = np.asarray(operand)
  acc = _acc_dtype(operand.dtype)
  return np.sum(operand.astype(acc), axis=_axes(axes), dtype=acc).astype(operand.dtype)


def reduce_prod(operand, axes):
  operand = np.asarray(operand)
  acc = _acc_dtype(operand.dtype)
  return np.prod(operand.astype(acc), axis=_axes(axes), dtype=acc).astype(operand.dtype)


def reduce_max(operand, axes):
  operand = np.asarray(operand)
  if operand.size == 0:
    from tracejax._src.lax.reductions import _get_max_identity
    shape = tuple(d for i, d in enumerate(operand.shape) if i not in axes)
    return np.full(shape, _get_max_identity(operand.dtype), operand.dtype)
  return np.max(operand, axis=_axes(axes))


def reduce_min(operand, axes):
  operand = np.asarray(operand)
  if operand.size == 0:
    from tracejax._src.lax.reductions import _get_min_identity
    shape = tuple(d for i, d in enumerate(operand.shape) if i not in axes)
    return np.full(shape, _get_min_identity(operand.dtype), operand.dtype)
  return np.min(operand, axis=_axes(axes))


def reduce_and(operand, axes):
  operand = np.asarray(operand)
  if operand.dtype == np.bool_:
    return np.all(operand, axis=_axes(axes))
  return np.bitwise_and.reduce(operand, axis=_axes(axes))


def reduce_or(operand, axes):
  operand = np.asarray(operand)
  if operand.dtype == np.bool_:
    return np.any(operand, axis=_axes(axes))
  return np.bitwise_or.reduce(operand, axis=_axes(axes))


def reduce_xor(operand, axes):
  operand = np.asarray(operand)
  if operand.dtype == np.bool_:
    return np.logical_xor.reduce(operand, axis=_axes(axes))
  return np.bitwise_xor.reduce(operand, axis=_axes(axes))


def argmax(operand, axis, index_dtype):
  """First index of the maximum; NaN counts as the maximum (first NaN wins)."""
  return np.argmax(np.asarray(operand), axis=axis).astype(index_dtype)


def argmin(operand, axis, index_dtype):
  return np.argmin(np.asarray(operand), axis=axis).astype(index_dtype)


# ---- dot ----

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
  lhs, rhs = np.asarray(lhs), np.asarray(rhs)
  (lc, rc), (lb, rb) = dimension_numbers
  out_dtype = np.dtype(preferred_element_type or lhs.dtype)
  compute = out_dtype
  if lhs.dtype == np.bool_:
    compute = np.dtype(np.int64)
  elif np.issubdtype(out_dtype, np.floating) and out_dtype.itemsize < 4 or \
      out_dtype.name == "bfloat16":
    compute = np.dtype(np.float32)
  l_free = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
  r_free = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
  # einsum over letters: batch, lhs free, rhs free, contracting
  letters = iter("abcdefghijklmnopqrstuvwxyz")
  lsub, rsub = [None] * lhs.ndim, [None] * rhs.ndim
  out = []
  for i, j in zip(lb, rb):
    c = next(letters)
    lsub[i] = rsub[j] = c
    out.append(c)
  for i, j in zip(lc, rc):
    c = next(letters)
    lsub[i] = rsub[j] = c
  for i in l_free:
    lsub[i] = next(letters)
    out.append(lsub[i])
  for j in r_free:
    rsub[j] = next(letters)
    out.append(rsub[j])
  spec = f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}"
  res = np.einsum(spec, lhs.astype(compute), rhs.astype(compute))
  if out_dtype == np.bool_:
    return res != 0
  return res.astype(out_dtype)


def dot(lhs, rhs, precision=None, preferred_element_type=None):
  lhs = np.asarray(lhs)
  return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())),
                     preferred_element_type=preferred_element_type)


def batch_matmul(lhs, rhs, precision=None):
  lhs = np.asarray(lhs)
  batch = tuple(range(lhs.ndim - 2))
  return dot_general(lhs, rhs, (((lhs.ndim - 1,), (lhs.ndim - 2,)), (batch, batch)))
