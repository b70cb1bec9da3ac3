"""Structural primitives: they move, copy or create elements without arithmetic.

broadcast_in_dim, reshape, transpose, squeeze, rev, concatenate, pad, iota,
plus the functions built from them (broadcast, expand_dims, full, collapse...).

Every primitive here is linear in its array operands, so its JVP is itself
applied to the tangents and reverse mode only needs a transpose rule.
Shape rules raise TypeError/ValueError naming the argument: a bad shape must
never reach XLA, which would only notice a byte-size mismatch.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core import avals as avals_mod
from tracejax._src.core.avals import canonicalize_shape
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.lax import utils
from tracejax._src.lax.utils import standard_primitive
from tracejax._src.runtime.array import Array


# ---- helpers shared by the structural, slicing and reduction families ----

def _check_shapelike(fun_name, arg_name, obj, non_zero_shape=False):
  """TypeError unless `obj` is a 1-D sequence of nonnegative (positive) ints."""
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun_name} {arg_name} must be of type tuple/list/ndarray, "
                    f"got {type(obj)}.")
  if not len(obj):
    return
  if any(isinstance(d, Tracer) for d in obj):
    canonicalize_shape(obj)  # the seed's error for traced sizes
  try:
    vals = [operator.index(d) for d in obj]
  except TypeError:
    raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                    f"got {tuple(map(type, obj))}.") from None
  lower, what = (1, "strictly positive") if non_zero_shape else (0, "nonnegative")
  if not all(d >= lower for d in vals):
    raise TypeError(f"{fun_name} {arg_name} must have every element be {what}, "
                    f"got {tuple(vals)}.")


def _int_tuple(fun_name, arg_name, obj):
  """A tuple of Python ints from a user sequence of indices (dimensions, permutation)."""
  if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
    return (int(obj),)
  if not isinstance(obj, (tuple, list, np.ndarray, range)):
    raise TypeError(f"{fun_name} {arg_name} must be a tuple/list of integers, "
                    f"got {type(obj).__name__} {obj!r}.")
  try:
    return tuple(int(operator.index(d)) for d in obj)
  except TypeError:
    raise TypeError(f"{fun_name} {arg_name} must have every element be an integer type, "
                    f"got {tuple(map(type, obj))}.") from None


def _canonicalize_axes(fun_name, arg_name, axes, ndim):
  """Axes as nonnegative Python ints; negative axes count from the end."""
  axes = _int_tuple(fun_name, arg_name, axes)
  for a in axes:
    if not -ndim <= a < ndim:
      raise ValueError(f"{fun_name} {arg_name} {axes} contains out-of-bounds "
                       f"axis {a} for operand of rank {ndim}.")
  return tuple(a % ndim if ndim else a for a in axes)


def _aval(x):
  return avals_mod.raise_to_shaped(avals_mod.get_aval(x))


def _shape(x):
  return tuple(np.shape(x))


def _scalar(value, dtype, weak_type=False):
  """A concrete scalar of `dtype`: a Python scalar when it should stay weakly typed
  (a weak value keeps the default dtype of its kind, which a NumPy value cannot)."""
  dtype = np.dtype(dtype)
  if weak_type and dtype != np.bool_:
    kind = dtypes.scalar_type_of(dtype)
    if dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[kind]) == dtype:
      return kind(value)
  return np.array(value, dtype)


def _convert(x, dtype, weak_type=False):
  """`x` as `dtype`: host conversion for concrete host values, else convert_element_type."""
  dtype = np.dtype(dtype)
  if type(x) in (int, float, complex, bool) or isinstance(x, (np.ndarray, np.generic)):
    if np.shape(x) == ():
      return _scalar(np.asarray(x).astype(dtype)[()], dtype, weak_type)
    return np.asarray(x).astype(dtype)
  if _aval(x).dtype == dtype:
    return x
  from tracejax._src.lax import elementwise
  return elementwise.convert_element_type(x, dtype)


# =============================================================================
# broadcast_in_dim
# =============================================================================

def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Wraps XLA's BroadcastInDim operator. `out_sharding=` lays the result out as in
  `reshape`.

  Operand dimension `i` becomes output dimension `broadcast_dimensions[i]`; it
  must have size 1 or the size of that output dimension. The other output
  dimensions are new.
  """
  if out_sharding is not None:
    return _with_out_sharding(lambda: broadcast_in_dim(operand, shape, broadcast_dimensions),
                              out_sharding, "broadcast_in_dim")
  shape = canonicalize_shape(shape)
  broadcast_dimensions = _int_tuple("broadcast_in_dim", "broadcast_dimensions",
                                    broadcast_dimensions)
  if (isinstance(operand, Array) and operand.shape == shape
      and broadcast_dimensions == tuple(range(len(shape)))) or (
      isinstance(operand, Tracer) and not shape and np.ndim(operand) == 0):
    return operand  # (a traced value only 0-d to 0-d, as JAX's)
  return broadcast_in_dim_p.bind(operand, shape=shape,
                                 broadcast_dimensions=broadcast_dimensions)


