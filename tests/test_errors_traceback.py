"""Uncaught errors as a JAX user sees them: filtered tracebacks and `jax.errors` names.

JAX 0.10.2 prints 11 lines for the uncaught tracer-in-`if` error of `SCRIPT`
(frames of the script only, the message, and the two-line note); tracejax must
not print more, under plain `python` and under `python -m tracejax run`.
"""
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import errors
from tracejax._src import traceback_util
from tracejax._src.config import config

SCRIPT = textwrap.dedent("""\
    import {mod} as jax
    import {mod}.numpy as jnp

    @jax.jit
    def f(x):
      if x > 0:
        return x
      return -x

    f(jnp.float32(1.0))
    """)
JAX_LINES = 11   # `python script.py 2>&1 | wc -l` with JAX 0.10.2, JAX_TRACEBACK_FILTERING unset
NOTE = ("For simplicity, JAX has removed its internal frames from the traceback of the "
        "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.")


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env(mode):
  """The environment of a child Python: this checkout importable, the filtering mode set."""
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  env.pop("JAX_TRACEBACK_FILTERING", None)
  if mode is not None:
    env["JAX_TRACEBACK_FILTERING"] = mode
  return env


def _run(tmp_path, mode, via_run):
  path = tmp_path / "ifscript.py"
  path.write_text(SCRIPT.format(mod="jax" if via_run else "tracejax"))
  env = _env(mode)
  cmd = [sys.executable] + (["-m", "tracejax", "run"] if via_run else []) + [str(path)]
  proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
  assert proc.returncode == 1
  return proc.stderr


@pytest.mark.parametrize("via_run", [False, True], ids=["python", "tracejax-run"])
def test_uncaught_tracer_bool_error_filtered(tmp_path, via_run):
  err = _run(tmp_path, None, via_run)
  lines = err.rstrip("\n").split("\n")
  assert len(lines) <= JAX_LINES, err
  assert lines[0] == "Traceback (most recent call last):"
  files = [ln for ln in lines if ln.startswith("  File ")]
  assert len(files) == 2 and all("ifscript.py" in ln for ln in files), err
  assert "tracejax" not in "".join(files) and "runpy" not in err
  msg = next(ln for ln in lines if ln.startswith("jax.errors.TracerBoolConversionError: "))
  assert "bool[]" in msg
  assert "depends on the value of the argument x" in err
  assert "static_argnums" in err and "lax.cond" in err   # the fix
  assert lines[-2:] == ["--------------------", NOTE]


@pytest.mark.parametrize("via_run", [False, True], ids=["python", "tracejax-run"])
def test_uncaught_error_unfiltered_when_off(tmp_path, via_run):
  err = _run(tmp_path, "off", via_run)
  assert NOTE not in err
  assert os.path.join("tracejax", "_src", "core", "trace.py") in err  # the raising frame
  assert len(err.splitlines()) > JAX_LINES + 10
  assert ("runpy" in err) == via_run


def test_remove_frames_keeps_the_full_trace_as_cause(tmp_path):
  err = _run(tmp_path, "remove_frames", False)
  first, second = err.split("The above exception was the direct cause")
  assert "UnfilteredStackTrace: jax.errors.TracerBoolConversionError" in first
  assert os.path.join("_src", "jit.py") in first
  assert "tracejax" not in second.replace("tracejax.errors", "")  # filtered part
  assert NOTE not in err


@pytest.fixture
def filtering():
  old = config.jax_traceback_filtering
  yield lambda mode: config.update("jax_traceback_filtering", mode)
  config.update("jax_traceback_filtering", old)


def _frames(e):
  tb, out = e.__traceback__, []
  while tb is not None:
    out.append(tb.tb_frame.f_code.co_filename)
    tb = tb.tb_next
  return out


def test_in_process_modes(filtering):
  def f(x):
    if x > 0:
      return x
    return x

  filtering("quiet_remove_frames")
  with pytest.raises(errors.TracerBoolConversionError) as info:
    tracejax.jit(f)(1.0)
  assert not any(traceback_util.is_internal_file(p) for p in _frames(info.value))
  assert info.value.__notes__ == ["--------------------\n" + NOTE]

  filtering("off")
  with pytest.raises(errors.TracerBoolConversionError) as info:
    tracejax.jit(f)(1.0)
  assert any(traceback_util.is_internal_file(p) for p in _frames(info.value))
  assert not getattr(info.value, "__notes__", None)

  filtering("tracebackhide")   # frames stay; pytest/IPython skip the marked ones
  with pytest.raises(errors.TracerBoolConversionError) as info:
    tracejax.grad(lambda x: tracejax.jit(f)(x))(1.0)
  assert any(traceback_util.is_internal_file(p) for p in _frames(info.value))

  with pytest.raises(ValueError, match="jax_traceback_filtering"):
    filtering("sometimes")


