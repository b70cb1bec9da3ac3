"""Index helpers: tril/triu/diag indices, ix_, unravel_index, ravel_multi_index,
and the index-notation builders mgrid, ogrid, r_, c_ (index_exp, s_ from NumPy).

Index arrays with static contents are computed with NumPy and transferred;
`unravel_index` and `ravel_multi_index` are arithmetic, so they also trace.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.numpy import creation, ufuncs, util


def _int_arrays(arrays):
  return tuple(creation.asarray(np.asarray(a, dtypes.default_int_dtype())) for a in arrays)


def tril_indices(n, k=0, m=None):
  """Row and column indices of the lower triangle of an (n, m) array."""
  return _int_arrays(np.tril_indices(util.concrete_int(n, "n of jnp.tril_indices"),
                                     util.concrete_int(k, "k of jnp.tril_indices"), m))


def triu_indices(n, k=0, m=None):
  """Row and column indices of the upper triangle of an (n, m) array."""
  return _int_arrays(np.triu_indices(util.concrete_int(n, "n of jnp.triu_indices"),
                                     util.concrete_int(k, "k of jnp.triu_indices"), m))


def tril_indices_from(arr, k=0):
  """`tril_indices` for the shape of the 2-D `arr`."""
  s = util.shape(arr)
  if len(s) != 2:
    raise ValueError("input array must be 2-d")
  return tril_indices(s[0], k, s[1])


def triu_indices_from(arr, k=0):
  """`triu_indices` for the shape of the 2-D `arr`."""
  s = util.shape(arr)
  if len(s) != 2:
    raise ValueError("input array must be 2-d")
  return triu_indices(s[0], k, s[1])


def diag_indices(n, ndim=2):
  """Indices of the main diagonal of an n x n x ... array (`ndim` copies of arange(n))."""
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  return _int_arrays(np.diag_indices(n, ndim))


def diag_indices_from(arr):
  """`diag_indices` for a square array."""
  s = util.shape(arr)
  if len(s) < 2 or len(set(s)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(s[0], len(s))


def ix_(*args):
  """Open meshes from 1-D sequences: each reshaped to broadcast along its own axis."""
  out = []
  for i, a in enumerate(args):
    a = util.to_array(a)
    if util.ndim(a) != 1:
      raise ValueError(f"Cross index must be 1 dimensional, got {util.ndim(a)}")
    shape = [1] * len(args)
    shape[i] = util.shape(a)[0]
    out.append(util.reshape(a, tuple(shape)))
  return tuple(out)


def unravel_index(indices, shape):
  """The coordinates in an array of `shape` of flat `indices` (out-of-range ones clip)."""
  indices = util.to_array(indices)
  shape = tuple(util.concrete_int(d, "shape of jnp.unravel_index") for d in shape)
  size = int(np.prod(shape, dtype=np.int64))
  # Clip like JAX: negative indices count from the end; the rest saturate.
  indices = ufuncs.where(ufuncs.less(indices, 0), ufuncs.add(indices, size), indices)
  indices = ufuncs.clip(indices, 0, max(size - 1, 0))
  out = []
  for d in reversed(shape):
    out.append(ufuncs.remainder(indices, d))
    indices = ufuncs.floor_divide(indices, d)
  return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
  """Flat indices of coordinates `multi_index` in an array of shape `dims`."""
  if order != "C":
    raise NotImplementedError("ravel_multi_index: only order='C' is supported")
  dims = tuple(util.concrete_int(d, "dims of jnp.ravel_multi_index") for d in dims)
  if len(multi_index) != len(dims):
    raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
  out = 0
  for idx, d in zip(multi_index, dims):
    idx = util.to_array(idx)
    if mode == "wrap":
      idx = ufuncs.remainder(idx, d)
    elif mode == "clip":
      idx = ufuncs.clip(idx, 0, d - 1)
    elif mode == "raise":
      from tracejax._src.core.trace import concrete_or_error
      v = concrete_or_error(np.asarray, idx, "The error check of ravel_multi_index with "
                            "mode='raise' needs concrete indices; use mode='clip' or 'wrap'.")
      if np.any(v < 0) or np.any(v >= d):
        raise ValueError("invalid entry in coordinates array")
    else:
      raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap' or 'clip'")
    out = ufuncs.add(ufuncs.multiply(out, d), idx)
  return out


# ---- grids and concatenation by index notation: mgrid, ogrid, r_, c_ ----
# NumPy's own helpers with device arrays: a slice start:stop:step is an arange,
# and with an imaginary step (start:stop:Nj) N points of a linspace, stop included.

index_exp = np.index_exp  # pure index-building helpers: no arrays involved
s_ = np.s_


def _slice_range(s, fun_name):
  """The 1-D array for one slice of mgrid/ogrid/r_ (arange, or linspace for a complex step)."""
  start = 0 if s.start is None else s.start
  stop, step = s.stop, 1 if s.step is None else s.step
  if stop is None:
    raise ValueError(f"{fun_name}: slices need a stop value, got {s}")
  for v, name in ((start, "start"), (stop, "stop"), (step, "step")):
    from tracejax._src.core.trace import concrete_or_error
    concrete_or_error(None, v, f"The {name} of a slice given to jnp.{fun_name} must be "
                      "static.")
  if isinstance(step, (complex, np.complexfloating)):
    num = int(abs(step))
    return creation.linspace(start, stop, num, endpoint=True)
  return creation.arange(start, stop, step)


def _grid_dtype(arrays):
  return dtypes.result_type(*arrays) if arrays else dtypes.default_int_dtype()


class _Grid:
  """`mgrid[...]` (dense, stacked) or `ogrid[...]` (open, broadcastable)."""

  def __init__(self, sparse, name):
    self.sparse = sparse
    self.name = name

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _slice_range(key, self.name)
    if not isinstance(key, tuple):
      raise TypeError(f"jnp.{self.name} expects slices, got {key!r}")
    ranges = [_slice_range(k, self.name) if isinstance(k, slice) else None for k in key]
    if any(r is None for r in ranges):
      raise TypeError(f"jnp.{self.name} expects slices, got {key!r}")
    dt = _grid_dtype(ranges)
    ranges = [util.convert(r, dt, False) for r in ranges]
    grids = creation.meshgrid(*ranges, indexing="ij", sparse=self.sparse)
    if self.sparse:
      return list(grids)
    from tracejax._src.numpy import shape_ops
    if not grids:
      return creation.zeros((0,), dt)
    return shape_ops.stack(grids, axis=0)

  def __repr__(self):
    return f"jnp.{self.name}"


mgrid = _Grid(False, "mgrid")
mgrid.__doc__ = """Dense coordinate grids by slice notation, like `np.mgrid`.