def _broadcast_in_dim_shape_rule(operand, *, shape, broadcast_dimensions):
  _check_shapelike("broadcast_in_dim", "shape", shape)
  _check_shapelike("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
  if operand.ndim != len(broadcast_dimensions):
    raise TypeError("broadcast_in_dim broadcast_dimensions must have length equal to "
                    f"operand ndim; got broadcast_dimensions {broadcast_dimensions} for "
                    f"operand ndim {operand.ndim}.")
  if len(shape) < operand.ndim:
    raise TypeError("broadcast_in_dim target broadcast shape must have equal or higher "
                    f"rank to the operand shape; got operand ndim {operand.ndim} and "
                    f"target broadcast ndim {len(shape)}.")
  if not set(broadcast_dimensions).issubset(range(len(shape))):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be a subset of output "
                    f"dimensions, got {broadcast_dimensions} for operand ndim "
                    f"{operand.ndim} and shape {shape}.")
  if not all(operand.shape[i] in (1, shape[d]) for i, d in enumerate(broadcast_dimensions)):
    raise TypeError("broadcast_in_dim operand dimension sizes must either be 1, or be "
                    "equal to their corresponding dimensions in the target broadcast "
                    f"shape; got operand of shape {operand.shape}, target broadcast shape "
                    f"{shape}, broadcast_dimensions {broadcast_dimensions}.")
  if (len(broadcast_dimensions) != len(set(broadcast_dimensions))
      or broadcast_dimensions != tuple(sorted(broadcast_dimensions))):
    raise TypeError("broadcast_in_dim broadcast_dimensions must be strictly increasing; "
                    f"got broadcast_dimensions {broadcast_dimensions}.")
  return tuple(shape)


def _broadcast_in_dim_transpose_rule(ct, operand, *, shape, broadcast_dimensions):
  # Sum over the new dimensions and over the size-1 dimensions that were
  # stretched; the stretched ones are put back with a reshape.
  from tracejax._src.lax.reductions import reduce_sum
  in_shape = operand.aval.shape
  unit = {i for i, s in enumerate(in_shape) if s == 1}
  kept = {d for i, d in enumerate(broadcast_dimensions) if i not in unit}
  axes = tuple(d for d in range(len(shape)) if d not in kept)
  out = reduce_sum(ct, axes) if axes else ct
  if _shape(out) != in_shape:
    out = reshape(out, in_shape)
  return [out]


def _broadcast_in_dim_batch_rule(args, dims, *, shape, broadcast_dimensions):
  (x,), (d,) = args, dims
  x = utils.moveaxis(x, d, 0)
  new_shape = (_shape(x)[0],) + tuple(shape)
  new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
  return broadcast_in_dim(x, new_shape, new_dims), 0


def _broadcast_in_dim_lowering(ctx, x, *, shape, broadcast_dimensions):
  return [hlo.broadcast_in_dim(mlir.aval_to_ir_type(ctx.avals_out[0]), x,
                               list(broadcast_dimensions))]


broadcast_in_dim_p = standard_primitive(_broadcast_in_dim_shape_rule, utils.input_dtype,
                                        "broadcast_in_dim")
ad.deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose_rule)
batching.primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch_rule
mlir.register_lowering(broadcast_in_dim_p, _broadcast_in_dim_lowering)


# ---- functions built on broadcast_in_dim ----

def broadcast(operand, sizes, *, out_sharding=None):
  """Broadcasts an array, adding new major dimensions of sizes `sizes`; `out_sharding=`
  lays the result out as in `reshape`.

  >>> broadcast(jnp.ones(2), (3,)).shape
  (3, 2)
  """
  if out_sharding is not None:
    return _with_out_sharding(lambda: broadcast(operand, sizes), out_sharding, "broadcast")
  sizes = canonicalize_shape(sizes)
  if not sizes and isinstance(operand, (Array, Tracer)):
    return operand
  ndim = np.ndim(operand)
  dims = tuple(range(len(sizes), len(sizes) + ndim))
  return broadcast_in_dim(operand, sizes + _shape(operand), dims)


def broadcast_to_rank(x, rank):
  """Adds leading dimensions of size 1 to give `x` rank `rank`."""
  ndim = np.ndim(x)
  if ndim == rank:
    return x
  if ndim > rank:
    raise ValueError(f"broadcast_to_rank: operand of rank {ndim} exceeds rank {rank}.")
  return broadcast(x, (1,) * (rank - ndim))


def broadcast_shapes(*shapes):
  """The NumPy broadcast of `shapes` (ValueError when they are incompatible)."""
  shapes = [canonicalize_shape(s) for s in shapes]
  if not shapes:
    return ()
  rank = max(len(s) for s in shapes)
  padded = [(1,) * (rank - len(s)) + s for s in shapes]
  out = []
  for sizes in zip(*padded):
    non_one = {d for d in sizes if d != 1}
    if len(non_one) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: {tuple(shapes)}")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def expand_dims(array, dimensions):
  """Inserts dimensions of size 1 at the positions `dimensions` of the result."""
  dimensions = _int_tuple("expand_dims", "dimensions", dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
  ndim_out = np.ndim(array) + len(dimensions)
  dims = _canonicalize_axes("expand_dims", "dimensions", dimensions, ndim_out)
  if len(set(dims)) != len(dims):  # again, after resolving negative axes
    raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
  result_shape = list(_shape(array))
  for i in sorted(dims):
    result_shape.insert(i, 1)
  broadcast_dims = [i for i in range(ndim_out) if i not in dims]
  return broadcast_in_dim(array, result_shape, broadcast_dims)


# =============================================================================
# reshape
# =============================================================================

def _with_out_sharding(fun, out_sharding, what):
  from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
  return sharding_explicit.with_out_sharding(fun, out_sharding, what)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Wraps XLA's Reshape operator.

  With `dimensions`, the operand is first transposed by that permutation (the
  XLA convention), then reshaped to `new_sizes`; the total size is unchanged.
  `out_sharding=` (a NamedSharding, or a PartitionSpec under `jax.set_mesh`) lays the
  result out so (for reshapes of split axes that Explicit sharding cannot type).
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    return sharding_explicit.with_out_sharding(
        lambda: reshape(operand, new_sizes, dimensions), out_sharding, "reshape")
  new_sizes = canonicalize_shape(new_sizes)
  same_shape = _shape(operand) == new_sizes
  if dimensions is None:
    dims, same_dims = None, True
  else:
    dims = _int_tuple("reshape", "dimensions", dimensions)
    same_dims = dims == tuple(range(np.ndim(operand)))
  if same_shape and same_dims and isinstance(operand, (Array, Tracer)):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes,
                        dimensions=None if dims is None or same_dims else dims)


