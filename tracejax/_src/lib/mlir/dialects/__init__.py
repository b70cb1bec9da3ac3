"""`jax._src.lib.mlir.dialects`: `hlo` is the StableHLO dialect, as in JAX."""
from tracejax._src.runtime.backend import chlo, func_dialect as func, stablehlo  # noqa: F401

hlo = stablehlo
