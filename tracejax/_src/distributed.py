"""Multiple processes: `jax.distributed.initialize` / `shutdown` on XLA's distributed runtime.

One process (process 0) runs XLA's coordination service; every process (process 0
too) connects a coordination client to it. The CPU backend, created after that,
joins the others through the client: `jax.devices()` then lists the devices of all
processes (each process addresses only its own), and compiled programs over several
processes exchange data with gloo over TCP.

Failures end in bounded time, never a hang: connecting waits at most
`initialization_timeout` seconds; barriers take a timeout; a process or coordinator
that stops answering is noticed by the heartbeats after `heartbeat_timeout_seconds`,
and XLA then terminates the remaining processes with a message naming the cause.
"""
import atexit
import os
import re
import socket
import threading
import time

from tracejax._src import preemption   # (defines jax_enable_preemption_service)
from tracejax._src.runtime import backend


class _State:
  """What `initialize` set up (one per process)."""

  def __init__(self):
    self.client = None
    self.service = None
    self.preemption_sync_manager = None
    self.coordinator_address = None
    self.process_id = 0
    self.num_processes = 1
    self.barrier_timeout_s = 300
    self.counters = {}
    self.lock = threading.Lock()

  @property
  def initialized(self):
    return self.client is not None


global_state = _State()

_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]+):(\d{1,5})$")


def _check_int(name, value, low, high=None):
  if isinstance(value, bool) or not isinstance(value, int):
    try:
      import numpy as np
      if isinstance(value, np.integer):
        value = int(value)
      else:
        raise TypeError
    except TypeError:
      raise TypeError(f"jax.distributed.initialize: {name} must be an int, got "
                      f"{value!r}") from None
  if value < low or (high is not None and value >= high):
    bound = f"in [{low}, {high})" if high is not None else f">= {low}"
    raise ValueError(f"jax.distributed.initialize: {name} must be {bound}, got {value}")
  return value


def _check_timeout(name, value):
  if value is None:
    return None
  if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
    raise ValueError(f"jax.distributed.initialize: {name} must be a positive number of "
                     f"seconds, got {value!r}")
  return max(1, int(round(value)))


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None, cluster_detection_method=None,
               initialization_timeout=300, coordinator_bind_address=None,
               heartbeat_timeout_seconds=100, shutdown_timeout_seconds=60, *,
               cpu_collectives_interface=None):
  """Connect this process to the others of a multi-process program.

  Call it once per process, before anything runs on the backend (creating an array
  counts). Afterwards `jax.devices()` lists the devices of every process,
  `jax.local_devices()` this process's, and `pmap`/collectives span all of them.

  Args:
    coordinator_address: "host:port" of process 0's coordination service, reachable
      from every process (default: the JAX_COORDINATOR_ADDRESS environment variable).
    num_processes: how many processes take part.
    process_id: this process's index, in [0, num_processes).
    local_device_ids: the device ids this process may use. Accepted as in JAX, where
      it restricts GPUs; CPU devices are all used (their number comes from
      TRACEJAX_NUM_CPU_DEVICES / XLA_FLAGS).
    cluster_detection_method: only None (no cluster environment is auto-detected:
      give the three arguments above).
    initialization_timeout: seconds to wait for all processes to connect and agree on
      the device list; then a RuntimeError.
    coordinator_bind_address: where process 0's service listens (default: the
      coordinator address).
    heartbeat_timeout_seconds: how long a silent process or coordinator is tolerated
      before the others are terminated with an error.
    shutdown_timeout_seconds: how long `shutdown` waits for the other processes.
    cpu_collectives_interface: the network interface gloo uses (e.g. "lo"; default:
      gloo's choice from the host name).

  >>> jax.distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=0)  # doctest: +SKIP
  >>> jax.process_count(), jax.device_count()                                     # doctest: +SKIP
  (2, 4)
  """
  if global_state.initialized:
    raise RuntimeError("jax.distributed.initialize should only be called once per process "
                       "(call jax.distributed.shutdown() first to start again).")
  if cluster_detection_method is not None:
    raise ValueError(f"jax.distributed.initialize: cluster_detection_method="
                     f"{cluster_detection_method!r} is not supported; pass "
                     "coordinator_address, num_processes and process_id")
  if coordinator_address is None:
    coordinator_address = os.environ.get("JAX_COORDINATOR_ADDRESS")
  if coordinator_address is None:
    raise ValueError("jax.distributed.initialize: coordinator_address is required (no "
                     "JAX_COORDINATOR_ADDRESS in the environment and no cluster detected)")
  if not isinstance(coordinator_address, str) or not _ADDRESS.match(coordinator_address):
    raise ValueError(f"jax.distributed.initialize: coordinator_address must be "
                     f"'host:port', got {coordinator_address!r}")
  if num_processes is None:
    raise ValueError("jax.distributed.initialize: num_processes is required")
  if process_id is None:
    raise ValueError("jax.distributed.initialize: process_id is required")
  num_processes = _check_int("num_processes", num_processes, 1)
  process_id = _check_int("process_id", process_id, 0, num_processes)
  if local_device_ids is not None:
    ids = [local_device_ids] if isinstance(local_device_ids, int) else local_device_ids
    try:
      ids = [_check_int("local_device_ids", i, 0) for i in ids]
    except TypeError:
      raise TypeError(f"jax.distributed.initialize: local_device_ids must be an int or a "
                      f"sequence of ints, got {local_device_ids!r}") from None
  init_s = _check_timeout("initialization_timeout", initialization_timeout)
  heartbeat_s = _check_timeout("heartbeat_timeout_seconds", heartbeat_timeout_seconds)
  shutdown_s = _check_timeout("shutdown_timeout_seconds", shutdown_timeout_seconds)
  if coordinator_bind_address is not None and (
      not isinstance(coordinator_bind_address, str) or
      not _ADDRESS.match(coordinator_bind_address)):
    raise ValueError(f"jax.distributed.initialize: coordinator_bind_address must be "
                     f"'host:port', got {coordinator_bind_address!r}")
  # Checked after the arguments, so a bad call says what is wrong with it first.
  if backend.backend_started():
    raise RuntimeError(
        "jax.distributed.initialize() must be called before any JAX computation or array "
        "creation: the backend has already been started in this process as a "
        "single-process backend.")

  service = None
  if process_id == 0:
    bind = coordinator_bind_address or coordinator_address
    try:
      service = backend.start_distributed_service(
          bind, num_processes, heartbeat_timeout=heartbeat_s,
          cluster_register_timeout=init_s, shutdown_timeout=shutdown_s)
    except Exception as e:
      raise RuntimeError(f"jax.distributed.initialize: could not start the coordination "
                         f"service on {bind}: {e}") from e
  if service is None:
    # XLA's client terminates the process when it cannot register in time; checking
    # first that the coordinator's port answers turns the common mistakes (process 0 not
    # started, a wrong address) into a Python exception instead.
    _wait_for_coordinator(coordinator_address, process_id, num_processes, init_s)
  client = backend.make_distributed_client(coordinator_address, process_id,
                                           init_timeout=init_s,
                                           heartbeat_timeout=heartbeat_s,
                                           shutdown_timeout=shutdown_s)
  try:
    client.connect()
  except Exception as e:
    if service is not None:
      service.shutdown()
    raise RuntimeError(
        f"jax.distributed.initialize: process {process_id} of {num_processes} could not "
        f"connect to the coordinator at {coordinator_address} within {init_s} s (is "
        f"process 0 running and the address reachable?): {e}") from e
  backend.set_distributed(client, process_id, num_processes,
                          interface=cpu_collectives_interface, topology_timeout_s=init_s)
  global_state.client, global_state.service = client, service
  preemption.start_preemption_sync_manager(global_state)
  global_state.coordinator_address = coordinator_address
  global_state.process_id, global_state.num_processes = process_id, num_processes
  global_state.barrier_timeout_s = max(init_s, 60)
  global_state.counters = {}


