"""The only module that touches jaxlib: client, compile, transfer, execute, caches.

Everything here uses the fast paths measured in shared/docs/JAXLIB.md:
`batched_device_put` in, `execute_sharded(...).consume_with_handlers` out,
`np.asarray` to fetch. The paths that make jaxlib's C++ try to `import jax`
(`disassemble_*`, `_single_device_array_to_np_array_did_copy`, DLPack) are
never used.
"""
import hashlib
import contextlib
import io
import logging
import os
import re
import threading
import time
import warnings
from typing import Any, NamedTuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

import numpy as np

REQUIRED_JAXLIB = "0.10.2"

try:
  import jaxlib
  from jaxlib import _jax
  from jaxlib import xla_client as xc
  from jaxlib.mlir import ir
  from jaxlib.mlir.dialects import chlo, func as func_dialect, stablehlo
  from jaxlib.mlir._mlir_libs import _jax_mlir_ext
except ImportError as e:  # pragma: no cover
  raise ImportError(
      f"tracejax needs jaxlib=={REQUIRED_JAXLIB} (pip install 'jaxlib=={REQUIRED_JAXLIB}'); "
      f"importing it failed: {e}") from e

if jaxlib.__version__ != REQUIRED_JAXLIB:  # pragma: no cover
  raise ImportError(
      f"tracejax requires jaxlib=={REQUIRED_JAXLIB}, but jaxlib {jaxlib.__version__} is "
      f"installed. Its Python surface is private and changes between versions; run "
      f"pip install 'jaxlib=={REQUIRED_JAXLIB}'.")

from tracejax._src import dtypes
from tracejax._src.config import config, _parse_size as config_parse_size
from tracejax._src.runtime import compilation_cache

JaxRuntimeError = getattr(_jax, "JaxRuntimeError", RuntimeError)
try:  # prints as jax.errors.JaxRuntimeError in tracebacks, as in JAX
  JaxRuntimeError.__module__ = "jax.errors"
except (AttributeError, TypeError):
  pass


def _rebuild_runtime_error(args, state):
  err = JaxRuntimeError(*args)
  err.__dict__.update(state or {})
  return err


def _reduce_runtime_error(err):
  # Pickled by reference to this module: the printed one, `jax.errors`, may not exist
  # (multiprocessing sends a worker's error back this way).
  return _rebuild_runtime_error, (err.args, dict(getattr(err, "__dict__", {})))


import copyreg  # noqa: E402  (next to its one use)
copyreg.pickle(JaxRuntimeError, _reduce_runtime_error)
JAXLIB_VERSION = jaxlib.__version__

# jaxlib's C++ calls these Python-side methods that JAX normally monkey-patches in.
_jax.SingleDeviceSharding._to_xla_hlo_sharding = (
    lambda self, num_dimensions: xc.HloSharding.replicate())
_jax.GSPMDSharding._to_xla_hlo_sharding = lambda self, num_dimensions: self._hlo_sharding


# ---- client and devices ----

_lock = threading.RLock()
_clients = {}


def _num_cpu_devices():
  n = config.tracejax_num_cpu_devices
  if n:
    return int(n)
  flags = os.environ.get("XLA_FLAGS", "")
  for f in flags.split():
    if f.startswith("--xla_force_host_platform_device_count="):
      return int(f.split("=", 1)[1])
  return 1


def _make_gpu_client():
  try:
    return xc.make_gpu_client()
  except Exception:
    return None


def get_client(platform=None):
  """The PJRT client for `platform` (default: GPU if jaxlib finds one, else CPU)."""
  platform = platform or config.jax_platform_name or default_platform()
  c = _clients.get(platform)
  if c is None:
    with _lock:
      c = _clients.get(platform)
      if c is None:
        if platform == "cpu" and _distributed is not None:
          c = _make_distributed_cpu_client()
        elif platform == "cpu":
          c = xc.make_cpu_client(num_devices=_num_cpu_devices())
        elif platform in ("gpu", "cuda"):
          c = _make_gpu_client()
          if c is None:
            raise RuntimeError(f"Unknown backend: {platform!r} requested, but no platforms "
                               f"that are instances of {platform} are present. Platforms "
                               "present are: cpu (jaxlib found no CUDA devices)")
        else:
          raise RuntimeError(f"Unknown backend {platform}. Available backends are "
                             f"{sorted(set(_clients) | {'cpu'})}")
        _clients[platform] = c
        global _multi_device
        _multi_device = _multi_device or len(c.devices()) > 1
  return c


# ---- multi-process: XLA's distributed runtime (used by tracejax._src.distributed) ----
#
# `jax.distributed.initialize` records the coordination client here; the CPU client,
# created on first use of the backend, then joins the other processes: it learns the
# global device list from the coordination service and runs cross-process collectives
# over gloo (TCP). Hence initialize must come before the backend is first used.

_distributed = None   # dict: client, node_id, num_nodes, interface, topology timeout


def backend_started():
  """Whether a PJRT client has been created (the backend has been used)."""
  return bool(_clients)


def start_distributed_service(address, num_nodes, heartbeat_timeout=None,
                              cluster_register_timeout=None, shutdown_timeout=None):
  """XLA's coordination service listening on `address` ("host:port"); timeouts in s."""
  return _jax.get_distributed_runtime_service(
      address, int(num_nodes), heartbeat_timeout=heartbeat_timeout,
      cluster_register_timeout=cluster_register_timeout, shutdown_timeout=shutdown_timeout)


