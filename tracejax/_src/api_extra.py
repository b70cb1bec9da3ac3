"""Smaller transformations and contexts of today's JAX API.

`named_call`, `named_scope` (a per-thread name stack), `linear_transpose`,
`closure_convert`, `ensure_compile_time_eval` (a trace that evaluates
operations on concrete values eagerly, even while an outer `jit` traces) and
`checking_leaks` (finds tracers that outlived their transformation).
"""
import contextlib
import functools
import gc

import numpy as np

from tracejax._src import dtypes, tree_util, util
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import (Trace, Tracer, current_trace, eval_trace,
                                      set_current_trace)
from tracejax._src.interpreters import ad, staging


def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


# =============================================================================
# named_scope / named_call
# =============================================================================

# The stack lives in the staging layer, which records it in each equation it stages.
_name_stack = staging.name_stack


def current_name_stack():
  """The names of the enclosing `named_scope`s / `named_call`s, joined by '/'.

  >>> with named_scope("outer"), named_scope("inner"):
  ...   current_name_stack()
  'outer/inner'
  """
  return "/".join(_name_stack.names)


@contextlib.contextmanager
def named_scope(name):
  """A context manager that adds `name` to the name stack for its body.

  Args:
    name: a string. Scopes nest: the stack reads `outer/inner`.

  It changes no value: it only names the operations of its body. Staged equations
  keep the stack as their `source_info`, and the lowered program's locations read
  `jit(f)/name/op` (see `.lower(...).as_text(debug_info=True)`), as in JAX.

  >>> with named_scope("layer1"):
  ...   y = jnp.sin(1.0)
  """
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  _name_stack.names.append(name)
  try:
    yield
  finally:
    _name_stack.names.pop()


