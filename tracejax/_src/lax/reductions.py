"""Reductions: reduce_sum/max/min/prod/and/or/xor, argmax/argmin, and general `reduce`.

Each monoid reduction is its own primitive with param `axes` (a tuple of
nonnegative ints), lowered to one StableHLO `reduce` whose body is the
monoid's binary op. `reduce_sum` also carries `input_shape`, as in the seeds'
jaxprs (`reduce_sum[ axes=(0,) input_shape=(8,) ]`); its transpose uses it.
"""
import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.core import ir as jir
from tracejax._src.core.trace import Tracer, set_current_trace, eval_trace
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise_hlo as ew_hlo
from tracejax._src.lax import utils
from tracejax._src.lax.structural import (_aval, _canonicalize_axes, _shape,
                                          broadcast_in_dim, full, pad, reshape, squeeze)
from tracejax._src.lax.utils import standard_primitive


# ---- shared rules ----

def _reduce_op_shape_rule(operand, *, axes, input_shape=None):
  if len(axes) != len(set(axes)):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
  if not all(0 <= a < operand.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for operand "
                     f"of shape {operand.shape}.")
  if input_shape is not None and tuple(input_shape) != operand.shape:
    raise ValueError(f"reduce_sum input_shape {input_shape} does not match the operand "
                     f"shape {operand.shape}.")
  axes = frozenset(axes)
  return tuple(d for i, d in enumerate(operand.shape) if i not in axes)


def _reduce_dtype_rule(name, accepted):
  def rule(operand, **_):
    utils.check_dtypes(name, accepted, operand)
    return operand.dtype
  return rule


def _scalar_type(dtype):
  return ir.RankedTensorType.get((), mlir.dtype_to_ir_type(dtype))


def _monoid_lowering(body_op, identity, with_dtype=False):
  """Lowering to one `stablehlo.reduce` with body `body_op` and init `identity(dtype)`
  (`body_op(a, b, dtype)` when `with_dtype`)."""
  def lower(ctx, x, *, axes, **_):
    dtype = ctx.avals_in[0].dtype
    init = mlir.ir_constant(np.array(identity(dtype), dtype))
    op = hlo.ReduceOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [x], [init], list(axes))
    block = op.body.blocks.append(_scalar_type(dtype), _scalar_type(dtype))
    with ir.InsertionPoint(block):
      args = (*block.arguments, dtype) if with_dtype else block.arguments
      hlo.return_([body_op(*args)])
    return list(op.results)
  return lower


def _chooser_body(direction, hlo_op):
  # The body of elementwise max/min: lexicographic for complex numbers, as in JAX
  # (XLA's own maximum orders complex numbers differently).
  def body(a, b, dtype):
    from tracejax._src.lax import elementwise
    return elementwise.minmax_hlo(a, b, dtype, direction, hlo_op)
  return body


