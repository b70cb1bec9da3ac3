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

* `NamedSharding(mesh, spec)` (a `Mesh` of named axes and a `PartitionSpec`) and
  `GSPMDSharding(devices, hlo_sharding)` subclass it the same way, for SPMD programs.

Every sharding answers `_to_xla_hlo_sharding(ndim)`, `devices_indices_map(shape)` and
`shard_shape(shape)`, which is all the Array and the executors ask of one.

**GSPMD, not Shardy.** XLA has two SPMD partitioners, both verified with jaxlib 0.10.2
on 8 CPU devices (shared/docs/JAXLIB.md §3: modes B/C GSPMD auto/manual, D/E Shardy
auto/manual, all correct). tracejax uses GSPMD (`mhlo.sharding` attributes,
`use_spmd_partitioning`) because: a GSPMD sharding is one attribute string per value,
built, parsed and compared by jaxlib's own `HloSharding`, which is also what a compiled
executable reports for the outputs whose sharding it chose (`get_output_shardings`), so
what we ask for and what XLA answers are the same kind of object; shard_map's manual
mode is three plain custom calls (`Sharding`, `SPMDFullToShardShape`,
`SPMDShardToFullShape`) that any lowering rule can emit, whereas Shardy needs an
`sdy.mesh` symbol at module level and the region op `sdy.manual_computation`, which our
one-region lowering (interpreters/lowering.py) does not build. XLA logs, at each SPMD
compile, that GSPMD propagation is deprecated in favour of Shardy; `backend.compile`
silences that notice (it concerns this choice, not the user's program). With
`use_shardy_partitioner` set, jaxlib 0.10.2 falls back to GSPMD for modules written
this way ("Module has GSPMD attrs or ops"), so moving means emitting sdy instead.
The translation below is the only place that knows the partitioner's format.
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
  # As JAX 0.10.2, which shows the memory kind resolved ('device' by default).
  return (f"SingleDeviceSharding(device={self._device!r}, "
          f"memory_kind={self._memory_kind or 'device'})")


def _addressable_devices_indices_map(self, global_shape):
  """{device: index} of `devices_indices_map`, for the devices of this process."""
  return {d: i for d, i in self.devices_indices_map(global_shape).items()
          if d.process_index == d.client.process_index()}


for _name, _value in {
    "device_set": property(lambda self: {self._device}),
    "_device_assignment": property(lambda self: (self._device,)),
    "addressable_devices": property(lambda self: {self._device}),
    "is_fully_replicated": property(lambda self: True),
    "is_fully_addressable": property(lambda self: True),
    "num_devices": property(lambda self: 1),
    "memory_kind": property(lambda self: self._memory_kind),
    "devices_indices_map": _sds_devices_indices_map,
    "addressable_devices_indices_map": _addressable_devices_indices_map,
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

class _DeviceTupleSharding(Sharding):
  """What every sharding over a flat tuple of devices shares (PmapSharding, and the
  SPMD shardings below): the device set, which of them this process owns, and the
  device list jaxlib's C++ code reads."""

  def _init_devices(self, devices):
    self._devices = tuple(devices)
    self._internal_device_list = _jax.DeviceList(self._devices)

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
  def is_fully_addressable(self):
    return len(self.addressable_devices) == len(self._devices)

  addressable_devices_indices_map = _addressable_devices_indices_map

  @property
  def num_devices(self):
    return len(self._devices)


class PmapSharding(_DeviceTupleSharding):
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
    if not tuple(devices):
      raise ValueError("PmapSharding needs at least one device")
    self._init_devices(devices)
    self._hash = hash(self._devices)

  @property
  def devices(self):
    return np.array(self._devices, dtype=object)

  @property
  def memory_kind(self):
    return None

  @property
  def _memory_kind(self):
    return None

  is_fully_replicated = property(lambda self: len(self._devices) == 1)
  _axis_name = None   # the pmap's axis name, when `pmap_sharding` was given one

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
    # The axis name is compared too: equal shardings are interchangeable in jaxlib's
    # caches, and the name decides the mesh of eager results (see `pmap_sharding`).
    return (type(other) is PmapSharding and other._devices == self._devices and
            other._axis_name == self._axis_name)

  def __hash__(self):
    return self._hash

  def __repr__(self):
    return f"PmapSharding(devices={[d.id for d in self._devices]})"


_pmap_shardings = {}


def pmap_sharding(devices, axis_name=None):
  """The PmapSharding over `devices`, one object per device tuple (and pmap axis name):
  jaxlib's C++ dispatch recognizes an argument already placed by comparing sharding
  objects. `axis_name` (a str, or None) does not change the layout (`same_layout`); it
  names the mesh axis of the SPMD view an eager op on the array runs over
  (interpreters/pxla.py `spmd_view`), as JAX names it after the pmap's axis, so it is
  part of the sharding's equality."""
  devices = tuple(devices)
  s = _pmap_shardings.get((devices, axis_name))
  if s is None:
    s = _pmap_shardings[(devices, axis_name)] = PmapSharding(devices)
    s._axis_name = axis_name
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
  """The device of a single-device Array (None for a multi-device one). A one-device
  NamedSharding (a pmap's result on one device) counts as single-device."""
  s = x._sharding
  if type(s) is SingleDeviceSharding:
    return s._device
  devices = s._device_assignment
  return devices[0] if len(devices) == 1 else None


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
    # Replicas of a block hold the same value, unless a program left them different
    # (shard_map with check_vma=False): then the first (replica 0) is the value, as in JAX.
    if sh.replica_id == 0:
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

  A `PmapSharding` array already on `devices` is used as it is, and one whose sharding
  puts the same blocks there (an eager op's NamedSharding result) is relabelled: no
  copy either way."""
  if type(x) is backend.ArrayImpl:
    s = x._sharding
    if mapped and type(s) is PmapSharding and s._devices == tuple(devices):
      return x
    if mapped and type(s) is not SingleDeviceSharding:
      r = relabel(x, x.aval, pmap_sharding(devices))
      if r is not None:
        return r
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

  A ValueError names the devices when committed inputs disagree (`requested`, when
  given, overrides them)."""
  if requested is not None:
    # As JAX 0.10.2: jit's device=/backend= wins; committed inputs are moved there.
    return requested, True
  dev = committed_device(args, name, names)
  if dev is None:
    return backend.default_device(), False
  return dev, True


def needs_placement(args):
  """Whether any Array among `args` is committed or spread over several devices, or the
  default device has been changed, or a `jax.set_mesh` is active: only then does
  placement need working out."""
  for x in args:
    if type(x) is not backend.ArrayImpl:
      x = getattr(x, "_base_array", None)   # a typed key array: its data's placement
    if type(x) is backend.ArrayImpl and (x._committed or
                                         type(x._sharding) is not SingleDeviceSharding):
      return True
  return (backend.default_device() is not backend._default_device or
          bool(_mesh_stack.set_depths))


def on_device(x, aval, device, to_buffer):
  """Argument `x` as a buffer on `device` (moving an Array that lives elsewhere)."""
  if type(x) is backend.ArrayImpl:
    s = x._sharding
    if type(s) is SingleDeviceSharding and s._device == device:
      return x
    return put_on_device(x, device)
  return to_buffer(x, aval, device)


# ---- SPMD shardings: Mesh, PartitionSpec, NamedSharding ----
#
# Partitioner choice: GSPMD (`mhlo.sharding` attributes, `use_spmd_partitioning`), not
# Shardy. Both were verified on 8 CPU devices with jaxlib 0.10.2 (shared/docs/JAXLIB.md
# §3, modes B/C vs D/E). GSPMD wins here because (1) its sharding is one attribute
# string per value, which jaxlib's own `HloSharding` builds, parses, compares and
# returns from a compiled executable (`get_output_shardings`), so the shardings we ask
# for and the ones XLA chose are the same kind of object; Shardy would need an
# `sdy.mesh` symbol at module level and region ops (`sdy.manual_computation`) that our
# single-region lowering (interpreters/lowering.py) does not build; (2) shard_map's
# manual mode is three plain custom calls (`Sharding`, `SPMDFullToShardShape`,
# `SPMDShardToFullShape`) around the body, which slot into any lowering rule. The cost:
# XLA logs that GSPMD is deprecated in favour of Shardy.
#
# Partition p of an SPMD program runs on `mesh.devices.flat[p]`: the tile assignments
# below are written in those flat mesh positions, and every multi-device Array keeps
# its buffers in that order.

import enum as _enum
import itertools as _itertools
import math as _math
import threading as _threading


class AxisType(_enum.Enum):
  """How a mesh axis is partitioned: `Auto` (XLA's partitioner decides, from the
  shardings given), `Explicit` (the sharding over it is part of an array's type and
  every operation computes its result's: `_src/sharding_explicit.py`), `Manual`
  (inside `shard_map`)."""
  Auto = _enum.auto()
  Explicit = _enum.auto()
  Manual = _enum.auto()

  def __repr__(self):
    return self.name


class PartitionSpec(tuple):
  """How each axis of an array maps onto mesh axes: one entry per array axis, None
  (not split), a mesh axis name, or a tuple of names (split over their product).
  Missing trailing entries mean None.

  Args:
    *partitions: the entries.

  >>> PartitionSpec('x', None)
  P('x', None)
  """

  def __new__(cls, *partitions):
    parts = []
    for p in partitions:
      if isinstance(p, list):
        p = tuple(p)
      if isinstance(p, tuple):
        if not all(isinstance(n, str) for n in p):
          raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a "
                          f"tuple of names, got {p!r}")
      elif p is not None and not isinstance(p, str):
        raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a "
                        f"tuple of names, got {p!r}")
      parts.append(p)
    return super().__new__(cls, parts)

  def __repr__(self):
    return "P(" + ", ".join(repr(p) for p in self) + ("," if len(self) == 1 else "") + ")"

  def __eq__(self, other):
    return type(other) is PartitionSpec and tuple.__eq__(self, other)

  def __ne__(self, other):
    return not self.__eq__(other)

  def __hash__(self):
    return tuple.__hash__(self)

  def __reduce__(self):
    return (PartitionSpec, tuple(self))

  def _normalized(self, ndim):
    """One tuple of names per array axis (empty: not split)."""
    parts = list(self) + [None] * (ndim - len(self))
    return tuple(() if p is None else (p,) if isinstance(p, str) else tuple(p)
                 for p in parts)


P = PartitionSpec


class _MeshStack(_threading.local):
  def __init__(self):
    self.stack = []
    self.set_depths = []   # the positions in `stack` that `jax.set_mesh` filled


_mesh_stack = _MeshStack()


def current_mesh():
  """The mesh of the innermost `with mesh:` block (None outside any)."""
  return _mesh_stack.stack[-1] if _mesh_stack.stack else None


def context_mesh():
  """The mesh of the innermost `jax.set_mesh` (None outside any): as in JAX, `jit` runs
  there even on arguments that are on no mesh, and it is the abstract mesh of types (a
  legacy `with mesh:` only resolves bare PartitionSpecs)."""
  st = _mesh_stack
  return st.stack[st.set_depths[-1]] if st.set_depths else None


# Part of jaxlib's C++ jit key (as our other flags, runtime/backend.py): a call inside
# `jax.set_mesh(m)` runs over m, so it must not reuse an executable made outside it.
_context_mesh_flag = _jax.config.Config("tracejax_context_mesh", None, include_in_jit_key=True,
                                        include_in_trace_context=True)


def sync_context_mesh():
  """Tell jaxlib's C++ jit the current `context_mesh()` (after the mesh stack changes)."""
  _context_mesh_flag.set_local(context_mesh())


def named_from_spec(spec):
  """`NamedSharding(current mesh, spec)`, with JAX's error outside any mesh context."""
  mesh = current_mesh()
  if mesh is None:
    raise ValueError("Using PartitionSpec when you are not under a mesh context is not "
                     "allowed. Please pass a NamedSharding instance or enter into a mesh "
                     f"context via `jax.set_mesh`. Got {spec!r}")
  return NamedSharding(mesh, spec)


class Mesh:
  """An n-dimensional array of devices with a name per axis.

  Args:
    devices: an array (nested lists or NumPy object array) of devices.
    axis_names: one name per axis of `devices`.
    axis_types: optional, one `AxisType` per axis (default Auto).

  Also a context manager: inside `with mesh:`, `shard_map` and
  `with_sharding_constraint` may take bare `PartitionSpec`s.

  >>> mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('x', 'y'))  # doctest: +SKIP
  >>> mesh.shape                                                         # doctest: +SKIP
  OrderedDict([('x', 2), ('y', 2)])
  """

  def __init__(self, devices, axis_names, axis_types=None):
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    devs = np.array(devices, dtype=object)   # a copy: the mesh freezes its own
    if not axis_names and devs.size == 0:    # JAX's empty mesh, `Mesh((), ())`
      self.devices, self.axis_names, self.axis_types = devs, (), ()
      self._flat_devices, self._hash = (), hash(())
      return
    if devs.ndim != len(axis_names):
      raise ValueError(
          "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
          f"its second argument (`axis_names`), but got devices.ndim == {devs.ndim} and "
          f"len(axis_names) == {len(axis_names)}.")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    for n in axis_names:
      if not isinstance(n, str):
        raise TypeError(f"Mesh axis names must be strings, got {n!r}")
    flat = tuple(devs.flat)
    if len(set(flat)) != len(flat):
      raise ValueError(f"Mesh devices must be distinct, got {list(flat)}")
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(axis_names)
    elif isinstance(axis_types, AxisType):
      axis_types = (axis_types,) * len(axis_names)
    axis_types = tuple(axis_types)
    if len(axis_types) != len(axis_names) or not all(isinstance(t, AxisType)
                                                     for t in axis_types):
      raise ValueError(f"Mesh axis_types must be one AxisType per axis name, got "
                       f"{axis_types}")
    self.devices = devs
    self.devices.setflags(write=False)
    self.axis_names = axis_names
    self.axis_types = axis_types
    self._flat_devices = flat
    self._hash = hash((tuple(d.id for d in flat), devs.shape, axis_names, axis_types))
    if AxisType.Explicit in axis_types:
      # Sharding in types: the rules live above the runtime layer; importing them
      # installs them (core/trace.py's hook and `aval_typer` below).
      from tracejax._src import sharding_explicit
      sharding_explicit.install()

  @property
  def shape(self):
    import collections
    return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

  @property
  def axis_sizes(self):
    return tuple(self.devices.shape) if self.axis_names else ()

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.devices.shape))

  @property
  def size(self):
    return len(self._flat_devices)

  @property
  def empty(self):
    return self.size == 0

  @property
  def device_ids(self):
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self):
    return [d for d in self._flat_devices
            if d.process_index == d.client.process_index()]

  @property
  def local_mesh(self):
    return self

  @property
  def abstract_mesh(self):
    from tracejax._src import sharding_explicit
    return sharding_explicit.type_mesh(self)

  def axis_size(self, name):
    return self.devices.shape[self.axis_names.index(name)]

  def __enter__(self):
    _mesh_stack.stack.append(self)
    return self

  def __exit__(self, *exc):
    _mesh_stack.stack.pop()
    return False

  def __eq__(self, other):
    return (isinstance(other, Mesh) and self._hash == other._hash and
            self.axis_names == other.axis_names and
            self.devices.shape == other.devices.shape and
            self._flat_devices == other._flat_devices and
            self.axis_types == other.axis_types)

  def __hash__(self):
    return self._hash

  def _types_str(self):
    return "(" + ", ".join(t.name for t in self.axis_types) + \
        ("," if len(self.axis_types) == 1 else "") + ")"

  def __repr__(self):
    if not self.axis_names:
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={self._types_str()})")

  def __str__(self):
    if not self.axis_names:
      return "Mesh()"
    sizes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
    return f"Mesh({sizes}, axis_types={self._types_str()})"


