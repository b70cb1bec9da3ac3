"""`jax.profiler`: traces of host and device activity, written by XLA's profiler.

jaxlib ships XLA's (TSL) profiler: a `ProfilerSession` collects events from the
host tracer (the `TraceMe` annotations, XLA's compiler and runtime threads),
the Python tracer and the device tracers, and exports them as an XSpace proto
(`<log_dir>/plugins/profile/<run>/<host>.xplane.pb`, plus a Chrome-trace
`.trace.json.gz`): the layout TensorBoard's profile plugin and XProf read.
`device_memory_profile()` is the client's heap profile as a pprof proto.
"""
import contextlib
import functools
import gzip
import http.server
import json
import os
import pathlib
import socketserver
import threading

from tracejax._src.runtime import backend

__all__ = [
    "ProfileData", "ProfileEvent", "ProfileOptions", "ProfilePlane", "StepTraceAnnotation",
    "TraceAnnotation", "annotate_function", "device_memory_profile", "register_subprocess",
    "save_device_memory_profile", "start_server", "start_trace", "stop_server",
    "stop_trace", "trace",
]

_lib = backend.profiler_lib()
_data = backend.profile_data_lib()

# Readers of a collected XSpace: `ProfileData.from_file(path)`, `.planes`,
# `plane.lines`, `line.events` (`name`, `start_ns`, `duration_ns`, `stats`).
ProfileData = _data.ProfileData
ProfileEvent = _data.ProfileEvent
ProfilePlane = _data.ProfilePlane


class ProfileOptions(_lib.ProfileOptions):
  """Options of a trace: `host_tracer_level` (0-3), `python_tracer_level` (0: off,
  1: on), `enable_hlo_proto`, `duration_ms`, `start_timestamp_ns`, ...

  >>> opts = ProfileOptions()
  >>> opts.python_tracer_level = 0
  """


# ---- the profiler server (TensorBoard's "capture profile" connects to it) ----

_server = None


def start_server(port):
  """Start a profiler server on `port` that TensorBoard/XProf can capture traces from.

  Args:
    port: the TCP port to listen on.

  Only one server may run at a time; `stop_server()` stops it.
  """
  global _server
  if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
    raise ValueError(f"start_server: port must be an int in 1..65535, got {port!r}")
  if _server is not None:
    raise ValueError("Only one profiler server can be active at a time.")
  backend.get_client()   # device tracers register when the backend starts
  _server = _lib.start_server(port)
  return _server


def stop_server():
  """Stop the server `start_server` started."""
  global _server
  if _server is None:
    raise ValueError("No active profiler server.")
  _server = None   # dropping the last reference shuts it down


def register_subprocess(pid, port):
  """Profile a subprocess (running its own profiler server on `port`) together with
  this process; returns a function that unregisters it.

  Args:
    pid: the subprocess's process id.
    port: the port of its profiler server.
  """
  return _lib.register_subprocess(int(pid), int(port))


# ---- programmatic traces ----

class _State:
  def __init__(self):
    self.lock = threading.Lock()
    self.reset()

  def reset(self):
    self.session = None
    self.log_dir = None
    self.create_perfetto_link = False
    self.create_perfetto_trace = False


_state = _State()


def start_trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
                profiler_options=None):
  """Start collecting a trace; `stop_trace()` writes it under `log_dir`.

  Args:
    log_dir: directory for the profile (TensorBoard's log directory): the trace
      lands in `log_dir/plugins/profile/<timestamp>/`.
    create_perfetto_link: also write a Perfetto trace, serve it on 127.0.0.1:9001
      and print a ui.perfetto.dev link (blocks until the page has loaded it).
    create_perfetto_trace: also write `perfetto_trace.json.gz` next to the trace.
    profiler_options: a `ProfileOptions`, or None for the defaults.

  >>> import tempfile, tracejax.numpy as jnp
  >>> d = tempfile.mkdtemp()
  >>> start_trace(d); _ = (jnp.ones(3) + 1).block_until_ready(); stop_trace()
  """
  if not isinstance(log_dir, (str, os.PathLike)):
    raise TypeError(f"start_trace: log_dir must be a path, got {type(log_dir)}")
  if profiler_options is not None and not isinstance(profiler_options, _lib.ProfileOptions):
    raise TypeError("start_trace: profiler_options must be a ProfileOptions, got "
                    f"{type(profiler_options)}")
  with _state.lock:
    if _state.session is not None:
      raise RuntimeError("Profile has already been started. Only one profile may be run "
                         "at a time.")
    backend.get_client()   # start the backend first, so its tracers take part
    _lib.clear_metadata()
    _lib.set_metadata("jaxlib_version", backend.JAXLIB_VERSION)
    _state.session = _lib.ProfilerSession(profiler_options or ProfileOptions())
    _state.log_dir = os.fspath(log_dir)
    _state.create_perfetto_link = bool(create_perfetto_link)
    _state.create_perfetto_trace = bool(create_perfetto_trace or create_perfetto_link)


