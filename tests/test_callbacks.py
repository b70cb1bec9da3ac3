"""Host callbacks: jax.pure_callback, jax.experimental.io_callback, jax.debug.

Results are compared with NumPy; printed output is read with capsys after the
computation has finished (block on a result, or jax.effects_barrier())."""
import io
import sys

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.core import ir
from tracejax._src.test_util import check_grads
from tracejax.experimental import io_callback


def sds(x):
  return jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x))


X = np.array([0.5, 1.0, 2.0], np.float32)


# ---- pure_callback ----

def test_pure_callback_eager_and_jit():
  seen = []

  def cb(x):
    seen.append(type(x))
    return np.sin(np.asarray(x))

  f = lambda x: jax.pure_callback(cb, sds(x), x) * 2.0
  np.testing.assert_allclose(f(X), np.sin(X) * 2, rtol=1e-6)
  jf = jax.jit(f)
  for _ in range(3):  # later calls must still reach the callback (no fast path skip)
    np.testing.assert_allclose(jf(X), np.sin(X) * 2, rtol=1e-6)
  assert len(seen) == 4
  assert all(t is jax.DeviceArray for t in seen)  # callbacks get Arrays, as in JAX 0.10.2


def test_pure_callback_pytrees_kwargs_and_no_args():
  def cb(a, b, *, scale):
    a, b = np.asarray(a), np.asarray(b["w"])
    return {"sum": (a + b) * scale, "n": np.int32(a.size)}

  out_spec = {"sum": jax.ShapeDtypeStruct((3,), np.float32),
              "n": jax.ShapeDtypeStruct((), np.int32)}
  f = jax.jit(lambda a, b: jax.pure_callback(cb, out_spec, a, {"w": b}, scale=2.0))
  out = f(X, X + 1)
  np.testing.assert_allclose(out["sum"], (2 * X + 1) * 2)
  assert out["n"].dtype == np.int32 and int(out["n"]) == 3
  g = jax.jit(lambda: jax.pure_callback(lambda: np.ones((2,), np.float32),
                                        jax.ShapeDtypeStruct((2,), np.float32)))
  np.testing.assert_array_equal(g(), np.ones(2))
  # float64 from NumPy is narrowed to the canonical float32 when x64 is off, as in JAX
  h = jax.jit(lambda x: jax.pure_callback(lambda x: np.asarray(x, np.float64) + 1, sds(x), x))
  np.testing.assert_allclose(h(X), X + 1)


def test_pure_callback_result_checks():
  spec = jax.ShapeDtypeStruct((3,), np.float32)
  wrong_shape = lambda x: np.zeros(4, np.float32)
  wrong_dtype = lambda x: np.arange(3, dtype=np.int32)
  two = lambda x: (np.zeros(3, np.float32), np.zeros(3, np.float32))
  for fn, msg in [(wrong_shape, r"shape for return value #0: Expected: \(3,\), Actual: \(4,\)"),
                  (wrong_dtype, "dtype for return value #0: Expected: float32, Actual: int32"),
                  (two, "number of outputs from callback. Expected: 1, Actual: 2")]:
    with pytest.raises(RuntimeError, match=msg):
      jax.pure_callback(fn, spec, X)
    with pytest.raises(RuntimeError, match=msg):
      np.asarray(jax.jit(lambda x: jax.pure_callback(fn, spec, x))(X))
  with pytest.raises(TypeError, match="result_shape_dtypes.*leaf 0"):
    jax.pure_callback(np.sin, (3,), X)
  with pytest.raises(ValueError, match="64-bit"):
    jax.pure_callback(np.sin, jax.ShapeDtypeStruct((3,), np.float64), X)
  with pytest.raises(TypeError, match="callable"):
    jax.pure_callback(3, spec, X)
  with pytest.raises(ValueError, match="vmap_method"):
    jax.pure_callback(np.sin, spec, X, vmap_method="bogus")


