"""Elementwise functions of jax.numpy, with NumPy broadcasting and JAX's type promotion.

Each function promotes its arguments (`util.promote_args*`) and then binds
lax primitives, which are strict. Results are device arrays even for NumPy
or Python scalar inputs (C-S11).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import elementwise as lax
from tracejax._src.lax import logaddexp as _lae
from tracejax._src.numpy import util


def _constant_like(x, value):
  """A host scalar of `x`'s dtype: it stages as an inline literal. It is weakly typed
  when `x` is, so a constant of the formula never strengthens a weak result (JAX:
  deg2rad, exp2, sinc, hypot... of a Python scalar are weak). Only a 0-d `x` gives a
  weak constant: JAX 0.10.2's formula constants are strong for weak arrays of rank >= 1,
  so logical_not/deg2rad/sinc of a weak f32[2] are not weak (issue 13, item 10)."""
  return _weak_constant_like(x, value, util.is_weak(x) and util.ndim(x) == 0)


def _weak_constant_like(x, value, weak=None):
  """`_constant_like` that is weak whenever `x` is (for the few formulas, exp2 and
  floor_divide's correction step, whose results stay weak in JAX at every rank)."""
  weak = util.is_weak(x) if weak is None else weak
  if weak and isinstance(value, np.generic):
    value = value.item()  # (a NumPy scalar would convert strongly)
  return util.convert(value, util.dtype_of(x), weak)


def _dtype(x):
  return util.dtype_of(x)


def _unary(name, lax_fn, inexact=False, doc=None):
  """A jnp function applying one lax primitive after (inexact) promotion."""
  promote = util.promote_args_inexact if inexact else util.promote_args

  def fn(x, /):
    x, = promote(name, x)
    return lax_fn(x)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = doc or f"Elementwise {name} of `x` (NumPy's `{name}`)."
  return fn


def _binary(name, lax_fn, inexact=False, doc=None):
  """A jnp function applying one binary lax primitive after promotion and broadcasting."""
  promote = util.promote_args_inexact if inexact else util.promote_args

  def fn(x1, x2, /):
    x1, x2 = promote(name, x1, x2)
    return lax_fn(x1, x2)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = doc or f"Elementwise {name} of `x1` and `x2`, with NumPy broadcasting."
  return fn


# ---- arithmetic ----

subtract = _binary("subtract", lax.sub, doc="Subtract arguments elementwise.")
true_divide = _binary("true_divide", lax.div, inexact=True,
                      doc="True division elementwise; integers divide to floats.")
divide = true_divide
maximum = _binary("maximum", lax.max, doc="Elementwise maximum (NaNs propagate).")
minimum = _binary("minimum", lax.min, doc="Elementwise minimum (NaNs propagate).")
arctan2 = _binary("arctan2", lax.atan2, inexact=True,
                  doc="Elementwise arc tangent of x1/x2, choosing the quadrant correctly.")
nextafter = _binary("nextafter", lax.nextafter, inexact=True,
                    doc="The next floating-point value after x1 towards x2.")


def add(x1, x2, /):
  """Add arguments elementwise (for bools: logical or, as in NumPy)."""
  x1, x2 = util.promote_args("add", x1, x2)
  if _dtype(x1) == np.bool_:
    return lax.bitwise_or(x1, x2)
  return lax.add(x1, x2)


def multiply(x1, x2, /):
  """Multiply arguments elementwise (for bools: logical and)."""
  x1, x2 = util.promote_args("multiply", x1, x2)
  if _dtype(x1) == np.bool_:
    return lax.bitwise_and(x1, x2)
  return lax.mul(x1, x2)


def negative(x, /):
  """Numerical negative elementwise."""
  x, = util.promote_args("negative", x)
  return lax.neg(x)


def positive(x, /):
  """Numerical positive elementwise: a device array equal to `x`."""
  x, = util.promote_args("positive", x)
  return util.fresh_array(x)


def floor_divide(x1, x2, /):
  """Elementwise floor(x1 / x2), with Python's rounding for negative operands."""
  x1, x2 = util.promote_args_numeric("floor_divide", x1, x2)
  dt = _dtype(x1)
  if dtypes.is_unsigned(dt):
    return lax.div(x1, x2)
  if dtypes.is_integer(dt):
    quotient = lax.div(x1, x2)
    # C division truncates; step down when the signs differ and there is a remainder.
    select = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                             lax.ne(lax.rem(x1, x2), _constant_like(x1, 0)))
    return _where_select(select, lax.sub(quotient, _weak_constant_like(quotient, 1)), quotient)
  if dtypes.is_complex(dt):
    raise TypeError("floor_divide does not support complex-valued inputs")
  # Piecewise constant: a zero derivative that is symbolic, as in JAX, so reverse mode
  # through a while_loop fed by x // y needs no loop transpose (issue 13, item 7).
  from tracejax._src.lax.misc import stop_gradient
  return stop_gradient(_float_divmod(x1, x2)[0])


def _float_divmod(x1, x2):
  """(floor(x1 / x2), x1 mod x2) for floats, as NumPy computes them."""
  mod = lax.rem(x1, x2)
  div = lax.div(lax.sub(x1, mod), x2)
  ind = lax.bitwise_and(lax.ne(mod, _constant_like(mod, 0)),
                        lax.ne(lax.sign(x2), lax.sign(mod)))
  mod = _select(ind, lax.add(mod, x2), mod)
  div = _select(ind, lax.sub(div, _weak_constant_like(div, 1)), div)
  # Division by (+-)zero: the quotient is x1 / x2 (+-inf, or nan for 0 / 0), as in JAX
  # and NumPy; the formula above would give nan from rem(x1, 0).
  # (stop_gradient: the quotient is piecewise constant, so its gradient is 0, as in JAX;
  # differentiating x1 / x2 here would give inf/NaN at x2 = 0 or NaN inputs.)
  from tracejax._src.lax.misc import stop_gradient
  div = _select(lax.eq(x2, _constant_like(x2, 0)), stop_gradient(lax.div(x1, x2)),
                _round_half_even(div))
  return div, mod


