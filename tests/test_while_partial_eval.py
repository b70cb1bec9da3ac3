"""Partial evaluation (linearize / vjp / grad) of `while_loop` whose body closes over the
differentiated value while its carries stay integer (no tangent).

The loop's JVP then has an unknown (tangent) body constant but no unknown carry; all its
outputs are known and must come out of the known loop (they once leaked tracers of the
tangent trace: fuzzer issue 13, `jax.random.poisson` under value_and_grad/vjp/jit).
Expected values were recorded from JAX 0.10.2.
"""
import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.config import config
from tracejax._src.core.trace import Tracer

XS = [0.5, 1.5, 4.0]


def _body(v):
  # The integer carry c[1] only compares against v: it has no tangent.
  return lambda c: (c[0] + 1,
                    lax.select(c[1].astype(jnp.float32) > -v, c[1] - 2, c[1]),
                    c[2] + 1.0)


def f_indep(v):
  """The output does not depend on v."""
  out = lax.while_loop(lambda c: c[0] < 3, _body(v), (0, 0, 0.0))
  return out[2] + out[1]


def f_dep(v):
  """The output depends on v outside the loop only."""
  out = lax.while_loop(lambda c: c[0] < 3, _body(v), (0, 0, 0.0))
  return out[2] * v + out[1] * jnp.sin(v)


def f_cond(v):
  """The trip count depends on v too (the condition closes over it)."""
  out = lax.while_loop(lambda c: c[2] < 2.0 * v, _body(v), (0, 0, 0.0))
  return out[2] * v + out[1]


# (values, gradients) at XS, from JAX 0.10.2
EXPECTED = {
    f_indep: ([1.0, 1.0, -1.0], [0.0, 0.0, 0.0]),
    f_dep: ([0.5411489009857178, 2.5050101280212402, 15.027210235595703],
            [1.2448348999023438, 2.858525514602661, 5.614574432373047]),
    f_cond: ([-1.5, 2.5, 28.0], [1.0, 3.0, 8.0]),
}
FUNS = [f_indep, f_dep, f_cond]


def _concrete(x):
  assert not isinstance(x, Tracer), f"leaked tracer {x!r}"
  return np.asarray(x)


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_grad_vjp_linearize(fun):
  vals, grads = EXPECTED[fun]
  for x, v, g in zip(XS, vals, grads):
    np.testing.assert_allclose(_concrete(fun(x)), v, rtol=1e-6)
    np.testing.assert_allclose(_concrete(tracejax.grad(fun)(x)), g, rtol=1e-6)
    val, grad = tracejax.value_and_grad(fun)(x)
    np.testing.assert_allclose(_concrete(val), v, rtol=1e-6)
    np.testing.assert_allclose(_concrete(grad), g, rtol=1e-6)
    p, f_vjp = tracejax.vjp(fun, x)
    np.testing.assert_allclose(_concrete(p), v, rtol=1e-6)
    np.testing.assert_allclose(_concrete(f_vjp(2.0)[0]), 2 * g, rtol=1e-6)
    p, f_lin = tracejax.linearize(fun, x)
    np.testing.assert_allclose(_concrete(p), v, rtol=1e-6)
    np.testing.assert_allclose(_concrete(f_lin(3.0)), 3 * g, rtol=1e-6)


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_jit_and_vmap_of_grad(fun):
  vals, grads = EXPECTED[fun]
  vg = tracejax.jit(tracejax.value_and_grad(fun))
  for x, v, g in zip(XS, vals, grads):
    val, grad = vg(x)
    np.testing.assert_allclose(_concrete(val), v, rtol=1e-6)
    np.testing.assert_allclose(_concrete(grad), g, rtol=1e-6)
    np.testing.assert_allclose(_concrete(tracejax.jit(tracejax.grad(fun))(x)), g, rtol=1e-6)
  xs = jnp.array(XS, jnp.float32)
  # vmap against the Python loop (the expected values)
  np.testing.assert_allclose(_concrete(tracejax.vmap(tracejax.grad(fun))(xs)), grads,
                             rtol=1e-6)
  np.testing.assert_allclose(_concrete(tracejax.jit(tracejax.vmap(tracejax.grad(fun)))(xs)),
                             grads, rtol=1e-6)


