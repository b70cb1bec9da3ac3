"""Traceback filtering: the user sees their own frames, not tracejax's machinery.

An exception raised while tracing or running a transformed function passes
through dozens of tracejax frames (jit's cache miss, the tracer, staging, the
transformation's interpreter) that say nothing to the person whose `if x > 0:`
caused it. The public entry points (`jit`'d calls, `grad`, `vmap`, `jvp`, ...,
the control flow of `lax`: `cond`, `switch`, `while_loop`, `fori_loop`, `scan`,
`map`, `associative_scan`, `custom_linear_solve`, `custom_root`; `checkpoint`'d
functions and `custom_jvp`/`custom_vjp` calls, since each traces user code even
outside `jit`) are wrapped by `api_boundary`, which, when an exception escapes,
rewrites its traceback according to the `jax_traceback_filtering` flag
(environment variable `JAX_TRACEBACK_FILTERING`), with JAX's values:

* ``"auto"`` (default): ``"tracebackhide"`` under IPython, else
  ``"quiet_remove_frames"``.
* ``"off"``: the full traceback, unchanged.
* ``"tracebackhide"``: frames are kept, but tracejax's get a local
  ``__tracebackhide__ = True`` that IPython and pytest honour.
* ``"remove_frames"``: tracejax's frames are removed; the unfiltered traceback
  stays available as the ``__cause__`` (an `UnfilteredStackTrace`).
* ``"quiet_remove_frames"``: frames removed, and a note (`SIMPLIFIED_TB_NOTE`)
  says so and how to get them back.

Only the outermost boundary filters: a `grad` inside a `jit`'d function leaves
the exception alone and lets the `jit` call do it once.

`install_run_excepthook` does the same for `python -m tracejax run`: the
frames of `runpy` and of tracejax's launcher above the user's script go.
"""
import functools
import os
import sys
import types

from tracejax._src.config import config

# Every file under the tracejax package counts as internal.
_TRACEJAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The launcher of `python -m tracejax run` runs the user's code through runpy.
_RUNPY_FILE = os.path.splitext(os.path.abspath(getattr(
    sys.modules.get("runpy"), "__file__", None) or os.path.join(
        os.path.dirname(os.__file__), "runpy.py")))[0]

SIMPLIFIED_TB_NOTE = (
    "For simplicity, JAX has removed its internal frames from the traceback of the "
    "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.")

MODES = ("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames")


class UnfilteredStackTrace(Exception):
  """Carries the complete traceback in ``remove_frames`` mode (as the ``__cause__``)."""


_internal_cache = {}
_excluded_paths = []   # from register_exclusion: other libraries' internal files


def register_exclusion(path):
  """Counts the files under `path` as internal: their frames are filtered like
  tracejax's own (libraries built on JAX, e.g. flax, register their source tree).

  Args:
    path: a file or directory.

  Example:
    >>> register_exclusion(os.path.dirname(__file__))  # doctest: +SKIP
  """
  _excluded_paths.append(os.path.abspath(path))
  _internal_cache.clear()


def is_internal_file(filename):
  """Whether `filename` belongs to tracejax itself (its frames get filtered).

  Args:
    filename: a code object's ``co_filename``.

  Example:
    >>> is_internal_file(__file__)
    True
  """
  hit = _internal_cache.get(filename)
  if hit is None:
    path = os.path.abspath(filename)
    hit = any(path == d or path.startswith(d + os.sep) or
              (d.endswith(".py") and os.path.splitext(path)[0] == os.path.splitext(d)[0])
              for d in (_TRACEJAX_DIR, *_excluded_paths))
    _internal_cache[filename] = hit
  return hit


def _is_reraiser(frame):
  code = frame.f_code
  return code.co_name == "reraise_with_filtered_traceback" and code.co_filename == __file__


def _under_reraiser(frame):
  """Whether a boundary above `frame` (the one that caught the exception) will filter."""
  f = frame.f_back
  while f is not None:
    if _is_reraiser(f):
      return True
    f = f.f_back
  return False


def filter_traceback(tb):
  """`tb` without tracejax's own frames (None if nothing else is left).

  Args:
    tb: a traceback object, e.g. ``exc.__traceback__``.

  Example:
    >>> try:
    ...   1 / 0
    ... except ZeroDivisionError as e:
    ...   filter_traceback(e.__traceback__) is not None   # a doctest frame: kept
    True
  """
  kept = [(f, lasti, lineno) for f, lasti, lineno in _walk(tb)
          if not is_internal_file(f.f_code.co_filename)]
  out = None
  for f, lasti, lineno in reversed(kept):
    out = types.TracebackType(out, f, lasti, lineno)
  return out


