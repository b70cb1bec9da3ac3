"""Elementwise primitives: arithmetic, comparison, bitwise, math functions, casts.

N-ary elementwise primitives are strict about dtypes (all operands share one)
and about shapes, except that rank-0 operands broadcast (as in the 2020 lax,
so `x * 3.0` stages as `mul x 3.0`).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import utils
from tracejax._src.lax.utils import standard_primitive


# ---- shared rules for elementwise primitives ----

def _nary_shape_rule(name):
  def rule(*avals, **_):
    shapes = {a.shape for a in avals if a.shape}
    if len(shapes) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(a.shape) for a in avals)}.")
    return shapes.pop() if shapes else ()
  return rule


def _nary_dtype_rule(name, accepted, result_dtype=None):
  def rule(*avals, **_):
    utils.check_dtypes(name, accepted, *avals)
    utils.check_same_dtypes(name, *avals)
    return result_dtype if result_dtype is not None else avals[0].dtype
  return rule


def broadcast_operands(ctx, *args):
  """Broadcast rank-0 operands of an elementwise lowering to the output shape."""
  out_shape = ctx.avals_out[0].shape
  res = []
  for x, a in zip(args, ctx.avals_in):
    if a.shape != out_shape:
      t = ir.RankedTensorType.get(out_shape, mlir.dtype_to_ir_type(a.dtype))
      x = hlo.broadcast_in_dim(t, x, ir.DenseI64ArrayAttr.get([]))
    res.append(x)
  return res


def naryop(name, accepted, hlo_op, result_dtype=None):
  """An elementwise primitive lowered to a single StableHLO/CHLO op."""
  prim = standard_primitive(_nary_shape_rule(name), _nary_dtype_rule(name, accepted, result_dtype),
                            name)
  if hlo_op is not None:
    mlir.register_lowering(prim, lambda ctx, *xs: [hlo_op(*broadcast_operands(ctx, *xs))])
  return prim


def _wrap(prim, doc):
  def fn(*args):
    return prim.bind(*utils.promote_python_scalars(args))
  fn.__name__ = prim.name
  fn.__doc__ = doc
  return fn


# ---- arithmetic ----

add_p = naryop("add", utils._num, hlo.add)
add = _wrap(add_p, "Elementwise addition: x + y.")

sub_p = naryop("sub", utils._num, hlo.subtract)
sub = _wrap(sub_p, "Elementwise subtraction: x - y.")

mul_p = naryop("mul", utils._num, hlo.multiply)
mul = _wrap(mul_p, "Elementwise multiplication: x * y.")

# ---- transcendental ----

sin_p = naryop("sin", utils._inexact, hlo.sine)
sin = _wrap(sin_p, "Elementwise sine: sin(x).")

_ = (np, dtypes, ad, batching)
