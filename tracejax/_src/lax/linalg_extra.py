"""More of `jax.lax.linalg`: tridiagonal_solve, cholesky_update, symmetric_product
and qdwh (the polar decomposition by QR-based dynamically weighted Halley
iterations). Its `__all__` also re-exports the algorithm enums (linalg_enums.py).

tridiagonal_solve lowers on CPU to jaxlib's LAPACK gtsv kernel (or its
`tridiagonal_solve_perturbed_ffi` kernel) and is differentiable in every operand,
as in JAX: its JVP solves for A^-1 (db - dA x) and it transposes (in b) to the
solve with A^T. cholesky_update and symmetric_product are primitives lowered as
lax compositions (linalg._Emit); JAX differentiates neither and does not batch
cholesky_update, so neither do we. qdwh is a traced function of lax ops, like
JAX's, and follows Nakatsukasa & Higham's algorithm ("Stable and efficient
spectral divide and conquer algorithms for the symmetric eigenvalue
decomposition and the SVD", SISC 2013) with JAX's choices of tolerances, so it
takes the same number of iterations.

This module imports linalg.py, never the reverse.
"""
import math

import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.lax import elementwise as ew
from tracejax._src.lax import linalg as _la
from tracejax._src.lax import reductions
from tracejax._src.lax import slicing
from tracejax._src.lax import structural
from tracejax._src.lax.linalg_enums import (EigImplementation, EighImplementation,
                                           SvdAlgorithm)
from tracejax._src.lax.linalg_householder import (
    batch_all, check_batch_sizes, check_dtypes, check_lapack, check_ranks,
    nan_unless_info, not_differentiable)
from tracejax._src.lax.structural import _aval, _shape
from tracejax._src.lax.utils import standard_primitive

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky_update",
           "cholesky_update_p", "qdwh", "symmetric_product", "symmetric_product_p",
           "tridiagonal_solve", "tridiagonal_solve_p"]


# =============================================================================
# tridiagonal_solve
# =============================================================================

def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
  """Solves A X = B for a tridiagonal A (LAPACK gtsv on CPU).

  `dl`, `d` and `du` [..., m] are A's sub-, main and super-diagonals, with
  A[i, i - 1] = dl[i] and A[i, i + 1] = du[i] (so dl[0] and du[m - 1] are not
  read); `b` is [..., m, n]. Returns X, of `b`'s shape; NaNs for a singular A,
  unless `perturb_singular`, with which jaxlib's own kernel replaces zero pivots by
  a tiny value and returns a (huge but finite) solution instead.
  Differentiable in all four operands.
  """
  return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


def _tridiagonal_solve_shape_rule(dl, d, du, b, *, perturb_singular):
  check_ranks("tridiagonal_solve", [dl, d, du, b], [1, 1, 1, 2])
  # Only the core dimensions here: batch sizes are compared after the dtypes.
  if not dl.shape[-1] == d.shape[-1] == du.shape[-1]:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    "shape.")
  if b.shape[-2] != d.shape[-1]:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                    "equal the dimensions of the diagonal arguments.")
  return b.shape


def _tridiagonal_solve_dtype_rule(dl, d, du, b, *, perturb_singular):
  check_dtypes("tridiagonal_solve", [dl, d, du, b])
  check_batch_sizes([dl, d, du, b], [1, 1, 1, 2])
  check_lapack("tridiagonal_solve", d)
  return b.dtype


def _shift(x, axis, down):
  """x shifted one step along `axis` with a zero filling the vacated end: down gives
  y[i] = x[i - 1] (y[0] = 0), up gives y[i] = x[i + 1]."""
  shape = _shape(x)
  nd = len(shape)
  axis %= nd
  if shape[axis] == 0:
    return x
  start = [0] * nd
  limit = list(shape)
  pad = [(0, 0, 0)] * nd
  if down:
    limit[axis] -= 1
    pad[axis] = (1, 0, 0)
  else:
    start[axis] = 1
    pad[axis] = (0, 1, 0)
  part = slicing.slice(x, tuple(start), tuple(limit))
  return structural.pad(part, _la._scalar(0, _la._dtype(x)), pad)


