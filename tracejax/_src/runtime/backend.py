"""The only module that touches jaxlib: client, compile, transfer, execute, caches.

Everything here uses the fast paths measured in shared/docs/JAXLIB.md:
`batched_device_put` in, `execute_sharded(...).consume_with_handlers` out,
`np.asarray` to fetch. The paths that make jaxlib's C++ try to `import jax`
(`disassemble_*`, `_single_device_array_to_np_array_did_copy`, DLPack) are
never used.
"""
import hashlib
import io
import os
import tempfile
import threading
import warnings

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

from tracejax._src.config import config

JaxRuntimeError = getattr(_jax, "JaxRuntimeError", RuntimeError)
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
        if platform == "cpu":
          c = xc.make_cpu_client(num_devices=_num_cpu_devices())
        elif platform in ("gpu", "cuda"):
          c = _make_gpu_client()
          if c is None:
            raise RuntimeError("No GPU backend found (jaxlib found no CUDA devices).")
        else:
          raise RuntimeError(f"Unknown backend {platform!r}")
        _clients[platform] = c
  return c


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


def default_device():
  global _default_device
  if _default_device is None:
    _default_device = get_client().devices()[0]
  return _default_device


def sharding_for(device):
  s = _sharding_cache.get(device)
  if s is None:
    s = _sharding_cache[device] = _jax.SingleDeviceSharding(device)
  return s


# ---- transfers ----

class _Aval:
  """What batched_device_put and result handlers read: shape, dtype, weak_type."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type=False):
    self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type


_COPY = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL


def device_put(x, device=None):
  """Copy a NumPy array to `device`; returns a device buffer (jaxlib ArrayImpl)."""
  device = device or default_device()
  if not x.flags.c_contiguous:
    x = np.ascontiguousarray(x)
  return xc.batched_device_put(_Aval(x.shape, x.dtype), sharding_for(device), [x], [device],
                               committed=True, enable_x64=True, host_buffer_semantics=_COPY)


def to_numpy(buf):
  """Fetch a device buffer as a read-only NumPy array (blocks until ready)."""
  return np.asarray(buf)


def buffer_device(buf):
  return buf._sharding._device  # a SingleDeviceSharding (all our arrays are single-device)


_handler_cache = {}


def result_handler(shape, dtype, device=None):
  device = device or default_device()
  key = (shape, dtype, device)
  h = _handler_cache.get(key)
  if h is None:
    h = _handler_cache[key] = _jax.array_result_handler(
        _Aval(shape, dtype), sharding_for(device), True, _skip_checks=True)
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
  """A compiled program plus the handlers that turn its outputs into buffers."""
  __slots__ = ("exe", "handlers", "device", "text")

  def __init__(self, exe, out_shapes, device, text):
    self.exe, self.device, self.text = exe, device, text
    self.handlers = [result_handler(s, d, device) for s, d in out_shapes]

  def execute(self, buffers):
    return self.exe.execute_sharded(buffers).consume_with_handlers(self.handlers)


_exe_cache = {}


def _cache_dir():
  d = config.tracejax_cache_dir or os.path.join(
      os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
      "tracejax", "xla")
  return d


def _compile_options(num_replicas=1, num_partitions=1, device_assignment=None):
  opts = xc.CompileOptions()
  bo = opts.executable_build_options
  bo.num_replicas = num_replicas
  bo.num_partitions = num_partitions
  if device_assignment is not None:
    bo.device_assignment = device_assignment
  return opts


def compile(module_text, out_shapes, device=None, num_replicas=1, host_callbacks=None):
  """Compile StableHLO text for `device`; cached in process and on disk.

  `out_shapes` lists (shape, dtype) of the outputs, for the result handlers.
  """
  device = device or default_device()
  key = (module_text, device, num_replicas)
  exe = _exe_cache.get(key)
  if exe is not None:
    return exe
  client = device.client
  devlist = _jax.DeviceList((device,))
  opts = _compile_options(num_replicas)
  loaded = None
  path = None
  use_disk = config.tracejax_compilation_cache and not host_callbacks and num_replicas == 1
  if use_disk:
    digest = hashlib.sha256("\0".join([
        JAXLIB_VERSION, client.platform, str(client.platform_version),
        str(len(client.devices())), str(device.id), module_text]).encode()).hexdigest()
    path = os.path.join(_cache_dir(), digest[:2], digest + ".xla")
    loaded = _disk_load(client, path, devlist, opts)
  if loaded is None:
    if host_callbacks:
      with make_ir_context():
        m = ir.Module.parse(module_text)
        loaded = client.compile_and_load(m, devlist, opts, host_callbacks=host_callbacks)
    else:
      loaded = client.compile_and_load(module_text, devlist, opts)
    if use_disk:
      _disk_store(loaded, path)
  exe = Executable(loaded, out_shapes, device, module_text)
  _exe_cache[key] = exe
  return exe


def _disk_load(client, path, devlist, opts):
  try:
    with open(path, "rb") as f:
      blob = f.read()
  except OSError:
    return None
  try:
    return client.deserialize_executable(blob, devlist, opts)
  except Exception:
    # A corrupt or incompatible entry is dropped and recompiled, never fatal.
    try:
      os.unlink(path)
    except OSError:
      pass
    return None


def _disk_store(loaded, path):
  try:
    blob = loaded.serialize()
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    # Write to a private temporary file, then rename: concurrent writers of the same
    # entry each produce a whole file, and readers never see a partial one.
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
      f.write(blob)
    os.replace(tmp, path)
  except Exception as e:  # a full or read-only disk must not break the run
    warnings.warn(f"tracejax: could not write the compilation cache entry {path}: {e}")


def clear_caches():
  _exe_cache.clear()


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


def block_until_ready(buf):
  buf.block_until_ready()
  return buf


def is_deleted(buf):
  return buf.is_deleted()


_ = io


# ---- fetching dtypes the buffer protocol rejects (bfloat16, float8, int4) ----

_MLIR_NAMES = {"bfloat16": "bf16", "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2",
               "float8_e4m3b11fnuz": "f8E4M3B11FNUZ", "float8_e4m3fnuz": "f8E4M3FNUZ",
               "float8_e5m2fnuz": "f8E5M2FNUZ"}


def needs_bitcast_fetch(dtype):
  return dtype.name in _MLIR_NAMES


def fetch_via_bitcast(buf, shape, dtype):
  """Bitcast on the device to an unsigned int of the same width, then view on the host."""
  device = buffer_device(buf)
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
