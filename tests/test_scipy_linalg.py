"""jax.scipy.linalg against scipy.linalg: values (float32/complex64, and float64/complex128
with x64 on), derivatives (check_grads, forward and reverse), jit, and vmap against a
Python loop. Decompositions that are unique (LU with partial pivoting, Schur via the
same LAPACK routine, Householder Hessenberg) are compared entry by entry; the others
by reconstruction."""
import numpy as np
import pytest
import scipy.linalg as sl

import tracejax
import tracejax.numpy as jnp
import tracejax.scipy.linalg as jsl
from tracejax._src.api import grad, jvp, vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads


def _rand(shape, dtype, seed=0, scale=1.0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape) * scale
  if np.issubdtype(dtype, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape) * scale
  return x.astype(dtype)


def _H(x):
  return np.conj(np.swapaxes(x, -1, -2))


def _spd(shape, dtype, seed=0):
  a = _rand(shape, dtype, seed)
  return (a @ _H(a) / shape[-1] + np.eye(shape[-1])).astype(dtype)


class _Jitted:
  """`J.name(*args, **kw)` is `jsl.name(*args, **kw)` run as one jitted program: an eager
  call compiles every primitive on its own, which would dominate this file's time.
  (Eager calls are still made where it matters: errors, and a few values.)"""

  def __getattr__(self, name):
    f = getattr(jsl, name)
    return lambda *args, **kw: jit(lambda *a: f(*a, **kw))(*args)


J = _Jitted()


def _tol(dtype):
  return 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 3e-5


def _close(x, y, dtype, scale=1.0):
  np.testing.assert_allclose(np.asarray(x), y, rtol=_tol(dtype) * 10,
                             atol=_tol(dtype) * 10 * scale)


def test_module_is_importable_and_an_attribute():
  import tracejax.scipy
  assert tracejax.scipy.linalg is jsl
  for name in ["block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm",
               "expm_frechet", "inv", "lu", "lu_factor", "lu_solve", "qr", "solve",
               "solve_triangular", "svd", "tril", "triu", "schur", "sqrtm", "polar",
               "hessenberg", "eigh_tridiagonal", "toeplitz", "hilbert"]:
    assert callable(getattr(jsl, name)), name


# ---- expm ----

# 1-norms spanning every Padé degree and several squarings, in one batch.
_SCALES = (0.002, 0.05, 0.2, 0.5, 1.2, 4.0, 30.0)


