"""`jax.lax.linalg`: the linear algebra primitives and their wrappers.

Re-exports only; everything lives in `tracejax/_src/lax/linalg.py`, whose
`__all__` is the list of JAX's `lax.linalg` names that tracejax implements.
"""
from tracejax._src.lax import linalg as _linalg
from tracejax._src.lax.linalg import *  # noqa: F401,F403

__all__ = list(_linalg.__all__)