def _hlo_from_tiles(tile_dims, ids, replicated_last):
  if all(t == 1 for t in tile_dims) and not replicated_last:
    return xc.HloSharding.replicate()
  dims = list(tile_dims) + ([replicated_last] if replicated_last else [])
  text = ("{devices=[" + ",".join(map(str, dims)) + "]" + ",".join(map(str, ids)) +
          (" last_tile_dim_replicate" if replicated_last else "") + "}")
  return xc.HloSharding.from_string(text)


def _indices_from_hlo(hlo, shape, n):
  """{partition: index} of a value of `shape` under HloSharding `hlo` over n partitions."""
  full = (slice(None),) * len(shape)
  if hlo.is_replicated() or hlo.is_maximal():
    return {p: full for p in range(n)}
  dims = list(hlo.tile_assignment_dimensions())
  ids = np.array(hlo.tile_assignment_devices()).reshape(dims)
  nd = len(shape)
  out = {}
  for pos in np.ndindex(*dims):
    idx = []
    for d in range(nd):
      k = dims[d]
      step = shape[d] // k
      idx.append(slice(None) if k == 1 else slice(pos[d] * step, (pos[d] + 1) * step))
    out[int(ids[pos])] = tuple(idx)
  return out


class _SpmdSharding(_jax.GSPMDSharding):
  """What NamedSharding and GSPMDSharding share: placement over a flat device tuple
  (partition i on device i) and the indices each device holds.

  The C++ base is jaxlib's GSPMDSharding, built over the same devices, only so that
  jaxlib's C++ knows the device count: the cached-call fast path compares it with the
  executable's and hands every argument whose count it cannot read (any pure-Python
  sharding) back to `_shard_arg_fallback`, one Python call per argument per call.
  jaxlib tests sharding types by exact type, so everything else it asks of these
  classes (the HloSharding per rank, equality, hashing) still comes from the Python
  methods below, never from that base's placeholder (replicated) HloSharding.
  """

  def _init_devices(self, devices):
    devices = tuple(devices)
    self._devtuple = devices
    _jax.GSPMDSharding.__init__(self, devices, xc.HloSharding.replicate())

  @property
  def _devices(self):
    return self._devtuple

  @property
  def memory_kind(self):
    return "device"

  @property
  def _memory_kind(self):
    return None

  def devices_indices_map(self, global_shape):
    """{device: index}: which block of an array of `global_shape` each device holds."""
    global_shape = tuple(global_shape)
    self.check_shape(global_shape)
    by_part = _indices_from_hlo(self._to_xla_hlo_sharding(len(global_shape)), global_shape,
                                len(self._devices))
    return {d: by_part[i] for i, d in enumerate(self._devices)}

  def shard_shape(self, global_shape):
    global_shape = tuple(global_shape)
    self.check_shape(global_shape)
    hlo = self._to_xla_hlo_sharding(len(global_shape))
    if hlo.is_replicated():
      return global_shape
    dims = hlo.tile_assignment_dimensions()
    return tuple(s // k for s, k in zip(global_shape, dims))

  def check_shape(self, global_shape, what=None):
    """ValueError when an array of `global_shape` cannot be laid out this way."""
    hlo = self._to_xla_hlo_sharding(len(global_shape))
    if hlo.is_replicated():
      return
    dims = hlo.tile_assignment_dimensions()
    for d, (s, k) in enumerate(zip(global_shape, dims)):
      if s % k:
        raise ValueError(
            f"Sharding {self!r} implies that array axis {d} is partitioned {k} times, but "
            f"the dimension size is {s} (full shape: {tuple(global_shape)}, per-dimension "
            f"tiling factors: {list(dims[:len(global_shape)])} should evenly divide the "
            "shape)")

  def _shard_arg(self, x):
    """Any value (NumPy, scalar, an Array laid out otherwise) placed this way."""
    from tracejax._src.core.avals import get_aval
    aval = x.aval if type(x) is backend.ArrayImpl else get_aval(x)
    return put_sharded(x, aval, self)

  # Immutable, and the C++ base has no pickling of its own: copies are the object
  # itself, and pickling rebuilds it from the constructor's arguments (`_reduce_args`).
  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def __reduce__(self):
    return type(self), self._reduce_args()

  def is_equivalent_to(self, other, ndim):
    return (isinstance(other, Sharding) and
            tuple(other._device_assignment) == self._devices and
            other._to_xla_hlo_sharding(ndim) == self._to_xla_hlo_sharding(ndim))


# What every sharding over a flat device tuple answers: nanobind classes take a single
# base, so these are copied in from PmapSharding's base rather than inherited.
for _name in ("_device_assignment", "device_set", "addressable_devices",
              "is_fully_addressable", "addressable_devices_indices_map", "num_devices"):
  setattr(_SpmdSharding, _name, vars(_DeviceTupleSharding)[_name])
del _name


class NamedSharding(_SpmdSharding):
  """An array laid out over a `Mesh` by a `PartitionSpec`: array axis i is split into
  equal blocks over the mesh axes `spec[i]` names, and replicated over the others.

  Args:
    mesh: the `Mesh`.
    spec: a `PartitionSpec` (None: fully replicated).
    memory_kind: accepted for compatibility (device memory only).

  >>> s = NamedSharding(mesh, P('x', None))       # doctest: +SKIP
  >>> s.shard_shape((4, 6))                       # doctest: +SKIP
  (2, 6)
  """

  def __init__(self, mesh, spec=None, memory_kind=None, **_):
    if not isinstance(mesh, Mesh):
      raise TypeError(f"NamedSharding mesh must be a Mesh, got {type(mesh).__name__}")
    if spec is None:
      spec = PartitionSpec()
    elif not isinstance(spec, PartitionSpec):
      if isinstance(spec, tuple):
        spec = PartitionSpec(*spec)
      else:
        raise TypeError(f"NamedSharding spec must be a PartitionSpec, got {spec!r}")
    seen = set()
    for entry in spec._normalized(len(spec)):
      for name in entry:
        if name not in mesh.axis_names:
          raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: "
                           f"{mesh.axis_names}.")
        if name in seen:
          raise ValueError(
              "A single NamedSharding spec specification can map every mesh axis to at "
              f"most one positional dimension, but {spec!r} has duplicate entries for "
              f"`{name}`")
        seen.add(name)
    self.mesh, self.spec, self._mem = mesh, spec, memory_kind
    self._init_devices(mesh._flat_devices)
    self._hlo_cache = {}
    self._hash = hash((mesh, spec))

  def _to_xla_hlo_sharding(self, num_dimensions):
    h = self._hlo_cache.get(num_dimensions)
    if h is None:
      h = self._hlo_cache[num_dimensions] = self._build_hlo(num_dimensions)
    return h

  def _build_hlo(self, ndim):
    if len(self.spec) > ndim:
      raise ValueError(
          f"Sharding {self!r} is only valid for values of rank at least {len(self.spec)}, "
          f"but was applied to a value of rank {ndim}")
    names = self.mesh.axis_names
    sizes = dict(zip(names, self.mesh.axis_sizes))
    parts = self.spec._normalized(ndim)
    used = [n for entry in parts for n in entry]
    unused = [n for n in names if n not in used]
    order = [names.index(n) for n in used + unused]
    ids = np.arange(self.mesh.size).reshape(self.mesh.axis_sizes).transpose(order).ravel()
    tiles = [_math.prod(sizes[n] for n in entry) for entry in parts]
    rep = _math.prod(sizes[n] for n in unused)
    return _hlo_from_tiles(tiles, ids.tolist(), rep if rep > 1 and used else 0)

  @property
  def is_fully_replicated(self):
    return all(_math.prod(self.mesh.axis_size(n) for n in entry) == 1
               for entry in self.spec._normalized(len(self.spec)))

  @property
  def memory_kind(self):
    return self._mem or "device"

  def check_shape(self, global_shape, what=None):
    if len(self.spec) > len(global_shape):
      raise ValueError(
          f"Sharding {self!r} is only valid for values of rank at least {len(self.spec)}, "
          f"but was applied to a value of rank {len(global_shape)}")
    for d, entry in enumerate(self.spec._normalized(len(global_shape))):
      k = _math.prod(self.mesh.axis_size(n) for n in entry)
      if global_shape[d] % k:
        spec = PartitionSpec(*self.spec[:d + 1])
        raise ValueError(
            f"Sharding spec {tuple(spec)} implies that array axis {d} is partitioned {k} "
            f"times, but does not evenly divide the dimension size {global_shape[d]}. Got "
            f"shape: {tuple(global_shape)} and sharding {self!r}")

  def with_spec(self, spec):
    return NamedSharding(self.mesh, spec)

  def _reduce_args(self):
    return self.mesh, self.spec, self._mem

  def __eq__(self, other):
    return (type(other) is NamedSharding and other._hash == self._hash and
            other.mesh == self.mesh and other.spec == self.spec)

  def __hash__(self):
    return self._hash

  def __repr__(self):
    return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


