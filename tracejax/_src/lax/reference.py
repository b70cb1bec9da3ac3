"""NumPy/SciPy reference implementations of the elementwise lax primitives.

The test oracle for `elementwise.py` (DESIGN.md §4: never an execution path).
Each function takes NumPy arrays and returns a NumPy array of the dtype the
primitive returns, computed with XLA's semantics where they differ from
NumPy's: integer division truncates toward zero, shifts past the bit width give
0 (or the sign), complex `max` is lexicographic, `round` breaks ties away from
zero, conversions to bool test the real part against zero.

Floating results are computed in float64/complex128 and rounded to the operand
dtype, so low-precision dtypes (bfloat16, float16) get the correctly rounded
answer that XLA's float32 computation approximates.
"""
import numpy as np
import scipy.special as sc

import ml_dtypes

_bf16 = np.dtype(ml_dtypes.bfloat16)


def _dt(x):
  return np.asarray(x).dtype


def _is_float(dtype):
  return np.dtype(dtype).kind == "f" or np.dtype(dtype) == _bf16


def _is_complex(dtype):
  return np.dtype(dtype).kind == "c"


def _real_dtype(dtype):
  return {np.dtype(np.complex64): np.dtype(np.float32),
          np.dtype(np.complex128): np.dtype(np.float64)}.get(np.dtype(dtype), np.dtype(dtype))


def _up(x):
  """`x` in float64 (or complex128) for computing."""
  x = np.asarray(x)
  return x.astype(np.complex128 if _is_complex(x.dtype) else np.float64)


def _float_unary(f):
  """A reference of a float/complex unary function: computed wide, rounded back."""
  def ref(x):
    x = np.asarray(x)
    with np.errstate(all="ignore"):
      return np.asarray(f(_up(x))).astype(x.dtype)
  ref.__name__ = getattr(f, "__name__", "ref")
  return ref


def _float_nary(f):
  def ref(*args):
    args = [np.asarray(a) for a in args]
    with np.errstate(all="ignore"):
      return np.asarray(f(*map(_up, args))).astype(args[0].dtype)
  ref.__name__ = getattr(f, "__name__", "ref")
  return ref


def _exact_or_wide(np_fun):
  """Integer ops in the dtype itself (wrapping like XLA); floats computed wide."""
  def ref(*args):
    args = [np.asarray(a) for a in args]
    dtype = args[0].dtype
    with np.errstate(all="ignore"):
      if _is_float(dtype) or _is_complex(dtype):
        return np.asarray(np_fun(*map(_up, args))).astype(dtype)
      return np.asarray(np_fun(*args)).astype(dtype)
  ref.__name__ = np_fun.__name__
  return ref


# ---- arithmetic ----

add = _exact_or_wide(np.add)
sub = _exact_or_wide(np.subtract)
mul = _exact_or_wide(np.multiply)
neg = _exact_or_wide(np.negative)


def div(x, y):
  x, y = np.asarray(x), np.asarray(y)
  if _is_float(x.dtype) or _is_complex(x.dtype):
    with np.errstate(all="ignore"):
      return np.asarray(_up(x) / _up(y)).astype(x.dtype)
  # C division: the quotient truncates toward zero (NumPy's // floors).
  with np.errstate(all="ignore"):
    q = np.floor_divide(x, y)
    r = np.remainder(x, y)
    fix = (r != 0) & ((x < 0) != (y < 0))
  return np.asarray(np.where(fix, q + np.ones((), x.dtype), q)).astype(x.dtype)


def rem(x, y):
  x, y = np.asarray(x), np.asarray(y)
  with np.errstate(all="ignore"):
    if _is_float(x.dtype):
      return np.asarray(np.fmod(_up(x), _up(y))).astype(x.dtype)
    return np.asarray(np.fmod(x, y)).astype(x.dtype)  # the sign of the dividend, as C


def sign(x):
  x = np.asarray(x)
  if _is_complex(x.dtype):
    with np.errstate(all="ignore"):
      u = _up(x)
      a = np.abs(u)
      return np.where(a == 0, 0, u / np.where(a == 0, 1, a)).astype(x.dtype)
  if _is_float(x.dtype):
    return np.sign(_up(x)).astype(x.dtype)
  return np.sign(x).astype(x.dtype)


def abs(x):
  x = np.asarray(x)
  if _is_float(x.dtype) or _is_complex(x.dtype):
    return np.abs(_up(x)).astype(_real_dtype(x.dtype))
  return np.abs(x).astype(x.dtype)


