"""Semantics today's JAX libraries rely on: `isinstance(x, jax.Array)` for tracers,
loop carries whose weak type changes in the body, grad's output type, named_scope
names in the lowered program, and jax_check_tracer_leaks at the leaking jit/vmap.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.config import config
from tracejax._src.interpreters import lowering


# ---- jax.Array ----

def test_isinstance_array_for_values_and_tracers():
  seen = []

  def f(x):
    seen.append(isinstance(x, jax.Array))
    return x * 2.

  assert isinstance(jnp.ones(3), jax.Array)
  jax.jit(f)(1.)
  jax.grad(f)(1.)
  jax.vmap(f)(jnp.ones(2))
  jax.jvp(f, (1.,), (1.,))
  assert seen == [True] * 4
  assert not isinstance(np.ones(3), jax.Array)
  assert not isinstance(1.0, jax.Array)
  assert issubclass(type(jnp.ones(2)), jax.Array)
  assert type(jnp.ones(2)) is jax.DeviceArray   # the concrete array type


# ---- loop carries with weak types ----

def test_weak_carry_promoted_like_jax():
  # a weak int with a strong int32 body output: same dtype, nothing to do
  out = lax.while_loop(lambda c: c < 5, lambda c: c + jnp.int32(1), 0)
  assert int(out) == 5 and out.dtype == np.int32
  # weak int promoted to the body's float32 (JAX's rule: result_type of the two)
  out = lax.while_loop(lambda c: c < 5, lambda c: c + jnp.float32(1), 0)
  assert float(out) == 5. and out.dtype == np.float32 and not out.weak_type
  c = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + jnp.float32(1), c[1] + 1), (0, 1.))
  assert float(c[0]) == 5. and float(c[1]) == 6.
  assert lax.fori_loop(0, 3, lambda i, c: c + jnp.float16(1), 0.).dtype == np.float16
  assert jax.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + jnp.float16(1), 0.))(3) \
      .dtype == np.float16
  carry, _ = lax.scan(lambda c, x: (c + x, None), 0, jnp.arange(3.))
  assert carry.dtype == np.float32 and float(carry) == 3.
  # the promoted loop still differentiates
  g = jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1))(2.)
  assert float(g) == 12.


def test_genuine_carry_mismatch_errors():
  with pytest.raises(TypeError, match=re.escape(
      "while_loop body function carry input and carry output must have equal types, but "
      "they differ:\n\nThe input carry has type int32[] but the corresponding output carry "
      "component has type float32[], so the dtypes do not match.")):
    lax.while_loop(lambda c: c < 5, lambda c: jnp.float32(1), jnp.int32(0))
  with pytest.raises(TypeError, match="so the shapes do not match"):
    lax.while_loop(lambda c: c < 5, lambda c: jnp.ones(2), 0.)
  with pytest.raises(TypeError, match=re.escape(
      "The input carry component [1] has type int32[] but the corresponding output carry "
      "component has type int16[], so the dtypes do not match.")):
    lax.fori_loop(0, 3, lambda i, c: c.astype(jnp.int16), jnp.int32(0))
  with pytest.raises(TypeError, match="scan body function carry input"):
    lax.scan(lambda c, x: (c.astype(jnp.int16), x), jnp.int32(0), jnp.arange(3))


# ---- grad returns Arrays ----

def test_grad_returns_arrays():
  g = jax.grad(lambda x: x)(2.)
  assert isinstance(g, jax.DeviceArray) and float(g) == 1.
  g = jax.grad(lambda x: 3.)(2.)
  assert isinstance(g, jax.DeviceArray) and float(g) == 0.
  gs = jax.grad(lambda d: d["a"])({"a": np.float32(2.), "b": np.ones(2, np.float32)})
  assert all(isinstance(v, jax.DeviceArray) for v in gs.values())
  np.testing.assert_array_equal(gs["b"], [0., 0.])

  @jax.custom_vjp
  def f(x):
    return x

  f.defvjp(lambda x: (x, None), lambda r, g: (np.float32(5.),))
  g = jax.grad(f)(1.)
  assert isinstance(g, jax.DeviceArray) and float(g) == 5.
  v, g = jax.value_and_grad(lambda x: x * 1.)(np.float64(3.))
  assert isinstance(g, jax.DeviceArray) and g.dtype == np.float32


# ---- named_scope in equations and locations ----

def test_named_scope_in_jaxpr_and_locations():
  def f(x):
    with jax.named_scope("outer"):
      y = jnp.sin(x)
      with jax.named_scope("inner"):
        z = y * 2
    return z + 1

  jaxpr = jax.make_jaxpr(f)(1.).jaxpr
  assert [e.source_info for e in jaxpr.eqns] == ["outer", "outer/inner", None]
  text, _ = lowering.lower_jaxpr(jaxpr, name="jit_f", debug_info=True)
  assert 'loc("jit(f)/outer/sin")' in text
  assert 'loc("jit(f)/outer/inner/mul")' in text
  assert 'loc("jit(f)/add")' in text
  plain, _ = lowering.lower_jaxpr(jaxpr, name="jit_f")
  assert "loc(" not in plain
  assert float(jax.jit(f)(1.)) == pytest.approx(2 * np.sin(1.) + 1, rel=1e-6)


# ---- tracer leaks ----

def test_check_tracer_leaks_at_jit_and_vmap():
  leak = []

  def f(x):
    leak.append(x)
    return x + 1

  old = config.jax_check_tracer_leaks
  try:
    config.update("jax_check_tracer_leaks", True)
    with pytest.raises(Exception, match="Leaked trace DynamicJaxprTrace"):
      jax.jit(f)(1.)
    with pytest.raises(Exception, match="Leaked trace BatchTrace"):
      jax.vmap(f)(jnp.ones(2))
    leak.clear()
    # no false alarms on ordinary programs
    g = lambda x: jnp.sum(jnp.sin(x) ** 2)
    jax.jit(jax.grad(g))(jnp.ones(3))
    jax.vmap(jax.grad(g))(jnp.ones((2, 3)))
    lax.scan(lambda c, x: (c + x, c * x), 0., jnp.arange(3.))
    lax.cond(True, lambda x: x, lambda x: -x, 1.)
  finally:
    config.update("jax_check_tracer_leaks", old)
  jax.jit(f)(2.)          # the flag off: no check
  leak.clear()
  with pytest.raises(Exception, match="Leaked trace"):
    with jax.checking_leaks():
      jax.jit(lambda x: f(x) * 2.)(3.)   # a new function: traced, so checked
  leak.clear()
