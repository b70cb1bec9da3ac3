"""The public API of `tracejax`, imported on first use (see tracejax/__init__.py).

`import tracejax` itself only reads the configuration, so that it is cheap; the
first attribute looked up on it (`jax.jit`, `jax.numpy`, `jax.Array`, ...) imports
this module, which imports everything below (the whole API, as `import tracejax`
used to), and the package copies these names into its own namespace.

Add public top-level names here (re-exported from their `_src` module, as below),
or, for modules that are costly and rarely used, to `_LAZY_ATTRIBUTES` in
tracejax/__init__.py.
"""
# flake8: noqa: F401
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
    process_indices as process_indices,
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
# `pmap`, `soft_pmap` and `xla_computation` are imported on first use (their SPMD
# machinery is a tenth of tracejax's code): see _LAZY_ATTRIBUTES in tracejax/__init__.py.
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

# ---- submodules imported with the API (used by nearly every program; `tracejax.numpy`
# also installs the operators and methods of Array). `jax.lax` (every primitive family,
# control flow, linalg, convolutions: a third of tracejax's code) is imported on its
# first use, by tracejax/__init__.py (_API_SUBMODULES), like the other submodules. ----
from tracejax import dtypes as dtypes
from tracejax import numpy as numpy
from tracejax import tree_util as tree_util