def test_pure_callback_error_in_callback():
  def bad(x):
    raise ZeroDivisionError("no way")
  with pytest.raises(RuntimeError, match="no way"):
    np.asarray(jax.jit(lambda x: jax.pure_callback(bad, sds(x), x))(X))


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_pure_callback_vmap_methods(method):
  shapes = []

  def cb(x, y):
    x, y = np.asarray(x), np.asarray(y)
    shapes.append((x.shape, y.shape))
    return np.sin(x) + y

  def f(x, y):
    return jax.pure_callback(cb, jax.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape),
                                                      x.dtype), x, y, vmap_method=method)

  xs = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
  y = np.array([1., 2., 3.], np.float32)
  expected = np.stack([np.sin(r) + y for r in xs])
  out = jax.jit(jax.vmap(f, in_axes=(0, None)))(xs, y)
  np.testing.assert_allclose(out, expected, rtol=1e-6)
  # batched along axis 1 of the input, result batched at out_axes=1
  out = jax.vmap(f, in_axes=(1, None), out_axes=1)(xs.T, y)
  np.testing.assert_allclose(out, expected.T, rtol=1e-6)
  want = {"sequential": ((3,), (3,)), "sequential_unrolled": ((3,), (3,)),
          "expand_dims": ((2, 3), (1, 3)), "broadcast_all": ((2, 3), (2, 3)),
          "legacy_vectorized": ((2, 3), (3,))}[method]
  assert shapes[-1] == want
  # nested vmap: a batch of batches
  xss = np.stack([xs, xs + 1])
  out = jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None))(xss, y)
  np.testing.assert_allclose(out, np.sin(xss) + y, rtol=1e-6)


def test_pure_callback_vmap_needs_a_method():
  f = lambda x: jax.pure_callback(np.sin, sds(x), x)
  with pytest.raises(NotImplementedError, match="vmap_method=None"):
    jax.vmap(f)(np.ones((2, 3), np.float32))


def test_pure_callback_has_no_jvp():
  f = lambda x: jax.pure_callback(np.sin, sds(x), x).sum()
  with pytest.raises(ValueError, match="custom_jvp"):
    jax.grad(f)(X)
  with pytest.raises(ValueError, match="custom_jvp"):
    jax.jvp(f, (X,), (X,))


def test_pure_callback_is_dce_d_when_unused():
  calls = []

  def cb(x):
    calls.append(1)
    return x

  f = jax.jit(lambda x: (jax.pure_callback(cb, sds(x), x), x * 2)[1])
  np.testing.assert_allclose(f(X), X * 2)
  assert calls == []
  jaxpr = jax.make_jaxpr(lambda x: (jax.pure_callback(cb, sds(x), x), x)[1])(X)
  assert "pure_callback" not in str(jaxpr)


def _np_callback(fn):
  return lambda x: jax.pure_callback(lambda v: fn(np.asarray(v)), sds(x), x,
                                     vmap_method="expand_dims")


@jax.custom_jvp
def cb_sin(x):
  return _np_callback(np.sin)(x)


@jax.custom_jvp
def cb_cos(x):
  return _np_callback(np.cos)(x)


@cb_sin.defjvp
def _cb_sin_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return cb_sin(x), cb_cos(x) * t


@cb_cos.defjvp
def _cb_cos_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return cb_cos(x), -cb_sin(x) * t


def test_grad_through_custom_jvp(x64):
  x = np.array([0.3, -1.2, 2.0])
  g = jax.jit(jax.grad(lambda x: cb_sin(x).sum()))(x)
  np.testing.assert_allclose(g, np.cos(x), rtol=1e-12)
  np.testing.assert_allclose(jax.vmap(jax.grad(lambda s: cb_sin(s)))(x), np.cos(x))
  check_grads(cb_sin, (x,), order=2, modes=("fwd", "rev"))


# ---- io_callback ----

