"""Benchmark driver: tracejax, real JAX and NumPy side by side, as ratios from ONE run.

    python benchmarks/run.py [--only NAME,...] [--quick] [--json out.json]

Each workload (benchmarks/workloads/*.py) runs in its own subprocess per
system: tracejax and NumPy under this interpreter, real JAX under
$JAX_PYTHON (default /work/jaxvenv/bin/python), a separate virtual
environment, so the tracejax process never sees the `jax` package.

The machines are shared and noisy, so the systems are never measured one
after the other in blocks. Instead:
  * steady-state workloads keep one long-lived worker per system and
    alternate rounds between them (rotating who goes first);
  * fresh-process workloads (import time, first-call latency) start one
    process per system per round, in the same rotating order;
and every figure is the median over rounds. The ratio column is
tracejax / jax of those medians, both taken in this same run.
"""
import argparse
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKLOADS = os.path.join(HERE, "workloads")
sys.path.insert(0, WORKLOADS)
from _harness import PREFIX, SYSTEMS  # noqa: E402  (plain module, imports no jax)

DEFAULT_JAX_PYTHON = "/work/jaxvenv/bin/python"
# `--systems tracejax,jax,jax2` adds a second, independent JAX worker (same interpreter,
# flags and rotation as `jax`): the table then also gives jax2/jax, JAX against itself,
# the noise floor of that very run.
NOISE = "jax2"

# Targets on tracejax/jax (median ratios); rows without one are informational.
TARGETS = {
    "jit_call.dispatch": 1.0,
    "jit_call.blocked": 1.0,
    "jit_pytree.dispatch": 1.0,
    "jit_pytree.blocked": 1.0,
    "eager.add": 1.0,
    "eager.plus": 1.0,
    "eager.sin": 1.0,
    "first_call.cold": 1.0,
    # Issue 4 (control flow, convolutions): steady state within 5% of JAX, first call
    # no slower than JAX's.
    "scan_rnn.steady": 1.05,
    "scan_rnn.first_call": 1.0,
    "convnet.steady": 1.05,
    "convnet.first_call": 1.0,
    "while_batched.steady": 1.05,
    "while_batched.first_call": 1.0,
    # Issue 5 (jax.random): 10M normals under jit within 5% of JAX, first call included.
    "random_normal.steady": 1.05,
    "random_normal.first_call": 1.05,
    # Issue 10 (jax.scipy.linalg): batched expm under jit within 5% of JAX.
    "expm.steady": 1.05,
    # Issue 10 (jax.numpy.fft): fftn of f32[256, 256, 16] under jit within 5% of JAX.
    "fft.steady": 1.05,
    # Issue 10 (jax.checkpoint): jit(grad) of a rematerialized 20-layer MLP within 5% of JAX.
    "checkpoint_mlp.steady": 1.05,
    # Issue 10 (jax.numpy sorting): jnp.sort of f32[1M] under jit within 5% of JAX.
    "sort.steady": 1.05,
    # Issue 14: MNIST-sized stax models, steady state within 5% of JAX.
    "mlp_mnist.steady": 1.05,
    "mlp_mnist_vmap.steady": 1.05,
    "stax_convnet.steady": 1.05,
    # Issue 9 (shardings and SPMD): a data-parallel MLP step on 4 devices within 5% of JAX.
    "dp_mlp.pmap": 1.05,
    "dp_mlp.jit_sharded": 1.05,
    # Issue 12 (startup): `import tracejax.numpy` at most half of `import jax.numpy`,
    # and the first eager op after it no slower than JAX's.
    "import.numpy": 0.5,
    "import.first_op": 1.0,
}


# ---- what to run ----

class Spec:
  """One workload run: which script, how (worker / once / import), how often, with which env.

  env: {system: {VAR: value or None}}; None removes the variable. The string
  "{tmp}" in a value is replaced by a temp dir private to this spec and system.
  prime: run once per system, unmeasured, before the rounds (fills caches).
  group: another name that selects this spec in --only / --skip (a workload's first
  call and steady state are two specs, and `--only scan_rnn` should run both).
  """

  def __init__(self, name, script=None, mode="worker", rounds=25, args=(), env=None,
               prime=False, timeout=600, note="", group=None):
    self.name, self.script, self.mode, self.rounds = name, script, mode, rounds
    self.args, self.env, self.prime, self.timeout = list(args), env or {}, prime, timeout
    self.note, self.group = note, group

  def named(self, names):
    return self.name in names or (self.group is not None and self.group in names)


