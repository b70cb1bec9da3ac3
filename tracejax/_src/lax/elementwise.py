"""Elementwise primitives: arithmetic, comparison, bitwise, math functions, casts.

N-ary elementwise primitives are strict about dtypes (all operands share one)
and about ranks: rank-0 operands broadcast (as in the 2020 lax, so `x * 3.0`
stages as `mul x 3.0`), and so do the size-1 axes of equal-rank operands (as in
JAX: `add` of f32[3,4] and f32[1,4] is one `add` of f32[3,4]; the lowering
broadcasts). `select_n` and `clamp` stay strict, as JAX's do.

Each primitive is one block: public wrapper, primitive, JVP (or linear and
transpose) rule, batching rule, lowering. The lowering is also the eager
implementation (dispatch compiles the single primitive). Most lower to one
StableHLO/CHLO op. The special functions (erf, lgamma, igamma, betainc,
bessel_i0e, ...) are the family of `special.py`, which builds on the helpers
here.

The derivative rules follow JAX's: holomorphic formulas for complex inputs,
`conj`/`real` where the function is not holomorphic (abs), symbolic zeros for
comparisons and integer ops.
"""
import enum
import functools
import operator
import warnings

import numpy as np

from tracejax._src import dispatch
from tracejax._src import dtypes
from tracejax._src.core.avals import ShapedArray, get_aval, raise_to_shaped
from tracejax._src.core.trace import Tracer, concrete_or_error
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import chlo, hlo, ir
from tracejax._src.lax import elementwise_hlo as ew_hlo
from tracejax._src.lax import utils
from tracejax._src.lax.utils import standard_primitive
from tracejax._src.runtime.array import Array

__all__ = [
    # arithmetic
    "add", "add_p", "sub", "sub_p", "mul", "mul_p", "div", "div_p", "rem", "rem_p", "neg",
    "neg_p", "sign", "sign_p", "abs", "abs_p", "max", "max_p", "min", "min_p", "pow", "pow_p",
    "integer_pow", "integer_pow_p", "reciprocal", "square", "square_p", "sqrt", "sqrt_p",
    "rsqrt", "rsqrt_p", "cbrt", "cbrt_p",
    # exponentials, logarithms, trigonometry
    "exp", "exp_p", "exp2", "exp2_p", "log", "log_p", "log1p", "log1p_p", "expm1", "expm1_p",
    "tanh", "tanh_p", "logistic", "logistic_p", "sin", "sin_p", "cos", "cos_p", "tan", "tan_p",
    "asin", "asin_p", "acos", "acos_p", "atan", "atan_p", "atan2", "atan2_p", "sinh", "sinh_p",
    "cosh", "cosh_p", "asinh", "asinh_p", "acosh", "acosh_p", "atanh", "atanh_p",
    # rounding
    "floor", "floor_p", "ceil", "ceil_p", "round", "round_p", "RoundingMethod", "nextafter",
    "nextafter_p", "is_finite", "is_finite_p",
    # comparisons and bitwise operations
    "eq", "eq_p", "ne", "ne_p", "lt", "lt_p", "le", "le_p", "gt", "gt_p", "ge", "ge_p",
    "bitwise_not", "not_", "not_p", "bitwise_and", "and_", "and_p", "bitwise_or", "or_", "or_p",
    "bitwise_xor", "xor", "xor_p", "shift_left", "shift_left_p", "shift_right_arithmetic",
    "shift_right_arithmetic_p", "shift_right_logical", "shift_right_logical_p",
    "population_count", "population_count_p", "clz", "clz_p",
    # complex numbers, conversions, selection
    "complex", "complex_p", "conj", "conj_p", "real", "real_p", "imag", "imag_p",
    "convert_element_type", "convert_element_type_p", "bitcast_convert_type",
    "bitcast_convert_type_p", "reduce_precision", "reduce_precision_p", "select", "select_n",
    "select_n_p", "clamp", "clamp_p",
]


# =============================================================================
# Shared rules
# =============================================================================

_bool = utils._bool
_int = utils._int
_signedint = utils._signedint
_float = utils._float
_complex = utils._complex
_inexact = utils._inexact
_num = utils._num
_any = utils._any
_bool_or_int = utils._bool_or_int
_ordered = [np.bool_, np.integer, np.floating]  # everything but complex
_complex_elem = [np.float32, np.float64]        # the parts of complex64/complex128


def _dtype(x):
  """The canonical dtype of an array, tracer or Python scalar operand."""
  return dtypes.dtype(x, canonicalize=True)


def _aval(x):
  return raise_to_shaped(get_aval(x))


def _check_dtypes(name, accepted, avals):
  for i, a in enumerate(avals):
    if a.dtype == dtypes.float0:
      raise TypeError(
          f"Called {name} with a float0 at position {i}. float0s do not support any "
          "operations by design, because they are not compatible with non-trivial vector "
          "spaces. No implicit dtype conversion is done. If you didn't expect to get a "
          "float0 you might have taken a gradient with respect to an integer argument.")
  utils.check_dtypes(name, accepted, *avals)


def _check_same_dtypes(name, avals):
  dts = [a.dtype for a in avals]
  if len(set(dts)) > 1:
    raise TypeError(
        f"lax.{name} requires arguments to have the same dtypes, got "
        f"{', '.join(d.name for d in dts)}. (Tip: the jax.numpy functions do automatic "
        "type promotion on inputs.)")


broadcast_shapes_strict = utils.broadcast_shapes_strict


def _nary_shape_rule(name):
  def rule(*avals, **_):
    return broadcast_shapes_strict(name, *(a.shape for a in avals))
  return rule


def _nary_dtype_rule(name, accepted, result_dtype=None):
  """All operands share one dtype from `accepted`; `result_dtype` is a dtype, a function
  of the operand dtype, or None (the operand dtype)."""
  def rule(*avals, **_):
    _check_dtypes(name, accepted, avals)
    _check_same_dtypes(name, avals)
    if result_dtype is None:
      return avals[0].dtype
    if callable(result_dtype) and not isinstance(result_dtype, type):
      return np.dtype(result_dtype(avals[0].dtype))
    return np.dtype(result_dtype)
  return rule


def _not_weak(*avals, **_):
  return False


def broadcast_operands(ctx, *args):
  """Broadcast the operands of an elementwise lowering to the output shape: rank-0
  operands and the size-1 axes of equal-rank ones."""
  out_shape = ctx.avals_out[0].shape
  res = []
  for x, a in zip(args, ctx.avals_in):
    if a.shape != out_shape:
      t = ir.RankedTensorType.get(out_shape, mlir.dtype_to_ir_type(a.dtype))
      x = hlo.broadcast_in_dim(t, x, ir.DenseI64ArrayAttr.get(list(range(len(a.shape)))))
    res.append(x)
  return res


def _nary_lower(hlo_op):
  return lambda ctx, *xs, **_: [hlo_op(*broadcast_operands(ctx, *xs))]


def naryop(name, accepted, hlo_op, result_dtype=None, weak_type_rule=None):
  """An elementwise primitive lowered to a single StableHLO/CHLO op (None: lowered
  separately). Batching is registered by each primitive's block."""
  prim = standard_primitive(_nary_shape_rule(name),
                            _nary_dtype_rule(name, accepted, result_dtype), name,
                            weak_type_rule=weak_type_rule)
  if hlo_op is not None:
    mlir.register_lowering(prim, _nary_lower(hlo_op))
  return prim


# The functions that take today's `accuracy=` (a lax.Tolerance or lax.AccuracyMode).
_ACCURACY_FNS = frozenset({"exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic",
                           "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt"})


