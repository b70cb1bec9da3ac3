"""Window functions: bartlett, blackman, hamming, hanning, kaiser (NumPy's formulas)."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.jit import jit
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


def _i0_plain(x):
  abs_x = ufuncs.abs(x)
  return ufuncs.multiply(ufuncs.exp(abs_x), lax_special.bessel_i0e(abs_x))


def _i0_jvp(primals, tangents):
  # Differentiating exp(|x|) * i0e(|x|) as written gives slope 1 at x = 0 (abs's
  # tangent there is +1); I0 is even, so JAX zeroes the tangent where x == 0.
  from tracejax._src.api import jvp  # (api imports jax.numpy: a cycle at load time)
  out, t_out = jvp(_i0_plain, primals, tangents)
  return out, ufuncs.where(primals[0] == 0, 0.0, t_out)


_I0 = []  # the custom_jvp wrapper, built on first use (custom_derivatives is above us)


def _i0(x):
  """The modified Bessel function of order 0, exp(|x|) * i0e(|x|), with JAX's jvp
  (the formula's own derivative, zero at x == 0); kaiser uses it too."""
  if not _I0:
    from tracejax._src.custom_derivatives import custom_jvp
    f = custom_jvp(_i0_plain)
    f.defjvp(_i0_jvp)
    _I0.append(f)
  return _I0[0](util.to_array(x))


@jit
def i0(x):
  """The modified Bessel function of the first kind, order 0.

  A `jit` as in JAX: XLA then fuses the float16/bfloat16 steps (and their jvp) in
  float32, so low-precision results and tangents round as JAX's do.
  """
  util.check_arraylike("i0", x)  # (lists are TypeErrors in JAX 0.10.2)
  x, = util.promote_args_inexact("i0", x)
  if dtypes.is_complex(util.dtype_of(x)):  # (JAX 0.10.2's ValueError; fuzzer seed 203)
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {util.dtype_of(x).name}")
  return _i0(x)
