"""Optimizers for use with JAX (`jax.experimental.optimizers`, later
`jax.example_libraries.optimizers`: one implementation behind both names).

An optimizer is modeled as an ``(init_fun, update_fun, get_params)`` triple of
functions, where the component functions have these signatures:

::

  init_fun(params) -> opt_state
  update_fun(step, grads, opt_state) -> opt_state
  get_params(opt_state) -> params

with the invariant ``params == get_params(init_fun(params))``. ``opt_state`` is a
pytree of arrays, so it can be passed through `jit`, `vmap`, `grad` and friends.

The optimizers below are written for a single array and lifted to pytrees of
arrays by the `optimizer` decorator, which keeps the per-leaf states flattened in an
`OptimizerState(packed_state, tree_def, subtree_defs)`.
"""
import collections
import functools
from typing import Any, Callable, NamedTuple

import tracejax.numpy as jnp
from tracejax._src.tree_util import (
    register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_unflatten)
from tracejax._src.util import unzip2


# ---- the optimizer state pytree ----

OptimizerState = collections.namedtuple(
    "OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# Only `packed_state` holds arrays; the tree definitions are static structure, so that a
# jitted update step sees them as part of the pytree's type, not as traced values.
register_pytree_node(
    OptimizerState,
    lambda xs: ((xs.packed_state,), (xs.tree_def, xs.subtree_defs)),
    lambda data, xs: OptimizerState(xs[0], data[0], data[1]))


Array = Any
Params = Any    # arbitrary nests of arrays
State = Any     # the per-array state of an optimizer
Updates = Params
Step = int
Schedule = Callable[[Step], float]
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
  """The `(init_fn, update_fn, params_fn)` triple that every constructor returns."""
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def optimizer(opt_maker):
  """Decorator to make an optimizer defined for arrays generalize to containers.

  With this decorator, you can write init, update, and get_params functions that each
  operate only on single arrays, and convert them to corresponding functions that
  operate on pytrees of parameters:

  ::

    init_fun :: ParameterPytree ndarray -> OptimizerState
    update_fun :: OptimizerState -> OptimizerState
    get_params :: OptimizerState -> ParameterPytree ndarray

  Args:
    opt_maker: a function that returns an ``(init_fun, update_fun, get_params)``
      triple of functions that might only work with ndarrays.

  Returns:
    A function with the signature of `opt_maker` that returns an `Optimizer` triple
    working on arbitrary pytrees.
  """
  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, tree = tree_flatten(x0_tree)
      initial_states = [init(x0) for x0 in x0_flat]
      states_flat, subtrees = unzip2(map(tree_flatten, initial_states))
      return OptimizerState(tuple(states_flat), tree, tuple(subtrees))

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grad_flat, tree2 = tree_flatten(grad_tree)
      if tree2 != tree:
        raise TypeError("optimizer update function was passed a gradient tree that did "
                        "not match the parameter tree structure with which it was "
                        f"initialized: parameter tree {tree} and grad tree {tree2}.")
      states = map(tree_unflatten, subtrees, states_flat)
      new_states = map(functools.partial(update, i), grad_flat, states)
      new_states_flat, subtrees2 = unzip2(map(tree_flatten, new_states))
      for subtree, subtree2 in zip(subtrees, subtrees2):
        if subtree2 != subtree:
          raise TypeError("optimizer update function produced an output structure that "
                          f"did not match its input structure: input {subtree} and "
                          f"output {subtree2}.")
      return OptimizerState(tuple(new_states_flat), tree, tuple(subtrees))

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      states = map(tree_unflatten, subtrees, states_flat)
      params = map(get_params, states)
      return tree_unflatten(tree, list(params))

    return Optimizer(tree_init, tree_update, tree_get_params)
  return tree_opt_maker


# ---- optimizers ----

@optimizer
def sgd(step_size):
  """Construct optimizer triple for stochastic gradient descent.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule
      that maps the iteration index to a positive scalar.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0

  def update(i, g, x):
    return x - step_size(i) * g

  def get_params(x):
    return x
  return Optimizer(init, update, get_params)


@optimizer
def momentum(step_size, mass):
  """Construct optimizer triple for SGD with momentum.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    mass: positive scalar representing the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    x = x - step_size(i) * velocity
    return x, velocity

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def nesterov(step_size, mass):
  """Construct optimizer triple for SGD with Nesterov momentum.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    mass: positive scalar representing the momentum coefficient.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    x = x - step_size(i) * (mass * velocity + g)
    return x, velocity

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def adagrad(step_size, momentum=0.9):
  """Construct optimizer triple for Adagrad.

  Adaptive Subgradient Methods for Online Learning and Stochastic Optimization:
  http://www.jmlr.org/papers/volume12/duchi11a/duchi11a.pdf

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    momentum: optional, a positive scalar value for momentum.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    # Leaves never seen a nonzero gradient get no step instead of 0/0.
    g_sq_inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
    m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    return x, g_sq, m

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """Construct optimizer triple for RMSProp.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    gamma: Decay parameter.
    eps: Epsilon parameter.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    x = x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x, avg_sq_grad

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """Construct optimizer triple for RMSProp with momentum.

  This optimizer is separate from the rmsprop optimizer because it needs to keep
  track of additional parameters.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    gamma: Decay parameter.
    eps: Epsilon parameter.
    momentum: Momentum parameter.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1. - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    x = x - mom
    return x, avg_sq_grad, mom

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Construct optimizer triple for Adam.

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    b1: optional, a positive scalar value for beta_1, the exponential decay rate for
      the first moment estimates (default 0.9).
    b2: optional, a positive scalar value for beta_2, the exponential decay rate for
      the second moment estimates (default 0.999).
    eps: optional, a positive scalar value for epsilon, a small constant for numerical
      stability (default 1e-8).

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m  # first moment estimate
    v = (1 - b2) * jnp.square(g) + b2 * v  # second moment estimate
    # Bias correction; the powers are taken in the state's dtype so that float32
    # parameters are not promoted by a float64 `b1 ** i` under x64.
    mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
    vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
    x = x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps)
    return x, m, v

  def get_params(state):
    return state[0]
  return init, update, get_params


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Construct optimizer triple for AdaMax (a variant of Adam based on the infinity norm).

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    b1: optional, the exponential decay rate for the first moment estimates.
    b2: optional, the exponential decay rate for the weighted infinity norm.
    eps: optional, a small constant for numerical stability.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m  # first moment estimate
    u = jnp.maximum(b2 * u, jnp.abs(g))  # exponentially weighted infinity norm
    x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
    return x, m, u

  def get_params(state):
    return state[0]
  return init, update, get_params


