"""`jit(value_and_grad(loss))` of a 3-layer tanh MLP (for a later issue; skips if the API is missing).

Sizes: batch 128, 64 -> 256 -> 256 -> 10, mean squared error; parameters are
drawn from one NumPy seed so every system computes the same thing.
  --mode once:   first call (trace + differentiate + lower + compile + run),
                 fresh process, persistent caches off (set by the driver);
  --mode worker: steady state, µs per call, blocked on every result.
"""
import _harness as H

SIZES = (64, 256, 256, 10)
BATCH = 128


def init(np, sizes=SIZES, batch=BATCH):
  rng = np.random.RandomState(0)
  params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  y = rng.randn(batch, sizes[-1]).astype(np.float32)
  return params, x, y


def make_loss(jnp):
  def predict(params, x):
    h = x
    for w, b in params[:-1]:
      h = jnp.tanh(jnp.dot(h, w) + b)
    w, b = params[-1]
    return jnp.dot(h, w) + b

  def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)
  return loss


REQUIRED = ("jax.jit", "jax.value_and_grad", "jax.device_put", "jnp.dot", "jnp.tanh", "jnp.mean")


def _build(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require(*REQUIRED)
  jax = ctx.jax
  params, x, y = init(ctx.np)
  params, x, y = jax.device_put((params, x, y))
  return jax.jit(jax.value_and_grad(make_loss(ctx.jnp))), params, x, y


def once(ctx):
  step, params, x, y = _build(ctx)
  ctx.block((params, x, y))
  t0 = H.perf_counter()
  out = ctx.block(step(params, x, y))
  t1 = H.perf_counter()
  ctx.check(out)
  return [H.metric("mlp.first_call", "jit(value_and_grad) MLP, first call, no p.cache",
                   (t1 - t0) * 1e3, "ms")]


def setup(ctx):
  state = _build(ctx)
  step, params, x, y = state
  for _ in range(20):
    ctx.block(step(params, x, y))
  ctx.check(step(params, x, y))
  return state


def measure(ctx, state):
  step, params, x, y = state
  n = H.int_arg(ctx, "--calls", 20)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(step(params, x, y))
  t1 = H.perf_counter()
  return [H.metric("mlp.steady", "jit(value_and_grad) MLP b128, steady, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure, once=once))
