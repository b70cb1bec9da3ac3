"""Set operations on arrays: `unique`.

The number of distinct values depends on the data, so `unique` needs a concrete
array, or a static `size=` under `jit` (as in JAX): the result then has exactly
`size` entries, truncated or padded with `fill_value` (by default the smallest
unique value).

It is one sort and a few prefix sums, all jittable: a stable sort of (values,
positions) groups equal values with their first occurrence first; a mark on
each group's first element numbers the groups (cumsum); a second stable sort
on "not first" moves the first elements, in order, to the front.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.jit import inline_jit
from tracejax._src.lax import sorting as lax_sort
from tracejax._src.lax import structural
from tracejax._src.numpy import indexing, reductions, shape_ops, ufuncs, util


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):
  """The sorted distinct values of `ar` (of its slices along `axis`), optionally with
  the first index, the inverse mapping and the count of each.

  Args:
    ar: array; flattened unless `axis` is given.
    return_index: also return the index of each value's first occurrence.
    return_inverse: also return, for each element (slice), the position of its
      value in the result (the input's shape for axis=None, as NumPy 2 does).
    return_counts: also return how often each value occurs.
    axis: find distinct slices along this axis instead of distinct elements.
    equal_nan: collapse all NaNs into one value (True) or keep each one.
    size: a static length for the results, required under `jit`; they are
      truncated, or padded with `fill_value` (values), the first index (index)
      and 0 (counts).
    fill_value: the padding value (default: the smallest unique value).
    sorted: accepted for NumPy compatibility; the result is always sorted.

  >>> unique(jnp.array([3, 1, 1, 5]))
  DeviceArray([1, 3, 5], dtype=int32)
  >>> unique(jnp.array([3, 1, 1, 5]), size=5, fill_value=0)
  DeviceArray([1, 3, 5, 0, 0], dtype=int32)
  """
  del sorted  # every result is sorted, which any value allows
  util.check_arraylike_or_list("unique", ar)
  ar = util.to_array(ar)
  if axis is not None:
    if util.ndim(ar) == 0:
      raise ValueError(f"unique: axis {axis} is out of bounds for a 0-d array")
    axis = util.canonicalize_axis(axis, util.ndim(ar))
  if size is not None:
    size = concrete_or_error(operator.index, size, "The size argument of jnp.unique must "
                             "be a static integer.")
    if size < 0:
      raise ValueError(f"unique: size must be non-negative, got {size}")
  else:
    concrete_or_error(
        None, ar, "The error arose for the first argument of jnp.unique(). To use "
        "jnp.unique() under jit or another transformation, pass a static `size=` "
        "(and optionally `fill_value=`): the number of unique values depends on the data.")
  if fill_value is not None:
    util.check_arraylike_or_list("unique", fill_value)
    fill_value = util.to_operand(fill_value)
  n = util.shape(ar)[axis] if axis is not None else int(np.prod(util.shape(ar),
                                                                  dtype=np.int64))
  out_size = n if size is None else size
  res = _unique(ar, fill_value, axis, bool(equal_nan), out_size)
  vals, index, inverse, counts, k = res
  if size is None:
    # Concrete input: cut the results to the number of unique values.
    k = int(k)
    vals = vals[:k] if axis is None else shape_ops._slice_axis(vals, axis, 0, k)
    index, counts = index[:k], counts[:k]
  out = (vals,)
  if return_index:
    out += (index,)
  if return_inverse:
    out += (inverse,)
  if return_counts:
    out += (counts,)
  return out[0] if len(out) == 1 else out


def _neq(x, y, equal_nan):
  """Elementwise "different" for adjacent sorted entries (NaNs alike if equal_nan)."""
  ne = ufuncs.not_equal(x, y)
  if equal_nan and dtypes.is_inexact(util.dtype_of(x)):
    ne = ufuncs.logical_and(ne, ufuncs.logical_not(
        ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y))))
  return ne


def _pad_or_cut(x, size, fill):
  """`x` (its first axis) cut or padded to `size` with the scalar or slice `fill`."""
  n = util.shape(x)[0]
  if size <= n:
    return x[:size]
  pad = util.broadcast_to(fill, (size - n,) + util.shape(x)[1:])
  return shape_ops.concatenate([x, util.convert(pad, util.dtype_of(x), False)], axis=0)


@inline_jit(static_argnames=("axis", "equal_nan", "size"))
def _unique(ar, fill_value, axis, equal_nan, size):
  idt = dtypes.default_int_dtype()
  if axis is None:
    rows = util.reshape(ar, (int(np.prod(util.shape(ar), dtype=np.int64)),))
  else:
    moved = shape_ops.moveaxis(ar, axis, 0)
    rest = util.shape(moved)[1:]
    rows = util.reshape(moved, (util.shape(moved)[0], int(np.prod(rest, dtype=np.int64))))
  n = util.shape(rows)[0]
  inv_shape = util.shape(ar) if axis is None else (n,)
  if n == 0:
    vshape = (size,) + (util.shape(rows)[1:])
    fill = 0 if fill_value is None else fill_value
    vals = structural.full(vshape, util.convert(fill, util.dtype_of(ar), False))
    empty_i = structural.full((size,), np.array(0, idt))
    return (_restore(vals, ar, axis), empty_i, structural.full(inv_shape, np.array(0, idt)),
            empty_i, np.array(0, idt))
  iota = structural.iota(idt, n)
  if axis is None:
    s, perm = lax_sort.sort((rows, iota), dimension=0, num_keys=1)
    diff = _neq(s[1:], s[:-1], equal_nan)
  else:
    m = util.shape(rows)[1]
    cols = [rows[:, j] for j in range(m)]
    out = lax_sort.sort((*cols, iota), dimension=0, num_keys=max(m, 1)) if m else (iota,)
    perm = out[-1]
    if m:
      # Adjacent rows differ where any column does.
      diffs = [_neq(c[1:], c[:-1], equal_nan) for c in out[:-1]]
      diff = reductions.any(shape_ops.stack(diffs, axis=1), axis=1)
    else:
      diff = structural.full((n - 1,), np.array(False))
  first = shape_ops.concatenate([structural.full((1,), np.array(True)), diff], axis=0)
  first_i = util.convert(first, idt, False)
  group = ufuncs.subtract(reductions.cumsum(first_i), np.array(1, idt))
  k = reductions.sum(first_i)
  # Positions (in sorted order) of the groups' first elements, moved to the front.
  _, firstpos = lax_sort.sort((ufuncs.logical_not(first), iota), dimension=0, num_keys=1)
  valid = ufuncs.less(iota, k)
  index = indexing.take(perm, firstpos, mode="clip")
  vals = indexing.take(rows, index, axis=0, mode="clip")
  # counts[g] = firstpos[g + 1] - firstpos[g], with n past the last group.
  fp = ufuncs.where(valid, firstpos, np.array(n, idt))
  nxt = shape_ops.concatenate([fp[1:], structural.full((1,), np.array(n, idt))], axis=0)
  counts = ufuncs.subtract(nxt, fp)
  _, inverse = lax_sort.sort((perm, group), dimension=0, num_keys=1)
  fill = vals[0] if fill_value is None else fill_value
  valid_v = util.reshape(valid, (n,) + (1,) * (util.ndim(vals) - 1))
  vals = ufuncs.where(valid_v, vals, util.convert(fill, util.dtype_of(vals), False))
  index = ufuncs.where(valid, index, index[0])
  vals = _pad_or_cut(vals, size, fill)
  index = _pad_or_cut(index, size, index[0])
  counts = _pad_or_cut(counts, size, np.array(0, idt))
  return (_restore(vals, ar, axis), index, util.reshape(inverse, inv_shape), counts, k)


def _restore(vals, ar, axis):
  """Unique rows back in `ar`'s layout (the unique axis where `axis` was)."""
  if axis is None:
    return vals
  moved_shape = (util.shape(vals)[0],) + tuple(
      d for i, d in enumerate(util.shape(ar)) if i != axis)
  return shape_ops.moveaxis(util.reshape(vals, moved_shape), 0, axis)
