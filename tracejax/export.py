"""`jax.export`: serialize a jitted function as a StableHLO artifact that a later
process can load and run.

This module only re-exports; the implementation is `tracejax/_src/export.py`.
"""
# flake8: noqa: F401
from tracejax._src.export import (
    DisabledSafetyCheck as DisabledSafetyCheck,
    Exported as Exported,
    call_exported as call_exported,
    default_export_platform as default_export_platform,
    deserialize as deserialize,
    export as export,
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version,
    register_namedtuple_serialization as register_namedtuple_serialization,
    register_pytree_node_serialization as register_pytree_node_serialization,
    serialize as serialize,
)
