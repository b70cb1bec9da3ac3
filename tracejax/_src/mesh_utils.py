"""`jax.experimental.mesh_utils` beyond `create_device_mesh` of runtime/sharding.py:
`device_kind_handler_dict` (per device kind, a function that lays a mesh out; tried
first by `create_device_mesh`, as in JAX) and `create_hybrid_device_mesh` (a mesh over
granules, slices or processes, for two-level ICI/DCN parallelism).

JAX registers handlers for its TPU kinds; tracejax runs on CPU and GPU only, so the dict
starts empty and holds what users register.
"""
import collections
import math

import numpy as np

from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding as sharding_mod

# device_kind -> handler(mesh_shape, devices, contiguous_submeshes=...) -> array or None
device_kind_handler_dict = {}


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                       allow_split_physical_axes=False):
  """An array of shape `mesh_shape` of devices (all devices by default). A handler
  registered in `device_kind_handler_dict` for the last device's kind is asked first
  (None from it: the default layout, device order).

  Args:
    mesh_shape: the shape (its product is the number of devices).
    devices: the devices to arrange.
    contiguous_submeshes: passed to a handler.
    allow_split_physical_axes: accepted for compatibility (no physical topology here).
  """
  if devices is None:
    devices = backend.devices()
  devices = list(devices)
  try:
    shape = tuple(int(s) for s in mesh_shape)
  except TypeError:
    raise ValueError("`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                     f"ints. Got {mesh_shape}") from None
  if math.prod(shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                     f"mesh_shape {shape}")
  handler = device_kind_handler_dict.get(devices[-1].device_kind) if devices else None
  if handler is not None:
    out = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
    if out is not None:
      return out
  return sharding_mod.create_device_mesh(shape, devices)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule=False, should_sort_granules_by_key=True,
                              allow_split_physical_axes=False):
  """A device mesh for two-level (ICI within a granule, DCN across granules) parallelism:
  shape `mesh_shape * dcn_mesh_shape` (axis by axis), each granule's devices laid out
  by `create_device_mesh(mesh_shape)` and the granules tiled by `dcn_mesh_shape`.

  Args:
    mesh_shape: the mesh within one granule.
    dcn_mesh_shape: how the granules are arranged (its product: their number).
    devices: the devices (default: all).
    process_is_granule: granules are processes (`process_index`) rather than slices
      (`slice_index`, which CPU devices lack: JAX's error then).
    should_sort_granules_by_key: order the granules by their index.
    allow_split_physical_axes: passed on to `create_device_mesh`.
  """
  if devices is None:
    devices = backend.devices()
  attr = "process_index" if process_is_granule else "slice_index"
  if not hasattr(devices[0], attr):
    raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                     "`process_is_granule` option.")
  by_key = collections.defaultdict(list)
  for d in devices:
    by_key[getattr(d, attr)].append(d)
  granules = ([by_key[k] for k in sorted(by_key)] if should_sort_granules_by_key
              else list(by_key.values()))
  if np.prod(dcn_mesh_shape) != len(granules):
    raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                     f"dcn_mesh_shape {dcn_mesh_shape}")
  meshes = [create_device_mesh(mesh_shape, g,
                               allow_split_physical_axes=allow_split_physical_axes)
            for g in granules]
  order = np.arange(len(granules)).reshape(tuple(dcn_mesh_shape))
  blocks = np.empty(order.shape, dtype=object)
  for idx in np.ndindex(order.shape):
    blocks[idx] = meshes[order[idx]]
  return np.block(blocks.tolist())