def _reshape_shape_rule(operand, *, new_sizes, dimensions):
  _check_shapelike("reshape", "new_sizes", new_sizes)
  size = int(np.prod(operand.shape, dtype=np.int64))
  new_size = int(np.prod(new_sizes, dtype=np.int64))
  if size != new_size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} "
                    f"(size {new_size}) for operand shape {operand.shape} (size {size}).")
  if dimensions is not None and tuple(sorted(dimensions)) != tuple(range(operand.ndim)):
    raise TypeError("reshape dimensions must be a permutation of operand dimensions, "
                    f"got dimensions {dimensions} for shape {operand.shape}.")
  return tuple(new_sizes)


def _reshape_transpose_rule(ct, operand, *, new_sizes, dimensions):
  shape = operand.aval.shape
  if dimensions is None:
    return [reshape(ct, shape)]
  return [transpose(reshape(ct, tuple(shape[d] for d in dimensions)),
                    tuple(np.argsort(dimensions)))]


def _reshape_batch_rule(args, dims, *, new_sizes, dimensions):
  (x,), (d,) = args, dims
  x = utils.moveaxis(x, d, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(i + 1 for i in dimensions)
  return reshape(x, (_shape(x)[0],) + tuple(new_sizes), dimensions), 0


def _reshape_lowering(ctx, x, *, new_sizes, dimensions):
  if dimensions is not None:
    x = hlo.transpose(x, list(dimensions))
  return [hlo.reshape(mlir.aval_to_ir_type(ctx.avals_out[0]), x)]


reshape_p = standard_primitive(_reshape_shape_rule, utils.input_dtype, "reshape")
ad.deflinear2(reshape_p, _reshape_transpose_rule)
batching.primitive_batchers[reshape_p] = _reshape_batch_rule
mlir.register_lowering(reshape_p, _reshape_lowering)


def collapse(operand, start_dimension, stop_dimension=None):
  """Collapses dimensions `[start_dimension, stop_dimension)` into one (a reshape)."""
  shape = _shape(operand)
  ndim = len(shape)
  lo = _canonicalize_axes("collapse", "start_dimension", (start_dimension,), ndim)[0] \
      if ndim else int(start_dimension)
  if stop_dimension is None:
    hi = ndim
  else:
    hi = operator.index(stop_dimension)
    hi = hi + ndim if hi < 0 else hi
  if not 0 <= lo <= hi <= ndim:
    raise ValueError(f"collapse: invalid dimensions [{start_dimension}, {stop_dimension}) "
                     f"for operand of shape {shape}.")
  size = int(np.prod(shape[lo:hi], dtype=np.int64))
  return reshape(operand, shape[:lo] + (size,) + shape[hi:])


# =============================================================================
# transpose
# =============================================================================

def transpose(operand, permutation):
  """Wraps XLA's Transpose operator: output dimension i is operand dimension
  `permutation[i]`."""
  permutation = _int_tuple("transpose", "permutation", permutation)
  if permutation == tuple(range(np.ndim(operand))) and isinstance(operand, (Array, Tracer)):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


def _transpose_shape_rule(operand, *, permutation):
  if not isinstance(permutation, (tuple, list, np.ndarray)):
    raise TypeError(f"transpose permutation must be a tuple/list/ndarray, "
                    f"got {type(permutation)}.")
  if tuple(sorted(permutation)) != tuple(range(operand.ndim)):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                    f"got permutation {tuple(permutation)} for operand shape "
                    f"{operand.shape}.")
  return tuple(operand.shape[i] for i in permutation)


def _transpose_transpose_rule(ct, operand, *, permutation):
  return [transpose(ct, tuple(np.argsort(permutation)))]


def _transpose_batch_rule(args, dims, *, permutation):
  (x,), (d,) = args, dims
  perm = (d,) + tuple(i if i < d else i + 1 for i in permutation)
  return transpose(x, perm), 0


def _transpose_lowering(ctx, x, *, permutation):
  return [hlo.transpose(x, list(permutation))]


transpose_p = standard_primitive(_transpose_shape_rule, utils.input_dtype, "transpose")
ad.deflinear2(transpose_p, _transpose_transpose_rule)
batching.primitive_batchers[transpose_p] = _transpose_batch_rule
mlir.register_lowering(transpose_p, _transpose_lowering)