def _expm_batch(dtype, n=5):
  a = np.stack([_rand((n, n), dtype, seed=i) * s / n for i, s in enumerate(_SCALES)])
  return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_expm_32(dtype):
  a = _expm_batch(dtype)
  want = np.stack([sl.expm(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64))
                   for x in a])
  got = np.asarray(jit(jsl.expm)(a))
  assert got.dtype == dtype
  np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5 * np.abs(want).max())
  # Each matrix alone (its own degree) agrees with the batch.
  np.testing.assert_allclose(np.asarray(jsl.expm(a[1])), got[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_expm_64(x64, dtype):
  a = _expm_batch(dtype)
  f = jit(jsl.expm)
  for x in a:  # one degree per matrix (no batch sharing)
    want = sl.expm(x)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-12,
                               atol=1e-13 * np.abs(want).max())
  want = np.stack([sl.expm(x) for x in a])
  np.testing.assert_allclose(np.asarray(J.expm(a)), want, rtol=1e-11,
                             atol=1e-12 * np.abs(want).max())


def test_expm_special_inputs(x64):
  np.testing.assert_array_equal(np.asarray(J.expm(np.zeros((3, 3)))), np.eye(3))
  assert J.expm(np.zeros((2, 0, 0))).shape == (2, 0, 0)
  got = J.expm(np.array([[1, 2], [0, 1]]))          # integers become floats
  assert got.dtype == np.float64
  np.testing.assert_allclose(np.asarray(got), sl.expm(np.array([[1., 2.], [0., 1.]])))
  u = np.triu(_rand((4, 4), np.float64, 3))
  np.testing.assert_allclose(np.asarray(J.expm(u, upper_triangular=True)), sl.expm(u),
                             rtol=1e-12)
  d = np.diag([1., 2., -3.])
  np.testing.assert_allclose(np.asarray(J.expm(d)), np.diag(np.exp([1., 2., -3.])),
                             rtol=1e-13)
  with pytest.raises(ValueError, match="A"):
    jsl.expm(np.ones((2, 3)))
  with pytest.raises(ValueError, match="max_squarings"):
    jsl.expm(np.ones((2, 2)), max_squarings=-1)


def test_expm_grads(x64):
  # The top degree, with squarings (the scan and its conditional, in both modes).
  check_grads(jit(jsl.expm), (_rand((3, 3), np.complex128, 1, scale=2.0),), order=1,
              modes=("fwd", "rev"))
  # The gradient of a scalar function matches the adjoint Fréchet derivative:
  # d/dA sum(G * expm(A)) = L(A^T, G).
  a, g = _rand((4, 4), np.float64, 5), _rand((4, 4), np.float64, 6)
  got = grad(lambda a: jnp.sum(g * jsl.expm(a)))(a)
  np.testing.assert_allclose(np.asarray(got), sl.expm_frechet(a.T, g)[1], rtol=1e-10)


@pytest.mark.parametrize("method", [None, "SPS", "blockEnlarge"])
def test_expm_frechet(x64, method):
  a = np.stack([_rand((4, 4), np.float64, i, scale=s) for i, s in enumerate((0.05, 0.6, 3.))])
  e = _rand((3, 4, 4), np.float64, 9)
  expm_a, L = J.expm_frechet(a, e, method=method)
  for i in range(3):
    want_e, want_l = sl.expm_frechet(a[i], e[i])
    np.testing.assert_allclose(np.asarray(expm_a[i]), want_e, rtol=1e-11)
    np.testing.assert_allclose(np.asarray(L[i]), want_l, rtol=1e-10,
                               atol=1e-12 * np.abs(want_l).max())
  L_only = J.expm_frechet(a[1], e[1], method=method, compute_expm=False)
  np.testing.assert_allclose(np.asarray(L_only), np.asarray(L[1]), rtol=1e-12)


def test_expm_frechet_errors():
  with pytest.raises(ValueError, match="method"):
    jsl.expm_frechet(np.eye(2), np.eye(2), method="Pade")
  with pytest.raises(ValueError, match="same shape"):
    jsl.expm_frechet(np.eye(2), np.eye(3))


def test_expm_vmap_matches_loop():
  a = _expm_batch(np.float32, n=4)
  got = jit(vmap(jsl.expm))(a)
  f = jit(jsl.expm)
  want = np.stack([np.asarray(f(x)) for x in a])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


# ---- determinants, inverses, solves ----

def test_det_inv(x64):
  for dtype in (np.float32, np.complex64, np.float64):
    a = _rand((3, 4, 4), dtype, 1)
    _close(J.det(a), np.linalg.det(a), dtype, scale=10)
    _close(J.inv(a), np.linalg.inv(a), dtype, scale=np.abs(np.linalg.inv(a)).max())
  a = _rand((3, 3), np.float64, 2) + 3 * np.eye(3)
  check_grads(jit(jsl.det), (a,), order=1, modes=("fwd", "rev"))
  check_grads(jit(jsl.inv), (a,), order=1, modes=("fwd", "rev"))


def test_det_singular_has_finite_adjugate_gradient(x64):
  gdet = jit(grad(jsl.det))
  s = np.array([[1., 2.], [2., 4.]])
  assert float(J.det(s)) == 0.0
  np.testing.assert_allclose(np.asarray(gdet(s)), [[4., -2.], [-2., 1.]])
  s3 = np.arange(1., 10.).reshape(3, 3)       # rank 2
  g = np.asarray(gdet(s3))
  cof = np.array([[-3., 6., -3.], [6., -12., 6.], [-3., 6., -3.]])
  np.testing.assert_allclose(g, cof, atol=1e-9)
  z = np.array([[0., 1.], [0., 1.]])           # the zero pivot comes first
  np.testing.assert_allclose(np.asarray(gdet(z)), [[1., 0.], [-1., 0.]])
  np.testing.assert_array_equal(np.asarray(gdet(np.zeros((3, 3)))), 0.)
  _, t = jvp(jsl.det, (s,), (np.ones((2, 2)),))
  assert np.isfinite(float(t))


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
def test_solve(x64, assume_a):
  for dtype in (np.float32, np.complex64, np.float64):
    a = _spd((2, 4, 4), dtype, 1)
    b = _rand((2, 4, 3), dtype, 2)
    want = np.linalg.solve(a, b)
    _close(J.solve(a, b, assume_a=assume_a), want, dtype, scale=np.abs(want).max())
    x = J.solve(a[0], b[0, :, 0], assume_a=assume_a)      # a vector
    _close(x, want[0, :, 0], dtype, scale=np.abs(want).max())
  a, b = _spd((4, 4), np.float64, 3), _rand((4, 2), np.float64, 4)
  check_grads(jit(lambda a, b: jsl.solve(a, b, assume_a=assume_a)), (a, b), order=1,
              modes=("fwd", "rev"))


def test_solve_pos_reads_one_triangle(x64):
  a = _spd((4, 4), np.float64, 5)
  b = _rand((4,), np.float64, 6)
  want = np.linalg.solve(a, b)
  junk_upper = np.tril(a) + np.triu(np.full((4, 4), 7.), 1)
  np.testing.assert_allclose(np.asarray(J.solve(junk_upper, b, sym_pos=True, lower=True)),
                             want, rtol=1e-10)
  junk_lower = np.triu(a) + np.tril(np.full((4, 4), 7.), -1)
  np.testing.assert_allclose(np.asarray(J.solve(junk_lower, b, assume_a="pos")), want,
                             rtol=1e-10)
  with pytest.raises(ValueError, match="assume_a"):
    jsl.solve(a, b, assume_a="banded")


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
def test_solve_triangular(trans):
  for lower in (False, True):
    for unit in (False, True):
      a = _rand((4, 4), np.complex64, 1) + 4 * np.eye(4, dtype=np.complex64)
      b = _rand((4, 2), np.complex64, 2)
      want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
      got = J.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
      np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
      got1 = J.solve_triangular(a, b[:, 0], trans=trans, lower=lower, unit_diagonal=unit)
      np.testing.assert_allclose(np.asarray(got1), want[:, 0], rtol=1e-4, atol=1e-5)


def test_solve_triangular_batched_and_grads(x64):
  a = np.tril(_rand((3, 4, 4), np.float64, 1)) + 3 * np.eye(4)
  b = _rand((4, 5), np.float64, 2)                      # broadcast against a's batch
  got = J.solve_triangular(a, b, lower=True)
  want = np.stack([sl.solve_triangular(x, b, lower=True) for x in a])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
  check_grads(jit(lambda a, b: jsl.solve_triangular(a, b, trans=1, lower=True)), (a[0], b),
              order=2, modes=("fwd", "rev"))
  with pytest.raises(ValueError, match="trans"):
    jsl.solve_triangular(a, b, trans=3)


def test_cholesky_cho_factor_cho_solve(x64):
  for dtype in (np.float32, np.complex64, np.float64):
    a = _spd((2, 4, 4), dtype, 1)
    _close(J.cholesky(a[0]), sl.cholesky(a[0]), dtype)
    _close(J.cholesky(a[0], lower=True), sl.cholesky(a[0], lower=True), dtype)
    b = _rand((2, 4, 2), dtype, 2)
    for lower in (False, True):
      c = jsl.cho_factor(a, lower=lower)
      assert c[1] is lower
      want = np.linalg.solve(a, b)
      solve = jit(lambda c, b: jsl.cho_solve((c, lower), b))
      _close(solve(c[0], b), want, dtype, scale=np.abs(want).max())
      _close(solve(c[0], b[..., 0]), want[..., 0], dtype, scale=np.abs(want).max())
  a, b = _spd((3, 3), np.float64, 3), _rand((3, 2), np.float64, 4)
  check_grads(jit(lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b)), (a, b), order=1,
              modes=("fwd", "rev"))
  check_grads(jit(lambda c, b: jsl.cho_solve((c, True), b)), (np.linalg.cholesky(a), b),
              order=2, modes=("fwd", "rev"))
  with pytest.raises(TypeError, match="c_and_lower"):
    jsl.cho_solve(a, b)


