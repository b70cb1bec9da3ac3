"""`checkpoint` / `remat`: rematerialization, a higher-order primitive with every rule.

`checkpoint(f)` computes the same values as `f`; what changes is reverse mode. Normally
partial evaluation (the linearize half of `grad`) saves every intermediate the backward
pass reads (the *residuals*). Under `checkpoint`, only the known outputs are computed
in the forward pass; the backward pass gets one `checkpoint` equation that re-runs the
primal computation from the function's inputs, then the linear part. A `policy` may
name intermediates that are cheap to keep (e.g. matmul results): those alone are
saved as residuals, the rest is recomputed.

`checkpoint_p(*consts, *args, jaxpr, prevent_cse, differentiated, policy)`:
`jaxpr` takes the closed-over values first (like `cond` and `xla_call`).
`differentiated` is True on the equations that partial evaluation and transposition
create (they contain the recomputation); only those get the optimization barrier
that `prevent_cse` asks for when lowered.

The equation's name: 2020 JAX staged this as the call primitive `remat_call`; from
the 2022 rewrite (JEP 11830) until 0.9 `make_jaxpr` printed `checkpoint[ jaxpr=...
prevent_cse=... differentiated=... policy=... ]`, the name of the public function
that most published jaxpr dumps show (JAX 0.10 renamed its primitive `remat2`, a
name that says nothing to a reader). We print `checkpoint` with the modern params.
"""
import functools
import types

import numpy as np

from tracejax._src import dtypes, traceback_util, tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Primitive, Tracer, current_trace, set_current_trace
from tracejax._src.interpreters import ad, batching, lowering, staging
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.runtime.array import Array, from_numpy


# =============================================================================
# Policies: `policy(prim, *in_avals, **params) -> bool`, True = "save this output"
# =============================================================================

def everything_saveable(*_, **__):
  """Save every intermediate: checkpointing then changes nothing (the normal VJP)."""
  return True


def nothing_saveable(*_, **__):
  """Save nothing but the function's inputs: recompute everything (the default)."""
  return False


def _dot_primitives():
  from tracejax._src.lax import convolution, dot
  return dot.dot_general_p, convolution.conv_general_dilated_p


def dots_saveable(prim, *_, **__):
  """Save the results of matrix products and convolutions, recompute the rest.

  Example: `jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)`."""
  return prim in _dot_primitives()


checkpoint_dots = dots_saveable  # the older spelling


def dots_with_no_batch_dims_saveable(prim, *_, **params):
  """Save the results of `dot_general`s without batch dimensions (plain matmuls)."""
  if prim is not _dot_primitives()[0]:
    return False
  (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
  return not lhs_batch and not rhs_batch


checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def _check_names(names, fn):
  for n in names:
    if not isinstance(n, str):
      raise TypeError(f"{fn}: names must be strings, got {n!r}")
  return frozenset(names)


def save_only_these_names(*names):
  """Save only the values tagged by `checkpoint_name(x, name)` with one of `names`.

  Example: `policy=save_only_these_names("hidden")` keeps `checkpoint_name(h, "hidden")`."""
  names = _check_names(names, "save_only_these_names")

  def policy(prim, *_, **params):
    return prim is name_p and params["name"] in names
  policy.__name__ = f"save_only_these_names{tuple(sorted(names))}"
  return policy


def save_any_names_but_these(*names):
  """Save every value tagged by `checkpoint_name` except those tagged with `names`.

  Example: `policy=save_any_names_but_these("big")`."""
  names = _check_names(names, "save_any_names_but_these")

  def policy(prim, *_, **params):
    return prim is name_p and params["name"] not in names
  policy.__name__ = f"save_any_names_but_these{tuple(sorted(names))}"
  return policy


def save_anything_except_these_names(*names):
  """Save every intermediate except the values tagged with one of `names`.

  Example: `policy=save_anything_except_these_names("big")`."""
  names = _check_names(names, "save_anything_except_these_names")

  def policy(prim, *_, **params):
    return not (prim is name_p and params["name"] in names)
  policy.__name__ = f"save_anything_except_these_names{tuple(sorted(names))}"
  return policy


def save_from_both_policies(policy_1, policy_2):
  """Save what either policy saves.

  Example: `save_from_both_policies(dots_saveable, save_only_these_names("h"))`."""
  for i, p in enumerate((policy_1, policy_2), 1):
    if not callable(p):
      raise TypeError(f"save_from_both_policies: policy_{i} must be callable, got {p!r}")

  def policy(prim, *args, **params):
    return bool(policy_1(prim, *args, **params)) or bool(policy_2(prim, *args, **params))
  policy.__name__ = "save_from_both_policies"
  return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=checkpoint_dots,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=checkpoint_dots_with_no_batch_dims,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
    save_from_both_policies=save_from_both_policies,
)


