"""`jax.scipy.linalg`: SciPy's linear algebra on the decompositions of `lax/linalg.py`.

Every function promotes its arguments to one inexact dtype (integers become the
default float), batches over leading dimensions, and never raises on a singular
or indefinite matrix: the result holds NaNs or infs instead, as in JAX, since a
compiled program cannot raise. The SciPy arguments that only tune memory use or
input checking (`overwrite_a`, `overwrite_b`, `check_finite`, `lwork`, `debug`,
`turbo`) are accepted and have no effect.

The matrix exponential is the scaling-and-squaring Padé algorithm of Higham
(2005), step for step as JAX runs it (see `expm`); its Fréchet derivative is the
derivative of that algorithm (Al-Mohy and Higham, 2009), so `expm` differentiates
in forward and reverse mode. The later SciPy names (`schur`, `sqrtm`, `polar`,
`hessenberg`, `eigh_tridiagonal`, `toeplitz`, `hilbert`) are in
`_src/scipy/linalg_extra.py`; `tracejax.scipy.linalg` re-exports both modules.
"""
import functools
import math
import operator
from fractions import Fraction

import numpy as np

from tracejax._src import dtypes
from tracejax._src.api import jvp
from tracejax._src.control_flow import cond, switch, scan
from tracejax._src.control_flow.solves import custom_linear_solve
from tracejax._src.jit import inline_jit
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import linalg as lax_linalg
from tracejax._src.lax import misc as lax_misc
from tracejax._src.numpy import creation, products, reductions, shape_ops, ufuncs, util
from tracejax._src.numpy import linalg as np_linalg
from tracejax._src.numpy.pad import pad

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm",
    "expm_frechet", "inv", "lu", "lu_factor", "lu_solve", "qr", "solve", "solve_triangular",
    "svd", "tril", "triu",
]


# ---- helpers ----

def _inexact(fun_name, *args):
  """The arguments as device arrays of one inexact dtype (NumPy's promotion)."""
  util.check_arraylike_or_list(fun_name, *args)
  return [util.to_array(x) for x in util.promote_dtypes_inexact(*args)]


def _check_matrix(fun_name, arg_name, a, square=False):
  shape = util.shape(a)
  if len(shape) < 2:
    raise ValueError(f"{fun_name}: argument {arg_name} must be a matrix (or a batch of "
                     f"matrices [..., m, n]), got shape {shape}.")
  if square and shape[-1] != shape[-2]:
    raise ValueError(f"{fun_name}: argument {arg_name} must be a square matrix (or a "
                     f"batch of them [..., n, n]), got shape {shape}.")


def _is_complex(x):
  return dtypes.issubdtype(util.dtype_of(x), np.complexfloating)


def _H(x):
  x = shape_ops.swapaxes(x, -1, -2)
  if not _is_complex(x):
    return x
  # real/imag rather than conj: lax.conj's abstract eval mistypes complex128.
  return lax_ew.complex(lax_ew.real(x), lax_ew.neg(lax_ew.imag(x)))


def _rhs(fun_name, a, b):
  """Pair a matrix batch `a` [..., m, m] with a right-hand side `b`.

  `b` is a vector when it has one dimension, or one dimension less than `a`
  and a last dimension m (a batch of vectors) without reading as matrices
  [..., m, k]; otherwise a batch of matrices [..., m, k]. Leading dimensions
  broadcast. Returns (a, b as matrices, vector?)."""
  a_shape, b_shape = util.shape(a), util.shape(b)
  m = a_shape[-1]
  if len(b_shape) == 0:
    raise ValueError(f"{fun_name}: argument b must have at least one dimension, got a "
                     "scalar.")
  # The 2020 rule of jnp.linalg.solve: one dimension less than `a` means vectors,
  # unless b also reads as matrices [..., m, k] (then it is matrices).
  vector = len(b_shape) == 1 or (
      len(b_shape) == len(a_shape) - 1 and b_shape[-1] == m
      and (len(b_shape) < 2 or b_shape[-2] != m))
  if vector:
    b = shape_ops.expand_dims(b, -1)
    b_shape = util.shape(b)
  if b_shape[-2] != m:
    raise ValueError(f"{fun_name}: incompatible shapes: a has shape {a_shape}, so "
                     f"argument b must be [..., {m}] or [..., {m}, k].")
  batch = util.broadcast_shapes(a_shape[:-2], b_shape[:-2])
  a = util.broadcast_to(a, batch + a_shape[-2:])
  b = util.broadcast_to(b, batch + b_shape[-2:])
  return a, b, vector


