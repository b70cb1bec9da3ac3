"""The on-disk compilation cache: entry format, corruption, size bound and LRU eviction,
the minimum compile time and entry size, JAX's names, concurrent writers."""
import contextlib
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax._src.config import config, _parse_size
from tracejax._src.runtime import backend, compilation_cache as cc


@contextlib.contextmanager
def _flags(**values):
  old = {k: getattr(config, k) for k in values}
  for k, v in values.items():
    config.update(k, v)
  try:
    yield
  finally:
    for k, v in old.items():
      config.update(k, v)


def _entries(root):
  return sorted(p for p in root.rglob("*" + cc.SUFFIX))


def _compile_fresh(text):
  """backend.compile of `text`, bypassing (and afterwards not polluting) the in-process
  cache, so that the disk is consulted."""
  for k in [k for k in backend._exe_cache if k[0] == text]:
    del backend._exe_cache[k]
  exe = backend.compile(text, [((3,), np.float32)])
  for k in [k for k in backend._exe_cache if k[0] == text]:
    del backend._exe_cache[k]
  return exe


def _run(exe, x):
  buf = backend.device_put(np.asarray(x, np.float32))
  return np.asarray(backend.to_numpy(exe.execute([buf])[0]))


def _module(scale):
  f = lambda x: jnp.sin(x) * scale + 1.0
  return tracejax.jit(f).lower(jnp.ones(3, jnp.float32)).as_text()