def _lexicographic_pick(x, y, greater):
  """x where x wins the comparison (complex: real part, then imaginary part), else y."""
  x, y = np.asarray(x), np.asarray(y)
  if _is_complex(x.dtype):
    rx, ry, ix, iy = x.real, y.real, x.imag, y.imag
    if greater:
      pick = np.where(rx == ry, ix > iy, rx > ry)
    else:
      pick = np.where(rx == ry, ix < iy, rx < ry)
    return np.where(pick, x, y).astype(x.dtype)
  f = np.maximum if greater else np.minimum  # NaN-propagating, like XLA
  if _is_float(x.dtype):
    return f(_up(x), _up(y)).astype(x.dtype)
  return f(x, y).astype(x.dtype)


def max(x, y):
  return _lexicographic_pick(x, y, True)


def min(x, y):
  return _lexicographic_pick(x, y, False)


def pow(x, y):
  x, y = np.asarray(x), np.asarray(y)
  with np.errstate(all="ignore"):
    return np.asarray(np.power(_up(x), _up(y).astype(_up(x).dtype))).astype(x.dtype)


def integer_pow(x, y):
  """x ** y by repeated multiplication in x's dtype (integers wrap), as XLA computes it."""
  x = np.asarray(x)
  if _is_float(x.dtype) or _is_complex(x.dtype):
    with np.errstate(all="ignore"):
      return np.asarray(_up(x) ** y).astype(x.dtype)
  if y < 0:
    raise TypeError("integers cannot be raised to negative powers")
  acc = np.ones_like(x)
  with np.errstate(all="ignore"):
    for _ in range(y):
      acc = (acc * x).astype(x.dtype)
  return acc


def reciprocal(x):
  return integer_pow(x, -1)


def square(x):
  x = np.asarray(x)
  with np.errstate(all="ignore"):
    if _is_float(x.dtype) or _is_complex(x.dtype):
      return np.asarray(_up(x) * _up(x)).astype(x.dtype)
    return np.asarray(x * x).astype(x.dtype)


sqrt = _float_unary(np.sqrt)
rsqrt = _float_unary(lambda x: 1 / np.sqrt(x))
cbrt = _float_unary(np.cbrt)

# ---- exponentials and logarithms ----

exp = _float_unary(np.exp)
exp2 = _float_unary(np.exp2)
log = _float_unary(np.log)
log1p = _float_unary(np.log1p)
expm1 = _float_unary(np.expm1)
tanh = _float_unary(np.tanh)
logistic = _float_unary(lambda x: 1 / (1 + np.exp(-x)))

# ---- trigonometric and hyperbolic ----

sin = _float_unary(np.sin)
cos = _float_unary(np.cos)
tan = _float_unary(np.tan)
asin = _float_unary(np.arcsin)
acos = _float_unary(np.arccos)
atan = _float_unary(np.arctan)
atan2 = _float_nary(np.arctan2)
sinh = _float_unary(np.sinh)
cosh = _float_unary(np.cosh)
asinh = _float_unary(np.arcsinh)
acosh = _float_unary(np.arccosh)
atanh = _float_unary(np.arctanh)

# ---- rounding ----

floor = _float_unary(np.floor)
ceil = _float_unary(np.ceil)


def round(x, rounding_method=0):
  x = np.asarray(x)
  u = _up(x)
  if int(rounding_method) == 0:  # away from zero
    # floor(|x| + 0.5) is wrong just below 0.5 (0.49999999999999994 + 0.5 rounds to 1).
    a = np.abs(u)
    r = np.floor(a)
    r = np.where(a - r >= 0.5, r + 1, r)
    out = np.copysign(r, u)
  else:
    out = np.round(u)  # NumPy rounds half to even
  return out.astype(x.dtype)


def nextafter(x, y):
  x, y = np.asarray(x), np.asarray(y)
  if x.dtype == _bf16:
    # Step the bit pattern directly (NumPy's nextafter knows no bfloat16).
    bits = x.view(np.uint16).astype(np.int32)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    step_up = (yf > xf) == (xf >= 0)
    out = np.where(step_up, bits + 1, bits - 1)
    out = np.where(xf == 0, np.where(yf > 0, 1, 0x8001), out)
    out = np.asarray(out.astype(np.uint16).view(_bf16))
    out = np.where(xf == yf, y, out)
    return np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan, _bf16), out).astype(_bf16)
  return np.nextafter(x, y).astype(x.dtype)


