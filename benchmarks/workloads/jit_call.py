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
  f = ctx.jax.jit(lambda x: x + 1.0)
  x = ctx.jax.device_put(a)
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
    t1 = pc()
    us = (t1 - t0) / n * 1e6
    return [H.metric("jit_call.dispatch", "jit call f32[3], dispatch (not blocked)", us, "us"),
            H.metric("jit_call.blocked", "jit call f32[3], blocked each call", us, "us")]
  t0 = pc()
  for _ in range(n):
    y = f(x)
  y.block_until_ready()
  t1 = pc()
  for _ in range(n):
    f(x).block_until_ready()
  t2 = pc()
  return [H.metric("jit_call.dispatch", "jit call f32[3], dispatch (not blocked)",
                   (t1 - t0) / n * 1e6, "us"),
          H.metric("jit_call.blocked", "jit call f32[3], blocked each call",
                   (t2 - t1) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
