"""`jax.experimental.mesh_utils`: `create_device_mesh(mesh_shape, devices=None)`, an array
of devices to build a `Mesh` from. Re-exports from `tracejax/_src/runtime/sharding.py`."""
# flake8: noqa: F401
from tracejax._src.runtime.sharding import create_device_mesh as create_device_mesh
