"""`jax.lax`: the primitives (`add_p`, `sin_p`, ...) and their wrappers (`lax.add`, ...).

This module only re-exports. Each primitive lives in one block of its family
file under `tracejax/_src/lax/` (e.g. `sin`: `tracejax/_src/lax/elementwise.py`),
and structured control flow under `tracejax/_src/control_flow/`.

The names are collected family by family rather than listed by hand, so a primitive
added to its family file is public at once and the two can never disagree. A
family exports its `__all__` when it defines one; otherwise every public name it
defines itself (functions, classes such as `Precision`, and `*_p` primitives),
never the helpers it imports (`np`, `hlo`, `standard_primitive`, ...).
"""
import importlib as _importlib
import importlib.util as _importlib_util
import types as _types

from tracejax._src.core.trace import Primitive as _Primitive

# Families in the order of DESIGN.md §3, then any other module of `_src/lax/`
# (e.g. misc.py) alphabetically: a new family file is picked up without editing
# this list. `utils` (rule factories) and `reference*` (NumPy test oracles) are
# not API, and the `linalg*` families are public only as `jax.lax.linalg` (JAX has no
# `jax.lax.cholesky`). Structured control flow is its own package.
_ORDER = ("elementwise", "special", "structural", "slicing", "reductions", "dot", "convolution",
          "windowed", "sort", "fft", "random_bits", "parallel")
_NOT_API = frozenset({"utils", "reference"})


def _families():
  import pkgutil
  import tracejax._src.lax as src_lax
  present = {m.name for m in pkgutil.iter_modules(src_lax.__path__)
             if m.name not in _NOT_API
             and not m.name.startswith(("_", "reference", "linalg"))}
  names = [n for n in _ORDER if n in present] + sorted(present - set(_ORDER))
  mods = [f"tracejax._src.lax.{n}" for n in names]
  if _exists("tracejax._src.control_flow"):
    mods.append("tracejax._src.control_flow")
  return mods


def _defined_in(obj, modname):
  owner = getattr(obj, "__module__", None)
  return isinstance(owner, str) and (owner == modname or owner.startswith(modname + "."))


def _public_names(mod):
  names = getattr(mod, "__all__", None)
  if names is not None:
    return list(names)
  out = []
  for name, obj in vars(mod).items():
    if name.startswith("_") or isinstance(obj, _types.ModuleType):
      continue
    if isinstance(obj, _Primitive) or _defined_in(obj, mod.__name__):
      out.append(name)
  return out


def _exists(modname):
  try:
    return _importlib_util.find_spec(modname) is not None
  except ModuleNotFoundError:  # a parent package is missing
    return False


def _collect():
  names = {}
  for modname in _families():
    mod = _importlib.import_module(modname)
    for name in _public_names(mod):
      names.setdefault(name, getattr(mod, name))  # the first family to define it wins
  return names


globals().update(_collect())
# The public functions check dtypes as JAX's do (a Python scalar has its own default
# dtype: `lax.add(f32_array, 2)` is a TypeError); the `_src/lax` ones that tracejax's
# library code calls stay lenient. See tracejax/_src/lax/public_checks.py.
from tracejax._src.lax import public_checks as _public_checks  # noqa: E402
globals().update(_public_checks.public(globals()))
__all__ = sorted(n for n in globals() if not n.startswith("_"))

# `jax.lax.linalg` is a submodule (like `jax.lax.linalg.cholesky` in JAX); importing it
# here makes the attribute available after a plain `import jax.lax`.
from tracejax.lax import linalg  # noqa: E402,F401
# Sharding constraints live with the SPMD machinery (interpreters/pxla.py).
from tracejax._src.interpreters.pxla import (  # noqa: E402,F401
    sharding_constraint_p as sharding_constraint_p,
    with_sharding_constraint as with_sharding_constraint,
)
__all__ = sorted(set(__all__) | {"sharding_constraint_p", "with_sharding_constraint"})
# `pcast` marks values as varying over mesh axes inside shard_map (its replication check).
from tracejax._src.shard_map import pcast as pcast, pcast_p as pcast_p  # noqa: E402,F401
__all__ = sorted(set(__all__) | {"pcast", "pcast_p"})
# Arrays get their operators and methods (`x + 1`, `x.sum()`) from array_methods, which
# `import tracejax` no longer imports eagerly (see tracejax/__init__.py): a program
# that only imports `jax.lax` gets them here.
from tracejax._src.numpy import array_methods as _array_methods  # noqa: E402,F401
