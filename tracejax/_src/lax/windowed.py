"""Windowed reductions (`reduce_window` and its monoid primitives, the max-pool
gradient primitives) and cumulative reductions (`cumsum`, `cumprod`, `cummax`,
`cummin`, `cumlogsumexp`).

A window is described per operand dimension by `window_dimensions`,
`window_strides`, `padding` ((low, high) pairs, or 'SAME'/'VALID' in the
wrapper), `base_dilation` (holes between operand elements, filled with the
init value) and `window_dilation` (holes between window elements). The
output has one element per window position (`reduce_window_shape_tuple`).

`reduce_window` with `lax.add`/`lax.max`/`lax.min` and their identity as
init value becomes `reduce_window_sum`/`_max`/`_min`, which have every rule;
any other computation is traced on scalars into the general
`reduce_window_p`, like `lax.reduce`. The derivative of a max (min) pool is
`select_and_gather_add` (the tangent at each window's argmax) and its
transpose `select_and_scatter_add`, XLA's SelectAndScatter.

A cumulative reduction is a `reduce_window` whose window spans the whole
axis, padded on one side (XLA rewrites it into a parallel scan); its
derivative is taken through an associative scan, which is differentiable to
any order (cumsum is linear: its transpose is the reverse cumsum).
"""
import functools
import operator

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.core import ir as jir
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise as ew
from tracejax._src.lax import elementwise_hlo as ew_hlo
from tracejax._src.lax import logaddexp as lae
from tracejax._src.lax import utils
from tracejax._src.lax.convolution import (_conv_general_vjp_lhs_padding, _dilate_shape,
                                           _stride_shape, padtype_to_pads)
from tracejax._src.lax.reductions import (_get_max_identity, _get_min_identity,
                                          _reduction_jaxpr, _scalar_type)
from tracejax._src.lax.structural import (_aval, _canonicalize_axes, _int_tuple, _shape,
                                          concatenate, pad, rev)
from tracejax._src.lax.utils import standard_primitive

__all__ = [
    "reduce_window", "reduce_window_p", "reduce_window_sum_p", "reduce_window_max_p",
    "reduce_window_min_p", "select_and_gather_add_p", "select_and_scatter_add_p",
    "select_and_scatter_p",
    "reduce_window_shape_tuple",
    "cumsum", "cumsum_p", "cumprod", "cumprod_p", "cummax", "cummax_p", "cummin",
    "cummin_p", "cumlogsumexp", "cumlogsumexp_p",
]


# =============================================================================
# Shared window rules
# =============================================================================