# =============================================================================
# `name`: an identity that tags a value for the policies
# =============================================================================

name_p = Primitive("name")


def checkpoint_name(x, name):
  """Tag every leaf of pytree `x` with `name`, for `save_only_these_names` & co.

  The tag is an identity (`name[name=...]` in the jaxpr); every transformation sees
  through it. Example::

    def layer(w, x):
      h = checkpoint_name(jnp.dot(w, x), "pre")   # saved under save_only_these_names("pre")
      return jnp.tanh(h)
  """
  if not isinstance(name, str):
    raise TypeError(f"checkpoint_name: name must be a string, got {name!r}")
  return tree_util.tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
ad.deflinear(name_p, lambda ct, *, name: [ct])
batching.primitive_batchers[name_p] = (
    lambda args, dims, *, name: (name_p.bind(args[0], name=name), dims[0]))
lowering.register_lowering(name_p, lambda ctx, x, *, name: [x])


# =============================================================================
# The primitive
# =============================================================================

checkpoint_p = Primitive("checkpoint")
checkpoint_p.multiple_results = True


def _checkpoint_impl(*args, jaxpr, prevent_cse, differentiated, policy):
  # Eagerly, op by op (as JAX does): nothing is saved across calls anyway, and a
  # per-jaxpr executable cache would grow with every call (each call traces afresh).
  outs = ir.eval_jaxpr(jaxpr, [], *args)
  # An input passed straight through, or a literal output, comes back as an Array too.
  # (A user-visible Array with the var's full aval: internal dispatch buffers are
  # internal arguments and carry only shape and dtype.)
  # float0 outputs (tangents of integers) hold no data and stay host values: XLA
  # has no float0 type.
  return [x if isinstance(x, (Array, Tracer)) or not isinstance(v.aval.dtype, np.dtype)
          else np.zeros(np.shape(x), dtypes.float0) if v.aval.dtype == dtypes.float0
          else from_numpy(np.asarray(x, v.aval.dtype), weak_type=v.aval.weak_type)
          for x, v in zip(outs, jaxpr.outvars)]


checkpoint_p.def_impl(_checkpoint_impl)


def _checkpoint_abstract_eval(*avals, jaxpr, prevent_cse, differentiated, policy):
  if len(avals) != len(jaxpr.invars):
    raise TypeError(f"checkpoint: the jaxpr takes {len(jaxpr.invars)} operands, "
                    f"got {len(avals)}")
  return [v.aval for v in jaxpr.outvars]


checkpoint_p.def_abstract_eval(_checkpoint_abstract_eval)


def _closed(jaxpr, consts):
  """(jaxpr without constvars, its consts as leading operands)."""
  cj, consts = staging.closed_call_jaxpr(jaxpr, consts)
  return cj, list(consts)


# ---- JVP: the JVP of a checkpoint is a checkpoint of the JVP ----

def _checkpoint_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  params = dict(jaxpr=jaxpr, prevent_cse=prevent_cse, differentiated=differentiated,
                policy=policy)
  if isinstance(current_trace(), ad.PartialEvalTrace):
    return _checkpoint_linearize(current_trace(), primals, tangents, params)
  nz = [type(t) is not ad.Zero for t in tangents]
  nout = len(jaxpr.outvars)
  jj, consts, out_nz = ad.jvp_jaxpr(jaxpr, nz, [False] * nout)
  cj, consts = _closed(jj, consts)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  outs = checkpoint_p.bind(*consts, *primals, *nz_tangents, **dict(params, jaxpr=cj))
  return _split_jvp_outs(jaxpr, outs, out_nz)


def _split_jvp_outs(jaxpr, outs, out_nz):
  nout = len(jaxpr.outvars)
  p_out, t_nz = outs[:nout], iter(outs[nout:])
  t_out = [next(t_nz) if z else ad.Zero(v.aval.at_least_vspace())
           for z, v in zip(out_nz, jaxpr.outvars)]
  return p_out, t_out


ad.primitive_jvps[checkpoint_p] = _checkpoint_jvp