# ---- LU ----

def test_lu(x64):
  for dtype in (np.float32, np.complex64, np.float64):
    for shape in ((4, 4), (5, 3), (3, 5), (1, 1)):
      a = _rand(shape, dtype, 1)
      p, l, u = J.lu(a)
      wp, wl, wu = sl.lu(a)
      _close(p, wp, dtype)
      _close(l, wl, dtype)
      _close(u, wu, dtype, scale=np.abs(wu).max())
      pl, u2 = J.lu(a, permute_l=True)
      _close(pl, wp @ wl, dtype)
      _close(u2, wu, dtype, scale=np.abs(wu).max())
  a = _rand((2, 4, 4), np.float32, 2)
  p, l, u = J.lu(a)
  np.testing.assert_allclose(np.asarray(p @ l @ u), a, atol=1e-5)


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_lu_solve(x64, trans):
  for dtype in (np.complex64, np.float64):
    a = _rand((4, 4), dtype, 1)
    lu, piv = J.lu_factor(a)
    wlu, wpiv = sl.lu_factor(a)
    _close(lu, wlu, dtype, scale=np.abs(wlu).max())
    np.testing.assert_array_equal(np.asarray(piv), wpiv)
    b = _rand((4, 3), dtype, 2)
    want = sl.lu_solve((wlu, wpiv), b, trans=trans)
    _close(J.lu_solve((lu, piv), b, trans=trans), want, dtype, scale=np.abs(want).max())
    _close(J.lu_solve((lu, piv), b[:, 1], trans=trans), want[:, 1], dtype,
           scale=np.abs(want).max())
  a = _rand((3, 4, 4), np.float64, 3)
  b = _rand((3, 4, 2), np.float64, 4)
  got = J.lu_solve(J.lu_factor(a), b, trans=trans)
  want = np.stack([sl.lu_solve(sl.lu_factor(x), y, trans=trans) for x, y in zip(a, b)])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10)
  with pytest.raises(ValueError, match="trans"):
    jsl.lu_solve((a[0], np.zeros(4, np.int32)), b[0], trans=3)