>>> mgrid[0:2, 0:3].shape
(2, 2, 3)
>>> mgrid[0:1:3j]
DeviceArray([0. , 0.5, 1. ], dtype=float32)
"""
ogrid = _Grid(True, "ogrid")
ogrid.__doc__ = """Open (broadcastable) coordinate grids by slice notation, like `np.ogrid`.

>>> [g.shape for g in ogrid[0:2, 0:3]]
[(2, 1), (1, 3)]
"""


def _ndmin(a, ndmin, trans1d):
  """`a` with leading size-1 axes up to `ndmin`; NumPy's `trans1d` says where its own
  axes go among them (-1: last)."""
  nd = util.ndim(a)
  if nd >= ndmin:
    return a
  a = util.reshape(a, (1,) * (ndmin - nd) + util.shape(a))
  if trans1d != -1:
    k2 = ndmin - nd
    k1 = trans1d if trans1d >= 0 else trans1d + k2 + 1
    axes = list(range(ndmin))
    from tracejax._src.numpy import shape_ops
    a = shape_ops.transpose(a, tuple(axes[:k1] + axes[k2:] + axes[k1:k2]))
  return a


class _AxisConcatenator:
  """`r_[...]` / `c_[...]`: concatenate slices, scalars and arrays along an axis.

  A first item that is a string "axis[,ndmin[,trans1d]]" sets the layout
  ('r'/'c' matrix outputs are not supported: there is no matrix class).
  """

  def __init__(self, axis, ndmin, trans1d, name):
    self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

  def __getitem__(self, key):
    from tracejax._src.numpy import shape_ops
    items = key if isinstance(key, tuple) else (key,)
    axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
    if items and isinstance(items[0], str):
      directive, items = items[0], items[1:]
      if directive in ("r", "c"):
        raise ValueError(f"jnp.{self.name}: the matrix directives 'r' and 'c' are not "
                         "supported (JAX has no matrix class)")
      try:
        parts = [int(p) for p in directive.split(",")]
      except ValueError:
        raise ValueError(f"jnp.{self.name}: could not understand directive {directive!r}") \
            from None
      if len(parts) > 3:
        raise ValueError(f"jnp.{self.name}: directive {directive!r} has more than 3 parts")
      axis = parts[0]
      if len(parts) > 1:
        ndmin = parts[1]
      if len(parts) > 2:
        trans1d = parts[2]
    pieces = []
    for item in items:
      if isinstance(item, slice):
        arr = _slice_range(item, self.name)
        if ndmin > 1:
          arr = util.reshape(arr, (1,) * (ndmin - 1) + util.shape(arr))
          if trans1d != -1:
            arr = shape_ops.swapaxes(arr, -1, trans1d)
      elif isinstance(item, str):
        raise ValueError(f"jnp.{self.name}: string directive must be the first item")
      else:
        if not isinstance(item, (list, tuple)):
          util.check_arraylike(self.name, item)
        arr = util.to_array(item)
        if util.ndim(arr) == 0:
          arr = util.reshape(arr, (1,) * max(ndmin, 1))
        else:
          arr = _ndmin(arr, ndmin, trans1d)
      pieces.append(arr)
    if not pieces:
      return creation.zeros((0,), dtypes.default_float_dtype())
    return shape_ops.concatenate(pieces, axis=axis)

  def __len__(self):
    return 0

  def __repr__(self):
    return f"jnp.{self.name}"


r_ = _AxisConcatenator(0, 1, -1, "r_")
r_.__doc__ = """Concatenate along the first axis by index notation, like `np.r_`.