def test_io_callback_jit_effects_not_dropped():
  log = []

  def record(x):
    log.append(float(np.asarray(x)))
    return np.asarray(x) * 2

  f = jax.jit(lambda x: (io_callback(record, sds(x), x), x + 1)[1])  # result unused
  for v in (1., 2., 3.):
    np.testing.assert_allclose(f(np.float32(v)), v + 1)
  assert log == [1., 2., 3.]
  g = jax.jit(lambda x: io_callback(record, sds(x), x) + 1)
  np.testing.assert_allclose(g(np.float32(4.)), 9.)
  assert log[-1] == 4.
  # inside a nested jit whose output is unused, and inside a loop body
  inner = jax.jit(lambda x: io_callback(record, sds(x), x))
  h = jax.jit(lambda x: (inner(x), x)[1])
  h(np.float32(5.))
  assert log[-1] == 5.
  body = lambda i, c: (io_callback(record, sds(c), c), c + 1)[1]  # result unused
  k = jax.jit(lambda x: lax.fori_loop(0, 3, body, x))
  np.testing.assert_allclose(k(np.float32(10.)), 13.)
  assert log[-3:] == [10., 11., 12.]
  # eagerly too
  np.testing.assert_allclose(io_callback(record, sds(X[0]), X[0]), X[0] * 2)
  assert log[-1] == X[0]
  jaxpr = jax.make_jaxpr(lambda x: (io_callback(record, sds(x), x), x)[1])(X)
  assert "io_callback" in str(jaxpr)


def test_io_callback_ordered():
  log = []

  def rec(tag):
    return lambda x: log.append((tag, float(np.asarray(x))))

  def f(x):
    io_callback(rec("a"), None, x, ordered=True)
    y = lax.fori_loop(0, 2, lambda i, c: (io_callback(rec("loop"), None, c, ordered=True),
                                          c + 1)[1], x)
    io_callback(rec("b"), None, y, ordered=True)
    return y

  jf = jax.jit(f)
  jf(np.float32(0.))
  jf(np.float32(10.))
  assert log == [("a", 0.), ("loop", 0.), ("loop", 1.), ("b", 2.),
                 ("a", 10.), ("loop", 10.), ("loop", 11.), ("b", 12.)]


def test_io_callback_vmap_and_grad():
  log = []

  def cb(x):
    log.append(np.asarray(x).shape)
    return np.asarray(x) ** 2

  f = lambda x: io_callback(cb, sds(x), x)
  np.testing.assert_allclose(jax.jit(jax.vmap(f))(X), X ** 2)
  assert log == [(), (), ()]  # sequential: one call per element
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
    jax.vmap(lambda x: io_callback(cb, sds(x), x, ordered=True))(X)
  with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
    jax.grad(lambda x: io_callback(cb, sds(x), x))(1.)


# ---- jax.debug ----

def test_debug_print_jit_vmap_grad(capsys):
  def f(x):
    jax.debug.print("x = {x} and {}", x * 2, x=x)
    return x * 2

  x = jnp.arange(3.)
  jax.jit(f)(x).block_until_ready()
  assert capsys.readouterr().out == "x = [0. 1. 2.] and [0. 2. 4.]\n"
  jax.vmap(f)(x).block_until_ready()
  assert capsys.readouterr().out == ("x = 0.0 and 0.0\nx = 1.0 and 2.0\n"
                                     "x = 2.0 and 4.0\n")
  jax.grad(lambda x: f(x).sum())(x).block_until_ready()
  assert capsys.readouterr().out == "x = [0. 1. 2.] and [0. 2. 4.]\n"
  jax.jit(jax.grad(lambda x: f(x).sum()))(x).block_until_ready()
  assert capsys.readouterr().out == "x = [0. 1. 2.] and [0. 2. 4.]\n"
  jax.debug.print("eager {:.2f} {s}", jnp.float32(2), s="str")
  assert capsys.readouterr().out == "eager 2.00 str\n"
  with np.printoptions(precision=2):
    jf = jax.jit(lambda x: jax.debug.print("{}", x))
    jf(np.array([1 / 3], np.float32))
  jax.effects_barrier()
  assert capsys.readouterr().out == "[0.33]\n"


