"""The AOT stages (`jit(f).trace/lower/compile`, `jax.stages`) and jit's compile-cache
controls (`log_compiles`, `jax_explain_cache_misses`, `clear_caches`, `live_arrays`).

Expected texts and numbers were checked against JAX 0.10.2 on the same cases
(cost figures are hand-derived: a 3x4 @ 4x2 matmul is 48 flops, the add 6, the
sine 12 transcendentals).
"""
import logging

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import stages
from tracejax._src.config import config
from tracejax._src.core.ir import ClosedJaxpr


def _f(x, y):
  return jnp.sin(x) @ y + 1.0


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
Y = np.linspace(0, 2, 8, dtype=np.float32).reshape(4, 2)


def _expected():
  return np.sin(X) @ Y + 1.0


def test_public_names():
  for n in ("Wrapped", "Traced", "Lowered", "Compiled", "ArgInfo", "CompilerOptions"):
    assert hasattr(stages, n)
  assert jax.stages is stages
  assert isinstance(jax.jit(_f), stages.Wrapped)
  assert isinstance(jax.jit(_f, static_argnums=1), stages.Wrapped)
  for n in ("log_compiles", "explain_cache_misses", "clear_caches", "live_arrays"):
    assert callable(getattr(jax, n))


def test_traced():
  t = jax.jit(_f).trace(X, Y)
  assert isinstance(t, stages.Traced)
  assert isinstance(t.jaxpr, ClosedJaxpr)
  text = str(t.jaxpr)
  assert "sin" in text and "dot_general" in text and "add" in text
  assert t.fun_name == "_f"
  assert t.out_info.shape == (3, 2) and t.out_info.dtype == np.float32
  args, kwargs = t.args_info
  assert kwargs == {} and len(args) == 2
  assert args[0].shape == (3, 4) and args[0].dtype == np.float32 and not args[0].donated
  assert repr(args[1]) == "ArgInfo(_aval=ShapedArray(float32[4,2]), donated=False)"
  (a0, a1), _ = t.in_avals
  assert (a0.shape, a1.shape) == ((3, 4), (4, 2))
  np.testing.assert_allclose(t.jaxpr(X, Y)[0], _expected(), rtol=1e-6)


def test_traced_closure_constants():
  w = np.arange(3.0, dtype=np.float32)
  t = jax.jit(lambda a: a * w).trace(jnp.ones(3))
  assert len(t.jaxpr.consts) == 1
  np.testing.assert_array_equal(t.lower().compile()(jnp.ones(3)), w)


def test_lowered_text_and_ir():
  lo = jax.jit(_f).lower(X, Y)
  assert isinstance(lo, stages.Lowered)
  text = lo.as_text()
  assert text == lo.as_text("stablehlo")
  assert "module @jit__f" in text and "func.func public @main" in text
  for op in ("stablehlo.sine", "stablehlo.dot_general", "stablehlo.add"):
    assert op in text
  hlo = lo.as_text(dialect="hlo")
  assert hlo.startswith("HloModule jit__f")
  assert " sine(" in hlo and " dot(" in hlo and " add(" in hlo
  assert "func.func" in str(lo.compiler_ir())
  assert "HloModule" in lo.compiler_ir("hlo").as_hlo_text()
  with pytest.raises(ValueError, match="unknown dialect"):
    lo.as_text(dialect="llvm")
  with pytest.raises(ValueError, match="unknown dialect"):
    lo.compiler_ir("llvm")
  assert lo.out_info.shape == (3, 2)
  assert lo.in_tree == jax.tree_util.tree_structure(((X, Y), {}))
  assert lo.out_tree == jax.tree_util.tree_structure(X)


def test_lowered_cost_analysis():
  cost = jax.jit(_f).lower(X, Y).cost_analysis()
  assert isinstance(cost, dict)
  assert cost["flops"] == 2 * 3 * 4 * 2 + 3 * 2
  assert cost["transcendentals"] == 12


