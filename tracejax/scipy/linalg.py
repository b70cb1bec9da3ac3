"""`jax.scipy.linalg`."""
# flake8: noqa: F401
from tracejax._src.scipy.linalg import (
    block_diag as block_diag,
    cho_factor as cho_factor,
    cho_solve as cho_solve,
    cholesky as cholesky,
    det as det,
    eigh as eigh,
    expm as expm,
    expm_frechet as expm_frechet,
    inv as inv,
    lu as lu,
    lu_factor as lu_factor,
    lu_solve as lu_solve,
    qr as qr,
    solve as solve,
    solve_triangular as solve_triangular,
    svd as svd,
    tril as tril,
    triu as triu,
)
from tracejax._src.scipy.linalg_extra import (
    eigh_tridiagonal as eigh_tridiagonal,
    hessenberg as hessenberg,
    hilbert as hilbert,
    polar as polar,
    schur as schur,
    sqrtm as sqrtm,
    toeplitz as toeplitz,
)
