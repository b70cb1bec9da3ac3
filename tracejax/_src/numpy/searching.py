"""Functions whose output shape depends on the data: nonzero, argwhere, flatnonzero.

Without `size` they need a concrete array (C-S08): under `jit` they raise a
concretization error. With a static `size`, concrete inputs are handled on the
host and traced ones on the device (a sort brings the indices of the nonzero
elements first), so `jnp.nonzero(x, size=3)` works under `jit` and `vmap`.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer, concrete_or_error
from tracejax._src.lax import sorting as lax_sort
from tracejax._src.lax import structural
from tracejax._src.numpy import util
from tracejax._src.runtime.array import from_numpy

_ZERO_D_MSG = ("Calling nonzero on 0d arrays is not allowed. Use "
               "jnp.atleast_1d(scalar).nonzero() instead.")


def _concrete(a, fun_name):
  return concrete_or_error(
      np.asarray, util.to_operand(a),
      f"The argument of jnp.{fun_name} must be concrete: the size of its result depends "
      "on the values. Pass `size=` with a static length, or call it outside `jit`.")


def _concrete_or_none(a):
  """The host value of `a`, or None when it is only known abstractly (traced)."""
  a = util.to_operand(a)
  if isinstance(a, Tracer):
    v = a.to_concrete_value()
    return None if v is None else np.asarray(v)
  return np.asarray(a)


def _fills(fill_value, n):
  if isinstance(fill_value, (tuple, list)):
    if len(fill_value) != n:
      raise ValueError(f"fill_value must be a scalar or a tuple of length {n}; got "
                       f"{fill_value!r}")
    return tuple(fill_value)
  if fill_value is not None and np.ndim(fill_value) != 0:
    raise ValueError(f"fill_value must be a scalar or a tuple of length {n}; got "
                     f"{fill_value!r}")
  return (fill_value,) * n


def _static_size(size):
  size = util.concrete_int(size, "The size argument of jnp.nonzero must be statically "
                           "specified.")
  if size < 0:
    raise ValueError(f"size must be non-negative, got {size}")
  return size


def _nonzero_traced(a, size, fill_value):
  """nonzero of a traced `a` with a static `size`, with device operations only."""
  from tracejax._src.numpy import creation, shape_ops, ufuncs
  shp = util.shape(a)
  n = int(np.prod(shp))
  idt = dtypes.default_int_dtype()
  flat = util.reshape(ufuncs.not_equal(a, creation.zeros_like(a)), (n,))
  iota = structural.iota(idt, n)
  # Zero elements get the key n, so a stable sort puts the nonzero indices first, in order.
  keys = lax_sort.sort(ufuncs.where(flat, iota, creation.full((n,), n, idt)))
  if size <= n:
    keys = keys[:size]
  else:
    keys = shape_ops.concatenate([keys, creation.full((size - n,), n, idt)])
  valid = ufuncs.less(keys, n)
  out = []
  stride = n
  for d, fill in zip(shp, _fills(fill_value, len(shp))):
    stride //= d if d else 1
    idx = ufuncs.remainder(ufuncs.floor_divide(keys, max(stride, 1)), max(d, 1))
    out.append(ufuncs.where(valid, idx, creation.full((size,), 0 if fill is None else fill,
                                                      idt)))
  return tuple(out)


def nonzero(a, *, size=None, fill_value=None):
  """A tuple of index arrays, one per axis, of the nonzero elements of `a`.

  Args:
    a: an array of at least one dimension (0-d raises, as in NumPy 2 and JAX).
    size: static length of each result; extra indices are dropped and missing ones
      are `fill_value`. Required under `jit`.
    fill_value: padding index (default 0), or a tuple with one value per axis.

  >>> nonzero(jnp.array([0, 1, 2, 0, 3]), size=4, fill_value=-1)
  (DeviceArray([ 1,  2,  4, -1], dtype=int32),)
  """
  util.check_arraylike_or_list("nonzero", a)
  if util.ndim(a) == 0:
    raise ValueError(_ZERO_D_MSG)
  dt = dtypes.default_int_dtype()
  if size is not None:
    size = _static_size(size)
    if 0 in util.shape(a):
      # JAX 0.10.2: an empty input gives zeros, whatever fill_value says
      return tuple(from_numpy(np.zeros(size, dt)) for _ in range(util.ndim(a)))
    v = _concrete_or_none(a)
    if v is None:
      return _nonzero_traced(util.to_array(a), size, fill_value)
  else:
    v = _concrete(a, "nonzero")
  idx = np.nonzero(v)
  if size is not None:
    fills = _fills(fill_value, len(idx))
    idx = tuple(np.concatenate([i[:size], np.full(max(size - len(i), 0),
                                                  0 if f is None else f, i.dtype)])
                for i, f in zip(idx, fills))
  return tuple(from_numpy(i.astype(dt)) for i in idx)


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of the flattened `a`.

  Args:
    a: an array (any number of dimensions).
    size, fill_value: as for `nonzero`.

  >>> flatnonzero(jnp.array([[0, 1], [2, 0]]))
  DeviceArray([1, 2], dtype=int32)
  """
  util.check_arraylike_or_list("flatnonzero", a)
  a = util.to_operand(a)
  flat = util.reshape(a, (int(np.prod(util.shape(a))),))
  return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements, one row per element (shape (count, a.ndim)).

  Args:
    a: an array; a 0-d `a` gives shape (1, 0) if it is nonzero, else (0, 0).
    size, fill_value: as for `nonzero` (they fix the number of rows).

  >>> argwhere(jnp.array([[0, 1], [2, 0]]))
  DeviceArray([[0, 1],
               [1, 0]], dtype=int32)
  """
  util.check_arraylike_or_list("argwhere", a)
  a = util.to_operand(a)
  nd = util.ndim(a)
  a1 = util.reshape(a, (1,)) if nd == 0 else a
  cols = nonzero(a1, size=size, fill_value=fill_value)
  from tracejax._src.numpy import shape_ops
  out = shape_ops.stack(cols, axis=1)
  if nd == 0:
    out = out[:, :0]
  return out
