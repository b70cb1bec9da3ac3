"""Polynomials: polyval (Horner's scheme) and the Vandermonde matrix."""
from tracejax._src.numpy import creation, shape_ops, ufuncs, util


def polyval(p, x, *, unroll=16):
  """The polynomial with coefficients `p` (highest degree first) evaluated at `x`.

  The degree is static, so Horner's steps are unrolled (`unroll` is accepted for
  JAX compatibility).
  """
  util.check_arraylike_or_list("polyval", p, x)
  p, x = util.promote_dtypes(p, x)
  p, x = util.to_array(p), util.to_array(x)
  if util.ndim(p) != 1:
    raise ValueError("polyval: p must be one-dimensional")
  y = creation.zeros_like(x)
  for i in range(util.shape(p)[0]):
    y = ufuncs.add(ufuncs.multiply(y, x), p[i])
  return y


def vander(x, N=None, increasing=False):
  """The Vandermonde matrix: columns are powers of `x` (decreasing unless `increasing`)."""
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