class GSPMDSharding(_SpmdSharding):
  """A layout given directly as XLA's HloSharding over a device tuple (what a compiled
  program reports when no PartitionSpec over the mesh describes it).

  Args:
    devices: the devices, partition i on `devices[i]`.
    op_sharding: an `HloSharding` (or an `OpSharding` proto).
  """

  def __init__(self, devices, op_sharding, **_):
    if not isinstance(op_sharding, xc.HloSharding):
      op_sharding = xc.HloSharding.from_proto(op_sharding)
    self._hlo = op_sharding
    self._init_devices(devices)
    self._hash = hash((self._devices, op_sharding))

  def _to_xla_hlo_sharding(self, num_dimensions):
    return self._hlo

  def _reduce_args(self):
    return self._devices, self._hlo.to_proto()

  @property
  def is_fully_replicated(self):
    return self._hlo.is_replicated()

  def __eq__(self, other):
    return (type(other) is GSPMDSharding and other._devices == self._devices and
            other._hlo == self._hlo)

  def __hash__(self):
    return self._hash

  def __repr__(self):
    return f"GSPMDSharding({self._hlo!r}, memory_kind=device)"


_named_cache = {}


def named_from_hlo(mesh, hlo, ndim):
  """The NamedSharding over `mesh` whose HloSharding for rank `ndim` is `hlo` (P() when
  replicated, else one entry per axis, as JAX writes them), or a GSPMDSharding when no
  spec matches."""
  key = (mesh, str(hlo), ndim)
  s = _named_cache.get(key)
  if s is not None:
    return s
  if hlo.is_replicated():
    # Over Explicit axes JAX writes one entry per array axis (the type's spec).
    s = NamedSharding(mesh, PartitionSpec(*([None] * ndim)) if AxisType.Explicit in
                      mesh.axis_types else PartitionSpec())
  else:
    s = _search_spec(mesh, hlo, ndim)
  _named_cache[key] = s
  return s


