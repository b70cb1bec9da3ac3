"""`jax.api_util`: pytree plumbing for WrappedFuns (the 2020 internals API).

Re-exports only; see `tracejax/_src/api_util.py`.
"""
# flake8: noqa: F401
from tracejax._src.api_util import (
    apply_flat_fun as apply_flat_fun,
    apply_flat_fun_nokwargs as apply_flat_fun_nokwargs,
    argnums_partial as argnums_partial,
    flatten_fun as flatten_fun,
    flatten_fun_nokwargs as flatten_fun_nokwargs,
    flatten_fun_nokwargs2 as flatten_fun_nokwargs2,
)
from tracejax._src.util import wraps as wraps
