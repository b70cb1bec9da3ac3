"""Loops: `while_loop`, `fori_loop`, `scan`, `map`, `associative_scan`.

`while_p(*cond_consts, *body_consts, *carry, cond_jaxpr, body_jaxpr, cond_nconsts,
body_nconsts)` lowers to StableHLO `while`; it is forward-differentiable only.
`scan_p(*consts, *carry, *xs, jaxpr, length, reverse, ...)` has every rule, so
reverse mode works; `fori_loop` with a static trip count becomes a scan.
"""
import functools

import numpy as np

from tracejax._src import dispatch, dtypes, errors, traceback_util, tree_util
from tracejax._src.config import config
from tracejax._src.control_flow import common
from tracejax._src.core import ir
from tracejax._src.core import trace as trace_mod
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive, Tracer, is_concrete, set_current_trace
from tracejax._src.interpreters import ad, batching, lowering, staging
from tracejax._src.interpreters.lowering import hlo, ir as mlir_ir


def _shape(x):
  return x.shape if isinstance(x, Tracer) else np.shape(x)


# =============================================================================
# while_loop
# =============================================================================

@traceback_util.api_boundary
def while_loop(cond_fun, body_fun, init_val):
  """`val = init_val; while cond_fun(val): val = body_fun(val); return val`, compiled.

  >>> while_loop(lambda x: x < 10, lambda x: x + 1, 0)
  DeviceArray(10, dtype=int32)
  """
  if config.jax_disable_jit:
    try:
      val = init_val
      while cond_fun(val):
        val = body_fun(val)
      return val
    except errors.ConcretizationTypeError:
      pass  # a traced condition (e.g. under vmap): the loop primitive, as JAX falls back
  leaves, in_tree = tree_util.tree_flatten(init_val)
  args_tree = tree_util.tree_structure((init_val,))
  avals = [common.aval_of(x) for x in leaves]
  cj, cconsts, ctree = common.trace_fun(cond_fun, args_tree, avals)
  bj, bconsts, btree = common.trace_fun(body_fun, args_tree, avals)
  if btree == in_tree:
    leaves, promoted = _promote_weak_carry(leaves, avals, bj.out_avals)
    if promoted:  # retrace both at the promoted carry types
      avals = [common.aval_of(x) for x in leaves]
      cj, cconsts, ctree = common.trace_fun(cond_fun, args_tree, avals)
      bj, bconsts, btree = common.trace_fun(body_fun, args_tree, avals)
  if ctree.num_leaves != 1 or ctree.num_nodes != 1:
    raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {ctree}.")
  if cj.out_avals[0].shape != () or cj.out_avals[0].dtype != np.bool_:
    raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                    f"{common.avals_list_repr(cj.out_avals)}.")
  _check_carry("body_fun output and input", "while_loop", btree, bj.out_avals,
               in_tree, avals, init_val)
  _check_carry_shardings("while_loop", body_fun, init_val, avals, bj.out_avals)
  outs = while_p.bind(*cconsts, *bconsts, *leaves, cond_jaxpr=cj, body_jaxpr=bj,
                      cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
  return tree_util.tree_unflatten(in_tree, outs)


def _promote_weak_carry(leaves, in_avals, out_avals):
  """JAX's rule for a weakly typed carry (a Python scalar) whose body output has another
  dtype or shape: the initial value is converted (strongly) to the promoted dtype of the
  two, and the body is traced again, so `fori_loop(0, n, lambda i, c: c + jnp.float16(1),
  0.)` carries float16. Weak types alone do not count (JAX compares the types ignoring
  them): the loop's result then takes the body's output types. Strongly typed carries
  are never changed: a mismatch there is an error."""
  from tracejax._src.lax import elementwise
  out, promoted = list(leaves), False
  for i, (x, a, o) in enumerate(zip(leaves, in_avals, out_avals)):
    if a.weak_type and (a.shape, a.dtype) != (o.shape, o.dtype):
      out[i] = elementwise.convert_element_type(x, dtypes.result_type(a, o))
      promoted = True
  return out, promoted


def _check_carry_shardings(loop_name, body_fun, carry, in_avals, out_avals):
  """With sharding in types: a carry's Explicit sharding must not change (JAX's error)."""
  if trace_mod.sharding_rule is not None:
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    sharding_explicit.check_carry(loop_name, body_fun, carry, in_avals, out_avals)


def _check_carry(what, loop_name, out_tree, out_avals, in_tree, in_avals, carry):
  """The structure/type check of a loop carry: the 2020 message (the seeds' text), then
  JAX 0.10.2's explanation of the first mismatching component."""
  if out_tree != in_tree:
    raise TypeError(f"{what} must have same type structure, got {out_tree} and {in_tree}.")
  for path_leaf, a, o in zip(_carry_paths(carry), in_avals, out_avals):
    if common.same_types(a, o):
      continue
    what_differs = "shapes" if a.shape != o.shape else "dtypes"
    component = f"carry component {path_leaf}" if path_leaf else "carry"
    raise TypeError(
        f"{what} must have identical types, got\n"
        f"{tree_util.tree_unflatten(out_tree, list(out_avals))!r}\nand\n"
        f"{tree_util.tree_unflatten(in_tree, list(in_avals))!r}.\n\n"
        f"{loop_name} body function carry input and carry output must have equal types, "
        f"but they differ:\n\nThe input {component} has type {a.str_short()} but the "
        f"corresponding output carry component has type {o.str_short()}, so the "
        f"{what_differs} do not match.\n\nRevise the function so that all output types "
        "match the corresponding input types.")


def _carry_paths(carry):
  try:
    return [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(carry)[0]]
  except Exception:  # a node type without keys: name no component
    return [""] * len(tree_util.tree_leaves(carry))


while_p = Primitive("while")
while_p.multiple_results = True
while_p.def_impl(functools.partial(dispatch.apply_primitive, while_p))


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # The body's output types, weak types included (as JAX's: a strong init carried by a
  # body that returns a weak value ends weak; a loop's JVP ends with the body's tangent
  # types even when it runs no step).
  return [a.update(weak_type=o.weak_type) if hasattr(a, "update") else a
          for a, o in zip(avals[cond_nconsts + body_nconsts:], body_jaxpr.out_avals)]


while_p.def_abstract_eval(_while_abstract_eval)


def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # Consts travel in the loop state so the regions capture nothing from above.
  types = [lowering.aval_to_ir_type(a) for a in ctx.avals_in]
  loop = hlo.WhileOp(types, list(args))
  nc = cond_nconsts + body_nconsts
  cblock = loop.cond.blocks.append(*types)
  with mlir_ir.InsertionPoint(cblock):
    a = list(cblock.arguments)
    pred, = lowering.jaxpr_subcomp(ctx.module_context, cond_jaxpr, [],
                                   a[:cond_nconsts] + a[nc:])
    hlo.return_([pred])
  bblock = loop.body.blocks.append(*types)
  with mlir_ir.InsertionPoint(bblock):
    a = list(bblock.arguments)
    new = lowering.jaxpr_subcomp(ctx.module_context, body_jaxpr, [], a[cond_nconsts:])
    hlo.return_(a[:nc] + list(new))
  return list(loop.results)[nc:]


lowering.register_lowering(while_p, _while_lowering)


def _hoist_invariant_carries(primals, tangents, cond_jaxpr, body_jaxpr, cond_nconsts,
                             body_nconsts):
  """The carries the body hands back unchanged (its output is its input variable) and
  whose tangent is nonzero, made constants of the loop: their final value (and tangent)
  is the initial one. So their tangents never enter the loop, and reverse mode works
  when only such carries are differentiated (as in JAX, whose loop rules forward them).
  Returns None when there are none."""
  nc = cond_nconsts + body_nconsts
  carry_in = body_jaxpr.invars[body_nconsts:]
  # (as JAX: only carries the condition does not read)
  cond_reads = {id(v) for e in cond_jaxpr.eqns for v in e.invars} | {
      id(v) for v in cond_jaxpr.outvars}
  hoist = [o is i and type(t) is not ad.Zero and id(c) not in cond_reads
           for o, i, t, c in zip(body_jaxpr.outvars, carry_in, tangents[nc:],
                                 cond_jaxpr.invars[cond_nconsts:])]
  if not any(hoist):
    return None
  keep = [i for i, h in enumerate(hoist) if not h]
  moved = [i for i, h in enumerate(hoist) if h]

  def move(jaxpr, nconsts, outvars):
    inv = list(jaxpr.invars)
    carry = inv[nconsts:]
    new_inv = inv[:nconsts] + [carry[i] for i in moved] + [carry[i] for i in keep]
    return ir.Jaxpr(jaxpr.constvars, new_inv, outvars, jaxpr.eqns)

  cj = move(cond_jaxpr, cond_nconsts, cond_jaxpr.outvars)
  bj = move(body_jaxpr, body_nconsts, [body_jaxpr.outvars[i] for i in keep])

  def regroup(xs):
    cc, bc, carry = xs[:cond_nconsts], xs[cond_nconsts:nc], xs[nc:]
    hoisted = [carry[i] for i in moved]
    return (list(cc) + hoisted + list(bc) + hoisted + [carry[i] for i in keep])

  params = dict(cond_jaxpr=cj, body_jaxpr=bj, cond_nconsts=cond_nconsts + len(moved),
                body_nconsts=body_nconsts + len(moved))
  p_out, t_out = _while_jvp(regroup(primals), regroup(tangents), **params)
  p_all, t_all = list(primals[nc:]), list(tangents[nc:])
  for k, i in enumerate(keep):
    p_all[i], t_all[i] = p_out[k], t_out[k]
  return p_all, t_all


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  hoisted = _hoist_invariant_carries(primals, tangents, cond_jaxpr, body_jaxpr,
                                     cond_nconsts, body_nconsts)
  if hoisted is not None:
    return hoisted
  nc = cond_nconsts + body_nconsts
  cconsts, bconsts, carry = primals[:cond_nconsts], primals[cond_nconsts:nc], primals[nc:]
  bc_t, carry_t = tangents[cond_nconsts:nc], tangents[nc:]
  bc_nz = [type(t) is not ad.Zero for t in bc_t]
  carry_nz = [type(t) is not ad.Zero for t in carry_t]
  while True:  # fixpoint: a carry whose tangent becomes nonzero stays nonzero
    _, _, out_nz = ad.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, [False] * len(carry))
    new = [a or b for a, b in zip(carry_nz, out_nz)]
    if new == carry_nz:
      break
    carry_nz = new
  jb, jconsts, _ = ad.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
  nb, ncar = len(bconsts), len(carry)
  n_bt = sum(bc_nz)
  n_ct = sum(carry_nz)
  # jvp invars: [bconsts, carry, bconst tangents, carry tangents] -> [consts..., carry...]
  order = (list(range(nb)) + list(range(nb + ncar, nb + ncar + n_bt)) +
           list(range(nb, nb + ncar)) + list(range(nb + ncar + n_bt, nb + ncar + n_bt + n_ct)))
  jb = common.permute_invars(jb, order)
  jb, jconsts = common.close_jaxpr(jb, jconsts)
  tan_avals = [a.at_least_vspace() for a, z in zip(cond_jaxpr.in_avals[cond_nconsts:], carry_nz)
               if z]
  cj = common.add_unused_invars(cond_jaxpr, tan_avals, len(cond_jaxpr.invars))
  bct = [t for t in bc_t if type(t) is not ad.Zero]
  ct = [ad.instantiate_zeros(t) for t, z in zip(carry_t, carry_nz) if z]
  outs = while_p.bind(*cconsts, *jconsts, *bconsts, *bct, *carry, *ct, cond_jaxpr=cj,
                      body_jaxpr=jb, cond_nconsts=cond_nconsts,
                      body_nconsts=len(jconsts) + nb + n_bt)
  p_out, t_nz = outs[:ncar], iter(outs[ncar:])
  t_out = [next(t_nz) if z else ad.Zero(common.aval_of(p).at_least_vspace())
           for z, p in zip(carry_nz, p_out)]
  return p_out, t_out


