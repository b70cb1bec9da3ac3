"""Data across processes (`jax.experimental.multihost_utils`) and Arrays assembled from
per-device or per-process pieces (`jax.make_array_from_*`).

The cross-process helpers move bytes with XLA collectives over every process (a
`pmap` with one member per process, so gloo carries the data), never through the
coordination service's key-value store, which is meant for small metadata. Values
travel as raw bytes, so every dtype arrives bit for bit (int64 without x64 too).
"""
import numpy as np

from tracejax._src import distributed
from tracejax._src import dtypes as dtypes_mod
from tracejax._src import tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding as sharding_mod

# ---- the collectives on bytes ----

def _contiguous(v):
  """`v` as a C-contiguous NumPy array of the same shape (np.ascontiguousarray would
  turn a scalar into shape (1,))."""
  return np.require(np.asarray(v), requirements="C")


_gather_fn = None


def _gather_bytes(row):
  """Every process's 1-D uint8 `row` (all the same length), stacked in process order."""
  global _gather_fn
  if _process_count() == 1:
    return row[None]
  if _gather_fn is None:
    from tracejax._src.interpreters import pxla
    from tracejax._src.lax import parallel
    _gather_fn = pxla.pmap(lambda a: parallel.all_gather(a, "processes"),
                           axis_name="processes")
  out = _gather_fn(row[None])    # one member per process: (1, processes, n) here
  return np.asarray(out)[0]


def _process_count():
  devs = backend.devices()
  return len({d.process_index for d in devs})


def _process_index():
  return backend.get_client().process_index()


def _check_same_everywhere(what, desc):
  """A ValueError (in every process) when `desc` (a short string) differs between
  processes: mismatched shapes would otherwise meet in a collective of unequal sizes."""
  raw = np.frombuffer(desc.encode()[:1000].ljust(1000, b"\0"), np.uint8)
  rows = _gather_bytes(raw)
  mine = rows[_process_index()]
  for p, r in enumerate(rows):
    if not np.array_equal(r, mine):
      other = bytes(r).rstrip(b"\0").decode(errors="replace")
      raise ValueError(f"{what}: the processes disagree: process {_process_index()} has "
                       f"{desc}, process {p} has {other}")


def _host_value(x):
  """A host NumPy copy of leaf `x`; a global Array (over several processes) as a whole."""
  if type(x) is backend.ArrayImpl and not x._sharding.is_fully_addressable:
    return _gather_global_array(x)
  v = np.asarray(x)
  if v.dtype == object:
    raise TypeError(f"process_allgather got a value of type {type(x).__name__}, which is "
                    "not an array")
  return v


def _leaf_desc(v):
  return f"{v.dtype.str}{list(v.shape)}"


def process_allgather(in_tree, tiled=False):
  """Every process's value of `in_tree`, gathered in every process (as NumPy arrays).

  Args:
    in_tree: a pytree of arrays (NumPy, scalars, Arrays), with the same structure,
      shapes and dtypes in every process; a global Array spanning several processes
      is gathered whole instead (each process then gets the global value).
    tiled: False: each leaf gets a new leading axis of size `process_count()`; True:
      the processes' values are concatenated along axis 0.

  >>> process_allgather(np.array([jax.process_index()]))   # doctest: +SKIP
  array([[0], [1]])
  """
  leaves, tree = tree_util.tree_flatten(in_tree)
  out = []
  for x in leaves:
    if type(x) is backend.ArrayImpl and not x._sharding.is_fully_addressable:
      out.append(_gather_global_array(x))  # already the same in every process
      continue
    v = _contiguous(_host_value(x))
    if _process_count() > 1:
      _check_same_everywhere("process_allgather", _leaf_desc(v))
    rows = _gather_bytes(v.reshape(-1).view(np.uint8))
    parts = [r.view(v.dtype).reshape(v.shape) for r in rows]
    if tiled:
      out.append(np.concatenate([p.reshape((1,) if p.ndim == 0 else p.shape)
                                 for p in parts]))
    else:
      out.append(np.stack(parts))
  return tree_util.tree_unflatten(tree, out)