# =============================================================================
# squeeze
# =============================================================================

def squeeze(array, dimensions):
  """Removes the size-1 dimensions `dimensions` (negative ones count from the end)."""
  ndim = np.ndim(array)
  dimensions = tuple(sorted(_canonicalize_axes("squeeze", "dimensions", dimensions, ndim)))
  if not dimensions and isinstance(array, (Array, Tracer)):
    return array
  return squeeze_p.bind(array, dimensions=dimensions)


def _squeeze_shape_rule(operand, *, dimensions):
  shape = operand.shape
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"squeeze dimensions are not unique: {dimensions}")
  if not all(0 <= d < len(shape) for d in dimensions):
    raise ValueError(f"squeeze dimensions outside range [0, ndim): {dimensions} for "
                     f"operand shape {shape}")
  if any(shape[d] != 1 for d in dimensions):
    raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={shape} and dimensions={dimensions}")
  return tuple(s for i, s in enumerate(shape) if i not in dimensions)


def _squeeze_transpose_rule(ct, operand, *, dimensions):
  return [reshape(ct, operand.aval.shape)]


def _squeeze_batch_rule(args, dims, *, dimensions):
  (x,), (d,) = args, dims
  x = utils.moveaxis(x, d, 0)
  return squeeze(x, tuple(i + 1 for i in dimensions)), 0


def _squeeze_lowering(ctx, x, *, dimensions):
  return [hlo.reshape(mlir.aval_to_ir_type(ctx.avals_out[0]), x)]


squeeze_p = standard_primitive(_squeeze_shape_rule, utils.input_dtype, "squeeze")
ad.deflinear2(squeeze_p, _squeeze_transpose_rule)
batching.primitive_batchers[squeeze_p] = _squeeze_batch_rule
mlir.register_lowering(squeeze_p, _squeeze_lowering)


# =============================================================================
# rev
# =============================================================================

def rev(operand, dimensions):
  """Wraps XLA's Rev operator: reverses the order of elements along `dimensions`."""
  dimensions = _int_tuple("rev", "dimensions", dimensions)
  return rev_p.bind(operand, dimensions=dimensions)


def _rev_shape_rule(operand, *, dimensions):
  _check_shapelike("rev", "dimensions", dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
  if dimensions and not max(dimensions) < operand.ndim:
    raise TypeError("rev dimensions must all be less than operand ndim, got dimensions "
                    f"{dimensions} for operand ndim {operand.ndim}.")
  return operand.shape


def _rev_batch_rule(args, dims, *, dimensions):
  (x,), (d,) = args, dims
  return rev(x, tuple(i + 1 if i >= d else i for i in dimensions)), d


def _rev_lowering(ctx, x, *, dimensions):
  return [hlo.reverse(x, list(dimensions))]


rev_p = standard_primitive(_rev_shape_rule, utils.input_dtype, "rev")
ad.deflinear2(rev_p, lambda ct, operand, *, dimensions: [rev(ct, dimensions)])
batching.primitive_batchers[rev_p] = _rev_batch_rule
mlir.register_lowering(rev_p, _rev_lowering)


# =============================================================================
# concatenate
# =============================================================================

def concatenate(operands, dimension):
  """Concatenates a sequence of arrays along `dimension`.

  The operands must have the same dtype and rank, and equal sizes in every
  other dimension.
  """
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequence of arrays")
  dimension = operator.index(dimension)
  ndim = np.ndim(operands[0])
  if ndim and -ndim <= dimension < 0:
    dimension += ndim
  if len(operands) == 1 and isinstance(operands[0], (Array, Tracer)):
    return operands[0]
  return concatenate_p.bind(*operands, dimension=dimension)


def _concatenate_shape_rule(*operands, dimension):
  if not operands:
    raise TypeError("concatenate expects at least one operand, got 0.")
  shapes = ", ".join(str(o.shape) for o in operands)
  if len({o.ndim for o in operands}) != 1:
    raise TypeError("Cannot concatenate arrays with different numbers of dimensions: "
                    f"got {shapes}.")
  if not 0 <= dimension < operands[0].ndim:
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                    f"shapes {shapes}.")
  others = [o.shape[:dimension] + o.shape[dimension + 1:] for o in operands]
  if others[:-1] != others[1:]:
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions "
                    "other than the one being concatenated: concatenating along "
                    f"dimension {dimension} for shapes {shapes}.")
  size = sum(o.shape[dimension] for o in operands)
  ex = operands[0].shape
  return ex[:dimension] + (size,) + ex[dimension + 1:]


def _concatenate_dtype_rule(*operands, dimension):
  utils.check_same_dtypes("concatenate", *operands)
  return operands[0].dtype


def _concatenate_transpose_rule(ct, *operands, dimension):
  # Each linear operand's cotangent is its slice of `ct`.
  from tracejax._src.lax.slicing import slice as lax_slice
  shapes = [o.aval.shape if ad.is_undefined_primal(o) else _shape(o) for o in operands]
  ct_shape = _shape(ct)
  limit_points = np.cumsum([s[dimension] for s in shapes]).tolist()
  starts = [0] + limit_points[:-1]
  out = []
  for o, start, limit in zip(operands, starts, limit_points):
    if not ad.is_undefined_primal(o):
      out.append(None)
      continue
    lo = [0] * len(ct_shape)
    hi = list(ct_shape)
    lo[dimension], hi[dimension] = start, limit
    out.append(lax_slice(ct, lo, hi))
  return out


