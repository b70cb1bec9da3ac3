"""`tracejax.Array` (alias `DeviceArray`): an immutable array that lives on a device.

The buffer is a jaxlib array; it is fetched to NumPy only when a value is
needed (printing, `__array__`, `float()`, branching), and the fetched copy is
kept. Operations dispatch asynchronously: an Array may still be computing.
Operators and NumPy-style methods are attached by `tracejax.numpy`.
"""
import numpy as np

from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime import backend


class _ArrayMethods:
  """The Python side of `Array`: attached to jaxlib's C++ ArrayImpl below."""
  __array_priority__ = 100

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  @property
  def _value(self):
    if self.is_deleted():  # even if its value was fetched before (as in JAX)
      raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")
    v = self._npy_value
    if v is None:
      if backend.needs_bitcast_fetch(self.aval.dtype):
        v = backend.fetch_via_bitcast(self, self.aval.shape, self.aval.dtype)
      else:
        v = backend.to_numpy(self)
      v.flags.writeable = False if v.flags.owndata or v.base is not None else v.flags.writeable
      self._npy_value = v
    return v

  @property
  def _buf(self):  # the array is its own device buffer
    return self

  def __array__(self, dtype=None, copy=None):
    v = self._value
    if copy:
      return np.array(v, dtype=dtype, copy=True)
    return v if dtype is None else v.astype(dtype)

  def copy_to_host_async(self):
    self._copy_single_device_array_to_host_async()

  def device(self):
    return backend.buffer_device(self)

  def devices(self):
    return {backend.buffer_device(self)}

  def device_buffer(self):
    return self

  def __repr__(self):
    v = self._value
    if v.size == 0:
      body = f"[], shape={v.shape}"
    else:
      body = np.array2string(v, separator=", ", prefix="DeviceArray(")
    return f"DeviceArray({body}, dtype={self.dtype.name})"

  def __str__(self):
    return str(self._value)

  def __format__(self, spec):
    if self.ndim == 0:
      return format(self._value[()], spec)
    return format(self._value, spec)

  def item(self, *args):
    return self._value.item(*args)

  def tolist(self):
    return self._value.tolist()

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __bool__(self):
    return bool(self._value)

  def __int__(self):
    return int(self._value)

  def __float__(self):
    return float(self._value)

  def __complex__(self):
    return complex(self._value)

  def __index__(self):
    if not np.issubdtype(self.dtype, np.integer):
      raise TypeError(f"only integer arrays can be converted to an index, got {self.dtype}")
    return int(self._value)

  __hash__ = None

  def __setitem__(self, idx, value):
    raise TypeError(
        f"'{type(self)}' object does not support item assignment. JAX arrays are "
        "immutable; perhaps you want jax.ops.index_update or jax.ops.index_add instead?")

  def delete(self):
    """Free the device buffer now instead of when the array is garbage collected.

    Using the array afterwards raises RuntimeError; `is_deleted()` tells.

    >>> x = jnp.ones(3); x.delete(); x.is_deleted()
    True
    """
    _delete_buffer(self)

  def __copy__(self):
    """`copy.copy(x)`: a new Array with the same value (and weak type)."""
    return from_numpy(np.array(self._value), weak_type=self.aval.weak_type)

  def __deepcopy__(self, memo):
    """`copy.deepcopy(x)`: arrays hold no references, so the same as `copy.copy`."""
    return self.__copy__()

  def __reduce__(self):
    return (_reconstruct, (np.asarray(self._value), self.aval.weak_type))

  def __dlpack__(self, *args, **kw):
    # The fetched value is read-only, which DLPack before 1.0 cannot express: export a copy.
    return np.array(self._value).__dlpack__(*args, **kw)


def _reconstruct(value, weak_type):
  return from_numpy(value, weak_type=weak_type)



# `Array` *is* jaxlib's C++ ArrayImpl, with the methods above attached (as JAX does):
# jaxlib's C++ jit dispatch accepts and returns only ArrayImpls, so this is what
# lets a cached jitted call run without entering Python. `block_until_ready`,
# `delete` and `is_deleted` are ArrayImpl's own.
Array = backend.ArrayImpl
# jaxlib's own `delete` (kept once: this module may be reloaded over a patched class).
_delete_buffer = getattr(Array, "_tracejax_delete_buffer", Array.delete)
Array._tracejax_delete_buffer = _delete_buffer
for _name, _attr in list(vars(_ArrayMethods).items()):
  if _name not in ("__dict__", "__weakref__", "__module__", "__qualname__"):
    setattr(Array, _name, _attr)
Array.__doc__ = "A device-resident, immutable array (the 2020 documents call it DeviceArray)."
del _name, _attr

DeviceArray = Array
avals_mod.pytype_aval_mappings[Array] = lambda x: x.aval


def from_numpy(x, weak_type=False, device=None, dtype=None):
  """An Array holding a copy of NumPy array `x` (already of a canonical dtype)."""
  x = np.asarray(x) if dtype is None else np.asarray(x, dtype)
  return backend.device_put(x, device, avals_mod.ShapedArray(x.shape, x.dtype, weak_type))
