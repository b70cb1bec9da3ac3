"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter,
all_to_all, ppermute, pshuffle, pswapaxes, axis_index.

A named axis is bound in one of two ways, and every collective has a rule for each:

* by `vmap(..., axis_name=...)`: the collective's batching rule runs in the batching
  trace that owns the name, where the named axis is an ordinary array axis (`psum` is a
  `reduce_sum` over it). A trace that does not own the name passes the collective on to
  its parent, so nested maps over several names work;
* by `pmap` (and `xla_computation(axis_env=...)`): the members are XLA replicas. The
  body is traced with the axis sizes in the *tracing* axis env (`extend_axis_env`, for
  shape rules such as all_gather's), and lowered with the module's axis env
  (`ModuleContext.axis_env`): each collective becomes a cross-replica StableHLO op
  whose replica groups `replica_groups` computes. This is the one mechanism for every
  replicated program, and for the manual body of a `shard_map` too: there the axis env
  is the mesh's axes, the members are XLA partitions (flat mesh positions), and each
  collective gets a channel and global device ids (`_channel`); `axis_index` reads
  the partition id instead of the replica id.

Outside any map the name is unbound (an error). Differentiation follows JAX: psum's
transpose is psum, all_gather's is psum_scatter and the reverse, ppermute's is the
inverse permutation, all_to_all's swaps split and concat axes; pmax and pmin have no
differentiation rule (as in JAX). `axis_index_groups` (psum, pmean, pmax, pmin,
all_gather, psum_scatter, all_to_all) restrict each member's collective to its group:
the replica groups of the lowering are cut to them (pmap and shard_map; under vmap a
NotImplementedError, as in JAX). A tuple of names in `axis_index` gives the member's
row-major position over those axes.
"""
import contextlib
import itertools
import math
import threading

import numpy as np

from tracejax._src import tree_util
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching, lowering
from tracejax._src.interpreters.lowering import hlo, ir


def _names(axis_name):
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


# ---- the tracing axis env: names bound by an enclosing pmap while its body is traced ----

class _AxisEnv(threading.local):
  def __init__(self):
    self.frames = []   # [(name, size)], innermost last


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(name, size):
  """Bind `name` to `size` while a mapped body (pmap's) is traced."""
  _axis_env.frames.append((name, int(size)))
  try:
    yield
  finally:
    _axis_env.frames.pop()


def axis_size(axis_name):
  """The product of the sizes of the named axes bound by enclosing pmaps (traced bodies)
  or vmaps.

  Raises NameError for a name nothing binds."""
  n = 1
  for name in _names(axis_name):
    for bound, size in reversed(_axis_env.frames):
      if bound == name:
        n *= size
        break
    else:
      size = _vmap_axis_size(name)
      if size is not None:
        n *= size
        continue
      raise _unbound_error(name)
  return n


# JAX 0.10.2's words for a name nothing binds: a collective that checks its names as
# shard_map's do says which collective to call under shard_map (pmax and pmin name
# psum); one without an evaluation rule is a NotImplementedError when run eagerly.
_FOUND_AS = {"psum": "psum", "pmax": "psum", "pmin": "psum", "ppermute": "ppermute",
             "axis_index": "axis_index", "pbroadcast": "ppermute"}
_NO_EVAL_RULE = frozenset(["ppermute", "pbroadcast"])


class _AxisOutOfRange(ValueError, IndexError):
  """An axis argument the operand does not have, where JAX 0.10.2 raises an IndexError
  (a ValueError too, as tracejax raised it before)."""


def _unbound_error(name, prim_name=None, eager=False):
  """The error for axis name `name` that nothing binds, met by collective `prim_name`
  (None: an axis size lookup) when run eagerly (`eager`) or staged."""
  if eager and prim_name in _NO_EVAL_RULE:
    return NotImplementedError(f"Evaluation rule for '{prim_name}' not implemented")
  via = _FOUND_AS.get(prim_name)
  if via is None or (eager and prim_name == "psum"):
    return NameError(f"unbound axis name: {name}")
  return NameError(f"Found an unbound axis name: {name}. To fix this, please call {via} "
                   "under `jax.shard_map`.")


def _vmap_axis_size(name):
  """The size of `name` if an enclosing vmap binds it (a batching trace below the current
  one: e.g. a gradient traced inside `vmap(..., axis_name=name)`)."""
  from tracejax._src.core.trace import current_trace
  t = current_trace()
  while t is not None:
    if isinstance(t, batching.BatchTrace) and t.axis_name == name:
      return t.axis_size
    t = getattr(t, "parent", None)
  return None


# ---- the lowering axis env: collectives as cross-replica ops ----

def replica_groups(axis_env, names):
  """The replicas that a collective over `names` combines, one group per position of
  the other axes; replica ids are row-major over `axis_env` (last axis fastest).

  >>> replica_groups((('i', 4), ('j', 2)), ('i',)).tolist()
  [[0, 2, 4, 6], [1, 3, 5, 7]]
  """
  env_names = [n for n, _ in axis_env]
  sizes = [s for _, s in axis_env]
  reduced = [env_names.index(n) for n in names]
  kept = [i for i in range(len(sizes)) if i not in reduced]
  ids = np.arange(math.prod(sizes), dtype=np.int64).reshape(sizes)
  group_size = math.prod(sizes[i] for i in reduced)
  return np.ascontiguousarray(ids.transpose(kept + reduced).reshape(-1, group_size))


def _env_groups(ctx, prim_name, axis_name):
  """Replica groups of `axis_name` in the module's axis env (NameError if unbound)."""
  env = ctx.module_context.axis_env or ()
  env_names = [n for n, _ in env]
  for n in _names(axis_name):
    if n not in env_names:
      raise _unbound_error(n, prim_name)
  return replica_groups(env, _names(axis_name))


def _groups_kw(axis_index_groups):
  """The `axis_index_groups` parameter of a collective's bind: present only when given,
  so that jaxprs without groups print as before."""
  return {} if axis_index_groups is None else {"axis_index_groups": axis_index_groups}


def _check_groups(axis_index_groups, axis_name, equal_sizes):
  """`axis_index_groups` as a tuple of tuples of ints, checked against the size of the
  named axis (when it is known while tracing): every index exactly once, and (for the
  collectives whose result shape depends on it) groups of one size."""
  if axis_index_groups is None:
    return None
  try:
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  except TypeError:
    raise TypeError("axis_index_groups must be a sequence of sequences of ints, got "
                    f"{axis_index_groups!r}") from None
  try:
    n = axis_size(axis_name)
  except NameError:
    n = None
  flat = sorted(i for g in groups for i in g)
  if not groups or (n is not None and flat != list(range(n))) or len(set(flat)) != len(flat):
    raise ValueError(f"axis_index_groups must cover all indices exactly once, got {groups} "
                     f"for axis {axis_name!r}" + (f" of size {n}" if n is not None else ""))
  if equal_sizes and len({len(g) for g in groups}) != 1:
    raise ValueError(f"axis_index_groups must all be the same size, got {groups}")
  return groups


def _group_size(axis_name, axis_index_groups):
  """The number of members a collective combines: the group size, else the axis size."""
  return len(axis_index_groups[0]) if axis_index_groups else axis_size(axis_name)


def _apply_groups(groups, axis_index_groups):
  """Replica groups restricted to `axis_index_groups` (indices along the named axes)."""
  if axis_index_groups is None:
    return groups
  return np.array([[row[i] for i in g] for row in groups for g in axis_index_groups],
                  np.int64) if len({len(g) for g in axis_index_groups}) == 1 else \
      _ragged(groups, axis_index_groups)


def _ragged(groups, axis_index_groups):
  # Groups of several sizes (psum accepts them): XLA takes them padded with -1.
  rows = [[row[i] for i in g] for row in groups for g in axis_index_groups]
  width = max(map(len, rows))
  return np.array([r + [-1] * (width - len(r)) for r in rows], np.int64)


def _no_vmap_groups(axis_index_groups, what="vmap collectives"):
  if axis_index_groups is not None:
    raise NotImplementedError(f"axis_index_groups not supported in {what}. Please open a "
                              "feature request!")


def _i64_attr(groups):
  return ir.DenseIntElementsAttr.get(np.ascontiguousarray(groups, np.int64))


def _partitioned(ctx):
  """Whether `ctx` lowers the manual body of a shard_map (an SPMD program): the axis
  env then names mesh axes, whose members are XLA partitions, not replicas."""
  return getattr(ctx.module_context, "spmd_manual", False)


_channel_ids = itertools.count(1)


def _channel(ctx, global_ids=True):
  """Keyword arguments making a collective cross-partition in a shard_map body (a
  channel of its own, groups in global device ids = flat mesh positions); none for a
  replicated (pmap) program."""
  if not _partitioned(ctx):
    return {}
  kw = {"channel_handle": hlo.ChannelHandle.get(next(_channel_ids) % (1 << 31), 1)}
  if global_ids:
    kw["use_global_device_ids"] = True
  return kw


def _all_reduce(x, aval, groups, combine, kw=None):
  scalar = ir.RankedTensorType.get([], lowering.dtype_to_ir_type(aval.dtype))
  op = hlo.AllReduceOp([lowering.aval_to_ir_type(aval)], [x], _i64_attr(groups),
                       **(kw or {}))
  block = op.regions[0].blocks.append(scalar, scalar)
  with ir.InsertionPoint(block):
    hlo.return_([combine(aval)(*block.arguments)])
  return op.results[0]


def _sum_combiner(aval):
  return hlo.or_ if aval.dtype == np.bool_ else hlo.add


def _max_combiner(aval):
  return hlo.or_ if aval.dtype == np.bool_ else hlo.maximum


def _min_combiner(aval):
  return hlo.and_ if aval.dtype == np.bool_ else hlo.minimum


def _reduction_lowering(combine):
  def rule(ctx, *args, axis_name, axis_index_groups=None):
    groups = _apply_groups(_env_groups(ctx, ctx.primitive.name, axis_name),
                           axis_index_groups)
    return [_all_reduce(x, a, groups, combine, _channel(ctx))
            for x, a in zip(args, ctx.avals_in)]
  return rule


def _unbound_impl(prim):
  def impl(*args, axis_name, **_):
    raise _unbound_error(_names(axis_name)[0], prim.name, eager=True)
  prim.def_impl(impl)


def _collective(name, abstract_eval, lowering_rule):
  p = Primitive(name)
  p.multiple_results = True
  _unbound_impl(p)
  p.def_abstract_eval(abstract_eval)
  batching._needs_axis.add(p)
  batching._axis_rules.add(p)
  lowering.register_lowering(p, lowering_rule)
  return p


def _split_names(trace, axis_name):
  names = _names(axis_name)
  mine = trace.axis_name is not None and trace.axis_name in names
  rest = tuple(n for n in names if n != trace.axis_name)
  return mine, rest


def _one_or_tuple(names):
  return names if len(names) > 1 else names[0]


def _reduce_batch(prim, reduce_fn, scale_unbatched):
  def rule(trace, vals, dims, *, axis_name, axis_index_groups=None):
    mine, rest = _split_names(trace, axis_name)
    if not mine:
      return prim.bind(*vals, axis_name=axis_name, **_groups_kw(axis_index_groups)), dims
    _no_vmap_groups(axis_index_groups)
    outs = []
    for x, d in zip(vals, dims):
      outs.append(reduce_fn(x, d) if d is not None else scale_unbatched(x, trace.axis_size))
    if rest:
      outs = prim.bind(*outs, axis_name=_one_or_tuple(rest))
    return outs, [None] * len(outs)
  batching.primitive_batchers[prim] = rule


def _as_list(cts):
  return list(cts) if isinstance(cts, (list, tuple)) else [cts]


# ---- psum, pmean ----

def psum(x, axis_name, *, axis_index_groups=None):
  """Sum `x` (a pytree) over the members of the named axis (or axes, a tuple).

  Args:
    x: a pytree of arrays (booleans are counted, as int32, as in JAX).
    axis_name: the name bound by an enclosing `pmap`/`vmap`, or a tuple of names.
    axis_index_groups: None, or groups of indices along the axis (every index once):
      each member sums over its group only (pmap and shard_map, not vmap).

  >>> pmap(lambda v: lax.psum(v, 'i'), axis_name='i')(jnp.arange(4.))  # doctest: +SKIP
  DeviceArray([6., 6., 6., 6.], dtype=float32)
  """
  from tracejax._src.lax import elementwise
  groups = _check_groups(axis_index_groups, axis_name, False)
  leaves, tree = tree_util.tree_flatten(x)
  leaves = [elementwise.convert_element_type(v, np.int32) if np.result_type(v) == np.bool_
            else v for v in leaves]
  return tree_util.tree_unflatten(tree, psum_p.bind(*leaves, axis_name=axis_name,
                                                    **_groups_kw(groups)))


psum_p = _collective("psum", lambda *avals, axis_name, **_: list(avals),
                     _reduction_lowering(_sum_combiner))


def _sum_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_sum(x, (d,))


def _times_size(x, n):
  from tracejax._src.lax import elementwise
  return elementwise.mul(x, np.asarray(n, np.result_type(x)))


_reduce_batch(psum_p, _sum_over, _times_size)
# As in JAX (2020 and today without varying-axis checks): psum's transpose is psum.
ad.deflinear2(psum_p, lambda cts, *args, axis_name, axis_index_groups=None: psum_p.bind(
    *[ad.instantiate_zeros(c) for c in _as_list(cts)], axis_name=axis_name,
    **_groups_kw(axis_index_groups)))


def pmean(x, axis_name, *, axis_index_groups=None):
  """Mean of `x` (a pytree) over the members of the named axis (or axes), or of each
  member's group (`axis_index_groups`, as for `psum`).

  >>> pmap(lambda v: lax.pmean(v, 'i'), axis_name='i')(jnp.arange(4.))  # doctest: +SKIP
  DeviceArray([1.5, 1.5, 1.5, 1.5], dtype=float32)
  """
  # The count is static (as in JAX): a psum of ones would be one more collective, a
  # synchronisation of every device, at each call.
  if axis_index_groups is not None:
    _check_groups(axis_index_groups, axis_name, False)
    n = len(axis_index_groups[0])
  else:
    try:
      n = axis_size(axis_name)
    except NameError:   # bound by no frame this module sees: count at run time
      n = psum(1, axis_name)
  return tree_util.tree_map(lambda v: v / n,
                            psum(x, axis_name, axis_index_groups=axis_index_groups))


# ---- pmax / pmin ----

def pmax(x, axis_name, *, axis_index_groups=None):
  """Maximum of `x` (a pytree) over the members of the named axis (or axes), or of each
  member's group (`axis_index_groups`, as for `psum`). Not differentiable (as in JAX).

  >>> pmap(lambda v: lax.pmax(v, 'i'), axis_name='i')(jnp.arange(4.))  # doctest: +SKIP
  DeviceArray([3., 3., 3., 3.], dtype=float32)
  """
  groups = _check_groups(axis_index_groups, axis_name, False)
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, pmax_p.bind(*leaves, axis_name=axis_name,
                                                    **_groups_kw(groups)))


def pmin(x, axis_name, *, axis_index_groups=None):
  """Minimum of `x` (a pytree) over the members of the named axis (or axes), or of each
  member's group (`axis_index_groups`, as for `psum`). Not differentiable (as in JAX).

  >>> pmap(lambda v: lax.pmin(v, 'i'), axis_name='i')(jnp.arange(4.))  # doctest: +SKIP
  DeviceArray([0., 0., 0., 0.], dtype=float32)
  """
  groups = _check_groups(axis_index_groups, axis_name, False)
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, pmin_p.bind(*leaves, axis_name=axis_name,
                                                    **_groups_kw(groups)))