def test_compiled():
  jf = jax.jit(_f)
  c = jf.lower(X, Y).compile()
  assert isinstance(c, stages.Compiled)
  out = c(X, Y)
  np.testing.assert_array_equal(out, jf(X, Y))
  np.testing.assert_allclose(out, _expected(), rtol=1e-6)
  hlo = c.as_text()
  assert "HloModule jit__f" in hlo and "is_scheduled=true" in hlo and "ENTRY" in hlo
  cost = c.cost_analysis()
  assert isinstance(cost, dict) and cost["flops"] > 0
  mem = c.memory_analysis()
  for field in ("temp_size_in_bytes", "argument_size_in_bytes", "output_size_in_bytes",
                "alias_size_in_bytes", "generated_code_size_in_bytes"):
    assert isinstance(getattr(mem, field), int)
  assert mem.argument_size_in_bytes == (12 + 8) * 4
  assert mem.output_size_in_bytes == 6 * 4
  assert c.runtime_executable() is not None
  assert c.in_tree == jf.lower(X, Y).in_tree
  assert c.out_info.shape == (3, 2)
  assert c.args_info[0][0].shape == (3, 4)


def test_compiled_argument_errors():
  c = jax.jit(_f).lower(X, Y).compile()
  with pytest.raises(TypeError, match=r"Argument 'x' compiled with float32\[3,4\] and "
                                      r"called with float32\[3,5\]"):
    c(np.zeros((3, 5), np.float32), Y)
  with pytest.raises(TypeError, match=r"Argument 'y' compiled with float32\[4,2\] and "
                                      r"called with int32\[4,2\]"):
    c(X, Y.astype(np.int32))
  with pytest.raises(TypeError, match="input pytree"):
    c(X)
  with pytest.raises(TypeError, match="Argument 'x'.*not a valid JAX type"):
    c("a string", Y)


def test_compiled_weak_types():
  c = jax.jit(lambda a: a * 2).lower(2.0).compile()
  assert c.args_info[0][0]._aval.weak_type
  assert float(c(3.0)) == 6.0
  assert float(c(jnp.float32(3.0))) == 6.0
  with pytest.raises(TypeError, match=r"Argument 'a' compiled with float32\[\] and called "
                                      r"with int32\[\]"):
    c(3)


def test_static_arguments_through_stages():
  def g(x, n, *, k=1):
    return x * n + k
  jg = jax.jit(g, static_argnums=1, static_argnames="k")
  lo = jg.lower(jnp.ones(3), 2, k=5)
  assert len(lo.args_info[0]) == 1 and lo.args_info[1] == {}
  assert "mul" in str(jg.trace(jnp.ones(3), 2, k=5).jaxpr)
  c = lo.compile()
  np.testing.assert_array_equal(c(jnp.arange(3.0)), np.arange(3.0) * 2 + 5)
  with pytest.raises(TypeError, match="input pytree"):
    c(jnp.ones(3), 2, k=5)  # static values were fixed when tracing


def test_keyword_arguments_and_shape_dtype_struct():
  f = jax.jit(lambda a, b=1.0: a * b)
  lo = f.lower(jax.ShapeDtypeStruct((2,), np.float32), b=jax.ShapeDtypeStruct((), np.float32))
  assert lo.args_info[1]["b"].shape == ()
  c = lo.compile()
  np.testing.assert_array_equal(c(jnp.ones(2), b=np.float32(3)), [3.0, 3.0])
  with pytest.raises(TypeError, match="Argument 'b'"):
    c(jnp.ones(2), b=np.ones(2, np.float32))


def test_donation_through_stages():
  jd = jax.jit(lambda a, b: a + b, donate_argnums=0)
  lo = jd.lower(jnp.ones(3), jnp.ones(3))
  (d0, d1), _ = lo.args_info
  assert d0.donated and not d1.donated
  assert lo.donate_argnums == (0,)
  assert "jax.buffer_donor = true" in lo.as_text()
  c = lo.compile()
  a = jnp.ones(3)
  b = jnp.arange(3.0)
  np.testing.assert_array_equal(c(a, b), [1.0, 2.0, 3.0])
  assert a.is_deleted() and not b.is_deleted()
  # NumPy arguments are copied to a private buffer, which is what gets donated.
  np.testing.assert_array_equal(c(np.ones(3, np.float32), b), [1.0, 2.0, 3.0])