def _tridiagonal_matmul(dl, d, du, x):
  """A @ x for the tridiagonal A of (dl, d, du) and x [..., m, n]."""
  n = _shape(x)[-1]
  prev, nxt = _shift(x, -2, down=True), _shift(x, -2, down=False)
  return ew.add(ew.add(ew.mul(_la._cols_of(dl, n), prev), ew.mul(_la._cols_of(d, n), x)),
                ew.mul(_la._cols_of(du, n), nxt))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
  # x = A^-1 b, so dx = A^-1 (db - dA x), dA being tridiagonal with the tangents of
  # the three diagonals.
  dl, d, du, b = primals
  ddl, dd, ddu, db = tangents
  x = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
  rhs = ad.instantiate_zeros(db)
  if not all(type(t) is ad.Zero for t in (ddl, dd, ddu)):
    ddl, dd, ddu = (ad.instantiate_zeros(t) for t in (ddl, dd, ddu))
    rhs = ew.sub(rhs, _tridiagonal_matmul(ddl, dd, ddu, x))
  return x, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
  # Linear in b only: its cotangent solves with A^T, whose subdiagonal is du shifted
  # down one place and whose superdiagonal is dl shifted up one place.
  assert ad.is_undefined_primal(b) and not any(
      ad.is_undefined_primal(x) for x in (dl, d, du))
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  ct_b = tridiagonal_solve_p.bind(_shift(du, -1, down=True), d, _shift(dl, -1, down=False),
                                  ct, perturb_singular=perturb_singular)
  return [None, None, None, ct_b]


def _tridiagonal_solve_cpu_lowering(ctx, dl, d, du, b, *, perturb_singular):
  avals = ctx.avals_in
  b_aval = avals[3]
  if 0 in b_aval.shape:
    return [b]
  if perturb_singular:
    # jaxlib's kernel replaces tiny pivots with a perturbation (no info output).
    return _la._lapack_call(ctx, "tridiagonal_solve_perturbed_ffi", [dl, d, du, b], list(avals),
                    [b_aval])
  info_aval = _la._info_aval(b_aval)
  *_, x, info = _la._lapack_call(ctx, _la._lapack_target("gtsv", b_aval.dtype), [dl, d, du, b],
                         list(avals), list(avals) + [info_aval],
                         aliases={0: 0, 1: 1, 2: 2, 3: 3})
  return nan_unless_info(ctx, info, info_aval, [(x, b_aval)])


tridiagonal_solve_p = standard_primitive(_tridiagonal_solve_shape_rule,
                                         _tridiagonal_solve_dtype_rule, "tridiagonal_solve")
ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batch_all(tridiagonal_solve_p)
mlir.register_lowering(tridiagonal_solve_p, _tridiagonal_solve_cpu_lowering, platform="cpu")


# =============================================================================
# cholesky_update
# =============================================================================

def cholesky_update(r_matrix, w_vector):
  """The Cholesky factor of a rank-one update: given upper-triangular R with
  A = R^T R and a vector w, returns the upper-triangular R' with
  R'^T R' = A + w w^T (positive diagonal).

  One matrix [n, n] and one vector [n] (no batch dimensions, and no vmap, as in
  JAX); real floating dtypes. Each row k is rotated with w by the Givens rotation
  that zeroes w[k]. Not differentiable.
  """
  return cholesky_update_p.bind(r_matrix, w_vector)


def _cholesky_update_shape_rule(r, w):
  for i, (a, rank) in enumerate(((r, 2), (w, 1))):
    if a.ndim < rank:
      raise TypeError(f"Input {i} to cholesky_update must have rank at least {rank}, but "
                      f"got shape={a.shape}")
    if a.ndim > rank:
      raise TypeError(f"Input {i} to cholesky_update must have a rank of exactly {rank}, "
                      f"but got shape={a.shape}")
  if r.shape[0] != r.shape[1] or w.shape[0] != r.shape[0]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r.shape} and "
                     f"{w.shape} instead")
  return r.shape


def _cholesky_update_dtype_rule(r, w):
  check_dtypes("cholesky_update", [r, w], complex_ok=False)
  return r.dtype