ad.primitive_jvps[while_p] = _while_jvp


def _while_transpose(*args, **params):
  raise ValueError(
      "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
      "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
      "start/stop.")


ad.primitive_transposes[while_p] = _while_transpose


def _while_partial_eval(trace, args, params):
  """Linearizing a while loop: the carries that stay known (the primal ones, under a
  JVP) run in a known while of their own; the whole loop is staged for the unknown
  (tangent) outputs. Reverse mode then only meets the staged loop when a cotangent
  really flows into it (JAX: grad through a loop whose tangents are unused is fine)."""
  cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
  cnc, bnc = params["cond_nconsts"], params["body_nconsts"]
  unk = [trace.is_unknown(x) for x in args]
  cc_u, bc_u, k_u = _split3(unk, cnc, bnc)
  ncar = len(k_u)
  if any(cc_u):
    return trace.tangent_trace.process_primitive(while_p, args, params)
  while True:  # fixpoint: a carry that becomes unknown stays unknown
    out_u = ad.partial_eval_jaxpr(body_jaxpr, bc_u + k_u, [False] * ncar)[3]
    new = [a or b for a, b in zip(k_u, out_u)]
    if new == k_u:
      break
    k_u = new
  if ad.partial_eval_jaxpr(cond_jaxpr, cc_u + k_u, [False])[3][0]:
    # The trip count itself depends on an unknown: nothing can be known.
    return trace.tangent_trace.process_primitive(while_p, args, params)
  # With no unknown carry, the unknown inputs are body consts that reach no output
  # (e.g. a tangent only compared against, or feeding an integer carry): every output
  # is known and only the known loop runs. Staging the whole loop here would make the
  # known (primal) outputs unknowns, leaking tracers of the tangent trace.
  cconsts, bconsts, init = _split3(args, cnc, bnc)
  kb, kb_consts, _, _, _ = ad.partial_eval_jaxpr(body_jaxpr, bc_u + k_u, [False] * ncar)
  kc, kc_consts, _, _, _ = ad.partial_eval_jaxpr(cond_jaxpr, cc_u + k_u, [False])
  n_kk = ncar - sum(k_u)
  # Keep only the known carries' outputs (drop the residuals).
  kb = ir.Jaxpr(kb.constvars, kb.invars, kb.outvars[:n_kk], kb.eqns)
  kc = ir.Jaxpr(kc.constvars, kc.invars, kc.outvars[:1], kc.eqns)
  kb, kb_consts = common.close_jaxpr(kb, kb_consts)
  kc, kc_consts = common.close_jaxpr(kc, kc_consts)
  known_cc = list(kc_consts) + cconsts
  known_bc = list(kb_consts) + [c for c, u in zip(bconsts, bc_u) if not u]
  known_k = [c for c, u in zip(init, k_u) if not u]
  with set_current_trace(trace.parent):
    known_outs = while_p.bind(*known_cc, *known_bc, *known_k, cond_jaxpr=kc,
                              body_jaxpr=kb, cond_nconsts=len(known_cc),
                              body_nconsts=len(known_bc))
  if not any(k_u):
    return list(known_outs)
  staged = trace.tangent_trace.process_primitive(while_p, args, params)
  ko = iter(known_outs)
  return [s_ if u else next(ko) for s_, u in zip(staged, k_u)]


