"""The rules of autodiff's own primitive `add_any` (the sum of two tangents: its
abstract eval, transpose, broadcasting and lowering) and the concrete zeros AD makes
for a symbolic zero (`ad._zeros_maker`). They live with lax because they use its
elementwise helpers; elementwise.py imports this module at its end."""
import functools

import numpy as np

from tracejax._src import dispatch
from tracejax._src import dtypes
from tracejax._src.core.avals import ShapedArray
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.lax import utils
from tracejax._src.lax.elementwise import (
    _check_same_dtypes, _nary_shape_rule, _unbroadcast, broadcast_operands,
    convert_element_type_p)

__all__ = []  # rules only: nothing to export


def _add_any_dtype_rule(x, y):
  _check_same_dtypes("add_any", [x, y])
  return x.dtype


def _add_any_impl(x, y):
  # Run eagerly, JAX adds two tangents with the usual rule: the sum is weak only when
  # both are. The abstract eval (traced code) keeps the first operand's type, so a weak
  # first operand is swapped behind a strong one (the sum is the same).
  if dtypes.is_weakly_typed(x) and not dtypes.is_weakly_typed(y):
    x, y = y, x
  return dispatch.apply_primitive(ad.add_any_p, x, y)


ad.add_any_p.def_impl(_add_any_impl)
# Traced (under jit, and inside JAX's jitted jnp functions), JAX's sum of two tangents
# has the type of its first operand: the cotangent accumulated first decides whether a
# weak input's cotangent stays weak (vjp of `x / jnp.median(x)` at a weak x, jitted).
ad.add_any_p.def_abstract_eval(
    lambda x, y: ShapedArray(_nary_shape_rule("add_any")(x, y), _add_any_dtype_rule(x, y),
                             x.weak_type))
ad.deflinear2(ad.add_any_p, lambda ct, x, y: [
    _unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
    _unbroadcast(y.aval, ct) if ad.is_undefined_primal(y) else None])
utils.defbroadcasting(ad.add_any_p)


def _add_any_lower(ctx, x, y):
  x, y = broadcast_operands(ctx, x, y)
  dt = ctx.avals_out[0].dtype
  if dt == np.bool_ or dt == dtypes.float0:  # float0 zeros are lowered as bools
    return [hlo.or_(x, y)]
  return [hlo.add(x, y)]


mlir.register_lowering(ad.add_any_p, _add_any_lower)


def _zeros_like_aval(aval):
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)  # float0 arrays hold no data
  # An Array (or a staged value), not a NumPy constant: a broadcast scalar.
  zero = convert_element_type_p.bind(np.zeros((), aval.dtype), new_dtype=aval.dtype,
                                     weak_type=aval.weak_type)
  if not aval.shape:
    return zero
  from tracejax._src.lax import structural
  return structural.broadcast_in_dim(zero, tuple(aval.shape), ())


ad._zeros_maker[0] = _zeros_like_aval


# ---- weak_retype: a linearized jit's tangent input typed as its primal ----
# JAX keeps a (non-inline) jit a call when it linearizes it, and the call's tangent
# inputs are typed as their primals: a strong tangent of a weak primal (one a rule made
# strong, as x**2's) is weak inside the call. The call is inlined here, so the staged
# tangent is retyped; JAX's transposed call hands the cotangent back as computed, so the
# transpose is the identity (unlike convert_element_type's, which restores the type).

def _weak_retype_impl(x, *, weak_type):
  return convert_element_type_p.bind(x, new_dtype=x.dtype, weak_type=weak_type)


ad.weak_retype_p.def_impl(_weak_retype_impl)
ad.weak_retype_p.def_abstract_eval(
    lambda x, *, weak_type: ShapedArray(x.shape, x.dtype, weak_type))


def _weak_retype_transpose(ct, x, *, weak_type):
  del weak_type
  return [ad.Zero(x.aval) if type(ct) is ad.Zero else ct]


ad.primitive_transposes[ad.weak_retype_p] = _weak_retype_transpose
ad.linear_primitives.add(ad.weak_retype_p)
ad.linear_jvp(ad.weak_retype_p)
batching.primitive_batchers[ad.weak_retype_p] = \
    lambda args, dims, **params: (ad.weak_retype_p.bind(*args, **params), dims[0])
mlir.register_lowering(ad.weak_retype_p, lambda ctx, x, **params: [x])