_COLD = {
    "tracejax": {"TRACEJAX_COMPILATION_CACHE": "0"},
    "jax": {"JAX_ENABLE_COMPILATION_CACHE": "false", "JAX_COMPILATION_CACHE_DIR": None},
}
_WARM = {
    "tracejax": {"TRACEJAX_COMPILATION_CACHE": "1", "TRACEJAX_CACHE_DIR": "{tmp}",
                 "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"},  # as JAX's below
    "jax": {"JAX_ENABLE_COMPILATION_CACHE": "true", "JAX_COMPILATION_CACHE_DIR": "{tmp}",
            # JAX only persists programs that took >= 1 s to compile by default.
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"},
}

SPECS = [
    Spec("import", mode="import", rounds=7),
    Spec("jit_call", "jit_call.py", rounds=25, args=["--calls", "200"]),
    Spec("jit_pytree", "jit_pytree.py", rounds=25, args=["--calls", "200"]),
    Spec("eager_op", "eager_op.py", rounds=25, args=["--calls", "200"]),
    Spec("first_call", "first_call.py", mode="once", rounds=5, args=["--cache", "cold"],
         env=_COLD),
    Spec("first_call_warm", "first_call.py", mode="once", rounds=5, args=["--cache", "warm"],
         env=_WARM, prime=True),
    # For a later issue: these skip (with the reason) where tracejax lacks the API.
    Spec("mlp_first_call", "mlp.py", mode="once", rounds=5, env=_COLD),
    Spec("mlp", "mlp.py", rounds=15, args=["--calls", "20"]),
    Spec("vmap_grad", "per_example_grads.py", rounds=15, args=["--calls", "20"]),
    Spec("grad_trace", "grad_trace.py", rounds=5),
    # Issue 4: control flow and convolutions, first call (fresh process, caches off)
    # and steady state; `--only NAME` runs both.
    Spec("scan_rnn_first_call", "scan_rnn.py", mode="once", rounds=5, env=_COLD,
         group="scan_rnn"),
    Spec("scan_rnn", "scan_rnn.py", rounds=15, args=["--calls", "20"]),
    Spec("convnet_first_call", "convnet.py", mode="once", rounds=5, env=_COLD,
         group="convnet"),
    Spec("convnet", "convnet.py", rounds=15, args=["--calls", "10"]),
    Spec("while_batched_first_call", "while_batched.py", mode="once", rounds=5, env=_COLD,
         group="while_batched"),
    Spec("while_batched", "while_batched.py", rounds=15, args=["--calls", "20"]),
    # Issue 5: 10M normals under jit, partitionable stream (JAX's default) and, for
    # information, the 2020 stream; `--only random_normal` runs all four.
    Spec("random_normal_first_call", "random_normal.py", mode="once", rounds=5, env=_COLD,
         group="random_normal"),
    Spec("random_normal", "random_normal.py", rounds=10, args=["--calls", "5"]),
    Spec("random_normal_original_first_call", "random_normal.py", mode="once", rounds=5,
         args=["--stream", "original"], env=_COLD, group="random_normal"),
    Spec("random_normal_original", "random_normal.py", rounds=10,
         args=["--stream", "original", "--calls", "5"], group="random_normal"),
    # Issue 10: jax.scipy.linalg.expm of f32[32, 64, 64] under jit, steady state.
    Spec("expm", "expm.py", rounds=10, args=["--calls", "10"]),
    # Issue 10: jax.numpy.fft.fftn of f32[256, 256, 16] under jit, steady state.
    Spec("fft", "fft.py", rounds=15, args=["--calls", "10"]),
    # Issue 10: jnp.sort of f32[1_000_000] under jit, steady state.
    Spec("sort", "sort.py", rounds=10, args=["--calls", "3"]),
    # Issue 10: jit(grad) of a 20-layer MLP with each layer under jax.checkpoint, and
    # without (time and XLA temp memory, both systems).
    Spec("checkpoint_mlp", "checkpoint_mlp.py", rounds=10, args=["--calls", "10"]),
    # Issue 14: an MLP 784-512-512-10 (b128), from stax and written per example under
    # vmap, and a stax convnet training step (b32), steady state (wall and process CPU
    # time per call); `--only mlp_mnist` runs both MLPs.
    Spec("mlp_mnist", "mlp_mnist.py", rounds=15, args=["--calls", "10"]),
    Spec("mlp_mnist_vmap", "mlp_mnist.py", rounds=15, args=["--calls", "10", "--style", "vmap"],
         group="mlp_mnist"),
    Spec("stax_convnet", "stax_convnet.py", rounds=15, args=["--calls", "10"]),
    # Issue 9: cached pmap call of a small function on 4 CPU devices (both systems).
    Spec("pmap_call", "pmap_call.py", rounds=15, args=["--calls", "200"],
         env={"tracejax": {"TRACEJAX_NUM_CPU_DEVICES": "4"},
              "jax": {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
              "numpy": {}}),
    # Issue 9: a data-parallel MLP training step on 4 CPU devices, with pmap + pmean and
    # with jit + NamedSharding (both systems, 4 devices each).
    Spec("dp_mlp", "dp_mlp.py", rounds=10, args=["--calls", "10"],
         env={"tracejax": {"TRACEJAX_NUM_CPU_DEVICES": "4"},
              "jax": {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
              "numpy": {}}),
    # Issue 9: psum across 2 local processes (jax.distributed, gloo), one device each.
    Spec("psum_multiprocess", "psum_multiprocess.py", rounds=10, args=["--calls", "50"],
         env={"tracejax": {"TRACEJAX_NUM_CPU_DEVICES": None}, "jax": {"XLA_FLAGS": None},
              "numpy": {}}),
]

# Import rows: (key, label, {system: module or None}).
IMPORTS = [
    ("import.top", "import tracejax | jax | numpy",
     {"tracejax": "tracejax", "jax": "jax", "numpy": "numpy"}),
    ("import.numpy", "import tracejax.numpy | jax.numpy",
     {"tracejax": "tracejax.numpy", "jax": "jax.numpy", "numpy": None}),
    # `import tracejax` is lazy: this row also looks up the API a program uses first.
    ("import.api", "import X; X.jit, X.numpy, X.grad",
     {"tracejax": "tracejax", "jax": "jax", "numpy": None},
     "import time; t = time.perf_counter(); import {mod}; {mod}.jit; {mod}.numpy.add; "
     "{mod}.grad; print({prefix!r} + repr(time.perf_counter() - t))"),
    # The first eager op right after `import X.numpy as jnp` (jnp.add of two f32[3] host
    # arrays, until ready), on-disk caches off: laziness must not move cost here.
    ("import.first_op", "first jnp.add after import (cold)",
     {"tracejax": "tracejax.numpy", "jax": "jax.numpy", "numpy": None},
     "import os; os.environ['TRACEJAX_COMPILATION_CACHE'] = '0'; "
     "os.environ['JAX_ENABLE_COMPILATION_CACHE'] = 'false'; import time, numpy as np; "
     "import {mod} as jnp; a = np.ones(3, np.float32); b = np.ones(3, np.float32); "
     "t = time.perf_counter(); jnp.add(a, b).block_until_ready(); "
     "print({prefix!r} + repr(time.perf_counter() - t))"),
]


# ---- processes ----

def _system_flag(system):
  return "jax" if system == NOISE else system


def python_for(system):
  if system in ("jax", NOISE):
    return os.environ.get("JAX_PYTHON", DEFAULT_JAX_PYTHON)
  return sys.executable


def env_for(system, overrides=None, tmp=None):
  env = dict(os.environ)
  if system in ("jax", NOISE):
    # Keep the checkout off real JAX's path: nothing of tracejax may leak in.
    env.pop("PYTHONPATH", None)
  else:
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  for k, v in (overrides or {}).items():
    if v is None:
      env.pop(k, None)
    else:
      env[k] = v.replace("{tmp}", tmp) if tmp else v
  return env


def _parse(text):
  """The last protocol message in `text`, or None."""
  msg = None
  for line in text.splitlines():
    if line.startswith(PREFIX):
      msg = json.loads(line[len(PREFIX):])
  return msg


def _tail(text, n=3):
  lines = [l for l in (text or "").strip().splitlines() if l.strip()]
  return " / ".join(lines[-n:])[-400:]


class Worker:
  """A long-lived workload process for one system, spoken to over stdin/stdout."""

  def __init__(self, spec, system, env):
    self.system = system
    self.err = tempfile.TemporaryFile(mode="w+")
    cmd = [python_for(system), os.path.join(WORKLOADS, spec.script), "--system",
           _system_flag(system), "--mode", "worker", *spec.args]
    self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=self.err, text=True, env=env, cwd=WORKLOADS)
    self.q = queue.Queue()
    threading.Thread(target=self._read, daemon=True).start()

  def _read(self):
    for line in self.proc.stdout:
      if line.startswith(PREFIX):
        self.q.put(json.loads(line[len(PREFIX):]))
    self.q.put(None)

  def recv(self, timeout):
    try:
      msg = self.q.get(timeout=timeout)
    except queue.Empty:
      return {"error": f"no answer in {timeout}s"}
    if msg is None:
      self.proc.wait()
      self.err.seek(0)
      return {"error": f"worker exited (rc={self.proc.returncode}): {_tail(self.err.read())}"}
    return msg

  def send(self, cmd):
    try:
      self.proc.stdin.write(cmd + "\n")
      self.proc.stdin.flush()
    except (BrokenPipeError, OSError):
      pass

  def close(self):
    self.send("quit")
    try:
      self.proc.stdin.close()
      self.proc.wait(timeout=30)
    except (subprocess.TimeoutExpired, OSError):
      self.proc.kill()
    self.err.close()


def run_once(spec, system, env):
  cmd = [python_for(system), os.path.join(WORKLOADS, spec.script), "--system",
         _system_flag(system), "--mode", "once", *spec.args]
  try:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=WORKLOADS,
                       timeout=spec.timeout)
  except subprocess.TimeoutExpired:
    return {"error": f"timed out after {spec.timeout}s"}
  msg = _parse(p.stdout)
  if msg is None:
    return {"error": f"rc={p.returncode}: {_tail(p.stderr)}"}
  return msg


def rotate(seq, k):
  k %= len(seq)
  return list(seq[k:]) + list(seq[:k])


# ---- results ----

class Results:
  """Samples per (metric key, system), plus a status where a system could not run."""

  def __init__(self):
    self.rows = {}      # key -> {"label", "unit", "spec"}; insertion order is table order
    self.samples = {}   # (key, system) -> [float]
    self.status = {}    # (spec name, system) -> ("skip"|"na"|"error", reason)
    self.spec_keys = {}  # spec name -> [keys]
    self.checks = {}    # (spec name, system) -> [sum |leaf|, leaf count] of a result

  def check(self, spec, system, msg):
    if msg.get("check") is not None:
      self.checks.setdefault((spec.name, system), msg["check"])

  def mismatches(self):
    """Specs whose tracejax (or NumPy) result disagrees with real JAX's."""
    out = []
    for (spec, system), (total, n) in self.checks.items():
      ref = self.checks.get((spec, "jax"))
      if system == "jax" or ref is None:
        continue
      rtotal, rn = ref
      if n != rn or abs(total - rtotal) > 1e-3 * max(abs(total), abs(rtotal)) + 1e-6:
        out.append(f"  {spec} [{system}] RESULT DIFFERS from jax: checksum {total:.6g} over "
                   f"{n} leaves vs {rtotal:.6g} over {rn}")
    return out

  def add(self, spec, system, metrics):
    for m in metrics:
      if m["key"] not in self.rows:
        self.rows[m["key"]] = {"label": m["label"], "unit": m["unit"], "spec": spec.name}
        self.spec_keys.setdefault(spec.name, []).append(m["key"])
      self.samples.setdefault((m["key"], system), []).append(m["value"])

  def fail(self, spec, system, msg):
    for kind in ("skip", "na", "error"):
      if kind in msg:
        self.status.setdefault((spec.name, system), (kind, msg[kind]))
        return True
    return False

  def median(self, key, system):
    vs = self.samples.get((key, system))
    return statistics.median(vs) if vs else None


def run_worker_spec(spec, systems, res, log):
  workers = {s: Worker(spec, s, env_for(s, spec.env.get(_system_flag(s)))) for s in systems}
  live = []
  try:
    for s, w in workers.items():  # setups ran concurrently; none of it is timed
      msg = w.recv(spec.timeout)
      if not res.fail(spec, s, msg):
        res.check(spec, s, msg)
        live.append(s)
    for r in range(spec.rounds):
      for s in rotate(live, r):
        if (spec.name, s) in res.status:
          continue
        workers[s].send("go")
        msg = workers[s].recv(spec.timeout)
        if not res.fail(spec, s, msg):
          res.add(spec, s, msg["metrics"])
      log(".")
  finally:
    for w in workers.values():
      w.close()


def run_once_spec(spec, systems, res, log):
  tmps = {s: tempfile.mkdtemp(prefix=f"tjbench-{spec.name}-{s}-") for s in systems}
  try:
    envs = {s: env_for(s, spec.env.get(_system_flag(s)), tmps[s]) for s in systems}
    if spec.prime:
      for s in systems:
        res.fail(spec, s, run_once(spec, s, envs[s]))
    for r in range(spec.rounds):
      for s in rotate(systems, r):
        if (spec.name, s) in res.status:
          continue
        msg = run_once(spec, s, envs[s])
        if not res.fail(spec, s, msg):
          res.check(spec, s, msg)
          res.add(spec, s, msg["metrics"])
      log(".")
  finally:
    for d in tmps.values():
      shutil.rmtree(d, ignore_errors=True)


_IMPORT_SNIPPET = ("import time; t = time.perf_counter(); import {mod}; "
                   "print({prefix!r} + repr(time.perf_counter() - t))")


def run_import_spec(spec, systems, res, log):
  for key, label, mods, *snippet in IMPORTS:
    sub = Spec(key, mode="import")
    todo = [s for s in systems if mods.get(s)]
    for s in systems:
      if not mods.get(s):
        res.status[(key, s)] = ("na", "")
    envs = {s: env_for(s) for s in todo}
    # Both systems import from compiled bytecode, as an installed package does: with
    # PYTHONDONTWRITEBYTECODE set (some CI and dev machines set it) the checkout has no
    # .pyc files and every round would compile tracejax's sources anew (~2x the import
    # time) while the jax venv's .pyc were written by pip. A private cache directory
    # per system, filled by the unmeasured round below, keeps the checkout untouched.
    pycache = tempfile.mkdtemp(prefix="tjbench-pycache-")
    for s in todo:
      envs[s].pop("PYTHONDONTWRITEBYTECODE", None)
      envs[s]["PYTHONPYCACHEPREFIX"] = os.path.join(pycache, s)

    def once(s):
      code = (snippet[0] if snippet else _IMPORT_SNIPPET).format(mod=mods[s], prefix=PREFIX)
      p = subprocess.run([python_for(s), "-c", code], capture_output=True, text=True,
                         env=envs[s], cwd=tempfile.gettempdir(), timeout=spec.timeout)
      for line in p.stdout.splitlines():
        if line.startswith(PREFIX):
          return float(line[len(PREFIX):])
      return {"skip" if s == "tracejax" else "error": f"import {mods[s]} failed: "
              f"{_tail(p.stderr, 1)}"}

    for s in todo:  # unmeasured: warms the page cache and .pyc files
      out = once(s)
      if isinstance(out, dict):
        res.fail(sub, s, out)
    for r in range(spec.rounds):
      for s in rotate(todo, r):
        if (key, s) in res.status:
          continue
        out = once(s)
        if isinstance(out, dict):
          res.fail(sub, s, out)
        else:
          res.add(sub, s, [{"key": key, "label": label, "value": out * 1e3, "unit": "ms"}])
      log(".")
    shutil.rmtree(pycache, ignore_errors=True)
    if key not in res.rows:
      res.rows[key] = {"label": label, "unit": "ms", "spec": key}
      res.spec_keys.setdefault(key, []).append(key)


# ---- the table ----

def fmt(v, unit):
  if v is None:
    return None
  unit = "µs" if unit == "us" else unit
  if v >= 100:
    return f"{v:.0f} {unit}"
  if v >= 10:
    return f"{v:.1f} {unit}"
  return f"{v:.2f} {unit}"


def cell(res, key, system):
  spec = res.rows[key]["spec"]
  st = res.status.get((spec, system))
  v = res.median(key, system)
  if v is not None:
    return fmt(v, res.rows[key]["unit"])
  if st is None:
    return "—"
  return {"skip": "skip", "na": "—", "error": "ERROR"}[st[0]]


def table(res, systems):
  head = ["workload", "tracejax", "jax", "numpy", "tracejax/jax", "target"]
  noise = NOISE in systems
  if noise:
    head.insert(5, "jax2/jax")
  rows = []
  for key, row in res.rows.items():
    tj, jx = res.median(key, "tracejax"), res.median(key, "jax")
    ratio = f"{tj / jx:.2f}x" if tj is not None and jx else "—"
    target = TARGETS.get(key)
    if target is None:
      tgt = ""
    elif tj is None or not jx:
      tgt = f"≤ {target:g}"
    else:
      tgt = f"≤ {target:g} " + ("met" if tj / jx <= target else "MISSED")
    cells = [cell(res, key, s) if s in systems else "" for s in SYSTEMS]
    rows.append([row["label"], *cells, ratio, tgt])
    if noise:
      j2 = res.median(key, NOISE)
      rows[-1].insert(5, f"{j2 / jx:.2f}x" if j2 is not None and jx else "—")
  widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]

  def line(r):
    return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))) + " |"
  out = [line(head), "|" + "|".join(("-" * (w + 1)) + (":" if i else "-")
                                    for i, w in enumerate(widths)) + "|"]
  out += [line(r) for r in rows]
  return "\n".join(out)


