"""Primitives, traces and tracers, and the trace context ("stackless" dispatch).

There is one *current trace* (per thread). `Primitive.bind` hands the
primitive to it. A trace that transforms (JVP, batching) runs its rules with
the current trace set to its *parent*, so the primitives its rules bind go one
level out. A trace treats any value that is not one of its own tracers as a
constant: that is all "lifting" is. `EvalTrace` is the root: it runs `impl`.
"""
import contextlib
import threading
import weakref

import numpy as np

from tracejax._src import errors
from tracejax._src.core import avals as avals_mod


class Primitive:
  """A named operation: the unit that every transformation has a rule for."""
  multiple_results = False
  call_primitive = False
  map_primitive = False
  # `rule(primitive, args, params)`, tried first by `bind`; NotImplemented: bind as
  # usual. prng.py sets it on the structural primitives, which move key arrays
  # (an extended dtype) by applying themselves to the keys' uint32 data.
  extended_rule = None

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return self.name

  def bind(self, *args, **params):
    """Apply the primitive to `args` in the current trace."""
    if self.extended_rule is not None:
      out = self.extended_rule(self, args, params)
      if out is not NotImplemented:
        return out
    return _ctx.trace.process_primitive(self, args, params)

  def bind_with_trace(self, trace, args, params):
    with set_current_trace(trace):
      return trace.process_primitive(self, args, params)

  def def_impl(self, impl):
    """Set the concrete evaluation rule; returns `impl` (usable as a decorator)."""
    self.impl = impl
    return impl

  def def_abstract_eval(self, abstract_eval):
    """Set the shape/dtype rule `(*avals, **params) -> aval(s)`; returns it."""
    self.abstract_eval = abstract_eval
    return abstract_eval

  def impl(self, *args, **params):
    raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

  def abstract_eval(self, *args, **params):
    raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

  def out_avals(self, avals_in, params):
    """Abstract evaluation, always as a list of ShapedArrays."""
    out = self.abstract_eval(*avals_in, **params)
    if self.multiple_results:
      out = [avals_mod.raise_to_shaped(a) for a in out]
    else:
      out = [avals_mod.raise_to_shaped(out)]
    if sharding_rule is not None:   # set once a mesh with Explicit axes exists
      out = sharding_rule(self, avals_in, params, out)
    return out


# The sharding-in-types rule (sharding_explicit.py installs it when a mesh with Explicit
# axes is made): `(primitive, avals_in, params, avals_out) -> avals_out`. None costs nothing.
sharding_rule = None


# ---- traces ----

class Trace:
  """An interpreter of primitives. `parent` is where its rules' primitives go."""
  parent = None
  level = 0

  def process_primitive(self, primitive, args, params):
    raise NotImplementedError

  def __repr__(self):
    return f"{type(self).__name__}(level={self.level}/0)"


class EvalTrace(Trace):
  """The root trace: primitives applied to concrete values run their impl."""

  def process_primitive(self, primitive, args, params):
    for x in args:
      if isinstance(x, Tracer):
        raise errors.UnexpectedTracerError(x)
    return primitive.impl(*args, **params)


eval_trace = EvalTrace()


class _TraceContext(threading.local):
  def __init__(self):
    self.trace = eval_trace


_ctx = _TraceContext()


def current_trace():
  return _ctx.trace


class OpaqueTraceState:
  """A token of the trace that was current when it was made (`get_opaque_trace_state`):
  two tokens are equal exactly when they name the same live trace. The trace is held
  weakly, so a token never keeps a finished trace alive."""
  __slots__ = ("_ref",)

  def __init__(self, trace):
    self._ref = weakref.ref(trace)

  def __eq__(self, other):
    return (isinstance(other, OpaqueTraceState) and self._ref() is not None
            and self._ref() is other._ref())

  def __hash__(self):
    return id(self._ref())


def get_opaque_trace_state(convention=None):
  """A comparable token of the current trace (libraries such as flax compare the token
  taken when state was created with the one current when it is used, to catch state
  leaking across `jit`/`grad`/`vmap` boundaries).

  Args:
    convention: the caller's name (accepted as JAX does; it changes nothing here).

  Example:
    >>> get_opaque_trace_state() == get_opaque_trace_state()
    True
  """
  del convention
  return OpaqueTraceState(_ctx.trace)


def _no_hook(tracing):
  pass


# Told whether the thread is now inside a transformation; the jit module points it
# at the C++ dispatcher's flag, so jitted calls under a trace never take its fast path.
on_trace_change = _no_hook


@contextlib.contextmanager
def set_current_trace(trace):
  prev = _ctx.trace
  _ctx.trace = trace
  on_trace_change(trace is not eval_trace)
  try:
    yield trace
  finally:
    _ctx.trace = prev
    on_trace_change(prev is not eval_trace)


def bind(primitive, *args, **params):
  rule = getattr(primitive, "extended_rule", None)
  if rule is not None:  # as in Primitive.bind
    out = rule(primitive, args, params)
    if out is not NotImplemented:
      return out
  return _ctx.trace.process_primitive(primitive, args, params)


# ---- tracers ----

class Tracer:
  """A value seen by a trace. Operators and array methods are attached by jax.numpy."""
  __slots__ = ("_trace",)
  __array_priority__ = 1000

  @property
  def aval(self):
    raise NotImplementedError

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)

  def to_concrete_value(self):
    """The concrete value behind this tracer, if the trace knows one, else None."""
    return None

  def __repr__(self):
    return f"Traced<{self.aval!r}>with<{self._trace}>"

  def __len__(self):
    return len(self.aval)

  def __bool__(self):
    v = self.to_concrete_value()
    if v is None:
      raise errors.TracerBoolConversionError(self)
    return bool(v)

  def __int__(self):
    v = self.to_concrete_value()
    if v is None:
      raise errors.TracerIntegerConversionError(self)
    return int(v)

  def __index__(self):
    v = self.to_concrete_value()
    if v is None or not np.issubdtype(self.dtype, np.integer):
      raise errors.TracerIntegerConversionError(self)
    return int(v)

  def __float__(self):
    v = self.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(self, "float() of a traced value.")
    return float(v)

  def __complex__(self):
    v = self.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(self, "complex() of a traced value.")
    return complex(v)

  def __array__(self, dtype=None, copy=None):
    v = self.to_concrete_value()
    if v is None:
      raise errors.TracerArrayConversionError(self)
    return np.asarray(v, dtype)

  __hash__ = None  # tracers are unhashable, like arrays

  def __setitem__(self, idx, val):
    raise TypeError(
        f"'{type(self).__name__}' object does not support item assignment. JAX arrays "
        "are immutable; perhaps you want jax.ops.index_update or jax.ops.index_add "
        "instead? (or x.at[idx].set(val))")

  def __reduce__(self):
    raise TypeError("Tracers cannot be pickled.")


def is_concrete(x):
  return not isinstance(x, Tracer) or x.to_concrete_value() is not None


def concrete_or_error(fn, x, context=""):
  """`fn(x)` on the concrete value of `x`, or a ConcretizationTypeError."""
  if isinstance(x, Tracer):
    v = x.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(x, context)
    x = v
  return fn(x) if fn is not None else x
