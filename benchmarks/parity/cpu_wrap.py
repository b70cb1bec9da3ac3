"""A worker that runs an existing benchmark workload's setup and times it with wall AND
process CPU time (the existing workloads report wall only). Driven by alt.py."""
import os, sys, time, importlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads"))
import _harness as H
name = H.str_arg(H.Ctx(None, None, None, None, sys.argv), "--workload", "mlp")
W = importlib.import_module(name)


def measure(ctx, state):
  n = H.int_arg(ctx, "--calls", 10)
  if name == "per_example_grads":
    f, params, x, y = state
    call = lambda: f(params, x, y)
  else:
    step, params, x, y = state
    call = lambda: step(params, x, y)
  block = ctx.block
  c0, t0 = time.process_time(), H.perf_counter()
  for _ in range(n):
    block(call())
  t1, c1 = H.perf_counter(), time.process_time()
  return [H.metric(f"{name}.wall", f"{name} wall", (t1 - t0) / n * 1e6, "us"),
          H.metric(f"{name}.cpu", f"{name} process CPU", (c1 - c0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=W.setup, measure=measure))