def test_compiler_options():
  lo = jax.jit(lambda a: a * 2).lower(jnp.ones(3))
  c = lo.compile(compiler_options={"xla_cpu_enable_fast_math": True})
  np.testing.assert_array_equal(c(jnp.ones(3)), [2.0, 2.0, 2.0])
  with pytest.raises(Exception, match="No such compile option"):
    lo.compile({"no_such_xla_option": 1})
  with pytest.raises(TypeError, match="compiler_options"):
    lo.compile(compiler_options=3)


def test_grad_through_stages():
  def loss(w):
    return jnp.sum(jnp.tanh(w) ** 2)
  w = np.linspace(-1, 1, 5).astype(np.float32)
  c = jax.jit(jax.grad(loss)).lower(w).compile()
  np.testing.assert_allclose(c(w), 2 * np.tanh(w) / np.cosh(w) ** 2, rtol=1e-5)
  np.testing.assert_allclose(c(w), jax.grad(loss)(w), rtol=1e-6)


def test_stages_under_x64(x64):
  c = jax.jit(lambda a: a * 2).lower(np.ones(2)).compile()
  out = c(np.ones(2))
  assert out.dtype == np.float64
  with pytest.raises(TypeError, match=r"compiled with float64\[2\] and called with "
                                      r"float32\[2\]"):
    c(np.ones(2, np.float32))


def test_trace_and_lower_share_the_tracing_cache():
  n = []

  def f(x):
    n.append(1)
    return x * 3.0
  jf = jax.jit(f)
  jf(jnp.ones(2))
  jf.trace(jnp.ones(2))
  jf.lower(jnp.ones(2)).compile()
  assert len(n) == 1
  jf.lower(jnp.ones(4))
  jf(jnp.ones(4))  # traced by lower: the call does not trace again
  assert len(n) == 2
  assert jf.eval_shape(jnp.ones(4)).shape == (4,)
  assert len(n) == 2


# ---- logging and cache controls ----

def _messages(caplog):
  return [(r.name, r.levelno, r.getMessage()) for r in caplog.records]


def test_log_compiles(caplog):
  def logged_fn_a(x):
    return jnp.cos(x) * 7.0
  caplog.set_level(logging.DEBUG, logger="jax")
  with jax.log_compiles():
    assert config.jax_log_compiles
    jax.jit(logged_fn_a)(np.ones(7, np.float32))
  assert not config.jax_log_compiles
  msgs = _messages(caplog)
  warn = [m for _, lvl, m in msgs if lvl == logging.WARNING]
  assert any(m.startswith("Finished tracing logged_fn_a for jit in ") and m.endswith(" sec")
             for m in warn)
  assert ("Compiling jit(logged_fn_a) with global shapes and types "
          "(ShapedArray(float32[7]),). Argument mapping: (UnspecifiedValue,).") in warn
  assert any(m.startswith("Finished jaxpr to MLIR module conversion jit(logged_fn_a) in ")
             for m in warn)
  assert any(m.startswith("Finished XLA compilation of jit(logged_fn_a) in ") for m in warn)
  assert all(name.startswith("jax.") for name, _, _ in msgs)
  # a cached call logs nothing; with the flag off the messages are DEBUG
  caplog.clear()
  with jax.log_compiles():
    jax.jit(logged_fn_a)(np.ones(7, np.float32))
  assert not [m for m in _messages(caplog) if "logged_fn_a" in m[2]]
  jax.jit(logged_fn_a)(np.ones(8, np.float32))
  mine = [m for m in _messages(caplog) if "logged_fn_a" in m[2]]
  assert mine and all(lvl == logging.DEBUG for _, lvl, _ in mine)


def test_log_compiles_aot(caplog):
  def logged_fn_b(x):
    return x - 1.5
  caplog.set_level(logging.WARNING, logger="jax")
  config.update("jax_log_compiles", True)
  try:
    lo = jax.jit(logged_fn_b).lower(np.ones(9, np.float32))
    assert any("Compiling jit(logged_fn_b)" in m for _, _, m in _messages(caplog))
    lo.compile()
    assert any(m.startswith("Finished XLA compilation of jit(logged_fn_b)")
               for _, _, m in _messages(caplog))
  finally:
    config.update("jax_log_compiles", False)