# ---- simple matrix constructors and triangles ----

def tril(m, k=0):
  """A copy of `m` with the elements above the `k`-th diagonal zeroed.

  Args:
    m: an array; its last two dimensions are the matrix.
    k: the diagonal (0 the main one, > 0 above it, < 0 below it).

  Example:
    >>> tril(jnp.ones((3, 3)))          # ones on and below the diagonal
  """
  return creation.tril(m, k)


def triu(m, k=0):
  """A copy of `m` with the elements below the `k`-th diagonal zeroed.

  Args:
    m: an array; its last two dimensions are the matrix.
    k: the diagonal (0 the main one, > 0 above it, < 0 below it).

  Example:
    >>> triu(jnp.ones((3, 3)), 1)       # ones strictly above the diagonal
  """
  return creation.triu(m, k)


def block_diag(*arrs):
  """The block-diagonal matrix with `arrs` on its diagonal, zeros elsewhere.

  Args:
    *arrs: arrays of at most two dimensions (scalars and vectors are 1 x n
      blocks, as in SciPy). The result has their promoted dtype.

  Example:
    >>> block_diag(jnp.ones((2, 2)), 3.0)   # 3 x 3: a 2 x 2 block and a 1 x 1 one
  """
  if not arrs:
    return creation.zeros((1, 0))
  util.check_arraylike_or_list("block_diag", *arrs)
  arrs = [util.to_array(a) for a in util.promote_dtypes(*arrs)]
  for i, a in enumerate(arrs):
    if util.ndim(a) > 2:
      raise ValueError(f"block_diag: argument {i} has {util.ndim(a)} dimensions; "
                       "the blocks must have at most 2.")
  arrs = [shape_ops.atleast_2d(a) for a in arrs]
  total = sum(util.shape(a)[1] for a in arrs)
  rows, col = [], 0
  for a in arrs:
    w = util.shape(a)[1]
    rows.append(pad(a, ((0, 0), (col, total - col - w))))
    col += w
  return shape_ops.concatenate(rows, axis=0)


# ---- Cholesky ----

def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """Cholesky decomposition of Hermitian positive-definite matrices.

  Args:
    a: [..., n, n] Hermitian (real symmetric) positive definite; only its
      `lower` (or upper) triangle is read, as in SciPy.
    lower: return the lower factor L (a = L L^H) instead of the upper one U
      (a = U^H U, SciPy's default).

  Returns the factor, or NaNs where `a` is not positive definite.

  Example:
    >>> cholesky(jnp.array([[4., 2.], [2., 3.]]))     # upper triangular U
  """
  del overwrite_a, check_finite
  a, = _inexact("jax.scipy.linalg.cholesky", a)
  _check_matrix("jax.scipy.linalg.cholesky", "a", a, square=True)
  # Only the chosen triangle is read, as LAPACK's potrf does: the upper one of `a` is
  # the lower one of a^H.
  L = lax_linalg.cholesky(a if lower else _H(a), symmetrize_input=False)
  return L if lower else _H(L)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """The Cholesky factorization of `a`, as `cho_solve` takes it.

  Args:
    a: [..., n, n] Hermitian positive definite.
    lower: compute the lower factor (else the upper one).

  Returns `(c, lower)`: `c` is the triangular factor, with zeros (not SciPy's
  leftover entries) in its other triangle.

  Example:
    >>> c_and_lower = cho_factor(a); x = cho_solve(c_and_lower, b)
  """
  return cholesky(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite), lower


def _cho_solve(c, b, lower):
  # A = L L^H: solve L y = b then L^H x = y (with U = L^H when upper).
  b = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                  conjugate_a=not lower)
  return lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=lower,
                                     conjugate_a=lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """Solve A x = b given the Cholesky factorization of A from `cho_factor`.

  Args:
    c_and_lower: `(c, lower)` as `cho_factor` returns it.
    b: [..., n] or [..., n, k]; leading dimensions broadcast with c's.

  Example:
    >>> x = cho_solve(cho_factor(a), b)
  """
  del overwrite_b, check_finite
  try:
    c, lower = c_and_lower
  except (TypeError, ValueError):
    raise TypeError("cho_solve: argument c_and_lower must be a pair (c, lower) as "
                    "cho_factor returns it.") from None
  c, b = _inexact("jax.scipy.linalg.cho_solve", c, b)
  _check_matrix("jax.scipy.linalg.cho_solve", "c", c, square=True)
  c, b, vector = _rhs("jax.scipy.linalg.cho_solve", c, b)
  x = _cho_solve(c, b, bool(lower))
  return x[..., 0] if vector else x


