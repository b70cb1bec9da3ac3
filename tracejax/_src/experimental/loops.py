"""Loops is an experimental module for syntactic sugar for loops and control-flow
(`jax.experimental.loops`, 2020).

By default, Python loops and conditionals are executed and inlined (unrolled) during
tracing. With this module they become structured control flow::

  with loops.Scope() as s:
    s.arr = np.zeros(5)  # Create the mutable state of the loop as `scope` fields.
    for i in s.range(s.arr.shape[0]):
      s.arr = ops.index_update(s.arr, i, s.arr[i] + 2.)
      for _ in s.cond_range(i % 2 == 0):  # Conditionals as loops with 0 or 1 iterations
        s.arr = ops.index_update(s.arr, i, s.arr[i] + 1.)

How it works: iterating a `Scope.range`/`cond_range`/`while_range` yields exactly
once. On that first `next()` the scope opens a fresh staging trace, replaces every
scope field by an abstract argument of that trace, and hands back the loop index as
another argument; the Python body then runs once and is recorded as a jaxpr. On the
second `next()` the trace is closed and the jaxpr becomes the body of a `lax.scan`
(`range`), `lax.cond` (`cond_range`) or `lax.while_loop` (`while_range`) applied to
the fields' values before the loop; the fields are then set to its results. Values
the body closes over (including tracers of enclosing transformations) become constant
operands of the loop, so `jit`, `vmap`, `jvp` and `grad` all work (except reverse-mode
differentiation of `while_range`, which `lax.while_loop` does not support).

Restrictions (checked): the body must not exit prematurely (`break`, `return`, an
exception); no new scope field may be created inside a loop; a `while_range`
condition must not modify the scope; the index of a `cond_range`/`while_range` must
not be used; `range` bounds must be concrete integers. Values computed in the body,
including the loop index, must not be used after the loop, except through the scope.
"""
import traceback

import numpy as np

from tracejax._src import tree_util
from tracejax._src.control_flow import cond as _cond
from tracejax._src.control_flow import scan as _scan
from tracejax._src.control_flow import while_loop as _while_loop
from tracejax._src.control_flow.common import aval_of
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer, concrete_or_error, current_trace, set_current_trace
from tracejax._src.interpreters.staging import DynamicJaxprTrace
import tracejax.numpy as jnp

_INTERNAL = ("_mutable_state", "_active_ranges", "_subtraces")