pmax_p = _collective("pmax", lambda *avals, axis_name, **_: list(avals),
                     _reduction_lowering(_max_combiner))
pmin_p = _collective("pmin", lambda *avals, axis_name, **_: list(avals),
                     _reduction_lowering(_min_combiner))


def _max_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_max(x, (d,))


def _min_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_min(x, (d,))


_reduce_batch(pmax_p, _max_over, lambda x, n: x)
_reduce_batch(pmin_p, _min_over, lambda x, n: x)


# pmax and pmin have no differentiation rule, as in JAX (2020 and 0.10.2): grad/jvp
# through them raise NotImplementedError("Differentiation rule for 'pmax' not
# implemented"), the generic message of ad.py for a primitive without a JVP.


# ---- axis_index ----

def axis_index(axis_name):
  """The index of this member along the named axis (an int32 scalar).

  >>> pmap(lambda v: v * lax.axis_index('i'), axis_name='i')(jnp.ones(4))  # doctest: +SKIP
  DeviceArray([0., 1., 2., 3.], dtype=float32)

  With a tuple of names, the member's position in the row-major order of those axes
  (the first name varies slowest).
  """
  names = _names(axis_name)
  if len(names) == 1:
    return axis_index_p.bind(axis_name=names[0])
  from tracejax._src.lax import elementwise
  idx = None
  for n in names:
    i = axis_index_p.bind(axis_name=n)
    idx = i if idx is None else elementwise.add(
        elementwise.mul(idx, np.int32(axis_size(n))), i)
  return idx


