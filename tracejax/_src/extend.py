"""What `jax.extend` offers beyond the names `jax.core` & co. already have: helpers
for libraries that build their own primitives and transformations (`extend.core`),
and the backend handles they use (`extend.backend`).

Each helper is written against tracejax's own core: one current trace per
thread whose `parent` chain is the stack of active transformations (see
`core/trace.py`), `ir.Var`/`ir.JaxprEqn` jaxprs, PJRT clients from
`runtime/backend.py`.
"""
import contextlib
import typing

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core import trace as trace_mod
from tracejax._src.runtime import backend

# ---- extend.core ----

class Effect:
  """Base class of the side effects an equation can carry (tracejax records effects by
  primitive: `staging.effectful_primitives`)."""


Effects = typing.AbstractSet[Effect]
no_effects = frozenset()


class InconclusiveDimensionOperation(Exception):
  """A comparison of symbolic dimensions that cannot be decided (JAX's shape
  polymorphism; tracejax's shapes are always concrete, so its own code never
  raises it, but libraries catch it)."""


class TraceTag:
  """An identity token distinguishing one transformation instance from another."""
  __slots__ = ("__weakref__",)

  def __repr__(self):
    return f"TraceTag({id(self):#x})"


class DebugInfo(typing.NamedTuple):
  """Where a traced function came from: `traced_for` ('jit', 'vmap'...),
  `func_src_info` ('f at file.py:3'), `arg_names`, `result_paths`."""
  traced_for: str
  func_src_info: typing.Optional[str]
  arg_names: tuple
  result_paths: typing.Optional[tuple]


# The concrete array types a value can have (NumPy arrays and scalars of the
# dtypes tracejax supports, tracejax's Array): what `core.array_types` lists in JAX.
def _array_types():
  from tracejax._src.runtime.array import Array
  scalars = {np.dtype(d).type for d in dtypes.all_dtypes}
  return frozenset({np.ndarray, Array} | scalars)


array_types = _array_types()

primal_dtype_to_tangent_dtype = avals_mod.tangent_dtype
valid_jaxtype = avals_mod.is_valid_jaxtype


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None):
  """A jaxpr equation `outvars = primitive[params] invars`.

  Args:
    invars: `Var`s or `Literal`s read. outvars: `Var`s written.
    primitive: a `Primitive`. params: its parameters (a dict).
    effects, source_info, ctx: accepted for JAX compatibility.

  >>> from tracejax._src.lax.elementwise import sin_p
  >>> a = gensym()(avals_mod.ShapedArray((), np.float32))
  >>> b = gensym()(a.aval)
  >>> new_jaxpr_eqn([a], [b], sin_p, {}).primitive
  sin
  """
  del effects, ctx
  return ir.JaxprEqn(invars, outvars, primitive, dict(params), source_info)


def gensym(suffix=""):
  """A factory of fresh variables: `gensym()(aval)` is a new `Var` of type `aval`.

  >>> v = gensym()(avals_mod.ShapedArray((2,), np.float32))
  >>> v.aval
  ShapedArray(float32[2])
  """
  del suffix  # names are given when printing
  return ir.Var


def jaxprs_in_params(params):
  """The `Jaxpr`s held in an equation's parameters (as values or in tuples/lists;
  a `ClosedJaxpr` gives its `.jaxpr`).

  Args:
    params: a dict of equation parameters.
  """
  for v in params.values():
    vals = v if isinstance(v, (tuple, list)) else (v,)
    for x in vals:
      if isinstance(x, ir.ClosedJaxpr):
        yield x.jaxpr
      elif isinstance(x, ir.Jaxpr):
        yield x