def remainder(x1, x2, /):
  """Elementwise remainder with the sign of the divisor (Python's `%`)."""
  x1, x2 = util.promote_args_numeric("remainder", x1, x2)
  if dtypes.is_complex(_dtype(x1)):
    raise TypeError("remainder does not support complex-valued inputs")
  x2 = _int_divisor_nonzero(x2)
  trunc_mod = lax.rem(x1, x2)
  zero = _constant_like(trunc_mod, 0)
  # C's remainder has the dividend's sign; add the divisor when the signs differ.
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, _constant_like(x2, 0))),
                            lax.ne(trunc_mod, zero))
  return _select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


def fmod(x1, x2, /):
  """Elementwise C-style remainder (the sign of the dividend)."""
  # As JAX: booleans are promoted to int32 *after* the zero-divisor test, which sees
  # bool and so leaves XLA's x % 0 == x (fmod(True, False) is 1).
  boolean = _dtype(x1) == np.bool_ and _dtype(x2) == np.bool_
  x1, x2 = util.promote_args_numeric("fmod", x1, x2)
  return lax.rem(x1, x2 if boolean else _int_divisor_nonzero(x2))


def _int_divisor_nonzero(x2):
  """An integer divisor with its zeros replaced by 1: JAX's integer x % 0 and fmod(x, 0)
  are 0 (as NumPy's), where XLA's rem would give x (fuzzer seed 200)."""
  if not dtypes.is_integer(_dtype(x2)):
    return x2
  return _where_select(lax.eq(x2, _weak_constant_like(x2, 0)), _weak_constant_like(x2, 1), x2)


def divmod(x1, x2, /):
  """(floor_divide(x1, x2), remainder(x1, x2))."""
  x1, x2 = util.promote_args_numeric("divmod", x1, x2)
  if dtypes.is_floating(_dtype(x1)):
    return _float_divmod(x1, x2)
  return floor_divide(x1, x2), remainder(x1, x2)


def _power_impl(x1, x2, /):
  # (`power` below picks this, inline-jitted, or `_power_by_int` for a known exponent.)
  util.check_arraylike_or_list("power", x1, x2)
  if type(x2) is int or isinstance(x2, np.integer):
    return _power_by_int_impl(x1, int(x2))
  # JAX raises an inexact base to an integer exponent without promoting the exponent,
  # so the result is weak only when both are (lax.pow's rule); a bool exponent is
  # promoted like any other operand.
  dt2 = _dtype(x2)
  strong_int_exponent = (dtypes.is_integer(dt2) and dt2 != np.bool_
                         and not util.is_weak(x2))
  x1, x2 = util.promote_args_numeric("power", x1, x2)
  dt = _dtype(x1)
  if dtypes.is_integer(dt):
    return _pow_int_int(x1, x2)
  out = lax.pow(x1, x2)
  if strong_int_exponent and util.is_weak(out):
    out = util.convert(out, dt, False)
  return out


def _power_by_int_impl(x1, x2):
  # lax.integer_pow raises JAX's TypeError for a negative power of an integer.
  x1, = util.promote_dtypes_numeric(x1)
  return lax.integer_pow(util.to_array(x1), x2)


def _concrete_int_exponent(x2):
  """`x2` as a Python int when it is a known integer scalar (not a tracer), else None.

  JAX's `power` stages such exponents as `integer_pow` (repeated multiplication), so
  an eager `power(x, 3)` rounds as `x * x * x` and `power(3, 3)` keeps its weak type.
  """
  if type(x2) in (int, bool) or isinstance(x2, np.integer):
    # (a Python bool is an int to JAX here, so power(x, False) is integer_pow(x, 0),
    # whose derivative is 0 even at x = 0; a NumPy bool is not)
    return int(x2)
  from tracejax._src.runtime.array import Array
  if type(x2) is Array and x2.ndim == 0 and dtypes.is_integer(x2.dtype):
    return int(x2)
  return None


