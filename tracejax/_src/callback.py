"""Host callbacks: Python functions called from inside compiled programs.

Three primitives, one block each, share one mechanism:

* `pure_callback_p`: a pure function of its operands (`jax.pure_callback`).
  Dropped when its results are unused; batched by its `vmap_method`; no JVP.
* `io_callback_p`: a side effect with results (`jax.experimental.io_callback`).
  Never dropped; `ordered=True` keeps the order of ordered effects.
* `debug_callback_p`: a side effect with no results (`jax.debug.callback`,
  `jax.debug.print`, `jax.debug.breakpoint`, in `debugging.py`). Never
  dropped; transparent to differentiation (it sees primal values only);
  under `vmap` it runs once per batch element.

Eagerly, each primitive calls its function at once. Under `jit`, the lowering
emits a `stablehlo.custom_call` to jaxlib's Python CPU callback target, which
calls the function with NumPy arrays while the program runs (see
runtime/backend.py, "Python host callbacks"). Callbacks receive `tracejax.Array`
values, as JAX 0.10.2's do; `np.asarray` turns them into NumPy arrays.

Effects: io and debug callbacks are in `staging.effectful_primitives`, so dead
code elimination keeps them (and any jit, scan or cond around them). Ordered ones
thread an XLA token through the callbacks of one region of the program, in
program order, and a program containing one finishes before the next program
starts (backend.Executable), so order also holds across calls.
"""
import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching, staging
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.runtime import backend
from tracejax._src.runtime.array import Array, from_numpy


# ---- helpers shared by the three primitives ----

class _FlatCallback:
  """The user's callback, called with flat arguments (a pytree is rebuilt first)."""
  __slots__ = ("callback_func", "in_tree", "_hosts", "__weakref__")

  def __init__(self, callback_func, in_tree):
    self.callback_func, self.in_tree = callback_func, in_tree
    self._hosts = {}  # ordered -> the host function compiled programs call

  def __call__(self, *flat_args):
    args, kwargs = tree_util.tree_unflatten(self.in_tree, list(flat_args))
    return self.callback_func(*args, **kwargs)

  def __repr__(self):
    return f"_FlatCallback(callback_func={self.callback_func!r})"


def _to_array(x):
  """A callback's argument as a `tracejax.Array` (what JAX 0.10.2 passes too)."""
  if type(x) is Array:
    return x
  aval = avals_mod.get_aval(x)
  return from_numpy(np.asarray(x, aval.dtype), weak_type=aval.weak_type)


def _result_avals(result_shape_dtypes, api_name):
  """Flatten `result_shape_dtypes` into ShapedArrays (and the tree), checking each leaf."""
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for i, leaf in enumerate(leaves):
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
      raise TypeError(
          f"{api_name}: result_shape_dtypes must be a pytree of objects with `shape` and "
          f"`dtype` (e.g. jax.ShapeDtypeStruct), but leaf {i} is {leaf!r} of type "
          f"{type(leaf).__name__}.")
    dtype = np.dtype(dtype)
    mlir.check_supported_dtype(dtype)
    if dtypes.canonicalize_dtype(dtype) != dtype:
      raise ValueError(
          f"{api_name}: result_shape_dtypes cannot specify 64-bit types when "
          f"`jax_enable_x64` is disabled (leaf {i} has dtype {dtype}).")
    avals.append(avals_mod.ShapedArray(tuple(int(d) for d in shape), dtype))
  return tuple(avals), tree


def _check_results(out, result_avals):
  """The callback's return value as NumPy arrays of exactly `result_avals`.

  Raises RuntimeError naming the expected and the actual count, shape or dtype.
  Under jit, XLA reports it as a JaxRuntimeError (a RuntimeError) carrying this
  message."""
  leaves = tree_util.tree_leaves(out)
  if len(leaves) != len(result_avals):
    raise RuntimeError(f"Mismatched number of outputs from callback. Expected: "
                       f"{len(result_avals)}, Actual: {len(leaves)}")
  res = []
  for i, (x, aval) in enumerate(zip(leaves, result_avals)):
    x = np.asarray(x)
    canonical = dtypes.canonicalize_dtype(x.dtype)
    if canonical != x.dtype:  # float64 from NumPy, with x64 off: as JAX, narrow it
      x = x.astype(canonical)
    if x.shape != aval.shape:
      raise RuntimeError(f"Incorrect output shape for return value #{i}: Expected: "
                         f"{aval.shape}, Actual: {x.shape}")
    if x.dtype != aval.dtype:
      raise RuntimeError(f"Incorrect output dtype for return value #{i}: Expected: "
                         f"{aval.dtype}, Actual: {x.dtype}")
    # (not np.ascontiguousarray: it would turn a 0-d result into a 1-d one)
    res.append(x if x.flags.c_contiguous else x.copy(order="C"))
  return res