def mapped_aval(size, axis, aval):
  """`aval` with the mapped axis `axis` (of length `size`) removed; None: unchanged.

  >>> mapped_aval(3, 0, avals_mod.ShapedArray((3, 2), np.float32))
  ShapedArray(float32[2])
  """
  if axis is None:
    return aval
  shape = tuple(aval.shape)
  if not -len(shape) <= axis < len(shape):
    raise ValueError(f"mapped_aval: axis {axis} is out of bounds for {aval}")
  axis %= len(shape)
  if shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval} has size {shape[axis]}, "
                     f"expected {size}")
  return aval.update(shape=shape[:axis] + shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
  """`aval` with a new axis of length `size` inserted at `axis`; None: unchanged.

  >>> unmapped_aval(3, 1, avals_mod.ShapedArray((2,), np.float32))
  ShapedArray(float32[2,3])
  """
  del explicit_mesh_axis
  if axis is None:
    return aval
  shape = tuple(aval.shape)
  if not -len(shape) - 1 <= axis <= len(shape):
    raise ValueError(f"unmapped_aval: axis {axis} is out of bounds for {aval}")
  axis %= len(shape) + 1
  return aval.update(shape=shape[:axis] + (size,) + shape[axis:])


def _trace_chain():
  t = trace_mod.current_trace()
  while t is not None:
    yield t
    t = t.parent


def find_top_trace(xs=()):
  """The trace that binding a primitive on `xs` goes to now: the current trace."""
  del xs
  return trace_mod.current_trace()


@contextlib.contextmanager
def take_current_trace():
  """Context manager giving the current trace, e.g. to call its `process_primitive`."""
  yield trace_mod.current_trace()


class _OpaqueTraceState:
  __slots__ = ("_trace",)

  def __init__(self, trace):
    self._trace = trace

  def __eq__(self, other):
    return isinstance(other, _OpaqueTraceState) and other._trace is self._trace

  def __hash__(self):
    return id(self._trace)


def get_opaque_trace_state(convention=None):
  """A token equal to another exactly when both were taken under the same trace (for
  libraries that check a value is used where it was made)."""
  del convention
  return _OpaqueTraceState(trace_mod.current_trace())


def unsafe_am_i_under_a_jit_DO_NOT_USE():
  """Whether tracing for `jit` (or `make_jaxpr`) is under way."""
  from tracejax._src.interpreters.staging import DynamicJaxprTrace
  return any(isinstance(t, DynamicJaxprTrace) for t in _trace_chain())


def unsafe_am_i_under_a_vmap_DO_NOT_USE():
  """Whether a `vmap` is under way."""
  from tracejax._src.interpreters.batching import BatchTrace
  return any(isinstance(t, BatchTrace) for t in _trace_chain())


def unsafe_get_axis_names_DO_NOT_USE():
  """The named axes (of `vmap(axis_name=...)`) in scope, innermost first."""
  from tracejax._src.interpreters.batching import BatchTrace
  return [t.axis_name for t in _trace_chain()
          if isinstance(t, BatchTrace) and t.axis_name is not None]


def nonempty_axis_env_DO_NOT_USE():
  """Whether any named axis is in scope."""
  return bool(unsafe_get_axis_names_DO_NOT_USE())


# ---- extend.backend ----

def get_backend(platform=None):
  """The PJRT client of `platform` (default: the default backend), started if needed.

  >>> get_backend().platform
  'cpu'
  """
  if platform is not None and not isinstance(platform, str):
    platform = getattr(platform, "platform", platform)
  return backend.get_client(platform)


def backends():
  """The started backends, `{platform: client}` (the default one is started first)."""
  backend.get_client()
  return dict(backend._clients)


def get_default_device():
  """The device computations go to by default."""
  return backend.default_device()


def clear_in_memory_compilation_cache():
  """Forget the compiled executables held in this process (the on-disk cache stays)."""
  backend.clear_caches()


def clear_backends():
  """Forget every compiled executable and traced function held in process (what a
  library calls after changing backend-related flags). The PJRT clients stay: live
  arrays keep using them."""
  from tracejax._src.jit import clear_caches
  clear_caches()


def get_compile_options(num_replicas, num_partitions, device_assignment=None, **kwargs):
  """jaxlib `CompileOptions` for a computation over `num_replicas` x `num_partitions`
  devices (`device_assignment`: None or a (replicas, partitions) array of device ids).
  """
  del kwargs
  if device_assignment is not None:
    from tracejax._src.runtime.backend import xc
    da = np.asarray(device_assignment, dtype=np.int64)
    if da.shape != (num_replicas, num_partitions):
      raise ValueError(f"get_compile_options: device_assignment has shape {da.shape}, "
                       f"expected {(num_replicas, num_partitions)}")
    device_assignment = xc.DeviceAssignment.create(da)
  return backend._compile_options(num_replicas, num_partitions, device_assignment)


def backend_xla_version(platform=None):
  """The XLA version number the backend reports (None when it reports none)."""
  return getattr(get_backend(platform), "xla_version", None)


# ---- extend.linear_util: the function-style transformations (`transformation2`) ----

class _Transformed:
  """The callable a function-style transformation makes: `gen(inner, *static, *args)`,
  where `inner` runs the wrapped function (hashable, so `lu.cache` keys on it)."""
  __slots__ = ("gen", "fun", "static", "store", "__weakref__")

  def __init__(self, gen, fun, static, store):
    self.gen, self.fun, self.static, self.store = gen, fun, tuple(static), store

  def __call__(self, *args, **kwargs):
    if self.store is None:
      return self.gen(self.fun.call_wrapped, *self.static, *args, **kwargs)
    return self.gen(self.fun.call_wrapped, self.store, *self.static, *args, **kwargs)

  def _key(self):
    return (self.gen, self.fun, self.static)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, _Transformed) and self._key() == other._key()

  @property
  def __name__(self):
    return getattr(self.fun, "__name__", "<transformed>")


def transformation2(gen, fun=None, *gen_static_args):
  """Apply a function-style transformation: `gen(f, *static_args, *args, **kwargs)`
  receives the wrapped function `f` and calls it itself (unlike `transformation`,
  whose `gen` is a generator). Returns a new `WrappedFun`.

  >>> from tracejax._src import linear_util as lu
  >>> def scale_out(f, k, x):
  ...   return k * f(x)
  >>> transformation2(scale_out, lu.wrap_init(lambda x: x + 1), 10).call_wrapped(1)
  20
  """
  import functools
  from tracejax._src import linear_util as lu
  if fun is None:
    return functools.wraps(gen)(functools.partial(transformation2, gen))
  return lu.wrap_init(_Transformed(gen, fun, gen_static_args, None))


def transformation_with_aux2(gen, fun=None, *gen_static_args, use_eq_store=False):
  """Like `transformation2`, with an output store: `gen(f, store, *static, *args)`
  calls `store.store(aux)`; returns `(wrapped, aux_thunk)`.

  >>> from tracejax._src import linear_util as lu
  >>> def count(f, store, x):
  ...   store.store("called"); return f(x)
  >>> g, aux = transformation_with_aux2(count, lu.wrap_init(lambda x: 2 * x))
  >>> g.call_wrapped(3), aux()
  (6, 'called')
  """
  import functools
  from tracejax._src import linear_util as lu
  del use_eq_store
  if fun is None:
    return functools.wraps(gen)(functools.partial(transformation_with_aux2, gen))
  store = lu.Store()
  return lu.wrap_init(_Transformed(gen, fun, gen_static_args, store)), lambda: store.val