def _axis_index_lowering(ctx, *, axis_name):
  env = ctx.module_context.axis_env or ()
  _env_groups(ctx, "axis_index", axis_name)
  names = [n for n, _ in env]
  k = names.index(axis_name)
  stride = math.prod(s for _, s in env[k + 1:])
  i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
  rid = hlo.convert(i32, hlo.partition_id() if _partitioned(ctx) else hlo.replica_id())
  idx = hlo.divide(rid, lowering.ir_constant(np.int32(stride)))
  return [hlo.remainder(idx, lowering.ir_constant(np.int32(env[k][1])))]


axis_index_p = Primitive("axis_index")
_unbound_impl(axis_index_p)
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray((), np.int32))
batching._needs_axis.add(axis_index_p)
batching._axis_rules.add(axis_index_p)
lowering.register_lowering(axis_index_p, _axis_index_lowering)


def _axis_index_batch(trace, vals, dims, *, axis_name):
  from tracejax._src.lax import structural
  if trace.axis_name != axis_name:
    return axis_index_p.bind(axis_name=axis_name), None
  return structural.iota(np.int32, trace.axis_size), 0


batching.primitive_batchers[axis_index_p] = _axis_index_batch
ad.defjvp_zero(axis_index_p)


# ---- ppermute, pshuffle ----

