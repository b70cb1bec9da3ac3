"""Printing jaxprs in the seeds' grammar.

    { lambda consts ; invars.
      let outs = primitive[ param=value ... ] ins
      in outs }

Variables are named a, b, ..., z, ba, bb, ... in order of appearance; each
(sub-)jaxpr is named afresh. Parameters are sorted and printed one per line;
sub-jaxprs nest with their indentation. `pp_rules` lets a primitive print its
equation its own way.
"""
import numpy as np

from tracejax._src.core import ir

pp_rules = {}


class _Namer:
  def __init__(self):
    self.names = {}

  def __call__(self, v):
    if type(v) is ir.Literal:
      return repr(v)
    if type(v) is ir.DropVar:
      return "_"
    if v is ir.unitvar:
      return "*"
    name = self.names.get(v)
    if name is None:
      name = self.names[v] = _letters(len(self.names))
    return name


def _letters(n):
  """0 -> a, 25 -> z, 26 -> ba: base 26 with the digits a..z."""
  s = ""
  while True:
    n, r = divmod(n, 26)
    s = chr(ord("a") + r) + s
    if n == 0:
      return s


def _indent(text, n):
  pad = " " * n
  return text.replace("\n", "\n" + pad)


def pp_param(value):
  if isinstance(value, (ir.Jaxpr, ir.ClosedJaxpr)):
    return pp_jaxpr(value.jaxpr if isinstance(value, ir.ClosedJaxpr) else value)
  if isinstance(value, np.dtype):
    return value.name
  if isinstance(value, type) and issubclass(value, np.generic):
    return np.dtype(value).name
  if isinstance(value, tuple) and value and all(isinstance(v, (ir.Jaxpr, ir.ClosedJaxpr))
                                                for v in value):
    return "(\n" + ",\n".join(pp_param(v) for v in value) + "\n)"
  if callable(value) and hasattr(value, "__name__") and not isinstance(value, type):
    return value.__name__
  return str(value)


def pp_eqn(eqn, namer=None, use_rules=True):
  namer = namer or _Namer()
  rule = pp_rules.get(eqn.primitive) if use_rules else None
  if rule is not None:
    return rule(eqn, namer)
  ins = " ".join(namer(v) for v in eqn.invars)
  outs = " ".join(namer(v) for v in eqn.outvars)
  # An equation with no outputs (a side effect such as debug_callback) has no "=".
  head = f"{outs} = {eqn.primitive.name}" if outs else eqn.primitive.name
  if eqn.params:
    items = sorted(eqn.params.items())
    col = len(head) + 2
    lines = [f"{k}={_indent(pp_param(v), len(k) + 1)}" for k, v in items]
    head += "[ " + _indent("\n".join(lines), col) + " ]"
  return f"{head} {ins}" if ins else head


def pp_jaxpr(jaxpr):
  """The text of `jaxpr` in the seeds' grammar."""
  namer = _Namer()
  consts = " ".join(namer(v) for v in jaxpr.constvars)
  args = " ".join(namer(v) for v in jaxpr.invars)
  head = f"{{ lambda {consts + ' ' if consts else ''}; {args}."
  eqns = [pp_eqn(e, namer) for e in jaxpr.eqns]
  outs = [namer(v) for v in jaxpr.outvars]
  out = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ("," if not outs else "") + ")"
  if not eqns:
    return f"{head}\n  let \n  in {out} }}"
  body = "\n      ".join(_indent(e, 6) for e in eqns)
  return f"{head}\n  let {body}\n  in {out} }}"
