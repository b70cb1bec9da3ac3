"""`jax.extend.backend`: the PJRT clients (backends) and their caches.

Re-exports only; see `tracejax/_src/extend.py`.
"""
# flake8: noqa: F401
from tracejax._src.extend import (
    backend_xla_version as backend_xla_version,
    backends as backends,
    clear_backends as clear_backends,
    clear_in_memory_compilation_cache as clear_in_memory_compilation_cache,
    get_backend as get_backend,
    get_compile_options as get_compile_options,
    get_default_device as get_default_device,
)