def ppermute(x, axis_name, perm):
  """Send each member's value along the (source, destination) pairs of `perm`;
  members that receive nothing get zeros.

  Args:
    x: a pytree of arrays.
    axis_name: the named axis.
    perm: pairs `(source index, destination index)`; no index may repeat as a source or
      as a destination.

  >>> pmap(lambda v: lax.ppermute(v, 'i', [(0, 1), (1, 0)]), 'i')(jnp.arange(2.))  # doctest: +SKIP
  DeviceArray([1., 0.], dtype=float32)
  """
  perm = tuple((int(s), int(d)) for s, d in perm)
  srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, ppermute_p.bind(*leaves, axis_name=axis_name,
                                                        perm=perm))


def pshuffle(x, axis_name, perm):
  """Member i receives the value of member `perm[i]` (`perm` a permutation of
  `range(axis size)`).

  >>> pmap(lambda v: lax.pshuffle(v, 'i', [1, 0]), 'i')(jnp.arange(2.))  # doctest: +SKIP
  DeviceArray([1., 0.], dtype=float32)
  """
  perm = [int(p) for p in perm]
  if sorted(perm) != list(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def _ppermute_lowering(ctx, *args, axis_name, perm):
  groups = _env_groups(ctx, "ppermute", axis_name)
  pairs = np.array([[g[s], g[d]] for g in groups for s, d in perm], np.int64).reshape(-1, 2)
  return [hlo.CollectivePermuteOp(x, _i64_attr(pairs),
                                  **_channel(ctx, global_ids=False)).result for x in args]


ppermute_p = _collective("ppermute", lambda *avals, axis_name, perm: list(avals),
                         _ppermute_lowering)


def _ppermute_batch(trace, vals, dims, *, axis_name, perm):
  from tracejax._src.lax import slicing, structural
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine:
    return ppermute_p.bind(*vals, axis_name=axis_name, perm=perm), dims
  if rest:
    raise NotImplementedError("ppermute over several axis names under vmap")
  n = trace.axis_size
  src_of = {d: s for s, d in perm}
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, n)
    rows = []
    for dst in range(n):
      if dst in src_of:
        rows.append(slicing.slice_in_dim(x, src_of[dst], src_of[dst] + 1, axis=0))
      else:
        rows.append(structural.full((1,) + tuple(x.shape[1:]), 0, x.dtype))
    outs.append(structural.concatenate(rows, 0))
  return outs, [0] * len(outs)


