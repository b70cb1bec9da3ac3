"""`jit(grad(loss))` of a tanh RNN written with `lax.scan`: forward and backward.

Sizes: 50 steps, batch 16, input 32, hidden 128, output 8; the loss is the
mean squared error of every step's output. Parameters come from one NumPy seed,
so every system computes the same thing.
  --mode once:   first call (trace + differentiate + lower + compile + run),
                 fresh process, persistent caches off (set by the driver);
  --mode worker: steady state, µs per call, blocked on every result.
NumPy runs the same forward pass and a hand-written backpropagation through
time: the floor of doing the arithmetic from Python without a compiler.
"""
import _harness as H

STEPS, BATCH, N_IN, HIDDEN, N_OUT = 50, 16, 32, 128, 8


def init(np):
  rng = np.random.RandomState(0)
  params = {
      "wx": (rng.randn(N_IN, HIDDEN) / np.sqrt(N_IN)).astype(np.float32),
      "wh": (rng.randn(HIDDEN, HIDDEN) / np.sqrt(HIDDEN)).astype(np.float32),
      "b": np.zeros(HIDDEN, np.float32),
      "wo": (rng.randn(HIDDEN, N_OUT) / np.sqrt(HIDDEN)).astype(np.float32),
  }
  xs = rng.randn(STEPS, BATCH, N_IN).astype(np.float32)
  ys = rng.randn(STEPS, BATCH, N_OUT).astype(np.float32)
  return params, xs, ys


def make_loss(jax, jnp):
  def loss(params, xs, ys):
    def step(h, x):
      h = jnp.tanh(jnp.dot(x, params["wx"]) + jnp.dot(h, params["wh"]) + params["b"])
      return h, h
    h0 = jnp.zeros((BATCH, HIDDEN), jnp.float32)
    _, hs = jax.lax.scan(step, h0, xs)
    out = jnp.dot(hs, params["wo"])
    return jnp.mean((out - ys) ** 2)
  return loss


def numpy_grad(np, params, xs, ys):
  """The same gradient by hand: forward keeping every h, then backward through time."""
  wx, wh, b, wo = params["wx"], params["wh"], params["b"], params["wo"]
  hs = np.empty((STEPS, BATCH, HIDDEN), np.float32)
  h = np.zeros((BATCH, HIDDEN), np.float32)
  for t in range(STEPS):
    h = np.tanh(xs[t] @ wx + h @ wh + b)
    hs[t] = h
  d_out = (hs @ wo - ys) * np.float32(2.0 / ys.size)
  g = {"wo": np.einsum("tbh,tbo->ho", hs, d_out), "wx": np.zeros_like(wx),
       "wh": np.zeros_like(wh), "b": np.zeros_like(b)}
  dh_all = d_out @ wo.T
  dh = np.zeros((BATCH, HIDDEN), np.float32)
  for t in range(STEPS - 1, -1, -1):
    dz = (dh + dh_all[t]) * (1 - hs[t] * hs[t])
    h_prev = hs[t - 1] if t else np.zeros_like(hs[0])
    g["wx"] += xs[t].T @ dz
    g["wh"] += h_prev.T @ dz
    g["b"] += dz.sum(0)
    dh = dz @ wh.T
  return g


REQUIRED = ("jax.jit", "jax.grad", "jax.device_put", "jax.lax.scan", "jnp.dot", "jnp.tanh",
            "jnp.mean")


def _build(ctx):
  if ctx.system == "numpy":
    np = ctx.np
    params, xs, ys = init(np)
    return (lambda p, x, y: numpy_grad(np, p, x, y)), params, xs, ys
  ctx.require(*REQUIRED)
  jax = ctx.jax
  params, xs, ys = jax.device_put(init(ctx.np))
  return jax.jit(jax.grad(make_loss(jax, ctx.jnp))), params, xs, ys


def once(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no compilation")
  f, params, xs, ys = _build(ctx)
  ctx.block((params, xs, ys))
  t0 = H.perf_counter()
  out = ctx.block(f(params, xs, ys))
  t1 = H.perf_counter()
  ctx.check(out)
  return [H.metric("scan_rnn.first_call", "jit(grad) scan RNN, first call, no p.cache",
                   (t1 - t0) * 1e3, "ms")]


def setup(ctx):
  state = _build(ctx)
  f, params, xs, ys = state
  for _ in range(10):
    ctx.block(f(params, xs, ys))
  ctx.check(f(params, xs, ys))
  return state


def measure(ctx, state):
  f, params, xs, ys = state
  n = H.int_arg(ctx, "--calls", 20)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(params, xs, ys))
  t1 = H.perf_counter()
  return [H.metric("scan_rnn.steady", "jit(grad) scan RNN T50 b16 h128, steady, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure, once=once))
