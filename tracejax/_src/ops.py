"""`jax.ops`: functional indexed updates (the 2020 API) and segment reductions.

`index_update(x, idx, y)` is the pure form of `x[idx] = y`: it returns a new
array and leaves `x` alone (JAX arrays are immutable, C-S01/C-S02). These are
the 2020 spellings of `x.at[idx].set(y)` and friends, with the same semantics:
NumPy indexing, updates at out-of-bounds indices dropped, repeated indices
accumulating for the combining forms.

The segment reductions combine the rows of `data` that share a segment id with
one scatter, e.g. `segment_sum(data, ids)[k] = sum of data[i] where ids[i] == k`.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.lax import gather as lax_gather
from tracejax._src.lax import structural
from tracejax._src.numpy import indexing, util


class _Indexable:
  """`jax.ops.index`: turns indexing syntax into an index, e.g. `index[1, :]` is
  `(1, slice(None))`, to pass to `index_update` and friends."""
  __slots__ = ()

  def __getitem__(self, index):
    return index

  def __repr__(self):
    return "jax.ops.index"


index = _Indexable()


def index_update(x, idx, y, indices_are_sorted=False, unique_indices=False):
  """Pure equivalent of `x[idx] = y`: a copy of `x` with `y` written at `idx`
  (NumPy indexing; `y` broadcasts to `x[idx]`'s shape). Same as `x.at[idx].set(y)`.

  >>> jax.ops.index_update(jnp.zeros((3, 3)), jax.ops.index[1, :], 1.)  # row 1 of ones
  """
  return indexing.IndexUpdateHelper(x)[idx].set(
      y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_add(x, idx, y, indices_are_sorted=False, unique_indices=False):
  """Pure equivalent of `x[idx] += y` (repeated indices accumulate). Same as
  `x.at[idx].add(y)`."""
  return indexing.IndexUpdateHelper(x)[idx].add(
      y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_mul(x, idx, y, indices_are_sorted=False, unique_indices=False):
  """Pure equivalent of `x[idx] *= y`. Same as `x.at[idx].multiply(y)`."""
  return indexing.IndexUpdateHelper(x)[idx].multiply(
      y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_min(x, idx, y, indices_are_sorted=False, unique_indices=False):
  """Pure equivalent of `x[idx] = minimum(x[idx], y)`. Same as `x.at[idx].min(y)`."""
  return indexing.IndexUpdateHelper(x)[idx].min(
      y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


def index_max(x, idx, y, indices_are_sorted=False, unique_indices=False):
  """Pure equivalent of `x[idx] = maximum(x[idx], y)`. Same as `x.at[idx].max(y)`."""
  return indexing.IndexUpdateHelper(x)[idx].max(
      y, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


# ---- segment reductions ----

def _segment_reduce(name, scatter_op, identity, data, segment_ids, num_segments,
                    indices_are_sorted, unique_indices, mode):
  """`out[k]` = the `scatter_op` combination of `identity` and the `data[i]` whose
  `segment_ids[i] == k`, for k in [0, num_segments): one scatter. Ids outside
  that range (negative ones too) are dropped by default ('clip' clamps them)."""
  util.check_arraylike(name, data, segment_ids)
  data = util.to_array(data)
  segment_ids = util.to_array(segment_ids)
  if not dtypes.is_integer(segment_ids.dtype):
    raise TypeError(f"{name} segment_ids must be integers, got {segment_ids.dtype}")
  ids_shape = util.shape(segment_ids)
  data_shape = util.shape(data)
  if data_shape[:len(ids_shape)] != ids_shape:
    raise ValueError(f"{name}: segment_ids of shape {ids_shape} must match the leading "
                     f"dimensions of data, of shape {data_shape}")
  if num_segments is None:
    # The output shape depends on the ids, so they must be known now.
    ids = concrete_or_error(np.asarray, segment_ids,
                            f"The num_segments argument of {name} is None, so the "
                            "segment_ids determine the output shape. Pass num_segments.")
    num_segments = int(ids.max()) + 1 if ids.size else 0
  num_segments = operator.index(num_segments)
  if num_segments < 0:
    raise ValueError(f"{name} num_segments must be nonnegative, got {num_segments}")
  dtype = util.dtype_of(data)
  out = structural.full((num_segments,) + data_shape[len(ids_shape):],
                        np.array(identity(dtype), dtype))
  dnums = lax_gather.ScatterDimensionNumbers(
      update_window_dims=tuple(range(len(ids_shape), len(data_shape))),
      inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  indices = structural.expand_dims(segment_ids, (len(ids_shape),))
  return scatter_op(out, indices, data, dnums, indices_are_sorted=indices_are_sorted,
                    unique_indices=unique_indices, mode=mode)


def _zero(dtype):
  return False if dtype == np.bool_ else 0


def _one(dtype):
  return True if dtype == np.bool_ else 1


def _lowest(dtype):
  if dtypes.is_inexact(dtype):
    return -np.inf
  return dtypes.iinfo(dtype).min if dtype != np.bool_ else False


def _highest(dtype):
  if dtypes.is_inexact(dtype):
    return np.inf
  return dtypes.iinfo(dtype).max if dtype != np.bool_ else True


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Computes the sum within segments of an array.

  `out[k]` is the sum of the `data[i]` with `segment_ids[i] == k`, for k in
  `[0, num_segments)` (default: the largest id + 1, which needs concrete ids);
  empty segments are 0 and ids out of range are dropped. `bucket_size` is
  accepted for compatibility (one scatter does the whole sum).

  >>> jax.ops.segment_sum(jnp.arange(5), jnp.array([0, 0, 1, 1, 2]), 3)
  DeviceArray([1, 5, 4], dtype=int32)
  """
  del bucket_size
  return _segment_reduce("segment_sum", lax_gather.scatter_add, _zero, data, segment_ids,
                         num_segments, indices_are_sorted, unique_indices, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
  """Computes the product within segments of an array (empty segments are 1)."""
  del bucket_size
  return _segment_reduce("segment_prod", lax_gather.scatter_mul, _one, data, segment_ids,
                         num_segments, indices_are_sorted, unique_indices, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Computes the maximum within segments of an array (empty segments are -inf,
  or the smallest integer)."""
  del bucket_size
  return _segment_reduce("segment_max", lax_gather.scatter_max, _lowest, data, segment_ids,
                         num_segments, indices_are_sorted, unique_indices, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
  """Computes the minimum within segments of an array (empty segments are inf, or
  the largest integer)."""
  del bucket_size
  return _segment_reduce("segment_min", lax_gather.scatter_min, _highest, data, segment_ids,
                         num_segments, indices_are_sorted, unique_indices, mode)
