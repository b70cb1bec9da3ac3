"""`jax._src.lib`: the compiler library as the 2022-2024 documents import it.

The primitives notebook writes its lowering rules against
`from jax._src.lib.mlir.dialects import hlo`; these modules re-export the MLIR
bindings tracejax's own lowering uses (all from `runtime/backend.py`, the only
importer of jaxlib).
"""
from tracejax._src.lib import mlir  # noqa: F401
from tracejax.lib import xla_bridge as xla_client  # noqa: F401
