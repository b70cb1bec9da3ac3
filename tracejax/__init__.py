"""tracejax: JAX rebuilt from scratch on jaxlib. `import tracejax as jax`.

The public API under JAX's names (DESIGN.md §1). This module only re-exports;
the implementations live in `tracejax/_src/` (see README.md, "Where things live").

`import tracejax` only reads the configuration: the API (tracejax/_api.py) is
imported on the first function or type looked up (`jax.jit`, `jax.Array`, ...), and
submodules (`numpy`, `lax`, `random`, `scipy`, ...) only when they are used
themselves (`jax.numpy.ones`, `jax.random.PRNGKey`), each without the rest of the
API; `from tracejax import random` works either way.
"""
# flake8: noqa: F401
import importlib as _importlib
import sys as _sys

from tracejax.version import __version__, __version_info__  # (tracejax's; JAX API level)

# ---- configuration: the only thing read at `import tracejax` ----
from tracejax import config as config  # the module: `jax.config.update(...)` and
                                       # `from jax.config import config` both work

# ---- the API: imported on first attribute access ----
# `import tracejax` stays cheap (no jaxlib, no NumPy): every public name (`jit`, `grad`,
# `numpy`, `lax`, `Array`, ...) comes from tracejax/_api.py, imported the first time
# any of them is looked up (see `__getattr__` below). New public names go there.
_API_LOADED = False


def _load_api():
  """Imports tracejax/_api.py (the whole API) once; copies its names into this module."""
  global _API_LOADED
  api = _importlib.import_module("tracejax._api")
  if not _API_LOADED and "tracejax._api" in _sys.modules and _api_complete(api):
    globals().update({k: v for k, v in vars(api).items() if not k.startswith("__")})
    _API_LOADED = True
  return api


def _api_complete(api):
  spec = getattr(api, "__spec__", None)  # a module still executing has _initializing set
  return not getattr(spec, "_initializing", False)


# ---- submodules imported on first use ----
# `jax.random`, `jax.scipy`, ... as attributes without paying for them at import.
_LAZY_SUBMODULES = frozenset({
    "abstract_arrays", "ad_checkpoint", "api", "api_util", "core", "custom_batching",
    "custom_derivatives", "debug", "distributed",
    "errors", "example_libraries", "experimental", "extend", "image", "interpreters",
    "lax_linalg", "lib", "linear_util", "nn", "ops", "profiler", "random", "scipy", "sharding",
    "test_util", "util",
    "stages",
    "tree", "typing", "flatten_util",
    "export",
})
# The 2020 documents import the rule tables from the top level: `from jax import ad`.
_INTERPRETER_ALIASES = {
    "ad": "tracejax.interpreters.ad",
    "batching": "tracejax.interpreters.batching",
    "partial_eval": "tracejax.interpreters.partial_eval",
    "xla": "tracejax.interpreters.xla",
    "mlir": "tracejax.interpreters.mlir",
}


# Top-level functions whose modules are imported on first use: name -> module.
_LAZY_ATTRIBUTES = {
    "mask": "tracejax._src.experimental.masking",
    "shapecheck": "tracejax._src.experimental.masking",
    "make_array_from_callback": "tracejax._src.multihost",
    "make_array_from_process_local_data": "tracejax._src.multihost",
    "make_array_from_single_device_arrays": "tracejax._src.multihost",
    "shard_map": "tracejax._src.shard_map",
    "smap": "tracejax._src.smap",
    "NamedSharding": "tracejax._src.runtime.sharding",
    "Shard": "tracejax._src.runtime.sharding",
    "make_mesh": "tracejax._src.runtime.sharding",
    "set_mesh": "tracejax._src.sharding_explicit",
    "reshard": "tracejax._src.sharding_explicit",
    "P": "tracejax.sharding",
    # pmap's SPMD machinery (interpreters/pxla.py, lax/parallel.py) is not needed by jit.
    "pmap": "tracejax._src.pmap",
    "soft_pmap": "tracejax._src.xla_computation",
    "xla_computation": "tracejax._src.xla_computation",
}


# Submodules that the API also imports: `jax.numpy` after `import tracejax as jax`
# imports tracejax.numpy alone (as `import tracejax.numpy` does), not the whole API.
_API_SUBMODULES = frozenset({"numpy", "lax", "tree_util", "dtypes"})


def __getattr__(name):
  if name.startswith("__") and name != "__all__":  # dunder probes (copy, pickle, ...)
    raise AttributeError(f"module 'tracejax' has no attribute {name!r}")
  if name in _API_SUBMODULES or name in _LAZY_SUBMODULES:
    try:
      module = _importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
      if e.name != f"{__name__}.{name}":  # the submodule exists; something it needs is missing
        raise
    else:
      globals()[name] = module  # later lookups are plain attribute reads
      return module
  api = _load_api()
  if name == "__all__":
    return sorted({k for k in vars(api) if not k.startswith("_")} | _API_SUBMODULES
                  | {"pmap", "soft_pmap", "xla_computation"})
  if name in vars(api):
    return vars(api)[name]
  source = _LAZY_ATTRIBUTES.get(name)
  if source is not None:
    value = getattr(_importlib.import_module(source), name)
    globals()[name] = value
    return value
  target = _INTERPRETER_ALIASES.get(name)
  if target is None and name in _LAZY_SUBMODULES:
    target = f"{__name__}.{name}"
  if target is not None:
    try:
      module = _importlib.import_module(target)
    except ModuleNotFoundError as e:
      if e.name != target:  # the submodule exists but something it imports is missing
        raise
    else:
      globals()[name] = module  # later lookups are plain attribute reads
      return module
  raise AttributeError(f"module 'tracejax' has no attribute {name!r}")


def __dir__():
  import importlib.util
  present = {n for n in _LAZY_SUBMODULES if importlib.util.find_spec(f"{__name__}.{n}")}
  return sorted(set(globals()) | set(vars(_load_api())) | present | set(_INTERPRETER_ALIASES)
                | set(_LAZY_ATTRIBUTES) | _API_SUBMODULES)
