"""Configuration flags: `config.update(name, value)`, env vars, context managers.

Every flag has an environment variable (its upper-cased name) read once at
import, a default, and an optional validator. Readers use attribute access
(`config.jax_enable_x64`), which is a plain instance-attribute lookup: cheap
enough for the dispatch hot path.
"""
import contextlib
import os

_TRUE = ("1", "true", "t", "yes", "y", "on")
_FALSE = ("0", "false", "f", "no", "n", "off", "")


def _parse_bool(s):
  s = str(s).strip().lower()
  if s in _TRUE:
    return True
  if s in _FALSE:
    return False
  raise ValueError(f"invalid truth value {s!r}")


class _Flag:
  __slots__ = ("name", "default", "parse", "choices", "help", "env")

  def __init__(self, name, default, parse, choices=None, help="", env=None):
    self.name, self.default, self.parse = name, default, parse
    self.choices, self.help, self.env = choices, help, env or name.upper()


class Config:
  """Holds every flag's current value as an attribute of the same name."""

  def __init__(self):
    object.__setattr__(self, "_flags", {})
    object.__setattr__(self, "_observers", {})

  def define(self, name, default, parse=None, choices=None, help="", env=None):
    parse = parse or (_parse_bool if isinstance(default, bool) else type(default))
    flag = _Flag(name, default, parse, choices, help, env)
    self._flags[name] = flag
    value = default
    raw = os.environ.get(flag.env)
    if raw is not None:
      value = parse(raw)
    self._check(flag, value)
    object.__setattr__(self, name, value)

  def _check(self, flag, value):
    if flag.choices is not None and value not in flag.choices:
      raise ValueError(f"{flag.name} must be one of {flag.choices}, got {value!r}")

  def update(self, name, value):
    """Set flag `name` to `value` (as `jax.config.update` does)."""
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    if isinstance(value, str) and flag.parse is _parse_bool:
      value = _parse_bool(value)
    self._check(flag, value)
    object.__setattr__(self, name, value)
    for fn in self._observers.get(name, ()):
      fn(value)

  def read(self, name):
    return getattr(self, name)

  def observe(self, name, fn):
    """Call `fn(new_value)` after every update of `name` (used by caches)."""
    self._observers.setdefault(name, []).append(fn)

  @property
  def values(self):
    return {k: getattr(self, k) for k in self._flags}

  def __setattr__(self, name, value):
    if name in self._flags:
      self.update(name, value)
    else:
      object.__setattr__(self, name, value)

  # The absl entry points of the 2020 documents: flags come from the environment.
  def parse_flags_with_absl(self):
    pass

  def config_with_absl(self):
    pass

  @contextlib.contextmanager
  def _override(self, name, value):
    old = getattr(self, name)
    self.update(name, value)
    try:
      yield
    finally:
      self.update(name, old)


config = Config()
config.define("jax_enable_x64", False, help="Enable 64-bit dtypes.")
config.define("jax_debug_nans", False, help="Raise FloatingPointError when a NaN is produced.")
config.define("jax_debug_infs", False, help="Raise FloatingPointError when an inf is produced.")
config.define("jax_disable_jit", False, help="Run jitted functions op by op.")
# JAX's values; "auto" picks "tracebackhide" under IPython, else "quiet_remove_frames"
# (see tracejax/_src/traceback_util.py).
config.define("jax_traceback_filtering", "auto",
              choices=("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames"),
              help="How tracejax-internal frames are removed from tracebacks.")
# `allow` is what JAX's code has always defaulted to (0.1.62's quickstart text calls
# `warn` the default, but its code never did).
config.define("jax_numpy_rank_promotion", "allow", choices=("allow", "warn", "raise"),
              help="Policy for implicit rank promotion in jax.numpy.")
# False: the 2020 (JAX 0.1.62) Threefry stream, whose values the seeds print
# (random.normal(PRNGKey(0), (10,)) in the quickstart); True: the modern one.
config.define("jax_threefry_partitionable", False,
              help="Use the partitionable Threefry stream (modern JAX's default).")
# JAX 0.10.2's default: softmax differentiates its composition, not a custom_jvp.
config.define("jax_softmax_custom_jvp", False,
              help="Use a custom_jvp rule (closed form) for jax.nn.softmax.")
