"""`jax.example_libraries`: the small `optimizers` and `stax` libraries (formerly in
`jax.experimental`). Submodules are imported on first use."""
import importlib as _importlib

_SUBMODULES = frozenset({"optimizers", "stax"})


def __getattr__(name):
  if name in _SUBMODULES:
    module = _importlib.import_module(f"{__name__}.{name}")
    globals()[name] = module
    return module
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | _SUBMODULES)
