"""`jax.scipy.integrate`: the trapezoidal rule."""
# flake8: noqa: F401
from tracejax._src.scipy.integrate import trapezoid as trapezoid
