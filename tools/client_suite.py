"""Run optax's own test suite on tracejax (or on real JAX, for the side-by-side figure).

    python tools/client_suite.py                       # all of optax's *_test.py files
    python tools/client_suite.py --files alias_test.py --files 'optax/schedules/*'
    python tools/client_suite.py --jax                 # the same, against jax==0.10.2

It makes a virtual environment (`--venv`, by default under
/tmp/tracejax-client-suite/), installs into it tracejax from this checkout
(`pip install -e`; with `--jax`: jax and jaxlib 0.10.2 instead, never both),
`optax==0.2.8` and `chex==0.1.92` with `--no-deps`, and by hand their other
dependencies from the wheels' metadata (the `jax` package is never installed next
to tracejax). optax's test files ship in its wheel; they run through

    VENV/bin/python -m tracejax run -m pytest -n 2 FILES...

(`python -m pytest` with `--jax`) with `JAX_THREEFRY_PARTITIONABLE=1`, JAX 0.10.2's
default random stream (tracejax's default is the 2020 stream; `--threefry-2020` keeps
it: the tests then draw other random data, and three numerically borderline ones in
experimental/_aggregating_test.py fail), and the script prints passed / failed / errors /
skipped per file and in total, the run time, and with `--causes N` the N most
common failure messages. The venv is reused by later runs (`--recreate` rebuilds
it); pytest's log and JUnit XML stay in the venv directory.

flax (optax's `[test]` extra: `_src/linear_algebra_test.py` and
`transforms/_accumulation_test.py` import it) is installed with `--no-deps` too, with
the dependencies its import needs (msgpack, PyYAML, rich, treescope; not orbax or
tensorstore, which only flax's checkpointing imports).
"""
import argparse
import collections
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTAX = "optax==0.2.8"
CHEX = "chex==0.1.92"
JAX = ["jax==0.10.2", "jaxlib==0.10.2"]
# Runtime requirements of optax 0.2.8 and chex 0.1.92 other than jax/jaxlib (their
# wheels' Requires-Dist), the parts of optax's `[test]` and chex's `[test]` extras the
# test files import, and the test runner.
DEPS = ["absl-py>=2.3.1", "typing_extensions>=4.15.0", "numpy>=1.24.1", "toolz>=1.0.0",
        "scipy>=1.7.1", "scikit-learn", "cloudpickle>=3.1.2", "dm-tree>=0.1.9",
        "pytest", "pytest-xdist", "pytest-timeout",
        "msgpack", "PyYAML", "rich", "treescope"]   # for flax (below)
FLAX = "flax==0.10.7"


def _run(cmd):
  print("+", " ".join(cmd), flush=True)
  proc = subprocess.run(cmd, capture_output=True, text=True)
  if proc.returncode:  # pip's output only when it failed (it warns about local indexes)
    sys.stderr.write(proc.stdout + proc.stderr)
    raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")


def make_venv(venv, real_jax, recreate=False):
  """Creates (or reuses) the virtual environment and installs everything into it.

  Args:
    venv: the directory of the environment.
    real_jax: install jax==0.10.2 instead of tracejax.
    recreate: delete an existing environment first.

  Returns:
    The path of the environment's python.

  Example:
    >>> make_venv("/tmp/tracejax-client-suite/tracejax", real_jax=False)
    '/tmp/tracejax-client-suite/tracejax/bin/python'
  """
  python = os.path.join(venv, "bin", "python")
  stamp = os.path.join(venv, ".client_suite_ready")
  if recreate and os.path.isdir(venv):
    shutil.rmtree(venv)
  if os.path.exists(stamp):
    return python
  _run([sys.executable, "-m", "venv", venv])
  pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
  _run(pip + (JAX if real_jax else ["-e", REPO]) + DEPS)
  _run(pip + ["--no-deps", OPTAX, CHEX, FLAX])
  if not real_jax:  # the point of the exercise: nothing pulled the real `jax` in
    check = subprocess.run([python, "-c", "import importlib.util as u; "
                            "print(u.find_spec('jax') is None)"],
                           capture_output=True, text=True, check=True)
    if check.stdout.strip() != "True":
      raise SystemExit(f"{venv}: a `jax` package got installed next to tracejax")
  open(stamp, "w").close()
  return python