config.define("jax_default_matmul_precision", "", help="Default precision of dot_general.")
config.define("jax_enable_checks", False, help="Type-check every jaxpr that is built.")
config.define("jax_platform_name", "", help="Backend to use ('cpu' or 'gpu').")
config.define("jax_platforms", "", help="Backends to use, comma separated.")
config.define("tracejax_compilation_cache", True, env="TRACEJAX_COMPILATION_CACHE",
              help="Keep compiled executables on disk between runs.")
config.define("tracejax_cache_dir", "", env="TRACEJAX_CACHE_DIR",
              help="Directory of the on-disk compilation cache.")


def _parse_size(s):
  """Bytes from an int or a string with an optional K/M/G/T suffix ('512M', '1G')."""
  if isinstance(s, (int, float)) and not isinstance(s, bool):
    return int(s)
  t = str(s).strip().upper().removesuffix("B").removesuffix("I")
  scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
  return int(float(t[:-1] if scale > 1 else t) * scale)


# The cache is bounded: past this many bytes the least recently used entries go
# (a run of the test suite alone writes a few hundred MB).
config.define("tracejax_cache_max_bytes", 1 << 30, parse=_parse_size,
              env="TRACEJAX_CACHE_MAX_BYTES",
              help="Size bound of the on-disk compilation cache (bytes; <= 0: unbounded).")
# JAX's names for the same cache, accepted as they are in JAX (and from JAX's
# environment variables, JAX_COMPILATION_CACHE_DIR ...). Both switches must be on
# for the cache to be used; the directory is TRACEJAX_CACHE_DIR's, else JAX's.
config.define("jax_compilation_cache_dir", "",
              help="Directory of the on-disk compilation cache (JAX's name).")
config.define("jax_enable_compilation_cache", True,
              help="Use the on-disk compilation cache (JAX's name).")
# JAX 0.10.2's defaults: programs compiled in under a second are not written.
config.define("jax_persistent_cache_min_compile_time_secs", 1.0,
              help="Only programs whose compilation took at least this long are written.")
config.define("jax_persistent_cache_min_entry_size_bytes", 0, parse=_parse_size,
              help="Only entries at least this large are written (0: no minimum).")
config.define("tracejax_num_cpu_devices", 0, env="TRACEJAX_NUM_CPU_DEVICES",
              help="Number of CPU devices (0: from XLA_FLAGS, else 1).")
# Compile logging: tracing, lowering and XLA compile times go to loggers under `jax`
# at WARNING level when on, DEBUG otherwise (as in JAX).
config.define("jax_log_compiles", False,
              help="Log each jit trace, lowering and XLA compilation at WARNING level.")
config.define("jax_explain_cache_misses", False,
              help="Log why each jit tracing-cache miss happened (WARNING level).")
config.define("jax_check_tracer_leaks", False,
              help="Raise when a transformation leaks a tracer (see jax.checking_leaks).")


def enable_x64(new_val=True):
  """Context manager that sets `jax_enable_x64` for its body."""
  return config._override("jax_enable_x64", new_val)


def disable_jit(disable=True):
  """Context manager that runs jitted functions op by op for its body."""
  return config._override("jax_disable_jit", disable)


def debug_nans(new_val=True):
  return config._override("jax_debug_nans", new_val)


def numpy_rank_promotion(value):
  return config._override("jax_numpy_rank_promotion", value)


def log_compiles(new_val=True):
  """Context manager (or decorator) that sets `jax_log_compiles` for its body.

  Args:
    new_val: the value of the flag inside the block (default True).

  Each jit trace, lowering and XLA compilation is then logged at WARNING level
  to loggers under `jax` ("Finished tracing f for jit in ... sec", "Compiling
  jit(f) ...", "Finished XLA compilation of jit(f) in ... sec").

  >>> with log_compiles():
  ...   pass
  """
  return config._override("jax_log_compiles", bool(new_val))


def explain_cache_misses(new_val=True):
  """Context manager that sets `jax_explain_cache_misses` for its body.

  Args:
    new_val: the value of the flag inside the block (default True).

  >>> with explain_cache_misses():
  ...   pass
  """
  return config._override("jax_explain_cache_misses", bool(new_val))