# ---- determinants, inverses, solves ----

def det(a, overwrite_a=False, check_finite=True):
  """The determinant of square matrices `a` [..., n, n].

  Differentiable everywhere, including at singular matrices (where the
  gradient is the transposed adjugate, finite).

  Example:
    >>> det(jnp.array([[1., 2.], [3., 4.]]))     # -2.
  """
  del overwrite_a, check_finite
  return np_linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
  """The inverse of square matrices `a` [..., n, n] (infs/NaNs when singular).

  Example:
    >>> inv(jnp.array([[2., 0.], [0., 4.]]))     # diag(0.5, 0.25)
  """
  del overwrite_a, check_finite
  return np_linalg.inv(a)


_ASSUME_A = ("gen", "sym", "her", "pos")


def solve(a, b, sym_pos=False, lower=False, overwrite_a=False, overwrite_b=False,
          debug=False, check_finite=True, assume_a="gen"):
  """Solve a x = b for x.

  Args:
    a: [..., n, n].
    b: [..., n] or [..., n, k]; leading dimensions broadcast with a's.
    sym_pos: the 2020 spelling of `assume_a='pos'`.
    lower: with 'pos', factor the lower triangle (else the upper).
    assume_a: 'gen' (LU), 'sym' or 'her' (also LU here), or 'pos'
      (Hermitian positive definite: Cholesky).

  Derivatives come from the linear system (the factorization is reused), not
  from differentiating the factorization.

  Example:
    >>> solve(jnp.array([[3., 1.], [1., 2.]]), jnp.array([9., 8.]))   # [2., 3.]
  """
  del overwrite_a, overwrite_b, debug, check_finite
  if assume_a not in _ASSUME_A:
    raise ValueError(f"jax.scipy.linalg.solve: argument assume_a must be one of "
                     f"{_ASSUME_A}, got {assume_a!r}.")
  a, b = _inexact("jax.scipy.linalg.solve", a, b)
  _check_matrix("jax.scipy.linalg.solve", "a", a, square=True)
  if not (sym_pos or assume_a == "pos"):
    a, b, vector = _rhs("jax.scipy.linalg.solve", a, b)
    x = np_linalg._solve_matrices(a, b)
    return x[..., 0] if vector else x
  a, b, vector = _rhs("jax.scipy.linalg.solve", a, b)
  lower = bool(lower)
  c = cholesky(lax_misc.stop_gradient(a), lower=lower)
  # The matrix the factorization saw: the chosen triangle, made Hermitian.
  tri = creation.tril(a) if lower else creation.triu(a)
  strict = creation.tril(a, -1) if lower else creation.triu(a, 1)
  a_h = ufuncs.add(tri, _H(strict))
  x = custom_linear_solve(lambda x: products.matmul(a_h, x), b,
                          solve=lambda _, x: _cho_solve(c, x, lower), symmetric=True)
  return x[..., 0] if vector else x


_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """Solve op(a) x = b for x, with `a` triangular.

  Args:
    a: [..., n, n]; only its `lower` (or upper) triangle is read.
    b: [..., n] or [..., n, k]; leading dimensions broadcast with a's.
    trans: 0 or 'N' (a x = b), 1 or 'T' (a^T x = b), 2 or 'C' (a^H x = b).
    lower: use the lower triangle of `a` (else the upper).
    unit_diagonal: assume ones on the diagonal without reading it.

  Example:
    >>> solve_triangular(jnp.array([[2., 0.], [1., 1.]]), jnp.array([2., 3.]), lower=True)
  """
  del overwrite_b, debug, check_finite
  try:
    t = _TRANS[trans]
  except (KeyError, TypeError):
    raise ValueError("jax.scipy.linalg.solve_triangular: argument trans must be 0, 1, 2, "
                     f"'N', 'T' or 'C', got {trans!r}.") from None
  a, b = _inexact("jax.scipy.linalg.solve_triangular", a, b)
  _check_matrix("jax.scipy.linalg.solve_triangular", "a", a, square=True)
  a, b, vector = _rhs("jax.scipy.linalg.solve_triangular", a, b)
  x = lax_linalg.triangular_solve(a, b, left_side=True, lower=bool(lower),
                                  transpose_a=t > 0, conjugate_a=t == 2,
                                  unit_diagonal=bool(unit_diagonal))
  return x[..., 0] if vector else x


