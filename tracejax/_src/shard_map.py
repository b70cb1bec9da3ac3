"""shard_map: a function written for one block of each argument, run on every device of
a mesh at once, its collectives (`psum`, `all_gather`, `ppermute`, `axis_index`, ...)
naming mesh axes.

The staged form is the `shard_map` primitive; its `jaxpr` is the per-block body. Rules:

* impl: one SPMD program over the mesh (interpreters/pxla.py's `compile_spmd`) whose
  inputs and outputs are laid out by the `in_specs`/`out_specs`;
* lowering inside an SPMD program: XLA's manual partitioning (runtime/sharding.py says
  why GSPMD): each input goes through the `Sharding` and `SPMDFullToShardShape` custom
  calls to its block, the body is lowered with the mesh axes as its axis env (its
  collectives become cross-partition ops, lax/parallel.py), and each output goes back
  through `SPMDShardToFullShape`;
* lowering inside a program that is not partitioned (a `jit` of unsharded values): the
  body runs as nested named-axis vmaps over the mesh axes, on that program's device:
  the same numbers, as `pmap` does inside `jit`;
* jvp: a shard_map of the body's JVP; transpose: a shard_map of the body's transpose,
  where a cotangent flowing to an input replicated over some mesh axes is summed over
  them, and an output replicated over some axes passes 1/size of its cotangent to each
  member (so psum, whose transpose is psum, gives JAX's gradients); batching: the
  batch axis becomes a leading, unsplit axis of every block.

The public function also checks, while tracing, that each output is the same on every
member along the mesh axes its out_spec leaves out (check_vma, 2020's check_rep: a
static analysis of the body, `vma_of_jaxpr`); `lax.pcast(x, axis, to='varying')` marks
a value as varying. `axis_names` (or the experimental `auto`) makes only some mesh
axes manual: the body is then the same on every member along the others. On Explicit
mesh axes the arguments' types must match in_specs, and the results are typed by
out_specs (sharding_explicit.py).
"""
import functools
import math

import numpy as np

from tracejax._src import tree_util, util
from tracejax._src.core import ir
from tracejax._src.core.avals import get_aval, raise_to_shaped
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching, lowering, pmap_aot, pmap_spmd, pxla
from tracejax._src.interpreters import staging
from tracejax._src.lax import parallel
from tracejax._src.runtime import sharding as sharding_mod
from tracejax._src.runtime.array import Array

P = sharding_mod.PartitionSpec

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True


# ---- blocks ----

def _factors(mesh, spec, ndim):
  return [math.prod(mesh.axis_size(n) for n in entry) for entry in spec._normalized(ndim)]