def notes(res):
  out = res.mismatches()
  for (spec, system), (kind, reason) in res.status.items():
    if kind in ("skip", "error"):
      out.append(f"  {spec} [{system}] {kind}: {reason}")
  return out


def header():
  def ver(py, code):
    try:
      return subprocess.run([py, "-c", code], capture_output=True, text=True,
                            timeout=120).stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
      return "unavailable"
  jv = ver(python_for("jax"), "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)")
  lv = ver(sys.executable, "import jaxlib, numpy; print(jaxlib.__version__, numpy.__version__)")
  return (f"host: {platform.node()}  cpus: {os.cpu_count()}  python {platform.python_version()}"
          f"  JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS', '')}\n"
          f"tracejax env: jaxlib/numpy {lv}   jax env ({python_for('jax')}): jax/jaxlib {jv}")


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--only", default="", help="comma-separated workload names: "
                 + ",".join(s.name for s in SPECS))
  p.add_argument("--skip", default="", help="comma-separated workload names to leave out")
  p.add_argument("--systems", default=",".join(SYSTEMS))
  p.add_argument("--quick", action="store_true", help="a fifth of the rounds (smoke test)")
  p.add_argument("--rounds-scale", type=float, default=1.0)
  p.add_argument("--json", default="", help="also write every sample to this file")
  args = p.parse_args(argv)

  # Same backend for both: tracejax reads JAX_PLATFORMS too.
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  systems = [s for s in args.systems.split(",") if s]
  only = {s for s in args.only.split(",") if s}
  skip = {s for s in args.skip.split(",") if s}
  scale = args.rounds_scale * (0.2 if args.quick else 1.0)
  specs = [s for s in SPECS if (not only or s.named(only)) and not s.named(skip)]

  print(header(), flush=True)
  res = Results()
  t_start = time.time()
  for spec in specs:
    spec.rounds = max(2, round(spec.rounds * scale))
    sys.stderr.write(f"{spec.name} ({spec.mode}, {spec.rounds} rounds) ")
    sys.stderr.flush()
    t0 = time.time()
    run = {"worker": run_worker_spec, "once": run_once_spec,
           "import": run_import_spec}[spec.mode]
    run(spec, systems, res, lambda s: (sys.stderr.write(s), sys.stderr.flush()))
    sys.stderr.write(f" {time.time() - t0:.0f}s\n")

  print(f"\nmedians over rounds; ratio = tracejax/jax from this run "
        f"({time.time() - t_start:.0f}s total)\n")
  print(table(res, systems))
  n = notes(res)
  if n:
    print("\nnotes:")
    print("\n".join(n))
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"rows": res.rows,
                 "samples": {f"{k}|{s}": v for (k, s), v in res.samples.items()},
                 "status": {f"{k}|{s}": v for (k, s), v in res.status.items()},
                 "checks": {f"{k}|{s}": v for (k, s), v in res.checks.items()}}, f, indent=1)
  return 0


if __name__ == "__main__":
  raise SystemExit(main())
