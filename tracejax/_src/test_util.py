"""`check_grads`: compare forward and reverse derivatives with finite differences."""
import itertools

import numpy as np

from tracejax._src import dtypes, tree_util

EPS = 1e-4

_default_tols = {np.dtype(np.float16): 1e-1, np.dtype(dtypes.bfloat16): 1e-1,
                 np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5,
                 np.dtype(np.complex64): 2e-2, np.dtype(np.complex128): 1e-5}


def _dtype(x):
  """The dtype tracejax computes `x` in: a Python float is float32 unless x64 is on
  (its tolerance must be float32's, not float64's)."""
  return np.dtype(dtypes.canonicalize_dtype(getattr(x, "dtype", None)
                                            or np.asarray(x).dtype))


def _tol(tol, dtype):
  if tol is None:
    return _default_tols.get(np.dtype(dtype), 1e-5)
  if isinstance(tol, dict):
    return tol.get(np.dtype(dtype), _default_tols.get(np.dtype(dtype), 1e-5))
  return tol


def _check_close(a, b, atol, rtol, err_msg="", tol_dtype=None):
  """assert_allclose leaf by leaf, compared in double precision, with the tolerance of
  the leaves' own dtype (or `tol_dtype`): upcasting must not tighten it."""
  for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b)):
    x, y = np.asarray(x), np.asarray(y)
    dt = np.promote_types(x.dtype, y.dtype)
    up = np.complex128 if np.issubdtype(dt, np.complexfloating) else np.float64
    tdt = x.dtype if tol_dtype is None else tol_dtype
    np.testing.assert_allclose(x.astype(up), y.astype(up), atol=_tol(atol, tdt),
                               rtol=_tol(rtol, tdt), err_msg=err_msg)


def _add(xs, ys, scale=1.0):
  return tree_util.tree_map(lambda x, y: np.asarray(x) + scale * np.asarray(y, np.asarray(x).dtype)
                            if np.asarray(y).size else np.asarray(x), xs, ys)


def _rand_like(rng, x):
  shape, dt = np.shape(x), _dtype(x)
  if np.issubdtype(dt, np.complexfloating):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
  return rng.standard_normal(shape).astype(dt)


def _pairing(xs, ys):
  """Re(sum x * y) over matching leaves, in double precision: the real bilinear
  pairing of tangents with cotangents (no conjugation; see check_vjp)."""
  total = 0.0
  for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
    x, y = np.asarray(x, np.complex128), np.asarray(y, np.complex128)
    total += float(np.sum(x * y).real)
  return total


def _result_dtype(*trees):
  """The dtype whose tolerance governs a quantity computed from all these leaves."""
  leaves = [leaf for t in trees for leaf in tree_util.tree_leaves(t)]
  dt = np.result_type(*[_dtype(leaf) for leaf in leaves]) if leaves else np.dtype(np.float32)
  if np.issubdtype(dt, np.complexfloating):
    dt = np.finfo(dt).dtype  # complex64 -> float32: the pairing is real
  return dt if np.issubdtype(dt, np.floating) else np.dtype(np.float32)


def numerical_jvp(f, primals, tangents, eps=EPS):
  f_pos = f(*_add(primals, tangents, eps))
  f_neg = f(*_add(primals, tangents, -eps))
  return tree_util.tree_map(
      lambda a, b: (np.asarray(a, np.float64 if not np.iscomplexobj(a) else np.complex128)
                    - np.asarray(b)) / (2 * eps), f_pos, f_neg)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  rng = np.random.default_rng(0)
  tangent = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  v_out, t_out = f_jvp(args, tangent)
  v_expected = f(*args)
  _check_close(v_out, v_expected, atol, rtol, "primal " + err_msg)
  t_expected = numerical_jvp(f, args, tangent, eps)
  _check_close(t_out, t_expected, atol, rtol, "tangent " + err_msg)


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
  """Check `f_vjp` (`args -> (f(*args), vjp_fun)`) against finite differences.

  For a random tangent t and cotangent c it asserts Re<t, vjp(c)> == Re<J t, c>
  with the bilinear pairing <x, y> = sum x * y (no conjugates). That is the
  autodiff cookbook's complex convention: for holomorphic f, vjp(c) = c * f'(z);
  for real-valued f, grad(f)(z) = d0 u - i d1 u (so vjp(1) of |z|^2 is 2 conj(z));
  for f = conj, vjp(c) = conj(c). Equivalently, with the conjugate-linear inner
  product <x, y>_H = Re(sum conj(x) y): <t, conj(vjp(conj(c)))>_H == <J t, c>_H,
  the form JAX's check_vjp uses. For real arguments all of these coincide."""
  rng = np.random.default_rng(1)
  v_out, vjpfun = f_vjp(*args)
  _check_close(v_out, f(*args), atol, rtol, "primal " + err_msg)
  tangent = tree_util.tree_map(lambda x: _rand_like(rng, x), args)
  tangent_out = numerical_jvp(f, args, tangent, eps)
  cotangent = tree_util.tree_map(lambda x: _rand_like(rng, x), v_out)
  cotangent_out = tuple(vjpfun(cotangent))
  ip = _pairing(tangent, cotangent_out)
  ip_expected = _pairing(tangent_out, cotangent)
  # The tolerance is that of the computation's dtype (float32 finite differences
  # are only good to ~1e-3), not of the double-precision pairing.
  _check_close(ip, ip_expected, atol, rtol, "vjp " + err_msg,
               tol_dtype=_result_dtype(args, v_out))


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
  """Check derivatives of `f` at `args` up to `order` against finite differences.

  `modes` is a subset of ("fwd", "rev"); higher orders differentiate the checked
  derivative again in each mode, as JAX's check_grads does.
  """
  from tracejax._src import api
  args = tuple(args)
  eps = eps or EPS
  default_tol = 1e-6 if all(_dtype(a) in (np.float64, np.complex128)
                            for a in tree_util.tree_leaves(args)) else None
  atol = atol if atol is not None else default_tol
  rtol = rtol if rtol is not None else default_tol

  def _check(order, f, args):
    if "fwd" in modes:
      check_jvp(f, lambda a, t: api.jvp(f, a, t), args, atol, rtol, eps)
      if order > 1:
        _check(order - 1, lambda *a: api.jvp(f, a, _tangent_like(a))[1], args)
    if "rev" in modes:
      check_vjp(f, lambda *a: api.vjp(f, *a), args, atol, rtol, eps)
      if order > 1:
        def f_vjp(*a):
          out, vjpf = api.vjp(f, *a)
          return vjpf(_ct_like(out))
        _check(order - 1, f_vjp, args)

  _check(order, f, args)


def _tangent_like(args):
  rng = np.random.default_rng(2)
  return tuple(tree_util.tree_map(lambda x: _rand_like(rng, x), args))


def _ct_like(out):
  rng = np.random.default_rng(3)
  return tree_util.tree_map(lambda x: _rand_like(rng, x), out)


_ = itertools