def _block_aval(aval, mesh, spec):
  f = _factors(mesh, spec, len(aval.shape))
  return aval.update(shape=tuple(s // k for s, k in zip(aval.shape, f)))


def _global_aval(aval, mesh, spec):
  f = _factors(mesh, spec, len(aval.shape))
  return aval.update(shape=tuple(s * k for s, k in zip(aval.shape, f)))


def _unmentioned(mesh, spec):
  used = {n for entry in spec._normalized(len(spec)) for n in entry}
  return tuple(n for n in mesh.axis_names if n not in used)


@functools.lru_cache(maxsize=None)
def _named(mesh, spec):
  return sharding_mod.NamedSharding(mesh, spec)


# ---- the primitive ----

def _trace_body(f, block_avals, mesh, names=None):
  """Trace `f` on blocks with the mesh axes (or only `names`, the manual ones) bound."""
  ctxs = [parallel.extend_axis_env(n, s) for n, s in zip(mesh.axis_names, mesh.axis_sizes)
          if names is None or n in names]
  for c in ctxs:
    c.__enter__()
  try:
    jaxpr, consts = staging.trace_to_jaxpr(f, block_avals)
  finally:
    for c in reversed(ctxs):
      c.__exit__(None, None, None)
  return staging.closed_call_jaxpr(jaxpr, consts)


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, **_):
  return [_global_aval(v.aval, mesh, s) for v, s in zip(jaxpr.outvars, out_specs)]


shard_map_p.def_abstract_eval(_abstract_eval)

_impl_cache = {}


def _impl(*args, jaxpr, mesh, in_specs, out_specs, check_rep):
  avals = tuple(raise_to_shaped(x.aval if type(x) is Array else get_aval(x)) for x in args)
  key = (id(jaxpr), avals, mesh, in_specs, out_specs)
  hit = _impl_cache.get(key)
  if hit is None or hit[0] is not jaxpr:
    invars = [ir.Var(a) for a in avals]
    outvars = [ir.Var(a) for a in _abstract_eval(*avals, jaxpr=jaxpr, mesh=mesh,
                                                   in_specs=in_specs, out_specs=out_specs)]
    params = dict(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                  check_rep=check_rep)
    outer = ir.Jaxpr([], invars, outvars, [ir.JaxprEqn(invars, outvars, shard_map_p, params)])
    prog = pxla.compile_spmd(outer, [], "shard_map", mesh._flat_devices,
                             [_named(mesh, s) for s in in_specs],
                             [_named(mesh, s) for s in out_specs], mesh)
    if len(_impl_cache) > 1024:
      _impl_cache.clear()
    hit = _impl_cache[key] = (jaxpr, prog)
  return hit[1].execute(args, avals)


shard_map_p.def_impl(_impl)


# ---- lowering ----

def _manual_lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_rep):
  # The manual computation shared with a pmap inside jit (interpreters/pmap_spmd.py).
  return pmap_spmd.manual_computation(
      ctx, args, jaxpr, [], tuple(zip(mesh.axis_names, mesh.axis_sizes)),
      [_named(mesh, s) for s in in_specs], [_named(mesh, s) for s in out_specs])


def _emulated(args, jaxpr, mesh, in_specs, out_specs):
  """The shard_map's value computed on one device: every block, by named vmaps."""
  from tracejax._src import api
  from tracejax._src.lax import slicing, structural
  names, sizes = mesh.axis_names, mesh.axis_sizes
  k = len(names)

  def split(x, spec):
    # (..., d, ...) -> (mesh axis 0, ..., mesh axis k-1, *block) with size-1 axes for the
    # mesh axes the spec does not use (broadcast: every member sees the same block).
    parts = spec._normalized(len(x.shape))
    shape, perm_src = [], {}
    for d, entry in enumerate(parts):
      for n in entry:
        perm_src[n] = len(shape)
        shape.append(mesh.axis_size(n))
      shape.append(x.shape[d] // math.prod(mesh.axis_size(n) for n in entry))
    y = structural.reshape(x, tuple(shape))
    block_axes = [i for i in range(len(shape)) if i not in perm_src.values()]
    mesh_axes = [perm_src[n] for n in names if n in perm_src]
    y = structural.transpose(y, tuple(mesh_axes + block_axes))
    full = []
    it = iter(range(len(mesh_axes)))
    for n in names:
      full.append(y.shape[next(it)] if n in perm_src else 1)
    return structural.reshape(y, tuple(full) + tuple(y.shape[len(mesh_axes):]))

  def join(y, spec):
    # (mesh axes..., *block) -> the global value; replicated mesh axes keep member 0.
    for i, n in reversed(list(enumerate(names))):
      if n not in {m for e in spec._normalized(len(spec)) for m in e}:
        y = slicing.index_in_dim(y, 0, i, keepdims=True)
    block = y.shape[k:]
    parts = spec._normalized(len(block))
    order = []
    for d, entry in enumerate(parts):
      order += [names.index(n) for n in entry] + [k + d]
    unused = [i for i in range(k) if names[i] not in {m for e in parts for m in e}]
    y = structural.transpose(y, tuple(unused + order))
    return structural.reshape(y, tuple(
        s * math.prod(mesh.axis_size(n) for n in e) for s, e in zip(block, parts)))

  xs = [split(x, s) for x, s in zip(args, in_specs)]

  def body(*blocks):
    return ir.eval_jaxpr(jaxpr, [], *blocks)

  fun = body
  for i in reversed(range(k)):
    fun = api.vmap(fun, in_axes=0, axis_name=names[i], axis_size=sizes[i])
  # Arguments with a size-1 mesh axis are broadcast to the axis size first.
  xs = [structural.broadcast_in_dim(x, tuple(sizes) + tuple(x.shape[k:]),
                                    tuple(range(len(x.shape)))) for x in xs]
  outs = fun(*xs)
  return [join(o, s) for o, s in zip(outs, out_specs)]


def _lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_rep):
  if pxla.lowering_partitions() == mesh.size and mesh.size > 1:
    return _manual_lowering(ctx, *args, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                            out_specs=out_specs, check_rep=check_rep)
  return lowering.lower_fun(
      lambda *xs: _emulated(xs, jaxpr, mesh, in_specs, out_specs),
      multiple_results=True)(ctx, *args)


