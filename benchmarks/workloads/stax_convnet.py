"""A stax convnet training step: `jit` of `value_and_grad(loss)` plus an SGD update (issue 14).

NHWC images f32[32, 28, 28, 1]; stax.serial(Conv(16, (3, 3), SAME), Relu,
Conv(32, (3, 3), strides (2, 2), SAME), Relu, Flatten, Dense(10), LogSoftmax);
softmax cross-entropy on one-hot labels; the step returns the loss and the updated
parameters (lr 0.01). The same network as the `convnet` workload, but built with
stax (biases of shape (1, 1, 1, C), a Flatten, parameterless layers as `()`).
Parameters come from one NumPy seed, so every system computes the same thing.
  --mode worker: steady state, µs per step, blocked on every result, plus the process
                 CPU time (user + system, every thread) per step.
No NumPy column.
"""
import importlib

import _harness as H

BATCH, SIZE, C1, C2, N_CLASSES = 32, 28, 16, 32, 10
LR = 0.01


def init(np):
  rng = np.random.RandomState(0)
  params = [
      ((rng.randn(3, 3, 1, C1) / 3.0).astype(np.float32), np.zeros((1, 1, 1, C1), np.float32)),
      (),
      ((rng.randn(3, 3, C1, C2) / np.sqrt(9 * C1)).astype(np.float32),
       np.zeros((1, 1, 1, C2), np.float32)),
      (), (),
      ((rng.randn(14 * 14 * C2, N_CLASSES) / np.sqrt(14 * 14 * C2)).astype(np.float32),
       np.zeros(N_CLASSES, np.float32)),
      (),
  ]
  x = rng.randn(BATCH, SIZE, SIZE, 1).astype(np.float32)
  y = np.eye(N_CLASSES, dtype=np.float32)[rng.randint(0, N_CLASSES, BATCH)]
  return params, x, y


def make_step(jax, jnp):
  stax = importlib.import_module(jax.__name__ + ".example_libraries.stax")
  _, apply_fun = stax.serial(
      stax.Conv(C1, (3, 3), padding="SAME"), stax.Relu,
      stax.Conv(C2, (3, 3), strides=(2, 2), padding="SAME"), stax.Relu,
      stax.Flatten, stax.Dense(N_CLASSES), stax.LogSoftmax)

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(apply_fun(p, x) * y, axis=1))

  def step(p, x, y):
    value, grads = jax.value_and_grad(loss)(p, x, y)
    return value, jax.tree_util.tree_map(lambda a, g: a - LR * g, p, grads)
  return jax.jit(step)


REQUIRED = ("jax.jit", "jax.value_and_grad", "jax.device_put", "jax.tree_util.tree_map",
            "jnp.mean", "jnp.sum")


def _build(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require(*REQUIRED)
  jax = ctx.jax
  try:
    step = make_step(jax, ctx.jnp)
  except ImportError as e:
    raise H.Skip(f"missing API: {e}")
  params, x, y = jax.device_put(init(ctx.np))
  return step, params, x, y


def setup(ctx):
  state = _build(ctx)
  step, params, x, y = state
  for _ in range(5):
    ctx.block(step(params, x, y))
  ctx.check(step(params, x, y))
  return state


def measure(ctx, state):
  step, params, x, y = state
  n = H.int_arg(ctx, "--calls", 10)
  wall, cpu = H.steady_with_cpu(ctx, step, (params, x, y), n)
  return [H.metric("stax_convnet.steady", "jit stax convnet train step b32 28x28x1, steady",
                   wall, "us"),
          H.metric("stax_convnet.steady_cpu", "  the same, process CPU time per step", cpu, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
