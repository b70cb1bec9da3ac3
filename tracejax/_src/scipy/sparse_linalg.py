"""`jax.scipy.sparse.linalg`: matrix-free Krylov solvers (`cg`, `bicgstab`, `gmres`).

The operator `A` (and the preconditioner `M`) is a square matrix or a function on
vectors; vectors may be any pytree of arrays. Each solver is one `lax.while_loop`
run inside `lax.custom_linear_solve`, so its derivatives are those of the linear
system A x = b (one more solve for a JVP, a transposed solve for a VJP), never of
the iterations. As in JAX, the second result (`info`) is None: a compiled loop
reports no convergence flag.

Stopping rules (SciPy's, with `tol` relative to |b| and `atol` absolute):
cg and bicgstab stop when |r| <= max(tol |b|, atol); gmres stops when the
preconditioned residual |M (b - A x)| <= max(tol |b|, atol), checked after each
restart cycle; its inner Arnoldi cycle stops early ('incremental') once the
residual it tracks through Givens rotations is below that tolerance rescaled to
the preconditioned norm.
"""
import functools
import operator

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.numpy import util
import tracejax.lax as lax
import tracejax.numpy as jnp

__all__ = ["cg", "bicgstab", "gmres"]

_HIGHEST = lax.Precision.HIGHEST


def _identity(x):
  return x


def _normalize_operator(fun_name, name, f):
  """A function on pytrees from a function or a square matrix."""
  if callable(f) and not util.is_arraylike(f):
    return f
  if util.is_arraylike(f):
    if util.ndim(f) != 2 or util.shape(f)[0] != util.shape(f)[1]:
      raise ValueError(f"{fun_name}: linear operator {name} must be a square matrix, but has "
                       f"shape: {util.shape(f)}")
    mat = util.to_array(f)
    return lambda x: jnp.matmul(mat, x, precision=_HIGHEST)
  raise TypeError(f"{fun_name}: linear operator {name} must be either a function or ndarray, "
                  f"got {type(f)}")


# ---- pytree vector algebra ----

def _vdot_real(x, y):
  """Re <x, y> summed over the leaves (x conjugated)."""
  return sum(jnp.real(jnp.vdot(a, b, precision=_HIGHEST))
             for a, b in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y)))


def _vdot(x, y):
  return sum(jnp.vdot(a, b, precision=_HIGHEST)
             for a, b in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(y)))


def _axpy(a, x, y):
  """a * x + y, leaf by leaf, keeping y's dtypes."""
  return tree_util.tree_map(lambda u, v: (a * u + v).astype(v.dtype), x, y)


def _sub(x, y):
  return tree_util.tree_map(lambda u, v: u - v, x, y)


def _scale(a, x):
  return tree_util.tree_map(lambda u: (a * u).astype(u.dtype), x)


def _result_dtype(tree):
  return jnp.result_type(*tree_util.tree_leaves(tree))


