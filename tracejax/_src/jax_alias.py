"""The import hook behind `python -m tracejax run`: `jax[.x.y]` means `tracejax[.x.y]`."""
import importlib
import importlib.abc
import importlib.machinery
import sys


class _AliasLoader(importlib.abc.Loader):
  def __init__(self, target):
    self.target = target

  def create_module(self, spec):
    module = importlib.import_module(self.target)
    self._spec = module.__spec__  # the import system overwrites it with the alias spec
    return module

  def exec_module(self, module):
    module.__spec__ = self._spec  # already executed under its tracejax name


class JaxAliasFinder(importlib.abc.MetaPathFinder):
  """Resolves `jax` and `jax.*` to the tracejax modules of the same names."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != "jax" and not fullname.startswith("jax."):
      return None
    real = "tracejax" + fullname[3:]
    try:
      importlib.util.find_spec(real)
    except (ImportError, ValueError):
      return None
    if importlib.util.find_spec(real) is None:
      return None
    mod = importlib.import_module(real)
    return importlib.machinery.ModuleSpec(
        fullname, _AliasLoader(real), is_package=hasattr(mod, "__path__"))


def install():
  if not any(isinstance(f, JaxAliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, JaxAliasFinder())


import importlib.util  # noqa: E402
