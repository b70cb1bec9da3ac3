"""`cond` and `switch`: choose one of several jaxprs by an index, with every rule.

`cond_p(index, *operands, branches=(jaxpr_0, ...))`: each branch jaxpr takes all
operands (closed-over values first). A boolean predicate selects branch 1 (true)
or 0 (false), so a two-branch cond prints as the seeds' `false_jaxpr`/`true_jaxpr`.
"""
import functools

import numpy as np

from tracejax._src import dispatch, dtypes, traceback_util, tree_util
from tracejax._src.config import config
from tracejax._src.control_flow import common
from tracejax._src.core import ir, pp
from tracejax._src.core.trace import Primitive, Tracer, is_concrete, set_current_trace
from tracejax._src.interpreters import ad, batching, lowering, staging
from tracejax._src.interpreters.lowering import hlo, ir as mlir_ir


@traceback_util.api_boundary
def cond(pred, *args, **kwargs):
  """Conditionally apply `true_fun` or `false_fun`.

  Both API eras work: `cond(pred, true_fun, false_fun, *operands)` and the 2020
  five-argument form `cond(pred, true_operand, true_fun, false_operand, false_fun)`.
  """
  if "operand" in kwargs:
    args = args + (kwargs.pop("operand"),)
  if kwargs:
    raise TypeError(f"cond() got unexpected keyword arguments {sorted(kwargs)}")
  if len(args) == 4 and callable(args[1]) and callable(args[3]) and not (
      callable(args[0]) and callable(args[2])):
    t_op, t_fun, f_op, f_fun = args
    branches = [lambda t, f: f_fun(f), lambda t, f: t_fun(t)]
    operands = (t_op, f_op)
  elif len(args) >= 2 and callable(args[0]) and callable(args[1]):
    t_fun, f_fun, operands = args[0], args[1], args[2:]
    branches = [f_fun, t_fun]
  else:
    raise TypeError("cond expects cond(pred, true_fun, false_fun, *operands) or "
                    "cond(pred, true_operand, true_fun, false_operand, false_fun)")
  pred_aval = common.aval_of(pred)
  if pred_aval.shape:
    raise TypeError(f"Pred must be a scalar, got {pred} of shape {pred_aval.shape}.")
  if not (pred_aval.dtype == np.bool_ or dtypes.issubdtype(pred_aval.dtype, np.number)):
    raise TypeError(f"Pred type must be either boolean or number, got {pred_aval.dtype}.")
  if config.jax_disable_jit and is_concrete(pred):
    return branches[int(bool(pred))](*operands)
  from tracejax._src.lax import elementwise
  if pred_aval.dtype != np.bool_:
    pred = elementwise.ne(pred, np.zeros((), pred_aval.dtype))
  index = elementwise.convert_element_type(pred, np.int32)
  return _switch(index, branches, operands, "true_fun and false_fun output")


@traceback_util.api_boundary
def switch(index, branches, *operands, **kwargs):
  """Apply `branches[index](*operands)`; the index is clamped into range.

  Args:
    index: a scalar integer (traced or not).
    branches: a non-empty sequence of functions of the operands, all returning the same
      types.
    *operands: the operands (the 2020 single `operand=` keyword works too).

  >>> switch(1, [lambda x: x, lambda x: -x], 2.)
  DeviceArray(-2., dtype=float32)
  """
  if "operand" in kwargs:
    operands = operands + (kwargs.pop("operand"),)
  if kwargs:
    raise TypeError(f"switch() got unexpected keyword arguments {sorted(kwargs)}")
  branches = list(branches)
  if not branches:
    raise ValueError("switch requires at least one branch")
  idx_aval = common.aval_of(index)
  if idx_aval.shape or not dtypes.issubdtype(idx_aval.dtype, np.integer):
    raise TypeError(f"Branch index must be a scalar integer, got {idx_aval.str_short()}.")
  from tracejax._src.lax import elementwise
  if config.jax_disable_jit and is_concrete(index):
    return branches[int(np.clip(int(index), 0, len(branches) - 1))](*operands)
  index = elementwise.convert_element_type(index, np.int32)
  index = elementwise.clamp(np.int32(0), index, np.int32(len(branches) - 1))
  return _switch(index, branches, operands, "branches")


