"""Forward and reverse mode: JVP rules, symbolic zeros, transposition.

The rule tables live here; the primitives' families fill them. The JVP and
linearize traces and the backward pass are the subject of the autodiff issue.
"""
from tracejax._src.core.avals import ShapedArray

primitive_jvps = {}        # prim -> rule(primals, tangents, **params) -> (primal_out, tangent_out)
primitive_transposes = {}  # prim -> rule(ct, *args, **params) -> cotangents per operand
linear_primitives = set()  # primitives that are linear in all of their operands


class Zero:
  """A symbolic zero tangent or cotangent of the given aval."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval})"


zero = Zero(ShapedArray((), "float32"))  # the 2020 singleton spelling


class UndefinedPrimal:
  """Stands for a linear input during transposition."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x):
  return type(x) is UndefinedPrimal


# ---- add_any: the sum of two tangents (impl and lowering registered by lax) ----

from tracejax._src.core.trace import Primitive  # noqa: E402

add_any_p = Primitive("add_any")


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_any_p.bind(x, y)


def zeros_like_aval(aval):
  """A concrete zero array of `aval` (the maker is registered by lax)."""
  return _zeros_maker[0](aval)


_zeros_maker = [None]


def instantiate_zeros(t):
  return zeros_like_aval(t.aval) if type(t) is Zero else t


def zero_tangent_of(value_aval):
  return Zero(value_aval.at_least_vspace())


# ---- rule factories used by the primitives' families ----

def _out_aval(x):
  from tracejax._src.core.avals import get_aval, raise_to_shaped
  return raise_to_shaped(get_aval(x))


def defjvp(prim, *jvprules):
  """JVP from one rule per operand: `rule(g, *primals, **params) -> tangent` (None: not
  differentiable in that operand)."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(_out_aval(out).at_least_vspace())
    for rule, t in zip(jvprules, tangents):
      if rule is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, rule(t, *primals, **params))
    return out, t_out
  primitive_jvps[prim] = jvp


def defjvp2(prim, *jvprules):
  """Like `defjvp`, with rules that also see the output: `rule(g, ans, *primals)`."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(_out_aval(out).at_least_vspace())
    for rule, t in zip(jvprules, tangents):
      if rule is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, rule(t, out, *primals, **params))
    return out, t_out
  primitive_jvps[prim] = jvp


def defjvp_zero(prim):
  """The output does not depend differentiably on the inputs (comparisons, integer ops)."""
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero(_out_aval(o).at_least_vspace()) for o in out]
    return out, Zero(_out_aval(out).at_least_vspace())
  primitive_jvps[prim] = jvp


def deflinear(prim, transpose_rule):
  """`prim` is linear in all operands; `transpose_rule(ct, **params) -> [ct per operand]`."""
  linear_jvp(prim)
  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, **params)
  primitive_transposes[prim] = transpose
  linear_primitives.add(prim)


def deflinear2(prim, transpose_rule):
  """Like `deflinear`, with `transpose_rule(ct, *args, **params)` seeing the operands."""
  linear_jvp(prim)
  def transpose(ct, *args, **params):
    if type(ct) is Zero:
      return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
    return transpose_rule(ct, *args, **params)
  primitive_transposes[prim] = transpose
  linear_primitives.add(prim)


def linear_jvp(prim):
  def jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      if prim.multiple_results:
        return out, [Zero(_out_aval(o).at_least_vspace()) for o in out]
      return out, Zero(_out_aval(out).at_least_vspace())
    return out, prim.bind(*map(instantiate_zeros, tangents), **params)
  primitive_jvps[prim] = jvp


def defbilinear(prim, lhs_rule, rhs_rule):
  """`prim(x, y)` linear in each operand (mul, dot_general). `lhs_rule(ct, x, y, **params)`
  gives x's cotangent (x an UndefinedPrimal), `rhs_rule` y's."""
  def jvp(primals, tangents, **params):
    x, y = primals
    tx, ty = tangents
    out = prim.bind(x, y, **params)
    t = Zero(_out_aval(out).at_least_vspace())
    if type(tx) is not Zero:
      t = add_tangents(t, prim.bind(tx, y, **params))
    if type(ty) is not Zero:
      t = add_tangents(t, prim.bind(x, ty, **params))
    return out, t
  primitive_jvps[prim] = jvp

  def transpose(ct, x, y, **params):
    if type(ct) is Zero:
      return [Zero(x.aval) if is_undefined_primal(x) else None,
              Zero(y.aval) if is_undefined_primal(y) else None]
    cx = lhs_rule(ct, x, y, **params) if is_undefined_primal(x) else None
    cy = rhs_rule(ct, x, y, **params) if is_undefined_primal(y) else None
    return [cx, cy]
  primitive_transposes[prim] = transpose
