"""`custom_linear_solve` and `custom_root`: solves with implicitly defined derivatives.

`linear_solve_p(*consts, *b, jaxprs=(matvec, vecmat, solve, transpose_solve), ...)`
evaluates `solve` but differentiates through the linear system instead of the
solver's iterations: the JVP solves again with a new right-hand side, and the
transpose swaps `solve` for `transpose_solve` (and `matvec` for its transpose).
"""
import numpy as np

from tracejax._src import traceback_util, tree_util
from tracejax._src.control_flow import common
from tracejax._src.core import ir
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching, lowering


def _trace_unary(fun, tree, avals):
  """Trace `fun(pytree) -> pytree` at flat `avals`; (jaxpr with consts first, consts)."""
  jaxpr, consts, out_tree = common.trace_fun(lambda x: fun(x), tree_util.tree_structure(
      (tree_util.tree_unflatten(tree, [0] * len(avals)),)), avals)
  return jaxpr, consts, out_tree


@traceback_util.api_boundary
def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
  """`x = solve(matvec, b)` whose derivatives come from the linear system `matvec(x) = b`.

  `transpose_solve(vecmat, b)` solves the transposed system (needed for reverse mode
  unless `symmetric`)."""
  b_leaves, b_tree = tree_util.tree_flatten(b)
  b_avals = [common.aval_of(x) for x in b_leaves]
  mv_j, mv_c, _ = _trace_unary(matvec, b_tree, b_avals)

  def solve_fn(x):
    out = solve(matvec, x)
    return out[0] if has_aux else out
  aux_store = []

  def solve_with_aux(x):
    out = solve(matvec, x)
    if has_aux:
      aux_store.append(out[1])
      return out[0]
    return out
  s_j, s_c, s_tree = _trace_unary(solve_with_aux, b_tree, b_avals)
  if symmetric:
    vm_j, vm_c = mv_j, mv_c
    ts_j, ts_c = s_j, s_c
  else:
    vecmat = _transpose_fn(matvec, b_tree, b_avals)
    vm_j, vm_c, _ = _trace_unary(vecmat, b_tree, b_avals)
    if transpose_solve is None:
      ts_j, ts_c = None, []
    else:
      ts_j, ts_c, _ = _trace_unary(lambda x: transpose_solve(vecmat, x), b_tree, b_avals)
  consts = list(mv_c) + list(vm_c) + list(s_c) + list(ts_c)
  lengths = (len(mv_c), len(vm_c), len(s_c), len(ts_c))
  outs = linear_solve_p.bind(*consts, *b_leaves, jaxprs=(mv_j, vm_j, s_j, ts_j),
                             const_lengths=lengths)
  x = tree_util.tree_unflatten(b_tree, outs)
  if has_aux:
    return x, aux_store[0] if aux_store else None
  return x


def _transpose_fn(matvec, b_tree, b_avals):
  """The transpose of linear `matvec`, by reverse mode."""
  from tracejax._src import api

  def vecmat(ct):
    zeros = tree_util.tree_unflatten(b_tree, [np.zeros(a.shape, a.dtype) for a in b_avals])
    _, f_vjp = api.vjp(matvec, zeros)
    return f_vjp(ct)[0]
  return vecmat


def _split_consts(args, lengths):
  out, i = [], 0
  for n in lengths:
    out.append(list(args[i:i + n]))
    i += n
  return out, list(args[i:])


linear_solve_p = Primitive("custom_linear_solve")
linear_solve_p.multiple_results = True


def _linear_solve_impl(*args, jaxprs, const_lengths):
  (_, _, sc, _), b = _split_consts(args, const_lengths)
  return ir.eval_jaxpr(jaxprs[2], [], *sc, *b)


linear_solve_p.def_impl(_linear_solve_impl)
linear_solve_p.def_abstract_eval(
    lambda *avals, jaxprs, const_lengths: list(avals[sum(const_lengths):]))
lowering.register_lowering(linear_solve_p,
                           lowering.lower_fun(_linear_solve_impl, multiple_results=True))


