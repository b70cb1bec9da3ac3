"""`python -m tracejax run ...`: run an unmodified JAX program or library on tracejax.

An import hook makes `import jax` and every `jax.*` submodule resolve to the
tracejax module of the same name; then the program runs as `__main__`, the way
`python` itself would run it:

  python -m tracejax run SCRIPT [ARGS...]      # like `python SCRIPT`
  python -m tracejax run -m MODULE [ARGS...]   # like `python -m MODULE` (pytest, ...)
  python -m tracejax run -c CODE [ARGS...]     # like `python -c CODE`

Child interpreters get the hook too: `run` sets `TRACEJAX_ALIAS_JAX=1` and puts
the directory of tracejax's own `sitecustomize.py` (`tracejax/_alias_site/`)
first on `PYTHONPATH`, so `python -m tracejax run -m pytest -n 2` reaches the
pytest-xdist workers.
"""
import importlib.util
import os
import runpy
import sys
import types

DESCRIPTION = """\
tracejax: JAX rebuilt from scratch on jaxlib.

commands:
  run SCRIPT [ARGS...]      run a JAX program on tracejax, like `python SCRIPT`
  run -m MODULE [ARGS...]   run a module, like `python -m MODULE` (pytest, ...)
  run -c CODE [ARGS...]     run a string, like `python -c CODE`
  graph SCRIPT.py:FUNCTION --args "f32[3],f32[3]" [-o OUT.png]
                            draw FUNCTION's jaxpr as a graph
  info [--json]             versions, devices, configuration and the compilation cache

`run`: `import jax` (and every `jax.*` module) gives tracejax, in this interpreter
and in the Python processes it starts (TRACEJAX_ALIAS_JAX=1 and tracejax's
sitecustomize on PYTHONPATH; set TRACEJAX_ALIAS_JAX=0 in a child to opt out).
Everything after SCRIPT, MODULE or CODE goes to the program untouched.

`tracejax COMMAND --help` describes one command."""

RUN_DESCRIPTION = """\
Run a program written for JAX on tracejax: `import jax` gives tracejax. Arguments
after SCRIPT, `-m MODULE` or `-c CODE` are passed to the program untouched, even
those that look like options (`tracejax run -m pytest -x -n 2 tests/`)."""

ENV_FLAG = "TRACEJAX_ALIAS_JAX"
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_alias_site")


def _prog():
  base = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
  return "python -m tracejax" if base in ("__main__.py", "-m", "-c", "") else "tracejax"


def _parser():
  """The argparse description of the commands (help and `info`'s options).

  `run`'s arguments are split by hand (see `main`): everything after the program
  belongs to it, which argparse's REMAINDER does not guarantee for option-like words.
  """
  import argparse
  fmt = argparse.RawDescriptionHelpFormatter
  p = argparse.ArgumentParser(prog=_prog(), description=DESCRIPTION, formatter_class=fmt)
  p.add_argument("-V", "--version", action="store_true", help="print the versions and exit")
  sub = p.add_subparsers(dest="command", metavar="{run,graph,info}")
  run = sub.add_parser("run", help="run a JAX program, module or string on tracejax",
                       description=RUN_DESCRIPTION, formatter_class=fmt,
                       usage=f"{_prog()} run [-h] (SCRIPT | -m MODULE | -c CODE) [ARGS...]")
  run.add_argument("-m", metavar="MODULE", help="run library module MODULE as a script")
  run.add_argument("-c", metavar="CODE", help="run the Python statements in CODE")
  run.add_argument("script", nargs="?", metavar="SCRIPT", help="a Python file to run")
  run.add_argument("args", nargs="*", metavar="ARGS", help="the program's own arguments")
  sub.add_parser("graph", help="draw a function's jaxpr (`graph --help` for details)",
                 add_help=False)
  info = sub.add_parser("info", help="versions, devices, configuration, compilation cache",
                        description="Print versions (tracejax, jaxlib, numpy, Python), "
                        "the devices, every configuration flag and the on-disk "
                        "compilation cache (directory, entries, size, bound).")
  info.add_argument("--json", action="store_true", help="print one JSON object instead")
  return p