def _checkpoint_linearize(trace, primals, tangents, params):
  """JVP under a partial-evaluation trace (`grad`, `vjp`, `linearize`): split the body's
  JVP by knownness in one pass. Same result as binding the checkpoint of the JVP and
  partially evaluating that, except that rules which only exist while linearizing
  (`custom_vjp`) see the partial-evaluation trace they need."""
  jaxpr = params["jaxpr"]
  nz = [type(t) is not ad.Zero for t in tangents]
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  in_avals = [v.aval for v in jaxpr.invars]
  out_nz = []

  def jvp_fun(*args):
    ps, ts = args[:len(in_avals)], iter(args[len(in_avals):])
    ts = [next(ts) if z else ad.Zero(a.at_least_vspace()) for a, z in zip(in_avals, nz)]
    p_out, t_out = ad.jvp_of_jaxpr(jaxpr, ps, ts)
    out_nz[:] = [type(t) is not ad.Zero for t in t_out]
    return list(p_out) + [t for t in t_out if type(t) is not ad.Zero]

  args = list(primals) + nz_tangents
  unk = [trace.is_unknown(x) for x in args]
  t_avals = [a.at_least_vspace() for a, z in zip(in_avals, nz) if z]
  kj, kconsts, uj, out_unk = _partial_eval_fun(jvp_fun, in_avals + t_avals, unk)
  outs = _remat_split(trace, kj, kconsts, uj, out_unk, args, unk, params)
  return _split_jvp_outs(jaxpr, outs, out_nz)


def _partial_eval_fun(fun, in_avals, in_unknowns):
  """`ad.partial_eval_jaxpr` for a flat function rather than a jaxpr: returns
  (known jaxpr of known inputs -> (known outputs, residuals), its consts,
  unknown jaxpr of (residuals, unknown inputs) -> unknown outputs, out_unknowns)."""
  known_avals = [a for a, u in zip(in_avals, in_unknowns) if not u]
  unknown_avals = [a for a, u in zip(in_avals, in_unknowns) if u]
  result = {}

  def known_fun(*known_args):
    parent = current_trace()
    t_trace = staging.DynamicJaxprTrace(parent)
    pe = ad.PartialEvalTrace(parent, t_trace)
    ki, ui = iter(known_args), iter([t_trace.new_arg(a) for a in unknown_avals])
    args = [next(ui) if u else next(ki) for u in in_unknowns]
    with set_current_trace(pe):
      outs = fun(*args)
    out_unk = [pe.is_unknown(o) for o in outs]
    unk_jaxpr, res = t_trace.to_jaxpr([o for o, u in zip(outs, out_unk) if u])
    result["unknown"] = staging.closed_call_jaxpr(unk_jaxpr, [])[0]
    result["out_unknowns"] = out_unk
    return [o for o, u in zip(outs, out_unk) if not u] + list(res)

  kj, kconsts = staging.trace_to_jaxpr(known_fun, known_avals)
  return kj, kconsts, result["unknown"], result["out_unknowns"]


# ---- partial evaluation: known outputs now, the rest recomputed later ----

def _saveable(policy, eqn):
  if policy is None or any(type(v) is ir.DropVar for v in eqn.outvars):
    return False
  return bool(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))


def _recompute_jaxpr(kj, kconsts, n_known_out, uj, saved_vars):
  """The jaxpr of the backward half, over (consts, known args, saved values, unknown
  args): it re-runs the known jaxpr `kj` (reading `saved_vars` from its inputs instead
  of recomputing them) to rebuild the residuals, then runs the unknown jaxpr `uj`."""
  saved_set = set(saved_vars)
  n_known_in = len(kj.invars)
  n_unknown_in = len(uj.invars) - (len(kj.outvars) - n_known_out)

  def recompute(*args):
    known_args = args[:n_known_in]
    saved = args[n_known_in:n_known_in + len(saved_vars)]
    unknown_args = args[n_known_in + len(saved_vars):]
    env = dict(zip(kj.constvars, kconsts))
    env.update(zip(kj.invars, known_args))
    env.update(zip(saved_vars, saved))
    env[ir.unitvar] = ir.unit

    def read(v):
      return ir._literal_value(v) if type(v) is ir.Literal else env[v]
    for eqn in kj.eqns:
      if eqn.outvars and all(v in saved_set for v in eqn.outvars):
        continue  # an input now
      ans = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
      for v, x in zip(eqn.outvars, ans if eqn.primitive.multiple_results else [ans]):
        if type(v) is not ir.DropVar:
          env[v] = x
    res = [read(v) for v in kj.outvars[n_known_out:]]
    return ir.eval_jaxpr(uj, [], *res, *unknown_args)

  in_avals = ([v.aval for v in kj.invars] + [v.aval for v in saved_vars] +
              [v.aval for v in uj.invars[len(uj.invars) - n_unknown_in:]])
  rj, rconsts = staging.trace_to_jaxpr(recompute, in_avals)
  return _closed(rj, rconsts)


