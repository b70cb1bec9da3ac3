"""`odeint`: adaptive Dormand-Prince (RK45) integration, differentiable by the adjoint method.

The forward pass is an ordinary traced program (a `scan` over the requested
times, each running a `while_loop` of adaptive steps), so it compiles under
`jit` and batches under `vmap`. Solution values at the requested times come
from the method's 4th-order dense output (a quartic through both ends, both
slopes and a midpoint estimate), so step sizes never have to hit them.

Reverse mode is a `custom_vjp`: the backward pass integrates the adjoint
system backwards in time, one output interval at a time, starting from the
cotangent of the last output. `func` may close over traced values: it is
traced once into a jaxpr whose constants become explicit (differentiated)
arguments, the job `closure_convert` does in JAX.
"""
import functools

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.api import vjp
from tracejax._src.control_flow.loops import scan, while_loop
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src.custom_derivatives import custom_vjp
from tracejax._src.interpreters import staging
import tracejax.numpy as jnp


def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


# ---- flattening a pytree state to one vector (so the integrator is written once) ----

def _ravel(tree):
  leaves, treedef = tree_util.tree_flatten(tree)
  shapes = [jnp.shape(x) for x in leaves]
  sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
  dtype = dtypes.result_type(*leaves) if leaves else np.float32
  flat = (jnp.concatenate([jnp.ravel(jnp.asarray(x, dtype)) for x in leaves])
          if leaves else jnp.zeros((0,), dtype))
  leaf_dtypes = [_aval(x).dtype for x in leaves]

  def unravel(v):
    out, i = [], 0
    for s, n, dt in zip(shapes, sizes, leaf_dtypes):
      out.append(jnp.reshape(v[i:i + n], s).astype(dt))
      i += n
    return tree_util.tree_unflatten(treedef, out)
  return flat, unravel


# ---- closure conversion ----

class _ConvertedFun:
  """`func` as a jaxpr: called as `f(y, t, *args, *consts)` with its constants explicit."""

  def __init__(self, jaxpr, name):
    self.jaxpr, self.__name__ = jaxpr, name

  def __call__(self, y, t, *rest):
    return ir.eval_jaxpr(self.jaxpr, [], y, t, *rest)[0]


def _closure_convert(flat_fun, y, t, args):
  in_avals = [_aval(y), _aval(t)] + [_aval(a) for a in args]
  jaxpr, consts = staging.trace_to_jaxpr(flat_fun, in_avals)
  cj = ir.Jaxpr([], list(jaxpr.invars) + list(jaxpr.constvars), jaxpr.outvars, jaxpr.eqns)
  return _ConvertedFun(cj, getattr(flat_fun, "__name__", "func")), list(consts)


# ---- Dormand-Prince tableau (5th-order solution, embedded 4th-order error estimate) ----

_C = np.array([0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1])
_A = [np.array(r) for r in (
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])]
_B5 = np.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0])
_B4 = np.array([5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100,
                1 / 40])
_E = _B5 - _B4
# Weights of the dense-output estimate of y at the middle of a step (Shampine, 1986).
_MID = np.array([6025192743 / 30085553152, 0, 51252292925 / 65400821598,
                 -2691868925 / 45128329728, 187940372067 / 1594534317056,
                 -1776094331 / 19743644256, 11237099 / 235043384]) / 2


def _rk_step(func, y0, f0, t0, dt, extra):
  """One Dormand-Prince step: (y1, f1, error estimate, the 7 stage slopes)."""
  dtype = y0.dtype
  ks = [f0]
  for i, row in enumerate(_A):
    yi = y0 + dt * sum(jnp.asarray(a, dtype) * k for a, k in zip(row, ks) if a != 0)
    ks.append(func(yi, t0 + dt * jnp.asarray(_C[i + 1], dtype), *extra))
  y1 = y0 + dt * sum(jnp.asarray(b, dtype) * k for b, k in zip(_B5, ks) if b != 0)
  # FSAL: the last stage is evaluated at (y1, t0 + dt), so ks[6] == f(y1).
  err = dt * sum(jnp.asarray(e, dtype) * k for e, k in zip(_E, ks))
  return y1, ks[6], err, ks


