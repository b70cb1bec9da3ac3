"""First-call latency of a jitted 50-op elementwise chain on f32[128].

Run in a fresh interpreter per sample (`--mode once`) so every in-process
cache is cold. The timed region is `jit(f)(x)` through `.block_until_ready()`
of the first call: trace + lower + compile (or load from the persistent cache)
+ execute. The backend is initialised before the clock starts (the argument is
already on the device), so client start-up is not counted.

A second, different 50-op chain is then timed in the same process: the cost
of compiling a new function once the runtime is warm.

The driver sets the cache environment; `--cache cold|warm` only names the rows:
  cold: TRACEJAX_COMPILATION_CACHE=0, JAX_ENABLE_COMPILATION_CACHE=false
  warm: both persistent caches on, in temp dirs primed by an unmeasured run.
"""
import _harness as H

NOPS = 50


def make_chain(jnp, nops, variant):
  """A fresh closure applying `nops` elementwise ops (sin, cos, mul, add) in turn.

  `variant` changes the constants, so two variants compile to different programs.
  """
  c_mul = 1.0001 + 0.001 * variant
  c_add = 0.5 + 0.25 * variant
  ops = (jnp.sin, jnp.cos, lambda v: v * c_mul, lambda v: v + c_add)

  def chain(x):
    for i in range(nops):
      x = ops[(i + variant) % 4](x)
    return x
  return chain


def once(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no jit")
  ctx.require("jax.jit", "jax.device_put", "jnp.sin", "jnp.cos")
  np, jax, jnp = ctx.np, ctx.jax, ctx.jnp
  cache = H.str_arg(ctx, "--cache", "cold")
  x = jax.device_put(np.linspace(0.0, 1.0, 128, dtype=np.float32))
  x.block_until_ready()
  pc = H.perf_counter

  t0 = pc()
  f = jax.jit(make_chain(jnp, NOPS, 0))
  y = f(x).block_until_ready()
  t1 = pc()
  g = jax.jit(make_chain(jnp, NOPS, 1))
  z = g(x).block_until_ready()
  t2 = pc()
  ctx.check([y, z])
  tag = "persistent cache warm" if cache == "warm" else "no persistent cache"
  return [H.metric(f"first_call.{cache}", f"first call jit 50-op f32[128], {tag}",
                   (t1 - t0) * 1e3, "ms"),
          H.metric(f"first_call.{cache}.second_fn",
                   f"  2nd distinct fn in same process, {tag}", (t2 - t1) * 1e3, "ms")]


if __name__ == "__main__":
  raise SystemExit(H.main(once=once))