def stop_trace():
  """Stop the trace `start_trace` began and write it to its `log_dir`."""
  with _state.lock:
    if _state.session is None:
      raise RuntimeError("No profile started")
    try:
      _state.session.stop_and_export(_state.log_dir)
      if _state.create_perfetto_trace:
        path = _write_perfetto_trace(_state.log_dir)
        if _state.create_perfetto_link:
          _serve_perfetto_trace(path)
    finally:
      _state.reset()


def _latest_run(log_dir):
  runs = [p for p in (pathlib.Path(log_dir).absolute() / "plugins" / "profile").iterdir()
          if p.is_dir()]
  return max(runs, key=os.path.getmtime)


def _write_perfetto_trace(log_dir):
  # Perfetto reads the Chrome trace XLA writes, once its "metadata" entry is gone.
  run = _latest_run(log_dir)
  traces = list(run.glob("*.trace.json.gz"))
  if len(traces) != 1:
    raise ValueError(f"Invalid trace folder: {run}")
  with gzip.open(traces[0], "rb") as f:
    data = json.load(f)
  data.pop("metadata", None)
  out = run / "perfetto_trace.json.gz"
  with gzip.open(out, "wb") as f:
    f.write(json.dumps(data).encode())
  return out


def _serve_perfetto_trace(path, port=9001):
  # ui.perfetto.dev fetches traces from 127.0.0.1:9001; serve the file until it has.
  directory, name = os.path.split(path)

  class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
      super().__init__(*a, directory=directory, **k)

    def end_headers(self):
      self.send_header("Access-Control-Allow-Origin", "*")
      super().end_headers()

    def do_GET(self):
      self.server.last_path = self.path
      super().do_GET()

  socketserver.TCPServer.allow_reuse_address = True
  with socketserver.TCPServer(("127.0.0.1", port), Handler) as httpd:
    print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/{name}")
    while getattr(httpd, "last_path", None) != "/" + name:
      httpd.handle_request()


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options=None):
  """Context manager: trace the code inside it and write the profile to `log_dir`.

  Args: as `start_trace`.

  >>> import tempfile, tracejax.numpy as jnp
  >>> with trace(tempfile.mkdtemp()):
  ...   _ = (jnp.ones(3) * 2).block_until_ready()
  """
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


# ---- annotations ----

class TraceAnnotation(_lib.TraceMe):
  """Context manager naming a span of host time in the trace (keyword arguments are
  recorded as the event's metadata).

  >>> with TraceAnnotation("load_batch", batch=3):
  ...   pass
  """


class StepTraceAnnotation(TraceAnnotation):
  """A `TraceAnnotation` marking one training step (`step_num=` its number), which
  TensorBoard's step view groups by.

  >>> for step in range(2):
  ...   with StepTraceAnnotation("train", step_num=step):
  ...     pass
  """

  def __init__(self, name, **kwargs):
    super().__init__(name, _r=1, **kwargs)   # `_r=1`: XLA's marker of a step event


def annotate_function(func=None, name=None, **decorator_kwargs):
  """Decorator: every call of `func` is a `TraceAnnotation` named `name` (default: its
  qualified name); extra keyword arguments become the event's metadata.

  >>> @annotate_function
  ... def f(x):
  ...   return x + 1
  >>> f(1)
  2
  """
  if func is None:
    return functools.partial(annotate_function, name=name, **decorator_kwargs)
  if not callable(func):
    raise TypeError(f"annotate_function: func must be callable, got {type(func)}")
  label = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(label, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


# ---- device memory ----

def device_memory_profile(backend=None):
  """The device memory in use (live buffers and executables), as the bytes of a
  binary pprof `Profile` proto: view it with `pprof --web file.prof`.

  Args:
    backend: None (the default backend) or a platform name such as 'cpu'.

  >>> data = device_memory_profile()
  >>> isinstance(data, bytes) and len(data) > 0
  True
  """
  from tracejax._src.runtime import backend as _backend
  if backend is not None and not isinstance(backend, str):
    raise TypeError(f"device_memory_profile: backend must be None or a platform name, "
                    f"got {backend!r}")
  return _backend.heap_profile(backend)


def save_device_memory_profile(filename, backend=None):
  """Write `device_memory_profile(backend)` to `filename`.

  Args:
    filename: the output path.
    backend: as in `device_memory_profile`.
  """
  data = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(data)
