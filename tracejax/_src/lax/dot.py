"""Contractions: dot_general (the primitive), dot, batch_matmul, and `Precision`.

`dot_general`'s dimension numbers are `((lhs_contract, rhs_contract),
(lhs_batch, rhs_batch))`. The result's dimensions are the batch dimensions,
then the lhs's free dimensions, then the rhs's, each in order (XLA's rule).
"""
import enum
import itertools

import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import utils
from tracejax._src.lax.structural import _aval, _int_tuple, transpose
from tracejax._src.lax.utils import standard_primitive


class Precision(enum.Enum):
  """Precision of a matrix multiplication on accelerators (ignored on CPU).

  DEFAULT is the fastest (bfloat16 passes on TPU), HIGHEST the most accurate
  (full float32). Also spelled 'default'/'high'/'highest' and the aliases
  'fastest', 'bfloat16', 'bfloat16_3x', 'tensorfloat32', 'float32'.
  """
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    names = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
             "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
             "highest": cls.HIGHEST, "float32": cls.HIGHEST}
    if isinstance(value, str) and value.lower() in names:
      return names[value.lower()]
    return None

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name


def canonicalize_precision(precision):
  """None, or a pair of Precisions (one per operand) from the accepted spellings."""
  if precision is None:
    default = config.jax_default_matmul_precision
    if not default:
      return None
    precision = default
  from tracejax._src.lax.types import DotAlgorithm, DotAlgorithmPreset
  if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    # XLA:CPU has one algorithm per dtype: an explicit algorithm is honoured as
    # "full precision of the operand types" (HIGHEST); DEFAULT leaves the default.
    if precision is DotAlgorithmPreset.DEFAULT:
      return None
    return (Precision.HIGHEST, Precision.HIGHEST)
  if isinstance(precision, str):
    p = Precision(precision)  # ValueError for unknown strings
    return (p, p)
  if isinstance(precision, Precision):
    return (precision, precision)
  if isinstance(precision, (list, tuple)) and len(precision) == 2:
    if all(isinstance(p, Precision) for p in precision):
      return tuple(precision)
    if all(isinstance(p, (str, Precision)) for p in precision):
      return tuple(Precision(p) if isinstance(p, str) else p for p in precision)
  raise ValueError("Precision argument must be one of:\n- None\n- Precision\n"
                   f"- a tuple of two Precision\n- str, got {precision!r}")


