"""ODE integration with adjoint gradients (`jax.experimental.ode`).

This module only re-exports; the implementation is `tracejax/_src/experimental/ode.py`.
"""
# flake8: noqa: F401
from tracejax._src.experimental.ode import (
    odeint as odeint,
)
