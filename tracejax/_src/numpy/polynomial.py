"""Polynomials as 1-D coefficient arrays, highest degree first (NumPy's legacy poly API).

polyval, vander, poly, polyadd, polysub, polymul, polydiv, polyder, polyint,
polyfit and roots. Shapes are static: the degree is the length of the array,
so everything traces under `jit`, except the options that strip zeros (they
need concrete values, as in JAX). Results that NumPy keeps integral become
floating point where JAX's do (poly, polymul, polydiv, polyder, polyint).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.lax import structural
from tracejax._src.numpy import creation, linalg, math_extra, reductions, shape_ops, ufuncs, util


def _poly_arg(fun_name, p, inexact=False):
  """`p` as a 1-D array (0-d is one coefficient); `inexact` makes ints floating."""
  util.check_arraylike_or_list(fun_name, p)
  p = util.promote_dtypes_inexact(p)[0] if inexact else util.to_operand(p)
  p = util.to_array(p)
  if util.ndim(p) == 0:
    p = util.reshape(p, (1,))
  if util.ndim(p) != 1:
    raise ValueError(f"{fun_name}: the coefficients must be a 1-D array, got shape "
                     f"{util.shape(p)}")
  return p


def polyval(p, x, *, unroll=16):
  """The polynomial with coefficients `p` (highest degree first) evaluated at `x`.

  Args:
    p: coefficients, highest degree first; a 2-D `p` evaluates one polynomial per
      column (its rows are the coefficients, as in NumPy).
    x: points to evaluate at (any shape).
    unroll: accepted for JAX compatibility; the degree is static, so Horner's steps
      are always unrolled.

  >>> polyval(jnp.array([1., 2.]), jnp.array([1., 2.]))
  DeviceArray([3., 4.], dtype=float32)
  """
  util.check_arraylike_or_list("polyval", p, x)
  p, x = util.promote_dtypes(p, x)
  p, x = util.to_array(p), util.to_array(x)
  if util.ndim(p) == 0:
    raise ValueError("polyval: p must be at least one-dimensional")
  # Horner's sum starts from zeros of x's dtype given explicitly (strong, as JAX's
  # full_like with a dtype), so the value is strongly typed even for weak p and x.
  y = creation.zeros(util.broadcast_shapes(util.shape(p)[1:], util.shape(x)), util.dtype_of(x))
  n = util.shape(p)[0]
  # The coefficients as one lax.split (JAX scans over them): its transpose concatenates
  # their cotangents, which then keep p's weak type (single slices' pads would not).
  coeffs = structural.split(p, (1,) * n, 0) if n else ()
  for c in coeffs:
    y = ufuncs.add(ufuncs.multiply(y, x), util.reshape(c, util.shape(p)[1:]))
  if not n:
    # JAX's scan over no coefficients still depends on p and x (its derivatives are
    # zeros, not symbolic zeros: digamma(polyval([], 0)) has a NaN tangent there, as
    # in JAX); exact zeros (empty sums) carry that without touching an infinite x.
    dt = util.dtype_of(y)
    none_of_x = reductions.sum(util.reshape(x, (int(np.prod(util.shape(x))),))[:0], dtype=dt)
    y = ufuncs.add(ufuncs.add(y, reductions.sum(p, axis=0, dtype=dt)), none_of_x)
  return y


def vander(x, N=None, increasing=False):
  """The Vandermonde matrix: columns are powers of `x` (decreasing unless `increasing`).

  Args:
    x: 1-D array.
    N: number of columns (default `len(x)`).
    increasing: powers left to right increase when True.

  >>> vander(jnp.array([1, 2, 3]), 3)
  DeviceArray([[1, 1, 1],
               [4, 2, 1],
               [9, 3, 1]], dtype=int32)
  """
  x = util.to_array(x)
  if util.ndim(x) != 1:
    raise ValueError("x must be a one-dimensional array")
  n = util.shape(x)[0] if N is None else util.concrete_int(N, "N argument of jnp.vander")
  if n < 0:
    raise ValueError("N must be nonnegative")
  powers = creation.arange(n, dtype=util.dtype_of(x))
  if not increasing:
    powers = shape_ops.flip(powers)
  return ufuncs.power(util.reshape(x, util.shape(x) + (1,)), util.reshape(powers, (1, n)))


# ---- arithmetic ----

def _pad_left(a, n):
  k = n - util.shape(a)[0]
  if k == 0:
    return a
  return shape_ops.concatenate([creation.zeros((k,), util.dtype_of(a)), a])


def _two_polys(fun_name, a1, a2, inexact=False):
  util.check_arraylike_or_list(fun_name, a1, a2)
  a1, a2 = (util.promote_dtypes_inexact if inexact else util.promote_dtypes)(a1, a2)
  return _poly_arg(fun_name, a1), _poly_arg(fun_name, a2)


def polyadd(a1, a2):
  """The sum of two polynomials (the shorter is padded with leading zeros).

  >>> polyadd(jnp.array([1, 2]), jnp.array([1, 2, 3]))
  DeviceArray([1, 3, 5], dtype=int32)
  """
  a1, a2 = _two_polys("polyadd", a1, a2)
  n = max(util.shape(a1)[0], util.shape(a2)[0])
  return ufuncs.add(_pad_left(a1, n), _pad_left(a2, n))


def polysub(a1, a2):
  """The difference `a1 - a2` of two polynomials.

  >>> polysub(jnp.array([1, 2]), jnp.array([1, 2, 3]))
  DeviceArray([-1, -1, -1], dtype=int32)
  """
  a1, a2 = _two_polys("polysub", a1, a2)
  n = max(util.shape(a1)[0], util.shape(a2)[0])
  return ufuncs.subtract(_pad_left(a1, n), _pad_left(a2, n))


def _trim_leading(a, fun_name):
  v = concrete_or_error(np.asarray, a, f"The argument of jnp.{fun_name} must be concrete "
                        "when trim_leading_zeros=True.")
  nz = np.flatnonzero(v)
  return a[int(nz[0]):] if nz.size else a[:0]


def polymul(a1, a2, *, trim_leading_zeros=False):
  """The product of two polynomials (a full convolution of the coefficients).

  Args:
    a1, a2: coefficient arrays, highest degree first.
    trim_leading_zeros: strip leading zero coefficients first (needs concrete inputs).

  >>> polymul(jnp.array([1., 2.]), jnp.array([1., 2., 3.]))
  DeviceArray([1., 4., 7., 6.], dtype=float32)
  """
  a1, a2 = _two_polys("polymul", a1, a2, inexact=True)
  if trim_leading_zeros and (util.shape(a1)[0] > 1 or util.shape(a2)[0] > 1):
    a1, a2 = _trim_leading(a1, "polymul"), _trim_leading(a2, "polymul")
  if util.shape(a1)[0] == 0:
    a1 = creation.zeros((1,), util.dtype_of(a2))
  if util.shape(a2)[0] == 0:
    a2 = creation.zeros((1,), util.dtype_of(a1))
  return math_extra.convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
  """Quotient and remainder of the polynomial division `u / v`.

  Args:
    u: dividend coefficients; v: divisor coefficients (v[0] must be nonzero).
    trim_leading_zeros: strip the remainder's leading (near-)zeros as NumPy does
      (needs concrete inputs); otherwise the remainder has the length of `u`.

  >>> polydiv(jnp.array([1., 3., 5., 2.]), jnp.array([1., 1.]))
  (DeviceArray([1., 2., 3.], dtype=float32), DeviceArray([ 0.,  0.,  0., -1.], dtype=float32))
  """
  u, v = _two_polys("polydiv", u, v, inexact=True)
  m, n = util.shape(u)[0] - 1, util.shape(v)[0] - 1
  if n < 0:
    raise ValueError("polydiv: the divisor v must not be empty")
  scale = ufuncs.reciprocal(v[0])
  r = u
  qs = []
  for k in range(m - n + 1):
    d = ufuncs.multiply(scale, r[k])
    qs.append(d)
    shifted = shape_ops.concatenate([creation.zeros((k,), util.dtype_of(v)), v,
                                     creation.zeros((m - n - k,), util.dtype_of(v))])
    r = ufuncs.subtract(r, ufuncs.multiply(d, shifted))
  q = shape_ops.stack(qs) if qs else creation.zeros((1,), util.dtype_of(u))
  if trim_leading_zeros:
    rv = concrete_or_error(np.asarray, r, "The arguments of jnp.polydiv must be concrete "
                           "when trim_leading_zeros=True.")
    start = 0
    while start < rv.shape[0] - 1 and np.allclose(rv[start], 0, rtol=1e-14):
      start += 1
    r = r[start:]
  return q, r


# ---- calculus ----

def polyder(p, m=1):
  """The `m`-th derivative of the polynomial `p`.

  >>> polyder(jnp.array([1., 2., 3., 4.]), 2)
  DeviceArray([6., 4.], dtype=float32)
  """
  m = util.concrete_int(m, "'m' argument of jnp.polyder")
  if m < 0:
    raise ValueError("Order of derivative must be positive (see polyint)")
  p = _poly_arg("polyder", p, inexact=True)
  n = util.shape(p)[0]
  if m == 0:
    return p
  if m >= n:
    return creation.zeros((0,), util.dtype_of(p))
  powers = np.arange(n - 1, m - 1, -1)  # the exponents of the kept coefficients
  coeff = np.ones(n - m)
  for j in range(m):
    coeff = coeff * (powers - j)
  return ufuncs.multiply(p[:n - m], coeff.astype(util.dtype_of(p)))


def polyint(p, m=1, k=None):
  """The `m`-th antiderivative of `p`, with integration constants `k`.

  Args:
    p: coefficients, highest degree first.
    m: order of integration (>= 0).
    k: the constants, one per integration in order (a scalar is used for all);
      default zeros.

  >>> polyint(jnp.array([3., 3.]), 1, k=1.)
  DeviceArray([1.5, 3. , 1. ], dtype=float32)
  """
  m = util.concrete_int(m, "'m' argument of jnp.polyint")
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  p = _poly_arg("polyint", p, inexact=True)
  dt = util.dtype_of(p)
  if k is None:
    k = creation.zeros((m,), dt)
  else:
    if isinstance(k, (list, tuple)):
      k = creation.asarray(k)
    util.check_arraylike("polyint", k)
    k = util.to_array(util.convert(util.to_operand(k), dt, False))
    if util.ndim(k) == 0 or util.shape(k) == (1,):
      k = util.broadcast_to(util.reshape(k, ()), (m,))
    elif util.shape(k) != (m,):
      raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  for i in range(m):
    n = util.shape(p)[0]
    div = np.arange(n, 0, -1).astype(dt)
    p = shape_ops.concatenate([ufuncs.true_divide(p, div), util.reshape(k[i], (1,))])
  return p


# ---- construction from roots / roots ----

def poly(seq_of_zeros):
  """The coefficients of the monic polynomial with the given roots.

  Args:
    seq_of_zeros: 1-D roots, or a square 2-D matrix (then the characteristic
      polynomial, from its eigenvalues: complex, as in JAX).

  >>> poly(jnp.array([1., 2., 3.]))
  DeviceArray([ 1., -6., 11., -6.], dtype=float32)
  """
  util.check_arraylike_or_list("poly", seq_of_zeros)
  z = util.to_array(util.promote_dtypes_inexact(seq_of_zeros)[0])
  shp = util.shape(z)
  if len(shp) == 2 and shp[0] == shp[1] and shp[0] != 0:
    z = linalg.eigvals(z)
  elif len(shp) == 0:
    z = util.reshape(z, (1,))
  elif len(shp) != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  dt = util.dtype_of(z)
  n = util.shape(z)[0]
  if n == 0:
    return creation.ones((), dt)
  a = creation.ones((1,), dt)
  for i in range(n):
    a = math_extra.convolve(a, shape_ops.stack([creation.ones((), dt),
                                                ufuncs.negative(z[i])]), mode="full")
  return a


def _roots_companion(p):
  """Eigenvalues of the companion matrix of `p` (p[0] is assumed nonzero)."""
  n = util.shape(p)[0] - 1
  dt = dtypes.to_complex_dtype(util.dtype_of(p))
  if n < 1:
    return creation.zeros((0,), dt)
  first = ufuncs.true_divide(ufuncs.negative(p[1:]), p[0])
  sub = creation.eye(n - 1, n, dtype=util.dtype_of(p))
  a = shape_ops.concatenate([util.reshape(first, (1, n)), sub], axis=0)
  return util.convert(linalg.eigvals(a), dt, False)


def roots(p, *, strip_zeros=True):
  """The roots of the polynomial `p`, as complex numbers (eigenvalues of its companion).

  Args:
    p: coefficients, highest degree first.
    strip_zeros: remove leading zeros (and turn trailing zeros into zero roots,
      appended last) as NumPy does; this needs a concrete `p`. With False, `p`
      can be traced, but a leading zero gives non-finite roots.

  >>> roots(jnp.array([1., -3., 2.]))
  DeviceArray([2.+0.j, 1.+0.j], dtype=complex64)
  """
  p = _poly_arg("roots", p, inexact=True)
  if not strip_zeros:
    return _roots_companion(p)
  v = concrete_or_error(np.asarray, p, "The argument of jnp.roots must be concrete when "
                        "strip_zeros=True; pass strip_zeros=False to trace it.")
  nz = np.flatnonzero(v)
  if nz.size == 0:
    return _roots_companion(p[:0])
  trailing = v.shape[0] - 1 - int(nz[-1])
  r = _roots_companion(p[int(nz[0]):int(nz[-1]) + 1])
  if trailing:
    r = shape_ops.concatenate([r, creation.zeros((trailing,), util.dtype_of(r))])
  return r


# ---- fitting ----

def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares fit of a polynomial of degree `deg` to the points `(x, y)`.

  Args:
    x: 1-D sample points; y: samples, 1-D or 2-D (one fit per column).
    deg: degree of the polynomial (static).
    rcond: relative cutoff for small singular values (default `len(x) * eps`).
    full: also return (residuals, rank, singular_values, rcond) of the fit.
    w: optional 1-D weights applied to the residuals (`w[i] * (y[i] - p(x[i]))`).
    cov: also return the covariance of the coefficients: True scales it by the
      reduced chi-square, 'unscaled' does not.

  Returns `p` (highest degree first; shape (deg + 1,) or (deg + 1, K)), or a tuple as
  selected by `full` / `cov`.

  >>> polyfit(jnp.arange(5.), jnp.array([1., 2., 5., 10., 17.]), 2)  # doctest: +SKIP
  DeviceArray([1., 0., 1.], dtype=float32)
  """
  util.check_arraylike_or_list("polyfit", x, y)
  deg = util.concrete_int(deg, "'deg' argument of jnp.polyfit")
  order = deg + 1
  if deg < 0:
    raise ValueError("expected deg >= 0")
  x, y = util.promote_dtypes_inexact(x, y)
  x, y = util.to_array(x), util.to_array(y)
  if util.ndim(x) != 1:
    raise TypeError("expected 1D vector for x")
  if util.shape(x)[0] == 0:
    raise TypeError("expected non-empty vector for x")
  if util.ndim(y) < 1 or util.ndim(y) > 2:
    raise TypeError("expected 1D or 2D array for y")
  if util.shape(x)[0] != util.shape(y)[0]:
    raise TypeError("expected x and y to have same length")
  eps = float(dtypes.finfo(util.dtype_of(x)).eps)
  if rcond is None:
    rcond = util.shape(x)[0] * eps
  lhs = vander(x, order)
  rhs = y
  if w is not None:
    util.check_arraylike_or_list("polyfit", w)
    w = util.to_array(util.promote_dtypes_inexact(w, x)[0])
    if util.ndim(w) != 1:
      raise TypeError("expected a 1-d array for weights")
    if util.shape(w)[0] != util.shape(y)[0]:
      raise TypeError("expected w and y to have the same length")
    lhs = ufuncs.multiply(lhs, w[:, None])
    rhs = ufuncs.multiply(rhs, w if util.ndim(rhs) == 1 else w[:, None])
  # Columns are scaled to unit norm to improve the conditioning of the solve.
  scale = ufuncs.sqrt(reductions.sum(ufuncs.real(ufuncs.multiply(
      lhs, ufuncs.conjugate(lhs))), axis=0))
  scale = util.convert(scale, util.dtype_of(lhs), False)
  lhs = ufuncs.true_divide(lhs, scale)
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  c = ufuncs.true_divide(c, scale if util.ndim(c) == 1 else scale[:, None])
  if full:
    return c, resids, rank, s, creation.asarray(rcond)
  if cov:
    vbase = linalg.inv(linalg.matmul(shape_ops.transpose(lhs), lhs))
    vbase = ufuncs.true_divide(vbase, ufuncs.multiply(scale[:, None], scale[None, :]))
    if cov == "unscaled":
      fac = creation.ones((), util.dtype_of(vbase))
    else:
      if util.shape(x)[0] <= order:
        raise ValueError("the number of data points must exceed order to scale the "
                         "covariance matrix")
      fac = ufuncs.true_divide(resids, util.shape(x)[0] - order)
    if util.ndim(y) == 1:
      return c, ufuncs.multiply(vbase, fac)
    return c, ufuncs.multiply(vbase[:, :, None], fac)
  return c
