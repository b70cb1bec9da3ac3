"""Identity-like operations that exist for the transformations: stop_gradient,
optimization_barrier, copy, stage, dce_sink, the ordering tokens create_token /
after_all; and small helpers of today's lax (empty, dtype, shape_as_value,
broadcast_like, rng_uniform)."""
import functools

import numpy as np

from tracejax._src import dispatch
from tracejax._src import tree_util
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching, staging
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.lax import structural


# ---- stop_gradient: the identity, with a zero derivative ----

def stop_gradient(x):
  """The identity on a pytree of arrays, but its derivative is zero."""
  def stop(leaf):
    if getattr(leaf, "dtype", None) is not None and leaf.dtype.kind not in "fc" and \
        leaf.dtype.name != "bfloat16":
      return leaf  # integer and bool values have no gradient to stop
    return stop_gradient_p.bind(leaf)
  return tree_util.tree_map(stop, x)


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(functools.partial(dispatch.apply_primitive, stop_gradient_p))
stop_gradient_p.def_abstract_eval(lambda x: x)
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = lambda args, dims: (stop_gradient_p.bind(*args),
                                                                   dims[0])
mlir.register_lowering(stop_gradient_p, lambda ctx, x: [x])


# ---- tokens: create_token, after_all ----
#
# In XLA a token orders side effects (infeed, outfeed, host callbacks). tracejax
# has no effectful primitive that takes one, so nothing needs a real token type
# (which would reach into avals, lowering and the runtime): a token here is an
# empty bool array. It passes through jit, vmap and grad like any other value,
# carries no data, and has no gradient. Both functions exist so that programs
# written against the API (2020: `create_token(x)`, today: `create_token()`) run.

def create_token(*_):
  """A new token (an empty bool array). Arguments are accepted and ignored: the 2020
  API took an operand to tie the token to."""
  return structural.full((0,), np.bool_(False))


def after_all(*operands):
  """A token that, in XLA, would come after all the `operands` tokens: here simply a
  new token, since nothing is ordered by them."""
  return create_token(*operands)


# ---- optimization_barrier: the identity, opaque to XLA's optimizations ----

def optimization_barrier(operand, /):
  """The identity on a pytree of arrays, as a barrier XLA does not optimize across.

  Every output is computed before any operation that uses an output of the barrier,
  and values are not merged (CSE) or fused across it: this orders computations and
  keeps rematerialized values from being deduplicated (`jax.checkpoint` uses it).
  Differentiation and vmap pass through it (tangents go through a barrier too).

  Args:
    operand: a pytree of arrays (or scalars).

  >>> x, y = optimization_barrier((jnp.ones(2), 3.))
  >>> y
  DeviceArray(3., dtype=float32)
  """
  leaves, tree = tree_util.tree_flatten(operand)
  outs = optimization_barrier_p.bind(*leaves)
  return tree_util.tree_unflatten(tree, outs)


optimization_barrier_p = Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_impl(functools.partial(dispatch.apply_primitive,
                                                  optimization_barrier_p))
optimization_barrier_p.def_abstract_eval(lambda *avals: [a for a in avals])


def _optimization_barrier_jvp(primals, tangents):
  outs = optimization_barrier_p.bind(*primals)
  nz = [t for t in tangents if type(t) is not ad.Zero]
  t_nz = iter(optimization_barrier_p.bind(*nz) if nz else [])
  return outs, [t if type(t) is ad.Zero else next(t_nz) for t in tangents]


def _optimization_barrier_transpose(cts, *args):
  # Only ever transposed on tangents (the JVP keeps primals in their own barrier).
  cts = [ad.instantiate_zeros(c) if type(c) is not ad.Zero or ad.is_undefined_primal(a)
         else c for c, a in zip(cts, args)]
  cts = [ad.zeros_like_aval(a.aval) if type(c) is ad.Zero and ad.is_undefined_primal(a)
         else c for c, a in zip(cts, args)]
  lin = [c for c, a in zip(cts, args) if ad.is_undefined_primal(a)]
  outs = iter(optimization_barrier_p.bind(*lin) if lin else [])
  return [next(outs) if ad.is_undefined_primal(a) else None for a in args]


ad.primitive_jvps[optimization_barrier_p] = _optimization_barrier_jvp
ad.primitive_transposes[optimization_barrier_p] = _optimization_barrier_transpose
batching.primitive_batchers[optimization_barrier_p] = (
    lambda args, dims: (optimization_barrier_p.bind(*args), list(dims)))