ad.partial_eval_rules[while_p] = _while_partial_eval


def _while_batch(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  from tracejax._src.lax import elementwise, reductions, structural
  from tracejax._src.lax import utils as lax_utils
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  nc = cond_nconsts + body_nconsts
  cc_d, bc_d, carry_d = dims[:cond_nconsts], dims[cond_nconsts:nc], dims[nc:]
  carry_b = [d is not None for d in carry_d]
  while True:
    _, _, od = batching.batch_jaxpr(body_jaxpr, size, list(bc_d) + [0 if b else None
                                                                   for b in carry_b])
    new = [a or d is not None for a, d in zip(carry_b, od)]
    if new == carry_b:
      break
    carry_b = new
  _, _, pd = batching.batch_jaxpr(cond_jaxpr, size, list(cc_d) + [0 if b else None
                                                                 for b in carry_b])
  pred_batched = pd[0] is not None
  if pred_batched:
    carry_b = [True] * len(carry_b)
  cdims = [0 if b else None for b in carry_b]
  carry = [lax_utils.bdim_at_front(x, d, size) if b and d != 0 else x
           for x, d, b in zip(args[nc:], carry_d, carry_b)]
  bj, bconsts, _ = batching.batch_jaxpr(body_jaxpr, size, list(bc_d) + cdims,
                                        out_dims_wanted=cdims)
  cj, cconsts, _ = batching.batch_jaxpr(cond_jaxpr, size, list(cc_d) + cdims,
                                        out_dims_wanted=[0] if pred_batched else None)
  cc, bcv = list(args[:cond_nconsts]), list(args[cond_nconsts:nc])
  if not pred_batched:
    bj2, bjc = common.close_jaxpr(bj, bconsts)
    cj2, cjc = common.close_jaxpr(cj, cconsts)
    outs = while_p.bind(*cjc, *cc, *bjc, *bcv, *carry, cond_jaxpr=cj2, body_jaxpr=bj2,
                        cond_nconsts=len(cjc) + len(cc), body_nconsts=len(bjc) + len(bcv))
    return outs, cdims
  # A batched predicate: loop while any element continues; finished elements keep
  # their carry (select), as the seed's vmap-of-newton example needs.
  c_avals = [common.aval_of(x) for x in cc]
  b_avals = [common.aval_of(x) for x in bcv]
  k_avals = [common.aval_of(x) for x in carry]
  ncc, nbc = len(cc), len(bcv)

  def new_cond(*xs):
    p, = ir.eval_jaxpr(cj, cconsts, *xs[:ncc], *xs[ncc + nbc:])
    return [reductions.reduce_or(p, (0,))]

  def new_body(*xs):
    p, = ir.eval_jaxpr(cj, cconsts, *xs[:ncc], *xs[ncc + nbc:])
    new = ir.eval_jaxpr(bj, bconsts, *xs[ncc:])
    outs = []
    for n, o in zip(new, xs[ncc + nbc:]):
      which = structural.broadcast_in_dim(p, _shape(o), (0,))
      outs.append(elementwise.select(which, n, o))
    return outs

  all_avals = c_avals + b_avals + k_avals
  ncj, ncc_consts = common.trace_flat(new_cond, all_avals)
  nbj, nbc_consts = common.trace_flat(new_body, all_avals)
  # Both take (cond consts, body consts, carry); wire them as while consts.
  ncj2 = common.add_unused_invars(ncj, [], 0)
  nconst = ncc_consts + nbc_consts + cc + bcv
  nconst_avals = [common.aval_of(x) for x in nconst]
  n1, n2 = len(ncc_consts), len(nbc_consts)
  cj_final = common.trace_flat(
      lambda *xs: ir.eval_jaxpr(ncj2, [], *xs[:n1], *xs[n1 + n2:]),
      nconst_avals + k_avals)
  bj_final = common.trace_flat(
      lambda *xs: ir.eval_jaxpr(nbj, [], *xs[n1:]), nconst_avals + k_avals)
  cjx, cjxc = cj_final
  bjx, bjxc = bj_final
  outs = while_p.bind(*cjxc, *nconst, *bjxc, *nconst, *carry, cond_jaxpr=cjx, body_jaxpr=bjx,
                      cond_nconsts=len(cjxc) + len(nconst),
                      body_nconsts=len(bjxc) + len(nconst))
  return outs, cdims


batching.primitive_batchers[while_p] = _while_batch


def _while_pp(eqn, namer):
  from tracejax._src.core import pp
  return pp.pp_eqn(eqn, namer, use_rules=False)


# =============================================================================
# fori_loop
# =============================================================================

@traceback_util.api_boundary
def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """`for i in range(lower, upper): val = body_fun(i, val)`; a scan when the trip count
  is static (so reverse mode works), else a while loop over `(i, upper, val)`.

  Args:
    lower, upper: the integer bounds (Python ints, or traced values for a while loop).
    body_fun: `(i, val) -> val`, with `val` of the type of `init_val`.
    init_val: the initial loop carry (a pytree).
    unroll: as `scan`'s (an int, or True to unroll fully); only with static bounds.

  >>> fori_loop(0, 4, lambda i, x: x + i, 0, unroll=2)
  DeviceArray(6, dtype=int32)
  """
  from tracejax._src.lax import elementwise
  if unroll is not None and unroll is not False and unroll != 1 and not (
      is_concrete(lower) and is_concrete(upper)):
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known.")
  if config.jax_disable_jit and is_concrete(lower) and is_concrete(upper):
    val = init_val
    for i in range(int(lower), int(upper)):
      val = body_fun(i, val)
    return val
  # As in JAX, the bounds need one dtype (not necessarily an integer one: float bounds
  # count in float steps of 1 from `lower`); mixing dtypes is an error.
  lower_dt = dtypes.canonicalize_dtype(dtypes.result_type(lower))
  upper_dt = dtypes.canonicalize_dtype(dtypes.result_type(upper))
  if lower_dt != upper_dt:
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower_dt.name} and {upper_dt.name}")
  dt = lower_dt
  if is_concrete(lower) and is_concrete(upper):
    lo, hi = int(lower), int(upper)
    n = max(hi - lo, 0)

    def step(loop_carry, _):   # (JAX's name: its carry-type errors say loop_carry[1])
      i, x = loop_carry
      return (elementwise.add(i, np.asarray(1, dt)), body_fun(i, x)), None
    start = np.asarray(lower if not dtypes.issubdtype(dt, np.integer) else lo, dt)
    (_, out), _ = scan(step, (start, init_val), None, length=n,
                       unroll=1 if unroll is None else unroll)
    return out

  def cond_fun(c):
    return elementwise.lt(c[0], c[1])

  def body(c):
    i, hi, x = c
    return (elementwise.add(i, np.asarray(1, dt)), hi, body_fun(i, x))
  lo = elementwise.convert_element_type(lower, dt) if isinstance(lower, Tracer) else \
      np.asarray(lower, dt)
  hi = elementwise.convert_element_type(upper, dt) if isinstance(upper, Tracer) else \
      np.asarray(upper, dt)
  return while_loop(cond_fun, body, (lo, hi, init_val))[2]


