"""`jax.numpy.linalg`: NumPy's linear algebra on the decompositions of `lax/linalg.py`.

Arguments are converted as NumPy does (integers and bools become the default
float dtype) and every function batches over leading dimensions. Nothing here
raises on a singular or non-positive-definite matrix: as in JAX, the result
holds NaNs or infs instead, since a compiled program cannot raise.

`solve` (and `inv`, built on it) differentiates through the linear system
A x = b with `custom_linear_solve`, reusing the LU factorization of A, rather
than through the factorization itself; `pinv` has the Golub-Pereyra JVP. The
other functions are differentiable through the primitives' rules.
"""
import functools
import itertools
import operator
from typing import NamedTuple

import numpy as np

from tracejax._src import dtypes
from tracejax._src.control_flow.solves import custom_linear_solve
from tracejax._src.custom_derivatives import custom_jvp
from tracejax._src.jit import inline_jit
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import linalg as lax_linalg
from tracejax._src.lax import misc as lax_misc
from tracejax._src.numpy import creation, einsum as einsum_mod, products, reductions
from tracejax._src.numpy import shape_ops, ufuncs, util

__all__ = [
    "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult",
    "cholesky", "cond", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
    "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
    "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class QRResult(NamedTuple):
  Q: object
  R: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


# ---- helpers ----

def _inexact(fun_name, *args):
  """The arguments as device arrays of one inexact dtype (NumPy's promotion)."""
  util.check_arraylike_or_list(fun_name, *args)
  return [util.to_array(x) for x in util.promote_dtypes_inexact(*args)]


def _check_matrix(fun_name, a, square=False):
  shape = util.shape(a)
  if len(shape) < 2:
    raise ValueError(f"{fun_name}: {len(shape)}-dimensional array given. Array must be at "
                     "least two-dimensional.")
  if square and shape[-1] != shape[-2]:
    raise ValueError(f"{fun_name}: last 2 dimensions of the array must be square, got "
                     f"shape {shape}.")


def _is_complex(x):
  return dtypes.issubdtype(util.dtype_of(x), np.complexfloating)


def _conj(x):
  # real/imag rather than jnp.conj: lax.conj's abstract eval mistypes complex128.
  if not _is_complex(x):
    return x
  return lax_ew.complex(lax_ew.real(x), lax_ew.neg(lax_ew.imag(x)))


def _T(x):
  return shape_ops.swapaxes(x, -1, -2)


def _H(x):
  return _conj(_T(x))


def _abs2(x):
  """|x|^2 as a real array (no conjugate, so no complex128 typing trouble)."""
  if _is_complex(x):
    re, im = lax_ew.real(x), lax_ew.imag(x)
    return ufuncs.add(ufuncs.multiply(re, re), ufuncs.multiply(im, im))
  return ufuncs.multiply(x, x)


def _eye_like(a):
  """The identity broadcast to `a`'s shape (square trailing dims) and dtype."""
  shape = util.shape(a)
  return util.broadcast_to(creation.eye(shape[-1], dtype=util.dtype_of(a)), shape)


def _real_dtype(x):
  return dtypes.to_real_dtype(util.dtype_of(x))


# ---- decompositions ----

def cholesky(a, *, upper=False, symmetrize_input=True):
  """Cholesky decomposition of Hermitian positive-definite matrices `a` [..., n, n].

  Returns L (lower triangular, a = L L^H), or L^H if `upper`. NaNs where `a`
  is not positive definite (NumPy raises instead).
  """
  a, = _inexact("jnp.linalg.cholesky", a)
  _check_matrix("jnp.linalg.cholesky", a, square=True)
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
  """Singular value decomposition a = U diag(S) Vh of `a` [..., m, n].

  Returns `SVDResult(U, S, Vh)`, or only `S` (descending) if not `compute_uv`.
  """
  a, = _inexact("jnp.linalg.svd", a)
  _check_matrix("jnp.linalg.svd", a)
  # `hermitian` only allows NumPy a faster algorithm; the general SVD is the same
  # decomposition, so it is accepted and ignored.
  del hermitian
  if not compute_uv:
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False)
  u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True)
  return SVDResult(u, s, vh)


def svdvals(x):
  """The singular values of `x` [..., m, n], in descending order."""
  return svd(x, compute_uv=False)


def qr(a, mode="reduced"):
  """QR decomposition of `a` [..., m, n].

  `mode` 'reduced' gives Q [..., m, k], R [..., k, n] (k = min(m, n)),
  'complete' Q [..., m, m], R [..., m, n], and 'r' only R. Returns
  `QRResult(Q, R)` (or R).
  """
  a, = _inexact("jnp.linalg.qr", a)
  _check_matrix("jnp.linalg.qr", a)
  if mode == "raw":
    raise NotImplementedError("The 'raw' mode of jnp.linalg.qr is not supported.")
  if mode not in ("reduced", "complete", "r"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'; use 'reduced', "
                     "'complete' or 'r'.")
  q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
  return r if mode == "r" else QRResult(q, r)


