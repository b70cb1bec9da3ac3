"""Index helpers: tril/triu/diag indices, ix_, unravel_index, ravel_multi_index.

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
