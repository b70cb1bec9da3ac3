"""`jax.api`: the 2020 module path of the user API (`from jax import api; api.grad(f)`).

Re-exports only; the same objects as the top-level `tracejax` namespace.
"""
# flake8: noqa: F401
from tracejax._src.api import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    block_until_ready as block_until_ready,
    default_backend as default_backend,
    device_count as device_count,
    device_get as device_get,
    device_put as device_put,
    devices as devices,
    eval_shape as eval_shape,
    grad as grad,
    hessian as hessian,
    host_count as host_count,
    host_id as host_id,
    host_ids as host_ids,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    jit as jit,
    jvp as jvp,
    linearize as linearize,
    local_device_count as local_device_count,
    local_devices as local_devices,
    make_jaxpr as make_jaxpr,
    process_count as process_count,
    process_index as process_index,
    value_and_grad as value_and_grad,
    vjp as vjp,
    vmap as vmap,
)
from tracejax._src.config import disable_jit as disable_jit
from tracejax._src.custom_derivatives import (
    custom_jvp as custom_jvp,
    custom_vjp as custom_vjp,
)
from tracejax._src.pmap import pmap as pmap
from tracejax._src.ad_checkpoint import checkpoint as checkpoint, remat as remat
from tracejax._src.custom_transforms import (
    CustomTransformsFunction as CustomTransformsFunction,
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
from tracejax._src.runtime.array import Array as Array, DeviceArray as DeviceArray
from tracejax._src.experimental.masking import mask as mask, shapecheck as shapecheck
