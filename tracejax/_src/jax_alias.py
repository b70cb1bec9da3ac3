"""The import hook behind `python -m tracejax run`: `jax[.x.y]` means `tracejax[.x.y]`.

`jax.X` resolves to the module `tracejax.X` itself (`sys.modules["jax.numpy"] is
tracejax.numpy`), private ones included: `jax._src.X` is `tracejax._src.X` when
that exists. Where JAX keeps a module under another name than tracejax does
(`jax._src.compiler`, `jax._src.interpreters.mlir`, `jax._src.pjit`, ...), the
`ALIASES` table says where its tracejax counterpart lives; a table entry also
covers the submodules below it.

This file imports nothing from tracejax at module level: the `sitecustomize`
in `tracejax/_alias_site/` loads it by path in every child interpreter of
`python -m tracejax run`, and the hook must cost nothing until `jax` is imported.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# JAX module -> tracejax module of the same role, for the names libraries import
# whose tracejax module has another path (checked by tests/test_run_hook.py).
ALIASES = {
    "jax._src.xla_bridge": "tracejax.lib.xla_bridge",          # backends, devices
    "jax._src.compiler": "tracejax._src.runtime.backend",      # compile entry point
    "jax._src.array": "tracejax._src.runtime.array",           # the Array type
    "jax._src.basearray": "tracejax._src.runtime.array",
    "jax._src.pjit": "tracejax._src.jit",
    "jax._src.interpreters.mlir": "tracejax._src.interpreters.lowering",
    "jax._src.lax.lax": "tracejax.lax",                        # one module in JAX, families here
    "jax._src.lax.control_flow": "tracejax._src.control_flow",
    "jax._src.numpy.lax_numpy": "tracejax.numpy",
}


def target_name(fullname):
  """The tracejax module name that the JAX module `fullname` stands for.

  Args:
    fullname: a dotted module name, e.g. `"jax.numpy"` or `"jax._src.pjit"`.

  Returns:
    The tracejax module name (`"tracejax.numpy"`, `"tracejax._src.jit"`), or None
    when `fullname` is not `jax` or below it (nor, under its tracejax spelling, a
    module of the `ALIASES` table such as `"tracejax._src.compiler"`).

  Example:
    >>> target_name("jax._src.compiler")
    'tracejax._src.runtime.backend'
  """
  if fullname.startswith("tracejax."):
    # `from jax._src import compiler` imports `tracejax._src.compiler`: the import system
    # names a from-import's submodule after the real package (`jax._src` is
    # `tracejax._src`), so the table is also honoured under the tracejax spelling.
    return _table_lookup("jax" + fullname[len("tracejax"):])
  if fullname != "jax" and not fullname.startswith("jax."):
    return None
  return _table_lookup(fullname) or "tracejax" + fullname[3:]


def _table_lookup(fullname):
  prefix = fullname
  while "." in prefix:  # the longest table entry that is `fullname` or a package above it
    if prefix in ALIASES:
      return ALIASES[prefix] + fullname[len(prefix):]
    prefix = prefix.rpartition(".")[0]
  return None


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

  # Marks the finder whichever copy of this file made it (sitecustomize loads the file
  # under another module name), so that `install` never puts two on `sys.meta_path`.
  _tracejax_jax_alias = True

  def find_spec(self, fullname, path=None, target=None):
    real = target_name(fullname)
    if real is None:
      return None
    try:
      if importlib.util.find_spec(real) is None:
        return None
    except (ImportError, ValueError):
      return None
    mod = importlib.import_module(real)
    return importlib.machinery.ModuleSpec(
        fullname, _AliasLoader(real), is_package=hasattr(mod, "__path__"))


def installed():
  """Whether the `jax` alias hook is on `sys.meta_path` in this interpreter.

  Example:
    >>> install(); installed()
    True
  """
  return any(getattr(f, "_tracejax_jax_alias", False) for f in sys.meta_path)


def install():
  """Puts the alias hook first on `sys.meta_path` (once): `import jax` gives tracejax.

  Example:
    >>> install()
    >>> import jax, tracejax
    >>> jax is tracejax
    True
  """
  if not installed():
    sys.meta_path.insert(0, JaxAliasFinder())
