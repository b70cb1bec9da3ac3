"""`jit(value_and_grad(loss))` of an MNIST-sized MLP (issue 14), in two styles.

Sizes: batch 128, 784 -> 512 -> relu -> 512 -> relu -> 10 -> log-softmax, softmax
cross-entropy on one-hot labels, float32. Parameters are drawn from one NumPy seed
so every system computes the same thing. At about 3 ms per step Python dispatch is
negligible: the row measures the compiled program and the options it was compiled
with (the small `mlp` workload is closer to dispatch).
  --style stax (default): the network from `example_libraries.stax` (Dense, Relu,
                 LogSoftmax) applied to the batch;
  --style vmap:  the network written for ONE example (`x @ w + b` with x a vector,
                 `nn.relu`, `nn.log_softmax`) and `vmap`ped over the batch, as in
                 tracejax's examples/demo.py.
  --mode worker: steady state, µs per call, blocked on every result; a second
                 metric gives the process CPU time (user + system, every thread)
                 per call, less sensitive to being descheduled on a shared machine.
No NumPy column.
"""
import importlib

import _harness as H

SIZES = (784, 512, 512, 10)
BATCH = 128


def init(np, sizes=SIZES, batch=BATCH):
  """stax-shaped parameters (a `()` for each parameterless layer), inputs, one-hot labels."""
  rng = np.random.RandomState(0)
  params = []
  for m, n in zip(sizes[:-1], sizes[1:]):
    params.append((rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)))
    params.append(())  # Relu, or LogSoftmax after the last Dense
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  y = np.eye(sizes[-1], dtype=np.float32)[rng.randint(0, sizes[-1], batch)]
  return params, x, y


def make_loss(jax, jnp, sizes=SIZES, style="stax"):
  if style == "vmap":
    return _make_vmap_loss(jax, jnp)
  stax = importlib.import_module(jax.__name__ + ".example_libraries.stax")
  layers = []
  for n in sizes[1:-1]:
    layers += [stax.Dense(n), stax.Relu]
  _, apply_fun = stax.serial(*layers, stax.Dense(sizes[-1]), stax.LogSoftmax)

  def loss(params, x, y):
    return -jnp.mean(jnp.sum(apply_fun(params, x) * y, axis=1))
  return loss


def _make_vmap_loss(jax, jnp):
  nn = jax.nn

  def predict_one(params, x):
    for w, b in params[:-2:2]:  # the () of each parameterless layer is skipped
      x = nn.relu(x @ w + b)
    w, b = params[-2]
    return nn.log_softmax(x @ w + b)

  def loss(params, x, y):
    logp = jax.vmap(predict_one, in_axes=(None, 0))(params, x)
    return -jnp.mean(jnp.sum(logp * y, axis=1))
  return loss


REQUIRED = ("jax.jit", "jax.value_and_grad", "jax.device_put", "jnp.mean", "jnp.sum")


def _build(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require(*REQUIRED)
  jax = ctx.jax
  style = H.str_arg(ctx, "--style", "stax")
  if style == "vmap":
    ctx.require("jax.vmap", "jax.nn.relu", "jax.nn.log_softmax")
  try:
    loss = make_loss(jax, ctx.jnp, style=style)
  except ImportError as e:
    raise H.Skip(f"missing API: {e}")
  params, x, y = jax.device_put(init(ctx.np))
  return jax.jit(jax.value_and_grad(loss)), params, x, y


def setup(ctx):
  state = _build(ctx)
  step, params, x, y = state
  for _ in range(10):
    ctx.block(step(params, x, y))
  ctx.check(step(params, x, y))
  return state


def measure(ctx, state):
  step, params, x, y = state
  n = H.int_arg(ctx, "--calls", 20)
  style = H.str_arg(ctx, "--style", "stax")
  key = "mlp_mnist" if style == "stax" else f"mlp_mnist_{style}"
  what = "stax MLP" if style == "stax" else f"{style} MLP"
  wall, cpu = H.steady_with_cpu(ctx, step, (params, x, y), n)
  return [H.metric(f"{key}.steady", f"jit(value_and_grad) {what} 784-512-512-10 b128, steady",
                   wall, "us"),
          H.metric(f"{key}.steady_cpu", "  the same, process CPU time per call", cpu, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
