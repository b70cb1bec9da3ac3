"""Library-neutral half of the differential fuzzer (see tools/fuzz_vs_jax.py).

A fuzz program is Python source text that defines ``main(*inputs)`` in terms of the
names ``jax``, ``jnp``, ``lax`` and ``np``.  This module binds those names either to
tracejax or to real JAX, runs the source on inputs decoded from a portable form, and
encodes the result (leaves with dtype, shape, weak type and raw bytes, or the
exception raised).  It imports only NumPy at module level so that the real-JAX worker
(``python tools/_fuzz_common.py --worker``, run by $JAX_PYTHON) and the tracejax side
share it without either importing the other's library.

Example (worker protocol, one JSON object per line on stdin and stdout)::

  {"src": "def main(x0):\\n  return jnp.sin(x0)\\n", "inputs": [...]}
  -> {"ok": true, "leaves": [{"dtype": "float32", "shape": [3], ...}]}
"""
import base64
import json
import os
import signal
import sys
import traceback
import warnings

import numpy as np

# Helpers every program may use; defined identically for both libraries.
PRELUDE = '''
def _sc(out):
  """Sums every leaf to one scalar so that grad-like transforms apply."""
  leaves = jax.tree_util.tree_leaves(out)
  total = 0.0
  for leaf in leaves:
    total = total + jnp.sum(jnp.real(leaf))
  return total

def _cot1(l):
  if jnp.issubdtype(jnp.result_type(l), jnp.inexact):
    return jnp.ones_like(l) * 0.5
  return np.zeros(np.shape(l), dtype=jax.dtypes.float0)

def _cot(out):
  return jax.tree_util.tree_map(_cot1, out)
'''


def np_dtype(name):
  """NumPy dtype for ``name``, including the ml_dtypes extension types."""
  if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))
  return np.dtype(name)


