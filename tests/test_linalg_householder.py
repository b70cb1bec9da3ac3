"""lax.linalg's Householder reductions (hessenberg, tridiagonal, householder_product,
ormqr), tridiagonal_solve, cholesky_update, symmetric_product, qdwh and the
algorithm enums, against SciPy's LAPACK wrappers (the same kernels jaxlib calls)
and against values and error messages recorded from JAX 0.10.2."""
import numpy as np
import pytest
import scipy.linalg as sl
from scipy.linalg import lapack

import tracejax as jax
from tracejax.lax import linalg as L
from tracejax.test_util import check_grads

f32, f64, c64 = np.float32, np.float64, np.complex64


def _rand(shape, dt, seed=0):
  rs = np.random.RandomState(seed)
  x = rs.randn(*shape)
  if np.issubdtype(dt, np.complexfloating):
    x = x + 1j * rs.randn(*shape)
  return x.astype(dt)


def _tol(dt):
  return 1e-12 if dt in (f64, np.complex128) else 3e-5


def _lapack_fn(name, dt):
  return getattr(lapack, {f32: "s", f64: "d", c64: "c"}[dt] + name)


def _close(a, b, dt):
  np.testing.assert_allclose(np.asarray(a), b, rtol=_tol(dt) * 10, atol=_tol(dt) * 10)


@pytest.fixture(params=[f32, f64, c64], ids=["f32", "f64", "c64"])
def dt(request):
  if request.param == f64:
    request.getfixturevalue("x64")
  return request.param


# ---- hessenberg ----

def test_hessenberg_matches_gehrd(dt):
  a = _rand((5, 5), dt)
  h, taus = L.hessenberg(a)
  ref_h, ref_tau = _lapack_fn("gehrd", dt)(a)[:2]
  assert h.dtype == dt and taus.shape == (4,)
  _close(h, ref_h, dt)
  _close(taus, ref_tau[:4], dt)
  # H from the packed form agrees with scipy's Hessenberg form.
  _close(np.triu(np.asarray(h), -1), sl.hessenberg(a), dt)