# =============================================================================
# scan
# =============================================================================

@traceback_util.api_boundary
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
  """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; returns
  `(final_carry, stacked_ys)`."""
  x_leaves, x_tree = tree_util.tree_flatten(xs)
  lengths = {_shape(x)[0] for x in x_leaves if len(_shape(x))}
  if any(not len(_shape(x)) for x in x_leaves):
    raise ValueError("scan got value with no leading axis to scan over")
  if length is not None:
    length = int(length)
    if lengths and lengths != {length}:
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {sorted(lengths)}.")
  else:
    if not lengths:
      raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(lengths) > 1:
      raise ValueError(f"scan got values with different leading axis sizes: {sorted(lengths)}.")
    length = lengths.pop()
  unroll = _canonical_unroll(unroll, length)
  if config.jax_disable_jit:
    from tracejax._src.lax import slicing
    carry, ys = init, []
    idx = range(length - 1, -1, -1) if reverse else range(length)
    for i in idx:
      x = tree_util.tree_unflatten(x_tree, [slicing.index_in_dim(v, i, keepdims=False)
                                            for v in x_leaves])
      carry, y = f(carry, x)
      ys.append(y)
    if reverse:
      ys = ys[::-1]
    return carry, _stack_ys(ys, length)
  c_leaves, c_tree = tree_util.tree_flatten(init)
  c_avals = [common.aval_of(x) for x in c_leaves]
  x_avals = [common.aval_of(x) for x in x_leaves]
  if trace_mod.sharding_rule is not None:   # typed xs: each step's slice is typed too
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    x_avals = sharding_explicit.scan_x_avals(x_avals)
  else:
    x_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
  in_tree = tree_util.tree_structure((init, xs))
  jaxpr, consts, out_tree = common.trace_fun(lambda c, x: f(c, x), in_tree, c_avals + x_avals)
  try:
    carry_tree, y_tree = tree_util.treedef_children(out_tree)
    assert out_tree.num_nodes >= 1 and len(tree_util.treedef_children(out_tree)) == 2
  except Exception:
    raise TypeError("scan body output must be a pair, got "
                    f"{tree_util.tree_unflatten(out_tree, list(jaxpr.out_avals))!r}.") from None
  nc = len(c_leaves)
  if carry_tree == c_tree:
    c_leaves, promoted = _promote_weak_carry(c_leaves, c_avals, jaxpr.out_avals[:nc])
    if promoted:  # retrace at the promoted carry types
      c_avals = [common.aval_of(x) for x in c_leaves]
      jaxpr, consts, out_tree = common.trace_fun(lambda c, x: f(c, x), in_tree,
                                                 c_avals + x_avals)
      carry_tree, y_tree = tree_util.treedef_children(out_tree)
  out_avals = jaxpr.out_avals
  _check_carry("scan carry output and input", "scan", carry_tree,
               out_avals[:carry_tree.num_leaves], c_tree, c_avals, init)
  _check_carry_shardings("scan", f, init, c_avals, out_avals[:carry_tree.num_leaves])
  outs = scan_p.bind(*consts, *c_leaves, *x_leaves, jaxpr=jaxpr, length=length,
                     reverse=bool(reverse), num_consts=len(consts), num_carry=nc,
                     linear=(False,) * (len(consts) + nc + len(x_leaves)), unroll=unroll)
  return (tree_util.tree_unflatten(carry_tree, outs[:nc]),
          tree_util.tree_unflatten(y_tree, outs[nc:]))


