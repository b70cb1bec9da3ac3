"""Cross-process `psum`: 2 local processes (one CPU device each) joined by
`jax.distributed.initialize` on 127.0.0.1, `pmap(lambda x: lax.psum(x, 'i'))` over the
2 devices, so every call is one XLA program whose all-reduce goes through gloo (TCP)
between the processes.

The measured process is process 0; in `setup` it starts its peer (this script with
`--peer`, the same Python, so the same system) and the two run in lockstep: before
each round process 0 tells the peer how many calls to make over a pipe, and both make
them, blocking on every result (a collective needs both processes). Metrics, µs per
call: f32[1] (latency) and f32[65536] (256 KiB: bandwidth starts to matter).
NumPy column: not applicable.
"""
import atexit
import os
import socket
import subprocess
import sys

import _harness as H

SIZES = {"small": 1, "large": 65536}


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _functions(jax, np):
  f = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
  xs = {k: np.ones((1, n), np.float32) for k, n in SIZES.items()}
  return f, xs


def _run(f, x, n):
  y = None
  for _ in range(n):
    y = f(x)
    y.block_until_ready()
  return y


def setup(ctx):
  if ctx.system == "numpy":
    raise H.NotApplicable("no collectives")
  ctx.require("jax.distributed.initialize", "jax.pmap", "jax.lax.psum")
  jax, np = ctx.jax, ctx.np
  port = _free_port()
  peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--peer",
                           ctx.system, str(port)], stdin=subprocess.PIPE, text=True)

  def stop():
    if peer.poll() is None:
      try:
        peer.stdin.write("quit\n")
        peer.stdin.flush()
      except OSError:
        pass
    try:
      jax.distributed.shutdown()
    except Exception:  # noqa: BLE001 - the peer may be gone already
      pass
    try:
      peer.wait(timeout=20)
    except subprocess.TimeoutExpired:
      peer.kill()
      peer.wait()

  try:
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=0,
                               initialization_timeout=60)
  except Exception:
    peer.kill()
    peer.wait()
    raise
  atexit.register(stop)   # runs before the systems' own exit hooks (registered earlier)
  if jax.device_count() != 2:
    raise H.Skip(f"expected 2 global devices, found {jax.device_count()}")
  f, xs = _functions(jax, np)
  state = {"f": f, "xs": xs, "peer": peer}
  for k in SIZES:      # compile, then settle
    _tell(state, k, 50)
    _run(f, xs[k], 50)
  _tell(state, "small", 1)   # every call needs the peer's matching call
  out = _run(f, xs["small"], 1)
  ctx.check(np.asarray(out))
  return state


def _tell(state, key, n):
  state["peer"].stdin.write(f"{key} {n}\n")
  state["peer"].stdin.flush()


def measure(ctx, state):
  n = H.int_arg(ctx, "--calls", 100)
  out = []
  for k, size in SIZES.items():
    _tell(state, k, n)
    t0 = H.perf_counter()
    _run(state["f"], state["xs"][k], n)
    us = (H.perf_counter() - t0) / n * 1e6
    out.append(H.metric(f"psum_multiprocess.{k}",
                        f"psum f32[{size}] across 2 processes (gloo), blocked", us, "us"))
  return out


def _peer(system, port):
  """Process 1: join, then run the calls process 0 asks for until `quit`."""
  ctx = H.load(system)
  jax, np = ctx.jax, ctx.np
  jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=1,
                             initialization_timeout=60)
  jax.devices()   # start the backend now: process 0's waits for this one's topology
  f, xs = _functions(jax, np)
  for line in sys.stdin:
    parts = line.split()
    if not parts or parts[0] == "quit":
      break
    _run(f, xs[parts[0]], int(parts[1]))
  jax.distributed.shutdown()


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--peer":
    _peer(sys.argv[2], int(sys.argv[3]))
  else:
    raise SystemExit(H.main(setup=setup, measure=measure))