>>> r_[1:4, 0, jnp.array([7, 8])]
DeviceArray([1, 2, 3, 0, 7, 8], dtype=int32)
"""
c_ = _AxisConcatenator(-1, 2, 0, "c_")
c_.__doc__ = """Stack 1-D arrays as columns (concatenate along the last axis), like `np.c_`.

>>> c_[jnp.array([1, 2]), jnp.array([3, 4])]
DeviceArray([[1, 3],
             [2, 4]], dtype=int32)
"""


def mask_indices(n, mask_func, k=0, *, size=None):
  """The (row, column) indices where `mask_func(ones((n, n)), k)` is nonzero.

  Args:
    n: the size of the square array.
    mask_func: e.g. `jnp.triu` or `jnp.tril`: called as mask_func(array, k).
    k: passed to `mask_func`.
    size: a static number of indices (needed under jit), as in `nonzero`.

  >>> mask_indices(2, jnp.triu)
  (DeviceArray([0, 0, 1], dtype=int32), DeviceArray([0, 1, 1], dtype=int32))
  """
  from tracejax._src.numpy import searching
  n = util.concrete_int(n, "n of jnp.mask_indices")
  m = mask_func(creation.ones((n, n), dtypes.default_int_dtype()), k)
  return searching.nonzero(m, size=size)