def _search_spec(mesh, hlo, ndim):
  names = mesh.axis_names
  # Each mesh axis goes to one array axis or none (index ndim); within an array axis the
  # names follow every order. Meshes have few axes, so the search is small.
  for choice in _itertools.product(range(ndim + 1), repeat=len(names)):
    groups = [[n for n, c in zip(names, choice) if c == d] for d in range(ndim)]
    for perms in _itertools.product(*[_itertools.permutations(g) for g in groups]):
      # One entry per array axis (JAX's spelling of a propagated sharding: P('x', None)).
      entries = [None if not g else g[0] if len(g) == 1 else tuple(g) for g in perms]
      cand = NamedSharding(mesh, PartitionSpec(*entries))
      if cand._to_xla_hlo_sharding(ndim) == hlo:
        if AxisType.Explicit not in mesh.axis_types:
          # Over Auto axes JAX writes XLA's choice without trailing Nones (P('x',)
          # for a rank-2 result split on its first axis); Explicit types keep them.
          while entries and entries[-1] is None:
            entries.pop()
          cand = NamedSharding(mesh, PartitionSpec(*entries))
        return cand
  return GSPMDSharding(mesh._flat_devices, hlo)


def put_sharded(x, aval, s):
  """Value `x` (NumPy, scalar or Array) as an Array laid out by sharding `s`, one buffer
  per device (in `s`'s device order). An Array already laid out so is returned as is.
  Typed PRNG keys (an extended dtype) give their uint32 data laid out so (what programs
  take for them: the data's extra trailing axis is not split)."""
  if not isinstance(aval.dtype, np.dtype) and hasattr(aval.dtype, "physical_aval"):
    data = aval.dtype.physical_value(x) if hasattr(x, "_base_array") else x
    return put_sharded(data, aval.dtype.physical_aval(aval), s)
  if type(x) is backend.ArrayImpl:
    xs = x._sharding
    if xs == s:
      if aval_typer is not None:   # laid out already: only its type may change (no copy)
        typed = aval_typer(x.aval, s)
        if typed.str_short() != x.aval.str_short():
          return backend.ArrayImpl(typed, s, list(x._arrays), x._committed, True)
      return x
    if type(xs) is not SingleDeviceSharding:   # the same blocks already in place?
      r = relabel(x, aval if aval_typer is None else aval_typer(aval, s), s)
      if r is not None:
        return r
    v = backend.to_numpy(x) if type(xs) is SingleDeviceSharding else assemble_numpy(x)
  else:
    v = np.asarray(x, aval.dtype)
  shape = tuple(aval.shape)
  s.check_shape(shape)
  index = s.devices_indices_map(shape)
  # Only this process's devices get a buffer (all of them in a single process).
  devs = s._device_assignment
  pid = devs[0].client.process_index()
  devs = [d for d in devs if d.process_index == pid]
  parts = [np.ascontiguousarray(v[index[d]]) for d in devs]
  if aval_typer is not None:
    aval = aval_typer(aval, s)
  return backend.put_shards(parts, devs, aval, s)