def test_debug_print_is_kept_and_ordered(capsys):
  def f(x):
    def body(i, c):
      jax.debug.print("i={} c={}", i, c, ordered=True)
      return c + 1
    jax.debug.print("before", ordered=True)
    r = lax.fori_loop(0, 3, body, x)
    jax.debug.print("after {}", r, ordered=True)
    return x  # nothing depends on the prints
  jaxpr = jax.make_jaxpr(f)(1.)
  ir.check_jaxpr(jaxpr.jaxpr)
  assert str(jaxpr).count("debug_callback") == 3
  jax.jit(f)(1.)
  jax.jit(f)(5.)
  jax.effects_barrier()
  assert capsys.readouterr().out == (
      "before\ni=0 c=1.0\ni=1 c=2.0\ni=2 c=3.0\nafter 4.0\n"
      "before\ni=0 c=5.0\ni=1 c=6.0\ni=2 c=7.0\nafter 8.0\n")
  g = jax.jit(lambda p, x: lax.cond(p, lambda x: jax.debug.print("pos {}", x),
                                    lambda x: jax.debug.print("neg {}", x), x))
  g(True, 1)
  g(False, 2)
  jax.effects_barrier()
  assert capsys.readouterr().out == "pos 1\nneg 2\n"


def test_debug_print_errors_and_two_call_form(capsys):
  with pytest.raises(KeyError, match="y"):
    jax.debug.print("{y}", 1)
  with pytest.raises(IndexError):
    jax.jit(lambda x: jax.debug.print("{} {}", x))(1.)
  with pytest.raises(TypeError, match="fmt must be a str"):
    jax.debug.print(3)
  jax.debug.print(ordered=True)("two {}", 2)
  assert capsys.readouterr().out == "two 2\n"


def test_debug_callback(capsys):
  seen = []
  cb = lambda x, tag, scale=None: seen.append((tag, np.asarray(x).tolist(), scale))
  assert jax.debug.callback(cb, X, "eager", scale=3) is None
  jax.jit(lambda x: jax.debug.callback(cb, x + 1, "jit", scale=None))(X)
  jax.vmap(lambda x: jax.debug.callback(cb, x, "vmap"))(X[:2])
  jax.effects_barrier()
  assert seen == [("eager", X.tolist(), 3), ("jit", (X + 1).tolist(), None),
                  ("vmap", float(X[0]), None), ("vmap", float(X[1]), None)]
  with pytest.raises(TypeError, match="must be callable"):
    jax.debug.callback(3)
  jax.debug.callback(ordered=True)(print, "hi", 1)
  assert capsys.readouterr().out == "hi 1\n"


def test_debug_breakpoint(monkeypatch, capsys):
  def f(x):
    y = jnp.sin(x) * 2
    label = "here"
    jax.debug.breakpoint()
    return y

  monkeypatch.setattr(sys, "stdin", io.StringIO("p y\np label\np y.shape\nw\nbogus_name\nc\n"))
  out = jax.jit(f)(np.float32(1.0))
  jax.effects_barrier()
  np.testing.assert_allclose(out, np.sin(1.0) * 2, rtol=1e-6)
  text = capsys.readouterr().out
  assert "Entering jdb" in text and "in f" not in text.split("\n")[0]
  assert "DeviceArray(1.68294" in text  # the runtime value of y, not a tracer
  assert "'here'" in text and "()" in text
  assert "test_callbacks.py" in text and "f()" in text  # `w` shows the frame
  assert "NameError" in text
  # eager, end of input continues; under vmap, one prompt per element
  monkeypatch.setattr(sys, "stdin", io.StringIO("p y\n"))
  f(np.float32(0.0))
  assert "DeviceArray(0., dtype=float32)" in capsys.readouterr().out
  monkeypatch.setattr(sys, "stdin", io.StringIO("p y\nc\np y\nc\n"))
  jax.vmap(f)(np.array([0.0, 1.0], np.float32))
  jax.effects_barrier()
  assert capsys.readouterr().out.count("Entering jdb") == 2
  monkeypatch.setattr(sys, "stdin", None)
  f(np.float32(0.0))
  assert "no stdin" in capsys.readouterr().out