def _host_function(callback, result_avals, ordered):
  """The function compiled programs call: NumPy in, checked NumPy tuple out.

  One per (callback, ordered), so lowering the same equation twice gives the same
  program text (and hits the compile cache)."""
  host = callback._hosts.get(ordered)
  if host is not None:
    return host
  if result_avals is None:  # debug_callback: no results
    def call(*args):
      callback(*map(from_numpy, args))
      return ()
  else:
    def call(*args):
      return tuple(_check_results(callback(*map(from_numpy, args)), result_avals))
  if ordered:
    def host(token, *args):  # the token operand arrives as None and leaves as None
      return (None,) + call(*args)
  else:
    host = call
  callback._hosts[ordered] = host
  return host


def _layout(aval):
  # Row-major, the layout jaxlib's callback hands to NumPy.
  return ir.DenseIntElementsAttr.get(np.arange(aval.ndim - 1, -1, -1, dtype=np.int64),
                                     type=ir.IndexType.get())


def _token_layout():
  return ir.DenseIntElementsAttr.get(np.zeros((0,), np.int64), type=ir.IndexType.get())


def _region_token(mctx):
  """The ordering token of the block being emitted (made on first use).

  A region (a loop body, a cond branch) cannot use a token of its parent, so each
  block has its own chain: ordered callbacks are ordered within a block, and a
  block's iterations run in sequence."""
  tokens = mctx.__dict__.setdefault("_callback_tokens", [])
  block = ir.InsertionPoint.current.block
  for i, (b, tok) in enumerate(tokens):
    if b == block:
      return i, tok
  tokens.append((block, hlo.AfterAllOp([]).result))
  return len(tokens) - 1, tokens[-1][1]


def _emit_callback(ctx, operands, host, has_side_effect, ordered):
  """Emit the custom call that runs `host`; returns its (non-token) results."""
  mctx = ctx.module_context
  if mctx.platform != "cpu":
    raise NotImplementedError(
        f"{ctx.primitive.name}: Python host callbacks are implemented on CPU only "
        f"(jaxlib's {backend.PYTHON_CALLBACK_TARGET}); no lowering for platform "
        f"{mctx.platform}.")
  key = backend.register_host_callback(host)
  key_aval = avals_mod.ShapedArray((), np.dtype(np.uint64))
  ops = [mlir.ir_constant(np.uint64(key))]
  in_layouts = [_layout(key_aval)]
  result_types, out_layouts = [], []
  if ordered:
    slot, token = _region_token(mctx)
    ops.append(token)
    in_layouts.append(_token_layout())
    result_types.append(hlo.TokenType.get())
    out_layouts.append(_token_layout())
  ops += list(operands)
  in_layouts += [_layout(a) for a in ctx.avals_in]
  result_types += [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  out_layouts += [_layout(a) for a in ctx.avals_out]
  op = hlo.CustomCallOp(
      result_types, ops, backend.PYTHON_CALLBACK_TARGET,
      has_side_effect=ir.BoolAttr.get(bool(has_side_effect)),
      api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
      backend_config=ir.DictAttr.get(
          {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), 0)}),
      operand_layouts=ir.ArrayAttr.get(in_layouts),
      result_layouts=ir.ArrayAttr.get(out_layouts))
  results = list(op.results)
  if ordered:
    op.operation.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(
        {backend.ORDERED_EFFECT_MARKER: ir.StringAttr.get("1")})
    tokens = mctx.__dict__["_callback_tokens"]
    tokens[slot] = (tokens[slot][0], results[0])
    results = results[1:]
  return results


def _batch_size(args, dims):
  return next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)


def _batch_sequential(prim, args, dims, params, unrolled=False):
  """Batching by a loop over the batch: `lax.map` (a scan), or unrolled in Python.

  Each step calls the primitive on one element of the batched operands (the
  unbatched ones are passed whole). Returns outputs batched along axis 0."""
  from tracejax._src.control_flow import loops
  from tracejax._src.lax import slicing, structural
  from tracejax._src.lax import utils as lax_utils
  size = _batch_size(args, dims)
  batched = [lax_utils.moveaxis(x, d, 0) for x, d in zip(args, dims) if d is not None]

  def step(xs):
    it = iter(xs)
    return prim.bind(*[next(it) if d is not None else x for x, d in zip(args, dims)],
                     **params)

  if unrolled and size:
    outs = [step([slicing.index_in_dim(x, i, 0, keepdims=False) for x in batched])
            for i in range(size)]
    return [structural.concatenate([structural.expand_dims(o[j], (0,)) for o in outs], 0)
            for j in range(len(params["result_avals"]))]
  return loops.map(step, batched)


# ---- pure_callback_p ----

