"""Shardings: where the pieces of an Array live, and their translation to XLA's HloSharding.

Every `Array` (jaxlib's ArrayImpl) holds a sharding object, which jaxlib's C++
requires to be an instance of one of its own sharding classes (`_jax.Sharding`
and subclasses): the array constructor, the result handlers and the C++ jit all
read it. So tracejax builds on them:

* `SingleDeviceSharding` *is* jaxlib's C++ class, with the Python-side methods of
  JAX's `Sharding` interface attached (as JAX does);
* `PmapSharding` subclasses jaxlib's `Sharding` base in Python: an array whose
  leading axis is split over devices one index per device, each shard holding
  one member's block of shape (1, ...): what `pmap` consumes and returns.

The later SPMD shardings (`Mesh`, `NamedSharding`, `PartitionSpec`, GSPMD's
`HloSharding`) belong here too and build on jaxlib's `NamedSharding`/`GSPMDSharding`
the same way: each answers `_to_xla_hlo_sharding(ndim)`, `devices_indices_map(shape)`
and `shard_shape(shape)`, which is all the Array and the executors ask of a sharding.
"""
import numpy as np

from tracejax._src.runtime import backend
from tracejax._src.runtime.backend import _jax, xc

Sharding = _jax.Sharding
SingleDeviceSharding = _jax.SingleDeviceSharding


# ---- the Python side of jaxlib's SingleDeviceSharding ----

def _sds_devices_indices_map(self, global_shape):
  return {self._device: (slice(None),) * len(global_shape)}


def _sds_repr(self):
  return f"SingleDeviceSharding(device={self._device!r})"


for _name, _value in {
    "device_set": property(lambda self: {self._device}),
    "_device_assignment": property(lambda self: (self._device,)),
    "addressable_devices": property(lambda self: {self._device}),
    "is_fully_replicated": property(lambda self: True),
    "is_fully_addressable": property(lambda self: True),
    "num_devices": property(lambda self: 1),
    "memory_kind": property(lambda self: self._memory_kind),
    "devices_indices_map": _sds_devices_indices_map,
    "shard_shape": lambda self, global_shape: tuple(global_shape),
    "__repr__": _sds_repr,
    # Equal when they name the same device and memory (jaxlib's compare identity).
    "__eq__": lambda self, other: (type(other) is SingleDeviceSharding and
                                   other._device == self._device and
                                   other._memory_kind == self._memory_kind),
    "__hash__": lambda self: hash((self._device, self._memory_kind)),
}.items():
  setattr(SingleDeviceSharding, _name, _value)
del _name, _value


# ---- PmapSharding ----

class PmapSharding(Sharding):
  """The sharding of a `pmap`ped array: index i of the leading axis lives on `devices[i]`,
  as a block of shape (1, *rest) (as in JAX).

  Args:
    devices: the devices, one per index of the leading axis.

  >>> s = PmapSharding(jax.devices()[:2])   # doctest: +SKIP
  >>> s.shard_shape((2, 3))                 # doctest: +SKIP
  (1, 3)
  """

  def __init__(self, devices):
    super().__init__()
    self._devices = tuple(devices)
    if not self._devices:
      raise ValueError("PmapSharding needs at least one device")
    self._internal_device_list = _jax.DeviceList(self._devices)
    self._hash = hash(self._devices)

  @property
  def devices(self):
    return np.array(self._devices, dtype=object)

  @property
  def _device_assignment(self):
    return self._devices

  @property
  def device_set(self):
    return set(self._devices)

  @property
  def addressable_devices(self):
    pid = self._devices[0].client.process_index()
    return {d for d in self._devices if d.process_index == pid}

  @property
  def num_devices(self):
    return len(self._devices)

  @property
  def memory_kind(self):
    return None

  @property
  def _memory_kind(self):
    return None

  is_fully_replicated = property(lambda self: len(self._devices) == 1)

  @property
  def is_fully_addressable(self):
    return len(self.addressable_devices) == len(self._devices)

  def devices_indices_map(self, global_shape):
    """{device: index}: device i holds `x[i:i+1]`."""
    self._check_shape(global_shape)
    rest = (slice(None),) * (len(global_shape) - 1)
    return {d: (slice(i, i + 1),) + rest for i, d in enumerate(self._devices)}

  def shard_shape(self, global_shape):
    self._check_shape(global_shape)
    return (1,) + tuple(global_shape[1:])

  def _check_shape(self, global_shape):
    if not global_shape or global_shape[0] != len(self._devices):
      raise ValueError(f"PmapSharding over {len(self._devices)} devices needs a leading "
                       f"axis of that size, got shape {tuple(global_shape)}")

  def _shard_arg(self, x):
    """A non-Array argument (NumPy, scalar) split over the devices (for jaxlib's C++
    dispatch, which asks the sharding to place what it cannot)."""
    from tracejax._src.core.avals import get_aval
    return shard_to_devices(x, get_aval(x), self._devices, True)

  def _to_xla_hlo_sharding(self, num_dimensions):
    # Each device holds one member's block: for XLA (replicas) each replica's argument
    # is unpartitioned.
    return xc.HloSharding.replicate()

  def __eq__(self, other):
    return type(other) is PmapSharding and other._devices == self._devices

  def __hash__(self):
    return self._hash

  def __repr__(self):
    return f"PmapSharding(devices={[d.id for d in self._devices]})"


_pmap_shardings = {}


def pmap_sharding(devices):
  """The PmapSharding over `devices`, one object per device tuple: jaxlib's C++
  dispatch recognizes an argument already placed by comparing sharding objects."""
  devices = tuple(devices)
  s = _pmap_shardings.get(devices)
  if s is None:
    s = _pmap_shardings[devices] = PmapSharding(devices)
  return s


# ---- shards of an array ----

