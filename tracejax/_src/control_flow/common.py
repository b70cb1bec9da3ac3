"""Shared helpers of the structured control-flow primitives: tracing user functions
into jaxprs whose closed-over values become explicit leading operands."""
import numpy as np

from tracejax._src import tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import staging


def aval_of(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer)
                                   else avals_mod.get_aval(x))


def trace_fun(fun, in_tree, in_avals):
  """Trace `fun` (pytree args per `in_tree`) at `in_avals`.

  Returns (jaxpr with consts as leading invars, consts, out_tree)."""
  store = []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat, list(in_avals))
  cj, consts = staging.closed_call_jaxpr(jaxpr, consts)
  return cj, list(consts), store[0]


def close_jaxpr(jaxpr, consts):
  """Like `closed_call_jaxpr`: constvars of `jaxpr` become leading invars."""
  return staging.closed_call_jaxpr(jaxpr, consts)


def trace_flat(f, in_avals):
  """Trace flat `f` at `in_avals`; returns (jaxpr with consts as leading invars, consts)."""
  jaxpr, consts = staging.trace_to_jaxpr(f, list(in_avals))
  return staging.closed_call_jaxpr(jaxpr, consts)


def join_consts(jaxprs_and_consts):
  """Give several jaxprs one shared list of leading const operands.

  Each input is (jaxpr whose first len(consts) invars are its consts, consts);
  each output jaxpr takes all consts of all jaxprs, then its own other inputs."""
  all_consts = [c for _, cs in jaxprs_and_consts for c in cs]
  out = []
  offset = 0
  for jaxpr, cs in jaxprs_and_consts:
    n = len(cs)
    own, rest = jaxpr.invars[:n], jaxpr.invars[n:]
    before = [ir.Var(aval_of(c)) for c in all_consts[:offset]]
    after = [ir.Var(aval_of(c)) for c in all_consts[offset + n:]]
    out.append(ir.Jaxpr([], before + list(own) + after + list(rest), jaxpr.outvars,
                        jaxpr.eqns))
    offset += n
  return out, all_consts


def permute_invars(jaxpr, order):
  return ir.Jaxpr(jaxpr.constvars, [jaxpr.invars[i] for i in order], jaxpr.outvars,
                  jaxpr.eqns)


def permute_outvars(jaxpr, order):
  return ir.Jaxpr(jaxpr.constvars, jaxpr.invars, [jaxpr.outvars[i] for i in order],
                  jaxpr.eqns)


def add_unused_invars(jaxpr, avals, where):
  """`jaxpr` with fresh unused invars of `avals` inserted at position `where`."""
  new = [ir.Var(a) for a in avals]
  inv = list(jaxpr.invars)
  return ir.Jaxpr(jaxpr.constvars, inv[:where] + new + inv[where:], jaxpr.outvars, jaxpr.eqns)


def same_types(a, b):
  return a.shape == b.shape and a.dtype == b.dtype


def avals_str(avals):
  return "[" + ", ".join(a.str_short() for a in avals) + "]"


def avals_list_repr(avals):
  """`[ShapedArray(float32[]), ...]`: how the 2020 messages print a list of output types."""
  return "[" + ", ".join(map(repr, avals)) + "]"


def check_tree_and_avals(what, tree1, avals1, tree2, avals2):
  """TypeError with the 2020 (JAX 0.1.62) texts unless the two outputs have one pytree
  structure and matching shapes and dtypes (weak types may differ)."""
  if tree1 != tree2:
    raise TypeError(f"{what} must have same type structure, got {tree1} and {tree2}.")
  if not all(same_types(a, b) for a, b in zip(avals1, avals2)):
    raise TypeError(f"{what} must have identical types, got\n"
                    f"{tree_util.tree_unflatten(tree1, list(avals1))!r}\nand\n"
                    f"{tree_util.tree_unflatten(tree2, list(avals2))!r}.")


_ = np
