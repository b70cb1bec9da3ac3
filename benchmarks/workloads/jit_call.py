"""Cached `jit` call with one small argument: `jit(lambda x: x + 1.0)` on f32[3].

Measures the per-call cost once the executable is cached, two ways:
  * dispatch: `calls` calls back to back, results not blocked (only the last
    one is waited for, so queued work is included): what a Python loop pays;
  * blocked: `.block_until_ready()` on every result: the round-trip latency.
NumPy column: the same Python function applied to a NumPy array, unjitted
(the floor of calling Python at all), reported for both rows.
"""
import _harness as H

FN = "x + 1.0"


def setup(ctx):
  np = ctx.np
  a = np.arange(3, dtype=np.float32)
  if ctx.system == "numpy":
    ctx.check(a + 1.0)
    return (lambda x: x + 1.0), a
  ctx.require("jax.jit", "jax.device_put")
  return H.warm_call(ctx, ctx.jax.jit(lambda x: x + 1.0), ctx.jax.device_put(a))


measure = H.call_latency_measure("jit_call", "jit call f32[3], dispatch (not blocked)",
                                 "jit call f32[3], blocked each call")


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