def make_distributed_client(address, node_id, init_timeout=None, heartbeat_timeout=None,
                            shutdown_timeout=None, rpc_timeout=None):
  """A (not yet connected) client of the coordination service at `address`; timeouts
  in seconds. A missed heartbeat (a dead peer or coordinator) terminates the process
  with XLA's message, after `heartbeat_timeout` s at most."""
  return _jax.get_distributed_runtime_client(
      address, int(node_id), rpc_timeout=rpc_timeout, init_timeout=init_timeout,
      shutdown_timeout=shutdown_timeout, heartbeat_timeout=heartbeat_timeout,
      shutdown_on_destruction=False)


def set_distributed(client, node_id, num_nodes, interface=None, topology_timeout_s=None):
  """Make the CPU client (created later) join process `node_id` of `num_nodes` through
  the connected coordination `client`; None forgets it."""
  global _distributed
  if client is None:
    _distributed = None
    return
  _distributed = dict(client=client, node_id=int(node_id), num_nodes=int(num_nodes),
                      interface=interface, topology_timeout_s=topology_timeout_s)


def _make_distributed_cpu_client():
  d = _distributed
  collectives = _jax.make_gloo_tcp_collectives(d["client"], hostname=None,
                                               interface=d["interface"])
  minutes = None
  if d["topology_timeout_s"] is not None:  # jaxlib counts these in whole minutes
    minutes = max(1, int(np.ceil(d["topology_timeout_s"] / 60)))
  return xc.make_cpu_client(distributed_client=d["client"], node_id=d["node_id"],
                            num_nodes=d["num_nodes"], collectives=collectives,
                            num_devices=_num_cpu_devices(),
                            get_local_topology_timeout_minutes=minutes,
                            get_global_topology_timeout_minutes=minutes)


_default_platform = None


def default_platform():
  global _default_platform
  if _default_platform is None:
    wanted = (config.jax_platforms or config.jax_platform_name or "").split(",")[0]
    if wanted:
      _default_platform = "gpu" if wanted == "cuda" else wanted
    else:
      _default_platform = "cpu"
      if os.environ.get("TRACEJAX_TRY_GPU", "1") != "0" and _gpu_plugin_available():
        c = _make_gpu_client()
        if c is not None:
          _clients["gpu"] = c
          _default_platform = "gpu"
  return _default_platform


def _gpu_plugin_available():
  try:
    import importlib.util
    return importlib.util.find_spec("jax_cuda12_plugin") is not None or \
        importlib.util.find_spec("jax_cuda13_plugin") is not None
  except Exception:
    return False


def devices(platform=None):
  return list(get_client(platform).devices())


def local_devices(platform=None):
  return list(get_client(platform).local_devices())


_default_device = None
_sharding_cache = {}

# `jax_default_device`: where uncommitted data and computations go. Set globally with
# config.update, or per thread by `default_device_scope` (the `jax.default_device`
# context manager). It is part of the C++ jit key, so a cached executable compiled for
# one default device never runs for another.
config.define("jax_default_device", None, parse=lambda v: v,
              help="Device (or platform name) for uncommitted arrays and computations.")


class _DeviceOverride(threading.local):
  def __init__(self):
    self.stack = []


_device_override = _DeviceOverride()


def _resolve_device(d):
  if isinstance(d, str):  # a platform name: its first device
    return get_client("gpu" if d == "cuda" else d).local_devices()[0]
  return d


def default_device():
  """The device uncommitted arrays and computations use now."""
  if _device_override.stack:
    return _device_override.stack[-1]
  if config.jax_default_device is not None:
    return _resolve_device(config.jax_default_device)
  global _default_device
  if _default_device is None:
    # This process's first device (the first global device with jax.distributed).
    _default_device = get_client().local_devices()[0]
  return _default_device


def push_default_device(device):
  _device_override.stack.append(_resolve_device(device) if device is not None
                                else default_device())
  _default_device_flag.set_local(_device_override.stack[-1])


def pop_default_device():
  _device_override.stack.pop()
  _default_device_flag.set_local(_device_override.stack[-1] if _device_override.stack
                                 else None)


def is_multi_device():
  """Whether any client in use has more than one device (placement then matters)."""
  return _multi_device


_multi_device = False


def sharding_for(device):
  s = _sharding_cache.get(device)
  if s is None:
    s = _sharding_cache[device] = _jax.SingleDeviceSharding(device)
  return s


# ---- transfers ----