# ---- QR, SVD, eigh ----

def test_qr():
  for shape in ((5, 3), (3, 5), (4, 4)):
    a = _rand(shape, np.float32, 1)
    for mode in ("full", "economic"):
      q, r = J.qr(a, mode=mode)
      wq, wr = sl.qr(a, mode=mode)
      assert q.shape == wq.shape and r.shape == wr.shape
      np.testing.assert_allclose(np.asarray(q @ r), a, atol=1e-5)
      np.testing.assert_allclose(np.abs(np.asarray(r)), np.abs(wr), atol=1e-5)
    r, = J.qr(a, mode="r")
    assert r.shape == sl.qr(a, mode="r")[0].shape
  with pytest.raises(ValueError, match="mode"):
    jsl.qr(a, mode="raw")
  with pytest.raises(NotImplementedError, match="pivoting"):
    jsl.qr(a, pivoting=True)


def test_svd():
  a = _rand((2, 5, 3), np.complex64, 1)
  u, s, vh = J.svd(a)
  assert u.shape == (2, 5, 5) and vh.shape == (2, 3, 3)
  np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False), rtol=1e-5)
  u, s, vh = J.svd(a, full_matrices=False)
  np.testing.assert_allclose(np.asarray((u * s[..., None, :]) @ vh), a, atol=1e-5)
  np.testing.assert_allclose(np.asarray(J.svd(a, compute_uv=False)),
                             np.linalg.svd(a, compute_uv=False), rtol=1e-5)


def test_eigh(x64):
  for dtype in (np.float32, np.complex128):
    a = _rand((2, 4, 4), dtype, 1)
    for lower in (True, False):
      w, v = J.eigh(a, lower=lower)
      want = np.stack([sl.eigh(x, lower=lower, eigvals_only=True) for x in a])
      _close(w, want, dtype, scale=4)
      herm = np.stack([sl.eigh(x, lower=lower)[1] for x in a])
      tri = np.tril(a) if lower else np.triu(a)
      full = tri + _H(tri) - np.eye(4) * np.real(np.diagonal(a, 0, -2, -1))[..., None, :]
      np.testing.assert_allclose(np.asarray(full @ v), np.asarray(v * w[..., None, :]),
                                 atol=_tol(dtype) * 100)
      del herm
    _close(J.eigh(a, eigvals_only=True), np.linalg.eigvalsh(a), dtype, scale=4)
  a = _rand((4, 4), np.float64, 2)
  check_grads(jit(lambda a: jsl.eigh(a + a.T, eigvals_only=True)), (a,), order=2,
              modes=("fwd", "rev"))
  with pytest.raises(NotImplementedError, match="b must be None"):
    jsl.eigh(a, a)


