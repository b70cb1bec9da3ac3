"""examples/demo.py (README command 1) runs, trains to a good accuracy, writes its pictures."""
import os
import re
import subprocess
import sys

import pytest

DEMO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "examples", "demo.py")


def _run(*args, env=None):
  return subprocess.run([sys.executable, DEMO, *args], capture_output=True, text=True,
                        timeout=300, env=env)


def test_demo_trains_and_writes_pictures(tmp_path):
  pytest.importorskip("sklearn")
  pytest.importorskip("matplotlib")
  pytest.importorskip("tqdm")
  env = dict(os.environ, TRACEJAX_CACHE_DIR=str(tmp_path / "cache"))  # an empty cache
  out_dir = tmp_path / "pictures"
  proc = _run("--epochs", "6", "--out-dir", str(out_dir), env=env)
  assert proc.returncode == 0, proc.stderr[-3000:]
  out = proc.stdout
  assert "jaxpr of the loss" in out and "dot_general" in out
  assert "per-example gradient norms (vmap of grad)" in out
  # First run with an empty cache: the step is compiled (or the cache is switched off).
  assert re.search(r"^update step compiled by XLA in [0-9.]+ s", out, re.M), out
  m = re.search(r"^test accuracy: ([0-9.]+) \(test loss [0-9.]+\) after 6 epochs", out, re.M)
  assert m is not None, out
  assert float(m.group(1)) >= 0.95
  assert "epoch  6/6" in proc.stderr and "val_acc=" in proc.stderr   # the progress bars
  for name in ("demo_training.png", "demo_loss_jaxpr.png"):
    path = out_dir / name
    assert f"wrote {path}" in out
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10000

  # Second run, same cache: the step comes from the disk (unless the cache is off).
  if os.environ.get("TRACEJAX_COMPILATION_CACHE", "1") != "0":
    again = _run("--epochs", "1", "--no-plots", "--out-dir", str(tmp_path / "none"), env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "update step loaded from the on-disk compilation cache" in again.stdout
    assert "wrote" not in again.stdout and not (tmp_path / "none").exists()


def test_demo_rejects_bad_flags():
  proc = _run("--epochs", "0")
  assert proc.returncode == 2 and "--epochs and --batch-size must be positive" in proc.stderr
