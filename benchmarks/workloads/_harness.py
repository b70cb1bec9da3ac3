"""Plumbing shared by the workload scripts: the `--system` flag, and the driver protocol.

A workload script is run by `benchmarks/run.py` as
`python WORKLOAD.py --system tracejax|jax|numpy --mode worker|once`:

* `--mode worker`: a long-lived process. It imports the system, runs the
  workload's `setup(ctx)` (build functions, warm up), answers `ready`, and
  then measures one round per `go` line it reads on stdin. The driver keeps
  one worker per system and alternates rounds between them, so a burst of
  noise on the (shared) machine hits every system alike; it reports medians.
* `--mode once`: a fresh interpreter that measures one sample with `once(ctx)`
  and exits (first-call latency needs cold in-process caches).

Every answer is one stdout line starting with PREFIX followed by JSON, so
stray prints and library warnings never confuse the driver.

Run a workload on its own (no driver) with `--standalone [--rounds N]`: it
prints the median of each metric.
"""
import argparse
import json
import statistics
import sys
import time
import traceback

PREFIX = "@@BENCH "
SYSTEMS = ("tracejax", "jax", "numpy")

perf_counter = time.perf_counter


class Skip(Exception):
  """This system cannot run the workload (missing API): shown as `skip` + reason."""


class NotApplicable(Exception):
  """The workload has no meaning for this system (e.g. jit under NumPy): shown as `—`."""


class Ctx:
  """What a workload sees: the system's name and its modules.

  `jax`/`jnp` are tracejax/tracejax.numpy or the real ones (None under NumPy);
  `np` is always NumPy; `argv` holds the workload's own extra arguments.
  """

  def __init__(self, system, jax, jnp, np, argv):
    self.system, self.jax, self.jnp, self.np, self.argv = system, jax, jnp, np, argv
    self.checksum = None

  def check(self, tree):
    """Record a checksum of a result (sum of |leaf| and leaf count) for the driver.

    A fast but wrong answer is no result: the driver compares the checksums of
    tracejax and JAX and flags a workload whose results disagree.
    """
    np = self.np
    if self.jax is not None:
      leaves = self.jax.tree_util.tree_leaves(tree)
    else:
      leaves = list(tree.values()) if isinstance(tree, dict) else (
          list(tree) if isinstance(tree, (list, tuple)) else [tree])
    total = sum(float(np.abs(np.asarray(l, dtype=np.float64)).sum()) for l in leaves)
    self.checksum = [total, len(leaves)]
    return tree

  def require(self, *names):
    """Raise Skip unless every dotted name (`jax.value_and_grad`, `jnp.tanh`) exists."""
    missing = []
    for name in names:
      root, _, rest = name.partition(".")
      obj = {"jax": self.jax, "jnp": self.jnp, "np": self.np}[root]
      for part in rest.split(".") if rest else ():
        if not hasattr(obj, part):
          obj = None
          break
        obj = getattr(obj, part)
      if obj is None:
        missing.append(name.replace("jax.", f"{self.system}.", 1)
                       .replace("jnp.", f"{self.system}.numpy.", 1))
    if missing:
      raise Skip("missing API: " + ", ".join(missing))

  def block(self, tree):
    """Wait for every array in `tree` (jax.block_until_ready where the system has it)."""
    if self.jax is None:
      return tree
    if hasattr(self.jax, "block_until_ready"):
      return self.jax.block_until_ready(tree)
    for leaf in self.jax.tree_util.tree_leaves(tree):
      leaf.block_until_ready()
    return tree


def load(system, argv=()):
  """Import `system` the way user code would, and return a Ctx."""
  import numpy as np
  if system == "tracejax":
    import tracejax as jax
    import tracejax.numpy as jnp
    # The comparison is meaningless if tracejax quietly leaned on real JAX.
    assert "jax" not in sys.modules, "tracejax imported the real jax package"
  elif system == "jax":
    import jax
    import jax.numpy as jnp
  elif system == "numpy":
    jax = jnp = None
  else:
    raise ValueError(f"unknown system {system!r}; expected one of {SYSTEMS}")
  return Ctx(system, jax, jnp, np, list(argv))


def emit(obj):
  sys.stdout.write(PREFIX + json.dumps(obj) + "\n")
  sys.stdout.flush()


def metric(key, label, value, unit):
  """One measured figure; `key` is stable (targets refer to it), `label` is for people."""
  return {"key": key, "label": label, "value": float(value), "unit": unit}


def _failure(exc):
  if isinstance(exc, Skip):
    return {"skip": str(exc)}
  if isinstance(exc, NotApplicable):
    return {"na": str(exc) or "not applicable"}
  tb = traceback.format_exc()
  sys.stderr.write(tb)
  last = tb.strip().splitlines()[-1]
  return {"error": last[:300]}


def _load_or_report(args, rest):
  try:
    return load(args.system, rest), None
  except Exception as e:  # noqa: BLE001 - a broken import is a result to report
    if args.system == "tracejax" and isinstance(e, ImportError):
      return None, {"skip": f"cannot import tracejax: {e}"}
    return None, _failure(e)


