"""`jax.extend.mlir`: StableHLO portable artifacts and HLO conversion.

`serialize_portable_artifact(module_text, target)` writes versioned StableHLO
bytecode that later StableHLO versions can read; `deserialize_portable_artifact`
gives the module's MLIR text back; `hlo_to_stablehlo(serialized_hlo_module_proto)`
gives StableHLO text. Re-exports only; see `tracejax/_src/runtime/backend.py`.
"""
# flake8: noqa: F401
from tracejax._src.runtime.backend import (
    deserialize_portable_artifact as deserialize_portable_artifact,
    hlo_to_stablehlo as hlo_to_stablehlo,
    serialize_portable_artifact as serialize_portable_artifact,
)