# ---- small helpers ----

def test_tril_triu_block_diag():
  a = _rand((3, 4, 4), np.float32, 1)
  np.testing.assert_array_equal(np.asarray(jsl.tril(a, -1)), np.tril(a, -1))
  np.testing.assert_array_equal(np.asarray(jsl.triu(a, 1)), np.triu(a, 1))
  blocks = (np.ones((2, 2), np.float32), np.float32(3.), np.arange(3, dtype=np.int32),
            np.zeros((0, 2), np.float32))
  got = J.block_diag(*blocks)
  np.testing.assert_array_equal(np.asarray(got), sl.block_diag(*blocks))
  assert got.dtype == np.float32
  assert jsl.block_diag().shape == (1, 0)
  with pytest.raises(ValueError, match="at most 2"):
    jsl.block_diag(np.ones((1, 1, 1)))


def test_toeplitz_hilbert():
  c, r = np.array([1., 2., 3.]), np.array([9., 5., 6., 7.])
  np.testing.assert_array_equal(np.asarray(J.toeplitz(c, r)), sl.toeplitz(c, r))
  cc = np.array([1 + 1j, 2 - 1j, 3j])
  np.testing.assert_allclose(np.asarray(J.toeplitz(cc)), sl.toeplitz(cc))
  batch = np.arange(6.).reshape(2, 3)
  np.testing.assert_array_equal(np.asarray(J.toeplitz(batch)),
                                np.stack([sl.toeplitz(x) for x in batch]))
  assert J.toeplitz(np.arange(3)).dtype == np.int32
  np.testing.assert_allclose(np.asarray(jsl.hilbert(4)), sl.hilbert(4), rtol=1e-6)
  assert jsl.hilbert(2).dtype == np.float32


def test_schur_and_sqrtm():
  a = _rand((2, 4, 4), np.float32, 1)
  t, z = J.schur(a)
  wt, _ = sl.schur(a[0])
  np.testing.assert_allclose(np.asarray(t[0]), wt, atol=1e-4)
  np.testing.assert_allclose(np.asarray(z @ t @ np.swapaxes(z, -1, -2)), a, atol=1e-4)
  t, z = J.schur(a, output="complex")
  assert t.dtype == np.complex64
  np.testing.assert_allclose(np.tril(np.asarray(t), -1), 0)
  np.testing.assert_allclose(np.asarray(z @ t @ _H(z)), a, atol=1e-4)
  spd = _spd((2, 4, 4), np.float32, 2)
  s = J.sqrtm(spd)
  np.testing.assert_allclose(np.asarray(s[1]), sl.sqrtm(spd[1].astype(np.float64)),
                             atol=1e-4)
  ac = _rand((4, 4), np.complex64, 3) + 3 * np.eye(4, dtype=np.complex64)
  np.testing.assert_allclose(np.asarray(J.sqrtm(ac)), sl.sqrtm(ac), atol=1e-4)
  with pytest.raises(ValueError, match="output"):
    jsl.schur(a, output="quasi")


def test_polar_hessenberg(x64):
  a = _rand((2, 4, 3), np.float64, 1)
  for side in ("right", "left"):
    u, p = J.polar(a, side=side)
    wu, wp = sl.polar(a[0], side=side)
    np.testing.assert_allclose(np.asarray(u[0]), wu, atol=1e-12)
    np.testing.assert_allclose(np.asarray(p[0]), wp, atol=1e-12)
  check_grads(jit(lambda a: jsl.polar(a)[0]), (a[0],), order=1, modes=("fwd", "rev"))
  for dtype in (np.float32, np.complex128):
    a = _rand((2, 5, 5), dtype, 2)
    h, q = jit(lambda a: jsl.hessenberg(a, calc_q=True))(a)
    wh, wq = sl.hessenberg(a[1], calc_q=True)
    _close(h[1], wh, dtype, scale=5)
    _close(q[1], wq, dtype)
    _close(q @ h @ _H(np.asarray(q)), a, dtype, scale=5)
  check_grads(jit(lambda a: jsl.hessenberg(a)), (_rand((3, 3), np.float64, 3),), order=1,
              modes=("fwd", "rev"))


