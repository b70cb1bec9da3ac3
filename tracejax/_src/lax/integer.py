"""Integer primitives of today's lax: `mulhi` (the high half of a product), and the
dimension comparisons `eq_to`, `le_to`, `lt_to` (comparisons JAX binds on array
sizes; on concrete sizes they are the ordinary elementwise comparisons)."""
import numpy as np

from tracejax._src.interpreters import ad
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise, utils

__all__ = ["mulhi", "mulhi_p", "eq_to_p", "le_to_p", "lt_to_p"]


# ---- mulhi ----

mulhi_p = elementwise.naryop("mulhi", utils._int, None)


def mulhi(x, y, /):
  """Elementwise high half of the product: for N-bit integers, bits N..2N-1 of the full
  2N-bit `x * y` (signed or unsigned by the dtype).

  Args:
    x, y: integer arrays of one dtype (Python ints take the other's dtype); a rank-0
      operand broadcasts, as in the other lax binary operators.

  >>> mulhi(np.uint32(2**31), np.uint32(6))
  DeviceArray(3, dtype=uint32)
  """
  return mulhi_p.bind(*utils.promote_python_scalars((x, y)))


ad.defjvp_zero(mulhi_p)
utils.defbroadcasting(mulhi_p, size_one=True)


def _const_like(value, ty_aval):
  return mlir.full_like_aval(value, ty_aval)


def _mulhi_lowering(ctx, x, y):
  x, y = elementwise.broadcast_operands(ctx, x, y)
  aval = ctx.avals_out[0]
  dtype = np.dtype(aval.dtype)
  bits = dtype.itemsize * 8
  signed = np.issubdtype(dtype, np.signedinteger)
  if bits <= 32:  # the exact product fits a 2N-bit integer: widen, multiply, shift
    wide = np.dtype(f"{'i' if signed else 'u'}{2 * dtype.itemsize}")
    wide_aval = aval.update(dtype=wide)
    wt = mlir.aval_to_ir_type(wide_aval)
    p = hlo.multiply(hlo.convert(wt, x), hlo.convert(wt, y))
    shift = _const_like(bits, wide_aval)
    p = hlo.shift_right_arithmetic(p, shift) if signed else hlo.shift_right_logical(p, shift)
    return [hlo.convert(mlir.aval_to_ir_type(aval), p)]
  # 64 bits: schoolbook product of 32-bit halves, in uint64.
  u_aval = aval.update(dtype=np.dtype(np.uint64))
  ut = mlir.aval_to_ir_type(u_aval)
  a = hlo.bitcast_convert(ut, x) if signed else x
  b = hlo.bitcast_convert(ut, y) if signed else y
  c32, mask = _const_like(32, u_aval), _const_like(0xFFFFFFFF, u_aval)
  a_lo, a_hi = hlo.and_(a, mask), hlo.shift_right_logical(a, c32)
  b_lo, b_hi = hlo.and_(b, mask), hlo.shift_right_logical(b, c32)
  lo_lo, hi_lo = hlo.multiply(a_lo, b_lo), hlo.multiply(a_hi, b_lo)
  lo_hi, hi_hi = hlo.multiply(a_lo, b_hi), hlo.multiply(a_hi, b_hi)
  t = hlo.add(hi_lo, hlo.shift_right_logical(lo_lo, c32))
  w1 = hlo.add(hlo.and_(t, mask), lo_hi)
  hi = hlo.add(hlo.add(hi_hi, hlo.shift_right_logical(t, c32)),
               hlo.shift_right_logical(w1, c32))
  if not signed:
    return [hi]
  # signed: subtract b where a < 0 and a where b < 0 (mod 2**64)
  zero_s = _const_like(0, aval)
  zero_u = _const_like(0, u_aval)
  neg = hlo.ComparisonDirectionAttr.get("LT")
  st = hlo.ComparisonTypeAttr.get("SIGNED")
  a_neg = hlo.compare(x, zero_s, neg, compare_type=st)
  b_neg = hlo.compare(y, zero_s, neg, compare_type=st)
  hi = hlo.subtract(hi, hlo.select(a_neg, b, zero_u))
  hi = hlo.subtract(hi, hlo.select(b_neg, a, zero_u))
  return [hlo.bitcast_convert(mlir.aval_to_ir_type(aval), hi)]


mlir.register_lowering(mulhi_p, _mulhi_lowering)


# ---- eq_to / le_to / lt_to ----
#
# JAX binds these on (possibly symbolic) array sizes; tracejax has only concrete sizes,
# so they are comparisons with their own names and every rule of `eq`, `le`, `lt`.
eq_to_p, _ = elementwise._comparison("eq_to", elementwise._any, "EQ", "x == y")
le_to_p, _ = elementwise._comparison("le_to", elementwise._ordered, "LE", "x <= y")
lt_to_p, _ = elementwise._comparison("lt_to", elementwise._ordered, "LT", "x < y")
del _
_unused = ir
