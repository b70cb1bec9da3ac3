"""Tests of `jax.experimental.ode.odeint` against analytic solutions and finite differences."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.test_util import check_grads
from tracejax.experimental.ode import odeint


def decay(y, t, k):
  return -k * y


def oscillator(y, t):
  x, v = y
  return (v, -x)


def test_exponential_decay(x64):
  ts = jnp.linspace(0.0, 2.0, 5)
  y0 = jnp.array([1.0, 2.0])
  ys = odeint(decay, y0, ts, 1.5)
  want = np.exp(-1.5 * np.asarray(ts))[:, None] * np.array([1.0, 2.0])
  assert ys.shape == (5, 2)
  np.testing.assert_allclose(ys, want, rtol=1e-7, atol=1e-10)


def test_harmonic_oscillator_pytree_and_dense_output(x64):
  # Irregular output times: values come from the dense output, not from step ends.
  ts = jnp.array([0.0, 0.1, 0.15, 1.3, 3.0, 7.5])
  x, v = odeint(oscillator, (1.0, 0.0), ts, rtol=1e-10, atol=1e-10)
  np.testing.assert_allclose(x, np.cos(ts), atol=1e-8)
  np.testing.assert_allclose(v, -np.sin(ts), atol=1e-8)


def test_time_dependent_float32():
  # dy/dt = t y, y = exp(t^2 / 2); float32 with the default tolerances.
  ts = jnp.linspace(0.0, 1.0, 4)
  ys = odeint(lambda y, t: t * y, 1.0, ts)
  assert ys.dtype == np.float32
  np.testing.assert_allclose(ys, np.exp(np.asarray(ts) ** 2 / 2), rtol=1e-5)


def test_grads_vs_finite_differences(x64):
  ts = jnp.array([0.0, 0.5, 1.2])

  def f(y0, k, ts):
    return odeint(decay, y0, ts, k)

  check_grads(f, (jnp.array([1.0, 0.5]), 0.7, ts), order=1, modes=["rev"], atol=1e-5,
              rtol=1e-5)
  # Analytic: y(T) = y0 exp(-k T).
  g = jax.grad(lambda y0, k: odeint(decay, y0, ts, k)[-1], argnums=(0, 1))(1.0, 0.7)
  np.testing.assert_allclose(g, [np.exp(-0.84), -1.2 * np.exp(-0.84)], rtol=1e-7)
  # The gradient with respect to the times.
  gt = jax.grad(lambda ts: jnp.sum(odeint(decay, 1.0, ts, 0.7)))(ts)
  e = np.exp(-0.7 * np.asarray(ts))
  want_t = -0.7 * e
  want_t[0] = 0.7 * np.sum(e[1:])  # moving t0 shifts every later value (ys[0] is y0)
  np.testing.assert_allclose(gt, want_t, rtol=1e-7)


def test_closure_over_traced_values(x64):
  ts = jnp.array([0.0, 1.0])

  def final(k):
    return odeint(lambda y, t: -k * y * jnp.cos(t), 1.0, ts)[-1]  # closes over k

  want = lambda k: np.exp(-k * np.sin(1.0))
  np.testing.assert_allclose(final(0.3), want(0.3), rtol=1e-7)
  np.testing.assert_allclose(jax.grad(final)(0.3), -np.sin(1.0) * want(0.3), rtol=1e-7)
  check_grads(final, (0.3,), order=1, modes=["rev"], atol=1e-5, rtol=1e-5)


def test_jit_and_vmap(x64):
  ts = jnp.linspace(0.0, 1.0, 3)
  solve = jax.jit(lambda y0, k: odeint(decay, y0, ts, k))
  from tracejax._src.core import ir
  ir.check_jaxpr(jax.make_jaxpr(jax.grad(lambda k: odeint(decay, 1.0, ts, k)[-1]))(0.5).jaxpr)
  np.testing.assert_allclose(solve(2.0, 0.5), 2.0 * np.exp(-0.5 * np.asarray(ts)), rtol=1e-7)
  y0s = jnp.array([1.0, 2.0, 3.0])
  batched = jax.vmap(lambda y0: odeint(decay, y0, ts, 0.5))(y0s)
  loop = np.stack([np.asarray(odeint(decay, y0, ts, 0.5)) for y0 in y0s])
  np.testing.assert_allclose(batched, loop, rtol=1e-9)


def test_mxstep_and_hmax():
  ts = jnp.array([0.0, 10.0])
  # With a 3-step budget the solver stops early: the result is not y(10).
  short = odeint(decay, 1.0, ts, 1.0, mxstep=3)
  assert abs(float(short[-1]) - np.exp(-10.0)) > 1e-3
  capped = odeint(decay, 1.0, ts, 1.0, hmax=0.1)
  np.testing.assert_allclose(capped[-1], np.exp(-10.0), rtol=1e-3, atol=1e-7)


def test_errors():
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    odeint(lambda y, t, s: -y, 1.0, jnp.array([0.0, 1.0]), "not an array")
  with pytest.raises(ValueError, match="1-D"):
    odeint(decay, 1.0, jnp.ones((2, 2)), 1.0)
  with pytest.raises(TypeError, match="floating"):
    odeint(decay, 1, jnp.array([0.0, 1.0]), 1.0)
  with pytest.raises(TypeError, match="callable"):
    odeint(3, 1.0, jnp.array([0.0, 1.0]))


def test_pytree_state_grad_under_jit(x64):
  def osc(y, t, w):
    return {"x": y["v"], "v": -w ** 2 * y["x"]}

  ts = jnp.array([0.0, 1.0, 2.0])
  f = lambda y0, w: odeint(osc, y0, ts, w)["x"][-1]
  gy, gw = jax.jit(jax.grad(f, argnums=(0, 1)))({"x": 1.0, "v": 0.5}, 1.3)
  # x(T) = x0 cos(w T) + v0 sin(w T) / w
  w, T = 1.3, 2.0
  np.testing.assert_allclose(gy["x"], np.cos(w * T), rtol=1e-7)
  np.testing.assert_allclose(gy["v"], np.sin(w * T) / w, rtol=1e-7)
  want_w = -T * np.sin(w * T) + 0.5 * (T * np.cos(w * T) / w - np.sin(w * T) / w ** 2)
  np.testing.assert_allclose(gw, want_w, rtol=1e-7)
