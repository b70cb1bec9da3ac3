"""`jax.scipy.optimize`: `minimize` (BFGS, L-BFGS) and its result type."""
# flake8: noqa: F401
from tracejax._src.scipy.optimize import (
    OptimizeResults as OptimizeResults,
    minimize as minimize,
)