def test_files(python, patterns):
  """optax's `*_test.py` files in the environment, as paths, filtered by `patterns`.

  Args:
    python: the environment's python.
    patterns: shell patterns matched against the path below site-packages
      (`optax/_src/alias_test.py`); a pattern without a wildcard matches as a
      substring. Empty: every file.

  Example:
    >>> test_files(python, ["alias_test"])[0].endswith("optax/_src/alias_test.py")
    True
  """
  # Found without importing optax, which may not import on this backend.
  out = subprocess.run([python, "-c", "import importlib.util, os; print(os.path.dirname("
                        "os.path.dirname(importlib.util.find_spec('optax').origin)))"],
                       capture_output=True, text=True, cwd="/", check=True)
  site = out.stdout.strip().splitlines()[-1]
  files = sorted(glob.glob(os.path.join(site, "optax", "**", "*_test.py"), recursive=True))
  if patterns:
    def keep(rel):
      return any(fnmatch.fnmatch(rel, p) if any(c in p for c in "*?[") else p in rel
                 for p in patterns)
    files = [f for f in files if keep(os.path.relpath(f, site))]
  return site, files


def run_pytest(python, site, files, real_jax, workers, per_test_timeout, workdir, extra=(),
               partitionable=True):
  """Runs the files under pytest (through `python -m tracejax run` unless real_jax).

  `partitionable`: run with `JAX_THREEFRY_PARTITIONABLE=1`, the random stream that is
  JAX 0.10.2's default (tracejax's own default is the 2020 stream, which the seed
  documents print): optax's tests then draw the same random data under both backends.
  """
  xml = os.path.join(workdir, "junit.xml")
  log = os.path.join(workdir, "pytest.log")
  runner = [python, "-m"] if real_jax else [python, "-m", "tracejax", "run", "-m"]
  cmd = runner + ["pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={site}",
                  "-o", "junit_family=xunit1",
                  f"--junitxml={xml}", f"--timeout={per_test_timeout}", "-rN"]
  cmd += ["-n", str(workers)] if workers > 0 else ["-p", "no:xdist"]
  cmd += list(extra)
  print("+", " ".join(cmd), f"<{len(files)} files>", flush=True)
  start = time.time()
  env = dict(os.environ)
  if partitionable:
    env["JAX_THREEFRY_PARTITIONABLE"] = "1"
  with open(log, "w") as f:
    proc = subprocess.run(cmd + files, stdout=f, stderr=subprocess.STDOUT, cwd=workdir,
                          env=env)
  return proc.returncode, time.time() - start, xml, log


def parse_junit(xml, site, files):
  """Per-file counts and failure messages from pytest's JUnit XML.

  Returns:
    (counts, messages): `counts[relpath]` is a Counter of passed / failed / error /
    skipped; `messages` a list of (relpath, test name, first line of the message).
  """
  modules = {os.path.relpath(f, site)[:-3].replace(os.sep, "."): os.path.relpath(f, site)
             for f in files}
  counts = {rel: collections.Counter() for rel in modules.values()}
  messages = []
  if not os.path.exists(xml):
    return counts, messages
  for case in ET.parse(xml).getroot().iter("testcase"):
    name = ".".join(p for p in (case.get("classname"), case.get("name")) if p)
    rel = case.get("file")
    if not rel or rel not in counts:
      mod = max((m for m in modules if name == m or name.startswith(m + ".")),
                key=len, default=None)
      rel = modules.get(mod, "<unknown>")
    outcome = "passed"
    for child in case:
      tag = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(child.tag)
      if tag:
        outcome = tag
        if tag in ("failed", "error"):
          messages.append((rel, case.get("name"), _message(child)))
        break
    counts.setdefault(rel, collections.Counter())[outcome] += 1
  return counts, messages


_RAISED = re.compile(r"^E\s+((?:[\w.]+\.)?\w*(?:Error|Exception|Exit|Interrupt)\b.*)")


def _message(element):
  """The exception line of a failure: pytest's `message` is often only "collection
  failure" or a wrapper; the `E   ValueError: ...` line of the traceback says more."""
  for line in (element.text or "").splitlines():
    found = _RAISED.match(line)
    if found:
      return found.group(1)[:300]
  message = (element.get("message") or "").strip()
  return message.splitlines()[0][:300] if message else "<no message>"