def broadcast_one_to_all(in_tree, is_source=None):
  """The value of `in_tree` in the source process, returned in every process.

  Args:
    in_tree: a pytree of arrays with the same structure, shapes and dtypes everywhere.
    is_source: whether this process is the source (default: process 0 is). Exactly
      one process must be (with a single process, its value is returned anyway).

  >>> broadcast_one_to_all(np.arange(3) * (jax.process_index() + 1))   # doctest: +SKIP
  array([0, 1, 2])
  """
  if is_source is None:
    is_source = _process_index() == 0
  leaves, tree = tree_util.tree_flatten(in_tree)
  if _process_count() == 1:   # as JAX: the value itself, whatever `is_source` says
    return tree_util.tree_unflatten(tree, [np.asarray(_host_value(x)) for x in leaves])
  vals = [_contiguous(_host_value(x)) for x in leaves]
  flags = process_allgather(np.array(bool(is_source)))
  sources = [int(p) for p in np.flatnonzero(flags)]
  if len(sources) != 1:
    raise ValueError(f"broadcast_one_to_all: exactly one process must be the source, got "
                     f"processes {sources}")
  out = []
  for v in vals:
    _check_same_everywhere("broadcast_one_to_all", _leaf_desc(v))
    rows = _gather_bytes(v.reshape(-1).view(np.uint8))
    out.append(rows[sources[0]].view(v.dtype).reshape(v.shape).copy())
  return tree_util.tree_unflatten(tree, out)


def sync_global_devices(name):
  """Wait until every process reaches this call with the same `name` (a barrier); a
  RuntimeError after the barrier timeout if some process does not, or passes another
  name. Pending host callbacks of this process finish first.

  >>> sync_global_devices("checkpoint saved")   # doctest: +SKIP
  """
  if not isinstance(name, str):
    raise TypeError(f"sync_global_devices name must be a str, got {name!r}")
  backend.effects_barrier()
  distributed.barrier(f"sync_global_devices:{name}")


def assert_equal(in_tree, fail_message=""):
  """An AssertionError in every process unless `in_tree` is equal in all of them.

  >>> assert_equal(np.arange(3))   # doctest: +SKIP
  """
  gathered = process_allgather(in_tree)
  for x in tree_util.tree_leaves(gathered):
    if not all(np.array_equal(x[0], x[i], equal_nan=x.dtype.kind in "fc")
               for i in range(1, x.shape[0])):
      raise AssertionError(f"{fail_message} Expected equal values in every process; got "
                           f"{x!r}")


# ---- global Arrays ----

def _local_devices_in_order(sharding):
  pid = _process_index()
  return [d for d in sharding._device_assignment if d.process_index == pid]


def _gather_global_array(x):
  """The whole value of an Array spanning several processes, in every process: each
  process contributes its shards (in the sharding's device order), gathered as bytes."""
  s = x._sharding
  shape = tuple(x.shape)
  index = s.devices_indices_map(shape)
  shard_shape = tuple(s.shard_shape(shape))
  dtype = np.dtype(x.dtype)
  mine = [_contiguous(backend.to_numpy(sh.data))
          for sh in sharding_mod.shards(x)]
  _check_same_everywhere("process_allgather", f"{len(mine)}x{_leaf_desc(np.empty(shard_shape, dtype))}")
  row = np.concatenate([m.reshape(-1).view(np.uint8) for m in mine]) if mine else \
      np.zeros((0,), np.uint8)
  rows = _gather_bytes(row)
  out = np.empty(shape, dtype)
  by_process = {}
  for d in s._device_assignment:
    by_process.setdefault(d.process_index, []).append(d)
  for p, devs in by_process.items():
    blocks = rows[p].view(dtype).reshape((len(devs),) + shard_shape)
    for d, b in zip(devs, blocks):
      out[index[d]] = b
  return out


def _check_sharding(fn, sharding):
  if not isinstance(sharding, sharding_mod.Sharding):
    raise TypeError(f"{fn}: sharding must be a Sharding, got {type(sharding).__name__}")