def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The output shape of a windowed reduction over `operand_shape`."""
  if base_dilation is not None:
    operand_shape = _dilate_shape(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = _dilate_shape(window_dimensions, window_dilation)
  padded = tuple(d + lo + hi for d, (lo, hi) in zip(operand_shape, padding))
  if any(d < 0 for d in padded):
    raise ValueError("reduce_window padding removes more than the (dilated) operand: got "
                     f"padding {tuple(padding)} for operand shape {tuple(operand_shape)}.")
  return _stride_shape(padded, window_dimensions, window_strides)


def _window_params(name, operand_shape, window_dimensions, window_strides, padding,
                   base_dilation=None, window_dilation=None):
  """The canonical window params (tuples of ints, padding as pairs) of a wrapper call."""
  ndim = len(operand_shape)
  window_dimensions = _int_tuple(name, "window_dimensions", window_dimensions)
  window_strides = _int_tuple(name, "window_strides", window_strides)
  base_dilation = ((1,) * ndim if base_dilation is None
                   else _int_tuple(name, "base_dilation", base_dilation))
  window_dilation = ((1,) * len(window_dimensions) if window_dilation is None
                     else _int_tuple(name, "window_dilation", window_dilation))
  if isinstance(padding, str):
    padding = padtype_to_pads(operand_shape, _dilate_shape(window_dimensions, window_dilation),
                              window_strides, padding)
  try:
    padding = tuple((int(operator.index(lo)), int(operator.index(hi))) for lo, hi in padding)
  except (TypeError, ValueError):
    raise TypeError(f"{name} padding must be 'SAME', 'VALID' or a sequence of (low, high) "
                    f"integer pairs, got {padding!r}.") from None
  return dict(window_dimensions=window_dimensions, window_strides=window_strides,
              padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)


def _common_reduce_window_shape_rule(name, operand, window_dimensions, window_strides,
                                     padding, base_dilation, window_dilation):
  n = operand.ndim
  for arg, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                 ("padding", padding), ("base_dilation", base_dilation),
                 ("window_dilation", window_dilation)):
    if len(v) != n:
      raise TypeError(f"{name} got the wrong number of {arg} for operand: got operand "
                      f"shape {operand.shape} with {arg} {tuple(v)}.")
  for arg, v in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                 ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
    if not all(d > 0 for d in v):
      raise TypeError(f"{name} {arg} must have every element be strictly positive, got "
                      f"{tuple(v)}.")
  return reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding,
                                   base_dilation, window_dilation)


def _padding_attr(padding):
  return ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(len(padding), 2),
                                     shape=(len(padding), 2))


def _reduce_window_op(out_types, operands, inits, scalar_types, body, *, window_dimensions,
                      window_strides, padding, base_dilation, window_dilation):
  """One `stablehlo.reduce_window` whose body is `body(*accs, *xs) -> [values]`."""
  op = hlo.ReduceWindowOp(out_types, list(operands), list(inits), list(window_dimensions),
                          window_strides=list(window_strides),
                          base_dilations=list(base_dilation),
                          window_dilations=list(window_dilation),
                          padding=_padding_attr(padding))
  block = op.body.blocks.append(*scalar_types, *scalar_types)
  with ir.InsertionPoint(block):
    hlo.return_(list(body(*block.arguments)))
  return list(op.results)


def _insert_unit_window(bdim, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
  """Window params with a size-1 window (no padding, no dilation) on the batch axis."""
  ins = lambda t, v: tuple(t[:bdim]) + (v,) + tuple(t[bdim:])
  return dict(window_dimensions=ins(window_dimensions, 1),
              window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
              base_dilation=ins(base_dilation, 1), window_dilation=ins(window_dilation, 1))


_compare = ew_hlo.compare_hlo


# =============================================================================
# reduce_window: the general primitive (a user computation)
# =============================================================================

def _is_num(dtype):
  return dtypes.is_integer(dtype) or dtypes.is_inexact(dtype)


def _staging():
  """Whether a staging trace (jit, make_jaxpr, checkpoint, a loop body) is under way."""
  from tracejax._src.core import trace as trace_mod
  from tracejax._src.interpreters.staging import DynamicJaxprTrace
  t = trace_mod.current_trace()
  while t is not None:
    if isinstance(t, DynamicJaxprTrace):
      return True
    t = t.parent
  return False


def _jax_traces(init):
  """Whether JAX would see `init` as a tracer: a jnp array made while staging."""
  return not isinstance(init, (np.ndarray, np.generic)) and _staging()


def _get_monoid_window_reducer(computation, init_values, operands):
  """The monoid primitive for `computation` when its init value is the identity."""
  # (the public tracejax.lax.add/max/... are checked wrappers of the _src functions)
  computation = getattr(computation, "__wrapped__", computation)
  if len(init_values) != 1:
    return None
  (x,) = init_values
  if isinstance(x, Tracer) or np.shape(x) != ():
    return None
  dtype = _aval(x).dtype
  if _jax_traces(x) and (dtypes.is_complex(dtype) or dtype != _aval(operands[0]).dtype):
    # Under jit (make_jaxpr, checkpoint, scan...) a jnp array made while tracing is a
    # tracer in JAX, so JAX takes the generic reduce_window there, whose JVP works for
    # complex operands (the max/min primitives' JVP fails, eagerly). Real operands
    # keep the differentiable monoid (README: deliberate `generic-reduce-window-rev`);
    # for complex ones the monoid gains nothing, so we follow JAX, as for an init of
    # another dtype than the operand's (JAX's generic dtype error).
    return None
  val = np.asarray(x)
  if computation is ew.add and _is_num(dtype):
    return reduce_window_sum_p if bool(val == 0) else None
  # Complex operands too (ordered lexicographically, as in JAX): only their
  # derivatives fail, in select_and_gather_add's lowering.
  if computation is ew.max:
    return reduce_window_max_p if bool(val == _get_max_identity(dtype)) else None
  if computation is ew.min:
    return reduce_window_min_p if bool(val == _get_min_identity(dtype)) else None
  return None


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
  """Wraps XLA's ReduceWindow operator.

  Reduces each window of `operand` with `computation(acc, x)`, starting from
  `init_value` (padding and base-dilation holes also hold it). `operand` and
  `init_value` may be matching pytrees (a variadic reduction). `padding` is
  'SAME', 'VALID' or one (low, high) pair per dimension. E.g. a 2x2 max pool
  of an NHWC batch: `reduce_window(x, -inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
  'VALID')`.
  """
  flat_operands, operand_tree = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if operand_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{operand_tree} vs. {init_tree}")
  if not flat_operands:
    raise ValueError("reduce_window must have at least one operand.")
  if len(flat_operands) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values: "
                     f"{len(flat_operands)} vs. {len(flat_inits)}")
  params = _window_params("reduce_window", _shape(flat_operands[0]), window_dimensions,
                          window_strides, padding, base_dilation, window_dilation)
  # A Python scalar init value has its own default dtype, as in JAX (an int32 operand
  # with init 0. is a dtype error, unless the init is a monoid's identity: a monoid
  # reduces the operand alone).
  flat_inits = [ew._python_scalar_array(i, None) if type(i) in (int, float, complex, bool)
                else i for i in flat_inits]
  monoid = _get_monoid_window_reducer(computation, flat_inits, flat_operands)
  if monoid is not None:
    out = monoid.bind(flat_operands[0], **params)
    if _jax_traces(flat_inits[0]):
      # JAX takes the generic primitive here, whose result is never weakly typed.
      out = ew._convert_element_type(out, weak_type=False)
    return out
  init_avals = tuple(_aval(i).strip_weak_type() for i in flat_inits)
  closed, out_tree = _reduction_jaxpr(computation, init_avals, init_tree)
  out = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=closed, **params)
  return tree_util.tree_unflatten(out_tree, out)


def _reduce_window_shape_rule(*avals, jaxpr, **params):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
    raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: "
                    f"got operand dtypes {[o.dtype for o in operands]} and init_value "
                    f"dtypes {[i.dtype for i in inits]}.")
  if any(i.shape != () for i in inits):
    raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in inits]}.")
  if any(o.shape != operands[0].shape for o in operands):
    raise TypeError("reduce_window operands must all have the same shape, got "
                    f"{[o.shape for o in operands]}.")
  out = _common_reduce_window_shape_rule("reduce_window", operands[0], **params)
  return [out] * n


def _reduce_window_dtype_rule(*avals, **params):
  return [a.dtype for a in avals[:len(avals) // 2]]


def _reduce_window_weak_type_rule(*avals, **params):
  # As in JAX: a user computation's result is strongly typed, whatever its operands.
  return [False] * (len(avals) // 2)


@functools.lru_cache(maxsize=256)
def _jvp_computation(jaxpr):
  """The computation `((acc_p, acc_t), (x_p, x_t)) -> (out_p, out_t)`: `jaxpr`'s JVP.

  Reducing (primals, tangents) pairs with it gives the JVP of the windowed
  reduction: each application of the computation is differentiated in turn."""
  def computation(acc, x):
    (acc_p, acc_t), (x_p, x_t) = acc, x
    fun = lambda *args: jir.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)
    out_p, out_t = ad.jvp_flat(fun, list(acc_p) + list(x_p), list(acc_t) + list(x_t))
    return (list(out_p), [ad.instantiate_zeros(t) for t in out_t])
  return computation


def _reduce_window_jvp_rule(primals, tangents, *, jaxpr, **params):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  t_operands, t_inits = tangents[:n], tangents[n:]
  if any(type(t) is not ad.Zero for t in t_inits):
    raise NotImplementedError("Gradient of general lax.reduce_window with non-zero tangents "
                              "for initial values is not implemented")
  t_operands = [ad.instantiate_zeros(t) for t in t_operands]
  t_inits = [np.zeros((), _aval(t).dtype) for t in t_operands]
  in_tree = tree_util.tree_structure((list(inits), t_inits))
  init_avals = tuple(_aval(i).strip_weak_type() for i in list(inits) + t_inits)
  closed, _ = _reduction_jaxpr(_jvp_computation(jaxpr), init_avals, in_tree)
  outs = reduce_window_p.bind(*operands, *t_operands, *inits, *t_inits, jaxpr=closed,
                              **params)
  return outs[:n], outs[n:]


def _reduce_window_batch_rule(args, dims, *, jaxpr, **params):
  n = len(args) // 2
  operands, inits = args[:n], args[n:]
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce_window batching is not implemented for initial values")
  size = next(_shape(x)[d] for x, d in zip(operands, dims[:n]) if d is not None)
  operands = [utils.bdim_at_front(x, d, size) for x, d in zip(operands, dims[:n])]
  outs = reduce_window_p.bind(*operands, *inits, jaxpr=jaxpr,
                              **_insert_unit_window(0, **params))
  return outs, [0] * n


def _reduce_window_lowering(ctx, *args, jaxpr, **params):
  n = len(args) // 2
  scalar_types = [_scalar_type(a.dtype) for a in ctx.avals_in[n:]]

  def body(*scalars):
    consts = [mlir.ir_constant(np.asarray(c)) for c in jaxpr.consts]
    return mlir.jaxpr_subcomp(ctx.module_context, jaxpr.jaxpr, consts, list(scalars))

  return _reduce_window_op([mlir.aval_to_ir_type(a) for a in ctx.avals_out], args[:n],
                           args[n:], scalar_types, body, **params)


reduce_window_p = standard_primitive(_reduce_window_shape_rule, _reduce_window_dtype_rule,
                                     "reduce_window", weak_type_rule=_reduce_window_weak_type_rule,
                                     multiple_results=True)
ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp_rule
batching.primitive_batchers[reduce_window_p] = _reduce_window_batch_rule
mlir.register_lowering(reduce_window_p, _reduce_window_lowering)


# ---- shared by the monoid primitives ----

def _monoid_window_shape_rule(name, accepted):
  def rule(operand, **params):
    utils.check_dtypes(name, accepted, operand)
    return _common_reduce_window_shape_rule(name, operand, **params)
  return rule


def _monoid_window_batch_rule(prim):
  def rule(args, dims, **params):
    (x,), (d,) = args, dims
    return prim.bind(x, **_insert_unit_window(d, **params)), d
  return rule


def _monoid_window_lowering(body_op, identity):
  def lower(ctx, x, **params):
    dtype = ctx.avals_in[0].dtype
    init = mlir.ir_constant(np.array(identity(dtype), dtype))
    return _reduce_window_op([mlir.aval_to_ir_type(ctx.avals_out[0])], [x], [init],
                             [_scalar_type(dtype)], lambda a, b: [body_op(a, b, dtype)],
                             **params)
  return lower


def _monoid_bind(prim, operand, window_dimensions, window_strides, padding,
                 base_dilation=None, window_dilation=None):
  return prim.bind(operand, **_window_params(prim.name, _shape(operand), window_dimensions,
                                             window_strides, padding, base_dilation,
                                             window_dilation))


# =============================================================================
# reduce_window_sum
# =============================================================================

def _reduce_window_sum(operand, window_dimensions, window_strides, padding,
                       base_dilation=None, window_dilation=None):
  """Sum over each window (`reduce_window` with `lax.add` and 0)."""
  return _monoid_bind(reduce_window_sum_p, operand, window_dimensions, window_strides,
                      padding, base_dilation, window_dilation)


def _reduce_window_sum_transpose_rule(ct, operand, *, window_dimensions, window_strides,
                                      padding, base_dilation, window_dilation):
  # Each input element is summed into every window covering it, so its
  # cotangent sums the cotangents of those windows: spread the output
  # cotangent back out (strides become interior padding) and sum it with the
  # same window, the base dilation now acting as the stride.
  input_shape = operand.aval.shape
  pads = _conv_general_vjp_lhs_padding(input_shape, window_dimensions, window_strides,
                                       _shape(ct), padding, base_dilation, window_dilation)
  config = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
  padded = pad(ct, np.zeros((), _aval(ct).dtype), config)
  ones = (1,) * len(input_shape)
  result = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                    window_strides=base_dilation,
                                    padding=((0, 0),) * len(input_shape),
                                    base_dilation=ones, window_dilation=window_dilation)
  assert _shape(result) == input_shape, (_shape(result), input_shape)
  return [result]


reduce_window_sum_p = standard_primitive(
    _monoid_window_shape_rule("reduce_window_sum", utils._num), utils.input_dtype,
    "reduce_window_sum")
ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose_rule)
batching.primitive_batchers[reduce_window_sum_p] = _monoid_window_batch_rule(
    reduce_window_sum_p)
mlir.register_lowering(reduce_window_sum_p,
                       _monoid_window_lowering(lambda a, b, _: hlo.add(a, b), lambda dt: 0))


# =============================================================================
# reduce_window_max / reduce_window_min
# =============================================================================

_ordered = [np.bool_, np.integer, np.floating, np.complexfloating]


def _reduce_window_max(operand, window_dimensions, window_strides, padding,
                       base_dilation=None, window_dilation=None):
  """Maximum over each window (`reduce_window` with `lax.max` and -inf): max pooling."""
  return _monoid_bind(reduce_window_max_p, operand, window_dimensions, window_strides,
                      padding, base_dilation, window_dilation)


def _reduce_window_min(operand, window_dimensions, window_strides, padding,
                       base_dilation=None, window_dilation=None):
  """Minimum over each window (`reduce_window` with `lax.min` and inf)."""
  return _monoid_bind(reduce_window_min_p, operand, window_dimensions, window_strides,
                      padding, base_dilation, window_dilation)


def _minmax_body(direction, hlo_op):
  return lambda a, b, dtype: ew.minmax_hlo(a, b, dtype, direction, hlo_op)


def _reduce_window_chooser_jvp_rule(select_prim):
  # The tangent of each window's max (min) is the tangent at its location.
  def rule(g, operand, **params):
    return select_and_gather_add_p.bind(g, operand, select_prim=select_prim, **params)
  return rule


reduce_window_max_p = standard_primitive(
    _monoid_window_shape_rule("reduce_window_max", _ordered), utils.input_dtype,
    "reduce_window_max")
ad.defjvp(reduce_window_max_p, _reduce_window_chooser_jvp_rule(ew.ge_p))
batching.primitive_batchers[reduce_window_max_p] = _monoid_window_batch_rule(
    reduce_window_max_p)
# Complex operands take elementwise max's lexicographic body (XLA's maximum is not).
mlir.register_lowering(reduce_window_max_p, _monoid_window_lowering(
    _minmax_body("GT", hlo.maximum), _get_max_identity))

reduce_window_min_p = standard_primitive(
    _monoid_window_shape_rule("reduce_window_min", _ordered), utils.input_dtype,
    "reduce_window_min")
ad.defjvp(reduce_window_min_p, _reduce_window_chooser_jvp_rule(ew.le_p))
batching.primitive_batchers[reduce_window_min_p] = _monoid_window_batch_rule(
    reduce_window_min_p)
mlir.register_lowering(reduce_window_min_p, _monoid_window_lowering(
    _minmax_body("LT", hlo.minimum), _get_min_identity))


def _select_identity(select_prim, dtype):
  """What padding holds for a select: never chosen over a real element."""
  return _get_max_identity(dtype) if select_prim is ew.ge_p else _get_min_identity(dtype)


def _select_direction(select_prim):
  if select_prim is ew.ge_p:
    return "GE"
  if select_prim is ew.le_p:
    return "LE"
  raise ValueError(f"select_prim must be lax.ge_p or lax.le_p, got {select_prim}")


def _check_select_dtype(select_prim, dtype):
  # The select comparison has no order on complex numbers: JAX's lowerings of
  # select_and_gather_add / select_and_scatter_add (the derivatives of a complex
  # max/min pool) fail in its `ge`/`le` with this message, so ours fail there too.
  if dtypes.is_complex(dtype):
    name = _select_direction(select_prim).lower()
    raise TypeError(f"{name} does not accept dtype {np.dtype(dtype).name} at position 0. "
                    "Accepted dtypes at position 0 are subtypes of integer, floating, bool.")


# =============================================================================
# select_and_gather_add: the tangent at each window's max (min)
# =============================================================================

def _select_and_gather_add(tangents, operand, select_prim, window_dimensions,
                           window_strides, padding, base_dilation, window_dilation):
  """For each window of `operand`, the element of `tangents` where `operand` is
  largest (`select_prim` ge_p) or smallest (le_p): the JVP of max (min) pooling."""
  return select_and_gather_add_p.bind(
      tangents, operand, select_prim=select_prim,
      **_window_params("select_and_gather_add", _shape(operand), window_dimensions,
                       window_strides, padding, base_dilation, window_dilation))


def _select_and_gather_add_shape_rule(tangents, operand, *, select_prim, **params):
  if tangents.shape != operand.shape:
    raise TypeError("select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  _select_direction(select_prim)
  return _common_reduce_window_shape_rule("select_and_gather_add", operand, **params)


def _select_and_gather_add_jvp(primals, tangents, **params):
  # Linear in the tangents; the operand only picks positions.
  t, x = primals
  g_t, _ = tangents
  out = select_and_gather_add_p.bind(t, x, **params)
  if type(g_t) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  return out, select_and_gather_add_p.bind(g_t, x, **params)


def _select_and_gather_add_transpose(ct, tangents, operand, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation,
                                     window_dilation):
  assert ad.is_undefined_primal(tangents) and not ad.is_undefined_primal(operand)
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError("VJP not implemented for select_and_gather (MaxPool) with "
                              f"window dilation, got window_dilation={window_dilation}.")
  if type(ct) is ad.Zero:
    return [ad.Zero(tangents.aval), None]
  has_base_dilation = any(d != 1 for d in base_dilation)
  if has_base_dilation:
    # Make the holes explicit (never selected), scatter, then drop them.
    operand = pad(operand, _select_identity(select_prim, _aval(operand).dtype),
                  tuple((0, 0, d - 1) for d in base_dilation))
  result = select_and_scatter_add_p.bind(ct, operand, select_prim=select_prim,
                                         window_dimensions=window_dimensions,
                                         window_strides=window_strides, padding=padding)
  if has_base_dilation:
    from tracejax._src.lax.slicing import slice as lax_slice
    result = lax_slice(result, (0,) * len(_shape(result)), _shape(result), base_dilation)
  return [result, None]


def _select_and_gather_add_batch_rule(args, dims, **params):
  t, x = args
  size = next(_shape(a)[d] for a, d in zip(args, dims) if d is not None)
  t = utils.bdim_at_front(t, dims[0], size)
  x = utils.bdim_at_front(x, dims[1], size)
  select_prim = params.pop("select_prim")
  out = select_and_gather_add_p.bind(t, x, select_prim=select_prim,
                                     **_insert_unit_window(0, **params))
  return out, 0


def _select_and_gather_add_lowering(ctx, tangents, operand, *, select_prim, **params):
  # A variadic reduce_window over (operand, tangents) pairs that keeps the pair
  # with the larger (smaller) operand.
  t_aval, x_aval = ctx.avals_in
  direction = _select_direction(select_prim)
  _check_select_dtype(select_prim, x_aval.dtype)
  x_init = mlir.ir_constant(_select_identity(select_prim, x_aval.dtype))
  t_init = mlir.ir_constant(np.zeros((), t_aval.dtype))
  out_aval = ctx.avals_out[0]

  def body(ka, va, kb, vb):
    pick_a = _compare(ka, kb, direction, x_aval.dtype)
    return [hlo.select(pick_a, ka, kb), hlo.select(pick_a, va, vb)]

  out_types = [mlir.aval_to_ir_type(out_aval.update(dtype=x_aval.dtype)),
               mlir.aval_to_ir_type(out_aval)]
  outs = _reduce_window_op(out_types, [operand, tangents], [x_init, t_init],
                           [_scalar_type(x_aval.dtype), _scalar_type(t_aval.dtype)], body,
                           **params)
  return [outs[1]]


select_and_gather_add_p = standard_primitive(_select_and_gather_add_shape_rule,
                                             lambda tangents, operand, **_: tangents.dtype,
                                             "select_and_gather_add")
ad.primitive_jvps[select_and_gather_add_p] = _select_and_gather_add_jvp
ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose
batching.primitive_batchers[select_and_gather_add_p] = _select_and_gather_add_batch_rule
mlir.register_lowering(select_and_gather_add_p, _select_and_gather_add_lowering)


# =============================================================================
# select_and_scatter_add: each window's value added at its max (min)
# =============================================================================

def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                            padding):
  """Adds each element of `source` (one per window of `operand`) at the position
  of its window's max (`select_prim` ge_p) or min (le_p): the max-pool gradient."""
  params = _window_params("select_and_scatter_add", _shape(operand), window_dimensions,
                          window_strides, padding)
  return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim,
                                       window_dimensions=params["window_dimensions"],
                                       window_strides=params["window_strides"],
                                       padding=params["padding"])