def test_hessenberg_jit_vmap_and_errors():
  a = _rand((3, 4, 4), f32)
  h, t = jax.vmap(L.hessenberg)(a)
  for i in range(3):
    hi, ti = jax.jit(L.hessenberg)(a[i])
    np.testing.assert_allclose(h[i], hi, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(t[i], ti, rtol=1e-6, atol=1e-6)
  h1, t1 = L.hessenberg(np.array([[2.]], f32))
  assert h1.shape == (1, 1) and t1.shape == (0,)
  with pytest.raises(ValueError, match=r"Argument to Hessenberg reduction must have shape "
                     r"\[..., n, n\], got shape \(3, 4\)"):
    L.hessenberg(np.ones((3, 4), f32))
  with pytest.raises(TypeError, match=r"Input 0 to hessenberg must have rank at least 2, "
                     r"but got shape=\(3,\)"):
    L.hessenberg(np.ones(3, f32))
  with pytest.raises(TypeError, match="hessenberg does not accept dtype int32 at position 0. "
                     "Accepted dtypes at position 0 are subtypes of floating, complexfloating"):
    L.hessenberg(np.ones((3, 3), np.int32))
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'hessenberg'"):
    jax.grad(lambda x: L.hessenberg(x)[0].sum())(a[0])


# ---- tridiagonal ----

@pytest.mark.parametrize("lower", [True, False])
def test_tridiagonal_matches_sytrd(dt, lower):
  a = _rand((5, 5), dt, seed=1)
  out = L.tridiagonal(a, lower=lower)
  name = "hetrd" if dt == c64 else "sytrd"
  ref = _lapack_fn(name, dt)(a, lower=int(lower))[:4]
  real = np.float64 if dt == f64 else np.float32
  assert [o.dtype for o in out] == [dt, real, real, dt]
  assert [o.shape for o in out] == [(5, 5), (5,), (4,), (4,)]
  for o, r in zip(out, ref):
    _close(o, r, dt)


def test_tridiagonal_vmap_and_errors():
  a = _rand((2, 4, 4), f32)
  outs = jax.vmap(lambda x: L.tridiagonal(x, lower=False))(a)
  for i in range(2):
    for o, r in zip(outs, jax.jit(lambda x: L.tridiagonal(x, lower=False))(a[i])):
      np.testing.assert_allclose(o[i], r, rtol=1e-6, atol=1e-6)
  with pytest.raises(ValueError, match=r"The input to tridiagonal must be a square matrix. "
                     r"Got shape \(3, 4\)."):
    L.tridiagonal(np.ones((3, 4), f32))
  with pytest.raises(TypeError, match="Input 0 to tridiagonal must have rank at least 2"):
    L.tridiagonal(np.ones(3, f32))
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'tridiagonal'"):
    jax.grad(lambda x: L.tridiagonal(x)[1].sum())(a[0])


# ---- householder_product and ormqr ----

def _geqrf(m, n, dt, seed=2):
  qa, tau = _lapack_fn("geqrf", dt)(_rand((m, n), dt, seed))[:2]
  return qa, tau


def test_householder_product_matches_orgqr(dt):
  qa, tau = _geqrf(6, 4, dt)
  q = L.householder_product(qa, tau)
  ref = _lapack_fn("ungqr" if dt == c64 else "orgqr", dt)(qa, tau)[0]
  assert q.shape == (6, 4) and q.dtype == dt
  _close(q, ref, dt)
  # Fewer reflectors than columns.
  ref2 = _lapack_fn("ungqr" if dt == c64 else "orgqr", dt)(qa, tau[:2])[0]
  _close(L.householder_product(qa, tau[:2]), ref2, dt)


def test_householder_product_vmap_and_errors():
  qas, taus = zip(*[_geqrf(5, 3, f32, seed=s) for s in range(3)])
  qas, taus = np.stack(qas), np.stack(taus)
  out = jax.vmap(L.householder_product)(qas, taus)
  out2 = jax.vmap(L.householder_product, in_axes=(0, None))(qas, taus[0])
  for i in range(3):
    np.testing.assert_allclose(out[i], jax.jit(L.householder_product)(qas[i], taus[i]),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out2[i], L.householder_product(qas[i], taus[0]), rtol=1e-6,
                               atol=1e-6)
  with pytest.raises(ValueError, match="must have at least as many rows as columns, got "
                     r"shape \(3, 5\)"):
    L.householder_product(np.ones((3, 5), f32), np.ones(2, f32))
  with pytest.raises(ValueError, match="must not have more rows than the minimum"):
    L.householder_product(np.ones((5, 3), f32), np.ones(4, f32))
  with pytest.raises(ValueError, match="Batching dimension 0_0 corresponds to two sizes: 2 "
                     "and 3"):
    L.householder_product(np.ones((2, 5, 3), f32), np.ones((3, 2), f32))
  with pytest.raises(TypeError, match=r"must have the same number of batch dimensions, but "
                     r"got \[0, 1\] batch dimensions"):
    L.householder_product(np.ones((5, 3), f32), np.ones((2, 2), f32))
  with pytest.raises(TypeError, match="lax.householder_product requires arguments to have "
                     "the same dtypes, got float32, float16"):
    L.householder_product(np.ones((5, 3), f32), np.ones(2, np.float16))
  with pytest.raises(NotImplementedError, match="Differentiation rule for "
                     "'householder_product'"):
    jax.grad(lambda x: L.householder_product(x, taus[0]).sum())(qas[0])


@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False),
                                            (False, True)])
def test_ormqr_matches_lapack(dt, left, transpose):
  qa, tau = _geqrf(6, 4, dt)
  c = _rand((6, 3) if left else (3, 6), dt, seed=5)
  out = L.ormqr(qa, tau, c, left=left, transpose=transpose)
  trans = ("C" if dt == c64 else "T") if transpose else "N"
  name = "unmqr" if dt == c64 else "ormqr"
  ref = _lapack_fn(name, dt)("L" if left else "R", trans, qa, tau, c, lwork=200)[0]
  assert out.shape == c.shape and out.dtype == dt
  _close(out, ref, dt)