def _switch(index, branches, operands, what):
  leaves, in_tree = tree_util.tree_flatten(tuple(operands))
  in_avals = [common.aval_of(x) for x in leaves]
  traced = [common.trace_fun(b, in_tree, in_avals) for b in branches]
  out_tree = traced[0][2]
  # cond's branches are [false_fun, true_fun]: its messages name true_fun's output first.
  order = traced[::-1] if len(traced) == 2 and what.startswith("true_fun") else traced
  for jaxpr, _, tree in order[1:]:
    common.check_tree_and_avals(what, order[0][2], order[0][0].out_avals,
                                tree, jaxpr.out_avals)
  from tracejax._src.core import trace as trace_mod
  if trace_mod.sharding_rule is not None:   # sharding in types: the branches' must agree
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    is_cond = order is not traced
    sharding_explicit.check_branches(
        "cond" if is_cond else "switch",
        ["true_fun", "false_fun"] if is_cond else
        ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))],
        branches[::-1] if is_cond else branches, [t[0].out_avals for t in order])
  jaxprs, consts = common.join_consts([(j, c) for j, c, _ in traced])
  # An output every branch returns unchanged from the same traced operand is that
  # operand, not a cond output (as JAX forwards it): derivatives then skip the cond,
  # and their types are the operand's (not those of a transposed identity branch).
  args = list(consts) + leaves
  fwd = _forwarded_operands(jaxprs, args)
  if any(k is not None for k in fwd):
    jaxprs = [ir.Jaxpr(j.constvars, j.invars,
                       [v for v, k in zip(j.outvars, fwd) if k is None], j.eqns)
              for j in jaxprs]
  if all(k is not None for k in fwd) and not any(map(staging.jaxpr_has_effects, jaxprs)):
    outs = iter(())   # every output forwarded, nothing else to run: no cond at all
  else:
    outs = iter(cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs)))
  outs = [next(outs) if k is None else args[k] for k in fwd]
  return tree_util.tree_unflatten(out_tree, outs)


def _forwarded_operands(jaxprs, args):
  """Per output: the index of the traced operand every branch returns as it, or None."""
  from tracejax._src.runtime.array import Array
  fwd = []
  for outs in zip(*(j.outvars for j in jaxprs)):
    srcs = {next((i for i, v in enumerate(j.invars) if v is o), None)
            for j, o in zip(jaxprs, outs)}
    k = srcs.pop() if len(srcs) == 1 else None
    # (a host operand stays a cond output: the result is an Array either way)
    fwd.append(k if k is not None and isinstance(args[k], (Tracer, Array)) else None)
  return fwd


cond_p = Primitive("cond")
cond_p.multiple_results = True
cond_p.def_impl(functools.partial(dispatch.apply_primitive, cond_p))


def _cond_abstract_eval(index, *avals, branches):
  if index.shape or index.dtype != np.int32:
    raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
  # As JAX 0.10.2: the outputs have branch 0's types, weak types included (for `cond`,
  # branch 0 is false_fun), whichever branch runs.
  return list(branches[0].out_avals)


cond_p.def_abstract_eval(_cond_abstract_eval)


def _cond_lowering(ctx, index, *args, branches):
  out_types = [lowering.aval_to_ir_type(a) for a in ctx.avals_out]
  case = hlo.CaseOp(out_types, index, len(branches))
  for i, br in enumerate(branches):
    block = case.regions[i].blocks.append()
    with mlir_ir.InsertionPoint(block):
      outs = lowering.jaxpr_subcomp(ctx.module_context, br, [], args)
      hlo.return_(outs)
  return list(case.results)


lowering.register_lowering(cond_p, _cond_lowering)


def _cond_jvp(primals, tangents, *, branches):
  index, ops = primals[0], primals[1:]
  nz = [type(t) is not ad.Zero for t in tangents[1:]]
  nout = len(branches[0].outvars)
  out_nz = [False] * nout
  for br in branches:
    _, _, onz = ad.jvp_jaxpr(br, nz, [False] * nout)
    out_nz = [a or b for a, b in zip(out_nz, onz)]
  new = [ad.jvp_jaxpr(br, nz, out_nz)[:2] for br in branches]
  jaxprs, consts = common.join_consts([common.close_jaxpr(j, c) for j, c in new])
  nz_tangents = [t for t in tangents[1:] if type(t) is not ad.Zero]
  outs = cond_p.bind(index, *consts, *ops, *nz_tangents, branches=tuple(jaxprs))
  p_out, t_nz = outs[:nout], iter(outs[nout:])
  t_out = [next(t_nz) if z else ad.Zero(a.at_least_vspace())
           for z, a in zip(out_nz, branches[0].out_avals)]
  return p_out, t_out


ad.primitive_jvps[cond_p] = _cond_jvp