def _canonical_unroll(unroll, length):
  """`unroll` as a positive int: True unrolls fully, False and 0 mean 1 (as in JAX)."""
  if isinstance(unroll, (bool, np.bool_)):
    return max(length, 1) if unroll else 1
  try:
    u = int(unroll)
  except (TypeError, ValueError):
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.") from None
  if u < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  return max(u, 1)


def _stack_ys(ys, length):
  from tracejax._src.lax import structural
  if not ys:
    return None
  leaves0, tree = tree_util.tree_flatten(ys[0])
  cols = list(zip(*[tree_util.tree_leaves(y) for y in ys]))
  stacked = [structural.concatenate([structural.broadcast_in_dim(
      v, (1,) + tuple(_shape(v)), tuple(range(1, len(_shape(v)) + 1))) for v in col], 0)
      for col in cols]
  return tree_util.tree_unflatten(tree, stacked)


scan_p = Primitive("scan")
scan_p.multiple_results = True
scan_p.def_impl(functools.partial(dispatch.apply_primitive, scan_p))


def _scan_abstract_eval(*avals, jaxpr, length, num_consts, num_carry, **_):
  outs = jaxpr.out_avals
  # As while_loop's (and JAX's), the final carry has the body's output types, weak types
  # included (a scan's JVP ends with the body's tangent types even when length is 0).
  return outs[:num_carry] + [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]]


scan_p.def_abstract_eval(_scan_abstract_eval)


def _scan_as_while(*args, jaxpr, length, reverse, num_consts, num_carry, unroll=1, **_):
  """scan in terms of while_loop + dynamic slicing: the lowering of scan.

  With `unroll=k` each trip of the while loop runs k steps of the body, and the
  `length % k` steps left over run after the loop as straight-line code; when one trip
  would cover every step the loop disappears altogether (a fully unrolled scan)."""
  from tracejax._src.lax import elementwise, slicing, structural
  consts, init, xs = args[:num_consts], args[num_consts:num_consts + num_carry], \
      args[num_consts + num_carry:]
  y_avals = jaxpr.out_avals[num_carry:]
  ys0 = [structural.full((length,) + a.shape, 0, a.dtype) for a in y_avals]
  u = _canonical_unroll(unroll, length)
  u = min(u, max(length, 1))

  def step(state):
    i, carry, ys = state
    idx = elementwise.sub(np.int32(length - 1), i) if reverse else i
    x = [slicing.dynamic_index_in_dim(v, idx, 0, keepdims=False) for v in xs]
    outs = ir.eval_jaxpr(jaxpr, [], *consts, *carry, *x)
    new_carry, y = outs[:num_carry], outs[num_carry:]
    ys = [slicing.dynamic_update_index_in_dim(acc, v, idx, 0) for acc, v in zip(ys, y)]
    return (elementwise.add(i, np.int32(1)), list(new_carry), ys)

  def body(state):
    for _ in range(u):
      state = step(state)
    return state

  trips = length // u
  state = (np.int32(0), list(init), ys0)
  if trips > 1:
    state = while_loop(lambda s: elementwise.lt(s[0], np.int32(trips * u)), body, state)
    done = trips * u
  else:
    done = 0
  for _ in range(length - done):  # the remainder (everything, when fully unrolled)
    state = step(state)
  _, carry, ys = state
  return list(carry) + list(ys)


lowering.register_lowering(scan_p, lowering.lower_fun(_scan_as_while, multiple_results=True))