def _linear_solve_jvp(primals, tangents, *, jaxprs, const_lengths):
  (mc, _, _, _), b = _split_consts(primals, const_lengths)
  (mct, _, _, _), bt = _split_consts(tangents, const_lengths)
  x = linear_solve_p.bind(*primals, jaxprs=jaxprs, const_lengths=const_lengths)
  # d(A x) = dA x + A dx = db  =>  dx = solve(db - dA x)
  if all(type(t) is ad.Zero for t in bt) and all(type(t) is ad.Zero for t in mct):
    return x, [ad.Zero(common.aval_of(v).at_least_vspace()) for v in x]
  rhs = [ad.instantiate_zeros(t) for t in bt]
  if any(type(t) is not ad.Zero for t in mct):
    from tracejax._src.lax import elementwise
    _, dAx = ad.jvp_of_jaxpr(jaxprs[0], list(mc) + list(x), list(mct) + [
        ad.Zero(common.aval_of(v).at_least_vspace()) for v in x])
    rhs = [elementwise.sub(r, ad.instantiate_zeros(d)) for r, d in zip(rhs, dAx)]
  consts = primals[:sum(const_lengths)]
  xt = linear_solve_p.bind(*consts, *rhs, jaxprs=jaxprs, const_lengths=const_lengths)
  return x, xt


ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp


def _linear_solve_transpose(cts, *args, jaxprs, const_lengths):
  (mc, vc, sc, tc), b = _split_consts(args, const_lengths)
  if jaxprs[3] is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve")
  cts = [ad.instantiate_zeros(c) for c in cts]
  mv, vm, s, ts = jaxprs
  ct_b = linear_solve_p.bind(*vc, *mc, *tc, *sc, *cts, jaxprs=(vm, mv, ts, s),
                             const_lengths=(len(vc), len(mc), len(tc), len(sc)))
  return [None] * sum(const_lengths) + list(ct_b)


ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose


def _linear_solve_batch(args, dims, *, jaxprs, const_lengths):
  size = next((x.shape if isinstance(x, Tracer) else np.shape(x))[d]
              for x, d in zip(args, dims) if d is not None)
  cdims, bdims = _split_consts(dims, const_lengths)
  consts, b = _split_consts(args, const_lengths)
  # Everything batched at axis 0 on the vector side: b, x and the matvec outputs.
  b = [batching.matchaxis(x, d, 0, size) for x, d in zip(b, bdims)]
  new_jaxprs, new_consts = [], []
  for j, cs, cd in zip(jaxprs, consts, cdims):
    if j is None:
      new_jaxprs.append(None)
      new_consts.append([])
      continue
    bj, bc, _ = batching.batch_jaxpr(j, size, list(cd) + [0] * len(b),
                                     out_dims_wanted=[0] * len(j.outvars))
    bj, bc = common.close_jaxpr(bj, bc)
    new_jaxprs.append(bj)
    new_consts.append(list(bc) + list(cs))
  lengths = tuple(len(c) for c in new_consts)
  outs = linear_solve_p.bind(*[c for cs in new_consts for c in cs], *b,
                             jaxprs=tuple(new_jaxprs), const_lengths=lengths)
  return outs, [0] * len(outs)


batching.primitive_batchers[linear_solve_p] = _linear_solve_batch


@traceback_util.api_boundary
def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
  """Find `x` with `f(x) = 0` by `solve(f, initial_guess)`, differentiated implicitly:
  `tangent_solve(g, y)` solves the linearized system `g(x) = y`."""
  from tracejax._src import api
  from tracejax._src.custom_derivatives import custom_jvp
  g_leaves, g_tree = tree_util.tree_flatten(initial_guess)
  g_avals = [common.aval_of(x) for x in g_leaves]
  # Closure conversion: the values `f` closes over become explicit, differentiable args.
  f_j, f_consts, _ = _trace_unary(f, g_tree, g_avals)
  n = len(f_consts)

  def f_explicit(consts, x):
    out = ir.eval_jaxpr(f_j, [], *consts, *tree_util.tree_leaves(x))
    return tree_util.tree_unflatten(g_tree, out)

  aux_store = []

  @custom_jvp
  def _root(consts, guess):
    out = solve(lambda x: f_explicit(consts, x), guess)
    if has_aux:
      out, aux = out
      aux_store.append(aux)
    return out

  @_root.defjvp
  def _root_jvp(primals, tangents):
    consts, guess = primals
    consts_dot, _ = tangents
    x = _root(consts, guess)
    # f(p, x(p)) = 0  =>  df/dx . dx = -df/dp . dp
    _, dfdp = api.jvp(lambda c: f_explicit(c, x), (consts,), (consts_dot,))
    rhs = tree_util.tree_map(lambda v: -v, dfdp)
    matvec = lambda v: api.jvp(lambda y: f_explicit(consts, y), (x,), (v,))[1]
    dx = custom_linear_solve(matvec, rhs, solve=lambda mv, b: tangent_solve(mv, b),
                             transpose_solve=lambda vm, b: tangent_solve(vm, b))
    return x, dx

  out = _root(list(f_consts), initial_guess)
  if has_aux:
    return out, aux_store[-1] if aux_store else None
  return out