def _rms(x):
  return jnp.sqrt(jnp.mean(x * x))


def _error_ratio(err, y0, y1, rtol, atol):
  tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
  return _rms(err / tol)


def _next_step(dt, ratio, accepted):
  """Classical controller for an order-5 method: safety 0.9, growth in [0.2, 10], and no
  growth right after a rejection."""
  factor = 0.9 * jnp.where(ratio > 0, ratio, 1.0) ** (-1.0 / 5.0)
  factor = jnp.where(ratio > 0, factor, 10.0)
  factor = jnp.clip(factor, 0.2, 10.0)
  factor = jnp.where(accepted, factor, jnp.minimum(factor, 1.0))
  return dt * factor


def _initial_step(func, t0, y0, f0, rtol, atol, extra, order=4):
  """Starting step size from the solution's and derivative's scale (Hairer, Norsett and
  Wanner, Solving ODEs I, II.4)."""
  scale = atol + jnp.abs(y0) * rtol
  d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
  h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / jnp.where(d1 > 0, d1, 1.0))
  h0 = h0.astype(y0.dtype)
  f1 = func(y0 + h0 * f0, t0 + h0, *extra)
  d2 = _rms((f1 - f0) / scale) / h0
  dmax = jnp.maximum(d1, d2)
  h1 = jnp.where(dmax <= 1e-15, jnp.maximum(1e-6, h0 * 1e-3),
                 (0.01 / jnp.where(dmax > 0, dmax, 1.0)) ** (1.0 / (order + 1)))
  return jnp.minimum(100 * h0, h1).astype(y0.dtype)


def _interp(y0, y1, f0, f1, ks, dt, s):
  """The quartic p with p(0)=y0, p(1)=y1, p(1/2)=ymid, p'(0)=dt f0, p'(1)=dt f1, at s."""
  dtype = y0.dtype
  ymid = y0 + dt * sum(jnp.asarray(m, dtype) * k for m, k in zip(_MID, ks) if m != 0)
  A = y1 - y0 - dt * f0
  B = dt * (f1 - f0)
  C = ymid - y0 - 0.5 * dt * f0
  a = 2 * B - 8 * A + 16 * C
  b = 14 * A - 3 * B - 32 * C
  c = B - 5 * A + 16 * C
  return y0 + s * (dt * f0 + s * (c + s * (b + s * a)))


def _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *extra):
  """The forward solve on a flat state: values at every time in `ts` (ys[0] = y0)."""
  dtype = y0.dtype
  ts = ts.astype(dtype)
  f0 = func(y0, ts[0], *extra)
  dt0 = _initial_step(func, ts[0], y0, f0, rtol, atol, extra)
  dt0 = jnp.minimum(dt0, hmax)
  limited = np.isfinite(mxstep)

  def advance(carry, target):
    # carry: (y, f, t, dt, last accepted step's data for interpolation)
    def cond(st):
      y, f, t, dt, n, _ = st
      ok = (t < target) & (dt > 0)
      return (ok & (n < mxstep)) if limited else ok

    def body(st):
      y, f, t, dt, n, last = st
      y1, f1, err, ks = _rk_step(func, y, f, t, dt, extra)
      ratio = _error_ratio(err, y, y1, rtol, atol)
      accept = ratio <= 1
      new_dt = jnp.minimum(_next_step(dt, ratio, accept), hmax)
      last_new = (y, y1, f, f1, jnp.stack(ks), t, dt)
      last = tuple(jnp.where(accept, a, b) for a, b in zip(last_new, last))
      y = jnp.where(accept, y1, y)
      f = jnp.where(accept, f1, f)
      t = jnp.where(accept, t + dt, t)
      return y, f, t, new_dt, n + 1, last

    y, f, t, dt, last = carry
    y, f, t, dt, _, last = while_loop(cond, body, (y, f, t, dt, jnp.asarray(0, np.int32), last))
    ly0, ly1, lf0, lf1, lks, lt, ldt = last
    s = (target - lt) / jnp.where(ldt > 0, ldt, 1.0)
    out = _interp(ly0, ly1, lf0, lf1, list(lks), ldt, s)
    out = jnp.where(t == target, y, out)
    return (y, f, t, dt, last), out

  ks0 = jnp.zeros((7,) + y0.shape, dtype)
  last0 = (y0, y0, f0, f0, ks0, ts[0], jnp.zeros((), dtype))
  _, ys = scan(advance, (y0, f0, ts[0], dt0, last0), ts[1:])
  return jnp.concatenate([y0[None], ys])