def _get_max_identity(dtype):
  """The identity of max: -inf, the smallest integer, or False."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    return np.array(-np.inf, dtype)
  if dtypes.is_integer(dtype):
    return np.array(dtypes.iinfo(dtype).min, dtype)
  return np.array(False, dtype)


def _get_min_identity(dtype):
  """The identity of min: inf, the largest integer, or True."""
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    return np.array(np.inf, dtype)
  if dtypes.is_integer(dtype):
    return np.array(dtypes.iinfo(dtype).max, dtype)
  return np.array(True, dtype)


def _reduce_wrapper_axes(name, operand, axes):
  return tuple(_canonicalize_axes(name, "axes", axes, np.ndim(operand)))


# =============================================================================
# reduce_sum
# =============================================================================

def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum of `operand` over the dimensions `axes`; `out_sharding=` (a NamedSharding, or a
  PartitionSpec under `jax.set_mesh`) lays the result out.

  >>> reduce_sum(jnp.ones((2, 3)), (0,))
  DeviceArray([2., 2., 2.], dtype=float32)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above lax
    return sharding_explicit.with_out_sharding(
        lambda: reduce_sum(operand, axes), out_sharding, "reduce_sum")
  axes = _reduce_wrapper_axes("reduce_sum", operand, axes)
  return reduce_sum_p.bind(operand, axes=axes, input_shape=_shape(operand))


def _reduce_sum_transpose_rule(ct, operand, *, axes, input_shape=None):
  input_shape = operand.aval.shape
  kept = tuple(d for d in range(len(input_shape)) if d not in axes)
  return [broadcast_in_dim(ct, input_shape, kept)]


def _reduce_sum_batch_rule(args, dims, *, axes, input_shape=None):
  (x,), (d,) = args, dims
  new_axes = tuple(a + (a >= d) for a in axes)
  out = reduce_sum_p.bind(x, axes=new_axes, input_shape=_shape(x))
  return out, d - sum(a < d for a in new_axes)


reduce_sum_p = standard_primitive(_reduce_op_shape_rule,
                                  _reduce_dtype_rule("reduce_sum", utils._num), "reduce_sum")
ad.deflinear2(reduce_sum_p, _reduce_sum_transpose_rule)
batching.primitive_batchers[reduce_sum_p] = _reduce_sum_batch_rule
mlir.register_lowering(reduce_sum_p, _monoid_lowering(hlo.add, lambda dt: 0))


# =============================================================================
# reduce_max / reduce_min
# =============================================================================

def reduce_max(operand, axes):
  """Maximum of `operand` over the dimensions `axes` (NaN propagates)."""
  return reduce_max_p.bind(operand, axes=_reduce_wrapper_axes("reduce_max", operand, axes))


def reduce_min(operand, axes):
  """Minimum of `operand` over the dimensions `axes` (NaN propagates)."""
  return reduce_min_p.bind(operand, axes=_reduce_wrapper_axes("reduce_min", operand, axes))


def _reduce_chooser_jvp_rule(g, ans, operand, *, axes):
  # The tangent is the mean of the tangents at the locations of the max (or
  # min): ties share the derivative, as in JAX.
  from tracejax._src.lax import elementwise
  shape = _shape(operand)
  kept = tuple(d for d in range(len(shape)) if d not in axes)
  g_dtype = _aval(g).dtype
  location_indicators = elementwise.convert_element_type(
      elementwise.eq(operand, broadcast_in_dim(ans, shape, kept)), g_dtype)
  counts = reduce_sum(location_indicators, axes)
  return elementwise.div(reduce_sum(elementwise.mul(g, location_indicators), axes), counts)


reduce_max_p = standard_primitive(_reduce_op_shape_rule,
                                  _reduce_dtype_rule("reduce_max", utils._any), "reduce_max")
ad.defjvp2(reduce_max_p, _reduce_chooser_jvp_rule)
utils.defreducer(reduce_max_p)
mlir.register_lowering(reduce_max_p, _monoid_lowering(_chooser_body("GT", hlo.maximum),
                                                      _get_max_identity, True))

reduce_min_p = standard_primitive(_reduce_op_shape_rule,
                                  _reduce_dtype_rule("reduce_min", utils._any), "reduce_min")
ad.defjvp2(reduce_min_p, _reduce_chooser_jvp_rule)
utils.defreducer(reduce_min_p)
mlir.register_lowering(reduce_min_p, _monoid_lowering(_chooser_body("LT", hlo.minimum),
                                                      _get_min_identity, True))


# =============================================================================
# reduce_prod
# =============================================================================

def reduce_prod(operand, axes):
  """Product of `operand` over the dimensions `axes`."""
  return reduce_prod_p.bind(operand, axes=_reduce_wrapper_axes("reduce_prod", operand, axes))


def _reduce_jvp(reducer, init_values, primals, tangents, axes):
  """JVP of an associative reduction, by differentiating a balanced tree of
  `reducer` applications (no division, so zeros in the operand are fine)."""
  from tracejax._src.lax.slicing import slice_in_dim
  shape = _shape(primals[0])
  n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
  non_axes = tuple(d for d in range(len(shape)) if d not in axes)
  # Move the reduced axes to the front and flatten them to one.
  permutation = tuple(axes) + non_axes
  new_shape = (n,) + tuple(shape[d] for d in non_axes)
  primals = tuple(reshape(x, new_shape, permutation) for x in primals)
  tangents = tuple(reshape(t, new_shape, permutation) for t in tangents)
  out_shape = tuple(shape[d] for d in non_axes)

  def reduce_tree(*xs):
    while _shape(xs[0])[0] > 1:
      m = _shape(xs[0])[0]
      m1 = (m + 1) // 2
      xs1 = [slice_in_dim(x, 0, m1) for x in xs]
      xs2 = [slice_in_dim(x, m1, None) for x in xs]
      if m - m1 != m1:
        config = [(0, 0, 0)] * len(_shape(xs[0]))
        config[0] = (0, 1, 0)
        xs2 = [pad(x2, _init_as(i, x2), config) for x2, i in zip(xs2, init_values)]
      xs = reducer(*(xs1 + xs2))
    if _shape(xs[0])[0] == 0:
      return [full(out_shape, _init_as(i, x)) for x, i in zip(xs, init_values)]
    return [squeeze(x, (0,)) for x in xs]

  outs, t_outs = ad.jvp_flat(reduce_tree, primals, tangents)
  return outs, [ad.instantiate_zeros(t) for t in t_outs]


def _init_as(init, x):
  """The init value `init` as a scalar of `x`'s dtype (traced inits stay traced)."""
  dtype = _aval(x).dtype
  if isinstance(init, Tracer):
    if init.dtype == dtype:
      return init
    from tracejax._src.lax import elementwise
    return elementwise.convert_element_type(init, dtype)
  return np.array(init, dtype)


