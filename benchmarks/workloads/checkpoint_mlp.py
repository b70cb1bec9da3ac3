"""`jit(grad(loss))` of a 20-layer tanh MLP with every layer under `jax.checkpoint`, and
without it: steady-state time, and the compiled program's temporary memory.

Sizes: batch 128, width 256, 20 layers (`tanh(h @ w + b)`), loss `mean(h ** 2)`;
parameters from one NumPy seed so every system computes the same thing.
  --mode worker: steady state, µs per call, blocked on every result; plus the
                 executable's temp (scratch) buffer size in KiB from XLA's buffer
                 assignment, with and without checkpoint: `Compiled.memory_analysis()`
                 where the system has it, else jaxlib's compiled memory stats reached
                 through tracejax's backend module.
"""
import _harness as H

WIDTH, BATCH, LAYERS = 256, 128, 20


def init(np):
  rng = np.random.RandomState(0)
  params = [(rng.randn(WIDTH, WIDTH).astype(np.float32) / np.sqrt(WIDTH),
             (rng.randn(WIDTH) * 0.1).astype(np.float32)) for _ in range(LAYERS)]
  x = rng.randn(BATCH, WIDTH).astype(np.float32)
  return params, x


def make_loss(jax, jnp, remat):
  def layer(wb, h):
    w, b = wb
    return jnp.tanh(jnp.dot(h, w) + b)

  if remat:
    layer = jax.checkpoint(layer)

  def loss(params, x):
    h = x
    for wb in params:
      h = layer(wb, h)
    return jnp.mean(h ** 2)
  return loss


REQUIRED = ("jax.jit", "jax.grad", "jax.checkpoint", "jax.device_put", "jnp.dot", "jnp.tanh",
            "jnp.mean")


def _temp_kib(fn, args):
  """XLA's temp buffer size (KiB) of `fn` compiled for `args`."""
  lowered = fn.lower(*args)
  compiled = lowered.compile()
  if hasattr(compiled, "memory_analysis"):
    stats = compiled.memory_analysis()
  else:  # tracejax: the executable's stats, as jaxlib reports them
    from tracejax._src.runtime import backend
    exe = backend.compile(lowered.as_text(), [v.aval for v in lowered.jaxpr.outvars])
    stats = exe.exe.get_compiled_memory_stats()
  return stats.temp_size_in_bytes / 1024


def setup(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require(*REQUIRED)
  jax = ctx.jax
  params, x = jax.device_put(init(ctx.np))
  remat = jax.jit(jax.grad(make_loss(jax, ctx.jnp, True)))
  plain = jax.jit(jax.grad(make_loss(jax, ctx.jnp, False)))
  for _ in range(10):
    ctx.block(remat(params, x))
    ctx.block(plain(params, x))
  ctx.check(remat(params, x))
  mem = (_temp_kib(remat, (params, x)), _temp_kib(plain, (params, x)))
  return remat, plain, params, x, mem


def measure(ctx, state):
  remat, plain, params, x, (mem_remat, mem_plain) = state
  n = H.int_arg(ctx, "--calls", 20)
  block = ctx.block
  out = []
  for fn, key, what in ((remat, "steady", "checkpoint"), (plain, "steady_plain", "plain")):
    t0 = H.perf_counter()
    for _ in range(n):
      block(fn(params, x))
    t1 = H.perf_counter()
    out.append(H.metric(f"checkpoint_mlp.{key}",
                        f"jit(grad) 20x256 MLP b128, {what}, steady, blocked",
                        (t1 - t0) / n * 1e6, "us"))
  out.append(H.metric("checkpoint_mlp.temp", "  XLA temp memory, checkpoint", mem_remat, "KiB"))
  out.append(H.metric("checkpoint_mlp.temp_plain", "  XLA temp memory, plain", mem_plain,
                      "KiB"))
  return out


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