# Set by sharding_explicit.py: `(aval, sharding) -> aval` typed by the sharding's
# Explicit mesh axes (None until a mesh has one).
aval_typer = None


def is_spmd_sharding(s):
  return isinstance(s, _SpmdSharding)


def spmd_arrays(args):
  """Whether any of `args` is an Array laid out over several devices by a
  NamedSharding/GSPMDSharding or a PmapSharding (a pmap's result): computations on
  them run as SPMD programs over those devices (interpreters/pxla.py), as in JAX."""
  for x in args:
    if type(x) is not backend.ArrayImpl:
      x = getattr(x, "_base_array", None)   # a typed key array: its data's layout
    if type(x) is backend.ArrayImpl and isinstance(x._sharding, (_SpmdSharding,
                                                                 PmapSharding)):
      return True
  return False


def layout_hlo(s, ndim):
  """The HloSharding saying which block of a rank-`ndim` array each device of sharding
  `s` holds, in `s._device_assignment` order. For a PmapSharding that is the leading
  axis split one index per device (its replicated program sees each block whole)."""
  if type(s) is PmapSharding:
    n = len(s._devices)
    h = _pmap_layouts.get((n, ndim))
    if h is None:
      h = _pmap_layouts[(n, ndim)] = xc.HloSharding.replicate() if n == 1 or ndim == 0 \
          else _hlo_from_tiles([n] + [1] * (ndim - 1), list(range(n)), 0)
    return h
  return s._to_xla_hlo_sharding(ndim)


