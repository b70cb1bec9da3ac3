"""`jax.lax_linalg`: the 2020 import path of the linear algebra primitives.

2020 code writes `from jax import lax_linalg` (today: `jax.lax.linalg`). The
primitives are the same objects; the wrappers keep the 2020 forms where today's
differ: `lu` returns `(lu, pivots)` (today's also returns the permutation) and `eig`
always returns `(w, vl, vr)`. The decompositions live in `tracejax/_src/lax/linalg.py`.
"""
from tracejax._src.lax.linalg import (  # noqa: F401
    cholesky as cholesky,
    cholesky_p as cholesky_p,
    eig_p as eig_p,
    eigh as eigh,
    eigh_p as eigh_p,
    lu_p as lu_p,
    qr as qr,
    qr_p as qr_p,
    svd as svd,
    svd_p as svd_p,
    symmetrize as symmetrize,
    triangular_solve as triangular_solve,
    triangular_solve_p as triangular_solve_p,
)
from tracejax._src.lax import linalg as _linalg


def lu(x):
  """LU decomposition with partial pivoting, in the 2020 form: `(lu, pivots)`.

  Args:
    x: a matrix (or a batch of them), `[..., m, n]`, float or complex.

  Returns:
    `lu`, holding L below the diagonal (unit diagonal implied) and U on and above it,
    and `pivots`, int32 `[..., min(m, n)]`: row i was swapped with row `pivots[i]`.

  >>> lu, piv = lax_linalg.lu(jnp.array([[1., 2.], [3., 4.]]))
  >>> piv
  DeviceArray([1, 1], dtype=int32)
  """
  lu_, pivots, _ = _linalg.lu(x)
  return lu_, pivots


def eig(x):
  """Eigendecomposition of a general square matrix, in the 2020 form: `(w, vl, vr)`.

  Args:
    x: a square matrix (or a batch of them), float or complex (computed on the CPU).

  Returns:
    The eigenvalues `w` and the left and right eigenvectors `vl`, `vr` (columns,
    normalised), all complex.

  >>> w, vl, vr = lax_linalg.eig(jnp.array([[2., 0.], [0., 3.]]))
  >>> w
  DeviceArray([2.+0.j, 3.+0.j], dtype=complex64)
  """
  w, vl, vr = _linalg.eig(x)
  return w, vl, vr
