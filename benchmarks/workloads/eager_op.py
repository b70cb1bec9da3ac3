"""Eager (op-by-op) dispatch of one primitive on small device arrays (f32[3]).

Rows: `jnp.add(x, y)`, `x + y` (the Array operator path), `jnp.sin(x)`; results
are not blocked, only the last of each loop is waited for. NumPy column: the
same expressions on NumPy arrays (`np.add(a, b)`, `a + b`, `np.sin(a)`).
"""
import _harness as H


def setup(ctx):
  np = ctx.np
  a = np.arange(3, dtype=np.float32)
  b = np.ones(3, dtype=np.float32)
  if ctx.system == "numpy":
    ctx.check([np.add(a, b), a + b, np.sin(a)])
    return np, a, b
  ctx.require("jax.device_put", "jnp.add", "jnp.sin")
  jnp = ctx.jnp
  x, y = ctx.jax.device_put(a), ctx.jax.device_put(b)
  for _ in range(200):  # compile each op once, then settle
    jnp.add(x, y).block_until_ready()
    (x + y).block_until_ready()
    jnp.sin(x).block_until_ready()
  ctx.check([jnp.add(x, y), x + y, jnp.sin(x)])
  return jnp, x, y


def measure(ctx, state):
  mod, x, y = state  # mod is jnp, or np for the NumPy column
  n = H.int_arg(ctx, "--calls", 200)
  pc = H.perf_counter
  add, sin = mod.add, mod.sin
  done = (lambda r: r) if ctx.system == "numpy" else (lambda r: r.block_until_ready())
  t0 = pc()
  for _ in range(n):
    r = add(x, y)
  done(r)
  t1 = pc()
  for _ in range(n):
    r = x + y
  done(r)
  t2 = pc()
  for _ in range(n):
    r = sin(x)
  done(r)
  t3 = pc()
  return [H.metric("eager.add", "eager jnp.add(x, y) f32[3]", (t1 - t0) / n * 1e6, "us"),
          H.metric("eager.plus", "eager x + y f32[3]", (t2 - t1) / n * 1e6, "us"),
          H.metric("eager.sin", "eager jnp.sin(x) f32[3]", (t3 - t2) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
