"""`jax.test_util`: derivative checks against finite differences."""
# flake8: noqa: F401
from tracejax._src.test_util import (
    check_grads as check_grads,
    check_jvp as check_jvp,
    check_vjp as check_vjp,
    numerical_jvp as numerical_jvp,
)
