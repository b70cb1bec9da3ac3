"""Set operations on arrays: `unique` (and the array API's `unique_*`), `isin`,
`in1d`, `union1d`, `intersect1d`, `setdiff1d`, `setxor1d`.

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
from typing import NamedTuple

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
  pad = util.convert(pad, util.dtype_of(x), util.is_weak(x) and util.is_weak(pad))
  return shape_ops.concatenate([x, pad], axis=0)


@inline_jit(static_argnames=("axis", "equal_nan", "size"))
def _unique(ar, fill_value, axis, equal_nan, size):
  idt = dtypes.default_int_dtype()
  if axis is None:
    rows = util.reshape(ar, (int(np.prod(util.shape(ar), dtype=np.int64)),))
  else:
    moved = shape_ops.moveaxis(ar, axis, 0)
    rest = util.shape(moved)[1:]
    rows = util.reshape(moved, (util.shape(moved)[0], int(np.prod(rest, dtype=np.int64))))
  if dtypes.issubdtype(util.dtype_of(rows), np.complexfloating):
    # As JAX: complex NaNs (NaN in either part) become nan+0j before sorting. The strong
    # constant makes the values strong, and their cotangent weak again (the transposed
    # conversion), for a weak input.
    nan = np.array(np.nan, util.dtype_of(rows))
    rows = ufuncs.where(ufuncs.isnan(rows), nan, rows)
  n = util.shape(rows)[0]
  inv_shape = util.shape(ar) if axis is None else (n,)
  if n == 0:
    vshape = (size,) + (util.shape(rows)[1:])
    fill = 0 if fill_value is None else fill_value
    # JAX fills with full_like of the (empty) values: their weak type, whatever the fill.
    vals = structural.full(vshape, util.convert(fill, util.dtype_of(ar), util.is_weak(ar)))
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
  # The default fill repeats the first value (JAX gathers it), keeping a weak type.
  fill = vals[0] if fill_value is None else util.convert(fill_value, util.dtype_of(vals))
  valid_v = util.reshape(valid, (n,) + (1,) * (util.ndim(vals) - 1))
  vals = ufuncs.where(valid_v, vals, fill)
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


# ---- the array API's unique_* (namedtuple results; NaNs are all distinct) ----

class UniqueAllResult(NamedTuple):
  """The result of `unique_all`."""
  values: object
  indices: object
  inverse_indices: object
  counts: object


class UniqueCountsResult(NamedTuple):
  """The result of `unique_counts`."""
  values: object
  counts: object


class UniqueInverseResult(NamedTuple):
  """The result of `unique_inverse`."""
  values: object
  inverse_indices: object


def unique_all(x, /, *, size=None, fill_value=None):
  """The distinct values of `x` with their first indices, the inverse mapping (in
  `x`'s shape) and their counts, as a namedtuple. NaNs count as distinct values.

  Args:
    x: array (flattened).
    size, fill_value: as in `unique`; `size` is required under `jit`.

  >>> unique_all(jnp.array([3, 1, 1])).counts
  DeviceArray([2, 1], dtype=int32)
  """
  vals, index, inverse, counts = unique(x, True, True, True, equal_nan=False, size=size,
                                        fill_value=fill_value)
  return UniqueAllResult(vals, index, inverse, counts)


def unique_counts(x, /, *, size=None, fill_value=None):
  """The distinct values of `x` and how often each occurs (a namedtuple).

  >>> unique_counts(jnp.array([3, 1, 1]))
  UniqueCountsResult(values=DeviceArray([1, 3], dtype=int32), counts=DeviceArray([2, 1], dtype=int32))
  """
  vals, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                        fill_value=fill_value)
  return UniqueCountsResult(vals, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
  """The distinct values of `x` and, in `x`'s shape, the position of each element's
  value among them (a namedtuple).

  >>> unique_inverse(jnp.array([3, 1, 1])).inverse_indices
  DeviceArray([1, 0, 0], dtype=int32)
  """
  vals, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                         fill_value=fill_value)
  return UniqueInverseResult(vals, inverse)


def unique_values(x, /, *, size=None, fill_value=None):
  """The sorted distinct values of `x` (NaNs distinct), as an array.

  >>> unique_values(jnp.array([3, 1, 1]))
  DeviceArray([1, 3], dtype=int32)
  """
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# ---- membership ----

def _flat(x):
  return util.reshape(x, (int(np.prod(util.shape(x), dtype=np.int64)),))


def _member(q, s, s_valid):
  """For each element of 1-D `q`: is it equal to a valid element of 1-D `s`, and the
  position in `s` of one such element (0 where none). One joint sort: set entries
  sort before equal queries, so a query is found when the last valid set entry at
  or before it holds its value. NaN is never found (NaN != NaN)."""
  n, m = util.shape(q)[0], util.shape(s)[0]
  idt = dtypes.default_int_dtype()
  if n == 0 or m == 0:
    return (structural.full((n,), np.array(False)), structural.full((n,), np.array(0, idt)))
  dt = dtypes.result_type(q, s)
  v = shape_ops.concatenate([util.convert(s, dt, False), util.convert(q, dt, False)], axis=0)
  # tag 0: a valid set entry; 1: a query; 2: a padded set entry (never matches).
  set_tag = ufuncs.where(s_valid, np.array(0, np.int32), np.array(2, np.int32))
  tag = shape_ops.concatenate([set_tag, structural.full((n,), np.array(1, np.int32))], axis=0)
  iota = structural.iota(idt, n + m)
  v_s, tag_s, perm = lax_sort.sort((v, tag, iota), dimension=0, num_keys=2)
  is_set = ufuncs.equal(tag_s, 0)
  last = reductions.cummax(ufuncs.where(is_set, iota, np.array(-1, idt)))
  cand = indexing.take(v_s, ufuncs.maximum(last, 0), mode="clip")
  found_s = ufuncs.logical_and(ufuncs.greater_equal(last, 0), ufuncs.equal(cand, v_s))
  set_pos_s = indexing.take(perm, ufuncs.maximum(last, 0), mode="clip")
  # Back to the original order: the queries are entries m.. of the joint array.
  _, found, set_pos = lax_sort.sort((perm, found_s, set_pos_s), dimension=0, num_keys=1)
  return found[m:], set_pos[m:]


def _isin_flat(e, t, method):
  n, m = util.shape(e)[0], util.shape(t)[0]
  if method == "compare_all" or (method == "auto" and n * m <= 4096):
    if n == 0 or m == 0:
      return structural.full((n,), np.array(False))
    return reductions.any(ufuncs.equal(e[:, None], t[None, :]), axis=1)
  return _member(e, t, structural.full((m,), np.array(True)))[0]


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each element of `element` occurs in `test_elements` (same shape as `element`).

  Args:
    element: array-like.
    test_elements: array-like (flattened).
    assume_unique: accepted for NumPy compatibility (the result does not depend on it).
    invert: return "does not occur" instead.
    method: 'compare_all' (all pairs: small inputs), 'sort' or 'binary_search'
      (one joint sort: large inputs), or 'auto'.

  >>> isin(jnp.array([1, 2, 3]), jnp.array([2, 5]))
  DeviceArray([False,  True, False], dtype=bool)
  """
  del assume_unique
  util.check_arraylike("isin", element, test_elements)
  if method not in ("auto", "compare_all", "sort", "binary_search"):
    raise ValueError(f"isin: method must be one of 'auto', 'compare_all', 'sort', "
                     f"'binary_search'; got {method!r}")
  element, test_elements = util.to_array(element), util.to_array(test_elements)
  out = util.reshape(_isin_flat(_flat(element), _flat(test_elements), method),
                     util.shape(element))
  return ufuncs.logical_not(out) if invert else out


def in1d(ar1, ar2, assume_unique=False, invert=False, *, method="auto"):
  """`isin` of the flattened `ar1` (NumPy's older name; a 1-D result).

  >>> in1d(jnp.array([[1, 2], [3, 4]]), jnp.array([4]))
  DeviceArray([False, False, False,  True], dtype=bool)
  """
  util.check_arraylike("in1d", ar1, ar2)
  return isin(_flat(util.to_array(ar1)), ar2, assume_unique, invert, method=method)


# ---- set operations on 1-D arrays ----
# Each works on padded sorted uniques (`_unique` with size = the input length, its
# count `k` marking the valid prefix) and moves the selected entries to the front
# with a stable sort on "not selected", so everything traces with a static `size`.

def _static_size_or_concrete(size, fun_name, *args):
  if size is not None:
    size = concrete_or_error(operator.index, size,
                             f"The size argument of jnp.{fun_name} must be a static integer.")
    if size < 0:
      raise ValueError(f"{fun_name}: size must be non-negative, got {size}")
    return size
  for a in args:
    concrete_or_error(
        None, a, f"The error arose in jnp.{fun_name}(): its result's size depends on "
        "the values. To use it under jit or another transformation, pass a static "
        "`size=` (and optionally `fill_value=`).")
  return None


def _sorted_unique(a, assume_unique):
  """(values sorted, first indices, valid mask) of the flattened 1-D `a`."""
  n = util.shape(a)[0]
  idt = dtypes.default_int_dtype()
  if n == 0:
    return a, structural.full((0,), np.array(0, idt)), structural.full((0,), np.array(True))
  if assume_unique:
    vals, idx = lax_sort.sort((a, structural.iota(idt, n)), dimension=0, num_keys=1)
    return vals, idx, structural.full((n,), np.array(True))
  vals, idx, _, _, k = _unique(a, None, None, True, n)
  return vals, idx, ufuncs.less(structural.iota(idt, n), k)


def _compact(mask, arrays, size, fills):
  """The entries of 1-D `arrays` where `mask` holds, moved (in order) to the front;
  the rest replaced by `fills` (None: the first selected entry); cut or padded to
  `size` (None: the concrete count). Returns the arrays and the count."""
  n = util.shape(mask)[0]
  idt = dtypes.default_int_dtype()
  count = reductions.sum(util.convert(mask, idt, False))
  if size is None:
    size = int(count)
  outs = []
  if n:
    iota = structural.iota(idt, n)
    _, order = lax_sort.sort((ufuncs.logical_not(mask), iota), dimension=0, num_keys=1)
    valid = ufuncs.less(iota, count)
  for a, fill in zip(arrays, fills):
    if n == 0:
      f = 0 if fill is None else fill
      outs.append(structural.full((size,), util.convert(f, util.dtype_of(a), False)))
      continue
    moved = indexing.take(a, order, mode="clip")
    if fill is None:  # the first selected entry, or 0 when nothing is selected
      f = ufuncs.where(ufuncs.greater(count, 0), moved[0],
                       util.convert(0, util.dtype_of(a), False))
    else:
      f = util.convert(fill, util.dtype_of(a), False)
    moved = ufuncs.where(valid, moved, f)
    outs.append(_pad_or_cut(moved, size, f))
  return outs


def _fill_arg(fill_value, fun_name):
  if fill_value is None:
    return None
  util.check_arraylike(fun_name, fill_value)
  return util.to_operand(fill_value)


def _set_inputs(fun_name, ar1, ar2):
  util.check_arraylike(fun_name, ar1, ar2)
  a1, a2 = util.to_array(ar1), util.to_array(ar2)
  dt = dtypes.result_type(a1, a2)
  return _flat(util.convert(a1, dt, False)), _flat(util.convert(a2, dt, False))


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted distinct values that occur in either array (both flattened).

  Args:
    ar1, ar2: arrays.
    size: static length of the result (required under jit); padded with
      `fill_value` (default: the smallest value) or cut.

  >>> union1d(jnp.array([3, 1]), jnp.array([2, 3]))
  DeviceArray([1, 2, 3], dtype=int32)
  """
  a1, a2 = _set_inputs("union1d", ar1, ar2)
  size = _static_size_or_concrete(size, "union1d", a1, a2)
  return unique(shape_ops.concatenate([a1, a2], axis=0), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The distinct values of `ar1` that are not in `ar2`, sorted (with
  `assume_unique`: the elements of `ar1` not in `ar2`, in `ar1`'s order).

  Args:
    ar1, ar2: arrays (flattened).
    assume_unique: `ar1` has no repeated values (skips the unique step).
    size: static length of the result (required under jit); padded with
      `fill_value` (default 0) or cut.

  >>> setdiff1d(jnp.array([3, 1, 2, 1]), jnp.array([2]))
  DeviceArray([1, 3], dtype=int32)
  """
  a1, a2 = _set_inputs("setdiff1d", ar1, ar2)
  size = _static_size_or_concrete(size, "setdiff1d", a1, a2)
  fill = _fill_arg(fill_value, "setdiff1d")
  fill = 0 if fill is None else fill
  n1 = util.shape(a1)[0]
  if assume_unique:
    vals, valid = a1, structural.full((n1,), np.array(True))
  else:
    vals, _, valid = _sorted_unique(a1, False)
  keep = ufuncs.logical_and(valid, ufuncs.logical_not(_isin_flat(vals, a2, "auto")))
  return _compact(keep, [vals], size, [fill])[0]


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted values that occur in exactly one of the arrays (both flattened).

  Args:
    ar1, ar2: arrays.
    assume_unique: each input has no repeated values.
    size: static length of the result (required under jit); padded with
      `fill_value` (default: the smallest value of the result) or cut.

  >>> setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 4]))
  DeviceArray([1, 3, 4], dtype=int32)
  """
  a1, a2 = _set_inputs("setxor1d", ar1, ar2)
  size = _static_size_or_concrete(size, "setxor1d", a1, a2)
  fill = _fill_arg(fill_value, "setxor1d")
  u1, _, v1 = _sorted_unique(a1, assume_unique)
  u2, _, v2 = _sorted_unique(a2, assume_unique)
  only1 = ufuncs.logical_and(v1, ufuncs.logical_not(_member(u1, u2, v2)[0]))
  only2 = ufuncs.logical_and(v2, ufuncs.logical_not(_member(u2, u1, v1)[0]))
  vals = shape_ops.concatenate([u1, u2], axis=0)
  keep = shape_ops.concatenate([only1, only2], axis=0)
  if util.shape(vals)[0] == 0:
    return _compact(keep, [vals], size, [fill])[0]
  # Selected values first, in sorted order.
  _, vals_s, keep_s = lax_sort.sort((ufuncs.logical_not(keep), vals, keep), dimension=0,
                                    num_keys=2)
  return _compact(keep_s, [vals_s], size, [fill])[0]


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted distinct values that occur in both arrays (both flattened).

  Args:
    ar1, ar2: arrays.
    assume_unique: each input has no repeated values.
    return_indices: also return, for each value, the index of its first
      occurrence in the flattened `ar1` and `ar2` (padded with their lengths).
    size: static length of the result (required under jit); padded with
      `fill_value` (default: the smallest value of the result) or cut.

  >>> intersect1d(jnp.array([3, 1, 2, 1]), jnp.array([2, 3, 7]))
  DeviceArray([2, 3], dtype=int32)
  """
  a1, a2 = _set_inputs("intersect1d", ar1, ar2)
  size = _static_size_or_concrete(size, "intersect1d", a1, a2)
  fill = _fill_arg(fill_value, "intersect1d")
  n1, n2 = util.shape(a1)[0], util.shape(a2)[0]
  idt = dtypes.default_int_dtype()
  u1, i1, v1 = _sorted_unique(a1, assume_unique)
  u2, i2, v2 = _sorted_unique(a2, assume_unique)
  found, pos2 = _member(u1, u2, v2)
  keep = ufuncs.logical_and(v1, found)
  ind2 = indexing.take(i2, pos2, mode="clip") if n2 else pos2
  vals, ind1, ind2 = _compact(keep, [u1, i1, util.convert(ind2, idt, False)], size,
                              [fill, np.array(n1, idt), np.array(n2, idt)])
  if return_indices:
    return vals, ind1, ind2
  return vals
