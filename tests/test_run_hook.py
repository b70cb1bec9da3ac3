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
def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys, args):
  # In-process (each returns before installing the hook); `python -m tracejax`'s own
  # exit path is covered by test_script_exit_status_and_exceptions_propagate.
  from tracejax.__main__ import main
  monkeypatch.chdir(tmp_path)
  assert main(args) == 2
  assert "tracejax" in capsys.readouterr().err


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


# --- `run -m` / `run -c`, and the hook in child interpreters -------------------------

MODULE = textwrap.dedent("""
  import json, sys
  import jax, tracejax
  print(json.dumps({"argv": sys.argv, "name": __name__, "same": jax is tracejax,
                    "value": float(jax.numpy.sum(jax.numpy.arange(4.0)))}))
""")


def _last_json(proc):
  assert proc.returncode == 0, proc.stdout + proc.stderr
  return json.loads(proc.stdout.strip().splitlines()[-1])


def test_run_module_like_python_m(tmp_path):
  # The cwd is on sys.path (as with `python -m`); argv[0] becomes the module's file.
  (tmp_path / "mymod.py").write_text(MODULE)
  (tmp_path / "mypkg").mkdir()
  (tmp_path / "mypkg" / "__init__.py").write_text("")
  (tmp_path / "mypkg" / "__main__.py").write_text(MODULE)
  out = _last_json(_run(["run", "-m", "mymod", "a", "-n", "2"], cwd=tmp_path))
  assert out["name"] == "__main__" and out["same"] and out["value"] == 6.0
  assert os.path.samefile(out["argv"][0], tmp_path / "mymod.py")
  assert out["argv"][1:] == ["a", "-n", "2"]
  out = _last_json(_run(["run", "-m", "mypkg", "--flag"], cwd=tmp_path))
  assert os.path.samefile(out["argv"][0], tmp_path / "mypkg" / "__main__.py")
  assert out["argv"][1:] == ["--flag"] and out["same"]


PRIVATE = textwrap.dedent("""
  import jax
  from jax._src import compiler, xla_bridge, api, dtypes, tree_util, core, typing, lib
  from jax._src.lax import lax as lax_internal
  import jax._src.xla_bridge, jax._src.numpy.lax_numpy
  import tracejax, tracejax.lax, tracejax.numpy, tracejax.lib.xla_bridge
  from tracejax._src.runtime import backend
  assert compiler is backend and xla_bridge is tracejax.lib.xla_bridge
  assert jax._src.xla_bridge is xla_bridge and xla_bridge.get_backend().platform == "cpu"
  assert api is tracejax._src.api and core is tracejax._src.core
  assert lax_internal is tracejax.lax and jax._src.numpy.lax_numpy is tracejax.numpy
""")


def test_run_code_string_and_private_modules(tmp_path):
  # `run -c` as `python -c`; the private `jax._src` modules libraries import resolve,
  # `from jax._src import compiler` included (a table entry, not a tracejax module).
  out = _last_json(_run(["run", "-c", PRIVATE + MODULE, "x", "y"], cwd=tmp_path))
  assert out == {"argv": ["-c", "x", "y"], "name": "__main__", "same": True, "value": 6.0}


def test_cli_help_version_and_errors(capsys):
  # In-process: these all return before the hook is installed.
  from tracejax.__main__ import main
  import tracejax
  assert main(["--help"]) == 0 and "run -m MODULE" in capsys.readouterr().out
  assert main(["--version"]) == 0
  assert capsys.readouterr().out.startswith(f"tracejax {tracejax.__version__} (jaxlib ")
  assert main(["run", "-m", "no_such_module_for_tracejax"]) == 1
  assert "No module named no_such_module_for_tracejax" in capsys.readouterr().err
  assert main(["run", "-m"]) == 2 and main(["run", "-c"]) == 2
  assert "argument expected for -c" in capsys.readouterr().err
  assert not any(getattr(f, "_tracejax_jax_alias", False) for f in sys.meta_path)


