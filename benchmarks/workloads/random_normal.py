"""`jit(lambda k: random.normal(k, (10_000_000,)))`: drawing 10M standard normals.

Issue 5's benchmark: the Threefry hash, the uniform bit trick and erf_inv over a
large array, where the time is all in the compiled program (not dispatch).
  --mode once:   first call (trace + lower + compile + run), fresh process,
                 persistent caches off (set by the driver), ms;
  --mode worker: steady state, ms per call, blocked on every result.
`--stream original` uses the 2020 stream (`jax_threefry_partitionable=False`)
instead of the default partitionable one. NumPy has no counter-based PRNG to
compare with: its column is `np.random.default_rng(0).standard_normal` (PCG64 +
ziggurat), for scale only.
"""
import _harness as H

SIZE = 10_000_000


def _build(ctx):
  stream = H.str_arg(ctx, "--stream", "partitionable")
  size = H.int_arg(ctx, "--size", SIZE)
  if ctx.system == "numpy":
    rng = ctx.np.random.default_rng(0)
    return (lambda _: rng.standard_normal(size, dtype=ctx.np.float32)), None
  ctx.require("jax.jit", "jax.random.normal", "jax.random.PRNGKey")
  jax = ctx.jax
  # Set through the public config, as a user would (before anything is traced).
  jax.config.update("jax_threefry_partitionable", stream == "partitionable")
  key = jax.random.PRNGKey(0)
  return jax.jit(lambda k: jax.random.normal(k, (size,))), key


def _names(ctx):
  """(metric key prefix, label): the two streams are separate rows of the table."""
  if H.str_arg(ctx, "--stream", "partitionable") == "original":
    return "random_normal_original", "random.normal 10M, jit, 2020 stream"
  return "random_normal", "random.normal 10M, jit"


def _check(ctx, out):
  # NumPy draws from another generator: a checksum would only "differ" from JAX's.
  if ctx.jax is not None:
    ctx.check(out)


def once(ctx):
  f, key = _build(ctx)
  ctx.block(key)
  t0 = H.perf_counter()
  out = ctx.block(f(key))
  t1 = H.perf_counter()
  _check(ctx, out)
  name, label = _names(ctx)
  return [H.metric(f"{name}.first_call", f"{label}, first call, no p.cache",
                   (t1 - t0) * 1e3, "ms")]


def setup(ctx):
  f, key = _build(ctx)
  for _ in range(3):
    ctx.block(f(key))
  _check(ctx, f(key))
  return f, key


def measure(ctx, state):
  f, key = state
  n = H.int_arg(ctx, "--calls", 5)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(key))
  t1 = H.perf_counter()
  name, label = _names(ctx)
  return [H.metric(f"{name}.steady", f"{label}, steady, blocked", (t1 - t0) / n * 1e3, "ms")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure, once=once))
