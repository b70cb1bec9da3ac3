"""`jax.scipy.optimize`: unconstrained minimization (BFGS, L-BFGS) under `jit`.

Each method is one `lax.while_loop` whose carry is a NamedTuple of arrays, so
`minimize` jits (with `fun` closed over and `args` possibly traced) and vmaps over
starting points. Step lengths come from `line_search`: the bracketing-and-zoom
search of Nocedal & Wright (Algorithms 3.5 and 3.6) for a point satisfying the
strong Wolfe conditions, written as a single loop with a phase flag so that every
iteration costs exactly one evaluation of `fun` and its gradient.

Status codes (`OptimizeResults.status`):
  BFGS: 0 converged (|grad| < gtol), 1 maxiter reached, 2 + the line search's status
  when it failed: 3 zoom failed (the bracket collapsed or values were not finite),
  4 not a descent direction (a saddle point or a nonsmooth kink), 5 line search
  iterations exhausted.
  L-BFGS: 0 converged, 1 maxiter, 2 maxfun, 3 maxgrad, 4 the objective decreased
  by less than ftol, 5 line search failed.
"""
from typing import Any, NamedTuple

import numpy as np

from tracejax._src import dtypes
from tracejax._src.api import value_and_grad
from tracejax._src.numpy import util
import tracejax.lax as lax
import tracejax.numpy as jnp

__all__ = ["OptimizeResults", "minimize", "line_search"]


class OptimizeResults(NamedTuple):
  """What `minimize` returns.

  Attributes:
    x: the solution.
    success: whether the method converged (a bool array).
    status: the method's termination code (see the module docstring).
    fun: the objective at x.
    jac: its gradient at x.
    hess_inv: the final inverse-Hessian estimate (BFGS), or None (L-BFGS).
    nfev, njev: evaluations of the objective and of its gradient.
    nit: iterations taken.
  """
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


# ---- line search ----

class LineSearchResults(NamedTuple):
  """`line_search`'s result: step `a_k`, objective `f_k` and gradient `g_k` there."""
  failed: Any
  nit: Any
  nfev: Any
  ngev: Any
  k: Any
  a_k: Any
  f_k: Any
  g_k: Any
  status: Any


def _real_dot(a, b):
  return jnp.real(jnp.vdot(a, b, precision=lax.Precision.HIGHEST))


def _cubic_min(a, fa, fpa, b, fb, fpb):
  """Minimizer of the cubic matching values and slopes at a and b (NaN if none)."""
  d1 = fpa + fpb - 3 * (fa - fb) / (a - b)
  disc = d1 * d1 - fpa * fpb
  d2 = jnp.sign(b - a) * jnp.sqrt(jnp.where(disc >= 0, disc, jnp.nan))
  return b - (b - a) * (fpb + d2 - d1) / (fpb - fpa + 2 * d2)


