"""`jax.scipy.sparse`: iterative solvers of linear systems (`jax.scipy.sparse.linalg`)."""
# flake8: noqa: F401
from tracejax.scipy.sparse import linalg as linalg