# =============================================================================
# dot_general
# =============================================================================

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
  """More general contraction operator (wraps XLA's DotGeneral).

  `dimension_numbers` is `((lhs_contracting_dims, rhs_contracting_dims),
  (lhs_batch_dims, rhs_batch_dims))`. The result has the batch dimensions,
  then lhs's free dimensions, then rhs's. `preferred_element_type` asks for a
  wider output dtype (e.g. int32 from int8 inputs). `out_sharding=` (a NamedSharding,
  or a PartitionSpec under `jax.set_mesh`) lays the result out so.
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    return sharding_explicit.with_out_sharding(lambda: dot_general(
        lhs, rhs, dimension_numbers, precision, preferred_element_type), out_sharding,
        "dot_general")
  try:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  except (TypeError, ValueError):
    raise TypeError("dot_general dimension_numbers must be ((lhs_contracting_dims, "
                    "rhs_contracting_dims), (lhs_batch_dims, rhs_batch_dims)), got "
                    f"{dimension_numbers!r}.") from None
  cdims = (_int_tuple("dot_general", "lhs_contracting_dims", lhs_contract),
           _int_tuple("dot_general", "rhs_contracting_dims", rhs_contract))
  bdims = (_int_tuple("dot_general", "lhs_batch_dims", lhs_batch),
           _int_tuple("dot_general", "rhs_batch_dims", rhs_batch))
  lhs, rhs = utils.promote_python_scalars([lhs, rhs])
  ldt, rdt = _aval(lhs).dtype, _aval(rhs).dtype
  if ldt != rdt:
    # JAX 0.10.2 contracts mixed dtypes in the more precise of the two (f32 with i32
    # gives f32, bool with f16 gives f16, uint32 with int16 gives uint32: XLA's rule,
    # not promotion); both operands take that type first (fuzzer seeds 203, 342).
    from tracejax._src.lax import elementwise
    common = _higher_precision_dtype(ldt, rdt)
    lhs = elementwise.convert_element_type(lhs, common) if ldt != common else lhs
    rhs = elementwise.convert_element_type(rhs, common) if rdt != common else rhs
  params = dict(dimension_numbers=(cdims, bdims), precision=canonicalize_precision(precision))
  # Only a requested output type is a param, so default jaxprs print as the
  # seeds do: `dot_general[ dimension_numbers=... precision=None ]`.
  if preferred_element_type is not None:
    params["preferred_element_type"] = dtypes.canonicalize_dtype(preferred_element_type)
  return dot_general_p.bind(lhs, rhs, **params)


def _higher_precision_dtype(a, b):
  """The dtype a dot of `a` and `b` operands computes in: the greater by (complex,
  float exponent range, float mantissa, bit width, signed), as XLA and JAX order them;
  two different dtypes that tie (int8 and a hypothetical twin) are a TypeError."""
  def rank(d):
    real = dtypes.to_real_dtype(d) if dtypes.is_complex(d) else d
    fl = dtypes.is_floating(real)
    bits = (dtypes.finfo(real).bits if fl else 1 if d == np.bool_
            else dtypes.iinfo(real).bits)
    return (dtypes.is_complex(d), dtypes.finfo(real).maxexp if fl else -1,
            dtypes.finfo(real).nmant if fl else -1, bits, not dtypes.is_unsigned(real))
  ra, rb = rank(a), rank(b)
  if ra == rb:
    raise TypeError(f"lax.dot_general argument type error: {a}, {b}")
  return a if ra > rb else b


def _dot_general_shape_rule(lhs, rhs, *, dimension_numbers, precision,
                            preferred_element_type=None):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  for side, aval, contract, batch in (("lhs", lhs, lhs_contract, lhs_batch),
                                      ("rhs", rhs, rhs_contract, rhs_batch)):
    if not all(0 <= d < aval.ndim for d in contract + batch):
      raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative "
                      f"and less than the number of axes of the {side} value, got "
                      f"{side}_batch of {batch} and {side}_contracting of {contract} for "
                      f"{side} of rank {aval.ndim}")
    if len(set(batch)) != len(batch):
      raise TypeError(f"dot_general requires {side} batch dimensions to be distinct, "
                      f"got {side}_batch {batch}.")
    if len(set(contract)) != len(contract):
      raise TypeError(f"dot_general requires {side} contracting dimensions to be "
                      f"distinct, got {side}_contracting {contract}.")
    if set(contract) & set(batch):
      raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                      f"contracting dimensions, got {side}_batch {batch} and "
                      f"{side}_contracting {contract}.")
  if len(lhs_batch) != len(rhs_batch):
    raise TypeError("dot_general requires equal numbers of lhs_batch and rhs_batch "
                    f"dimensions, got lhs_batch {lhs_batch} and rhs_batch {rhs_batch}.")
  lhs_batch_shape = tuple(lhs.shape[i] for i in lhs_batch)
  rhs_batch_shape = tuple(rhs.shape[i] for i in rhs_batch)
  if lhs_batch_shape != rhs_batch_shape:
    raise TypeError("dot_general requires lhs batch dimensions and rhs batch dimensions "
                    f"to have the same shape, got {lhs_batch_shape} and {rhs_batch_shape} "
                    f"(lhs shape {lhs.shape}, rhs shape {rhs.shape}).")
  lhs_contract_shape = tuple(lhs.shape[i] for i in lhs_contract)
  rhs_contract_shape = tuple(rhs.shape[i] for i in rhs_contract)
  if lhs_contract_shape != rhs_contract_shape:
    raise TypeError("dot_general requires contracting dimensions to have the same shape, "
                    f"got {lhs_contract_shape} and {rhs_contract_shape} (lhs shape "
                    f"{lhs.shape} contracting {lhs_contract}, rhs shape {rhs.shape} "
                    f"contracting {rhs_contract}).")
  return _dot_general_shape_computation(lhs.shape, rhs.shape, dimension_numbers)


def _dot_general_shape_computation(lhs_shape, rhs_shape, dimension_numbers):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  batch_shape = tuple(lhs_shape[i] for i in lhs_batch)
  lhs_free = tuple(d for i, d in enumerate(lhs_shape) if i not in lhs_contract + lhs_batch)
  rhs_free = tuple(d for i, d in enumerate(rhs_shape) if i not in rhs_contract + rhs_batch)
  return batch_shape + lhs_free + rhs_free


_dot_accepted = [np.bool_, np.integer, np.inexact]


def _dot_general_dtype_rule(lhs, rhs, *, dimension_numbers, precision,
                            preferred_element_type=None):
  utils.check_dtypes("dot_general", _dot_accepted, lhs, rhs)
  utils.check_same_dtypes("dot_general", lhs, rhs)
  if preferred_element_type is None:
    return lhs.dtype
  pref = np.dtype(preferred_element_type)
  src = lhs.dtype
  ok = (pref == src
        or (dtypes.is_bool(src) and not dtypes.is_bool(pref))
        or (dtypes.is_integer(src) and (dtypes.is_inexact(pref) or (
            dtypes.is_integer(pref) and dtypes.is_signed(pref) == dtypes.is_signed(src))))
        or (dtypes.is_floating(src) and dtypes.is_inexact(pref))
        or (dtypes.is_complex(src) and dtypes.is_complex(pref)))
  if not ok:
    raise TypeError(f"dot_general preferred_element_type {pref.name} is incompatible with "
                    f"the input dtype {src.name}: it must be of the same kind (integers "
                    "of the same signedness, or inexact) or wider.")
  return pref


def _dot_general_weak_type_rule(lhs, rhs, **params):
  # JAX's standard rule, even with a preferred_element_type: weak when both operands
  # are (jnp.dot then converts its result to a strong type; its transpose re-weakens
  # the cotangent, so the cotangents of weak operands stay weak).
  return lhs.weak_type and rhs.weak_type


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield tuple(range(start, start + len(x)))
    start += len(x)


def _remaining(original, *removed_lists):
  removed = set(itertools.chain(*removed_lists))
  return [i for i in original if i not in removed]


def _convert_to(x, aval):
  if _aval(x).dtype == aval.dtype:
    return x
  from tracejax._src.lax import elementwise
  # A cotangent changing dtype takes the operand's weak type too, as in JAX.
  return elementwise._convert_element_type(x, aval.dtype, weak_type=aval.weak_type)


def _dot_general_transpose_lhs(g, x, y, *, dimension_numbers, precision,
                               preferred_element_type=None, swap_ans=False):
  # x's cotangent: contract g with y over y's free dimensions (and batch), then
  # put x's dimensions back in order.
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_aval = x.aval
  x_ndim = x_aval.ndim
  y_ndim = y.aval.ndim if ad.is_undefined_primal(y) else np.ndim(y)
  x_kept = _remaining(range(x_ndim), x_contract, x_batch)
  y_kept = _remaining(range(y_ndim), y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
  x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
  g_dtype = _aval(g).dtype
  if (y.aval.dtype if ad.is_undefined_primal(y) else _aval(y).dtype) != g_dtype:
    # A wider preferred_element_type: contract in the cotangent's dtype.
    from tracejax._src.lax import elementwise
    y = elementwise.convert_element_type(y, g_dtype)
  x_bar = transpose(dot_general(g, y, dims, precision=precision),
                    tuple(int(a) for a in out_axes))
  return _convert_to(x_bar, x_aval)


def _dot_general_transpose_rhs(g, x, y, *, dimension_numbers, precision,
                               preferred_element_type=None):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  swapped_precision = None if precision is None else (precision[1], precision[0])
  return _dot_general_transpose_lhs(g, y, x, dimension_numbers=swapped,
                                    precision=swapped_precision,
                                    preferred_element_type=preferred_element_type,
                                    swap_ans=True)


def _dot_general_batch_dim_nums(ndims, batch_dims, dimension_numbers):
  """New dimension numbers carrying the vmapped axes, and the result's batch axis.

  Both operands batched: the vmapped axes become the first batch dimension.
  One operand batched: its vmapped axis is a free dimension of that operand.
  Either way the result is ONE dot_general.
  """
  lhs_ndim, rhs_ndim = ndims  # ranks of the batched values
  lbd, rbd = batch_dims
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers

  def bump(dims, b):
    return tuple(d + (d >= b) for d in dims)

  if lbd is not None and rbd is not None:
    lhs_batch = (lbd,) + bump(lhs_batch, lbd)
    rhs_batch = (rbd,) + bump(rhs_batch, rbd)
    lhs_contract = bump(lhs_contract, lbd)
    rhs_contract = bump(rhs_contract, rbd)
    result_batch_dim = 0
  elif lbd is not None:
    lhs_free = _remaining(range(lhs_ndim - 1), lhs_contract, lhs_batch)
    result_batch_dim = len(lhs_batch) + sum(d < lbd for d in lhs_free)
    lhs_batch = bump(lhs_batch, lbd)
    lhs_contract = bump(lhs_contract, lbd)
  else:
    rhs_free = _remaining(range(rhs_ndim - 1), rhs_contract, rhs_batch)
    lhs_free_count = lhs_ndim - len(lhs_contract) - len(lhs_batch)
    result_batch_dim = len(lhs_batch) + lhs_free_count + sum(d < rbd for d in rhs_free)
    rhs_batch = bump(rhs_batch, rbd)
    rhs_contract = bump(rhs_contract, rbd)
  return ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)), result_batch_dim


def _dot_general_batch_rule(args, dims, *, dimension_numbers, **params):
  lhs, rhs = args
  new_dims, out_dim = _dot_general_batch_dim_nums((np.ndim(lhs), np.ndim(rhs)), dims,
                                                  dimension_numbers)
  return dot_general_p.bind(lhs, rhs, dimension_numbers=new_dims, **params), out_dim


def _precision_attr(precision):
  if precision is None:
    return None
  return ir.ArrayAttr.get([hlo.PrecisionAttr.get(str(p)) for p in precision])


def _dot_general_lowering(ctx, lhs, rhs, *, dimension_numbers, precision,
                          preferred_element_type=None):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  lhs_aval, rhs_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  compute_dtype = aval_out.dtype
  if lhs_aval.dtype == np.bool_:
    # XLA has no boolean dot: count the true products in int32, then test > 0.
    compute_dtype = np.dtype(np.int32) if aval_out.dtype == np.bool_ else aval_out.dtype
  if lhs_aval.dtype != compute_dtype:
    # Convert the operands first: XLA:CPU does not mix input and output types.
    lhs = hlo.convert(mlir.aval_to_ir_type(lhs_aval.update(dtype=compute_dtype)), lhs)
    rhs = hlo.convert(mlir.aval_to_ir_type(rhs_aval.update(dtype=compute_dtype)), rhs)
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
      lhs_contracting_dimensions=list(lhs_contract),
      rhs_contracting_dimensions=list(rhs_contract))
  out_type = mlir.aval_to_ir_type(aval_out.update(dtype=compute_dtype))
  out = hlo.dot_general(out_type, lhs, rhs, dnums, precision_config=_precision_attr(precision))
  if aval_out.dtype == np.bool_:
    zero = mlir.full_like_aval(0, aval_out.update(dtype=compute_dtype))
    out = hlo.compare(out, zero, hlo.ComparisonDirectionAttr.get("NE"),
                      compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))
  return [out]


dot_general_p = standard_primitive(_dot_general_shape_rule, _dot_general_dtype_rule,
                                   "dot_general", weak_type_rule=_dot_general_weak_type_rule)
ad.defbilinear(dot_general_p, _dot_general_transpose_lhs, _dot_general_transpose_rhs)
batching.primitive_batchers[dot_general_p] = _dot_general_batch_rule
mlir.register_lowering(dot_general_p, _dot_general_lowering)


# =============================================================================
# Functions built on dot_general
# =============================================================================

def dot(lhs, rhs, precision=None, preferred_element_type=None, *, out_sharding=None):
  """Vector/vector, matrix/vector, and matrix/matrix multiplication.

  Contracts the last dimension of `lhs` with the first of `rhs`; both must be
  vectors or matrices. `out_sharding=` (a NamedSharding, or a PartitionSpec under
  `jax.set_mesh`) lays the result out (it resolves a contraction over a split axis).
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    return sharding_explicit.with_out_sharding(
        lambda: dot(lhs, rhs, precision, preferred_element_type), out_sharding, "dot")
  lhs_shape, rhs_shape = np.shape(lhs), np.shape(rhs)
  if 1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2 and lhs_shape[-1] == rhs_shape[0]:
    return dot_general(lhs, rhs, (((len(lhs_shape) - 1,), (0,)), ((), ())),
                       precision=precision, preferred_element_type=preferred_element_type)
  raise TypeError(f"Incompatible shapes for dot: got {lhs_shape} and {rhs_shape}.")