def _walk(tb):
  while tb is not None:
    yield tb.tb_frame, tb.tb_lasti, tb.tb_lineno
    tb = tb.tb_next


def _running_under_ipython():
  ipython = sys.modules.get("IPython")
  try:
    return ipython is not None and ipython.get_ipython() is not None
  except Exception:  # a partial or unusual IPython: behave as plain Python
    return False


def filtering_mode():
  """The effective mode: the flag's value, with ``"auto"`` resolved.

  Example:
    >>> filtering_mode() in MODES
    True
  """
  mode = config.jax_traceback_filtering
  if mode in (None, "auto"):
    mode = "tracebackhide" if _running_under_ipython() else "quiet_remove_frames"
  return mode


def _mark_hidden(tb):
  for f, _, _ in _walk(tb):
    if is_internal_file(f.f_code.co_filename) and not _is_reraiser(f):
      try:  # honoured by IPython and pytest when they print the traceback
        f.f_locals["__tracebackhide__"] = True
      except Exception:
        pass


def _with_call_stack(tb):
  """`tb` extended upwards with the frames that called it (for the unfiltered copy)."""
  out = tb
  f = tb.tb_frame.f_back
  while f is not None:
    out = types.TracebackType(out, f, f.f_lasti, f.f_lineno)
    if f.f_code.co_name == "<module>":
      break
    f = f.f_back
  return out


def _filter(e, mode):
  tb = e.__traceback__
  if mode == "tracebackhide":
    _mark_hidden(tb)
    return
  if mode not in ("remove_frames", "quiet_remove_frames"):
    raise ValueError(f"JAX_TRACEBACK_FILTERING={mode} is not a valid value; expected one "
                     f"of {MODES}.")
  if mode == "remove_frames":
    import traceback  # only here: keeps `import tracejax` from loading it
    name = traceback.format_exception_only(type(e), e)[-1].strip()
    full = UnfilteredStackTrace(
        f"{name}\n\nThe stack trace below excludes JAX-internal frames.\n"
        "The preceding is the original exception that occurred, unmodified.\n"
        "\n--------------------")
    full.__traceback__ = _with_call_stack(tb) if tb is not None else None
    full.__cause__, full.__context__ = e.__cause__, e.__context__
    full.__suppress_context__ = e.__suppress_context__
    e.__cause__, e.__context__ = full, None
  else:
    e.add_note("--------------------\n" + SIMPLIFIED_TB_NOTE)
  e.__traceback__ = filter_traceback(tb)


def api_boundary(fun):
  """Wraps a public entry point so that exceptions escaping it are filtered.

  Args:
    fun: the user-facing callable (a jitted function's call, `grad`'s result...).

  Returns:
    A callable with `fun`'s signature and metadata. Calls cost one Python frame
    more; filtering happens only when an exception escapes.

  Example:
    >>> @api_boundary
    ... def entry(x):
    ...   return x + 1
    >>> entry(1)
    2
  """
  @functools.wraps(fun)
  def reraise_with_filtered_traceback(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841  (read by pytest and IPython)
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      mode = filtering_mode()
      if mode == "off" or e.__traceback__ is None or _under_reraiser(
          e.__traceback__.tb_frame):
        raise
      _filter(e, mode)
      raise  # re-raising keeps the filtered traceback; callers' frames get appended
  return reraise_with_filtered_traceback


def _strip_launcher(tb):
  """Drops the leading frames of runpy and tracejax's launcher (`python -m tracejax run`)."""
  while tb is not None:
    name = tb.tb_frame.f_code.co_filename
    if not (is_internal_file(name) or os.path.splitext(os.path.abspath(name))[0]
            == _RUNPY_FILE or name.startswith("<frozen runpy")):
      break
    tb = tb.tb_next
  return tb


def install_run_excepthook():
  """Makes an uncaught exception hide the launcher's frames above the user's program.

  Used by `python -m tracejax run`: the script runs under runpy, called by
  tracejax's `__main__`, itself run by runpy; none of those frames is the
  user's. Does nothing to the printout when `jax_traceback_filtering` is
  ``"off"``. Installing twice is harmless.

  Example:
    >>> install_run_excepthook()
    >>> sys.excepthook.__name__
    'tracejax_excepthook'
  """
  previous = sys.excepthook
  if getattr(previous, "__name__", "") == "tracejax_excepthook":
    return

  def tracejax_excepthook(etype, value, tb):
    if config.jax_traceback_filtering != "off":
      stripped = _strip_launcher(tb)
      if stripped is not None:  # keep something to show, even if it is all launcher
        tb = stripped
        if value is not None:
          value.__traceback__ = tb
    previous(etype, value, tb)

  sys.excepthook = tracejax_excepthook
