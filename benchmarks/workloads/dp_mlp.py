"""A data-parallel MLP training step on 4 CPU devices, two ways, side by side with JAX:

* `dp_mlp.pmap`: `pmap(step, axis_name='d')` on parameters replicated as a leading axis
  of 4 and a batch split 4 ways; the gradients are averaged with `lax.pmean`;
* `dp_mlp.jit_sharded`: `jit(step, in_shardings=(replicated, batch-split, batch-split),
  out_shardings=replicated)` over a 1-D `Mesh` of the 4 devices (`NamedSharding`); XLA's
  partitioner inserts the gradient all-reduce.

Model: the `mlp` workload's 3-layer tanh MLP (64 -> 256 -> 256 -> 10, mean squared
error), global batch 128 (32 per device), SGD with learning rate 0.01; the step returns
the new parameters and the loss, and the parameters are fed back each call (they stay
on the devices). Steady state, blocked on each call, µs/call.
Run with 4 devices for both systems (`TRACEJAX_NUM_CPU_DEVICES=4`,
`XLA_FLAGS=--xla_force_host_platform_device_count=4`, set by run.py).
"""
import _harness as H
from mlp import init, make_loss

NDEV = 4
LR = 0.01


def _step_fn(jax, loss, axis_name=None):
  def step(params, x, y):
    l, g = jax.value_and_grad(loss)(params, x, y)
    if axis_name is not None:
      g = jax.lax.pmean(g, axis_name)
      l = jax.lax.pmean(l, axis_name)
    new = jax.tree_util.tree_map(lambda p, d: p - LR * d, params, g)
    return new, l
  return step


def setup(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no autodiff or devices")
  ctx.require("jax.pmap", "jax.jit", "jax.sharding.NamedSharding", "jax.sharding.Mesh",
              "jax.lax.pmean", "jax.device_count")
  jax, np = ctx.jax, ctx.np
  if jax.device_count() < NDEV:
    raise H.Skip(f"needs {NDEV} devices, found {jax.device_count()}")
  params, x, y = init(np)
  loss = make_loss(ctx.jnp)
  # pmap: parameters stacked once per device, batch reshaped (4, 32, ...)
  pstep = jax.pmap(_step_fn(jax, loss, "d"), axis_name="d")
  stack = lambda a: np.broadcast_to(a, (NDEV,) + a.shape).copy()
  pp = jax.pmap(lambda t: t)(jax.tree_util.tree_map(stack, params))
  px = jax.pmap(lambda t: t)(x.reshape(NDEV, -1, x.shape[1]))
  py = jax.pmap(lambda t: t)(y.reshape(NDEV, -1, y.shape[1]))
  # jit + NamedSharding over a 1-D mesh
  NamedSharding, P = jax.sharding.NamedSharding, jax.sharding.PartitionSpec
  mesh = jax.sharding.Mesh(np.array(jax.devices()[:NDEV]), ("d",))
  repl, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("d"))
  jstep = jax.jit(_step_fn(jax, loss), in_shardings=(repl, batch, batch),
                  out_shardings=(repl, repl))
  jp = jax.device_put(params, repl)
  jx, jy = jax.device_put(x, batch), jax.device_put(y, batch)
  state = {"pmap": [pstep, pp, px, py], "jit": [jstep, jp, jx, jy]}
  for _ in range(10):
    _run(ctx, state, "pmap")
    _run(ctx, state, "jit")
  # Both give the single-device step: compare their losses and parameters.
  ctx.check((state["pmap"][1], state["jit"][1]))
  return state


def _run(ctx, state, which):
  s = state[which]
  s[1], l = s[0](s[1], s[2], s[3])
  return ctx.block(l)


def measure(ctx, state):
  n = H.int_arg(ctx, "--calls", 20)
  out = []
  for which, name, desc in (("pmap", "dp_mlp.pmap", "pmap(step) + pmean, MLP b128 on 4 devices"),
                            ("jit", "dp_mlp.jit_sharded",
                             "jit(step) + NamedSharding, MLP b128 on 4 devices")):
    t0 = H.perf_counter()
    for _ in range(n):
      _run(ctx, state, which)
    out.append(H.metric(name, desc, (H.perf_counter() - t0) / n * 1e6, "us"))
  return out


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