def _select_and_scatter_add_shape_rule(source, operand, *, select_prim, window_dimensions,
                                       window_strides, padding):
  _select_direction(select_prim)
  ones = (1,) * operand.ndim
  expected = _common_reduce_window_shape_rule("select_and_scatter_add", operand,
                                              window_dimensions=window_dimensions,
                                              window_strides=window_strides, padding=padding,
                                              base_dilation=ones, window_dilation=ones)
  if source.shape != expected:
    raise TypeError("select_and_scatter_add source must have the shape of the windowed "
                    f"reduction of operand, {expected}, got {source.shape}.")
  return operand.shape


def _select_and_scatter_add_dtype_rule(source, operand, **_):
  return source.dtype


def _select_and_scatter_add_jvp(primals, tangents, **params):
  s, x = primals
  g_s, _ = tangents
  out = select_and_scatter_add_p.bind(s, x, **params)
  if type(g_s) is ad.Zero:
    return out, ad.Zero(_aval(out).at_least_vspace())
  return out, select_and_scatter_add_p.bind(g_s, x, **params)


def _select_and_scatter_add_transpose(ct, source, operand, *, select_prim, window_dimensions,
                                      window_strides, padding):
  assert ad.is_undefined_primal(source) and not ad.is_undefined_primal(operand)
  if type(ct) is ad.Zero:
    return [ad.Zero(source.aval), None]
  ones = (1,) * len(window_dimensions)
  source_t = select_and_gather_add_p.bind(
      ct, operand, select_prim=select_prim, window_dimensions=window_dimensions,
      window_strides=window_strides, padding=padding, base_dilation=ones,
      window_dilation=ones)
  return [source_t, None]