def _check_shape(fn, shape):
  try:
    shape = tuple(int(d) for d in shape)
  except TypeError:
    raise TypeError(f"{fn}: shape must be a tuple of ints, got {shape!r}") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{fn}: shape must be non-negative, got {shape}")
  return shape


def _assemble(shape, dtype, sharding, arrays):
  """One Array of `sharding` from single-device Arrays on its addressable devices."""
  aval = avals_mod.ShapedArray(shape, dtype)
  if type(sharding) is sharding_mod.SingleDeviceSharding:
    a = arrays[0]
    return backend.ArrayImpl(aval, sharding, [a], True, True)
  return backend.ArrayImpl(aval, sharding, list(arrays), True, True)


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """An Array of `shape` laid out by `sharding`, whose piece on each of this process's
  devices is `data_callback(index)`: `index` is a tuple of slices into the global array.

  Args:
    shape: the global shape.
    sharding: how the array is laid out (any Sharding; its devices may span processes).
    data_callback: returns the data (NumPy or array-like) of the block at `index`.
    dtype: the dtype, which must be that of the callback's data (default: that one).

  >>> data = np.arange(8.).reshape(4, 2)                                      # doctest: +SKIP
  >>> make_array_from_callback(data.shape, sharding, lambda idx: data[idx])   # doctest: +SKIP
  """
  fn = "make_array_from_callback"
  shape = _check_shape(fn, shape)
  _check_sharding(fn, sharding)
  if not callable(data_callback):
    raise TypeError(f"{fn}: data_callback must be callable, got {data_callback!r}")
  index = sharding.devices_indices_map(shape)
  want = tuple(sharding.shard_shape(shape))
  devs = _local_devices_in_order(sharding)
  parts, out_dtype = [], None
  for d in devs:
    v = np.asarray(data_callback(index[d]))
    if v.dtype == object:
      raise TypeError(f"{fn}: data_callback returned a {type(v).__name__}, not an array")
    v = v.astype(dtypes_mod.canonicalize_dtype(v.dtype))
    if dtype is not None and dtypes_mod.canonicalize_dtype(np.dtype(dtype)) != v.dtype:
      raise ValueError(f"If `dtype` is provided to `jax.make_array_from_callback`, it must "
                       f"match the dtype of the addressable shards. Got dtype="
                       f"{np.dtype(dtype)} and shard dtype={v.dtype}")
    if tuple(v.shape) != want:
      raise ValueError(f"{fn}: data_callback returned shape {tuple(v.shape)} for index "
                       f"{index[d]} on {d}; the sharding's shard shape is {want}")
    if out_dtype is None:
      out_dtype = v.dtype
    elif v.dtype != out_dtype:
      raise ValueError(f"{fn}: data_callback returned dtypes {out_dtype} and {v.dtype}")
    parts.append(v)
  if out_dtype is None:
    out_dtype = dtypes_mod.canonicalize_dtype(np.dtype(dtype or np.float32))
  arrays = [backend.device_put(_contiguous(p), d) for p, d in zip(parts, devs)]
  return _assemble(shape, out_dtype, sharding, arrays)