class _StaticShape:
  """A parameter's original shape, kept in the SM3 state as pytree *structure* (no
  leaves), so a jitted update sees it as a Python tuple rather than traced ints."""

  def __init__(self, shape):
    self.shape = tuple(shape)

  def __repr__(self):
    return f"_StaticShape({self.shape})"


register_pytree_node(_StaticShape, lambda s: ((), s.shape), lambda shape, _: _StaticShape(shape))


@optimizer
def sm3(step_size, momentum=0.9):
  """Construct optimizer triple for SM3.

  Memory-Efficient Adaptive Optimization for Large-Scale Learning.
  https://arxiv.org/abs/1901.11150

  Args:
    step_size: positive scalar, or a callable representing a step size schedule.
    momentum: optional, a positive scalar value for momentum.

  Returns:
    An (init_fun, update_fun, get_params) triple.
  """
  step_size = make_schedule(step_size)

  def broadcast_into(ndim, x, axis):
    idx = [None] * ndim
    idx[axis] = slice(None)
    return x[tuple(idx)]

  def init(x0):
    x_shape = _StaticShape(jnp.shape(x0))
    x0 = jnp.atleast_1d(x0)
    # One accumulator vector per axis: O(sum of dims) memory instead of O(prod).
    vs = [jnp.zeros(sz, dtype=x0.dtype) for sz in x0.shape]
    return x0, jnp.zeros_like(x0), vs, x_shape

  def update(i, g, state):
    x, m, vs, x_shape = state
    g = jnp.reshape(g, x.shape)
    vs = [broadcast_into(g.ndim, v, ax) for ax, v in enumerate(vs)]
    accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
    accum_inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
    m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
    x = x - step_size(i) * m
    vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != j)) if x.ndim > 1
          else accum for j in range(x.ndim)]
    return x, m, vs, x_shape

  def get_params(state):
    x, _, _, x_shape = state
    return jnp.reshape(x, x_shape.shape)
  return init, update, get_params


