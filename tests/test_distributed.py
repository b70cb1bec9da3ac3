"""`jax.distributed` and `multihost_utils`: several real processes on 127.0.0.1.

Each test starts worker processes (this file run as a script), each with 2 CPU
devices, and always kills them (try/finally). The workers print one `RESULT <json>`
line; the test compares it with the same computation done in one process (NumPy).
"""
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---- the data-parallel step, as the workers run it and as NumPy computes it ----

def _problem(n_devices, per_device=2, d_in=3, d_out=2):
  rng = np.random.RandomState(0)
  w = rng.randn(d_in, d_out).astype(np.float32)
  x = rng.randn(n_devices * per_device, d_in).astype(np.float32)
  y = rng.randn(n_devices * per_device, d_out).astype(np.float32)
  return w, x, y


def _numpy_step(w, x, y, lr=0.1):
  """Loss mean((tanh(x @ w) - y)^2) and one SGD step, by hand (float64)."""
  w, x, y = (a.astype(np.float64) for a in (w, x, y))
  h = np.tanh(x @ w)
  loss = np.mean((h - y) ** 2)
  g = x.T @ (2 * (h - y) / h.size * (1 - h ** 2))
  return w - lr * g, loss


# ---- the worker (this file run as a script) ----

def _worker(mode, pid, nproc, port):
  os.environ["TRACEJAX_NUM_CPU_DEVICES"] = "2"
  import tracejax as jax
  import tracejax.numpy as jnp
  from tracejax import lax
  from tracejax.experimental import multihost_utils as mu

  timeout = 5 if mode == "lonely" else 30
  jax.distributed.initialize(f"127.0.0.1:{port}", nproc, pid,
                             initialization_timeout=timeout,
                             heartbeat_timeout_seconds=4 if mode == "dies" else 10,
                             shutdown_timeout_seconds=10)
  if mode == "dies":
    if pid == 1:
      os._exit(3)   # vanishes without a word
    time.sleep(0.5)
    mu.sync_global_devices("never met")
    print("RESULT " + json.dumps({"unexpected": "barrier passed"}), flush=True)
    return
  res = {"devices": [d.id for d in jax.devices()],
         "local": [d.id for d in jax.local_devices()],
         "process_index": jax.process_index(), "process_count": jax.process_count(),
         "device_process": [d.process_index for d in jax.devices()],
         "device_count": jax.device_count(), "local_device_count": jax.local_device_count()}

  def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

  def step(w, x, y):
    l, g = jax.value_and_grad(loss)(w, x, y)
    return w - 0.1 * lax.pmean(g, "batch"), lax.pmean(l, "batch"), lax.psum(1, "batch")

  n = jax.device_count()
  w, x, y = _problem(n)
  local = slice(2 * pid, 2 * pid + 2)   # this process's 2 devices' batches
  xs, ys = x.reshape(n, 2, -1)[local], y.reshape(n, 2, -1)[local]
  new_w, l, size = jax.pmap(step, axis_name="batch", in_axes=(None, 0, 0))(w, xs, ys)
  res["w"] = np.asarray(new_w).tolist()
  res["loss"] = np.asarray(l).tolist()
  res["axis_size"] = np.asarray(size).tolist()
  res["out_devices"] = sorted(d.id for d in new_w.sharding.device_set)
  res["psum"] = np.asarray(jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(
      np.array([10. * pid, 10. * pid + 1], np.float32))).tolist()
  res["allgather"] = mu.process_allgather(np.array([pid, 7 * pid], np.int32)).tolist()
  res["allgather_tiled"] = mu.process_allgather(np.full((1, 2), pid, np.float32),
                                                tiled=True).tolist()
  res["bcast"] = mu.broadcast_one_to_all({"v": np.arange(3) + 100 * pid})["v"].tolist()
  res["bcast_src1"] = mu.broadcast_one_to_all(np.float32(pid + 0.5),
                                              is_source=pid == 1).tolist()
  mu.sync_global_devices("after bcast")
  # A global Array: each process supplies its rows; gathered back whole.
  sharding = jax.sharding.PmapSharding(jax.devices())
  g = jax.make_array_from_process_local_data(
      sharding, np.arange(4., dtype=np.float32).reshape(2, 2) + 4 * pid)
  res["global_shape"] = list(g.shape)
  res["global_addressable"] = sorted(s.device.id for s in g.addressable_shards)
  res["global_value"] = mu.process_allgather(g).tolist()
  h = jax.make_array_from_callback((n, 3), sharding,
                                   lambda idx: np.arange(n * 3.).reshape(n, 3)[idx])
  res["callback_value"] = mu.process_allgather(h).tolist()
  parts = [jax.device_put(np.full((1, 2), d.id, np.float32), d) for d in jax.local_devices()]
  k = jax.make_array_from_single_device_arrays((n, 2), sharding, parts)
  res["single_value"] = mu.process_allgather(k).tolist()
  # The same step as one SPMD program: jit over a global mesh, the batch split over
  # every device of every process, the parameters replicated.
  try:
    from tracejax.sharding import Mesh, NamedSharding, PartitionSpec
  except ImportError:
    from tracejax._src.runtime.sharding import Mesh, NamedSharding, PartitionSpec
  mesh = Mesh(np.array(jax.devices()).reshape(nproc, 2), ("proc", "dev"))
  batch = NamedSharding(mesh, PartitionSpec(("proc", "dev")))
  repl = NamedSharding(mesh, PartitionSpec())
  rows = slice(4 * pid, 4 * pid + 4)
  xg = jax.make_array_from_process_local_data(batch, x[rows])
  yg = jax.make_array_from_process_local_data(batch, y[rows])
  wg = jax.make_array_from_process_local_data(repl, w)
  res["named_x_shape"] = list(xg.shape)
  # host-local <-> global views (multihost_utils), and grouped collectives across processes
  hg = mu.host_local_array_to_global_array(x[rows], mesh, PartitionSpec(("proc", "dev")))
  res["hl_global"] = mu.process_allgather(hg).tolist()
  res["hl_local"] = np.asarray(
      mu.global_array_to_host_local_array(hg, mesh, PartitionSpec(("proc", "dev")))).tolist()
  res["psum_groups"] = np.asarray(jax.pmap(lambda v: lax.psum(
      v, "i", axis_index_groups=[list(range(0, n, 2)), list(range(1, n, 2))]), "i")(
          np.array([1., 10.], np.float32) * (pid + 1))).tolist()

  @jax.jit
  def spmd_step(w, x, y):
    l, g = jax.value_and_grad(loss)(w, x, y)
    return w - 0.1 * g, l

  w_spmd, l_spmd = spmd_step(wg, xg, yg)
  res["spmd_w"] = np.asarray(w_spmd.addressable_shards[0].data).tolist()
  res["spmd_loss"] = float(np.asarray(l_spmd.addressable_shards[0].data))
  print("RESULT " + json.dumps(res), flush=True)
  jax.distributed.shutdown()