CHILD = textwrap.dedent("""
  import json, os, subprocess, sys
  probe = "\\n".join([
      "import builtins, json, sys",
      "lazy = 'tracejax' not in sys.modules",  # the hook costs nothing until `import jax`
      "hook = any(getattr(f, '_tracejax_jax_alias', False) for f in sys.meta_path)",
      "same = None",
      "if hook: import jax, tracejax; same = jax is tracejax",
      "print(json.dumps([lazy, hook, same, hasattr(builtins, 'sitecustomize_ran')]))"])
  def child(**env):
    e = dict(os.environ, **env)
    p = subprocess.run([sys.executable, "-c", probe], env=e, capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else p.stderr
  print(json.dumps({"on": child(), "off": child(TRACEJAX_ALIAS_JAX="0")}))
""")


def test_hook_reaches_child_interpreters_and_chains_sitecustomize(tmp_path):
  # A child `python -c "import jax"` gets tracejax (TRACEJAX_ALIAS_JAX=1 and tracejax's
  # sitecustomize on PYTHONPATH), imported lazily; with the variable at 0 it gets no hook
  # at all. An environment's own sitecustomize, shadowed by tracejax's, still runs.
  other = tmp_path / "other_site"
  other.mkdir()
  (other / "sitecustomize.py").write_text("import builtins\nbuiltins.sitecustomize_ran = True\n")
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([REPO, str(other)])
  proc = subprocess.run([sys.executable, "-m", "tracejax", "run", "-c", CHILD], cwd=str(tmp_path),
                        env=env, capture_output=True, text=True, timeout=120)
  out = _last_json(proc)
  assert out["on"] == [True, True, True, True]
  assert out["off"] == [True, False, None, True]


def test_run_pytest_with_xdist_workers(tmp_path):
  # The acceptance path of tools/client_suite.py in small: pytest-xdist workers are
  # fresh interpreters, and `import jax` in the test file must give tracejax there.
  pytest.importorskip("xdist")
  (tmp_path / "test_uses_jax.py").write_text(textwrap.dedent("""
    import os
    import jax, jax.numpy as jnp, tracejax
    import pytest

    @pytest.mark.parametrize("n", [1, 2, 3, 4])
    def test_in_worker(n):
      assert jax is tracejax and os.environ.get("PYTEST_XDIST_WORKER")
      assert float(jax.jit(lambda x: jnp.sum(x * x))(jnp.arange(float(n)))) == sum(
          i * i for i in range(n))
  """))
  proc = _run(["run", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
               "test_uses_jax.py"], cwd=tmp_path, timeout=240)
  assert proc.returncode == 0, proc.stdout + proc.stderr
  assert "4 passed" in proc.stdout


def test_private_module_aliases():
  # `jax._src.X` is `tracejax._src.X`; the table covers the modules JAX keeps elsewhere.
  from tracejax._src import jax_alias
  assert jax_alias.target_name("jax") == "tracejax"
  assert jax_alias.target_name("jax._src.tree_util") == "tracejax._src.tree_util"
  assert jax_alias.target_name("jax._src.compiler") == "tracejax._src.runtime.backend"
  assert jax_alias.target_name("jax._src.lax.control_flow.loops") == (
      "tracejax._src.control_flow.loops")
  assert jax_alias.target_name("tracejax._src.compiler") == "tracejax._src.runtime.backend"
  assert jax_alias.target_name("tracejax.numpy") is None
  assert jax_alias.target_name("jaxlib") is None and jax_alias.target_name("jaxfoo") is None
  import importlib.util
  for name, target in jax_alias.ALIASES.items():
    assert importlib.util.find_spec(target) is not None, target   # the target exists
    generic = "tracejax" + name[3:]                                # and is needed
    assert importlib.util.find_spec(generic) is None, generic
