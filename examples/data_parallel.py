"""Data-parallel training: the same small model trained on 1 device and on N devices.

    python examples/data_parallel.py --devices 4
    python examples/data_parallel.py --devices 4 --processes 2

On N devices each device gets 1/N of every batch, computes its gradient, and
`lax.pmean` averages the gradients across the devices (inside one `pmap`ped XLA
program), so every device applies the same update: the losses match the
1-device run up to float rounding. The two runs are printed side by side.

With `--processes P` the script starts itself as P local processes (each with
N/P CPU devices) joined by `jax.distributed.initialize` on 127.0.0.1: the `pmean`
then crosses processes (gloo over TCP), and each process feeds only its own part
of the batch. Process 0 prints the table.

Flags: --devices N (default 4), --processes P (default 1), --steps, --batch, --lr.
"""
import argparse
import os
import socket
import subprocess
import sys
import time


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--devices", type=int, default=4, help="devices in all (N)")
  p.add_argument("--processes", type=int, default=1, help="local processes (P)")
  p.add_argument("--steps", type=int, default=20)
  p.add_argument("--batch", type=int, default=64, help="global batch size")
  p.add_argument("--lr", type=float, default=0.2)
  p.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
  p.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
  a = p.parse_args(argv)
  if a.devices < 1 or a.processes < 1 or a.devices % a.processes:
    p.error("--devices must be a positive multiple of --processes")
  if a.batch % a.devices:
    p.error("--batch must be divisible by --devices")
  return a


# ---- the model: a 2-layer MLP regressing a fixed random function ----

def make_data(np, batch, steps, d_in=8):
  rng = np.random.RandomState(0)
  w_true = rng.randn(d_in, 1)
  xs = rng.randn(steps, batch, d_in).astype(np.float32)
  ys = np.sin(xs @ w_true).astype(np.float32)
  return xs, ys


def init_params(np, d_in=8, hidden=32):
  rng = np.random.RandomState(1)
  return {"w1": (rng.randn(d_in, hidden) / np.sqrt(d_in)).astype(np.float32),
          "b1": np.zeros(hidden, np.float32),
          "w2": (rng.randn(hidden, 1) / np.sqrt(hidden)).astype(np.float32),
          "b2": np.zeros(1, np.float32)}


def build(jax, lr):
  jnp, lax = jax.numpy, jax.lax

  def loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)

  def sgd(params, grads):
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

  @jax.jit
  def step_1(params, x, y):
    l, g = jax.value_and_grad(loss)(params, x, y)
    return sgd(params, g), l

  def step_n(params, x, y):   # one device's part; the others run the same program
    l, g = jax.value_and_grad(loss)(params, x, y)
    g = lax.pmean(g, "devices")
    return sgd(params, g), lax.pmean(l, "devices")

  return step_1, jax.pmap(step_n, axis_name="devices")


def train(a, process_id=0, num_processes=1):
  import numpy as np
  import tracejax as jax

  n_local = a.devices // num_processes
  xs, ys = make_data(np, a.batch, a.steps)
  params = init_params(np)
  step_1, step_n = build(jax, a.lr)
  # Each device holds a copy of the parameters (leading axis: this process's devices).
  replicated = jax.tree_util.tree_map(lambda p: np.stack([p] * n_local), params)
  per_device = a.batch // a.devices
  mine = slice(process_id * n_local, (process_id + 1) * n_local)
  losses_1, losses_n = [], []
  single = params
  t0 = time.perf_counter()
  for x, y in zip(xs, ys):
    single, l1 = step_1(single, x, y)
    xb = x.reshape(a.devices, per_device, -1)[mine]
    yb = y.reshape(a.devices, per_device, -1)[mine]
    replicated, ln = step_n(replicated, xb, yb)
    losses_1.append(float(l1))
    losses_n.append(float(np.asarray(ln)[0]))
  secs = time.perf_counter() - t0
  if process_id == 0:
    where = (f"{a.devices} devices" if num_processes == 1 else
             f"{a.devices} devices in {num_processes} processes")
    print(f"devices: {jax.device_count()} ({jax.local_device_count()} local), "
          f"processes: {jax.process_count()}")
    print(f"{'step':>4}  {'1 device':>12}  {where:>28}  {'|diff|':>9}")
    for i, (l1, ln) in enumerate(zip(losses_1, losses_n)):
      print(f"{i:>4}  {l1:>12.6f}  {ln:>28.6f}  {abs(l1 - ln):>9.2e}")
    worst = max(abs(u - v) for u, v in zip(losses_1, losses_n))
    print(f"largest difference: {worst:.2e} ({a.steps} steps in {secs:.2f} s)")
  return losses_1, losses_n


# ---- launching ----

def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def launch(a):
  """Start this script as `a.processes` workers and wait for them (killing the rest if
  one fails)."""
  port = _free_port()
  procs = []
  try:
    for pid in range(a.processes):
      cmd = [sys.executable, os.path.abspath(__file__), "--devices", str(a.devices),
             "--processes", str(a.processes), "--steps", str(a.steps), "--batch",
             str(a.batch), "--lr", str(a.lr), "--worker", str(pid), "--port", str(port)]
      procs.append(subprocess.Popen(cmd, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")))
    rcs = [p.wait() for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()
  bad = [(i, rc) for i, rc in enumerate(rcs) if rc]
  if bad:
    sys.exit(f"worker(s) failed: {bad}")


def main(argv=None):
  a = parse_args(argv)
  if a.processes > 1 and a.worker is None:
    return launch(a)
  n_local = a.devices // a.processes
  # The device count must be set before the backend starts (before the first array).
  os.environ["TRACEJAX_NUM_CPU_DEVICES"] = str(n_local)
  import tracejax as jax
  if a.worker is not None:
    jax.distributed.initialize(f"127.0.0.1:{a.port}", num_processes=a.processes,
                               process_id=a.worker, initialization_timeout=60,
                               heartbeat_timeout_seconds=30)
    try:
      train(a, a.worker, a.processes)
    finally:
      jax.distributed.shutdown()
  else:
    train(a)


if __name__ == "__main__":
  main()