def make_array_from_single_device_arrays(shape, sharding, arrays):
  """An Array of `shape` and `sharding` made of `arrays`, one single-device Array per
  device of this process that the sharding uses (in any order), each holding that
  device's block (no copy).

  Args:
    shape: the global shape.
    sharding: the layout; its devices may span processes.
    arrays: the blocks, on this process's devices of `sharding`.

  >>> make_array_from_single_device_arrays((4,), pmap_sharding, [a0, a1, a2, a3])   # doctest: +SKIP
  """
  fn = "make_array_from_single_device_arrays"
  shape = _check_shape(fn, shape)
  _check_sharding(fn, sharding)
  arrays = list(arrays)
  devs = _local_devices_in_order(sharding)
  by_device = {}
  for i, a in enumerate(arrays):
    if type(a) is not backend.ArrayImpl or type(a._sharding) is not \
        sharding_mod.SingleDeviceSharding:
      raise TypeError(f"{fn}: arrays[{i}] must be a single-device Array, got "
                      f"{type(a).__name__}")
    d = a._sharding._device
    if d in by_device:
      raise ValueError(f"{fn}: two arrays are on {d}")
    by_device[d] = a
  if set(by_device) != set(devs):
    raise ValueError(f"{fn}: the arrays are on devices {sorted(d.id for d in by_device)}, "
                     f"but the sharding's devices in this process are "
                     f"{sorted(d.id for d in devs)}")
  want = tuple(sharding.shard_shape(shape))
  dtype = None
  for d in devs:
    a = by_device[d]
    if tuple(a.shape) != want:
      raise ValueError(f"{fn}: the array on {d} has shape {tuple(a.shape)}; the "
                       f"sharding's shard shape for global shape {shape} is {want}")
    if dtype is not None and a.dtype != dtype:
      raise ValueError(f"{fn}: the arrays have different dtypes ({dtype}, {a.dtype})")
    dtype = a.dtype
  if dtype is None:
    raise ValueError(f"{fn}: no arrays given")
  return _assemble(shape, dtype, sharding, [by_device[d] for d in devs])


def _process_box(sharding, shape, devs):
  """The block of the global array (start, stop per axis) this process's devices cover."""
  index = sharding.devices_indices_map(shape)
  starts, stops = [], []
  for ax, n in enumerate(shape):
    sl = [index[d][ax] for d in devs]
    starts.append(min(s.indices(n)[0] for s in sl))
    stops.append(max(s.indices(n)[1] for s in sl))
  return index, starts, stops


