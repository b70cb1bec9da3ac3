"""`jit(vmap(grad(loss), in_axes=(None, 0, 0)))`: per-example gradients of the MLP (later issue).

The per-example loss is mlp.py's loss on one example (x: f32[64], y: f32[10]);
vmap maps it over a batch of 32. Steady state, µs per call, blocked on every
result. Skips if tracejax lacks vmap/grad.
"""
import _harness as H
import mlp

BATCH = 32


def setup(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require("jax.jit", "jax.vmap", "jax.grad", *mlp.REQUIRED)
  jax = ctx.jax
  params, x, y = mlp.init(ctx.np, batch=BATCH)
  params, x, y = jax.device_put((params, x, y))
  loss = mlp.make_loss(ctx.jnp)  # on one example the mean is over the 10 outputs
  f = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
  for _ in range(20):
    ctx.block(f(params, x, y))
  ctx.check(f(params, x, y))
  return f, params, x, y


def measure(ctx, state):
  f, params, x, y = state
  n = H.int_arg(ctx, "--calls", 50)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(params, x, y))
  t1 = H.perf_counter()
  return [H.metric("vmap_grad.steady", "jit(vmap(grad)) per-example MLP b32, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