lowering.register_lowering(shard_map_p, _lowering)


# ---- differentiation and batching ----

def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_rep):
  params = dict(mesh=mesh, check_rep=check_rep)
  nz = [type(t) is not ad.Zero for t in tangents]
  block_avals = [v.aval for v in jaxpr.invars]
  t_avals = [a.at_least_vspace() for a, z in zip(block_avals, nz) if z]
  n = len(block_avals)

  # The primal outputs come from a shard_map of the primals alone (as pmap's JVP does):
  # under linearize they stay known, computed before any tangent is.
  p_out = shard_map_p.bind(*primals, jaxpr=jaxpr, in_specs=in_specs, out_specs=out_specs,
                           **params)

  def body(*xs):
    ps, ts = xs[:n], iter(xs[n:])
    tin = [next(ts) if z else ad.Zero(a.at_least_vspace()) for a, z in zip(block_avals, nz)]
    _, t_out = ad.jvp_of_jaxpr(jaxpr, ps, tin)
    return [ad.instantiate_zeros(t) if type(t) is ad.Zero else t for t in t_out]

  new, consts = _trace_body(body, block_avals + t_avals, mesh)
  nz_t = [t for t in tangents if type(t) is not ad.Zero]
  specs_in = ((P(),) * len(consts) + tuple(in_specs) +
              tuple(s for s, z in zip(in_specs, nz) if z))
  t_out = shard_map_p.bind(*consts, *primals, *nz_t, jaxpr=new, in_specs=specs_in,
                           out_specs=tuple(out_specs), **params)
  return p_out, t_out


ad.primitive_jvps[shard_map_p] = _jvp


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_rep):
  from tracejax._src.lax import elementwise
  linear = [ad.is_undefined_primal(a) for a in args]
  cts = [ad.instantiate_zeros(c) if type(c) is ad.Zero else c
         for c in (cts if isinstance(cts, (list, tuple)) else [cts])]
  # An output replicated over some mesh axes: each member holds the whole cotangent;
  # pass each 1/size of it so the members' contributions add up to it once.
  scaled = []
  for c, s in zip(cts, out_specs):
    k = math.prod(mesh.axis_size(n) for n in _unmentioned(mesh, s))
    scaled.append(c if k == 1 or not np.issubdtype(c.dtype, np.inexact) else
                  elementwise.div(c, np.array(k, c.dtype)))
  known = [a for a, l in zip(args, linear) if not l]
  known_avals = [v.aval for v, l in zip(jaxpr.invars, linear) if not l]
  ct_avals = [v.aval for v in jaxpr.outvars]
  lin_specs = [s for s, l in zip(in_specs, linear) if l]

  def body(*xs):
    kn, cs = xs[:len(known)], xs[len(known):]
    # (split by partial evaluation first: a loop carrying primal and tangent values)
    t_jaxpr, t_consts = pmap_aot.transpose_body(jaxpr, linear)
    res = ir.eval_jaxpr(t_jaxpr, t_consts, *kn, *cs)
    out = []
    for r, v, s in zip(res, [v for v, l in zip(jaxpr.invars, linear) if l], lin_specs):
      r = ad.instantiate_zeros(r) if type(r) is ad.Zero else r
      axes = _unmentioned(mesh, s)
      out.append(parallel.psum(r, axes) if axes else r)
    return out

  new, consts = _trace_body(body, known_avals + ct_avals, mesh)
  specs_in = ((P(),) * len(consts) + tuple(s for s, l in zip(in_specs, linear) if not l) +
              tuple(out_specs))
  outs = iter(shard_map_p.bind(*consts, *known, *scaled, jaxpr=new, mesh=mesh,
                               in_specs=specs_in, out_specs=tuple(lin_specs),
                               check_rep=check_rep))
  return [next(outs) if l else None for l in linear]