def _infer_global_shape(sharding, local_shape, devs):
  """Global shape for per-process data of `local_shape`: an axis the sharding splits
  across processes grows by the number of process-wide blocks along it."""
  ndev = len(sharding._device_assignment)
  trial = tuple(max(1, n) * ndev for n in local_shape)
  if isinstance(sharding, sharding_mod.PmapSharding):
    trial = (ndev,) + trial[1:]
  index = sharding.devices_indices_map(trial)
  out = []
  for ax, n in enumerate(local_shape):
    every = {index[d][ax].indices(trial[ax])[:2] for d in sharding._device_assignment}
    mine = {index[d][ax].indices(trial[ax])[:2] for d in devs}
    out.append(n * (len(every) // max(1, len(mine))))
  return tuple(out)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """A global Array from each process's part of the data: `local_data` is the block of
  the global array that this process's devices (of `sharding`) cover together.

  Args:
    sharding: the layout over the devices of every process.
    local_data: this process's block (NumPy or array-like).
    global_shape: the global shape (default: inferred, assuming each process holds an
      equal block along the axes the sharding splits across processes).

  >>> x = make_array_from_process_local_data(sharding, local_batch)   # doctest: +SKIP
  """
  fn = "make_array_from_process_local_data"
  _check_sharding(fn, sharding)
  v = np.asarray(local_data)
  if v.dtype == object:
    raise TypeError(f"{fn}: local_data must be an array, got {type(local_data).__name__}")
  v = v.astype(dtypes_mod.canonicalize_dtype(v.dtype))
  devs = _local_devices_in_order(sharding)
  if not devs:
    raise ValueError(f"{fn}: the sharding has no device in this process")
  if global_shape is None:
    global_shape = _infer_global_shape(sharding, v.shape, devs)
  global_shape = _check_shape(fn, global_shape)
  if len(global_shape) != v.ndim:
    raise ValueError(f"{fn}: local_data has rank {v.ndim} but global_shape {global_shape} "
                     f"has rank {len(global_shape)}")
  index, starts, stops = _process_box(sharding, global_shape, devs)
  box = tuple(b - a for a, b in zip(starts, stops))
  if tuple(v.shape) != box:
    raise ValueError(f"{fn}: this process's devices hold a block of shape {box} of the "
                     f"global shape {global_shape}, but local_data has shape "
                     f"{tuple(v.shape)}")
  arrays = []
  for d in devs:
    local_idx = tuple(slice(sl.indices(n)[0] - a, sl.indices(n)[1] - a)
                      for sl, n, a in zip(index[d], global_shape, starts))
    arrays.append(backend.device_put(_contiguous(v[local_idx]), d))
  return _assemble(global_shape, v.dtype, sharding, arrays)


# ---- process-local and global views over a mesh (multihost_utils) ----

def _spec_leaves(fn, pspecs, tree):
  specs = tree_util.broadcast_prefix(
      pspecs, tree, is_leaf=lambda p: p is None or isinstance(p, sharding_mod.PartitionSpec))
  for p in specs:
    if p is not None and not isinstance(p, sharding_mod.PartitionSpec):
      raise TypeError(f"{fn}: pspecs must be PartitionSpecs (a pytree prefix of the "
                      f"inputs), got {p!r}")
  return [sharding_mod.PartitionSpec() if p is None else p for p in specs]


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """Each leaf of `local_inputs` (this process's block) as one global Array over
  `global_mesh`, laid out by its PartitionSpec in `pspecs` (a pytree prefix): the
  processes' blocks are put side by side along the axes the spec splits across
  processes (`make_array_from_process_local_data`). With one process the global Array
  holds the same values.

  >>> g = host_local_array_to_global_array(batch, mesh, P('data'))   # doctest: +SKIP
  """
  fn = "host_local_array_to_global_array"
  leaves, tree = tree_util.tree_flatten(local_inputs)
  specs = _spec_leaves(fn, pspecs, tree_util.tree_unflatten(tree, [0] * len(leaves)))
  out = []
  for x, p in zip(leaves, specs):
    s = sharding_mod.NamedSharding(global_mesh, p)
    if type(x) is backend.ArrayImpl and not x._sharding.is_fully_addressable:
      out.append(x)   # already global
      continue
    out.append(make_array_from_process_local_data(s, np.asarray(x)))
  return tree_util.tree_unflatten(tree, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """The inverse of `host_local_array_to_global_array`: each global Array's block that
  this process's devices hold, as an Array over those devices (the local mesh) laid
  out by the same PartitionSpec. With one process, the Array itself (laid out by the
  spec).

  >>> local = global_array_to_host_local_array(g, mesh, P('data'))   # doctest: +SKIP
  """
  from tracejax._src.api import device_put
  fn = "global_array_to_host_local_array"
  leaves, tree = tree_util.tree_flatten(global_inputs)
  specs = _spec_leaves(fn, pspecs, tree_util.tree_unflatten(tree, [0] * len(leaves)))
  local_mesh = _local_mesh(global_mesh)
  out = []
  for x, p in zip(leaves, specs):
    local = sharding_mod.NamedSharding(local_mesh, p)
    if _process_count() == 1 or type(x) is not backend.ArrayImpl:
      out.append(device_put(x, local))
      continue
    devs = _local_devices_in_order(x._sharding)
    shape = tuple(x.shape)
    index, starts, stops = _process_box(x._sharding, shape, devs)
    box = np.empty(tuple(b - a for a, b in zip(starts, stops)), np.dtype(x.dtype))
    for sh in sharding_mod.shards(x):
      idx = tuple(slice(sl.indices(n)[0] - a, sl.indices(n)[1] - a)
                  for sl, n, a in zip(index[sh.device], shape, starts))
      box[idx] = backend.to_numpy(sh.data)
    out.append(device_put(box, local))
  return tree_util.tree_unflatten(tree, out)


def _local_mesh(mesh):
  """The sub-mesh of `mesh` made of this process's devices (a box of the device grid)."""
  pid = _process_index()
  devs = np.asarray(mesh.devices)
  where = np.argwhere(np.vectorize(lambda d: d.process_index == pid, otypes=[bool])(devs))
  if len(where) == devs.size:
    return mesh
  if not len(where):
    raise ValueError("global_array_to_host_local_array: the mesh has no device of this "
                     "process")
  lo, hi = where.min(0), where.max(0) + 1
  box = devs[tuple(slice(a, b) for a, b in zip(lo, hi))]
  if box.size != len(where):
    raise ValueError("global_array_to_host_local_array: this process's devices do not "
                     "form a box of the mesh's device grid")
  return sharding_mod.Mesh(box, mesh.axis_names)
