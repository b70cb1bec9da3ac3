"""`jax.experimental.shard_map`: `shard_map(f, mesh, in_specs, out_specs, check_rep=True)`,
deprecated as in JAX 0.10.2 (reading it warns; use `jax.shard_map`). Re-exports from
`tracejax/_src/shard_map.py`, which is also this module's `jshmap`, as JAX's."""
# flake8: noqa: F401
import warnings as _warnings

from tracejax._src import shard_map as jshmap
from tracejax._src import traceback_util as traceback_util

_DEPRECATED = {
    # (JAX 0.10.2's message, verbatim)
    "shard_map": "jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map "
                 "instead.",
}


def __getattr__(name):
  if name in _DEPRECATED:
    _warnings.warn(_DEPRECATED[name], DeprecationWarning, stacklevel=2)
    return getattr(jshmap, name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