def test_ormqr_vmap_jit_and_errors():
  qa, tau = _geqrf(5, 3, f32)
  cs = _rand((4, 5, 2), f32)
  out = jax.vmap(L.ormqr, in_axes=(None, None, 0))(qa, tau, cs)
  f = jax.jit(lambda a, t, c: L.ormqr(a, t, c, transpose=True))
  for i in range(4):
    np.testing.assert_allclose(out[i], L.ormqr(qa, tau, cs[i]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(f(qa, tau, cs[i]),
                               lapack.sormqr("L", "T", qa, tau, cs[i], lwork=100)[0],
                               rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match=r"ormqr with left=True expects c to have the same "
                     r"number of rows as the Householder matrix a. Got a shape \(5, 3\) and "
                     r"c shape \(4, 2\)."):
    L.ormqr(qa, tau, np.ones((4, 2), f32))
  with pytest.raises(ValueError, match="ormqr with left=False expects c to have the same "
                     "number of columns"):
    L.ormqr(qa, tau, np.ones((2, 4), f32), left=False)
  with pytest.raises(TypeError, match="lax.ormqr requires arguments to have the same "
                     "dtypes, got float32, float32, float16"):
    L.ormqr(qa, tau, np.ones((5, 2), np.float16))
  with pytest.raises(TypeError, match=r"Input 2 to ormqr must have rank at least 2, but got "
                     r"shape=\(5,\)"):
    L.ormqr(qa, tau, np.ones(5, f32))
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'ormqr'"):
    jax.grad(lambda c: L.ormqr(qa, tau, c).sum())(cs[0])


# ---- tridiagonal_solve ----

def _tridiag_system(m, n, dt, seed=3):
  """A diagonally dominant (well conditioned) tridiagonal system."""
  dl, du, b = (_rand(s, dt, seed + i) for i, s in enumerate([(m,), (m,), (m, n)]))
  d = (_rand((m,), dt, seed + 7) + 4).astype(dt)
  return dl, d, du, b


def _dense(dl, d, du):
  return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


def test_tridiagonal_solve_matches_dense(dt):
  dl, d, du, b = _tridiag_system(6, 3, dt)
  x = L.tridiagonal_solve(dl, d, du, b)
  assert x.shape == b.shape and x.dtype == dt
  ab = np.stack([np.r_[0, du[:-1]], d, np.r_[dl[1:], 0]])
  _close(x, sl.solve_banded((1, 1), ab, b), dt)
  _close(jax.jit(L.tridiagonal_solve)(dl, d, du, b), np.linalg.solve(_dense(dl, d, du), b), dt)


def test_tridiagonal_solve_singular_and_perturbed():
  o = np.ones(4, f32)
  b = np.ones((4, 2), f32)
  z = np.zeros(4, f32)
  assert np.isnan(np.asarray(L.tridiagonal_solve(o, z, z, b))).all()
  # JAX 0.10.2: the perturbed kernel's answer for the same singular system.
  out = L.tridiagonal_solve(o, z, z, b, perturb_singular=True)
  np.testing.assert_allclose(out, [[1, 1], [1, 1], [1, 1], [8388608, 8388608]], rtol=1e-6)


def test_tridiagonal_solve_grads_match_jax():
  o = np.ones(4, f32)
  d = 3 * o
  b = np.ones((4, 2), f32)
  # Recorded from JAX 0.10.2.
  np.testing.assert_allclose(jax.grad(lambda d: L.tridiagonal_solve(o, d, o, b).sum())(d),
                             [-0.14876033, -0.06611568, -0.06611569, -0.14876033], rtol=1e-5)
  np.testing.assert_allclose(jax.grad(lambda v: L.tridiagonal_solve(v, d, o, b).sum())(o),
                             [0., -0.09917355, -0.06611569, -0.09917355], rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(jax.grad(lambda v: L.tridiagonal_solve(o, d, v, b).sum())(o),
                             [-0.09917355, -0.06611569, -0.09917355, 0.], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [f64, c64])
def test_tridiagonal_solve_check_grads(dtype, request):
  if dtype == f64:
    request.getfixturevalue("x64")
  args = _tridiag_system(5, 2, dtype)
  tol = 1e-6 if dtype == f64 else 2e-2
  check_grads(L.tridiagonal_solve, args, order=1, modes=("fwd", "rev"), atol=tol, rtol=tol)


def test_tridiagonal_solve_vmap_and_errors():
  dl, d, du, b = _tridiag_system(5, 2, f32)
  bs = _rand((3, 5, 2), f32, seed=9)
  out = jax.vmap(L.tridiagonal_solve, in_axes=(None, None, None, 0))(dl, d, du, bs)
  ds = np.stack([d, d + 1, d + 2])
  out2 = jax.vmap(L.tridiagonal_solve, in_axes=(None, 0, None, 0))(dl, ds, du, bs)
  for i in range(3):
    np.testing.assert_allclose(out[i], L.tridiagonal_solve(dl, d, du, bs[i]), rtol=1e-5)
    np.testing.assert_allclose(out2[i], L.tridiagonal_solve(dl, ds[i], du, bs[i]), rtol=1e-5)
  with pytest.raises(TypeError, match="tridiagonal_solve requires that all diagonal "
                     "arguments have the same shape."):
    L.tridiagonal_solve(dl[:4], d, du, b)
  with pytest.raises(TypeError, match="the leading ndim-1 dimensions of b equal the "
                     "dimensions of the diagonal arguments."):
    L.tridiagonal_solve(dl, d, du, b[:4])
  with pytest.raises(TypeError, match=r"got \[0, 0, 0, 1\] batch dimensions"):
    L.tridiagonal_solve(dl, d, du, bs)
  with pytest.raises(TypeError, match="lax.tridiagonal_solve requires arguments to have the "
                     "same dtypes, got float32, float32, float32, float16"):
    L.tridiagonal_solve(dl, d, du, b.astype(np.float16))
  with pytest.raises(TypeError, match="tridiagonal_solve does not accept dtype int32 at "
                     "position 3"):
    L.tridiagonal_solve(dl, d, du, b.astype(np.int32))


# ---- cholesky_update ----

def test_cholesky_update_matches_cholesky(dt):
  if dt == c64:
    with pytest.raises(TypeError, match="cholesky_update does not accept dtype complex64 at "
                       "position 0. Accepted dtypes at position 0 are subtypes of floating."):
      L.cholesky_update(np.eye(3, dtype=dt), np.ones(3, dt))
    return
  a = _rand((5, 5), dt)
  r = np.linalg.cholesky(a @ a.T + 5 * np.eye(5)).T.astype(dt)
  w = _rand((5,), dt, seed=4)
  ref = np.linalg.cholesky(r.T.astype(f64) @ r + np.outer(w, w)).T
  _close(L.cholesky_update(r, w), ref, dt)
  _close(jax.jit(L.cholesky_update)(r, w), ref, dt)


def test_cholesky_update_matches_jax_literals_and_errors():
  # Whole rows are rotated (entries below the diagonal mix): JAX 0.10.2's values.
  r = np.array([[2., 1, 0.5], [7, -3, 1], [8, 9, 4]], f32)
  w = np.array([1., -2, 0.5], f32)
  np.testing.assert_allclose(L.cholesky_update(r, w),
                             [[2.23607, 0., 0.67082], [-5.61249, 3.74166, -0.93541],
                              [8.39173, 8.95118, 4.02182]], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(L.cholesky_update(np.eye(2, dtype=f32), np.array([-3, 1.], f32)),
                             [[3.16228, -0.94868], [0., 1.04881]], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(L.cholesky_update(np.zeros((2, 2), f32), np.array([0, 1.], f32)),
                             [[0., 0.], [0., 1.]])
  with pytest.raises(TypeError, match=r"Input 0 to cholesky_update must have a rank of "
                     r"exactly 2, but got shape=\(2, 3, 3\)"):
    L.cholesky_update(np.stack([r, r]), np.stack([w, w]))
  with pytest.raises(ValueError, match=r"takes a square matrix and a vector of the same size "
                     r"as input. Got shapes \(3, 3\) and \(2,\) instead"):
    L.cholesky_update(r, w[:2])
  with pytest.raises(TypeError, match="lax.cholesky_update requires arguments to have the "
                     "same dtypes"):
    L.cholesky_update(r, w.astype(np.float16))
  with pytest.raises(NotImplementedError, match="Batching rule for 'cholesky_update'"):
    jax.vmap(L.cholesky_update)(np.stack([r, r]), np.stack([w, w]))
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'cholesky_update'"):
    jax.grad(lambda v: L.cholesky_update(r, v).sum())(w)


# ---- symmetric_product ----

def test_symmetric_product_values_and_errors():
  a = np.random.RandomState(1).randn(3, 5).astype(f32)
  c = np.arange(9, dtype=f32).reshape(3, 3)
  np.testing.assert_allclose(L.symmetric_product(a, c, alpha=2., beta=3.),
                             2 * a @ a.T + 3 * c, rtol=1e-5, atol=1e-5)
  # JAX 0.10.2: the lower triangle mirrored.
  np.testing.assert_allclose(
      L.symmetric_product(a, c, alpha=2., beta=3., symmetrize_output=True),
      [[10.383803, -0.9239435, 28.397629], [-0.9239435, 30.169712, 6.7610264],
       [28.397629, 6.7610264, 39.837646]], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(L.symmetric_product(a, c), a @ a.T, rtol=1e-5, atol=1e-5)
  as_, cs = np.stack([a, 2 * a]), np.stack([c, c.T])
  out = jax.vmap(lambda x, y: L.symmetric_product(x, y, beta=1.))(as_, cs)
  out2 = jax.jit(lambda x, y: L.symmetric_product(x, y, beta=1.))(as_, cs)  # batch dims
  for i in range(2):
    np.testing.assert_allclose(out[i], as_[i] @ as_[i].T + cs[i], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out2[i], out[i], rtol=1e-6, atol=1e-6)
  with pytest.raises(ValueError, match=r"symmetric_update expects a rectangular matrix of "
                     r"shape \(m, n\) and a square matrix of shape \(n, n\). Got shapes "
                     r"\(3, 5\) and \(5, 5\)."):
    L.symmetric_product(a, np.ones((5, 5), f32))
  with pytest.raises(TypeError, match="symmetric_product does not accept dtype complex64"):
    L.symmetric_product(a.astype(c64), c.astype(c64))
  with pytest.raises(TypeError, match=r"got \[1, 0\] batch dimensions"):
    L.symmetric_product(as_, c)
  with pytest.raises(NotImplementedError, match="Differentiation rule for "
                     "'symmetric_product'"):
    jax.grad(lambda x: L.symmetric_product(x, c).sum())(a)


# ---- qdwh ----

def test_qdwh_polar_decomposition(dt):
  x = _rand((5, 3), dt, seed=2)
  u, h, num_iters, conv = L.qdwh(x)
  assert u.shape == (5, 3) and h.shape == (3, 3) and u.dtype == h.dtype == dt
  assert bool(conv)
  # JAX 0.10.2 takes 4 iterations in single precision and 6 in double.
  assert int(num_iters) == (6 if dt == f64 else 4)
  up, hp = sl.polar(x.astype(np.complex128 if dt == c64 else f64))
  _close(u, up, dt)
  _close(h, hp, dt)
  uj, hj, _, _ = jax.jit(L.qdwh)(x)
  _close(uj, up, dt)


def test_qdwh_options_vmap_and_errors():
  x = np.random.RandomState(2).randn(5, 3).astype(f32)
  # Recorded from JAX 0.10.2.
  u, h, k, conv = L.qdwh(x, dynamic_shape=(4, 2))
  np.testing.assert_allclose(u, [[-0.45895058, -0.29477966, 0.], [0.6140027, -0.5643755, 0.],
                                 [-0.22329447, -0.76827073, 0.], [-0.60208356, -0.06591806, 0.],
                                 [0., 0., 0.]], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(h, [[1.6334099, -1.1293061, 0.], [-1.1293061, 1.9491252, 0.],
                                 [0., 0., 0.]], rtol=1e-4, atol=1e-5)
  _, _, k, conv = L.qdwh(x, max_iterations=1)
  assert int(k) == 1 and not bool(conv)
  u, h, k, conv = L.qdwh(np.zeros((3, 3), f32))
  assert not np.asarray(u).any() and not np.asarray(h).any() and int(k) == 4 and bool(conv)
  us, hs, ks, convs = jax.vmap(L.qdwh)(np.stack([x, 2 * x]))
  for i, xi in enumerate([x, 2 * x]):
    ui, hi, _, _ = L.qdwh(xi)
    np.testing.assert_allclose(us[i], ui, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hs[i], hi, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="The input matrix of shape M x N must have M >= N."):
    L.qdwh(x.T)
  with pytest.raises(ValueError, match="not inexact"):
    L.qdwh(np.ones((3, 3), np.int32))


# ---- the enums, and the functions that take them ----

def test_enums_and_their_arguments():
  assert [m.name for m in L.SvdAlgorithm] == ["DEFAULT", "QR", "JACOBI", "POLAR",
                                              "DIVIDE_AND_CONQUER"]
  assert L.SvdAlgorithm("QR") is L.SvdAlgorithm.QR
  assert L.EighImplementation.QDWH.value == "qdwh"
  assert L.EigImplementation.LAPACK.value == "lapack"
  x = np.random.RandomState(0).randn(4, 3).astype(f32)
  s = L.svd(x, compute_uv=False)
  for alg in (L.SvdAlgorithm.DEFAULT, L.SvdAlgorithm.QR, L.SvdAlgorithm.DIVIDE_AND_CONQUER):
    np.testing.assert_allclose(L.svd(x, compute_uv=False, algorithm=alg), s, rtol=1e-6)
    u, s2, vh = L.svd(x, algorithm=alg)
    assert u.shape == (4, 4) and vh.shape == (3, 3)
  # QR runs LAPACK's gesvd, as in JAX: the singular vectors of this matrix differ in the
  # sign of the third pair from the default gesdd (JAX 0.10.2's values, recorded)
  x = np.array([[1., 2., -3.], [0., 0., 0.], [-2., 0., 2.], [-1., 1., 3.]], f32)
  u_qr = [[-0.64875, 0.73502, -0.19716], [0., 0., 0.], [0.5059, 0.22302, -0.83326],
          [0.56849, 0.64032, 0.51653]]
  vh_qr = [[-0.42702, -0.13966, 0.89339], [-0.16376, 0.98361, 0.07549],
           [0.88929, 0.11406, 0.44289]]
  for fn in (L.svd, jax.jit(L.svd, static_argnames=("full_matrices", "algorithm"))):
    u, s2, vh = fn(x, full_matrices=False, algorithm=L.SvdAlgorithm.QR)
    np.testing.assert_allclose(u, u_qr, atol=2e-5)
    np.testing.assert_allclose(vh, vh_qr, atol=2e-5)
    np.testing.assert_allclose(s2, [5.22003, 2.14552, 1.07146], rtol=1e-5)
  u, _, vh = L.svd(x, full_matrices=False)                  # gesdd
  np.testing.assert_allclose(u[:, 2], [0.19716, 0., 0.83326, -0.51653], atol=2e-5)
  ub, sb, _ = jax.vmap(lambda m: L.svd(m, algorithm=L.SvdAlgorithm.QR))(np.stack([x, -x]))
  np.testing.assert_allclose(ub[0][:, :3], u_qr, atol=2e-5)
  check_grads(lambda m: L.svd(m, full_matrices=False, algorithm=L.SvdAlgorithm.QR)[1],
              (x[[0, 2, 3]],), order=2, modes=["fwd", "rev"], atol=1e-2, rtol=1e-2)
  assert "algorithm=SvdAlgorithm.QR" in str(jax.make_jaxpr(
      lambda m: L.svd(m, algorithm=L.SvdAlgorithm.QR))(x))
  for alg in (L.SvdAlgorithm.JACOBI, L.SvdAlgorithm.POLAR):
    with pytest.raises(NotImplementedError, match="The SVD Jacobi and Polar algorithms are "
                       "not implemented on CPU."):
      L.svd(x, algorithm=alg)
  a = x[:3] @ x[:3].T
  v, w = L.eigh(a, implementation=L.EighImplementation.QR)
  np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-5, atol=1e-5)
  with pytest.raises(NotImplementedError, match="Jacobi implementation is not supported on "
                     "CPU"):
    L.eigh(a, implementation=L.EighImplementation.JACOBI)
  with pytest.raises(NotImplementedError, match="QDWH implementation is only supported on "
                     "TPU"):
    L.eigh(a, implementation=L.EighImplementation.QDWH)
  assert len(L.eig(a, implementation=L.EigImplementation.LAPACK)) == 3
  for imp in (L.EigImplementation.CUSOLVER, L.EigImplementation.MAGMA, "lapack"):
    with pytest.raises(ValueError, match="Only the lapack implementation is supported on "
                       "CPU."):
      L.eig(a, implementation=imp)


def test_public_names():
  for name in ["hessenberg", "hessenberg_p", "tridiagonal", "tridiagonal_p",
               "householder_product", "householder_product_p", "ormqr", "ormqr_p",
               "tridiagonal_solve", "tridiagonal_solve_p", "cholesky_update",
               "cholesky_update_p", "symmetric_product", "symmetric_product_p", "qdwh",
               "EigImplementation", "EighImplementation", "SvdAlgorithm"]:
    assert name in L.__all__ and hasattr(jax.lax.linalg, name)


# ---- the order of JAX's checks: ranks and batch-dimension counts, then the core
# shapes, then dtypes, then batch sizes (each case has two faults; JAX reports this one)

ERROR_ORDER = [
    (lambda: L.householder_product(np.ones((5, 3), f32), np.ones((2, 2), np.float16)),
     TypeError, r"must have the same number of batch dimensions, but got \[0, 1\]"),
    (lambda: L.householder_product(np.ones((2, 5, 3), f32), np.ones((3, 2), np.int32)),
     TypeError, "householder_product does not accept dtype int32 at position 1"),
    (lambda: L.householder_product(np.ones((5,), f32), np.ones((2,), np.float16)),
     TypeError, r"Input 0 to householder_product must have rank at least 2"),
    (lambda: L.householder_product(np.ones((3, 5), f32), np.ones((2,), np.float16)),
     ValueError, "must have at least as many rows as columns"),
    (lambda: L.tridiagonal_solve(np.ones((3, 4), f32), np.ones((2, 4), f32),
                                 np.ones((2, 4), f32), np.ones((2, 4, 2), np.float16)),
     TypeError, "lax.tridiagonal_solve requires arguments to have the same dtypes"),
    (lambda: L.tridiagonal_solve(np.ones((3, 4), f32), np.ones((2, 4), f32),
                                 np.ones((2, 4), f32), np.ones((2, 4, 2), f32)),
     ValueError, "Batching dimension 0_0 corresponds to two sizes: 3 and 2"),
    (lambda: L.tridiagonal_solve(np.ones(3, f32), np.ones(4, f32), np.ones(4, f32),
                                 np.ones((4, 2), np.int32)),
     TypeError, "requires that all diagonal arguments have the same shape"),
    (lambda: L.tridiagonal_solve(np.ones((), f32), np.ones(4, f32), np.ones(4, f32),
                                 np.ones((4, 2), f32)),
     TypeError, r"Input 0 to tridiagonal_solve must have rank at least 1, but got shape=\(\)"),
    (lambda: L.cholesky_update(np.ones(3, f32), np.ones(3, f32)),
     TypeError, r"Input 0 to cholesky_update must have rank at least 2, but got shape=\(3,\)"),
    (lambda: L.cholesky_update(np.ones((3, 3), f32), np.ones((3, 1), f32)),
     TypeError, r"Input 1 to cholesky_update must have a rank of exactly 1"),
    (lambda: L.cholesky_update(np.ones((3, 3), f32), np.ones(2, np.float16)),
     ValueError, "Rank-1 update to Cholesky decomposition"),
    (lambda: L.symmetric_product(np.ones((3, 5), f32), np.ones((5, 5), np.float16)),
     ValueError, "symmetric_update expects"),
    (lambda: L.symmetric_product(np.ones((3, 5), f32), np.ones(3, f32)),
     TypeError, "Input 1 to symmetric_product must have rank at least 2"),
    (lambda: L.ormqr(np.ones((5, 3), f32), np.ones(2, f32), np.ones((4, 2), np.float16)),
     ValueError, "ormqr with left=True expects c"),
    (lambda: L.hessenberg(np.ones((3, 4), np.int32)),
     ValueError, "Argument to Hessenberg reduction must have shape"),
    (lambda: jax.jit(L.hessenberg)(np.ones((3, 4), f32)),
     ValueError, "Argument to Hessenberg reduction must have shape"),
]


@pytest.mark.parametrize("case", range(len(ERROR_ORDER)))
def test_error_order_matches_jax(case):
  fn, exc, msg = ERROR_ORDER[case]
  with pytest.raises(exc, match=msg):
    fn()


def test_qdwh_jvp_and_weak_count():
  x = 2 * np.eye(3, dtype=f32)
  x[0, 1] = 0.5
  _, (du, dh) = jax.jvp(lambda v: L.qdwh(v)[:2], (x,), (np.arange(9, dtype=f32).reshape(3, 3),))
  # Recorded from JAX 0.10.2.
  np.testing.assert_allclose(du, [[0.07632906, -0.61063254, -1.1776088],
                                  [0.61063254, 0.07632906, -0.22828341],
                                  [1.1402001, 0.372585, 0.]], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(dh, [[-0.21944605, 1.7555685, 3.6447825],
                                  [1.7555685, 3.940488, 5.954629],
                                  [3.6447825, 5.954629, 8.]], rtol=1e-4, atol=1e-5)
  k = L.qdwh(x)[2]
  assert k.dtype == np.int32 and k.weak_type  # a Python int's count, as JAX's