batching.primitive_batchers[ppermute_p] = _ppermute_batch
ad.deflinear2(ppermute_p, lambda cts, *args, axis_name, perm: ppermute_p.bind(
    *[ad.instantiate_zeros(c) for c in _as_list(cts)], axis_name=axis_name,
    perm=tuple((d, s) for s, d in perm)))


# ---- all_gather ----

def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
  """Every member receives the values of all members, stacked along a new axis `axis`
  (or, with `tiled=True`, concatenated along the existing axis `axis`).

  Args:
    x: a pytree of arrays.
    axis_name: the named axis.
    axis_index_groups: None, or groups (of one size) of indices along the axis: each
      member gathers its group's values only (pmap and shard_map, not vmap).
    axis: where the members' axis goes in the result.
    tiled: concatenate instead of stacking.

  >>> pmap(lambda v: lax.all_gather(v, 'i'), 'i')(jnp.arange(2.))  # doctest: +SKIP
  DeviceArray([[0., 1.], [0., 1.]], dtype=float32)
  """
  groups = _check_groups(axis_index_groups, axis_name, True)
  leaves, tree = tree_util.tree_flatten(x)
  outs = []
  for leaf in leaves:
    nd = np.ndim(leaf)
    ax = axis
    if isinstance(ax, (int, np.integer)) and ax < 0:   # counted from the end, as in JAX
      ax += nd + (not tiled)
    if not isinstance(ax, (int, np.integer)) or not 0 <= ax <= nd - bool(tiled):
      raise ValueError(f"all_gather: axis={axis!r} is out of range for an operand of rank "
                       f"{nd} (tiled={tiled})")
    outs += all_gather_p.bind(leaf, axis_name=axis_name, axis=int(ax), tiled=bool(tiled),
                              **_groups_kw(groups))
  return tree_util.tree_unflatten(tree, outs)


def _all_gather_abstract_eval(*avals, axis_name, axis, tiled, axis_index_groups=None):
  n = _group_size(axis_name, axis_index_groups)
  outs = []
  for a in avals:
    shape = list(a.shape)
    if tiled:
      shape[axis] *= n
    else:
      shape.insert(axis, n)
    outs.append(a.update(shape=tuple(shape)))
  return outs


def _all_gather_lowering(ctx, *args, axis_name, axis, tiled, axis_index_groups=None):
  groups = _apply_groups(_env_groups(ctx, "all_gather", axis_name), axis_index_groups)
  outs = []
  for x, a_in, a_out in zip(args, ctx.avals_in, ctx.avals_out):
    if not tiled:  # gather along a new axis of size 1
      shape = list(a_in.shape)
      shape.insert(axis, 1)
      x = hlo.reshape(lowering.aval_to_ir_type(a_in.update(shape=tuple(shape))), x)
    op = hlo.AllGatherOp([lowering.aval_to_ir_type(a_out)], [x], axis, _i64_attr(groups),
                         **_channel(ctx))
    outs.append(op.results[0])
  return outs


all_gather_p = _collective("all_gather", _all_gather_abstract_eval, _all_gather_lowering)


def _all_gather_batch(trace, vals, dims, *, axis_name, axis, tiled, axis_index_groups=None):
  from tracejax._src.lax import structural
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine:
    vals = [lax_utils.bdim_at_front(x, d, trace.axis_size) for x, d in zip(vals, dims)]
    outs = all_gather_p.bind(*vals, axis_name=axis_name, axis=axis + 1, tiled=tiled,
                             **_groups_kw(axis_index_groups))
    return outs, [0] * len(outs)
  _no_vmap_groups(axis_index_groups, "vmap")
  if rest:
    return _all_gather_several(trace, vals, dims, axis_name, axis, tiled, rest), \
        [None] * len(vals)
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, trace.axis_size)
    x = lax_utils.moveaxis(x, 0, axis)
    if tiled:
      shape = list(x.shape)
      merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
      x = structural.reshape(x, tuple(merged))
    if not isinstance(x, Tracer):   # the vmapped NumPy input itself: a new Array, as JAX's
      from tracejax._src.lax import misc as lax_misc
      x = lax_misc.copy_p.bind(x)
    outs.append(x)
  return outs, [None] * len(outs)