def _remat_split(trace, kj, kconsts, uj, out_unk, args, unk, params):
  """Given the known/unknown split (`kj`, `uj`) of a checkpoint's body at `args`: run
  the known outputs (and what the policy saves) now, in `trace.parent`; stage one
  `checkpoint` equation that recomputes the rest, in `trace.tangent_trace`."""
  n_known_out = len(out_unk) - sum(out_unk)
  known_args = [x for x, u in zip(args, unk) if not u]
  unknown_args = [x for x, u in zip(args, unk) if u]
  # Candidates for saving: every output of a known equation the policy accepts.
  saved_vars = [v for e in kj.eqns if _saveable(params["policy"], e) for v in e.outvars]
  rj, rconsts = _recompute_jaxpr(kj, kconsts, n_known_out, uj, saved_vars)
  # What the backward half really reads decides what the forward half must keep.
  rj, used = staging.dce_jaxpr(rj, prune_invars=True)
  nrc, nk, ns = len(rconsts), len(known_args), len(saved_vars)
  used_c, used_k, used_s, used_u = (used[:nrc], used[nrc:nrc + nk],
                                    used[nrc + nk:nrc + nk + ns], used[nrc + nk + ns:])
  keep_saved = [v for v, u in zip(saved_vars, used_s) if u]
  # Forward: the known outputs and the saved values, inline in the known computation.
  fj = ir.Jaxpr(kj.constvars, kj.invars, kj.outvars[:n_known_out] + keep_saved, kj.eqns)
  fj, _ = staging.dce_jaxpr(fj)
  with set_current_trace(trace.parent):
    fwd = ir.eval_jaxpr(fj, kconsts, *known_args)
  known_outs, saved_vals = fwd[:n_known_out], fwd[n_known_out:]
  unknown_outs = []
  if any(out_unk):
    operands = ([c for c, u in zip(rconsts, used_c) if u] +
                [x for x, u in zip(known_args, used_k) if u] + list(saved_vals) +
                [x for x, u in zip(unknown_args, used_u) if u])
    unknown_outs = trace.tangent_trace.process_primitive(
        checkpoint_p, operands, dict(params, jaxpr=rj, differentiated=True))
  ko, uo = iter(known_outs), iter(unknown_outs)
  return [next(uo) if u else next(ko) for u in out_unk]


def _checkpoint_partial_eval(trace, args, params):
  """Partial evaluation of a checkpoint equation met as such (its JVP was taken
  earlier, e.g. inside a `scan` body, or 2020's `pe.trace_to_jaxpr`)."""
  jaxpr = params["jaxpr"]
  unk = [trace.is_unknown(x) for x in args]
  kj, kconsts, uj, out_unk, _ = ad.partial_eval_jaxpr(jaxpr, unk, [False] * len(jaxpr.outvars))
  return _remat_split(trace, kj, kconsts, uj, out_unk, args, unk, params)


ad.partial_eval_rules[checkpoint_p] = _checkpoint_partial_eval


# ---- transpose: a checkpoint of the transposed body (which recomputes what it reads) ----

def _checkpoint_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
  lin = [ad.is_undefined_primal(x) for x in args]
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval) if l else None for x, l in zip(args, lin)]
  cts = [ad.zeros_like_aval(v.aval) if type(c) is ad.Zero else c
         for c, v in zip(cts, jaxpr.outvars)]
  tj, consts = ad.transpose_jaxpr(jaxpr, lin)
  cj, consts = _closed(tj, consts)
  known = [x for x in args if not ad.is_undefined_primal(x)]
  outs = checkpoint_p.bind(*consts, *known, *cts, jaxpr=cj, prevent_cse=prevent_cse,
                           differentiated=True, policy=policy)
  outs = iter(ad.typed_as_traced(outs, [v.aval for v in cj.outvars]))
  return [next(outs) if l else None for l in lin]


ad.primitive_transposes[checkpoint_p] = _checkpoint_transpose


# ---- batching: a checkpoint of the batched body ----

