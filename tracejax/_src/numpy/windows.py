"""Window functions: bartlett, blackman, hamming, hanning, kaiser (NumPy's formulas)."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import special as lax_special
from tracejax._src.numpy import creation, ufuncs, util


def _window(M, fun_name):
  """(M, n) for a window of length M: n = arange(M) in the default float dtype."""
  M = util.concrete_int(M, f"M argument of jnp.{fun_name}")
  return M, creation.arange(M, dtype=dtypes.default_float_dtype())


def _cosine_window(M, fun_name, coeffs):
  M, n = _window(M, fun_name)
  if M <= 1:
    return creation.ones((max(M, 0),), dtypes.default_float_dtype())
  out = 0.0
  for k, a in enumerate(coeffs):
    term = a if k == 0 else ufuncs.multiply(
        a, ufuncs.cos(ufuncs.multiply(2 * np.pi * k / (M - 1), n)))
    out = ufuncs.add(out, term)
  return out


def hanning(M):
  """The Hann window: 0.5 - 0.5 cos(2 pi n / (M - 1))."""
  return _cosine_window(M, "hanning", (0.5, -0.5))


def hamming(M):
  """The Hamming window: 0.54 - 0.46 cos(2 pi n / (M - 1))."""
  return _cosine_window(M, "hamming", (0.54, -0.46))


def blackman(M):
  """The Blackman window: 0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))."""
  return _cosine_window(M, "blackman", (0.42, -0.5, 0.08))


def bartlett(M):
  """The Bartlett (triangular) window."""
  M, n = _window(M, "bartlett")
  if M <= 1:
    return creation.ones((max(M, 0),), dtypes.default_float_dtype())
  half = (M - 1) / 2.0
  return ufuncs.subtract(1.0, ufuncs.abs(ufuncs.true_divide(ufuncs.subtract(n, half), half)))


def kaiser(M, beta):
  """The Kaiser window: I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)."""
  M, n = _window(M, "kaiser")
  if M <= 1:
    return creation.ones((max(M, 0),), dtypes.default_float_dtype())
  beta = util.convert(util.to_operand(beta), dtypes.default_float_dtype(), False)
  alpha = (M - 1) / 2.0
  ratio = ufuncs.true_divide(ufuncs.subtract(n, alpha), alpha)
  arg = ufuncs.multiply(beta, ufuncs.sqrt(ufuncs.subtract(1.0, ufuncs.square(ratio))))
  return ufuncs.true_divide(_i0(arg), _i0(beta))


def _i0(x):
  """The modified Bessel function of order 0, from lax's exponentially scaled one."""
  x = util.to_array(x)
  return ufuncs.multiply(ufuncs.exp(ufuncs.abs(x)), lax_special.bessel_i0e(x))


def i0(x):
  """The modified Bessel function of the first kind, order 0."""
  x, = util.promote_args_inexact("i0", x)
  if dtypes.is_complex(util.dtype_of(x)):  # (JAX 0.10.2's ValueError; fuzzer seed 203)
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {util.dtype_of(x).name}")
  return _i0(x)
