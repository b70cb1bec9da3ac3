"""Gather and scatter: XLA's general indexed reads and writes.

`gather` reads slices of an operand at positions held in an index array;
`scatter` writes update slices at such positions (`scatter`), or combines them
with what is there (`scatter_add`, `scatter_sub`, `scatter_mul`, `scatter_min`,
`scatter_max`). NumPy's advanced indexing, `x.at[...]`, `jax.ops` and the
segment reductions all compile to them, and each is the other's transpose: a
gather's cotangent is a scatter-add, a scatter-add's is a gather.

As in JAX, the index vector is always the last dimension of the indices (XLA's
`index_vector_dim` is implicit), and the dimension numbers are the NamedTuples
`GatherDimensionNumbers` and `ScatterDimensionNumbers`. What happens at
out-of-bounds indices is the `mode` (`GatherScatterMode`): gathers default to
PROMISE_IN_BOUNDS (XLA clamps them) and scatters to FILL_OR_DROP (XLA drops
the windows that do not fit), which is what JAX does.
"""
import enum
import math
import operator
import warnings
from typing import NamedTuple

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import canonicalize_shape
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import elementwise_hlo as ew_hlo
from tracejax._src.lax import structural
from tracejax._src.lax import utils
from tracejax._src.lax.structural import _aval, _shape
from tracejax._src.lax.utils import standard_primitive

__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
    "gather", "gather_p", "index_take",
    "scatter", "scatter_p", "scatter_add", "scatter_add_p", "scatter_sub",
    "scatter_sub_p", "scatter_mul", "scatter_mul_p", "scatter_min", "scatter_min_p",
    "scatter_max", "scatter_max_p", "scatter_apply",
]


# =============================================================================
# Dimension numbers and modes
# =============================================================================