# ---- learning rate schedules ----

def constant(step_size):
  """A schedule returning `step_size` at every step."""
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  """A schedule `step_size * decay_rate ** (i / decay_steps)`."""
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  """A schedule `step_size / (1 + decay_rate * i / decay_steps)`; with `staircase`,
  `i / decay_steps` is floored, so the rate drops every `decay_steps` steps."""
  if staircase:
    def schedule(i):
      return step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
  else:
    def schedule(i):
      return step_size / (1 + decay_rate * i / decay_steps)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  """A schedule decaying from `step_size` to `final_step_size` over `decay_steps` steps
  as `(1 - i / decay_steps) ** power`, then constant."""
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries, values):
  """A schedule returning `values[k]` for steps in `(boundaries[k-1], boundaries[k]]`.

  `values` must be one longer than `boundaries`.
  """
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("boundaries and values must be sequences")
  if not boundaries.shape[0] == values.shape[0] - 1:
    raise ValueError("boundaries length must be one shorter than values length")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule):
  """A callable schedule from a scalar step size (made `constant`) or a schedule."""
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(type(scalar_or_schedule))


# ---- utilities ----

def l2_norm(tree):
  """Compute the l2 norm of a pytree of arrays. Useful for weight decay."""
  leaves = tree_leaves(tree)
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
  """Clip gradients stored as a pytree of arrays to maximum norm `max_norm`."""
  norm = l2_norm(grad_tree)

  def normalize(g):
    return jnp.where(norm < max_norm, g, g * (max_norm / norm))
  return tree_map(normalize, grad_tree)


# ---- serialization ----

class JoinPoint:
  """Marks the boundary between two joined (nested) pytrees."""

  def __init__(self, subtree):
    self.subtree = subtree

  # Since pytrees are containers of numpy arrays, look iterable.
  def __iter__(self):
    yield self.subtree

  def __repr__(self):
    return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state):
  """Converts an OptimizerState to a marked pytree.

  Converts an OptimizerState to a marked pytree with the leaves of the outer pytree
  represented as JoinPoints to avoid losing information. This function is intended to
  be useful when serializing optimizer states.

  Args:
    opt_state: An OptimizerState

  Returns:
    A pytree with JoinPoint leaves that contain a second level of pytrees.
  """
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = map(tree_unflatten, subtree_defs, states_flat)
  sentinels = [JoinPoint(subtree) for subtree in subtrees]
  return tree_unflatten(tree_def, sentinels)


def pack_optimizer_state(marked_pytree):
  """Converts a marked pytree to an OptimizerState.

  The inverse of unpack_optimizer_state. Converts a marked pytree with the leaves of
  the outer pytree represented as JoinPoints back into an OptimizerState. This function
  is intended to be useful when deserializing optimizer states.

  Args:
    marked_pytree: A pytree containing JoinPoint leaves that hold more pytrees.

  Returns:
    An equivalent OptimizerState to the input argument.
  """
  sentinels, tree_def = tree_flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise TypeError("pack_optimizer_state expects a pytree whose leaves are all JoinPoint "
                    "objects, as produced by unpack_optimizer_state.")
  subtrees = [s.subtree for s in sentinels]
  states_flat, subtree_defs = unzip2(map(tree_flatten, subtrees))
  return OptimizerState(tuple(states_flat), tree_def, tuple(subtree_defs))
