"""`jax.experimental.checkify`: functional error checks under jit, vmap and grad.

Re-exports `tracejax/_src/checkify.py`.
"""
# flake8: noqa: F401
from tracejax._src.checkify import (
    BatchedError,
    DivisionByZeroError,
    Error,
    ErrorCategory,
    FailedCheckError,
    JaxException,
    JaxRuntimeError,
    NaNError,
    OOBError,
    all_checks,
    automatic_checks,
    check,
    check_error,
    checkify,
    debug_check,
    div_checks,
    float_checks,
    index_checks,
    init_error,
    nan_checks,
    user_checks,
)
