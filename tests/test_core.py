"""Core: avals, primitives, tracers, jaxprs (printing, checking, evaluation), jit, errors."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from tracejax._src import errors
from tracejax._src.api import make_jaxpr
from tracejax._src.config import config
from tracejax._src.core import ir
from tracejax._src.core.avals import ShapedArray, ConcreteArray
from tracejax._src.core.trace import Primitive
from tracejax._src.jit import jit
from tracejax._src.lax import elementwise as lax
from tracejax._src.runtime.array import Array, from_numpy


def test_shaped_array_repr_and_equality():
  assert repr(ShapedArray((2, 3), np.float32)) == "ShapedArray(float32[2,3])"
  assert repr(ShapedArray((), np.float32, weak_type=True)) == \
      "ShapedArray(float32[], weak_type=True)"
  assert ShapedArray((2,), np.int32) == ShapedArray((2,), np.int32)
  assert ShapedArray((2,), np.int32) != ShapedArray((2,), np.int32, True)
  assert hash(ShapedArray((2,), np.int32)) == hash(ShapedArray((2,), np.int32))
  assert "ConcreteArray(2.0" in repr(ConcreteArray(np.float32(2.0)))


def test_tracer_repr_under_jit():
  seen = []

  @jit
  def f(x):
    seen.append(repr(x))
    return x
  f(1.0)
  assert seen[0].startswith("Traced<ShapedArray(float32[], weak_type=True)>with<")


def test_device_array_repr():
  assert repr(from_numpy(np.array([1., 2.], np.float32))) == \
      "DeviceArray([1., 2.], dtype=float32)"
  assert repr(lax.add(1, 2)) == "DeviceArray(3, dtype=int32)"
  x = from_numpy(np.zeros((3, 3), np.float32))
  assert "\n" in repr(x) and repr(x).startswith("DeviceArray([[0., 0., 0.],")


def test_array_is_immutable():
  x = from_numpy(np.zeros(3, np.float32))
  with pytest.raises(TypeError, match="JAX arrays are immutable"):
    x[0] = 1.0


def test_array_conversions():
  x = from_numpy(np.array(2.5, np.float32))
  assert float(x) == 2.5 and int(x) == 2 and bool(x)
  assert x.item() == 2.5 and x.tolist() == 2.5
  y = from_numpy(np.array([1, 2], np.int32))
  assert np.asarray(y).tolist() == [1, 2] and len(y) == 2 and y.block_until_ready() is y
  with pytest.raises(TypeError):
    hash(y)


def test_bfloat16_roundtrip():
  import ml_dtypes
  v = np.array([1.5, -2.25], ml_dtypes.bfloat16)
  x = from_numpy(v)
  assert x.dtype == np.dtype(ml_dtypes.bfloat16)
  np.testing.assert_array_equal(np.asarray(x), v)


# ---- jaxpr printing (the seeds' grammar) ----

def test_print_simple():
  text = str(make_jaxpr(lambda x: lax.add(x, 1))(5))
  assert text == "{ lambda ; a.\n  let b = add a 1\n  in b }"


def test_print_func1_style():
  def f(first, second):
    return lax.add(first, lax.mul(lax.sin(second), 3.0))
  x = np.zeros(8, np.float32)
  text = str(make_jaxpr(f)(x, x))
  assert text == ("{ lambda ; a b.\n"
                  "  let c = sin b\n"
                  "      d = mul c 3.0\n"
                  "      e = add a d\n"
                  "  in e }")


def test_print_constvars_and_multiple_outputs():
  c = from_numpy(np.ones(5, np.float32))
  closed = make_jaxpr(lambda x, y: (lax.add(x, c), y))(np.zeros(5, np.float32), 1.0)
  text = str(closed)
  assert text.startswith("{ lambda a ; b c.")
  assert text.endswith("in (d, c) }")
  assert len(closed.literals) == 1 and len(closed.jaxpr.constvars) == 1


def test_print_xla_call():
  def func12(arg):
    @jit
    def inner(x):
      return lax.add(x, lax.mul(arg, 2.0))
    return lax.add(arg, inner(lax.sub(arg, 2.)))
  text = str(make_jaxpr(func12)(1.))
  assert "xla_call[ backend=None" in text
  assert "call_jaxpr={ lambda ; " in text
  assert "device=None" in text and "name=inner ]" in text


def test_typed_jaxpr_fields():
  closed = make_jaxpr(lambda x, y: lax.mul(x, y))(np.ones(8, np.float32), np.ones(8, np.float32))
  assert [a.shape for a in closed.in_avals] == [(8,), (8,)]
  assert [a.shape for a in closed.out_avals] == [(8,)]
  assert isinstance(closed.jaxpr, ir.Jaxpr) and closed.literals == []
  eqn = closed.jaxpr.eqns[0]
  assert str(eqn.primitive) == "mul" and eqn.params == {}


def test_check_jaxpr_and_eval_jaxpr():
  closed = make_jaxpr(lambda x: lax.sin(lax.mul(x, x)))(np.float32(2.0))
  ir.check_jaxpr(closed.jaxpr)
  out, = ir.eval_jaxpr(closed.jaxpr, closed.consts, np.float32(2.0))
  np.testing.assert_allclose(out, np.sin(4.0), rtol=1e-6)
  bad = ir.Jaxpr([], [], [ir.Var(ShapedArray((), np.float32))], [])
  with pytest.raises(ir.JaxprTypeError):
    ir.check_jaxpr(bad)


def test_dce_drops_unused():
  from tracejax._src.interpreters.staging import dce_jaxpr
  def f(x):
    lax.sin(x)
    return lax.mul(x, 2.0)
  closed = make_jaxpr(f)(1.0)
  assert [str(e.primitive) for e in closed.eqns] == ["mul"]
  j, used = dce_jaxpr(closed.jaxpr, [False])
  assert j.eqns == [] and used == [False]


# ---- user primitives and their missing rules ----

def test_user_primitive_missing_rules():
  p = Primitive("multiply_add")
  with pytest.raises(NotImplementedError, match="Evaluation rule for 'multiply_add' not implemented"):
    p.bind(1.0, 2.0, 3.0)
  p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
  assert p.bind(2.0, 3.0, 4.0) == 10.0
  with pytest.raises(NotImplementedError, match="Abstract evaluation for 'multiply_add'"):
    jit(lambda x: p.bind(x, x, x))(1.0)
  p.def_abstract_eval(lambda x, y, z: ShapedArray(x.shape, x.dtype))
  with pytest.raises(NotImplementedError,
                     match="MLIR translation rule for primitive 'multiply_add' not found"):
    jit(lambda x: p.bind(x, x, x))(np.float32(1.0))


# ---- jit ----

def test_jit_caches_and_retraces():
  calls = []

  @jit
  def f(x):
    calls.append(1)
    return lax.mul(x, 2.0)
  f(4.)
  f(5.)
  assert len(calls) == 1
  f(np.array([5.], np.float32))
  assert len(calls) == 2
  f(np.array([5.], np.int32).astype(np.float32))
  assert len(calls) == 2
  f(np.float32(3.))  # not weakly typed: a new signature
  assert len(calls) == 3


def test_jit_static_argnums():
  def f(x, n):
    for _ in range(n):
      x = lax.mul(x, 2.0)
    return x
  g = jit(f, static_argnums=1)
  assert float(g(1.0, 3)) == 8.0
  assert float(g(1.0, 2)) == 4.0
  h = jit(f, static_argnames="n")
  assert float(h(1.0, n=3)) == 8.0


def test_jit_unhashable_static_arguments():
  # Arrays: compared by identity with a warning, as 2020 JAX did (seed 015 relies on it).
  def f(x, c):
    return lax.add(x, float(c.sum()))
  g = jit(f, static_argnums=(1,))
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = g(1.0, np.array([1., 2.]))
  assert float(out) == 4.0
  assert any("not hashable" in str(x.message) for x in w)
  # Other unhashable values: JAX 0.10.2's error.
  with pytest.raises(ValueError, match="Non-hashable static arguments are not supported. An "
                     "error occurred while trying to hash an object of type <class 'list'>"):
    g(1.0, [1., 2.])


def test_concretization_error_names_static_argnums():
  @jit
  def f(x):
    if lax.add(x, 0.) > 0:  # noqa
      return x
    return x
  def g(x):
    if x > 0:
      return x
    return x
  with pytest.raises(errors.ConcretizationTypeError, match="static_argnums"):
    jit(lambda x: g(x) if bool(x) else x)(1.0)
  assert issubclass(errors.ConcretizationTypeError, TypeError)


def test_jit_bad_argument_type():
  with pytest.raises(TypeError, match="not a valid JAX type"):
    jit(lambda x: x)("hello")


def test_jit_lower_and_compile():
  f = jit(lambda x: lax.add(x, 1.0))
  lowered = f.lower(np.zeros(3, np.float32))
  text = lowered.as_text()
  assert "stablehlo.add" in text and "func.func public @main" in text
  compiled = lowered.compile()
  np.testing.assert_array_equal(compiled(np.zeros(3, np.float32)), [1., 1., 1.])
  with pytest.raises(TypeError, match="compiled for"):
    compiled(np.zeros(4, np.float32))


def test_disable_jit():
  calls = []

  @jit
  def f(x):
    calls.append(1)
    return x
  with config._override("jax_disable_jit", True):
    f(1.0)
    f(1.0)
  assert len(calls) == 2


def test_debug_nans_eager_and_jit():
  from tracejax._src.interpreters import lowering
  log_p = lax.naryop("test_log", [np.inexact], lowering.hlo.log)
  with config._override("jax_debug_nans", True):
    with pytest.raises(FloatingPointError, match="nan"):
      log_p.bind(np.float32(-1.0))
    with pytest.raises(FloatingPointError, match="test_log"):
      jit(lambda x: log_p.bind(x))(np.float32(-1.0))
  assert np.isnan(float(log_p.bind(np.float32(-1.0))))


def test_donation_deletes_input():
  f = jit(lambda x: lax.add(x, 1.0), donate_argnums=0)
  x = from_numpy(np.zeros(1000, np.float32))
  y = f(x)
  np.testing.assert_array_equal(np.asarray(y)[:3], [1., 1., 1.])


# ---- persistent compilation cache ----

def test_persistent_cache_survives_corrupt_entries(tmp_path):
  code = ("import numpy as np\n"
          "from tracejax._src.jit import jit\n"
          "from tracejax._src.lax import elementwise as lax\n"
          "print(float(jit(lambda x: lax.mul(x, 3.0))(np.float32(2.0))))\n")
  env = dict(os.environ, TRACEJAX_CACHE_DIR=str(tmp_path), TRACEJAX_COMPILATION_CACHE="1")
  run = lambda: subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True, timeout=120)
  r = run()
  assert r.returncode == 0 and r.stdout.strip() == "6.0", r.stderr
  entries = list(tmp_path.rglob("*.xla"))
  assert entries
  for e in entries:
    e.write_bytes(b"garbage")
  r = run()
  assert r.returncode == 0 and r.stdout.strip() == "6.0", r.stderr
  assert all(e.read_bytes() != b"garbage" for e in tmp_path.rglob("*.xla"))
  # several processes at once share one cache directory without errors
  procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True) for _ in range(3)]
  for p in procs:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and out.strip() == "6.0", err