ad.primitive_transposes[shard_map_p] = _transpose


def _batch(args, dims, *, jaxpr, mesh, in_specs, out_specs, check_rep):
  from tracejax._src.lax import utils as lax_utils
  size = next(x.shape[d] if isinstance(x, Tracer) else np.shape(x)[d]
              for x, d in zip(args, dims) if d is not None)
  moved, in_dims, specs = [], [], []
  for x, d, s in zip(args, dims, in_specs):
    if d is None:
      moved.append(x)
      in_dims.append(None)
      specs.append(s)
    else:
      moved.append(lax_utils.moveaxis(x, d, 0))
      in_dims.append(0)
      specs.append(P(None, *s))
  ctxs = [parallel.extend_axis_env(n, k) for n, k in zip(mesh.axis_names, mesh.axis_sizes)]
  for c in ctxs:
    c.__enter__()
  try:
    new, consts, _ = batching.batch_jaxpr(jaxpr, size, in_dims,
                                          batching.rule_axis_name(mesh.axis_names),
                                          out_dims_wanted=[0] * len(jaxpr.outvars))
  finally:
    for c in reversed(ctxs):
      c.__exit__(None, None, None)
  body, const_args = staging.closed_call_jaxpr(new, consts)
  outs = shard_map_p.bind(*const_args, *moved, jaxpr=body, mesh=mesh,
                          in_specs=(P(),) * len(const_args) + tuple(specs),
                          out_specs=tuple(P(None, *s) for s in out_specs),
                          check_rep=check_rep)
  return outs, [0] * len(outs)


batching.primitive_batchers[shard_map_p] = _batch


# ---- replication checking (check_vma, 2020's check_rep) ----
#
# Which mesh axes each value of the body may vary over (its "vma"): an argument varies
# over the mesh axes its in_spec splits it on; `axis_index(n)` varies over n; psum,
# pmean, pmax and pmin over some axes make a value invariant over them; all_gather,
# ppermute, all_to_all, psum_scatter and `pcast(..., to='varying')` make it vary over
# theirs; any other operation varies over the union of its operands'. An output whose
# out_spec leaves a mesh axis out claims to be the same on every member along it: if
# it may vary over that axis, shard_map raises JAX's error (check_vma=False turns the
# check off). This is a static check only: the numbers do not depend on it.

_REDUCING = frozenset({"psum", "pmax", "pmin"})
_VARYING = frozenset({"all_gather", "ppermute", "all_to_all", "reduce_scatter", "pcast",
                      "axis_index"})


def _axes(name):
  return set(name) if isinstance(name, (tuple, list)) else {name}


def _collective_axes(jaxpr):
  """Every axis named by a varying collective in `jaxpr` or the jaxprs nested in it."""
  out = set()
  for eqn in jaxpr.eqns:
    if eqn.primitive.name in _VARYING:
      out |= _axes(eqn.params["axis_name"])
    for sub in ir.subjaxprs(eqn):
      out |= _collective_axes(sub)
  return out


def _call_body(eqn):
  """The body of a call-like equation whose inputs and outputs are the body's (jit,
  custom_jvp/vjp calls, remat), else None."""
  for key in ("call_jaxpr", "jaxpr", "fun_jaxpr"):
    j = eqn.params.get(key)
    j = getattr(j, "jaxpr", j)
    if isinstance(j, ir.Jaxpr) and len(j.invars) == len(eqn.invars) and \
        len(j.outvars) == len(eqn.outvars):
      return j
  return None