def _optimization_barrier_lowering(ctx, *args):
  if not args:
    return []
  return list(hlo.OptimizationBarrierOp(list(args)).results)


mlir.register_lowering(optimization_barrier_p, _optimization_barrier_lowering)


# ---- copy_p: a new buffer with the same value ----

def _copy(x):
  """A copy of array `x` in a new buffer (what `jnp.array(x, copy=True)` binds)."""
  return copy_p.bind(x)


copy_p = Primitive("copy")
copy_p.def_impl(functools.partial(dispatch.apply_primitive, copy_p))
copy_p.def_abstract_eval(lambda x: x)
ad.deflinear(copy_p, lambda ct: [copy_p.bind(ct)])
batching.primitive_batchers[copy_p] = lambda args, dims: (copy_p.bind(*args), dims[0])
# In a compiled program every result is a fresh buffer already: the op is the identity.
mlir.register_lowering(copy_p, lambda ctx, x: [x])


# ---- token primitives: create_token_p, after_all_p ----
#
# The functions above are the API; these primitives let programs that bind them
# directly (as `lax.create_token_p.bind()`) stage the same empty-bool token.

def _token_abstract_eval(*avals):
  from tracejax._src.core.avals import ShapedArray
  return ShapedArray((0,), np.dtype(np.bool_))


def _token_lowering(ctx, *args):
  return [mlir.ir_constant(np.zeros((0,), np.bool_))]


create_token_p = Primitive("create_token")
after_all_p = Primitive("after_all")
for _p in (create_token_p, after_all_p):
  _p.def_impl(functools.partial(dispatch.apply_primitive, _p))
  _p.def_abstract_eval(_token_abstract_eval)
  ad.defjvp_zero(_p)
  batching.primitive_batchers[_p] = (lambda p: lambda args, dims: (p.bind(*args), None))(_p)
  mlir.register_lowering(_p, _token_lowering)
del _p


# ---- dce_sink: keep a value alive through dead-code elimination ----

def dce_sink(val, *, prevent_mlir_dce=False):
  """Mark the arrays of pytree `val` as used, so dead-code elimination of the jaxpr
  keeps the computations that produce them. Returns None.

  Args:
    val: a pytree of arrays.
    prevent_mlir_dce: accepted for compatibility; the compiled program has no
      outputs for the sink, so XLA may still drop the work.

  >>> dce_sink(jnp.ones(2))
  """
  for leaf in tree_util.tree_leaves(val):
    dce_sink_p.bind(leaf)
  return None


dce_sink_p = Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_impl(lambda x: [])
dce_sink_p.def_abstract_eval(lambda x: [])
ad.primitive_jvps[dce_sink_p] = lambda primals, tangents: (dce_sink_p.bind(*primals), [])
batching.primitive_batchers[dce_sink_p] = lambda args, dims: (dce_sink_p.bind(*args), [])
mlir.register_lowering(dce_sink_p, lambda ctx, x: [])
staging.effectful_primitives.add(dce_sink_p)


# ---- stage: lift a value into the current trace ----

def stage(x, /):
  """The identity that turns a Python scalar or NumPy array into a value of the current
  trace: a tracer under `jit`/`grad`/`vmap`, a device Array outside any.

  Args:
    x: an array-like.

  >>> stage(np.float32(2.))
  DeviceArray(2., dtype=float32)
  """
  return stage_p.bind(x)


stage_p = Primitive("stage")
stage_p.def_impl(functools.partial(dispatch.apply_primitive, stage_p))
stage_p.def_abstract_eval(lambda x: x)
ad.deflinear(stage_p, lambda ct: [ct])
batching.primitive_batchers[stage_p] = lambda args, dims: (stage_p.bind(*args), dims[0])
mlir.register_lowering(stage_p, lambda ctx, x: [x])


# ---- rng_uniform: XLA's stateful RngUniform ----

def rng_uniform(a, b, shape):
  """Uniform values in `[a, b)` from XLA's stateful generator (not reproducible across
  runs or backends; use `jax.random` for reproducible streams).

  Args:
    a, b: scalars of one float or integer dtype: the bounds.
    shape: the output shape.

  >>> rng_uniform(np.float32(0), np.float32(1), (3,)).shape
  (3,)
  """
  from tracejax._src.core.avals import canonicalize_shape
  shape = canonicalize_shape(shape)
  return rng_uniform_p.bind(a, b, shape=shape)