# ---- reverse mode: the adjoint system ----

@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *extra):
  return _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *extra)


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *extra):
  ys = _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *extra)
  return ys, (ys, ts, extra)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, extra = res
  dtype = ys.dtype
  ts = ts.astype(dtype)
  float_mask = [dtypes.issubdtype(_aval(e).dtype, np.inexact) for e in extra]
  diff_extra = [e for e, m in zip(extra, float_mask) if m]

  def with_diff(args):
    it = iter(args)
    return [next(it) if m else e for e, m in zip(extra, float_mask)]

  # Augmented state in reversed time s = -t: (y, a, extra_bar), with
  #   dy/ds = -f(y, -s),  da/ds = a^T df/dy,  d extra_bar/ds = a^T df/d extra.
  aug0, unravel_aug = _ravel((ys[-1], g[-1], [jnp.zeros_like(e) for e in diff_extra]))

  def aug_dynamics(aug, s, *dargs):
    y, a, _ = unravel_aug(aug)
    fy, pullback = vjp(lambda y_, *e_: func(y_, -s, *with_diff(e_)), y, *dargs)
    cts = pullback(a)
    y_bar, e_bar = cts[0], list(cts[1:])
    return _ravel((-fy, y_bar, e_bar))[0]

  def step(carry, xs):
    a, e_bar = carry
    y_i, t_i, t_prev, g_prev = xs
    aug, _ = _ravel((y_i, a, e_bar))
    out = _integrate(aug_dynamics, rtol, atol, mxstep, hmax, aug,
                     jnp.stack([-t_i, -t_prev]), *diff_extra)[-1]
    _, a_new, e_bar_new = unravel_aug(out)
    return (a_new + g_prev, e_bar_new), None

  n = ys.shape[0]
  # dL/dt_i for i >= 1 is g_i . f(y_i, t_i): later outputs do not depend on t_i.
  _, f_all = scan(lambda c, yt: (c, func(yt[0], yt[1], *extra)), 0, (ys, ts))
  ts_bar_rest = jnp.sum(g[1:] * f_all[1:], axis=1)
  init = (g[-1], [jnp.zeros_like(e) for e in diff_extra])
  if n > 1:
    xs = (ys[1:][::-1], ts[1:][::-1], ts[:-1][::-1], g[:-1][::-1])
    (a0, e_bar), _ = scan(step, init, xs)
  else:
    a0, e_bar = init
  # y(t) = Phi(y0, t0, t) gives dy/dt0 = -dy/dy0 f(y0, t0) for t > t0; ys[0] is y0 itself,
  # independent of t0, so its cotangent g[0] is left out.
  t0_bar = -jnp.sum((a0 - g[0]) * f_all[0])
  ts_bar = jnp.concatenate([t0_bar[None], ts_bar_rest]).astype(_aval(ts).dtype)
  it = iter(e_bar)
  extra_bar = [next(it) if m else None for m in float_mask]
  return (a0, ts_bar, *extra_bar)


_odeint.defvjp(_odeint_fwd, _odeint_bwd)


