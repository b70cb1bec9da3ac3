"""`jax.distributed`: run one program as several processes (possibly on several hosts).

`initialize(coordinator_address, num_processes, process_id)` in every process, before
the backend is used; `shutdown()` at the end (also run at exit). Re-exports from
`tracejax/_src/distributed.py`.
"""
# flake8: noqa: F401
from tracejax._src.distributed import (
    initialize as initialize,
    is_initialized as is_initialized,
    shutdown as shutdown,
)