def _reduce_prod_jvp_rule(primals, tangents, *, axes):
  from tracejax._src.lax import elementwise
  (x,), (t,) = primals, tangents
  t = ad.instantiate_zeros(t)
  outs, t_outs = _reduce_jvp(lambda a, b: [elementwise.mul(a, b)], [1], (x,), (t,), axes)
  return outs[0], t_outs[0]


reduce_prod_p = standard_primitive(_reduce_op_shape_rule,
                                   _reduce_dtype_rule("reduce_prod", utils._num),
                                   "reduce_prod")
ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp_rule
utils.defreducer(reduce_prod_p)
mlir.register_lowering(reduce_prod_p, _monoid_lowering(hlo.multiply, lambda dt: 1))


# =============================================================================
# reduce_and / reduce_or / reduce_xor (bool or integer operands)
# =============================================================================

def reduce_and(operand, axes):
  """Logical (bitwise, for integers) AND of `operand` over `axes`."""
  return reduce_and_p.bind(operand, axes=_reduce_wrapper_axes("reduce_and", operand, axes))


def reduce_or(operand, axes):
  """Logical (bitwise, for integers) OR of `operand` over `axes`."""
  return reduce_or_p.bind(operand, axes=_reduce_wrapper_axes("reduce_or", operand, axes))


def reduce_xor(operand, axes):
  """Logical (bitwise, for integers) XOR of `operand` over `axes`."""
  return reduce_xor_p.bind(operand, axes=_reduce_wrapper_axes("reduce_xor", operand, axes))


def _all_ones(dtype):
  # -1 is all ones in two's complement; for unsigned types that is the max.
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return np.array(True)
  return np.array(-1).astype(dtype) if dtypes.is_signed(dtype) else \
      np.array(dtypes.iinfo(dtype).max, dtype)


reduce_and_p = standard_primitive(_reduce_op_shape_rule,
                                  _reduce_dtype_rule("reduce_and", utils._bool_or_int),
                                  "reduce_and")
ad.defjvp_zero(reduce_and_p)
utils.defreducer(reduce_and_p)
mlir.register_lowering(reduce_and_p, _monoid_lowering(hlo.and_, _all_ones))

reduce_or_p = standard_primitive(_reduce_op_shape_rule,
                                 _reduce_dtype_rule("reduce_or", utils._bool_or_int),
                                 "reduce_or")
ad.defjvp_zero(reduce_or_p)
utils.defreducer(reduce_or_p)
mlir.register_lowering(reduce_or_p, _monoid_lowering(hlo.or_, lambda dt: 0))

reduce_xor_p = standard_primitive(_reduce_op_shape_rule,
                                  _reduce_dtype_rule("reduce_xor", utils._bool_or_int),
                                  "reduce_xor")
ad.defjvp_zero(reduce_xor_p)
utils.defreducer(reduce_xor_p)
mlir.register_lowering(reduce_xor_p, _monoid_lowering(hlo.xor, lambda dt: 0))


# =============================================================================
# argmax / argmin
# =============================================================================