pure_callback_p = Primitive("pure_callback")
pure_callback_p.multiple_results = True

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
  """Call a pure Python function on host values, also from inside `jit`.

  The callback receives the arguments as `tracejax.Array` values (NumPy works on
  them) and must return a pytree of arrays matching `result_shape_dtypes`
  (shape and dtype, checked when it runs). Being pure, an unused call is
  removed, and under `vmap` it is batched as `vmap_method` says:
  ``'sequential'`` (a `lax.map` over the batch), ``'sequential_unrolled'`` (a
  Python loop), ``'expand_dims'`` (unbatched arguments get a leading axis of
  size 1), ``'broadcast_all'`` (every argument broadcast to the batch), or
  ``'legacy_vectorized'`` (batched arguments get a leading batch axis, the rest
  are passed unchanged); the last three call `callback` once with batched arrays.
  It has no derivative of its own: wrap it in `custom_jvp` / `custom_vjp`.

  Args:
    callback: a Python function of `*args, **kwargs`.
    result_shape_dtypes: a pytree of `jax.ShapeDtypeStruct` (or arrays) describing
      the result.
    *args, **kwargs: the arguments (pytrees of arrays) passed to `callback`.
    sharding: accepted for compatibility; tracejax callbacks run on one device.
    vmap_method: one of the methods above, or None (then `vmap` is an error).

  Returns:
    A pytree of arrays like `result_shape_dtypes`.

  >>> import numpy as np
  >>> f = jax.jit(lambda x: jax.pure_callback(
  ...     np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x))
  >>> f(jnp.zeros(2))
  DeviceArray([0., 0.], dtype=float32)
  """
  if not callable(callback):
    raise TypeError(f"pure_callback: callback must be callable, got {type(callback)}")
  if vmap_method is not None and vmap_method not in VMAP_METHODS:
    raise ValueError(f"pure_callback: vmap_method must be one of {list(VMAP_METHODS)} or "
                     f"None, but got {vmap_method!r}.")
  result_avals, out_tree = _result_avals(result_shape_dtypes, "pure_callback")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                              result_avals=result_avals, vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


def _pure_callback_impl(*args, callback, result_avals, vmap_method):
  res = _check_results(callback(*map(_to_array, args)), result_avals)
  return [from_numpy(r) for r in res]


pure_callback_p.def_impl(_pure_callback_impl)
pure_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))


def _pure_callback_jvp(primals, tangents, **params):
  raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                   "callbacks while taking gradients.")


ad.primitive_jvps[pure_callback_p] = _pure_callback_jvp


def _pure_callback_batch(args, dims, *, callback, result_avals, vmap_method):
  from tracejax._src.lax import structural
  from tracejax._src.lax import utils as lax_utils
  params = dict(callback=callback, result_avals=result_avals, vmap_method=vmap_method)
  if vmap_method is None:
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        f"{', '.join(repr(m) for m in VMAP_METHODS)}. Got vmap_method=None.")
  n = len(result_avals)
  if vmap_method in ("sequential", "sequential_unrolled"):
    outs = _batch_sequential(pure_callback_p, args, dims, params,
                             unrolled=vmap_method == "sequential_unrolled")
    return outs, [0] * n
  size = _batch_size(args, dims)
  if vmap_method == "expand_dims":
    new_args = [lax_utils.moveaxis(x, d, 0) if d is not None
                else structural.expand_dims(x, (0,)) for x, d in zip(args, dims)]
  elif vmap_method == "broadcast_all":
    new_args = [lax_utils.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  else:  # legacy_vectorized
    new_args = [lax_utils.moveaxis(x, d, 0) if d is not None else x
                for x, d in zip(args, dims)]
  batched_avals = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
  outs = pure_callback_p.bind(*new_args, callback=callback, result_avals=batched_avals,
                              vmap_method=vmap_method)
  return outs, [0] * n


batching.primitive_batchers[pure_callback_p] = _pure_callback_batch


def _pure_callback_lowering(ctx, *args, callback, result_avals, vmap_method):
  host = _host_function(callback, result_avals, ordered=False)
  return _emit_callback(ctx, args, host, has_side_effect=False, ordered=False)


mlir.register_lowering(pure_callback_p, _pure_callback_lowering)


# ---- io_callback_p ----

io_callback_p = Primitive("io_callback")
io_callback_p.multiple_results = True
staging.effectful_primitives.add(io_callback_p)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
  """Call a Python function with side effects on host values, also inside `jit`.

  Like `pure_callback`, but the call is an effect: it is never removed, even when
  its results are unused, and with `ordered=True` ordered calls run in program
  order (also across calls of jitted functions). Under `vmap` an unordered call
  runs once per batch element (a `lax.map`); an ordered one cannot be batched.
  It has no derivative.

  Args:
    callback: a Python function of `*args, **kwargs`.
    result_shape_dtypes: a pytree of `jax.ShapeDtypeStruct` describing the result
      (None for no result).
    *args, **kwargs: the arguments (pytrees of arrays) passed to `callback`.
    sharding: accepted for compatibility; tracejax callbacks run on one device.
    ordered: whether this call is ordered with the other ordered effects.

  Returns:
    A pytree of arrays like `result_shape_dtypes`.

  >>> seen = []
  >>> f = jax.jit(lambda x: jax.experimental.io_callback(seen.append, None, x,
  ...                                                   ordered=True))
  >>> f(1.); f(2.); [float(v) for v in seen]
  [1.0, 2.0]
  """
  if not callable(callback):
    raise TypeError(f"io_callback: callback must be callable, got {type(callback)}")
  result_avals, out_tree = _result_avals(result_shape_dtypes, "io_callback")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  outs = io_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                            result_avals=result_avals, ordered=bool(ordered))
  return tree_util.tree_unflatten(out_tree, outs)