def _givens(x, y):
  """(c, s) with c x - s y = hypot(x, y) and s x + c y = 0; (1, 0) when y == 0.
  Scaled by max(|x|, |y|) so that the squares cannot overflow."""
  dt = _la._dtype(x)
  one, zero = _la._scalar(1, dt), _la._scalar(0, dt)
  ax, ay = ew.abs(x), ew.abs(y)
  scale = ew.select(ew.gt(ax, ay), ax, ay)
  y_zero = ew.eq(y, zero)
  scale = ew.select(y_zero, structural.full_like(scale, 1), scale)  # no 0/0 to discard
  xs, ys = ew.div(x, scale), ew.div(y, scale)
  inv = ew.div(one, ew.sqrt(ew.add(ew.mul(xs, xs), ew.mul(ys, ys))))
  c = ew.select(y_zero, one, ew.mul(xs, inv))
  s = ew.select(y_zero, zero, ew.mul(ew.neg(ys), inv))
  return c, s


def _cholesky_update_composition(r, w):
  # One Givens rotation per row, unrolled (n is static): row k of R and w rotate
  # together so that w[k] becomes zero and R[k, k] the norm of the pair. Whole rows
  # rotate, as in JAX, so entries below the diagonal (zeros for a triangular R) mix
  # with w's already-zeroed entries.
  n = _shape(r)[0]
  for k in range(n):
    row = structural.reshape(slicing.slice(r, (k, 0), (k + 1, n)), (n,))
    rkk = structural.reshape(slicing.slice(r, (k, k), (k + 1, k + 1)), ())
    wk = structural.reshape(slicing.slice(w, (k,), (k + 1,)), ())
    c, s = _givens(rkk, wk)
    c_v, s_v = structural.broadcast_in_dim(c, (n,), ()), structural.broadcast_in_dim(s, (n,), ())
    new_row = ew.sub(ew.mul(c_v, row), ew.mul(s_v, w))
    w = ew.add(ew.mul(c_v, w), ew.mul(s_v, row))
    r = slicing.dynamic_update_slice(r, structural.reshape(new_row, (1, n)),
                                     (np.int32(k), np.int32(0)))
  return r


def _cholesky_update_lowering(ctx, r, w):
  r_aval, w_aval = ctx.avals_in
  with _la._Emit(ctx) as em:
    out = _cholesky_update_composition(em.wrap(r, r_aval), em.wrap(w, w_aval))
  return [em.value(out)]


cholesky_update_p = standard_primitive(_cholesky_update_shape_rule,
                                       _cholesky_update_dtype_rule, "cholesky_update")
not_differentiable(cholesky_update_p)


def _cholesky_update_batch(args, dims):
  # JAX 0.10.2 has no batching rule for it (its update is one unrolled sequence of
  # Givens rotations on one matrix): the same error here.
  raise NotImplementedError("Batching rule for 'cholesky_update' not implemented")


batching.primitive_batchers[cholesky_update_p] = _cholesky_update_batch
mlir.register_lowering(cholesky_update_p, _cholesky_update_lowering)


# =============================================================================
# symmetric_product
# =============================================================================

def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
  """alpha A A^T + beta C, for A [..., m, n] and C [..., m, m] (real floating dtypes).

  With `symmetrize_output` the result is made exactly symmetric from its lower
  triangle (C need not be symmetric; without it, it is added as it is). `alpha`
  and `beta` are Python numbers. Not differentiable, as in JAX.
  """
  out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=alpha, beta=beta)
  if symmetrize_output:
    out = ew.add(_la._tril(out), _la._T(_la._tril(out, -1)))
  return out


def _symmetric_product_shape_rule(a, c, *, alpha, beta):
  check_ranks("symmetric_product", [a, c], [2, 2])
  m = a.shape[-2]
  if c.shape[-2:] != (m, m):
    raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a "
                     f"square matrix of shape (n, n). Got shapes {a.shape} and {c.shape}.")
  return c.shape


def _symmetric_product_dtype_rule(a, c, *, alpha, beta):
  check_dtypes("symmetric_product", [a, c], complex_ok=False)
  check_batch_sizes([a, c], [2, 2])
  return c.dtype


