"""Where a tracejax hot path spends its time: cProfile of the cached jit call and eager ops.

    python benchmarks/profile_tracejax.py [--calls 20000] [--top 15] [--only jit,pytree,add,plus,sin]

tracejax only (this interpreter must never import real jax).

First, unprofiled, it peels the layers of each path (jaxlib's execute alone,
the dispatcher, `bind`, `lax`, `jnp`) so the cost each layer adds is visible
without profiler distortion; these reach into tracejax internals and print
`n/a` for a layer whose internals have moved. Then, for each case, it prints
the unprofiled wall time per call, then the top functions by own time
with, per benchmarked call: how often the function runs, its own time and its
cumulative time in µs. cProfile adds roughly 0.1-0.3 µs to each Python call it
sees, so own-time figures of small functions are inflated; read the ranking
and the ratios, and compare the total against the unprofiled figure.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def cases(jax, jnp):
  x = jax.device_put(np.arange(3, dtype=np.float32))
  y = jax.device_put(np.ones(3, dtype=np.float32))
  f = jax.jit(lambda v: v + 1.0)
  d = {f"w{i}": jax.device_put(np.full(3, i, np.float32)) for i in range(10)}
  g = jax.jit(lambda t: {k: v + 1.0 for k, v in t.items()})
  return {
      "jit": ("jit(lambda x: x + 1.0)(x), f32[3]", lambda: f(x)),
      "pytree": ("jit call, dict of 10 f32[3]", lambda: g(d)),
      "add": ("jnp.add(x, y), f32[3]", lambda: jnp.add(x, y)),
      "plus": ("x + y, f32[3]", lambda: x + y),
      "sin": ("jnp.sin(x), f32[3]", lambda: jnp.sin(x)),
  }


def wall_us(fn, n):
  r = fn()
  t0 = time.perf_counter()
  for _ in range(n):
    r = fn()
  _block(r)
  return (time.perf_counter() - t0) / n * 1e6


def _block(r):
  for leaf in (r.values() if isinstance(r, dict) else [r]):
    leaf.block_until_ready()


def profile(fn, n, top):
  for _ in range(200):  # compile and settle outside the profile
    _block(fn())
  prof = cProfile.Profile()
  prof.enable()
  for _ in range(n):
    r = fn()
  _block(r)
  prof.disable()
  st = pstats.Stats(prof)
  rows = []
  for (file, line, name), (cc, nc, tt, ct, _) in st.stats.items():
    if name == "<lambda>" and file == __file__:
      continue  # the benchmark's own wrapper
    short = f"{os.path.relpath(file, os.getcwd()) if file.startswith('/') else file}:{line}({name})"
    if file == "~":
      short = name  # builtins / C functions
    rows.append((tt, ct, nc, short))
  rows.sort(reverse=True)
  total = sum(r[0] for r in rows)
  print(f"  profiled total {total / n * 1e6:8.2f} µs/call")
  print(f"  {'calls/op':>8} {'own µs/op':>10} {'cum µs/op':>10}  function")
  for tt, ct, nc, short in rows[:top]:
    print(f"  {nc / n:8.2f} {tt / n * 1e6:10.3f} {ct / n * 1e6:10.3f}  {short}")


def _median_us(fn, n, reps=7):
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    for _ in range(n):
      fn()
    ts.append((time.perf_counter() - t0) / n * 1e6)
  return sorted(ts)[reps // 2]


def layers(jax, jnp, n):
  """Unprofiled µs/call of each layer of the jit call and the eager add/sin paths."""
  x = jax.device_put(np.arange(3, dtype=np.float32))
  y = jax.device_put(np.ones(3, dtype=np.float32))
  f = jax.jit(lambda v: v + 1.0)
  for _ in range(200):
    f(x).block_until_ready()
    jnp.add(x, y).block_until_ready()
    jnp.sin(x).block_until_ready()

  def jit_raw():
    e = next(iter(f._cache.values()))
    bufs = list(e.const_bufs) + [x._buf]
    return lambda: e.exe.execute(bufs)

  def prim(name):
    from tracejax._src.lax import elementwise as el
    return getattr(el, name + "_p")

  def eager_raw(name, args):
    from tracejax._src import dispatch
    p = prim(name)
    entry = next(v for k, v in dispatch._cache.items() if k[0] is p)
    bufs = [a._buf for a in args]
    return lambda: entry.exe.execute(bufs)

  def apply(name, args):
    from tracejax._src import dispatch
    p = prim(name)
    return lambda: dispatch.apply_primitive(p, *args)

  def bind(name, args):
    p = prim(name)
    return lambda: p.bind(*args)

  rows = [
      ("jit call", [
          ("jaxlib execute_sharded + handlers", jit_raw),
          ("jit(f)(x)", lambda: (lambda: f(x)))]),
      ("eager add", [
          ("jaxlib execute_sharded + handlers", lambda: eager_raw("add", (x, y))),
          ("dispatch.apply_primitive(add_p, x, y)", lambda: apply("add", (x, y))),
          ("add_p.bind(x, y)", lambda: bind("add", (x, y))),
          ("lax.add(x, y)", lambda: (lambda: jax.lax.add(x, y))),
          ("jnp.add(x, y)", lambda: (lambda: jnp.add(x, y))),
          ("x + y", lambda: (lambda: x + y))]),
      ("eager sin", [
          ("jaxlib execute_sharded + handlers", lambda: eager_raw("sin", (x,))),
          ("dispatch.apply_primitive(sin_p, x)", lambda: apply("sin", (x,))),
          ("sin_p.bind(x)", lambda: bind("sin", (x,))),
          ("lax.sin(x)", lambda: (lambda: jax.lax.sin(x))),
          ("jnp.sin(x)", lambda: (lambda: jnp.sin(x)))]),
  ]
  print("== layers (unprofiled, median of 7 x %d calls; each line includes those above)" % n)
  for title, steps in rows:
    print(f"  {title}")
    prev = None
    for label, make in steps:
      try:
        fn = make()
        fn()
        us = _median_us(fn, n)
      except Exception as e:  # noqa: BLE001 - internals moved: say so, keep going
        print(f"    {label:42s}      n/a ({type(e).__name__})")
        continue
      extra = f"  (+{us - prev:.2f})" if prev is not None else ""
      print(f"    {label:42s} {us:7.2f} µs{extra}")
      prev = us


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--calls", type=int, default=20000)
  p.add_argument("--top", type=int, default=15)
  p.add_argument("--only", default="jit,pytree,add,plus,sin")
  p.add_argument("--no-layers", action="store_true", help="skip the unprofiled layer table")
  args = p.parse_args()
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  import tracejax as jax
  import tracejax.numpy as jnp
  assert "jax" not in sys.modules, "tracejax imported the real jax package"
  if not args.no_layers:
    layers(jax, jnp, max(1000, args.calls // 4))
  all_cases = cases(jax, jnp)
  for name in args.only.split(","):
    title, fn = all_cases[name]
    for _ in range(200):
      _block(fn())
    print(f"\n== {title}: {wall_us(fn, args.calls):.2f} µs/call unprofiled")
    profile(fn, args.calls, args.top)


if __name__ == "__main__":
  main()