def _wrap(prim, doc):
  if prim.name in _ACCURACY_FNS:
    def fn(*args, accuracy=None):
      from tracejax._src.lax.types import check_accuracy
      check_accuracy(prim.name, accuracy)
      return prim.bind(*utils.promote_python_scalars(args))
  else:
    def fn(*args):
      return prim.bind(*utils.promote_python_scalars(args))
  fn.__name__ = prim.name
  fn.__qualname__ = prim.name
  fn.__doc__ = doc
  return fn


# ---- lowering helpers (lax/elementwise_hlo.py) ----

_compare_hlo, _full = ew_hlo.compare_hlo, ew_hlo.full


# ---- helpers for derivative rules and compositions ----

def _const(x, value):
  """A rank-0 constant of `x`'s dtype (rank-0 operands broadcast in n-ary ops).

  As in JAX, the constant of a weakly typed scalar `x` is the Python scalar (weak) when
  `x`'s dtype is that scalar's default, so rules on weak scalars keep them weak."""
  c = np.array(value, _dtype(x))
  if np.ndim(x) == 0 and dtypes.is_weakly_typed(x):
    w = _weak_py_scalar(c)
    if w is not None:
      return w
  return c


def _one(x):
  """A 0-d one of `x`'s dtype that keeps a weak `x`'s weak type at every rank (JAX's
  `_one`, a full_like; `_const` is weak only for weak scalars). The JVP rules use each
  where JAX does, which decides whether tangents of weak arrays stay weak."""
  c = np.array(1, _dtype(x))
  return _weak_scalar(c) if dtypes.is_weakly_typed(x) else c


def _full_like(x, value, dtype=None):
  """An array of `x`'s shape filled with `value`: a broadcast scalar, not a big constant."""
  c = np.array(value, dtype or _dtype(x))
  if dtype is None and dtypes.is_weakly_typed(x):
    # As JAX's full_like: the fill keeps a weak `x`'s weak type. JVP and transpose rules
    # build their zeros and ones this way, so a weak tangent or cotangent stays weak.
    c = _weak_scalar(c)
  shape = np.shape(x)
  if not shape:
    return c
  from tracejax._src.lax import structural
  return structural.broadcast_in_dim(c, tuple(shape), ())


def _weak_py_scalar(c):
  """The Python scalar (weakly typed) standing for the 0-d NumPy constant `c`, or None
  when `c`'s dtype is not the default dtype of a Python scalar type."""
  import builtins  # this module defines its own `complex`
  py = {"i": builtins.int, "f": builtins.float, "c": builtins.complex}.get(c.dtype.kind)
  if py is not None and \
      dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[py]) == c.dtype:
    return py(c.item())
  return None


def _weak_scalar(c):
  """The 0-d NumPy constant `c` as a weakly typed value: the Python scalar when its
  dtype is that scalar's default (a weak literal when staged), else a weak cast."""
  w = _weak_py_scalar(c)
  if w is not None:
    return w
  return convert_element_type_p.bind(c, new_dtype=c.dtype, weak_type=True)


def _zeros(x):
  return _full_like(x, 0)


def _ones(x):
  return _full_like(x, 1)


def _maybe_broadcast(shape, x):
  """`x` (of `shape`, rank 0, or `shape` with some axes of size 1) with shape `shape`."""
  xshape = tuple(np.shape(x))
  if xshape == tuple(shape):
    return x
  from tracejax._src.lax import structural
  return structural.broadcast_in_dim(x, tuple(shape), tuple(range(len(xshape))))


def _unbroadcast(aval, ct):
  """The cotangent of an operand of `aval` that was implicitly broadcast: a rank-0
  operand, or one with size-1 axes. Sums over the broadcast axes, then restores the
  size-1 axes with a reshape."""
  shape = tuple(np.shape(ct))
  if shape == tuple(aval.shape):
    return ct
  from tracejax._src.lax import reductions
  if not aval.shape:
    return reductions.reduce_sum(ct, tuple(range(len(shape))))
  assert len(shape) == len(aval.shape), (aval, shape)
  axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, shape)) if a == 1 and c != 1)
  summed = reductions.reduce_sum(ct, axes) if axes else ct
  if tuple(np.shape(summed)) == tuple(aval.shape):
    return summed
  from tracejax._src.lax import structural
  return structural.reshape(summed, tuple(aval.shape))


def _operand_aval(x):
  return x.aval if ad.is_undefined_primal(x) else _aval(x)


def _out_shape(*xs):
  return broadcast_shapes_strict("lax", *(np.shape(x) for x in xs))


def _broadcast_tangents(defjvp):
  """`ad.defjvp`/`ad.defjvp2` whose rules' tangents are broadcast to the output shape.

  A rule for one operand may give a tangent of that operand's shape (e.g. slope 1),
  which can be smaller than the output when the other operand broadcasts it.
  """
  def define(prim, *rules):
    def wrap(rule):
      if rule is None:
        return None
      def broadcast_rule(g, *args, **params):
        t = rule(g, *args, **params)
        shape = _out_shape(*args)
        return t if type(t) is ad.Zero else _maybe_broadcast(shape, t)
      return broadcast_rule
    defjvp(prim, *map(wrap, rules))
  return define


_defjvp_nary = _broadcast_tangents(ad.defjvp)
_defjvp2_nary = _broadcast_tangents(ad.defjvp2)


def _iscomplex(x):
  return dtypes.issubdtype(_dtype(x), np.complexfloating)


# =============================================================================
# Arithmetic
# =============================================================================

# ---- add ----

add_p = naryop("add", _num, hlo.add)
add = _wrap(add_p, "Elementwise addition: x + y.")


def _add_jvp(primals, tangents):
  x, y = primals
  xdot, ydot = tangents
  out = add_p.bind(x, y)
  shape = np.shape(out)
  if type(xdot) is ad.Zero and type(ydot) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  if type(xdot) is ad.Zero:
    return out, _maybe_broadcast(shape, ydot)
  if type(ydot) is ad.Zero:
    return out, _maybe_broadcast(shape, xdot)
  return out, add(xdot, ydot)


def _add_transpose(ct, x, y):
  # A defined operand needs no cotangent (backward_pass ignores it), so skip its sum.
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None,
            ad.Zero(y.aval) if ad.is_undefined_primal(y) else None]
  return [_unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, ct) if ad.is_undefined_primal(y) else None]


ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_transposes[add_p] = _add_transpose
ad.linear_primitives.add(add_p)
utils.defbroadcasting(add_p, size_one=True)

# ---- sub ----

sub_p = naryop("sub", _num, hlo.subtract)
sub = _wrap(sub_p, "Elementwise subtraction: x - y.")


def _sub_jvp(primals, tangents):
  x, y = primals
  xdot, ydot = tangents
  out = sub_p.bind(x, y)
  shape = np.shape(out)
  if type(xdot) is ad.Zero and type(ydot) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  if type(xdot) is ad.Zero:
    return out, _maybe_broadcast(shape, neg(ydot))
  if type(ydot) is ad.Zero:
    return out, _maybe_broadcast(shape, xdot)
  return out, sub(xdot, ydot)


def _sub_transpose(ct, x, y):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None,
            ad.Zero(y.aval) if ad.is_undefined_primal(y) else None]
  return [_unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, neg(ct)) if ad.is_undefined_primal(y) else None]


ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[sub_p] = _sub_transpose
ad.linear_primitives.add(sub_p)
utils.defbroadcasting(sub_p, size_one=True)

# ---- mul ----

