"""`jax.extend.core`: the pieces of the core a library needs to define primitives and
read or build jaxprs.

Re-exports only; see `tracejax/_src/core/` and `tracejax/_src/extend.py`.
"""
# flake8: noqa: F401
from tracejax.extend.core import primitives as primitives
from tracejax._src.core.ir import (
    ClosedJaxpr as ClosedJaxpr,
    DropVar as DropVar,
    Jaxpr as Jaxpr,
    JaxprEqn as JaxprEqn,
    JaxprTypeError as JaxprTypeError,
    Literal as Literal,
    Var as Var,
    check_jaxpr as check_jaxpr,
    jaxpr_as_fun as jaxpr_as_fun,
    subjaxprs as subjaxprs,
)
from tracejax._src.core.trace import (
    Primitive as Primitive,
    concrete_or_error as concrete_or_error,
    set_current_trace as set_current_trace,
)
from tracejax._src.extend import (
    DebugInfo as DebugInfo,
    Effect as Effect,
    Effects as Effects,
    InconclusiveDimensionOperation as InconclusiveDimensionOperation,
    TraceTag as TraceTag,
    array_types as array_types,
    find_top_trace as find_top_trace,
    gensym as gensym,
    get_opaque_trace_state as get_opaque_trace_state,
    jaxprs_in_params as jaxprs_in_params,
    mapped_aval as mapped_aval,
    new_jaxpr_eqn as new_jaxpr_eqn,
    no_effects as no_effects,
    nonempty_axis_env_DO_NOT_USE as nonempty_axis_env_DO_NOT_USE,
    primal_dtype_to_tangent_dtype as primal_dtype_to_tangent_dtype,
    take_current_trace as take_current_trace,
    unmapped_aval as unmapped_aval,
    unsafe_am_i_under_a_jit_DO_NOT_USE as unsafe_am_i_under_a_jit_DO_NOT_USE,
    unsafe_am_i_under_a_vmap_DO_NOT_USE as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names_DO_NOT_USE as unsafe_get_axis_names_DO_NOT_USE,
    valid_jaxtype as valid_jaxtype,
)