class GatherDimensionNumbers(NamedTuple):
  """How the dimensions of a gather's operand, indices and output relate.

  offset_dims: the output dimensions that index into a slice (sorted).
  collapsed_slice_dims: operand dimensions of slice size 1 dropped from the
    output (sorted).
  start_index_map: for each component of an index vector, the operand
    dimension it starts the slice in.
  operand_batching_dims / start_indices_batching_dims: operand and index
    dimensions that are batched together (element i of one with element i of
    the other); the operand ones have slice size 1 and are dropped.

  The index vector is always the last dimension of the indices.
  """
  offset_dims: tuple
  collapsed_slice_dims: tuple
  start_index_map: tuple
  operand_batching_dims: tuple = ()
  start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
  """How the dimensions of a scatter's operand, indices and updates relate.

  update_window_dims: the updates' dimensions that index into a window (sorted).
  inserted_window_dims: operand dimensions of window size 1 that the updates
    do not have (sorted); the mirror of gather's collapsed_slice_dims.
  scatter_dims_to_operand_dims: for each component of an index vector, the
    operand dimension it positions the window in.
  operand_batching_dims / scatter_indices_batching_dims: as for gather.

  The index vector is always the last dimension of the indices.
  """
  update_window_dims: tuple
  inserted_window_dims: tuple
  scatter_dims_to_operand_dims: tuple
  operand_batching_dims: tuple = ()
  scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
  """What gather and scatter do with out-of-bounds indices.

  CLIP: indices are clamped so that the whole window is in bounds.
  FILL_OR_DROP: a gathered window that is even partly out of bounds is all
    `fill_value`; a scattered one is dropped.
  PROMISE_IN_BOUNDS: the caller promises in-bounds indices. XLA then clamps
    gathers and drops scatters; gradients are only right in bounds.
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()

  @staticmethod
  def from_any(s):
    """The mode named by `s`: a mode, 'clip', 'fill'/'drop' (also None) or
    'promise_in_bounds'."""
    if isinstance(s, GatherScatterMode):
      return s
    if s == "clip":
      return GatherScatterMode.CLIP
    if s is None or s == "fill" or s == "drop":
      return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    raise ValueError(f'Unknown gather mode "{s}"')


def _dims(fun_name, what, dims):
  try:
    return tuple(int(operator.index(d)) for d in dims)
  except TypeError:
    raise TypeError(f"{fun_name} dimension_numbers.{what} must be a sequence of integers, "
                    f"got {dims!r}.") from None


def _canonical_gather_dnums(dnums):
  """The dimension numbers as a GatherDimensionNumbers of int tuples (params are
  hashed by the eager cache, and lists would not hash)."""
  if not isinstance(dnums, GatherDimensionNumbers):
    raise TypeError("gather dimension_numbers must be a lax.GatherDimensionNumbers, "
                    f"got {type(dnums).__name__}.")
  return GatherDimensionNumbers(*(_dims("gather", f, d)
                                  for f, d in zip(dnums._fields, dnums)))


def _canonical_scatter_dnums(fun_name, dnums):
  if not isinstance(dnums, ScatterDimensionNumbers):
    raise TypeError(f"{fun_name} dimension_numbers must be a lax.ScatterDimensionNumbers, "
                    f"got {type(dnums).__name__}.")
  return ScatterDimensionNumbers(*(_dims(fun_name, f, d)
                                   for f, d in zip(dnums._fields, dnums)))


def _gather_dnums_of(dnums):
  """The gather that reads back exactly the windows a scatter writes."""
  return GatherDimensionNumbers(
      offset_dims=dnums.update_window_dims,
      collapsed_slice_dims=dnums.inserted_window_dims,
      start_index_map=dnums.scatter_dims_to_operand_dims,
      operand_batching_dims=dnums.operand_batching_dims,
      start_indices_batching_dims=dnums.scatter_indices_batching_dims)


def _scatter_dnums_of(dnums):
  """The scatter that writes exactly the slices a gather reads."""
  return ScatterDimensionNumbers(
      update_window_dims=dnums.offset_dims,
      inserted_window_dims=dnums.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dnums.start_index_map,
      operand_batching_dims=dnums.operand_batching_dims,
      scatter_indices_batching_dims=dnums.start_indices_batching_dims)


def _scatter_window_sizes(operand_shape, updates_shape, dnums):
  """The size of a scatter's window in every operand dimension (the slice sizes of
  the gather that reads it back)."""
  sizes = []
  windows = iter(dnums.update_window_dims)
  for i in range(len(operand_shape)):
    if i in dnums.inserted_window_dims or i in dnums.operand_batching_dims:
      sizes.append(1)
    else:
      sizes.append(updates_shape[next(windows)])
  return tuple(sizes)


# ---- checks shared by the shape rules (XLA's, so nothing malformed reaches it) ----

def _check_sorted(dims, op, name):
  if list(dims) != sorted(dims):
    raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _check_unique(dims, op, name):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _check_in_range(dims, rank, op, name):
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); "
                      f"got: {d}.")


def _check_disjoint(a, b, op, name_a, name_b):
  if set(a) & set(b):
    raise TypeError(f"{name_a} and {name_b} in {op} op must be disjoint; got: {a} and {b}.")


def _check_indices(indices, op):
  if indices.ndim < 1:
    raise TypeError(f"{op} indices must have rank >= 1: the last dimension holds the "
                    f"index vectors (add a trailing dimension of size 1 for scalar "
                    f"indices); got indices of shape {indices.shape}.")
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"{op} indices must have an integer type, got {indices.dtype.name}.")


def _check_batching_dims(operand, indices, operand_bdims, indices_bdims, op, idx_name):
  _check_sorted(operand_bdims, op, "operand_batching_dims")
  _check_unique(operand_bdims, op, "operand_batching_dims")
  _check_in_range(operand_bdims, operand.ndim, op, "operand_batching_dims")
  _check_unique(indices_bdims, op, idx_name)
  _check_in_range(indices_bdims, indices.ndim, op, idx_name)
  if indices.ndim - 1 in indices_bdims:
    raise TypeError(f"{op} op cannot have the index vector dimension as a batching "
                    f"dimension; got {indices_bdims}.")
  if len(operand_bdims) != len(indices_bdims):
    raise TypeError(f"{op} op requires equal numbers of operand_batching_dims and "
                    f"{idx_name}, got {operand_bdims} and {indices_bdims}.")
  ob = tuple(operand.shape[d] for d in operand_bdims)
  ib = tuple(indices.shape[d] for d in indices_bdims)
  if ob != ib:
    raise TypeError(f"{op} op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {ob} and {ib}.")


def _index_upper_bounds(operand_shape, window_sizes, index_map, dtype):
  """Per index component, the largest start at which the window still fits, as a
  1-D constant of the indices' dtype (capped at its maximum: an index of that
  dtype can then never exceed a bound it cannot represent)."""
  top = dtypes.iinfo(dtype).max
  return np.array([min(operand_shape[d] - window_sizes[d], top) for d in index_map], dtype)


# =============================================================================
# gather
# =============================================================================

_NAN = float("nan")  # one object, so params holding it compare equal (NaN != NaN)


def _gather_fill_value(fill_value, dtype):
  """The fill value of a FILL_OR_DROP gather as a hashable Python scalar; by
  default NaN for inexact types, the most negative signed integer, the largest
  unsigned one, True for bool (as in JAX)."""
  dtype = np.dtype(dtype)
  if fill_value is None:
    if dtypes.is_inexact(dtype):
      return _NAN
    if dtypes.is_signed(dtype):
      return int(dtypes.iinfo(dtype).min)
    if dtypes.is_unsigned(dtype):
      return int(dtypes.iinfo(dtype).max)
    return True
  from tracejax._src.core.trace import concrete_or_error
  fill_value = concrete_or_error(np.asarray, fill_value,
                                 "The fill_value argument of gather.")
  if np.ndim(fill_value) != 0:
    raise ValueError(f"gather fill_value must be a scalar, got shape {np.shape(fill_value)}")
  value = fill_value.item()
  if isinstance(value, float) and math.isnan(value):
    return _NAN
  return value


def gather(operand, start_indices, dimension_numbers, slice_sizes, *,
           unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
  """Gather operator: wraps XLA's Gather.

  Reads, for each index vector in `start_indices` (its last dimension), the
  slice of `operand` of sizes `slice_sizes` starting there;
  `dimension_numbers` (a `GatherDimensionNumbers`) says how the dimensions of
  operand, indices and output correspond. `mode` decides what happens out of
  bounds (see `GatherScatterMode`; None means PROMISE_IN_BOUNDS, which clamps);
  with 'fill', out-of-bounds slices are `fill_value` (default NaN for inexact
  types, the extreme value for integers, True for bool).

  Most users never call it: NumPy indexing (`x[idx]`) compiles to it.
  """
  dnums = _canonical_gather_dnums(dimension_numbers)
  parsed = (GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
            else GatherScatterMode.from_any(mode))
  if parsed == GatherScatterMode.FILL_OR_DROP:
    fill_value = _gather_fill_value(fill_value, _aval(operand).dtype)
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices, dimension_numbers=dnums,
                       slice_sizes=canonicalize_shape(slice_sizes),
                       unique_indices=bool(unique_indices),
                       indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                       fill_value=fill_value)


def _gather_shape_rule(operand, indices, *, dimension_numbers, slice_sizes,
                       unique_indices, indices_are_sorted, mode, fill_value):
  dn = dimension_numbers
  _check_indices(indices, "gather")
  out_rank = len(dn.offset_dims) + indices.ndim - 1
  _check_sorted(dn.offset_dims, "gather", "offset_dims")
  _check_unique(dn.offset_dims, "gather", "offset_dims")
  _check_in_range(dn.offset_dims, out_rank, "gather", "offset_dims")
  if len(dn.start_index_map) != indices.shape[-1]:
    raise TypeError(f"Gather op has {len(dn.start_index_map)} elements in start_index_map "
                    f"and the bound of the index vector dimension of indices is "
                    f"{indices.shape[-1]}. These two numbers must be equal.")
  _check_in_range(dn.start_index_map, operand.ndim, "gather", "start_index_map")
  _check_unique(dn.start_index_map, "gather", "start_index_map")
  _check_sorted(dn.collapsed_slice_dims, "gather", "collapsed_slice_dims")
  _check_unique(dn.collapsed_slice_dims, "gather", "collapsed_slice_dims")
  _check_in_range(dn.collapsed_slice_dims, operand.ndim, "gather", "collapsed_slice_dims")
  _check_batching_dims(operand, indices, dn.operand_batching_dims,
                       dn.start_indices_batching_dims, "gather",
                       "start_indices_batching_dims")
  _check_disjoint(dn.collapsed_slice_dims, dn.operand_batching_dims, "gather",
                  "collapsed_slice_dims", "operand_batching_dims")
  _check_disjoint(dn.start_index_map, dn.operand_batching_dims, "gather",
                  "start_index_map", "operand_batching_dims")
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                    f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
  if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                          + len(dn.operand_batching_dims)):
    raise TypeError("All components of the offset index in a gather op must either be a "
                    "offset dimension or explicitly collapsed/batching; got "
                    f"len(slice_sizes)={len(slice_sizes)}, offset_dims={dn.offset_dims}, "
                    f"collapsed_slice_dims={dn.collapsed_slice_dims}, "
                    f"operand_batching_dims={dn.operand_batching_dims}.")
  for i, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
    if not 0 <= s <= n:
      raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                      f"within [0, {n} + 1), got {s}.")
  for d in dn.collapsed_slice_dims:
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                      f"{slice_sizes[d]} for index {d}.")
  for d in dn.operand_batching_dims:
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, but "
                      f"bound is {slice_sizes[d]} for index {d}.")
  return _gather_out_shape(indices.shape, dn, slice_sizes)


def _gather_out_shape(indices_shape, dn, slice_sizes):
  """Offset dimensions take the kept slice sizes in order, the others the batch
  dimensions of the indices (all but the index vector) in order."""
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  kept = iter(s for i, s in enumerate(slice_sizes) if i not in dropped)
  batch = iter(indices_shape[:-1])
  out_rank = len(dn.offset_dims) + len(indices_shape) - 1
  return tuple(next(kept) if i in dn.offset_dims else next(batch) for i in range(out_rank))


def _gather_dtype_rule(operand, indices, **_):
  if not dtypes.is_integer(indices.dtype):
    raise TypeError(f"gather indices must have an integer type, got {indices.dtype.name}.")
  return operand.dtype


def _gather_jvp_rule(g, operand, indices, *, dimension_numbers, slice_sizes,
                     unique_indices, indices_are_sorted, mode, fill_value):
  # Linear in the operand: the tangent is gathered the same way (filled with 0,
  # since a constant fill does not vary).
  return gather(g, indices, dimension_numbers, slice_sizes, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _gather_transpose_rule(ct, operand, indices, *, dimension_numbers, slice_sizes,
                           unique_indices, indices_are_sorted, mode, fill_value):
  # Each slice's cotangent is added back where the slice came from; the same mode
  # keeps forward and backward consistent (clamped or dropped alike).
  assert ad.is_undefined_primal(operand) and not ad.is_undefined_primal(indices)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval), None]
  zeros = structural.full(operand.aval.shape, np.zeros((), _aval(ct).dtype))
  out = scatter_add(zeros, indices, ct, _scatter_dnums_of(dimension_numbers),
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=mode)
  return [out, None]


def _gather_batch_rule(args, dims, *, dimension_numbers, slice_sizes, unique_indices,
                       indices_are_sorted, mode, fill_value):
  # One gather whatever is batched: a batched operand gains a full-size leading
  # slice dimension; batched indices gain a leading batch dimension; both
  # batched pair the two leading dimensions as batching dimensions.
  operand, indices = args
  operand_bdim, indices_bdim = dims
  dn = dimension_numbers
  shift = lambda ds: tuple(d + 1 for d in ds)
  if indices_bdim is None:
    operand = utils.moveaxis(operand, operand_bdim, 0)
    new = GatherDimensionNumbers(
        offset_dims=(0,) + shift(dn.offset_dims),
        collapsed_slice_dims=shift(dn.collapsed_slice_dims),
        start_index_map=shift(dn.start_index_map),
        operand_batching_dims=shift(dn.operand_batching_dims),
        start_indices_batching_dims=dn.start_indices_batching_dims)
    sizes = (_shape(operand)[0],) + tuple(slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes,
                         unique_indices=unique_indices,
                         indices_are_sorted=indices_are_sorted, mode=mode,
                         fill_value=fill_value), 0
  indices = utils.moveaxis(indices, indices_bdim, 0)
  if operand_bdim is None:
    new = GatherDimensionNumbers(
        offset_dims=shift(dn.offset_dims),
        collapsed_slice_dims=dn.collapsed_slice_dims,
        start_index_map=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=shift(dn.start_indices_batching_dims))
    # Different batch members may now read the same elements, in any order.
    return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                         unique_indices=False, indices_are_sorted=False, mode=mode,
                         fill_value=fill_value), 0
  operand = utils.moveaxis(operand, operand_bdim, 0)
  size = _shape(operand)[0]
  new = GatherDimensionNumbers(
      offset_dims=shift(dn.offset_dims),
      collapsed_slice_dims=shift(dn.collapsed_slice_dims),
      start_index_map=shift(dn.start_index_map),
      operand_batching_dims=(0,) + shift(dn.operand_batching_dims),
      start_indices_batching_dims=(0,) + shift(dn.start_indices_batching_dims))
  sizes = (1 if size else 0,) + tuple(slice_sizes)
  return gather_p.bind(operand, indices, dimension_numbers=new, slice_sizes=sizes,
                       unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                       mode=mode, fill_value=fill_value), 0


def _gather_fill(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                 indices_are_sorted, mode, fill_value):
  """A FILL_OR_DROP gather as a clamping gather and a select: XLA has no filling
  gather, so slices whose window does not fit are replaced by `fill_value`."""
  from tracejax._src.lax.reductions import reduce_and
  dn = dimension_numbers
  idx_dtype = _aval(indices).dtype
  idx_shape = _shape(indices)
  bounds = _index_upper_bounds(_shape(operand), slice_sizes, dn.start_index_map, idx_dtype)
  upper = structural.broadcast_in_dim(bounds, idx_shape, (len(idx_shape) - 1,))
  ok = lax_ew.bitwise_and(lax_ew.ge(indices, np.zeros((), idx_dtype)),
                          lax_ew.le(indices, upper))
  ok = reduce_and(ok, (len(idx_shape) - 1,))
  out = gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
  out_shape = _shape(out)
  batch_dims = tuple(i for i in range(len(out_shape)) if i not in dn.offset_dims)
  ok = structural.broadcast_in_dim(ok, out_shape, batch_dims)
  dtype = _aval(operand).dtype
  # A fill value the dtype cannot hold is cast as NumPy's astype does (-3 into uint16 is
  # 65533, nan into an int 0), as in JAX (fuzzer seed 204; np.array(-3, uint16) raised).
  with np.errstate(all="ignore"), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    fill_value = np.asarray(fill_value).astype(dtype)
  fill = structural.full(out_shape, fill_value)
  return lax_ew.select(ok, out, fill)


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes,
                     unique_indices, indices_are_sorted, mode, fill_value):
  if mode == GatherScatterMode.FILL_OR_DROP:
    return mlir.lower_fun(_gather_fill, multiple_results=False)(
        ctx, operand, indices, dimension_numbers=dimension_numbers,
        slice_sizes=slice_sizes, unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill_value)
  # CLIP and PROMISE_IN_BOUNDS: XLA's gather clamps start indices so that the
  # whole slice is in bounds, which is exactly CLIP.
  dn = dimension_numbers
  attr = hlo.GatherDimensionNumbers.get(
      offset_dims=list(dn.offset_dims),
      collapsed_slice_dims=list(dn.collapsed_slice_dims),
      operand_batching_dims=list(dn.operand_batching_dims),
      start_indices_batching_dims=list(dn.start_indices_batching_dims),
      start_index_map=list(dn.start_index_map),
      index_vector_dim=len(ctx.avals_in[1].shape) - 1)
  return [hlo.gather(operand, indices, attr, list(slice_sizes),
                     indices_are_sorted=ir.BoolAttr.get(indices_are_sorted),
                     results=[mlir.aval_to_ir_type(ctx.avals_out[0])])]


gather_p = standard_primitive(_gather_shape_rule, _gather_dtype_rule, "gather",
                              weak_type_rule=lambda operand, *_, **__: operand.weak_type)
ad.defjvp(gather_p, _gather_jvp_rule, None)
ad.primitive_transposes[gather_p] = _gather_transpose_rule
batching.primitive_batchers[gather_p] = _gather_batch_rule
mlir.register_lowering(gather_p, _gather_lowering)


def index_take(src, idxs, axes):
  """`src` indexed by the integer arrays `idxs` along `axes` (one array per axis,
  all of one shape): the result has the arrays' shape followed by the other
  dimensions of `src`. Negative indices count from the end."""
  axes = tuple(int(operator.index(a)) for a in axes)
  idxs = list(idxs)
  if len(axes) != len(idxs):
    raise ValueError(f"index_take needs one index array per axis, got {len(idxs)} index "
                     f"arrays for axes {axes}.")
  if not axes:
    raise ValueError("index_take needs at least one axis")
  shape = _shape(src)
  order = sorted(range(len(axes)), key=lambda k: axes[k])
  axes = tuple(axes[k] for k in order)
  idxs = [idxs[k] for k in order]
  n = _shape(idxs[0])
  dt = _aval(idxs[0]).dtype
  idxs = [i if _aval(i).dtype == dt else lax_ew.convert_element_type(i, dt) for i in idxs]
  cols = [structural.reshape(i, (int(np.prod(n, dtype=np.int64)), 1)) for i in idxs]
  indices = structural.concatenate(cols, 1) if len(cols) > 1 else cols[0]
  dt = _aval(indices).dtype
  sizes = np.array([shape[a] for a in axes], dt)
  # Wrap negative indices, as NumPy does (x % n is in [0, n) for n > 0).
  if dtypes.is_signed(dt):
    neg = lax_ew.lt(indices, np.zeros((), dt))
    indices = lax_ew.select(neg, lax_ew.add(indices, structural.broadcast_in_dim(
        sizes, _shape(indices), (1,))), indices)
  slice_sizes = tuple(1 if d in axes else s for d, s in enumerate(shape))
  offset_dims = tuple(range(1, len(shape) - len(axes) + 1))
  dnums = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=axes,
                                 start_index_map=axes)
  out = gather(src, indices, dnums, slice_sizes)
  return structural.reshape(out, tuple(n) + _shape(out)[1:])


# =============================================================================
# scatter: the shared rules of scatter, scatter_add, _sub, _mul, _min and _max
# =============================================================================

def _scatter_shape_rule(operand, indices, updates, *, dimension_numbers,
                        indices_are_sorted, unique_indices, mode):
  dn = dimension_numbers
  _check_indices(indices, "scatter")
  batch_shape = indices.shape[:-1]
  expected_rank = len(batch_shape) + len(dn.update_window_dims)
  if updates.ndim != expected_rank:
    raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
  _check_sorted(dn.update_window_dims, "scatter", "update_window_dims")
  _check_unique(dn.update_window_dims, "scatter", "update_window_dims")
  _check_in_range(dn.update_window_dims, updates.ndim, "scatter", "update_window_dims")
  _check_sorted(dn.inserted_window_dims, "scatter", "inserted_window_dims")
  _check_unique(dn.inserted_window_dims, "scatter", "inserted_window_dims")
  _check_in_range(dn.inserted_window_dims, operand.ndim, "scatter", "inserted_window_dims")
  _check_batching_dims(operand, indices, dn.operand_batching_dims,
                       dn.scatter_indices_batching_dims, "scatter",
                       "scatter_indices_batching_dims")
  _check_disjoint(dn.inserted_window_dims, dn.operand_batching_dims, "scatter",
                  "inserted_window_dims", "operand_batching_dims")
  _check_disjoint(dn.scatter_dims_to_operand_dims, dn.operand_batching_dims, "scatter",
                  "scatter_dims_to_operand_dims", "operand_batching_dims")
  window = (len(dn.update_window_dims) + len(dn.inserted_window_dims)
            + len(dn.operand_batching_dims))
  if operand.ndim != window:
    raise TypeError(f"Scatter op has window of size {window}; doesn't match operand of "
                    f"rank {operand.ndim}.")
  if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
    raise TypeError(f"Scatter op has {len(dn.scatter_dims_to_operand_dims)} elements in "
                    "scatter_dims_to_operand_dims and the bound of the index vector "
                    f"dimension of indices is {indices.shape[-1]}. These two numbers must "
                    "be equal")
  _check_in_range(dn.scatter_dims_to_operand_dims, operand.ndim, "scatter",
                  "scatter_dims_to_operand_dims")
  _check_unique(dn.scatter_dims_to_operand_dims, "scatter", "scatter_dims_to_operand_dims")
  dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  max_sizes = [n for i, n in enumerate(operand.shape) if i not in dropped]
  for d, n in zip(dn.update_window_dims, max_sizes):
    if updates.shape[d] > n:
      raise TypeError("Bounds of the window dimensions of updates must not exceed the "
                      "bounds of the corresponding dimensions of operand. For dimension "
                      f"{d}, updates bound is {updates.shape[d]}, operand bound is {n}.")
  scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  for d, n in zip(scatter_dims, batch_shape):
    if updates.shape[d] != n:
      raise TypeError("Bounds of the scatter dimensions of updates must be the same as "
                      "the bounds of the corresponding dimensions of scatter indices. For "
                      f"scatter dimension {d}, updates bound is {updates.shape[d]}, "
                      f"indices bound is {n}.")
  return operand.shape


def _scatter_dtype_rule(name, accepted=None):
  def rule(operand, indices, updates, **_):
    if not dtypes.is_integer(indices.dtype):
      raise TypeError(f"{name} indices must have an integer type, got {indices.dtype.name}.")
    utils.check_same_dtypes(name, operand, updates)
    if accepted is not None:
      utils.check_dtypes(name, accepted, operand)
    return operand.dtype
  return rule


def _scatter_weak_type_rule(operand, *_, **__):
  return operand.weak_type


def _scatter_params(fun_name, dimension_numbers, indices_are_sorted, unique_indices, mode):
  return dict(dimension_numbers=_canonical_scatter_dnums(fun_name, dimension_numbers),
              indices_are_sorted=bool(indices_are_sorted),
              unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))


def _gather_mode_for(mode):
  """The gather that reads back a scatter's windows with the same clamping: CLIP
  for CLIP; otherwise XLA's clamping (the windows a scatter drops never matter)."""
  return (GatherScatterMode.CLIP if mode == GatherScatterMode.CLIP
          else GatherScatterMode.PROMISE_IN_BOUNDS)


