"""Seeded differential fuzzer: tracejax against real JAX on random programs.

Each program (see tools/_fuzz_gen.py) is a few ops over jnp / lax / nn / random /
control flow / indexing and ``.at[]`` / linalg / fft / sort, applied to random inputs
(every dtype, 0-d, size-0, NaN/inf, Python scalars) under a random stack of jit, vmap,
grad, jvp, vjp, jacfwd, jacrev, value_and_grad, hessian and checkpoint.  tracejax
runs it in this process; real JAX runs it in a long-lived worker process started
with $JAX_PYTHON (default /work/jaxvenv/bin/python), so ``jax`` is never imported
here.  Results are compared (structure, shapes, dtypes, weak types, values with
dtype-aware tolerances, error vs no error and the exception type); each
disagreement is minimised (ops, transformations, inputs) and written to --out as a
standalone reproducer, and a summary by category is printed.

Usage::

  python tools/fuzz_vs_jax.py --n 2000 --seed 0 --out /tmp/fuzz
  python tools/fuzz_vs_jax.py --n 500 --seed 1 --x64 --jobs 2
  python tools/fuzz_vs_jax.py --minutes 40 --seed 0      # as many as fit

A reproducer runs under either library: ``python repro.py`` (tracejax) or
``$JAX_PYTHON repro.py jax``.
"""
import argparse
import collections
import json
import os
import select
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import _fuzz_common as C  # noqa: E402
import _fuzz_gen as G  # noqa: E402

DEFAULT_JAX_PYTHON = "/work/jaxvenv/bin/python"

TOL = {"float16": (2e-2, 2e-3), "bfloat16": (5e-2, 1e-2), "float32": (1e-4, 1e-5),
       "complex64": (1e-4, 1e-5), "float64": (1e-9, 1e-11), "complex128": (1e-9, 1e-11)}