def _prepare(fun_name, A, b, x0, maxiter, M):
  """Checked operators, x0 and maxiter (10 * size of b by default, as SciPy)."""
  leaves = tree_util.tree_leaves(b)
  if not leaves:
    raise ValueError(f"{fun_name}: b must hold at least one array")
  for leaf in leaves:
    util.check_arraylike(fun_name, leaf)
  b = tree_util.tree_map(util.to_array, b)
  if x0 is None:
    x0 = tree_util.tree_map(jnp.zeros_like, b)
  else:
    x0 = tree_util.tree_map(util.to_array, x0)
    if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
      raise ValueError(f"{fun_name}: x0 and b must have matching tree structure: "
                       f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
    xs = [jnp.shape(v) for v in tree_util.tree_leaves(x0)]
    bs = [jnp.shape(v) for v in tree_util.tree_leaves(b)]
    if xs != bs:
      raise ValueError(f"{fun_name}: arrays in x0 and b must have matching shapes: "
                       f"{xs} vs {bs}")
    x0 = tree_util.tree_map(lambda x, bb: x.astype(bb.dtype), x0, b)
  size = sum(int(np.prod(jnp.shape(v))) for v in tree_util.tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size
  else:
    maxiter = operator.index(maxiter)
  A = _normalize_operator(fun_name, "A", A)
  M = _identity if M is None else _normalize_operator(fun_name, "M", M)
  return A, b, x0, maxiter, M, size


def _isolve(fun_name, solver, A, b, x0, tol, atol, maxiter, M, symmetric_if_real, **kw):
  A, b, x0, maxiter, M, size = _prepare(fun_name, A, b, x0, maxiter, M)
  solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                            size=size, **kw)
  # A real operator that CG can solve is symmetric positive definite: its transpose
  # solve is the solve itself.
  symmetric = symmetric_if_real and not any(
      dtypes.is_complex(v.dtype) for v in tree_util.tree_leaves(b))
  x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return x, None


def _tolerance2(b, tol, atol, dtype):
  rdt = dtypes.to_real_dtype(dtypes.to_inexact_dtype(dtype))
  bs = _vdot_real(b, b).astype(rdt)
  return jnp.maximum(jnp.square(jnp.asarray(tol, rdt)) * bs, jnp.square(jnp.asarray(atol, rdt)))


# ---- conjugate gradients ----

def _cg_solve(A, b, *, x0, tol, atol, maxiter, M, size):
  del size
  dtype = _result_dtype(b)
  atol2 = _tolerance2(b, tol, atol, dtype)
  r0 = _sub(b, A(x0))
  z0 = M(r0)
  gamma0 = _vdot_real(r0, z0).astype(dtype)

  def cond(state):
    _, r, gamma, _, k = state
    # Without a preconditioner gamma already is |r|^2.
    rs = jnp.real(gamma) if M is _identity else _vdot_real(r, r)
    return (rs > atol2) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    ap = A(p)
    alpha = gamma / _vdot_real(p, ap).astype(dtype)
    x = _axpy(alpha, p, x)
    r = _axpy(-alpha, ap, r)
    z = M(r)
    gamma_new = _vdot_real(r, z).astype(dtype)
    p = _axpy(gamma_new / gamma, p, z)
    return x, r, gamma_new, p, k + 1

  x, *_ = lax.while_loop(cond, body, (x0, r0, gamma0, z0, jnp.asarray(0, np.int32)))
  return x


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve A x = b by (preconditioned) conjugate gradients; A Hermitian positive definite.

  Args:
    A: a square matrix, or a function computing A @ x for a pytree x shaped like b.
    b: the right-hand side (an array or a pytree of arrays).
    x0: the starting guess (default zeros).
    tol, atol: stop once |b - A x| <= max(tol * |b|, atol).
    maxiter: the most iterations (default 10 * size of b).
    M: a preconditioner approximating inv(A) (matrix or function).

  Returns:
    `(x, info)` with info None (as JAX). x differentiates as the solution of A x = b.

  Example:
    >>> A = jnp.array([[4., 1.], [1., 3.]])
    >>> cg(A, jnp.array([1., 2.]))[0]
    Array([0.09090909, 0.6363636 ], dtype=float32)
  """
  return _isolve("cg", _cg_solve, A, b, x0, tol, atol, maxiter, M, True)


# ---- BiCGSTAB ----

def _bicgstab_solve(A, b, *, x0, tol, atol, maxiter, M, size):
  del size
  dtype = _result_dtype(b)
  atol2 = _tolerance2(b, tol, atol, dtype)
  r0 = _sub(b, A(x0))
  one = jnp.asarray(1, dtype)

  def cond(state):
    _, r, *_, k = state
    # k < 0 flags a breakdown (rho or omega or alpha became 0).
    return (_vdot_real(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, v, k = state
    rho_new = _vdot(rhat, r).astype(dtype)
    beta = rho_new / rho * alpha / omega
    p = _axpy(beta, _axpy(-omega, v, p), r)
    phat = M(p)
    v = A(phat)
    alpha = rho_new / _vdot(rhat, v).astype(dtype)
    s = _axpy(-alpha, v, r)
    converged_half = _vdot_real(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega_new = (_vdot(t, s) / _vdot(t, t)).astype(dtype)
    # If s is already small enough, the half step is the answer: skip the omega step.
    omega_step = jnp.where(converged_half, jnp.zeros_like(omega_new), omega_new)
    x = _axpy(omega_step, shat, _axpy(alpha, phat, x))
    r = _axpy(-omega_step, t, s)
    k_new = jnp.where((omega_new == 0) | (alpha == 0), -11, k + 1)
    k_new = jnp.where(rho_new == 0, -10, k_new).astype(np.int32)
    omega = jnp.where(converged_half, omega, omega_new)
    return x, r, rhat, alpha, omega, rho_new, p, v, k_new

  zeros = tree_util.tree_map(jnp.zeros_like, b)
  init = (x0, r0, r0, one, one, one, zeros, zeros, jnp.asarray(0, np.int32))
  return lax.while_loop(cond, body, init)[0]


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
  """Solve A x = b by the biconjugate gradient stabilized method (any nonsingular A).

  Args: as `cg` (A need not be symmetric).

  Returns:
    `(x, info)` with info None (as JAX).

  Example:
    >>> A = jnp.array([[3., 1.], [-1., 2.]])
    >>> bicgstab(A, jnp.array([1., 0.]))[0]
    Array([0.2857143 , 0.14285713], dtype=float32)
  """
  return _isolve("bicgstab", _bicgstab_solve, A, b, x0, tol, atol, maxiter, M, False)


# ---- GMRES ----

def _raveler(tree):
  """(ravel, unravel) between a pytree of arrays and one 1-D vector of their common dtype."""
  leaves, treedef = tree_util.tree_flatten(tree)
  shapes = [jnp.shape(v) for v in leaves]
  leaf_dtypes = [v.dtype for v in leaves]
  sizes = [int(np.prod(s)) for s in shapes]
  dtype = jnp.result_type(*leaves)
  splits = list(np.cumsum(sizes)[:-1])

  def ravel(t):
    ls = tree_util.tree_leaves(t)
    return jnp.concatenate([jnp.ravel(v).astype(dtype) for v in ls]) if len(ls) > 1 else \
        jnp.ravel(ls[0]).astype(dtype)

  def unravel(v):
    parts = jnp.split(v, splits) if splits else [v]
    return tree_util.tree_unflatten(treedef, [
        p.reshape(s).astype(d) for p, s, d in zip(parts, shapes, leaf_dtypes)])
  return ravel, unravel, dtype


def _safe_normalize(v, norm=None):
  norm = jnp.linalg.norm(v) if norm is None else norm
  ok = norm > 0
  return jnp.where(ok, v / jnp.where(ok, norm, 1).astype(v.dtype), 0).astype(v.dtype), norm


def _arnoldi_column(matvec, V, j):
  """New Krylov direction from V[j]: (unit vector, coefficients h with h[j + 1] = its norm).

  Classical Gram-Schmidt applied twice ("CGS2"): as stable as modified Gram-Schmidt,
  but two matrix products instead of a loop. Rows of V past j are zero, so they
  contribute nothing."""
  w = matvec(V[j])
  h = jnp.matmul(jnp.conj(V), w, precision=_HIGHEST)
  w = w - jnp.matmul(h, V, precision=_HIGHEST)
  h2 = jnp.matmul(jnp.conj(V), w, precision=_HIGHEST)
  w = w - jnp.matmul(h2, V, precision=_HIGHEST)
  h = h + h2
  v, norm = _safe_normalize(w)
  return v, h.at[j + 1].set(norm.astype(h.dtype))


def _givens(a, b):
  """(c, s) with [[conj c, conj s], [-s, c]] @ [a, b] = [r, 0] (r = hypot(|a|, |b|))."""
  r = jnp.sqrt(jnp.abs(a) ** 2 + jnp.abs(b) ** 2)
  zero = r == 0
  safe = jnp.where(zero, 1, r).astype(a.dtype)
  c = jnp.where(zero, jnp.ones_like(a), a / safe)
  s = jnp.where(zero, jnp.zeros_like(b), b / safe)
  return c, s


def _cycle_incremental(matvec, v0, beta, ptol, restart, dtype):
  """One restart cycle tracking the residual with Givens rotations; stops early."""
  n = v0.shape[0]
  V = jnp.zeros((restart + 1, n), dtype).at[0].set(v0)
  R = jnp.zeros((restart, restart), dtype)
  cs = jnp.zeros((restart, 2), dtype)
  g = jnp.zeros((restart + 1,), dtype).at[0].set(beta.astype(dtype))

  def cond(state):
    _, _, _, g, j = state
    return (j < restart) & (jnp.abs(g[j]) > ptol)

  def body(state):
    V, R, cs, g, j = state
    v, h = _arnoldi_column(matvec, V, j)
    V = V.at[j + 1].set(v)

    def rotate(i, h):
      c, s = cs[i, 0], cs[i, 1]
      hi, hi1 = h[i], h[i + 1]
      new = jnp.where(i < j, jnp.conj(c) * hi + jnp.conj(s) * hi1, hi)
      new1 = jnp.where(i < j, -s * hi + c * hi1, hi1)
      return h.at[i].set(new).at[i + 1].set(new1)
    h = lax.fori_loop(0, restart, rotate, h)
    c, s = _givens(h[j], h[j + 1])
    rjj = jnp.conj(c) * h[j] + jnp.conj(s) * h[j + 1]
    h = h.at[j].set(rjj)
    R = R.at[:, j].set(h[:restart] * (jnp.arange(restart) <= j))
    cs = cs.at[j].set(jnp.stack([c, s]))
    gj = g[j]
    g = g.at[j].set(jnp.conj(c) * gj).at[j + 1].set(-s * gj)
    return V, R, cs, g, j + 1

  V, R, cs, g, k = lax.while_loop(cond, body, (V, R, cs, g, jnp.asarray(0, np.int32)))
  # Solve the k x k triangle; the unused tail is an identity block with zero rhs.
  used = jnp.arange(restart) < k
  R = jnp.where(used[:, None] & used[None, :], R, jnp.eye(restart, dtype=dtype))
  diag_zero = jnp.diagonal(R) == 0
  R = R + jnp.diag(diag_zero.astype(dtype))
  y = lax.linalg.triangular_solve(R, jnp.where(used, g[:restart], 0)[:, None], left_side=True,
                                  lower=False)[:, 0]
  return jnp.matmul(y, V[:restart], precision=_HIGHEST)


def _cycle_batched(matvec, v0, beta, ptol, restart, dtype):
  """One full restart cycle, then one least-squares solve of the Hessenberg system."""
  del ptol
  n = v0.shape[0]
  V = jnp.zeros((restart + 1, n), dtype).at[0].set(v0)
  H = jnp.zeros((restart + 1, restart), dtype)

  def body(j, state):
    V, H = state
    v, h = _arnoldi_column(matvec, V, j)
    return V.at[j + 1].set(v), H.at[:, j].set(h)
  V, H = lax.fori_loop(0, restart, body, (V, H))
  rhs = jnp.zeros((restart + 1,), dtype).at[0].set(beta.astype(dtype))
  y = jnp.linalg.lstsq(H, rhs)[0]
  return jnp.matmul(y, V[:restart], precision=_HIGHEST)


def _gmres_solve(A, b, *, x0, tol, atol, maxiter, M, size, restart, solve_method):
  ravel, unravel, dtype = _raveler(b)
  rdt = dtypes.to_real_dtype(dtype)
  bv, xv = ravel(b), ravel(x0)

  def matvec(v):
    return ravel(M(A(unravel(v))))

  def residual(x):
    return ravel(M(_sub(b, A(unravel(x)))))

  b_norm = jnp.linalg.norm(bv).astype(rdt)
  tol_abs = jnp.maximum(jnp.asarray(tol, rdt) * b_norm, jnp.asarray(atol, rdt))
  mb_norm = jnp.linalg.norm(ravel(M(b))).astype(rdt)
  # The inner cycle sees preconditioned residuals: rescale the tolerance to them.
  ptol = mb_norm * jnp.minimum(1.0, tol_abs / jnp.where(b_norm > 0, b_norm, 1)).astype(rdt)
  restart = min(restart, size)
  cycle = _cycle_incremental if solve_method == "incremental" else _cycle_batched
  u0, r_norm0 = _safe_normalize(residual(xv))

  def cond(state):
    _, _, r_norm, k = state
    return (k < maxiter) & (r_norm > tol_abs)

  def body(state):
    x, u, r_norm, k = state
    x = x + cycle(matvec, u, r_norm, ptol, restart, dtype)
    u, r_norm = _safe_normalize(residual(x))
    return x, u, r_norm.astype(rdt), k + 1

  x, *_ = lax.while_loop(cond, body, (xv, u0, r_norm0.astype(rdt), jnp.asarray(0, np.int32)))
  return unravel(x)


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
  """Solve A x = b by restarted GMRES (any nonsingular A).

  Args:
    A, b, x0, M: as `cg` (A need not be symmetric or definite).
    tol, atol: stop once the preconditioned residual |M (b - A x)| <= max(tol |b|, atol).
    restart: the Krylov subspace size per cycle (capped at the size of b).
    maxiter: the most restart cycles (default 10 * size of b).
    solve_method: 'batched' (a whole cycle, then one least-squares solve: fewer
      dependent steps) or 'incremental' (Givens rotations after each step, stopping a
      cycle as soon as it converges: fewer matrix-vector products).

  Returns:
    `(x, info)` with info None (as JAX).

  Example:
    >>> A = jnp.array([[3., 1.], [-1., 2.]])
    >>> gmres(A, jnp.array([1., 0.]))[0]
    Array([0.2857143 , 0.14285713], dtype=float32)
  """
  if solve_method not in ("incremental", "batched"):
    raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got "
                     f"{solve_method!r}")
  restart = operator.index(restart)
  if restart < 1:
    raise ValueError(f"gmres: restart must be a positive integer, got {restart}")
  return _isolve("gmres", _gmres_solve, A, b, x0, tol, atol, maxiter, M, False,
                 restart=restart, solve_method=solve_method)