def test_entry_round_trip_and_header():
  import tempfile
  root = tempfile.mkdtemp()
  p = cc.entry_path(root, "ab" * 32)
  assert p.endswith(os.path.join("ab", "ab" * 32 + ".xla"))
  cc.write_entry(p, b"hello")
  raw = open(p, "rb").read()
  assert raw.startswith(cc.MAGIC) and raw.endswith(b"hello") and len(raw) == 48 + 5
  assert cc.read_entry(p) == b"hello"
  assert cc.scan(root) == (1, 53)
  assert not [n for n in os.listdir(os.path.dirname(p)) if n.endswith(".tmp")]


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "foreign"])
def test_corrupt_entry_is_a_miss_and_removed(tmp_path, damage):
  p = cc.entry_path(str(tmp_path), "cd" * 32)
  payload = bytes(range(256)) * 8
  cc.write_entry(p, payload)
  raw = open(p, "rb").read()
  bad = {"truncated": raw[:len(raw) // 2], "flipped": raw[:-1] + bytes([raw[-1] ^ 1]),
         "empty": b"", "foreign": b"not a cache entry at all" * 10}[damage]
  open(p, "wb").write(bad)
  assert cc.read_entry(p) is None
  assert not os.path.exists(p)


def test_truncated_entry_recompiles_and_is_rewritten(tmp_path):
  text = _module(3.0)
  x = np.array([0.0, 1.0, 2.0], np.float32)
  want = np.sin(x) * 3.0 + 1.0
  with _flags(tracejax_cache_dir=str(tmp_path), jax_persistent_cache_min_compile_time_secs=0.0):
    before = backend.disk_cache_stats()
    np.testing.assert_allclose(_run(_compile_fresh(text), x), want, rtol=1e-6)
    (entry,) = _entries(tmp_path)
    good = entry.read_bytes()
    entry.write_bytes(good[:len(good) // 3])          # a crash mid-write, a full disk...
    np.testing.assert_allclose(_run(_compile_fresh(text), x), want, rtol=1e-6)
    after = backend.disk_cache_stats()
    assert after["compiled"] - before["compiled"] == 2   # the second one could not load
    assert after["stored"] - before["stored"] == 2
    assert entry.read_bytes()[:8] == cc.MAGIC and cc.read_entry(str(entry)) is not None
    _compile_fresh(text)                              # now a hit
    assert backend.disk_cache_stats()["loaded"] == after["loaded"] + 1


def test_min_compile_time_and_entry_size(tmp_path):
  assert config.jax_persistent_cache_min_entry_size_bytes == 0   # JAX 0.10.2's default
  text = _module(5.0)
  with _flags(tracejax_cache_dir=str(tmp_path),
              jax_persistent_cache_min_compile_time_secs=1e9):
    before = backend.disk_cache_stats()
    _compile_fresh(text)
    after = backend.disk_cache_stats()
    assert after["compiled"] == before["compiled"] + 1 and after["stored"] == before["stored"]
  assert _entries(tmp_path) == []
  with _flags(tracejax_cache_dir=str(tmp_path), jax_persistent_cache_min_compile_time_secs=0.0,
              jax_persistent_cache_min_entry_size_bytes=1 << 40):
    _compile_fresh(text)
  assert _entries(tmp_path) == []
  with _flags(tracejax_cache_dir=str(tmp_path), jax_persistent_cache_min_compile_time_secs=0.0,
              jax_enable_compilation_cache=False):
    _compile_fresh(text)
  assert _entries(tmp_path) == []
  with _flags(tracejax_cache_dir=str(tmp_path), jax_persistent_cache_min_compile_time_secs=0.0):
    _compile_fresh(text)
  assert len(_entries(tmp_path)) == 1


def test_default_threshold_is_jaxs():
  # Read in a process without the suite's override (tests/conftest.py lowers it to 0).
  env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_PERSISTENT_CACHE")}
  out = subprocess.run(
      [sys.executable, "-c", "from tracejax._src.config import config as c; "
       "print(c.jax_persistent_cache_min_compile_time_secs, c.tracejax_cache_max_bytes)"],
      env=env, capture_output=True, text=True, timeout=60, check=True).stdout.split()
  assert out == ["1.0", str(1 << 30)]


def test_size_parsing():
  assert _parse_size("1G") == 1 << 30 and _parse_size("512MiB") == 512 << 20
  assert _parse_size("1000") == 1000 and _parse_size(7) == 7 and _parse_size("1.5k") == 1536


def test_bound_evicts_least_recently_used(tmp_path):
  root = str(tmp_path)
  size = 1000 + 48
  paths = [cc.entry_path(root, f"{i:02x}" + "0" * 62) for i in range(8)]
  for i, p in enumerate(paths):
    cc.write_entry(p, bytes([i]) * 1000)
    os.utime(p, (1000.0 + i, 1000.0 + i))             # written in this order, long ago
  assert cc.scan(root) == (8, 8 * size)
  assert cc.read_entry(paths[0]) == bytes([0]) * 1000  # a load makes entry 0 the newest
  new = cc.entry_path(root, "ff" * 32)
  cc.write_entry(new, b"\xff" * 1000, max_bytes=6 * size)
  left = {p for p in paths + [new] if os.path.exists(p)}
  n, total = cc.scan(root)
  assert total <= 0.9 * 6 * size and n == len(left) == 5
  assert left == {paths[0], paths[5], paths[6], paths[7], new}   # 1..4 were the oldest


def test_bound_through_compile(tmp_path):
  with _flags(tracejax_cache_dir=str(tmp_path), jax_persistent_cache_min_compile_time_secs=0.0):
    _compile_fresh(_module(7.0))
    (first,) = _entries(tmp_path)
    one = first.stat().st_size
    with _flags(tracejax_cache_max_bytes=int(2.5 * one)):
      for s in (8.0, 9.0, 10.0, 11.0):
        _compile_fresh(_module(s))
        n, total = cc.scan(str(tmp_path))
        assert total <= 2.5 * one * 1.2, (n, total)  # entries differ a little in size
    assert not first.exists()


def test_jax_names_and_environment(tmp_path):
  env = {k: v for k, v in os.environ.items() if k != "TRACEJAX_CACHE_DIR"}
  env.update(JAX_COMPILATION_CACHE_DIR=str(tmp_path / "jaxdir"),
             JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", TRACEJAX_CACHE_MAX_BYTES="3M")
  code = ("import json, tracejax.numpy as jnp\n"
          "from tracejax._src.runtime import backend\n"
          "jnp.multiply(jnp.ones(3), 2.0).block_until_ready()\n"
          "print(json.dumps(backend.disk_cache_info()))\n")
  info = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, timeout=120, check=True).stdout)
  assert info["directory"] == str(tmp_path / "jaxdir") and info["entries"] >= 1
  assert info["max_bytes"] == 3 << 20 and info["enabled"]
  env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
  env["JAX_COMPILATION_CACHE_DIR"] = str(tmp_path / "off")
  subprocess.run([sys.executable, "-c", code], env=env, timeout=120, check=True,
                 capture_output=True)
  assert not (tmp_path / "off").exists() or not _entries(tmp_path / "off")


_WRITER = textwrap.dedent("""
  import sys
  from tracejax._src.runtime import compilation_cache as cc
  path, me, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
  payloads = {w: bytes([w]) * (200_000 + w) for w in (1, 2)}
  seen = set()
  for i in range(n):
    cc.write_entry(path, payloads[me], max_bytes=1 << 30)
    got = cc.read_entry(path)
    if got is not None:
      assert got in payloads.values(), "a reader saw a mixed or partial entry"
      seen.add(got[0])
  print(sorted(seen))
""")


def test_two_processes_writing_the_same_key(tmp_path):
  path = cc.entry_path(str(tmp_path), "ee" * 32)
  procs = [subprocess.Popen([sys.executable, "-c", _WRITER, path, str(w), "150"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for w in (1, 2)]
  for p in procs:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
  assert cc.read_entry(path) in (b"\x01" * 200_001, b"\x02" * 200_002)
  assert [n for n in os.listdir(os.path.dirname(path))] == ["ee" * 32 + ".xla"]  # no temps


def test_two_processes_compiling_the_same_program(tmp_path):
  env = dict(os.environ, TRACEJAX_CACHE_DIR=str(tmp_path),
             JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
  code = ("import json, numpy as np, tracejax, tracejax.numpy as jnp\n"
          "from tracejax._src.runtime import backend\n"
          "f = tracejax.jit(lambda x: jnp.cumsum(jnp.cos(x) * 4.0))\n"
          "print(json.dumps([f(np.arange(5, dtype=np.float32)).tolist(),"
          " backend.disk_cache_stats()]))\n")
  start = lambda: subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  want = np.cumsum(np.cos(np.arange(5, dtype=np.float32)) * 4.0)
  for p in [start(), start()]:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    np.testing.assert_allclose(json.loads(out)[0], want, rtol=1e-5)
  p = start()
  out, err = p.communicate(timeout=120)
  result, stats = json.loads(out)
  np.testing.assert_allclose(result, want, rtol=1e-5)
  assert stats["loaded"] >= 1 and stats["compiled"] == 0