def _normalize(message):
  # Group messages that differ only in numbers, shapes or quoted values.
  message = re.sub(r"0x[0-9a-f]+", "0x..", message)
  message = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", message)
  return message[:160]


def _pytest_summary(log):
  with open(log, errors="replace") as f:
    lines = [l.strip(" =\n") for l in f if re.search(r"\d+ (passed|failed|error)", l)]
  return lines[-1] if lines else None


def report(counts, messages, wall, label, causes):
  """Prints the per-file table, the totals and (causes > 0) the commonest failures."""
  kinds = ("passed", "failed", "error", "skipped")
  width = max([len(r) for r in counts] + [20])
  print(f"\n{label}: optax 0.2.8's own tests")
  print(f"{'file':<{width}} " + " ".join(f"{k:>7}" for k in kinds))
  total = collections.Counter()
  for rel in sorted(counts):
    total.update(counts[rel])
    print(f"{rel:<{width}} " + " ".join(f"{counts[rel][k]:>7}" for k in kinds))
  print(f"{'TOTAL':<{width}} " + " ".join(f"{total[k]:>7}" for k in kinds))
  print(f"{sum(total.values())} tests, wall time {wall:.0f} s")
  if causes and messages:
    print(f"\nmost common failure messages (of {len(messages)}):")
    grouped = collections.Counter(_normalize(m) for _, _, m in messages)
    for msg, n in grouped.most_common(causes):
      print(f"{n:>6}  {msg}")
  # The plain closing line test harnesses read.
  print(f"client suite: {total['passed']} passed, {total['failed'] + total['error']} failed, "
        f"{total['skipped']} skipped")
  return total


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--venv", help="virtual environment directory "
                      "(default /tmp/tracejax-client-suite/{tracejax,jax})")
  parser.add_argument("--jax", action="store_true",
                      help="run against real jax==0.10.2 (its own venv) instead of tracejax")
  parser.add_argument("--files", action="append", default=[], metavar="PATTERN",
                      help="only test files matching PATTERN (repeatable; shell pattern on "
                           "the path below site-packages, or a substring)")
  parser.add_argument("-n", "--workers", type=int, default=2,
                      help="pytest-xdist workers (0: none); default 2")
  parser.add_argument("--timeout", type=int, default=300,
                      help="seconds one test may take (pytest-timeout); default 300")
  parser.add_argument("--causes", type=int, default=0, metavar="N",
                      help="also print the N most common failure messages")
  parser.add_argument("--pytest-arg", action="append", default=[], metavar="ARG",
                      help="pass ARG on to pytest (repeatable), e.g. --pytest-arg=-x")
  parser.add_argument("--recreate", action="store_true", help="rebuild the venv first")
  parser.add_argument("--threefry-2020", action="store_true",
                      help="keep tracejax's default random stream (the 2020 one) instead of "
                           "JAX 0.10.2's partitionable one (JAX_THREEFRY_PARTITIONABLE=1)")
  parser.add_argument("--workdir", help="where pytest's log and JUnit XML go "
                      "(default VENV/run)")
  args = parser.parse_args(argv)

  label = "jax 0.10.2" if args.jax else "tracejax"
  venv = args.venv or os.path.join("/tmp/tracejax-client-suite", "jax" if args.jax else "tracejax")
  python = make_venv(venv, args.jax, args.recreate)
  site, files = test_files(python, args.files)
  if not files:
    raise SystemExit(f"no optax test file matches {args.files}")
  workdir = args.workdir or os.path.join(venv, "run")
  os.makedirs(workdir, exist_ok=True)
  rc, wall, xml, log = run_pytest(python, site, files, args.jax, args.workers, args.timeout,
                                  workdir, args.pytest_arg, not args.threefry_2020)
  counts, messages = parse_junit(xml, site, files)
  total = report(counts, messages, wall, label, args.causes)
  summary = _pytest_summary(log)
  if summary:  # pytest's own count (it also counts subtests, which JUnit XML folds in)
    print(f"pytest's summary: {summary}")
  print(f"pytest exit status {rc}; log: {log}")
  if not sum(total.values()):
    print("no test result was recorded: see the log", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