def _cond_partial_eval(trace, args, params):
  index, ops = args[0], args[1:]
  branches = params["branches"]
  if trace.is_unknown(index):
    return trace.tangent_trace.process_primitive(cond_p, args, params)
  unk = [trace.is_unknown(x) for x in ops]
  nout = len(branches[0].outvars)
  out_unk = [False] * nout
  for br in branches:
    out_unk = [a or b for a, b in
               zip(out_unk, ad.partial_eval_jaxpr(br, unk, [False] * nout)[3])]
  splits = [ad.partial_eval_jaxpr(br, unk, out_unk) for br in branches]
  res_avals = [[v.aval for v in kj.outvars[len(kj.outvars) - nres:]]
               for kj, _, _, _, nres in splits]
  all_res = [a for ra in res_avals for a in ra]
  known_ops = [x for x, u in zip(ops, unk) if not u]
  known_avals = [common.aval_of(x) for x in known_ops]
  known_branches = []
  for i, (kj, kconsts, _, _, nres) in enumerate(splits):
    before = sum(len(r) for r in res_avals[:i])
    after = sum(len(r) for r in res_avals[i + 1:])

    def known_fun(*xs, kj=kj, kconsts=kconsts, nres=nres, before=before, after=after):
      outs = ir.eval_jaxpr(kj, kconsts, *xs)
      k_out, res = outs[:len(outs) - nres], outs[len(outs) - nres:]
      zeros = lambda avals: [ad.zeros_like_aval(a) for a in avals]
      return list(k_out) + zeros(all_res[:before]) + list(res) + \
          zeros(all_res[len(all_res) - after:])
    known_branches.append(common.trace_flat(known_fun, known_avals))
  kjaxprs, kconsts = common.join_consts(known_branches)
  with set_current_trace(trace.parent):
    known_outs = cond_p.bind(index, *kconsts, *known_ops, branches=tuple(kjaxprs))
  n_known = nout - sum(out_unk)
  k_out, res = known_outs[:n_known], known_outs[n_known:]
  unk_ops = [x for x, u in zip(ops, unk) if u]
  unk_avals = [common.aval_of(x) for x in unk_ops]
  unk_branches = []
  for i, (_, _, uj, _, nres) in enumerate(splits):
    before = sum(len(r) for r in res_avals[:i])

    def unk_fun(*xs, uj=uj, nres=nres, before=before):
      res_all, u = xs[:len(all_res)], xs[len(all_res):]
      return ir.eval_jaxpr(uj, [], *res_all[before:before + nres], *u)
    unk_branches.append(common.trace_flat(unk_fun, all_res + unk_avals))
  ujaxprs, uconsts = common.join_consts(unk_branches)
  u_out = trace.tangent_trace.process_primitive(
      cond_p, [index, *uconsts, *res, *unk_ops], {"branches": tuple(ujaxprs)})
  ki, ui = iter(k_out), iter(u_out)
  return [next(ui) if u else next(ki) for u in out_unk]


ad.partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_transpose(cts, index, *ops, branches):
  lin = [ad.is_undefined_primal(x) for x in ops]
  out_avals = branches[0].out_avals
  cts = [ad.zeros_like_aval(a) if type(c) is ad.Zero else c for c, a in zip(cts, out_avals)]
  # The branches are transposed at the cotangents' own types (JAX 0.10.2): a strong
  # cotangent of a weak output stays strong through the cond.
  ct_avals = [a if getattr(a, "weak_type", None) in (None, w) else a.update(weak_type=w)
              for a, w in ((a, getattr(common.aval_of(c), "weak_type", None))
                           for c, a in zip(cts, out_avals))]
  tb = [ad.transpose_jaxpr(br, lin, ct_avals=ct_avals) for br in branches]
  jaxprs, consts = common.join_consts([common.close_jaxpr(j, c) for j, c in tb])
  res = [x for x in ops if not ad.is_undefined_primal(x)]
  outs = iter(cond_p.bind(index, *consts, *res, *cts, branches=tuple(jaxprs)))
  return [None] + [next(outs) if l else None for l in lin]


ad.primitive_transposes[cond_p] = _cond_transpose