def _check_typed_input(aval, spec, explicit):
  """On Explicit mesh axes an argument's type already says how it is split: in_specs
  must agree with it over those axes (JAX's error otherwise; `jax.sharding.reshard`
  moves the data first)."""
  nd = len(aval.shape)
  want = tuple(None if not kept else kept[0] if len(kept) == 1 else kept
               for kept in (tuple(n for n in e if n in explicit)
                            for e in spec._normalized(nd)))
  have = tuple(aval.spec) if hasattr(aval, "spec") and hasattr(aval, "mesh") else \
      (None,) * nd
  if want != have:
    raise ValueError(
        f"in_specs passed to shard_map: {P(*(tuple(spec) + (None,) * (nd - len(spec))))} does not match "
        f"the specs of the input: {P(*have)} for arg: {aval}. `in_specs` is an optional "
        "argument so you can omit specifying it and shard_map will infer the in_specs from "
        "the arguments. If you want to reshard your inputs, you can use `jax.reshard` on "
        "the arguments and then pass those args to shard_map.")


def _check_bound(jaxpr, manual):
  """NameError (JAX's words) for a collective in the body that names a mesh axis the
  body is not manual over (an `auto` axis) and that no enclosing map binds."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name in _REDUCING or eqn.primitive.name in _VARYING:
      for n in _axes(eqn.params["axis_name"]):
        if n in manual:
          continue
        try:
          parallel.axis_size(n)
        except NameError:
          raise NameError(f"Found an unbound axis name: {n}. To fix this, please call pvary "
                          "under `jax.shard_map`.") from None
    for sub in ir.subjaxprs(eqn):
      _check_bound(sub, manual)


def vma_of_jaxpr(jaxpr, in_vmas, manual):
  """The vma (a frozenset of mesh axis names) of each output of `jaxpr`, given its
  inputs'; `manual`: the mesh axes the check is about."""
  env = {}

  def read(v):
    return env.get(v, frozenset()) if isinstance(v, ir.Var) else frozenset()

  for v, m in zip(jaxpr.invars, in_vmas):
    env[v] = frozenset(m)
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    union = frozenset().union(*ins) if ins else frozenset()
    name = eqn.primitive.name
    if name in _REDUCING:
      axes = _axes(eqn.params["axis_name"])
      outs = [m - axes for m in ins]
    elif name in _VARYING:
      axes = frozenset(_axes(eqn.params["axis_name"])) & manual
      outs = [m | axes for m in ins] if ins else [axes] * len(eqn.outvars)
    elif name == "shard_map":
      outs = [union] * len(eqn.outvars)
    else:
      body = _call_body(eqn)
      if body is not None:
        outs = vma_of_jaxpr(body, ins, manual)
      else:
        extra = frozenset()
        for sub in ir.subjaxprs(eqn):   # loops and branches: conservatively, anything
          extra |= frozenset(_collective_axes(sub)) & manual   # their collectives add
        outs = [union | extra] * len(eqn.outvars)
    for v, m in zip(eqn.outvars, outs):
      env[v] = m
  return [read(v) for v in jaxpr.outvars]


