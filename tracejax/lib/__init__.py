"""`jax.lib` (2020): `xla_bridge` (backends, devices) and an `xla_client` stand-in.

`xla_client` here is not jaxlib's module, whose Python surface is private (only
`tracejax/_src/runtime/backend.py` touches it): it offers the `ops` namespace that
2022 translation rules call (`xla_client.ops.Add(x, y)`), emulated on StableHLO by
`xla_bridge`.
"""
import types as _types

from tracejax.lib import xla_bridge as xla_bridge

xla_client = _types.SimpleNamespace(ops=xla_bridge.ops)