# ---- LU ----

def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """Pivoted LU decomposition a = p l u of matrices `a` [..., m, n].

  Args:
    a: [..., m, n]; k = min(m, n).
    permute_l: return `(p @ l, u)` instead of `(p, l, u)`.

  Returns p [..., m, m] (a permutation matrix, a's dtype), l [..., m, k]
  (unit lower triangular) and u [..., k, n] (upper triangular).

  Example:
    >>> p, l, u = lu(a); jnp.allclose(p @ l @ u, a)
  """
  del overwrite_a, check_finite
  a, = _inexact("jax.scipy.linalg.lu", a)
  _check_matrix("jax.scipy.linalg.lu", "a", a)
  lu_, _, perm = lax_linalg.lu(a)
  shape = util.shape(a)
  m, n = shape[-2:]
  k = min(m, n)
  dt = util.dtype_of(a)
  l = ufuncs.add(creation.tril(lu_[..., :, :k], -1), creation.eye(m, k, dtype=dt))
  u = creation.triu(lu_[..., :k, :])
  # A[perm] = L U, so A = P L U with P[i, j] = 1 where perm[j] == i.
  iota = creation.arange(m, dtype=np.int32)
  p = ufuncs.equal(shape_ops.expand_dims(iota, -1),
                   shape_ops.expand_dims(perm, -2)).astype(dt)
  if permute_l:
    return products.matmul(p, l), u
  return p, l, u


def lu_factor(a, overwrite_a=False, check_finite=True):
  """Pivoted LU decomposition of `a` [..., m, n], in LAPACK's compact form.

  Returns `(lu, piv)`: `lu` holds L (unit diagonal not stored) below the
  diagonal and U on and above it; `piv` (int32 [..., min(m, n)]) says row i was
  swapped with row piv[i], in order. `lu_solve` takes the pair.

  Example:
    >>> lu_and_piv = lu_factor(a); x = lu_solve(lu_and_piv, b)
  """
  del overwrite_a, check_finite
  a, = _inexact("jax.scipy.linalg.lu_factor", a)
  _check_matrix("jax.scipy.linalg.lu_factor", "a", a)
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """Solve a x = b (or a^T x = b, a^H x = b) given `lu_factor(a)`.

  Args:
    lu_and_piv: `(lu, piv)` from `lu_factor` of a square a [..., n, n].
    b: [..., n] or [..., n, k]; leading dimensions broadcast with lu's.
    trans: 0 (a x = b), 1 (a^T x = b) or 2 (a^H x = b).

  Example:
    >>> x = lu_solve(lu_factor(a), b, trans=1)    # a.T @ x == b
  """
  del overwrite_b, check_finite
  try:
    lu_, piv = lu_and_piv
  except (TypeError, ValueError):
    raise TypeError("lu_solve: argument lu_and_piv must be a pair (lu, piv) as lu_factor "
                    "returns it.") from None
  if trans not in (0, 1, 2):
    raise ValueError(f"jax.scipy.linalg.lu_solve: argument trans must be 0, 1 or 2, got "
                     f"{trans!r}.")
  lu_, b = _inexact("jax.scipy.linalg.lu_solve", lu_, b)
  _check_matrix("jax.scipy.linalg.lu_solve", "lu", lu_, square=True)
  piv = util.to_array(piv)
  if not dtypes.issubdtype(util.dtype_of(piv), np.integer):
    raise TypeError("jax.scipy.linalg.lu_solve: the pivots must be integers, got "
                    f"{util.dtype_of(piv)}.")
  n = util.shape(lu_)[-1]
  if util.shape(piv)[-1:] != (n,) or util.shape(piv)[:-1] != util.shape(lu_)[:-2]:
    raise ValueError(f"jax.scipy.linalg.lu_solve: pivots of shape {util.shape(piv)} do not "
                     f"match lu of shape {util.shape(lu_)}.")
  perm = lax_linalg.lu_pivots_to_permutation(piv.astype(np.int32), n)
  lu_b, b, vector = _rhs("jax.scipy.linalg.lu_solve", lu_, b)
  batch = util.shape(b)[:-2]
  perm = util.broadcast_to(perm, batch + (n,))
  x = lax_linalg.lu_solve(lu_b, perm, b, trans)
  return x[..., 0] if vector else x


