"""`jax.util`: small list and function helpers (`safe_map`, `safe_zip`, `unzip2`, ...).

Re-exports only; see `tracejax/_src/util.py`.
"""
# flake8: noqa: F401
from tracejax._src.util import (
    Hashable as Hashable,
    HashableFunction as HashableFunction,
    WrapHashably as WrapHashably,
    cache as cache,
    check_toposort as check_toposort,
    concatenate as concatenate,
    curry as curry,
    extend_name_stack as extend_name_stack,
    fun_name as fun_name,
    get_module_functions as get_module_functions,
    memoize as memoize,
    partial as partial,
    split_dict as split_dict,
    split_merge as split_merge,
    subvals as subvals,
    toposort as toposort,
    wrap_name as wrap_name,
    canonicalize_axis as canonicalize_axis,
    merge_lists as merge_lists,
    partition_list as partition_list,
    prod as prod,
    safe_map as safe_map,
    safe_zip as safe_zip,
    split_list as split_list,
    unsafe_map as unsafe_map,
    unsafe_zip as unsafe_zip,
    unzip2 as unzip2,
    unzip3 as unzip3,
    wraps as wraps,
)
