"""`jax._src.lib.mlir`: the MLIR Python bindings (`ir`) and `dialects`."""
from tracejax._src.runtime.backend import ir  # noqa: F401
from tracejax._src.lib.mlir import dialects  # noqa: F401
