"""`custom_jvp` and `custom_vjp`: user-defined differentiation rules.

A call binds `custom_jvp_call_p` / `custom_vjp_call_p` with the (flattened)
function and rules as parameters, so each trace handles it by its rule table:
evaluation calls the function, the JVP trace calls the user's rule, vmap
batches function and rule, and staging traces the function once into a jaxpr
(keeping the rules), so `jit` inside `grad` still uses them. Reverse mode of
`custom_vjp` runs `fwd` on the known primals and stages a linear
`custom_lin` equation whose transpose is the user's `bwd`.
"""
import functools

import numpy as np

from tracejax._src import dtypes, traceback_util, tree_util, util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Primitive, Tracer, current_trace, set_current_trace
from tracejax._src.interpreters import ad, batching, lowering, staging


def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


class JaxprFun:
  """A staged function: a closed jaxpr called with its consts as leading operands."""
  __slots__ = ("jaxpr", "name")

  def __init__(self, jaxpr, name):
    self.jaxpr, self.name = jaxpr, name

  def __call__(self, *args):
    return ir.eval_jaxpr(self.jaxpr, [], *args)

  def __repr__(self):
    return self.name

  __name__ = property(lambda self: self.name)


def _stage_call(trace, prim, args, params, rule_keys):
  """Staging rule: trace `call` once; consts (closed-over values) become leading operands."""
  call = params["call"]
  in_avals = [_aval(x) for x in args]
  with set_current_trace(trace):
    jaxpr, consts = staging.trace_to_jaxpr(call, in_avals)
  cj, const_args = staging.closed_call_jaxpr(jaxpr, consts)
  nc = len(const_args)
  new = dict(params, call=JaxprFun(cj, util.fun_name(call)), num_consts=params["num_consts"] + nc)
  for k in rule_keys:
    new[k] = _drop_leading(params[k], nc, k)
  return trace.process_primitive_default(prim, list(const_args) + list(args), new)


def _drop_leading(rule, n, kind):
  if n == 0:
    return rule
  if kind == "jvp":
    @functools.wraps(rule)
    def jvp(primals, tangents):
      return rule(primals[n:], tangents[n:])
    return jvp
  if kind == "fwd":
    @functools.wraps(rule)
    def fwd(*primals):
      return rule(*primals[n:])
    return fwd
  if kind == "bwd":
    @functools.wraps(rule)
    def bwd(res, cts):
      return [None] * n + list(rule(res, cts))
    return bwd
  return rule


def _call_out_avals(call, in_avals):
  if isinstance(call, JaxprFun):
    return [v.aval for v in call.jaxpr.outvars]
  jaxpr, _ = staging.trace_to_jaxpr(call, in_avals)
  return [v.aval for v in jaxpr.outvars]


def _lower_call(ctx, *args, call, **_):
  if not isinstance(call, JaxprFun):
    raise NotImplementedError("custom derivative call reached lowering without being staged")
  return lowering.jaxpr_subcomp(ctx.module_context, call.jaxpr, [], args)


def _strip_consts_for(num_consts, args):
  return args[num_consts:]


# =============================================================================
# custom_jvp
# =============================================================================

custom_jvp_call_p = Primitive("custom_jvp_call")
custom_jvp_call_p.multiple_results = True
custom_jvp_call_p.def_impl(lambda *args, call, **_: call(*args))
custom_jvp_call_p.def_abstract_eval(
    lambda *avals, call, **_: _call_out_avals(call, list(avals)))
lowering.register_lowering(custom_jvp_call_p, _lower_call)
staging.custom_staging_rules[custom_jvp_call_p] = (
    lambda trace, args, params: _stage_call(trace, custom_jvp_call_p, args, params, ["jvp"]))


def _custom_jvp_call_jvp(primals, tangents, *, call, jvp, num_consts, symbolic_zeros):
  tangents = [ad.instantiate_zeros(t) if not symbolic_zeros else t for t in tangents]
  outs, t_outs = jvp(list(primals), list(tangents))
  return list(outs), list(t_outs)