_pmap_layouts = {}   # (device count, rank) -> HloSharding (layout_hlo of a PmapSharding)


def relabel(x, aval, s):
  """Array `x`'s own buffers as an Array of `aval` laid out by sharding `s`, without a
  copy, when `x`'s sharding puts the same blocks on the same devices in the same order
  (a PmapSharding and the NamedSharding that tiles the leading axis over those devices,
  say); None otherwise."""
  xs = x._sharding
  if xs == s:
    return x
  if type(xs) is SingleDeviceSharding or not same_layout(xs, s, len(aval.shape)):
    return None
  return backend.ArrayImpl(aval, s, x._arrays, x._committed, True)


def same_layout(a, b, ndim):
  """Whether shardings `a` and `b` put the same blocks of a rank-`ndim` array on the
  same devices, in the same device order."""
  if a == b:
    return True
  if type(a) is SingleDeviceSharding or type(b) is SingleDeviceSharding:
    return False
  if tuple(a._device_assignment) != tuple(b._device_assignment):
    return False
  try:
    return layout_hlo(a, ndim) == layout_hlo(b, ndim)
  except ValueError:   # a spec longer than the rank
    return False


# ---- meshes from the device list ----

def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
  """An array of shape `mesh_shape` of devices (all local devices by default), in
  device order (CPU devices have no physical topology to follow).

  Args:
    mesh_shape: the shape.
    devices: the devices to arrange (their number must equal the shape's product).
    contiguous_submeshes, allow_split_physical_axes: accepted for compatibility.

  >>> create_device_mesh((2, 2)).shape     # doctest: +SKIP
  (2, 2)
  """
  mesh_shape = tuple(int(s) for s in mesh_shape)
  if devices is None:
    devices = backend.devices()
  devices = list(devices)
  if _math.prod(mesh_shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                     f"mesh_shape {mesh_shape}")
  return np.array(devices, dtype=object).reshape(mesh_shape)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
  """A `Mesh` of the given axis sizes and names over the first devices.

  Args:
    axis_shapes: the size of each mesh axis.
    axis_names: the name of each mesh axis.
    devices: the devices (default: `jax.devices()`).
    axis_types: one `AxisType` per axis (default Auto).

  >>> mesh = make_mesh((2, 2), ('x', 'y'))   # doctest: +SKIP
  """
  if isinstance(axis_names, str):
    axis_names = (axis_names,)
  axis_shapes = tuple(int(s) for s in axis_shapes)
  if len(axis_shapes) != len(axis_names):
    raise ValueError(f"Mesh axis_shapes {axis_shapes} and axis_names {tuple(axis_names)} "
                     "must have the same length")
  devices = list(backend.devices() if devices is None else devices)
  n = _math.prod(axis_shapes)
  if len(devices) < n:
    raise ValueError(f"Number of devices {len(devices)} must be >= the product of "
                     f"mesh_shape {axis_shapes}")
  if axis_types is None:   # JAX 0.10.2's default for make_mesh (Mesh's is Auto)
    axis_types = (AxisType.Explicit,) * len(axis_shapes)
  return Mesh(create_device_mesh(axis_shapes, devices[:n]), tuple(axis_names),
              axis_types=axis_types)


def use_mesh(mesh):
  """`with use_mesh(mesh):` is `with mesh:` (the mesh bare PartitionSpecs refer to).

  >>> with use_mesh(mesh): ...   # doctest: +SKIP
  """
  if not isinstance(mesh, Mesh):
    raise TypeError(f"use_mesh expects a Mesh, got {mesh!r}")
  return mesh


def encode_inspect_callback(fn):
  """The `backend_config` of an `InspectSharding` custom call: jaxlib's custom-call
  partitioner for that target calls `fn(hlo_sharding)` with the layout XLA's partitioner
  chose for the call's operand (`jax.debug.inspect_array_sharding` under `jit`). `fn`
  must stay alive until the program is compiled."""
  return _jax.encode_inspect_sharding_callback(fn)
