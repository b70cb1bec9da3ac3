"""The seed examples that tracejax must run unmodified, through `python -m tracejax run`.

The corpus lives outside the repository (`shared/examples`, next to the checkout)
and is absent on a clean clone: it is found through `TRACEJAX_EXAMPLES` or at
`<repo>/../shared/examples`, and these tests skip when it is not there. Each
example runs as `shared/examples/run_all.py` runs it: in its own directory, with
PYTHONHASHSEED=0, and passes when it exits with status 0.
"""
import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 120

# The examples that must pass (issue 2), by number; `internals/` ones by path.
REQUIRED = [
    "017", "020", "026", "033", "051", "052", "057", "058", "060", "061", "062", "064",
    "065", "066", "067", "072", "075", "076", "077", "078", "internals/025",
]


def _examples_dir():
  d = os.environ.get("TRACEJAX_EXAMPLES") or os.path.join(REPO, os.pardir, "shared",
                                                          "examples")
  return os.path.abspath(d) if os.path.isdir(d) else None


def _find(examples, key):
  sub, _, num = key.rpartition("/")
  matches = sorted(glob.glob(os.path.join(examples, sub, f"{num}_*.py")))
  return matches[0] if matches else None


def _tail(text, n=60):
  lines = text.splitlines()
  return "\n".join(lines[-n:])


@pytest.mark.parametrize("key", REQUIRED)
def test_example(key):
  examples = _examples_dir()
  if examples is None:
    pytest.skip("the examples corpus is not available (set TRACEJAX_EXAMPLES to "
                "shared/examples)")
  path = _find(examples, key)
  if path is None:
    pytest.skip(f"example {key} is not in {examples}")
  env = dict(os.environ)
  env.setdefault("PYTHONHASHSEED", "0")
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  try:
    proc = subprocess.run([sys.executable, "-m", "tracejax", "run", os.path.basename(path)],
                          cwd=os.path.dirname(path), env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
  except subprocess.TimeoutExpired as e:
    out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) \
        else (e.stdout or "")
    pytest.fail(f"{os.path.relpath(path, examples)} timed out after {TIMEOUT_S}s\n"
                f"--- stdout ---\n{_tail(out)}")
  assert proc.returncode == 0, (
      f"{os.path.relpath(path, examples)} exited with status {proc.returncode}\n"
      f"--- stdout ---\n{_tail(proc.stdout)}\n--- stderr ---\n{_tail(proc.stderr)}")