def _checkpoint_batch(trace, args, dims, *, jaxpr, **params):
  new, consts, out_dims = batching.batch_jaxpr(jaxpr, trace.axis_size, dims, trace.axis_name)
  cj, consts = _closed(new, consts)
  outs = checkpoint_p.bind(*consts, *args, jaxpr=cj, **params)
  return outs, out_dims


batching.primitive_batchers[checkpoint_p] = _checkpoint_batch
batching._axis_rules.add(checkpoint_p)  # the rule needs the axis size and name


# ---- lowering: inline, behind an optimization barrier when recomputing ----

def _checkpoint_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, policy):
  args = list(args)
  if prevent_cse and differentiated and args:
    # The recomputation reads its inputs through a barrier, so XLA's CSE cannot see
    # that it repeats forward-pass work and merge the two (which would keep the
    # residuals alive after all). This is JAX's lowering; XLA:CPU (jaxlib 0.10.2) was
    # seen to merge the matmuls anyway, for JAX's program and ours alike.
    args = list(hlo.OptimizationBarrierOp(args).results)
  return lowering.jaxpr_subcomp(ctx.module_context, jaxpr, [], args)


lowering.register_lowering(checkpoint_p, _checkpoint_lowering)


# ---- dead code elimination: drop unused outputs and the work behind them ----

def _checkpoint_dce(used_outputs, eqn):
  jaxpr, used_inputs = staging.dce_jaxpr(eqn.params["jaxpr"], used_outputs,
                                         prune_invars=True)
  if not any(used_outputs):
    return used_inputs, None
  new = eqn.replace(invars=[v for v, u in zip(eqn.invars, used_inputs) if u],
                    outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
                    params=dict(eqn.params, jaxpr=jaxpr))
  return used_inputs, new


staging.dce_rules[checkpoint_p] = _checkpoint_dce


# =============================================================================
# The public function
# =============================================================================

def _aval_of_arg(x, i):
  if isinstance(x, Tracer):
    return avals_mod.raise_to_shaped(x.aval)
  try:
    return avals_mod.raise_to_shaped(avals_mod.get_aval(x))
  except TypeError:
    raise TypeError(f"checkpoint: argument leaf {i} of type {type(x).__name__} is not a "
                    "valid JAX type (an array or a scalar); mark non-array positional "
                    "arguments with static_argnums") from None


def _normalize_static_argnums(static_argnums):
  if isinstance(static_argnums, bool):
    raise TypeError("checkpoint: static_argnums must be an int or a tuple of ints, got "
                    f"{static_argnums!r}")
  if isinstance(static_argnums, int):
    return (static_argnums,)
  try:
    nums = tuple(static_argnums)
  except TypeError:
    nums = None
  if nums is None or not all(isinstance(d, int) and not isinstance(d, bool) for d in nums):
    raise TypeError("checkpoint: static_argnums must be an int or a tuple of ints, got "
                    f"{static_argnums!r}")
  return nums