mul_p = naryop("mul", _num, hlo.multiply)
mul = _wrap(mul_p, "Elementwise multiplication: x * y.")
# Transposition is not conjugation: the cotangent of x in x*y is ct*y, also for complex.
ad.defbilinear(mul_p,
               lambda ct, x, y: _unbroadcast(x.aval, mul(ct, y)),
               lambda ct, x, y: _unbroadcast(y.aval, mul(x, ct)))
utils.defbroadcasting(mul_p, size_one=True)

# ---- div ----

div_p = naryop("div", _num, None)  # integers: truncation toward zero, as in C and XLA
mlir.register_lowering(div_p, lambda ctx, x, y: [
    ew_hlo.div_rem(*broadcast_operands(ctx, x, y), ctx.avals_out[0], is_div=True)])
div = _wrap(div_p, "Elementwise division: x / y (integers round toward zero).")
_defjvp_nary(div_p,
          lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))


def _div_transpose(ct, x, y):
  # div is linear in its numerator only.
  assert ad.is_undefined_primal(x) and not ad.is_undefined_primal(y)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval), None]
  return [_unbroadcast(x.aval, div(ct, y)), None]


ad.primitive_transposes[div_p] = _div_transpose
utils.defbroadcasting(div_p, size_one=True)

# ---- rem ----

rem_p = naryop("rem", [np.integer, np.floating], None)
mlir.register_lowering(rem_p, lambda ctx, x, y: [
    ew_hlo.div_rem(*broadcast_operands(ctx, x, y), ctx.avals_out[0], is_div=False)])
rem = _wrap(rem_p, "Elementwise remainder: x mod y, with the sign of x (C's fmod).")
_defjvp_nary(rem_p,
          lambda g, x, y: _maybe_broadcast(_out_shape(x, y), g),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))
utils.defbroadcasting(rem_p, size_one=True)

# ---- neg ----

neg_p = naryop("neg", _num, hlo.negate)
neg = _wrap(neg_p, "Elementwise negation: -x.")
ad.deflinear2(neg_p, lambda ct, x: [neg(ct)])
utils.defvectorized(neg_p)

# ---- sign ----

sign_p = naryop("sign", _num, None)
sign = _wrap(sign_p, "Elementwise sign: -1, 0 or 1 (x / |x| for complex x).")
ad.defjvp_zero(sign_p)
utils.defvectorized(sign_p)


def _sign_lower(ctx, x):
  aval = ctx.avals_in[0]
  if dtypes.issubdtype(aval.dtype, np.unsignedinteger):
    # StableHLO's sign is for signed and floating types.
    is_zero = _compare_hlo(x, _full(0, aval), "EQ", aval.dtype)
    return [hlo.select(is_zero, _full(0, aval), _full(1, aval))]
  return [hlo.sign(x)]


mlir.register_lowering(sign_p, _sign_lower)

# ---- abs ----


def _real_dtype(dtype):
  return dtypes.to_real_dtype(dtype)


abs_p = naryop("abs", [np.signedinteger, np.floating, np.complexfloating], hlo.abs,
               result_dtype=_real_dtype)
abs = _wrap(abs_p, "Elementwise absolute value: |x|.")


def _abs_jvp(g, ans, x):
  if _iscomplex(x):
    # |z| is not holomorphic: d|z| = Re(conj(z) dz) / |z|.
    safe = _replace_zero(convert_element_type(ans, _dtype(x)))
    return real(mul(g, div(conj(x), safe)))
  return select(ge(x, _const(x, 0)), g, neg(g))


ad.defjvp2(abs_p, _abs_jvp)
utils.defvectorized(abs_p)


def _replace_zero(x):
  return select(eq(x, _const(x, 0)), _ones(x), x)


# ---- max, min ----


def _balanced_eq(x, z, y):
  # 1 where x alone attains z, 1/2 where x and y tie, 0 elsewhere: the derivative of a
  # tie is split evenly between the two operands.
  # Two selects (not converts and an add): the fused loop XLA makes of it is then the
  # one it makes for JAX's rule.
  x_eq = select_n(eq(x, z), _full_like(z, 0), _full_like(z, 1))
  y_eq = select_n(eq(y, z), _full_like(z, 1), _full_like(z, 2))
  return div(x_eq, y_eq)


def minmax_hlo(x, y, dtype, direction, hlo_op):
  """HLO max ("GT", hlo.maximum) or min ("LT", hlo.minimum); also reduce_max/min's body."""
  if dtypes.issubdtype(dtype, np.complexfloating):
    # Complex numbers compare lexicographically (real part, then imaginary part).
    rx, ry, ix, iy = hlo.real(x), hlo.real(y), hlo.imag(x), hlo.imag(y)
    rdt = _real_dtype(dtype)
    real_eq = _compare_hlo(rx, ry, "EQ", rdt)
    pick_x = hlo.select(real_eq, _compare_hlo(ix, iy, direction, rdt),
                        _compare_hlo(rx, ry, direction, rdt))
    return hlo.select(pick_x, x, y)
  if dtype == np.bool_:
    return (hlo.or_ if direction == "GT" else hlo.and_)(x, y)
  return hlo_op(x, y)  # XLA's maximum/minimum propagate NaNs


def _minmax_lower(direction, hlo_op):
  def lower(ctx, x, y):
    x, y = broadcast_operands(ctx, x, y)
    return [minmax_hlo(x, y, ctx.avals_in[0].dtype, direction, hlo_op)]
  return lower