class _Aval:
  """What batched_device_put and result handlers read: shape, dtype, weak_type.

  Arrays made for users carry a `ShapedArray` instead; this stands in for buffers
  that stay internal (scalar arguments, bitcast fetches).
  """
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type=False):
    self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

  def __eq__(self, other):
    return (type(other) is _Aval and self.shape == other.shape and
            self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def _as_aval(a):
  return _Aval(*a) if type(a) is tuple else a


_COPY = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


def device_put(x, device=None, aval=None, committed=None):
  """Copy a NumPy array to `device`; returns a jaxlib ArrayImpl whose `.aval` is `aval`.

  The array is committed to its device when `device` is given (unless `committed`
  says otherwise): computations on it then run there, as in JAX."""
  if committed is None:
    committed = device is not None
  device = device or default_device()
  if not x.flags.c_contiguous:
    x = np.ascontiguousarray(x)
  aval = _Aval(x.shape, x.dtype) if aval is None else aval
  return xc.batched_device_put(aval, sharding_for(device), [x], [device],
                               committed=committed, enable_x64=True,
                               host_buffer_semantics=_COPY)


def put_shards(parts, devices, global_aval, sharding=None):
  """One committed Array over `devices` from one NumPy array per device (`parts[i]` on
  `devices[i]`); `sharding` defaults to replication over `devices`."""
  singles = [device_put(p, d, _Aval(p.shape, p.dtype)) for p, d in zip(parts, devices)]
  if sharding is None:
    sharding = replicated_sharding(devices)
  return ArrayImpl(global_aval, sharding, singles, True, True)


_replicated_cache = {}


def replicated_sharding(devices):
  """jaxlib's GSPMDSharding replicating over `devices` (cached)."""
  devices = tuple(devices)
  s = _replicated_cache.get(devices)
  if s is None:
    s = _replicated_cache[devices] = _jax.GSPMDSharding(_jax.DeviceList(devices),
                                                       xc.HloSharding.replicate())
  return s


def to_numpy(buf):
  """Fetch a device buffer as a read-only NumPy array (blocks until ready).

  Through the buffer protocol explicitly: `np.asarray(buf)` would call the
  `__array__` that tracejax attaches to ArrayImpl, which calls this.
  """
  try:
    return np.asarray(memoryview(buf))
  except BufferError:
    # A failed computation surfaces here (dispatch is asynchronous); waiting on the
    # buffer raises its error as JaxRuntimeError, as JAX reports it.
    buf.block_until_ready()
    raise


def buffer_device(buf):
  """The device of a single-device array (ValueError for one spread over several)."""
  s = buf._sharding
  if type(s) is _jax.SingleDeviceSharding:
    return s._device
  raise ValueError(f"device() is only defined for an Array on one device; this one is "
                   f"sharded over {len(s._device_assignment)} devices: use devices() or "
                   ".sharding")


_handler_cache = {}


def result_handler(aval, device=None, committed=True, sharding=None):
  """Turns an output buffer into an ArrayImpl carrying `aval` (shape, dtype, weak_type);
  with `sharding`, the outputs of every device become one Array of that sharding."""
  device = device or default_device()
  key = (aval, device, committed, sharding)
  h = _handler_cache.get(key)
  if h is None:
    h = _handler_cache[key] = _jax.array_result_handler(
        aval, sharding if sharding is not None else sharding_for(device), committed,
        _skip_checks=True)
  return h


# ---- MLIR context ----

_ctx_local = threading.local()


def make_ir_context():
  """A fresh MLIR context with the dialects XLA accepts."""
  registry = ir.DialectRegistry()
  _jax_mlir_ext.register_dialects(registry)
  ctx = ir.Context()
  ctx.append_dialect_registry(registry)
  ctx.load_all_available_dialects()
  stablehlo.register_dialect(ctx)
  chlo.register_dialect(ctx)
  return ctx


# ---- compilation and the caches ----

class Executable:
  """A compiled program plus the handlers that turn its outputs into buffers.

  `committed`: whether its outputs are committed to their device (they are when
  an input was, as in JAX). `out_shardings`: for a program over several devices,
  the sharding of each output (its handler joins the devices' buffers)."""
  __slots__ = ("exe", "handlers", "device", "text", "out_avals", "effectful", "ordered",
               "committed", "extended")

  def __init__(self, exe, out_avals, device, text, committed=True, out_shardings=None):
    self.exe, self.device, self.text = exe, device, text
    self.out_avals = out_avals
    self.committed = committed
    # Outputs of an extended dtype (typed PRNG keys) come back as their data (the
    # physical aval's buffer) and are wrapped by their dtype (prng.py) after each run.
    self.extended = [i for i, a in enumerate(out_avals)
                     if not isinstance(getattr(a, "dtype", None), np.dtype)
                     and dtypes._extended_type_of(getattr(a, "dtype", None)) is not None] or None
    if self.extended is not None:
      out_avals = [a.dtype.physical_aval(a) if i in self.extended else a
                   for i, a in enumerate(out_avals)]
    if out_shardings is None:
      self.handlers = [result_handler(a, device, committed) for a in out_avals]
    else:
      self.handlers = [result_handler(a, device, committed, s)
                       for a, s in zip(out_avals, out_shardings)]
    # A program that calls Python (io/debug/pure callbacks) runs with a runtime
    # token (see "Python host callbacks" below); `ordered` ones finish before the
    # next program starts, so ordered effects keep their order across calls.
    self.effectful = PYTHON_CALLBACK_TARGET in text
    self.ordered = self.effectful and ORDERED_EFFECT_MARKER in text

  def execute(self, buffers):
    try:
      if self.effectful:
        outs = _execute_effectful(self, buffers)
      else:
        outs = self.exe.execute_sharded(buffers).consume_with_handlers(self.handlers)
    except JaxRuntimeError:
      check_not_deleted(buffers)  # XLA's own message for a deleted argument is cryptic
      raise
    if self.extended is not None:
      outs = list(outs)
      for i in self.extended:
        outs[i] = self.out_avals[i].dtype.wrap(outs[i])
    return outs


def check_not_deleted(buffers):
  """RuntimeError naming the first deleted array among `buffers` (after `x.delete()`)."""
  for b in buffers:
    if isinstance(b, ArrayImpl) and b.is_deleted():
      aval = b.aval
      shape = aval.str_short() if hasattr(aval, "str_short") else \
          f"{np.dtype(aval.dtype).name}{list(aval.shape)}".replace(" ", "")
      raise RuntimeError(f"Array has been deleted with shape={shape}.") from None


_exe_cache = {}


def _cache_dir():
  d = config.tracejax_cache_dir or config.jax_compilation_cache_dir or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
      "tracejax", "xla")
  return d