def _io_callback_impl(*args, callback, result_avals, ordered):
  res = _check_results(callback(*map(_to_array, args)), result_avals)
  return [from_numpy(r) for r in res]


io_callback_p.def_impl(_io_callback_impl)
io_callback_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))


def _io_callback_jvp(primals, tangents, **params):
  raise ValueError("IO callbacks do not support JVP.")


ad.primitive_jvps[io_callback_p] = _io_callback_jvp


def _io_callback_batch(args, dims, *, callback, result_avals, ordered):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  params = dict(callback=callback, result_avals=result_avals, ordered=ordered)
  outs = _batch_sequential(io_callback_p, args, dims, params)
  return outs, [0] * len(result_avals)


batching.primitive_batchers[io_callback_p] = _io_callback_batch


def _io_callback_lowering(ctx, *args, callback, result_avals, ordered):
  host = _host_function(callback, result_avals, ordered)
  return _emit_callback(ctx, args, host, has_side_effect=True, ordered=ordered)


mlir.register_lowering(io_callback_p, _io_callback_lowering)


# ---- debug_callback_p ----

debug_callback_p = Primitive("debug_callback")
debug_callback_p.multiple_results = True
staging.effectful_primitives.add(debug_callback_p)


class _PlainCallback:
  """A function of flat Arrays, as a `callback` parameter (holds its host functions)."""
  __slots__ = ("fn", "_hosts", "__weakref__")

  def __init__(self, fn):
    self.fn, self._hosts = fn, {}

  def __call__(self, *args):
    return self.fn(*args)

  def __repr__(self):
    return f"{getattr(self.fn, '__qualname__', self.fn)!s}"


def debug_callback_bind(callback, args, ordered=False):
  """Bind `debug_callback_p`: `callback(*args)` (flat Arrays) runs for its effect."""
  return debug_callback_p.bind(*args, callback=_PlainCallback(callback),
                               ordered=bool(ordered))


def _debug_callback_impl(*args, callback, ordered):
  callback(*map(_to_array, args))
  return []


debug_callback_p.def_impl(_debug_callback_impl)
debug_callback_p.def_abstract_eval(lambda *avals, **_: [])


def _debug_callback_jvp(primals, tangents, **params):
  # Transparent to differentiation: it sees the primal values, and has no outputs.
  return debug_callback_p.bind(*primals, **params), []


ad.primitive_jvps[debug_callback_p] = _debug_callback_jvp


def _debug_callback_transpose(cts, *args, **params):
  # A callback that sees tangents (e.g. a print in a custom_jvp rule) is part of the
  # linear map; its transpose contributes no cotangent and, as in JAX, does not run.
  return [None] * len(args)


ad.primitive_transposes[debug_callback_p] = _debug_callback_transpose


def _debug_callback_batch(args, dims, *, callback, ordered):
  # One call per batch element, in order: the callback sees unbatched values.
  from tracejax._src.lax import slicing
  size = _batch_size(args, dims)
  for i in range(size):
    debug_callback_p.bind(
        *[slicing.index_in_dim(x, i, d, keepdims=False) if d is not None else x
          for x, d in zip(args, dims)], callback=callback, ordered=ordered)
  return [], []


batching.primitive_batchers[debug_callback_p] = _debug_callback_batch


def _debug_callback_lowering(ctx, *args, callback, ordered):
  host = _host_function(callback, None, ordered)
  return _emit_callback(ctx, args, host, has_side_effect=True, ordered=ordered)


mlir.register_lowering(debug_callback_p, _debug_callback_lowering)


# ---- waiting for effects ----

def effects_barrier():
  """Wait until every host callback of the programs started so far has run.

  Programs run asynchronously; a `jax.debug.print` inside one may print after
  the call that started it returns. This blocks until they are all done.

  >>> f = jax.jit(lambda x: jax.debug.print("x={}", x))
  >>> f(1.); jax.effects_barrier()
  x=1.0
  """
  backend.effects_barrier()

