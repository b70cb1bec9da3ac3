"""`jax.experimental.shard_map`: `shard_map(f, mesh, in_specs, out_specs, check_rep=True)`
(also `jax.shard_map`). Re-exports from `tracejax/_src/shard_map.py`."""
# flake8: noqa: F401
from tracejax._src.shard_map import shard_map as shard_map