# ---- launching ----

def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _launch(mode, nproc, limit_s):
  """Run `nproc` workers; returns [(returncode, stdout, stderr, seconds)] (killing any
  still running after `limit_s`)."""
  port = _free_port()
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
             TF_CPP_MIN_LOG_LEVEL="2", TRACEJAX_TRY_GPU="0")
  procs = []
  t0 = time.monotonic()
  try:
    for pid in range(nproc):
      if mode == "lonely" and pid == 0:
        continue   # the coordinator never starts
      procs.append(subprocess.Popen(
          [sys.executable, HERE, mode, str(pid), str(nproc), str(port)],
          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True))
    out = []
    for p in procs:
      left = max(0.1, limit_s - (time.monotonic() - t0))
      try:
        so, se = p.communicate(timeout=left)
      except subprocess.TimeoutExpired:
        p.kill()
        so, se = p.communicate()
        out.append((None, so, se, time.monotonic() - t0))
        continue
      out.append((p.returncode, so, se, time.monotonic() - t0))
    return out
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()


def _result(rc, so, se):
  assert rc == 0, f"worker failed (rc={rc}):\n{so}\n{se[-3000:]}"
  lines = [l for l in so.splitlines() if l.startswith("RESULT ")]
  assert lines, f"no result:\n{so}\n{se[-3000:]}"
  return json.loads(lines[-1][len("RESULT "):])


