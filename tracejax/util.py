"""`jax.util`: small list and function helpers (`safe_map`, `safe_zip`, `unzip2`, ...).

Re-exports only; see `tracejax/_src/util.py`.
"""
# flake8: noqa: F401
from tracejax._src.util import (
    HashableFunction as HashableFunction,
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