def _compile_options(num_replicas=1, num_partitions=1, device_assignment=None,
                     compiler_options=None):
  opts = xc.CompileOptions()
  bo = opts.executable_build_options
  bo.num_replicas = num_replicas
  bo.num_partitions = num_partitions
  if device_assignment is not None:
    bo.device_assignment = device_assignment
  if num_partitions > 1:  # an SPMD program: XLA's (GSPMD) partitioner splits it
    bo.use_spmd_partitioning = True
  if compiler_options:
    # XLA debug options by name (`Lowered.compile(compiler_options=...)`); XLA itself
    # rejects an unknown name ("No such compile option").
    opts.env_option_overrides = list(compiler_options)
  return opts


def _normalize_compiler_options(compiler_options):
  """A sorted tuple of (name, value) pairs: hashable, for the cache keys."""
  if not compiler_options:
    return ()
  if not isinstance(compiler_options, dict):
    raise TypeError("compiler_options must be a dict of XLA option names to values, got "
                    f"{type(compiler_options).__name__}")
  out = []
  for k, v in sorted(compiler_options.items()):
    if not isinstance(k, str):
      raise TypeError(f"compiler_options keys must be strings, got {k!r}")
    if isinstance(v, (np.bool_, np.integer, np.floating)):
      v = v.item()
    if not isinstance(v, (str, bool, int, float)):
      raise TypeError(f"compiler_options[{k!r}] must be a str, bool, int or float, got "
                      f"{type(v).__name__}")
    out.append((k, v))
  return tuple(out)


# Compile-time logging goes to loggers under the name `jax`, as JAX's do, so that
# code written for JAX (a handler on logging.getLogger("jax"), `jax.log_compiles()`)
# sees tracejax's messages. WARNING with `jax_log_compiles` on, else DEBUG.
_dispatch_logger = logging.getLogger("jax._src.dispatch")
_MODULE_NAME = re.compile(r"module @\"?([\w.$-]+)")  # quoted when it has a "-"


def _compiled_name(module_text, name):
  if name is None:
    m = _MODULE_NAME.search(module_text, 0, 400)
    name = m.group(1) if m else "main"
    if name.startswith("jit_"):
      name = name[4:]
  return f"jit({name})"


@contextlib.contextmanager
def _quiet_gspmd(num_partitions):
  """XLA logs, at every SPMD compile, that its GSPMD partitioner (ours: see
  runtime/sharding.py) will give way to Shardy. That notice is about our choice, not the
  user's program, so it is silenced for the compile: C++ messages below ERROR are
  dropped meanwhile, then the level given by TF_CPP_MIN_LOG_LEVEL comes back."""
  if num_partitions <= 1:
    yield
    return
  from jaxlib import utils as _utils
  _utils.absl_set_min_log_level(2)
  try:
    yield
  finally:
    _utils.absl_set_min_log_level(int(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "0") or 0))