def _all_gather_several(trace, vals, dims, axis_name, axis, tiled, rest):
  """all_gather over this vmap's name and others: stack this map's members, gather that
  over the other names, and merge the two member axes in the order of `axis_name`
  (the first name varies slowest, as in JAX)."""
  from tracejax._src.lax import structural
  from tracejax._src.lax import utils as lax_utils
  names = _names(axis_name)
  k = names.index(trace.axis_name)
  if 0 < k < len(names) - 1:
    raise NotImplementedError(f"all_gather over {names} under vmap: the vmapped name must "
                              "come first or last")
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.moveaxis(lax_utils.bdim_at_front(x, d, trace.axis_size), 0, axis)
    x = all_gather_p.bind(x, axis_name=_one_or_tuple(rest), axis=axis, tiled=False)[0]
    if k == 0:  # this map's members vary slowest
      x = lax_utils.moveaxis(x, axis + 1, axis)
    shape = list(x.shape)
    merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
    x = structural.reshape(x, tuple(merged))
    if tiled:
      shape = list(x.shape)
      x = structural.reshape(x, tuple(shape[:axis] + [shape[axis] * shape[axis + 1]] +
                                      shape[axis + 2:]))
    outs.append(x)
  return outs


batching.primitive_batchers[all_gather_p] = _all_gather_batch
ad.deflinear2(all_gather_p, lambda cts, *args, axis_name, axis, tiled, axis_index_groups=None:
              reduce_scatter_p.bind(*[ad.instantiate_zeros(c) for c in _as_list(cts)],
                                    axis_name=axis_name, scatter_dimension=axis, tiled=tiled,
                                    **_groups_kw(axis_index_groups)))


# ---- psum_scatter (reduce_scatter) ----

def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """Sum `x` over the members of the named axis, and give member i only block i of the
  sum along `scatter_dimension` (whose size must be the axis size, or with `tiled=True`
  a multiple of it; untiled, the dimension is removed).

  >>> pmap(lambda v: lax.psum_scatter(v, 'i'), 'i')(jnp.ones((2, 2)))  # doctest: +SKIP
  DeviceArray([2., 2.], dtype=float32)

  `axis_index_groups` (groups of one size): each member sums over its group and gets
  its block of that sum (pmap and shard_map, not vmap).
  """
  groups = _check_groups(axis_index_groups, axis_name, True)
  leaves, tree = tree_util.tree_flatten(x)
  outs = []
  for leaf in leaves:
    nd = np.ndim(leaf)
    sd = scatter_dimension
    if isinstance(sd, (int, np.integer)) and sd < 0:   # counted from the end
      sd += nd
    if not isinstance(sd, (int, np.integer)) or not 0 <= sd < nd:
      raise _AxisOutOfRange(f"psum_scatter: scatter_dimension={scatter_dimension!r} is not "
                            f"an axis of an operand of rank {nd}")
    outs += reduce_scatter_p.bind(leaf, axis_name=axis_name, scatter_dimension=int(sd),
                                  tiled=bool(tiled), **_groups_kw(groups))
  return tree_util.tree_unflatten(tree, outs)


def _check_scatter_size(size, n, tiled, scatter_dimension):
  if (size % n) if tiled else (size != n):
    # (JAX's words: its reduce_scatter's shape rule)
    raise ValueError(f"tiled reduce_scatter operand scatter dimension size {size} must be "
                     f"divisible by shard_count {n}" if tiled else
                     f"reduce_scatter operand scatter dimension size {size} must match "
                     f"shard count {n}")


def _reduce_scatter_abstract_eval(*avals, axis_name, scatter_dimension, tiled,
                                  axis_index_groups=None):
  n = _group_size(axis_name, axis_index_groups)
  outs = []
  for a in avals:
    shape = list(a.shape)
    _check_scatter_size(shape[scatter_dimension], n, tiled, scatter_dimension)
    if tiled:
      shape[scatter_dimension] //= n
    else:
      del shape[scatter_dimension]
    outs.append(a.update(shape=tuple(shape)))
  return outs


def _reduce_scatter_lowering(ctx, *args, axis_name, scatter_dimension, tiled,
                             axis_index_groups=None):
  groups = _apply_groups(_env_groups(ctx, "psum_scatter", axis_name), axis_index_groups)
  outs = []
  for x, a_in, a_out in zip(args, ctx.avals_in, ctx.avals_out):
    shape = list(a_in.shape)
    shape[scatter_dimension] //= len(groups[0])
    block = a_in.update(shape=tuple(shape))
    scalar = ir.RankedTensorType.get([], lowering.dtype_to_ir_type(a_in.dtype))
    op = hlo.ReduceScatterOp(lowering.aval_to_ir_type(block), x, scatter_dimension,
                             _i64_attr(groups), **_channel(ctx))
    blk = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(blk):
      hlo.return_([_sum_combiner(a_in)(*blk.arguments)])
    y = op.result
    if not tiled:
      y = hlo.reshape(lowering.aval_to_ir_type(a_out), y)
    outs.append(y)
  return outs


reduce_scatter_p = _collective("reduce_scatter", _reduce_scatter_abstract_eval,
                               _reduce_scatter_lowering)


