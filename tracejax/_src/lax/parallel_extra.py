"""Collectives JAX 0.10.2 has beyond those of parallel.py: `pbroadcast` and
`ragged_all_to_all`.

`pbroadcast(x, axis_name, source)` gives every member of the named axis the value of
member `source`. JAX lowers it to XLA's CollectiveBroadcast; here it is the sum of a
value that only `source` holds (the formula JAX's docstring gives), so it works wherever
`psum` does (pmap, vmap with the axis name, shard_map) and differentiates as that sum.
"""
import numpy as np

from tracejax._src import tree_util
from tracejax._src.core.trace import current_trace, eval_trace
from tracejax._src.lax import parallel

__all__ = ["pbroadcast", "ragged_all_to_all"]


def pbroadcast(x, axis_name, source):
  """Every member of `axis_name` gets member `source`'s value of `x` (a pytree).

  Args:
    x: a pytree of arrays, mapped over `axis_name`.
    axis_name: the name bound by an enclosing `pmap`/`vmap`/`shard_map`.
    source: the index along the axis whose value is copied.

  >>> pmap(lambda v: lax.pbroadcast(v, 'i', 1), 'i')(jnp.arange(2.))  # doctest: +SKIP
  DeviceArray([1., 1.], dtype=float32)
  """
  from tracejax._src.lax import elementwise, structural
  try:
    n = parallel.axis_size(axis_name)
  except NameError:
    name = parallel._names(axis_name)[0]
    # As JAX's: no evaluation rule outside any mapped trace; staged, shard_map's words
    # (those of ppermute, which its check shares).
    raise parallel._unbound_error(name, "pbroadcast",
                                  eager=current_trace() is eval_trace) from None
  source = int(source)
  if not 0 <= source < n:
    raise ValueError(f"pbroadcast source must be in [0, {n}), got {source}")
  mine = elementwise.eq(parallel.axis_index(axis_name), np.int32(source))

  def one(v):
    dt = np.result_type(v)
    kept = elementwise.select_n(mine, structural.full_like(v, 0), v)
    out = parallel.psum(kept, axis_name)
    return out if np.result_type(out) == dt else elementwise.convert_element_type(out, dt)

  return tree_util.tree_map(one, x)


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets,
                      recv_sizes, *, axis_name, axis_index_groups=None):
  """all_to_all of ragged data: each member sends `send_sizes[i]` rows of `operand` from
  `input_offsets[i]` to member `i // k` (k = len(input_offsets) / axis size), which
  writes them into its `output` at the offset the *sender* gives, `output_offsets[i]`;
  the rest of `output` is kept. `recv_sizes` (what each member receives) must agree
  with the senders' sizes, as in JAX.

  Built from `all_gather` and masked selects (JAX lowers it to XLA's RaggedAllToAll,
  which XLA:CPU lacks), so it runs wherever `all_gather` does: pmap, shard_map, vmap.

  Args:
    operand: (L, ...) rows to send from.
    output: (M, ...) rows to update with what is received.
    input_offsets, send_sizes, output_offsets, recv_sizes: 1-d integer arrays of one
      length K, a multiple of the axis size.
    axis_name: the mapped axis.
    axis_index_groups: not supported here (NotImplementedError).
  """
  from tracejax._src import dtypes
  import tracejax.numpy as jnp   # (numpy is above lax: imported when called)
  if axis_index_groups is not None:
    raise NotImplementedError("ragged_all_to_all with axis_index_groups is not supported")
  names = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
  idx = (input_offsets, send_sizes, output_offsets, recv_sizes)
  for name, a in zip(names, idx):
    if not dtypes.issubdtype(np.result_type(a), np.integer):
      raise ValueError(f"ragged_all_to_all {name} must be integer type.")
  for name, a in zip(names, idx):
    shape = np.shape(a)
    if len(shape) != 1 or shape[0] == 0:
      raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension "
                       f"size, but got shape {shape}")
  try:
    n = parallel.axis_size(axis_name)
  except NameError:
    if current_trace() is eval_trace:
      raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap "
                         "or shard_map.") from None
    raise
  k, rest = divmod(np.shape(input_offsets)[0], n)
  if rest:
    raise ValueError(f"ragged_all_to_all: the length of the offsets and sizes, "
                     f"{np.shape(input_offsets)[0]}, must be a multiple of the size of axis "
                     f"{axis_name!r}, {n}")
  operand, output = jnp.asarray(operand), jnp.asarray(output)
  ops = parallel.all_gather(operand, axis_name)                       # (n, L, ...)
  ins, sizes, outs = (parallel.all_gather(jnp.asarray(a).astype(np.int32), axis_name)
                      for a in (input_offsets, send_sizes, output_offsets))   # (n, K)
  me = parallel.axis_index(axis_name)
  rows = jnp.arange(output.shape[0], dtype=np.int32)
  last = max(operand.shape[0] - 1, 0)
  result = output
  for src in range(n):          # the slices member `src` sends to this member
    for t in range(k):
      j = me * k + t
      start, size, at = ins[src][j], sizes[src][j], outs[src][j]
      mask = (rows >= at) & (rows < at + size)
      taken = jnp.take(ops[src], jnp.clip(start + rows - at, 0, last), axis=0)
      mask = mask.reshape(mask.shape + (1,) * (output.ndim - 1))
      result = jnp.where(mask, taken.astype(result.dtype), result)
  return result