ad.primitive_jvps[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_batch(args, dims, *, call, jvp, num_consts, symbolic_zeros):
  size = next(np.shape(x)[d] if not isinstance(x, Tracer) else x.shape[d]
              for x, d in zip(args, dims) if d is not None)
  moved = [batching.matchaxis(x, d, 0, size) if d is not None else x for x, d in zip(args, dims)]
  bdims = [0 if d is not None else None for d in dims]

  def call_b(*xs):
    return batching.vmap_flat(call, size, xs, bdims, lambda n: [0] * n)

  def jvp_b(primals, tangents):
    n = len(primals)
    # A tangent is batched like its primal (same shape), except a symbolic zero
    # (`symbolic_zeros=True`): it stays a Zero, of one example's aval, and is passed
    # through unbatched so the user's rule can still recognise it.
    tangents = [_unbatched_zero(t) if type(t) is ad.Zero and d is not None else t
                for t, d in zip(tangents, bdims)]
    t_dims = [None if type(t) is ad.Zero else d for t, d in zip(tangents, bdims)]
    res = []

    def flat(*xs):
      p_out, t_out = jvp(list(xs[:n]), list(xs[n:]))
      res.append(len(p_out))
      return list(p_out) + list(t_out)
    outs = batching.vmap_flat(flat, size, list(primals) + list(tangents), bdims + t_dims,
                              lambda m: [0] * m)
    k = res[0]
    return outs[:k], outs[k:]

  outs = custom_jvp_call_p.bind(*moved, call=call_b, jvp=jvp_b, num_consts=num_consts,
                                symbolic_zeros=symbolic_zeros)
  return outs, [0] * len(outs)


def _unbatched_zero(t):
  """The Zero of one example of a Zero batched along axis 0."""
  return ad.Zero(t.aval.update(shape=tuple(t.aval.shape[1:])))


batching.primitive_batchers[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_jvp:
  """A function with a custom JVP rule (`defjvp`, `defjvps`), used only when differentiating.

  >>> @custom_jvp
  ... def f(x): return jnp.sin(x)
  >>> f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.cos(primals[0]) * tangents[0]))
  """

  def __init__(self, fun, nondiff_argnums=()):
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp = None
    self.symbolic_zeros = False
    functools.update_wrapper(self, fun)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defjvp(self, jvp, symbolic_zeros=False):
    """Set the rule `jvp(primals, tangents) -> (primal_out, tangent_out)`; returns it."""
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *tangent_fns):
    """Set one rule per argument: `fn(tangent, primal_out, *primals) -> tangent_out`."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      # The rules' contributions are summed as they are (JAX starts from symbolic
      # zeros): a strong zeros array to start from would make weak tangents strong.
      tangent_out = None
      for fn, t in zip(tangent_fns, tangents):
        if fn is None:
          continue
        contrib = fn(t, primal_out, *primals)
        tangent_out = contrib if tangent_out is None else tree_util.tree_map(
            lambda a, b: a + b, tangent_out, contrib)
      if tangent_out is None:
        tangent_out = tree_util.tree_map(_zeros_like, primal_out)
      return primal_out, tangent_out
    self.defjvp(jvp)

  @traceback_util.api_boundary
  def __call__(self, *args, **kwargs):
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {util.fun_name(self.fun)} "
                           "using ``defjvp``.")
    if kwargs:
      args = _resolve_kwargs(self.fun, args, kwargs)
    nd = self.nondiff_argnums
    static = {i: args[i] for i in nd}
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    out_store = []

    def full_args(dargs):
      it = iter(dargs)
      return [static[i] if i in static else next(it) for i in range(len(args))]

    def call(*xs):
      out = self.fun(*full_args(tree_util.tree_unflatten(in_tree, xs)))
      o, t = tree_util.tree_flatten(out)
      out_store[:] = [t]
      return o

    def jvp(primals, tangents):
      ps = tree_util.tree_unflatten(in_tree, primals)
      ts = tree_util.tree_unflatten(in_tree, [_float0_zeros(t) for t in tangents])
      nd_vals = [static[i] for i in nd]
      rule_out = self.jvp(*nd_vals, tuple(ps), tuple(ts))
      names = (f"{util.fun_name(self.jvp)} for function {util.fun_name(self.fun)}")
      if not (isinstance(rule_out, (list, tuple)) and len(rule_out) == 2):
        raise TypeError(f"Custom JVP rule {names} must produce a pair (list or tuple of length "
                        f"two) representing primal and tangent outputs, but got {rule_out}.")
      out, t_out = rule_out
      o, tree = tree_util.tree_flatten(out)
      to, ttree = tree_util.tree_flatten(t_out)
      if tree != ttree:
        raise TypeError(f"Custom JVP rule {names} must produce primal and tangent outputs with "
                        f"equal container (pytree) structures, but got {tree} and {ttree} "
                        "respectively.")
      _check_rule_tangents(o, to)
      out_store[:] = [tree]
      return o, to

    outs = custom_jvp_call_p.bind(*leaves, call=call, jvp=jvp, num_consts=0,
                                  symbolic_zeros=self.symbolic_zeros)
    return tree_util.tree_unflatten(out_store[0], outs)


def _leaf_aval(x):
  """The aval of a rule's output leaf, or None for a symbolic zero / non-array value."""
  if x is None or type(x) is ad.Zero:
    return None
  try:
    return _aval(x)
  except TypeError:
    return None


def _check_rule_tangents(primals_out, tangents_out):
  # A tangent must have its primal's tangent type, as in JAX: shapes always; dtypes
  # unless the primal is integer/bool (its tangent type float0 is not checked).
  # Weak types are ignored, so a Python `0.` is a float32 tangent while x64 is off.
  for p, t in zip(primals_out, tangents_out):
    pa, ta = _leaf_aval(p), _leaf_aval(t)
    if pa is None or ta is None:
      continue
    expected = pa.at_least_vspace()
    dtype_ok = expected.dtype == dtypes.float0 or ta.dtype == expected.dtype
    if ta.shape != expected.shape or not dtype_ok:
      raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                      "corresponding shapes and dtypes. Expected "
                      f"{expected.str_short()} (tangent type of {pa.str_short()}) but got "
                      f"{ta.str_short()}.")