def argmax(operand, axis, index_dtype):
  """Index of the largest element along `axis` (the first one on ties; a NaN
  counts as larger than everything, so the first NaN wins)."""
  axis = _canonicalize_axes("argmax", "axis", (axis,), np.ndim(operand))
  return argmax_p.bind(operand, axes=axis,
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis, index_dtype):
  """Index of the smallest element along `axis` (the first one on ties; a NaN
  counts as smaller than everything, so the first NaN wins)."""
  axis = _canonicalize_axes("argmin", "axis", (axis,), np.ndim(operand))
  return argmin_p.bind(operand, axes=axis,
                       index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _argminmax_shape_rule(operand, *, axes, index_dtype):
  (axis,) = axes
  if not 0 <= axis < operand.ndim:
    raise ValueError(f"Invalid axis {axis} for operand shape {operand.shape}")
  if operand.shape[axis] < 1:
    raise ValueError("argmin and argmax require non-empty reduced dimension. "
                     f"operand.shape={operand.shape} axis={axis}")
  return tuple(d for i, d in enumerate(operand.shape) if i != axis)


def _argminmax_dtype_rule(operand, *, axes, index_dtype):
  # Complex operands are accepted here and refused when lowered (below): JAX's rule
  # is the same, so jaxprs holding a complex argmax trace (make_jaxpr, eval_shape), and
  # one that jit drops as dead code (e.g. under jit(grad(...))) runs.
  utils.check_dtypes("argmin/argmax", utils._bool_or_int + utils._inexact, operand)
  if not dtypes.is_integer(index_dtype):
    raise TypeError(f"index_dtype must be an integer type, but got {np.dtype(index_dtype)}")
  return np.dtype(index_dtype)


_compare = ew_hlo.compare_hlo


def _argminmax_lowering(direction, identity):
  """A variadic reduce over (values, iota) whose body keeps the better pair.

  `a` beats `b` when a is NaN and b is not; or both are NaN and a's index is
  smaller; or a is strictly better; or they are equal and a's index is
  smaller. That order is total, so the result (the first NaN, else the first
  extremum) does not depend on XLA's reduction order.
  """
  def lower(ctx, x, *, axes, index_dtype):
    (axis,) = axes
    aval = ctx.avals_in[0]
    dtype, idx_dtype = aval.dtype, np.dtype(index_dtype)
    if dtypes.issubdtype(dtype, np.complexfloating):
      # No order on complex numbers in the comparison that picks the winner (JAX's
      # lowering fails in its `gt`/`lt` with this message).
      name = direction.lower()
      raise TypeError(f"{name} does not accept dtype {dtype.name} at position 0. Accepted "
                      "dtypes at position 0 are subtypes of integer, floating, bool.")
    idx_type = ir.RankedTensorType.get(aval.shape, mlir.dtype_to_ir_type(idx_dtype))
    indices = hlo.iota(idx_type, axis)
    out_types = [mlir.aval_to_ir_type(aval.update(shape=ctx.avals_out[0].shape)),
                 mlir.aval_to_ir_type(ctx.avals_out[0])]
    inits = [mlir.ir_constant(identity(dtype)), mlir.ir_constant(np.array(0, idx_dtype))]
    op = hlo.ReduceOp(out_types, [x, indices], inits, [axis])
    st, it = _scalar_type(dtype), _scalar_type(idx_dtype)
    block = op.body.blocks.append(st, it, st, it)
    with ir.InsertionPoint(block):
      a, ai, b, bi = block.arguments
      idx_lt = _compare(ai, bi, "LT", idx_dtype)
      better = _compare(a, b, direction, dtype)
      tie = hlo.and_(_compare(a, b, "EQ", dtype), idx_lt)
      pick_a = hlo.or_(better, tie)
      if dtypes.is_floating(dtype):
        a_nan = _compare(a, a, "NE", dtype)
        b_nan = _compare(b, b, "NE", dtype)
        b_num = hlo.not_(b_nan)
        pick_a = hlo.or_(pick_a, hlo.and_(a_nan, hlo.or_(b_num, idx_lt)))
      hlo.return_([hlo.select(pick_a, a, b), hlo.select(pick_a, ai, bi)])
    return [op.results[1]]
  return lower


argmax_p = standard_primitive(_argminmax_shape_rule, _argminmax_dtype_rule, "argmax",
                              weak_type_rule=lambda *a, **k: False)
ad.defjvp_zero(argmax_p)
utils.defreducer(argmax_p)
mlir.register_lowering(argmax_p, _argminmax_lowering("GT", _get_max_identity))

argmin_p = standard_primitive(_argminmax_shape_rule, _argminmax_dtype_rule, "argmin",
                              weak_type_rule=lambda *a, **k: False)
ad.defjvp_zero(argmin_p)
utils.defreducer(argmin_p)
mlir.register_lowering(argmin_p, _argminmax_lowering("LT", _get_min_identity))


# =============================================================================
# reduce: a reduction with a user computation
# =============================================================================

def _elementwise_monoids():
  """(computation, identity fn, reducer) for the computations with a primitive."""
  from tracejax._src.lax import elementwise as ew
  zero = lambda dt: np.array(0, dt)
  one = lambda dt: np.array(1, dt)
  table = [("add", zero, reduce_sum, False), ("mul", one, reduce_prod, False),
           ("max", _get_max_identity, reduce_max, False),
           ("min", _get_min_identity, reduce_min, False),
           ("bitwise_or", zero, reduce_or, True), ("bitwise_and", _all_ones, reduce_and, True),
           ("bitwise_xor", zero, reduce_xor, True)]
  out = []
  for name, ident, reducer, bitwise in table:
    fn = getattr(ew, name, None)
    if fn is not None:
      out.append((fn, ident, reducer, bitwise))
  return out


def _get_monoid_reducer(computation, init_values):
  """The monoid primitive for `computation` when the init value is its identity."""
  # (the public tracejax.lax.add/max/... are checked wrappers of the _src functions)
  computation = getattr(computation, "__wrapped__", computation)
  if len(init_values) != 1:
    return None
  (x,) = init_values
  if isinstance(x, Tracer) or np.shape(x) != ():
    return None
  val = np.asarray(x)
  dtype = _aval(x).dtype
  for fn, ident, reducer, bitwise in _elementwise_monoids():
    if computation is fn:
      if bitwise and not (dtype == np.bool_ or dtypes.is_integer(dtype)):
        return None
      ok = val == ident(dtype)
      return reducer if bool(ok) else None
  return None


_reduction_jaxpr_cache = {}


def _reduction_jaxpr(computation, init_avals, in_tree):
  """The jaxpr of `computation(acc_tree, x_tree)` on scalars, and its output tree."""
  key = None
  try:
    key = (computation, tuple(init_avals), in_tree)
    hit = _reduction_jaxpr_cache.get(key)
    if hit is not None:
      return hit
  except TypeError:  # an unhashable computation: trace every time
    key = None
  from tracejax._src.interpreters import staging
  out_tree_box = []

  def flat_fun(*flat):
    n = len(flat) // 2
    acc = tree_util.tree_unflatten(in_tree, flat[:n])
    xs = tree_util.tree_unflatten(in_tree, flat[n:])
    out = computation(acc, xs)
    leaves, out_tree = tree_util.tree_flatten(out)
    out_tree_box.append(out_tree)
    return leaves

  with set_current_trace(eval_trace):
    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, list(init_avals) * 2)
  if any(isinstance(c, Tracer) for c in consts):
    raise NotImplementedError("Reduction computations can't close over Tracers.")
  out_tree = out_tree_box[0]
  if out_tree != in_tree:
    raise TypeError("reduce computation must return a value with the structure of the "
                    f"init_values, got {out_tree} for {in_tree}.")
  out_avals = [v.aval for v in jaxpr.outvars]
  for o, a in zip(out_avals, init_avals):
    if o.shape != () or o.dtype != a.dtype:
      raise TypeError("reduce computation must return scalars of the init_values' dtypes, "
                      f"got {[x.str_short() for x in out_avals]} for "
                      f"{[x.str_short() for x in init_avals]}.")
  result = (jir.ClosedJaxpr(jaxpr, consts), out_tree)
  if key is not None:
    _reduction_jaxpr_cache[key] = result
  return result


