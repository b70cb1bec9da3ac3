"""`jit(jnp.sort)` of f32[1_000_000]: one large XLA sort (issue 10's benchmark).

The time is all in the compiled program: XLA's sort with the comparator each
system lowers (NumPy's total order: -0.0 == 0.0, NaNs last), so this compares the
StableHLO the two systems emit for `jnp.sort`. The data (a NumPy seed, with a
few NaNs and signed zeros) is the same for every system.
  --mode worker: steady state, ms per call, blocked on every result;
  NumPy column: `np.sort` (introsort/radix on the host), for scale.
`--size N` changes the length.
"""
import _harness as H

SIZE = 1_000_000


def data(np, size=SIZE):
  rng = np.random.RandomState(0)
  x = rng.randn(size).astype(np.float32)
  x[::9973] = np.nan
  x[1::7919] = -0.0
  return x


def setup(ctx):
  x = data(ctx.np, H.int_arg(ctx, "--size", SIZE))
  if ctx.system == "numpy":
    f = ctx.np.sort
  else:
    ctx.require("jax.jit", "jax.device_put", "jnp.sort")
    x = ctx.jax.device_put(x)
    f = ctx.jax.jit(ctx.jnp.sort)
  for _ in range(3):
    ctx.block(f(x))
  ctx.check(ctx.np.nan_to_num(ctx.np.asarray(f(x)), nan=1e3))
  return f, x


def measure(ctx, state):
  f, x = state
  n = H.int_arg(ctx, "--calls", 5)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(x))
  t1 = H.perf_counter()
  return [H.metric("sort.steady", "jit(jnp.sort) f32[1M], steady, blocked",
                   (t1 - t0) / n * 1e3, "ms")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