def _zeros_like(x):
  return ad.zeros_like_aval(_aval(x))  # x's dtype and weak type (a broadcast zero)


def _float0_zeros(t):
  return t


def _resolve_kwargs(fun, args, kwargs):
  import inspect
  ba = inspect.signature(fun).bind(*args, **kwargs)
  ba.apply_defaults()
  if ba.kwargs:
    raise TypeError("keyword arguments could not be resolved to positions")
  return ba.args


# =============================================================================
# custom_vjp
# =============================================================================

custom_vjp_call_p = Primitive("custom_vjp_call")
custom_vjp_call_p.multiple_results = True
custom_vjp_call_p.def_impl(lambda *args, call, **_: call(*args))
custom_vjp_call_p.def_abstract_eval(
    lambda *avals, call, **_: _call_out_avals(call, list(avals)))
lowering.register_lowering(custom_vjp_call_p, _lower_call)
staging.custom_staging_rules[custom_vjp_call_p] = (
    lambda trace, args, params: _stage_call(trace, custom_vjp_call_p, args, params,
                                            ["fwd", "bwd"]))


_JVP_OF_CUSTOM_VJP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."


def _custom_vjp_call_jvp(primals, tangents, *, call, fwd, bwd, num_consts, out_avals_fn=None):
  # The tangents go through `custom_lin`, whose transpose is `bwd` and which has no
  # forward evaluation. Reverse mode (a partial-evaluation trace) stages it into the
  # linear jaxpr, to be transposed. A staging trace also stages it: the JVP of a
  # scan/cond/while body or a checkpoint is traced to a jaxpr before reverse mode
  # splits that jaxpr, moving custom_lin to the transposed part; a custom_lin left
  # in a jaxpr that is run forward fails at lowering with the error below. Any
  # other trace computes tangents eagerly: that is plain forward mode, an error now.
  if not isinstance(current_trace(), (ad.PartialEvalTrace, staging.DynamicJaxprTrace)):
    raise TypeError(_JVP_OF_CUSTOM_VJP)
  outs, res = fwd(*primals)
  res = list(res)
  out_avals = [_aval(o).at_least_vspace() for o in outs]
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  t_outs = custom_lin_p.bind(*res, *tangents, num_res=len(res), bwd=bwd,
                             out_avals=tuple(out_avals))
  return list(outs), list(t_outs)


