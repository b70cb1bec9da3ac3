"""More of jax.numpy's math: gcd, lcm, gradient, convolve, correlate.

All are compositions of lax primitives with static shapes, so they trace under
`jit`, batch under `vmap`, and (where the result is real-valued and smooth)
differentiate. gcd runs Euclid's algorithm elementwise in one `while_loop`.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.control_flow.loops import while_loop
from tracejax._src.lax import convolution as lax_conv
from tracejax._src.lax import reductions as lax_red
from tracejax._src.numpy import creation, shape_ops, ufuncs, util


# ---- gcd / lcm ----

def _integer_args(fun_name, x1, x2):
  util.check_arraylike_or_list(fun_name, x1, x2)
  x1, x2 = util.to_operand(x1), util.to_operand(x2)
  x1, x2 = util.promote_dtypes(x1, x2)
  dt = util.dtype_of(x1)
  # The promoted dtype decides (as in JAX): a bool operand with an integer one is fine.
  if not dtypes.is_integer(dt):
    raise ValueError(f"Arguments to jax.numpy.{fun_name} must be integers.")
  # The loop carries arrays, so both operands are made arrays of the common shape.
  shp = util.broadcast_shapes(util.shape(x1), util.shape(x2))
  weak = util.is_weak(x1) and util.is_weak(x2)
  x1 = util.broadcast_to(util.to_array(util.convert(x1, dt, weak)), shp)
  x2 = util.broadcast_to(util.to_array(util.convert(x2, dt, weak)), shp)
  return x1, x2


def _any(x):
  nd = util.ndim(x)
  return lax_red.reduce_or(x, tuple(range(nd))) if nd else x


def gcd(x1, x2):
  """Greatest common divisor of the integers `x1` and `x2`, elementwise (non-negative).

  Args:
    x1, x2: integer arrays or scalars; they broadcast against each other.

  Returns the gcd with the promoted integer dtype; `gcd(0, 0) == 0`.

  >>> gcd(jnp.array([12, -18, 0, 7]), 8)
  DeviceArray([4, 2, 8, 1], dtype=int32)
  """
  x1, x2 = _integer_args("gcd", x1, x2)
  x1, x2 = ufuncs.absolute(x1), ufuncs.absolute(x2)
  if util.ndim(x1) and util.is_weak(x1):
    # JAX's Euclid step takes its zero from lax's `_const`, weak only for a weak
    # scalar, so its loop (and gcd/lcm) of weak arrays of rank >= 1 is strong.
    x1, x2 = (util.convert(x, util.dtype_of(x), False) for x in (x1, x2))
  zero = creation.zeros_like(x2)
  one = creation.ones_like(x2)

  def cond(carry):
    return _any(ufuncs.not_equal(carry[1], zero))

  def body(carry):
    a, b = carry
    nz = ufuncs.not_equal(b, zero)
    # Elements already done (b == 0) keep a; b is made safe for the remainder.
    safe_b = ufuncs.where(nz, b, one)
    return ufuncs.where(nz, b, a), ufuncs.where(nz, ufuncs.remainder(a, safe_b), zero)

  return while_loop(cond, body, (x1, x2))[0]


def lcm(x1, x2):
  """Least common multiple of the integers `x1` and `x2`, elementwise (non-negative).

  Args:
    x1, x2: integer arrays or scalars; they broadcast against each other.

  `lcm(0, x) == 0`.

  >>> lcm(jnp.array([4, -6, 0]), 6)
  DeviceArray([12,  6,  0], dtype=int32)
  """
  x1, x2 = _integer_args("lcm", x1, x2)
  d = gcd(x1, x2)
  zero = creation.zeros_like(d)
  iszero = ufuncs.equal(d, zero)
  safe_d = ufuncs.where(iszero, creation.ones_like(d), d)
  out = ufuncs.multiply(ufuncs.absolute(x1), ufuncs.floor_divide(ufuncs.absolute(x2), safe_d))
  return ufuncs.where(iszero, zero, out)


# ---- gradient ----

def _slice(x, axis, start, stop):
  idx = [slice(None)] * util.ndim(x)
  idx[axis] = slice(start, stop)
  return x[tuple(idx)]


def _along(v, axis, nd):
  """A 1-D array `v` shaped to broadcast along `axis` of an `nd`-dimensional array."""
  shp = [1] * nd
  shp[axis] = util.shape(v)[0]
  return util.reshape(v, shp)


def _gradient_axis(f, axis, h, edge_order):
  """Second-order central differences inside, one-sided differences at the ends."""
  n = util.shape(f)[axis]
  nd = util.ndim(f)
  if n < edge_order + 1:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                     f"{edge_order + 1} elements are required.")
  uniform = util.ndim(h) == 0
  if uniform:
    inner = (_slice(f, axis, 2, None) - _slice(f, axis, None, -2)) / (2. * h)
    if edge_order == 1:
      first = (_slice(f, axis, 1, 2) - _slice(f, axis, 0, 1)) / h
      last = (_slice(f, axis, -1, None) - _slice(f, axis, -2, -1)) / h
    else:
      first = (-1.5 * _slice(f, axis, 0, 1) + 2. * _slice(f, axis, 1, 2)
               - 0.5 * _slice(f, axis, 2, 3)) / h
      last = (0.5 * _slice(f, axis, -3, -2) - 2. * _slice(f, axis, -2, -1)
              + 1.5 * _slice(f, axis, -1, None)) / h
  else:
    dx = h[1:] - h[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inner = (_along(a, axis, nd) * _slice(f, axis, None, -2)
             + _along(b, axis, nd) * _slice(f, axis, 1, -1)
             + _along(c, axis, nd) * _slice(f, axis, 2, None))
    if edge_order == 1:
      first = (_slice(f, axis, 1, 2) - _slice(f, axis, 0, 1)) / dx[0]
      last = (_slice(f, axis, -1, None) - _slice(f, axis, -2, -1)) / dx[-1]
    else:
      d1, d2 = dx[0], dx[1]
      a0 = -(2. * d1 + d2) / (d1 * (d1 + d2))
      b0 = (d1 + d2) / (d1 * d2)
      c0 = -d1 / (d2 * (d1 + d2))
      first = (a0 * _slice(f, axis, 0, 1) + b0 * _slice(f, axis, 1, 2)
               + c0 * _slice(f, axis, 2, 3))
      d1, d2 = dx[-2], dx[-1]
      a1 = d2 / (d1 * (d1 + d2))
      b1 = -(d2 + d1) / (d1 * d2)
      c1 = (2. * d2 + d1) / (d2 * (d1 + d2))
      last = (a1 * _slice(f, axis, -3, -2) + b1 * _slice(f, axis, -2, -1)
              + c1 * _slice(f, axis, -1, None))
  return shape_ops.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
  """The gradient of `f` by finite differences (NumPy's `gradient`).

  Args:
    f: an N-dimensional array of samples.
    *varargs: the spacing: nothing (unit spacing), one scalar for every axis, or one
      entry per differentiated axis, each a scalar spacing or a 1-D array of the
      sample coordinates along that axis (as long as the axis).
    axis: None (all axes), an int or a tuple of ints.
    edge_order: 1 (default) or 2: accuracy order of the one-sided differences at the
      boundaries. Inside, central differences are always second order.

  Returns one array per axis: a list, or a single array when one axis is asked for.
  Integer inputs give floating-point gradients.

  >>> gradient(jnp.array([1., 2., 4., 7., 11.]))
  DeviceArray([1. , 1.5, 2.5, 3.5, 4. ], dtype=float32)
  """
  util.check_arraylike_or_list("gradient", f)
  f = util.to_array(util.promote_dtypes_inexact(f)[0])
  edge_order = 1 if edge_order is None else edge_order
  if edge_order not in (1, 2):
    raise ValueError(f"jnp.gradient: edge_order must be 1 or 2, got {edge_order!r}")
  nd = util.ndim(f)
  single = isinstance(axis, (int, np.integer))
  axes = util.canonicalize_axes(axis, nd) if not isinstance(axis, (tuple, list)) else \
      tuple(util.canonicalize_axis(a, nd) for a in axis)
  if len(set(axes)) != len(axes):
    raise ValueError(f"jnp.gradient: repeated axis in {axis}")
  if nd == 0:
    return []
  if not varargs:
    spacings = [1.0] * len(axes)
  elif len(varargs) == 1 and util.ndim(varargs[0]) == 0:
    spacings = [varargs[0]] * len(axes)
  elif len(varargs) == len(axes):
    spacings = list(varargs)
  else:
    raise TypeError(f"jnp.gradient: invalid number of spacing arguments: got {len(varargs)} "
                    f"for {len(axes)} axes")
  outs = []
  for ax, h in zip(axes, spacings):
    util.check_arraylike_or_list("gradient", h)
    if util.ndim(h) == 0:
      h = util.promote_dtypes(util.to_operand(h), f)[0]
      if not util.is_array(h):
        h = util.convert(h, util.dtype_of(f), False)
    else:
      if util.ndim(h) != 1:
        raise ValueError("jnp.gradient: distances must be either scalars or 1d arrays")
      if util.shape(h)[0] != util.shape(f)[ax]:
        raise ValueError("jnp.gradient: when 1d, distances must match the length of the "
                         f"corresponding dimension: got {util.shape(h)[0]} for axis {ax} "
                         f"of size {util.shape(f)[ax]}")
      h = util.to_array(util.promote_dtypes_inexact(h, f)[0])
    outs.append(_gradient_axis(f, ax, h, edge_order))
  return outs[0] if (single or len(axes) == 1) else outs


# ---- convolve / correlate ----

_MODES = ("full", "same", "valid")


def _correlate_1d(fun_name, a, v, mode, precision, preferred_element_type, conj, flip):
  util.check_arraylike_or_list(fun_name, a, v)
  if util.ndim(a) != 1 or util.ndim(v) != 1:
    raise ValueError(f"{fun_name}() only supports 1-dimensional inputs, got shapes "
                     f"{util.shape(a)} and {util.shape(v)}.")
  if mode not in _MODES:
    raise ValueError(f"{fun_name}: mode must be one of {list(_MODES)}, got {mode!r}")
  a, v = util.promote_dtypes_inexact(a, v)
  a, v = util.to_array(a), util.to_array(v)
  m, n = util.shape(a)[0], util.shape(v)[0]
  if m == 0 or n == 0:
    raise ValueError(f"{fun_name}: inputs cannot be empty, got shapes {util.shape(a)} and "
                     f"{util.shape(v)}.")
  if flip:
    v = shape_ops.flip(v, 0)
  if conj and dtypes.is_complex(util.dtype_of(v)):
    v = ufuncs.conjugate(v)
  # Output element i is entry (start + i) of the full correlation, whose entry j
  # pairs v[0] with a[j - (n - 1)]; the convolution's low padding is n - 1 - start.
  full = m + n - 1
  if mode == "full":
    out_len, start = full, 0
  elif mode == "valid":
    out_len = max(m, n) - min(m, n) + 1
    start = n - 1 if m >= n else m - 1
  else:
    out_len = max(m, n)
    # NumPy computes the longer-kernel case swapped and reversed, which shifts the
    # window by one for even lengths when correlating (not when convolving).
    start = (full - out_len) // 2 if (flip or n <= m) else (full - out_len + 1) // 2
  lo = n - 1 - start
  hi = out_len + n - 1 - m - lo
  out = lax_conv.conv_general_dilated(
      util.reshape(a, (1, 1, m)), util.reshape(v, (1, 1, n)), (1,), [(lo, hi)],
      precision=precision, preferred_element_type=preferred_element_type)
  return util.reshape(out, (out_len,))


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """Discrete linear convolution of two 1-D arrays (NumPy's `convolve`).

  Args:
    a, v: non-empty 1-D arrays (integer inputs give floating-point results, as in JAX).
    mode: 'full' (length len(a) + len(v) - 1), 'same' (length max(len(a), len(v)),
      centred) or 'valid' (only where the arrays overlap completely).
    precision: lax precision of the underlying convolution.
    preferred_element_type: accumulation/result dtype passed to the convolution.

  >>> convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
  DeviceArray([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  return _correlate_1d("convolve", a, v, mode, precision, preferred_element_type,
                       conj=False, flip=True)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Cross-correlation of two 1-D arrays: `c[k] = sum_n a[n + k] * conj(v[n])`.

  Args:
    a, v: non-empty 1-D arrays (complex `v` is conjugated, as in NumPy).
    mode: 'valid' (default), 'same' or 'full', as for `convolve`.
    precision: lax precision of the underlying convolution.
    preferred_element_type: accumulation/result dtype passed to the convolution.

  >>> correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
  DeviceArray([3.5], dtype=float32)
  """
  return _correlate_1d("correlate", a, v, mode, precision, preferred_element_type,
                       conj=True, flip=False)
