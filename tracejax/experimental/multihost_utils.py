"""`jax.experimental.multihost_utils`: moving data between the processes of a
`jax.distributed` program: `process_allgather`, `broadcast_one_to_all`,
`sync_global_devices`, `assert_equal`. Re-exports from `tracejax/_src/multihost.py`.
"""
# flake8: noqa: F401
from tracejax._src.multihost import (
    assert_equal as assert_equal,
    broadcast_one_to_all as broadcast_one_to_all,
    global_array_to_host_local_array as global_array_to_host_local_array,
    host_local_array_to_global_array as host_local_array_to_global_array,
    process_allgather as process_allgather,
    sync_global_devices as sync_global_devices,
)