def _vma_error(name, mesh, specs, vmas, manual):
  msgs = []
  for k, (s, m) in enumerate(zip(specs, vmas)):
    unmentioned = [n for n in mesh.axis_names
                   if n in manual and n not in {x for e in s._normalized(len(s)) for x in e}]
    bad = [n for n in unmentioned if n in m]
    if not bad:
      continue
    key = f"[{k}]" if len(specs) > 1 else ""
    if len(unmentioned) > 1:
      need = ",".join(n for n in mesh.axis_names
                      if n in {x for e in s._normalized(len(s)) for x in e})
      got = ",".join(n for n in mesh.axis_names if n in m)
      msgs.append(f"* out_specs{key} is {s!r} which implies that the corresponding output "
                  f"value is only varying across mesh axes {{{need}}} and not "
                  f"{{{','.join(bad)}}}, but it was inferred to be possibly varying over "
                  f"{{{got}}}")
    else:
      msgs.append(f"* out_specs{key} is {s!r} which implies that the corresponding output "
                  f"value is replicated across mesh axis '{unmentioned[0]}', but could not "
                  "infer replication over any axes")
  if not msgs:
    return None
  if len(msgs) == 1:
    msgs = [msgs[0][2:]]
  return (f"shard_map applied to the function '{name}' was given out_specs which require "
          "replication which can't be statically inferred given the mesh:\n\n"
          f"The mesh given has shape {tuple(mesh.axis_sizes)} with corresponding axis names "
          f"{mesh.axis_names}.\n\n" + "\n\n".join(msgs) + "\n\n" +
          "Check if these output values are meant to be replicated over those mesh axes. "
          "If not, consider revising the corresponding out_specs entries. If so, consider "
          "disabling the check by passing the check_vma=False argument to `jax.shard_map`.")


# ---- pcast: mark a value as varying over mesh axes ----

pcast_p = Primitive("pcast")
pcast_p.multiple_results = True
_PCAST_TO = ("reduced", "unreduced", "varying")


def pcast(x, axis_name, *, to):
  """Mark `x` (a pytree) as varying over the mesh axes `axis_name` inside `shard_map`
  (`to='varying'`): the values are unchanged; replication checking (check_vma) then
  treats them as possibly different on each member along those axes.

  Args:
    x: a pytree of arrays.
    axis_name: a mesh axis name or a tuple of them.
    to: 'varying' ('reduced' and 'unreduced' are JAX's other kinds, which tracejax's
      types do not track).

  >>> shard_map(lambda b: lax.pcast(b, 'x', to='varying'), mesh=mesh, in_specs=P(),
  ...           out_specs=P('x'))(x)                    # doctest: +SKIP
  """
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
  if not axis_name:
    return x
  if to not in _PCAST_TO:
    raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                     f"{set(_PCAST_TO)}")
  if to != "varying":
    raise ValueError(f"Unsupported pcast from=invariant, to={to!r}: tracejax tracks "
                     "only 'varying'")
  leaves, tree = tree_util.tree_flatten(x)
  if not leaves:
    return x
  for n in _axes(axis_name):
    parallel.axis_size(n)   # an unbound name is an error here, as for collectives
  return tree_util.tree_unflatten(tree, pcast_p.bind(*leaves, axis_name=axis_name))


pcast_p.def_impl(lambda *xs, axis_name: list(xs))
pcast_p.def_abstract_eval(lambda *avals, axis_name: list(avals))
lowering.register_lowering(pcast_p, lambda ctx, *xs, axis_name: list(xs))
# Identity on values; its transpose is the identity too, because the cotangent of an
# input replicated over mesh axes is summed over them where shard_map's transpose
# leaves the body (so the psum JAX attaches to pcast's transpose happens there).
ad.primitive_jvps[pcast_p] = lambda primals, tangents, *, axis_name: (
    pcast_p.bind(*primals, axis_name=axis_name),
    [t if type(t) is ad.Zero else pcast_p.bind(t, axis_name=axis_name)[0]
     for t in tangents])
ad.primitive_transposes[pcast_p] = lambda cts, *args, axis_name: list(cts)
batching.primitive_batchers[pcast_p] = lambda args, dims, *, axis_name: (
    pcast_p.bind(*args, axis_name=axis_name), list(dims))


# ---- the public function ----

def _check_specs(what, specs, mesh, manual=None):
  manual = frozenset(mesh.axis_names) if manual is None else manual
  for s in specs:
    if not isinstance(s, P):
      raise TypeError(f"shard_map {what} must be PartitionSpecs (or pytrees of them), got "
                      f"{s!r}")
    for entry in s._normalized(len(s)):
      for n in entry:
        if n not in manual:
          raise ValueError(
              f"shard_map {what} argument must refer to an axis marked as manual "
              f"({manual}), but:\n\n  {what} refers to {n!r}\n\n"
              f"Check the {what} values passed to shard_map.")


