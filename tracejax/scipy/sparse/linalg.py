"""`jax.scipy.sparse.linalg`: matrix-free Krylov solvers."""
# flake8: noqa: F401
from tracejax._src.scipy.sparse_linalg import (
    bicgstab as bicgstab,
    cg as cg,
    gmres as gmres,
)
