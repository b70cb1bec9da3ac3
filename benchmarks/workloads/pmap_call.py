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
  x = ctx.jax.pmap(lambda x: x)(a)      # resident shards, one per device
  return H.warm_call(ctx, ctx.jax.pmap(lambda x: x * 2. + 1.), x)


measure = H.call_latency_measure("pmap_call", "pmap call f32[4,3] on 4 devices, dispatch",
                                 "pmap call f32[4,3] on 4 devices, blocked")


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
