"""`jax.sharding`: how an Array's pieces are laid out over devices.

* `Sharding`: the base of every sharding (jaxlib's);
* `SingleDeviceSharding(device)`: the whole array on one device;
* `PmapSharding(devices)`: the leading axis split over `devices`, one index each (the
  outputs of `pmap`);
* `Mesh(devices, axis_names, axis_types=)`, `PartitionSpec` (alias `P`),
  `NamedSharding(mesh, spec)`: array axes split in blocks over named mesh axes (what
  `device_put`, `jit(in_shardings=, out_shardings=)`, `lax.with_sharding_constraint`
  and `shard_map` take);
* `GSPMDSharding`: a layout XLA chose that no spec over the mesh describes;
* `AxisType`: Auto, Explicit (the sharding is part of the type: `jax.typeof(x)` shows
  `float32[8@x,4]`), Manual; `AbstractMesh`;
* `set_mesh`, `get_mesh`, `get_abstract_mesh`, `reshard`, `auto_axes`, `explicit_axes`,
  `ShardingTypeError`.

`Array.sharding` gives an array's. Re-exports from `tracejax/_src/runtime/sharding.py`
and `tracejax/_src/sharding_explicit.py`.
"""
# flake8: noqa: F401
from tracejax._src.core.avals import AbstractMesh as AbstractMesh
from tracejax._src.runtime.sharding import (
    AxisType as AxisType,
    GSPMDSharding as GSPMDSharding,
    Mesh as Mesh,
    NamedSharding as NamedSharding,
    PartitionSpec as PartitionSpec,
    PmapSharding as PmapSharding,
    Shard as Shard,
    Sharding as Sharding,
    SingleDeviceSharding as SingleDeviceSharding,
    use_mesh as use_mesh,
)
from tracejax._src.sharding_explicit import (
    ShardingTypeError as ShardingTypeError,
    auto_axes as auto_axes,
    explicit_axes as explicit_axes,
    get_abstract_mesh as get_abstract_mesh,
    get_mesh as get_mesh,
    reshard as reshard,
    set_mesh as set_mesh,
)
from tracejax._src.abstract_mesh import (
    AbstractDevice as AbstractDevice,
    ManualAxisType as ManualAxisType,
    make_single_device_sharding as make_single_device_sharding,
    use_abstract_mesh as use_abstract_mesh,
)
P = PartitionSpec