def eigh(a, UPLO=None, symmetrize_input=True):
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices `a` [..., n, n].

  Returns `EighResult(eigenvalues, eigenvectors)`. `UPLO` ('L', the default, or
  'U') picks the triangle read when `symmetrize_input` is False.
  """
  a, = _inexact("jnp.linalg.eigh", a)
  _check_matrix("jnp.linalg.eigh", a, square=True)
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}.")
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


def eigvalsh(a, UPLO="L"):
  """The eigenvalues (ascending) of Hermitian matrices `a` [..., n, n]."""
  w, _ = eigh(a, UPLO)
  return w


def eig(a):
  """Eigenvalues and right eigenvectors of general square matrices (CPU only).

  Returns `EigResult(eigenvalues, eigenvectors)`, complex, unsorted, with unit-norm
  eigenvector columns. Not differentiable (use `eigvals` for derivatives of the
  eigenvalues).
  """
  a, = _inexact("jnp.linalg.eig", a)
  _check_matrix("jnp.linalg.eig", a, square=True)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a):
  """The (complex) eigenvalues of general square matrices `a` [..., n, n] (CPU only)."""
  a, = _inexact("jnp.linalg.eigvals", a)
  _check_matrix("jnp.linalg.eigvals", a, square=True)
  return lax_linalg.eig(a, compute_left_eigenvectors=False,
                        compute_right_eigenvectors=False)[0]


# ---- determinants ----

def _lu_parts(fun_name, a):
  a, = _inexact(fun_name, a)
  _check_matrix(fun_name, a, square=True)
  lu, pivots, _ = lax_linalg.lu(a)
  diag = products.diagonal(lu, axis1=-2, axis2=-1)
  n = util.shape(a)[-1]
  # Each pivot that is not the identity swap flips the sign.
  no_swap = util.broadcast_to(creation.arange(n, dtype=np.int32), util.shape(pivots))
  parity = reductions.count_nonzero(ufuncs.not_equal(pivots, no_swap), axis=-1)
  return a, diag, parity


def det(a):
  """The determinant of square matrices `a` [..., n, n] (via LU).

  Differentiable everywhere: the derivative is tr(adj(a) da), with the
  adjugate computed so that it stays finite at singular matrices (exact for a
  rank n-1 matrix whose LU factor U has one zero pivot, zero when U has more).
  """
  a, = _inexact("jnp.linalg.det", a)
  _check_matrix("jnp.linalg.det", a, square=True)
  if util.shape(a)[-1] in (2, 3):
    return _det_small(a)  # (half precision too: JAX's products, no LU needed)
  half = _half_precision_small(a, 3)
  if half is not None:
    return util.convert(_det(util.convert(a, np.float32)), half)
  return _det(a)


@inline_jit   # compiled eagerly as JAX's jitted det: XLA's rounding of the products
def _det_small(a):
  """det of 2x2 and 3x3 matrices by the explicit products, in JAX's order (so its
  rounding, weak types and derivatives, which are the adjugate's, are JAX's too)."""
  e = lambda i, j: a[..., i, j]
  if util.shape(a)[-1] == 2:
    return e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
  return (e(0, 0) * e(1, 1) * e(2, 2) + e(0, 1) * e(1, 2) * e(2, 0) +
          e(0, 2) * e(1, 0) * e(2, 1) - e(0, 2) * e(1, 1) * e(2, 0) -
          e(0, 0) * e(1, 2) * e(2, 1) - e(0, 1) * e(1, 0) * e(2, 2))


def _half_precision_small(a, max_n):
  """The dtype of a float16/bfloat16 `a` whose matrices are at most max_n square.

  LAPACK has no half-precision LU, but JAX 0.10.2 evaluates det of such matrices
  up to 3x3 without one; we compute those in float32 and
  round back. Larger ones keep lu's TypeError (JAX: NotImplementedError).
  """
  dt = util.dtype_of(a)
  if dt in (np.dtype(np.float16), np.dtype(dtypes.bfloat16)) and \
      1 <= util.shape(a)[-1] <= max_n:
    return dt
  return None


def _det_from_lu(lu, pivots):
  diag = products.diagonal(lu, axis1=-2, axis2=-1)
  n = util.shape(lu)[-1]
  # Each pivot that is not the identity swap flips the sign.
  no_swap = util.broadcast_to(creation.arange(n, dtype=np.int32), util.shape(pivots))
  parity = reductions.count_nonzero(ufuncs.not_equal(pivots, no_swap), axis=-1)
  sign = ufuncs.where(ufuncs.equal(ufuncs.remainder(parity, 2), 1), -1, 1)
  return sign.astype(util.dtype_of(lu)), diag


@custom_jvp
def _det(a):
  lu, pivots, _ = lax_linalg.lu(a)
  sign, diag = _det_from_lu(lu, pivots)
  return ufuncs.multiply(sign, reductions.prod(diag, axis=-1))


@_det.defjvp
def _det_jvp(primals, tangents):
  # d det(A) = tr(adj(A) dA). With P A = L U: adj(A) = sign(P) adj(U) L^-1 P, and
  # tr(adj(U) B) for B = L^-1 P dA is
  #  * det(U) tr(U^-1 B) when U has no zero pivot;
  #  * c y^T B x when it has exactly one, at k: adj(U) = c x y^T, with c the product
  #    of the other pivots, U x = 0 and y^T U = 0 normalized by x_k = y_k = 1. With
  #    U' = U + e_k e_k^T (the zero pivot made 1), x = U'^-1 e_k and y = U'^-T e_k;
  #  * 0 with more (the rank is then n-2 or less, unless U is structured).
  # Every solve is with U', whose pivots are nonzero, so no inf or NaN appears in
  # either mode, and the tangent is linear in dA (reverse mode transposes it).
  a, = primals
  da, = tangents
  lu, pivots, perm = lax_linalg.lu(a)
  sign, diag = _det_from_lu(lu, pivots)
  dt = util.dtype_of(a)
  zero = ufuncs.equal(diag, 0)
  n_zero = reductions.sum(zero.astype(np.int32), axis=-1)
  safe_diag = ufuncs.where(zero, creation.ones((), dt), diag)
  u_safe = ufuncs.add(lu, ufuncs.multiply(shape_ops.expand_dims(zero.astype(dt), -1),
                                          _eye_like(lu)))
  det_a = ufuncs.multiply(sign, reductions.prod(diag, axis=-1))
  b = lax_linalg.triangular_solve(lu, lax_linalg._permute_rows(da, perm), left_side=True,
                                  lower=True, unit_diagonal=True)
  x = lax_linalg.triangular_solve(u_safe, b, left_side=True, lower=False)
  t_regular = ufuncs.multiply(reductions.prod(diag, axis=-1),
                              products.trace(x, axis1=-2, axis2=-1))
  e_k = shape_ops.expand_dims(zero.astype(dt), -1)
  xk = lax_linalg.triangular_solve(u_safe, e_k, left_side=True, lower=False)
  yk = lax_linalg.triangular_solve(u_safe, e_k, left_side=True, lower=False,
                                   transpose_a=True)
  y_b_x = products.matmul(shape_ops.swapaxes(yk, -1, -2), products.matmul(b, xk))[..., 0, 0]
  t_single = ufuncs.multiply(reductions.prod(safe_diag, axis=-1), y_b_x)
  t = ufuncs.add(ufuncs.multiply(t_regular, ufuncs.equal(n_zero, 0).astype(dt)),
                 ufuncs.multiply(t_single, ufuncs.equal(n_zero, 1).astype(dt)))
  return det_a, ufuncs.multiply(sign, t)


def slogdet(a, *, method=None):
  """Sign and natural log of the absolute value of the determinant (via LU).

  Returns `SlogdetResult(sign, logabsdet)`: for complex `a` the sign has
  modulus one; a singular matrix gives sign 0 and logabsdet -inf.
  """
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method {method!r}; only 'lu' is supported.")
  a, = _inexact("jnp.linalg.slogdet", a)
  _check_matrix("jnp.linalg.slogdet", a, square=True)
  return SlogdetResult(*_slogdet(a))


@inline_jit
def _slogdet(a):
  # One compiled program, as JAX's jitted slogdet: XLA's fused log then rounds as JAX's.
  if util.shape(a)[-1] in (1, 2):
    return _slogdet_small(a)
  return _slogdet_lu(a)


@custom_jvp
def _slogdet_small(a):
  # 1x1 and 2x2 matrices take the closed-form determinant, no LU (as JAX 0.10.2): its
  # values (float16 too, where LAPACK has no LU), and its derivative below, are JAX's.
  if util.shape(a)[-1] == 1:
    det = a[..., 0, 0]
  else:
    det = ufuncs.subtract(ufuncs.multiply(a[..., 0, 0], a[..., 1, 1]),
                          ufuncs.multiply(a[..., 0, 1], a[..., 1, 0]))
  return ufuncs.sign(det), ufuncs.real(ufuncs.log(ufuncs.abs(det)))


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
  # tr(A^-1 dA) in closed form: dA00 / A00, or tr(adj(A) dA) / det(A) for 2x2.
  a, = primals
  da, = tangents
  sign, logdet = _slogdet_small(a)
  if util.shape(a)[-1] == 1:
    t = ufuncs.divide(da[..., 0, 0], a[..., 0, 0])
  else:
    a00, a01, a10, a11 = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
    det = ufuncs.subtract(ufuncs.multiply(a00, a11), ufuncs.multiply(a01, a10))
    num = ufuncs.add(ufuncs.subtract(ufuncs.subtract(
        ufuncs.multiply(da[..., 0, 0], a11), ufuncs.multiply(da[..., 0, 1], a10)),
        ufuncs.multiply(da[..., 1, 0], a01)), ufuncs.multiply(da[..., 1, 1], a00))
    t = ufuncs.divide(num, det)
  return (sign, logdet), _slogdet_tangents(a, sign, t)


def _slogdet_tangents(a, sign, t):
  """(sign, logabsdet) tangents from t = tr(A^-1 dA): the real sign's is zero (it is
  piecewise constant); a complex sign turns with the imaginary part of t."""
  if _is_complex(a):
    sign_dot = ufuncs.multiply(ufuncs.subtract(t, ufuncs.real(t).astype(util.dtype_of(t))),
                               sign)
    return sign_dot, ufuncs.real(t)
  return creation.zeros_like(sign), t


@custom_jvp
def _slogdet_lu(a):
  a, diag, parity = _lu_parts("jnp.linalg.slogdet", a)
  dt = util.dtype_of(a)
  is_zero = reductions.any(ufuncs.equal(diag, 0), axis=-1)
  abs_diag = ufuncs.abs(diag)
  flip = ufuncs.where(ufuncs.equal(ufuncs.remainder(parity, 2), 1), -1, 1).astype(dt)
  if _is_complex(a):
    unit = ufuncs.divide(diag, ufuncs.where(ufuncs.equal(abs_diag, 0), 1,
                                            abs_diag).astype(dt))
    sign = ufuncs.multiply(flip, reductions.prod(unit, axis=-1))
  else:
    sign = ufuncs.multiply(flip, reductions.prod(ufuncs.sign(diag), axis=-1))
  logdet = reductions.sum(ufuncs.log(abs_diag), axis=-1)
  sign = ufuncs.where(is_zero, creation.zeros((), dt), sign)
  logdet = ufuncs.where(is_zero, creation.full((), -np.inf, _real_dtype(a)), logdet)
  return sign, logdet


@_slogdet_lu.defjvp
def _slogdet_jvp(primals, tangents):
  # d log|det A| = Re tr(A^-1 dA), taken as one solve whatever A (as JAX does, rather
  # than differentiating through the LU factors: a singular batch member then spoils
  # only its own entries). The real sign's derivative is zero (it is piecewise
  # constant); a complex sign turns with the imaginary part of that trace.
  a, = primals
  da, = tangents
  sign, logdet = _slogdet_lu(a)
  t = products.trace(solve(a, da), axis1=-2, axis2=-1)
  return (sign, logdet), _slogdet_tangents(a, sign, t)


# ---- solving ----

def _solve_matrices(a, b):
  """x with a x = b for a [..., m, m] and b [..., m, k] of equal batch shapes.

  Derivatives come from the linear system (custom_linear_solve): A's LU
  factorization (of stop_gradient(a)) is reused for the tangent and cotangent
  solves, and no derivative flows through the factorization itself.
  """
  lu, _, perm = lax_linalg.lu(lax_misc.stop_gradient(a))
  return custom_linear_solve(
      lambda x: products.matmul(a, x), b,
      solve=lambda _, x: lax_linalg.lu_solve(lu, perm, x, 0),
      transpose_solve=lambda _, x: lax_linalg.lu_solve(lu, perm, x, 1))


def solve(a, b):
  """Solve a x = b for x, with a [..., m, m].

  `b` is a vector [m] (or, as in the 2020 API, a batch of vectors [..., m] when a
  batch of matrices [..., m, m] cannot be paired with it as matrices), otherwise
  a batch of matrices [..., m, k]; leading dimensions broadcast.
  """
  a, b = _inexact("jnp.linalg.solve", a, b)
  _check_matrix("jnp.linalg.solve", a, square=True)
  a_shape, b_shape = util.shape(a), util.shape(b)
  m = a_shape[-1]
  if len(b_shape) == 0:
    raise ValueError("jnp.linalg.solve: b must have at least one dimension.")
  vector = len(b_shape) == 1 or (
      len(b_shape) == len(a_shape) - 1 and b_shape[-1] == m
      and (len(b_shape) < 2 or b_shape[-2] != m))
  if vector:
    b = shape_ops.expand_dims(b, -1)
    b_shape = util.shape(b)
  if b_shape[-2] != m:
    raise ValueError("jnp.linalg.solve: the arguments must have shapes a=[..., m, m] and "
                     f"b=[..., m, k] or b=[m]; got a={a_shape} and b={util.shape(b)}.")
  batch = util.broadcast_shapes(a_shape[:-2], b_shape[:-2])
  a = util.broadcast_to(a, batch + (m, m))
  b = util.broadcast_to(b, batch + b_shape[-2:])
  x = _solve_matrices(a, b)
  return x[..., 0] if vector else x


def inv(a):
  """The inverse of square matrices `a` [..., n, n] (infs/NaNs when singular)."""
  a, = _inexact("jnp.linalg.inv", a)
  _check_matrix("jnp.linalg.inv", a, square=True)
  return _solve_matrices(a, _eye_like(a))


def tensorsolve(a, b, axes=None):
  """Solve tensordot(a, x, axes=x.ndim) = b for x (NumPy's tensorsolve)."""
  a, b = _inexact("jnp.linalg.tensorsolve", a, b)
  a_ndim = util.ndim(a)
  if axes is not None:
    allaxes = list(range(a_ndim))
    for k in axes:
      allaxes.remove(k)
      allaxes.insert(a_ndim, k)
    a = shape_ops.transpose(a, allaxes)
  b_ndim = util.ndim(b)
  out_shape = util.shape(a)[b_ndim:]
  prod = int(np.prod(out_shape, dtype=np.int64))
  if int(np.prod(util.shape(a)[:b_ndim], dtype=np.int64)) != prod:
    raise ValueError("jnp.linalg.tensorsolve: the leading dimensions of a (those of b) "
                     "must have as many elements as its trailing ones, got a of shape "
                     f"{util.shape(a)} and b of shape {util.shape(b)}.")
  x = solve(util.reshape(a, (prod, prod)), util.reshape(b, (prod,)))
  return util.reshape(x, out_shape)


def tensorinv(a, ind=2):
  """The inverse of `a` for tensordot with `ind` axes (NumPy's tensorinv)."""
  a, = _inexact("jnp.linalg.tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"jnp.linalg.tensorinv: ind must be a positive integer, got {ind}.")
  shape = util.shape(a)
  head, tail = shape[:ind], shape[ind:]
  n, m = int(np.prod(head, dtype=np.int64)), int(np.prod(tail, dtype=np.int64))
  if n != m:
    raise ValueError(f"jnp.linalg.tensorinv: the first {ind} dimensions of a must have as "
                     f"many elements as the others, got shape {shape}.")
  return util.reshape(inv(util.reshape(a, (n, m))), tail + head)


def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """Least-squares solution of a x = b for a [m, n], b [m] or [m, k] (via SVD).

  Returns (x, residuals, rank, s). The residuals (squared 2-norms of b - a x)
  are always computed, unless `numpy_resid`, which gives NumPy's empty array
  when the rank is below n or m <= n.
  """
  a, b = _inexact("jnp.linalg.lstsq", a, b)
  if util.ndim(a) != 2:
    raise TypeError(f"jnp.linalg.lstsq: {util.ndim(a)}-dimensional array given. Array "
                    "must be two-dimensional.")
  b_ndim = util.ndim(b)
  if b_ndim not in (1, 2):
    raise TypeError(f"jnp.linalg.lstsq: {b_ndim}-dimensional array given. Array must be "
                    "one or two-dimensional.")
  if util.shape(a)[0] != util.shape(b)[0]:
    raise ValueError("Leading dimensions of input arrays must match, got "
                     f"{util.shape(a)} and {util.shape(b)}.")
  if b_ndim == 1:
    b = shape_ops.expand_dims(b, -1)
  m, n = util.shape(a)
  dt = util.dtype_of(a)
  real = _real_dtype(a)
  eps = float(dtypes.finfo(real).eps)
  if m == 0 or n == 0:
    s = creation.zeros((0,), real)
    rank = creation.zeros((), np.int32)
    x = creation.zeros((n,) + util.shape(b)[1:], dt)
  else:
    rc = eps * max(m, n) if rcond is None else ufuncs.where(
        ufuncs.less(rcond, 0), eps, rcond)
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    # Zero singular values never count (an all-zero matrix has rank 0, and x = 0
    # rather than 0 * (1 / 0)), even when the cutoff rcond * s[0] is 0 too.
    mask = ufuncs.logical_and(
        ufuncs.greater(s, 0),
        ufuncs.greater_equal(s, ufuncs.multiply(util.to_array(rc).astype(real), s[0])))
    rank = reductions.sum(mask.astype(np.int32))
    safe_s = ufuncs.where(mask, s, 1).astype(dt)
    s_inv = shape_ops.expand_dims(ufuncs.where(mask, ufuncs.divide(1, safe_s), 0).astype(dt),
                                  -1)
    uTb = products.matmul(_H(u), b)
    x = products.matmul(_H(vh), ufuncs.multiply(s_inv, uTb))
  # bool(), as JAX: a traced rank raises TracerBoolConversionError under jit.
  if numpy_resid and (bool(ufuncs.less(rank, n)) or m <= n):
    resid = creation.zeros((0,), real)
  else:
    # The squared 2-norm as JAX forms it, sqrt(sum |r|^2) ** 2: the same rounding
    # (2 comes out as 1.9999999), and a NaN derivative at a zero residual, as JAX's.
    norms = ufuncs.sqrt(reductions.sum(_abs2(ufuncs.subtract(b, products.matmul(a, x))),
                                       axis=0))
    resid = lax_ew.integer_pow(norms, 2)
  if b_ndim == 1:
    x = x[:, 0]
  return x, resid, rank, s


# ---- pseudo-inverse ----

@custom_jvp
def _pinv(a, rtol):
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  # Singular values at or below the cutoff are dropped (their inverses become 0).
  cutoff = ufuncs.multiply(shape_ops.expand_dims(rtol, -1), s[..., 0:1])
  s = ufuncs.where(ufuncs.greater(s, cutoff), s, np.inf).astype(util.dtype_of(u))
  return products.matmul(_H(vh), ufuncs.divide(_H(u), shape_ops.expand_dims(s, -1)))


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
  # The Differentiation of Pseudo-Inverses and Nonlinear Least Squares Problems Whose
  # Variables Separate (Golub, Pereyra):
  # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P.
  a, rtol = primals
  a_dot, _ = tangents
  p = _pinv(a, rtol)
  m, n = util.shape(a)[-2:]
  eye_m = util.broadcast_to(creation.eye(m, dtype=util.dtype_of(a)), util.shape(a)[:-2] + (m, m))
  eye_n = util.broadcast_to(creation.eye(n, dtype=util.dtype_of(a)), util.shape(a)[:-2] + (n, n))
  mm = products.matmul
  a_dot_h = _H(a_dot)
  p_h = _H(p)
  p_dot = ufuncs.add(
      ufuncs.add(ufuncs.negative(mm(mm(p, a_dot), p)),
                 mm(mm(mm(p, p_h), a_dot_h), ufuncs.subtract(eye_m, mm(a, p)))),
      mm(mm(ufuncs.subtract(eye_n, mm(p, a)), a_dot_h), mm(p_h, p)))
  return p, p_dot


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse of `a` [..., m, n] (via SVD).

  Singular values at or below `rtol` (alias `rcond`, the 2020 name) times the
  largest are treated as zero; the default is 10 * max(m, n) * eps.
  """
  a, = _inexact("jnp.linalg.pinv", a)
  _check_matrix("jnp.linalg.pinv", a)
  if rcond is not None:
    if rtol is not None:
      raise ValueError("jnp.linalg.pinv: pass only one of rtol and rcond.")
    rtol = rcond
  del hermitian  # the SVD handles Hermitian matrices too
  m, n = util.shape(a)[-2:]
  real = _real_dtype(a)
  if m == 0 or n == 0:
    return creation.zeros(util.shape(a)[:-2] + (n, m), util.dtype_of(a))
  if rtol is None:
    rtol = 10 * max(m, n) * float(dtypes.finfo(real).eps)
  rtol = util.broadcast_to(util.to_array(rtol).astype(real), util.shape(a)[:-2])
  return _pinv(a, lax_misc.stop_gradient(rtol))


# ---- norms ----

def _canonical_axes(axis, ndim):
  if isinstance(axis, tuple):
    return tuple(util.canonicalize_axis(ax, ndim) for ax in axis)
  return (util.canonicalize_axis(operator.index(axis), ndim),)


def norm(x, ord=None, axis=None, keepdims=False):
  """Vector or matrix norm, with NumPy's `ord` (None, 'fro', 'nuc', +-inf, 0, +-1, +-2,
  any p for vectors) and `axis` (an int for vectors, a pair for matrices)."""
  x, = _inexact("jnp.linalg.norm", x)
  ndim = util.ndim(x)
  if axis is None:
    if ord is None:  # NumPy accepts any rank here: the 2-norm of the flattened array
      return ufuncs.sqrt(reductions.sum(_abs2(x), keepdims=keepdims))
    if ndim not in (1, 2):
      raise ValueError("Improper number of dimensions to norm.")
    axis = tuple(range(ndim))
  else:
    axis = _canonical_axes(axis, ndim)
  if len(axis) == 1:
    return _vector_norm(x, ord, axis, keepdims)
  if len(axis) == 2:
    return _matrix_norm(x, ord, axis, keepdims)
  raise ValueError(f"Invalid axis values ({axis}) for jnp.linalg.norm.")


def _vector_norm(x, ord, axis, keepdims):
  if ord is None or ord == 2:
    return ufuncs.sqrt(reductions.sum(_abs2(x), axis=axis, keepdims=keepdims))
  if isinstance(ord, str):
    msg = f"Invalid order '{ord}' for vector norm."
    if ord in ("inf", "-inf"):
      msg += f" Use '{ord[:-3]}jax.numpy.inf' instead."
    raise ValueError(msg)
  if ord == np.inf:
    # initial=0: the norm of an empty vector is 0, as in JAX (the min below keeps
    # NumPy's empty-reduction error, as JAX's does).
    return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    return reductions.sum(ufuncs.not_equal(x, 0), axis=axis, keepdims=keepdims,
                          dtype=_real_dtype(x))
  if ord == 1:
    return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  abs_x = ufuncs.abs(x)
  p = np.array(ord, util.dtype_of(abs_x))
  return ufuncs.power(reductions.sum(ufuncs.power(abs_x, p), axis=axis, keepdims=keepdims),
                      np.array(1.0 / ord, util.dtype_of(abs_x)))


def _matrix_norm(x, ord, axis, keepdims):
  row_axis, col_axis = axis
  if row_axis == col_axis:
    raise ValueError("Duplicate axes given.")
  if ord is None or ord in ("f", "fro"):
    return ufuncs.sqrt(reductions.sum(_abs2(x), axis=axis, keepdims=keepdims))
  if ord in (1, -1):
    if not keepdims and col_axis > row_axis:
      col_axis -= 1
    # The max starts at 0 (the norm of an empty matrix is 0, as in JAX).
    red = functools.partial(reductions.max, initial=0) if ord == 1 else reductions.min
    return red(reductions.sum(ufuncs.abs(x), axis=row_axis, keepdims=keepdims),
               axis=col_axis, keepdims=keepdims)
  if ord in (np.inf, -np.inf):
    if not keepdims and row_axis > col_axis:
      row_axis -= 1
    red = functools.partial(reductions.max, initial=0) if ord == np.inf else reductions.min
    return red(reductions.sum(ufuncs.abs(x), axis=col_axis, keepdims=keepdims),
               axis=row_axis, keepdims=keepdims)
  if ord in ("nuc", 2, -2):
    s = lax_linalg.svd(shape_ops.moveaxis(x, axis, (-2, -1)), compute_uv=False)
    if ord == 2:
      y = reductions.max(s, axis=-1, initial=0)
    elif ord == -2:
      y = reductions.min(s, axis=-1)
    else:
      y = reductions.sum(s, axis=-1)
    if keepdims:
      y = shape_ops.expand_dims(y, tuple(sorted(axis)))
    return y
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """The vector norm of `x` over `axis` (None: all of it, flattened)."""
  x, = _inexact("jnp.linalg.vector_norm", x)
  if axis is None:
    shape = util.shape(x)
    y = _vector_norm(util.reshape(x, (int(np.prod(shape, dtype=np.int64)),)), ord, (0,),
                     False)
    return util.reshape(y, (1,) * len(shape)) if keepdims else y
  return _vector_norm(x, ord, _canonical_axes(axis, util.ndim(x)), keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """The matrix norm of the last two axes of `x`."""
  x, = _inexact("jnp.linalg.matrix_norm", x)
  _check_matrix("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def cond(x, p=None):
  """The condition number of `x` in the norm `p` (None or 2: ratio of extreme singular
  values); inf for a singular matrix."""
  x, = _inexact("jnp.linalg.cond", x)
  if x.ndim < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                     f"arr.shape={x.shape}")
  if 0 in x.shape[-2:]:  # (an empty batch of matrices is fine: an empty result)
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                     f"arr.shape={x.shape}")
  if p is None or p == 2:
    s = svd(x, compute_uv=False)
    return ufuncs.divide(s[..., 0], s[..., -1])
  if p == -2:
    s = svd(x, compute_uv=False)
    return ufuncs.divide(s[..., -1], s[..., 0])
  _check_matrix("jnp.linalg.cond", x, square=True)
  r = ufuncs.multiply(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
  # NaNs from the inverse of a singular matrix mean an infinite condition number.
  orig_nan = reductions.any(ufuncs.isnan(x), axis=(-2, -1))
  return ufuncs.where(ufuncs.logical_and(ufuncs.isnan(r), ufuncs.logical_not(orig_nan)),
                      np.inf, r)


# ---- matrix functions ----

def matrix_power(a, n):
  """`a` [..., m, m] raised to the integer power `n` (negative: of the inverse), by
  repeated squaring."""
  util.check_arraylike_or_list("jnp.linalg.matrix_power", a)
  a = util.to_array(a)  # integer matrices keep their dtype, as in NumPy
  _check_matrix("jnp.linalg.matrix_power", a, square=True)
  try:
    n = operator.index(n)
  except TypeError as e:
    raise TypeError(f"jnp.linalg.matrix_power: exponent must be an integer, got {n!r}.") from e
  if n == 0:
    return _eye_like(a)
  if n < 0:
    a = inv(a)  # (integers become floats here)
    n = -n
  if n == 3:  # (a @ a) @ a, JAX's order: NaN/inf patterns depend on it (fuzzer seed 204)
    return products.matmul(products.matmul(a, a), a)
  result = z = None
  while n > 0:
    z = a if z is None else products.matmul(z, z)
    n, bit = divmod(n, 2)
    if bit:
      result = z if result is None else products.matmul(result, z)
  return result


def matrix_rank(M, tol=None, hermitian=False, *, rtol=None):
  """The rank of `M` [..., m, n]: the number of singular values above `tol` (absolute)
  or `rtol` times the largest (default max(m, n) * eps times the largest)."""
  M, = _inexact("jnp.linalg.matrix_rank", M)
  del hermitian
  if util.ndim(M) < 2:
    return reductions.any(ufuncs.not_equal(M, 0)).astype(np.int32)
  S = svd(M, compute_uv=False)
  if tol is None:
    if rtol is None:
      rtol = max(util.shape(M)[-2:]) * float(dtypes.finfo(util.dtype_of(S)).eps)
    tol = ufuncs.multiply(reductions.max(S, axis=-1), rtol)
  tol = util.to_array(tol)
  if util.ndim(tol):
    tol = shape_ops.expand_dims(tol, -1)
  return reductions.sum(ufuncs.greater(S, tol), axis=-1)


def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (first and last may be vectors), contracted in
  the cheapest order (opt_einsum)."""
  arrays = [util.to_array(a) for a in arrays]
  if len(arrays) < 2:
    raise ValueError(f"jnp.linalg.multi_dot requires at least two arrays, got {len(arrays)}.")
  for i, x in enumerate(arrays):
    nd = util.ndim(x)
    if not ((i in (0, len(arrays) - 1) and nd == 1) or nd == 2):
      raise ValueError("jnp.linalg.multi_dot: the arrays must be 2-D (the first and last "
                       f"may be 1-D), got shapes {[util.shape(a) for a in arrays]}.")
  axes = [[i, i + 1] for i in range(len(arrays))]
  if util.ndim(arrays[0]) == 1:
    axes[0] = axes[0][1:]
  if util.ndim(arrays[-1]) == 1:
    axes[-1] = axes[-1][:1]
  out = ([0] if util.ndim(arrays[0]) == 2 else []) + (
      [len(arrays)] if util.ndim(arrays[-1]) == 2 else [])
  return einsum_mod.einsum(*itertools.chain(*zip(arrays, axes)), out, optimize="optimal",
                           precision=precision)


# ---- the array-API (NumPy 2) additions ----

def matrix_transpose(x, /):
  """Swap the last two axes of `x`."""
  x = util.to_array(x)
  _check_matrix("jnp.linalg.matrix_transpose", x)
  return _T(x)


def diagonal(x, /, *, offset=0):
  """The `offset` diagonals of the matrices in the last two axes of `x`."""
  return products.diagonal(x, offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
  """The sums of the `offset` diagonals of the matrices in the last two axes of `x`."""
  return products.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis=-1):
  """sum(conj(x1) * x2) along `axis`, broadcasting the other axes."""
  x1, x2 = _inexact("jnp.linalg.vecdot", x1, x2) if _any_inexact(x1, x2) else \
      util.promote_dtypes(x1, x2)
  x1, x2 = util.promote_shapes("jnp.linalg.vecdot", x1, x2)
  return reductions.sum(ufuncs.multiply(_conj(util.to_array(x1)), x2), axis=axis)


def _any_inexact(*xs):
  return any(dtypes.issubdtype(util.dtype_of(x), np.inexact) for x in xs)


def matmul(x1, x2, /, *, precision=None):
  """The matrix product (as `jnp.matmul`)."""
  return products.matmul(x1, x2, precision=precision)


def tensordot(x1, x2, /, *, axes=2, precision=None):
  """`jnp.tensordot`."""
  return products.tensordot(x1, x2, axes, precision=precision)


def outer(x1, x2, /):
  """The outer product of two vectors."""
  if util.ndim(x1) != 1 or util.ndim(x2) != 1:
    raise ValueError("jnp.linalg.outer requires 1-D arguments, got shapes "
                     f"{util.shape(x1)} and {util.shape(x2)}.")
  return products.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
  """The cross product of 3-vectors along `axis` (the array API's version: both
  arguments need size 3 there; the other axes broadcast).

  >>> cross(jnp.array([1., 0., 0.]), jnp.array([0., 1., 0.]))
  DeviceArray([0., 0., 1.], dtype=float32)
  """
  util.check_arraylike("jnp.linalg.cross", x1, x2)
  s1, s2 = util.shape(x1), util.shape(x2)
  n1, n2 = len(s1), len(s2)
  if not (-n1 <= axis < n1 and -n2 <= axis < n2) or s1[axis] != 3 or s2[axis] != 3:
    raise ValueError(f"jnp.linalg.cross: both inputs must have size 3 along axis {axis}, "
                     f"got shapes {s1} and {s2}")
  return products.cross(x1, x2, axisa=axis, axisb=axis, axisc=axis)