def test_nested_transformations_filter_once(filtering):
  filtering("quiet_remove_frames")

  def f(x):
    return tracejax.vmap(lambda y: jnp.zeros(int(y)))(x)

  with pytest.raises(errors.TracerIntegerConversionError) as info:
    tracejax.grad(lambda x: f(x).sum())(jnp.ones(3))
  assert len(info.value.__notes__) == 1  # one boundary filtered, not three
  assert not any(traceback_util.is_internal_file(p) for p in _frames(info.value))


def test_error_classes_as_jax():
  for name in ["ConcretizationTypeError", "TracerBoolConversionError",
               "TracerArrayConversionError", "TracerIntegerConversionError",
               "UnexpectedTracerError", "KeyReuseError"]:
    cls = getattr(errors, name)
    assert cls.__module__ == "jax.errors" and issubclass(cls, TypeError)
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
  assert issubclass(errors.NonConcreteBooleanIndexError, IndexError)
  assert issubclass(errors.JaxRuntimeError, RuntimeError)


def test_messages_name_argument_and_fix():
  import numpy as np

  def g(a, b, scale):
    return np.asarray(b["w"][1] * scale)

  with pytest.raises(errors.TracerArrayConversionError) as info:
    tracejax.jit(g, static_argnums=0)(1, {"w": [1.0, 2.0]}, 3.0)
  msg = str(info.value)
  assert "shape float32[]" in msg and "function g at" in msg and "for jit" in msg
  assert "the arguments b['w'][1] and scale" in msg and "jax.numpy instead of numpy" in msg
  copy = pickle.loads(pickle.dumps(info.value))  # no `jax` module needed to pickle
  assert type(copy) is errors.TracerArrayConversionError and str(copy) == msg

  with pytest.raises(errors.NonConcreteShapeError, match="argument n\\."):
    tracejax.jit(lambda x, n: jnp.zeros(n) + x)(1.0, 3)
  with pytest.raises(errors.TracerIntegerConversionError, match="argument i\\."):
    tracejax.jit(lambda x, i: x[[0, 1][i]])(jnp.ones(2), 1)
  with pytest.raises(errors.ConcretizationTypeError, match="argument x\\."):
    tracejax.jit(lambda x: float(x))(1.0)


# Every public entry point filters, not only `jit`: errors raised while tracing the
# functions given to control flow, `vmap`, `grad` or `checkpoint` called outside `jit`.
# The per-case line counts are JAX 0.10.2's for the same script (`{mod}` = jax, run
# with /work/jaxvenv/bin/python, JAX_TRACEBACK_FILTERING unset).
ENTRY_SCRIPT = textwrap.dedent("""\
    import json
    import sys
    import traceback

    import {mod} as jax
    import {mod}.numpy as jnp
    from {mod} import lax


    def neg_if(x):
      if x > 0:
        return x
      return -x


    def case_cond():
      lax.cond(True, neg_if, lambda x: x, jnp.float32(1.0))


    def case_switch():
      lax.switch(1, [lambda x: x, neg_if], jnp.float32(1.0))


    def case_scan():
      lax.scan(lambda c, x: (c + jnp.ones(3), x), jnp.ones(2), jnp.ones(4))


    def case_while_loop():
      lax.while_loop(neg_if, lambda c: c - 1, jnp.float32(3.0))


    def case_fori_loop():
      lax.fori_loop(0, 3, lambda i, c: neg_if(c), jnp.float32(3.0))


    def case_map():
      lax.map(neg_if, jnp.ones(3))


    def case_vmap():
      jax.vmap(neg_if)(jnp.ones(3))


    def case_grad():
      jax.grad(lambda x: (x + jnp.ones(3)).sum())(jnp.ones(2))


    def case_checkpoint():
      jax.checkpoint(neg_if)(1.0)


    def case_pmap():
      jax.pmap(neg_if)(jnp.ones(1))


    out = {{}}
    for name in sys.argv[1:]:
      try:
        globals()["case_" + name]()
        out[name] = None
      except Exception as e:
        out[name] = "".join(traceback.format_exception(e))
    print(json.dumps(out))
    """)