def checkpoint(fun=None, concrete=False, *, prevent_cse=True, policy=None,
               static_argnums=()):
  """Make `fun` recompute its intermediates in reverse mode instead of saving them.

  Args:
    fun: the function (pytrees of arrays in and out). Omitted, `checkpoint(**options)`
      returns a decorator.
    concrete: the 2020 option that let Python control flow read argument values. It
      only accepts False: with omnistaging every argument is abstract (use
      `static_argnums` for Python values that steer control flow).
    prevent_cse: if True (default), the recomputation is lowered behind an XLA
      optimization barrier so the compiler cannot merge it with the forward pass.
      Under `scan`, which already prevents that, False is cheaper.
    policy: `policy(prim, *avals, **params) -> bool`, which intermediates may be saved
      (see `checkpoint_policies`); None saves only the inputs.
    static_argnums: positions of positional arguments passed as Python values (not
      traced), e.g. flags that choose a branch.

  Returns:
    A function computing the same values as `fun`, whose `grad`/`vjp`/`linearize`
    stores less and recomputes more.

  Example::

    @jax.checkpoint
    def layer(w, x):
      return jnp.tanh(jnp.dot(w, x))

    jax.grad(lambda w, x: layer(w, layer(w, x)).sum())(w, x)
  """
  if concrete:
    raise ValueError(
        "checkpoint: concrete=True is not supported: with omnistaging the function is "
        "always traced with abstract values (JAX deprecated and then removed this "
        "option). Pass the Python values that control flow depends on through "
        "static_argnums instead, e.g. jax.checkpoint(f, static_argnums=(1,)).")
  if policy is not None and not callable(policy):
    raise TypeError(f"checkpoint: policy must be None or callable, got {policy!r}")
  if not isinstance(prevent_cse, (bool, np.bool_)):
    raise TypeError(f"checkpoint: prevent_cse must be a bool, got {prevent_cse!r}")
  prevent_cse = bool(prevent_cse)
  static_argnums = _normalize_static_argnums(static_argnums)
  if fun is None:
    return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                             static_argnums=static_argnums)
  if not callable(fun):
    raise TypeError(f"checkpoint: expected a callable as fun, got {fun!r}")

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def fun_remat(*args, **kwargs):
    nargs = len(args)
    for d in static_argnums:
      if not -nargs <= d < nargs:
        raise ValueError(f"checkpoint: static_argnums {static_argnums} out of range for "
                         f"a call with {nargs} positional arguments")
    static = {d % nargs for d in static_argnums}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static)

    def dyn_fun(dyn, kw):
      it = iter(dyn)
      full = [args[i] if i in static else next(it) for i in range(nargs)]
      return fun(*full, **kw)

    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    in_avals = [_aval_of_arg(x, i) for i, x in enumerate(leaves)]
    store = []

    def flat(*xs):
      dyn, kw = tree_util.tree_unflatten(in_tree, xs)
      out_leaves, out_tree = tree_util.tree_flatten(dyn_fun(dyn, kw))
      store.append(out_tree)
      return out_leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat, in_avals)
    cj, consts = _closed(jaxpr, consts)
    outs = checkpoint_p.bind(*consts, *leaves, jaxpr=cj, prevent_cse=prevent_cse,
                             differentiated=False, policy=policy)
    return tree_util.tree_unflatten(store[0], outs)

  return fun_remat


remat = checkpoint  # the 2020 name


# =============================================================================
# Inspecting what reverse mode saves
# =============================================================================

def saved_residuals(f, *args, **kwargs):
  """The values reverse mode of `f` at `args` keeps for the backward pass.

  Returns a list of `(aval, description)`. Example: for `f = jax.checkpoint(g)`,
  `saved_residuals(f, x)` lists only `x` ("from the argument [0]"), where
  `saved_residuals(g, x)` also lists intermediates ("output of sin", ...).
  """
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  avals = [_aval_of_arg(x, i) for i, x in enumerate(leaves)]
  paths = _leaf_paths(args, kwargs)

  def flat(*xs):
    a, kw = tree_util.tree_unflatten(in_tree, xs)
    return tree_util.tree_leaves(f(*a, **kw))

  trace = staging.DynamicJaxprTrace(current_trace())
  xs = [trace.new_arg(a) for a in avals]
  with set_current_trace(trace):
    _, _, consts, _, _ = ad.linearize_flat(flat, xs)
  pos = {id(x): i for i, x in enumerate(xs)}
  producer = {v: e for e in trace.eqns for v in e.outvars}
  out = []
  for c in consts:
    if isinstance(c, Tracer):
      aval = avals_mod.raise_to_shaped(c.aval)
    else:
      aval = avals_mod.raise_to_shaped(avals_mod.get_aval(c))
    if id(c) in pos:
      what = f"from the argument {paths[pos[id(c)]]}"
    elif isinstance(c, Tracer) and c._trace is trace:
      eqn = producer.get(trace.tracer_to_var[id(c)])
      if eqn is not None and eqn.primitive is name_p:
        what = f"named '{eqn.params['name']}'"
      else:
        what = f"output of {eqn.primitive.name}" if eqn is not None else "an intermediate"
    else:
      what = "a constant"
    out.append((aval, what))
  return out


def _leaf_paths(args, kwargs):
  """A readable position per argument leaf: `[0]`, `[1][2]`, `['key']` (kwargs)."""
  paths = []

  def walk(x, path):
    if isinstance(x, (tuple, list)):
      for i, y in enumerate(x):
        walk(y, f"{path}[{i}]")
    elif isinstance(x, dict):
      for k in sorted(x):
        walk(x[k], f"{path}[{k!r}]")
    else:
      n = len(tree_util.tree_leaves(x))
      paths.extend([path] * n)
  walk(list(args), "")
  walk(dict(kwargs), "")
  return paths


def print_saved_residuals(f, *args, **kwargs):
  """Print `saved_residuals(f, *args, **kwargs)`, one residual per line.

  Example: `print_saved_residuals(jax.checkpoint(g), x)` prints `f32[3] from the
  argument [0]`."""
  for aval, what in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short()} {what}")
