"""`jax.smap`: `shard_map` over one mesh axis of the `jax.set_mesh` context, with vmap's
`in_axes`/`out_axes` (an integer axis `a` is the spec `P(None, ..., axis_name)` with
`a` Nones; None is `P()`), as in JAX 0.10.2.
"""
import functools

from tracejax._src import tree_util
from tracejax._src.runtime import sharding as sharding_mod


class _InferType:
  """`in_axes`' default: each argument's layout over the mesh decides (JAX's `Infer`)."""
  def __repr__(self):
    return "Infer"


Infer = _InferType()


def _axes_to_spec(axis_name, axis):
  P = sharding_mod.PartitionSpec
  return P() if axis is None else P(*([None] * axis + [axis_name]))


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
  """Map `f` over one axis (`axis_name`) of the `jax.set_mesh` mesh: `f` runs on each
  shard along that axis (manual there, as in `shard_map(axis_names={axis_name})`; the
  other mesh axes are left to the partitioner). Usable as a decorator (`f` omitted).

  Args:
    f: the per-shard function.
    in_axes: an int, None, or a tuple of those per positional argument: which axis of
      each argument is split over `axis_name` (default: inferred from the arguments'
      shardings).
    out_axes: an int, None or a (nested) container of those: where the axis goes in
      each output.
    axis_name: the mesh axis (a hashable, not a tuple).
  """
  kw = dict(in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if f is None:
    return lambda g: _smap(g, **kw)
  return _smap(f, **kw)


def _smap(f, *, in_axes, out_axes, axis_name):
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                    "entries corresponding to the positional arguments passed to the "
                    f"function, but got {in_axes}.")
  if in_axes is not Infer and not all(isinstance(l, int)
                                      for l in tree_util.tree_leaves(in_axes)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                    f"container with those types as leaves, but got {in_axes}.")
  if not all(isinstance(l, int) for l in tree_util.tree_leaves(out_axes)):
    raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")
  to_spec = functools.partial(_axes_to_spec, axis_name)
  in_specs = None if in_axes is Infer else tree_util.tree_map(
      to_spec, in_axes, is_leaf=lambda x: x is None)
  out_specs = tree_util.tree_map(to_spec, out_axes, is_leaf=lambda x: x is None)

  @functools.wraps(f)
  def mapped(*args):
    from tracejax._src import shard_map as shard_map_mod
    mesh = sharding_mod.context_mesh()
    if mesh is None:
      raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter "
                       "into a mesh context")
    specs = in_specs
    if isinstance(specs, sharding_mod.PartitionSpec):
      specs = (specs,) * len(args)
    return shard_map_mod.shard_map(f, mesh=mesh, in_specs=specs, out_specs=out_specs,
                                   axis_names=frozenset({axis_name}))(*args)
  return mapped