def _usage_error(message=None, command="run"):
  # One line saying what is wrong (and where help is), as `python` does for a bad file.
  if message:
    where = f"{_prog()} {command}" if command else _prog()
    print(f"{where}: {message} (see `{where} --help`)", file=sys.stderr)
  else:
    _parser().print_usage(sys.stderr)
    print(f"{_prog()}: error: a command is required: run, graph or info", file=sys.stderr)
  return 2


def _version():
  from tracejax import __version__
  try:
    from importlib.metadata import version
    jaxlib = version("jaxlib")
  except Exception:  # metadata missing (a source tree on PYTHONPATH): say so, don't fail
    jaxlib = "unknown"
  return f"tracejax {__version__} (jaxlib {jaxlib})"


def _run_help():
  p = _parser()
  for action in p._subparsers._group_actions:  # the `run` subparser's own help
    action.choices["run"].print_help()


def info(as_json=False, file=None):
  """Print what `tracejax info` shows: versions, devices, flags, compilation cache.

  Args:
    as_json: print one JSON object instead of text.
    file: where to print (`sys.stdout` by default).

  Returns 0 (the exit status).

  Example:
    >>> import io, json
    >>> buf = io.StringIO()
    >>> info(as_json=True, file=buf)
    0
    >>> sorted(json.loads(buf.getvalue()))[:3]
    ['cache', 'config', 'default_backend']
  """
  import json
  import platform
  from importlib.metadata import PackageNotFoundError, version
  import tracejax
  from tracejax._src.config import config
  from tracejax._src.runtime import backend
  file = sys.stdout if file is None else file

  def ver(name):
    try:
      return version(name)
    except PackageNotFoundError:
      return "not installed"

  data = {
      "versions": {"tracejax": tracejax.__version__, "jaxlib": ver("jaxlib"),
                   "numpy": ver("numpy"), "ml_dtypes": ver("ml_dtypes"),
                   "scipy": ver("scipy"), "python": platform.python_version()},
      "platform": platform.platform(),
      "default_backend": tracejax.default_backend(),
      "devices": [repr(d) for d in tracejax.devices()],
      "process_index": tracejax.process_index(),
      "process_count": tracejax.process_count(),
      "config": {k: config.values[k] for k in sorted(config.values)},
      "cache": backend.disk_cache_info(),
  }
  if as_json:
    print(json.dumps(data, indent=1, default=str), file=file)
    return 0
  out = [f"{k}: {v}" for k, v in data["versions"].items()]
  out.append(f"platform: {data['platform']}")
  out.append(f"default backend: {data['default_backend']} (process {data['process_index']} "
             f"of {data['process_count']})")
  out.append(f"devices ({len(data['devices'])}): " + ", ".join(data["devices"]))
  c = data["cache"]
  bound = f"{c['max_bytes'] / 2**20:.0f} MiB" if c["max_bytes"] > 0 else "unbounded"
  out.append(f"compilation cache: {c['directory']} ({'on' if c['enabled'] else 'off'}): "
             f"{c['entries']} entries, {c['bytes'] / 2**20:.1f} MiB of {bound}; "
             f"programs compiled in >= {c['min_compile_time_secs']} s are written")
  out.append("config:")
  out += [f"  {k} = {v!r}" for k, v in data["config"].items()]
  print("\n".join(out), file=file)
  return 0