def test_eigh_tridiagonal(x64):
  for dtype in (np.float32, np.float64):
    d, e = _rand((7,), dtype, 1), _rand((6,), dtype, 2)
    want = sl.eigh_tridiagonal(d, e, eigvals_only=True)
    _close(J.eigh_tridiagonal(d, e, eigvals_only=True), want, dtype, scale=4)
    got = J.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 4))
    _close(got, want[2:5], dtype, scale=4)
    w, v = J.eigh_tridiagonal(d, e)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    _close(t @ np.asarray(v), np.asarray(v) * np.asarray(w), dtype, scale=4)
  # Repeated and clustered eigenvalues: a decoupled matrix (e has a zero).
  d, e = np.array([1., 1., 2., 2.]), np.array([0., 0., 0.])
  np.testing.assert_allclose(np.asarray(J.eigh_tridiagonal(d, e, eigvals_only=True)),
                             [1., 1., 2., 2.], atol=1e-13)
  ec = np.array([1 + 1j, 2 - 1j])
  tc = np.diag([1., 2., 3.]).astype(complex) + np.diag(ec, -1) + np.diag(np.conj(ec), 1)
  np.testing.assert_allclose(
      np.asarray(J.eigh_tridiagonal(np.array([1., 2., 3.]), ec, eigvals_only=True)),
      np.linalg.eigvalsh(tc), atol=1e-12)
  d, e = _rand((5,), np.float64, 3), _rand((4,), np.complex128, 4)
  check_grads(jit(lambda d, e: jsl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                    select_range=(1, 3))),
              (d, e), order=1, modes=("fwd", "rev"))
  with pytest.raises(NotImplementedError, match="select='v'"):
    jsl.eigh_tridiagonal(d, e, eigvals_only=True, select="v", select_range=(0., 1.))


# ---- transformations ----

def test_jit_and_vmap_match_loops():
  a = _rand((3, 4, 4), np.float32, 1) + 4 * np.eye(4, dtype=np.float32)
  b = _rand((3, 4, 2), np.float32, 2)
  fns = [
      lambda a, b: jsl.solve(a, b),
      lambda a, b: jsl.solve_triangular(a, b, lower=True, trans="T"),
      lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=2),
      lambda a, b: jsl.cho_solve(jsl.cho_factor(a @ jnp.swapaxes(a, -1, -2)), b),
      lambda a, b: jsl.det(a)[..., None, None] * b,
      lambda a, b: jsl.inv(a) @ b,
      lambda a, b: jsl.lu(a)[1] @ b,
  ]
  for f in fns:
    # One compiled program per side: the jitted function in a Python loop, and its vmap.
    jf = jit(f)
    want = np.stack([np.asarray(jf(x, y)) for x, y in zip(a, b)])
    np.testing.assert_allclose(np.asarray(jit(vmap(f))(a, b)), want, rtol=1e-4, atol=1e-4)
  # Eagerly too, for one of them.
  np.testing.assert_allclose(np.asarray(fns[2](a, b)), np.asarray(jit(fns[2])(a, b)),
                             rtol=1e-5, atol=1e-5)
  # vmap of a vmapped expm (the batch-wide degree choice under a batched predicate).
  m = _expm_batch(np.float32, n=3)[None].repeat(2, 0)
  np.testing.assert_allclose(np.asarray(vmap(vmap(jsl.expm))(m)),
                             np.asarray(J.expm(m)), rtol=1e-5, atol=1e-3)


def test_bad_inputs_name_the_argument():
  with pytest.raises(ValueError, match="argument a"):
    jsl.lu(np.ones(3))
  with pytest.raises(ValueError, match="argument b"):
    jsl.solve(np.eye(3), np.ones(4))
  with pytest.raises(TypeError):
    jsl.det("not an array")
  with pytest.raises(TypeError, match="lu_and_piv"):
    jsl.lu_solve(np.ones((3, 2, 2)), np.ones(2))