def reduce(operands, init_values, computation, dimensions):
  """Wraps XLA's Reduce operator.

  `operands` and `init_values` are arrays (or matching pytrees of arrays);
  `computation(acc, x)` combines two values of that structure; `dimensions`
  are the dimensions reduced. A computation that is a known monoid (lax.add,
  mul, max, min, bitwise ops) with its identity as init value becomes the
  monoid's own primitive (reduce_sum...).
  """
  flat_operands, operand_tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if operand_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if len(flat_operands) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f"{len(flat_operands)} vs. {len(flat_inits)}")
  if not flat_operands:
    raise ValueError("reduce requires at least one operand")
  ndim = np.ndim(flat_operands[0])
  dimensions = tuple(_canonicalize_axes("reduce", "dimensions", dimensions, ndim))
  # Python scalar init values take their operand's dtype (the lax convenience).
  flat_inits = [np.array(i, _aval(x).dtype) if type(i) in (int, float, complex, bool) else i
                for x, i in zip(flat_operands, flat_inits)]
  monoid = _get_monoid_reducer(computation, flat_inits)
  if monoid is not None:
    (x,) = flat_operands
    if _aval(x).dtype != _aval(flat_inits[0]).dtype:
      raise TypeError("reduce operand and init_value must have the same dtype, got "
                      f"{_aval(x).dtype.name} and {_aval(flat_inits[0]).dtype.name}.")
    return monoid(x, dimensions)
  init_avals = tuple(_aval(i).strip_weak_type() for i in flat_inits)
  closed, out_tree = _reduction_jaxpr(computation, init_avals, init_tree)
  out = reduce_p.bind(*flat_operands, *flat_inits, computation=computation, jaxpr=closed,
                      dimensions=dimensions)
  return tree_util.tree_unflatten(out_tree, out)