def _symmetric_product_lowering(ctx, a, c, *, alpha, beta):
  a_aval, c_aval = ctx.avals_in
  dt = c_aval.dtype
  with _la._Emit(ctx) as em:
    a_t = em.wrap(a, a_aval)
    prod = _la._matmul(a_t, _la._T(a_t))
    out = ew.add(ew.mul(_la._scalar(alpha, dt), prod),
                 ew.mul(_la._scalar(beta, dt), em.wrap(c, c_aval)))
  return [em.value(out)]


symmetric_product_p = standard_primitive(_symmetric_product_shape_rule,
                                         _symmetric_product_dtype_rule, "symmetric_product")
not_differentiable(symmetric_product_p)
batch_all(symmetric_product_p)
mlir.register_lowering(symmetric_product_p, _symmetric_product_lowering)


# =============================================================================
# qdwh
# =============================================================================

_CHOLESKY_CUTOFF = 100  # c above this: the QR-based step (better conditioned)


def _qdwh_coefficients(l, tol_l, max_iterations):
  """The dynamically weighted Halley parameters (a, b, c) for each step while the
  lower bound `l` on the scaled singular values is below 1 (computed in Python: they
  depend on eps only), split into the leading QR-based steps and the Cholesky ones."""
  qr_steps, chol_steps = [], []
  k = 0
  while l + tol_l < 1 and k < max_iterations:
    k += 1
    l2 = l * l
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = math.sqrt(1 + dd)
    a = sqd + math.sqrt(8 - 4 * dd + 8 * (2 - l2) / (l2 * sqd)) / 2
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    l = l * (a + b * l2) / (1 + c * l2)
    (qr_steps if c > _CHOLESKY_CUTOFF else chol_steps).append((a, b, c))
  return qr_steps, chol_steps


def _qdwh_qr_step(u, a, b, c):
  # U <- (b/c) U + (a - b/c)/sqrt(c) Q1 Q2^H, with [sqrt(c) U; I] = [Q1; Q2] R.
  m, n = _shape(u)
  dt = _la._dtype(u)
  y = structural.concatenate([ew.mul(u, _la._scalar(math.sqrt(c), dt)), _la._eye((n, n), dt)], 0)
  q, _ = _la.qr(y, full_matrices=False)
  q1, q2 = slicing.slice(q, (0, 0), (m, n)), slicing.slice(q, (m, 0), (m + n, n))
  e = b / c
  return ew.add(ew.mul(u, _la._scalar(e, dt)),
                ew.mul(_la._matmul(q1, _la._H(q2)), _la._scalar((a - e) / math.sqrt(c), dt)))


def _qdwh_cholesky_step(u, a, b, c):
  # U <- (b/c) U + (a - b/c) U (I + c U^H U)^-1, the inverse applied through the
  # Cholesky factor W of I + c U^H U: Z = U W^-H W^-1 by two triangular solves.
  n = _shape(u)[1]
  dt = _la._dtype(u)
  z = ew.add(ew.mul(_la._matmul(_la._H(u), u), _la._scalar(c, dt)), _la._eye((n, n), dt))
  w = _la.cholesky(z, symmetrize_input=False)
  t = _la.triangular_solve(w, u, left_side=False, lower=True, transpose_a=True,
                           conjugate_a=True)   # U W^-H
  t = _la.triangular_solve(w, t, left_side=False, lower=True)  # (U W^-H) W^-1
  e = b / c
  return ew.add(ew.mul(u, _la._scalar(e, dt)), ew.mul(t, _la._scalar(a - e, dt)))