max_p = naryop("max", _any, None)
max = _wrap(max_p, "Elementwise maximum: max(x, y). NaNs propagate.")
_defjvp2_nary(max_p,
           lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
utils.defbroadcasting(max_p, size_one=True)
mlir.register_lowering(max_p, _minmax_lower("GT", hlo.maximum))

min_p = naryop("min", _any, None)
min = _wrap(min_p, "Elementwise minimum: min(x, y). NaNs propagate.")
_defjvp2_nary(min_p,
           lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
utils.defbroadcasting(min_p, size_one=True)
mlir.register_lowering(min_p, _minmax_lower("LT", hlo.minimum))

# ---- pow ----


def _pow_dtype_rule(x, y):
  _check_dtypes("pow", _inexact, [x])
  _check_dtypes("pow", [np.integer, np.inexact], [y])
  if dtypes.issubdtype(y.dtype, np.integer) or x.dtype == y.dtype:
    return x.dtype
  raise TypeError("the first argument to pow must have an inexact dtype (float or complex), "
                  "and the second argument must have an inexact or integer dtype, and two "
                  f"inexact dtypes must match, but got {x.dtype} and {y.dtype} respectively.")


def pow(x, y):
  """Elementwise power: x ** y (x float or complex; y of x's dtype or an integer)."""
  x, y = _promote_pow_scalars(x, y)
  return pow_p.bind(x, y)


def _promote_pow_scalars(x, y):
  # An integer exponent stays integer (pow accepts x float, y int); otherwise Python
  # scalars take the other operand's dtype, as in every lax wrapper.
  if type(y) is int and type(x) not in utils._py_scalars:
    return x, y   # a weak int exponent (JAX: pow of a weak x and a Python int is weak)
  if type(x) in utils._py_scalars and type(y) not in utils._py_scalars and \
      dtypes.issubdtype(_dtype(y), np.integer):
    return x, y
  return utils.promote_python_scalars([x, y])


pow_p = standard_primitive(_nary_shape_rule("pow"), _pow_dtype_rule, "pow")


def _pow_jvp_lhs(g, ans, x, y):
  # As JAX, x and y are cast (strong) before the derivative's formula: the x tangent of
  # pow is strong even when x and y are weak.
  x, y = _strong(x), _strong(y)
  if dtypes.issubdtype(_dtype(y), np.integer):
    shape = _out_shape(x, y)
    x, y = _maybe_broadcast(shape, x), _maybe_broadcast(shape, y)
    yx = convert_element_type(y, _dtype(x))
    # y * x**(y-1), exactly 0 where y == 0 (x**-1 may be inf there).
    jac = select(eq(y, _const(y, 0)), _zeros(yx),
                 mul(_replace_zero(yx), pow(x, sub(y, _const(y, 1)))))
  else:
    jac = mul(y, pow(x, sub(y, _const(y, 1))))
  return mul(g, jac)


def _pow_jvp_rhs(g, ans, x, y):
  return _strong(mul(g, mul(log(_replace_zero(x)), ans)))  # JAX casts it (strong)


def _strong(x):
  """`x` without its weak type (JAX's public convert_element_type in a rule)."""
  return _convert_element_type(x, _dtype(x), weak_type=False)


_defjvp2_nary(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)
utils.defbroadcasting(pow_p, size_one=True)


def _pow_lower(ctx, x, y):
  x, y = broadcast_operands(ctx, x, y)
  x_aval, y_aval = ctx.avals_in
  if x_aval.dtype != y_aval.dtype:  # an integer exponent: XLA's power wants one dtype
    y = hlo.convert(mlir.aval_to_ir_type(ctx.avals_out[0]), y)
  return [hlo.power(x, y)]


mlir.register_lowering(pow_p, _pow_lower)

# ---- integer_pow ----


def integer_pow(x, y):
  """Elementwise power x ** y for a static Python integer y (repeated multiplication).

  Args:
    x: an array or scalar of a numeric dtype.
    y: the exponent, a static integer (an integral float such as `2.0` is accepted,
      as in JAX); a fractional or non-numeric exponent is a TypeError instead of
      being silently truncated.

  >>> integer_pow(jnp.arange(3.), 2)
  DeviceArray([0., 1., 4.], dtype=float32)
  """
  return integer_pow_p.bind(x, y=_integer_exponent(y))


def _integer_exponent(y):
  try:
    return operator.index(y)
  except TypeError:
    pass
  if (isinstance(y, (float, np.floating)) and not isinstance(y, Tracer)
      and np.isfinite(y) and float(y).is_integer()):
    return int(y)
  raise TypeError(f"integer_pow requires a static integer exponent y, got {y!r} of type "
                  f"{type(y).__name__}.")


def _integer_pow_dtype_rule(x, *, y):
  _check_dtypes("integer_pow", _num, [x])
  if y < 0 and dtypes.issubdtype(x.dtype, np.integer):
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y})")
  return x.dtype


integer_pow_p = standard_primitive(lambda x, **_: x.shape, _integer_pow_dtype_rule,
                                   "integer_pow")


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return ad.Zero(_aval(g))
  return mul(g, mul(_const(x, y), integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)
utils.defvectorized(integer_pow_p)


def _integer_pow_lower(ctx, x, *, y):
  aval = ctx.avals_in[0]
  if y == 0:
    return [_full(1, aval)]
  n = -y if y < 0 else y
  acc = None
  while n:  # binary exponentiation: O(log y) multiplies
    if n & 1:
      acc = x if acc is None else hlo.multiply(acc, x)
    n >>= 1
    if n:
      x = hlo.multiply(x, x)
  return [hlo.divide(_full(1, aval), acc) if y < 0 else acc]


mlir.register_lowering(integer_pow_p, _integer_pow_lower)


def reciprocal(x):
  """Elementwise reciprocal: 1 / x."""
  return integer_pow(x, -1)


# ---- square ----

square_p = naryop("square", _num, None)
square = _wrap(square_p, "Elementwise square: x ** 2.")
ad.defjvp2(square_p, lambda g, ans, x: mul(g, mul(_const(x, 2), x)))
utils.defvectorized(square_p)


def _square_lower(ctx, x):
  if dtypes.issubdtype(ctx.avals_in[0].dtype, np.complexfloating):
    return [chlo.square(x)]  # avoids the cancellation of a naive complex product
  return [hlo.multiply(x, x)]


mlir.register_lowering(square_p, _square_lower)

# ---- sqrt, rsqrt, cbrt ----

sqrt_p = naryop("sqrt", _inexact, hlo.sqrt)
sqrt = _wrap(sqrt_p, "Elementwise square root: sqrt(x).")
ad.defjvp2(sqrt_p, lambda g, ans, x: mul(g, div(_const(x, 0.5), ans)))
utils.defvectorized(sqrt_p)

rsqrt_p = naryop("rsqrt", _inexact, hlo.rsqrt)
rsqrt = _wrap(rsqrt_p, "Elementwise reciprocal square root: 1 / sqrt(x).")
ad.defjvp2(rsqrt_p, lambda g, ans, x: mul(g, mul(_const(x, -0.5), div(ans, x))))
utils.defvectorized(rsqrt_p)

cbrt_p = naryop("cbrt", _float, hlo.cbrt)
cbrt = _wrap(cbrt_p, "Elementwise cube root: x ** (1/3), real for negative x.")
ad.defjvp2(cbrt_p, lambda g, ans, x: mul(g, mul(_const(x, 1 / 3), integer_pow(ans, -2))))
utils.defvectorized(cbrt_p)


# =============================================================================
# Exponentials and logarithms
# =============================================================================

exp_p = naryop("exp", _inexact, hlo.exponential)
exp = _wrap(exp_p, "Elementwise exponential: e ** x.")
ad.defjvp2(exp_p, lambda g, ans, x: mul(g, ans))
utils.defvectorized(exp_p)

exp2_p = naryop("exp2", _inexact, None)
exp2 = _wrap(exp2_p, "Elementwise base-2 exponential: 2 ** x.")
ad.defjvp2(exp2_p, lambda g, ans, x: mul(_const(x, np.log(2)), mul(g, ans)))
utils.defvectorized(exp2_p)
mlir.register_lowering(
    exp2_p, lambda ctx, x: [hlo.exponential(hlo.multiply(_full(np.log(2), ctx.avals_in[0]), x))])

log_p = naryop("log", _inexact, hlo.log)
log = _wrap(log_p, "Elementwise natural logarithm: log(x).")
ad.defjvp(log_p, lambda g, x: div(g, x))
utils.defvectorized(log_p)

log1p_p = naryop("log1p", _inexact, hlo.log_plus_one)
log1p = _wrap(log1p_p, "Elementwise log(1 + x), accurate for small x.")
ad.defjvp(log1p_p, lambda g, x: div(g, add(x, _one(x))))
utils.defvectorized(log1p_p)

expm1_p = naryop("expm1", _inexact, hlo.exponential_minus_one)
expm1 = _wrap(expm1_p, "Elementwise e ** x - 1, accurate for small x.")
ad.defjvp2(expm1_p, lambda g, ans, x: mul(g, add(ans, _one(ans))))
utils.defvectorized(expm1_p)

tanh_p = naryop("tanh", _inexact, hlo.tanh)
tanh = _wrap(tanh_p, "Elementwise hyperbolic tangent: tanh(x).")
ad.defjvp2(tanh_p, lambda g, ans, x: mul(add(g, mul(g, ans)), sub(_one(x), ans)))
utils.defvectorized(tanh_p)

logistic_p = naryop("logistic", _inexact, None)
logistic = _wrap(logistic_p, "Elementwise logistic (sigmoid): 1 / (1 + e ** -x).")
ad.defjvp2(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(_one(ans), ans))))
utils.defvectorized(logistic_p)