def _concatenate_batch_rule(args, dims, *, dimension):
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  operands = [utils.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return concatenate(operands, dimension + 1), 0


def _concatenate_lowering(ctx, *xs, dimension):
  return [hlo.concatenate(list(xs), dimension)]


concatenate_p = standard_primitive(_concatenate_shape_rule, _concatenate_dtype_rule,
                                   "concatenate")
ad.deflinear2(concatenate_p, _concatenate_transpose_rule)
batching.primitive_batchers[concatenate_p] = _concatenate_batch_rule
mlir.register_lowering(concatenate_p, _concatenate_lowering)


# =============================================================================
# pad
# =============================================================================

def pad(operand, padding_value, padding_config):
  """Wraps XLA's Pad operator.

  `padding_config` has one `(low, high, interior)` triple per dimension: `low`
  and `high` elements of `padding_value` at each end (negative values remove
  elements) and `interior` between adjacent elements.
  """
  operand, padding_value = utils.promote_python_scalars([operand, padding_value])
  try:
    config = tuple((int(operator.index(lo)), int(operator.index(hi)),
                    int(operator.index(it))) for lo, hi, it in padding_config)
  except (TypeError, ValueError):
    raise TypeError("pad padding_config must be a sequence of (low, high, interior) "
                    f"integer triples, got {padding_config!r}.") from None
  return pad_p.bind(operand, padding_value, padding_config=config)


def _dilate_dim(d, dilation):
  return 0 if d == 0 else 1 + dilation * (d - 1)


def _pad_shape_rule(operand, padding_value, *, padding_config):
  if padding_value.ndim != 0:
    raise TypeError("pad padding_value must be a scalar, got padding_value of shape "
                    f"{padding_value.shape}.")
  if len(padding_config) != operand.ndim:
    raise ValueError("length of padding_config must equal the number of axes of operand, "
                     f"got padding_config {padding_config} for operand shape "
                     f"{operand.shape}")
  if not all(i >= 0 for _, _, i in padding_config):
    raise ValueError("interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  result = tuple(lo + hi + _dilate_dim(d, it + 1)
                 for (lo, hi, it), d in zip(padding_config, operand.shape))
  if not all(d >= 0 for d in result):
    raise ValueError("Dimension size after padding is not at least 0, got result shape "
                     f"{result}, for padding_config {padding_config} and operand shape "
                     f"{operand.shape}")
  return result


def _pad_dtype_rule(operand, padding_value, *, padding_config):
  if operand.dtype != padding_value.dtype:
    raise TypeError("pad operand and padding_value must be same dtype: got "
                    f"{operand.dtype.name} and {padding_value.dtype.name}.")
  return operand.dtype


def _pad_transpose_rule(ct, operand, padding_value, *, padding_config):
  # Undo the edge padding (negative padding re-grows cropped parts with zeros),
  # then take every (interior + 1)-th element; the padding value's cotangent is
  # the sum of what is left over.
  from tracejax._src.lax.reductions import reduce_sum
  from tracejax._src.lax.slicing import slice as lax_slice
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  ct_shape = _shape(ct)
  dtype = _aval(ct).dtype

  def t_operand():
    unpad = tuple((-l, -h, 0) for l, h in zip(lo, hi))
    # A pad even with nothing to undo, as JAX: its strong zero makes a weak cotangent
    # (grad's seed of a 0-d pad) strong.
    unpadded = pad(ct, np.zeros((), dtype), unpad)
    if not any(interior):
      return unpadded
    return lax_slice(unpadded, (0,) * len(ct_shape), _shape(unpadded),
                     tuple(i + 1 for i in interior))

  t_op = t_operand() if ad.is_undefined_primal(operand) or \
      ad.is_undefined_primal(padding_value) else None
  t_padv = None
  if ad.is_undefined_primal(padding_value):
    from tracejax._src.lax import elementwise
    all_axes = lambda x: tuple(range(len(_shape(x))))
    t_padv = elementwise.sub(reduce_sum(ct, all_axes(ct)), reduce_sum(t_op, all_axes(t_op)))
  return [t_op if ad.is_undefined_primal(operand) else None, t_padv]


def _pad_batch_rule(args, dims, *, padding_config):
  operand, padding_value = args
  operand_bdim, padv_bdim = dims
  if operand_bdim is None:
    operand_bdim = 0
    operand = broadcast(operand, (_shape(padding_value)[padv_bdim],))
  config = list(padding_config)
  config.insert(operand_bdim, (0, 0, 0))
  if padv_bdim is None:
    return pad(operand, padding_value, config), operand_bdim
  # A batched padding value: pad with zeros, then select the padding positions
  # (found by padding a mask of Trues with False) from the broadcast values.
  from tracejax._src.lax import elementwise
  dtype = _aval(operand).dtype
  x = pad(operand, np.zeros((), dtype), config)
  mask = pad(full_like(operand, True, np.bool_), np.bool_(False), config)
  padv = utils.moveaxis(padding_value, padv_bdim, 0)
  bpad = broadcast_in_dim(padv, _shape(x), (operand_bdim,))
  return elementwise.select(mask, x, bpad), operand_bdim


def _pad_lowering(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = (list(t) for t in zip(*padding_config)) if padding_config \
      else ([], [], [])
  return [hlo.pad(x, padding_value, lo, hi, interior)]


pad_p = standard_primitive(_pad_shape_rule, _pad_dtype_rule, "pad")
ad.deflinear2(pad_p, _pad_transpose_rule)
batching.primitive_batchers[pad_p] = _pad_batch_rule
mlir.register_lowering(pad_p, _pad_lowering)


# =============================================================================
# iota
# =============================================================================

def iota(dtype, size):
  """Wraps XLA's Iota operator: `[0, 1, ..., size - 1]` of dtype `dtype`."""
  (size,) = canonicalize_shape((size,))
  return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
  """An array of `shape` whose elements are their index along `dimension`;
  `out_sharding=` lays it out as in `reshape`.

  >>> broadcasted_iota(np.int32, (2, 2), 1)
  DeviceArray([[0, 1],
               [0, 1]], dtype=int32)
  """
  if out_sharding is not None:
    return _with_out_sharding(lambda: broadcasted_iota(dtype, shape, dimension),
                              out_sharding, "broadcasted_iota")
  dtype = dtypes.canonicalize_dtype(dtype)
  shape = canonicalize_shape(shape)
  dimension = operator.index(dimension)
  if shape and -len(shape) <= dimension < 0:
    dimension += len(shape)
  return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def _iota_shape_rule(*, dtype, shape, dimension):
  _check_shapelike("iota", "shape", shape)
  if not 0 <= dimension < len(shape):
    raise ValueError("iota dimension must be between 0 and the rank of shape, got "
                     f"dimension={dimension} for shape {shape}.")
  return tuple(shape)


def _iota_dtype_rule(*, dtype, shape, dimension):
  dtype = np.dtype(dtype)
  if not (dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)):
    raise TypeError(f"iota does not accept dtype {dtype.name}; it needs an integer, "
                    "floating or complex dtype.")
  return dtype


def _iota_lowering(ctx, *, dtype, shape, dimension):
  return [hlo.iota(mlir.aval_to_ir_type(ctx.avals_out[0]), dimension)]


iota_p = standard_primitive(_iota_shape_rule, _iota_dtype_rule, "iota")
ad.defjvp_zero(iota_p)  # no operands: nothing to differentiate
# Never called in practice (a primitive without batched operands is not
# batched), but the rule keeps iota usable by any trace that asks.
batching.primitive_batchers[iota_p] = lambda args, dims, **params: (iota_p.bind(**params),
                                                                     None)
mlir.register_lowering(iota_p, _iota_lowering)


# =============================================================================
# Functions: full, full_like, zeros_like_array, tie_in
# =============================================================================

def full(shape, fill_value, dtype=None, *, sharding=None):
  """Returns an array of `shape` filled with `fill_value` (a scalar).

  Without `dtype`, the dtype (and weak type) is that of `fill_value`. `sharding` lays
  the result out, as in JAX: a concrete Sharding (or Device) places it, committed and
  strongly typed, outside `jit` and is ignored under `jit`; a type's sharding
  (`jax.typeof(x).sharding`) types it, under `jit` too.

  >>> full((2,), 3., sharding=NamedSharding(mesh, P('x')))   # doctest: +SKIP
  """
  if sharding is not None:
    return _full_sharded(shape, fill_value, dtype, sharding)
  shape = canonicalize_shape(shape)
  if np.shape(fill_value):
    raise TypeError("full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  if dtype is not None and dtypes._extended_type_of(dtype) is not None:
    return dtype.full(shape, fill_value)  # typed PRNG keys: their dtype's rule (prng.py)
  if dtype is not None:
    dtypes.check_user_dtype_supported(dtype, "full")
  weak_type = dtype is None and dtypes.is_weakly_typed(fill_value)
  dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else _aval(fill_value).dtype)
  if dtype == dtypes.float0:   # no data, no XLA type: host zeros, as in JAX
    return np.zeros(shape, dtypes.float0)
  return broadcast(_convert(fill_value, dtype, weak_type), shape)


def _full_sharded(shape, fill_value, dtype, sharding):
  from tracejax._src import sharding_explicit   # above lax's modules
  from tracejax._src.runtime import sharding as sharding_mod
  out = full(shape, fill_value, dtype)
  if isinstance(sharding, avals_mod.AbstractNamedSharding):
    s = sharding_explicit.concrete_of(sharding)
    return out if s is None else sharding_explicit.reshard(out, s)
  if isinstance(sharding, sharding_mod.PartitionSpec):
    sharding = sharding_mod.named_from_spec(sharding)
  if isinstance(out, Tracer):
    return out   # as JAX: a concrete sharding is not applied under `jit`
  from tracejax._src import api   # above lax's modules
  if out.aval.weak_type:   # placed values are strongly typed (as JAX's)
    out = full(shape, fill_value, out.dtype)
  return api.device_put(out, sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """An array like `x` (its shape and dtype unless given) filled with `fill_value`.

  `x` may be an array, a scalar, or anything with `shape` and `dtype` attributes (a
  `ShapeDtypeStruct`). `sharding` lays the result out as in `full`; without it, a
  result of `x`'s shape is laid out as `x` when `x` is a committed Array over several
  devices (JAX does so for one device too; tracejax's own rules build their zeros here
  and keep them on the default device).

  >>> full_like(jnp.zeros((2,), jnp.int32), 7)   # doctest: +SKIP
  """
  if _is_duck_array(x):
    fill_shape = tuple(x.shape) if shape is None else canonicalize_shape(shape)
    weak_type = dtype is None and bool(getattr(x, "weak_type", False))
    dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else x.dtype)
    return full(fill_shape, _convert(fill_value, dtype, weak_type), sharding=sharding)
  fill_shape = _shape(x) if shape is None else canonicalize_shape(shape)
  if sharding is None and shape is None and type(x) is Array and x.committed:
    from tracejax._src.runtime import sharding as sharding_mod
    if sharding_mod.is_spmd_sharding(x.sharding):
      sharding = x.sharding   # as JAX: laid out as `x` (over a mesh: see the docstring)
  weak_type = dtype is None and dtypes.is_weakly_typed(x)
  dtype = dtypes.canonicalize_dtype(dtype if dtype is not None else _aval(x).dtype)
  return full(fill_shape, _convert(fill_value, dtype, weak_type), sharding=sharding)


def _is_duck_array(x):
  # shape and dtype, but not a value tracejax can take the abstract value of
  if isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or not (
      hasattr(x, "shape") and hasattr(x, "dtype")):
    return False
  try:
    avals_mod.get_aval(x)
    return False
  except Exception:
    return True


def zeros_like_array(x):
  """Zeros of the shape and dtype of `x` (used inside JVP and transpose rules)."""
  return full_like(x, 0)


def tie_in(x, y):
  """Gives `y` a fake data dependence on `x` (2020 API; a no-op since omnistaging)."""
  return y


# =============================================================================
# split, stack, unstack, tile (today's lax; each linear, with every rule)
# =============================================================================

def split(operand, sizes, axis=0):
  """Splits `operand` along `axis` into pieces of the given `sizes` (summing to its size).

  Args:
    operand: an array.
    sizes: a sequence of nonnegative ints.
    axis: the axis to split (negative counts from the end).

  >>> [p.shape for p in split(jnp.zeros((5, 2)), (2, 3))]
  [(2, 2), (3, 2)]
  """
  sizes = _int_tuple("split", "sizes", sizes)
  axis = _canonicalize_axes("split", "axis", axis, len(_shape(operand)))[0]
  return split_p.bind(operand, sizes=sizes, axis=axis)


def _split_shape_rule(operand, *, sizes, axis):
  if any(s < 0 for s in sizes):
    raise ValueError(f"split sizes must be nonnegative, got {sizes}.")
  if sum(sizes) != operand.shape[axis]:
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {operand.shape}.")
  return [operand.shape[:axis] + (s,) + operand.shape[axis + 1:] for s in sizes]


def _split_transpose_rule(cts, operand, *, sizes, axis):
  shape = operand.aval.shape
  parts = [ad.zeros_like_aval(operand.aval.update(shape=shape[:axis] + (s,) + shape[axis + 1:]))
           if type(c) is ad.Zero else c for c, s in zip(cts, sizes)]
  return [concatenate(parts, axis) if parts else full(shape, 0, operand.aval.dtype)]


def _split_batch_rule(args, dims, *, sizes, axis):
  (x,), (d,) = args, dims
  new_axis = axis + (d <= axis)
  return split_p.bind(x, sizes=sizes, axis=new_axis), [d] * len(sizes)


def _split_lowering(ctx, x, *, sizes, axis):
  shape = ctx.avals_in[0].shape
  outs, start = [], 0
  for s in sizes:
    lo = [0] * len(shape)
    hi = list(shape)
    lo[axis], hi[axis] = start, start + s
    outs.append(hlo.slice(x, lo, hi, [1] * len(shape)))
    start += s
  return outs


split_p = standard_primitive(_split_shape_rule, lambda x, **p: [x.dtype] * len(p["sizes"]),
                             "split", multiple_results=True,
                             weak_type_rule=lambda x, **_: x.weak_type)
ad.deflinear2(split_p, _split_transpose_rule)
batching.primitive_batchers[split_p] = _split_batch_rule
mlir.register_lowering(split_p, _split_lowering)


def stack(operands, axis=0):
  """Joins arrays of one shape and dtype along a new axis `axis`.

  Args:
    operands: a non-empty sequence of arrays.
    axis: where the new axis goes (negative counts from the end of the result).

  >>> stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
  DeviceArray([[1, 3],
               [2, 4]], dtype=int32)
  """
  operands = list(operands)
  if not operands:
    raise ValueError("stack requires a non-empty sequence of arrays.")
  axis = _canonicalize_axes("stack", "axis", axis, len(_shape(operands[0])) + 1)[0]
  return stack_p.bind(*operands, axis=axis)


def _stack_shape_rule(*operands, axis):
  shapes = {o.shape for o in operands}
  if len(shapes) != 1:
    raise TypeError(f"stack requires operands of one shape, got "
                    f"{', '.join(str(o.shape) for o in operands)}.")
  s = operands[0].shape
  return s[:axis] + (len(operands),) + s[axis:]


def _stack_dtype_rule(*operands, axis):
  utils.check_same_dtypes("stack", *operands)
  return operands[0].dtype


def _stack_transpose_rule(ct, *operands, axis):
  parts = unstack_p.bind(ct, axis=axis)
  return [p if ad.is_undefined_primal(o) else None for p, o in zip(parts, operands)]


def _stack_batch_rule(args, dims, *, axis):
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  operands = [utils.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  return stack_p.bind(*operands, axis=axis + 1), 0


def _stack_lowering(ctx, *xs, axis):
  s = ctx.avals_in[0]
  piece = mlir.aval_to_ir_type(s.update(shape=s.shape[:axis] + (1,) + s.shape[axis:]))
  return [hlo.concatenate([hlo.reshape(piece, x) for x in xs], axis)]


stack_p = standard_primitive(_stack_shape_rule, _stack_dtype_rule, "stack")
ad.deflinear2(stack_p, _stack_transpose_rule)
batching.primitive_batchers[stack_p] = _stack_batch_rule
mlir.register_lowering(stack_p, _stack_lowering)


def unstack(x, axis=0):
  """The slices of `x` along `axis`, as a tuple of arrays of one rank less.

  Args:
    x: an array of rank >= 1.
    axis: the axis to take apart.

  >>> unstack(jnp.array([[1, 2], [3, 4]]), axis=1)[0]
  DeviceArray([1, 3], dtype=int32)
  """
  axis = _canonicalize_axes("unstack", "axis", axis, len(_shape(x)))[0]
  return tuple(unstack_p.bind(x, axis=axis))


def _unstack_shape_rule(x, *, axis):
  return [x.shape[:axis] + x.shape[axis + 1:]] * x.shape[axis]


def _unstack_transpose_rule(cts, x, *, axis):
  s = x.aval.shape
  piece = x.aval.update(shape=s[:axis] + s[axis + 1:])
  parts = [ad.zeros_like_aval(piece) if type(c) is ad.Zero else c for c in cts]
  return [stack_p.bind(*parts, axis=axis) if parts else full(s, 0, x.aval.dtype)]


def _unstack_batch_rule(args, dims, *, axis):
  (x,), (d,) = args, dims
  new_axis = axis + (d <= axis)
  out_d = d - (axis < d)
  return unstack_p.bind(x, axis=new_axis), [out_d] * x.shape[new_axis]


def _unstack_lowering(ctx, x, *, axis):
  shape = ctx.avals_in[0].shape
  out_type = mlir.aval_to_ir_type(ctx.avals_out[0]) if ctx.avals_out else None
  outs = []
  for i in range(shape[axis]):
    lo = [0] * len(shape)
    hi = list(shape)
    lo[axis], hi[axis] = i, i + 1
    outs.append(hlo.reshape(out_type, hlo.slice(x, lo, hi, [1] * len(shape))))
  return outs


unstack_p = standard_primitive(
    _unstack_shape_rule, lambda x, **p: [x.dtype] * x.shape[p["axis"]], "unstack",
    multiple_results=True, weak_type_rule=lambda x, **_: x.weak_type)
ad.deflinear2(unstack_p, _unstack_transpose_rule)
batching.primitive_batchers[unstack_p] = _unstack_batch_rule
mlir.register_lowering(unstack_p, _unstack_lowering)


def tile(operand, reps):
  """`operand` repeated `reps[i]` times along each axis `i` (`len(reps) == ndim`).

  Args:
    operand: an array.
    reps: a sequence of positive ints, one per axis.

  >>> tile(jnp.array([1, 2, 3]), (2,))
  DeviceArray([1, 2, 3, 1, 2, 3], dtype=int32)
  """
  reps = _int_tuple("tile", "reps", reps)
  if len(reps) != len(_shape(operand)):
    raise ValueError(f"tile: len(reps)={len(reps)} must equal operand.ndim="
                     f"{len(_shape(operand))}.")
  if any(r < 0 for r in reps):
    raise ValueError(f"tile reps must be nonnegative, got {reps}.")
  return tile_p.bind(operand, reps=reps)


def _tile_shape_rule(operand, *, reps):
  return tuple(s * r for s, r in zip(operand.shape, reps))


def _tile_expanded(shape, reps):
  # (r0, s0, r1, s1, ...): the tiled array before merging each (r_i, s_i) pair
  return tuple(d for s, r in zip(shape, reps) for d in (r, s))


def _tile_transpose_rule(ct, operand, *, reps):
  from tracejax._src.lax.reductions import reduce_sum
  shape = operand.aval.shape
  ct = reshape(ct, _tile_expanded(shape, reps))
  return [reduce_sum(ct, tuple(range(0, 2 * len(shape), 2)))]


def _tile_batch_rule(args, dims, *, reps):
  (x,), (d,) = args, dims
  return tile_p.bind(x, reps=reps[:d] + (1,) + reps[d:]), d


def _tile_lowering(ctx, x, *, reps):
  aval = ctx.avals_in[0]
  exp = _tile_expanded(aval.shape, reps)
  b = hlo.broadcast_in_dim(mlir.aval_to_ir_type(aval.update(shape=exp)), x,
                           list(range(1, 2 * len(aval.shape), 2)))
  return [hlo.reshape(mlir.aval_to_ir_type(ctx.avals_out[0]), b)]


tile_p = standard_primitive(_tile_shape_rule, utils.input_dtype, "tile")
ad.deflinear2(tile_p, _tile_transpose_rule)
batching.primitive_batchers[tile_p] = _tile_batch_rule
mlir.register_lowering(tile_p, _tile_lowering)