class Scope:
  """A scope context manager to keep the state of loop bodies for functionalization.

  Usage::

    with Scope() as s:
      s.data = 0.
      for i in s.range(5):
        s.data += 1.
      return s.data
  """

  def __init__(self):
    object.__setattr__(self, "_mutable_state", {})  # name -> value of each scope field
    object.__setattr__(self, "_active_ranges", [])  # the ranges being traced, innermost last
    object.__setattr__(self, "_subtraces", [])      # (trace, context) opened by this scope

  # ---- iterators ----

  def range(self, first, second=None, third=None):
    """Creates an iterator for bounded iterations to be functionalized.

    The body is converted to a `lax.scan`, for which all JAX transformations work.
    The `first`, `second`, and `third` arguments must be integer literals.

    Usage::

      range(5)  # start=0, end=5, step=1
      range(1, 5)  # start=1, end=5, step=1
      range(1, 5, 2)  # start=1, end=5, step=2

      s.out = 1.
      for i in scope.range(5):
        s.out += 1.
    """
    bounds = [_literal_int(b, name) for b, name in
              ((first, "first"), (second, "second"), (third, "third")) if b is not None]
    if third is not None:
      start, stop, step = bounds
    elif second is not None:
      (start, stop), step = bounds, 1
    else:
      start, stop, step = 0, bounds[0], 1
    if step == 0:
      raise ValueError("Scope.range() arg 3 must not be zero")
    return _BodyTracer(self, _BoundedLoopBuilder(start, stop, step))

  def cond_range(self, pred):
    """Creates a conditional iterator with 0 or 1 iterations based on the boolean.

    The body is converted to a `lax.cond`. All JAX transformations work.

    Usage::

      for _ in scope.cond_range(s.field < 0.):
        s.field = - s.field
    """
    if len(np.shape(pred)) != 0:
      raise TypeError(f"Pred must be a scalar, got {pred} of shape {np.shape(pred)}.")
    try:
      pred_dtype = np.dtype(pred.dtype) if hasattr(pred, "dtype") else np.result_type(pred)
    except TypeError as err:
      raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if pred_dtype.kind != 'b':
      if pred_dtype.kind not in 'iuf':
        raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
      pred = pred != 0
    return _BodyTracer(self, _CondBuilder(pred))

  def while_range(self, cond_func):
    """Creates an iterator that continues as long as `cond_func` returns true.

    The body is converted to a `lax.while_loop`. The `grad` transformation does not
    work.

    Usage::

      for _ in scope.while_range(lambda: s.loss > 1.e5):
        s.loss = loss(...)

    Args:
      cond_func: a lambda with no arguments, the condition for the "while".
    """
    if not callable(cond_func):
      raise TypeError(f"while_range expects a zero-argument callable, got {cond_func!r}.")
    return _BodyTracer(self, _WhileBuilder(cond_func))

  # ---- range bookkeeping ----

  def _push_range(self, range_):
    for ar in self._active_ranges:
      if ar is range_:
        raise ValueError("Range is reused nested inside itself.")
    self._active_ranges.append(range_)

  def _pop_range(self, range_):
    if not (self._active_ranges and range_ is self._active_ranges[-1]):
      self._error_premature_exit_range()
    self._active_ranges.pop()

  def _error_premature_exit_range(self):
    """Raises the error about a premature exit from a range (break, return, ...)."""
    msg = ("Some ranges have exited prematurely. The innermost such range is at\n{}\n"
           "A loop body over a Scope range must not exit with break, return or an "
           "exception.")
    raise ValueError(msg.format(self._active_ranges[-1].location()))

  # ---- scope data ----

  def __getattr__(self, key):
    """Accessor for scope data.

    Called only if the attribute is not found, which is the case for scope data, kept
    in `self._mutable_state`.
    """
    if key.startswith("__") or key in _INTERNAL:
      raise AttributeError(key)  # copy/pickle probing an uninitialised object
    try:
      return self._mutable_state[key]
    except KeyError:
      raise AttributeError(f"Reading uninitialized data '{key}' from the scope.") from None

  def __setattr__(self, key, value):
    """Update scope data to be functionalized. Called for *all* attribute setting."""
    if key in _INTERNAL:
      object.__setattr__(self, key, value)
      return
    if self._active_ranges and key not in self._mutable_state:
      raise ValueError(f"New mutable state '{key}' cannot be created inside a loop.")
    self._mutable_state[key] = value

  def __delattr__(self, key):
    if self._active_ranges:
      raise ValueError(f"Mutable state '{key}' cannot be deleted inside a loop.")
    try:
      del self._mutable_state[key]
    except KeyError:
      raise AttributeError(key) from None

  # ---- context manager ----

  def __enter__(self):
    return self

  def __exit__(self, exc_type, exc_val, exc_tb):
    try:
      if exc_type is None and self._active_ranges:
        # The body of some range was left without finishing its iteration: `break`,
        # or a `return` from inside the `with`.
        self._error_premature_exit_range()
      return False  # re-raise any exception from the body
    finally:
      # Whatever happened, leave the trace context as we found it.
      while self._subtraces:
        self._end_subtrace()
      self._active_ranges.clear()

  # ---- nested traces for loop bodies ----

  def _start_subtrace(self):
    """Opens a staging trace for a loop body, nested in the current trace."""
    trace = DynamicJaxprTrace(current_trace())
    ctx = set_current_trace(trace)
    ctx.__enter__()
    self._subtraces.append((trace, ctx))
    return trace

  def _end_subtrace(self):
    _, ctx = self._subtraces.pop()
    ctx.__exit__(None, None, None)


def _literal_int(x, name):
  if isinstance(x, Tracer):
    x = concrete_or_error(
        None, x, f"The {name} argument of Scope.range must be an integer literal; for "
        "bounds that are only known at run time use Scope.while_range.")
  try:
    v = int(x)
  except (TypeError, ValueError):
    raise TypeError(f"The {name} argument of Scope.range must be an integer literal, "
                    f"got {x!r}.") from None
  if v != x:
    raise TypeError(f"The {name} argument of Scope.range must be an integer literal, "
                    f"got {x!r}.")
  return v


class _BodyTracer:
  """Traces the body of the loop and builds a functional control-flow representation.

  This class is also an iterator: only the first iteration is traced.
  """

  def __init__(self, scope, loop_builder):
    self.scope = scope
    self.loop_builder = loop_builder
    self.first_iteration = True
    # Where the range was created, for the premature-exit error (without this frame
    # and the Scope method's).
    self.stack = traceback.StackSummary.from_list(traceback.extract_stack()[:-2])
    self.trace = None

  def location(self):
    """A multi-line string representing the source location of the range."""
    return "   ".join(self.stack.format())

  def __iter__(self):
    """Called before starting the first iteration."""
    self.first_iteration = True  # in case the range object is reused
    return self

  def __next__(self):
    if self.first_iteration:
      self.first_iteration = False
      self.scope._push_range(self)
      self.start_tracing_body()
      return self._index_var
    if not (self.scope._active_ranges and self.scope._active_ranges[-1] is self):
      self.scope._error_premature_exit_range()  # an inner range did not finish
    self.end_tracing_body()
    self.scope._pop_range(self)
    raise StopIteration  # trace only one iteration

  def start_tracing_body(self):
    """Called upon starting the tracing of the loop body."""
    state = self.scope._mutable_state
    self.carried_state_names = sorted(state.keys())
    init = tuple(state[name] for name in self.carried_state_names)
    self.init_leaves, self.carried_tree = tree_util.tree_flatten(init)
    try:
      in_avals = [aval_of(x) for x in self.init_leaves]
    except TypeError as e:
      raise TypeError(f"Scope fields carried through a loop must be JAX types: {e}") from e
    self.trace = self.scope._start_subtrace()
    # Every field is carried: its value in the body is an argument of the body's jaxpr.
    arg_tracers = [self.trace.new_arg(a) for a in in_avals]
    for name, val in zip(self.carried_state_names,
                         tree_util.tree_unflatten(self.carried_tree, arg_tracers)):
      state[name] = val
    self._index_var = self.trace.new_arg(avals_mod.ShapedArray((), np.int32))

  def end_tracing_body(self):
    """Called when we are done tracing one iteration of the body."""
    scope = self.scope
    out = tuple(scope._mutable_state[name] for name in self.carried_state_names)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    jaxpr, consts = self.trace.to_jaxpr(out_leaves)
    scope._end_subtrace()  # the loop itself is built in the enclosing trace
    if out_tree != self.carried_tree:
      raise TypeError("The loop body changed the structure of the scope fields "
                      f"{self.carried_state_names}: from {self.carried_tree} to {out_tree}.")
    index_var = jaxpr.invars[-1]
    if not self.loop_builder.can_use_index_var():
      if _uses_var(jaxpr, index_var):
        raise ValueError("Body of cond_range or while_range should not use the index "
                         "variable returned by iterator.")
      jaxpr = ir.Jaxpr(jaxpr.constvars, jaxpr.invars[:-1], jaxpr.outvars, jaxpr.eqns)
    out_vals = self.loop_builder.build_output_vals(
        scope, self.carried_state_names, self.carried_tree, self.init_leaves, jaxpr, consts)
    for name, val in zip(self.carried_state_names,
                         tree_util.tree_unflatten(self.carried_tree, list(out_vals))):
      scope._mutable_state[name] = val