def _spec_leaves(specs, tree_values, what):
  is_leaf = lambda x: x is None or isinstance(x, P)
  if is_leaf(specs):
    return [specs if specs is not None else P()] * len(tree_util.tree_leaves(tree_values))
  try:
    out = tree_util.broadcast_prefix(specs, tree_values, is_leaf=is_leaf)
  except (ValueError, TypeError):
    raise ValueError(f"shard_map {what} must be a PartitionSpec or a pytree prefix of the "
                     f"values, got {specs!r} for {tree_util.tree_structure(tree_values)}") \
        from None
  return [P() if s is None else s for s in out]


def shard_map(f=None, mesh=None, in_specs=None, out_specs=None, check_rep=True, *,
              check_vma=None, auto=frozenset(), axis_names=frozenset()):
  """Run `f` on one block of each argument per device of `mesh`, all at once; inside,
  collectives (`lax.psum(x, 'x')`, `all_gather`, `ppermute`, `axis_index`...) name mesh
  axes.

  Args:
    f: the per-block function (pytrees in and out).
    mesh: the `Mesh` (default: the one of an enclosing `with mesh:`).
    in_specs: a PartitionSpec per positional argument (or a pytree prefix): how each
      argument is split into blocks; mesh axes a spec omits see the whole value. None:
      each argument's own NamedSharding spec over `mesh` (P() for any other value).
    out_specs: the same for the outputs: how the blocks are put together; an output
      whose spec omits a mesh axis must be equal across it (e.g. the result of a psum).
    check_rep, check_vma: whether to check that every output is the same on all the
      members along the mesh axes its out_spec leaves out (e.g. the result of a psum
      over them); a ValueError in JAX's words when it may not be (default: on).
      `check_vma` (today's name) wins over `check_rep` (2020's) when given.
    axis_names: the mesh axes the body is manual over (default: all); the others
      (and, in the experimental spelling, the `auto` ones) are left to the partitioner:
      specs and collectives may not name them, and the body sees the whole extent of
      the values along them.

  Returns:
    The function over global arrays. Usable as a decorator:
    `@partial(shard_map, mesh=mesh, in_specs=P('x'), out_specs=P())`.

  >>> f = shard_map(lambda b: lax.psum(b.sum(), 'x'), mesh=mesh, in_specs=P('x'),
  ...               out_specs=P())                        # doctest: +SKIP
  >>> f(jnp.arange(8.))                                   # doctest: +SKIP
  Array(28., dtype=float32)
  """
  if f is None:
    return lambda g: shard_map(g, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                               check_rep=check_rep, check_vma=check_vma, auto=auto,
                               axis_names=axis_names)
  if not callable(f):
    raise TypeError(f"shard_map requires a callable, got {f!r}")
  if mesh is None:
    mesh = sharding_mod.current_mesh()
    if mesh is None:
      raise ValueError("shard_map needs a mesh: pass mesh=..., or call it inside "
                       "`with mesh:`")
  if not isinstance(mesh, sharding_mod.Mesh):
    raise TypeError(f"shard_map requires a Mesh for its mesh argument, got {mesh!r}")
  if out_specs is None:
    raise TypeError("shard_map requires out_specs")
  name = util.fun_name(f)
  check = bool(check_rep if check_vma is None else check_vma)
  for what, axes in (("axis_names", axis_names), ("auto", auto)):
    for n in axes:
      if n not in mesh.axis_names:
        raise ValueError(f"shard_map {what} {set(axes)} must be mesh axes "
                         f"{mesh.axis_names}; got {n!r}")
  manual = frozenset(axis_names) if axis_names else frozenset(mesh.axis_names) - set(auto)
  explicit = frozenset(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                       if t == sharding_mod.AxisType.Explicit)

  @functools.wraps(f)
  def wrapped(*args):
    leaves, in_tree = tree_util.tree_flatten(args)
    ispec = in_specs
    if isinstance(ispec, list):
      ispec = tuple(ispec)
    if ispec is None:   # inferred: the spec of each argument laid out over this mesh
      specs = [x._sharding.spec if type(x) is Array and
               isinstance(x._sharding, sharding_mod.NamedSharding) and
               x._sharding.mesh == mesh else
               P(*x.aval.spec) if isinstance(x, Tracer) and
               getattr(x.aval, "mesh", None) == mesh else P() for x in leaves]
    elif isinstance(ispec, P):
      specs = _spec_leaves(ispec, args, "in_specs")
    else:
      if not isinstance(ispec, tuple) or len(ispec) != len(args):
        ispec = (ispec,) if len(args) == 1 else ispec
      specs = _spec_leaves(tuple(ispec), args, "in_specs")
    _check_specs("in_specs", specs, mesh, manual)
    block_avals = []
    for i, (x, s) in enumerate(zip(leaves, specs)):
      a = raise_to_shaped(x.aval if isinstance(x, (Tracer, Array)) else get_aval(x))
      if len(s) > len(a.shape):
        raise ValueError(
            f"shard_map applied to the function {name!r} was given an in_specs entry which "
            "is too long to be compatible with the corresponding input value from the "
            f"function:\n\nin_specs is {s!r} which has length {len(s)}, but the passed "
            f"args[{i}] has shape {a.str_short()}, which has rank {len(a.shape)} (and "
            f"{len(a.shape)} < {len(s)})\n\nEntries in in_specs must be of length no "
            "greater than the number of axes in the corresponding input value.")
      for d, entry in enumerate(s._normalized(len(a.shape))):
        k = math.prod(mesh.axis_size(n) for n in entry)
        if a.shape[d] % k:
          names = entry[0] if len(entry) == 1 else entry
          raise ValueError(
              f"shard_map applied to the function {name!r} was given argument arrays with "
              "axis sizes that are not evenly divisible by the corresponding mesh axis "
              f"sizes:\n\nThe mesh given has shape {mesh.axis_sizes} with corresponding "
              f"axis names {mesh.axis_names}.\n\nthe passed args[{i}] of shape "
              f"{a.str_short()} corresponds to in_specs of value {s!r}, which maps array "
              f"axis {d} (of size {a.shape[d]}) to mesh axis {names!r} (of size {k}), but "
              f"{k} does not evenly divide {a.shape[d]}\n\nArray arguments' axis sizes must "
              "be evenly divisible by the mesh axis or axes indicated by the "
              "corresponding elements of the argument's in_specs entry.")
      if explicit:
        _check_typed_input(a, s, explicit)
      block_avals.append(_block_aval(a, mesh, s))
    store = []

    def flat(*blocks):
      out = f(*tree_util.tree_unflatten(in_tree, blocks))
      ol, ot = tree_util.tree_flatten(out)
      store.append((ot, out))
      return ol

    body, consts = _trace_body(flat, block_avals, mesh, manual)
    out_tree, out_example = store[0]
    ospecs = _spec_leaves(tuple(out_specs) if isinstance(out_specs, list) else out_specs,
                          out_example, "out_specs")
    _check_specs("out_specs", ospecs, mesh, manual)
    if manual != frozenset(mesh.axis_names):
      _check_bound(body, manual)
    if check:
      in_vmas = [frozenset()] * len(consts) + [
          frozenset(n for e in s._normalized(len(s)) for n in e) for s in specs]
      msg = _vma_error(name, mesh, ospecs, vma_of_jaxpr(body, in_vmas, manual), manual)
      if msg is not None:
        raise ValueError(msg)
    for v, s in zip(body.outvars, ospecs):
      if len(s) > len(v.aval.shape):
        raise ValueError(f"shard_map out_specs {s!r} has length {len(s)}, but the "
                         f"function {name!r} returned a value of rank "
                         f"{len(v.aval.shape)}")
    outs = shard_map_p.bind(*consts, *leaves, jaxpr=body, mesh=mesh,
                            in_specs=(P(),) * len(consts) + tuple(specs),
                            out_specs=tuple(ospecs), check_rep=check)
    return tree_util.tree_unflatten(out_tree, outs)

  return wrapped