def test_forward_carry_beside_integer_carry():
  """A float carry with a tangent next to the integer one: the known loop runs the
  primal, the staged loop the tangent (forward mode; reverse mode is JAX's error)."""
  def f(v):
    out = lax.while_loop(
        lambda c: c[0] < 3,
        lambda c: (c[0] + 1, lax.select(c[1].astype(jnp.float32) > -v, c[1] - 2, c[1]),
                   c[2] * v + 1.0),
        (0, 0, 1.0))
    return out[2] + out[1]
  p, f_lin = tracejax.linearize(f, 1.5)  # JAX: 6.125, 10.75
  np.testing.assert_allclose(_concrete(p), 6.125, rtol=1e-6)
  np.testing.assert_allclose(_concrete(f_lin(1.0)), 10.75, rtol=1e-6)
  p, t = tracejax.jvp(f, (1.5,), (1.0,))
  np.testing.assert_allclose(_concrete(p), 6.125, rtol=1e-6)
  np.testing.assert_allclose(_concrete(t), 10.75, rtol=1e-6)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    tracejax.grad(f)(1.5)


@pytest.fixture
def partitionable_off():
  old = config.jax_threefry_partitionable
  config.update("jax_threefry_partitionable", False)
  try:
    yield
  finally:
    config.update("jax_threefry_partitionable", old)


def test_poisson_under_autodiff(partitionable_off):
  """Poisson samples are integers: zero gradient w.r.t. the rate (JAX 0.10.2 values,
  key 74, threefry_partitionable off: samples [0, 3, 20])."""
  key = tracejax.random.PRNGKey(74)

  def f(lam):
    return jnp.sum(tracejax.random.poisson(key, lam, (3,)) * 1.0) + jnp.sum(lam)

  lam = jnp.array([0.5, 3.0, 20.0], jnp.float32)
  ones = np.ones(3, np.float32)
  np.testing.assert_array_equal(_concrete(tracejax.random.poisson(key, lam, (3,))),
                                [0, 3, 20])
  for vg in (tracejax.value_and_grad(f), tracejax.jit(tracejax.value_and_grad(f))):
    val, grad = vg(lam)
    np.testing.assert_allclose(_concrete(val), 46.5, rtol=1e-6)
    np.testing.assert_allclose(_concrete(grad), ones)
  np.testing.assert_allclose(_concrete(tracejax.jit(tracejax.grad(f))(lam)), ones)
  p, f_vjp = tracejax.vjp(f, lam)
  np.testing.assert_allclose(_concrete(p), 46.5, rtol=1e-6)
  np.testing.assert_allclose(_concrete(f_vjp(1.0)[0]), ones)
  p, f_lin = tracejax.linearize(f, lam)
  np.testing.assert_allclose(_concrete(p), 46.5, rtol=1e-6)
  np.testing.assert_allclose(_concrete(f_lin(jnp.ones(3))), 3.0)
  batched = tracejax.vmap(tracejax.grad(f))(jnp.stack([lam, lam + 1]))
  np.testing.assert_allclose(_concrete(batched), np.ones((2, 3), np.float32))
  # The integer sample itself as the primal output of vjp (JAX 0.10.2: [0, 3, 20]).
  s, _ = tracejax.vjp(lambda r: tracejax.random.poisson(key, r, (3,)), lam)
  np.testing.assert_array_equal(_concrete(s), [0, 3, 20])


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_check_grads(fun):
  """Numerical derivatives, away from the points where the integer carry jumps."""
  from tracejax._src.test_util import check_grads
  for x in (0.7, 1.2):  # (f_cond's trip count jumps at 0.5 and 1.5)
    check_grads(fun, (x,), order=1, modes=["fwd", "rev"], atol=1e-2, rtol=1e-2)