def _cond_batch(args, dims, *, branches):
  from tracejax._src.lax import elementwise, structural
  from tracejax._src.lax import utils as lax_utils
  index, idim = args[0], dims[0]
  ops, odims = args[1:], dims[1:]
  size = next((x.shape if isinstance(x, Tracer) else np.shape(x))[d]
              for x, d in zip(args, dims) if d is not None)
  if idim is not None:
    # A batched predicate: run every branch, then select elementwise.
    ops = [lax_utils.bdim_at_front(x, d, size) if d != 0 else x for x, d in zip(ops, odims)]
    index = lax_utils.moveaxis(index, idim, 0)
    from tracejax._src.lax.misc import stop_gradient

    def only_taken(k, x):
      # As JAX: branch k sees the elements that do not take it through stop_gradient, so
      # reverse mode gets no 0 * NaN from an untaken branch (cos at -inf; fuzzer seed 204).
      shape = x.shape if isinstance(x, Tracer) else np.shape(x)
      taken = structural.broadcast_in_dim(
          elementwise.eq(index, np.array(k, index.dtype)), shape, (0,))
      return elementwise.select(taken, x, stop_gradient(x))

    per_branch = [batching.vmap_flat(lambda *xs, br=br: ir.eval_jaxpr(br, [], *xs), size,
                                     [only_taken(k, x) for x in ops], [0] * len(ops),
                                     lambda n: [0] * n) for k, br in enumerate(branches)]
    outs = []
    for k in range(len(per_branch[0])):
      cases = [b[k] for b in per_branch]
      shape = np.shape(cases[0]) if not isinstance(cases[0], Tracer) else cases[0].shape
      which = structural.broadcast_in_dim(index, shape, (0,))
      if len(cases) == 2:
        which = elementwise.convert_element_type(which, np.bool_)
      outs.append(elementwise.select_n(which, *cases))
    return outs, [0] * len(outs)
  nout = len(branches[0].outvars)
  out_b = [False] * nout
  for br in branches:
    _, _, od = batching.batch_jaxpr(br, size, odims)
    out_b = [a or d is not None for a, d in zip(out_b, od)]
  wanted = [0 if b else None for b in out_b]
  new = [batching.batch_jaxpr(br, size, odims, out_dims_wanted=wanted)[:2] for br in branches]
  jaxprs, consts = common.join_consts([common.close_jaxpr(j, c) for j, c in new])
  outs = cond_p.bind(index, *consts, *ops, branches=tuple(jaxprs))
  return outs, wanted


batching.primitive_batchers[cond_p] = _cond_batch


def _cond_pp(eqn, namer):
  branches = eqn.params["branches"]
  if len(branches) == 2:
    params = {"false_jaxpr": branches[0], "true_jaxpr": branches[1],
              "linear": tuple(False for _ in eqn.invars[1:])}
  else:
    params = {"branches": tuple(branches)}
  return pp.pp_eqn(eqn.replace(params=params), namer, use_rules=False)


pp.pp_rules[cond_p] = _cond_pp


# =============================================================================
# platform_dependent: a switch on the platform the program is lowered for
# =============================================================================

_PLATFORM_ALIASES = {"cuda": "gpu", "rocm": "gpu"}


def platform_dependent(*args, default=None, **per_platform):
  """`per_platform[p](*args)` for the platform `p` the program is compiled for ("cpu",
  "cuda", "rocm", "tpu"), else `default(*args)`.

  The choice is made when the program is lowered, not by a Python test at trace time:
  the branches are all traced (they must return the same types) and the lowering
  keeps the one of its platform, as `jax.lax.platform_dependent` does.

  Args:
    *args: the operands passed to the chosen function.
    default: the function for platforms not named (None: such platforms are an error).
    **per_platform: a function per platform name.

  >>> platform_dependent(1., cpu=lambda x: x + 1, default=lambda x: x - 1)
  DeviceArray(2., dtype=float32)
  """
  if not per_platform and default is None:
    raise TypeError("platform_dependent needs at least one per-platform function or a "
                    "default.")
  names = sorted(per_platform)
  branches = [per_platform[n] for n in names]
  platforms = tuple((n,) for n in names)
  if default is not None:
    branches.append(default)
  index = platform_index_p.bind(platforms=platforms, has_default=default is not None)
  return switch(index, branches, *args)


platform_index_p = Primitive("platform_index")
platform_index_p.def_impl(functools.partial(dispatch.apply_primitive, platform_index_p))


def _platform_index_abstract_eval(*, platforms, has_default):
  from tracejax._src.core.avals import ShapedArray
  return ShapedArray((), np.dtype(np.int32))


platform_index_p.def_abstract_eval(_platform_index_abstract_eval)
ad.defjvp_zero(platform_index_p)
batching.primitive_batchers[platform_index_p] = (
    lambda args, dims, **params: (platform_index_p.bind(**params), None))


def _platform_index_lowering(ctx, *, platforms, has_default):
  here = ctx.module_context.platform
  for i, names in enumerate(platforms):
    if any(_PLATFORM_ALIASES.get(n, n) == here for n in names):
      return [lowering.ir_constant(np.int32(i))]
  if has_default:
    return [lowering.ir_constant(np.int32(len(platforms)))]
  raise NotImplementedError(
      f"platform_dependent has no function for the platform '{here}' (it has "
      f"{', '.join(n for ns in platforms for n in ns)}) and no default.")


lowering.register_lowering(platform_index_p, _platform_index_lowering)