# ---- QR, SVD, eigh ----

def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """QR decomposition a = q r of matrices `a` [..., m, n].

  Args:
    mode: 'full' (q [..., m, m], r [..., m, n]), 'economic' (q [..., m, k],
      r [..., k, n], k = min(m, n)), or 'r' (only r, full size, returned as a
      one-element tuple as in SciPy).
    pivoting: column pivoting is not available (as in JAX of this API):
      must be False.

  Example:
    >>> q, r = qr(a, mode='economic')
  """
  del overwrite_a, lwork, check_finite
  if pivoting:
    raise NotImplementedError("jax.scipy.linalg.qr: pivoting=True (column pivoting) is "
                              "not supported; use pivoting=False.")
  if mode in ("full", "r"):
    full_matrices = True
  elif mode == "economic":
    full_matrices = False
  else:
    raise ValueError("jax.scipy.linalg.qr: argument mode must be 'full', 'r' or "
                     f"'economic', got {mode!r}.")
  a, = _inexact("jax.scipy.linalg.qr", a)
  _check_matrix("jax.scipy.linalg.qr", "a", a)
  q, r = lax_linalg.qr(a, full_matrices=full_matrices)
  if mode == "r":
    return (r,)
  return q, r


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """Singular value decomposition a = u diag(s) vh of matrices `a` [..., m, n].

  Args:
    full_matrices: u [..., m, m] and vh [..., n, n] (else [..., m, k], [..., k, n]).
    compute_uv: return `(u, s, vh)`; otherwise only `s` (descending).
    lapack_driver: 'gesdd' or 'gesvd' (the same decomposition here).

  Example:
    >>> u, s, vh = svd(a, full_matrices=False)
  """
  del overwrite_a, check_finite
  if lapack_driver not in ("gesdd", "gesvd"):
    raise ValueError("jax.scipy.linalg.svd: argument lapack_driver must be 'gesdd' or "
                     f"'gesvd', got {lapack_driver!r}.")
  a, = _inexact("jax.scipy.linalg.svd", a)
  _check_matrix("jax.scipy.linalg.svd", "a", a)
  if not compute_uv:
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False)
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):
  """Eigenvalues (ascending) and eigenvectors of Hermitian matrices `a` [..., n, n].

  Args:
    a: only its `lower` (or upper) triangle is read.
    b: the generalized problem is not supported (as in JAX): must be None.
    eigvals_only: return only the eigenvalues.
    eigvals, type: SciPy's subset and generalized-problem options: must be
      None and 1.

  Returns `(w, v)` with the eigenvectors in the columns of v, or `w`.

  Example:
    >>> w, v = eigh(jnp.array([[2., 1.], [1., 2.]]))     # w == [1., 3.]
  """
  del overwrite_a, overwrite_b, turbo, check_finite
  if b is not None:
    raise NotImplementedError("jax.scipy.linalg.eigh: only the standard eigenvalue "
                              "problem is supported (argument b must be None).")
  if eigvals is not None:
    raise NotImplementedError("jax.scipy.linalg.eigh: subsets of eigenvalues are not "
                              "supported (argument eigvals must be None).")
  if type != 1:
    raise NotImplementedError("jax.scipy.linalg.eigh: only type=1 is supported, got "
                              f"type={type!r}.")
  a, = _inexact("jax.scipy.linalg.eigh", a)
  _check_matrix("jax.scipy.linalg.eigh", "a", a, square=True)
  v, w = lax_linalg.eigh(a, lower=bool(lower), symmetrize_input=False)
  return w if eigvals_only else (w, v)


# ---- matrix exponential ----

def _pade_coefficients(m):
  """b_0..b_m of the [m/m] Padé approximant p(x)/p(-x) of exp(x), p(x) = sum b_k x^k,
  scaled so that b_m = 1: b_k is proportional to (2m - k)! / (k! (m - k)!)."""
  c = [Fraction(math.factorial(2 * m - k), math.factorial(k) * math.factorial(m - k))
       for k in range(m + 1)]
  return [float(ck / c[m]) for ck in c]


# Higham (2005), "The scaling and squaring method for the matrix exponential
# revisited": theta_m, the largest 1-norm for which the degree-m approximant is
# accurate to the unit roundoff, in double and in single precision. As in JAX, the
# top degree's theta is the norm scaled down to, and the others pick the degree.
_THETA64 = {3: 1.495585217958292e-2, 5: 2.539398330063230e-1, 7: 9.504178996162932e-1,
            9: 2.097847961257068e0, 13: 5.371920351148152e0}