def _reduce_scatter_batch(trace, vals, dims, *, axis_name, scatter_dimension, tiled,
                          axis_index_groups=None):
  from tracejax._src.lax import reductions, structural
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  n = trace.axis_size
  if not mine:
    vals = [lax_utils.bdim_at_front(x, d, n) for x, d in zip(vals, dims)]
    outs = reduce_scatter_p.bind(*vals, axis_name=axis_name,
                                 scatter_dimension=scatter_dimension + 1, tiled=tiled,
                                 **_groups_kw(axis_index_groups))
    return outs, [0] * len(outs)
  _no_vmap_groups(axis_index_groups)
  if rest:
    raise NotImplementedError("psum_scatter over several axis names at once under vmap")
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, n)
    _check_scatter_size(x.shape[1 + scatter_dimension], n, tiled, scatter_dimension)
    total = reductions.reduce_sum(x, (0,))              # the sum of every member's value
    total = lax_utils.moveaxis(total, scatter_dimension, 0)
    if tiled:  # member i gets block i: split the dimension into (n, size // n)
      shape = tuple(total.shape)
      total = structural.reshape(total, (n, shape[0] // n) + shape[1:])
      total = lax_utils.moveaxis(total, 1, 1 + scatter_dimension)
    outs.append(total)  # untiled: member i gets row i of the scatter dimension
  return outs, [0] * len(outs)


batching.primitive_batchers[reduce_scatter_p] = _reduce_scatter_batch
ad.deflinear2(reduce_scatter_p, lambda cts, *args, axis_name, scatter_dimension, tiled,
              axis_index_groups=None:
              all_gather_p.bind(*[ad.instantiate_zeros(c) for c in _as_list(cts)],
                                axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
                                **_groups_kw(axis_index_groups)))


# ---- all_to_all, pswapaxes ----

def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Materialize the named axis and map another: member i receives slice i (along
  `split_axis`, whose size must be the named axis' size) of every member's value,
  stacked along a new axis at `concat_axis` (in the order of the members).

  The result's shape is `x.shape` with `split_axis` removed and an axis of the named
  axis' size inserted at `concat_axis`.

  With `tiled=True` the shape is kept but for `split_axis`, divided by the axis size,
  and `concat_axis`, multiplied by it: member i receives block i of every member's
  `split_axis`, concatenated along `concat_axis`. `axis_index_groups` (groups of one
  size) exchange within each group only (pmap and shard_map, not vmap).

  >>> vmap(lambda v: all_to_all(v, 'i', 0, 0), axis_name='i')(x)  # doctest: +SKIP
  ... # equals jnp.swapaxes(x, 0, 1) for x of shape (n, n, ...)
  """
  groups = _check_groups(axis_index_groups, axis_name, True)
  leaves, tree = tree_util.tree_flatten(x)
  outs = []
  for leaf in leaves:
    nd = np.ndim(leaf)
    axes = []
    for name, ax in (("split_axis", split_axis), ("concat_axis", concat_axis)):
      if isinstance(ax, (int, np.integer)) and ax < 0:   # counted from the end
        ax += nd
      if not isinstance(ax, (int, np.integer)) or not 0 <= ax < max(nd, 1):
        # (JAX 0.10.2 meets a bad split axis as an IndexError, a bad concat axis as a
        # ValueError: the split one is raised as both)
        err = _AxisOutOfRange if name == "split_axis" else ValueError
        raise err(f"all_to_all: {name}={ax!r} is not an axis of an operand of rank {nd}")
      axes.append(int(ax))
    sa, ca = axes
    if not tiled and groups is None and len(_names(axis_name)) > 1 and any(
        _vmap_axis_size(n) is not None for n in _names(axis_name)):
      outs.append(_all_to_all_gathered(leaf, axis_name, sa, ca))
      continue
    if not tiled:
      outs += all_to_all_p.bind(leaf, axis_name=axis_name, split_axis=sa, concat_axis=ca,
                                **_groups_kw(groups))
      continue
    outs.append(_all_to_all_tiled(leaf, axis_name, sa, ca, groups))
  return tree_util.tree_unflatten(tree, outs)


def _all_to_all_gathered(x, axis_name, sa, ca):
  """all_to_all over several names some vmap binds (its batching rule takes one name):
  gather every member's value over the names, keep this member's slice of each (its
  position over the names, `axis_index`), the members' axis going to `ca`."""
  from tracejax._src.lax import slicing
  from tracejax._src.lax import utils as lax_utils
  n = axis_size(axis_name)
  if np.shape(x)[sa] != n:
    raise _a2a_size_error(n, np.shape(x)[sa])
  g = all_gather(x, axis_name, axis=0)                     # (members, *x.shape)
  y = slicing.dynamic_index_in_dim(g, axis_index(axis_name), 1 + sa, keepdims=False)
  return lax_utils.moveaxis(y, 0, ca)


def _all_to_all_tiled(x, axis_name, sa, ca, groups):
  """Tiled all_to_all as the untiled one: split `sa` into (n, size // n), exchange the
  n blocks (they arrive stacked at `ca`), then merge that stack into `ca`."""
  from tracejax._src.lax import structural
  n = _group_size(axis_name, groups)
  shape = tuple(np.shape(x))
  if shape[sa] % n:
    raise ValueError(f"The size of all_to_all split_axis ({shape[sa]}) has to be divisible "
                     f"by the size of the named axis {axis_name} ({n})")
  y = structural.reshape(x, shape[:sa] + (n, shape[sa] // n) + shape[sa + 1:])
  y = all_to_all_p.bind(y, axis_name=axis_name, split_axis=sa, concat_axis=ca,
                        **_groups_kw(groups))[0]
  ys = tuple(y.shape)
  return structural.reshape(y, ys[:ca] + (ys[ca] * ys[ca + 1],) + ys[ca + 2:])


def pswapaxes(x, axis_name, axis):
  """Swap the named (mapped) axis with the unmapped axis `axis` of `x` (whose size
  must be the named axis' size); the per-member shape is unchanged.

  >>> vmap(lambda v: pswapaxes(v, 'i', 0), axis_name='i')(x)  # doctest: +SKIP
  ... # equals jnp.swapaxes(x, 0, 1)
  """
  return all_to_all(x, axis_name, axis, axis)


def _a2a_size_error(n, size):
  """all_to_all's split axis must have the axis size (JAX's words)."""
  return ValueError("all_to_all requires the size of the mapped axis axis_name to equal "
                    f"x.shape[split_axis], but they are {n} and {size} respectively.")


def _all_to_all_abstract_eval(*avals, axis_name, split_axis, concat_axis,
                              axis_index_groups=None):
  try:   # bound by an enclosing pmap's trace: check the split size
    n = _group_size(axis_name, axis_index_groups)
  except NameError:
    n = None
  outs = []
  for a in avals:
    if n is not None and a.shape[split_axis] != n:
      raise _a2a_size_error(n, a.shape[split_axis])
    shape = list(a.shape)
    n = shape.pop(split_axis)
    shape.insert(concat_axis, n)
    outs.append(a.update(shape=tuple(shape)))
  return outs


def _all_to_all_lowering(ctx, *args, axis_name, split_axis, concat_axis,
                         axis_index_groups=None):
  groups = _apply_groups(_env_groups(ctx, "all_to_all", axis_name), axis_index_groups)
  n = len(groups[0])
  outs = []
  for x, a_in, a_out in zip(args, ctx.avals_in, ctx.avals_out):
    if a_in.shape[split_axis] != n:
      raise _a2a_size_error(n, a_in.shape[split_axis])
    # XLA's all_to_all keeps the rank: insert a unit axis (at q) that the received
    # blocks stack on, split `split_axis` into n blocks of one, then drop that axis.
    q = concat_axis if concat_axis <= split_axis else concat_axis + 1
    sa = split_axis + 1 if concat_axis <= split_axis else split_axis
    expanded = list(a_in.shape)
    expanded.insert(q, 1)
    y = hlo.reshape(lowering.aval_to_ir_type(a_in.update(shape=tuple(expanded))), x)
    res = list(expanded)
    res[sa], res[q] = 1, n
    op = _all_to_all_op(y, a_in.update(shape=tuple(res)), sa, q, n, groups,
                        _channel(ctx, global_ids=False))
    outs.append(hlo.reshape(lowering.aval_to_ir_type(a_out), op))
  return outs


def _all_to_all_op(x, out_aval, split_dimension, concat_dimension, n, groups, kw=None):
  op = hlo.AllToAllOp([x], split_dimension, concat_dimension, n, _i64_attr(groups),
                      **(kw or {}),
                      results=[lowering.aval_to_ir_type(out_aval)])
  return op.results[0]


all_to_all_p = _collective("all_to_all", _all_to_all_abstract_eval, _all_to_all_lowering)


def _all_to_all_batch(trace, vals, dims, *, axis_name, split_axis, concat_axis,
                      axis_index_groups=None):
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine:
    # Another map's axis: move it in front and shift the per-member axes past it.
    vals = [lax_utils.bdim_at_front(x, d, trace.axis_size) for x, d in zip(vals, dims)]
    outs = all_to_all_p.bind(*vals, axis_name=axis_name, split_axis=split_axis + 1,
                             concat_axis=concat_axis + 1, **_groups_kw(axis_index_groups))
    return outs, [0] * len(outs)
  _no_vmap_groups(axis_index_groups)
  if rest:
    raise ValueError(f"all_to_all takes one axis name, got {axis_name!r}")
  n = trace.axis_size
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, n)  # (member j, *per-member shape)
    if x.shape[1 + split_axis] != n:
      raise _a2a_size_error(n, x.shape[1 + split_axis])
    # Member i receives slice i of split_axis from every member j: split_axis becomes
    # the mapped axis, and the members' axis j goes to concat_axis.
    x = lax_utils.moveaxis(x, 1 + split_axis, 0)       # (i, j, rest)
    outs.append(lax_utils.moveaxis(x, 1, 1 + concat_axis))
  return outs, [0] * len(outs)


batching.primitive_batchers[all_to_all_p] = _all_to_all_batch
# Linear; the transpose sends every slice back: split and concat axes exchanged.
ad.deflinear2(all_to_all_p, lambda cts, *args, axis_name, split_axis, concat_axis,
              axis_index_groups=None: [
    all_to_all_p.bind(ad.instantiate_zeros(c), axis_name=axis_name, split_axis=concat_axis,
                      concat_axis=split_axis, **_groups_kw(axis_index_groups))[0]
    for c in _as_list(cts)])