def _pow_int_int(x1, x2):
  """Integer power by repeated squaring (6 bits suffice: bigger exponents overflow)."""
  # Strongly typed even for two weak operands: JAX 0.10.2 gives int32, not weak int32.
  acc = util.convert(1, _dtype(x1), False)
  acc = util.broadcast_to(util.to_array(acc), util.shape(x1))
  one = _constant_like(x2, 1)
  for _ in range(6):
    acc = _where_select(lax.eq(lax.bitwise_and(x2, one), one), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


def float_power(x1, x2, /):
  """x1 ** x2 computed in the widest available float type."""
  x1, x2 = util.promote_args_inexact("float_power", x1, x2)
  return lax.pow(x1, x2)


def fabs(x, /):
  """Absolute value elementwise, as a float (complex inputs are not allowed)."""
  x, = util.promote_args_inexact("fabs", x)
  if dtypes.is_complex(_dtype(x)):
    raise TypeError("ufunc 'fabs' does not support complex dtypes")
  return lax.abs(x)


def absolute(x, /):
  """Absolute value elementwise (complex inputs give their real magnitude)."""
  x, = util.promote_args("absolute", x)
  dt = _dtype(x)
  if dt == np.bool_ or dtypes.is_unsigned(dt):
    return util.fresh_array(x)  # a jit in JAX: a new value under vmap of a NumPy input
  return lax.abs(x)


abs = absolute


def sign(x, /):
  """-1, 0 or 1 according to the sign of `x` (z/|z| for complex)."""
  x, = util.promote_args("sign", x)
  return lax.sign(x)


def sqrt(x, /):
  """Non-negative square root elementwise."""
  x, = util.promote_args_inexact("sqrt", x)
  return lax.sqrt(x)


def cbrt(x, /):
  """Cube root elementwise."""
  x, = util.promote_args_inexact("cbrt", x)
  return lax.cbrt(x)


def square(x, /):
  """x * x elementwise."""
  x, = util.promote_args_numeric("square", x)
  return lax.square(util.to_array(x))  # JAX's `square` (complex: no cancellation to NaN)


def reciprocal(x, /):
  """1 / x elementwise (integers give floats)."""
  x, = util.promote_args_inexact("reciprocal", x)
  return lax.integer_pow(util.to_array(x), -1)


# ---- exponents, logarithms, trigonometry ----

exp = _unary("exp", lax.exp, inexact=True, doc="Exponential elementwise.")
expm1 = _unary("expm1", lax.expm1, inexact=True, doc="exp(x) - 1 elementwise.")
log = _unary("log", lax.log, inexact=True, doc="Natural logarithm elementwise.")
log1p = _unary("log1p", lax.log1p, inexact=True, doc="log(1 + x) elementwise.")
sin = _unary("sin", lax.sin, inexact=True, doc="Trigonometric sine elementwise.")
cos = _unary("cos", lax.cos, inexact=True, doc="Cosine elementwise.")
tan = _unary("tan", lax.tan, inexact=True, doc="Tangent elementwise.")
arcsin = _unary("arcsin", lax.asin, inexact=True, doc="Inverse sine elementwise.")
arccos = _unary("arccos", lax.acos, inexact=True, doc="Inverse cosine elementwise.")
arctan = _unary("arctan", lax.atan, inexact=True, doc="Inverse tangent elementwise.")
sinh = _unary("sinh", lax.sinh, inexact=True, doc="Hyperbolic sine elementwise.")
cosh = _unary("cosh", lax.cosh, inexact=True, doc="Hyperbolic cosine elementwise.")
tanh = _unary("tanh", lax.tanh, inexact=True, doc="Hyperbolic tangent elementwise.")
arcsinh = _unary("arcsinh", lax.asinh, inexact=True, doc="Inverse hyperbolic sine elementwise.")
arccosh = _unary("arccosh", lax.acosh, inexact=True, doc="Inverse hyperbolic cosine elementwise.")
arctanh = _unary("arctanh", lax.atanh, inexact=True, doc="Inverse hyperbolic tangent elementwise.")


def exp2(x, /):
  """2 ** x elementwise."""
  x, = util.promote_args_inexact("exp2", x)
  # lax.exp2 as JAX: weak in, weak out, and its JVP rule's strong log(2) for weak
  # arrays of rank >= 1 (the tangent is then strong there, as in JAX)
  return lax.exp2(x)


def _rescaled_log(x, op, factor):
  """`op(log(x), factor)`; for complex x, applied to the real and imaginary parts of
  log(x) (a real factor, as JAX applies it, rather than a complex division).
  `factor(part)` makes the factor in the dtype of `part`."""
  out = lax.log(x)
  if dtypes.issubdtype(_dtype(out), np.complexfloating):
    re, im = lax.real(out), lax.imag(out)
    c = factor(re)
    return lax.complex(op(re, c), op(im, c))
  return op(out, factor(out))


def log2(x, /):
  """Base-2 logarithm elementwise.

  Args:
    x: an array-like; integers are promoted to the default float dtype.

  Example: `jnp.log2(jnp.array([1., 8.]))` is `[0., 3.]`.
  """
  x, = util.promote_args_inexact("log2", x)
  # Strong constants: JAX's log2/log10 of a weak value are not weak.
  return _rescaled_log(x, lax.div,
                       lambda part: lax.log(util.convert(2, _dtype(part), False)))


def log10(x, /):
  """Base-10 logarithm elementwise.

  Args:
    x: an array-like; integers are promoted to the default float dtype.

  Example: `jnp.log10(jnp.array([10., 1000.]))` is `[1., 3.]`.
  """
  x, = util.promote_args_inexact("log10", x)
  # A product with 1/ln(10) rounded to x's dtype, as JAX computes it: then
  # log10(10.) is exactly 1 in float32, where log(x) / log(10.) is 0.99999994.
  return _rescaled_log(x, lax.mul,
                       lambda part: util.convert(1 / np.log(10), _dtype(part), False))


def logaddexp(x1, x2, /):
  """log(exp(x1) + exp(x2)), computed without overflow."""
  x1, x2 = util.promote_args_inexact("logaddexp", x1, x2)
  return _lae.logaddexp(x1, x2)


def logaddexp2(x1, x2, /):
  """log2(2**x1 + 2**x2), computed without overflow."""
  x1, x2 = util.promote_args_inexact("logaddexp2", x1, x2)
  return _lae.logaddexp2(x1, x2)


def deg2rad(x, /):
  """Degrees to radians."""
  x, = util.promote_args_inexact("deg2rad", x)
  return lax.mul(x, _constant_like(x, np.pi / 180))


def rad2deg(x, /):
  """Radians to degrees."""
  x, = util.promote_args_inexact("rad2deg", x)
  return lax.mul(x, _constant_like(x, 180 / np.pi))


radians = deg2rad
degrees = rad2deg


def hypot(x1, x2, /):
  """sqrt(x1**2 + x2**2) elementwise, without intermediate overflow."""
  x1, x2 = util.promote_args_inexact("hypot", x1, x2)
  if dtypes.is_complex(_dtype(x1)):
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                     "convert to real values first, such as by using abs(x)")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  idx_inf = lax.bitwise_or(isposinf(x1), isposinf(x2))
  x1, x2 = lax.max(x1, x2), lax.min(x1, x2)
  is_zero = lax.eq(x1, _constant_like(x1, 0))
  safe = _where_select(is_zero, lax.add(x1, _constant_like(x1, 1)), x1)
  ratio = lax.div(x2, safe)
  x = _where_select(is_zero, x1, lax.mul(x1, lax.sqrt(lax.add(_constant_like(x1, 1),
                                                        lax.mul(ratio, ratio)))))
  if util.shape(x):
    # JAX 0.10.2's hypot keeps a weak type only for a 0-d result (hypot(bool_array, 1)
    # is a strong float, hypot(True, 1) a weak one): its last step promotes against a
    # strong inf. Converting there (not on entry) also gives JAX's gradient types.
    x = util.convert(x, _dtype(x), False)
  # (jnp.where, as JAX's: an empty result is the broadcast inf, so no tangent flows)
  return _where(idx_inf, _constant_like(x, np.inf), x)