def compile(module_text, out_avals, device=None, num_replicas=1, host_callbacks=None,
            compiler_options=None, name=None, committed=True, devices=None,
            out_shardings=None, num_partitions=1, propagate_outputs=None):
  """Compile StableHLO text for `device`; cached in process and on disk.

  `out_avals` gives each output's aval (or a (shape, dtype) pair): the outputs
  are ArrayImpls carrying them. The same text can serve different output avals
  (weak types differ), so they are part of the in-process key.
  `compiler_options` is a dict of XLA options (e.g. `{"xla_cpu_enable_fast_math":
  True}`); `name` is the function's name for the compile log (default: the module's).
  Outputs are committed to their device if `committed`. A replicated program
  (`num_replicas` > 1, pmap's) runs on `devices`, replica i on `devices[i]`, and
  `out_shardings` joins each output's per-device buffers into one Array.
  An SPMD program (`num_partitions` > 1, see interpreters/pxla.py) runs partition i on
  `devices[i]`; its `out_shardings` may be a function of the loaded executable (the
  shardings XLA's partitioner chose), called once after compiling; `propagate_outputs`
  (one flag per output) lets the partitioner choose those outputs' shardings.
  """
  devices = tuple(devices) if devices else (device or default_device(),)
  device = devices[0]
  out_avals = [_as_aval(a) for a in out_avals]
  copts = _normalize_compiler_options(compiler_options)
  key = (module_text, devices, num_replicas, tuple(out_avals), copts, committed,
         out_shardings if callable(out_shardings) else
         tuple(out_shardings) if out_shardings else None, num_partitions, propagate_outputs)
  exe = _exe_cache.get(key)
  if exe is not None:
    return exe
  t0 = time.perf_counter()
  client = device.client
  devlist = _jax.DeviceList(devices)
  assignment = None
  if len(devices) > 1 or device.id != 0:  # replica (or partition) i runs on devices[i]
    assignment = xc.DeviceAssignment.create(
        np.array([d.id for d in devices], np.int32).reshape(
            (1, len(devices)) if num_partitions > 1 else (len(devices), 1)))
  opts = _compile_options(num_replicas, num_partitions, device_assignment=assignment,
                          compiler_options=copts)
  if propagate_outputs:
    opts.executable_build_options.allow_spmd_sharding_propagation_to_output = \
        list(propagate_outputs)
  loaded = None
  path = None
  if host_callbacks is None and PYTHON_CALLBACK_TARGET in module_text:
    host_callbacks = [_host_callback_trampoline]  # see "Python host callbacks"
  # A program spanning several processes is not stored: its executable is tied to the
  # live distributed client.
  use_disk = (config.tracejax_compilation_cache and config.jax_enable_compilation_cache and
              not host_callbacks and
              (_distributed is None or
               all(d.process_index == client.process_index() for d in devices)))
  if use_disk:
    digest = hashlib.sha256("\0".join([
        JAXLIB_VERSION, client.platform, str(client.platform_version),
        str(len(client.devices())), ",".join(str(d.id) for d in devices), str(num_replicas),
        repr(copts) if copts else "", str(num_partitions) if num_partitions > 1 else "",
        repr(propagate_outputs) if propagate_outputs else "",
        module_text]).encode()).hexdigest()
    path = compilation_cache.entry_path(_cache_dir(), digest)
    loaded = _disk_load(client, path, devlist, opts)
  if loaded is None:
    t_compile = time.perf_counter()
    with _quiet_gspmd(num_partitions):
      if host_callbacks:
        with make_ir_context():
          m = ir.Module.parse(module_text)
          loaded = client.compile_and_load(m, devlist, opts, host_callbacks=host_callbacks)
      else:
        loaded = client.compile_and_load(module_text, devlist, opts)
    if use_disk:
      _disk_store(loaded, path, time.perf_counter() - t_compile)
  if callable(out_shardings):
    out_shardings = out_shardings(loaded)
  exe = Executable(loaded, out_avals, device, module_text, committed, out_shardings)
  _exe_cache[key] = exe
  level = logging.WARNING if config.jax_log_compiles else logging.DEBUG
  if _dispatch_logger.isEnabledFor(level):
    _dispatch_logger.log(level, "Finished XLA compilation of %s in %.9f sec",
                         _compiled_name(module_text, name), time.perf_counter() - t0)
  return exe


_disk_stats = {"loaded": 0, "compiled": 0, "stored": 0}


def disk_cache_stats():
  """How many executables this process loaded from the on-disk cache, and how many it
  compiled because the disk held none (counted only while the disk cache is in use), and
  how many of those it wrote there (compiles quicker than
  `jax_persistent_cache_min_compile_time_secs` are not written).

  Example:
    >>> sorted(disk_cache_stats())
    ['compiled', 'loaded', 'stored']
  """
  return dict(_disk_stats)


def _disk_load(client, path, devlist, opts):
  blob = compilation_cache.read_entry(path)  # None: missing, truncated or corrupt
  if blob is None:
    return None
  try:
    exe = client.deserialize_executable(blob, devlist, opts)
    _disk_stats["loaded"] += 1
    return exe
  except Exception:
    # An incompatible entry is dropped and recompiled, never fatal.
    compilation_cache.remove(path)
    return None


def _disk_store(loaded, path, compile_secs=float("inf")):
  _disk_stats["compiled"] += 1  # called right after every compile the disk could not serve
  # As JAX: quick compiles are not worth the disk (jax_persistent_cache_min_compile_time_secs).
  if compile_secs < config.jax_persistent_cache_min_compile_time_secs:
    return
  try:
    blob = loaded.serialize()
    if len(blob) < config_parse_size(config.jax_persistent_cache_min_entry_size_bytes):
      return
    compilation_cache.write_entry(path, blob, config_parse_size(config.tracejax_cache_max_bytes))
    _disk_stats["stored"] += 1
  except Exception as e:  # a full or read-only disk must not break the run
    warnings.warn(f"tracejax: could not write the compilation cache entry {path}: {e}")


def disk_cache_info():
  """The on-disk compilation cache: directory, entries, bytes, bound, and switches.

  Example:
    >>> sorted(disk_cache_info())
    ['bytes', 'directory', 'enabled', 'entries', 'max_bytes', 'min_compile_time_secs']
  """
  d = _cache_dir()
  n, size = compilation_cache.scan(d)
  return {"directory": d, "entries": n, "bytes": size,
          "max_bytes": config_parse_size(config.tracejax_cache_max_bytes),
          "min_compile_time_secs": config.jax_persistent_cache_min_compile_time_secs,
          "enabled": bool(config.tracejax_compilation_cache and
                          config.jax_enable_compilation_cache)}


def clear_caches():
  """Forget every compiled executable held in process, the C++ jit's included."""
  _exe_cache.clear()
  _jit_cache.clear()
  _jax.PjitFunctionCache.clear_all()


# ---- what compiled executables report (for jax.stages.Compiled) ----