ad.primitive_jvps[custom_vjp_call_p] = _custom_vjp_call_jvp


def _custom_vjp_call_batch(args, dims, *, call, fwd, bwd, num_consts, out_avals_fn=None):
  size = next((x.shape if isinstance(x, Tracer) else np.shape(x))[d]
              for x, d in zip(args, dims) if d is not None)
  moved = [batching.matchaxis(x, d, 0, size) if d is not None else x for x, d in zip(args, dims)]
  bdims = [0 if d is not None else None for d in dims]
  n_res = []

  def call_b(*xs):
    return batching.vmap_flat(call, size, xs, bdims, lambda n: [0] * n)

  def fwd_b(*xs):
    def flat(*ys):
      outs, res = fwd(*ys)
      n_res[:] = [len(outs)]
      return list(outs) + list(res)
    allv = batching.vmap_flat(flat, size, xs, bdims, lambda n: [0] * n)
    k = n_res[0]
    return allv[:k], allv[k:]

  def bwd_b(res, cts):
    n = len(res)
    is_none = []

    def flat(*ys):
      r = list(bwd(list(ys[:n]), list(ys[n:])))
      # None (as for consts of a staged call) and float0 (integer inputs) are zero
      # cotangents: kept out of the vmapped function and put back as None.
      is_none[:] = [c is None or _aval(c).dtype == dtypes.float0 for c in r]
      return [c for c, none in zip(r, is_none) if not none]
    outs = iter(batching.vmap_flat(flat, size, list(res) + list(cts), [0] * (n + len(cts)),
                                   lambda m: [0] * m))
    # The input of an unbatched operand (a weight shared by every example) gets the
    # sum of the per-example cotangents.
    return [None if none else next(outs) if d is not None else _sum_leading(next(outs))
            for none, d in zip(is_none, bdims)]

  outs = custom_vjp_call_p.bind(*moved, call=call_b, fwd=fwd_b, bwd=bwd_b,
                                num_consts=num_consts)
  return outs, [0] * len(outs)


def _sum_leading(x):
  from tracejax._src.lax import reductions
  return reductions.reduce_sum(x, (0,))


batching.primitive_batchers[custom_vjp_call_p] = _custom_vjp_call_batch


# The linear primitive of custom_vjp's reverse mode: its transpose is the user's bwd.
custom_lin_p = Primitive("custom_lin")
custom_lin_p.multiple_results = True
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_impl(*args, **_):
  raise TypeError(_JVP_OF_CUSTOM_VJP)


def _custom_lin_lower(ctx, *args, **_):
  # Reached by a forward-mode JVP staged into a jaxpr (`jit(jvp(f))`, `jvp` of a scan
  # whose body calls a custom_vjp function): the same error as eager `jvp`.
  raise TypeError(_JVP_OF_CUSTOM_VJP)


custom_lin_p.def_impl(_custom_lin_impl)
lowering.register_lowering(custom_lin_p, _custom_lin_lower)


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals):
  res = args[:num_res]
  cts = [ad.instantiate_zeros(c) if type(c) is ad.Zero else c
         for c in (cts if isinstance(cts, (list, tuple)) else [cts])]
  cts_in = bwd(list(res), cts)
  return [None] * num_res + list(cts_in)


ad.primitive_transposes[custom_lin_p] = _custom_lin_transpose