def _split3(xs, a, b):
  return list(xs[:a]), list(xs[a:a + b]), list(xs[a + b:])


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, linear,
              unroll):
  nconst, ncar = num_consts, num_carry
  nx = len(primals) - nconst - ncar
  c_t, k_t, x_t = _split3(tangents, nconst, ncar)
  c_nz = [type(t) is not ad.Zero for t in c_t]
  k_nz = [type(t) is not ad.Zero for t in k_t]
  x_nz = [type(t) is not ad.Zero for t in x_t]
  ny = len(jaxpr.outvars) - ncar
  while True:
    _, _, out_nz = ad.jvp_jaxpr(jaxpr, c_nz + k_nz + x_nz, k_nz + [False] * ny)
    new = [a or b for a, b in zip(k_nz, out_nz[:ncar])]
    if new == k_nz:
      break
    k_nz = new
  jj, jconsts, out_nz = ad.jvp_jaxpr(jaxpr, c_nz + k_nz + x_nz, k_nz + [False] * ny)
  y_nz = out_nz[ncar:]
  nct, nkt, nxt = sum(c_nz), sum(k_nz), sum(x_nz)
  base = nconst + ncar + nx
  order = (list(range(nconst)) + list(range(base, base + nct)) +
           list(range(nconst, nconst + ncar)) + list(range(base + nct, base + nct + nkt)) +
           list(range(nconst + ncar, base)) + list(range(base + nct + nkt, base + nct + nkt + nxt)))
  jj = common.permute_invars(jj, order)
  nyt = sum(y_nz)
  # outs: [carry, ys, carry tangents, y tangents] -> [carry, carry tangents, ys, y tangents]
  oorder = (list(range(ncar)) + list(range(ncar + ny, ncar + ny + nkt)) +
            list(range(ncar, ncar + ny)) + list(range(ncar + ny + nkt, ncar + ny + nkt + nyt)))
  jj = common.permute_outvars(jj, oorder)
  jj, jconsts = common.close_jaxpr(jj, jconsts)
  consts, init, xs = _split3(primals, nconst, ncar)
  ct = [t for t in c_t if type(t) is not ad.Zero]
  kt = [ad.instantiate_zeros(t) for t, z in zip(k_t, k_nz) if z]
  xt = [t for t in x_t if type(t) is not ad.Zero]
  new_consts = list(jconsts) + consts + ct
  outs = scan_p.bind(*new_consts, *init, *kt, *xs, *xt, jaxpr=jj, length=length,
                     reverse=reverse, num_consts=len(new_consts), num_carry=ncar + nkt,
                     linear=(False,) * (len(new_consts) + ncar + nkt + nx + nxt), unroll=unroll)
  carry, carry_t, ys, ys_t = (outs[:ncar], iter(outs[ncar:ncar + nkt]),
                              outs[ncar + nkt:ncar + nkt + ny], iter(outs[ncar + nkt + ny:]))
  out_avals = _scan_abstract_eval(jaxpr=jaxpr, length=length, num_consts=nconst,
                                  num_carry=ncar)
  t_out = [next(carry_t) if z else ad.Zero(a.at_least_vspace())
           for z, a in zip(k_nz, out_avals[:ncar])]
  t_out += [next(ys_t) if z else ad.Zero(a.at_least_vspace())
            for z, a in zip(y_nz, out_avals[ncar:])]
  return list(carry) + list(ys), t_out


ad.primitive_jvps[scan_p] = _scan_jvp


def _scan_partial_eval(trace, args, params):
  jaxpr, length, reverse = params["jaxpr"], params["length"], params["reverse"]
  nconst, ncar = params["num_consts"], params["num_carry"]
  unk = [trace.is_unknown(x) for x in args]
  c_u, k_u, x_u = _split3(unk, nconst, ncar)
  ny = len(jaxpr.outvars) - ncar
  while True:  # fixpoint: a carry that becomes unknown stays unknown
    out_u = ad.partial_eval_jaxpr(jaxpr, c_u + k_u + x_u, k_u + [False] * ny)[3]
    new = [a or b for a, b in zip(k_u, out_u[:ncar])]
    if new == k_u:
      break
    k_u = new
  kj, kconsts, uj, out_u, nres = ad.partial_eval_jaxpr(jaxpr, c_u + k_u + x_u,
                                                       k_u + [False] * ny)
  consts, init, xs = _split3(args, nconst, ncar)
  kj, kconsts = common.close_jaxpr(kj, kconsts)
  known_c = list(kconsts) + [c for c, u in zip(consts, c_u) if not u]
  known_k = [c for c, u in zip(init, k_u) if not u]
  known_x = [c for c, u in zip(xs, x_u) if not u]
  n_kk = len(known_k)
  n_ky = ny - sum(out_u[ncar:])
  # Residuals that are inputs of the known body need not be stacked per iteration: a
  # const is loop-invariant (pass it once, as a const of the unknown scan) and an xs
  # slice is already stacked (pass the xs array itself).
  ncst = len(known_c)
  pos = {v: i for i, v in enumerate(kj.invars)}
  res_src = []   # per residual: ("c", value) / ("x", value) / ("s", None)
  for v in kj.outvars[n_kk + n_ky:]:
    i = pos.get(v) if isinstance(v, ir.Var) else None
    if i is not None and i < ncst:
      res_src.append(("c", known_c[i]))
    elif i is not None and i >= ncst + n_kk:
      res_src.append(("x", known_x[i - ncst - n_kk]))
    else:
      res_src.append(("s", None))
  keep = list(range(n_kk + n_ky)) + [n_kk + n_ky + j for j, (k, _) in enumerate(res_src)
                                     if k == "s"]
  kj = ir.Jaxpr(kj.constvars, kj.invars, [kj.outvars[i] for i in keep], kj.eqns)
  with set_current_trace(trace.parent):
    known_outs = scan_p.bind(*known_c, *known_k, *known_x, jaxpr=kj, length=length,
                             reverse=reverse, num_consts=len(known_c), num_carry=n_kk,
                             linear=(False,) * (len(known_c) + n_kk + len(known_x)),
                             unroll=params["unroll"])
  k_carry, k_ys, stacked = (known_outs[:n_kk], known_outs[n_kk:n_kk + n_ky],
                            iter(known_outs[n_kk + n_ky:]))
  res = [val if k != "s" else next(stacked) for k, val in res_src]
  inv = [j for j, (k, _) in enumerate(res_src) if k == "c"]
  per = [j for j, (k, _) in enumerate(res_src) if k != "c"]
  # The unknown body takes [residuals, unknown consts, carry, xs]: invariant residuals
  # go first among the consts, the per-iteration ones to the xs position.
  n_uc, n_uk, n_ux = sum(c_u), sum(k_u), sum(x_u)
  order = (inv + list(range(nres, nres + n_uc + n_uk)) + per +
           list(range(nres + n_uc + n_uk, nres + n_uc + n_uk + n_ux)))
  uj = common.permute_invars(uj, order)
  unk_c = [c for c, u in zip(consts, c_u) if u]
  # a carry that is known on entry but unknown in the loop enters as a constant
  unk_k = [c for c, u in zip(init, k_u) if u]
  unk_x = [c for c, u in zip(xs, x_u) if u]
  u_params = dict(params, jaxpr=uj, num_consts=len(inv) + n_uc, num_carry=n_uk,
                  linear=(False,) * (n_uc + n_uk + nres + n_ux))
  u_outs = trace.tangent_trace.process_primitive(
      scan_p, [*[res[j] for j in inv], *unk_c, *unk_k, *[res[j] for j in per], *unk_x],
      u_params)
  u_carry, u_ys = u_outs[:n_uk], u_outs[n_uk:]
  kc, uc, ky, uy = iter(k_carry), iter(u_carry), iter(k_ys), iter(u_ys)
  return ([next(uc) if u else next(kc) for u in k_u] +
          [next(uy) if u else next(ky) for u in out_u[ncar:]])