def propagate_to_children(environ=None):
  """Makes Python processes started from now on install the `jax` alias hook too.

  Sets `TRACEJAX_ALIAS_JAX=1` and puts `tracejax/_alias_site` (holding a
  `sitecustomize.py` that installs the hook when the variable is set) first on
  `PYTHONPATH`, once.

  Args:
    environ: the mapping to change; `os.environ` by default.

  Example:
    >>> env = {"PYTHONPATH": "/opt/lib"}
    >>> propagate_to_children(env)
    >>> env["TRACEJAX_ALIAS_JAX"], env["PYTHONPATH"].endswith("/opt/lib")
    ('1', True)
  """
  environ = os.environ if environ is None else environ
  environ[ENV_FLAG] = "1"
  entries = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
  if SITE_DIR not in entries:
    environ["PYTHONPATH"] = os.pathsep.join([SITE_DIR] + entries)


def _module_exists(name):
  try:  # imports the packages above `name`, as `python -m` does
    return importlib.util.find_spec(name) is not None
  except (ImportError, ValueError):
    return False


def _set_path0(entry):
  # `python -m tracejax` put the cwd first on sys.path; `python SCRIPT` would have put
  # the script's directory there instead (nothing under -P / PYTHONSAFEPATH).
  if not sys.flags.safe_path and sys.path:
    sys.path[0] = entry


def main(argv=None):
  """Entry point of `python -m tracejax`; returns the exit status.

  Args:
    argv: the arguments after `python -m tracejax` (`sys.argv[1:]` by default).

  Example:
    >>> main(["run", "-c", "import jax; print(jax.__name__)"])
    tracejax
    0
  """
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv:
    return _usage_error()
  cmd = argv[0]
  if cmd in ("-h", "--help", "help"):
    _parser().print_help()
    return 0
  if cmd in ("-V", "--version"):
    print(_version())
    return 0
  if cmd == "graph":  # a picture of a function's jaxpr (experimental); its own parser
    from tracejax._src.experimental.jaxpr_graph import main as graph_main
    return graph_main(argv[1:])
  if cmd == "info":
    try:
      ns = _parser().parse_args(argv)
    except SystemExit as e:  # argparse's own exit (--help: 0, a bad option: 2)
      return e.code
    return info(as_json=ns.json)
  if cmd != "run":
    return _usage_error(f"unknown command {cmd!r}; expected run, graph or info", "")
  if len(argv) < 2:
    return _usage_error("nothing to run: give SCRIPT, -m MODULE or -c CODE")
  kind, rest = argv[1], argv[2:]
  if kind in ("-h", "--help"):
    _run_help()
    return 0
  if kind in ("-m", "-c") and not rest:
    return _usage_error(f"argument expected for {kind}")
  if kind == "-m" and not _module_exists(rest[0]):
    print(f"{_prog()} run: No module named {rest[0]}", file=sys.stderr)
    return 1
  if kind not in ("-m", "-c") and not os.path.isfile(kind):
    what = "is a directory" if os.path.isdir(kind) else "no such file"
    return _usage_error(f"can't open file {kind!r}: {what}")

  from tracejax._src import jax_alias
  jax_alias.install()
  propagate_to_children()
  from tracejax._src import traceback_util  # uncaught errors: no runpy/launcher frames
  traceback_util.install_run_excepthook()
  if kind == "-m":
    sys.argv = list(rest)  # runpy replaces argv[0] with the module's file, as `python -m`
    runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
  elif kind == "-c":
    sys.argv = ["-c"] + rest[1:]
    _set_path0("")
    code = compile(rest[0], "<string>", "exec")
    saved, sys.modules["__main__"] = sys.modules["__main__"], types.ModuleType("__main__")
    try:  # a fresh `__main__`, as `python -c` has (pickle finds functions defined there)
      exec(code, sys.modules["__main__"].__dict__)
    finally:
      sys.modules["__main__"] = saved
  else:
    sys.argv = [kind] + rest
    _set_path0(os.path.dirname(os.path.abspath(kind)))
    runpy.run_path(kind, run_name="__main__")
  return 0


if __name__ == "__main__":
  sys.exit(main())
