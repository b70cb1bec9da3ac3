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
  d = {k: ctx.jax.device_put(v) for k, v in d.items()}
  return H.warm_call(ctx, ctx.jax.jit(_fun), d, block=ctx.block)


measure = H.call_latency_measure("jit_pytree", "jit call dict of 10 f32[3], dispatch",
                                 "jit call dict of 10 f32[3], blocked", pytree=True)


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
