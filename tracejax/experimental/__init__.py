"""`jax.experimental`: the 2020 libraries `loops`, `optimizers`, `optix` and `stax`.

`optimizers` and `stax` are the same modules as `jax.example_libraries.optimizers`
and `jax.example_libraries.stax` (their 2021+ home). Submodules are imported on
first use, like the top-level `tracejax` package does.
"""
import importlib as _importlib

_SUBMODULES = frozenset({"checkify", "jaxpr_graph", "jet", "loops", "ode", "optimizers", "optix",
                         "stax", "multihost_utils", "shard_map", "mesh_utils"})


def __getattr__(name):
  if name == "io_callback":  # a function, as in JAX: `from jax.experimental import io_callback`
    from tracejax._src.callback import io_callback
    globals()[name] = io_callback
    return io_callback
  if name in _SUBMODULES:
    module = _importlib.import_module(f"{__name__}.{name}")
    globals()[name] = module
    return module
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | _SUBMODULES | {"io_callback"})
