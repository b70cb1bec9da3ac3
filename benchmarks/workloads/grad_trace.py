"""Tracing cost of reverse-mode AD: `make_jaxpr(grad(f))(x)` for f of 100, 1000, 5000 ops.

f is a chain of elementwise ops (sin, cos, mul, add) on f32[3], summed to a
scalar. Each round builds a fresh closure (so no tracing cache keyed on the
function can hit) and times one `make_jaxpr(grad(f))(x)` per size: tracing,
linearisation and transposition, no compilation. Skips if tracejax lacks
make_jaxpr/grad (later issue).
"""
import _harness as H
from first_call import make_chain

SIZES = (100, 1000, 5000)


def _fresh_f(jnp, nops, variant):
  chain = make_chain(jnp, nops, variant)
  return lambda x: jnp.sum(chain(x))


def setup(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff")
  ctx.require("jax.make_jaxpr", "jax.grad", "jax.device_put", "jnp.sin", "jnp.cos", "jnp.sum")
  x = ctx.jax.device_put(ctx.np.linspace(0.0, 1.0, 3, dtype=ctx.np.float32))
  for i in range(3):  # one-time costs (rule tables, lazy imports) are not tracing cost
    ctx.jax.make_jaxpr(ctx.jax.grad(_fresh_f(ctx.jnp, 50, i)))(x)
  return {"x": x, "round": 0}


def measure(ctx, state):
  jax, jnp, x = ctx.jax, ctx.jnp, state["x"]
  state["round"] += 1
  out = []
  for n in SIZES:
    f = _fresh_f(jnp, n, state["round"] % 4)
    t0 = H.perf_counter()
    jax.make_jaxpr(jax.grad(f))(x)
    t1 = H.perf_counter()
    out.append(H.metric(f"grad_trace.{n}", f"make_jaxpr(grad(f)), f of {n} ops",
                        (t1 - t0) * 1e3, "ms"))
  return out


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