def executable_hlo_text(exe):
  """XLA's optimized HLO of an `Executable`, as text."""
  return exe.exe.get_hlo_text()


def executable_cost_analysis(exe):
  """XLA's cost estimate of an `Executable`: a dict ('flops', 'bytes accessed', ...)."""
  return dict(exe.exe.cost_analysis())


def executable_memory_stats(exe):
  """jaxlib's CompiledMemoryStats of an `Executable` (`temp_size_in_bytes`, ...)."""
  return exe.exe.get_compiled_memory_stats()


def module_cost_analysis(module_text, platform=None):
  """XLA's cost estimate of unoptimized StableHLO text (for `Lowered.cost_analysis`)."""
  comp = stablehlo_to_hlo(module_text, return_tuple=False)
  return dict(_jax.hlo_module_cost_analysis(get_client(platform), comp.get_hlo_module()))


def live_arrays(platform=None):
  """The arrays alive on `platform`'s devices (default: the default backend)."""
  return list(get_client(platform).live_arrays())


# ---- Python host callbacks (pure_callback, io_callback, jax.debug) ----
#
# A compiled program calls Python through jaxlib's `xla_ffi_python_cpu_callback`
# custom call, which calls `host_callbacks[index]` of the list given to
# compile_and_load. Every program gets the same single trampoline there, and the
# first operand of each custom call is a u64 constant naming the Python function
# in `_host_callbacks`. So the lowering never has to hand functions to `compile`
# (every compile path works unchanged), and two programs that call different
# functions differ in their text, hence in the compile cache key. Such programs
# skip the on-disk cache: a deserialized executable has no callbacks bound.

PYTHON_CALLBACK_TARGET = "xla_ffi_python_cpu_callback"
ORDERED_EFFECT_MARKER = "tracejax_ordered_effect"   # a frontend attribute of ordered calls
_host_callbacks = {}      # key -> fn(*numpy arrays) -> tuple of numpy arrays
_host_callback_keys = {}  # id(fn) -> key (fn is kept alive by _host_callbacks)
_pending_tokens = []      # runtime tokens of unordered effectful executions


def register_host_callback(fn):
  """The u64 key under which compiled programs call `fn` (stable for one `fn`).

  `fn(*args)` gets one NumPy array per operand (None for a token) and returns a
  tuple with one NumPy array per result (None for a token). The function stays
  referenced for the life of the process, as the executables using it may."""
  with _lock:
    key = _host_callback_keys.get(id(fn))
    if key is None:
      key = len(_host_callbacks) + 1
      _host_callbacks[key] = fn
      _host_callback_keys[id(fn)] = key
    return key


def _host_callback_trampoline(key, *args):
  return _host_callbacks[int(key)](*args)


def _execute_effectful(exe, buffers):
  results = exe.exe.execute_sharded(buffers, with_tokens=True)
  token = results.consume_token()
  outs = results.consume_with_handlers(exe.handlers)
  if exe.ordered:
    token.block_until_ready()  # the next program's effects come after this one's
  else:
    with _lock:
      if len(_pending_tokens) > 64:
        del _pending_tokens[:32]  # old executions are long done; keep the list short
      _pending_tokens.append(token)
  return outs


def effects_barrier():
  """Wait until every program with host callbacks started so far has finished."""
  with _lock:
    tokens = list(_pending_tokens)
    _pending_tokens.clear()
  for t in tokens:
    t.block_until_ready()


# ---- LAPACK custom calls (registered on first use) ----

_lapack_registered = False


def register_lapack():
  global _lapack_registered
  if not _lapack_registered:
    with _lock:
      if not _lapack_registered:
        from jaxlib import lapack
        lapack._lapack.initialize()
        for name, capsule, api_version in lapack.registrations()["cpu"]:
          xc.register_custom_call_target(name, capsule, platform="cpu",
                                         api_version=api_version)
        _lapack_registered = True


def block_until_ready_many(bufs):
  """Wait for several device arrays with one call into jaxlib."""
  _jax.batched_block_until_ready(bufs)


def block_until_ready(buf):
  buf.block_until_ready()
  return buf


def is_deleted(buf):
  return buf.is_deleted()


_ = io


# ---- fetching dtypes the buffer protocol rejects (bfloat16, float8, int4) ----

_MLIR_NAMES = {"bfloat16": "bf16", "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
               "float8_e4m3b11fnuz": "f8E4M3B11FNUZ", "float8_e4m3fnuz": "f8E4M3FNUZ",
               "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e3m4": "f8E3M4",
               "float8_e4m3": "f8E4M3", "float8_e8m0fnu": "f8E8M0FNU"}
# Sub-byte types cannot be bitcast to a byte type; they are converted (exactly)
# to a byte-or-wider type on the device and back on the host.
_SUBBYTE_FETCH = {"float4_e2m1fn": ("f4E2M1FN", "f32", np.float32),
                  "int4": ("i4", "i8", np.int8), "uint4": ("ui4", "ui8", np.uint8),
                  "int2": ("i2", "i8", np.int8), "uint2": ("ui2", "ui8", np.uint8)}


def needs_bitcast_fetch(dtype):
  return dtype.name in _MLIR_NAMES or dtype.name in _SUBBYTE_FETCH