def _select_and_scatter_add_batch_rule(args, dims, *, select_prim, window_dimensions,
                                       window_strides, padding):
  s, x = args
  size = next(_shape(a)[d] for a, d in zip(args, dims) if d is not None)
  s = utils.bdim_at_front(s, dims[0], size)
  x = utils.bdim_at_front(x, dims[1], size)
  out = select_and_scatter_add_p.bind(s, x, select_prim=select_prim,
                                      window_dimensions=(1,) + tuple(window_dimensions),
                                      window_strides=(1,) + tuple(window_strides),
                                      padding=((0, 0),) + tuple(padding))
  return out, 0


def _select_and_scatter_add_lowering(ctx, source, operand, *, select_prim, window_dimensions,
                                     window_strides, padding):
  # The padding is made explicit (never-selected identity values) and sliced
  # off after: XLA:CPU and XLA:GPU have crashed on padded SelectAndScatter.
  s_aval, x_aval = ctx.avals_in
  dtype = x_aval.dtype
  direction = _select_direction(select_prim)
  _check_select_dtype(select_prim, dtype)
  lo = [l for l, _ in padding]
  hi = [h for _, h in padding]
  zeros = [0] * len(padding)
  if any(lo) or any(hi):
    padded_shape = tuple(d + l + h for d, l, h in zip(x_aval.shape, lo, hi))
    operand = hlo.pad(operand, mlir.ir_constant(_select_identity(select_prim, dtype)),
                      lo, hi, zeros)
  else:
    padded_shape = x_aval.shape
  out_type = mlir.aval_to_ir_type(ctx.avals_out[0].update(shape=padded_shape))
  op = hlo.SelectAndScatterOp(out_type, operand, source,
                              mlir.ir_constant(np.zeros((), s_aval.dtype)),
                              window_dimensions=list(window_dimensions),
                              window_strides=list(window_strides),
                              padding=_padding_attr(((0, 0),) * len(padding)))
  st = _scalar_type(dtype)
  select = op.select.blocks.append(st, st)
  with ir.InsertionPoint(select):
    hlo.return_([_compare(*select.arguments, direction, dtype)])
  sst = _scalar_type(s_aval.dtype)
  scatter = op.scatter.blocks.append(sst, sst)
  with ir.InsertionPoint(scatter):
    combine = hlo.or_ if s_aval.dtype == np.bool_ else hlo.add
    hlo.return_([combine(*scatter.arguments)])
  out = op.result
  if any(lo) or any(hi):
    out = hlo.slice(out, lo, [l + d for l, d in zip(lo, x_aval.shape)], [1] * len(lo))
  return [out]