class custom_vjp:
  """A function with a custom VJP: `defvjp(fwd, bwd)`; `fwd(*args) -> (out, residuals)`,
  `bwd(residuals, out_cotangent) -> tuple of argument cotangents`."""

  def __init__(self, fun, nondiff_argnums=()):
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = self.bwd = None
    functools.update_wrapper(self, fun)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defvjp(self, fwd, bwd, symbolic_zeros=False):
    self.fwd, self.bwd = fwd, bwd

  @traceback_util.api_boundary
  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {util.fun_name(self.fun)} "
                           "using ``defvjp``.")
    if kwargs:
      args = _resolve_kwargs(self.fun, args, kwargs)
    nd = self.nondiff_argnums
    static = {i: args[i] for i in nd}
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    dyn_avals = [_aval(x) for x in leaves]
    store = {}

    def full_args(dargs):
      it = iter(dargs)
      return [static[i] if i in static else next(it) for i in range(len(args))]

    def call(*xs):
      out = self.fun(*full_args(tree_util.tree_unflatten(in_tree, xs)))
      o, t = tree_util.tree_flatten(out)
      store["out"] = t
      return o

    def fwd(*xs):
      fwd_out = self.fwd(*full_args(tree_util.tree_unflatten(in_tree, xs)))
      if not (isinstance(fwd_out, (list, tuple)) and len(fwd_out) == 2):
        fn, f = util.fun_name(self.fwd), util.fun_name(self.fun)
        raise TypeError(f"Custom VJP fwd rule {fn} for function {f} must produce a pair (list "
                        "or tuple of length two) where the first element represents the "
                        "primal output (equal to those of the custom_vjp-decorated function "
                        f"{f}) and the second element represents residuals (i.e. values "
                        "stored from the forward pass for use on the backward pass), but "
                        f"instead of a pair the fwd rule {fn} produced {fwd_out}.")
      out, res = fwd_out
      o, t = tree_util.tree_flatten(out)
      r, rt = tree_util.tree_flatten(res)
      store["out"], store["res"] = t, rt
      return o, r

    def bwd(res, cts):
      r = tree_util.tree_unflatten(store["res"], res)
      ct = tree_util.tree_unflatten(store["out"], cts)
      nd_vals = [static[i] for i in nd]
      cts_in = self.bwd(*nd_vals, r, ct)
      if not isinstance(cts_in, tuple):
        cts_in = (cts_in,)  # the 2020 documents return a bare value for one argument
      if len(cts_in) != len(dyn):
        raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                        "(pytree) structure as the args tuple of the primal function, and in "
                        "particular must produce a tuple of length equal to the number of "
                        "arguments to the primal function, but got bwd output structure "
                        f"{tree_util.tree_structure(cts_in)} for primal input structure "
                        f"{tree_util.tree_structure(dyn)}.")
      flat = []
      for c, a in zip(cts_in, dyn):
        sub_leaves, sub_tree = tree_util.tree_flatten(a)
        if c is None:
          flat += [None] * len(sub_leaves)
        else:
          flat += tree_util.tree_flatten(c, is_leaf=lambda x: x is None)[0] \
              if tree_util.tree_structure(c) != sub_tree else tree_util.tree_leaves(c)
      _check_bwd_shapes(flat, dyn_avals, dyn)
      return [c if c is not None else _zeros_like_aval(a) for c, a in zip(flat, dyn_avals)]

    outs = custom_vjp_call_p.bind(*leaves, call=call, fwd=fwd, bwd=bwd, num_consts=0)
    return tree_util.tree_unflatten(store["out"], outs)


def _check_bwd_shapes(cts, avals, dyn):
  # As JAX: a cotangent of another shape than its (float) input is an error naming
  # where in the args tuple it is; another dtype is accepted (JAX 0.10.2 does too).
  for i, (c, a) in enumerate(zip(cts, avals)):
    ca = _leaf_aval(c)
    if ca is None or not dtypes.issubdtype(a.dtype, np.inexact) or ca.shape == a.shape:
      continue
    paths = tree_util.tree_flatten_with_path(dyn)[0]
    where = tree_util.keystr(paths[i][0]) if i < len(paths) else f"[{i}]"
    raise ValueError("Custom VJP bwd rule must produce an output with the same type as the "
                     f"args tuple of the primal function, but at output{where} the bwd rule "
                     f"produced an output of type {ca.str_short()} corresponding to an input "
                     f"of type {a.str_short()}, so the shapes do not match")


def _zeros_like_aval(aval):
  return ad.zeros_like_aval(aval.at_least_vspace())
