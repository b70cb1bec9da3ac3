"""`jax.linear_util`: WrappedFun and generator transformations (the 2020 internals API).

Re-exports only; see `tracejax/_src/linear_util.py`.
"""
# flake8: noqa: F401
from tracejax._src.linear_util import (
    Store as Store,
    StoreException as StoreException,
    WrappedFun as WrappedFun,
    cache as cache,
    fun_name as fun_name,
    hashable_partial as hashable_partial,
    merge_linear_aux as merge_linear_aux,
    transformation as transformation,
    transformation_with_aux as transformation_with_aux,
    wrap_init as wrap_init,
)
