"""jax.scipy.optimize.minimize and jax.scipy.sparse.linalg (cg, gmres, bicgstab).

Solutions are compared with NumPy/SciPy (`np.linalg.solve`, `scipy.optimize.minimize`),
under jit and vmap; the solvers' derivatives (through `custom_linear_solve`) are
checked with check_grads and against the closed form d(A^-1 b).
"""
import numpy as np
import pytest
import scipy.optimize as osp_optimize

from tracejax._src.api import grad, vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads
import tracejax.numpy as jnp
import tracejax.scipy as jsp
from tracejax.scipy import optimize as jopt
from tracejax.scipy.sparse import linalg as jsla
from tracejax._src.scipy.optimize import line_search


def _j(f, *args, **kw):
  """f(*args, **kw) under jit, NumPy arrays traced and everything else closed over: one
  compile per case, much faster than compiling each primitive of an eager call."""
  is_array = [isinstance(a, np.ndarray) for a in args]
  arrays = [a for a, t in zip(args, is_array) if t]

  def g(*arrs):
    it = iter(arrs)
    return f(*[next(it) if t else a for a, t in zip(args, is_array)], **kw)
  return jit(g)(*arrays)


def _spd(n, dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  q = rng.standard_normal((n, n))
  return (q @ q.T + n * np.eye(n)).astype(dtype)


def _nonsym(n, dtype=np.float32, seed=1):
  rng = np.random.default_rng(seed)
  a = rng.standard_normal((n, n)) + 4 * np.eye(n)
  if np.issubdtype(dtype, np.complexfloating):
    a = a + 1j * rng.standard_normal((n, n))
  return a.astype(dtype)


def _vec(n, dtype=np.float32, seed=2):
  rng = np.random.default_rng(seed)
  v = rng.standard_normal(n)
  if np.issubdtype(dtype, np.complexfloating):
    v = v + 1j * rng.standard_normal(n)
  return v.astype(dtype)


def test_public_names():
  assert sorted(n for n in dir(jsla) if not n.startswith("_")) == ["bicgstab", "cg", "gmres"]
  assert sorted(n for n in dir(jopt) if not n.startswith("_")) == ["OptimizeResults",
                                                                   "minimize"]
  assert jsp.sparse.linalg is jsla and jsp.optimize is jopt


# ---- sparse.linalg ----

def test_cg():
  a, b = _spd(8), _vec(8)
  want = np.linalg.solve(a, b)
  x, info = jsla.cg(a, b)
  assert info is None and x.dtype == np.float32
  np.testing.assert_allclose(x, want, atol=1e-4)
  np.testing.assert_allclose(jsla.cg(lambda v: jnp.dot(a, v), b, x0=jnp.ones(8))[0], want,
                             atol=1e-4)
  np.testing.assert_allclose(jsla.cg(a, b, M=np.diag(1 / np.diag(a)))[0], want, atol=1e-4)
  # maxiter=1 is one steepest-descent step from 0: x = (r.r / r.A r) r.
  step = b @ b / (b @ a @ b) * b
  np.testing.assert_allclose(jsla.cg(a, b, maxiter=1)[0], step, rtol=1e-5)
  # A loose tolerance stops early, a tight one does not.
  loose = jsla.cg(a, b, tol=0.5)[0]
  assert np.linalg.norm(a @ loose - b) <= 0.5 * np.linalg.norm(b)


@pytest.mark.parametrize("solve_method", ["batched", "incremental"])
def test_gmres(solve_method):
  a, b = _nonsym(8), _vec(8)
  want = np.linalg.solve(a, b)
  x, info = _j(jsla.gmres, a, b, restart=3, solve_method=solve_method)
  assert info is None
  np.testing.assert_allclose(x, want, atol=1e-4)
  m = (0.9 * np.linalg.inv(a)).astype(np.float32)
  np.testing.assert_allclose(_j(jsla.gmres, a, b, M=m, solve_method=solve_method)[0], want,
                             atol=1e-4)
  if solve_method == "incremental":
    # Eagerly, with the default restart (20, capped at the size 8).
    np.testing.assert_allclose(jsla.gmres(a, b, solve_method=solve_method)[0], want, atol=1e-4)


def test_bicgstab():
  a, b = _nonsym(8), _vec(8)
  want = np.linalg.solve(a, b)
  np.testing.assert_allclose(_j(jsla.bicgstab, a, b)[0], want, atol=1e-4)
  np.testing.assert_allclose(_j(jsla.bicgstab, a, b, M=np.diag(1 / np.diag(a)))[0], want,
                             atol=1e-4)
  np.testing.assert_allclose(_j(jsla.bicgstab, a, b, x0=want)[0], want, atol=1e-5)


def test_pytree_vectors():
  a, b = _nonsym(6), _vec(6)
  want = np.linalg.solve(a, b)
  tree = {"u": b[:2], "v": b[2:]}

  def matvec(t):
    w = jnp.dot(a, jnp.concatenate([t["u"], t["v"]]))
    return {"u": w[:2], "v": w[2:]}
  for solver in (jsla.gmres, jsla.bicgstab):
    x = _j(solver, matvec, tree)[0]
    np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), want, atol=1e-4)
  s = _spd(6)
  x = jsla.cg(lambda t: {"u": jnp.dot(s, jnp.concatenate([t["u"], t["v"]]))[:2],
                         "v": jnp.dot(s, jnp.concatenate([t["u"], t["v"]]))[2:]}, tree)[0]
  np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), np.linalg.solve(s, b),
                             atol=1e-4)
  with pytest.raises(ValueError, match="tree structure"):
    _j(jsla.cg, matvec, tree, x0=[b])
  with pytest.raises(ValueError, match="shapes"):
    _j(jsla.cg, matvec, tree, x0={"u": b[:3], "v": b[3:]})


