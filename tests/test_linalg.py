"""Linear algebra: the lax primitives (cholesky, triangular_solve, lu, qr, eigh, svd, eig)
and jax.numpy.linalg.

Decompositions are not unique, so they are checked by reconstruction (L L^H == A,
P A == L U, Q R == A, A V == V diag(w), U diag(s) V^H == A) and against NumPy/SciPy
where the result is unique. Each primitive also runs under jit and vmap (against a
Python loop), its abstract eval is compared with the real output, and its derivatives
are checked against finite differences (float64, with x64 switched on for the test).
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

from tracejax._src.api import grad, jvp, make_jaxpr, vjp, vmap
from tracejax._src.config import config
from tracejax._src.jit import jit
from tracejax._src.lax import linalg as L
from tracejax._src.test_util import check_grads, check_jvp, numerical_jvp
import tracejax.numpy as jnp
from tracejax.numpy import linalg as jla

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F32, F64, C64, C128 = (np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                             np.complex128))


@pytest.fixture(params=[F32, C64, F64], ids=lambda d: d.name)
def dtype(request):
  """float32, complex64, and float64 (with x64 on for the test)."""
  old = config.jax_enable_x64
  if request.param == F64:
    config.update("jax_enable_x64", True)
  try:
    yield request.param
  finally:
    config.update("jax_enable_x64", old)


def _tol(dtype):
  return 1e-10 if np.dtype(dtype) in (F64, C128) else 2e-4


def _rand(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape)
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dtype)


def _H(x):
  return np.conj(np.swapaxes(x, -1, -2))


def _spd(shape, dtype, seed=0):
  """Hermitian positive definite and well conditioned."""
  a = _rand(shape, dtype, seed)
  n = shape[-1]
  return (a @ _H(a) / n + np.eye(n)).astype(dtype)


def _well_conditioned(shape, dtype, seed=0):
  a = _rand(shape, dtype, seed)
  if shape[-1] == shape[-2]:
    a = a + 3 * np.eye(shape[-1], dtype=dtype)
  return a


def _close(actual, expected, dtype, scale=1.0, err_msg=""):
  np.testing.assert_allclose(np.asarray(actual), expected, rtol=_tol(dtype) * scale,
                             atol=_tol(dtype) * scale, err_msg=err_msg)


def _check_jit_and_avals(fun, *args):
  """jit agrees with eager, and the abstract eval with the real outputs."""
  eager = fun(*args)
  jitted = jit(fun)(*args)
  outs_e = eager if isinstance(eager, (tuple, list)) else [eager]
  outs_j = jitted if isinstance(jitted, (tuple, list)) else [jitted]
  avals = make_jaxpr(fun)(*args).out_avals
  assert len(outs_e) == len(outs_j) == len(avals)
  for e, j, a in zip(outs_e, outs_j, avals):
    assert (a.shape, a.dtype) == (e.shape, e.dtype) == (j.shape, j.dtype)
    if np.issubdtype(e.dtype, np.inexact):
      np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5, atol=1e-5)
    else:
      np.testing.assert_array_equal(np.asarray(j), np.asarray(e))
  return eager


def _check_vjp_complex(f, args, tol, eps=1e-4):
  """Reverse mode against finite differences, with JAX's convention for complex values
  (cotangents pair with tangents by Re <t, ct>, and vjp is applied to conj(ct))."""
  rng = np.random.default_rng(5)

  def rand_like(x):
    x = np.asarray(x)
    r = rng.standard_normal(x.shape)
    if np.iscomplexobj(x):
      r = r + 1j * rng.standard_normal(x.shape)
    return r.astype(x.dtype)

  out, f_vjp = vjp(f, *args)
  multi = isinstance(out, (tuple, list))
  outs = list(out) if multi else [out]
  t_in = tuple(rand_like(a) for a in args)
  t_out = numerical_jvp(f, args, t_in, eps)
  t_outs = list(t_out) if multi else [t_out]
  cts = [rand_like(o) for o in outs]
  ct_arg = type(out)(np.conj(c) for c in cts) if multi else np.conj(cts[0])
  ct_in = [np.conj(np.asarray(c)) for c in f_vjp(ct_arg)]
  ip = sum(np.real(np.vdot(t, c)) for t, c in zip(t_in, ct_in))
  ip_expected = sum(np.real(np.vdot(np.asarray(t), c)) for t, c in zip(t_outs, cts))
  np.testing.assert_allclose(ip, ip_expected, rtol=tol, atol=tol)


def _check_grads(f, args, order=1, tol=None):
  """check_grads for real functions; for complex arguments or outputs the forward check
  of check_grads and a reverse check with JAX's complex convention (check_grads's own
  reverse check conjugates differently)."""
  out = f(*args)
  outs = out if isinstance(out, (tuple, list)) else [out]
  if any(np.iscomplexobj(a) for a in list(args) + [np.asarray(o) for o in outs]):
    tol = tol or 1e-5
    check_jvp(f, lambda a, t: jvp(f, a, t), tuple(args), atol=tol, rtol=tol)
    _check_vjp_complex(f, args, tol)
  else:
    check_grads(f, args, order, atol=tol, rtol=tol)


def _vmap_matches_loop(fun, args, in_axes):
  out = vmap(fun, in_axes=in_axes)(*args)
  size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
  per = [fun(*[a if ax is None else np.take(a, k, ax) for a, ax in zip(args, in_axes)])
         for k in range(size)]
  outs = out if isinstance(out, (tuple, list)) else [out]
  pers = [p if isinstance(p, (tuple, list)) else [p] for p in per]
  for i, o in enumerate(outs):
    expected = np.stack([np.asarray(p[i]) for p in pers])
    np.testing.assert_allclose(np.asarray(o), expected, rtol=1e-5, atol=1e-5)


# =============================================================================
# cholesky
# =============================================================================

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5)])
def test_cholesky(dtype, shape):
  a = _spd(shape, dtype)
  l = _check_jit_and_avals(L.cholesky, a)
  l = np.asarray(l)
  assert l.dtype == dtype
  _close(l @ _H(l), a, dtype, 10)
  np.testing.assert_array_equal(np.triu(l, 1), 0)
  _close(l, np.linalg.cholesky(a), dtype, 10)
  # symmetrize_input=False reads only the lower triangle.
  junk = a + np.triu(np.ones_like(a), 1) * 7
  _close(L.cholesky(junk, symmetrize_input=False), l, dtype, 10)


def test_cholesky_not_positive_definite_gives_nans():
  a = np.array([[[1., 2.], [2., 1.]], [[2., 0.], [0., 3.]]], np.float32)
  l = np.asarray(L.cholesky(a))
  # JAX 0.10.2: [[nan, 0], [nan, nan]] (NaN on and below the diagonal, zeros above)
  assert np.isnan(l[0][np.tril_indices(2)]).all() and l[0, 0, 1] == 0
  np.testing.assert_allclose(l[1], np.linalg.cholesky(a[1]), rtol=1e-6)


def test_cholesky_grads(x64):
  a = _spd((3, 3), F64)
  _check_grads(L.cholesky, (a,), order=2)
  _check_grads(lambda x: L.cholesky(x, symmetrize_input=False), (a,), order=1)
  _check_grads(L.cholesky, (_spd((3, 3), C128),))


def test_cholesky_vmap():
  a = _spd((3, 4, 4), F32)
  _vmap_matches_loop(L.cholesky, (a,), (0,))
  _vmap_matches_loop(L.cholesky, (np.moveaxis(a, 0, 2),), (2,))


def test_complex_cholesky_holomorphic_grad():
  """The seed (autodiff cookbook): grad(holomorphic=True) through a complex Cholesky."""
  A = jnp.array([[5., 2. + 3j, 5j], [2. - 3j, 7., 1. + 7j], [-5j, 1. - 7j, 12.]])

  def f(X):
    L_ = jla.cholesky(X)
    return jnp.sum((L_ - jnp.sin(L_)) ** 2)

  out = grad(f, holomorphic=True)(A)
  assert out.dtype == np.complex64
  np.testing.assert_allclose(
      out,
      [[-0.7534186 + 0.j, -3.0509028 - 10.940544j, 5.9896836 + 3.5423026j],
       [-3.0509028 + 10.940544j, -8.9044895 + 0.j, -5.1351523 - 6.559372j],
       [5.9896836 - 3.5423026j, -5.1351523 + 6.559372j, 0.01320427 + 0.j]],
      rtol=1e-4, atol=1e-5)


# =============================================================================
# triangular_solve
# =============================================================================

def _op(a, transpose_a, conjugate_a):
  a = np.swapaxes(a, -1, -2) if transpose_a else a
  return np.conj(a) if conjugate_a else a


FLAGS = [(ls, lo, ta, ca, ud) for ls in (True, False) for lo in (True, False)
         for ta in (True, False) for ca in (True, False) for ud in (True, False)]


@pytest.mark.parametrize("dtype_", [F32, C64], ids=lambda d: d.name)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_triangular_solve(dtype_, batch):
  a = _well_conditioned(batch + (4, 4), dtype_, 1)
  for left_side, lower, transpose_a, conjugate_a, unit_diagonal in FLAGS:
    b = _rand(batch + ((4, 3) if left_side else (3, 4)), dtype_, 2)
    x = L.triangular_solve(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                           conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
      tri = tri - tri * np.eye(4) + np.eye(4)
    op = _op(tri, transpose_a, conjugate_a)
    x = np.asarray(x)
    recon = op @ x if left_side else x @ op
    _close(recon, b, dtype_, 10, err_msg=str((left_side, lower, transpose_a, conjugate_a,
                                              unit_diagonal)))


def test_triangular_solve_vector_and_scipy():
  a = np.tril(_well_conditioned((4, 4), F32, 1))
  b = _rand((4,), F32, 2)
  x = L.triangular_solve(a, b, left_side=True, lower=True)
  np.testing.assert_allclose(x, scipy.linalg.solve_triangular(a, b, lower=True), rtol=1e-5)
  _check_jit_and_avals(lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
                       a, _rand((4, 2), F32))


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
def test_triangular_solve_grads(x64, left_side, transpose_a):
  a = np.tril(_well_conditioned((3, 3), F64, 1))
  b = _rand((3, 2) if left_side else (2, 3), F64, 2)

  def f(a, b):
    return L.triangular_solve(a, b, left_side=left_side, lower=True, transpose_a=transpose_a)
  _check_grads(f, (a, b), order=2)


def test_triangular_solve_complex_grads(x64):
  a = np.tril(_well_conditioned((3, 3), C128, 1))
  b = _rand((3, 2), C128, 2)
  for ta, ca in [(False, True), (True, True), (True, False)]:
    _check_grads(lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True,
                                                 transpose_a=ta, conjugate_a=ca), (a, b))


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (2, 1)])
@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_vmap(in_axes, left_side):
  a = _well_conditioned((4, 4), F32, 1)
  b = _rand((4, 2) if left_side else (2, 4), F32, 2)

  def batched(x, ax, k=3):
    return x if ax is None else np.stack([x * (i + 1) for i in range(k)], ax)
  args = (batched(a + 0, in_axes[0]), batched(b, in_axes[1]))
  _vmap_matches_loop(lambda a, b: L.triangular_solve(a, b, left_side=left_side, lower=True),
                     args, in_axes)


# =============================================================================
# lu
# =============================================================================

def _check_lu(a, lu, pivots, perm, dtype):
  lu, pivots, perm = map(np.asarray, (lu, pivots, perm))
  *batch, m, n = a.shape
  k = min(m, n)
  assert pivots.dtype == perm.dtype == np.int32
  assert pivots.shape == tuple(batch) + (k,) and perm.shape == tuple(batch) + (m,)
  l = np.tril(lu, -1)[..., :, :k] + np.eye(m, k, dtype=dtype)
  u = np.triu(lu)[..., :k, :]
  pa = np.take_along_axis(a, perm[..., :, None], -2)
  _close(l @ u, pa, dtype, 10)
  # pivots are the row swaps that produce the permutation
  np.testing.assert_array_equal(L.lu_pivots_to_permutation(pivots, m), perm)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4)])
def test_lu(dtype, shape):
  a = _rand(shape, dtype)
  lu, pivots, perm = _check_jit_and_avals(L.lu, a)
  _check_lu(a, lu, pivots, perm, dtype)
  if len(shape) == 2:
    lu_ref, piv_ref = scipy.linalg.lu_factor(a)
    np.testing.assert_array_equal(pivots, piv_ref[:min(shape)])
    _close(lu, lu_ref, dtype, 10)


def test_lu_pivots_to_permutation():
  piv = np.array([[2, 2, 3, 3], [0, 3, 3, 3]], np.int32)
  perm = _check_jit_and_avals(lambda p: L.lu_pivots_to_permutation(p, 5), piv)
  np.testing.assert_array_equal(perm, [[2, 0, 3, 1, 4], [0, 3, 1, 2, 4]])
  _vmap_matches_loop(lambda p: L.lu_pivots_to_permutation(p, 5), (piv,), (0,))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_grads(x64, shape):
  a = _rand(shape, F64)
  _check_grads(lambda x: L.lu(x)[0], (a,))


def test_lu_complex_grads(x64):
  _check_grads(lambda x: L.lu(x)[0], (_rand((3, 3), C128),))


def test_lu_vmap():
  a = _rand((3, 4, 4), F32)
  _vmap_matches_loop(L.lu, (a,), (0,))
  _vmap_matches_loop(L.lu, (np.moveaxis(a, 0, 1),), (1,))


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve(trans):
  a = _well_conditioned((2, 4, 4), C64, 1)
  b = _rand((2, 4, 3), C64, 2)
  lu, _, perm = L.lu(a)
  x = np.asarray(L.lu_solve(lu, perm, b, trans))
  op = [a, np.swapaxes(a, -1, -2), _H(a)][trans]
  _close(op @ x, b, C64, 10)


# =============================================================================
# qr
# =============================================================================

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr(dtype, shape, full_matrices):
  a = _rand(shape, dtype)
  q, r = _check_jit_and_avals(lambda x: L.qr(x, full_matrices=full_matrices), a)
  q, r = np.asarray(q), np.asarray(r)
  m, n = shape[-2:]
  k = m if full_matrices else min(m, n)
  assert q.shape == shape[:-2] + (m, k) and r.shape == shape[:-2] + (k, n)
  _close(q @ r, a, dtype, 10)
  _close(_H(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype, 10)
  np.testing.assert_array_equal(np.tril(r, -1), 0)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_qr_grads(x64, shape):
  a = _rand(shape, F64)
  _check_grads(lambda x: L.qr(x, full_matrices=False), (a,))
  if shape[0] <= shape[1]:
    _check_grads(lambda x: L.qr(x, full_matrices=True), (a,))


def test_qr_complex_grads(x64):
  _check_grads(lambda x: L.qr(x, full_matrices=False), (_rand((4, 3), C128),))
  _check_grads(lambda x: L.qr(x, full_matrices=False), (_rand((3, 4), C128),))


def test_qr_full_matrices_tall_jvp_is_not_implemented():
  a = _rand((4, 2), F32)
  with pytest.raises(NotImplementedError, match="full_matrices"):
    jvp(lambda x: L.qr(x, full_matrices=True), (a,), (a,))


def test_qr_vmap():
  a = _rand((3, 5, 4), F32)
  _vmap_matches_loop(lambda x: L.qr(x, full_matrices=False), (a,), (0,))
  _vmap_matches_loop(lambda x: L.qr(x), (np.moveaxis(a, 0, 2),), (2,))


# =============================================================================
# eigh
# =============================================================================

@pytest.mark.parametrize("shape", [(5, 5), (2, 4, 4)])
def test_eigh(dtype, shape):
  a = _rand(shape, dtype)
  h = (a + _H(a)) / 2
  v, w = _check_jit_and_avals(L.eigh, h)
  v, w = np.asarray(v), np.asarray(w)
  assert w.dtype == np.finfo(dtype).dtype and v.dtype == dtype
  _close(w, np.linalg.eigvalsh(h), dtype, 50)
  _close(h @ v, v * w[..., None, :], dtype, 50)
  _close(_H(v) @ v, np.broadcast_to(np.eye(shape[-1]), v.shape), dtype, 50)
  # lower/upper: only that triangle is read when the input is not symmetrized.
  for lower in (True, False):
    junk = np.tril(h) if lower else np.triu(h)
    _, w2 = L.eigh(junk, lower=lower, symmetrize_input=False)
    _close(w2, w, dtype, 50)


def _eigh_fun(x):
  # A function of the eigendecomposition that is invariant to the eigenvectors'
  # phases: V diag(sin w) V^H.
  v, w = L.eigh(x)
  return jnp.matmul(v * jnp.sin(w).astype(v.dtype)[..., None, :], L._H(v)), w


def test_eigh_grads(x64):
  a = _rand((4, 4), F64)
  _check_grads(_eigh_fun, (a + a.T,))
  c = _rand((3, 3), C128)
  _check_grads(_eigh_fun, (c + _H(c),))


def test_eigh_vmap():
  a = _rand((3, 4, 4), F32)
  a = a + np.swapaxes(a, -1, -2)
  _vmap_matches_loop(lambda x: L.eigh(x)[1], (a,), (0,))
  _vmap_matches_loop(lambda x: L.eigh(x)[1], (np.moveaxis(a, 0, 2),), (2,))


# =============================================================================
# svd
# =============================================================================

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(dtype, shape, full_matrices):
  a = _rand(shape, dtype)
  u, s, vh = _check_jit_and_avals(lambda x: L.svd(x, full_matrices=full_matrices), a)
  u, s, vh = map(np.asarray, (u, s, vh))
  m, n = shape[-2:]
  k = min(m, n)
  assert s.dtype == np.finfo(dtype).dtype and s.shape == shape[:-2] + (k,)
  assert u.shape == shape[:-2] + ((m, m) if full_matrices else (m, k))
  assert vh.shape == shape[:-2] + ((n, n) if full_matrices else (k, n))
  _close(s, np.linalg.svd(a, compute_uv=False), dtype, 10)
  _close((u[..., :, :k] * s[..., None, :].astype(dtype)) @ vh[..., :k, :], a, dtype, 10)
  _close(_H(u) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + u.shape[-1:] * 2),
         dtype, 10)
  s_only = _check_jit_and_avals(lambda x: L.svd(x, compute_uv=False), a)
  _close(s_only, s, dtype, 10)


def _svd_fun(x):
  # Invariant to the singular vectors' phases: U diag(s^2) V^H, and s.
  u, s, vh = L.svd(x, full_matrices=False)
  return jnp.matmul(u * (s * s).astype(u.dtype)[..., None, :], vh), s


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_svd_grads(x64, shape):
  _check_grads(_svd_fun, (_rand(shape, F64),))
  _check_grads(lambda x: L.svd(x, compute_uv=False), (_rand(shape, F64),))


def test_svd_complex_grads(x64):
  _check_grads(_svd_fun, (_rand((4, 3), C128),))
  _check_grads(_svd_fun, (_rand((3, 4), C128),))


def test_svd_vmap():
  a = _rand((3, 4, 3), F32)
  _vmap_matches_loop(lambda x: L.svd(x, compute_uv=False), (a,), (0,))
  _vmap_matches_loop(lambda x: _svd_fun(x)[0], (np.moveaxis(a, 0, 2),), (2,))


# =============================================================================
# eig
# =============================================================================

@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eig(dtype, shape):
  a = _rand(shape, dtype)
  w, vl, vr = _check_jit_and_avals(L.eig, a)
  w, vl, vr = map(np.asarray, (w, vl, vr))
  cdt = np.result_type(dtype, np.complex64)
  assert w.dtype == vl.dtype == vr.dtype == cdt
  _close(a @ vr, vr * w[..., None, :], dtype, 100)
  _close(_H(vl) @ a, w[..., :, None] * _H(vl), dtype, 100)
  _close(np.sort_complex(w.reshape(-1, shape[-1])),
         np.sort_complex(np.linalg.eigvals(a).reshape(-1, shape[-1])), dtype, 100)
  w_only, = L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
  _close(w_only, w, dtype, 10)


def test_eig_grads(x64):
  a = _rand((4, 4), F64)
  f = lambda x: L.eig(x, False, False)[0]
  _check_grads(f, (a,), tol=1e-4)
  _check_grads(f, (_rand((3, 3), C128),), tol=1e-4)
  # As in JAX, eigenvector derivatives are opt-in (their validity cannot be checked).
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
    jvp(lambda x: L.eig(x)[2], (a,), (a,))


def _distinct_eigenvalues(shape, dtype, seed):
  """A random matrix whose eigenvalues are well separated (and whose eigenvectors have
  one clearly largest component), so the eigenvectors are differentiable."""
  rng = np.random.default_rng(seed)
  n = shape[-1]
  a = _rand(shape, dtype, seed)
  for _ in range(100):
    w = np.linalg.eigvals(a)
    gaps = np.abs(w[..., :, None] - w[..., None, :]) + np.eye(n) * 1e9
    _, v = np.linalg.eig(a)
    top = np.sort(np.abs(v), axis=-2)
    if gaps.min() > 0.3 and (top[..., -1, :] - top[..., -2, :]).min() > 0.05:
      return a
    a = _rand(shape, dtype, int(rng.integers(1 << 30)))
  raise AssertionError("no well-separated sample found")


@pytest.mark.parametrize("dt", [F64, C128], ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eig_eigenvector_grads(x64, dt, shape):
  # Right and left eigenvectors against finite differences, in geev's normalization
  # (unit norm, real largest component): the JVP must keep that gauge, or the finite
  # differences of the LAPACK output and the JVP disagree by a multiple of v.
  a = _distinct_eigenvalues(shape, dt, seed=7)
  eig = lambda x: L.eig(x, enable_eigvec_derivs=True)
  for i in range(3):  # w, vl, vr
    _check_grads(lambda x: eig(x)[i], (a,), tol=1e-5)
  _check_grads(lambda x: L.eig(x, False, True, enable_eigvec_derivs=True)[1], (a,),
               tol=1e-5)
  # The gauge itself: tangents keep |v_j| = 1 and the largest component real.
  _, vl, vr = (np.asarray(o) for o in eig(a))
  t = _rand(shape, dt, seed=3)
  _, (_, dvl, dvr) = jvp(eig, (a,), (t,))
  for v, dv in ((vr, np.asarray(dvr)), (vl, np.asarray(dvl))):
    np.testing.assert_allclose(np.real(np.sum(np.conj(v) * dv, axis=-2)), 0, atol=1e-10)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    np.testing.assert_allclose(np.imag(np.take_along_axis(dv, k, axis=-2)), 0, atol=1e-10)


def test_eig_eigenvector_grads_under_jit_and_vmap(x64):
  a = _distinct_eigenvalues((3, 4, 4), F64, seed=11)
  t = _rand((3, 4, 4), F64, seed=12)
  f = lambda x: L.eig(x, False, True, enable_eigvec_derivs=True)
  fj = jit(lambda x, t: jvp(f, (x,), (t,))[1])
  batched = vmap(fj)(a, t)
  for i in range(3):
    for got, want in zip(batched, fj(a[i], t[i])):
      np.testing.assert_allclose(np.asarray(got)[i], np.asarray(want), rtol=1e-10,
                                 atol=1e-10)


def test_eig_vmap():
  a = _rand((3, 4, 4), F32)
  _vmap_matches_loop(lambda x: L.eig(x, False, True), (a,), (0,))


# =============================================================================
# Errors, empty matrices
# =============================================================================

@pytest.mark.parametrize("fn,arg,exc,match", [
    (L.cholesky, np.ones((3, 4), np.float32), ValueError, "square"),
    (L.cholesky, np.ones((3,), np.float32), ValueError, "at least 2"),
    (lambda x: L.cholesky(x, symmetrize_input=False), np.ones((2, 2), np.int32), TypeError,
     "requires a float32, float64"),
    (L.lu, np.ones((3, 3), np.int32), TypeError, "float32, float64"),
    (L.qr, np.ones((3,), np.float32), ValueError, "at least 2"),
    (L.eigh, np.ones((2, 3), np.float32), ValueError, "square"),
    (L.svd, np.ones((2, 2), np.float16), TypeError, "float16"),
    (L.eig, np.ones((2, 3), np.float32), ValueError, "square"),
    (lambda x: L.triangular_solve(x, np.ones((3, 2), np.float32), left_side=True),
     np.ones((2, 2), np.float32), TypeError, "Incompatible shapes"),
    (lambda x: L.triangular_solve(x, np.ones((2, 2), np.complex64), left_side=True),
     np.ones((2, 2), np.float32), TypeError, "same dtypes"),
    (lambda p: L.lu_pivots_to_permutation(p, 2), np.zeros((3,), np.int32), ValueError,
     "at least"),
])
def test_errors(fn, arg, exc, match):
  with pytest.raises(exc, match=match):
    fn(arg)
  with pytest.raises(exc, match=match):
    make_jaxpr(fn)(arg)


def test_empty_matrices():
  z = np.zeros((2, 0, 0), np.float32)
  assert L.cholesky(z).shape == (2, 0, 0)
  lu, piv, perm = L.lu(np.zeros((3, 0), np.float32))
  assert lu.shape == (3, 0) and piv.shape == (0,)
  np.testing.assert_array_equal(perm, [0, 1, 2])
  q, r = L.qr(np.zeros((3, 0), np.float32))
  np.testing.assert_array_equal(q, np.eye(3))
  assert r.shape == (3, 0)
  assert [x.shape for x in L.svd(np.zeros((0, 2), np.float32))] == [(0, 0), (0,), (2, 2)]
  assert [x.shape for x in L.eigh(z)] == [(2, 0, 0), (2, 0)]
  assert jla.det(np.zeros((0, 0), np.float32)) == 1.0
  assert jla.inv(z).shape == (2, 0, 0)


# =============================================================================
# jax.numpy.linalg against NumPy
# =============================================================================

@pytest.mark.parametrize("shape", [(4, 4), (3, 2, 2), (3, 3)])
def test_det_slogdet(dtype, shape):
  a = _rand(shape, dtype)
  _close(jla.det(a), np.linalg.det(a), dtype, 10)
  sign, logdet = jla.slogdet(a)
  sign_ref, logdet_ref = np.linalg.slogdet(a)
  _close(sign, sign_ref, dtype, 10)
  _close(logdet, logdet_ref, dtype, 10)
  assert jla.slogdet(a)._fields == ("sign", "logabsdet")


def test_det_singular_and_integer():
  assert float(jla.det(np.array([[1, 2], [2, 4]]))) == 0.0
  sign, logdet = jla.slogdet(np.array([[1., 2.], [2., 4.]]))
  assert float(sign) == 0 and float(logdet) == -np.inf
  np.testing.assert_allclose(jla.det(np.array([[2, 1], [1, 3]])), 5.0, rtol=1e-6)


def test_det_slogdet_grads(x64):
  a = _well_conditioned((3, 3), F64)
  _check_grads(jla.det, (a,), order=2)
  _check_grads(lambda x: jla.slogdet(x)[1], (a,), order=2)
  np.testing.assert_allclose(grad(jla.det)(a), np.linalg.det(a) * np.linalg.inv(a).T,
                             rtol=1e-10)
  _check_grads(jla.det, (_well_conditioned((3, 3), C128),))


def test_inv_and_solve(dtype):
  a = _well_conditioned((2, 4, 4), dtype, 1)
  _close(jla.inv(a), np.linalg.inv(a), dtype, 10)
  b = _rand((2, 4, 3), dtype, 2)
  _close(jla.solve(a, b), np.linalg.solve(a, b), dtype, 10)
  v = _rand((4,), dtype, 3)
  _close(jla.solve(a[0], v), np.linalg.solve(a[0], v), dtype, 10)
  # broadcasting of the batch dimensions, and a batch of vectors (the 2020 rule)
  _close(jla.solve(a, b[0]), np.linalg.solve(a, b[0]), dtype, 10)
  bv = _rand((2, 4), dtype, 4)
  _close(jla.solve(a, bv), np.linalg.solve(a, bv[..., None])[..., 0], dtype, 10)
  _close(jit(jla.solve)(a, b), np.linalg.solve(a, b), dtype, 10)


def test_solve_inv_grads(x64):
  a = _well_conditioned((3, 3), F64, 1)
  b = _rand((3,), F64, 2)
  _check_grads(jla.solve, (a, b), order=2)
  _check_grads(jla.solve, (a, _rand((3, 2), F64, 3)), order=1)
  _check_grads(jla.inv, (a,), order=2)
  _check_grads(jla.solve, (_well_conditioned((3, 3), C128, 1), _rand((3,), C128, 2)))


def test_solve_vmap():
  a = _well_conditioned((3, 4, 4), F32, 1)
  b = _rand((3, 4), F32, 2)
  _vmap_matches_loop(jla.solve, (a, b), (0, 0))
  _vmap_matches_loop(jla.solve, (a[0], b), (None, 0))
  _vmap_matches_loop(jla.solve, (a, b[0]), (0, None))
  _vmap_matches_loop(jla.inv, (a,), (0,))
  _vmap_matches_loop(jla.det, (a,), (0,))


def test_numpy_decompositions(dtype):
  a = _rand((4, 3), dtype)
  q, r = jla.qr(a)
  assert q.shape == (4, 3) and r.shape == (3, 3)
  _close(q @ r, a, dtype, 10)
  q, r = jla.qr(a, mode="complete")
  assert q.shape == (4, 4)
  assert jla.qr(a, mode="r").shape == (3, 3)
  u, s, vh = jla.svd(a, full_matrices=False)
  _close((u * s[None, :].astype(dtype)) @ vh, a, dtype, 10)
  _close(jla.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, 10)
  _close(jla.svdvals(a), np.linalg.svd(a, compute_uv=False), dtype, 10)
  h = a.T.conj() @ a
  w, v = jla.eigh(h)
  _close(w, np.linalg.eigvalsh(h), dtype, 50)
  _close(jla.eigvalsh(h, UPLO="U"), np.linalg.eigvalsh(h, UPLO="U"), dtype, 50)
  sq = _rand((3, 3), dtype)
  w, v = jla.eig(sq)
  _close(sq @ np.asarray(v), np.asarray(v) * np.asarray(w)[None, :], dtype, 100)
  _close(np.sort_complex(np.asarray(jla.eigvals(sq))), np.sort_complex(np.linalg.eigvals(sq)),
         dtype, 100)
  l = jla.cholesky(h)
  _close(l, np.linalg.cholesky(h), dtype, 50)
  _close(jla.cholesky(h, upper=True), _H(np.linalg.cholesky(h)), dtype, 50)


def test_numpy_integer_inputs_become_float():
  a = np.array([[2, 1], [1, 3]])
  assert jla.inv(a).dtype == np.float32
  assert jla.eigvalsh(a).dtype == np.float32
  assert jla.cholesky(a).dtype == np.float32


NORM_VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, -1, 0.5]
NORM_MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def test_norm(dtype):
  x = _rand((3, 4, 5), dtype)
  v = x[0, 0]
  for ord in NORM_VECTOR_ORDS:
    _close(jla.norm(v, ord=ord), np.linalg.norm(v, ord=ord), dtype, 10, err_msg=str(ord))
    _close(jla.norm(x, ord=ord, axis=1, keepdims=True),
           np.linalg.norm(x, ord=ord, axis=1, keepdims=True), dtype, 10, err_msg=str(ord))
  for ord in NORM_MATRIX_ORDS:
    _close(jla.norm(x, ord=ord, axis=(1, 2)), np.linalg.norm(x, ord=ord, axis=(1, 2)),
           dtype, 10, err_msg=str(ord))
    _close(jla.norm(x, ord=ord, axis=(2, 0), keepdims=True),
           np.linalg.norm(x, ord=ord, axis=(2, 0), keepdims=True), dtype, 10,
           err_msg=str(ord))
  _close(jla.norm(x), np.linalg.norm(x), dtype, 10)
  _close(jla.vector_norm(x, ord=3), np.linalg.vector_norm(x, ord=3), dtype, 10)
  _close(jla.matrix_norm(x, ord=2), np.linalg.matrix_norm(x, ord=2), dtype, 10)
  with pytest.raises(ValueError, match="Invalid order"):
    jla.norm(v, ord="inf")
  with pytest.raises(ValueError, match="Invalid order"):
    jla.norm(x, ord=3, axis=(0, 1))


def test_norm_grads(x64):
  x = _rand((3, 4), F64)
  for ord in [None, 1, np.inf, 3]:
    _check_grads(lambda x: jla.norm(x, ord=ord, axis=1), (x,))
  for ord in ["fro", "nuc", 2]:
    _check_grads(lambda x: jla.norm(x, ord=ord), (x,))


def test_matrix_power_rank_pinv_lstsq_cond(dtype):
  a = _well_conditioned((2, 3, 3), dtype)
  for n in [0, 1, 2, 3, 5, -1, -2]:
    _close(jla.matrix_power(a, n), np.linalg.matrix_power(a, n), dtype, 100, err_msg=str(n))
  assert np.issubdtype(jla.matrix_power(np.array([[1, 1], [0, 1]]), 3).dtype, np.integer)
  r = _rand((5, 2), dtype) @ _rand((2, 4), dtype, 1)
  assert int(jla.matrix_rank(r)) == 2 == np.linalg.matrix_rank(r)
  np.testing.assert_array_equal(jla.matrix_rank(np.stack([r, np.eye(5, 4, dtype=dtype)])),
                                [2, 4])
  _close(jla.pinv(r), np.linalg.pinv(r, rcond=1e-4), dtype, 100)
  m = _rand((6, 3), dtype)
  y = _rand((6, 2), dtype, 1)
  x, resid, rank, s = jla.lstsq(m, y)
  x0, resid0, rank0, s0 = np.linalg.lstsq(m, y, rcond=None)
  _close(x, x0, dtype, 10)
  _close(resid, resid0, dtype, 100)
  assert int(rank) == rank0
  _close(s, s0, dtype, 10)
  _close(jla.lstsq(m, y[:, 0])[0], x0[:, 0], dtype, 10)
  _close(jla.cond(a), np.linalg.cond(a), dtype, 100)
  _close(jla.cond(a, 1), np.linalg.cond(a, 1), dtype, 100)
  _close(jla.cond(a, -2), np.linalg.cond(a, -2), dtype, 100)


def test_pinv_grads(x64):
  _check_grads(jla.pinv, (_rand((4, 3), F64),))
  _check_grads(jla.pinv, (_rand((3, 4), F64),))


def test_multi_dot_tensorsolve_tensorinv():
  rng = np.random.default_rng(0)
  ms = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4, 5), (5, 2)]]
  np.testing.assert_allclose(jla.multi_dot(ms), np.linalg.multi_dot(ms), rtol=1e-4)
  v1, v2 = rng.standard_normal(3).astype(np.float32), rng.standard_normal(2).astype(np.float32)
  np.testing.assert_allclose(jla.multi_dot([v1] + ms + [v2]),
                             np.linalg.multi_dot([v1] + ms + [v2]), rtol=1e-4)
  a = rng.standard_normal((2, 3, 6)).astype(np.float32)
  b = rng.standard_normal((2, 3)).astype(np.float32)
  np.testing.assert_allclose(jla.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-3,
                             atol=1e-4)
  a = rng.standard_normal((4, 6, 8, 3)).astype(np.float32)
  np.testing.assert_allclose(jla.tensorinv(a, ind=2), np.linalg.tensorinv(a, ind=2),
                             rtol=1e-3, atol=1e-3)


def test_numpy_errors():
  with pytest.raises(ValueError, match="square"):
    jla.inv(np.ones((2, 3)))
  with pytest.raises(ValueError, match="two-dimensional"):
    jla.det(np.ones(3))
  with pytest.raises(ValueError, match="shapes"):
    jla.solve(np.eye(3), np.ones((2, 2)))
  with pytest.raises(ValueError, match="mode"):
    jla.qr(np.eye(2), mode="bogus")
  with pytest.raises(ValueError, match="UPLO"):
    jla.eigh(np.eye(2), UPLO="X")
  with pytest.raises(TypeError, match="integer"):
    jla.matrix_power(np.eye(2), 1.5)


def test_jit_vmap_compose_with_numpy_linalg():
  a = _spd((3, 4, 4), F32)
  f = jit(vmap(lambda x: jnp.sum(jla.cholesky(x)) + jla.slogdet(x)[1]))
  expected = [np.sum(np.linalg.cholesky(x)) + np.linalg.slogdet(x)[1] for x in a]
  np.testing.assert_allclose(f(a), expected, rtol=1e-4)
  g = jit(grad(lambda x: jla.slogdet(x)[1]))(a[0])
  np.testing.assert_allclose(g, np.linalg.inv(a[0]).T, rtol=1e-4, atol=1e-5)


# =============================================================================
# The seed example, through `python -m tracejax run`
# =============================================================================

EXAMPLE = "012_autodiff_cookbook_complex_cholesky_grad.py"


def _example_path():
  d = os.environ.get("TRACEJAX_EXAMPLES") or os.path.join(REPO, os.pardir, "shared",
                                                          "examples")
  for cand in (os.path.join(d, EXAMPLE), os.path.join("/work/shared/examples", EXAMPLE)):
    if os.path.exists(cand):
      return cand
  return None


def _run(args, cwd):
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  return subprocess.run([sys.executable, "-m", "tracejax", "run"] + args, cwd=cwd, env=env,
                        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_example_012_complex_cholesky_grad(tmp_path):
  path = _example_path()
  if path is None:
    pytest.skip(f"{EXAMPLE} is not available")
  import tracejax.numpy as tnp
  if not hasattr(tnp, "linalg") or "linalg" not in open(tnp.__file__).read():
    # `jnp.linalg` needs tracejax/numpy/__init__.py to import the submodule. Until it
    # does, run the example with the submodule imported first, still through the hook.
    wrapper = tmp_path / "run_012.py"
    wrapper.write_text("import jax.numpy.linalg\n"
                       f"import runpy\nrunpy.run_path({path!r}, run_name='__main__')\n")
    proc = _run([str(wrapper)], os.path.dirname(path))
  else:
    proc = _run([os.path.basename(path)], os.path.dirname(path))
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