@pytest.mark.parametrize("nproc", [2, 4])
def test_data_parallel_step_across_processes(nproc):
  runs = _launch("step", nproc, limit_s=50)
  results = [_result(rc, so, se) for rc, so, se, _ in runs]
  n = 2 * nproc
  w, x, y = _problem(n)
  want_w, want_loss = _numpy_step(w, x, y)
  all_ids = results[0]["devices"]
  assert len(all_ids) == n
  for pid, r in enumerate(results):
    assert r["process_index"] == pid and r["process_count"] == nproc
    assert r["devices"] == all_ids and r["device_count"] == n
    assert r["local_device_count"] == 2
    assert r["device_process"] == [i // 2 for i in range(n)]
    assert r["local"] == all_ids[2 * pid:2 * pid + 2]
    # Every device of every process took part: the same step as one process on all data.
    assert r["axis_size"] == [n, n]
    assert r["out_devices"] == r["local"]
    for wi in r["w"]:
      np.testing.assert_allclose(wi, want_w, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(r["loss"], [want_loss] * 2, rtol=2e-5)
    np.testing.assert_allclose(r["psum"], [sum(10. * p + j for p in range(nproc)
                                               for j in range(2))] * 2)
    assert r["allgather"] == [[p, 7 * p] for p in range(nproc)]
    assert r["allgather_tiled"] == [[float(p)] * 2 for p in range(nproc)]
    assert r["bcast"] == [0, 1, 2]
    assert r["bcast_src1"] == 1.5
    assert r["global_shape"] == [n, 2]
    assert r["global_addressable"] == r["local"]
    assert r["global_value"] == np.arange(2. * n).reshape(n, 2).tolist()
    assert r["callback_value"] == np.arange(3. * n).reshape(n, 3).tolist()
    assert r["single_value"] == [[float(i)] * 2 for i in all_ids]
    assert r["named_x_shape"] == [2 * n, 3]
    np.testing.assert_allclose(r["hl_global"], x, rtol=1e-6)
    np.testing.assert_allclose(r["hl_local"], x[4 * pid:4 * pid + 4], rtol=1e-6)
    # member 2p holds p + 1, member 2p + 1 holds 10 (p + 1): the even and odd groups
    assert r["psum_groups"] == [float(sum(range(1, nproc + 1))),
                                10. * sum(range(1, nproc + 1))]
    np.testing.assert_allclose(r["spmd_w"], want_w, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(r["spmd_loss"], want_loss, rtol=2e-5)


def test_unreachable_coordinator_errors_in_bounded_time():
  [(rc, so, se, secs)] = _launch("lonely", 2, limit_s=40)
  assert rc is not None, "the worker hung"
  assert rc != 0
  assert secs < 30
  assert "could not connect to the coordinator at 127.0.0.1" in se


def test_dead_process_ends_the_others_in_bounded_time():
  runs = _launch("dies", 2, limit_s=45)
  (rc0, so0, se0, secs0), (rc1, _, _, _) = runs
  assert rc1 == 3
  assert rc0 is not None, "process 0 hung after process 1 died"
  assert rc0 != 0 and "unexpected" not in so0
  assert "heartbeat" in se0 or "Terminating process" in se0, se0[-2000:]
  assert secs0 < 40


def test_initialize_errors_in_process():
  from tracejax._src import distributed
  with pytest.raises(ValueError, match="coordinator_address"):
    distributed.initialize("nohostport", 2, 0)
  with pytest.raises(ValueError, match="process_id"):
    distributed.initialize("127.0.0.1:1234", 2, 2)
  with pytest.raises(TypeError, match="num_processes"):
    distributed.initialize("127.0.0.1:1234", "2", 0)
  with pytest.raises(ValueError, match="num_processes is required"):
    distributed.initialize("127.0.0.1:1234", None, 0)
  import tracejax.numpy as jnp
  jnp.ones(2).block_until_ready()   # the backend is now started
  with pytest.raises(RuntimeError, match="must be called before"):
    distributed.initialize("127.0.0.1:1234", 2, 0)
  assert not distributed.is_initialized()


def test_multihost_utils_single_process():
  import tracejax
  from tracejax.experimental import multihost_utils as mu
  np.testing.assert_array_equal(mu.process_allgather(np.arange(3)), [[0, 1, 2]])
  np.testing.assert_array_equal(mu.process_allgather(np.arange(3), tiled=True), [0, 1, 2])
  out = mu.broadcast_one_to_all({"a": np.int64(5)})
  assert out["a"] == 5
  mu.sync_global_devices("solo")
  mu.assert_equal(np.arange(2))
  s = tracejax.sharding.SingleDeviceSharding(tracejax.devices()[0])
  a = tracejax.make_array_from_callback((2, 3), s, lambda idx: np.ones((2, 3))[idx])
  np.testing.assert_array_equal(a, np.ones((2, 3)))
  with pytest.raises(ValueError, match="shard shape"):
    tracejax.make_array_from_callback((2, 3), s, lambda idx: np.ones(3))
  with pytest.raises(ValueError, match="block of shape"):
    tracejax.make_array_from_process_local_data(s, np.ones(3), (4,))


if __name__ == "__main__":
  _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