def _logistic_lower(ctx, x):
  # 1 / (1 + exp(-x)), as JAX lowers it (XLA's logistic op is less accurate on some
  # backends); saturates cleanly to 0 and 1.
  one = _full(1, ctx.avals_in[0])
  return [hlo.divide(one, hlo.add(one, hlo.exponential(hlo.negate(x))))]


mlir.register_lowering(logistic_p, _logistic_lower)


# =============================================================================
# Trigonometric and hyperbolic functions
# =============================================================================

sin_p = naryop("sin", _inexact, hlo.sine)
sin = _wrap(sin_p, "Elementwise sine: sin(x).")
ad.defjvp(sin_p, lambda g, x: mul(g, cos(x)))
utils.defvectorized(sin_p)

cos_p = naryop("cos", _inexact, hlo.cosine)
cos = _wrap(cos_p, "Elementwise cosine: cos(x).")
ad.defjvp(cos_p, lambda g, x: neg(mul(g, sin(x))))
utils.defvectorized(cos_p)


mlir.register_lowering(sin_p, ew_hlo.sin_cos_lower(True))
mlir.register_lowering(cos_p, ew_hlo.sin_cos_lower(False))

tan_p = naryop("tan", _inexact, hlo.tan)
tan = _wrap(tan_p, "Elementwise tangent: tan(x).")
ad.defjvp2(tan_p, lambda g, ans, x: mul(g, add(_const(x, 1), square(ans))))
utils.defvectorized(tan_p)

asin_p = naryop("asin", _inexact, chlo.asin)
asin = _wrap(asin_p, "Elementwise arc sine: asin(x).")
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
utils.defvectorized(asin_p)

acos_p = naryop("acos", _inexact, chlo.acos)
acos = _wrap(acos_p, "Elementwise arc cosine: acos(x).")
ad.defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(_const(x, 1), square(x))))))
utils.defvectorized(acos_p)

atan_p = naryop("atan", _inexact, chlo.atan)
atan = _wrap(atan_p, "Elementwise arc tangent: atan(x).")
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))
utils.defvectorized(atan_p)

atan2_p = naryop("atan2", _inexact, hlo.atan2)  # complex too, as JAX 0.10.2 (XLA's atan2)
atan2 = _wrap(atan2_p, "Elementwise arc tangent of two variables: atan(x / y), quadrant-aware.")
_defjvp_nary(atan2_p,
          lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))
utils.defbroadcasting(atan2_p, size_one=True)

sinh_p = naryop("sinh", _inexact, chlo.sinh)
sinh = _wrap(sinh_p, "Elementwise hyperbolic sine: sinh(x).")
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
utils.defvectorized(sinh_p)

cosh_p = naryop("cosh", _inexact, chlo.cosh)
cosh = _wrap(cosh_p, "Elementwise hyperbolic cosine: cosh(x).")
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
utils.defvectorized(cosh_p)

asinh_p = naryop("asinh", _inexact, chlo.asinh)
asinh = _wrap(asinh_p, "Elementwise inverse hyperbolic sine: asinh(x).")
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _one(x)))))
utils.defvectorized(asinh_p)

acosh_p = naryop("acosh", _inexact, chlo.acosh)
acosh = _wrap(acosh_p, "Elementwise inverse hyperbolic cosine: acosh(x).")
# x^2 - 1 rather than (x - 1)(x + 1): the domain is x >= 1, away from the cancellation.
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _one(x)))))
utils.defvectorized(acosh_p)

atanh_p = naryop("atanh", _inexact, chlo.atanh)
atanh = _wrap(atanh_p, "Elementwise inverse hyperbolic tangent: atanh(x).")
ad.defjvp(atanh_p, lambda g, x: mul(reciprocal(add(_one(x), x)),
                                    div(g, sub(_one(x), x))))
utils.defvectorized(atanh_p)


# =============================================================================
# Rounding and floating-point structure
# =============================================================================

floor_p = naryop("floor", _float, hlo.floor)
floor = _wrap(floor_p, "Elementwise floor: the largest integer <= x.")
ad.defjvp_zero(floor_p)
utils.defvectorized(floor_p)

ceil_p = naryop("ceil", _float, hlo.ceil)
ceil = _wrap(ceil_p, "Elementwise ceiling: the smallest integer >= x.")
ad.defjvp_zero(ceil_p)
utils.defvectorized(ceil_p)

# ---- round ----