_THETA32 = {3: 4.258730016922831e-1, 5: 1.880152677804762e0, 7: 3.925724783138660e0}


def _scaled(x, coeff):
  return ufuncs.multiply(x, np.array(coeff, util.dtype_of(x)))


def _sum_terms(terms, ident, coeff):
  """terms[0] + terms[1] + ... + coeff * I, added left to right (JAX's order)."""
  total = terms[0]
  for t in terms[1:]:
    total = ufuncs.add(total, t)
  return ufuncs.add(total, _scaled(ident, coeff))


def _pade(A, m):
  """(U, V) of the degree-m approximant: exp(A) ~ (V - U)^-1 (V + U), where U holds
  the odd and V the even powers of A; each sum runs from the highest power down, and
  the products are at HIGHEST precision, as JAX evaluates them."""
  from tracejax._src.lax.dot import Precision
  b = _pade_coefficients(m)

  def mm(x, y):
    return products.dot(x, y, precision=Precision.HIGHEST)
  ident = creation.eye(util.shape(A)[-1], dtype=util.dtype_of(A))
  A2 = mm(A, A)
  if m == 13:
    # Higham's evaluation: 6 products in all.
    A4 = mm(A2, A2)
    A6 = mm(A4, A2)
    u_hi = ufuncs.add(ufuncs.add(_scaled(A6, b[13]), _scaled(A4, b[11])), _scaled(A2, b[9]))
    U = mm(A, _sum_terms([mm(A6, u_hi), _scaled(A6, b[7]), _scaled(A4, b[5]),
                          _scaled(A2, b[3])], ident, b[1]))
    v_hi = ufuncs.add(ufuncs.add(_scaled(A6, b[12]), _scaled(A4, b[10])), _scaled(A2, b[8]))
    V = _sum_terms([mm(A6, v_hi), _scaled(A6, b[6]), _scaled(A4, b[4]), _scaled(A2, b[2])],
                   ident, b[0])
    return U, V
  powers = [None, A2]                        # powers[j] = A^(2j)
  for _ in range(2, (m - 1) // 2 + 1):
    powers.append(mm(powers[-1], A2))
  top = (m - 1) // 2
  U = mm(A, _sum_terms([_scaled(powers[j], b[2 * j + 1]) for j in range(top, 0, -1)],
                       ident, b[1]))
  V = _sum_terms([_scaled(powers[j], b[2 * j]) for j in range(top, 0, -1)], ident, b[0])
  return U, V


@inline_jit(static_argnames=("upper_triangular", "max_squarings"))
def _expm(A, *, upper_triangular, max_squarings):
  """exp(A) for A [..., n, n] of an inexact dtype (n > 0), computed as JAX computes it
  (the same steps, so that rounding agrees): s = max(0, floor(log2(|A|_1 / theta_top)))
  squarings of the approximant at A / 2^s, whose degree is the first whose theta
  exceeds the unscaled |A|_1 (else the top one); NaN where s > max_squarings."""
  if util.ndim(A) > 2:
    from tracejax._src.numpy.vectorize import vectorize
    return vectorize(lambda a: _expm(a, upper_triangular=upper_triangular,
                                     max_squarings=max_squarings),
                     signature="(n,n)->(n,n)")(A)
  from tracejax._src.numpy.histograms import digitize
  dt = util.dtype_of(A)
  real = dtypes.to_real_dtype(dt)
  thetas = _THETA64 if np.dtype(real) == np.float64 else _THETA32
  degrees = sorted(thetas)
  norm = np_linalg.norm(A, 1)
  n_squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(
      ufuncs.divide(norm, thetas[degrees[-1]]))))
  A = ufuncs.divide(A, ufuncs.power(2, n_squarings.astype(dt)))
  idx = digitize(norm, np.array([thetas[d] for d in degrees[:-1]], real))
  U, V = switch(idx, [functools.partial(_pade, m=m) for m in degrees], A)
  P = ufuncs.add(U, V)
  Q = ufuncs.add(ufuncs.negative(U), V)

  def compute(args):
    _, P, Q = args
    if upper_triangular:
      R = solve_triangular(Q, P)
    else:
      R = np_linalg.solve(Q, P)
    # Undo the scaling: R <- R @ R, n_squarings times, in a scan of fixed length (so
    # reverse mode works) whose steps past n_squarings are skipped by a conditional.
    from tracejax._src.lax.dot import Precision

    def step(R, i):
      return cond(ufuncs.less(i, n_squarings),
                  lambda x: products.dot(x, x, precision=Precision.HIGHEST),
                  lambda x: x, R), None
    R, _ = scan(step, R, creation.arange(max_squarings, dtype=util.dtype_of(n_squarings)))
    return R

  def all_nan(args):
    return creation.full_like(args[0], np.nan)
  return cond(ufuncs.greater(n_squarings, max_squarings), all_nan, compute, (A, P, Q))


