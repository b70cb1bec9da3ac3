"""`jit(vmap(f))` where `f` is a `while_loop` whose trip count depends on the element.

Each of 256 elements holds a state f32[64] and a decay rate r in [0.5, 0.97];
the body does x <- r * x + 0.01 * sin(x) and counts, until |x|^2 < 1e-3 (or 500
steps). The trip counts range from about 10 to about 250, so under vmap the
predicate is batched: the loop runs until every element is done, and the
finished ones are held in place by a select.
  --mode once:   first call (trace + batch + lower + compile + run), fresh
                 process, persistent caches off (set by the driver);
  --mode worker: steady state, µs per call, blocked on every result.
NumPy runs the same masked loop over the whole batch (update the rows that are
still active until none is): what vmap does, written by hand.
"""
import _harness as H

BATCH, DIM, MAX_STEPS, TOL = 256, 64, 500, 1e-3


def init(np):
  rng = np.random.RandomState(0)
  x = rng.randn(BATCH, DIM).astype(np.float32)
  r = np.linspace(0.5, 0.97, BATCH).astype(np.float32)
  return x, r


def make_fn(jax, jnp):
  def settle(x, r):
    def cond(state):
      x, n = state
      return jnp.logical_and(jnp.sum(x * x) > TOL, n < MAX_STEPS)

    def body(state):
      x, n = state
      return r * x + 0.01 * jnp.sin(x), n + 1
    return jax.lax.while_loop(cond, body, (x, jnp.int32(0)))
  return jax.jit(jax.vmap(settle))


def numpy_settle(np, x, r):
  x = x.copy()
  n = np.zeros(BATCH, np.int32)
  rr = r[:, None]
  active = (np.sum(x * x, axis=1) > TOL) & (n < MAX_STEPS)
  while active.any():
    x = np.where(active[:, None], rr * x + np.float32(0.01) * np.sin(x), x)
    n = n + active
    active = (np.sum(x * x, axis=1) > TOL) & (n < MAX_STEPS)
  return x, n


REQUIRED = ("jax.jit", "jax.vmap", "jax.device_put", "jax.lax.while_loop", "jnp.sin",
            "jnp.sum", "jnp.logical_and")


def _build(ctx):
  if ctx.system == "numpy":
    np = ctx.np
    x, r = init(np)
    return (lambda x, r: numpy_settle(np, x, r)), x, r
  ctx.require(*REQUIRED)
  jax = ctx.jax
  x, r = jax.device_put(init(ctx.np))
  return make_fn(jax, ctx.jnp), x, r


def once(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no compilation")
  f, x, r = _build(ctx)
  ctx.block((x, r))
  t0 = H.perf_counter()
  out = ctx.block(f(x, r))
  t1 = H.perf_counter()
  ctx.check(out)
  return [H.metric("while_batched.first_call", "jit(vmap(while_loop)), first call, no p.cache",
                   (t1 - t0) * 1e3, "ms")]


def setup(ctx):
  state = _build(ctx)
  f, x, r = state
  for _ in range(10):
    ctx.block(f(x, r))
  ctx.check(f(x, r))
  return state


def measure(ctx, state):
  f, x, r = state
  n = H.int_arg(ctx, "--calls", 20)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(x, r))
  t1 = H.perf_counter()
  return [H.metric("while_batched.steady",
                   "jit(vmap(while_loop)) b256 f32[64], batched pred, steady",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure, once=once))