def _quadratic_min(a, fa, fpa, b, fb):
  """Minimizer of the parabola with value and slope fa, fpa at a and value fb at b."""
  d = b - a
  denom = 2 * (fb - fa - fpa * d)
  return a - fpa * d * d / denom


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
  """Find a step a along `pk` from `xk` satisfying the strong Wolfe conditions.

  Conditions (phi(a) = f(xk + a pk)): phi(a) <= phi(0) + c1 a phi'(0) and
  |phi'(a)| <= c2 |phi'(0)|.

  Args:
    f: the objective, a function of one 1-D array returning a scalar.
    xk: the current point; pk: a descent direction.
    old_fval, gfk: f(xk) and its gradient, if already known.
    old_old_fval: f at the previous iterate, for the first trial step (as SciPy).
    c1, c2: the Wolfe constants (0 < c1 < c2 < 1).
    maxiter: the most evaluations of f.

  Returns:
    `LineSearchResults` (failed, nit, nfev, ngev, k, a_k, f_k, g_k, status); a_k is 0
    (and f_k, g_k those at xk) when the search fails.

  Example:
    >>> f = lambda x: jnp.sum(x ** 2)
    >>> line_search(f, jnp.ones(2), -jnp.ones(2)).a_k
    Array(1., dtype=float32)
  """
  vg = value_and_grad(f)
  xk = util.to_array(xk)
  pk = util.to_array(pk)
  if old_fval is None or gfk is None:
    old_fval, gfk = vg(xk)
  dtype = xk.dtype
  rdt = dtypes.to_real_dtype(dtype)
  phi0 = jnp.asarray(old_fval, rdt)
  dphi0 = _real_dot(gfk, pk).astype(rdt)
  one = jnp.asarray(1.0, rdt)
  if old_old_fval is None:
    a1 = one
  else:
    # SciPy's first trial: the step a quadratic model of the last decrease predicts.
    guess = 1.01 * 2 * (phi0 - jnp.asarray(old_old_fval, rdt)) / dphi0
    a1 = jnp.where(jnp.isfinite(guess) & (guess > 0), jnp.minimum(one, guess), one)

  def phi_and_grad(a):
    fx, g = vg(xk + a.astype(dtype) * pk)
    return jnp.asarray(fx, rdt), g, _real_dot(g, pk).astype(rdt)

  zero = jnp.asarray(0.0, rdt)
  i32 = lambda v: jnp.asarray(v, np.int32)
  # Carry: i, phase (0 bracket, 1 zoom), trial step, previous point (a, phi, dphi),
  # lo and hi of the zoom bracket, done, status, gradient at the last trial.
  init = dict(i=i32(0), zoom=jnp.asarray(False), trial=a1,
              prev=(zero, phi0, dphi0), lo=(zero, phi0, dphi0), hi=(zero, phi0, dphi0),
              done=jnp.asarray(False), status=jnp.where(dphi0 < 0, i32(0), i32(2)),
              g=gfk)

  def cond(s):
    return ~s["done"] & (s["status"] == 0) & (s["i"] < maxiter)

  def body(s):
    a = s["trial"]
    phi, g, dphi = phi_and_grad(a)
    armijo = phi <= phi0 + c1 * a * dphi0
    curvature = jnp.abs(dphi) <= -c2 * dphi0
    finite = jnp.isfinite(phi) & jnp.isfinite(dphi)
    point = (a, phi, dphi)
    a_prev, phi_prev, _ = s["prev"]
    lo, hi = s["lo"], s["hi"]

    # Bracketing phase (Algorithm 3.5).
    b_high = ~armijo | ((s["i"] > 0) & (phi >= phi_prev)) | ~finite
    b_done = ~b_high & curvature
    b_up = ~b_high & ~b_done & (dphi >= 0)
    b_lo = _select3(b_high, s["prev"], b_up, point, point)
    b_hi = _select3(b_high, point, b_up, s["prev"], hi)
    b_zoom = b_high | b_up

    # Zoom phase (Algorithm 3.6).
    z_high = ~armijo | (phi >= lo[1]) | ~finite
    z_done = ~z_high & curvature
    z_flip = ~z_high & ~z_done & (dphi * (hi[0] - lo[0]) >= 0)
    z_lo = _select3(z_high, lo, z_done, lo, point)
    z_hi = _select3(z_high, point, z_flip, lo, hi)

    zoom_now = s["zoom"]
    done = jnp.where(zoom_now, z_done, b_done)
    new_lo = _where3(zoom_now, z_lo, b_lo)
    new_hi = _where3(zoom_now, z_hi, b_hi)
    in_zoom = zoom_now | b_zoom

    # The next trial: a doubled step while bracketing, a safeguarded interpolant in zoom.
    a_lo, f_lo, d_lo = new_lo
    a_hi, f_hi, d_hi = new_hi
    width = a_hi - a_lo
    cubic = _cubic_min(a_lo, f_lo, d_lo, a_hi, f_hi, d_hi)
    quad = _quadratic_min(a_lo, f_lo, d_lo, a_hi, f_hi)
    lo_edge = jnp.minimum(a_lo, a_hi) + 0.1 * jnp.abs(width)
    hi_edge = jnp.maximum(a_lo, a_hi) - 0.1 * jnp.abs(width)
    inside = lambda t: jnp.isfinite(t) & (t >= lo_edge) & (t <= hi_edge)
    interp = jnp.where(inside(cubic), cubic,
                       jnp.where(inside(quad), quad, a_lo + 0.5 * width))
    nxt = jnp.where(in_zoom, interp, 2 * a)
    # A bracket too narrow to resolve in this precision ends the search: zoom failed.
    collapsed = in_zoom & ~done & (jnp.abs(width) <= jnp.finfo(rdt).eps * jnp.abs(a_hi))
    status = jnp.where(collapsed, i32(1), s["status"])
    return dict(i=s["i"] + 1, zoom=in_zoom, trial=nxt, prev=point, lo=new_lo, hi=new_hi,
                done=done, status=status, g=g)

  s = lax.while_loop(cond, body, init)
  status = jnp.where(s["done"], i32(0), jnp.where(s["status"] != 0, s["status"], i32(3)))
  failed = status != 0
  # Success: the last trial is the Wolfe point. Failure: step 0, so that the caller
  # stays at its last good iterate (as SciPy's BFGS does).
  a_k = jnp.where(failed, zero, s["prev"][0])
  f_k = jnp.where(failed, phi0, s["prev"][1])
  g_k = jnp.where(failed, gfk, s["g"])
  nfev = s["i"]
  return LineSearchResults(failed=failed, nit=s["i"], nfev=nfev, ngev=nfev, k=s["i"],
                           a_k=a_k, f_k=f_k, g_k=g_k, status=status)


