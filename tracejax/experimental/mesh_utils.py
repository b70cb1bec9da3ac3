"""`jax.experimental.mesh_utils`: `create_device_mesh(mesh_shape, devices=None)`, an array
of devices to build a `Mesh` from; `create_hybrid_device_mesh` (ICI x DCN meshes over
slices or processes); `device_kind_handler_dict` (per-device-kind layouts). Re-exports
from `tracejax/_src/mesh_utils.py` (over runtime/sharding.py's)."""
# flake8: noqa: F401
from tracejax._src.mesh_utils import (
    create_device_mesh as create_device_mesh,
    create_hybrid_device_mesh as create_hybrid_device_mesh,
    device_kind_handler_dict as device_kind_handler_dict,
)
