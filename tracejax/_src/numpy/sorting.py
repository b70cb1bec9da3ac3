"""Sorting and searching in sorted arrays: sort, argsort, lexsort, partition, searchsorted.

Everything is built on the variadic `lax.sort` primitive (`_src/lax/sorting.py`),
whose order is NumPy's: NaNs last, -0.0 == 0.0, complex numbers by (real, imag).
Sorts are stable unless asked otherwise, so `argsort` of equal keys keeps their
input order (NumPy's `kind='stable'`; JAX sorts stably by default).

`partition`/`argpartition` follow JAX: the first `kth + 1` entries along the
axis are the smallest ones in ascending order, the rest the largest ones in
descending order (`partition`) or in increasing index order (`argpartition`),
computed with two `top_k`s rather than a full sort.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.jit import inline_jit
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import sorting as lax_sort
from tracejax._src.lax import structural
from tracejax._src.numpy import indexing, reductions, shape_ops, ufuncs, util

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _check_sort_args(fun_name, kind, order):
  if order is not None:
    raise TypeError(f"'order' argument to {fun_name} is not supported.")
  if kind not in _KINDS:
    raise ValueError(f"{fun_name}: kind must be one of {_KINDS[1:]} (or None), got {kind!r}")


def _flat_or_axis(a, axis, fun_name):
  """(`a`, axis): `a` flattened and axis 0 for axis=None, else a canonical axis."""
  util.check_arraylike_or_list(fun_name, a)
  a = util.to_array(a)
  if axis is None:
    return util.reshape(a, (int(np.prod(util.shape(a), dtype=np.int64)),)), 0
  if util.ndim(a) == 0:
    raise ValueError(f"{fun_name}: axis {axis} is out of bounds for a 0-d array; "
                     "use axis=None for scalars.")
  return a, util.canonicalize_axis(axis, util.ndim(a))


# ---- sort / argsort ----

def sort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False):
  """A sorted copy of `a` along `axis` (the flattened array for axis=None).

  Args:
    a: array to sort.
    axis: the axis to sort along (default last); None sorts the flattened array.
    kind: accepted for NumPy compatibility ('quicksort', 'mergesort', 'heapsort',
      'stable'; positional as in the 2020 API); the sort is always XLA's, stable
      when `stable` is True.
    order: not supported (structured dtypes do not exist here); must be None.
    stable: keep equal elements in their input order.
    descending: sort in decreasing order (NaNs then come first).

  NaNs sort after +inf, as in NumPy.

  >>> sort(jnp.array([3., nan, 1.]))
  DeviceArray([ 1.,  3., nan], dtype=float32)
  """
  _check_sort_args("sort", kind, order)
  util.check_arraylike_or_list("sort", a)
  return _sort(util.to_array(a), axis, bool(stable), bool(descending))


@inline_jit(static_argnames=("axis", "stable", "descending"))
def _sort(a, axis, stable, descending):
  a, axis = _flat_or_axis(a, axis, "sort")
  # Even a length-0/1 axis is sorted (as JAX does): under AD the sort's transpose
  # then gives the strongly typed cotangent that JAX's gives.
  out = lax_sort.sort(a, dimension=axis, is_stable=stable)
  return structural.rev(out, (axis,)) if descending else out


def argsort(a, axis=-1, kind=None, order=None, *, stable=True, descending=False, dtype=None):
  """The indices that sort `a` along `axis` (of the flattened array for axis=None).

  Args:
    a: array to sort.
    axis: the axis (default last); None works on the flattened array.
    kind, order: as in `sort`.
    stable: equal elements keep their input order (lower index first).
    descending: indices of a decreasing sort; equal elements still keep their
      input order, as in JAX.
    dtype: the integer dtype of the result (default: the default int type).

  >>> argsort(jnp.array([3, 1, 2]))
  DeviceArray([1, 2, 0], dtype=int32)
  """
  _check_sort_args("argsort", kind, order)
  dt = util.check_dtype(dtype, "argsort") if dtype is not None else \
      dtypes.default_int_dtype()
  if not dtypes.is_integer(dt):
    raise TypeError(f"argsort: dtype must be an integer type, got {dt}")
  util.check_arraylike_or_list("argsort", a)
  return _argsort(util.to_array(a), axis, bool(stable), bool(descending), dt)


@inline_jit(static_argnames=("axis", "stable", "descending", "dt"))
def _argsort(a, axis, stable, descending, dt):
  a, axis = _flat_or_axis(a, axis, "argsort")
  shape = util.shape(a)
  iota = structural.broadcasted_iota(dt, shape, axis)
  if not descending:
    return lax_sort.sort((a, iota), dimension=axis, is_stable=stable)[1]
  # A descending sort that keeps ties in input order: sort the reversed array
  # ascending (ties then come in reverse input order) and reverse the result.
  n = shape[axis]
  rev_idx = lax_ew.sub(np.asarray(n - 1, dt), iota)
  _, idx = lax_sort.sort((structural.rev(a, (axis,)), rev_idx), dimension=axis,
                         is_stable=stable)
  return structural.rev(idx, (axis,))


def msort(a):
  """`a` sorted along its first axis (NumPy's removed `msort`; the 2020 jax.numpy had it).

  >>> msort(jnp.array([[3, 1], [1, 2]]))
  DeviceArray([[1, 1],
               [3, 2]], dtype=int32)
  """
  return sort(a, axis=0)


def sort_complex(a):
  """`a` sorted along its last axis by (real, imag), as a complex array.

  >>> sort_complex(jnp.array([3, 1, 2]))
  DeviceArray([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
  """
  util.check_arraylike_or_list("sort_complex", a)
  a = util.to_array(a)
  out = sort(a, axis=-1) if util.ndim(a) else a
  return util.convert(out, dtypes.to_complex_dtype(util.dtype_of(a)), False)


def lexsort(keys, axis=-1):
  """Indices that sort by several keys: the LAST key is the primary one (NumPy's order).

  Args:
    keys: a sequence of arrays of one shape, or a 2-D-or-more array whose first
      axis enumerates the keys.
    axis: the axis to sort along (default last).

  >>> lexsort((jnp.array([1, 2, 1]), jnp.array([0, 0, 0])))   # ties on the last key
  DeviceArray([0, 2, 1], dtype=int32)
  """
  if util.is_array(keys) or isinstance(keys, np.ndarray):
    if util.ndim(keys) == 0:
      raise TypeError("lexsort: keys must be a sequence of arrays, got a scalar")
    keys = [keys[i] for i in range(util.shape(keys)[0])]
  keys = tuple(keys)
  if not keys:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  util.check_arraylike_or_list("lexsort", *keys)
  keys = tuple(util.to_array(k) for k in keys)
  shape = util.shape(keys[0])
  if any(util.shape(k) != shape for k in keys):
    raise ValueError(f"lexsort: all keys need to be the same shape, got "
                     f"{[util.shape(k) for k in keys]}")
  if not shape:
    raise ValueError("lexsort: keys must have at least one dimension")
  return _lexsort(keys, util.canonicalize_axis(axis, len(shape)))


@inline_jit(static_argnames=("axis",))
def _lexsort(keys, axis):
  shape = util.shape(keys[0])
  iota = structural.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
  return lax_sort.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys))[-1]


# ---- partition ----

def _order_reversing(a):
  """A strictly order-reversing map of `a` (so top_k of it finds the smallest entries).

  Integers use bitwise not (~x = -x - 1), which never overflows, unlike negation;
  for bools it is logical not.
  """
  dt = util.dtype_of(a)
  if dt == np.bool_ or dtypes.is_integer(dt):
    return lax_ew.not_(a)
  return lax_ew.neg(a)


def _partition_args(fun_name, a, kth, axis):
  util.check_arraylike_or_list(fun_name, a)
  a = util.to_array(a)
  if util.ndim(a) == 0:
    raise TypeError(f"{fun_name} requires an array with at least one dimension")
  if dtypes.is_complex(util.dtype_of(a)):
    raise TypeError(f"{fun_name} does not support complex inputs")
  axis = util.canonicalize_axis(axis, util.ndim(a))
  n = util.shape(a)[axis]
  kth = concrete_or_error(operator.index, kth, f"The kth argument of jnp.{fun_name}; it "
                          "must be a static integer.")
  if not -n <= kth < n:
    raise ValueError(f"{fun_name}: kth={kth} is out of bounds for an axis of size {n}")
  return a, kth % n, axis


def partition(a, kth, axis=-1):
  """`a` partially sorted along `axis` around its `kth` smallest element.

  Entry `kth` is where a full sort would put it; the `kth + 1` smallest entries
  come first, ascending, and the others after, descending (JAX's layout; NumPy
  leaves both parts in an unspecified order). `kth` must be a static int.

  >>> partition(jnp.array([5, 3, 8, 1, 9, 2, 7]), 3)
  DeviceArray([1, 2, 3, 5, 9, 8, 7], dtype=int32)
  """
  a, kth, axis = _partition_args("partition", a, kth, axis)
  return _partition(a, kth, axis)


@inline_jit(static_argnames=("kth", "axis"))
def _partition(a, kth, axis):
  a = shape_ops.swapaxes(a, axis, -1)
  n = util.shape(a)[-1]
  bottom = _order_reversing(lax_sort.top_k(_order_reversing(a), kth + 1)[0])
  top = lax_sort.top_k(a, n - kth - 1)[0]
  out = structural.concatenate([bottom, top], util.ndim(a) - 1)
  return shape_ops.swapaxes(out, -1, axis)


def argpartition(a, kth, axis=-1):
  """Indices that partition `a` along `axis` around its `kth` smallest element.

  The first `kth + 1` indices point at the smallest entries in ascending order
  of value; the remaining indices follow in increasing order (JAX's layout).

  >>> argpartition(jnp.array([5, 3, 8, 1, 9, 2, 7]), 3)
  DeviceArray([3, 5, 1, 0, 2, 4, 6], dtype=int32)
  """
  a, kth, axis = _partition_args("argpartition", a, kth, axis)
  return _argpartition(a, kth, axis)


@inline_jit(static_argnames=("kth", "axis"))
def _argpartition(a, kth, axis):
  a = shape_ops.swapaxes(a, axis, -1)
  shape = util.shape(a)
  n = shape[-1]
  bottom = lax_sort.top_k(_order_reversing(a), kth + 1)[1]
  # The other indices, in increasing order: mark the bottom ones (a scatter of
  # zeros into ones) and let top_k pick the ones, lowest index first.
  idx = tuple(structural.broadcasted_iota(np.int32, util.shape(bottom), d)
              for d in range(len(shape) - 1)) + (bottom,)
  marks = indexing.IndexUpdateHelper(structural.full(shape, np.array(1, np.int32)))[idx].set(
      np.array(0, np.int32))
  top = lax_sort.top_k(marks, n - kth - 1)[1]
  out = structural.concatenate([bottom, top], len(shape) - 1)
  out = util.convert(out, dtypes.default_int_dtype(), False)
  return shape_ops.swapaxes(out, -1, axis)


# ---- searchsorted ----

def _sort_lt(x, y):
  """`x < y` in the sort order: NaNs above everything, complex lexicographic."""
  dt = util.dtype_of(x)
  if dtypes.is_complex(dt):
    xr, xi, yr, yi = lax_ew.real(x), lax_ew.imag(x), lax_ew.real(y), lax_ew.imag(y)
    return ufuncs.logical_or(_sort_lt(xr, yr),
                             ufuncs.logical_and(_sort_eq(xr, yr), _sort_lt(xi, yi)))
  if dtypes.is_floating(dt):
    return ufuncs.logical_or(ufuncs.less(x, y),
                             ufuncs.logical_and(ufuncs.isnan(y), ufuncs.logical_not(
                                 ufuncs.isnan(x))))
  if dt == np.bool_:
    return ufuncs.logical_and(ufuncs.logical_not(x), y)
  return ufuncs.less(x, y)


def _sort_eq(x, y):
  """`x == y` in the sort order (all NaNs equal)."""
  if dtypes.is_floating(util.dtype_of(x)):
    return ufuncs.logical_or(ufuncs.equal(x, y),
                             ufuncs.logical_and(ufuncs.isnan(x), ufuncs.isnan(y)))
  return ufuncs.equal(x, y)


def _sort_le(x, y):
  return ufuncs.logical_not(_sort_lt(y, x))


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Where to insert `v` into the sorted 1-D `a` to keep it sorted.

  Args:
    a: 1-D array, sorted ascending (NaNs last), unless `sorter` sorts it.
    v: the values to place (any shape; the result has its shape).
    side: 'left' gives the first suitable index, 'right' the last.
    sorter: optional indices that sort `a` (e.g. from argsort).
    method: how to compute it, as in JAX: 'scan' (binary search in a loop),
      'scan_unrolled' (the same, unrolled), 'sort' (one sort of a and v
      together) or 'compare_all' (compare every pair: fast for small `a`).

  Returns int32 indices (int64 only for axes too long for int32).

  >>> searchsorted(jnp.array([1., 2., 3.]), jnp.array([2., 2.5]), side='right')
  DeviceArray([2, 2], dtype=int32)
  """
  if side not in ("left", "right"):
    raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"searchsorted: method must be one of {_SEARCH_METHODS}, got {method!r}")
  util.check_arraylike_or_list("searchsorted", a, v)
  if util.ndim(a) != 1:
    raise ValueError(f"searchsorted: a should be 1-dimensional, got shape {util.shape(a)}")
  if sorter is not None:
    util.check_arraylike_or_list("searchsorted", sorter)
    a = indexing.take(a, sorter, mode="clip")
  a, v = util.promote_dtypes(a, v)
  return _searchsorted(util.to_array(a), util.to_array(v), side, method)


@inline_jit(static_argnames=("side", "method"))
def _searchsorted(a, v, side, method):
  n = util.shape(a)[0]
  dt = np.dtype(np.int32) if n <= np.iinfo(np.int32).max else dtypes.canonicalize_dtype(
      np.int64)
  if util.dtype_of(a) == np.bool_:  # compare bools as small integers
    a, v = util.convert(a, np.int8, False), util.convert(v, np.int8, False)
  if n == 0:
    return structural.full(util.shape(v), np.array(0, dt))
  # `go_right(x, v)`: the answer lies right of an entry x of `a`.
  go_right = _sort_le if side == "right" else _sort_lt
  if method == "compare_all":
    return reductions.sum(go_right(a, v[..., None]), axis=-1, dtype=dt)
  if method == "sort":
    return _searchsorted_sort(a, v, side, dt)
  return _searchsorted_bisect(a, v, go_right, dt, unrolled=method == "scan_unrolled")


def _searchsorted_bisect(a, v, go_right, dt, unrolled):
  """Bisection on [lo, hi): ceil(log2(n + 1)) halvings settle every query."""
  from tracejax._src.control_flow import loops
  n = util.shape(a)[0]
  steps = int(np.ceil(np.log2(n + 1)))
  lo = structural.full(util.shape(v), np.array(0, dt))
  hi = structural.full(util.shape(v), np.array(n, dt))

  def halve(_, state):
    lo, hi = state
    active = ufuncs.less(lo, hi)
    mid = lax_ew.div(ufuncs.add(lo, hi), np.array(2, dt))  # lo + hi <= 2n: no overflow
    right = ufuncs.logical_and(active, go_right(indexing.take(a, mid, mode="clip"), v))
    left = ufuncs.logical_and(active, ufuncs.logical_not(right))
    return (ufuncs.where(right, ufuncs.add(mid, np.array(1, dt)), lo),
            ufuncs.where(left, mid, hi))

  state = (lo, hi)
  if unrolled:
    for i in range(steps):
      state = halve(i, state)
  else:
    state = loops.fori_loop(0, steps, halve, state)
  return state[0]


def _searchsorted_sort(a, v, side, dt):
  """Sort `a` and `v` together; a query's answer is the number of `a` entries before it.

  The tag orders a query before equal entries of `a` for side='left' and after
  them for 'right'; a second sort by position puts the answers back in place.
  """
  n = util.shape(a)[0]
  vshape = util.shape(v)
  m = int(np.prod(vshape, dtype=np.int64))
  vf = util.reshape(v, (m,))
  keys = structural.concatenate([a, vf], 0)
  a_tag, v_tag = (1, 0) if side == "left" else (0, 1)
  tags = structural.concatenate([structural.full((n,), np.array(a_tag, np.int32)),
                                 structural.full((m,), np.array(v_tag, np.int32))], 0)
  pos = structural.iota(dt, n + m)
  _, _, perm = lax_sort.sort((keys, tags, pos), dimension=0, num_keys=2)
  is_a = util.convert(ufuncs.less(perm, np.array(n, dt)), dt, False)
  before = ufuncs.subtract(reductions.cumsum(is_a), is_a)  # exclusive prefix count
  _, back = lax_sort.sort((perm, before), dimension=0, num_keys=1)
  return util.reshape(back[n:], vshape)
