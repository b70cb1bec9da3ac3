"""Misuse errors of `pmap` and of the collectives, worded as JAX 0.10.2 words them.

JAX 0.10.2 runs `pmap` as a `shard_map` over a 1-d mesh named after the pmap's axis
(`'_internal_pmap_axis_name'` when it has none), so several of its errors speak of meshes
and shardings; the helpers here build the same messages from tracejax's own values, so
that tests written against JAX's messages (`assertRaisesRegex`) pass here too. Kept out of
pxla.py, which is at its size limit.
"""
import numpy as np

from tracejax._src.runtime import backend as xb

PMAP_AXIS = "_internal_pmap_axis_name"   # the name JAX gives the axis of an unnamed pmap


def axis_str(name):
  """How JAX shows a pmap axis name inside a mesh repr."""
  return repr(name if isinstance(name, str) else PMAP_AXIS)


def context_mesh_mismatch(outer_name, outer_size, inner_name, inner_size, platform="cpu"):
  """The ValueError of a pmap that JAX 0.10.2 meets inside a pmap body where it cannot
  nest it (for instance under a `lax.cond` or `lax.scan` of the outer body): the inner
  pmap's mesh is not the outer one's (Manual) context mesh."""
  kind = xb.devices(platform)[0].device_kind if platform else "cpu"
  return ValueError(
      f"The context mesh AbstractMesh({axis_str(outer_name)}: {outer_size}, "
      f"axis_types=(Manual,), device_kind={kind}, num_cores=None, platform={platform}) "
      f"should match the mesh passed to shard_map Mesh({axis_str(inner_name)}: "
      f"{inner_size}, axis_types=(Auto,))")


def check_vmap_lowering(ctx, axis_name, axis_size):
  """Before an xla_pmap is lowered as a named-axis vmap inside another program: inside a
  pmap body (a replicated program: a pmap hidden in a cond/scan/while there) JAX 0.10.2
  rejects it (`context_mesh_mismatch`); elsewhere the program's devices must hold it."""
  mc = ctx.module_context
  if mc.num_replicas > 1:
    outer_name, outer_size = mc.axis_env[-1] if mc.axis_env else (None, mc.num_replicas)
    raise context_mesh_mismatch(outer_name, outer_size, axis_name, axis_size, mc.platform)
  ndev = len(xb.devices(mc.platform))
  if axis_size > ndev:
    raise ValueError(
        f"compiling computation that requires {axis_size} logical devices, but "
        f"only {ndev} XLA devices are available (num_replicas={axis_size}, "
        "num_partitions=1)")


class IndivisibleError(ValueError):
  """An argument's mapped axis that the pmap's devices do not divide (JAX 0.10.2 raises
  its `IndivisibleError`, a ValueError, when it lays the argument out over them)."""


def _shape_of(x):
  from tracejax._src.core.trace import Tracer
  return tuple(x.shape) if isinstance(x, Tracer) else tuple(np.shape(x))


def _indivisible(name, m, shape, d):
  spec = ", ".join(["None"] * d + [repr(PMAP_AXIS if not isinstance(name, str) else name)])
  spec = spec + "," if d == 0 else spec
  tiling = [m if k == d else 1 for k in range(len(shape))]
  return IndivisibleError(
      f"Sharding NamedSharding(mesh=Mesh({axis_str(name)}: {m}, axis_types=(Auto,)), "
      f"spec=P({spec}), memory_kind=device) implies that array axis {d} is partitioned "
      f"{m} times, but the dimension size is {shape[d]} (full shape: {shape}, "
      f"per-dimension tiling factors: {tiling} should evenly divide the shape)")


def _staged_indivisible(name, m, bad):
  """JAX 0.10.2's error for sizes the devices do not divide when the pmap is staged
  (under jit): its shard_map's, one paragraph per such argument."""
  from tracejax._src.core.avals import get_aval, raise_to_shaped
  axis = PMAP_AXIS if not isinstance(name, str) else name
  parts = []
  for shape, d, i, x in bad:
    aval = raise_to_shaped(getattr(x, "aval", None) or get_aval(x))
    spec = ", ".join(["None"] * d + [repr(axis)]) + ("," if d == 0 else "")
    parts.append(f"the passed args[{i}] of shape {aval.str_short()}, where args[{i}] is the "
                 f"index {i} component of _fun's varargs parameter 'flat_args', corresponds "
                 f"to in_specs[{i}] of value P({spec}), which maps array axis {d} (of size "
                 f"{shape[d]}) to mesh axis {axis!r} (of size {m}), but {m} does not evenly "
                 f"divide {shape[d]}")
  return ValueError(
      "shard_map applied to the function '_fun' was given argument arrays with axis sizes "
      "that are not evenly divisible by the corresponding mesh axis sizes:\n\nThe mesh "
      f"given has shape ({m},) with corresponding axis names ({axis!r},).\n\n"
      + "\n\n".join(parts) + "\n\nArray arguments' axis sizes must be evenly divisible by "
      "the mesh axis or axes indicated by the corresponding elements of the argument's "
      "in_specs entry. Consider checking that in_specs are correct, and if so consider "
      "changing the mesh axis sizes or else padding the input and adapting '_fun' "
      "appropriately.")