def expm(A, *, upper_triangular=False, max_squarings=16):
  """The matrix exponential of `A` [..., n, n], by scaling and squaring with a Padé
  approximant (Higham 2005).

  Per matrix, as JAX: A is scaled by 2^-s, s = max(0, floor(log2(|A|_1 / theta)))
  with theta the top degree's threshold, and the result squared s times; the degree
  (3, 5, 7, 9 or 13 in double precision; 3, 5 or 7 in single) is the smallest whose
  threshold exceeds the unscaled |A|_1, else the top one. Differentiable in forward and reverse mode (the
  derivative is the Fréchet derivative of the same approximant; see
  `expm_frechet`).

  Args:
    A: [..., n, n], real or complex (integers become floats).
    upper_triangular: `A` is upper triangular (a triangular solve is used).
    max_squarings: the most squarings done (matrices that need more get an
      inaccurate result, as in JAX).

  Example:
    >>> expm(jnp.zeros((2, 2)))                  # the identity
  """
  A, = _inexact("jax.scipy.linalg.expm", A)
  if util.dtype_of(A) in (np.float16, dtypes.bfloat16):
    # JAX's error (its Padé thresholds are for single and double precision), also
    # for an empty matrix
    raise TypeError(f"A.dtype={util.dtype_of(A).name} is not supported.")
  _check_matrix("jax.scipy.linalg.expm", "A", A, square=True)
  try:
    max_squarings = operator.index(max_squarings)
  except TypeError:
    raise TypeError("jax.scipy.linalg.expm: argument max_squarings must be an integer, got "
                    f"{max_squarings!r}.") from None
  if max_squarings < 0:
    raise ValueError("jax.scipy.linalg.expm: argument max_squarings must be >= 0, got "
                     f"{max_squarings}.")
  if util.shape(A)[-1] == 0:
    return A
  return _expm(A, upper_triangular=bool(upper_triangular), max_squarings=max_squarings)


def expm_frechet(A, E, method=None, compute_expm=True):
  """The Fréchet derivative of the matrix exponential at `A` in the direction `E`.

  Args:
    A, E: [..., n, n] of the same shape.
    method: None or 'SPS' (the derivative of `expm`'s scaling-and-squaring Padé
      algorithm, Al-Mohy and Higham 2009), or 'blockEnlarge' (the upper-right
      block of expm([[A, E], [0, A]]), slower).
    compute_expm: also return expm(A).

  Returns `(expm(A), L)` or `L`, with L = d/dt expm(A + t E) at t = 0.

  Example:
    >>> expm_A, L = expm_frechet(A, E)
  """
  if method not in (None, "SPS", "blockEnlarge"):
    raise ValueError("jax.scipy.linalg.expm_frechet: argument method must be None, 'SPS' "
                     f"or 'blockEnlarge', got {method!r}.")
  A, E = _inexact("jax.scipy.linalg.expm_frechet", A, E)
  _check_matrix("jax.scipy.linalg.expm_frechet", "A", A, square=True)
  if util.shape(A) != util.shape(E):
    raise ValueError("jax.scipy.linalg.expm_frechet: arguments A and E must have the same "
                     f"shape, got {util.shape(A)} and {util.shape(E)}.")
  if method == "blockEnlarge":
    n = util.shape(A)[-1]
    top = shape_ops.concatenate([A, E], axis=-1)
    bottom = shape_ops.concatenate([ufuncs.multiply(A, 0), A], axis=-1)
    big = expm(shape_ops.concatenate([top, bottom], axis=-2))
    expm_A, L = big[..., :n, :n], big[..., :n, n:]
  else:
    expm_A, L = jvp(expm, (A,), (E,))
  return (expm_A, L) if compute_expm else L
