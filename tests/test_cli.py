"""The `tracejax` command (`python -m tracejax` and the console script): help, version,
info, run -m, and one-line errors for a missing script or module."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import tracejax
from tracejax.__main__ import main


def _cli(*args, cwd=None, env=None):
  return subprocess.run([sys.executable, "-m", "tracejax", *args], capture_output=True,
                        text=True, timeout=120, cwd=cwd, env=env)


def test_help_exits_0_and_describes_every_command():
  proc = _cli("--help")
  assert proc.returncode == 0, proc.stderr
  out = proc.stdout
  assert out.startswith("usage: python -m tracejax")
  for words in ("run SCRIPT", "run -m MODULE", "run -c CODE", "graph SCRIPT.py:FUNCTION",
                "info", "--version"):
    assert words in out, words
  assert proc.stderr == ""
  run_help = _cli("run", "--help")
  assert run_help.returncode == 0 and "passed to the program untouched" in run_help.stdout


def test_version(capsys):
  assert main(["--version"]) == 0 and main(["-V"]) == 0
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == lines[1]
  assert lines[0].startswith(f"tracejax {tracejax.__version__} (jaxlib ")


def test_info_text_and_json(capsys):
  assert main(["info"]) == 0
  out = capsys.readouterr().out
  for words in ("tracejax: " + tracejax.__version__, "jaxlib: ", "numpy: ", "devices (",
                "compilation cache: ", "jax_enable_x64 = ", "tracejax_cache_max_bytes = "):
    assert words in out, words
  assert main(["info", "--json"]) == 0
  data = json.loads(capsys.readouterr().out)
  assert data["versions"]["tracejax"] == tracejax.__version__
  assert len(data["devices"]) == tracejax.device_count()
  cache = data["cache"]
  # the suite's own temporary cache directory (tests/conftest.py)
  assert cache["directory"] == os.environ["TRACEJAX_CACHE_DIR"]
  assert cache["entries"] >= 0 and cache["bytes"] >= 0 and cache["max_bytes"] > 0
  assert data["config"]["jax_enable_x64"] is False


def test_info_counts_the_cache_entries(tmp_path):
  d = tmp_path / "cache"
  env = dict(os.environ, TRACEJAX_CACHE_DIR=str(d), TRACEJAX_CACHE_MAX_BYTES="64M")
  subprocess.run([sys.executable, "-c", "import tracejax.numpy as jnp; "
                  "jnp.add(jnp.ones(3), 1.0).block_until_ready()"], env=env, check=True,
                 timeout=120)
  n = len(list(d.rglob("*.xla")))
  size = sum(p.stat().st_size for p in d.rglob("*.xla"))
  assert n >= 1
  data = json.loads(_cli("info", "--json", env=env).stdout)
  assert data["cache"]["directory"] == str(d)
  assert (data["cache"]["entries"], data["cache"]["bytes"]) == (n, size)
  assert data["cache"]["max_bytes"] == 64 << 20


def test_run_m_passes_option_like_arguments_untouched(tmp_path):
  (tmp_path / "echo_mod.py").write_text(
      "import sys, json, jax\nprint(json.dumps([jax.__name__] + sys.argv[1:]))\n")
  proc = _cli("run", "-m", "echo_mod", "--help", "-m", "x", "--version", cwd=tmp_path)
  assert proc.returncode == 0, proc.stderr
  assert json.loads(proc.stdout.splitlines()[-1]) == ["tracejax", "--help", "-m", "x",
                                                        "--version"]


@pytest.mark.parametrize("args,status,message", [
    (["run", "no_such_script.py"], 2, "can't open file 'no_such_script.py': no such file"),
    (["run", "-m", "no_such_module_xyz"], 1, "No module named no_such_module_xyz"),
], ids=["script", "module"])
def test_missing_script_or_module_is_one_line(tmp_path, args, status, message):
  proc = _cli(*args, cwd=tmp_path)
  assert proc.returncode == status
  assert proc.stdout == ""
  assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
  assert "Traceback" not in proc.stderr


def test_unknown_command_and_no_command_exit_2(capsys):
  assert main([]) == 2
  assert "a command is required" in capsys.readouterr().err
  assert main(["walk"]) == 2
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and "unknown command 'walk'" in err


@pytest.mark.skipif(shutil.which("tracejax") is None,
                    reason="the console script is not installed (pip install -e .)")
def test_console_script():
  proc = subprocess.run(["tracejax", "--version"], capture_output=True, text=True, timeout=60)
  assert proc.returncode == 0 and proc.stdout.startswith("tracejax ")
  proc = subprocess.run(["tracejax", "--help"], capture_output=True, text=True, timeout=60)
  assert proc.returncode == 0 and proc.stdout.startswith("usage: tracejax ")


_STARTUP = """
import sys
import tracejax
heavy = [m for m in ("jaxlib", "numpy", "tracejax._src.jit", "tracejax.numpy") if m in sys.modules]
assert not heavy, heavy                       # `import tracejax` reads the configuration only
assert tracejax.config.jax_enable_x64 is False
import numpy as np
x = tracejax.device_put(np.array([1.0, 2.0], np.float32))   # the first attribute: the API
assert "tracejax.numpy" in sys.modules and float((x + 1).sum()) == 5.0
assert tracejax.jit(lambda a: a * 2)(x).tolist() == [2.0, 4.0]
assert "vmap" in dir(tracejax) and "vmap" in tracejax.__all__
import tracejax.numpy as jnp
assert "tracejax._src.numpy.sorting" not in sys.modules   # jax.numpy's rarer families: lazy
assert jnp.sort(jnp.array([2, 1])).tolist() == [1, 2] and "sort" in dir(jnp)
assert float(jnp.linalg.norm(jnp.array([3.0, 4.0]))) == 5.0
from tracejax.numpy import unique
print("ok")
"""


def test_startup_is_lazy_and_complete():
  proc = subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True,
                        timeout=120)
  assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
  # a program that only imports jax.lax still gets the operators of arrays
  code = "import tracejax.lax as lax; print(float((lax.add(1.0, 2.0) + 1) * 2))"
  proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=120)
  assert proc.returncode == 0 and proc.stdout.strip() == "8.0", proc.stderr
