"""HLO building blocks of the elementwise lowerings (`lax/elementwise.py`): comparisons,
constants, complex sin/cos from real parts, and integer division guarded against a zero
divisor.

They import nothing of lax, so `elementwise.py` (the primitives) builds on them.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo


def compare_type(dtype):
  """StableHLO's comparison type for `dtype`."""
  if dtypes.issubdtype(dtype, np.inexact):
    return "FLOAT"
  if dtypes.issubdtype(dtype, np.signedinteger):
    return "SIGNED"
  return "UNSIGNED"  # unsigned ints and bool


def compare_hlo(x, y, direction, dtype):
  """`x <direction> y` ("EQ", "LT", ...) for operands of `dtype`."""
  return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                     compare_type=hlo.ComparisonTypeAttr.get(compare_type(dtype)))


def full(value, aval):
  """A constant of `aval`'s shape and dtype filled with `value`."""
  return mlir.full_like_aval(value, aval)


def sin_cos_lower(is_sin):
  """Complex sin/cos from real parts, as JAX lowers them (XLA's own round differently):
  sin(a+ib) = sin a cosh b + i cos a sinh b, cos(a+ib) = cos a cosh b - i sin a sinh b,
  cosh/sinh from expm1; at a = 0 the term with sin a is 0 (no 0 * inf NaN)."""
  def lower(ctx, x):
    aval = ctx.avals_in[0]
    if not dtypes.issubdtype(aval.dtype, np.complexfloating):
      return [(hlo.sine if is_sin else hlo.cosine)(x)]
    raval = aval.update(dtype=dtypes.to_real_dtype(aval.dtype))
    a, b, two, zero = hlo.real(x), hlo.imag(x), full(2, raval), full(0, raval)
    sn, cs = hlo.sine(a), hlo.cosine(a)
    e1m, e2m = hlo.exponential_minus_one(b), hlo.exponential_minus_one(hlo.negate(b))
    snh = hlo.divide(hlo.subtract(e1m, e2m), two)
    csh = hlo.divide(hlo.add(hlo.add(e1m, e2m), two), two)
    if is_sin:
      re, im = hlo.multiply(sn, csh), hlo.multiply(cs, snh)
    else:
      re, im = hlo.multiply(cs, csh), hlo.multiply(hlo.negate(sn), snh)
    at_zero = hlo.complex(zero, im) if is_sin else hlo.complex(re, zero)
    a_is_zero = compare_hlo(a, zero, "EQ", raval.dtype)
    return [hlo.select(a_is_zero, at_zero, hlo.complex(re, im))]
  return lower


def div_rem(x, y, aval, is_div):
  """`x / y` (C's truncating division) or `x % y` (the sign of x), operands of `aval`.

  Integers divided by zero give XLA's defined answers (x / 0 = -1, all bits set when
  unsigned; x % 0 = x), with the divisor replaced by 1 there first: XLA's constant
  folding divides constants natively, and a constant zero divisor then kills the
  process (SIGFPE) at compile time (`jit(lambda: lax.div(4, 0))`, which crashes JAX).
  """
  op = hlo.divide if is_div else hlo.remainder
  dt = np.dtype(aval.dtype)
  if dt.kind not in "iu":
    return op(x, y)
  is_zero = compare_hlo(y, full(0, aval), "EQ", dt)
  out = op(x, hlo.select(is_zero, full(1, aval), y))
  at_zero = full(np.iinfo(dt).max if dt.kind == "u" else -1, aval) if is_div else x
  return hlo.select(is_zero, at_zero, out)