def encode_array(a):
  """Portable JSON form of a NumPy array (dtype name, shape, base64 bytes)."""
  a = np.asarray(a)
  shape = list(a.shape)  # np.ascontiguousarray makes 0-d arrays 1-d: keep the real shape
  a = np.ascontiguousarray(a)
  return {"dtype": a.dtype.name, "shape": shape,
          "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def decode_input(d):
  """Inverse of encode_array; ``{"py": value}`` stands for a Python scalar."""
  if "py" in d:
    v = d["py"]
    if isinstance(v, list):  # complex
      return complex(v[0], v[1])
    if isinstance(v, str):
      return float(v)  # 'nan', 'inf', '-inf'
    return v
  dt = np_dtype(d["dtype"])
  return np.frombuffer(base64.b64decode(d["b64"]), dtype=dt).reshape(d["shape"]).copy()


def bind_library(which):
  """Namespace with jax/jnp/lax/np bound to ``which`` ('jax' or 'tracejax')."""
  if which == "jax":
    import jax
    import jax.numpy as jnp
    from jax import lax
    import jax.nn, jax.random, jax.scipy.special, jax.scipy.linalg  # noqa: E401,F401
  else:
    import tracejax as jax
    import tracejax.numpy as jnp
    from tracejax import lax
    import tracejax.nn, tracejax.random, tracejax.scipy.special, tracejax.scipy.linalg  # noqa: E401,F401
  return {"jax": jax, "jnp": jnp, "lax": lax, "np": np}


def infer_avals(ns, prog, render):
  """{name: (shape, dtype name)} of every op result of ``prog``, by ``eval_shape``.

  ``render`` is _fuzz_gen.render (passed in to keep this module free of the generator).
  Raises whatever tracing raises, or TypeError/ValueError for results the generator
  cannot chain (non-arrays, very large arrays).
  """
  jax = ns["jax"]
  p = dict(prog, stack=[], out="(" + "".join(f"v{k}, " for k in range(len(prog["ops"]))) + ")")
  g = dict(ns)
  exec(compile(PRELUDE + render(p), "<infer>", "exec"), g)
  args = []
  for spec in prog["inputs"]:
    if "py" in spec:
      args.append(decode_input({"py": spec["py"]}))
    else:
      args.append(jax.ShapeDtypeStruct(tuple(spec["shape"]), np_dtype(spec["dtype"])))
  outs = jax.eval_shape(g["main"], *args)
  res = {}
  for k, o in enumerate(outs):
    if not hasattr(o, "shape") or not hasattr(o, "dtype"):
      raise TypeError("op result is not an array")
    if int(np.prod(o.shape)) > 4096 or len(o.shape) > 5:
      raise ValueError("result too big to chain")
    res[f"v{k}"] = (tuple(o.shape), np.dtype(o.dtype).name)
  return res


class _Timeout(Exception):
  pass


def _alarm(signum, frame):
  raise _Timeout("program timed out")


def _encode_exc(e):
  names = [c.__name__ for c in type(e).__mro__
           if c.__name__ not in ("object", "BaseException", "Exception")]
  msg = str(e).split("\n")[0][:300]
  return {"ok": False, "exc": type(e).__name__, "mro": names, "msg": msg}


def run_program(ns, src, inputs, timeout=60):
  """Runs ``main`` from ``src`` in namespace ``ns`` on decoded ``inputs``.

  Returns a JSON-able dict: ``{"ok": True, "leaves": [...]}`` or the exception.
  """
  jax = ns["jax"]
  g = dict(ns)
  old = signal.signal(signal.SIGALRM, _alarm)
  signal.alarm(int(timeout))
  try:
    warnings.simplefilter("ignore")
    exec(compile(PRELUDE + src, "<fuzz>", "exec"), g)
    args = [decode_input(d) for d in inputs]
    out = g["main"](*args)
    leaves = jax.tree_util.tree_leaves(out)
    enc = []
    for leaf in leaves:
      weak = getattr(leaf, "weak_type", None)
      # a host array (JAX's TypedNdArray is one too) or a NumPy scalar computed on the host
      if isinstance(leaf, (np.ndarray, np.generic)):
        weak = "host:weak" if weak else "host"  # (a TypedNdArray carries its weak type)
      if isinstance(leaf, (bool, int, float, complex)):
        weak = "py:" + type(leaf).__name__
      dt = getattr(leaf, "dtype", None)  # JAX's TypedInt/TypedFloat carry their dtype
      a = np.asarray(leaf, dtype=dt) if isinstance(dt, np.dtype) and dt.kind in "biufc" \
          else np.asarray(leaf)
      if a.dtype.name.startswith("void") or "float0" in str(a.dtype):
        enc.append({"dtype": "float0", "shape": list(a.shape), "weak": None})
        continue
      e = encode_array(a)
      e["weak"] = weak
      enc.append(e)
    return {"ok": True, "leaves": enc}
  except _Timeout:
    return {"ok": False, "exc": "Timeout", "mro": ["Timeout"], "msg": "timeout"}
  except RecursionError as e:
    return _encode_exc(e)
  except Exception as e:  # every failure is a result to compare
    r = _encode_exc(e)
    r["tb"] = traceback.format_exc()[-1500:]
    return r
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def worker_main():
  """Long-lived worker: one JSON request per stdin line, one JSON reply per line."""
  x64 = os.environ.get("FUZZ_X64", "0") == "1"
  which = os.environ.get("FUZZ_LIB", "jax")
  if which == "jax":
    import jax
    jax.config.update("jax_enable_x64", x64)
    jax.config.update("jax_threefry_partitionable", os.environ.get("FUZZ_TFP") == "1")
    cache = os.environ.get("FUZZ_CACHE_DIR", "/tmp/fuzz_vs_jax_cache")
    if cache:  # see fuzz_vs_jax._use_compile_cache
      jax.config.update("jax_compilation_cache_dir", os.path.join(cache, "jax"))
      jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  else:
    import tracejax
    tracejax.config.update("jax_enable_x64", x64)
    tracejax.config.update("jax_threefry_partitionable", os.environ.get("FUZZ_TFP") == "1")
    cache = os.environ.get("FUZZ_CACHE_DIR", "/tmp/fuzz_vs_jax_cache")
    if cache:
      tracejax.config.update("tracejax_cache_dir", os.path.join(cache, "tracejax"))
      tracejax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  ns = bind_library(which)
  # Stray output must not corrupt the protocol: Python prints go to stderr, and so does
  # file descriptor 1 itself (LAPACK's xerbla writes "** On entry to SLASCL ..." there
  # from C); the replies go to a private copy of the original stdout.
  sys.stdout.flush()
  out = os.fdopen(os.dup(1), "w")
  os.dup2(2, 1)
  sys.stdout = sys.stderr
  count = 0
  out.write(json.dumps({"ready": True}) + "\n")
  out.flush()
  for line in sys.stdin:
    if not line.strip():
      continue
    req = json.loads(line)
    res = run_program(ns, req["src"], req["inputs"], req.get("timeout", 60))
    count += 1
    if count % 100 == 0:
      try:
        ns["jax"].clear_caches()
      except Exception:
        pass
    out.write(json.dumps(res) + "\n")
    out.flush()


if __name__ == "__main__":
  if "--worker" in sys.argv:
    worker_main()
