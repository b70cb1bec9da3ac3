"""Functions that select or replace parts of an array: delete, insert, place, put,
put_along_axis, fill_diagonal, choose, compress, extract.

JAX arrays are immutable, so NumPy's in-place functions (`put`, `place`,
`fill_diagonal`, `put_along_axis`) return an updated copy and, as in JAX, must
be called with `inplace=False`: a silent copy would look like a no-op to code
written for NumPy. Where the result's size depends on index values (`delete`,
`insert`, `compress`), the indices must be concrete or a static `size=` given.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.numpy import indexing, reductions, searching, shape_ops, ufuncs, util


def _no_inplace(inplace, fun_name):
  if inplace:
    raise ValueError(f"jax.numpy.{fun_name} cannot modify arrays in-place, because JAX "
                     "arrays are immutable. Pass inplace=False to instead return an "
                     "updated array.")


def _concrete_indices(obj, fun_name, what="obj"):
  return concrete_or_error(
      np.asarray, obj, f"The error arose for the `{what}` argument of jnp.{fun_name}(): "
      "the result's shape depends on it, so it must be concrete (not traced).")


# ---- delete / insert ----

def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """`arr` without the entries `obj` (an index, indices or a slice) along `axis`.

  Args:
    arr: array; flattened when `axis` is None.
    obj: int, integer array or slice of the entries to remove. It must be
      concrete unless `assume_unique_indices=True` (no repeats, all in bounds),
      in which case it may be traced.
    axis: the axis to delete along.

  >>> delete(jnp.arange(5), jnp.array([0, 3]))
  DeviceArray([1, 2, 4], dtype=int32)
  """
  util.check_arraylike("delete", arr)
  a = util.to_array(arr)
  if axis is None:
    a = shape_ops.ravel(a)
    axis = 0
  axis = util.canonicalize_axis(axis, util.ndim(a))
  n = util.shape(a)[axis]
  idt = dtypes.default_int_dtype()
  if isinstance(obj, slice):
    keep = np.ones(n, bool)
    keep[obj] = False
    return indexing.take(a, np.flatnonzero(keep).astype(idt), axis=axis)
  if assume_unique_indices and util.is_array(obj):
    idx = util.to_array(obj)
    if not dtypes.is_integer(util.dtype_of(idx)):
      raise TypeError("delete: obj must be an integer array")
    idx = shape_ops.ravel(idx)
    k = util.shape(idx)[0]
    idx = ufuncs.where(ufuncs.less(idx, 0), ufuncs.add(idx, n), idx)
    mask = util.to_array(np.ones(n, bool)).at[idx].set(False)
    keep = searching.nonzero(mask, size=n - k, fill_value=0)[0]
    return indexing.take(a, keep, axis=axis)
  idx = _concrete_indices(obj, "delete")
  if idx.dtype == np.bool_:
    raise ValueError("delete: boolean obj is not supported; use a boolean mask index "
                     "(arr[~mask]) instead")
  if idx.size and not np.issubdtype(idx.dtype, np.integer):
    raise TypeError(f"delete: obj must be integer indices, got dtype {idx.dtype}")
  idx = idx.astype(np.int64).ravel()
  if np.any((idx < -n) | (idx >= n)):
    raise IndexError(f"delete: index out of bounds for axis {axis} with size {n}")
  keep = np.ones(n, bool)
  keep[idx] = False
  return indexing.take(a, np.flatnonzero(keep).astype(idt), axis=axis)


def insert(arr, obj, values, axis=None):
  """`arr` with `values` inserted before the index (or indices) `obj` along `axis`.

  Args:
    arr: array; flattened when `axis` is None.
    obj: an int (insert the block `values` there), a sequence of ints (one value
      each, broadcast), or a slice. Must be concrete.
    values: what to insert (converted to `arr`'s dtype and broadcast).
    axis: the axis to insert along.

  >>> insert(jnp.arange(4), 1, jnp.array([9, 8]))
  DeviceArray([0, 9, 8, 1, 2, 3], dtype=int32)
  """
  util.check_arraylike("insert", arr)
  a = util.to_array(arr)
  if axis is None:
    a = shape_ops.ravel(a)
    axis = 0
  nd = util.ndim(a)
  axis = util.canonicalize_axis(axis, nd)
  n = util.shape(a)[axis]
  vals = util.convert(util.to_array(values), util.dtype_of(a), False)
  if isinstance(obj, slice):
    idx = np.arange(*obj.indices(n))
  else:
    idx = _concrete_indices(obj, "insert")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
      raise TypeError(f"insert: obj must be integer indices, got dtype {idx.dtype}")
    idx = idx.astype(np.int64)
  if np.any((idx < -n) | (idx > n)):
    raise IndexError(f"insert: index out of bounds for axis {axis} with size {n}")
  idx = np.where(idx < 0, idx + n, idx)
  shape = list(util.shape(a))
  if idx.ndim == 0:
    # One index: `values` is a block, its first axis becoming `axis`.
    vals = util.reshape(vals, (1,) * (nd - util.ndim(vals)) + util.shape(vals))
    vals = shape_ops.moveaxis(vals, 0, axis)
    shape[axis] = util.shape(vals)[axis]
    positions = np.full(shape[axis], int(idx))
  elif idx.size == 1:
    # One index in a sequence: NumPy inserts all of `values` there, without the
    # axis move of the scalar case.
    vals = util.reshape(vals, (1,) * (nd - util.ndim(vals)) + util.shape(vals))
    shape[axis] = util.shape(vals)[axis]
    positions = np.full(shape[axis], int(idx.ravel()[0]))
  else:
    idx = idx.ravel()
    shape[axis] = idx.size
    positions = idx
  vals = util.broadcast_to(vals, tuple(shape))
  numnew = shape[axis]
  # Stable order: each new value goes before the old entry at its index, in
  # the order given; old entries keep theirs. Concatenate, then gather.
  keys = np.concatenate([np.arange(n), positions]).astype(np.float64)
  tie = np.concatenate([np.ones(n), np.zeros(numnew)])
  order = np.lexsort((np.arange(n + numnew), tie, keys))
  joined = shape_ops.concatenate([a, vals], axis=axis)
  return indexing.take(joined, order.astype(dtypes.default_int_dtype()), axis=axis)


# ---- in-place-style updates (inplace=False) ----

def place(arr, mask, vals, *, inplace=True):
  """`arr` with the entries where `mask` holds replaced by `vals`, in order and
  repeated cyclically (NumPy's `place`, returning a new array).

  Args:
    arr: array.
    mask: boolean array of `arr`'s shape.
    vals: 1-D values (used cyclically).
    inplace: must be False (JAX arrays are immutable).

  >>> place(jnp.arange(5), jnp.arange(5) > 1, jnp.array([7, 8]), inplace=False)
  DeviceArray([0, 1, 7, 8, 7], dtype=int32)
  """
  _no_inplace(inplace, "place")
  util.check_arraylike("place", arr, mask, vals)
  a = util.to_array(arr)
  m = util.to_array(mask)
  if util.shape(m) != util.shape(a):
    raise ValueError(f"place: mask shape {util.shape(m)} must equal arr's shape "
                     f"{util.shape(a)}")
  v = shape_ops.ravel(util.convert(util.to_array(vals), util.dtype_of(a), False))
  nv = util.shape(v)[0]
  m_flat = ufuncs.not_equal(shape_ops.ravel(m), False)
  if nv == 0:
    return a
  idt = dtypes.default_int_dtype()
  ordinal = ufuncs.subtract(reductions.cumsum(util.convert(m_flat, idt, False)), 1)
  picked = indexing.take(v, ufuncs.remainder(ufuncs.maximum(ordinal, 0), nv), mode="clip")
  return util.reshape(ufuncs.where(m_flat, picked, shape_ops.ravel(a)), util.shape(a))


def put(a, ind, v, mode=None, *, inplace=True):
  """The flattened `a` with entries `ind` set to `v` (repeated cyclically), reshaped back.

  Args:
    a: array.
    ind: flat integer indices.
    v: values (used cyclically over `ind`).
    mode: None (default: negative indices count from the end, the rest clamp),
      'clip' (NumPy's: clamp, negatives to 0), 'wrap' (modulo the size), or
      'raise' (checks concrete indices and raises).
    inplace: must be False (JAX arrays are immutable).

  >>> put(jnp.zeros(5), jnp.array([0, 7]), jnp.array([1., 2.]), mode='wrap', inplace=False)
  DeviceArray([1., 0., 2., 0., 0.], dtype=float32)
  """
  _no_inplace(inplace, "put")
  util.check_arraylike("put", a, ind, v)
  arr = util.to_array(a)
  flat = shape_ops.ravel(arr)
  size = util.shape(flat)[0]
  idx = shape_ops.ravel(util.to_array(ind))
  if not dtypes.is_integer(util.dtype_of(idx)):
    raise TypeError(f"put: ind must be integer indices, got dtype {util.dtype_of(idx)}")
  k = util.shape(idx)[0]
  vals = shape_ops.ravel(util.convert(util.to_array(v), util.dtype_of(arr), False))
  if k == 0 or size == 0:
    return arr
  if util.shape(vals)[0] == 0:
    raise ValueError("put: v must not be empty when ind is not")
  from tracejax._src.numpy import array_api
  vals = array_api.resize(vals, (k,))
  if mode is None:  # negative indices count from the end, then clamp (as JAX)
    idx = ufuncs.clip(ufuncs.where(ufuncs.less(idx, 0), ufuncs.add(idx, size), idx),
                      0, size - 1)
  elif mode == "clip":  # NumPy's clip: negative indices clamp to 0
    idx = ufuncs.clip(idx, 0, size - 1)
  elif mode == "wrap":
    idx = ufuncs.remainder(idx, size)
  elif mode == "raise":
    host = _concrete_indices(idx, "put", "ind")
    if np.any((host < -size) | (host >= size)):
      raise IndexError(f"put: index out of bounds for an array of size {size}")
    idx = ufuncs.where(ufuncs.less(idx, 0), ufuncs.add(idx, size), idx)
  else:
    raise ValueError(f"put: mode must be 'clip', 'wrap' or 'raise', got {mode!r}")
  return util.reshape(flat.at[idx].set(vals), util.shape(arr))


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """`arr` with `values` written at `indices` along `axis` (the inverse of
  `take_along_axis`), as a new array.

  Args:
    arr: array.
    indices: integer array of `arr`'s rank (broadcast against it on the other axes).
    values: values broadcast to `indices`' shape.
    axis: the axis (None: the flattened array, with 1-D indices).
    inplace: must be False (JAX arrays are immutable).
    mode: out-of-bounds handling as in `x.at[...].set` (default: dropped).

  >>> put_along_axis(jnp.zeros((2, 3)), jnp.array([[2], [0]]), 1., axis=1, inplace=False)
  DeviceArray([[0., 0., 1.],
               [1., 0., 0.]], dtype=float32)
  """
  _no_inplace(inplace, "put_along_axis")
  util.check_arraylike("put_along_axis", arr, indices, values)
  a = util.to_array(arr)
  idx = util.to_array(indices)
  if not dtypes.is_integer(util.dtype_of(idx)):
    raise TypeError(f"put_along_axis: indices must be integers, got {util.dtype_of(idx)}")
  if axis is None:
    if util.ndim(idx) != 1:
      raise ValueError("put_along_axis: with axis=None, indices must be 1-D")
    flat = shape_ops.ravel(a)
    vals = util.broadcast_to(util.convert(util.to_array(values), util.dtype_of(a), False),
                             util.shape(idx))
    return util.reshape(flat.at[idx].set(vals, mode=mode), util.shape(a))
  nd = util.ndim(a)
  if util.ndim(idx) != nd:
    raise ValueError(f"put_along_axis: indices must have the same number of dimensions "
                     f"as arr ({nd}), got {util.ndim(idx)}")
  axis = util.canonicalize_axis(axis, nd)
  bshape = tuple(util.shape(idx)[i] if i == axis else max(util.shape(a)[i],
                                                          util.shape(idx)[i])
                 for i in range(nd))
  full_idx = []
  idt = util.dtype_of(idx)
  for i in range(nd):
    if i == axis:
      full_idx.append(util.broadcast_to(idx, bshape))
    else:
      r = util.reshape(util.to_array(np.arange(bshape[i], dtype=idt)),
                       tuple(bshape[i] if j == i else 1 for j in range(nd)))
      full_idx.append(util.broadcast_to(r, bshape))
  vals = util.broadcast_to(util.convert(util.to_array(values), util.dtype_of(a), False),
                           bshape)
  return a.at[tuple(full_idx)].set(vals, mode=mode)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """`a` with its main diagonal set to `val` (flattened and used cyclically).

  Args:
    a: array with ndim >= 2 (all dimensions equal when ndim > 2).
    val: scalar or array of values.
    wrap: for tall 2-D matrices, continue the diagonal below every N+1 rows
      (NumPy's wrap).
    inplace: must be False (JAX arrays are immutable).

  >>> fill_diagonal(jnp.zeros((3, 2)), 5., inplace=False)
  DeviceArray([[5., 0.],
               [0., 5.],
               [0., 0.]], dtype=float32)
  """
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  util.check_arraylike("fill_diagonal", a, val)
  arr = util.to_array(a)
  shape = util.shape(arr)
  if len(shape) < 2:
    raise ValueError("fill_diagonal: array must be at least 2-d")
  if len(shape) > 2 and len(set(shape)) != 1:
    raise ValueError("fill_diagonal: all dimensions of input must be of equal length")
  total = int(np.prod(shape, dtype=np.int64))
  if len(shape) == 2:
    step = shape[1] + 1
    end = total if wrap else min(shape[1] * shape[1], total)
  else:
    step = 1 + int(np.sum(np.cumprod(shape[:-1])))
    end = total
  pos = np.arange(0, end, step, dtype=dtypes.default_int_dtype())
  if pos.size == 0:
    return arr
  from tracejax._src.numpy import array_api
  v = shape_ops.ravel(util.convert(util.to_array(val), util.dtype_of(arr), False))
  if util.shape(v)[0] == 0:
    return arr
  v = array_api.resize(v, (pos.size,))
  return util.reshape(shape_ops.ravel(arr).at[pos].set(v, unique_indices=True), shape)


# ---- selection ----

def choose(a, choices, out=None, mode="raise"):
  """Elementwise pick from `choices`: out[i] = choices[a[i]][i] (all broadcast together).

  Args:
    a: integer array of choice numbers.
    choices: a sequence of arrays (or an array whose first axis indexes them).
    mode: 'raise' (concrete `a` only: out-of-range raises), 'wrap' or 'clip'.

  >>> choose(jnp.array([0, 1, 0]), [jnp.array([1, 2, 3]), jnp.array([10, 20, 30])])
  DeviceArray([ 1, 20,  3], dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  util.check_arraylike("choose", a)
  a = util.to_array(a)
  if not dtypes.is_integer(util.dtype_of(a)):
    raise TypeError(f"choose: a must be an integer array, got {util.dtype_of(a)}")
  if util.is_arraylike(choices):
    choices = util.to_array(choices)
    choices = [choices[i] for i in range(util.shape(choices)[0])]
  choices = [util.to_array(c) if not isinstance(c, (list, tuple)) else util.to_array(c)
             for c in choices]
  n = len(choices)
  if n == 0:
    raise ValueError("choose: choices must not be empty")
  if mode == "raise":
    host = concrete_or_error(np.asarray, a, "jnp.choose with mode='raise' needs a "
                             "concrete `a`; use mode='wrap' or mode='clip' under jit.")
    if np.any((host < 0) | (host >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = ufuncs.remainder(a, n)
  elif mode == "clip":
    a = ufuncs.clip(a, 0, n - 1)
  else:
    raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
  dt = dtypes.result_type(*choices)
  shape = util.broadcast_shapes(util.shape(a), *(util.shape(c) for c in choices))
  stacked = shape_ops.stack([util.broadcast_to(util.convert(c, dt, False), shape)
                             for c in choices], axis=0)
  sel = util.broadcast_to(a, shape)[None]
  return indexing.take_along_axis(stacked, sel, axis=0, mode="clip")[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` (flattened when None) where `condition` holds.

  Args:
    condition: 1-D booleans (truthiness); shorter than the axis means False beyond.
    a: array.
    axis: the axis to select along.
    size: a static result length along `axis` (needed under jit): cut, or padded
      with `fill_value`.
    fill_value: the padding value.

  >>> compress(jnp.array([True, False, True]), jnp.array([1, 2, 3]))
  DeviceArray([1, 3], dtype=int32)
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  util.check_arraylike("compress", condition, a)
  cond = util.to_array(condition)
  arr = util.to_array(a)
  if util.ndim(cond) != 1:
    raise ValueError(f"compress: condition must be 1-D, got shape {util.shape(cond)}")
  if axis is None:
    arr = shape_ops.ravel(arr)
    axis = 0
  axis = util.canonicalize_axis(axis, util.ndim(arr))
  n = util.shape(arr)[axis]
  cond = ufuncs.not_equal(cond, False) if util.dtype_of(cond) != np.bool_ else cond
  m = util.shape(cond)[0]
  if m > n:
    # NumPy rejects True entries past the end; checkable only for concrete values.
    extra = cond[n:]
    try:
      beyond = bool(np.any(np.asarray(extra)))
    except Exception:  # traced: cannot check, the entries are ignored
      beyond = False
    if beyond:
      raise ValueError(f"compress: condition has True entries beyond the axis length {n}")
    cond = cond[:n]
  elif m < n:
    cond = shape_ops.concatenate([cond, util.to_array(np.zeros(n - m, bool))], axis=0)
  if size is None:
    idx = searching.nonzero(cond)[0]
    return indexing.take(arr, idx, axis=axis)
  size = util.concrete_int(size, "size of jnp.compress")
  idx = searching.nonzero(cond, size=size, fill_value=n)[0]
  return indexing.take(arr, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
  """The elements of `arr` (flattened) where `condition` (flattened) holds.

  Args:
    condition: array of `arr`'s size.
    arr: array.
    size: a static result length (needed under jit): cut, or padded with `fill_value`.

  >>> extract(jnp.array([[True, False], [False, True]]), jnp.array([[1, 2], [3, 4]]))
  DeviceArray([1, 4], dtype=int32)
  """
  util.check_arraylike("extract", condition, arr)
  return compress(shape_ops.ravel(condition), shape_ops.ravel(arr), size=size,
                  fill_value=fill_value)