def is_finite(x):
  return np.isfinite(_up(x))

# ---- special functions ----

erf = _float_unary(sc.erf)
erfc = _float_unary(sc.erfc)
erf_inv = _float_unary(sc.erfinv)
lgamma = _float_unary(sc.gammaln)
digamma = _float_unary(sc.digamma)
polygamma = _float_nary(lambda m, x: sc.polygamma(m.astype(np.int64), x))
zeta = _float_nary(sc.zeta)
igamma = _float_nary(sc.gammainc)
igammac = _float_nary(sc.gammaincc)
bessel_i0e = _float_unary(sc.i0e)
bessel_i1e = _float_unary(sc.i1e)
betainc = _float_nary(sc.betainc)


def _igamma_grad_a64(a, x):
  # d/da P(a, x) by a fourth-order central difference (SciPy has no closed form).
  h = 1e-4 * np.maximum(1.0, a)
  p = lambda da: sc.gammainc(a + da, x)
  return (8 * (p(h) - p(-h)) - (p(2 * h) - p(-2 * h))) / (12 * h)


igamma_grad_a = _float_nary(_igamma_grad_a64)


def _random_gamma_grad64(a, x):
  # The implicit derivative of a Gamma(a) sample x: -(dP/da) / (dP/dx).
  log_pdf = (a - 1) * np.log(x) - x - sc.gammaln(a)
  return -_igamma_grad_a64(a, x) / np.exp(log_pdf)


random_gamma_grad = _float_nary(_random_gamma_grad64)

# ---- comparisons ----


def _compare(f):
  def ref(x, y):
    x, y = np.asarray(x), np.asarray(y)
    if _is_float(x.dtype):
      x, y = _up(x), _up(y)
    return np.asarray(f(x, y), dtype=np.bool_)
  ref.__name__ = f.__name__
  return ref


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)

# ---- bitwise ----


def bitwise_not(x):
  x = np.asarray(x)
  return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


not_ = bitwise_not
bitwise_and = and_ = np.bitwise_and
bitwise_or = or_ = np.bitwise_or
bitwise_xor = xor = np.bitwise_xor


def _bits(dtype):
  return np.dtype(dtype).itemsize * 8


def _unsigned(dtype):
  return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _signed(dtype):
  return np.dtype(f"i{np.dtype(dtype).itemsize}")


def _shift_amount(y):
  """The shift amount as unsigned (a negative shift counts as huge, as in XLA)."""
  return np.asarray(y).view(_unsigned(np.asarray(y).dtype)).astype(np.uint64)


def shift_left(x, y):
  x = np.asarray(x)
  n = _shift_amount(y)
  big = n >= _bits(x.dtype)
  ux = x.view(_unsigned(x.dtype))
  s = np.where(big, 0, n).astype(ux.dtype)
  out = np.left_shift(ux, s)
  return np.where(big, 0, out).astype(ux.dtype).view(x.dtype)


def shift_right_logical(x, y):
  x = np.asarray(x)
  n = _shift_amount(y)
  big = n >= _bits(x.dtype)
  ux = x.view(_unsigned(x.dtype))
  s = np.where(big, 0, n).astype(ux.dtype)
  return np.where(big, 0, np.right_shift(ux, s)).astype(ux.dtype).view(x.dtype)


def shift_right_arithmetic(x, y):
  x = np.asarray(x)
  n = _shift_amount(y)
  bits = _bits(x.dtype)
  sx = x.view(_signed(x.dtype))  # the top bit is the sign, even for unsigned types
  s = np.minimum(n, bits - 1).astype(sx.dtype)
  return np.right_shift(sx, s).astype(sx.dtype).view(x.dtype)


def population_count(x):
  x = np.asarray(x)
  return np.bitwise_count(x.view(_unsigned(x.dtype))).astype(x.dtype)


def clz(x):
  x = np.asarray(x)
  ux = x.view(_unsigned(x.dtype)).astype(np.uint64)
  bits = _bits(x.dtype)
  out = np.full(x.shape, bits, np.int64)
  for i in range(bits):  # the highest set bit decides
    out = np.where((ux >> np.uint64(i)) & np.uint64(1), bits - 1 - i, out)
  return out.astype(x.dtype)

# ---- complex numbers ----


