"""`jax.lax.linalg`: the linear algebra primitives and their wrappers.

Re-exports only. The decompositions live in `tracejax/_src/lax/linalg.py`, the
Householder reductions (hessenberg, tridiagonal, householder_product, ormqr) in
`linalg_householder.py`, tridiagonal_solve, cholesky_update, symmetric_product and
qdwh in `linalg_extra.py`, and the algorithm enums in `linalg_enums.py`; each
module's `__all__` lists the JAX `lax.linalg` names it implements.
"""
from tracejax._src.lax import linalg as _linalg
from tracejax._src.lax import linalg_extra as _linalg_extra
from tracejax._src.lax import linalg_householder as _linalg_householder
from tracejax._src.lax.linalg import *  # noqa: F401,F403
from tracejax._src.lax.linalg_extra import *  # noqa: F401,F403
from tracejax._src.lax.linalg_householder import *  # noqa: F401,F403

__all__ = sorted(set(_linalg.__all__) | set(_linalg_householder.__all__)
                 | set(_linalg_extra.__all__))
