"""Cached `pmap` call of a small function on 4 CPU devices: `pmap(lambda x: x * 2. + 1.)`
on f32[4, 3] whose shards already live on the devices (the output of a previous pmap).

Run with 4 devices for both systems (`TRACEJAX_NUM_CPU_DEVICES=4`,
`XLA_FLAGS=--xla_force_host_platform_device_count=4`, set by run.py). Measures the
per-call cost once the program is compiled, two ways:
  * dispatch: `calls` calls back to back, results not blocked (only the last one is
    waited for);
  * blocked: `.block_until_ready()` on every result: the round-trip latency.
The function has no collective: XLA:CPU's in-process collectives can stall when many
programs with collectives are queued at once (real JAX too), which would measure that
instead of the dispatch path.
NumPy column: the same Python function on a NumPy array (the floor of calling Python).
"""
import _harness as H


def setup(ctx):
  np = ctx.np
  a = np.arange(12, dtype=np.float32).reshape(4, 3)
  if ctx.system == "numpy":
    ctx.check(a * 2. + 1.)
    return (lambda x: x * 2. + 1.), a
  ctx.require("jax.pmap", "jax.device_count")
  if ctx.jax.device_count() < 4:
    raise H.Skip(f"needs 4 devices, found {ctx.jax.device_count()}")
  f = ctx.jax.pmap(lambda x: x * 2. + 1.)
  x = ctx.jax.pmap(lambda x: x)(a)      # resident shards, one per device
  for _ in range(200):  # compile, then let allocator and caches settle
    f(x).block_until_ready()
  ctx.check(f(x))
  return f, x


def measure(ctx, state):
  f, x = state
  n = H.int_arg(ctx, "--calls", 200)
  pc = H.perf_counter
  if ctx.system == "numpy":
    t0 = pc()
    for _ in range(n):
      y = f(x)
    us = (pc() - t0) / n * 1e6
    return [H.metric("pmap_call.dispatch", "pmap call f32[4,3] on 4 devices, dispatch", us, "us"),
            H.metric("pmap_call.blocked", "pmap call f32[4,3] on 4 devices, blocked", us, "us")]
  t0 = pc()
  for _ in range(n):
    y = f(x)
  y.block_until_ready()
  t1 = pc()
  for _ in range(n):
    f(x).block_until_ready()
  t2 = pc()
  return [H.metric("pmap_call.dispatch", "pmap call f32[4,3] on 4 devices, dispatch",
                   (t1 - t0) / n * 1e6, "us"),
          H.metric("pmap_call.blocked", "pmap call f32[4,3] on 4 devices, blocked",
                   (t2 - t1) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