def complex(x, y):
  x, y = np.asarray(x), np.asarray(y)
  dtype = np.complex128 if x.dtype == np.float64 else np.complex64
  return (x.astype(dtype) + 1j * y.astype(dtype)).astype(dtype)


def conj(x, input_dtype=None):
  x = np.asarray(x)
  dtype = np.complex128 if x.dtype in (np.float64, np.complex128) else np.complex64
  return np.conj(x).astype(dtype)


def real(x):
  x = np.asarray(x)
  return np.real(x).astype(_real_dtype(x.dtype))


def imag(x):
  x = np.asarray(x)
  return np.imag(x).astype(_real_dtype(x.dtype))

# ---- conversions ----


def convert_element_type(x, new_dtype):
  x = np.asarray(x)
  new_dtype = np.dtype(new_dtype)
  if _is_complex(x.dtype) and not _is_complex(new_dtype):
    x = x.real  # the imaginary part is dropped, also for bool
  if new_dtype == np.bool_:
    return np.asarray(x != 0)
  if (_is_float(x.dtype)) and new_dtype.kind in "iu":
    return np.trunc(x.astype(np.float64)).astype(new_dtype)  # toward zero
  return x.astype(new_dtype)


def bitcast_convert_type(x, new_dtype):
  x = np.ascontiguousarray(x)
  new_dtype = np.dtype(new_dtype)
  old_size, new_size = x.dtype.itemsize, new_dtype.itemsize
  if old_size == new_size:
    return x.view(new_dtype)
  if old_size > new_size:  # a trailing axis of the pieces, least significant first
    return x.reshape(x.shape + (1,)).view(new_dtype).reshape(
        x.shape + (old_size // new_size,))
  return x.view(new_dtype).reshape(x.shape[:-1])


def reduce_precision(x, exponent_bits, mantissa_bits):
  """XLA's ReducePrecision: round the mantissa to nearest even, then saturate the
  exponent to +-inf and flush values below the smallest normal to +-0; NaNs stay."""
  x = np.asarray(x)
  dtype = x.dtype
  if dtype == _bf16:
    src_exp, src_man = 8, 7
  else:
    info = np.finfo(dtype)
    src_exp, src_man = info.nexp, info.nmant
  width = dtype.itemsize * 8
  ut = _unsigned(dtype)
  bits = x.view(ut).astype(np.uint64)
  if mantissa_bits < src_man:
    shift = src_man - mantissa_bits
    last_bit_mask = np.uint64(1) << np.uint64(shift)
    base_bias = (last_bit_mask >> np.uint64(1)) - np.uint64(1)
    last_bit = (bits & last_bit_mask) >> np.uint64(shift)
    trunc_mask = ~(last_bit_mask - np.uint64(1)) & np.uint64((1 << width) - 1)
    bits = ((bits + last_bit + base_bias) & trunc_mask) & np.uint64((1 << width) - 1)
  if exponent_bits < src_exp:
    sign_mask = np.uint64(1 << (width - 1))
    exp_mask = np.uint64(((1 << src_exp) - 1) << src_man)
    src_bias = (1 << (src_exp - 1)) - 1
    reduced_bias = (1 << (exponent_bits - 1)) - 1
    max_exp = np.uint64((src_bias + reduced_bias) << src_man)
    min_exp = np.uint64((src_bias - reduced_bias) << src_man)
    e = bits & exp_mask
    signed_zero = bits & sign_mask
    signed_inf = signed_zero | exp_mask
    bits = np.where(e > max_exp, signed_inf, np.where(e <= min_exp, signed_zero, bits))
  out = bits.astype(ut).view(dtype)
  return np.where(np.isnan(x.astype(np.float64)), x, out).astype(dtype)

# ---- selection ----


def select_n(which, *cases):
  which = np.asarray(which)
  cases = [np.asarray(c) for c in cases]
  idx = which.astype(np.int64)
  out = np.choose(np.broadcast_to(idx, cases[0].shape), cases)
  return np.asarray(out).astype(cases[0].dtype)


def select(pred, on_true, on_false):
  return select_n(pred, on_false, on_true)


def clamp(lo, x, hi):
  x = np.asarray(x)
  if _is_float(x.dtype):
    return np.minimum(np.maximum(_up(x), _up(lo)), _up(hi)).astype(x.dtype)
  return np.minimum(np.maximum(x, lo), hi).astype(x.dtype)
