"""Cached `jit` call with a pytree argument: a dict of 10 f32[3] arrays in, a dict out.

Same two measurements as jit_call.py (dispatch, blocked), so the difference
between the two is the cost of flattening/unflattening pytrees and of handling
ten buffers per call instead of one.
NumPy column: the same Python function on a dict of NumPy arrays.
"""
import _harness as H

NLEAVES = 10


def _fun(d):
  return {k: v + 1.0 for k, v in d.items()}


def setup(ctx):
  np = ctx.np
  d = {f"w{i}": np.full(3, i, dtype=np.float32) for i in range(NLEAVES)}
  if ctx.system == "numpy":
    ctx.check(_fun(d))
    return _fun, d
  ctx.require("jax.jit", "jax.device_put")
  f = ctx.jax.jit(_fun)
  d = {k: ctx.jax.device_put(v) for k, v in d.items()}
  for _ in range(200):
    ctx.block(f(d))
  ctx.check(f(d))
  return f, d


def measure(ctx, state):
  f, d = state
  n = H.int_arg(ctx, "--calls", 200)
  pc = H.perf_counter
  if ctx.system == "numpy":
    t0 = pc()
    for _ in range(n):
      y = f(d)
    t1 = pc()
    us = (t1 - t0) / n * 1e6
    return [H.metric("jit_pytree.dispatch", "jit call dict of 10 f32[3], dispatch", us, "us"),
            H.metric("jit_pytree.blocked", "jit call dict of 10 f32[3], blocked", us, "us")]
  block = ctx.block
  t0 = pc()
  for _ in range(n):
    y = f(d)
  block(y)
  t1 = pc()
  for _ in range(n):
    block(f(d))
  t2 = pc()
  return [H.metric("jit_pytree.dispatch", "jit call dict of 10 f32[3], dispatch",
                   (t1 - t0) / n * 1e6, "us"),
          H.metric("jit_pytree.blocked", "jit call dict of 10 f32[3], blocked",
                   (t2 - t1) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
