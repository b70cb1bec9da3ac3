"""Functions whose output shape depends on the data: nonzero, argwhere, flatnonzero.

They need a concrete array (C-S08): under `jit` they raise a concretization
error, unless `size` fixes the output length (then the value is still
needed here, since the computation runs on the host for now).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.numpy import util
from tracejax._src.runtime.array import from_numpy


def _concrete(a, fun_name):
  return concrete_or_error(
      np.asarray, util.to_operand(a),
      f"The argument of jnp.{fun_name} must be concrete: the size of its result depends "
      "on the values. Pass `size=` with a static length, or call it outside `jit`.")


def nonzero(a, *, size=None, fill_value=None):
  """A tuple of index arrays, one per axis, of the nonzero elements of `a`."""
  v = _concrete(a, "nonzero")
  if v.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  idx = np.nonzero(v)
  dt = dtypes.default_int_dtype()
  if size is not None:
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(idx)
    idx = tuple(np.concatenate([i[:size], np.full(max(size - len(i), 0),
                                                  0 if f is None else f, i.dtype)])
                for i, f in zip(idx, fills))
  return tuple(from_numpy(i.astype(dt)) for i in idx)


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of the flattened `a`."""
  v = _concrete(a, "flatnonzero")
  return nonzero(np.ravel(v), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements, one row per element."""
  v = _concrete(a, "argwhere")
  out = np.argwhere(v)
  if size is not None:
    pad = np.full((max(size - len(out), 0), out.shape[1]),
                  0 if fill_value is None else fill_value, out.dtype)
    out = np.concatenate([out[:size], pad])
  return from_numpy(out.astype(dtypes.default_int_dtype()))
