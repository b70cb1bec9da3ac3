"""Every public name of JAX 0.1.62 exists in tracejax (issue 10 acceptance).

The table (module -> names) is tests/data/jax_0_1_62_api.py, transcribed from the
0.1.62 documentation's API pages in shared/seeds/ and from FEATURES.md. Each module
is one test case, which fails listing every missing name at once. The test imports
tracejax's modules directly (`jax.X` is `tracejax.X` under `python -m tracejax run`).
"""
import importlib
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
import jax_0_1_62_api as api_data  # noqa: E402

TABLE = api_data.api_table()


def _tracejax_name(module):
  return "tracejax" + module[len("jax"):]


def _resolve(module):
  """The tracejax object for a dotted 2020 module path: imported as a module where it
  is one, else an attribute of its parent (e.g. `jax.scipy.stats.norm`)."""
  name = _tracejax_name(module)
  try:
    return importlib.import_module(name)
  except ModuleNotFoundError:
    parent, _, attr = name.rpartition(".")
    obj = _resolve("jax" + parent[len("tracejax"):]) if parent != "tracejax" else \
        importlib.import_module("tracejax")
    if not hasattr(obj, attr):
      raise
    return getattr(obj, attr)


def missing_names(module, names):
  """The names of `names` that `module` (a 2020 path) lacks; all of them if it is absent."""
  try:
    obj = _resolve(module)
  except ImportError:
    return list(names)
  return [n for n in names if not hasattr(obj, n)]


@pytest.mark.parametrize("module", api_data.MODULES)
def test_module_imports(module):
  _resolve(module)


@pytest.mark.parametrize("module", sorted(TABLE))
def test_public_names(module):
  missing = missing_names(module, TABLE[module])
  assert not missing, (f"{module} lacks {len(missing)} of {len(TABLE[module])} public "
                       f"names of JAX 0.1.62: {', '.join(missing)}")


def test_table_is_the_documented_listing():
  # The transcription keeps the seed's counts: 217 jax.numpy functions (FEATURES C.1),
  # 16 fft, 15 linalg, 17 scipy.linalg, 20 scipy.special, 117 lax operators.
  seed = api_data.SEED_API
  counts = {m: len(seed[m]) for m in ("jax.numpy", "jax.numpy.fft", "jax.numpy.linalg",
                                      "jax.scipy.linalg", "jax.scipy.special", "jax.lax")}
  assert counts == {"jax.numpy": 217, "jax.numpy.fft": 16, "jax.numpy.linalg": 15,
                    "jax.scipy.linalg": 17, "jax.scipy.special": 20, "jax.lax": 117}
  for mod, names in seed.items():
    assert len(set(names)) == len(names), mod
    assert all(n.isidentifier() for n in names), mod


def test_missing_names_reports_each_absent_name():
  # The checker itself: a made-up name is reported, a real one is not, and a module
  # that does not exist reports every name.
  assert missing_names("jax.lax", ["add", "no_such_lax_name"]) == ["no_such_lax_name"]
  assert missing_names("jax.no_such_module", ["a", "b"]) == ["a", "b"]
