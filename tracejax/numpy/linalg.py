"""`jax.numpy.linalg`: linear algebra for device arrays.

This module only re-exports; the implementations live in
`tracejax/_src/numpy/linalg.py`, on the primitives of `tracejax/_src/lax/linalg.py`.
"""
# flake8: noqa: F401
from tracejax._src.numpy.linalg import (
    EigResult, EighResult, QRResult, SVDResult, SlogdetResult,
    cholesky, cond, cross, det, diagonal, eig, eigh, eigvals, eigvalsh, inv, lstsq, matmul,
    matrix_norm, matrix_power, matrix_rank, matrix_transpose, multi_dot, norm, outer, pinv,
    qr, slogdet, solve, svd, svdvals, tensordot, tensorinv, tensorsolve, trace, vecdot,
    vector_norm,
)