def _where3(c, x, y):
  return tuple(jnp.where(c, u, v) for u, v in zip(x, y))


def _select3(c1, x1, c2, x2, x3):
  """x1 if c1 else (x2 if c2 else x3), for triples."""
  return _where3(c1, x1, _where3(c2, x2, x3))


# ---- BFGS ----

class _BFGSState(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  x_k: Any
  f_k: Any
  g_k: Any
  H_k: Any
  old_old_fval: Any
  status: Any
  ls_status: Any


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  d = x0.shape[0]
  maxiter = 200 * d if maxiter is None else int(maxiter)
  vg = value_and_grad(fun)
  f0, g0 = vg(x0)
  rdt = dtypes.to_real_dtype(x0.dtype)
  i32 = lambda v: jnp.asarray(v, np.int32)
  eye = jnp.eye(d, dtype=x0.dtype)
  f0 = jnp.asarray(f0, rdt)
  state = _BFGSState(
      converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=jnp.asarray(False), k=i32(0),
      nfev=i32(1), ngev=i32(1), x_k=x0, f_k=f0, g_k=g0, H_k=eye,
      old_old_fval=f0 + jnp.linalg.norm(g0).astype(rdt) / 2, status=i32(0), ls_status=i32(0))

  def cond(s):
    return ~s.converged & ~s.failed & (s.k < maxiter)

  def body(s):
    p = -jnp.matmul(s.H_k, s.g_k, precision=lax.Precision.HIGHEST)
    ls = line_search(fun, s.x_k, p, old_fval=s.f_k, old_old_fval=s.old_old_fval, gfk=s.g_k,
                     maxiter=line_search_maxiter)
    step = ls.a_k.astype(x0.dtype) * p
    x_new = s.x_k + step
    y = ls.g_k - s.g_k
    rho = 1.0 / _real_dot(y, step)
    # H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T, skipped when y.s = 0.
    w = eye - rho * jnp.outer(step, y)
    h_new = (jnp.matmul(jnp.matmul(w, s.H_k, precision=lax.Precision.HIGHEST), w.T,
                        precision=lax.Precision.HIGHEST) + rho * jnp.outer(step, step))
    h_new = jnp.where(jnp.isfinite(rho), h_new, s.H_k)
    return _BFGSState(
        converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol, failed=ls.failed, k=s.k + 1,
        nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=x_new, f_k=ls.f_k, g_k=ls.g_k,
        H_k=h_new, old_old_fval=s.f_k, status=s.status, ls_status=ls.status)

  s = lax.while_loop(cond, body, state)
  status = jnp.where(s.converged, i32(0), jnp.where(
      s.k == maxiter, i32(1), jnp.where(s.failed, i32(2) + s.ls_status, i32(-1))))
  return s._replace(status=status)


# ---- L-BFGS ----

class _LBFGSState(NamedTuple):
  converged: Any
  failed: Any
  k: Any
  nfev: Any
  ngev: Any
  x_k: Any
  f_k: Any
  g_k: Any
  s_hist: Any
  y_hist: Any
  rho_hist: Any
  gamma: Any
  status: Any
  ls_status: Any


def _two_loop(g, s_hist, y_hist, rho_hist, gamma, m):
  """-H g by the L-BFGS two-loop recursion over the last min(k, m) pairs (newest last)."""
  def back(j, carry):
    q, alphas = carry
    i = m - 1 - j
    alpha = rho_hist[i] * jnp.vdot(s_hist[i], q)
    return q - alpha * y_hist[i], alphas.at[i].set(alpha)
  q, alphas = lax.fori_loop(0, m, back, (g, jnp.zeros((m,), g.dtype)))
  r = gamma * q

  def fwd(i, r):
    beta = rho_hist[i] * jnp.vdot(y_hist[i], r)
    return r + s_hist[i] * (alphas[i] - beta)
  r = lax.fori_loop(0, m, fwd, r)
  return -r


def _minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                    gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
  d = x0.shape[0]
  maxiter = 200 * d if maxiter is None else int(maxiter)
  maxfun = 200 * d if maxfun is None else int(maxfun)
  maxgrad = 200 * d if maxgrad is None else int(maxgrad)
  m = int(maxcor)
  vg = value_and_grad(fun)
  f0, g0 = vg(x0)
  rdt = dtypes.to_real_dtype(x0.dtype)
  i32 = lambda v: jnp.asarray(v, np.int32)
  state = _LBFGSState(
      converged=jnp.linalg.norm(g0, ord=norm) < gtol, failed=jnp.asarray(False), k=i32(0),
      nfev=i32(1), ngev=i32(1), x_k=x0, f_k=jnp.asarray(f0, rdt), g_k=g0,
      s_hist=jnp.zeros((m, d), x0.dtype), y_hist=jnp.zeros((m, d), x0.dtype),
      rho_hist=jnp.zeros((m,), x0.dtype), gamma=jnp.asarray(1.0, x0.dtype),
      status=i32(0), ls_status=i32(0))

  def cond(s):
    return ~s.converged & ~s.failed

  def body(s):
    # Unused history slots hold zeros (rho 0), so they drop out of the recursion.
    p = _two_loop(s.g_k, s.s_hist, s.y_hist, s.rho_hist, s.gamma, m)
    ls = line_search(fun, s.x_k, p, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
    step = ls.a_k.astype(x0.dtype) * p
    x_new = s.x_k + step
    y = ls.g_k - s.g_k
    sy = jnp.vdot(y, step)
    ok = jnp.real(sy) > 0   # keep curvature pairs that keep H positive definite
    rho = jnp.where(ok, 1.0 / jnp.where(ok, sy, 1), 0).astype(x0.dtype)
    s_hist = jnp.where(ok, jnp.roll(s.s_hist, -1, 0).at[-1].set(step), s.s_hist)
    y_hist = jnp.where(ok, jnp.roll(s.y_hist, -1, 0).at[-1].set(y), s.y_hist)
    rho_hist = jnp.where(ok, jnp.roll(s.rho_hist, -1).at[-1].set(rho), s.rho_hist)
    gamma = jnp.where(ok, sy / jnp.where(ok, jnp.vdot(y, y), 1), s.gamma).astype(x0.dtype)
    k = s.k + 1
    nfev, ngev = s.nfev + ls.nfev, s.ngev + ls.ngev
    status = i32(0)
    status = jnp.where(s.f_k - ls.f_k < ftol, i32(4), status)
    status = jnp.where(ngev >= maxgrad, i32(3), status)
    status = jnp.where(nfev >= maxfun, i32(2), status)
    status = jnp.where(k >= maxiter, i32(1), status)
    status = jnp.where(ls.failed, i32(5), status)
    converged = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
    return _LBFGSState(
        converged=converged, failed=(status > 0) & ~converged, k=k, nfev=nfev, ngev=ngev,
        x_k=x_new, f_k=ls.f_k, g_k=ls.g_k, s_hist=s_hist, y_hist=y_hist,
        rho_hist=rho_hist, gamma=gamma, status=status, ls_status=ls.status)

  s = lax.while_loop(cond, body, state)
  return s._replace(status=jnp.where(s.converged, i32(0), s.status))


_BFGS_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")
_LBFGS_OPTIONS = ("maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun", "maxgrad", "maxls")


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
  """Minimize a scalar function of one 1-D array, as `scipy.optimize.minimize`.

  Args:
    fun: the objective, `fun(x, *args) -> scalar`; differentiated with `grad`.
    x0: the starting point, a 1-D array.
    args: extra positional arguments of fun (a tuple; may hold traced values).
    method: 'BFGS', or 'l-bfgs-experimental-do-not-rely-on-this' (L-BFGS; JAX's name).
    tol: the gradient tolerance `gtol`, unless options gives one.
    options: method options. BFGS: maxiter (200 * size), norm (inf), gtol (1e-5),
      line_search_maxiter (10). L-BFGS: maxiter, norm, maxcor (10), ftol, gtol,
      maxfun, maxgrad, maxls (20).

  Returns:
    `OptimizeResults(x, success, status, fun, jac, hess_inv, nfev, njev, nit)`.

  Example:
    >>> res = minimize(lambda x: jnp.sum((x - 1.) ** 2), jnp.zeros(2), method='BFGS')
    >>> res.x
    Array([1., 1.], dtype=float32)
  """
  if not isinstance(args, tuple):
    raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got "
                    f"{args!r}")
  if not callable(fun):
    raise TypeError(f"minimize: fun must be callable, got {type(fun)}")
  if not isinstance(method, str):
    raise TypeError(f"minimize: method must be a string, got {method!r}")
  options = dict(options or {})
  util.check_arraylike("minimize", x0)
  (x0,) = util.promote_dtypes_inexact(util.to_array(x0))
  if x0.ndim != 1:
    raise ValueError(f"minimize: x0 must be a 1-D array, got shape {x0.shape}")
  if tol is not None:
    options.setdefault("gtol", tol)

  def fun_with_args(x):
    return fun(x, *args)

  name = method.lower()
  if name == "bfgs":
    known = _BFGS_OPTIONS
  elif name == "l-bfgs-experimental-do-not-rely-on-this":
    known = _LBFGS_OPTIONS
  else:
    raise ValueError(f"Method {method} not recognized")
  unknown = sorted(set(options) - set(known))
  if unknown:
    raise TypeError(f"minimize: unknown options for method {method!r}: {unknown}; "
                    f"known: {list(known)}")
  if name == "bfgs":
    r = _minimize_bfgs(fun_with_args, x0, **options)
    hess_inv = r.H_k
  else:
    r = _minimize_lbfgs(fun_with_args, x0, **options)
    hess_inv = None
  return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                         fun=r.f_k, jac=r.g_k, hess_inv=hess_inv, nfev=r.nfev,
                         njev=r.ngev, nit=r.k)