class RoundingMethod(enum.IntEnum):
  """How `lax.round` breaks ties: away from zero (C's round) or to the nearest even."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
  """Elementwise round to the nearest integer; ties per `rounding_method`."""
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


round_p = standard_primitive(_nary_shape_rule("round"), _nary_dtype_rule("round", _float),
                             "round")
ad.defjvp_zero(round_p)
utils.defvectorized(round_p)


def _round_lower(ctx, x, *, rounding_method):
  if rounding_method == RoundingMethod.AWAY_FROM_ZERO:
    return [hlo.round_nearest_afz(x)]
  return [hlo.round_nearest_even(x)]


mlir.register_lowering(round_p, _round_lower)

# ---- nextafter, is_finite ----

nextafter_p = naryop("nextafter", _float, chlo.next_after)
nextafter = _wrap(nextafter_p,
                  "The next representable value after x1 in the direction of x2.")
# nextafter(x1, x2) = x1 + (a step that is constant almost everywhere): slope 1 in x1.
_defjvp_nary(nextafter_p, lambda g, x1, x2: _maybe_broadcast(_out_shape(x1, x2), g), None)
utils.defbroadcasting(nextafter_p, size_one=True)

# A weak input gives a weak bool (JAX 0.10.2's rule for comparisons and is_finite too).
is_finite_p = naryop("is_finite", _float, hlo.is_finite, result_dtype=np.bool_)
is_finite = _wrap(is_finite_p, "Elementwise isfinite: neither inf nor NaN.")
ad.defjvp_zero(is_finite_p)
utils.defvectorized(is_finite_p)


# =============================================================================
# Comparisons (bool results)
# =============================================================================


def _compare_lower(direction):
  def lower(ctx, x, y):
    x, y = broadcast_operands(ctx, x, y)
    return [_compare_hlo(x, y, direction, ctx.avals_in[0].dtype)]
  return lower


def _comparison(name, accepted, direction, doc):
  # Weak when all operands are weak (the default rule): JAX 0.10.2 prints `x > 0` of a
  # Python float as a weak bool.
  prim = naryop(name, accepted, None, result_dtype=np.bool_)
  ad.defjvp_zero(prim)
  utils.defbroadcasting(prim, size_one=True)
  mlir.register_lowering(prim, _compare_lower(direction))
  return prim, _wrap(prim, doc)


eq_p, eq = _comparison("eq", _any, "EQ", "Elementwise equals: x == y.")
ne_p, ne = _comparison("ne", _any, "NE", "Elementwise not-equals: x != y.")
lt_p, lt = _comparison("lt", _ordered, "LT", "Elementwise less-than: x < y.")
le_p, le = _comparison("le", _ordered, "LE", "Elementwise less-than-or-equals: x <= y.")
gt_p, gt = _comparison("gt", _ordered, "GT", "Elementwise greater-than: x > y.")
ge_p, ge = _comparison("ge", _ordered, "GE", "Elementwise greater-than-or-equals: x >= y.")


# =============================================================================
# Bitwise operations (bool and integers)
# =============================================================================

not_p = naryop("not", _bool_or_int, hlo.not_)
bitwise_not = _wrap(not_p, "Elementwise NOT: ~x (logical for bool).")
not_ = bitwise_not
ad.defjvp_zero(not_p)
utils.defvectorized(not_p)

and_p = naryop("and", _bool_or_int, hlo.and_)
bitwise_and = _wrap(and_p, "Elementwise AND: x & y.")
and_ = bitwise_and
ad.defjvp_zero(and_p)
utils.defbroadcasting(and_p, size_one=True)

or_p = naryop("or", _bool_or_int, hlo.or_)
bitwise_or = _wrap(or_p, "Elementwise OR: x | y.")
or_ = bitwise_or
ad.defjvp_zero(or_p)
utils.defbroadcasting(or_p, size_one=True)

xor_p = naryop("xor", _bool_or_int, hlo.xor)
bitwise_xor = _wrap(xor_p, "Elementwise exclusive OR: x ^ y.")
xor = bitwise_xor
ad.defjvp_zero(xor_p)
utils.defbroadcasting(xor_p, size_one=True)

# Shifts by an amount outside [0, bits) give 0 (sign bits for the arithmetic right shift),
# as XLA defines them.
shift_left_p = naryop("shift_left", _int, hlo.shift_left)
shift_left = _wrap(shift_left_p, "Elementwise left shift: x << y.")
ad.defjvp_zero(shift_left_p)
utils.defbroadcasting(shift_left_p, size_one=True)

shift_right_arithmetic_p = naryop("shift_right_arithmetic", _int, hlo.shift_right_arithmetic)
shift_right_arithmetic = _wrap(shift_right_arithmetic_p,
                               "Elementwise arithmetic right shift: x >> y, sign-filling.")
ad.defjvp_zero(shift_right_arithmetic_p)
utils.defbroadcasting(shift_right_arithmetic_p, size_one=True)

shift_right_logical_p = naryop("shift_right_logical", _int, hlo.shift_right_logical)
shift_right_logical = _wrap(shift_right_logical_p,
                            "Elementwise logical right shift: x >> y, zero-filling.")
ad.defjvp_zero(shift_right_logical_p)
utils.defbroadcasting(shift_right_logical_p, size_one=True)

population_count_p = naryop("population_count", _int, hlo.popcnt)
population_count = _wrap(population_count_p, "Elementwise popcount: the number of set bits.")
ad.defjvp_zero(population_count_p)
utils.defvectorized(population_count_p)

clz_p = naryop("clz", _int, hlo.count_leading_zeros)
clz = _wrap(clz_p, "Elementwise count of leading zero bits.")
ad.defjvp_zero(clz_p)
utils.defvectorized(clz_p)


# =============================================================================
# Complex numbers
# =============================================================================

# ---- complex ----


def _complex_dtype(dtype):
  d = np.dtype(dtype)
  return np.dtype(np.complex128) if d in (np.float64, np.complex128) else np.dtype(np.complex64)


complex_p = naryop("complex", _complex_elem, hlo.complex, result_dtype=_complex_dtype)
complex = _wrap(complex_p, "Elementwise make complex number: x + 1j * y.")


def _complex_transpose(ct, x, y):
  # complex(x, y) = x + i y is linear over the reals: the transpose of x -> x is
  # ct -> Re(ct), and that of y -> i y is ct -> Re(-i ct) = Im(-ct).
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None,
            ad.Zero(y.aval) if ad.is_undefined_primal(y) else None]
  return [_unbroadcast(x.aval, real(ct)) if ad.is_undefined_primal(x) else None,
          _unbroadcast(y.aval, imag(neg(ct))) if ad.is_undefined_primal(y) else None]


ad.deflinear2(complex_p, _complex_transpose)


def _complex_jvp(primals, tangents):
  # deflinear's JVP would instantiate a symbolic zero tangent as a full array; a rank-0
  # operand's tangent must also be broadcast to the output's shape.
  x, y = primals
  tx, ty = tangents
  out = complex_p.bind(x, y)
  if type(tx) is ad.Zero and type(ty) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  shape = np.shape(out)
  tx = _maybe_broadcast(shape, ad.instantiate_zeros(tx))
  ty = _maybe_broadcast(shape, ad.instantiate_zeros(ty))
  return out, complex_p.bind(tx, ty)


ad.primitive_jvps[complex_p] = _complex_jvp
utils.defbroadcasting(complex_p, size_one=True)

# ---- conj ----


def conj(x):
  """Elementwise complex conjugate; real inputs give a complex result, as in JAX."""
  return conj_p.bind(x, input_dtype=_dtype(x))


conj_p = standard_primitive(
    _nary_shape_rule("conj"),
    _nary_dtype_rule("conj", _complex_elem + [np.complexfloating], _complex_dtype), "conj")


def _conj_transpose(ct, x, *, input_dtype):
  assert ad.is_undefined_primal(x)
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  if dtypes.issubdtype(input_dtype, np.complexfloating):
    return [conj(ct)]
  return [real(ct)]  # the real input was embedded in C: its cotangent is the real part


ad.linear_jvp(conj_p)
ad.primitive_transposes[conj_p] = _conj_transpose
ad.linear_primitives.add(conj_p)
utils.defvectorized(conj_p)


def _conj_lower(ctx, x, *, input_dtype):
  aval = ctx.avals_in[0]
  if dtypes.issubdtype(aval.dtype, np.complexfloating):
    return [hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))]
  return [hlo.complex(x, _full(0, aval))]


mlir.register_lowering(conj_p, _conj_lower)

# ---- real, imag ----

real_p = naryop("real", _complex, hlo.real, result_dtype=_real_dtype)
real = _wrap(real_p, "Elementwise extract real part: Re(x).")
ad.deflinear2(real_p, lambda ct, x: [complex(ct, np.zeros((), _dtype(ct)))])
utils.defvectorized(real_p)

imag_p = naryop("imag", _complex, hlo.imag, result_dtype=_real_dtype)
imag = _wrap(imag_p, "Elementwise extract imaginary part: Im(x).")
# The transpose of Im (a map C -> R) is t -> -i t, per JAX's convention for the
# cotangents of complex values.
ad.deflinear2(imag_p, lambda ct, x: [complex(np.zeros((), _dtype(ct)), neg(ct))])
utils.defvectorized(imag_p)


# =============================================================================
# Conversions
# =============================================================================

# ---- convert_element_type ----


def convert_element_type(operand, new_dtype):
  """Elementwise cast to `new_dtype`.

  Floats to integers truncate toward zero; complex to real drops the imaginary part
  (with a ComplexWarning, as NumPy); anything to bool is `x != 0`.
  A Python complex scalar has no real value: converting one to a real dtype is a
  TypeError, as in JAX (arrays of complex dtype drop the imaginary part).
  """
  if type(operand) is type(0j) and new_dtype is not None:  # (`complex` is lax.complex here)
    new = np.dtype(dtypes.python_scalar_dtypes.get(new_dtype, new_dtype))
    if new.kind not in "cb":
      raise TypeError(f"convert_element_type: the Python complex scalar {operand!r} cannot "
                      f"be converted to the real dtype {new.name}")
  out = _convert_element_type(operand, new_dtype, weak_type=False)
  if out is operand and isinstance(out, Tracer) and out.to_concrete_value() is not None:
    # JAX binds even a no-op conversion of a concrete tracer (jvp of a value): a new value
    out = convert_element_type_p.bind(operand, new_dtype=_dtype(operand), weak_type=False)
  return out


def _convert_element_type(operand, new_dtype=None, weak_type=False):
  """convert_element_type with control of the result's weak type (for jax.numpy)."""
  if new_dtype is None:
    new_dtype = _dtype(operand)
  if isinstance(new_dtype, type) and new_dtype in (bool, int, float, complex):
    new_dtype = dtypes.python_scalar_dtypes[new_dtype]
  new_dtype = dtypes.canonicalize_dtype(np.dtype(new_dtype))
  if new_dtype == dtypes.float0:
    # float0 holds no data and XLA has no such type: as in JAX, the result is host
    # zeros of the operand's shape (a constant under jit), never a device array.
    return np.zeros(tuple(getattr(operand, "shape", np.shape(operand))), dtypes.float0)
  old_dtype = _dtype(operand)
  if (dtypes.issubdtype(old_dtype, np.complexfloating)
      and not dtypes.issubdtype(new_dtype, np.complexfloating)):
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=3)
  if type(operand) in utils._py_scalars:
    operand = _python_scalar_array(operand, new_dtype)
  elif isinstance(operand, (Tracer, Array)) and \
      (old_dtype, dtypes.is_weakly_typed(operand)) == (new_dtype, bool(weak_type)):
    return operand  # nothing to do: keep the jaxpr free of no-op casts
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _python_scalar_array(x, new_dtype):
  """A Python scalar as an array of its default dtype (or of `new_dtype` when the default
  cannot hold it, e.g. 2 ** 40 with x64 off converted to float32)."""
  default = dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(x)])
  if type(x) is int and np.dtype(default).kind in "iu":
    info = np.iinfo(default)
    if not info.min <= x <= info.max:
      return np.asarray(np.asarray(x).astype(new_dtype))
  return np.asarray(x, default)