select_and_scatter_add_p = standard_primitive(_select_and_scatter_add_shape_rule,
                                              _select_and_scatter_add_dtype_rule,
                                              "select_and_scatter_add")
ad.primitive_jvps[select_and_scatter_add_p] = _select_and_scatter_add_jvp
ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose
batching.primitive_batchers[select_and_scatter_add_p] = _select_and_scatter_add_batch_rule
mlir.register_lowering(select_and_scatter_add_p, _select_and_scatter_add_lowering)


# =============================================================================
# Cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp
# =============================================================================

def _interleave(a, b, axis):
  """a0 b0 a1 b1 ... along `axis` (`a` as long as `b` or one longer)."""
  na, nb = _shape(a)[axis], _shape(b)[axis]
  a_cfg = [(0, 0, 0)] * len(_shape(a))
  b_cfg = list(a_cfg)
  a_cfg[axis] = (0, 1 if na == nb else 0, 1)
  b_cfg[axis] = (1, 0 if na == nb else 1, 1)
  dtype = _aval(a).dtype
  combine = ew.bitwise_or if dtype == np.bool_ else ew.add
  zero = np.zeros((), dtype)
  return combine(pad(a, zero, a_cfg), pad(b, zero, b_cfg))


def _associative_scan(fn, x, axis, reverse):
  """Inclusive prefix scan of associative `fn` along `axis` in O(log n) depth: combine
  adjacent pairs, scan those recursively (the odd positions), then fill in the even
  positions. Uses no identity element, so its derivatives stay finite."""
  from tracejax._src.lax.slicing import slice_in_dim
  if reverse:
    x = rev(x, (axis,))

  def scan(x):
    n = _shape(x)[axis]
    if n < 2:
      return x
    odd = scan(fn(slice_in_dim(x, 0, n - 1, 2, axis), slice_in_dim(x, 1, n, 2, axis)))
    if n % 2 == 0:
      even = fn(slice_in_dim(odd, 0, _shape(odd)[axis] - 1, axis=axis),
                slice_in_dim(x, 2, n, 2, axis))
    else:
      even = fn(odd, slice_in_dim(x, 2, n, 2, axis))
    even = concatenate([slice_in_dim(x, 0, 1, axis=axis), even], axis)
    return _interleave(even, odd, axis)

  out = scan(x)
  return rev(out, (axis,)) if reverse else out


