"""tracejax never imports the `jax` Python package, not even when it is importable.

jaxlib's C++ lazily tries `import jax...` on some paths (JAXLIB.md §2.7):
`disassemble_into_single_device_arrays`, `_single_device_array_to_np_array_did_copy`,
DLPack puts. The backend avoids them; these tests run a realistic workload in a fresh
interpreter with a `sys.meta_path` spy in front of every finder, and check that no
`jax`/`jax.*` import was even attempted and that none is in `sys.modules`.
"""
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAX_VENV = os.environ.get("TRACEJAX_JAX_VENV", "/work/jaxvenv")

# The workload: everything a small program does, including the paths through jaxlib
# that could lazily import jax (fetching results, bfloat16, device queries, pickling,
# compiling and loading from the on-disk cache).
WORKLOAD = textwrap.dedent(r"""
  import importlib.abc
  import importlib.util
  import json
  import pickle
  import sys

  expect_jax_importable = sys.argv[1] == "1"
  jax_spec = importlib.util.find_spec("jax")  # before the spy: finding is not importing
  jax_origin = jax_spec.origin if jax_spec is not None else None


  class Spy(importlib.abc.MetaPathFinder):
    # Records every attempt to import jax or a jax.* module, then lets it proceed.
    def __init__(self):
      self.attempts = []

    def find_spec(self, fullname, path=None, target=None):
      if fullname == "jax" or fullname.startswith("jax."):
        self.attempts.append(fullname)
      return None


  spy = Spy()
  sys.meta_path.insert(0, spy)

  import ml_dtypes
  import numpy as np

  import tracejax as jax
  import tracejax.numpy as jnp
  from tracejax import lax

  # eager operations, fetched in every way a user fetches
  x = jnp.array([1.0, 2.0, 3.0])
  y = jnp.sin(x) * 2.0 + x
  total = jnp.sum(y)
  results = {
      "y": np.asarray(y).tolist(),
      "total": float(total),
      "lax": np.asarray(lax.add(x, x)).tolist(),
      "repr": repr(y),
      "str": str(total),
      "get": jax.device_get({"a": y})["a"].tolist(),
      "item": total.item(),
      "tolist": y.tolist(),
  }
  y.block_until_ready()
  jax.block_until_ready({"t": total})
  results["device"] = str(y.device())
  results["devices"] = [str(d) for d in jax.devices()]
  results["pickled"] = np.asarray(pickle.loads(pickle.dumps(y))).tolist()

  # jit: first call compiles (and writes the disk cache), then cached calls
  f = jax.jit(lambda a, b: jnp.sum(jnp.sin(a) * b))
  results["jit"] = [float(f(x, 2.0)), float(f(x, 3.0)), float(f(x + 1.0, 2.0))]
  lowered = f.lower(x, 2.0)
  results["lowered"] = "stablehlo" in lowered.as_text() or "mhlo" in lowered.as_text()
  results["compiled"] = float(lowered.compile()(x, 2.0))
  results["jaxpr"] = str(jax.make_jaxpr(lambda a: jnp.sin(a) * 2.0)(x))

  # integers, booleans and bfloat16 (fetched through an in-graph bitcast)
  i = jnp.array([1, 2, 3], dtype=jnp.int32)
  results["int"] = np.asarray(i * 2).tolist()
  results["bool"] = np.asarray(x > 1.5).tolist()
  b = jax.device_put(np.array([1.5, 2.5, -3.0], dtype=ml_dtypes.bfloat16))
  bf = np.asarray(b)
  results["bf16_dtype"] = str(bf.dtype)
  results["bf16"] = bf.astype(np.float32).tolist()
  results["bf16_mul"] = np.asarray(jax.jit(lambda v: v * v)(b)).astype(np.float32).tolist()
  results["bf16_repr"] = repr(b)

  real_jax = sorted(k for k, m in sys.modules.items()
                    if (k == "jax" or k.startswith("jax.")) and m is not None)
  print(json.dumps({"attempts": spy.attempts, "modules": real_jax, "results": results,
                    "jax_origin": jax_origin}))
""")


def _run_workload(tmp_path, extra_path=None):
  script = tmp_path / "workload.py"
  script.write_text(WORKLOAD)
  env = dict(os.environ)
  # tracejax's checkout first; the real jax (if given) after it, as the brief of the
  # test demands: `import jax` would then succeed, so any attempt would really import.
  path = [REPO] + ([extra_path] if extra_path else [])
  env["PYTHONPATH"] = os.pathsep.join(path)
  env["TRACEJAX_CACHE_DIR"] = str(tmp_path / "cache")
  outs = []
  for _ in range(2):  # the second run loads executables from the on-disk cache
    proc = subprocess.run([sys.executable, str(script), "1" if extra_path else "0"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"workload failed:\n{proc.stdout}\n{proc.stderr}"
    outs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
  return outs


def _check(out):
  assert out["attempts"] == [], f"tried to import {out['attempts']}"
  assert out["modules"] == [], f"imported {out['modules']}"
  r = out["results"]
  assert r["jit"][0] == pytest.approx(2 * (0.841471 + 0.909297 + 0.141120), rel=1e-5)
  assert r["compiled"] == pytest.approx(r["jit"][0])
  assert r["bf16_dtype"] == "bfloat16"
  assert r["bf16"] == [1.5, 2.5, -3.0]
  assert r["bf16_mul"] == [2.25, 6.25, 9.0]
  assert r["int"] == [2, 4, 6]
  assert r["bool"] == [False, True, True]
  assert "sin" in r["jaxpr"]


def test_workload_never_imports_jax(tmp_path):
  for out in _run_workload(tmp_path):
    _check(out)


def _jax_site_packages():
  found = glob.glob(os.path.join(JAX_VENV, "lib", "python*", "site-packages"))
  return found[0] if found and os.path.isdir(os.path.join(found[0], "jax")) else None


def test_workload_never_imports_jax_even_when_importable(tmp_path):
  site = _jax_site_packages()
  if site is None:
    pytest.skip(f"no virtual environment with the real jax at {JAX_VENV} "
                "(set TRACEJAX_JAX_VENV to one)")
  for out in _run_workload(tmp_path, extra_path=site):
    assert out["jax_origin"] and out["jax_origin"].startswith(site), \
        f"the real jax should have been importable, found {out['jax_origin']}"
    _check(out)