def _read_back(x, indices, updates_shape, dnums, mode):
  """The windows of `x` that a scatter with `dnums` writes, shaped like its updates."""
  sizes = _scatter_window_sizes(_shape(x), updates_shape, dnums)
  return gather(x, indices, _gather_dnums_of(dnums), sizes, mode=_gather_mode_for(mode))


def _scatter_batch_rule(prim):
  def rule(args, dims, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
    # One scatter: operand and updates get the batch dimension in front (an
    # unbatched operand is broadcast, since every member writes its own copy).
    # Unbatched indices: the batch dimension is one more window dimension.
    # Batched indices: it pairs operand and indices as batching dimensions.
    operand, indices, updates = args
    operand_bdim, indices_bdim, updates_bdim = dims
    size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
    operand = utils.bdim_at_front(operand, operand_bdim, size)
    updates = utils.bdim_at_front(updates, updates_bdim, size)
    dn = dimension_numbers
    shift = lambda ds: tuple(d + 1 for d in ds)
    if indices_bdim is None:
      new = ScatterDimensionNumbers(
          update_window_dims=(0,) + shift(dn.update_window_dims),
          inserted_window_dims=shift(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=shift(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=shift(dn.operand_batching_dims),
          scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
    else:
      indices = utils.moveaxis(indices, indices_bdim, 0)
      new = ScatterDimensionNumbers(
          update_window_dims=shift(dn.update_window_dims),
          inserted_window_dims=shift(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=shift(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=(0,) + shift(dn.operand_batching_dims),
          scatter_indices_batching_dims=(0,) + shift(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=new,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                     mode=mode), 0
  return rule


def _clamp_scatter_indices(operand, indices, updates, *, dnums):
  """Indices clamped so that every window fits (the CLIP mode of scatter)."""
  sizes = _scatter_window_sizes(_shape(operand), _shape(updates), dnums)
  dt = _aval(indices).dtype
  bounds = _index_upper_bounds(_shape(operand), sizes, dnums.scatter_dims_to_operand_dims,
                               dt)
  shape = _shape(indices)
  upper = structural.broadcast_in_dim(bounds, shape, (len(shape) - 1,))
  lower = structural.full(shape, np.zeros((), dt))
  return lax_ew.min(lax_ew.max(indices, lower), upper)


def _scatter_lowering(combine):
  """The lowering of a scatter whose update region is `combine(old, new, dtype)`."""
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode):
    dn = dimension_numbers
    if mode == GatherScatterMode.CLIP:
      (indices,) = mlir.lower_fun(_clamp_scatter_indices, multiple_results=False)(
          ctx.replace(avals_out=[ctx.avals_in[1]]), operand, indices, updates, dnums=dn)
    # FILL_OR_DROP and PROMISE_IN_BOUNDS: XLA skips the windows that do not fit.
    attr = hlo.ScatterDimensionNumbers.get(
        update_window_dims=list(dn.update_window_dims),
        inserted_window_dims=list(dn.inserted_window_dims),
        input_batching_dims=list(dn.operand_batching_dims),
        scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
        scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
        index_vector_dim=len(ctx.avals_in[1].shape) - 1)
    aval = ctx.avals_out[0]
    op = hlo.ScatterOp([mlir.aval_to_ir_type(aval)], [operand], indices, [updates], attr,
                       indices_are_sorted=ir.BoolAttr.get(indices_are_sorted),
                       unique_indices=ir.BoolAttr.get(unique_indices))
    scalar = ir.RankedTensorType.get((), mlir.dtype_to_ir_type(aval.dtype))
    block = op.update_computation.blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
      old, new = block.arguments
      hlo.return_([combine(old, new, aval.dtype)])
    return list(op.results)
  return rule


def _combine_add(old, new, dtype):
  return hlo.or_(old, new) if dtype == np.bool_ else hlo.add(old, new)


def _combine_sub(old, new, dtype):
  return hlo.subtract(old, new)


def _combine_mul(old, new, dtype):
  return hlo.and_(old, new) if dtype == np.bool_ else hlo.multiply(old, new)


def _combine_min(old, new, dtype):
  if dtypes.issubdtype(dtype, np.complexfloating):
    return _complex_pick(old, new, dtype, "LT")
  return hlo.and_(old, new) if dtype == np.bool_ else hlo.minimum(old, new)


def _combine_max(old, new, dtype):
  if dtypes.issubdtype(dtype, np.complexfloating):
    return _complex_pick(old, new, dtype, "GT")
  return hlo.or_(old, new) if dtype == np.bool_ else hlo.maximum(old, new)


def _complex_pick(old, new, dtype, direction):
  # XLA has no order on complex numbers; as lax.max/min (and JAX's scatter_max/min),
  # compare lexicographically: real parts, then imaginary parts where the reals tie.
  rdt = dtypes.to_real_dtype(dtype)
  ro, rn, io, in_ = hlo.real(old), hlo.real(new), hlo.imag(old), hlo.imag(new)
  pick_old = hlo.select(ew_hlo.compare_hlo(ro, rn, "EQ", rdt),
                        ew_hlo.compare_hlo(io, in_, direction, rdt),
                        ew_hlo.compare_hlo(ro, rn, direction, rdt))
  return hlo.select(pick_old, old, new)


def _combine_set(old, new, dtype):
  return new


# min and max: complex numbers are ordered lexicographically (_complex_pick).
_ordered = [np.bool_, np.integer, np.floating, np.complexfloating]


def _zero_tangent(out):
  return ad.Zero(_aval(out).at_least_vspace())


# =============================================================================
# scatter_add and scatter_sub
# =============================================================================

def scatter_add(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-add operator: wraps XLA's Scatter with addition as the combiner.

  Each window of `updates` is added into `operand` at the position given by
  its index vector (the last dimension of `scatter_indices`); repeated indices
  accumulate. `dimension_numbers` is a `ScatterDimensionNumbers`. `mode` says
  what happens out of bounds: None, 'fill' or 'drop' drop the window, 'clip'
  clamps it into bounds.
  """
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_add_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter_add", dimension_numbers, indices_are_sorted, unique_indices, mode))


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-subtract operator: like `scatter_add`, subtracting the updates."""
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_sub_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter_sub", dimension_numbers, indices_are_sorted, unique_indices, mode))


def _scatter_addsub_jvp(prim):
  def jvp(primals, tangents, **params):
    # Linear in operand and updates together: the tangents scatter the same way.
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = prim.bind(operand, indices, updates, **params)
    if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
      return out, _zero_tangent(out)
    g_operand = ad.instantiate_zeros(g_operand)
    g_updates = ad.instantiate_zeros(g_updates)
    return out, prim.bind(g_operand, indices, g_updates, **params)
  return jvp


def _scatter_addsub_transpose(prim):
  def transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                unique_indices, mode):
    # The operand's cotangent passes through; each update's is the window of the
    # cotangent it was added to (zero for dropped windows, hence the filling gather).
    assert not ad.is_undefined_primal(indices)
    upd_aval = updates.aval if ad.is_undefined_primal(updates) else _aval(updates)
    if type(ct) is ad.Zero:
      return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
              ad.Zero(upd_aval) if ad.is_undefined_primal(updates) else None]
    op_ct = ct if ad.is_undefined_primal(operand) else None
    up_ct = None
    if ad.is_undefined_primal(updates):
      sizes = _scatter_window_sizes(_shape(ct), upd_aval.shape, dimension_numbers)
      up_ct = gather(ct, indices, _gather_dnums_of(dimension_numbers), sizes,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                     mode=mode, fill_value=0)
      if prim is scatter_sub_p:
        up_ct = lax_ew.neg(up_ct)
    return [op_ct, None, up_ct]
  return transpose


scatter_add_p = standard_primitive(_scatter_shape_rule, _scatter_dtype_rule("scatter_add"),
                                   "scatter-add", weak_type_rule=_scatter_weak_type_rule)
ad.primitive_jvps[scatter_add_p] = _scatter_addsub_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _scatter_addsub_transpose(scatter_add_p)
batching.primitive_batchers[scatter_add_p] = _scatter_batch_rule(scatter_add_p)
mlir.register_lowering(scatter_add_p, _scatter_lowering(_combine_add))

scatter_sub_p = standard_primitive(_scatter_shape_rule,
                                   _scatter_dtype_rule("scatter_sub", utils._num),
                                   "scatter-sub", weak_type_rule=_scatter_weak_type_rule)
ad.primitive_jvps[scatter_sub_p] = _scatter_addsub_jvp(scatter_sub_p)
ad.primitive_transposes[scatter_sub_p] = _scatter_addsub_transpose(scatter_sub_p)
batching.primitive_batchers[scatter_sub_p] = _scatter_batch_rule(scatter_sub_p)
mlir.register_lowering(scatter_sub_p, _scatter_lowering(_combine_sub))


# =============================================================================
# scatter_mul
# =============================================================================

def scatter_mul(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-multiply operator: like `scatter_add`, multiplying `operand` by the
  updates (repeated indices multiply together).

  Its derivative in the updates needs `unique_indices=True` (as in JAX)."""
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_mul_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter_mul", dimension_numbers, indices_are_sorted, unique_indices, mode))


def _scatter_mul_jvp_operand(g, operand, indices, updates, **params):
  # Linear in the operand: its tangent is multiplied by the same updates.
  return scatter_mul_p.bind(g, indices, updates, **params)


def _scatter_mul_jvp_updates(g, operand, indices, updates, *, dimension_numbers,
                             indices_are_sorted, unique_indices, mode):
  # With unique indices out[i] = x[i] * u: d out = x[i] * du, the tangents
  # scattered (added onto zeros) and multiplied by the operand. With repeated
  # indices the product rule would need the other factors of each product.
  if not unique_indices:
    raise NotImplementedError(
        "scatter_mul gradients are only implemented if `unique_indices=True`")
  zeros = lax_ew._full_like(operand, 0)  # zeros like the operand: its weak type too
  spread = scatter_add_p.bind(zeros, indices, g, dimension_numbers=dimension_numbers,
                              indices_are_sorted=indices_are_sorted,
                              unique_indices=unique_indices, mode=mode)
  return lax_ew.mul(operand, spread)


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode):
  assert not ad.is_undefined_primal(indices)
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  upd_aval = updates.aval if ad.is_undefined_primal(updates) else _aval(updates)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
            ad.Zero(upd_aval) if ad.is_undefined_primal(updates) else None]
  op_ct = up_ct = None
  if ad.is_undefined_primal(operand):
    # Multiplication by the scattered products is diagonal: its own transpose.
    op_ct = scatter_mul_p.bind(ct, indices, updates, **params)
  if ad.is_undefined_primal(updates):
    if not unique_indices:
      raise NotImplementedError(
          "scatter_mul gradients are only implemented if `unique_indices=True`")
    sizes = _scatter_window_sizes(_shape(ct), upd_aval.shape, dimension_numbers)
    up_ct = gather(lax_ew.mul(ct, operand), indices, _gather_dnums_of(dimension_numbers),
                   sizes, mode=mode, fill_value=0)
  return [op_ct, None, up_ct]


scatter_mul_p = standard_primitive(_scatter_shape_rule, _scatter_dtype_rule("scatter_mul"),
                                   "scatter-mul", weak_type_rule=_scatter_weak_type_rule)
ad.defjvp(scatter_mul_p, _scatter_mul_jvp_operand, None, _scatter_mul_jvp_updates)
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose
batching.primitive_batchers[scatter_mul_p] = _scatter_batch_rule(scatter_mul_p)
mlir.register_lowering(scatter_mul_p, _scatter_lowering(_combine_mul))


# =============================================================================
# scatter_min and scatter_max
# =============================================================================

def scatter_min(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-min operator: like `scatter_add`, keeping the minimum of `operand`
  and the updates written to each position."""
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_min_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter_min", dimension_numbers, indices_are_sorted, unique_indices, mode))


def scatter_max(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-max operator: like `scatter_add`, keeping the maximum of `operand`
  and the updates written to each position."""
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_max_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter_max", dimension_numbers, indices_are_sorted, unique_indices, mode))


def _scatter_extremal_jvp(prim):
  def jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
          mode):
    # Where several values tie for the extremum (the operand's and updates'),
    # the tangent is their average, as for max and reduce_max. Per update, from
    # read-back windows: did it win, did the operand's value survive, how many
    # updates won and how many updates write there at all.
    params = dict(dimension_numbers=dimension_numbers,
                  indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode=mode)
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = prim.bind(operand, indices, updates, **params)
    if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
      return out, _zero_tangent(out)
    g_operand = ad.instantiate_zeros(g_operand)
    g_updates = ad.instantiate_zeros(g_updates)
    dn = dimension_numbers
    ushape = _shape(updates)
    back = lambda x: _read_back(x, indices, ushape, dn, mode)
    # Weak types as in JAX's rule: the constants are full_like the operand or the
    # updates, so the counts and shares (and the coefficients the cotangents are
    # multiplied by) are weak exactly when those are.
    zeros_op = lax_ew._full_like(operand, 0)
    ones_up = lax_ew._full_like(updates, 1)
    zeros_up = lax_ew._full_like(updates, 0)
    count = lambda u: back(scatter_add_p.bind(zeros_op, indices, u, **params))
    won = lax_ew.eq(updates, back(out))
    kept = lax_ew.eq(back(operand), back(out))
    num_won = count(lax_ew.select(won, ones_up, zeros_up))
    ones_n = lax_ew._full_like(num_won, 1)   # the operand's weak type
    zeros_n = lax_ew._full_like(num_won, 0)
    # At least one (the update itself) wherever the window is written; the max
    # only guards windows that are dropped, whose tangents are dropped too.
    num_refs = lax_ew.max(count(ones_up), ones_n)
    share = lax_ew.div(ones_n, lax_ew.max(lax_ew.add(num_won, lax_ew.select(
        kept, ones_n, zeros_n)), ones_n))
    update_coef = lax_ew.select(won, share, zeros_up)
    operand_coef = lax_ew.div(
        lax_ew.sub(lax_ew.select(kept, share, zeros_n), ones_n), num_refs)
    # Every reference to a position removes 1/num_refs of the operand's tangent
    # there and puts back its share if the operand's value survived.
    t_updates = lax_ew.add(lax_ew.mul(back(g_operand), operand_coef),
                           lax_ew.mul(g_updates, update_coef))
    return out, scatter_add_p.bind(g_operand, indices, t_updates, **params)
  return jvp


scatter_min_p = standard_primitive(
    _scatter_shape_rule, _scatter_dtype_rule("scatter_min", _ordered),
    "scatter-min", weak_type_rule=_scatter_weak_type_rule)
ad.primitive_jvps[scatter_min_p] = _scatter_extremal_jvp(scatter_min_p)
batching.primitive_batchers[scatter_min_p] = _scatter_batch_rule(scatter_min_p)
mlir.register_lowering(scatter_min_p, _scatter_lowering(_combine_min))

scatter_max_p = standard_primitive(
    _scatter_shape_rule, _scatter_dtype_rule("scatter_max", _ordered),
    "scatter-max", weak_type_rule=_scatter_weak_type_rule)
ad.primitive_jvps[scatter_max_p] = _scatter_extremal_jvp(scatter_max_p)
batching.primitive_batchers[scatter_max_p] = _scatter_batch_rule(scatter_max_p)
mlir.register_lowering(scatter_max_p, _scatter_lowering(_combine_max))


# =============================================================================
# scatter (overwrite)
# =============================================================================

def scatter(operand, scatter_indices, updates, dimension_numbers, *,
            indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-update operator: wraps XLA's Scatter, the updates replacing the
  values of `operand` at their windows. Where windows overlap, which update
  wins is unspecified. `mode` as for `scatter_add`."""
  operand, updates = utils.promote_python_scalars([operand, updates])
  return scatter_p.bind(operand, scatter_indices, updates, **_scatter_params(
      "scatter", dimension_numbers, indices_are_sorted, unique_indices, mode))


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted,
                 unique_indices, mode):
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  operand, indices, updates = primals
  g_operand, _, g_updates = tangents
  if type(g_operand) is ad.Zero and type(g_updates) is ad.Zero:
    out = scatter_p.bind(operand, indices, updates, **params)
    return out, _zero_tangent(out)
  g_operand = ad.instantiate_zeros(g_operand)
  g_updates = ad.instantiate_zeros(g_updates)
  if unique_indices:
    # No overlaps: the tangents are written the same way.
    return (scatter_p.bind(operand, indices, updates, **params),
            scatter_p.bind(g_operand, indices, g_updates, **params))
  # With overlaps, which update wins is up to XLA, and value and tangent must
  # agree on it. So: scatter a distinct id per update; read the ids back, so
  # each update learns whether it won; then add the winners (and the operand
  # where nothing was written) onto zeros with scatter_add, which is linear.
  dn = dimension_numbers
  ushape = _shape(updates)
  ids_shape = tuple(1 if d in dn.update_window_dims else n for d, n in enumerate(ushape))
  num_ids = int(np.prod(ids_shape, dtype=np.int64))
  id_dtype = np.dtype(np.uint32)
  ids = lax_ew.add(structural.reshape(structural.iota(id_dtype, num_ids), ids_shape),
                   np.ones((), id_dtype))  # 0 marks "not written"
  ids = structural.broadcast_in_dim(ids, ushape, tuple(range(len(ushape))))
  written = scatter_p.bind(structural.full(_shape(operand), np.zeros((), id_dtype)),
                           indices, ids, **params)
  won = lax_ew.eq(ids, _read_back(written, indices, ushape, dn, mode))
  untouched = lax_ew.eq(written, np.zeros((), id_dtype))

  def combine(x, u):
    x = lax_ew.select(untouched, x, structural.full(_shape(x), np.zeros((), _aval(x).dtype)))
    u = lax_ew.select(won, u, structural.full(ushape, np.zeros((), _aval(u).dtype)))
    return scatter_add_p.bind(x, indices, u, **params)
  return combine(operand, updates), combine(g_operand, g_updates)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers,
                       indices_are_sorted, unique_indices, mode):
  # Only reached from the unique-indices JVP: the operand's cotangent is ct with
  # the overwritten windows zeroed, each update's the window it wrote.
  if not unique_indices:
    raise NotImplementedError("scatter transpose is only implemented where "
                              "unique_indices=True")
  assert not ad.is_undefined_primal(indices)
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  upd_aval = updates.aval if ad.is_undefined_primal(updates) else _aval(updates)
  if type(ct) is ad.Zero:
    return [ad.Zero(operand.aval) if ad.is_undefined_primal(operand) else None, None,
            ad.Zero(upd_aval) if ad.is_undefined_primal(updates) else None]
  op_ct = up_ct = None
  if ad.is_undefined_primal(operand):
    zeros = structural.full(upd_aval.shape, np.zeros((), _aval(ct).dtype))
    op_ct = scatter_p.bind(ct, indices, zeros, **params)
  if ad.is_undefined_primal(updates):
    sizes = _scatter_window_sizes(_shape(ct), upd_aval.shape, dimension_numbers)
    up_ct = gather(ct, indices, _gather_dnums_of(dimension_numbers), sizes,
                   indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                   mode=mode, fill_value=0)
  return [op_ct, None, up_ct]


scatter_p = standard_primitive(_scatter_shape_rule, _scatter_dtype_rule("scatter"),
                               "scatter", weak_type_rule=_scatter_weak_type_rule)
ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose
batching.primitive_batchers[scatter_p] = _scatter_batch_rule(scatter_p)
mlir.register_lowering(scatter_p, _scatter_lowering(_combine_set))


# =============================================================================
# scatter_apply: the operand's values at the windows replaced by func(value)
# =============================================================================

def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
  """Scatter-apply: XLA's Scatter whose update computation is `func` of the value
  already there, so each element of `operand` in the scattered windows becomes
  `func(element)` (applied once per index that hits it, like JAX).

  Args:
    operand: the array to update.
    scatter_indices: the windows' start indices, as for `scatter`.
    func: a unary elementwise function of a scalar of `operand`'s dtype.
    dimension_numbers: a `ScatterDimensionNumbers`.
    update_shape: the shape of the (implicit) updates array, as for `scatter`.
    indices_are_sorted, unique_indices, mode: as for `scatter`.

  Not differentiable (as in JAX); vmap works.

  >>> dn = ScatterDimensionNumbers((), (0,), (0,))
  >>> scatter_apply(jnp.arange(4.), jnp.array([[1], [3]]), lambda v: v * 10., dn,
  ...               update_shape=(2,))
  DeviceArray([ 0., 10.,  2., 30.], dtype=float32)
  """
  from tracejax._src.core.avals import ShapedArray
  from tracejax._src.interpreters import staging
  from tracejax._src.core.trace import eval_trace, set_current_trace
  aval = _aval(operand)
  with set_current_trace(eval_trace):
    jaxpr, consts = staging.trace_to_jaxpr(lambda v: [func(v)],
                                           [ShapedArray((), aval.dtype)])
  if jaxpr.out_avals[0].dtype != aval.dtype or jaxpr.out_avals[0].shape != ():
    raise TypeError("scatter_apply func must map a scalar of the operand's dtype "
                    f"{aval.dtype} to one, got {jaxpr.out_avals[0].str_short()}.")
  if consts:
    raise TypeError("scatter_apply func must not close over arrays (it runs inside "
                    "XLA's update computation, which takes no operands).")
  unused = structural.full(canonicalize_shape(update_shape), np.zeros((), aval.dtype))
  return scatter_apply_p.bind(operand, scatter_indices, unused, update_jaxpr=jaxpr,
                              **_scatter_params("scatter_apply", dimension_numbers,
                                                indices_are_sorted, unique_indices, mode))


class _BindWithJaxpr:
  """Stands for scatter_apply_p in the generic scatter batching rule, which knows only
  the standard scatter params: it binds with the update jaxpr added back."""

  def __init__(self, update_jaxpr):
    self.update_jaxpr = update_jaxpr

  def bind(self, *args, **params):
    return scatter_apply_p.bind(*args, update_jaxpr=self.update_jaxpr, **params)


def _scatter_apply_batch(args, dims, *, update_jaxpr, **params):
  return _scatter_batch_rule(_BindWithJaxpr(update_jaxpr))(args, dims, **params)


def _scatter_apply_lowering(ctx, operand, indices, updates, *, update_jaxpr, **params):
  def combine(old, new, dtype):
    out, = mlir.jaxpr_subcomp(ctx.module_context, update_jaxpr, [], [old])
    return out
  return _scatter_lowering(combine)(ctx, operand, indices, updates, **params)


scatter_apply_p = standard_primitive(
    lambda o, i, u, *, update_jaxpr, **p: _scatter_shape_rule(o, i, u, **p),
    lambda o, i, u, *, update_jaxpr, **p: _scatter_dtype_rule("scatter_apply")(o, i, u, **p),
    "scatter_apply", weak_type_rule=_scatter_weak_type_rule)
batching.primitive_batchers[scatter_apply_p] = _scatter_apply_batch
mlir.register_lowering(scatter_apply_p, _scatter_apply_lowering)