def _cumred_window_impl(window_reduce, x, *, axis, reverse):
  """The cumulative reduction as one reduce_window spanning the axis, padded on the
  side the scan comes from."""
  shape = _shape(x)
  n = shape[axis]
  if n == 0:
    return x
  ndim = len(shape)
  padding = [(0, 0)] * ndim
  padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
  window = [1] * ndim
  window[axis] = n
  return window_reduce(x, window, (1,) * ndim, padding)


def _cumred_shape_rule(x, *, axis, reverse):
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
  return x.shape


def _cumred_dtype_rule(name, accepted):
  def rule(x, **_):
    # JAX's words for a non-number (bool); cumlogsumexp then also refuses integers
    # (JAX fails there converting its -inf init value).
    if not dtypes.issubdtype(x.dtype, np.number):
      raise TypeError(f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes "
                      "are subtypes of number.")
    utils.check_dtypes(name, accepted, x)
    return x.dtype
  return rule


def _cumred_batch_rule(prim):
  def rule(args, dims, *, axis, reverse):
    (x,), (d,) = args, dims
    return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d
  return rule


def _cumulative_jvp_rule(combine_fn):
  # Differentiate the associative scan, whatever the lowering: reduce_window is
  # not differentiable to every order for every computation.
  def rule(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    outs, t_outs = ad.jvp_flat(lambda x: [_associative_scan(combine_fn, x, axis, reverse)],
                               [x], [ad.instantiate_zeros(t)])
    return outs[0], ad.instantiate_zeros(t_outs[0])
  return rule


def _cumulative_primitive(name, accepted, window_reduce):
  prim = standard_primitive(_cumred_shape_rule, _cumred_dtype_rule(name, accepted), name)
  batching.primitive_batchers[prim] = _cumred_batch_rule(prim)
  mlir.register_lowering(prim, mlir.lower_fun(
      functools.partial(_cumred_window_impl, window_reduce), multiple_results=False))
  return prim


def _cum_axis(name, operand, axis):
  return _canonicalize_axes(name, "axis", (axis,), len(_shape(operand)))[0]


def cumsum(operand, axis=0, reverse=False):
  """Cumulative sum along `axis` (from the end if `reverse`)."""
  return cumsum_p.bind(operand, axis=_cum_axis("cumsum", operand, axis),
                       reverse=bool(reverse))


def _cumsum_transpose_rule(ct, operand, *, axis, reverse):
  return [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]


cumsum_p = _cumulative_primitive("cumsum", utils._num, _reduce_window_sum)
ad.deflinear2(cumsum_p, _cumsum_transpose_rule)


def cumprod(operand, axis=0, reverse=False):
  """Cumulative product along `axis` (from the end if `reverse`)."""
  return cumprod_p.bind(operand, axis=_cum_axis("cumprod", operand, axis),
                        reverse=bool(reverse))


def _reduce_window_prod(operand, window_dimensions, window_strides, padding):
  return reduce_window(operand, np.ones((), _aval(operand).dtype), ew.mul,
                       window_dimensions, window_strides, padding)


cumprod_p = _cumulative_primitive("cumprod", utils._num, _reduce_window_prod)
ad.primitive_jvps[cumprod_p] = _cumulative_jvp_rule(ew.mul)


def _cum_chooser_impl(window_reduce, combine_fn, x, *, axis, reverse):
  """cummax/cummin: complex operands (lexicographic order, accepted as in JAX; fuzzer
  seed 201) take the generic reduce_window of `combine_fn` from -inf / inf, since the
  reduce_window_max/min primitives take no complex (NaNs then fall as in JAX's)."""
  if dtypes.is_complex(_aval(x).dtype):
    dt = _aval(x).dtype
    init = np.array(-np.inf if combine_fn is ew.max else np.inf, dt)
    window_reduce = lambda x, *a: reduce_window(x, init, combine_fn, *a)  # noqa: E731
  return _cumred_window_impl(window_reduce, x, axis=axis, reverse=reverse)


def cummax(operand, axis=0, reverse=False):
  """Cumulative maximum along `axis` (from the end if `reverse`)."""
  return cummax_p.bind(operand, axis=_cum_axis("cummax", operand, axis),
                       reverse=bool(reverse))


cummax_p = _cumulative_primitive("cummax", utils._num, _reduce_window_max)
mlir.register_lowering(cummax_p, mlir.lower_fun(
    functools.partial(_cum_chooser_impl, _reduce_window_max, ew.max), multiple_results=False))
ad.primitive_jvps[cummax_p] = _cumulative_jvp_rule(ew.max)


def cummin(operand, axis=0, reverse=False):
  """Cumulative minimum along `axis` (from the end if `reverse`)."""
  return cummin_p.bind(operand, axis=_cum_axis("cummin", operand, axis),
                       reverse=bool(reverse))


cummin_p = _cumulative_primitive("cummin", utils._num, _reduce_window_min)
mlir.register_lowering(cummin_p, mlir.lower_fun(
    functools.partial(_cum_chooser_impl, _reduce_window_min, ew.min), multiple_results=False))
ad.primitive_jvps[cummin_p] = _cumulative_jvp_rule(ew.min)


def cumlogsumexp(operand, axis=0, reverse=False):
  """Cumulative log-sum-exp along `axis` (from the end if `reverse`), without overflow."""
  return cumlogsumexp_p.bind(operand, axis=_cum_axis("cumlogsumexp", operand, axis),
                             reverse=bool(reverse))


def _reduce_window_logaddexp(operand, window_dimensions, window_strides, padding):
  return reduce_window(operand, np.array(-np.inf, _aval(operand).dtype), lae._logaddexp,
                       window_dimensions, window_strides, padding)


# Complex operands are accepted, as in JAX; integer ones stay an error (where JAX
# fails converting its -inf init value: see tools/fuzz_vs_jax.py).
cumlogsumexp_p = _cumulative_primitive("cumlogsumexp", utils._inexact,
                                       _reduce_window_logaddexp)
ad.primitive_jvps[cumlogsumexp_p] = _cumulative_jvp_rule(lae.logaddexp)


# =============================================================================
# select_and_scatter: XLA's SelectAndScatter with user select/scatter computations
# =============================================================================

def _select_and_scatter(operand, select, source, init_value, window_dimensions,
                        window_strides, padding, scatter):
  """XLA's SelectAndScatter: in each window of `operand`, `select(a, b)` (a scalar bool:
  keep `a`?) picks one position, where the window's element of `source` is combined
  with `scatter(acc, s)` into an output that starts as `init_value`.

  Args:
    operand: the array windowed over.
    select: a function of two scalars of operand's dtype to a bool scalar.
    source: one value per window (the shape of the windowed reduction).
    init_value: a scalar of source's dtype.
    window_dimensions, window_strides, padding: as for `reduce_window`.
    scatter: a function of two scalars of source's dtype to one.

  (`select_and_scatter_p` is the primitive JAX exports; this is its constructor.)
  """
  from tracejax._src.core.avals import ShapedArray
  from tracejax._src.core.trace import eval_trace, set_current_trace
  from tracejax._src.interpreters import staging
  x_aval, s_aval = _aval(operand), _aval(source)
  params = _window_params("select_and_scatter", x_aval.shape, window_dimensions,
                          window_strides, padding)
  with set_current_trace(eval_trace):
    sel, sel_consts = staging.trace_to_jaxpr(
        lambda a, b: [select(a, b)], [ShapedArray((), x_aval.dtype)] * 2)
    sca, sca_consts = staging.trace_to_jaxpr(
        lambda a, b: [scatter(a, b)], [ShapedArray((), s_aval.dtype)] * 2)
  if sel_consts or sca_consts:
    raise TypeError("select_and_scatter: select and scatter must not close over arrays.")
  return select_and_scatter_p.bind(
      operand, source, init_value, select_jaxpr=sel, select_consts=(), scatter_jaxpr=sca,
      scatter_consts=(), window_dimensions=params["window_dimensions"],
      window_strides=params["window_strides"], padding=params["padding"])


def _select_and_scatter_shape_rule(operand, source, init_value, *, select_jaxpr,
                                   select_consts, scatter_jaxpr, scatter_consts,
                                   window_dimensions, window_strides, padding):
  ones = (1,) * operand.ndim
  expected = _common_reduce_window_shape_rule("select_and_scatter", operand,
                                              window_dimensions=window_dimensions,
                                              window_strides=window_strides, padding=padding,
                                              base_dilation=ones, window_dilation=ones)
  if source.shape != expected:
    raise TypeError("select_and_scatter source must have the shape of the windowed "
                    f"reduction of operand, {expected}, got {source.shape}.")
  if init_value.shape != () or init_value.dtype != source.dtype:
    raise TypeError("select_and_scatter init_value must be a scalar of source's dtype, got "
                    f"{init_value.str_short()}.")
  if select_jaxpr.out_avals[0].dtype != np.bool_:
    raise TypeError("select_and_scatter select must return a bool scalar.")
  return operand.shape


def _select_and_scatter_batch_rule(args, dims, **params):
  x, s, init = args
  if dims[2] is not None:
    raise NotImplementedError("vmap of select_and_scatter over its init_value is not "
                              "supported (XLA takes one scalar).")
  size = next(_shape(a)[d] for a, d in zip(args, dims) if d is not None)
  x = utils.bdim_at_front(x, dims[0], size)
  s = utils.bdim_at_front(s, dims[1], size)
  params = dict(params, window_dimensions=(1,) + tuple(params["window_dimensions"]),
                window_strides=(1,) + tuple(params["window_strides"]),
                padding=((0, 0),) + tuple(params["padding"]))
  return select_and_scatter_p.bind(x, s, init, **params), 0


def _select_and_scatter_lowering(ctx, operand, source, init_value, *, select_jaxpr,
                                 select_consts, scatter_jaxpr, scatter_consts,
                                 window_dimensions, window_strides, padding):
  x_aval, s_aval, _ = ctx.avals_in
  op = hlo.SelectAndScatterOp(mlir.aval_to_ir_type(ctx.avals_out[0]), operand, source,
                              init_value, window_dimensions=list(window_dimensions),
                              window_strides=list(window_strides),
                              padding=_padding_attr(padding))
  st = _scalar_type(x_aval.dtype)
  select = op.select.blocks.append(st, st)
  with ir.InsertionPoint(select):
    hlo.return_(mlir.jaxpr_subcomp(ctx.module_context, select_jaxpr, [],
                                   list(select.arguments)))
  sst = _scalar_type(s_aval.dtype)
  scatter = op.scatter.blocks.append(sst, sst)
  with ir.InsertionPoint(scatter):
    hlo.return_(mlir.jaxpr_subcomp(ctx.module_context, scatter_jaxpr, [],
                                   list(scatter.arguments)))
  return [op.result]


select_and_scatter_p = standard_primitive(
    _select_and_scatter_shape_rule, lambda x, s, i, **_: s.dtype, "select_and_scatter")
batching.primitive_batchers[select_and_scatter_p] = _select_and_scatter_batch_rule
mlir.register_lowering(select_and_scatter_p, _select_and_scatter_lowering)