def _uses_var(jaxpr, var):
  return any(v is var for eqn in jaxpr.eqns for v in eqn.invars) or \
      any(v is var for v in jaxpr.outvars)


def _body_fun(jaxpr, consts):
  def body(*args):
    return list(ir.eval_jaxpr(jaxpr, consts, *args))
  return body


class _LoopBuilder:
  """Abstract superclass: builds the control-flow primitive from a traced body."""

  def can_use_index_var(self):
    """Whether this kind of range can use the loop index variable."""
    raise NotImplementedError

  def build_output_vals(self, scope, carried_state_names, carried_tree, init_vals,
                        body_jaxpr, body_consts):
    """Builds the output values for the loop carried state.

    Args:
      scope: the current Scope object.
      carried_state_names: the names of the carried state variables.
      carried_tree: the PyTreeDef of the tuple of carried state values.
      init_vals: the initial values of the carried state, flat.
      body_jaxpr: the jaxpr of the body: carried state (then the loop index, if used)
        to carried state; closed-over values are its constvars.
      body_consts: the values of the body's constvars.

    Returns:
      The final values of the carried state, flat.
    """
    raise NotImplementedError


class _BoundedLoopBuilder(_LoopBuilder):
  """Builds a `lax.scan` over `range(start, stop, step)`."""

  def __init__(self, start, stop, step):
    self.start, self.stop, self.step = start, stop, step

  def can_use_index_var(self):
    return True

  def build_output_vals(self, scope, carried_state_names, carried_tree, init_vals,
                        body_jaxpr, body_consts):
    body = _body_fun(body_jaxpr, body_consts)
    indices = np.arange(self.start, self.stop, self.step, dtype=np.int32)

    def step(carry, i):
      return body(*carry, i), None
    if len(indices) == 0:
      return list(init_vals)
    carry, _ = _scan(step, list(init_vals), jnp.asarray(indices))
    return carry


class _CondBuilder(_LoopBuilder):
  """Builds a `lax.cond` whose false branch passes the state through."""

  def __init__(self, pred):
    self.pred = pred

  def can_use_index_var(self):
    return False

  def build_output_vals(self, scope, carried_state_names, carried_tree, init_vals,
                        body_jaxpr, body_consts):
    body = _body_fun(body_jaxpr, body_consts)
    return _cond(self.pred, lambda c: body(*c), lambda c: list(c), list(init_vals))


class _WhileBuilder(_LoopBuilder):
  """Builds a `lax.while_loop`; the condition is traced reading the scope fields."""

  def __init__(self, cond_func):
    self.cond_func = cond_func

  def can_use_index_var(self):
    return False

  def build_output_vals(self, scope, carried_state_names, carried_tree, init_vals,
                        body_jaxpr, body_consts):
    body = _body_fun(body_jaxpr, body_consts)
    state = scope._mutable_state

    # cond_func takes no arguments and reads the scope; lax.while_loop's condition takes
    # the carried values, so they are installed in the scope while it is traced.
    def cond_func_wrapped(carry):
      vals = tree_util.tree_unflatten(carried_tree, list(carry))
      for name, val in zip(carried_state_names, vals):
        state[name] = val
      res = self.cond_func()
      for name, val in zip(carried_state_names, vals):
        if state.get(name) is not val:
          raise ValueError(f"Conditional function modifies scope.{name} field.")
      return res

    saved = dict(state)
    try:
      return _while_loop(cond_func_wrapped, lambda c: body(*c), list(init_vals))
    finally:
      state.clear()
      state.update(saved)