ad.partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry, linear,
                    unroll):
  from tracejax._src.lax import structural
  nconst, ncar = num_consts, num_carry
  consts, init, xs = _split3(args, nconst, ncar)
  c_lin = [ad.is_undefined_primal(c) for c in consts]
  x_lin = [ad.is_undefined_primal(x) for x in xs]
  out_avals = _scan_abstract_eval(jaxpr=jaxpr, length=length, num_consts=nconst,
                                  num_carry=ncar)
  # A y whose cotangent is zero is dropped from the body before transposing (as JAX
  # transposes with it symbolically zero): instantiated, the zeros would meet the
  # body's residuals (0 * inf is NaN in the gradient of a jvp's unused primal output).
  y_nz = [type(c) is not ad.Zero for c in cts[ncar:]]
  if not all(y_nz):
    jaxpr, _ = staging.dce_jaxpr(jaxpr, [True] * ncar + y_nz)
  ct_carry = [ad.zeros_like_aval(a) if type(c) is ad.Zero else c
              for c, a in zip(cts[:ncar], out_avals)]
  ct_ys = [c for c, nz in zip(cts[ncar:], y_nz) if nz]
  tj, tconsts = ad.transpose_jaxpr(jaxpr, c_lin + [True] * ncar + x_lin)
  known_c = [c for c, l in zip(consts, c_lin) if not l]
  known_x = [x for x, l in zip(xs, x_lin) if not l]
  lin_c_avals = [c.aval for c, l in zip(consts, c_lin) if l]
  n_kc, n_lc, n_kx = len(known_c), len(lin_c_avals), len(known_x)
  ny = len(ct_ys)

  def body_t(*a):
    kc, acc, ctc = a[:n_kc], a[n_kc:n_kc + n_lc], a[n_kc + n_lc:n_kc + n_lc + ncar]
    kx, cty = a[n_kc + n_lc + ncar:n_kc + n_lc + ncar + n_kx], a[n_kc + n_lc + ncar + n_kx:]
    outs = ir.eval_jaxpr(tj, tconsts, *kc, *kx, *ctc, *cty)
    ct_lc, ct_k, ct_lx = outs[:n_lc], outs[n_lc:n_lc + ncar], outs[n_lc + ncar:]
    return [ad.add_tangents(x, y) for x, y in zip(acc, ct_lc)] + list(ct_k) + list(ct_lx)

  in_avals = ([common.aval_of(c) for c in known_c] + lin_c_avals +
              [common.aval_of(c) for c in ct_carry] +
              [common.aval_of(x).update(shape=common.aval_of(x).shape[1:]) for x in known_x] +
              [common.aval_of(c).update(shape=common.aval_of(c).shape[1:]) for c in ct_ys])
  bj, bconsts = common.trace_flat(body_t, in_avals)
  acc0 = [structural.full(a.shape, 0, a.dtype) for a in lin_c_avals]
  new_consts = list(bconsts) + known_c
  outs = scan_p.bind(*new_consts, *acc0, *ct_carry, *known_x, *ct_ys, jaxpr=bj, length=length,
                     reverse=not reverse, num_consts=len(new_consts), num_carry=n_lc + ncar,
                     linear=(False,) * (len(new_consts) + n_lc + ncar + n_kx + ny),
                     unroll=unroll)
  ct_lc, ct_init, ct_lx = outs[:n_lc], outs[n_lc:n_lc + ncar], outs[n_lc + ncar:]
  lc, lx = iter(ct_lc), iter(ct_lx)
  return ([next(lc) if l else None for l in c_lin] + list(ct_init) +
          [next(lx) if l else None for l in x_lin])


ad.primitive_transposes[scan_p] = _scan_transpose


def _scan_batch(args, dims, *, jaxpr, length, reverse, num_consts, num_carry, linear,
                unroll):
  from tracejax._src.lax import utils as lax_utils
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  nconst, ncar = num_consts, num_carry
  consts, init, xs = _split3(args, nconst, ncar)
  c_d, k_d, x_d = _split3(dims, nconst, ncar)
  k_b = [d is not None for d in k_d]
  xs = [batching.matchaxis(x, d, 1, size) if d is not None else x for x, d in zip(xs, x_d)]
  x_in = [0 if d is not None else None for d in x_d]
  while True:
    _, _, od = batching.batch_jaxpr(jaxpr, size, list(c_d) + [0 if b else None for b in k_b]
                                    + x_in)
    new = [a or d is not None for a, d in zip(k_b, od[:ncar])]
    if new == k_b:
      break
    k_b = new
  y_b = [d is not None for d in od[ncar:]]
  kd = [0 if b else None for b in k_b]
  wanted = kd + [0 if b else None for b in y_b]
  bj, bconsts, _ = batching.batch_jaxpr(jaxpr, size, list(c_d) + kd + x_in,
                                        out_dims_wanted=wanted)
  bj, bconsts = common.close_jaxpr(bj, bconsts)
  init = [lax_utils.bdim_at_front(x, d, size) if b and d != 0 else x
          for x, d, b in zip(init, k_d, k_b)]
  new_consts = list(bconsts) + consts
  outs = scan_p.bind(*new_consts, *init, *xs, jaxpr=bj, length=length, reverse=reverse,
                     num_consts=len(new_consts), num_carry=ncar,
                     linear=(False,) * (len(new_consts) + ncar + len(xs)), unroll=unroll)
  return outs, kd + [1 if b else None for b in y_b]


