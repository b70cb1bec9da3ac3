"""tracejax: JAX rebuilt from scratch on jaxlib. `import tracejax as jax`.

The public API under JAX's names (DESIGN.md §1). This module only re-exports;
the implementations live in `tracejax/_src/` (see README.md, "Where things live").

Submodules that pull in heavy dependencies (`random`, `nn`, `scipy`, ...) are
imported on first attribute access (`jax.random.PRNGKey`), so `import tracejax`
stays fast; `from tracejax import random` works either way.
"""
# flake8: noqa: F401
import importlib as _importlib

__version__ = "0.1.0"

# ---- configuration ----
from tracejax import config as config  # the module: `jax.config.update(...)` and
                                       # `from jax.config import config` both work
from tracejax._src.config import (
    debug_nans as debug_nans,
    disable_jit as disable_jit,
    numpy_rank_promotion as numpy_rank_promotion,
    log_compiles as log_compiles,
    explain_cache_misses as explain_cache_misses,
)
from tracejax._src.jit import clear_caches as clear_caches
from tracejax._src.runtime.backend import live_arrays as live_arrays

# ---- arrays, compilation, devices ----
from tracejax._src.api import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    block_until_ready as block_until_ready,
    default_backend as default_backend,
    default_device as default_device,
    device_count as device_count,
    device_get as device_get,
    device_put as device_put,
    devices as devices,
    eval_shape as eval_shape,
    host_count as host_count,
    host_id as host_id,
    host_ids as host_ids,
    local_device_count as local_device_count,
    local_devices as local_devices,
    make_jaxpr as make_jaxpr,
    process_count as process_count,
    process_index as process_index,
)
from tracejax._src.jit import jit as jit
# `jax.Array` is the abstract type that tracers are instances of too (see array.py);
# `DeviceArray` stays the concrete device array type.
from tracejax._src.runtime.array import PublicArray as Array, DeviceArray as DeviceArray

# ---- transformations: differentiation, vectorization, custom rules ----
# Later issues add their transformations here (checkpoint/remat, xla_computation,
# named_call, ...), each re-exported from its `_src` module like the ones below.
from tracejax._src.api import (
    grad as grad,
    hessian as hessian,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    jvp as jvp,
    linearize as linearize,
    value_and_grad as value_and_grad,
    vjp as vjp,
    vmap as vmap,
)
from tracejax._src.custom_derivatives import (
    custom_jvp as custom_jvp,
    custom_vjp as custom_vjp,
)
from tracejax._src.pmap import pmap as pmap
from tracejax._src.ad_checkpoint import (
    checkpoint as checkpoint,
    checkpoint_policies as checkpoint_policies,
    remat as remat,
)
from tracejax._src.custom_transforms import (  # the 2020 custom-derivative API
    custom_gradient as custom_gradient,
    custom_transforms as custom_transforms,
    defjvp as defjvp,
    defjvp_all as defjvp_all,
    defvjp as defvjp,
    defvjp_all as defvjp_all,
    jarrett as jarrett,
)
from tracejax._src.xla_computation import (
    soft_pmap as soft_pmap,
    xla_computation as xla_computation,
)
# Host callbacks (`jax.debug` is a lazy submodule; io_callback is in jax.experimental).
from tracejax._src.callback import (
    effects_barrier as effects_barrier,
    pure_callback as pure_callback,
)
# 2020 experimental shape polymorphism (`jax.mask`, `jax.shapecheck`): imported on
# first use (see _LAZY_ATTRIBUTES), as the masking interpreter is costly to import.
# Today's smaller transformations and contexts.
from tracejax._src.api_extra import (
    checking_leaks as checking_leaks,
    closure_convert as closure_convert,
    ensure_compile_time_eval as ensure_compile_time_eval,
    linear_transpose as linear_transpose,
    named_call as named_call,
    named_scope as named_scope,
)
# ---- end of transformations ----

# ---- pytrees (2020 code calls them as jax.tree_map & co.) ----
from tracejax._src.tree_util import (
    tree_flatten as tree_flatten,
    tree_leaves as tree_leaves,
    tree_map as tree_map,
    tree_multimap as tree_multimap,
    tree_structure as tree_structure,
    tree_transpose as tree_transpose,
    tree_unflatten as tree_unflatten,
    treedef_is_leaf as treedef_is_leaf,
)
# 2020 code called `jax.partial(jax.jit, static_argnums=...)` (0.1.62's namespace
# carried jax.util.partial along).
from tracejax._src.util import partial as partial

# ---- types: the device class and the aval of a value (today's jax.Device, jax.typeof) ----
from tracejax._src.typing import Device as Device, typeof as typeof

# ---- submodules imported eagerly (cheap, and used by nearly every program) ----
from tracejax import dtypes as dtypes
from tracejax import lax as lax
from tracejax import numpy as numpy
from tracejax.numpy import linalg as _linalg  # noqa: F401  (jnp.linalg)
from tracejax import tree_util as tree_util

# ---- submodules imported on first use ----
# `jax.random`, `jax.scipy`, ... as attributes without paying for them at import.
_LAZY_SUBMODULES = frozenset({
    "abstract_arrays", "ad_checkpoint", "api", "api_util", "core", "custom_batching",
    "custom_derivatives", "debug", "distributed",
    "errors", "example_libraries", "experimental", "extend", "image", "interpreters",
    "lib", "linear_util", "nn", "ops", "profiler", "random", "scipy", "sharding",
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
    "make_mesh": "tracejax._src.runtime.sharding",
}


def __getattr__(name):
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
  return sorted(set(globals()) | present | set(_INTERPRETER_ALIASES) | set(_LAZY_ATTRIBUTES))