class JaxWorker:
  """Real JAX (or, with lib="tracejax", tracejax) in a separate interpreter, one JSON
  request/reply per line. A program that hangs inside XLA (LAPACK's SVD of some
  non-finite matrices never returns) cannot be interrupted in-process; a worker that
  does not answer in time is killed and restarted instead."""

  def __init__(self, x64, python=None, timeout=90, tfp=False, lib="jax"):
    self.tfp = tfp
    self.lib = lib
    self.python = python or os.environ.get("JAX_PYTHON", DEFAULT_JAX_PYTHON)
    self.x64 = x64
    self.timeout = timeout
    self.proc = None
    self._start()

  def _start(self):
    env = dict(os.environ, FUZZ_X64="1" if self.x64 else "0", FUZZ_LIB=self.lib,
               JAX_PLATFORMS="cpu", FUZZ_TFP="1" if self.tfp else "0", JAX_ENABLE_X64="1" if self.x64 else "0")
    self.proc = subprocess.Popen([self.python, os.path.join(HERE, "_fuzz_common.py"),
                                  "--worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env=env, cwd=HERE)
    line = self._read(300)
    if line is None or "ready" not in line:
      raise RuntimeError(f"{self.lib} worker ({self.python}) did not start")

  def _read(self, timeout):
    r, _, _ = select.select([self.proc.stdout], [], [], timeout)
    if not r:
      return None
    line = self.proc.stdout.readline()
    return line or None

  def send(self, src, inputs):
    self.proc.stdin.write(json.dumps({"src": src, "inputs": inputs,
                                      "timeout": self.timeout - 10}) + "\n")
    self.proc.stdin.flush()

  def receive(self):
    line = self._read(self.timeout)
    if line is None:  # hung or crashed: restart and report
      self.close()
      self._start()
      return {"ok": False, "exc": "WorkerDied", "mro": ["WorkerDied"],
              "msg": f"{self.lib} worker"}
    return json.loads(line)

  def close(self):
    try:
      self.proc.kill()
      self.proc.wait(5)
    except Exception:
      pass


def _use_compile_cache(config, dir_option):
  """Both libraries keep every executable in an on-disk cache ($FUZZ_CACHE_DIR).

  Programs are small and draw from few shapes, so most of a run is XLA compiling
  the same one-primitive executables again (after clear_caches, or in the next
  run); with the cache (and no minimum compile time) a run is several times faster.
  """
  root = os.environ.get("FUZZ_CACHE_DIR", "/tmp/fuzz_vs_jax_cache")
  if not root:
    return
  lib = "tracejax" if dir_option.startswith("tracejax") else "jax"
  config.update(dir_option, os.path.join(root, lib))
  config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


class Runner:
  """Runs programs on both sides and classifies the outcome."""

  def __init__(self, x64, timeout=80, tfp=False):
    # `timeout`: seconds per program, the budget JaxWorker gives JAX (its 90 s read
    # timeout less 10), so that "timeout:tracejax" means slower than JAX would be allowed.
    import tracejax
    tracejax.config.update("jax_enable_x64", x64)
    # tracejax keeps the 2020 (non-partitionable) Threefry stream by default; modern JAX
    # defaults to the partitionable one.  Both sides get the same setting here.
    tracejax.config.update("jax_threefry_partitionable", tfp)
    _use_compile_cache(tracejax.config, "tracejax_cache_dir")
    self.tj = tracejax
    self.ns = C.bind_library("tracejax")  # in-process for tracing only (`infer`)
    self.x64 = x64
    self.timeout = timeout
    self.jax = JaxWorker(x64, tfp=tfp)
    # the programs run in a worker as JAX's do (so that a hang inside XLA is survivable),
    # with the same read timeout
    self.tracejax = JaxWorker(x64, python=sys.executable, tfp=tfp, lib="tracejax")

  def infer(self, prog):
    """{name: (shape, dtype)} of every op result, by tracejax's eval_shape."""
    return C.infer_avals(self.ns, prog, G.render)

  def run_both(self, prog):
    src = G.render(prog)
    inputs = G.make_inputs(prog)
    self.jax.send(src, inputs)
    self.tracejax.send(src, inputs)
    return self.jax.receive(), self.tracejax.receive()

  def classify(self, prog):
    j, t = self.run_both(prog)
    return compare(j, t), j, t

  def close(self):
    self.jax.close()
    self.tracejax.close()


def _same_exc(j, t):
  common = set(j["mro"]) & set(t["mro"])
  return bool(common)


def _float_diff(x, y, dtname=None):
  rtol, atol = TOL.get(dtname, (1e-4, 1e-5))
  xn, yn = np.isnan(x), np.isnan(y)
  if not np.array_equal(xn, yn):
    return "value-nan"
  xi, yi = np.isinf(x), np.isinf(y)
  if not np.array_equal(xi, yi) or not np.array_equal(x[xi], y[yi], equal_nan=True):
    return "value-inf"
  m = ~(xn | xi)
  if np.allclose(x[m], y[m], rtol=rtol, atol=atol):
    return None
  if np.allclose(x[m], y[m], rtol=100 * rtol, atol=100 * atol):
    return "value-close"
  return "value"


def _compare_leaf(a, b):
  x, y = C.decode_input(a), C.decode_input(b)
  if G.dclass(a["dtype"]) not in "fc":
    return None if np.array_equal(x, y) else "value"
  ct = np.complex128 if G.dclass(a["dtype"]) == "c" else np.float64
  dtname = a["dtype"]
  narrow = {"float64": np.float32, "complex128": np.complex64}.get(dtname)
  if narrow is not None and all(_holds_exactly(v, narrow) for v in (x, y)):
    # 64-bit values that both sides computed in 32 bits and then widened (a float32
    # cotangent of a float64 input): they carry 32-bit precision, so 32-bit tolerance.
    dtname = np.dtype(narrow).name
  return _float_diff(x.astype(ct), y.astype(ct), dtname)


def _holds_exactly(v, narrow):
  with np.errstate(all="ignore"):
    return np.array_equal(v.astype(narrow).astype(v.dtype), v, equal_nan=True)


def _compare_values_leaves(jl, tl):
  for a, b in zip(jl, tl):
    if a["dtype"] == "float0":
      continue
    cat = _compare_leaf(a, b)
    if cat:
      return cat
  return None


def _msg_key(r):
  """The first words of an error message, without numbers, dtypes and shapes."""
  import re
  m = re.sub(r"\(.*?\)|\[.*?\]|'.*?'|`.*?`|\d+", "#", r.get("msg", ""))
  m = re.sub(r"(b?float|u?int|complex|bool)#*", "T", m)
  return " ".join(m.split()[:7])[:60]


def _weak_key(leaf):
  """A leaf's weak type. A Python scalar result (JAX's TypedInt/TypedFloat too, which
  carry a dtype) is weakly typed unless it is a bool, like a weak Array."""
  w = leaf.get("weak")
  if isinstance(w, str) and w.startswith("py:"):
    return not w.lower().endswith("bool")
  return w


def compare(j, t):
  """Category string of a disagreement, or None when the results agree."""
  slow = ("WorkerDied", "Timeout")
  jt, tt = (not j["ok"] and j["exc"] in slow), (not t["ok"] and t["exc"] in slow)
  if jt or tt:
    return None if jt and tt else f"timeout:{'jax' if jt else 'tracejax'}"
  if not j["ok"] and not t["ok"]:
    return None if _same_exc(j, t) else \
        f"exc-type:{t['exc']}-vs-{j['exc']} [{_msg_key(t)} / {_msg_key(j)}]"
  if not j["ok"]:
    return f"tracejax-accepts:{j['exc']} [{_msg_key(j)}]"
  if not t["ok"]:
    return f"tracejax-raises:{t['exc']} [{_msg_key(t)}]"
  jl, tl = j["leaves"], t["leaves"]
  if len(jl) != len(tl):
    return "structure"
  if any(a["shape"] != b["shape"] for a, b in zip(jl, tl)):
    return "shape"
  if any(a["dtype"] != b["dtype"] for a, b in zip(jl, tl)):
    return "dtype"
  cat = _compare_values_leaves(jl, tl)
  if cat:
    return cat
  if any(_weak_key(a) != _weak_key(b) for a, b in zip(jl, tl)):
    return "weak_type"
  return None


# ------------------------------------------------------------- deliberate differences

def _jexc(j, exc, *frags):
  return not j["ok"] and j["exc"] == exc and all(f in j["msg"] for f in frags)


def _texc(t, exc, *frags):
  return not t["ok"] and t["exc"] == exc and all(f in t["msg"] for f in frags)


def _float_leaf_pairs(j, t, weak_too=False):
  """The (JAX, tracejax) float/complex leaf values of two successful results, as complex128
  arrays with their dtype name, when the leaves match in number, dtype and shape (and weak
  type, if asked) and all other leaves are equal; None otherwise."""
  if not (j["ok"] and t["ok"]) or len(j["leaves"]) != len(t["leaves"]):
    return None
  pairs = []
  for a, b in zip(j["leaves"], t["leaves"]):
    if a.get("dtype") != b.get("dtype") or a.get("shape") != b.get("shape") or (
        weak_too and a.get("weak") != b.get("weak")):
      return None
    if a["dtype"] == "float0":
      continue
    x, y = C.decode_input(a), C.decode_input(b)
    if G.dclass(a["dtype"]) not in "fc":
      if not np.array_equal(x, y):
        return None
      continue
    pairs.append((np.asarray(x, np.complex128), np.asarray(y, np.complex128), a["dtype"]))
  return pairs


def _more_nans(j, t):
  """Both results have the same leaves, and tracejax's differ from JAX's only by NaNs
  where JAX has numbers (JAX's NaNs are NaNs here too)."""
  pairs = _float_leaf_pairs(j, t)
  if pairs is None:
    return False
  for x, y, dt in pairs:
    if (np.isnan(x) & ~np.isnan(y)).any():
      return False
    m = ~np.isnan(y)
    if _float_diff(x[m], y[m], dt) is not None:
      return False
  return True


def _same_host_value(a, b):
  """JAX's host leaf ``a`` holds tracejax's leaf ``b``: the same bytes, or (x64 off) the
  same values in the 64-bit dtype JAX's host array keeps (float64 -> float32, ...)."""
  if a["b64"] == b["b64"] and a["dtype"] == b["dtype"]:
    return True
  canon = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}
  if canon.get(a["dtype"]) != b["dtype"] or a["shape"] != b["shape"]:
    return False
  return np.array_equal(C.decode_input(a).astype(b["dtype"]), C.decode_input(b), equal_nan=True)


def _host_holds(a, b, src=""):
  """JAX's host leaf ``a`` (a NumPy array, or a TypedNdArray with its weak type: weak
  "host:weak") holds tracejax's device leaf ``b``, of the same weak type.  Under ``vjp``
  a NumPy array may also be what JAX computed on the host from an untraced int/bool
  input and a Python scalar (``x % 2.0``: NumPy's strong float64; ``x >> 2``: a NumPy
  int64 scalar); tracejax computes it by JAX's traced rules, a weak Array of the default
  type."""
  if "vjp" in src and a.get("weak") == "host" and b.get("weak") is True:
    return _same_host_value(a, b)
  if str(a.get("weak")).startswith("py:Typed") and b.get("weak") is True:
    # JAX's typed host scalar (TypedFloat/TypedInt/TypedComplex: weak, with a dtype),
    # as its eager stop_gradient/checkpoint return a Python scalar input
    return _same_host_value(a, b)
  return a.get("weak") in ("host", "host:weak") and \
      b.get("weak") is (a["weak"] == "host:weak") and _same_host_value(a, b)


def _nearer_zero(j, t, atol=1e-4):
  """Same float leaves up to `atol`, where every element that differs is nearer zero in
  tracejax's (derivatives whose exact value is 0, where JAX's carry rounding noise)."""
  pairs = _float_leaf_pairs(j, t, weak_too=True)
  if pairs is None:
    return False
  differ = False
  for x, y, _ in pairs:
    if not np.all(np.isfinite(x) == np.isfinite(y)):
      return False
    d = x != y
    if np.any(np.abs(x - y)[d] > atol) or np.any(np.abs(y[d]) > np.abs(x[d])):
      return False
    differ = differ or bool(d.any())
  return differ


def _int_conversion_differs(j, t):
  """Same integer leaves, except elements where tracejax has what converting an
  out-of-range float constant on the host gives (0 for NaN, the dtype's saturated
  bound) and JAX has XLA's conversion under jit (wrapped, or the minimum)."""
  if not (j["ok"] and t["ok"]) or len(j["leaves"]) != len(t["leaves"]):
    return False
  differ = False
  for a, b in zip(j["leaves"], t["leaves"]):
    if a["dtype"] != b["dtype"] or a["shape"] != b["shape"] or a["dtype"] == "float0":
      if a != b:
        return False
      continue
    x, y = C.decode_input(a), C.decode_input(b)
    if np.array_equal(x, y):
      continue
    if x.dtype.kind not in "iu":
      return False
    info = np.iinfo(x.dtype)
    if not np.isin(y[x != y], [0, info.min, info.max]).all():
      return False
    differ = True
  return differ


_NONFINITE_FILLS = ("float('nan')", "float('inf')")


def _agrees(runner, variant, or_documented=False):
  """Whether both sides agree on `variant` of a program (a causal rerun); a variant
  that fails to run proves nothing. With `or_documented`, a variant whose only
  difference is itself a documented one (by the static tests, no further reruns) counts:
  removing one cause may uncover another that is documented too."""
  try:
    res = runner.classify(variant)
  except Exception:
    return False
  return res[0] is None or (or_documented
                            and deliberate(G.render(variant), res[1], res[2]) is not None)


def _int_fill_is_the_cause(runner, prog):
  """Whether a disagreement of a jitted program goes away when its non-finite `full`/
  `full_like` fill values become 0: then it is the float-to-int conversion of such a
  constant (documented below), seen downstream (`jnp.any(jnp.full_like(i, nan))`)."""
  if "jit" not in G.render(prog):
    return False
  ops = []
  for op in prog["ops"]:
    t = op["t"]
    if "full" in t:
      for lit in _NONFINITE_FILLS:
        t = t.replace("-" + lit, "0").replace(lit, "0")
    ops.append(dict(op, t=t))
  if ops == prog["ops"]:
    return False
  return _agrees(runner, dict(prog, ops=ops))


def _jit_dependent_rounding(runner, prog, cat, j):
  """Whether a value difference is JAX's answer changing with `jit`: run with every jit
  disabled (`jax.disable_jit()` around the program, which also runs JAX's own jitted
  jnp/nn functions op by op), JAX gives another answer and tracejax agrees with it.
  (XLA fuses jitted arithmetic, keeping float16/bfloat16 intermediates in float32, so
  rounding there, even overflow, and cancellation in any precision follow the fusion.)"""
  if not cat.startswith("value") or not j.get("ok"):
    return False
  try:
    j2, t2 = runner.run_both(dict(prog, stack=prog["stack"] + [{"t": "disable_jit"}]))
  except Exception:
    return False
  return compare(j, j2) is not None and compare(j2, t2) is None


def _vjp_untraced_is_the_cause(runner, prog):
  """Whether a disagreement of a program that takes `vjp` at a bool/int input goes away
  when the function under that vjp is jitted: JAX hands such inputs to the function
  untraced (computing on them with NumPy: `uint32_array / 0` is float64), and a jit
  traces them as tracejax always does."""
  stack, changed = [], False
  for s in prog["stack"]:
    if s.get("t") == "vjp":
      x = prog["inputs"][s.get("arg", 0)] if s.get("arg", 0) < len(prog["inputs"]) else {}
      dt = x.get("dtype", "float32")
      if (type(x.get("py")) in (bool, int)) if dt == "py" else G.dclass(dt) in "biu":
        stack.append({"t": "jit"})
        changed = True
    stack.append(s)
  if not changed:
    return False
  return _agrees(runner, dict(prog, stack=stack))


def _host_value_is_the_cause(runner, prog):
  """Whether a disagreement of a program with `jnp.reshape` or an eager
  `stop_gradient`/`checkpoint` goes away when the function itself is jitted: JAX's
  `jnp.reshape` of a NumPy input returns a NumPy array (it calls the input's own
  `reshape`), and its eager stop_gradient/checkpoint return a Python scalar input as a
  typed Python scalar, so what follows is NumPy's or Python's arithmetic (`bool // bool`
  is int8 in NumPy, `0 // 0` is 0; `False // False` is a ZeroDivisionError in Python);
  under jit the input is traced, as tracejax always treats it."""
  src = G.render(prog)
  if not any(op in src for op in ("jnp.reshape(", "stop_gradient(", "checkpoint(")):
    return False
  # (jitted, JAX may meet a documented crash instead: jax-float0-crash of jacfwd)
  return _agrees(runner, dict(prog, stack=[{"t": "jit"}] + prog["stack"]),
                 or_documented=True)


def _unsigned_softmax_is_the_cause(runner, prog):
  """Whether a disagreement of a program with softmax/log_softmax and unsigned inputs
  goes away when those inputs are signed (positive values): JAX subtracts the max in the
  unsigned dtype, which wraps around (-inf/NaN, which later ops such as nansum hide);
  tracejax computes in floats (the documented log-softmax-int)."""
  if "softmax" not in G.render(prog):
    return False
  inputs, changed = [], False
  for x in prog["inputs"]:
    if str(x.get("dtype", "")).startswith("uint"):
      x = dict(x, dtype=x["dtype"][1:], kind="positive")
      changed = True
    inputs.append(x)
  if not changed:
    return False
  return _agrees(runner, dict(prog, inputs=inputs))


def _vjp_of_python_int(prog, cat):
  """A weak-type difference of a program whose `vjp` is taken at a Python bool or int:
  JAX hands that input to the function untraced, so what the function computes from it
  is Python's (`False << False` is the Python int 0, weak) where tracejax traces it."""
  if cat != "weak_type":
    return False
  for s in prog["stack"]:
    if s.get("t") == "vjp":
      x = prog["inputs"][s.get("arg", 0)] if s.get("arg", 0) < len(prog["inputs"]) else {}
      dt = x.get("dtype", "float32")
      if (type(x.get("py")) in (bool, int)) if dt == "py" else G.dclass(dt) in "biu":
        return True   # (NumPy bool/int arrays too: JAX hands them over untraced)
  return False


def _half_precision_noise(runner, prog, cat, j):
  """Whether a value difference of a float16/bfloat16 program is rounding noise that
  makes neither answer meaningful: rerun with those inputs in float32, both sides agree,
  and JAX's own half-precision answer is farther from that float32 answer than the
  half-precision tolerance (a long formula, such as zeta's series differentiated
  through, loses all its digits in 8 bits; where each system rounds follows its fusion
  and its op order)."""
  half = ("float16", "bfloat16")
  if not cat.startswith("value") or not j.get("ok") or not any(
      x.get("dtype") in half for x in prog["inputs"]):
    return False
  inputs = [dict(x, dtype="float32") if x.get("dtype") in half else x
            for x in prog["inputs"]]
  try:
    c32, j32, _ = runner.classify(dict(prog, inputs=inputs))
  except Exception:
    return False
  if c32 is not None or not j32["ok"] or len(j32["leaves"]) != len(j["leaves"]):
    return False
  far = False
  for a, b in zip(j["leaves"], j32["leaves"]):
    if a["dtype"] not in half or a.get("shape") != b.get("shape"):
      continue
    x = np.asarray(C.decode_input(a), np.float32)
    y = np.asarray(C.decode_input(b), np.float32)
    rtol, atol = TOL[a["dtype"]]
    far = far or not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
  return far


def _fused_atan2_zero(runner, prog, cat):
  """Whether a NaN-versus-number difference of a program with `arctan2` goes away with
  every jit disabled on both sides: XLA's fused atan2 gives NaN for (0, 0) in some
  compiled programs (and 0 elsewhere), so which side meets it depends on the exact form
  of each system's program, not on a lowering of ours (documented below)."""
  src = G.render(prog)
  if cat != "value-nan" or not ("arctan2" in src or "atan2" in src):
    return False
  return _agrees(runner, dict(prog, stack=prog["stack"] + [{"t": "disable_jit"}]))


def _cholesky_nonfinite_is_the_cause(runner, prog):
  """Whether a disagreement of a program with `cholesky` goes away when its inputs hold
  no NaN/inf (the same values otherwise): the documented `cholesky-nan-input`, seen
  downstream (`searchsorted` over the factor)."""
  if "cholesky" not in G.render(prog) or not any(
      x.get("kind") == "special" for x in prog["inputs"]):
    return False
  inputs = [dict(x, kind="normal") if x.get("kind") == "special" else x
            for x in prog["inputs"]]
  return _agrees(runner, dict(prog, inputs=inputs))


def _complex_all_any_is_the_cause(runner, prog):
  """Whether a disagreement of a program with `jnp.all`/`jnp.any` goes away when they
  are given `x != 0` instead of `x`: JAX converts a complex operand to bool by its real
  part only (`jnp.any(2j)` is False there), where NumPy, tracejax and JAX's own
  `astype(bool)` count any nonzero value (the documented complex-all-any)."""
  if "jnp.all(" not in G.render(prog) and "jnp.any(" not in G.render(prog):
    return False
  ops = []
  for op in prog["ops"]:
    t = op["t"]
    for fn in ("all", "any"):
      t = t.replace(f"jnp.{fn}(",
                    f"(lambda a, *r, **k: jnp.{fn}(jnp.not_equal(a, 0), *r, **k))(")
    ops.append(dict(op, t=t))
  return _agrees(runner, dict(prog, ops=ops))


def _found_by_rerun(runner, prog, cat, j):
  """The documented difference a disagreement is, found from the program itself or by
  rerunning variants of it (None when no test says so)."""
  if _vjp_of_python_int(prog, cat) or _vjp_untraced_is_the_cause(runner, prog):
    return "jax-host-arrays-untraced"
  if _host_value_is_the_cause(runner, prog):
    return "jax-host-passthrough"
  if _unsigned_softmax_is_the_cause(runner, prog):
    return "log-softmax-int"
  if _int_fill_is_the_cause(runner, prog):
    return "float-to-int-out-of-range"
  if _jit_dependent_rounding(runner, prog, cat, j):
    return "jit-dependent-rounding"
  if _fused_atan2_zero(runner, prog, cat):
    return "xla-fused-atan2-zero"
  if _half_precision_noise(runner, prog, cat, j):
    return "half-precision-noise"
  if _cholesky_nonfinite_is_the_cause(runner, prog):
    return "cholesky-nan-input"
  if _complex_all_any_is_the_cause(runner, prog):
    return "complex-all-any"
  return None


# The documented list (README.md, "Deliberate differences from JAX"): a name and a test
# on (program source, JAX's result, tracejax's result). A disagreement that passes one
# is counted under "deliberate:<name>", not as a disagreement.
DELIBERATE = [
    ("jax-float0-crash", lambda src, j, t: _jexc(j, "TypeError",
                                                 "a bytes-like object is required")),
    ("rfft-half-precision", lambda src, j, t: _jexc(
        j, "ValueError", "RFFT input must be float32 or float64") and (
        t["ok"] or "complex" in t["msg"]
        # ...or a later error JAX reaches too once its rfft passes: jacrev/grad's check
        # of an integer output, a later op's dtype check, `.at` of a NumPy input
        or _texc(t, "TypeError", "requires real-valued outputs")
        or _texc(t, "TypeError", "does not accept dtype")
        or _texc(t, "AttributeError", "'numpy.ndarray' object has no attribute 'at'")
        # (reverse mode of a generic reduce_window: the documented
        # generic-reduce-window-rev, where JAX fails too, with a float32 input)
        or "reduce_window" in src and _texc(t, "NotImplementedError", "Transpose rule",
                                            "'reduce_window'"))),
    ("rfft-complex-error-type", lambda src, j, t: (_jexc(
        j, "ValueError", "only real valued inputs supported") or _jexc(
        j, "ValueError", "is out of bounds for array of dimension 0")) and _texc(
        t, "TypeError", "needs a real input array")),
    ("svd-derivative-noise", lambda src, j, t: any(
        op in src for op in ("lstsq", "svd", "pinv")) and _nearer_zero(j, t)),
    ("hfft-scalar-error-type", lambda src, j, t: "hfft" in src and _jexc(
        j, "IndexError", "tuple index out of range") and (_texc(
        t, "ValueError", "is out of bounds for an array of dimension 0") or _texc(
        t, "TypeError", "needs a real input array"))),
    ("lapack-half-precision", lambda src, j, t: _jexc(
        j, "NotImplementedError", "Unsupported dtype") and _texc(
        t, "TypeError", "requires a float32, float64, complex64 or complex128 operand")),
    ("jnp-fix-2020-api", lambda src, j, t: _jexc(j, "AttributeError", "jax.numpy.fix")),
    ("nextafter-jvp", lambda src, j, t: _jexc(
        j, "NotImplementedError", "Differentiation rule for 'nextafter'")),
    ("jax-host-arrays-untraced", lambda src, j, t: _jexc(
        j, "AttributeError", "'TypedNdArray' object has no attribute") or t["ok"] and (
        _jexc(j, "AttributeError", "'TypedInt' object has no attribute 'at'")
        # what JAX computes on the host from vjp's untraced int/bool inputs: NumPy arrays
        or ("vjp" in src and _jexc(j, "AttributeError",
                                   "'numpy.ndarray' object has no attribute 'at'"))
        # reduce_max/min over no axes returns a Python scalar input itself (typed under
        # vjp); jacfwd, and vjp's cotangent of it, then fail
        or (("jacfwd" in src or "vjp" in src) and ("reduce_max" in src or "reduce_min" in src)
            and _jexc(j, "AttributeError", "object has no attribute 'shape'"))) or (
        t["ok"] and _jexc(j, "TypeError", "object is not subscriptable")
        and "'Typed" in j["msg"]) or (
        j["ok"] and t["ok"] and len(j["leaves"]) == len(t["leaves"]) and any(
            str(a.get("weak")).startswith("py:") for a in j["leaves"]) and all(
            _same_host_value(dict(a, weak="host"), dict(b, weak="host"))
            if str(a.get("weak")).startswith("py:") and b.get("weak") is True
            else a == b for a, b in zip(j["leaves"], t["leaves"]))) or (
        "vjp" in src and _jexc(j, "IndexError", "is out of bounds for axis"))),
    ("float-to-int-out-of-range", lambda src, j, t: "jit" in src and any(
        op in src for op in ("full_like", "full(", "astype", "convert_element_type"))
        and _int_conversion_differs(j, t)),
    ("cumlogsumexp-int", lambda src, j, t: "cumlogsumexp" in src and _texc(
        t, "TypeError", "cumlogsumexp does not accept dtype") and (
        # JAX's error, or its success where the int array is empty (the program's
        # result need not be: a gradient with respect to another input)
        _jexc(j, "OverflowError", "cannot convert float infinity to integer") or j["ok"])),
    ("top-k-complex-error-type", lambda src, j, t: _jexc(
        j, "ValueError", "top_k is not compatible with complex inputs") and _texc(
        t, "TypeError", "top_k does not accept dtype complex")),
    # XLA's CPU FFT refuses the layout JAX's program gives its input (a RET_CHECK)
    ("jax-fft-layout-crash", lambda src, j, t: "fft" in src and t["ok"] and _jexc(
        j, "JaxRuntimeError", "fft_thunk", "IsMonotonicWithDim0Major")),
    # JAX's derivative of a clip-mode .at[].min/max with out-of-bounds indices: NaN
    # (forward mode) or a slope of 1 (reverse) for the rows the clipped index updates
    ("scatter-extremal-clip-derivative", lambda src, j, t: ".at[" in src
        and "mode='clip'" in src and (".min(" in src or ".max(" in src)
        and any(d in src for d in ("jacrev", "jacfwd", "grad", "jvp", "vjp", "hessian"))
        and j["ok"] and t["ok"] and len(j["leaves"]) == len(t["leaves"]) and all(
            a["dtype"] == b["dtype"] and a["shape"] == b["shape"]
            for a, b in zip(j["leaves"], t["leaves"]))),
    ("jax-empty-gather-crash", lambda src, j, t: _jexc(
        j, "TypeError", "in gather op is out of range")),  # (ours: the result, or a later error)
    # JAX's wrapped-around unsigned max subtraction: a differing leaf where JAX's holds
    # -inf/NaN (also after later ops: fft, sums)
    ("log-softmax-int", lambda src, j, t: "softmax" in src and t["ok"] and j["ok"] and any(
        a["dtype"] == b["dtype"] and a["b64"] != b["b64"] and G.dclass(a["dtype"]) in "fc"
        and not np.isfinite(C.decode_input(a).astype(np.complex128)).all()
        for a, b in zip(j["leaves"], t["leaves"]))),
    ("bool-scatter-add", lambda src, j, t: ".at[" in src and t["ok"] and (
        _jexc(j, "TypeError", "add does not accept dtype bool at position 0")
        or _jexc(j, "TypeError", "mul does not accept dtype bool at position 0"))),
    ("jax-host-passthrough", lambda src, j, t: j["ok"] and t["ok"] and any(
        _host_holds(a, b, src) for a, b in zip(j["leaves"], t["leaves"])) and all(
        (a.get("weak") == b.get("weak") and a["dtype"] == b["dtype"])
        or _host_holds(a, b, src) for a, b in zip(j["leaves"], t["leaves"])) or (
        # `.at` of JAX's NumPy passthrough: a no-op reshape, a loop-invariant carry
        # (or a later error of tracejax's: jacrev of a bool result)
        any(op in src for op in ("reshape", "while_loop", "fori_loop", "scan(",
                                 "stop_gradient", "checkpoint"))
        and (t["ok"] or _texc(t, "TypeError", "jacrev requires real-valued outputs"))
        and (_jexc(j, "AttributeError", "'numpy.ndarray' object has no attribute 'at'")
             # (eager stop_gradient/checkpoint of a host value: JAX's typed host value)
             or _jexc(j, "AttributeError", "object has no attribute 'at'")
             and "'Typed" in j["msg"])) or (
        # indexing such a carry when it is a Python scalar input (or what eager
        # stop_gradient/checkpoint return for one, and host arithmetic on that)
        any(op in src for op in ("while_loop", "fori_loop", "scan(", "stop_gradient",
                                 "checkpoint")) and t["ok"]
        and _jexc(j, "TypeError", "object is not subscriptable"))),
    ("generic-reduce-window-rev", lambda src, j, t: "reduce_window" in src and ((_jexc(
        j, "ValueError", "Linearization failed to produce known values")
        # JAX's generic JVP meeting a symbolic zero tangent (an empty operand)
        or _jexc(j, "ValueError", "Operands must have the same tree structure")) and (
        t["ok"] or _texc(t, "NotImplementedError", "Transpose rule", "'reduce_window'")
        # ...or an error JAX reaches later: jacrev's real-output check, a dtype check
        or _texc(t, "TypeError", "jacrev requires real-valued outputs")
        or _texc(t, "TypeError", "does not accept dtype"))
        # jacfwd of JAX's generic reduce_window: its JVP batches the primal output too
        or t["ok"] and _jexc(j, "ValueError", "got axis spec None but output was batched"))),
    ("cholesky-nan-input", lambda src, j, t: "cholesky" in src and _more_nans(j, t)),
    ("mask-update-select", lambda src, j, t: t["ok"] and ".mul(" in src and _jexc(
        j, "NotImplementedError", "scatter_mul gradients are only implemented if")),
    ("igamma-grad-a-x-derivative", lambda src, j, t: t["ok"] and _jexc(
        j, "NotImplementedError", "Differentiation rule for 'igamma_grad_a'")),
    ("error-order", lambda src, j, t: _jexc(j, "NotImplementedError",
                                             "Differentiation rule for") and _texc(
        t, "TypeError", "does not accept dtype")),
    ("jax-dead-code-errors", lambda src, j, t: t["ok"] and (
        # JAX's JVP of jit differentiates the unused xlogy/xlog1py(float, int) too
        (("xlog1py" in src or "xlogy" in src) and "jit" in src and (_jexc(
            j, "TypeError", "log1p does not accept dtype") or _jexc(
            j, "TypeError", "log does not accept dtype")))
        # JAX's eager checkpoint compiles an unused argmax/argmin of a complex array
        or ("checkpoint" in src and ("argmax" in src or "argmin" in src) and (
            _jexc(j, "TypeError", "gt does not accept dtype complex")
            or _jexc(j, "TypeError", "lt does not accept dtype complex")))
        # ...and the second derivative of an unused eigvals (a used one raises in both)
        or ("eigvals" in src and "jit" in src and _jexc(
            j, "NotImplementedError", "Derivatives of non-symmetric eigenvectors")))),
    ("nan-sampler-parameters", lambda src, j, t: "jit" in src and any(
        s in src for s in ("random.gamma", "random.beta", "random.dirichlet",
                           "random.loggamma")) and _more_nans(j, t)),
    ("jax-error-type-varies", lambda src, j, t: (
        _jexc(j, "TypeError", "rev dimensions must all be less than") and
        _texc(t, "ValueError", "out-of-bounds axis")) or (
        _jexc(j, "ZeroDivisionError") and _texc(t, "ValueError",
                                                "invalid number of FFT data points")) or (
        "hfft" in src and _jexc(j, "IndexError", "tuple index out of range")
        and _texc(t, "ValueError", "is out of bounds for an array of dimension 0")) or (
        "cumlogsumexp" in src and _jexc(j, "OverflowError", "cannot convert float infinity")
        and _texc(t, "TypeError", "cumlogsumexp does not accept dtype")) or (
        "polyval" in src and _jexc(j, "IndexError", "tuple index out of range")
        and _texc(t, "ValueError", "polyval: p must be at least one-dimensional"))),
]


def deliberate(src, j, t):
  """Name of the documented deliberate difference this disagreement is, or None."""
  for name, test in DELIBERATE:
    try:
      if test(src, j, t):
        return name
    except (KeyError, TypeError):
      continue
  return None


# ----------------------------------------------------------------------------- minimise

def _refs(prog):
  used = set()
  for op in prog["ops"]:
    used.update(op["a"])
  used.add(prog["out"])
  return used


def _rename(prog, mapping):
  ops = [dict(op, a=[mapping.get(a, a) for a in op["a"]]) for op in prog["ops"]]
  return dict(prog, ops=ops, out=mapping.get(prog["out"], prog["out"]))


def _drop_op(prog, k, repl):
  """Removes op k; references to v<k> become ``repl``; later ops are renumbered."""
  p = _rename(prog, {f"v{k}": repl})
  ops = p["ops"][:k] + p["ops"][k + 1:]
  mapping = {f"v{i}": f"v{i - 1}" for i in range(k + 1, len(prog["ops"]))}
  return _rename(dict(p, ops=ops), mapping)


def _slice(prog):
  """Keeps only the ops the output depends on."""
  need = {prog["out"]}
  for k in range(len(prog["ops"]) - 1, -1, -1):
    if f"v{k}" in need:
      need.update(prog["ops"][k]["a"])
  p = prog
  for k in range(len(prog["ops"]) - 1, -1, -1):
    if f"v{k}" not in need:
      p = _drop_op(p, k, "x0")
  return p


def _drop_input(prog, i):
  n = len(prog["inputs"])
  if n <= 1 or any(f"x{i}" in op["a"] for op in prog["ops"]) or prog["out"] == f"x{i}":
    return None
  stack = []
  for layer in prog["stack"]:
    layer = dict(layer)
    if "in_axes" in layer:
      layer["in_axes"] = layer["in_axes"][:i] + layer["in_axes"][i + 1:]
    if "arg" in layer:
      if layer["arg"] == i:
        return None
      if layer["arg"] > i:
        layer["arg"] -= 1
    stack.append(layer)
  mapping = {f"x{k}": f"x{k - 1}" for k in range(i + 1, n)}
  p = _rename(dict(prog, inputs=prog["inputs"][:i] + prog["inputs"][i + 1:], stack=stack),
              mapping)
  return p


def candidates(prog):
  """Smaller variants of ``prog``, most aggressive first."""
  s = prog["stack"]
  for k in range(len(s)):
    yield dict(prog, stack=s[:k] + s[k + 1:])
  for k in range(len(prog["ops"]) - 1, -1, -1):
    op = prog["ops"][k]
    for repl in dict.fromkeys(op["a"]):
      yield _slice(_drop_op(prog, k, repl))
  # an op whose result is unused can still be the one that raises: end the program there
  for k in range(len(prog["ops"]) - 1):
    yield _slice(dict(prog, ops=prog["ops"][:k + 1], out=f"v{k}"))
  for k in range(len(prog["ops"]) - 1, -1, -1):
    for repl in dict.fromkeys(prog["ops"][k]["a"]):
      yield _drop_op(prog, k, repl)
  for i in range(len(prog["inputs"]) - 1, -1, -1):
    p = _drop_input(prog, i)
    if p is not None:
      yield p
  for i, spec in enumerate(prog["inputs"]):
    if spec.get("kind") not in (None, "normal"):
      yield dict(prog, inputs=prog["inputs"][:i] + [dict(spec, kind="normal")] +
                 prog["inputs"][i + 1:])
  for k, layer in enumerate(s):
    if layer["t"] == "vmap" and layer["size"] != 1:
      yield dict(prog, stack=s[:k] + [dict(layer, size=1)] + s[k + 1:])


def minimise(runner, prog, category, budget=40, deadline=None):
  """Greedy delta debugging: keep any smaller variant that shows the same category."""
  used = 1
  sliced = _slice(prog)
  if sliced != prog:
    try:
      if runner.classify(sliced)[0] == category:
        prog = sliced
    except Exception:
      pass
  changed = True
  while changed and used < budget:
    changed = False
    for cand in candidates(prog):
      if used >= budget or (deadline and time.time() > deadline):
        break
      used += 1
      try:
        cat, _, _ = runner.classify(cand)
      except Exception:
        continue
      if cat == category:
        prog = cand
        changed = True
        break
  return prog, used


# ----------------------------------------------------------------------------- output

def _fmt_result(r):
  if not r["ok"]:
    return f"raises {r['exc']}: {r['msg'][:200]}"
  parts = []
  for leaf in r["leaves"]:
    if leaf["dtype"] == "float0":
      parts.append(f"float0{tuple(leaf['shape'])}")
      continue
    v = C.decode_input(leaf)
    txt = np.array2string(np.asarray(v, dtype=np.float64 if v.dtype.name == "bfloat16"
                                     else v.dtype), threshold=12, precision=6)
    parts.append(f"{leaf['dtype']}{tuple(leaf['shape'])} weak={leaf.get('weak')} "
                 + txt.replace("\n", " "))
  return "; ".join(parts)


REPRO_HEAD = '''"""Fuzz reproducer ({name}): {category}.

Run: python {name}.py   (tracejax)   or   $JAX_PYTHON {name}.py jax   (real JAX)
"""
import sys
import numpy as np
from numpy import nan, inf
if len(sys.argv) > 1 and sys.argv[1] == "jax":
  import jax, jax.numpy as jnp, jax.nn, jax.random, jax.scipy.special, jax.scipy.linalg
  from jax import lax
else:
  import tracejax as jax, tracejax.numpy as jnp, tracejax.nn, tracejax.random
  import tracejax.scipy.special, tracejax.scipy.linalg
  from tracejax import lax
jax.config.update("jax_enable_x64", {x64})
jax.config.update("jax_threefry_partitionable", {tfp})
'''


def _input_src(i, enc):
  if "py" in enc:
    return f"x{i} = {C.decode_input(enc)!r}"
  a = C.decode_input(enc)
  if enc["dtype"] == "bfloat16":
    return (f"import ml_dtypes\nx{i} = np.array({a.astype(np.float32).tolist()!r}, "
            f"dtype=np.float32).reshape({tuple(a.shape)}).astype(ml_dtypes.bfloat16)")
  return f"x{i} = np.array({a.tolist()!r}, dtype=np.{enc['dtype']}).reshape({tuple(a.shape)})"


def reproducer(prog, category, j, t, name, x64, tfp=False):
  src = [REPRO_HEAD.format(name=name, category=category, x64=x64, tfp=tfp), C.PRELUDE, G.render(prog)]
  inputs = G.make_inputs(prog)
  for i, enc in enumerate(inputs):
    src.append(_input_src(i, enc).replace("nan", "nan").replace("inf", "inf"))
  args = ", ".join(f"x{i}" for i in range(len(inputs)))
  src.append(f"out = main({args})")
  src.append("for leaf in jax.tree_util.tree_leaves(out):\n"
             "  print(np.asarray(leaf).dtype, getattr(leaf, 'weak_type', None), "
             "np.asarray(leaf))")
  src.append(f"# JAX 0.10.2 : {_fmt_result(j)}")
  src.append(f"# tracejax   : {_fmt_result(t)}")
  return "\n".join(src) + "\n"


def signature(prog, category):
  """A coarse key used to group disagreements (category + op names + transforms)."""
  ops = []
  for op in prog["ops"]:
    head = op["t"].split("(")[0].strip() or op["t"][:12]
    if head.startswith("{0}"):
      head = op["t"].replace("{0}", "x").replace("{1}", "y")[:40]
    ops.append(head)
  return f"{category} | {' '.join(ops)} | {'/'.join(l['t'] for l in prog['stack'])}"


# ----------------------------------------------------------------------------- driver

def fuzz(args, job=0, jobs=1):
  out_dir = args.out
  os.makedirs(out_dir, exist_ok=True)
  runner = Runner(args.x64, tfp=args.threefry_partitionable)
  results = {"n": 0, "agree": 0, "both_error": 0, "gen_fail": 0, "disagree": 0,
             "categories": collections.Counter(), "signatures": collections.Counter(),
             "files": [], "ops_seen": collections.Counter(),
             "deliberate": collections.Counter(), "disagreeing": []}
  minimised_per_sig = collections.Counter()
  t_end = time.time() + 60 * args.minutes if args.minutes else None
  todo = iter(args.indices[job::jobs]) if args.indices else None
  i = job
  while (todo is not None or args.n is None or i < args.n) and \
      (t_end is None or time.time() < t_end):
    if todo is not None:
      i = next(todo, None)
      if i is None:
        break
    rng = np.random.default_rng([args.seed, i, int(args.x64)])
    try:
      prog = G.generate(rng, runner.infer, args.x64)
    except Exception:
      results["gen_fail"] += 1
      i += jobs
      continue
    cat, j, t = runner.classify(prog)
    results["n"] += 1
    known = deliberate(G.render(prog), j, t) if cat is not None else None
    if cat is not None and known is None:
      known = _found_by_rerun(runner, prog, cat, j)
    if known is not None:
      results["deliberate"][known] += 1
      if args.verbose:
        print(f"[{i}] deliberate:{known}", flush=True)
    elif cat is None:
      results["agree"] += 1
      if not j["ok"]:
        results["both_error"] += 1
    else:
      results["disagree"] += 1
      results["categories"][cat] += 1
      results["disagreeing"].append([i, cat])   # every one, to rerun with --indices
      raw_sig = signature(_slice(prog), cat)
      small, jj, tt = prog, j, t
      if minimised_per_sig[cat] < args.max_min_per_category:
        small, _ = minimise(runner, prog, cat, budget=args.min_budget,
                            deadline=(t_end - 30) if t_end else None)
        minimised_per_sig[cat] += 1
        c2, jj, tt = runner.classify(small)
        if c2 != cat:
          small, jj, tt = prog, j, t
      sig = signature(small, cat)
      results["signatures"][sig] += 1
      if results["signatures"][sig] <= 2:
        name = f"repro_x{int(args.x64)}_s{args.seed}_{i:05d}"
        path = os.path.join(out_dir, name + ".py")
        with open(path, "w") as f:
          f.write(reproducer(small, cat, jj, tt, name, args.x64, args.threefry_partitionable))
        with open(os.path.join(out_dir, name + ".json"), "w") as f:
          json.dump({"program": small, "original": prog, "category": cat,
                     "jax": jj, "tracejax": tt}, f)
        results["files"].append(path)
      if args.verbose:
        print(f"[{i}] {cat}: {raw_sig}", flush=True)
    if args.verbose and results["n"] % 50 == 0:
      print(f"... {results['n']} programs, {results['disagree']} disagreements", flush=True)
    if args.json and results["n"] % 100 == 0:
      # What is done so far, should the process die (a crash inside XLA cannot be caught).
      with open(f"{args.json}.job{job}.progress", "w") as f:
        json.dump(dict(_jsonable(results), last_index=i), f)
    i += jobs
  runner.close()
  return results


def replay(args):
  """Reruns every saved reproducer (*.json) under --replay DIR on both sides and prints
  what each one is now: agree, deliberate:<name>, or its disagreement category."""
  import glob
  runner = Runner(args.x64, tfp=args.threefry_partitionable)
  now = collections.Counter()
  for path in sorted(glob.glob(os.path.join(args.replay, "*.json"))):
    if os.path.basename(path).startswith(".") or path.endswith("summary.json"):
      continue
    with open(path) as f:
      rec = json.load(f)
    if f"_x{int(args.x64)}_" not in os.path.basename(path):
      continue  # a reproducer of the other x64 setting
    prog = rec["program"]
    cat, j, t = runner.classify(prog)
    known = deliberate(G.render(prog), j, t) if cat else None
    if cat and known is None:
      known = _found_by_rerun(runner, prog, cat, j)
    state = "agree" if cat is None else f"deliberate:{known}" if known else cat
    now[state if cat is None or known else "disagree"] += 1
    print(f"{os.path.basename(path)}: was {rec['category'][:70]} -> now {state[:90]}",
          flush=True)
  runner.close()
  print(f"\nreplayed: {dict(now)}")
  return 0


def merge(parts):
  tot = {"n": 0, "agree": 0, "both_error": 0, "gen_fail": 0, "disagree": 0,
         "categories": collections.Counter(), "signatures": collections.Counter(), "files": [],
         "deliberate": collections.Counter(), "disagreeing": []}
  for p in parts:
    tot["disagreeing"] += p.get("disagreeing", [])
    for k in ("n", "agree", "both_error", "gen_fail", "disagree"):
      tot[k] += p[k]
    tot["deliberate"].update(p.get("deliberate", {}))
    tot["categories"].update(p["categories"])
    tot["signatures"].update(p["signatures"])
    tot["files"] += p["files"]
  return tot


def print_summary(res, args, elapsed):
  print(f"\n=== fuzz_vs_jax summary: seed={args.seed} x64={args.x64} "
        f"programs={res['n']} in {elapsed:.0f}s ===")
  print(f"agree: {res['agree']} (both raise: {res['both_error']})   "
        f"disagree: {res['disagree']}   generator failures: {res['gen_fail']}")
  print(f"documented deliberate differences: {sum(res['deliberate'].values())} "
        f"{dict(res['deliberate'].most_common())}")
  print("\n| category | programs |\n|---|---|")
  for cat, n in res["categories"].most_common():
    print(f"| {cat} | {n} |")
  print("\n| signature (category | ops | transforms, minimised) | programs |\n|---|---|")
  for sig, n in res["signatures"].most_common(60):
    print(f"| {sig} | {n} |")
  print(f"\nreproducers: {len(res['files'])} in {args.out}")


def _jsonable(res):
  return {k: (dict(v) if isinstance(v, collections.Counter) else v) for k, v in res.items()
          if k != "ops_seen"}


def main(argv=None):
  import warnings
  warnings.simplefilter("ignore")
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--n", type=int, default=None, help="number of programs (default 200 "
                  "unless --minutes is given)")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--x64", action="store_true", help="enable 64-bit types on both sides")
  ap.add_argument("--out", default="fuzz_out", help="directory for the reproducers")
  ap.add_argument("--jobs", type=int, default=1, help="parallel fuzzing processes")
  ap.add_argument("--minutes", type=float, default=None, help="stop after this long")
  ap.add_argument("--min-budget", type=int, default=30, help="runs per minimisation")
  ap.add_argument("--max-min-per-category", type=int, default=6,
                  help="disagreements minimised per category (the rest are counted)")
  ap.add_argument("--threefry-partitionable", action="store_true",
                  help="use the partitionable Threefry stream on both sides (JAX's default; "
                  "tracejax's default is the 2020 stream, which is what both use otherwise)")
  ap.add_argument("--indices", type=lambda v: [int(x) for x in v.split(",")], default=None,
                  help="run only these program indices (comma-separated), e.g. to replay")
  ap.add_argument("--verbose", "-v", action="store_true")
  ap.add_argument("--job-index", type=int, default=None, help=argparse.SUPPRESS)
  ap.add_argument("--json", default=None, help="also write the summary as JSON here")
  ap.add_argument("--replay", default=None, metavar="DIR",
                  help="rerun the reproducers saved in DIR (of this --x64 setting)")
  args = ap.parse_args(argv)
  if args.replay:
    return replay(args)
  if args.indices:
    args.n = max(args.indices) + 1
  if args.n is None and args.minutes is None:
    args.n = 200
  t0 = time.time()
  if args.job_index is not None:  # a child of --jobs
    res = fuzz(args, args.job_index, args.jobs)
    with open(args.json, "w") as f:
      json.dump(_jsonable(res), f)
    return 0
  if args.jobs <= 1:
    res = fuzz(args)
  else:
    procs, paths = [], []
    for k in range(args.jobs):
      path = os.path.join(args.out, f".job{k}.json")
      os.makedirs(args.out, exist_ok=True)
      cmd = [sys.executable, os.path.abspath(__file__), "--job-index", str(k), "--json", path,
             "--jobs", str(args.jobs), "--seed", str(args.seed), "--out", args.out,
             "--min-budget", str(args.min_budget),
             "--max-min-per-category", str(args.max_min_per_category)]
      cmd += ["--n", str(args.n)] if args.n is not None else []
      cmd += ["--minutes", str(args.minutes)] if args.minutes else []
      cmd += ["--x64"] if args.x64 else []
      cmd += ["-v"] if args.verbose else []
      cmd += ["--indices", ",".join(map(str, args.indices))] if args.indices else []
      cmd += ["--threefry-partitionable"] if args.threefry_partitionable else []
      procs.append(subprocess.Popen(cmd))
      paths.append(path)
    parts = []
    for p, path in zip(procs, paths):
      p.wait()
      with open(path) as f:
        d = json.load(f)
      for k in ("categories", "signatures", "deliberate"):
        d[k] = collections.Counter(d.get(k, {}))
      parts.append(d)
    res = merge(parts)
  print_summary(res, args, time.time() - t0)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(_jsonable(res), f)
  return 0


if __name__ == "__main__":
  sys.exit(main())