def test_solver_errors():
  with pytest.raises(ValueError, match="square"):
    jsla.cg(np.ones((2, 3)), np.ones(2))
  with pytest.raises(TypeError, match="function or ndarray"):
    jsla.bicgstab("A", np.ones(2))
  with pytest.raises(ValueError, match="solve_method"):
    jsla.gmres(np.eye(2), np.ones(2), solve_method="qr")


def test_complex_x64(x64):
  a, b = _nonsym(6, np.complex128), _vec(6, np.complex128)
  want = np.linalg.solve(a, b)
  for solver in (jsla.gmres, jsla.bicgstab):
    x = _j(solver, a, b, tol=1e-12)[0]
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x, want, atol=1e-9)
  h = a @ a.conj().T
  np.testing.assert_allclose(_j(jsla.cg, h, b, tol=1e-12)[0], np.linalg.solve(h, b), atol=1e-8)


def test_solver_grads_vmap(x64):
  a, n = _spd(5, np.float64), _nonsym(5, np.float64)
  b = _vec(5, np.float64)
  tight = dict(tol=1e-13)
  check_grads(lambda m, b: jsla.cg(lambda v: jnp.dot(m @ m.T, v), b, **tight)[0],
              (a, b), order=1, atol=1e-5, rtol=1e-5)
  check_grads(lambda m, b: jsla.bicgstab(m, b, **tight)[0], (n, b), order=1,
              modes=("rev",), atol=1e-5, rtol=1e-5)
  # d sum(A^-1 b) / dA = -A^-T 1 (A^-1 b)^T
  g = jit(grad(lambda m: jnp.sum(jsla.gmres(m, b, **tight)[0])))(n)
  want = -np.outer(np.linalg.solve(n.T, np.ones(5)), np.linalg.solve(n, b))
  np.testing.assert_allclose(g, want, atol=1e-8)
  bs = np.stack([b, 2 * b, -b])
  np.testing.assert_allclose(jit(vmap(lambda v: jsla.cg(a, v, **tight)[0]))(bs),
                             np.stack([np.linalg.solve(a, v) for v in bs]), atol=1e-9)
  np.testing.assert_allclose(
      jit(vmap(lambda v: jsla.gmres(n, v, solve_method="incremental", **tight)[0]))(bs),
      np.stack([np.linalg.solve(n, v) for v in bs]), atol=1e-9)


# ---- optimize ----

def _rosen(x):
  return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _rosen_np(x):
  return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


METHODS = ["BFGS", "l-bfgs-experimental-do-not-rely-on-this"]


