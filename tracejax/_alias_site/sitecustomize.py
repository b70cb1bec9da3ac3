"""Installs the `jax` -> tracejax import hook in interpreters started by `tracejax run`.

`python -m tracejax run` sets `TRACEJAX_ALIAS_JAX=1` and puts this file's directory
first on `PYTHONPATH`, so every Python child process it starts (pytest-xdist
workers included) imports this module at startup, through `site`. With the
variable set, the hook goes on `sys.meta_path`; either way the `sitecustomize`
that this one shadows (the next one on `sys.path`, if any) is run after it.

The hook's file is loaded by path, not as `tracejax._src.jax_alias`: importing
that name would import the whole `tracejax` package (and jaxlib) at the start of
every child interpreter, including the ones that never import `jax`.
"""
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _install_hook():
  if os.environ.get("TRACEJAX_ALIAS_JAX") != "1":
    return
  path = os.path.join(os.path.dirname(_HERE), "_src", "jax_alias.py")
  spec = importlib.util.spec_from_file_location("_tracejax_jax_alias", path)
  module = importlib.util.module_from_spec(spec)
  sys.modules[spec.name] = module
  spec.loader.exec_module(module)
  module.install()


def _chain_next_sitecustomize():
  # Python imports only the first `sitecustomize` on the path; this one shadows the
  # environment's own (a venv's, a distribution's), so run that one too.
  others = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
  spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
  if spec is None or spec.loader is None:
    return
  module = importlib.util.module_from_spec(spec)
  sys.modules["sitecustomize"] = module
  spec.loader.exec_module(module)


_install_hook()
_chain_next_sitecustomize()
