"""Today's smaller transformations: custom_batching.custom_vmap / sequential_vmap,
named_call / named_scope, linear_transpose, closure_convert,
ensure_compile_time_eval and checking_leaks."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import custom_batching, lax
from tracejax._src.api_extra import current_name_stack
from tracejax._src.config import config
from tracejax._src.test_util import check_grads


# =============================================================================
# custom_vmap
# =============================================================================

def _make_custom():
  calls = []

  @custom_batching.custom_vmap
  def f(x, y):
    return jnp.sin(x) + y

  @f.def_vmap
  def rule(axis_size, in_batched, xs, ys):
    calls.append((axis_size, in_batched))
    return jnp.sin(xs) + 2. * ys, True   # deliberately not f's batching: visible in tests
  return f, calls


def test_custom_vmap_unbatched_jit_and_rule():
  f, calls = _make_custom()
  x, y = np.float32(0.3), np.float32(2.)
  np.testing.assert_allclose(f(x, y), np.sin(x) + y, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(f)(x, y), np.sin(x) + y, rtol=1e-6)
  xs, ys = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
  out = jax.vmap(f)(xs, ys)
  np.testing.assert_allclose(out, np.sin(xs) + 2. * ys, rtol=1e-6)
  assert calls[-1] == (3, [True, True])
  out = jax.jit(jax.vmap(f, in_axes=(0, None)))(xs, y)
  np.testing.assert_allclose(out, np.sin(xs) + 2. * y, rtol=1e-6)
  assert calls[-1] == (3, [True, False])
  # vmap with the batch axis elsewhere: the rule sees it first; compare with a loop.
  xm = np.arange(6, dtype=np.float32).reshape(2, 3)
  out = jax.vmap(f, in_axes=(1, None), out_axes=1)(xm, y)
  loop = np.stack([np.sin(xm[:, i]) + 2. * y for i in range(3)], axis=1)
  np.testing.assert_allclose(out, loop, rtol=1e-6)
  assert "custom_vmap_call" in str(jax.make_jaxpr(f)(x, y))


def test_custom_vmap_differentiation():
  f, _ = _make_custom()
  np.testing.assert_allclose(jax.grad(f)(np.float32(0.3), 2.), np.cos(0.3), rtol=1e-6)
  check_grads(lambda x: f(x, 2.), (np.float32(0.4),), order=2, modes=("fwd", "rev"))
  # grad of vmap uses the rule (d/dx sin); vmap of grad differentiates the function
  g = jax.grad(lambda xs: jnp.sum(jax.vmap(f)(xs, xs)))(jnp.arange(3.))
  np.testing.assert_allclose(g, np.cos(np.arange(3.)) + 2., rtol=1e-6)


def test_custom_vmap_pytrees_and_errors():
  @custom_batching.custom_vmap
  def g(d):
    return {"a": d["x"] * 2., "b": d["x"]}

  g.def_vmap(lambda n, b, d: ({"a": d["x"] * 2., "b": d["x"]}, {"a": True, "b": True}))
  out = jax.vmap(g)({"x": jnp.arange(3.)})
  np.testing.assert_allclose(out["a"], 2. * np.arange(3.))

  g.def_vmap(lambda n, b, d: ({"a": d["x"], "b": d["x"]}, True))
  with pytest.raises(ValueError, match="output batching specification"):
    jax.vmap(g)({"x": jnp.arange(3.)})
  g.def_vmap(lambda n, b, d: ({"a": d["x"][0], "b": d["x"]}, {"a": True, "b": True}))
  with pytest.raises(ValueError, match=r"expected \(3,\)"):
    jax.vmap(g)({"x": jnp.arange(3.)})
  h = custom_batching.custom_vmap(lambda x: x)
  with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap"):
    jax.vmap(h)(jnp.arange(3.))
  with pytest.raises(TypeError):
    custom_batching.custom_vmap(3)


def test_sequential_vmap_matches_loop():
  calls = []

  def body(x, y):
    calls.append(1)
    return jnp.sum(x) * y

  sv = custom_batching.sequential_vmap(body)
  xs = np.arange(6, dtype=np.float32).reshape(3, 2)
  out = jax.vmap(sv, in_axes=(0, None))(xs, np.float32(2.))
  np.testing.assert_allclose(out, [np.sum(r) * 2. for r in xs], rtol=1e-6)
  assert "scan" in str(jax.make_jaxpr(jax.vmap(sv, in_axes=(0, None)))(xs, 2.))


# =============================================================================
# named_call / named_scope
# =============================================================================

def test_named_scope_nests_and_validates():
  assert current_name_stack() == ""
  with jax.named_scope("outer"):
    with jax.named_scope("inner"):
      assert current_name_stack() == "outer/inner"
      y = jnp.sin(1.)
    assert current_name_stack() == "outer"
  assert current_name_stack() == ""
  np.testing.assert_allclose(y, np.sin(1.), rtol=1e-6)
  with pytest.raises(TypeError, match="named_scope name argument must be a string."):
    with jax.named_scope(3):
      pass
  with pytest.raises(RuntimeError):   # the stack unwinds on errors
    with jax.named_scope("boom"):
      raise RuntimeError
  assert current_name_stack() == ""


def test_named_call():
  seen = []

  def foo(x):
    seen.append(current_name_stack())
    return jnp.sin(x) * 2.

  nf = jax.named_call(foo, name="bar")
  assert nf.__name__ == "foo"
  np.testing.assert_allclose(jax.jit(nf)(0.5), 2 * np.sin(0.5), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(nf)(jnp.arange(3.)), 2 * np.sin(np.arange(3.)),
                             rtol=1e-6)
  check_grads(nf, (0.5,), order=2, modes=("fwd", "rev"))
  assert seen[0] == "bar"
  jax.named_call(foo)(1.)
  assert seen[-1] == "foo"
  # As in JAX 0.10.2 the name leaves no trace in the jaxpr.
  assert str(jax.make_jaxpr(nf)(1.)) == str(jax.make_jaxpr(foo)(1.))


# =============================================================================
# linear_transpose
# =============================================================================

def test_linear_transpose_matches_matrix_transpose():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  f = lambda x: jnp.dot(a, x)
  ft = jax.linear_transpose(f, np.zeros(3, np.float32))
  ct = np.array([1., -2.], np.float32)
  (res,) = ft(ct)
  np.testing.assert_allclose(res, a.T @ ct, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(ft)(ct)[0], a.T @ ct, rtol=1e-6)
  cts = np.array([[1., 0.], [0., 1.]], np.float32)
  np.testing.assert_allclose(jax.vmap(ft)(cts)[0], np.stack([a.T @ c for c in cts]),
                             rtol=1e-6)


def test_linear_transpose_pytrees_and_ignored_offsets():
  f = lambda x, y: (2. * x + y.sum(), -x)
  ft = jax.linear_transpose(f, 1., jnp.ones(3))
  cx, cy = ft((1., 2.))
  assert float(cx) == 0.0
  np.testing.assert_allclose(cy, np.ones(3))
  assert float(jax.linear_transpose(lambda x: x + 1., 1.)(1.)[0]) == 1.0
  sds = jax.ShapeDtypeStruct((2,), np.float32)
  np.testing.assert_allclose(jax.linear_transpose(lambda x: 3. * x, sds)(jnp.ones(2))[0],
                             [3., 3.])
  c = jax.linear_transpose(lambda x: 3j * x, 1j)(1j)[0]
  assert np.allclose(complex(c), -3)


def test_linear_transpose_errors():
  with pytest.raises(TypeError, match="linear function"):
    jax.linear_transpose(lambda x: x * x, 1.)
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'sin' not"):
    jax.linear_transpose(jnp.sin, 1.)
  with pytest.raises(TypeError, match="first argument must be callable"):
    jax.linear_transpose(3, 1.)
  with pytest.raises(TypeError, match="linear_transpose only supports"):
    jax.linear_transpose(lambda x, y: x, 1., 2)
  ft = jax.linear_transpose(lambda x: x, 1.)
  with pytest.raises(TypeError, match="cotangent type does not match function output"):
    ft(jnp.ones(2))


# =============================================================================
# closure_convert
# =============================================================================

def test_closure_convert_hoists_tracers():
  cf, consts = jax.closure_convert(lambda x: x * jnp.ones(2), 1.)
  assert consts == []
  np.testing.assert_allclose(cf(3.), [3., 3.])

  hoisted = []

  def outer(a):
    cf, consts = jax.closure_convert(lambda x: jnp.sin(x * a), 1.)
    hoisted.append(len(consts))  # one when `a` is traced, none when it is concrete
    return cf(2., *consts)

  np.testing.assert_allclose(jax.jit(outer)(0.5), np.sin(1.0), rtol=1e-6)
  assert hoisted == [1]
  np.testing.assert_allclose(outer(0.5), np.sin(1.0), rtol=1e-6)
  assert hoisted == [1, 0]
  np.testing.assert_allclose(jax.grad(outer)(0.5), 2 * np.cos(1.0), rtol=1e-5)
  check_grads(outer, (0.3,), order=2, modes=("fwd", "rev"))
  np.testing.assert_allclose(jax.vmap(outer)(jnp.arange(3.)), np.sin(2. * np.arange(3.)),
                             rtol=1e-6)
  with pytest.raises(TypeError, match="first argument must be callable"):
    jax.closure_convert(3, 1.)


# =============================================================================
# ensure_compile_time_eval
# =============================================================================

def test_ensure_compile_time_eval():
  seen = []

  @jax.jit
  def f(x):
    with jax.ensure_compile_time_eval():
      y = jnp.arange(3.) + 1
      seen.append(isinstance(y, jax.core.Tracer))
      if y[0] > 0:          # concrete: Python control flow works
        y = y * 2
      z = x * 2             # still traced: it involves the argument
    return z + y

  np.testing.assert_allclose(f(1.), 2. + 2 * (np.arange(3.) + 1))
  assert seen == [False]

  def g(x):
    with jax.ensure_compile_time_eval():
      c = jnp.cos(jnp.float32(0.5))   # computed while tracing: a constant of the jaxpr
    return jnp.sin(x) * c

  text = str(jax.make_jaxpr(g)(1.))
  assert "cos" not in text and "sin" in text
  np.testing.assert_allclose(jax.jit(g)(1.), np.sin(1.) * np.cos(.5), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(g)(1.), np.cos(1.) * np.cos(.5), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(g)(jnp.arange(2.)), np.sin(np.arange(2.)) * np.cos(.5),
                             rtol=1e-6)
  with jax.ensure_compile_time_eval():  # eagerly: nothing changes
    np.testing.assert_allclose(jnp.sin(1.), np.sin(1.), rtol=1e-6)


# =============================================================================
# checking_leaks
# =============================================================================

def test_checking_leaks():
  assert config.jax_check_tracer_leaks is False
  with jax.checking_leaks():
    assert config.jax_check_tracer_leaks is True
    np.testing.assert_allclose(jax.jit(lambda x: x + 1)(1.), 2.)
    jax.vmap(jnp.sin)(jnp.ones(2))
  assert config.jax_check_tracer_leaks is False

  leaked = []

  def lk(x):
    leaked.append(x)
    return x

  with pytest.raises(Exception, match="Leaked trace DynamicJaxprTrace. Leaked tracer"):
    with jax.checking_leaks():
      jax.jit(lk)(1.)
  leaked.clear()
  with pytest.raises(Exception, match="Leaked trace BatchTrace"):
    with jax.checking_leaks():
      jax.vmap(lk)(jnp.ones(2))
  leaked.clear()
  assert config.jax_check_tracer_leaks is False


def test_check_trace_for_leaks_helper():
  from tracejax._src.api_extra import check_trace_for_leaks
  from tracejax._src.core.avals import ShapedArray
  from tracejax._src.core.trace import eval_trace, set_current_trace
  from tracejax._src.interpreters.staging import DynamicJaxprTrace
  leaked = []
  jax.jit(lambda x: (leaked.append(x * 2), x)[1])(1.)
  with pytest.raises(Exception, match="Leaked trace DynamicJaxprTrace"):
    check_trace_for_leaks(leaked[0]._trace)
  leaked.clear()
  t = DynamicJaxprTrace(eval_trace)
  a = t.new_arg(ShapedArray((), np.float32))
  with set_current_trace(t):
    b = jnp.sin(a) * 2
  t.to_jaxpr([b])
  del a, b
  check_trace_for_leaks(t)  # nothing refers to its tracers any more: no error