def main(setup=None, measure=None, once=None):
  """Entry point of a workload script; pass the functions the workload has.

  setup(ctx) -> state; measure(ctx, state) -> [metric(...)]: one worker round.
  once(ctx) -> [metric(...)]: one fresh-process sample.
  """
  p = argparse.ArgumentParser()
  p.add_argument("--system", choices=SYSTEMS, required=True)
  p.add_argument("--mode", choices=("worker", "once"), default=None)
  p.add_argument("--standalone", action="store_true",
                 help="run without the driver and print medians")
  p.add_argument("--rounds", type=int, default=10)
  args, rest = p.parse_known_args()
  mode = args.mode or ("worker" if measure is not None else "once")
  if args.standalone:
    return _standalone(args, rest, mode, setup, measure, once)

  ctx, fail = _load_or_report(args, rest)
  if fail is not None:
    emit(fail)
    return 0
  if mode == "once":
    try:
      ms = once(ctx)
      emit({"metrics": ms, "check": ctx.checksum})
    except Exception as e:  # noqa: BLE001
      emit(_failure(e))
    return 0

  try:
    state = setup(ctx) if setup is not None else None
  except Exception as e:  # noqa: BLE001
    emit(_failure(e))
    return 0
  emit({"ready": True, "check": ctx.checksum})
  for line in sys.stdin:
    cmd = line.strip()
    if cmd == "quit":
      break
    if cmd != "go":
      continue
    try:
      emit({"metrics": measure(ctx, state)})
    except Exception as e:  # noqa: BLE001
      emit(_failure(e))
  return 0


def _standalone(args, rest, mode, setup, measure, once):
  ctx = load(args.system, rest)
  samples = {}
  labels = {}
  if mode == "worker":
    state = setup(ctx) if setup is not None else None
  for _ in range(args.rounds):
    ms = measure(ctx, state) if mode == "worker" else once(ctx)
    for m in ms:
      samples.setdefault(m["key"], []).append(m["value"])
      labels[m["key"]] = (m["label"], m["unit"])
  for k, vs in samples.items():
    label, unit = labels[k]
    print(f"{label:55s} {statistics.median(vs):12.3f} {unit}  (n={len(vs)})")
  return 0


def int_arg(ctx, name, default):
  """The integer after `name` in the workload's extra arguments, else `default`."""
  argv = ctx.argv
  for i, a in enumerate(argv):
    if a == name and i + 1 < len(argv):
      return int(argv[i + 1])
    if a.startswith(name + "="):
      return int(a.split("=", 1)[1])
  return default


def str_arg(ctx, name, default):
  argv = ctx.argv
  for i, a in enumerate(argv):
    if a == name and i + 1 < len(argv):
      return argv[i + 1]
    if a.startswith(name + "="):
      return a.split("=", 1)[1]
  return default


def _waited_calls(f, x, n, block):
  """`n` calls `f(x)`, each result waited for (the loop calls nothing else)."""
  if block is None:
    for _ in range(n):
      f(x).block_until_ready()
  else:
    for _ in range(n):
      block(f(x))


def steady_with_cpu(ctx, step, args, n):
  """`n` blocked calls `step(*args)`: (wall µs, process CPU µs) per call. The CPU time
  counts every thread, so it stays readable when the machine is loaded."""
  block = ctx.block
  c0 = time.process_time()
  t0 = perf_counter()
  for _ in range(n):
    block(step(*args))
  t1 = perf_counter()
  c1 = time.process_time()
  return (t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6


def call_latency(ctx, f, x, key, dispatch_label, blocked_label, block=None):
  """The two per-call figures of a cached call `f(x)`, in microseconds per call.

  `key.dispatch`: `--calls` calls back to back, only the last result waited for (what
  a Python loop pays, queued work included); `key.blocked`: every result waited for
  (the round-trip latency). Results are waited for with `.block_until_ready()`, or
  with `block(result)` when given (a pytree result). Under NumPy nothing is
  asynchronous: one plain loop, reported as both.

  Example:
    >>> call_latency(ctx, f, x, "jit_call", "jit call, dispatch", "jit call, blocked")
    ... # doctest: +SKIP
  """
  n = int_arg(ctx, "--calls", 200)
  pc = perf_counter
  if ctx.system == "numpy":
    t0 = pc()
    for _ in range(n):
      f(x)
    dispatch = blocked = (pc() - t0) / n * 1e6
  else:
    t0 = pc()
    for _ in range(n):
      y = f(x)
    if block is None:
      y.block_until_ready()
    else:
      block(y)
    t1 = pc()
    _waited_calls(f, x, n, block)
    t2 = pc()
    dispatch, blocked = (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6
  return [metric(f"{key}.dispatch", dispatch_label, dispatch, "us"),
          metric(f"{key}.blocked", blocked_label, blocked, "us")]


def warm_call(ctx, f, x, block=None, calls=200):
  """Compile `f` at `x` and let the allocator and caches settle (`calls` waited-for
  calls), record the result's checksum; returns `(f, x)`, the state that
  `call_latency_measure`'s `measure` takes. `block` as in `call_latency`."""
  _waited_calls(f, x, calls, block)
  ctx.check(f(x))
  return f, x


def call_latency_measure(key, dispatch_label, blocked_label, pytree=False):
  """The `measure(ctx, state)` of a workload timing a cached call: state is `(f, x)`
  and the figures are `call_latency`'s (a `pytree` result is waited for with
  `ctx.block`)."""
  def measure(ctx, state):
    f, x = state
    return call_latency(ctx, f, x, key, dispatch_label, blocked_label,
                        block=ctx.block if pytree else None)
  return measure
