"""Regression tests: custom_jvp/custom_vjp under vmap, and reverse mode through control
flow (scan, fori_loop, cond, checkpoint) whose body calls a custom_vjp function.
Also jnp.log10/log2 precision (computed as JAX does)."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.interpreters import ad
from tracejax.test_util import check_grads

JVP_ERROR = "can't apply forward-mode autodiff"


# ---- custom_jvp with symbolic_zeros under vmap ----

def _mul_with_symbolic_zeros(seen):
  @jax.custom_jvp
  def f(x, y):
    return x * y

  def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    seen.append((type(tx) is ad.Zero, type(ty) is ad.Zero))
    t = jnp.zeros_like(x)
    if type(tx) is not ad.Zero:
      t = t + tx * y
    if type(ty) is not ad.Zero:
      t = t + x * ty
    return f(x, y), t
  f.defjvp(f_jvp, symbolic_zeros=True)
  return f


def test_custom_jvp_symbolic_zero_of_batched_input_stays_zero():
  seen = []
  f = _mul_with_symbolic_zeros(seen)
  xs = np.arange(3.0, dtype=np.float32)
  ys = xs + 1
  tx = np.array([1.0, -2.0, 0.5], np.float32)
  # jvp outside vmap: the batching rule sees y's symbolic-zero tangent (y is batched).
  out, t_out = jax.jvp(lambda x: jax.vmap(f)(x, ys), (xs,), (tx,))
  np.testing.assert_allclose(out, xs * ys)
  np.testing.assert_allclose(t_out, tx * ys)
  assert seen and all(not zx and zy for zx, zy in seen)  # y's tangent reached the rule as a Zero
  # the same under jit, and against a Python loop over the batch
  t_jit = jax.jit(lambda x, t: jax.jvp(lambda x: jax.vmap(f)(x, ys), (x,), (t,))[1])(xs, tx)
  loop = [jax.jvp(lambda x: f(x, ys[i]), (xs[i],), (tx[i],))[1] for i in range(3)]
  np.testing.assert_allclose(t_jit, np.stack(loop))


# ---- custom_vjp under vmap: None cotangents and unbatched inputs ----

C = np.array([1.0, 2.0, 3.0], np.float32)


@jax.custom_vjp
def _scaled_sin(x):
  return jnp.sin(x) * C  # C: a constant of the staged call (bwd gives it None)


_scaled_sin.defvjp(lambda x: (_scaled_sin(x), jnp.cos(x)), lambda r, ct: (r * ct * C,))


def test_custom_vjp_vmap_of_staged_call_with_consts():
  x = np.linspace(0.1, 1.0, 6, dtype=np.float32).reshape(2, 3)
  expect = np.cos(x) * C
  g = jax.grad(lambda x: jax.vmap(jax.jit(_scaled_sin))(x).sum())
  np.testing.assert_allclose(g(x), expect, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(g)(x), expect, rtol=1e-6)


def test_custom_vjp_vmap_bwd_returns_none():
  @jax.custom_vjp
  def h(x, w):
    return jnp.sin(x) * w
  h.defvjp(lambda x, w: (h(x, w), (x, w)), lambda r, ct: (jnp.cos(r[0]) * r[1] * ct, None))
  x = np.array([0.1, 0.5, 1.0], np.float32)
  w = np.array([2.0, 3.0, 4.0], np.float32)
  gx = jax.grad(lambda x: jax.vmap(h)(x, w).sum())(x)
  np.testing.assert_allclose(gx, np.cos(x) * w, rtol=1e-6)
  gw = jax.grad(lambda w: jax.vmap(h)(x, w).sum())(w)
  np.testing.assert_array_equal(gw, np.zeros(3))  # None: a zero cotangent


def test_custom_vjp_vmap_unbatched_input_gets_summed_cotangent():
  @jax.custom_vjp
  def h(x, w):
    return jnp.sin(x) * w
  h.defvjp(lambda x, w: (h(x, w), (x, w)),
           lambda r, ct: (jnp.cos(r[0]) * r[1] * ct, jnp.sin(r[0]) * ct))
  x = np.array([0.1, 0.5, 1.0], np.float32)
  gw = jax.grad(lambda w: jax.vmap(h, (0, None))(x, w).sum())(np.float32(2.0))
  assert np.shape(gw) == ()
  np.testing.assert_allclose(gw, np.sum(np.sin(x)), rtol=1e-6)
  loop = sum(jax.grad(lambda w: h(x[i], w))(np.float32(2.0)) for i in range(3))
  np.testing.assert_allclose(gw, loop, rtol=1e-6)


def test_custom_vjp_vmap_integer_input():
  # an integer argument's cotangent is a float0 zero, batched or not
  @jax.custom_vjp
  def h(x, n):
    return jnp.sin(x) * n
  h.defvjp(lambda x, n: (h(x, n), (x, n)), lambda r, ct: (jnp.cos(r[0]) * r[1] * ct, None))
  x = np.array([0.1, 0.5, 1.0], np.float32)
  np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(h, (0, None))(x, 3).sum())(x),
                             3 * np.cos(x), rtol=1e-6)
  n = np.array([1, 2, 3], np.int32)
  np.testing.assert_allclose(jax.grad(lambda x: jax.vmap(h, (None, 0))(x, n).sum())(1.0),
                             6 * np.cos(1.0), rtol=1e-6)


# ---- reverse mode through control flow whose body calls a custom_vjp function ----

@jax.custom_vjp
def _sin3(x):
  return jnp.sin(x)


# A deliberately scaled bwd (3 cos x): the results show that the custom rule was used.
_sin3.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (3.0 * c * g,))


def _unrolled(x):
  for _ in range(3):
    x = _sin3(x) * 1.5
  return x


def _scanned(x):
  return lax.scan(lambda c, _: (_sin3(c) * 1.5, None), x, None, length=3)[0]


def _fori(x):
  return lax.fori_loop(0, 3, lambda i, c: _sin3(c) * 1.5, x)


def _cond(x):
  return lax.cond(x > -10.0, _unrolled, lambda y: -y, x)


def _scan_of_checkpoint(x):
  return lax.scan(lambda c, _: (jax.checkpoint(_sin3)(c) * 1.5, None), x, None, length=3)[0]


def _scan_in_cond(x):
  return lax.cond(x > -10.0, _scanned, lambda y: -y, x)


CONTROL_FLOW = {"scan": _scanned, "fori_loop": _fori, "cond": _cond,
                "checkpoint": jax.checkpoint(_unrolled),
                "checkpoint_of_scan": jax.checkpoint(_scanned),
                "scan_of_checkpoint": _scan_of_checkpoint, "scan_in_cond": _scan_in_cond}


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_grad_through_control_flow_uses_custom_vjp(name):
  f = CONTROL_FLOW[name]
  x = np.float32(0.7)
  expect = jax.grad(_unrolled)(x)
  # d/dx of 3 nested sin(.)*1.5 with bwd 3 cos: (4.5)^3 prod cos(...), not the true derivative
  assert abs(float(expect) - float(jax.grad(lambda x: _unrolled_true(x))(x)) * 27) < 1e-3
  np.testing.assert_allclose(jax.grad(f)(x), expect, rtol=1e-5)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), expect, rtol=1e-5)
  xs = np.array([0.7, -0.3], np.float32)
  np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs), jax.vmap(jax.grad(_unrolled))(xs),
                             rtol=1e-5)
  np.testing.assert_allclose(jax.grad(jax.grad(f))(x), jax.grad(jax.grad(_unrolled))(x),
                             rtol=1e-4)


def _unrolled_true(x):
  for _ in range(3):
    x = jnp.sin(x) * 1.5
  return x


def test_scan_with_xs_and_ys_through_custom_vjp():
  xs = np.array([0.1, 0.2, 0.3], np.float32)

  def scanned(w):
    c, ys = lax.scan(lambda c, x: (c + _sin3(x * w), _sin3(c * w)), np.float32(0.0), xs)
    return c + jnp.sum(ys)

  def unrolled(w):
    c, total = np.float32(0.0), 0.0
    for x in xs:
      c, y = c + _sin3(x * w), _sin3(c * w)
      total = total + y
    return c + total
  np.testing.assert_allclose(jax.grad(scanned)(np.float32(0.5)),
                             jax.grad(unrolled)(np.float32(0.5)), rtol=1e-5)
  _, f_vjp = jax.vjp(scanned, np.float32(0.5))
  np.testing.assert_allclose(f_vjp(np.float32(1.0))[0], jax.grad(unrolled)(np.float32(0.5)),
                             rtol=1e-5)


@jax.custom_vjp
def _softplus(x):
  return jnp.logaddexp(x, 0.0)


# the true derivative this time, so finite differences can check it
_softplus.defvjp(lambda x: (_softplus(x), x), lambda x, g: (g * jax.nn.sigmoid(x),))


def test_check_grads_scan_of_custom_vjp(x64):
  def f(x):
    return lax.scan(lambda c, _: (_softplus(c) * 0.5 - c * c, None), x, None, length=4)[0]
  check_grads(f, (np.array([0.3, -1.2]),), order=2, modes=("rev",))


def test_forward_mode_of_custom_vjp_stays_an_error():
  x = np.float32(0.7)
  with pytest.raises(TypeError, match=JVP_ERROR):
    jax.jvp(_sin3, (x,), (x,))
  with pytest.raises(TypeError, match=JVP_ERROR):
    jax.jit(lambda x: jax.jvp(_sin3, (x,), (x,)))(x)
  with pytest.raises(TypeError, match=JVP_ERROR):
    jax.jvp(_scanned, (x,), (x,))
  with pytest.raises(TypeError, match=JVP_ERROR):
    jax.vmap(lambda x: jax.jvp(_sin3, (x,), (x,)))(np.ones(2, np.float32))
  # linearize splits the scan: the primal output is fine, the linear map is forward mode
  out, f_jvp = jax.linearize(_scanned, x)
  np.testing.assert_allclose(out, _unrolled(x), rtol=1e-6)
  with pytest.raises(TypeError, match=JVP_ERROR):
    f_jvp(x)


# ---- jnp.log10 / jnp.log2 ----

def test_log10_log2_exact_on_powers():
  x = np.array([10.0, 100.0, 1000.0, 1e-3, 1e5], np.float32)
  np.testing.assert_array_equal(jnp.log10(x), [1.0, 2.0, 3.0, -3.0, 5.0])
  np.testing.assert_array_equal(jax.jit(jnp.log10)(x), [1.0, 2.0, 3.0, -3.0, 5.0])
  assert float(jnp.log10(10.0)) == 1.0 and jnp.log10(10).dtype == np.float32
  y = np.array([8.0, 1024.0, 0.5], np.float32)
  np.testing.assert_array_equal(jnp.log2(y), [3.0, 10.0, -1.0])
  z = np.array([10 + 1j, -3j], np.complex64)
  np.testing.assert_allclose(jnp.log10(z), np.log10(z), rtol=1e-6)
  np.testing.assert_allclose(jnp.log2(z), np.log2(z), rtol=1e-6)
  np.testing.assert_allclose(jax.grad(jnp.log10)(2.0), 1 / (2 * np.log(10)), rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(jnp.log2)(y), np.log2(y), rtol=1e-7)