JAX_ENTRY_LINES = {"cond": 13, "switch": 13, "scan": 23, "while_loop": 13, "fori_loop": 16,
                   "map": 13, "vmap": 14, "grad": 23, "checkpoint": 17,
                   "pmap": 16}
ENTRY_ERRORS = {"scan": "Incompatible shapes", "grad": "Incompatible shapes"}  # else tracer-in-if


def _run_entry_points(tmp_path, mode):
  import json
  path = tmp_path / "entry_points.py"
  path.write_text(ENTRY_SCRIPT.format(mod="tracejax"))
  proc = subprocess.run([sys.executable, str(path)] + sorted(JAX_ENTRY_LINES),
                        capture_output=True, text=True, env=_env(mode), timeout=120)
  assert proc.returncode == 0, proc.stderr
  return json.loads(proc.stdout)


def _internal_frame_lines(tb_text):
  src = os.path.join("tracejax", "_src") + os.sep
  return [ln for ln in tb_text.splitlines() if ln.startswith("  File ") and src in ln]


def test_entry_points_outside_jit_filtered(tmp_path):
  out = _run_entry_points(tmp_path, None)
  for name, jax_lines in JAX_ENTRY_LINES.items():
    text = out[name]
    assert text is not None, f"{name} raised nothing"
    assert ENTRY_ERRORS.get(name, "TracerBoolConversionError") in text, (name, text)
    assert not _internal_frame_lines(text), (name, text)
    assert len(text.rstrip("\n").splitlines()) <= jax_lines, (name, text)
    assert text.rstrip("\n").endswith(NOTE), (name, text)
    assert text.count(NOTE) == 1, (name, text)   # nested boundaries (fori -> scan) filter once
    # the user's frames stay: the case function and the function it gave the entry point
    assert f"in case_{name}" in text, (name, text)


def test_entry_points_outside_jit_unfiltered_when_off(tmp_path):
  out = _run_entry_points(tmp_path, "off")
  for name in JAX_ENTRY_LINES:
    assert _internal_frame_lines(out[name]), (name, out[name])
    assert NOTE not in out[name]


@pytest.mark.parametrize("mode", ["remove_frames", "tracebackhide"])
def test_control_flow_modes_in_process(filtering, mode):
  filtering(mode)

  def body(c, x):
    if c > 0:
      return c, x
    return -c, x

  with pytest.raises(errors.TracerBoolConversionError) as info:
    tracejax.lax.scan(body, 0.0, jnp.ones(3))
  frames = _frames(info.value)
  if mode == "remove_frames":
    assert not any(traceback_util.is_internal_file(p) for p in frames)
    cause = info.value.__cause__
    assert isinstance(cause, traceback_util.UnfilteredStackTrace)
    assert any(traceback_util.is_internal_file(p) for p in _frames(cause))
  else:   # frames kept, tracejax's marked hidden for pytest/IPython
    tb, hidden = info.value.__traceback__, []
    while tb is not None:
      if traceback_util.is_internal_file(tb.tb_frame.f_code.co_filename):
        hidden.append(tb.tb_frame.f_locals.get("__tracebackhide__", False))
      tb = tb.tb_next
    assert hidden and all(hidden)


def test_entry_points_keep_names_and_results():
  # the boundary is transparent: names, docstrings and values as before
  lax = tracejax.lax
  for f in [lax.cond, lax.switch, lax.scan, lax.while_loop, lax.fori_loop, lax.map,
            lax.associative_scan, lax.custom_linear_solve, lax.custom_root]:
    assert f.__doc__ and f.__name__ == f.__wrapped__.__name__
  assert float(lax.cond(True, lambda x: x + 1, lambda x: x, 1.0)) == 2.0
  assert float(lax.fori_loop(0, 4, lambda i, c: c + i, 0)) == 6
  carry, ys = lax.scan(lambda c, x: (c + x, c), 0.0, jnp.arange(3.0))
  assert float(carry) == 3.0 and ys.tolist() == [0.0, 0.0, 1.0]
  relu = tracejax.custom_jvp(lambda x: jnp.maximum(x, 0.0))
  relu.defjvp(lambda p, t: (relu(p[0]), t[0] * (p[0] > 0)))
  assert float(tracejax.grad(relu)(2.0)) == 1.0