batching.primitive_batchers[scan_p] = _scan_batch


# =============================================================================
# map and associative_scan
# =============================================================================

@traceback_util.api_boundary
def map(f, xs, *, batch_size=None):
  """Map `f` over the leading axis of `xs` with a scan (one compiled loop).

  Args:
    f: a function of one pytree slice of `xs`.
    xs: a pytree of arrays sharing a leading axis.
    batch_size: if given, `f` is vmapped over chunks of `batch_size` slices and the
      scan runs over the chunks (the `n % batch_size` slices left over go through one
      more vmapped call): fewer, wider loop steps.

  >>> map(lambda x: x * 2., jnp.arange(5.), batch_size=2)
  DeviceArray([0., 2., 4., 6., 8.], dtype=float32)
  """
  if batch_size is not None and not isinstance(batch_size, (bool, np.bool_)):
    try:
      batch_size = int(batch_size)
    except (TypeError, ValueError):
      raise TypeError(f"lax.map batch_size must be an int or None, got {batch_size!r}.") \
          from None
    if batch_size < 0:
      raise ValueError(f"lax.map batch_size must be nonnegative, got {batch_size}.")
  if batch_size:
    return _batched_map(f, xs, batch_size)
  _, ys = scan(lambda c, x: (c, f(x)), None, xs)
  return ys


def _batched_map(f, xs, batch_size):
  from tracejax._src.lax import slicing, structural
  leaves, tree = tree_util.tree_flatten(xs)
  if not leaves:
    raise ValueError("lax.map got no values to map over.")
  n = _shape(leaves[0])[0]
  nb, rem = divmod(n, batch_size)

  def vf(*xs_flat):  # f vmapped over the leading axis of flat leaves
    store = []

    def flat(*a):
      out = f(tree_util.tree_unflatten(tree, a))
      o_leaves, o_tree = tree_util.tree_flatten(out)
      store.append(o_tree)
      return o_leaves
    size = _shape(xs_flat[0])[0]
    outs = batching.vmap_flat(flat, size, list(xs_flat), [0] * len(xs_flat),
                              lambda k: [0] * k)
    return outs, store[0]

  main = [slicing.slice_in_dim(x, 0, nb * batch_size, axis=0) for x in leaves]
  main = [structural.reshape(x, (nb, batch_size) + tuple(_shape(x)[1:])) for x in main]
  out_tree = []

  def body(c, chunk):
    outs, t = vf(*chunk)
    out_tree.append(t)
    return c, outs
  outs = None
  if nb:
    _, outs = scan(body, None, main)
    outs = [structural.reshape(y, (nb * batch_size,) + tuple(_shape(y)[2:])) for y in outs]
  if rem:
    tail = [slicing.slice_in_dim(x, nb * batch_size, n, axis=0) for x in leaves]
    tail_outs, t = vf(*tail)
    out_tree.append(t)
    outs = tail_outs if outs is None else [
        structural.concatenate([a, b], 0) for a, b in zip(outs, tail_outs)]
  if outs is None:  # n == 0: map f over an empty axis with a plain scan
    _, ys = scan(lambda c, x: (c, f(x)), None, xs)
    return ys
  return tree_util.tree_unflatten(out_tree[0], outs)


@traceback_util.api_boundary
def associative_scan(fn, elems, reverse=False, axis=0):
  """Prefix scan of an associative `fn` in O(log n) depth (Blelloch-style odd/even)."""
  from tracejax._src.lax import slicing, structural
  leaves, tree = tree_util.tree_flatten(elems)
  if not leaves:
    return elems
  ndim = len(_shape(leaves[0]))
  axis = axis % ndim
  if reverse:
    leaves = [structural.rev(x, (axis,)) for x in leaves]
  n = _shape(leaves[0])[axis]
  if any(_shape(x)[axis] != n for x in leaves):
    raise ValueError("associative_scan: all elements must have the same size along axis")

  def combine(a, b):
    out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
    return tree_util.tree_leaves(out)

  def sl(x, start, stop=None, step=1):
    size = _shape(x)[axis]
    stop = size if stop is None else stop
    if stop <= start:
      shape = list(_shape(x))
      shape[axis] = 0
      return slicing.slice_in_dim(x, 0, 0, axis=axis)
    return slicing.slice_in_dim(x, start, stop, step, axis=axis)

  def interleave(a, b):
    # a has ceil(n/2), b has floor(n/2) elements along axis: a0 b0 a1 b1 ...
    na, nb = _shape(a)[axis], _shape(b)[axis]
    if nb < na:
      pad_cfg = [(0, 0, 0)] * ndim
      pad_cfg[axis] = (0, 1, 0)
      b = structural.pad(b, np.zeros((), b.dtype if hasattr(b, "dtype") else np.float32),
                         pad_cfg)
    sa = list(_shape(a))
    sa.insert(axis + 1, 1)
    a2 = structural.reshape(a, tuple(sa))
    b2 = structural.reshape(b, tuple(sa))
    both = structural.concatenate([a2, b2], axis + 1)
    shape = list(_shape(a))
    shape[axis] = 2 * na
    out = structural.reshape(both, tuple(shape))
    return sl(out, 0, na + nb)

  def scan_rec(elems):
    k = _shape(elems[0])[axis]
    if k < 2:
      return elems
    reduced = combine([sl(x, 0, k - 1, 2) for x in elems], [sl(x, 1, None, 2) for x in elems])
    odd = scan_rec(reduced)
    if k % 2 == 0:
      even = combine([sl(x, 0, -1 + _shape(x)[axis]) for x in odd],
                     [sl(x, 2, None, 2) for x in elems])
    else:
      even = combine(odd, [sl(x, 2, None, 2) for x in elems])
    even = [structural.concatenate([sl(e, 0, 1), r], axis) if _shape(r)[axis] else sl(e, 0, 1)
            for e, r in zip(elems, even)]
    return [interleave(e, o) for e, o in zip(even, odd)]

  out = scan_rec(leaves)
  if reverse:
    out = [structural.rev(x, (axis,)) for x in out]
  return tree_util.tree_unflatten(tree, out)


_ = (ShapedArray, _while_pp)
