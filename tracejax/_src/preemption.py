"""Fault tolerance in `jax.experimental.multihost_utils`, as in JAX 0.10.2:
`reached_preemption_sync_point` (checkpoint at the same step on every process after a
preemption notice) and `live_devices` / `ProcessFailureError` (run on the devices whose
processes are alive, atomically).

Both rest on jaxlib's coordination client of `jax.distributed.initialize`
(distributed.py): the preemption sync manager it starts there (`jax_enable_preemption_
service`, on by default: XLA's notifier then treats SIGTERM as the preemption notice) and
the client's `get_live_nodes`. In a single process (no client) the first is False and the
second an error, as JAX's.
"""
import contextlib
import logging

from tracejax._src.config import config

_log = logging.getLogger(__name__)

config.define("jax_enable_preemption_service", True,
              help="Start the preemption sync manager in jax.distributed.initialize "
                   "(see multihost_utils.reached_preemption_sync_point).")


def start_preemption_sync_manager(state):
  """Start the preemption sync manager over `state.client` (distributed.py, after the
  client connects), unless `jax_enable_preemption_service` is off."""
  if not config.jax_enable_preemption_service:
    _log.info("The JAX preemption service is disabled. You can enable it using the "
              "jax_enable_preemption_service configuration option.")
    return
  if getattr(state, "preemption_sync_manager", None) is not None:
    raise RuntimeError("Preemption sync manager should only be initialized once.")
  from jaxlib import _jax
  manager = _jax.create_preemption_sync_manager()
  manager.initialize(state.client)
  state.preemption_sync_manager = manager


def stop_preemption_sync_manager(state):
  """Shut the manager down (before the client it depends on)."""
  manager = getattr(state, "preemption_sync_manager", None)
  state.preemption_sync_manager = None
  if manager is not None:
    manager.shutdown()


def reached_preemption_sync_point(step_id):
  """Whether every process has reached the step at which to checkpoint after a
  preemption notice.

  When one process is told it will be preempted (SIGTERM by default), every process
  learns it and they agree on a safe step: one past the largest step any of them has
  reported. Call this at every training step (all processes starting from the same
  step); it returns True at that step, when each should save a checkpoint.

  Args:
    step_id: the current training step.

  Returns:
    False without `jax.distributed` (a single process) or while no notice has come.

  Raises:
    RuntimeError: when `jax.distributed` is initialized but the preemption service
      was disabled (`jax_enable_preemption_service`).
  """
  from tracejax._src import distributed
  state = distributed.global_state
  if state.client is None:
    return False
  manager = getattr(state, "preemption_sync_manager", None)
  if manager is None:
    raise RuntimeError("Preemption sync manager has not been initialized. Make sure the "
                       "'jax_enable_preemption_service' config is enabled.")
  return manager.reached_sync_point(int(step_id))


class ProcessFailureError(Exception):
  """Raised by `live_devices` when processes failed during its block.

  Attributes:
    failed_devices: the set of devices whose processes failed.
  """

  def __init__(self, failed_devices):
    self.failed_devices = failed_devices
    super().__init__(f"Devices failed: {failed_devices}")


def _live(client, devices):
  """{device: its process's incarnation} for the devices whose processes are alive."""
  from tracejax._src import api
  processes = {d.process_index for d in devices}
  if api.process_index() not in processes:
    # Only a process that hosts some of the devices takes part (it is a barrier).
    raise ValueError("Provided devices do not have any local devices.")
  alive = client.get_live_nodes(sorted(processes))
  return {d: alive[d.process_index] for d in devices if d.process_index in alive}


class _LiveDevices:
  """`with live_devices(devices) as alive:` runs the block on the devices among
  `devices` whose processes are alive (sorted by id), with barrier semantics: every
  live process hosting some of them enters with the same set. On exit, if a process
  failed (or restarted) meanwhile, every survivor raises `ProcessFailureError` (its
  `failed_devices`), chained to the block's own exception if any; else the block's
  exception, if any, propagates. Not stable in JAX either.

  Raises:
    RuntimeError: without `jax.distributed`.
    ValueError: `devices` empty or holding none of this process's devices.
  """

  def __init__(self):
    self.devices = None   # {device: incarnation} seen by the last call

  @contextlib.contextmanager
  def __call__(self, devices):
    from tracejax._src import distributed
    client = distributed.global_state.client
    if client is None:
      raise RuntimeError("Distributed JAX not initialized.")
    if not devices:
      raise ValueError("No devices provided.")
    if self.devices is None:
      self.devices = _live(client, devices)
    error = None
    try:
      yield sorted(self.devices, key=lambda d: d.id)
    except Exception as e:   # re-raised below (after the failure check, as JAX does)
      error = e
    finally:
      before = self.devices
      self.devices = now = _live(client, devices)
      failed = {d for d in before if d not in now or now[d] != before[d]}
      if failed:
        raise ProcessFailureError(failed) from error
      if error is not None:
        raise error


live_devices = _LiveDevices()
