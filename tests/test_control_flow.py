"""Structured control flow under every nesting of jit, grad, jvp and vmap."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.control_flow import (associative_scan, cond, fori_loop, map as lax_map,
                                        scan, switch, while_loop)
from tracejax.test_util import check_grads


def _fd(f, x, eps=1e-3):
  return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)


def test_cond_both_api_eras():
  op = jnp.array([0.])
  np.testing.assert_array_equal(cond(True, op, lambda x: x + 1, op, lambda x: x - 1), [1.])
  np.testing.assert_array_equal(cond(False, op, lambda x: x + 1, op, lambda x: x - 1), [-1.])
  assert float(cond(True, lambda x: x * 2., lambda x: x, 3.)) == 6.
  assert float(cond(0, lambda x: x * 2., lambda x: x, 3.)) == 3.


def test_cond_jaxpr_printing():
  text = str(jax.make_jaxpr(lambda a: cond(a >= 0., a, lambda x: x + 3., a,
                                           lambda x: x - 3.))(5.))
  assert "cond[ false_jaxpr={ lambda ; " in text and "true_jaxpr=" in text
  assert "linear=" in text


def test_cond_errors():
  with pytest.raises(TypeError, match="identical types"):
    cond(True, lambda x: x, lambda x: jnp.ones(2), 1.)
  with pytest.raises(TypeError, match="Pred must be a scalar"):
    cond(jnp.ones(2) > 0, lambda x: x, lambda x: x, 1.)


def test_cond_closure_and_pytrees():
  c = jnp.ones(3)
  out = cond(True, lambda t: (t[0] + c, t[1]), lambda t: (t[0] - c, t[1]), (jnp.zeros(3), 2))
  np.testing.assert_array_equal(out[0], np.ones(3))
  assert int(out[1]) == 2


def test_switch_clamps():
  branches = [lambda x: x, lambda x: x * 2., lambda x: x * 3.]
  assert float(switch(7, branches, 1.)) == 3.
  assert float(switch(-2, branches, 1.)) == 1.
  assert float(jax.jit(lambda i: switch(i, branches, 1.))(1)) == 2.


@pytest.mark.parametrize("x", [0.7, -0.7])
def test_grad_of_cond(x):
  f = lambda x: cond(x > 0, lambda y: jnp.sin(y) * y, lambda y: y ** 3, x)
  for g in (jax.grad(f), jax.jit(jax.grad(f)), jax.grad(jax.jit(f))):
    np.testing.assert_allclose(float(g(x)), _fd(f, x), rtol=1e-2)
  gg = jax.grad(jax.grad(f))(x)
  np.testing.assert_allclose(float(gg), _fd(jax.grad(f), x), rtol=2e-2)


def test_vmap_cond_batched_predicate_and_operand():
  f = lambda x: cond(x > 0, lambda y: jnp.sin(y) * y, lambda y: y ** 3, x)
  xs = jnp.array([0.7, -0.7, 0.2])
  np.testing.assert_allclose(np.asarray(jax.vmap(f)(xs)),
                             [float(f(float(x))) for x in xs], rtol=1e-6)
  np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(f))(xs)),
                             [float(jax.grad(f)(float(x))) for x in xs], rtol=1e-6)
  g = lambda p, x: cond(p, lambda y: y + 1., lambda y: y - 1., x)
  np.testing.assert_allclose(np.asarray(jax.vmap(g, in_axes=(None, 0))(True, xs)), xs + 1)


def test_while_loop_and_fori():
  assert int(while_loop(lambda x: x < 10, lambda x: x + 1, 0)) == 10
  assert int(fori_loop(0, 10, lambda i, x: x + i, 0)) == 45
  f = jax.jit(lambda x, n: fori_loop(0, n, lambda i, v: v + x, 0.))
  assert float(f(1., 5)) == 5.
  text = str(jax.make_jaxpr(lambda x, n: fori_loop(0, n, lambda i, v: v + x, 0.))(1., 5))
  assert "while[" in text and "lt" in text


def test_while_errors():
  with pytest.raises(TypeError, match="boolean scalar"):
    while_loop(lambda x: x, lambda x: x, 1.)
  with pytest.raises(TypeError, match="identical types"):
    while_loop(lambda x: x < 1, lambda x: jnp.ones(2), 1.)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    jax.grad(lambda x: while_loop(lambda v: v < 10., lambda v: v * 2., x))(1.)


def test_while_forward_mode_and_vmap():
  f = lambda x: while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * x), (0, 1.))[1]
  y, t = jax.jvp(f, (2.,), (1.,))
  assert float(y) == 32. and float(t) == 80.
  g = lambda x: while_loop(lambda v: v < 10., lambda v: v * 2., x)
  np.testing.assert_array_equal(np.asarray(jax.vmap(g)(jnp.array([1., 3., 20.]))),
                                [16., 12., 20.])
  np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(g))(jnp.array([1., 3.]))), [16., 12.])


def test_scan_basic_and_reverse():
  c, ys = scan(lambda c, x: (c + x, c), 0., jnp.arange(5.))
  assert float(c) == 10. and np.asarray(ys).tolist() == [0., 0., 1., 3., 6.]
  c, ys = scan(lambda c, x: (c + x, c), 0., jnp.arange(5.), reverse=True)
  assert float(c) == 10. and np.asarray(ys).tolist() == [10., 9., 7., 4., 0.]
  c, ys = scan(lambda c, _: (c * 2, None), 1, None, length=4)
  assert int(c) == 16 and ys is None
  np.testing.assert_array_equal(lax_map(lambda x: x * 2, jnp.arange(3.)), [0., 2., 4.])


def test_scan_gradients_and_vmap():
  def f(x):
    return scan(lambda c, x: (jnp.sin(c) * x, c * x), x, jnp.arange(1., 4.))[0]
  for g in (jax.grad(f), jax.jit(jax.grad(f)), jax.grad(jax.jit(f))):
    np.testing.assert_allclose(float(g(0.5)), _fd(f, 0.5), rtol=1e-2)
  check_grads(f, (0.5,), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  xs = jnp.array([0.5, 0.2, -0.3])
  np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(f))(xs)),
                             [float(jax.grad(f)(float(x))) for x in xs], rtol=1e-5)
  # gradient with respect to the scanned-over values and closed-over constants
  w = jnp.array([0.3, -0.2, 0.5])

  def loss(w, xs):
    c, ys = scan(lambda c, x: (c * w[0] + x, jnp.tanh(c) * w[1]), w[2], xs)
    return c + jnp.sum(ys)
  gw, gx = jax.grad(loss, argnums=(0, 1))(w, jnp.arange(4.))
  eps = 1e-3
  for i in range(3):
    e = np.zeros(3, np.float32)
    e[i] = eps
    fd = (float(loss(w + e, jnp.arange(4.))) - float(loss(w - e, jnp.arange(4.)))) / (2 * eps)
    np.testing.assert_allclose(float(gw[i]), fd, rtol=2e-2, atol=1e-3)


def test_fori_static_is_reverse_differentiable():
  assert float(jax.grad(lambda x: fori_loop(0, 3, lambda i, v: v * x, 1.))(2.)) == 12.


def test_associative_scan():
  np.testing.assert_array_equal(associative_scan(jnp.add, jnp.arange(7.)),
                                np.cumsum(np.arange(7.)))
  np.testing.assert_array_equal(associative_scan(jnp.add, jnp.arange(6.), reverse=True),
                                np.cumsum(np.arange(6.)[::-1])[::-1])
  np.testing.assert_array_equal(associative_scan(jnp.maximum, jnp.array([1., 3., 2., 5., 4.])),
                                [1., 3., 3., 5., 5.])


def test_custom_linear_solve_and_root():
  from tracejax._src.control_flow import custom_linear_solve, custom_root
  A = jnp.array([[4., 1.], [2., 3.]])
  Ainv = np.linalg.inv(np.asarray(A))
  solve = lambda mv, b: jnp.asarray(Ainv) @ b
  tsolve = lambda vm, b: jnp.asarray(Ainv.T) @ b
  f = lambda b: jnp.sum(custom_linear_solve(lambda x: A @ x, b, solve, tsolve) ** 2)
  b = jnp.array([1., 2.])
  x = Ainv @ np.asarray(b)
  expected = 2 * Ainv.T @ x
  for g in (jax.grad(f), jax.jit(jax.grad(f))):
    np.testing.assert_allclose(np.asarray(g(b)), expected, rtol=1e-5)
  np.testing.assert_allclose(
      np.asarray(jax.vmap(lambda b: custom_linear_solve(lambda x: A @ x, b, solve, tsolve))(
          jnp.stack([b, 2 * b]))), np.stack([x, 2 * x]), rtol=1e-5)

  def sqrt_newton(a):
    fn = lambda x: x ** 2 - a
    solver = lambda f, x0: while_loop(lambda x: jnp.abs(f(x)) > 1e-5,
                                      lambda x: x - f(x) / (2 * x), x0)
    return custom_root(fn, 1.0, solver, lambda g, y: y / g(1.0))
  np.testing.assert_allclose(float(sqrt_newton(2.)), np.sqrt(2.), rtol=1e-5)
  for g in (jax.grad(sqrt_newton), jax.jit(jax.grad(sqrt_newton))):
    np.testing.assert_allclose(float(g(2.)), 0.5 / np.sqrt(2.), rtol=1e-4)
  np.testing.assert_allclose(np.asarray(jax.vmap(sqrt_newton)(jnp.array([4., 9.]))), [2., 3.],
                             rtol=1e-5)
