"""`jax.sharding`: how an Array's pieces are laid out over devices.

* `Sharding`: the base of every sharding (jaxlib's);
* `SingleDeviceSharding(device)`: the whole array on one device (every Array made
  without `pmap`);
* `PmapSharding(devices)`: the leading axis split over `devices`, one index each (the
  outputs of `pmap`).

`Array.sharding` gives an array's. Re-exports from `tracejax/_src/runtime/sharding.py`.
"""
# flake8: noqa: F401
from tracejax._src.runtime.sharding import (
    PmapSharding as PmapSharding,
    Shard as Shard,
    Sharding as Sharding,
    SingleDeviceSharding as SingleDeviceSharding,
)