def test_explain_cache_misses(caplog):
  def explained(x, y):
    return x * y
  caplog.set_level(logging.WARNING, logger="jax")
  f = jax.jit(explained)
  with jax.explain_cache_misses():
    f(jnp.ones(3), 1.0)
    f(jnp.ones(4), 1.0)
    f(jnp.ones(4), 1.0)   # cached: no message
    f(jnp.ones(4), jnp.float32(1.0))
  msgs = [m for name, _, m in _messages(caplog)
          if name == "jax._src.interpreters.partial_eval"]
  assert len(msgs) == 3
  assert all(m.startswith("TRACING CACHE MISS at ") and "test_stages.py" in m.split("\n")[0]
             for m in msgs)
  assert "never seen function:\n    explained id=" in msgs[0]
  assert "for explained defined at" in msgs[1]
  assert "different input types:\n  * at x, now f32[4] and before f32[3]" in msgs[1]
  assert "* at y, now f32[]{weak_type=False} and before f32[]{weak_type=True}" in msgs[2]
  caplog.clear()
  f(jnp.ones(5), 1.0)   # flag off again
  assert not _messages(caplog)


def test_explain_cache_misses_static_and_flags(caplog):
  def explained2(x, n):
    return x * n
  caplog.set_level(logging.WARNING, logger="jax")
  g = jax.jit(explained2, static_argnums=1)
  with jax.explain_cache_misses():
    g(1.0, 2)
    g(1.0, 3)
    with jax.numpy_rank_promotion("raise"):
      g(1.0, 3)
  msgs = [m for _, _, m in _messages(caplog)]
  assert "different static arguments:\n  * now (3,) and before (2,)" in msgs[1]
  assert "* jax_numpy_rank_promotion differs: now raise and before allow" in msgs[2]


def test_clear_caches_forces_retrace():
  n = []

  def f(x):
    n.append(1)
    return x + 1.0
  jf = jax.jit(f)
  jf(1.0)
  jf(1.0)
  assert len(n) == 1
  jax.clear_caches()
  assert float(jf(1.0)) == 2.0   # the C++ fast path's cache is cleared too
  assert len(n) == 2
  jf(1.0)
  assert len(n) == 2
  js = jax.jit(lambda x, k: (n.append(1), x * k)[1], static_argnums=1)
  js(1.0, 2)
  jax.clear_caches()
  assert float(js(1.0, 2)) == 2.0
  assert len(n) == 4


def test_live_arrays():
  x = jnp.arange(5.0) + 1.0
  live = jax.live_arrays()
  assert isinstance(live, list)
  assert any(a is x for a in live)
  assert all(isinstance(a, jax.Array) for a in live)
  x.delete()
  assert not any(a is x for a in jax.live_arrays())


def test_traced_is_callable_and_device_assignment():
  t = jax.jit(_f).trace(X, Y)
  np.testing.assert_allclose(t(X, Y), _expected(), rtol=1e-6)
  c = t.lower().compile(device_assignment=jax.devices()[:1])
  np.testing.assert_allclose(c(X, Y), _expected(), rtol=1e-6)
  with pytest.raises(ValueError, match="exactly one device"):
    t.lower().compile(device_assignment=())


def test_donated_python_scalar_does_not_break_later_calls():
  # Donating a Python scalar must not delete a buffer shared with other calls.
  f = jax.jit(lambda a, b: a + b, donate_argnums=0)
  assert float(f(1.25, 2.0)) == 3.25
  assert float(f(1.25, 2.0)) == 3.25
  assert float(jnp.ones(()) * 1.25) == 1.25
  c = jax.jit(lambda a, b: a + b, donate_argnums=0).lower(1.25, 2.0).compile()
  assert float(c(1.25, 2.0)) == 3.25
  assert float(c(1.25, 2.0)) == 3.25