def fetch_via_bitcast(buf, shape, dtype):
  """Bitcast on the device to an unsigned int of the same width, then view on the host."""
  device = buffer_device(buf)
  if dtype.name in _SUBBYTE_FETCH:
    src, dst, host_dt = _SUBBYTE_FETCH[dtype.name]
    dims = "".join(f"{d}x" for d in shape)
    t_in, t_out = f"tensor<{dims}{src}>", f"tensor<{dims}{dst}>"
    text = (f"module @fetch {{ func.func public @main(%a: {t_in}) -> {t_out} {{ "
            f"%0 = stablehlo.convert %a : ({t_in}) -> {t_out} "
            f"return %0 : {t_out} }} }}")
    exe = compile(text, [(tuple(shape), np.dtype(host_dt))], device)
    return np.asarray(exe.execute([buf])[0]).astype(dtype)
  bits = {1: "ui8", 2: "ui16"}[dtype.itemsize]
  udt = {1: np.uint8, 2: np.uint16}[dtype.itemsize]
  t_in = f"tensor<{''.join(f'{d}x' for d in shape)}{_MLIR_NAMES[dtype.name]}>"
  t_out = f"tensor<{''.join(f'{d}x' for d in shape)}{bits}>"
  text = (f"module @fetch {{ func.func public @main(%a: {t_in}) -> {t_out} {{ "
          f"%0 = stablehlo.bitcast_convert %a : ({t_in}) -> {t_out} "
          f"return %0 : {t_out} }} }}")
  exe = compile(text, [(tuple(shape), np.dtype(udt))], device)
  out = exe.execute([buf])[0]
  return np.asarray(out).view(dtype)


def parse_module(text):
  """Parse StableHLO text into an `ir.Module` (for `Lowered.compiler_ir`)."""
  ctx = make_ir_context()
  with ctx:
    return ir.Module.parse(text)


def stablehlo_to_hlo(module_text, tuple_args=False, return_tuple=True):
  """XLA's HLO for StableHLO text, by XLA's own MLIR-to-HLO conversion (for
  `xla_computation`; jaxlib has no XlaBuilder). Returns jaxlib's XlaComputation
  (`as_hlo_text()`, `as_serialized_hlo_module_proto()`, `as_hlo_dot_graph()`,
  `get_hlo_module()`, `program_shape()`). `tuple_args` makes the parameters one
  tuple parameter; `return_tuple` wraps the results in a tuple."""
  return _jax.mlir.mlir_module_to_xla_computation(
      module_text, use_tuple_args=bool(tuple_args), return_tuple=bool(return_tuple))


# ---- jaxlib's C++ jit dispatch (PjitFunction) ----
#
# A cached jit call is the hot path of every program. jaxlib implements it in C++:
# flatten the arguments with a C++ pytree registry, compute a signature (avals,
# static values, the flags below), find the executable, run it. tracejax hands it
# a `cache_miss` callback (our Python jit) that returns the executable's
# "fast-path data" once it is compiled; later calls with that signature never
# enter Python. Calls it cannot handle (tracers, unknown leaf types) go to
# `cache_miss` every time, so correctness never depends on it.

ArrayImpl = _jax.ArrayImpl
PjitFunction = _jax.PjitFunction

# jaxlib's C++ reads these flags from its own config objects; each mirrors one of
# ours. All but post_hook are part of the C++ cache key, so flipping one (x64, the
# PRNG stream, rank promotion...) can never hit an executable traced under the
# other value.
_x64_flag = _jax.config.Config("jax_enable_x64", config.jax_enable_x64,
                               include_in_jit_key=True, include_in_trace_context=True)
_jax.jax_jit.set_enable_x64_state(_x64_flag)
_disable_jit_flag = _jax.config.Config("jax_disable_jit", config.jax_disable_jit,
                                       include_in_jit_key=True, include_in_trace_context=True)
_jax.jax_jit.set_disable_jit_state(_disable_jit_flag)
_post_hook_flag = _jax.config.Config("jax_post_hook", None, include_in_jit_key=False,
                                     include_in_trace_context=False)
_jax.jax_jit.set_post_hook_state(_post_hook_flag)


def _mirror(name, cpp_flag):
  config.observe(name, cpp_flag.set_global)


_mirror("jax_enable_x64", _x64_flag)
_default_device_flag = _jax.config.Config("jax_default_device", config.jax_default_device,
                                          include_in_jit_key=True,
                                          include_in_trace_context=True)
_mirror("jax_default_device", _default_device_flag)
_mirror("jax_disable_jit", _disable_jit_flag)
_KEYED_FLAGS = ("jax_debug_nans", "jax_debug_infs", "jax_numpy_rank_promotion",
                "jax_threefry_partitionable", "jax_default_matmul_precision",
                "jax_enable_checks")
for _name in _KEYED_FLAGS:
  _mirror(_name, _jax.config.Config(_name, getattr(config, _name), include_in_jit_key=True,
                                    include_in_trace_context=True))

# Whether the current thread is inside a transformation: a traced call must reach
# Python (to stage or transform the call), so it is part of the C++ key too.
# `core.trace.set_current_trace` flips it.
tracing_flag = _jax.config.Config("tracejax_tracing", False, include_in_jit_key=True,
                                  include_in_trace_context=True)