@pytest.mark.parametrize("method", METHODS)
def test_minimize_rosenbrock_x64(x64, method):
  x0 = np.array([-1.2, 1.0, -0.5, 0.8])
  res = jit(lambda x: jopt.minimize(_rosen, x, method=method))(x0)
  want = osp_optimize.minimize(_rosen_np, x0, method="BFGS")
  assert isinstance(res, jopt.OptimizeResults)
  assert bool(res.success) and int(res.status) == 0
  np.testing.assert_allclose(res.x, np.ones(4), atol=1e-5)
  np.testing.assert_allclose(res.x, want.x, atol=1e-4)
  np.testing.assert_allclose(res.fun, _rosen_np(np.asarray(res.x)), atol=1e-12)
  np.testing.assert_allclose(res.jac, np.asarray(grad(_rosen)(res.x)), atol=1e-12)
  assert np.max(np.abs(res.jac)) < 1e-5
  assert 0 < int(res.nit) < 200 and int(res.nfev) >= int(res.nit)
  if method == "BFGS":
    # The inverse-Hessian estimate approximates the true inverse Hessian at the optimum.
    h = np.array([[802., -400, 0, 0], [-400, 1002, -400, 0], [0, -400, 1002, -400],
                  [0, 0, -400, 200]])
    np.testing.assert_allclose(res.hess_inv @ h, np.eye(4), atol=0.3)
  else:
    assert res.hess_inv is None


@pytest.mark.parametrize("method", METHODS)
def test_minimize_float32_args_vmap(method):
  def fun(x, c):
    return jnp.sum((x - c) ** 4) + jnp.sum(x ** 2)
  c = jnp.arange(3.0)
  solve = jit(lambda cc: jopt.minimize(fun, jnp.zeros(3), (cc,), method=method))
  res = solve(c)
  want = osp_optimize.minimize(lambda x: np.sum((x - np.arange(3.)) ** 4) + np.sum(x ** 2),
                               np.zeros(3), method="BFGS")
  assert res.x.dtype == np.float32 and bool(res.success)
  np.testing.assert_allclose(res.x, want.x, atol=2e-3)
  np.testing.assert_allclose(res.fun, want.fun, rtol=1e-5)
  cs = jnp.stack([c, -c])
  xs = jit(vmap(lambda cc: solve(cc).x))(cs)
  for cc, x in zip(np.asarray(cs), np.asarray(xs)):
    np.testing.assert_allclose(x, solve(cc).x, atol=1e-4)


def test_minimize_options_status_errors():
  quad = lambda x: jnp.sum((x - 1.0) ** 2)
  res = jit(lambda x: jopt.minimize(lambda x: jnp.sum(x ** 4), x, method="BFGS",
                                    options=dict(maxiter=2)))(jnp.ones(3))
  assert int(res.nit) == 2 and int(res.status) == 1 and not bool(res.success)
  # Unbounded below: the line search cannot bracket, so x stays put.
  res = jit(lambda x: jopt.minimize(lambda x: -jnp.sum(x), x, method="BFGS"))(jnp.zeros(3))
  assert not bool(res.success) and int(res.status) == 5
  np.testing.assert_array_equal(res.x, np.zeros(3))
  res = jopt.minimize(quad, jnp.zeros(2), method="bfgs", tol=1e-3)
  np.testing.assert_allclose(res.x, np.ones(2), atol=1e-3)
  with pytest.raises(TypeError, match="must be a tuple"):
    jopt.minimize(quad, jnp.zeros(2), 1, method="BFGS")
  with pytest.raises(ValueError, match="not recognized"):
    jopt.minimize(quad, jnp.zeros(2), method="CG")
  with pytest.raises(ValueError, match="1-D"):
    jopt.minimize(quad, jnp.zeros((2, 1)), method="BFGS")
  with pytest.raises(TypeError, match="unknown options"):
    jopt.minimize(quad, jnp.zeros(2), method="BFGS", options=dict(maxcor=3))


def test_line_search_wolfe(x64):
  f = lambda x: jnp.sum((x - 3.0) ** 2) + jnp.sum(jnp.sin(x))
  x0 = np.zeros(3)
  g0 = np.asarray(grad(f)(x0))
  p = -g0
  res = jit(lambda x, p: line_search(f, x, p))(x0, p)
  assert not bool(res.failed) and int(res.status) == 0
  a = float(res.a_k)
  f0, fa = float(f(x0)), float(f(x0 + a * p))
  ga = np.asarray(grad(f)(x0 + a * p))
  assert fa <= f0 + 1e-4 * a * (g0 @ p)           # sufficient decrease
  assert abs(ga @ p) <= 0.9 * abs(g0 @ p)          # strong curvature condition
  np.testing.assert_allclose(res.f_k, fa)
  np.testing.assert_allclose(res.g_k, ga)
  want = osp_optimize.line_search(lambda x: float(f(x)), lambda x: np.asarray(grad(f)(x)),
                                  x0, p)
  assert want[0] is not None
  # An ascent direction fails at once and stays put.
  bad = line_search(f, x0, g0)
  assert bool(bad.failed) and float(bad.a_k) == 0.0
