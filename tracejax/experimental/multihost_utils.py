"""`jax.experimental.multihost_utils`: moving data between the processes of a
`jax.distributed` program: `process_allgather`, `broadcast_one_to_all`,
`sync_global_devices`, `assert_equal`, `reached_preemption_sync_point`, `live_devices`
(`ProcessFailureError`). Re-exports from `tracejax/_src/multihost.py` and
`tracejax/_src/preemption.py`.
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
from tracejax._src.preemption import (
    ProcessFailureError as ProcessFailureError,
    live_devices as live_devices,
    reached_preemption_sync_point as reached_preemption_sync_point,
)