def _rng_uniform_abstract_eval(a, b, *, shape):
  from tracejax._src.core.avals import ShapedArray
  if a.dtype != b.dtype:
    raise TypeError(f"rng_uniform requires a and b of one dtype, got {a.dtype} and "
                    f"{b.dtype}.")
  if a.shape != () or b.shape != ():
    raise ValueError(f"rng_uniform requires scalar bounds, got shapes {a.shape} and "
                     f"{b.shape}.")
  if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
    raise TypeError(f"rng_uniform does not accept dtype {a.dtype}.")
  return ShapedArray(shape, a.dtype)


rng_uniform_p = Primitive("rng_uniform")
rng_uniform_p.def_impl(functools.partial(dispatch.apply_primitive, rng_uniform_p))
rng_uniform_p.def_abstract_eval(_rng_uniform_abstract_eval)
ad.defjvp_zero(rng_uniform_p)


def _rng_uniform_batch(args, dims, *, shape):
  raise NotImplementedError("rng_uniform does not support vmap over its bounds; use "
                            "jax.random.uniform.")


batching.primitive_batchers[rng_uniform_p] = _rng_uniform_batch


def _rng_uniform_lowering(ctx, a, b, *, shape):
  out_type = mlir.aval_to_ir_type(ctx.avals_out[0])
  shape_val = mlir.ir_constant(np.array(shape, np.int64))
  dist = hlo.RngDistributionAttr.get("UNIFORM")
  return [hlo.RngOp(a, b, shape_val, dist, results=[out_type]).result]


mlir.register_lowering(rng_uniform_p, _rng_uniform_lowering)


# ---- small helpers of today's lax ----

def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype` whose values are unspecified (zeros here).

  Args:
    shape: an int or a sequence of ints.
    dtype: the element type.
    out_sharding: accepted for compatibility; arrays live on one device.

  >>> empty((2,), np.float32).shape
  (2,)
  """
  from tracejax._src import dtypes as _dtypes
  from tracejax._src.core.avals import canonicalize_shape
  shape = canonicalize_shape((shape,) if isinstance(shape, (int, np.integer)) else shape)
  return structural.full(shape, 0, _dtypes.canonicalize_dtype(np.dtype(dtype)))


def dtype(x):
  """The canonical dtype of `x` (an array, scalar, dtype or type name), as JAX computes it
  (64-bit types become 32-bit unless x64 is on).

  >>> dtype(1.0)
  dtype('float32')
  """
  from tracejax._src import dtypes as _dtypes
  return _dtypes.dtype(x, canonicalize=True)


def shape_as_value(shape):
  """A shape as an int32 array value (`(2, 3)` -> `[2, 3]`).

  >>> shape_as_value((2, 3))
  DeviceArray([2, 3], dtype=int32)
  """
  from tracejax._src.core.avals import canonicalize_shape
  shape = canonicalize_shape(shape)
  vals = [structural.broadcast_in_dim(np.int32(d), (1,), ()) for d in shape]
  if not vals:
    return structural.full((0,), 0, np.int32)
  return structural.concatenate(vals, 0)


def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy rules: trailing axes align) to the shape of `like_arr`.

  Args:
    arr: the array to broadcast.
    like_arr: an array (or anything with a `shape`) whose shape is the target.

  >>> broadcast_like(jnp.array([1, 2, 3]), jnp.zeros((2, 3))).shape
  (2, 3)
  """
  shape = tuple(np.shape(like_arr)) if not hasattr(like_arr, "shape") else \
      tuple(like_arr.shape)
  src = tuple(np.shape(arr)) if not hasattr(arr, "shape") else tuple(arr.shape)
  if len(src) > len(shape):
    raise ValueError(f"broadcast_like: cannot broadcast an array of shape {src} to the "
                     f"lower-rank shape {shape}.")
  dims = tuple(range(len(shape) - len(src), len(shape)))
  for d, s in zip(dims, src):
    if s not in (1, shape[d]):
      raise ValueError(f"broadcast_like: incompatible shapes {src} and {shape}.")
  if src == shape:
    return arr
  return structural.broadcast_in_dim(arr, shape, dims)
