"""A composable gradient processing and optimization library for JAX
(`jax.experimental.optix`, 2020; the ancestor of Optax).

Each transformation is an `InitUpdate(init, update)` pair:

* `init(params) -> state` initialises a (possibly empty) set of statistics;
* `update(updates, state) -> (updates, new_state)` transforms a gradient pytree.

`chain` builds a custom optimizer from a sequence of transformations;
`apply_updates` adds the final updates to the parameters. Separating the gradient
transformations from the parameter update lets several updates be combined, e.g. in
multi-task settings.
"""
import collections

import tracejax.numpy as jnp
from tracejax._src.tree_util import (
    tree_leaves, tree_map, tree_structure, tree_unflatten)


def _random():
  from tracejax import random
  return random


# ---- composable gradient transformations ----

InitUpdate = collections.namedtuple("InitUpdate", ("init", "update"))
ClipState = collections.namedtuple("ClipState", "")


def clip(max_delta):
  """Clip updates element-wise, to be between -max_delta and +max_delta.

  Args:
    max_delta: the maximum absolute value for each element in the update.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(_):
    return ClipState()

  def update_fn(updates, state):
    updates = tree_map(lambda g: jnp.clip(g, -max_delta, max_delta), updates)
    return updates, state
  return InitUpdate(init_fn, update_fn)


def global_norm(items):
  """The l2 norm of all leaves of a pytree together."""
  return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in tree_leaves(items)))


ClipByGlobalNormState = collections.namedtuple("ClipByGlobalNormState", "")


def clip_by_global_norm(max_norm):
  """Clip updates using their global norm.

  References:
    [Pascanu et al, 2012](https://arxiv.org/abs/1211.5063)

  Args:
    max_norm: the maximum global norm for an update.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(_):
    return ClipByGlobalNormState()

  def update_fn(updates, state):
    g_norm = global_norm(updates)
    trigger = g_norm < max_norm
    updates = tree_map(lambda t: jnp.where(trigger, t, t * (max_norm / g_norm)), updates)
    return updates, state
  return InitUpdate(init_fn, update_fn)


TraceState = collections.namedtuple("TraceState", "trace")


def trace(decay, nesterov):
  """Compute a trace of past updates (momentum): `t = g + decay * t`.

  Args:
    decay: the decay rate for the trace of past updates.
    nesterov: whether to use Nesterov momentum (`g + decay * t` of the new trace).

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(params):
    return TraceState(trace=tree_map(jnp.zeros_like, params))

  def update_fn(updates, state):
    def f(g, t):
      return g + decay * t
    update_trace = tree_map(f, updates, state.trace)
    updates = tree_map(f, updates, update_trace) if nesterov else update_trace
    return updates, TraceState(trace=update_trace)
  return InitUpdate(init_fn, update_fn)


ScaleByRmsState = collections.namedtuple("ScaleByRmsState", "nu")


def _update_moment(updates, moments, decay, order):
  return tree_map(lambda g, t: (1 - decay) * (g ** order) + decay * t, updates, moments)


def scale_by_rms(decay=0.9, eps=1e-8):
  """Rescale updates by the root of the exp. moving avg of the square.

  References:
    [Hinton](www.cs.toronto.edu/~tijmen/csc321/slides/lecture_slides_lec6.pdf)

  Args:
    decay: decay rate for the exponentially weighted average of squared grads.
    eps: term added to the denominator to improve numerical stability.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(params):
    return ScaleByRmsState(nu=tree_map(jnp.zeros_like, params))  # second moment

  def update_fn(updates, state):
    nu = _update_moment(updates, state.nu, decay, 2)
    updates = tree_map(lambda g, n: g / (jnp.sqrt(n + eps)), updates, nu)
    return updates, ScaleByRmsState(nu=nu)
  return InitUpdate(init_fn, update_fn)


ScaleByRStdDevState = collections.namedtuple("ScaleByRStdDevState", "mu nu")


def scale_by_stddev(decay=0.9, eps=1e-8):
  """Rescale updates by the root of the centered exp. moving average of squares.

  References:
    [Hinton](www.cs.toronto.edu/~tijmen/csc321/slides/lecture_slides_lec6.pdf)

  Args:
    decay: decay rate for the exponentially weighted average of squared grads.
    eps: term added to the denominator to improve numerical stability.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(params):
    mu = tree_map(jnp.zeros_like, params)  # first moment
    nu = tree_map(jnp.zeros_like, params)  # second moment
    return ScaleByRStdDevState(mu=mu, nu=nu)

  def update_fn(updates, state):
    mu = _update_moment(updates, state.mu, decay, 1)
    nu = _update_moment(updates, state.nu, decay, 2)
    updates = tree_map(lambda g, m, n: g / jnp.sqrt(n - m ** 2 + eps), updates, mu, nu)
    return updates, ScaleByRStdDevState(mu=mu, nu=nu)
  return InitUpdate(init_fn, update_fn)


ScaleByAdamState = collections.namedtuple("ScaleByAdamState", "count mu nu")


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
  """Rescale updates according to the Adam algorithm.

  References:
    [Kingma et al, 2014](https://arxiv.org/abs/1412.6980)

  Args:
    b1: decay rate for the exponentially weighted average of grads.
    b2: decay rate for the exponentially weighted average of squared grads.
    eps: term added to the denominator to improve numerical stability.
    eps_root: term added to the second moment inside the square root.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(params):
    mu = tree_map(jnp.zeros_like, params)  # first moment
    nu = tree_map(jnp.zeros_like, params)  # second moment
    return ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)

  def update_fn(updates, state):
    mu = _update_moment(updates, state.mu, b1, 1)
    nu = _update_moment(updates, state.nu, b2, 2)
    mu_hat = tree_map(lambda t: t / (1 - b1 ** (state.count + 1)), mu)
    nu_hat = tree_map(lambda t: t / (1 - b2 ** (state.count + 1)), nu)
    updates = tree_map(lambda m, v: m / (jnp.sqrt(v + eps_root) + eps), mu_hat, nu_hat)
    return updates, ScaleByAdamState(count=state.count + 1, mu=mu, nu=nu)
  return InitUpdate(init_fn, update_fn)


ScaleState = collections.namedtuple("ScaleState", "")


def scale(step_size):
  """Scale updates by some fixed scalar `step_size`.

  Args:
    step_size: a scalar corresponding to a fixed scaling factor for updates.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(_):
    return ScaleState()

  def update_fn(updates, state):
    return tree_map(lambda g: step_size * g, updates), state
  return InitUpdate(init_fn, update_fn)


ScaleByScheduleState = collections.namedtuple("ScaleByScheduleState", "count")


def scale_by_schedule(step_size_fn):
  """Scale updates using a custom schedule for the `step_size`.

  Args:
    step_size_fn: a function that takes an update count as input and proposes the
      step_size to multiply the updates by.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(_):
    return ScaleByScheduleState(count=jnp.zeros([], jnp.int32))

  def update_fn(updates, state):
    step_size = step_size_fn(state.count)
    updates = tree_map(lambda g: step_size * g, updates)
    return updates, ScaleByScheduleState(count=state.count + 1)
  return InitUpdate(init_fn, update_fn)


AddNoiseState = collections.namedtuple("AddNoiseState", "count rng_key")


def add_noise(eta, gamma, seed):
  """Add gradient noise with variance `eta / (1 + t) ** gamma` at step t.

  References:
    [Neelakantan et al, 2014](https://arxiv.org/abs/1511.06807)

  Args:
    eta: base variance of the gaussian noise added to the gradient.
    gamma: decay exponent for annealing of the variance.
    seed: seed for random number generation.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(_):
    return AddNoiseState(count=jnp.zeros([], jnp.int32), rng_key=_random().PRNGKey(seed))

  def update_fn(updates, state):
    random = _random()
    num_vars = len(tree_leaves(updates))
    treedef = tree_structure(updates)
    variance = eta / (1 + state.count) ** gamma
    all_keys = random.split(state.rng_key, num_vars + 1)
    noise = tree_map(lambda g, k: random.normal(k, shape=jnp.shape(g)), updates,
                     tree_unflatten(treedef, list(all_keys[1:])))
    # As in optix: the variance, not its square root, scales the unit noise.
    updates = tree_map(lambda g, n: g + variance * n, updates, noise)
    return updates, AddNoiseState(count=state.count + 1, rng_key=all_keys[0])
  return InitUpdate(init_fn, update_fn)


ApplyEvery = collections.namedtuple("ApplyEvery", "count grad_acc")


def apply_every(k=1):
  """Accumulate gradients and apply them every k steps.

  Args:
    k: apply the update every k steps otherwise accumulate the gradients.

  Returns:
    An (init_fn, update_fn) tuple.
  """
  def init_fn(params):
    grad_acc = tree_map(jnp.zeros_like, params)
    return ApplyEvery(count=jnp.zeros([], jnp.int32), grad_acc=grad_acc)

  def update_fn(updates, state):
    c = state.count % k
    acc = c != 0
    grad_acc = tree_map(lambda g, ga: acc * ga + g, updates, state.grad_acc)
    emit = c == (k - 1)
    updates = tree_map(lambda ga: emit * ga, grad_acc)
    return updates, ApplyEvery(count=state.count + 1, grad_acc=grad_acc)
  return InitUpdate(init_fn, update_fn)


# ---- utilities for building and using custom optimizers ----

def chain(*args):
  """Applies a list of chainable update transformations.

  Given a sequence of chainable transforms, `chain` returns an `init_fn` that
  constructs a `state` by concatenating the states of the individual transforms, and
  returns an `update_fn` which chains the update transformations feeding the
  appropriate state to each.

  Args:
    *args: a sequence of chainable (init_fn, update_fn) tuples.

  Returns:
    A single (init_fn, update_fn) tuple.
  """
  init_fns, update_fns = zip(*args) if args else ((), ())

  def init_fn(params):
    return [fn(params) for fn in init_fns]

  def update_fn(updates, state):
    if len(state) != len(update_fns):
      raise ValueError(f"chain of {len(update_fns)} transformations got a state with "
                       f"{len(state)} entries.")
    new_state = []
    for s, fn in zip(state, update_fns):
      updates, new_s = fn(updates, s)
      new_state.append(new_s)
    return updates, new_state
  return InitUpdate(init_fn, update_fn)


def apply_updates(params, updates):
  """Applies an update to the corresponding parameters.

  This is an (optional) utility function that applies an update, and returns the
  updated parameters to the caller. The update itself is typically the result of
  applying any number of chainable transformations.

  Args:
    params: a tree of parameters.
    updates: a tree of updates; the tree structure and the shape of the leaf nodes
      must match that of `params`.

  Returns:
    Updated parameters, with same structure and shape as `params`.
  """
  p_tree, u_tree = tree_structure(params), tree_structure(updates)
  if p_tree != u_tree:
    raise ValueError("apply_updates: the tree structure of `updates` must match that of "
                     f"`params`, got {u_tree} and {p_tree}.")

  def add(p, u):
    if jnp.shape(p) != jnp.shape(u):
      raise ValueError("apply_updates: each update must have the shape of its parameter, "
                       f"got {jnp.shape(u)} for a parameter of shape {jnp.shape(p)}.")
    return p + u
  return tree_map(add, params, updates)


# ---- aliases for popular optimizers ----

def sgd(learning_rate, momentum=0., nesterov=False):
  """Stochastic gradient descent, with optional (Nesterov) momentum."""
  return chain(trace(decay=momentum, nesterov=nesterov), scale(-learning_rate))


def momentum(learning_rate, decay=0.9, nesterov=False):
  """SGD with momentum `decay` (`sgd(learning_rate, momentum=decay)`)."""
  return sgd(learning_rate, momentum=decay, nesterov=nesterov)


def noisy_sgd(learning_rate, eta=0.01, gamma=0.55, seed=0):
  """SGD with annealed gradient noise (`add_noise`)."""
  return chain(trace(decay=0., nesterov=False), scale(-learning_rate),
               add_noise(eta, gamma, seed))


def adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8):
  """Adam: `chain(scale_by_adam(b1, b2, eps), scale(-learning_rate))`."""
  return chain(scale_by_adam(b1=b1, b2=b2, eps=eps), scale(-learning_rate))


def rmsprop(learning_rate, decay=0.9, eps=1e-8, centered=False):
  """RMSProp; `centered` divides by the standard deviation instead of the RMS."""
  if centered:
    return chain(scale_by_stddev(decay=decay, eps=eps), scale(-learning_rate))
  return chain(scale_by_rms(decay=decay, eps=eps), scale(-learning_rate))