def _check_arg(arg):
  if not isinstance(arg, Tracer) and not avals_mod.is_valid_jaxtype(arg):
    raise TypeError("The contents of odeint *args must be arrays or scalars, but got "
                    f"{arg!r}.")


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
  """Solve `dy/dt = func(y, t, *args)` from `y(t[0]) = y0`, returning y at every time in `t`.

  Adaptive Dormand-Prince (5th order, 4th-order error estimate) with dense output.
  Differentiable in reverse mode with respect to `y0`, `t` and `args` (and anything
  `func` closes over) by the adjoint method; works under `jit` and `vmap`.

  Args:
    func: `func(y, t, *args)` returning dy/dt with the same pytree structure as `y`.
    y0: the initial state, an array or pytree of floating arrays.
    t: a 1-D array of increasing times; `t[0]` is the initial time.
    *args: extra arrays passed to `func`.
    rtol, atol: relative and absolute error tolerances.
    mxstep: the most steps taken between two consecutive times of `t`.
    hmax: the largest step size.

  Returns:
    An array (pytree of arrays) like `y0` with a new leading axis of length `len(t)`.

  Example:
    >>> ys = odeint(lambda y, t, k: -k * y, 1.0, jnp.linspace(0., 1., 5), 2.0)
    >>> # ys ~ exp(-2 t)
  """
  if not callable(func):
    raise TypeError(f"odeint: func must be callable, got {func!r}")
  for a in tree_util.tree_leaves(args):
    _check_arg(a)
  t = jnp.asarray(t)
  if t.ndim != 1:
    raise ValueError(f"odeint: t must be a 1-D array of times, got shape {t.shape}")
  if not dtypes.issubdtype(t.dtype, np.floating):
    t = t.astype(dtypes.canonicalize_dtype(np.float64))
  for leaf in tree_util.tree_leaves(y0):
    if not dtypes.issubdtype(_aval(leaf).dtype, np.inexact):
      raise TypeError(f"odeint: y0 must contain floating-point arrays, got dtype "
                      f"{_aval(leaf).dtype}")
  for name, v in (("rtol", rtol), ("atol", atol), ("mxstep", mxstep), ("hmax", hmax)):
    if isinstance(v, Tracer) or np.ndim(v) != 0:
      raise TypeError(f"odeint: {name} must be a Python scalar, got {v!r}")
  y0 = tree_util.tree_map(jnp.asarray, y0)
  y_flat, unravel = _ravel(y0)
  if not dtypes.issubdtype(y_flat.dtype, np.floating):
    raise TypeError(f"odeint: y0 must be real floating point, got {y_flat.dtype}")
  arg_leaves, arg_tree = tree_util.tree_flatten(args)

  def flat_func(y, tt, *leaves):
    out = func(unravel(y), tt, *tree_util.tree_unflatten(arg_tree, leaves))
    out_tree = tree_util.tree_structure(out)
    if out_tree != tree_util.tree_structure(y0):
      raise TypeError(f"odeint: func must return the structure of y0 "
                      f"({tree_util.tree_structure(y0)}), got {out_tree}")
    return [_ravel(out)[0].astype(y_flat.dtype)]

  flat_func.__name__ = getattr(func, "__name__", "func")
  converted, consts = _closure_convert(flat_func, y_flat, t[0].astype(y_flat.dtype),
                                       arg_leaves)
  ys = _odeint(converted, float(rtol), float(atol), float(mxstep), float(hmax),
               y_flat, t, *arg_leaves, *consts)
  return _unravel_stacked(ys, y0)


def _unravel_stacked(ys, y0):
  leaves, treedef = tree_util.tree_flatten(y0)
  out, i = [], 0
  for leaf in leaves:
    a = _aval(leaf)
    n = int(np.prod(a.shape, dtype=np.int64))
    out.append(jnp.reshape(ys[:, i:i + n], (ys.shape[0],) + a.shape).astype(a.dtype))
    i += n
  return tree_util.tree_unflatten(treedef, out)