# The C++ pytree registry: tracejax.tree_util registers every node type here too.
pytree_registry = _jax.pytree.PyTreeRegistry()
_jit_cache = _jax.PjitFunctionCache(capacity=8192)


def _shard_arg_fallback(x, sharding, layout=None, copy_semantics=None):
  """An argument the C++ path cannot place itself (a NumPy array of an exotic type, or
  any non-Array for a Python sharding, which places it with its `_shard_arg`)."""
  shard_arg = getattr(sharding, "_shard_arg", None)
  if shard_arg is not None:
    return shard_arg(x)
  x = np.asarray(x)
  return device_put(x, sharding._device)


def make_cpp_jit(name, fun, cache_miss, static_argnums, static_argnames, key):
  """A PjitFunction: `cache_miss(*args, **kwargs)` returns (out, fastpath_or_None, False)."""
  return _jax.pjit(name, fun, cache_miss, list(static_argnums), list(static_argnames), key,
                   pytree_registry, _shard_arg_fallback, _jit_cache)


class _FastpathFields(NamedTuple):
  xla_executable: Any
  out_pytree_def: Any
  in_shardings: Any
  out_shardings: Any
  out_avals: Any
  out_committed: Any
  kept_var_bitvec: Any
  in_device_local_layouts: Any
  const_args: Any


def fastpath_data(exe, out_treedef, n_args, const_bufs):
  """What the C++ jit needs to run `exe` without Python (field names are jaxlib's);
  None for a program with host callbacks, which must keep to the Python path (its
  runtime token, the ordering of its effects)."""
  if exe.effectful or exe.extended is not None:  # key outputs are wrapped in Python
    return None
  sh = sharding_for(exe.device)
  n_in = len(const_bufs) + n_args
  n_out = len(exe.out_avals)
  return _FastpathFields(exe.exe, out_treedef, [sh] * n_in, [sh] * n_out,
                         list(exe.out_avals), [exe.committed] * n_out, [True] * n_in,
                         [None] * n_in, list(const_bufs))


def fastpath_data_sharded(exe, out_treedef, in_shardings, out_shardings, const_bufs, args):
  """`fastpath_data` for a program over several devices (pmap's): the shardings of its
  inputs (constants first) and outputs are given; `args` are this call's flat arguments.

  jaxlib's C++ path hands an Array straight to the program when its sharding spans as
  many devices as the program (it checks nothing else), so the entry is only offered
  when every such argument of this signature (the signature holds each Array's
  sharding) is already laid out as the program takes it; otherwise each call goes
  through Python, which re-lays the argument out."""
  if exe.effectful:
    return None
  for x, s in zip(args, in_shardings[len(const_bufs):]):
    if type(x) is ArrayImpl:
      xs = x.sharding
      if xs is not s and isinstance(xs, _jax.GSPMDSharding) and not (
          xs == s or xs.is_equivalent_to(s, x.ndim)):
        return None
  n_in, n_out = len(in_shardings), len(out_shardings)
  return _FastpathFields(exe.exe, out_treedef, list(in_shardings), list(out_shardings),
                         list(exe.out_avals), [True] * n_out, [True] * n_in, [None] * n_in,
                         list(const_bufs))


# ---- portable StableHLO artifacts (jax.export) and the profiler (jax.profiler) ----

def stablehlo_version(compatibility="WEEK_12"):
  """The StableHLO version string an artifact is written in: 'current', 'minimum', or
  one of jaxlib's compatibility windows ('WEEK_4', 'WEEK_12', 'MAX')."""
  from jaxlib.mlir._mlir_libs import _stablehlo
  if compatibility == "current":
    return _stablehlo.get_current_version()
  if compatibility == "minimum":
    return _stablehlo.get_minimum_version()
  req = getattr(_stablehlo.StablehloCompatibilityRequirement, compatibility)
  return _stablehlo.get_version_from_compatibility_requirement(req)


def serialize_portable_artifact(module_text, target=None):
  """StableHLO text -> versioned, portable bytecode that later jaxlibs can read."""
  return _jax.mlir.serialize_portable_artifact(module_text, target or stablehlo_version())


def deserialize_portable_artifact(data):
  """Portable bytecode -> StableHLO text (in this jaxlib's StableHLO version)."""
  with make_ir_context() as ctx:
    module = _jax.mlir.deserialize_portable_artifact(bytes(data), ctx)
    return module.operation.get_asm(enable_debug_info=False)


def hlo_to_stablehlo(serialized_hlo_proto):
  """A serialized HloModuleProto -> StableHLO text."""
  data = _jax.mlir.hlo_to_stablehlo(serialized_hlo_proto)
  with make_ir_context():
    return ir.Module.parse(data).operation.get_asm(enable_debug_info=False)


def profiler_lib():
  """jaxlib's profiler: `ProfilerSession`, `ProfileOptions`, `TraceMe`, `start_server`,
  `register_subprocess` (XLA's TSL profiler, writing XSpace protos)."""
  from jaxlib import _profiler
  return _profiler


def profile_data_lib():
  """jaxlib's reader of XSpace protos: `ProfileData`, `ProfilePlane`, `ProfileEvent`."""
  from jaxlib import _profile_data
  return _profile_data


def heap_profile(platform=None):
  """The device memory in use, as a binary pprof `Profile` proto (bytes)."""
  return get_client(platform).heap_profile()
