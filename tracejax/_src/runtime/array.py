"""`tracejax.Array` (alias `DeviceArray`): an immutable array that lives on a device.

The buffer is a jaxlib array; it is fetched to NumPy only when a value is
needed (printing, `__array__`, `float()`, branching), and the fetched copy is
kept. Operations dispatch asynchronously: an Array may still be computing.
Operators and NumPy-style methods are attached by `tracejax.numpy`.
"""
import numpy as np

from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding as sharding_mod

# `jax.typeof(x).sharding.spec` is a PartitionSpec (core cannot import the runtime).
avals_mod.partition_spec_type = sharding_mod.PartitionSpec


# `x.device` is a property (JAX 0.10.2); calling the device it returns gives the device
# itself, so code written for the older method, `x.device()`, keeps working.
backend._jax.Device.__call__ = lambda self: self


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
      if type(self._sharding) is not backend._jax.SingleDeviceSharding:
        if not self.is_fully_addressable and not self._sharding.is_fully_replicated:
          # Only this process's shards are here: the rest of the value is elsewhere.
          raise RuntimeError(
              "Fetching value for `jax.Array` that spans non-addressable (non process "
              "local) devices is not possible. You can use "
              "`jax.experimental.multihost_utils.process_allgather` to print the global "
              "array or use `.addressable_shards` method of jax.Array to inspect the "
              "addressable (process local) shards.")
        v = sharding_mod.assemble_numpy(self)
      elif backend.needs_bitcast_fetch(self.aval.dtype):
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
    for a in self._arrays:
      a._copy_single_device_array_to_host_async()

  @property
  def device(self):
    """The device of a single-device array, else its sharding (a property, as in JAX
    0.10.2). Devices are callable, returning themselves, so the method form of older
    JAX, `x.device()`, gives the device too.

    >>> jnp.ones(3).device   # doctest: +SKIP
    CpuDevice(id=0)
    """
    s = self._sharding
    return s._device if type(s) is backend._jax.SingleDeviceSharding else s

  def devices(self):
    """The set of devices that hold a piece of this array.

    >>> jnp.ones(3).devices()   # doctest: +SKIP
    {CpuDevice(id=0)}
    """
    return set(self._sharding._device_assignment)

  @property
  def sharding(self):
    """How the array is laid out over devices: a `SingleDeviceSharding`, or a
    `PmapSharding` for a pmap result."""
    return self._sharding

  @property
  def committed(self):
    """Whether the array is committed to its device(s): explicitly placed
    (`device_put(x, device)`) or computed from committed inputs. Computations on
    committed arrays run where they are; uncommitted ones may be moved."""
    return self._committed

  @property
  def addressable_shards(self):
    """The pieces of the array held by this process' devices: a list of `Shard`s
    (`.device`, `.index`, `.replica_id`, `.data`)."""
    return sharding_mod.shards(self)

  global_shards = addressable_shards

  def addressable_data(self, index):
    """The single-device Array of shard `index`."""
    return self.addressable_shards[index].data

  @property
  def is_fully_addressable(self):
    """Whether every piece lives on a device of this process."""
    return self._sharding.is_fully_addressable

  @property
  def is_fully_replicated(self):
    """Whether every device holds the whole value."""
    return self._sharding.is_fully_replicated

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
    if type(self._sharding) is not backend._jax.SingleDeviceSharding:   # same layout
      return sharding_mod.put_sharded(np.array(self._value), self.aval, self._sharding)
    return backend.device_put(np.array(self._value), backend.buffer_device(self), self.aval,
                              committed=self._committed)

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


# ---- the public `jax.Array` type ----
#
# `isinstance(x, jax.Array)` must hold for tracers too (libraries check it inside
# jitted and differentiated functions), but jaxlib's ArrayImpl is a C++ type whose
# isinstance cannot be extended. So the public name is an abstract base class that
# ArrayImpl and Tracer are registered with, as `jnp.ndarray` is; internal code keeps
# using `Array` (the concrete ArrayImpl) to mean "a value on a device".
import abc as _abc  # noqa: E402

from tracejax._src.core.trace import Tracer as _Tracer  # noqa: E402


class PublicArray(_abc.ABC):
  """The array type of the public API (`jax.Array`): device arrays and tracers.

  `isinstance(x, jax.Array)` is True for a device array and for a traced value
  inside `jit`, `grad` or `vmap`, and False for NumPy arrays and Python scalars.
  Values are made by `jnp.array`, `jax.device_put` and every operation; the class
  itself is for type checks and annotations.

  >>> isinstance(jnp.ones(3), jax.Array), isinstance(np.ones(3), jax.Array)
  (True, False)
  """
  __slots__ = ()


PublicArray.__name__ = PublicArray.__qualname__ = "Array"
PublicArray.__module__ = "tracejax"  # prints as <class 'tracejax.Array'> (JAX: jax.Array)
PublicArray.register(Array)
PublicArray.register(_Tracer)