def batch_matmul(lhs, rhs, precision=None):
  """Batch matrix multiplication: `lhs[..., i, j] @ rhs[..., j, k]` over equal leading
  (batch) dimensions."""
  lhs_ndim, rhs_ndim = np.ndim(lhs), np.ndim(rhs)
  if min(lhs_ndim, rhs_ndim) < 2:
    raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lhs_ndim}, "
                     f"{rhs_ndim}")
  if lhs_ndim != rhs_ndim:
    raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lhs_ndim}, "
                     f"{rhs_ndim}")
  batch = tuple(range(lhs_ndim - 2))
  return dot_general(lhs, rhs, (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)),
                     precision=precision)


# =============================================================================
# ragged_dot: a grouped matmul whose groups are runs of rows (or of the contraction)
# =============================================================================

def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None):
  """Ragged matrix multiplication: rows of `lhs` come in consecutive groups, and the
  rows of group `i` are multiplied by `rhs[i]`.

  Args:
    lhs: an (m, k) array.
    rhs: a (g, k, n) array: one matrix per group.
    group_sizes: a (g,) integer array; rows past `sum(group_sizes)` give zeros.
    precision, preferred_element_type: as for `dot_general`.
    group_offset: not supported (None).

  >>> ragged_dot(jnp.ones((3, 2)), jnp.stack([jnp.eye(2), 2 * jnp.eye(2)]),
  ...            jnp.array([1, 2]))[:, 0]
  DeviceArray([1., 2., 2.], dtype=float32)
  """
  from tracejax._src.lax.types import RaggedDotDimensionNumbers
  dn = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
  return ragged_dot_general(lhs, rhs, group_sizes, dn, precision=precision,
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset)


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None):
  """Ragged dot with `dot_general`'s dimension numbers; the lhs ragged dimension is cut
  into consecutive groups of sizes `group_sizes` (shape (g,)). Three modes:

  1. ragged non-contracting dimension, rhs with a group dimension: each group of lhs
     rows meets its own rhs slice; the result is `dot_general`'s without the group
     dimension.
  2. ragged contracting dimension: the contraction is split into the groups, and the
     result gets a leading dimension of size g (one partial product per group).
  3. ragged batch dimension: the same as `dot_general`.

  Args:
    lhs, rhs: the operands.
    group_sizes: a (g,) integer array.
    ragged_dot_dimension_numbers: a `RaggedDotDimensionNumbers`.
    precision, preferred_element_type: as for `dot_general`.
    group_offset: not supported (None).

  >>> from tracejax.lax import RaggedDotDimensionNumbers
  >>> dn = RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
  >>> ragged_dot_general(jnp.ones((1, 3)), jnp.ones((3, 1)), jnp.array([1, 2]), dn)[:, 0, 0]
  DeviceArray([1., 2.], dtype=float32)
  """
  from tracejax._src.lax import elementwise, reductions, structural
  if group_offset is not None:
    raise TypeError("ragged_dot: group_offset is not supported; pass None.")
  rdn = ragged_dot_dimension_numbers
  (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
  if len(rdn.lhs_ragged_dimensions) != 1:
    raise ValueError("ragged_dot_general requires exactly one lhs ragged dimension, got "
                     f"{rdn.lhs_ragged_dimensions}.")
  r = rdn.lhs_ragged_dimensions[0] % len(np.shape(lhs))
  gs_aval = _aval(group_sizes)
  if len(gs_aval.shape) != 1 or not dtypes.issubdtype(gs_aval.dtype, np.integer):
    raise TypeError("ragged_dot group_sizes must be a 1-D integer array, got "
                    f"{gs_aval.str_short()}.")
  g = gs_aval.shape[0]
  m = np.shape(lhs)[r]
  # gid[i] = the group of position i along the ragged dimension (g: past every group)
  from tracejax._src.lax.windowed import cumsum
  ends = cumsum(elementwise.convert_element_type(group_sizes, np.int32), 0)
  pos = structural.iota(np.int32, m)
  past = elementwise.ge(structural.broadcast_in_dim(pos, (m, g), (0,)),
                        structural.broadcast_in_dim(ends, (m, g), (1,)))
  gid = reductions.reduce_sum(elementwise.convert_element_type(past, np.int32), (1,))
  onehot = elementwise.eq(structural.broadcast_in_dim(gid, (m, g), (0,)),
                          structural.broadcast_in_dim(structural.iota(np.int32, g), (m, g),
                                                      (1,)))
  kw = dict(precision=precision, preferred_element_type=preferred_element_type)
  dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
  lhs_nd, rhs_nd = len(np.shape(lhs)), len(np.shape(rhs))
  if r in lb:  # mode 3
    return dot_general(lhs, rhs, dims, **kw)
  if r in lc:  # mode 2: one product per group, the lhs masked to the group's columns
    lhs_g = structural.broadcast_in_dim(lhs, (g,) + tuple(np.shape(lhs)),
                                        tuple(range(1, lhs_nd + 1)))
    mask = _bcast_2d(onehot, np.shape(lhs_g), r + 1, 0)
    lhs_g = elementwise.select(mask, lhs_g, structural.full(np.shape(lhs_g), 0,
                                                            _aval(lhs).dtype))
    out = dot_general(lhs_g, rhs, ((tuple(d + 1 for d in lc), tuple(rc)),
                                   (tuple(d + 1 for d in lb), tuple(rb))), **kw)
    # the group dimension is lhs's first free dimension: move it in front
    nb = len(lb)
    perm = (nb,) + tuple(range(nb)) + tuple(range(nb + 1, len(np.shape(out))))
    return transpose(out, perm)
  # mode 1: the rhs group dimension stays free; keep each row's own group, sum out g
  if len(rdn.rhs_group_dimensions) != 1:
    raise ValueError("ragged_dot_general with a ragged non-contracting dimension needs "
                     "one rhs group dimension.")
  gd = rdn.rhs_group_dimensions[0] % rhs_nd
  if np.shape(rhs)[gd] != g:
    raise ValueError(f"ragged_dot: rhs group dimension has size {np.shape(rhs)[gd]}, but "
                     f"group_sizes has {g} groups.")
  full = dot_general(lhs, rhs, dims, **kw)
  lhs_free = [d for d in range(lhs_nd) if d not in lc and d not in lb]
  rhs_free = [d for d in range(rhs_nd) if d not in rc and d not in rb]
  out_r = len(lb) + lhs_free.index(r)
  out_g = len(lb) + len(lhs_free) + rhs_free.index(gd)
  mask = _bcast_2d(onehot, np.shape(full), out_r, out_g)
  full = elementwise.select(mask, full, structural.full(np.shape(full), 0, _aval(full).dtype))
  return reductions.reduce_sum(full, (out_g,))


def _bcast_2d(x, shape, d0, d1):
  """Broadcast 2-D `x` to `shape`, its axes landing on dimensions d0 and d1 (any order)."""
  from tracejax._src.lax import structural
  if d0 > d1:
    x, d0, d1 = transpose(x, (1, 0)), d1, d0
  return structural.broadcast_in_dim(x, tuple(shape), (d0, d1))


# =============================================================================
# scaled_dot: a block-scaled matmul (each run of `subchannel` contraction entries
# shares one scale), as the narrow float formats (MX) use
# =============================================================================

def scaled_dot(lhs, rhs, *, lhs_scale=None, rhs_scale=None, dimension_numbers=None,
               preferred_element_type=None):
  """`(lhs * lhs_scale) @ (rhs * rhs_scale)` accumulated in `preferred_element_type`, where
  each scale entry covers a run of consecutive entries along the contracting dimension.
  The scaled operands are formed in bfloat16, as JAX does on CPU.

  Args:
    lhs, rhs: the operands (often float8).
    lhs_scale, rhs_scale: the scales (None: 1), of the operands' shapes except along the
      contracting dimension, whose size divides the operand's (the runs' length is the
      ratio).
    dimension_numbers: as for `dot_general`, with one contracting dimension per side;
      default `(((1,), (0,)), ((), ()))` for 2-D operands and `(((2,), (1,)), ((0,),
      (0,)))` for 3-D ones.
    preferred_element_type: the dtype of the products and the result (default
      bfloat16).

  >>> scaled_dot(jnp.ones((1, 4)), jnp.ones((4, 1)), lhs_scale=jnp.array([[1., 2.]]),
  ...            preferred_element_type=jnp.float32)
  DeviceArray([[6.]], dtype=float32)
  """
  from tracejax._src.lax import elementwise
  lhs_nd = len(np.shape(lhs))
  if dimension_numbers is None:
    if lhs_nd == 2:
      dimension_numbers = (((1,), (0,)), ((), ()))
    elif lhs_nd == 3:
      dimension_numbers = (((2,), (1,)), ((0,), (0,)))
    else:
      raise ValueError("scaled_dot needs dimension_numbers for operands of rank "
                       f"{lhs_nd} (defaults exist for rank 2 and 3).")
  (lc, rc), (lb, rb) = dimension_numbers
  if len(lc) != 1 or len(rc) != 1:
    raise ValueError("scaled_dot supports exactly one contracting dimension per operand, "
                     f"got {dimension_numbers}.")
  dtype = dtypes.canonicalize_dtype(preferred_element_type if preferred_element_type
                                    is not None else dtypes.bfloat16)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"scaled_dot preferred_element_type must be a float type, got {dtype}.")

  # JAX 0.10.2 (without a native block-scaled dot) rounds operands and scales to
  # bfloat16 and multiplies them there, then contracts in `dtype`: so does tracejax,
  # to give the same numbers.
  work = np.dtype(dtypes.bfloat16)

  def scaled(x, scale, c, name):
    x = elementwise.convert_element_type(x, work)
    if scale is None:
      return x
    xs, ss = tuple(np.shape(x)), tuple(np.shape(scale))
    if len(ss) != len(xs) or any(a != b for i, (a, b) in enumerate(zip(xs, ss)) if i != c):
      raise ValueError(f"scaled_dot {name}_scale of shape {ss} must match the operand's "
                       f"shape {xs} except along the contracting dimension {c}.")
    if ss[c] == 0 or xs[c] % ss[c]:
      raise ValueError(f"scaled_dot: the contracting size {xs[c]} of {name} must be a "
                       f"multiple of {name}_scale's {ss[c]}.")
    run = xs[c] // ss[c]
    s = elementwise.convert_element_type(scale, work)
    # repeat each scale `run` times along c: broadcast a new axis after c, then merge
    from tracejax._src.lax import structural
    expanded = ss[:c + 1] + (run,) + ss[c + 1:]
    s = structural.broadcast_in_dim(s, expanded, tuple(i for i in range(len(ss) + 1)
                                                        if i != c + 1))
    s = structural.reshape(s, xs)
    return elementwise.mul(x, s)

  a = scaled(lhs, lhs_scale, lc[0], "lhs")
  b = scaled(rhs, rhs_scale, rc[0], "rhs")
  return dot_general(a, b, dimension_numbers, preferred_element_type=dtype)
