"""`python -m tracejax run SCRIPT [ARGS]`: unmodified JAX programs run on tracejax.

The import hook resolves `jax` and every `jax.*` module to the tracejax module of
the same name (the same object, so `jax.numpy is tracejax.numpy`); the script
runs as `__main__` with its own argv and its directory on `sys.path`.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(args, cwd, timeout=120):
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  return subprocess.run([sys.executable, "-m", "tracejax"] + list(args), cwd=str(cwd),
                        env=env, capture_output=True, text=True, timeout=timeout)


# Every import form of the seeds, from 2020 (`jax.api`, `from jax.config import config`,
# `from jax import ad`) to today (`jax.interpreters.ad`, `jax.config.update`).
SCRIPT = textwrap.dedent("""
  import json
  import sys

  import jax, jax.numpy as jnp
  from jax import lax
  from jax.config import config
  import jax.api
  from jax import core
  from jax.interpreters import ad, batching, xla
  from jax import ad as ad2020, batching as batching2020
  from jax.abstract_arrays import ShapedArray
  import helper_next_to_script

  import tracejax
  import tracejax.config, tracejax.api, tracejax.core, tracejax.interpreters.ad
  import tracejax.interpreters.batching, tracejax.interpreters.xla, tracejax.lax

  config.update("jax_enable_x64", False)
  jax.config.update("jax_debug_nans", False)
  checks = {
      "jax": jax is tracejax,
      "jnp": jnp is tracejax.numpy and jax.numpy is tracejax.numpy,
      "lax": lax is tracejax.lax,
      "config": config is tracejax.config.config and jax.config is tracejax.config,
      "config_read": jax.config.jax_enable_x64 is False,
      "api": jax.api is tracejax.api,
      "core": core is tracejax.core and core.Primitive is tracejax.core.Primitive,
      "ad": ad is tracejax.interpreters.ad and ad2020 is ad,
      "batching": batching is tracejax.interpreters.batching and batching2020 is batching,
      "xla": xla is tracejax.interpreters.xla,
      "shaped": ShapedArray is core.ShapedArray,
      "modules": sys.modules["jax.numpy"] is tracejax.numpy,
      "spec": jax.numpy.__spec__.name == "tracejax.numpy",
      "helper": helper_next_to_script.VALUE == 42,
  }
  value = float(jax.jit(lambda x: lax.mul(x, 2.0))(21.0))
  print(json.dumps({"argv": sys.argv, "name": __name__, "file": __file__,
                    "checks": checks, "value": value}))
""")


@pytest.fixture
def script_dir(tmp_path):
  (tmp_path / "prog.py").write_text(SCRIPT)
  (tmp_path / "helper_next_to_script.py").write_text("VALUE = 42\n")
  return tmp_path


def test_run_script_with_aliases_and_argv(script_dir, tmp_path_factory):
  elsewhere = tmp_path_factory.mktemp("cwd")  # the script's directory is not the cwd
  script = str(script_dir / "prog.py")
  proc = _run(["run", script, "arg1", "--flag", "-x"], cwd=elsewhere)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  assert out["argv"] == [script, "arg1", "--flag", "-x"]
  assert out["name"] == "__main__"
  assert os.path.samefile(out["file"], script)
  assert out["checks"] == {k: True for k in out["checks"]}, out["checks"]
  assert out["value"] == 42.0


def test_missing_jax_module_raises_module_not_found(tmp_path):
  (tmp_path / "caught.py").write_text(textwrap.dedent("""
    try:
      import jax.no_such_module_anywhere
    except ModuleNotFoundError as e:
      print("caught", e.name)
    try:
      from jax import no_such_name_anywhere
    except ImportError as e:
      print("caught import error")
  """))
  proc = _run(["run", "caught.py"], cwd=tmp_path)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert "caught jax.no_such_module_anywhere" in proc.stdout
  assert "caught import error" in proc.stdout

  (tmp_path / "uncaught.py").write_text("import jax.no_such_module_anywhere\n")
  proc = _run(["run", "uncaught.py"], cwd=tmp_path)
  assert proc.returncode == 1
  assert "ModuleNotFoundError" in proc.stderr


def test_script_exit_status_and_exceptions_propagate(tmp_path):
  (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")
  assert _run(["run", "exits.py"], cwd=tmp_path).returncode == 3
  (tmp_path / "raises.py").write_text("raise ValueError('boom from script')\n")
  proc = _run(["run", "raises.py"], cwd=tmp_path)
  assert proc.returncode == 1
  assert "ValueError: boom from script" in proc.stderr


@pytest.mark.parametrize("args", [[], ["walk"], ["run"], ["run", "does_not_exist.py"]],
                         ids=["no-args", "unknown-command", "no-script", "missing-script"])
def test_usage_errors_exit_2(tmp_path, args):
  proc = _run(args, cwd=tmp_path)
  assert proc.returncode == 2, proc.stdout + proc.stderr
  assert "tracejax" in proc.stderr


def test_seed_mlir_lowering_rule_form(tmp_path):
  # The 2024 primitives notebook: a lowering rule written with `jax._src.lib.mlir`.
  (tmp_path / "prog.py").write_text(textwrap.dedent("""
    import numpy as np
    import jax
    from jax import core
    from jax._src.lib.mlir.dialects import hlo
    from jax.interpreters import mlir

    p = core.Primitive("multiply_add")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(lambda x, y, z: core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result],
                           platform="cpu")
    assert jax.jit(lambda x, y: p.bind(x, x, y))(2., 10.) == 14.
    print("ok")
  """))
  r = _run(["run", "prog.py"], tmp_path)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip().endswith("ok")