def _convert_element_type_dtype_rule(operand, *, new_dtype, weak_type):
  _check_dtypes("convert_element_type", _any, [operand])
  mlir.check_supported_dtype(new_dtype)  # a TypeError for dtypes XLA cannot hold
  return np.dtype(new_dtype)


convert_element_type_p = standard_primitive(
    lambda operand, **_: operand.shape, _convert_element_type_dtype_rule,
    "convert_element_type",
    weak_type_rule=lambda operand, *, new_dtype, weak_type: weak_type)


def _convert_element_type_jvp(tangent, ans, operand, *, new_dtype, weak_type):
  if not dtypes.issubdtype(new_dtype, np.inexact):
    return ad.Zero(_aval(ans).at_least_vspace())  # int/bool results have float0 tangents
  return convert_element_type_p.bind(tangent, new_dtype=new_dtype, weak_type=weak_type)


def _convert_element_type_transpose(ct, operand, *, new_dtype, weak_type):
  assert ad.is_undefined_primal(operand)
  old = operand.aval
  if type(ct) is ad.Zero:
    return [ad.Zero(old.at_least_vspace())]
  if not dtypes.issubdtype(old.dtype, np.inexact):
    return [ad.Zero(old.at_least_vspace())]
  if dtypes.issubdtype(_dtype(ct), np.complexfloating) and \
      not dtypes.issubdtype(old.dtype, np.complexfloating):
    ct = real(ct)  # real -> complex embeds R in C: the transpose takes the real part
  return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


ad.defjvp2(convert_element_type_p, _convert_element_type_jvp)
ad.primitive_transposes[convert_element_type_p] = _convert_element_type_transpose
ad.linear_primitives.add(convert_element_type_p)
utils.defvectorized(convert_element_type_p)


def _convert_element_type_lower(ctx, operand, *, new_dtype, weak_type):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if dtypes.issubdtype(aval_in.dtype, np.complexfloating) and \
      not dtypes.issubdtype(new_dtype, np.complexfloating):
    operand = hlo.real(operand)
    aval_in = aval_in.update(dtype=_real_dtype(aval_in.dtype))
  if aval_out.dtype == np.bool_ and aval_in.dtype != np.bool_:
    # XLA's convert to pred is not `!= 0` for every type; compare instead.
    return [_compare_hlo(operand, _full(0, aval_in), "NE", aval_in.dtype)]
  if aval_in.dtype == aval_out.dtype:
    return [operand]
  return [hlo.convert(mlir.aval_to_ir_type(aval_out), operand)]


mlir.register_lowering(convert_element_type_p, _convert_element_type_lower)

# ---- bitcast_convert_type ----