def mapped_axis_size(pf, leaves, dims):
  """The size of a pmap's mapped axis from its argument leaves and their mapped axes
  (`dims`, None for a broadcast one), checked as JAX 0.10.2 checks it: at least one
  mapped argument (tracejax also takes `axis_size=` alone), `axis_size=` equal to the
  first mapped argument's size, each mapped size divisible by the number of devices the
  pmap runs on (JAX's mesh: that many of its devices), and all of them equal.

  Args:
    pf: the PmapFunction (its `axis_size`, `axis_name`, `devices`, `backend`).
    leaves: the flat dynamic arguments (arrays, tracers, scalars).
    dims: per leaf, its mapped axis or None.
  """
  sizes, first = [], None
  for i, (x, d) in enumerate(zip(leaves, dims)):
    if d is None:
      continue
    shape = _shape_of(x)
    if not -len(shape) <= d < len(shape):
      raise AxisOutOfRange(f"pmap in_axes {d} is out of bounds for an argument of rank "
                           f"{len(shape)}")
    d = d % len(shape)
    sizes.append((shape, d, i, x))
    if first is None:
      first = shape[d]
  if first is None:
    if pf.axis_size is not None:
      return pf.axis_size
    raise ValueError("pmap requires at least one argument with a mapped axis.")
  if pf.axis_size is not None and pf.axis_size != first:
    raise ValueError(f"Specified axis_size {pf.axis_size} doesn't match received "
                     f"axis_size {first}.")
  try:
    devs = pf.devices if pf.devices is not None else (
        xb.local_devices(pf.backend) if pf.backend else xb.local_devices())
    several = len(xb.devices(pf.backend) if pf.backend else xb.devices()) > len(devs)
  except Exception:   # an unknown backend: its own error comes later
    devs, several = (), True
  m = min(first, len(devs))
  if m and not several:
    bad = [(shape, d, i, x) for shape, d, i, x in sizes if shape[d] % m]
    from tracejax._src.core.trace import Tracer
    if bad and any(isinstance(x, Tracer) for x in leaves):
      raise _staged_indivisible(pf.axis_name, m, bad)   # a pmap staged into a jit
    if bad:
      raise _indivisible(pf.axis_name, m, bad[0][0], bad[0][1])
  got = sorted({shape[d] for shape, d, _, _ in sizes})
  if len(got) != 1:
    raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {got}")
  return first


class AxisOutOfRange(ValueError, IndexError):
  """A mapped axis (`in_axes`) that the argument does not have: JAX 0.10.2 meets it as an
  IndexError; a ValueError too, as tracejax raised it before."""


def in_axes_prefix_error(in_axes, dyn, kwargs):
  """The ValueError of a pmap `in_axes` that is not a tree prefix of the positional
  arguments, in JAX 0.10.2's words (the key path of the first difference, then what
  `in_axes` must be)."""
  from tracejax._src import tree_util
  head = tree_util._prefix_error((in_axes, 0), (tuple(dyn), kwargs), lambda x: x is None,
                                 "pmap in_axes")
  if head is None:
    head = (f"pmap in_axes specification must be a tree prefix of the corresponding value, "
            f"got specification {in_axes} for value tree "
            f"{tree_util.tree_structure(tuple(dyn))}.")
  msg = (head + "\n\nThe 'full pytree' here is the tuple of arguments passed positionally to "
         "the pmapped function, and the value of `in_axes` must be a tree prefix of that "
         "tuple. But it was not a prefix.")
  if kwargs:
    msg += ("\n\nWhen some arguments are passed by keyword to the pmapped function, they are "
            "not included in the comparison to `in_axes`. Instead, each argument passed by "
            "keyword is mapped over its leading axis. See the description of `in_axes` in "
            "the `pmap` docstring: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.pmap.html#jax.pmap")
  return ValueError(msg + "\n\nCheck that the value of the `in_axes` argument to `pmap` is "
                    "a tree prefix of the tuple of arguments passed positionally to the "
                    "pmapped function.")


def check_pmap_args(devices, static, donate):
  """`pmap(...)`'s own checks, as JAX 0.10.2 makes them when the pmap is made: a given
  `devices` is not empty; no argument is both static and donated."""
  if devices is not None and not tuple(devices):
    raise ValueError("'devices' argument to pmap must be non-empty, or None.")
  both = sorted(set(static) & set(donate))
  if both:
    raise ValueError(f"`static_argnums` {list(static)} and `donate_argnums` {list(donate)} "
                     "cannot intersect.")
