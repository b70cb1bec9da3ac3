"""The core: avals (`avals.py`), jaxprs (`ir.py`), printing (`pp.py`), traces (`trace.py`).

Libraries written for JAX import `jax._src.core` as one module (`core.ShapedArray`,
`core.Primitive`, ...); here it is this package, so its names are looked up in the
submodules on first use (lazily: importing the package stays free).
"""
import importlib as _importlib

_SUBMODULES = ("avals", "trace", "ir", "pp")


def __getattr__(name):
  if name in _SUBMODULES:  # `from tracejax._src.core import avals` before it is imported
    return _importlib.import_module(f"{__name__}.{name}")
  if not name.startswith("_"):
    for sub in _SUBMODULES:
      mod = _importlib.import_module(f"{__name__}.{sub}")
      if name in vars(mod):
        return vars(mod)[name]
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