def bitcast_convert_type(operand, new_dtype):
  """Elementwise bitcast: reinterpret the bits of `operand` as `new_dtype`.

  A narrower `new_dtype` adds a trailing dimension (of the ratio of the widths);
  a wider one consumes the trailing dimension, which must have that size.
  """
  new_dtype = dtypes.canonicalize_dtype(np.dtype(new_dtype))
  if type(operand) in utils._py_scalars:
    operand = _python_scalar_array(operand, new_dtype)
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def _bitcast_convert_type_shape_rule(operand, *, new_dtype):
  old_bits = np.dtype(operand.dtype).itemsize * 8
  new_bits = np.dtype(new_dtype).itemsize * 8
  if old_bits == new_bits:
    return operand.shape
  if old_bits > new_bits:
    return operand.shape + (old_bits // new_bits,)
  dim = operand.shape[-1] if operand.shape else 1
  if dim * old_bits != new_bits:
    raise ValueError(f"bitcast_convert_type: attempting to convert array of shape "
                     f"{operand.shape} from {operand.dtype} of size {old_bits} bits to "
                     f"{np.dtype(new_dtype)} of size {new_bits} bits, but the last dimension "
                     f"{dim} times {old_bits} is not {new_bits}")
  return operand.shape[:-1]


def _bitcast_convert_type_dtype_rule(operand, *, new_dtype):
  _check_dtypes("bitcast_convert_type", _any, [operand])
  old = operand.dtype
  special = lambda d: d == np.bool_ or dtypes.issubdtype(d, np.complexfloating)
  if (special(old) or special(new_dtype)) and old != new_dtype:
    raise TypeError("lax.bitcast_convert_type does not support bool or complex values "
                    f"unless the operand and destination types match. Got operand "
                    f"dtype={old}, new_dtype={np.dtype(new_dtype)}. Consider using the "
                    "arr.view() method instead.")
  mlir.check_supported_dtype(new_dtype)
  return np.dtype(new_dtype)


bitcast_convert_type_p = standard_primitive(
    _bitcast_convert_type_shape_rule, _bitcast_convert_type_dtype_rule,
    "bitcast_convert_type", weak_type_rule=_not_weak)
ad.defjvp_zero(bitcast_convert_type_p)
utils.defvectorized(bitcast_convert_type_p)
mlir.register_lowering(
    bitcast_convert_type_p,
    lambda ctx, x, *, new_dtype: [hlo.bitcast_convert(mlir.aval_to_ir_type(ctx.avals_out[0]),
                                                      x)])

# ---- reduce_precision ----


def reduce_precision(operand, exponent_bits, mantissa_bits):
  """Round `operand` as if to a float format with the given exponent and mantissa bits
  (e.g. 8 and 7 for bfloat16), keeping its dtype."""
  exponent_bits = concrete_or_error(operator.index, exponent_bits,
                                    "exponent_bits argument of lax.reduce_precision")
  mantissa_bits = concrete_or_error(operator.index, mantissa_bits,
                                    "mantissa_bits argument of lax.reduce_precision")
  operand, = utils.promote_python_scalars([operand])
  return reduce_precision_p.bind(operand, exponent_bits=exponent_bits,
                                 mantissa_bits=mantissa_bits)


def _reduce_precision_dtype_rule(operand, *, exponent_bits, mantissa_bits):
  _check_dtypes("reduce_precision", _float, [operand])
  if exponent_bits < 1 or mantissa_bits < 0:
    raise ValueError(f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                     f"got {exponent_bits} and {mantissa_bits}")
  return operand.dtype


reduce_precision_p = standard_primitive(lambda operand, **_: operand.shape,
                                        _reduce_precision_dtype_rule, "reduce_precision")
ad.deflinear(reduce_precision_p, lambda ct, **params: [reduce_precision_p.bind(ct, **params)])
utils.defvectorized(reduce_precision_p)
mlir.register_lowering(
    reduce_precision_p,
    lambda ctx, x, *, exponent_bits, mantissa_bits: [
        hlo.reduce_precision(x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)])


# =============================================================================
# Selection
# =============================================================================

# ---- select_n, select ----


def select_n(which, *cases):
  """Elementwise `cases[which]`: `which` is bool (two cases at most) or an integer
  array, rank 0 or of the cases' common shape."""
  if not cases:
    raise ValueError("select_n called with no cases")
  cases = utils.promote_python_scalars(cases)
  return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
  """Elementwise `on_true if pred else on_false` (pred bool, rank 0 or of the cases' shape)."""
  return select_n(pred, on_false, on_true)


def _select_n_shape_rule(which, *cases):
  if not cases:
    raise TypeError("select_n must have at least one case")
  if any(c.shape != cases[0].shape for c in cases):
    raise TypeError("select cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError("select `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  return cases[0].shape


def _select_n_dtype_rule(which, *cases):
  _check_dtypes("select_n", _any, cases)
  if any(c.dtype != cases[0].dtype for c in cases):
    raise TypeError("lax.select requires arguments to have the same dtypes, got "
                    f"{', '.join(c.dtype.name for c in cases)}. (Tip: jnp.where is a similar "
                    "function that does automatic type promotion on inputs).")
  if which.dtype != np.bool_ and not dtypes.issubdtype(which.dtype, np.integer):
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError("select with boolean `which` cannot have > 2 cases.")
  return cases[0].dtype


select_n_p = standard_primitive(_select_n_shape_rule, _select_n_dtype_rule, "select_n",
                                weak_type_rule=lambda which, *cases: all(c.weak_type
                                                                         for c in cases))


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  case_tangents = tangents[1:]
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in case_tangents):
    return out, ad.Zero(_aval(out).at_least_vspace())
  z = next(t for t in case_tangents if type(t) is not ad.Zero)
  case_tangents = [_zeros(z) if type(t) is ad.Zero else t for t in case_tangents]
  return out, select_n_p.bind(which, *case_tangents)


def _select_n_transpose(ct, which, *cases):
  assert not ad.is_undefined_primal(which)
  if type(ct) is ad.Zero:
    return [None] + [ad.Zero(c.aval) if ad.is_undefined_primal(c) else None for c in cases]
  zeros = _zeros(ct)
  return [None] + [
      select_n_p.bind(which, *[ct if i == j else zeros for j in range(len(cases))])
      if ad.is_undefined_primal(case) else None
      for i, case in enumerate(cases)]


def _select_n_batch(args, dims):
  # A batched rank-0 `which` cannot stay rank 0 once the cases have a batch axis, so
  # everything goes to the front with the full batched shape (except an unbatched
  # rank-0 `which`, which still applies to every element).
  which, *cases = args
  which_dim, *case_dims = dims
  size = next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)
  case_shape = next(tuple(s for i, s in enumerate(np.shape(c)) if i != d) if d is not None
                    else tuple(np.shape(c)) for c, d in zip(cases, case_dims))
  cases = [utils.bdim_at_front(c, d, size) for c, d in zip(cases, case_dims)]
  if which_dim is not None or np.ndim(which):
    which = utils.bdim_at_front(which, which_dim, size)
    if np.ndim(which) == 1 and case_shape:
      from tracejax._src.lax import structural
      which = structural.broadcast_in_dim(which, (size,) + case_shape, (0,))
  return select_n_p.bind(which, *cases), 0


ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch


def _select_n_lower(ctx, which, *cases):
  which_aval = ctx.avals_in[0]
  if len(cases) == 1:
    return [cases[0]]
  if which_aval.dtype == np.bool_:
    return [hlo.select(which, cases[1], cases[0])]

  def tree(offset, cs):
    # A balanced tree of binary selects on `which < offset + mid`.
    if len(cs) == 1:
      return cs[0]
    mid = len(cs) // 2
    pred = _compare_hlo(which, _full(offset + mid, which_aval), "LT", which_aval.dtype)
    return hlo.select(pred, tree(offset, cs[:mid]), tree(offset + mid, cs[mid:]))
  return [tree(0, list(cases))]


mlir.register_lowering(select_n_p, _select_n_lower)

# ---- clamp ----


def clamp(min, x, max):
  """Elementwise clamp: min(max(x, min), max). `min` and `max` may be rank 0."""
  x, min, max = utils.promote_python_scalars([x, min, max])  # Python bounds take x's dtype
  return clamp_p.bind(min, x, max)


def _clamp_shape_rule(min, operand, max):
  if min.shape and min.shape != operand.shape:
    raise TypeError(f"clamp requires min.shape == operand.shape or min.shape == (), got "
                    f"{min.shape} and {operand.shape}.")
  if max.shape and max.shape != operand.shape:
    raise TypeError(f"clamp requires max.shape == operand.shape or max.shape == (), got "
                    f"{max.shape} and {operand.shape}.")
  return operand.shape


def _clamp_dtype_rule(min, operand, max):
  # Complex too, as JAX's (XLA orders it lexicographically); its JVP, through gt/lt,
  # rejects complex as JAX's does.
  _check_dtypes("clamp", _ordered + [np.complexfloating], [min, operand, max])
  _check_same_dtypes("clamp", [min, operand, max])
  return operand.dtype


clamp_p = standard_primitive(_clamp_shape_rule, _clamp_dtype_rule, "clamp")
ad.defjvp(clamp_p,
          lambda g, min, x, max: select(and_(gt(min, x), lt(min, max)),
                                        _maybe_broadcast(np.shape(x), g), _zeros(x)),
          lambda g, min, x, max: select(and_(gt(x, min), lt(x, max)), g, _zeros(x)),
          lambda g, min, x, max: select(lt(max, x), _maybe_broadcast(np.shape(x), g),
                                        _zeros(x)))


def _clamp_batch(args, dims):
  # The operand carries the full shape; a batched bound gets the operand's full
  # batched shape (a rank-0 bound may not be batched alone).
  min, x, max = args
  min_dim, x_dim, max_dim = dims
  size = next(np.shape(v)[d] for v, d in zip(args, dims) if d is not None)
  x_shape = tuple(s for i, s in enumerate(np.shape(x)) if i != x_dim) if x_dim is not None \
      else tuple(np.shape(x))
  x = utils.bdim_at_front(x, x_dim, size)
  bounds = []
  for b, d in ((min, min_dim), (max, max_dim)):
    if d is not None or np.ndim(b):
      b = utils.bdim_at_front(b, d, size)
      if np.ndim(b) == 1 and x_shape:
        from tracejax._src.lax import structural
        b = structural.broadcast_in_dim(b, (size,) + x_shape, (0,))
    bounds.append(b)
  return clamp_p.bind(bounds[0], x, bounds[1]), 0


batching.primitive_batchers[clamp_p] = _clamp_batch
mlir.register_lowering(clamp_p, lambda ctx, lo, x, hi: [hlo.clamp(*broadcast_operands(
    ctx, lo, x, hi))])


# add_any (the sum of tangents) and the concrete zeros of autodiff: ad_zeros.py (its
# rules need this module's helpers; imported last so that every name here exists).
from tracejax._src.lax import ad_zeros as _ad_zeros  # noqa: E402,F401