class Shard:
  """One device's piece of an Array: `.device`, `.index` (into the global array),
  `.replica_id` and `.data` (a single-device Array)."""
  __slots__ = ("device", "index", "replica_id", "data")

  def __init__(self, device, index, replica_id, data):
    self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, "
            f"replica_id={self.replica_id}, data={self.data!r})")


def device_of_single(x):
  """The device of a single-device Array (None for a multi-device one)."""
  s = x._sharding
  return s._device if type(s) is SingleDeviceSharding else None


def shards(x):
  """The addressable shards of Array `x`, in its sharding's device order."""
  s = x._sharding
  if type(s) is SingleDeviceSharding:
    return [Shard(s._device, (slice(None),) * x.ndim, 0, x)]
  index_map = s.devices_indices_map(x.shape)
  shard_aval = x.aval.update(shape=s.shard_shape(x.shape))
  seen = {}
  out = []
  for buf in x._arrays:
    d = device_of_single(buf)
    idx = index_map[d]
    key = repr(idx)
    rid = seen.get(key, 0)
    seen[key] = rid + 1
    # jaxlib's per-device buffers carry no aval: wrap each as a single-device Array.
    data = backend.ArrayImpl(shard_aval, backend.sharding_for(d), [buf], x._committed, True)
    out.append(Shard(d, idx, rid, data))
  return out


def assemble_numpy(x):
  """The global value of a multi-device Array `x` as one NumPy array."""
  s = x._sharding
  if isinstance(s, PmapSharding):
    parts = [np.asarray(backend.to_numpy(b)) for b in x._arrays]
    return np.concatenate(parts) if parts else np.zeros(x.shape, x.dtype)
  out = np.empty(x.shape, x.dtype)
  for sh in shards(x):
    out[sh.index] = backend.to_numpy(sh.data)
  return out


# ---- placement: which device a computation runs on ----

def _describe(x, where):
  aval = x.aval
  shape = aval.str_short() if hasattr(aval, "str_short") else str(aval.shape)
  ids = sorted(d.id for d in x._sharding._device_assignment)
  platform = next(iter(x._sharding._device_assignment)).platform.upper()
  return f"argument {where} with shape {shape} and with device ids {ids} on platform {platform}"


def committed_device(args, name, names=None):
  """The device of the committed single-device Arrays among `args` (None if there are
  none); a ValueError, in JAX's words, when they are on different devices. `names`:
  the arguments' names for that message (a list, or a function returning one).

  Multi-device arrays (pmap results) do not pin a single-device computation: their
  value is gathered to wherever it runs."""
  found = None
  where = None
  for i, x in enumerate(args):
    if type(x) is not backend.ArrayImpl or not x._committed:
      continue
    s = x._sharding
    if type(s) is not SingleDeviceSharding:
      continue
    d = s._device
    if found is None:
      found, where = d, (x, i)
    elif d != found:
      names = names() if callable(names) else names
      a = names[where[1]] if names else where[1]
      b = names[i] if names else i
      raise ValueError(
          f"Received incompatible devices for jitted computation. Got {_describe(where[0], f'{a} of {name}')} "
          f"and {_describe(x, f'{b} of {name}')}")
  return found


def put_on_device(x, device):
  """`x` (an Array on other devices, or several) as a single-device Array on `device`
  (committed as `x` was)."""
  s = x._sharding
  if type(s) is SingleDeviceSharding:
    if s._device == device:
      return x
    src = backend.to_numpy(x)
  else:
    src = assemble_numpy(x)
  return backend.device_put(np.ascontiguousarray(src), device, x.aval, committed=x._committed)


def shard_to_devices(x, aval, devices, mapped):
  """Argument `x` of a replicated (pmap) program over `devices`: an Array whose `_arrays`
  are one buffer per device: member i's slice of `x` if `mapped`, else all of `x`.

  A `PmapSharding` array already on `devices` is used as it is (no copy)."""
  if type(x) is backend.ArrayImpl:
    s = x._sharding
    if mapped and type(s) is PmapSharding and s._devices == tuple(devices):
      return x
    v = assemble_numpy(x) if type(s) is not SingleDeviceSharding else backend.to_numpy(x)
  else:
    v = np.asarray(x, aval.dtype)
  n = len(devices)
  if mapped:
    return backend.put_shards([np.ascontiguousarray(v[i:i + 1]) for i in range(n)], devices,
                              aval, pmap_sharding(devices))
  return backend.put_shards([np.ascontiguousarray(v)] * n, devices, aval)


def placement(args, name, requested=None, names=None):
  """(device, committed) of a single-device computation on `args`: the device of its
  committed inputs, else `requested` (jit's `device=`), else the default device.

  A ValueError names the devices when committed inputs disagree (or disagree with
  `requested`)."""
  dev = committed_device(args, name, names)
  if dev is None:
    if requested is not None:
      return requested, True
    return backend.default_device(), False
  if requested is not None and requested != dev:
    raise ValueError(f"Received incompatible devices for jitted computation. Got "
                     f"device={requested} for {name} and committed arguments on {dev}")
  return dev, True


def needs_placement(args):
  """Whether any Array among `args` is committed or spread over several devices, or the
  default device has been changed: only then does placement need working out."""
  for x in args:
    if type(x) is backend.ArrayImpl and (x._committed or
                                         type(x._sharding) is not SingleDeviceSharding):
      return True
  return backend.default_device() is not backend._default_device


def on_device(x, aval, device, to_buffer):
  """Argument `x` as a buffer on `device` (moving an Array that lives elsewhere)."""
  if type(x) is backend.ArrayImpl:
    s = x._sharding
    if type(s) is SingleDeviceSharding and s._device == device:
      return x
    return put_on_device(x, device)
  return to_buffer(x, aval, device)