def sinc(x, /):
  """sin(pi x) / (pi x), with sinc(0) = 1 and every derivative at 0 exact.

  >>> jax.grad(jax.grad(jnp.sinc))(0.)   # -pi**2 / 3   # doctest: +SKIP
  Array(-3.2898684, dtype=float32, weak_type=True)
  """
  x, = util.promote_args_inexact("sinc", x)
  eq_zero = lax.eq(x, _constant_like(x, 0))
  pi_x = lax.mul(_constant_like(x, np.pi), x)
  safe = _where_select(eq_zero, _constant_like(x, 1), pi_x)
  # At 0 the value (and, through its custom rule, each derivative) is the Maclaurin
  # term, as in JAX; the quotient's derivatives there would be 0/0.
  return _where_select(eq_zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe), safe))


_sinc_maclaurin_fn = None


def _sinc_maclaurin(k, x):
  """The k-th derivative of sin(x)/x at 0, shaped (and typed) like `x`; its derivative
  is the (k+1)-th, so derivatives of every order of sinc at 0 are exact."""
  global _sinc_maclaurin_fn
  if _sinc_maclaurin_fn is None:
    from tracejax._src.custom_derivatives import custom_jvp

    def term(k, x):
      zero = lax.mul(x, _constant_like(x, 0))
      return zero if k % 2 else lax.add(zero, _constant_like(x, (-1) ** (k // 2) / (k + 1)))

    f = custom_jvp(term, nondiff_argnums=(0,))
    f.defjvp(lambda k, primals, tangents: (f(k, primals[0]),
                                           lax.mul(tangents[0], f(k + 1, primals[0]))))
    _sinc_maclaurin_fn = f
  return _sinc_maclaurin_fn(k, x)


# ---- rounding ----

def _round_half_even(x):
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def floor(x, /):
  """Floor elementwise (integers are returned unchanged)."""
  x, = util.promote_args("floor", x)
  if not dtypes.is_inexact(_dtype(x)):
    return util.fresh_array(x)  # a jit in JAX: a new value under vmap of a NumPy input
  return lax.floor(x)


def ceil(x, /):
  """Ceiling elementwise (integers are returned unchanged)."""
  x, = util.promote_args("ceil", x)
  if not dtypes.is_inexact(_dtype(x)):
    return util.fresh_array(x)  # a jit in JAX: a new value under vmap of a NumPy input
  return lax.ceil(x)


def trunc(x, /):
  """Round towards zero elementwise."""
  x, = util.promote_args("trunc", x)
  if not dtypes.is_inexact(_dtype(x)):
    return util.fresh_array(x)  # a jit in JAX: a new value under vmap of a NumPy input
  return _select(lax.lt(x, _constant_like(x, 0)), lax.ceil(x), lax.floor(x))


def fix(x, out=None):
  """Round towards zero elementwise."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.fix is not supported.")
  return trunc(x)


def rint(x, /):
  """Round to the nearest integer, halves to even (integers become floats, as in NumPy)."""
  x, = util.promote_args("rint", x)
  dt = _dtype(x)
  if not dtypes.is_inexact(dt):
    return util.to_array(util.convert(x, dtypes.default_float_dtype(), False))
  if dtypes.is_complex(dt):
    return lax.complex(_round_half_even(lax.real(x)), _round_half_even(lax.imag(x)))
  return _round_half_even(x)


def round(a, decimals=0, out=None):
  """Round to `decimals` decimals, halves to even (NumPy's `around`)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  a, = util.promote_args("round", a)
  decimals = util.concrete_int(decimals, "'decimals' argument of jnp.round")
  dt = _dtype(a)
  if dt == np.bool_:  # JAX 0.10.2 rounds ints but rejects bools
    raise ValueError(f"data type {dt.type} not inexact")
  if not dtypes.is_inexact(dt):
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return util.fresh_array(a)

  def round_real(x):
    if decimals == 0:
      return _round_half_even(x)
    # float16 loses too much scaling by powers of ten: compute in float32.
    comp = np.dtype(np.float32) if _dtype(x) in (np.float16, dtypes.bfloat16) else _dtype(x)
    xc = util.convert(x, comp, False)
    factor = util.convert(10.0 ** decimals, comp, False)
    out = lax.div(_round_half_even(lax.mul(xc, factor)), factor)
    return util.convert(out, _dtype(x), False)

  if dtypes.is_complex(dt):
    return lax.complex(round_real(lax.real(a)), round_real(lax.imag(a)))
  return round_real(a)


around = round
round_ = round


# ---- comparisons and logic ----

equal = _binary("equal", lax.eq, doc="(x1 == x2) elementwise.")
not_equal = _binary("not_equal", lax.ne, doc="(x1 != x2) elementwise.")
def _ordering(name, lax_fn, doc):
  """An order comparison; complex numbers compare lexicographically (real part
  first, then imaginary), as in NumPy and JAX, since lax orders only reals."""
  strict = {lax.lt: lax.lt, lax.le: lax.lt, lax.gt: lax.gt, lax.ge: lax.gt}[lax_fn]

  def fn(x1, x2, /):
    x1, x2 = util.promote_args(name, x1, x2)
    if not dtypes.is_complex(_dtype(x1)):
      return lax_fn(x1, x2)
    r1, r2, i1, i2 = lax.real(x1), lax.real(x2), lax.imag(x1), lax.imag(x2)
    return lax.bitwise_or(strict(r1, r2), lax.bitwise_and(lax.eq(r1, r2), lax_fn(i1, i2)))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = doc
  return fn


less = _ordering("less", lax.lt, "(x1 < x2) elementwise.")
less_equal = _ordering("less_equal", lax.le, "(x1 <= x2) elementwise.")
greater = _ordering("greater", lax.gt, "(x1 > x2) elementwise.")
greater_equal = _ordering("greater_equal", lax.ge, "(x1 >= x2) elementwise.")
bitwise_and = _binary("bitwise_and", lax.bitwise_and, doc="Bitwise AND elementwise.")
bitwise_or = _binary("bitwise_or", lax.bitwise_or, doc="Bitwise OR elementwise.")
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor, doc="Bitwise XOR elementwise.")
bitwise_not = _unary("bitwise_not", lax.bitwise_not, doc="Bitwise NOT elementwise.")
invert = bitwise_not


def _to_bool(x):
  return x if _dtype(x) == np.bool_ else lax.ne(x, _constant_like(x, 0))


def logical_and(x1, x2, /):
  """Truth value of x1 AND x2 elementwise."""
  x1, x2 = util.promote_args("logical_and", x1, x2)
  return lax.bitwise_and(_to_bool(x1), _to_bool(x2))


def logical_or(x1, x2, /):
  """Truth value of x1 OR x2 elementwise."""
  x1, x2 = util.promote_args("logical_or", x1, x2)
  return lax.bitwise_or(_to_bool(x1), _to_bool(x2))


def logical_xor(x1, x2, /):
  """Truth value of x1 XOR x2 elementwise."""
  x1, x2 = util.promote_args("logical_xor", x1, x2)
  return lax.bitwise_xor(_to_bool(x1), _to_bool(x2))


def logical_not(x, /):
  """Truth value of NOT x elementwise."""
  x, = util.promote_args("logical_not", x)
  return lax.bitwise_not(_to_bool(x))


def left_shift(x1, x2, /):
  """Shift the bits of an integer to the left."""
  x1, x2 = util.promote_args_numeric("left_shift", x1, x2)
  return lax.shift_left(x1, x2)


def right_shift(x1, x2, /):
  """Shift the bits of an integer to the right (arithmetic for signed types)."""
  x1, x2 = util.promote_args_numeric("right_shift", x1, x2)
  if dtypes.is_unsigned(_dtype(x1)):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


# ---- floating-point classification ----

def _full_like_bool(x, value):
  from tracejax._src.numpy import creation
  return creation.full(util.shape(x), value, np.bool_)


def isfinite(x, /):
  """True where `x` is neither infinite nor NaN."""
  x, = util.promote_args("isfinite", x)
  dt = _dtype(x)
  if dtypes.is_floating(dt):
    return lax.is_finite(x)
  if dtypes.is_complex(dt):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_like_bool(x, True)


def isinf(x, /):
  """True where `x` is positive or negative infinity."""
  x, = util.promote_args("isinf", x)
  dt = _dtype(x)
  if dtypes.is_floating(dt):
    # a strong inf (JAX: isinf of a weak scalar is a strong bool)
    return lax.eq(lax.abs(x), np.array(np.inf, dt))
  if dtypes.is_complex(dt):
    return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
  return _full_like_bool(x, False)


def _isposneginf(x, value):
  x, = util.promote_args("isinf", x)
  dt = _dtype(x)
  if dtypes.is_complex(dt):
    raise ValueError("isposinf/isneginf are not well defined for complex input")
  if dtypes.is_floating(dt):
    return lax.eq(x, _constant_like(x, value))
  return _full_like_bool(x, False)


def isposinf(x, /):
  """True where `x` is +inf."""
  return _isposneginf(x, np.inf)


def isneginf(x, /):
  """True where `x` is -inf."""
  return _isposneginf(x, -np.inf)


def isnan(x, /):
  """True where `x` is NaN."""
  x, = util.promote_args("isnan", x)
  dt = _dtype(x)
  if dtypes.is_floating(dt):
    return lax.ne(x, x)
  if dtypes.is_complex(dt):
    return lax.bitwise_or(isnan(lax.real(x)), isnan(lax.imag(x)))
  # x != x (all False) rather than a constant: the result keeps x's weak type, as in JAX.
  return lax.ne(x, x)


def signbit(x, /):
  """True where the sign bit is set (negative numbers, -0.0, negative NaNs)."""
  x, = util.promote_args("signbit", x)
  dt = _dtype(x)
  if dtypes.is_signed(dt):
    # a strong zero, as JAX's: signbit of a Python int is a strong bool there
    return lax.lt(x, np.zeros((), dt))
  if dt == np.bool_ or dtypes.is_unsigned(dt):
    return _full_like_bool(x, False)
  if not dtypes.is_floating(dt):
    raise ValueError(f"jnp.signbit is not defined for dtype {dt}")
  int_type = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
  bits = lax.bitcast_convert_type(x, np.dtype(int_type))
  return lax.lt(bits, _constant_like(bits, 0))


def copysign(x1, x2, /):
  """|x1| with the sign of x2, elementwise."""
  x1, x2 = util.promote_args_inexact("copysign", x1, x2)
  if dtypes.is_complex(_dtype(x1)):
    raise TypeError("copysign does not support complex-valued inputs")
  return _where_select(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


def heaviside(x1, x2, /):
  """0 where x1 < 0, 1 where x1 > 0, x2 where x1 == 0."""
  x1, x2 = util.promote_args_inexact("heaviside", x1, x2)
  zero = _constant_like(x1, 0)
  # a NaN x1 gives NaN (JAX and NumPy), not x2: it is neither < 0, > 0 nor == 0
  return _where_select(lax.lt(x1, zero), zero,
                 _where_select(lax.gt(x1, zero), _constant_like(x1, 1),
                         _where_select(lax.ne(x1, x1), x1, x2)))


def fmax(x1, x2, /):
  """Elementwise maximum that ignores NaNs (unless both are NaN)."""
  x1, x2 = util.promote_args("fmax", x1, x2)
  # greater/less order complex values lexicographically, as JAX's fmax/fmin do
  return _where_select(lax.bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2, /):
  """Elementwise minimum that ignores NaNs (unless both are NaN)."""
  x1, x2 = util.promote_args("fmin", x1, x2)
  return _where_select(lax.bitwise_or(less(x1, x2), isnan(x2)), x1, x2)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
  """Limit the values of `a` to [a_min, a_max] (either bound may be None)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.clip is not supported.")
  a_min = min if a_min is None else a_min
  a_max = max if a_max is None else a_max
  util.check_arraylike_or_list("clip", a)
  if any(v is not None and dtypes.is_complex(dtypes.dtype(v)) for v in (a, a_min, a_max)):
    # JAX refuses to clip complex values (no order to clip in), though maximum and
    # minimum order them lexicographically.
    raise ValueError(
        "Clip received a complex value either through the input or the min/max keywords. "
        "Complex values have no ordering and cannot be clipped. Please convert to a real "
        "value or array by taking the real or imaginary components via "
        "jax.numpy.real/imag respectively.")  # JAX 0.10.2's text
  if a_min is not None:
    a = maximum(a_min, a)
  if a_max is not None:
    a = minimum(a_max, a)
  return util.fresh_array(a)  # a jit in JAX: a new value even with no bounds


# ---- complex numbers ----

def iscomplexobj(x):
  """True if `x` has a complex dtype."""
  if x is None:
    return False
  try:
    return dtypes.is_complex(dtypes.dtype(x))
  except (TypeError, ValueError):
    return False


def isrealobj(x):
  """True if `x` does not have a complex dtype."""
  return not iscomplexobj(x)


def iscomplex(x):
  """True where the element has a nonzero imaginary part."""
  x = util.to_array(x)
  # As JAX: imag(x) != 0, with imag of a real x its zeros (weak type kept), so that
  # iscomplex of a weak scalar is a weak bool.
  i = lax.imag(x) if iscomplexobj(x) else lax._full_like(x, 0)
  return lax.ne(i, _constant_like(i, 0))


def isreal(x):
  """True where the element has a zero imaginary part."""
  return logical_not(iscomplex(x))


def real(val, /):
  """The real part (the value itself for real inputs)."""
  val, = util.promote_args("real", val)
  return lax.real(val) if iscomplexobj(val) else util.fresh_array(val)


def imag(val, /):
  """The imaginary part (zeros for real inputs)."""
  val, = util.promote_args("imag", val)
  if iscomplexobj(val):
    return lax.imag(val)
  from tracejax._src.numpy import creation
  return creation.zeros_like(val)


def conjugate(x, /):
  """The complex conjugate (the value itself for real inputs)."""
  x, = util.promote_args("conjugate", x)
  return lax.conj(x) if iscomplexobj(x) else util.fresh_array(x)


conj = conjugate


def angle(z, deg=False):
  """The counterclockwise angle from the positive real axis."""
  z, = util.promote_args("angle", z)
  if iscomplexobj(z):
    re, im = lax.real(z), lax.imag(z)
  else:
    if not dtypes.is_inexact(_dtype(z)) or util.ndim(z) == 0:
      # JAX 0.10.2: ints, bools and 0-d floats (NumPy's scalar rule) go to the default
      # float (float64 under x64), strongly: a weak input's cotangent comes back weak
      z = util.convert(z, dtypes.canonicalize_dtype(np.float64), False)
    # (zeros of z's weak type: JAX's angle of a weak real array is weak; a 0-d one was
    # made strong above)
    re, im = z, lax._full_like(z, 0)
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


# ---- selection and closeness ----

def _select(pred, on_true, on_false):
  """lax.select after broadcasting all three to the common shape (no policy checks)."""
  shapes = [util.shape(pred), util.shape(on_true), util.shape(on_false)]
  out_shape = util.broadcast_shapes(*shapes)
  pred, on_true, on_false = (util.broadcast_to(x, out_shape) for x in (pred, on_true, on_false))
  return lax.select(pred, on_true, on_false)


def where(condition, x=None, y=None, *, size=None, fill_value=None):
  """Elements of `x` where `condition` holds, else of `y`.

  With only `condition`, the indices where it is nonzero (`nonzero`, which
  needs a concrete value and so cannot be traced unless `size` is given).
  """
  if x is None and y is None:
    from tracejax._src.numpy import searching
    return searching.nonzero(condition, size=size, fill_value=fill_value)
  if x is None or y is None:
    raise ValueError("Either both or neither of the x and y arguments should be provided "
                     f"to jax.numpy.where, got {x} and {y}.")
  return _where(condition, x, y)


def _where(condition, x, y):
  if util.key_impls and util.has_keys(x, y):  # key arrays (prng.py)
    return util.key_impls["where"](condition, x, y)
  util.check_arraylike_or_list("where", condition, x, y)
  condition = _to_bool(util.to_operand(condition))
  x, y = util.promote_dtypes(x, y)
  return _where_select(condition, x, y)


def _where_select(pred, x, y):
  """`_select` as `jnp.where` and the jnp functions JAX builds on it do it: an empty
  result is the broadcast `x`, selected from nothing, so only `x` carries a tangent and
  a dependence there (the jvp of nanmean([]) is 0, not nan; reverse mode through
  `fmin` of an empty while_loop output never reaches the loop)."""
  out_shape = util.broadcast_shapes(util.shape(pred), util.shape(x), util.shape(y))
  if 0 in out_shape:
    # (an Array, even from a host x: fmin of a NumPy and a traced input under vjp)
    return util.fresh_array(util.broadcast_to(x, out_shape))
  return _select(pred, x, y)


def select(condlist, choicelist, default=0):
  """Elements of the first choice whose condition holds (`default` where none does)."""
  if len(condlist) != len(choicelist):
    raise ValueError("list of cases must be same length as list of conditions")
  if not condlist:
    raise ValueError("condlist must be non-empty")
  out = default
  # Later conditions first, so the first true condition wins.
  for cond, choice in reversed(list(zip(condlist, choicelist))):
    out = where(cond, choice, out)
  return util.to_array(out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """True where |a - b| <= atol + rtol * |b| (or a == b), elementwise.

  As in JAX, integer and bool inputs are compared in the default float type (so very
  large integers that differ by less than the tolerance are close), an infinite `b`
  is close only to itself, NaN is close to nothing unless `equal_nan`, and the result
  is a strong bool array.

  >>> jnp.isclose(jnp.array([1., 1.1]), 1.)   # doctest: +SKIP
  Array([ True, False], dtype=bool)
  """
  a, b = util.promote_args_inexact("isclose", a, b)
  dt = _dtype(a)
  real_dt = dtypes.to_real_dtype(dt)
  rtol = util.convert(rtol, real_dt, False)
  atol = util.convert(atol, real_dt, False)
  if dtypes.is_complex(dt):
    finite_b = lax.bitwise_and(lax.is_finite(lax.real(b)), lax.is_finite(lax.imag(b)))
  else:
    finite_b = lax.is_finite(b)
  near = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = lax.bitwise_or(lax.eq(a, b), lax.bitwise_and(finite_b, near))
  if equal_nan:
    out = lax.bitwise_or(out, lax.bitwise_and(isnan(a), isnan(b)))
  return util.convert(out, np.bool_, False)   # never weak (JAX: isclose(1., 7.))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """True (a bool array) if all elements of `a` and `b` are close."""
  from tracejax._src.numpy import reductions
  return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
  """True if the arrays have the same shape and elements."""
  from tracejax._src.numpy import reductions
  a1, a2 = util.to_operand(a1), util.to_operand(a2)
  if util.shape(a1) != util.shape(a2):
    return np.bool_(False)
  eq = equal(a1, a2)
  if equal_nan:
    eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
  return reductions.all(eq)


def array_equiv(a1, a2):
  """True if the arrays are broadcast-compatible and equal."""
  from tracejax._src.numpy import reductions
  a1, a2 = util.to_operand(a1), util.to_operand(a2)
  try:
    util.broadcast_shapes(util.shape(a1), util.shape(a2))
  except ValueError:
    return np.bool_(False)
  return reductions.all(equal(a1, a2))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """Replace NaN by `nan` and infinities by `posinf`/`neginf` (default: the largest floats)."""
  del copy
  x, = util.promote_args("nan_to_num", x)
  dt = _dtype(x)
  if not dtypes.is_inexact(dt):
    return util.fresh_array(x)  # a jit in JAX: a new value under vmap of a NumPy input
  if dtypes.is_complex(dt):
    return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                       nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dt)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  # jnp.where (it promotes): a weak `x` meets the strong replacements as in JAX, so
  # its cotangent comes back weak through the weak-to-strong conversion's transpose.
  out = _where(isnan(x), util.convert(nan, dt, False), x)
  out = _where(isposinf(out), util.convert(posinf, dt, False), out)
  return _where(isneginf(out), util.convert(neginf, dt, False), out)


# ---- mantissa and exponent ----
# Both read and write the exponent field of the IEEE bit pattern (bitcast to an
# unsigned integer of the same width), which is exact where exp2/log2 are not.

def _float_layout(dt):
  """(unsigned int dtype of the same width, mantissa bits, exponent bias) of `dt`."""
  info = dtypes.finfo(dt)
  uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
  return np.dtype(uint), int(info.nmant), 2 ** (int(info.nexp) - 1) - 1


def frexp(x, /):
  """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1.

  Zeros, infinities and NaNs give (x, 0). The exponent is int32.

  >>> frexp(jnp.array([3.0, -5.5]))
  (DeviceArray([ 0.75  , -0.6875], dtype=float32), DeviceArray([2, 3], dtype=int32))
  """
  x, = util.promote_args_inexact("frexp", x)
  dt = _dtype(x)
  if dtypes.is_complex(dt):
    raise TypeError("frexp does not support complex-valued inputs")
  udt, nmant, bias = _float_layout(dt)
  exp_mask = (1 << (8 * udt.itemsize - 1 - nmant)) - 1
  # Subnormals: scale into the normal range first, and account for it after.
  subnormal = lax.bitwise_and(lax.ne(x, _constant_like(x, 0)),
                              lax.lt(lax.abs(x), _constant_like(x, dtypes.finfo(dt).tiny)))
  xs = _where_select(subnormal, lax.mul(x, _constant_like(x, 2.0 ** nmant)), x)
  bits = lax.bitcast_convert_type(xs, udt)
  field = lax.bitwise_and(lax.shift_right_logical(bits, util.convert(nmant, udt)),
                          util.convert(exp_mask, udt))
  e = lax.sub(util.convert_element_type(field, np.int32), np.int32(bias - 1))
  e = _where_select(subnormal, lax.sub(e, np.int32(nmant)), e)
  # Keep sign and fraction; set the exponent field to that of 0.5.
  keep = util.convert(~np.array(exp_mask << nmant, udt), udt)
  mbits = lax.bitwise_or(lax.bitwise_and(bits, keep), util.convert((bias - 1) << nmant, udt))
  mant = lax.bitcast_convert_type(mbits, dt)
  special = lax.bitwise_or(lax.eq(x, _constant_like(x, 0)),
                           lax.bitwise_not(lax.is_finite(x)))
  return _where_select(special, x, mant), _where_select(special, np.int32(0), e)


def ldexp(x1, x2, /):
  """x1 * 2**x2 elementwise, for integer `x2` (exact, without overflow in between).

  >>> ldexp(jnp.array([0.75, 1.0]), jnp.array([2, -3]))
  DeviceArray([3.   , 0.125], dtype=float32)
  """
  util.check_arraylike("ldexp", x1, x2)
  x2 = util.to_operand(x2)
  # JAX 0.10.2: ValueError naming both dtypes for a non-integer exponent or complex x1.
  unsupported = lambda: ValueError(f"ldexp not supported for input types "
                                   f"({_dtype(x1)!r}, {util.dtype_of(x2)!r})")
  if not (dtypes.is_integer(util.dtype_of(x2)) or dtypes.is_bool(util.dtype_of(x2))):
    raise unsupported()
  if dtypes.is_complex(_dtype(x1)):
    raise unsupported()
  x1, = util.promote_args_inexact("ldexp", x1)
  dt = _dtype(x1)
  # JAX's result is strong even for a weak x1 (it selects x1 against a strong product):
  # the cast comes first, so a weak x1's tangent is cast and its cotangent stays weak.
  x1 = util.convert(x1, dt, False)
  x1, x2 = util.promote_shapes("ldexp", x1, x2)
  udt, nmant, bias = _float_layout(dt)
  # Beyond this any finite nonzero x1 overflows or underflows completely.
  limit = 2 * (bias + 1) + nmant + 2
  k = util.convert(x2, np.int32)
  k = lax.clamp(np.int32(-limit), k, np.int32(limit))
  # Four factors 2**p, 2**p, 2**p, 2**r with |p|, |r| < bias: each is a normal
  # number built from its bit pattern, and the running product moves
  # monotonically from x1 to the result, so nothing overflows early.
  p = floor_divide(k, np.int32(4))
  r = lax.sub(k, lax.mul(p, np.int32(3)))

  def pow2(n):
    field = util.convert_element_type(lax.add(n, np.int32(bias)), udt)
    return lax.bitcast_convert_type(lax.shift_left(field, util.convert(nmant, udt)), dt)
  fp = pow2(p)
  out = lax.mul(lax.mul(lax.mul(lax.mul(x1, fp), fp), fp), pow2(r))
  return out


# ---- eager dispatch ----
# Every function above whose parameters are all positional-only arrays becomes an
# inline `jit` (as JAX's are): an eager call then runs through jaxlib's C++ jit
# dispatch, compiled once per signature, and under a transformation the call
# disappears, its operations joining the outer jaxpr.

def _eager_jit_all(namespace):
  import inspect
  from tracejax._src.jit import inline_jit
  for name, fn in list(namespace.items()):
    if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != __name__:
      continue
    # Only positional-only parameters (`def f(x1, x2, /)`), read from the code object:
    # inspect.signature would cost as much as the rest of this loop.
    code = fn.__code__
    if 0 < code.co_posonlyargcount == code.co_argcount and not code.co_kwonlyargcount \
        and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
        and not hasattr(fn, "__wrapped__"):
      namespace[name] = inline_jit(fn)
  # `where` is a jit of its own in JAX (not inline): under a transformation it stays
  # one call, so a jvp types its tangents as the primals (weak types included) and a
  # vmap returns a new Array even when it selects nothing (an empty result).
  from tracejax._src.jit import jit
  namespace["_where"] = jit(namespace["_where"])


_eager_jit_all(globals())
from tracejax._src.jit import inline_jit as inline_jit_  # noqa: E402 (as in _eager_jit_all)
_power_general = inline_jit_(_power_impl)
_power_by_int = inline_jit_(_power_by_int_impl, static_argnames=("x2",))


def power(x1, x2, /):
  """First array elements raised to powers from the second, elementwise.

  Args:
    x1: the bases (array-like).
    x2: the exponents (array-like). A known integer scalar (a Python or NumPy int,
      or a concrete 0-d integer array) stages as `integer_pow`: exact, and cheap to
      differentiate. Integer arrays otherwise use binary exponentiation.

  Example: `power(jnp.array([1., 2., 3.]), 2)` is `[1., 4., 9.]`.
  """
  e = _concrete_int_exponent(x2)
  if e is not None:
    util.check_arraylike_or_list("power", x1, x2)
    return _power_by_int(x1, e)
  return _power_general(x1, x2)