def named_call(fun, *, name=None):
  """`fun`, running inside `named_scope(name)` (default: the function's name).

  Args:
    fun: the function to name.
    name: the scope name; defaults to `fun.__name__`.

  As in JAX 0.10.2, the name appears in no jaxpr: it only extends the name stack.

  >>> f = named_call(jnp.sin, name="my_sin")
  >>> f(0.0)
  DeviceArray(0., dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"named_call expects a callable, got {fun!r}")
  if name is None:
    name = util.fun_name(fun)
  if not isinstance(name, str):
    raise TypeError(f"named_call: name must be a string, got {name!r}")

  @functools.wraps(fun)
  def named_f(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return named_f


# =============================================================================
# linear_transpose
# =============================================================================

# Linear in each operand separately, not jointly: two linear operands make it nonlinear.
_BILINEAR = frozenset({"mul", "dot_general", "conv_general_dilated"})


def _check_linear(jaxpr, linear_in):
  """Raise unless `jaxpr` is linear in the invars flagged by `linear_in`."""
  linear = {v for v, l in zip(jaxpr.invars, linear_in) if l}
  for eqn in jaxpr.eqns:
    flags = [type(v) is ir.Var and v in linear for v in eqn.invars]
    if not any(flags):
      continue
    name = eqn.primitive.name
    if "call_jaxpr" in eqn.params:
      _check_linear(eqn.params["call_jaxpr"], flags)
    elif eqn.primitive not in ad.primitive_transposes:
      raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                f"'{name}' not implemented")
    if (name in _BILINEAR and sum(flags) > 1) or (name == "div" and flags[1]):
      raise TypeError(f"linear_transpose requires a linear function, but the primitive "
                      f"'{name}' combines the inputs nonlinearly (e.g. multiplies an "
                      "input by an input, or divides by one).")
    linear.update(eqn.outvars)


def _is_float_or_complex(dt):
  return dtypes.issubdtype(dt, np.inexact)


def linear_transpose(fun, *primals, reduce_axes=()):
  """The transpose of the linear function `fun`.

  Args:
    fun: a function linear in its arguments (constant offsets are ignored).
    *primals: example arguments (arrays or `ShapeDtypeStruct`s) fixing the
      shapes and dtypes; their values are not used.
    reduce_axes: accepted for compatibility (ignored, as in JAX today).

  Returns `f_t(cotangent)`: given a value shaped like `fun`'s output, the tuple
  of cotangents of `primals`.

  >>> f_t = linear_transpose(lambda x, y: 2. * x + y.sum(), 1., jnp.ones(3))
  >>> f_t(1.)
  (DeviceArray(2., dtype=float32), DeviceArray([1., 1., 1.], dtype=float32))
  """
  if not callable(fun):
    raise TypeError("the first argument must be callable")
  del reduce_axes
  leaves, in_tree = tree_util.tree_flatten(primals)
  in_avals = [_aval(x) for x in leaves]
  store = []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    out_leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return out_leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat, in_avals)
  out_tree = store[0]
  out_avals = [v.aval for v in jaxpr.outvars]
  in_dts = [a.dtype for a in in_avals]
  out_dts = [a.dtype for a in out_avals]
  if not ((all(map(_is_float_or_complex, in_dts)) and all(map(_is_float_or_complex, out_dts)))
          or (all(dtypes.issubdtype(d, np.integer) for d in in_dts)
              and all(dtypes.issubdtype(d, np.integer) for d in out_dts))):
    raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                    "complex], and integer -> integer functions, but got "
                    f"{in_dts} -> {out_dts}.")
  _check_linear(jaxpr, [True] * len(jaxpr.invars))

  def transposed_fun(out_cotangent):
    ct_leaves, ct_tree = tree_util.tree_flatten(out_cotangent)
    ok = ct_tree == out_tree and all(
        tuple(_aval(c).shape) == tuple(a.shape)
        and dtypes.canonicalize_dtype(_aval(c).dtype) == a.dtype
        for c, a in zip(ct_leaves, out_avals))
    if not ok:
      raise TypeError("cotangent type does not match function output, expected "
                      f"{tuple(out_avals)} but got {ct_leaves}")
    ct_leaves = [_cast(c, a.dtype) for c, a in zip(ct_leaves, out_avals)]
    cts = ad.backward_pass(jaxpr, consts, ct_leaves)
    cts = [ad.zeros_like_aval(a) if type(c) is ad.Zero else _as_array(c, a.dtype)
           for c, a in zip(cts, in_avals)]
    return tree_util.tree_unflatten(in_tree, cts)

  return transposed_fun


def _as_array(x, dtype):
  if isinstance(x, Tracer) or type(x).__name__ == "Array":
    return _cast(x, dtype)
  from tracejax._src.api import device_put
  return device_put(np.asarray(x, dtype))


def _cast(x, dtype):
  if _aval(x).dtype == dtype:
    return x
  from tracejax._src.lax import elementwise
  return elementwise.convert_element_type(x, dtype)


# =============================================================================
# closure_convert
# =============================================================================

def closure_convert(fun, *example_args):
  """Hoist the traced values `fun` closes over into explicit arguments.

  Args:
    fun: a function of arrays, possibly closing over tracers of an enclosing
      transformation.
    *example_args: arguments fixing the shapes and dtypes `fun` is traced at.

  Returns `(converted_fun, consts)`: `converted_fun(*args, *consts)` computes
  `fun(*args)`, and `consts` is the list of hoisted values (empty when `fun`
  closes over no tracer). Useful for `custom_vjp` rules that must see every
  differentiable input.

  >>> f, consts = closure_convert(lambda x: x * 2., 1.)
  >>> consts, f(3.)
  ([], DeviceArray(6., dtype=float32))
  """
  if not callable(fun):
    raise TypeError("the first argument must be callable")
  leaves, in_tree = tree_util.tree_flatten(example_args)
  store = []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    out_leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return out_leaves

  jaxpr, consts = staging.trace_to_jaxpr(flat, [_aval(x) for x in leaves])
  out_tree = store[0]
  hoist = [isinstance(c, Tracer) for c in consts]
  hoisted = [c for c, h in zip(consts, hoist) if h]
  kept = [c for c, h in zip(consts, hoist) if not h]
  n_in = len(leaves)

  def converted_fun(*args_and_consts):
    split = len(args_and_consts) - len(hoisted)
    args, hc = args_and_consts[:split], args_and_consts[split:]
    arg_leaves, tree = tree_util.tree_flatten(tuple(args))
    if tree != in_tree or len(arg_leaves) != n_in:
      raise TypeError(f"closure-converted function expects arguments of structure "
                      f"{in_tree} followed by {len(hoisted)} hoisted values, got {tree}")
    hi, ki = iter(hc), iter(kept)
    all_consts = [next(hi) if h else next(ki) for h in hoist]
    outs = ir.eval_jaxpr(jaxpr, all_consts, *arg_leaves)
    return tree_util.tree_unflatten(out_tree, outs)

  converted_fun.__name__ = f"closure_converted({util.fun_name(fun)})"
  return converted_fun, hoisted


# =============================================================================
# ensure_compile_time_eval
# =============================================================================

class CompileTimeEvalTrace(Trace):
  """Evaluates primitives whose operands are all concrete right away; anything with a
  tracer operand goes to the enclosing trace, as if the context were not there."""

  def __init__(self, parent):
    self.parent = parent
    self.level = parent.level

  def process_primitive(self, primitive, args, params):
    if any(isinstance(x, Tracer) for x in args):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    with set_current_trace(eval_trace):
      return primitive.bind(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval():
  """A context in which operations on concrete values run eagerly, even under `jit`.

  Inside a jitted function, values computed only from constants are then concrete
  Arrays (usable in Python control flow); operations involving the jitted
  function's arguments are still traced.

  >>> @jit
  ... def f(x):
  ...   with ensure_compile_time_eval():
  ...     y = jnp.sin(2.)          # a concrete Array, computed now
  ...   return x + y
  """
  parent = current_trace()
  if parent is eval_trace:
    yield
    return
  with set_current_trace(CompileTimeEvalTrace(parent)):
    yield


# =============================================================================
# checking_leaks
# =============================================================================

def _active_traces():
  t, out = current_trace(), set()
  while t is not None:
    out.add(id(t))
    t = getattr(t, "parent", None)
  return out


def _live_tracers():
  gc.collect()
  return [o for o in gc.get_objects() if isinstance(o, Tracer)]


# The leak checks themselves live in the staging layer, so that `trace_to_jaxpr` and
# `vmap` can run them when `jax_check_tracer_leaks` is on.
_referrer_lines = staging._referrer_lines
_held_from_outside = staging._held_from_outside


def find_leaked_tracers(before_ids=frozenset()):
  """Tracers alive now whose transformation has finished (their trace is not active)
  and that something outside the tracing machinery refers to, excluding those whose
  ids are in `before_ids`."""
  active = _active_traces()
  live = _live_tracers()
  candidates = [t for t in live if id(t) not in before_ids
                and getattr(t, "_trace", None) is not None and id(t._trace) not in active]
  leaked = [t for t in candidates if _held_from_outside(t, live, candidates)]
  del live, candidates
  return leaked


leak_error = staging.leak_error
check_trace_for_leaks = staging.check_trace_for_leaks


@contextlib.contextmanager
def checking_leaks():
  """A context that raises if a transformation inside it leaked a tracer.

  Sets the `jax_check_tracer_leaks` flag for its body. On leaving it, any tracer
  created inside that is still referenced (e.g. stored in a global list by a
  jitted function) although its transformation has finished raises an Exception
  "Leaked trace ..." naming the tracer and what refers to it.

  >>> with checking_leaks():
  ...   jit(lambda x: x + 1)(1.)    # fine: nothing leaks
  """
  before = frozenset(id(t) for t in _live_tracers())
  with config._override("jax_check_tracer_leaks", True):
    yield
  leaked = find_leaked_tracers(before)
  if leaked:
    raise leak_error(leaked)
