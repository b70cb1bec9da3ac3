"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, ppermute, axis_index,
all_to_all, pswapaxes.

A named axis is introduced by `vmap(..., axis_name=...)` (and by `pmap`). The
collective's rule runs in the batching trace that owns the name, where the
named axis is an ordinary array axis: `psum` is a `reduce_sum` over it. A trace
that does not own the name passes the collective on to its parent, so nested
maps over several names work. Outside any map the name is unbound (an error).
"""
import numpy as np

from tracejax._src import tree_util
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching, lowering


def _names(axis_name):
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _unbound(prim):
  def impl(*args, axis_name, **_):
    raise NameError(f"unbound axis name: {_names(axis_name)[0]}. The name must be bound by "
                    "an enclosing vmap or pmap (its axis_name argument).")
  prim.def_impl(impl)
  lowering.register_lowering(prim, lambda ctx, *a, axis_name, **_: impl(axis_name=axis_name))


def _collective(name, reducer, abstract_eval):
  p = Primitive(name)
  p.multiple_results = True
  _unbound(p)
  p.def_abstract_eval(abstract_eval)
  batching._needs_axis.add(p)
  batching._axis_rules.add(p)
  return p


def _split_names(trace, axis_name):
  names = _names(axis_name)
  mine = trace.axis_name is not None and trace.axis_name in names
  rest = tuple(n for n in names if n != trace.axis_name)
  return mine, rest


def _reduce_batch(prim, reduce_fn, scale_unbatched):
  def rule(trace, vals, dims, *, axis_name):
    mine, rest = _split_names(trace, axis_name)
    if not mine:
      return prim.bind(*vals, axis_name=axis_name), dims
    outs = []
    for x, d in zip(vals, dims):
      outs.append(reduce_fn(x, d) if d is not None else scale_unbatched(x, trace.axis_size))
    if rest:
      outs = prim.bind(*outs, axis_name=rest if len(rest) > 1 else rest[0])
    return outs, [None] * len(outs)
  batching.primitive_batchers[prim] = rule


# ---- psum ----

def psum(x, axis_name):
  """Sum `x` (a pytree) over the members of the named axis."""
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, psum_p.bind(*leaves, axis_name=axis_name))


psum_p = _collective("psum", None, lambda *avals, axis_name: list(avals))


def _sum_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_sum(x, (d,))


def _times_size(x, n):
  from tracejax._src.lax import elementwise
  return elementwise.mul(x, np.asarray(n, np.result_type(x)))


_reduce_batch(psum_p, _sum_over, _times_size)
ad.deflinear2(psum_p, lambda cts, *args, axis_name: [
    ad.instantiate_zeros(c) for c in (cts if isinstance(cts, (list, tuple)) else [cts])])


def pmean(x, axis_name):
  """Mean of `x` over the members of the named axis."""
  n = psum(1, axis_name)
  return tree_util.tree_map(lambda v: v / n, psum(x, axis_name))


# ---- pmax / pmin ----

def pmax(x, axis_name):
  """Maximum of `x` over the members of the named axis."""
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, pmax_p.bind(*leaves, axis_name=axis_name))


def pmin(x, axis_name):
  """Minimum of `x` over the members of the named axis."""
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, pmin_p.bind(*leaves, axis_name=axis_name))


pmax_p = _collective("pmax", None, lambda *avals, axis_name: list(avals))
pmin_p = _collective("pmin", None, lambda *avals, axis_name: list(avals))


def _max_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_max(x, (d,))


def _min_over(x, d):
  from tracejax._src.lax import reductions
  return reductions.reduce_min(x, (d,))


_reduce_batch(pmax_p, _max_over, lambda x, n: x)
_reduce_batch(pmin_p, _min_over, lambda x, n: x)
def _pminmax_jvp(prim):
  def jvp(primals, tangents, *, axis_name):
    from tracejax._src.lax import elementwise
    outs = prim.bind(*primals, axis_name=axis_name)
    t_outs = []
    for x, t, o in zip(primals, tangents, outs):
      if type(t) is ad.Zero:
        t_outs.append(t)
        continue
      # The tangent of the member(s) that attain the extremum, averaged over ties.
      mask = elementwise.convert_element_type(elementwise.eq(x, o), np.result_type(t))
      num = psum(elementwise.mul(t, mask), axis_name)
      t_outs.append(elementwise.div(num, psum(mask, axis_name)))
    return outs, t_outs
  ad.primitive_jvps[prim] = jvp


_pminmax_jvp(pmax_p)
_pminmax_jvp(pmin_p)


# ---- all_gather ----

def all_gather(x, axis_name, *, axis=0, tiled=False):
  """Every member receives the stacked values of all members (stacked at `axis`)."""
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, all_gather_p.bind(*leaves, axis_name=axis_name,
                                                          axis=axis, tiled=tiled))


def _all_gather_abstract_eval(*avals, axis_name, axis, tiled):
  raise NameError(f"all_gather: the size of axis {axis_name!r} is only known inside the "
                  "vmap or pmap that binds it")


all_gather_p = Primitive("all_gather")
all_gather_p.multiple_results = True
_unbound(all_gather_p)
all_gather_p.def_abstract_eval(_all_gather_abstract_eval)
batching._needs_axis.add(all_gather_p)
batching._axis_rules.add(all_gather_p)


def _all_gather_batch(trace, vals, dims, *, axis_name, axis, tiled):
  from tracejax._src.lax import structural
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine or rest:
    if not mine:
      return all_gather_p.bind(*vals, axis_name=axis_name, axis=axis, tiled=tiled), dims
    raise NotImplementedError("all_gather over several axis names at once")
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, trace.axis_size)
    shape = np.shape(x) if not hasattr(x, "shape") else x.shape
    x = lax_utils.moveaxis(x, 0, axis)
    if tiled:
      shape = list(x.shape)
      merged = shape[:axis] + [shape[axis] * shape[axis + 1]] + shape[axis + 2:]
      x = structural.reshape(x, tuple(merged))
    outs.append(x)
  return outs, [None] * len(outs)


batching.primitive_batchers[all_gather_p] = _all_gather_batch


# ---- ppermute ----

def ppermute(x, axis_name, perm):
  """Send each member's value along the (source, destination) pairs of `perm`;
  members that receive nothing get zeros."""
  perm = tuple((int(s), int(d)) for s, d in perm)
  leaves, tree = tree_util.tree_flatten(x)
  return tree_util.tree_unflatten(tree, ppermute_p.bind(*leaves, axis_name=axis_name,
                                                        perm=perm))


ppermute_p = _collective("ppermute", None, lambda *avals, axis_name, perm: list(avals))


def _ppermute_batch(trace, vals, dims, *, axis_name, perm):
  from tracejax._src.lax import slicing, structural
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine:
    return ppermute_p.bind(*vals, axis_name=axis_name, perm=perm), dims
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
ad.deflinear2(ppermute_p, lambda cts, *args, axis_name, perm: [
    ppermute(ad.instantiate_zeros(c), axis_name, tuple((d, s) for s, d in perm))
    for c in (cts if isinstance(cts, (list, tuple)) else [cts])])


# ---- axis_index ----

def axis_index(axis_name):
  """The index of this member along the named axis (an int32 scalar)."""
  return axis_index_p.bind(axis_name=axis_name)


axis_index_p = Primitive("axis_index")
_unbound(axis_index_p)
axis_index_p.def_abstract_eval(lambda *, axis_name: ShapedArray((), np.int32))
batching._needs_axis.add(axis_index_p)
batching._axis_rules.add(axis_index_p)


def _axis_index_batch(trace, vals, dims, *, axis_name):
  from tracejax._src.lax import structural
  if trace.axis_name != axis_name:
    return axis_index_p.bind(axis_name=axis_name), None
  return structural.iota(np.int32, trace.axis_size), 0


batching.primitive_batchers[axis_index_p] = _axis_index_batch
ad.defjvp_zero(axis_index_p)


def _all_gather_transpose(cts, *args, axis_name, axis, tiled):
  # Each member's cotangent is its own slice of the gathered cotangent, summed over
  # the members that received it: psum, then take this member's slice.
  from tracejax._src.lax import slicing
  outs = []
  for c in (cts if isinstance(cts, (list, tuple)) else [cts]):
    total = psum(ad.instantiate_zeros(c), axis_name)
    i = axis_index(axis_name)
    size = 1 if not tiled else None
    if tiled:
      n = psum(1, axis_name)
      size = total.shape[axis] // int(n)
      outs.append(slicing.dynamic_slice_in_dim(total, i * size, size, axis))
    else:
      outs.append(slicing.dynamic_index_in_dim(total, i, axis, keepdims=False))
  return outs


ad.deflinear2(all_gather_p, _all_gather_transpose)


# ---- all_to_all, pswapaxes ----

def all_to_all(x, axis_name, split_axis, concat_axis):
  """Materialize the named axis and map another: member i receives slice i (along
  `split_axis`, whose size must be the named axis' size) of every member's value,
  stacked along a new axis at `concat_axis` (in the order of the members).

  The result's shape is `x.shape` with `split_axis` removed and an axis of the named
  axis' size inserted at `concat_axis`.

  >>> vmap(lambda v: all_to_all(v, 'i', 0, 0), axis_name='i')(x)  # doctest: +SKIP
  ... # equals jnp.swapaxes(x, 0, 1) for x of shape (n, n, ...)
  """
  leaves, tree = tree_util.tree_flatten(x)
  for leaf in leaves:
    nd = np.ndim(leaf)
    for name, ax in (("split_axis", split_axis), ("concat_axis", concat_axis)):
      if not isinstance(ax, (int, np.integer)) or not 0 <= ax < max(nd, 1):
        raise ValueError(f"all_to_all: {name}={ax!r} is not an axis of an operand of "
                         f"rank {nd}")
  return tree_util.tree_unflatten(tree, all_to_all_p.bind(
      *leaves, axis_name=axis_name, split_axis=int(split_axis), concat_axis=int(concat_axis)))


def pswapaxes(x, axis_name, axis):
  """Swap the named (mapped) axis with the unmapped axis `axis` of `x` (whose size
  must be the named axis' size); the per-member shape is unchanged.

  >>> vmap(lambda v: pswapaxes(v, 'i', 0), axis_name='i')(x)  # doctest: +SKIP
  ... # equals jnp.swapaxes(x, 0, 1)
  """
  return all_to_all(x, axis_name, axis, axis)


def _all_to_all_abstract_eval(*avals, axis_name, split_axis, concat_axis):
  outs = []
  for a in avals:
    shape = list(a.shape)
    n = shape.pop(split_axis)
    shape.insert(concat_axis, n)
    outs.append(a.update(shape=tuple(shape)))
  return outs


all_to_all_p = _collective("all_to_all", None, _all_to_all_abstract_eval)


def _all_to_all_batch(trace, vals, dims, *, axis_name, split_axis, concat_axis):
  from tracejax._src.lax import utils as lax_utils
  mine, rest = _split_names(trace, axis_name)
  if not mine:
    # Another map's axis: move it in front and shift the per-member axes past it.
    vals = [lax_utils.bdim_at_front(x, d, trace.axis_size) for x, d in zip(vals, dims)]
    outs = all_to_all_p.bind(*vals, axis_name=axis_name, split_axis=split_axis + 1,
                             concat_axis=concat_axis + 1)
    return outs, [0] * len(outs)
  if rest:
    raise ValueError(f"all_to_all takes one axis name, got {axis_name!r}")
  n = trace.axis_size
  outs = []
  for x, d in zip(vals, dims):
    x = lax_utils.bdim_at_front(x, d, n)  # (member j, *per-member shape)
    if x.shape[1 + split_axis] != n:
      raise ValueError(f"all_to_all: split_axis {split_axis} has size "
                       f"{x.shape[1 + split_axis]}, but axis {axis_name!r} has size {n}")
    # Member i receives slice i of split_axis from every member j: split_axis becomes
    # the mapped axis, and the members' axis j goes to concat_axis.
    x = lax_utils.moveaxis(x, 1 + split_axis, 0)       # (i, j, rest)
    outs.append(lax_utils.moveaxis(x, 1, 1 + concat_axis))
  return outs, [0] * len(outs)


batching.primitive_batchers[all_to_all_p] = _all_to_all_batch
# Linear; the transpose sends every slice back: split and concat axes exchanged.
ad.deflinear2(all_to_all_p, lambda cts, *args, axis_name, split_axis, concat_axis: [
    all_to_all_p.bind(ad.instantiate_zeros(c), axis_name=axis_name, split_axis=concat_axis,
                      concat_axis=split_axis)[0]
    for c in (cts if isinstance(cts, (list, tuple)) else [cts])])