def _fro_norm(x):
  ax = ew.abs(x)
  return ew.sqrt(reductions.reduce_sum(ew.mul(ax, ax), (0, 1)))


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
  """Polar decomposition x = U H by the QDWH iteration.

  `x` is one matrix [M, N] with M >= N (float or complex). Returns
  `(u, h, num_iters, is_converged)`: U [M, N] with orthonormal columns, H [N, N]
  Hermitian positive semidefinite, the number of iterations taken and whether
  ||U_k - U_{k-1}||_F fell below eps^(1/3)-ish within `max_iterations` (default
  10). `eps` defaults to the dtype's machine epsilon. `dynamic_shape=(m, n)`
  decomposes only the leading m x n block (the rest of x is taken as zero; U and H
  are zero outside it). `is_hermitian` is accepted and unused, as in JAX.
  Differentiable in forward mode only (the iteration count is data-dependent).
  """
  from tracejax._src.control_flow.loops import while_loop  # (control flow imports lax)
  del is_hermitian
  aval = _aval(x)
  if aval.ndim != 2:
    raise ValueError(f"qdwh expects a matrix of shape M x N, got shape {aval.shape}.")
  if not dtypes.issubdtype(aval.dtype, np.inexact):
    raise ValueError(f"data type {aval.dtype.type} not inexact")
  M, N = aval.shape
  if M < N:
    raise ValueError("The input matrix of shape M x N must have M >= N.")
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  dt = aval.dtype
  rdt = dtypes.to_real_dtype(dt)
  if eps is None:
    eps = float(np.finfo(rdt).eps)
  if dynamic_shape is not None:
    m, n = dynamic_shape
    keep = ew.and_(ew.lt(structural.broadcasted_iota(np.int32, (M, N), 0), np.int32(m)),
                   ew.lt(structural.broadcasted_iota(np.int32, (M, N), 1), np.int32(n)))
    x = ew.select(keep, x, _la._zeros((M, N), dt))

  # Scale by 1/sqrt(||x||_1 ||x||_inf) >= 1/||x||_2, so that every singular value is
  # at most 1; eps is then the lower bound assumed for the smallest one.
  ax = ew.abs(x)
  one_norm = reductions.reduce_max(reductions.reduce_sum(ax, (0,)), (0,))
  inf_norm = reductions.reduce_max(reductions.reduce_sum(ax, (1,)), (0,))
  alpha_inv = ew.mul(ew.rsqrt(one_norm), ew.rsqrt(inf_norm))
  alpha_inv = ew.select(ew.eq(one_norm, _la._scalar(0, rdt)), _la._scalar(1, rdt), alpha_inv)
  u = ew.mul(x, _la._as_dtype(alpha_inv, dt))

  tol_l = 10.0 * eps / 2.0
  tol_norm = _la._scalar(tol_l ** (1 / 3), rdt)
  qr_steps, chol_steps = _qdwh_coefficients(eps, tol_l, max_iterations)
  for a, b, c in qr_steps:
    u = _qdwh_qr_step(u, a, b, c)
  not_converged = np.bool_(True)
  for a, b, c in chol_steps:
    u_prev = u
    u = _qdwh_cholesky_step(u, a, b, c)
    not_converged = ew.gt(_fro_norm(ew.sub(u, u_prev)), tol_norm)

  # Once the bound reaches 1 the weights are Halley's (a, b, c) = (3, 1, 3): continue
  # with those until U settles or the iterations run out.
  def cond(carry):
    k, _, nc = carry
    return ew.and_(nc, ew.lt(k, _la._scalar(max_iterations, _la._dtype(k))))

  def body(carry):
    k, u, _ = carry
    u_next = _qdwh_cholesky_step(u, 3.0, 1.0, 3.0)
    nc = ew.gt(_fro_norm(ew.sub(u_next, u)), tol_norm)
    return ew.add(k, _la._scalar(1, _la._dtype(k))), u_next, nc

  k0 = len(qr_steps) + len(chol_steps)
  num_iters, u, not_converged = while_loop(cond, body, (k0, u, not_converged))
  # A Newton-Schulz step polishes U's orthogonality, then H = U^H x, made Hermitian.
  uhu = _la._matmul(_la._H(u), u)
  u = ew.sub(ew.mul(u, _la._scalar(1.5, dt)), ew.mul(_la._matmul(u, uhu), _la._scalar(0.5, dt)))
  h = _la._matmul(_la._H(u), x)
  h = _la.symmetrize(h)
  # The count started as a Python int: weakly typed, as JAX's is.
  num_iters = ew._convert_element_type(num_iters, _la._dtype(num_iters), weak_type=True)
  return u, h, num_iters, ew.not_(not_converged)