def _wait_for_coordinator(address, process_id, num_processes, timeout_s):
  host, port = _ADDRESS.match(address).groups()
  host = host.strip("[]")
  deadline = time.monotonic() + timeout_s
  last = None
  while True:
    try:
      with socket.create_connection((host, int(port)), timeout=1.0):
        return
    except OSError as e:
      last = e
    if time.monotonic() >= deadline:
      raise RuntimeError(
          f"jax.distributed.initialize: process {process_id} of {num_processes} could not "
          f"connect to the coordinator at {address} within {timeout_s} s (is process 0 "
          f"running, and the address reachable from here?): {last}")
    time.sleep(0.1)


def shutdown():
  """Disconnect from the other processes (waits for them, up to the shutdown timeout).

  Arrays and compiled programs of the multi-process backend stay, but collectives
  across processes no longer work. Does nothing if `initialize` was not called.

  >>> jax.distributed.shutdown()  # doctest: +SKIP
  """
  # the preemption sync manager depends on the client: it goes first (as in JAX)
  preemption.stop_preemption_sync_manager(global_state)
  client, service = global_state.client, global_state.service
  global_state.client = global_state.service = None
  backend.set_distributed(None, 0, 1)
  try:
    if client is not None:
      client.shutdown()
  finally:
    if service is not None:
      service.shutdown()


def is_initialized():
  """Whether `initialize` has connected this process (and `shutdown` not yet run)."""
  return global_state.initialized


def barrier(name, timeout_s=None):
  """Wait until every process reaches the barrier `name` (a RuntimeError after
  `timeout_s`, default the initialization timeout or 60 s). Each name may be used
  repeatedly: the n-th use in each process meets the n-th use in the others."""
  if not global_state.initialized:
    return
  with global_state.lock:
    k = global_state.counters.get(name, 0)
    global_state.counters[name] = k + 1
  timeout_s = timeout_s or global_state.barrier_timeout_s
  try:
    global_state.client.wait_at_barrier(f"tracejax:{name}:{k}", int(timeout_s * 1000))
  except Exception as e:
    raise RuntimeError(f"barrier {name!r} (process {global_state.process_id} of "
                       f"{global_state.num_processes}) failed (it waits at most "
                       f"{timeout_s} s): {e}") from e


def _atexit_shutdown():
  if global_state.initialized:
    try:
      shutdown()
    except Exception:  # a peer already gone: nothing more to do at exit
      pass


atexit.register(_atexit_shutdown)
