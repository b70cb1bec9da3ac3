"""A small convnet training step: `jit` of `value_and_grad(loss)` plus an SGD update.

NHWC images f32[32, 28, 28, 1]; conv 3x3 1->16 (stride 1, SAME), relu; conv 3x3
16->32 (stride 2, SAME), relu; dense 14*14*32 -> 10; softmax cross-entropy on
one-hot labels. The step returns the loss and the updated parameters (lr 0.01).
Parameters come from one NumPy seed, so every system computes the same thing.
  --mode once:   first call (trace + differentiate + lower + compile + run),
                 fresh process, persistent caches off (set by the driver);
  --mode worker: steady state, µs per step, blocked on every result (the same
                 parameters each call, so every call does the same work).
No NumPy column: a hand-written convolution backward pass would measure that
code, not Python's floor.
"""
import _harness as H

BATCH, SIZE, C1, C2, N_CLASSES = 32, 28, 16, 32, 10
LR = 0.01


def init(np):
  rng = np.random.RandomState(0)
  params = {
      "k1": (rng.randn(3, 3, 1, C1) / 3.0).astype(np.float32),
      "b1": np.zeros(C1, np.float32),
      "k2": (rng.randn(3, 3, C1, C2) / np.sqrt(9 * C1)).astype(np.float32),
      "b2": np.zeros(C2, np.float32),
      "w": (rng.randn(14 * 14 * C2, N_CLASSES) / np.sqrt(14 * 14 * C2)).astype(np.float32),
      "bw": np.zeros(N_CLASSES, np.float32),
  }
  x = rng.randn(BATCH, SIZE, SIZE, 1).astype(np.float32)
  labels = rng.randint(0, N_CLASSES, BATCH)
  y = np.eye(N_CLASSES, dtype=np.float32)[labels]
  return params, x, y


def make_step(jax, jnp):
  lax = jax.lax
  dn = ("NHWC", "HWIO", "NHWC")

  def loss(p, x, y):
    h = lax.conv_general_dilated(x, p["k1"], (1, 1), "SAME", dimension_numbers=dn)
    h = jnp.maximum(h + p["b1"], 0.0)
    h = lax.conv_general_dilated(h, p["k2"], (2, 2), "SAME", dimension_numbers=dn)
    h = jnp.maximum(h + p["b2"], 0.0)
    logits = jnp.dot(h.reshape((BATCH, -1)), p["w"]) + p["bw"]
    logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=1))

  def step(p, x, y):
    value, grads = jax.value_and_grad(loss)(p, x, y)
    new_p = jax.tree_util.tree_map(lambda a, g: a - LR * g, p, grads)
    return value, new_p
  return jax.jit(step)


REQUIRED = ("jax.jit", "jax.value_and_grad", "jax.device_put", "jax.lax.conv_general_dilated",
            "jax.nn.logsumexp", "jax.tree_util.tree_map", "jnp.maximum", "jnp.dot")


def _build(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require(*REQUIRED)
  jax = ctx.jax
  params, x, y = jax.device_put(init(ctx.np))
  return make_step(jax, ctx.jnp), params, x, y


def once(ctx):
  step, params, x, y = _build(ctx)
  ctx.block((params, x, y))
  t0 = H.perf_counter()
  out = ctx.block(step(params, x, y))
  t1 = H.perf_counter()
  ctx.check(out)
  return [H.metric("convnet.first_call", "jit convnet train step, first call, no p.cache",
                   (t1 - t0) * 1e3, "ms")]


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
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(step(params, x, y))
  t1 = H.perf_counter()
  return [H.metric("convnet.steady", "jit convnet train step b32 NHWC, steady, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure, once=once))