def _reduce_shape_rule(*avals, computation, jaxpr, dimensions):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.shape != operands[0].shape for o in operands):
    raise ValueError("reduce operands must all have the same shape, got "
                     f"{[o.shape for o in operands]}")
  if any(i.shape != () for i in inits):
    raise ValueError(f"reduce init_values must be scalars, got {[i.shape for i in inits]}")
  for o, i in zip(operands, inits):
    if o.dtype != i.dtype:
      raise TypeError("reduce operand dtypes must match their init_value dtypes, got "
                      f"{[o.dtype.name for o in operands]} and "
                      f"{[i.dtype.name for i in inits]}")
  out = _reduce_op_shape_rule(operands[0], axes=dimensions)
  return [out] * n


def _reduce_dtype_rule_general(*avals, computation, jaxpr, dimensions):
  return [a.dtype for a in avals[:len(avals) // 2]]


def _reduce_weak_type_rule(*avals, computation, jaxpr, dimensions):
  return [a.weak_type for a in avals[:len(avals) // 2]]


def _reduce_jvp_rule(primals, tangents, *, computation, jaxpr, dimensions):
  n = len(primals) // 2
  primal_xs, init_values = primals[:n], primals[n:]
  tangent_xs, tangent_inits = tangents[:n], tangents[n:]
  if any(type(t) is not ad.Zero for t in tangent_inits):
    raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                              "initial values to reduction not implemented")
  tangent_xs = [ad.instantiate_zeros(t) for t in tangent_xs]
  fun = lambda *xs: jir.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs)
  return _reduce_jvp(fun, init_values, primal_xs, tangent_xs, dimensions)


def _reduce_batch_rule(args, dims, *, computation, jaxpr, dimensions):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  op_dims, init_dims = dims[:n], dims[n:]
  if any(d is not None for d in init_dims):
    raise NotImplementedError("vmap of lax.reduce with batched init_values")
  size = next(_shape(x)[d] for x, d in zip(operands, op_dims) if d is not None)
  operands = [utils.bdim_at_front(x, d, size) for x, d in zip(operands, op_dims)]
  out = reduce_p.bind(*operands, *inits, computation=computation, jaxpr=jaxpr,
                      dimensions=tuple(d + 1 for d in dimensions))
  return out, [0] * n


def _reduce_lowering(ctx, *args, computation, jaxpr, dimensions):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  op = hlo.ReduceOp(out_types, list(operands), list(inits), list(dimensions))
  scalar_types = [_scalar_type(a.dtype) for a in ctx.avals_in[n:]]
  block = op.body.blocks.append(*scalar_types, *scalar_types)
  with ir.InsertionPoint(block):
    consts = [mlir.ir_constant(np.asarray(c)) for c in jaxpr.consts]
    outs = mlir.jaxpr_subcomp(ctx.module_context, jaxpr.jaxpr, consts,
                              list(block.arguments))
    hlo.return_(outs)
  return list(op.results)


reduce_p = standard_primitive(_reduce_shape_rule, _reduce_dtype_rule_general, "reduce",
                              weak_type_rule=_reduce_weak_type_rule, multiple_results=True)
ad.primitive_jvps[reduce_p] = _reduce_jvp_rule
batching.primitive_batchers[reduce_p] = _reduce_batch_rule
mlir.register_lowering(reduce_p, _reduce_lowering)
