"""Dead-code elimination when a jit call is linearized (jvp/vjp of jit).

Linearizing a jitted function splits its body into known (primal) work and
unknown (tangent) work. Tangent work that no output needs, and the residuals
only it read, are dropped before the known work is bound in the enclosing
trace, so an outer transformation (the forward pass of `hessian`) never
differentiates a residual computation nobody uses.
"""
import io
import contextlib

import numpy as np
import pytest

import tracejax as jax
import tracejax.nn
import tracejax.numpy as jnp
import tracejax.scipy.special
from tracejax._src.interpreters import ad
from tracejax._src.test_util import check_grads


def _f(x):
  # one_hot has a zero derivative, so gammainc's tangent (which needs
  # igamma_grad_a, itself without a derivative in a) is dead code.
  dead = jax.nn.one_hot(jax.scipy.special.gammainc(x, x), 3) * jnp.arange(3.)
  return dead.sum() + jnp.sum(jnp.sin(x) ** 3)


_X = np.array([0.5, 1.5, 2.5], np.float32)


def test_hessian_of_jit_skips_dead_residual():
  h = jax.hessian(jax.jit(_f))(_X)
  # Recorded from JAX 0.10.2 (float32, CPU).
  want_jax = np.array([[1.8847945928573608, 0.0, 0.0],
                       [0.0, -2.947563886642456, 0.0],
                       [0.0, 0.0, 1.6616454124450684]], np.float32)
  np.testing.assert_allclose(np.asarray(h), want_jax, rtol=2e-5, atol=1e-6)
  # Hand-derived: d2/dx2 sin(x)^3 = 6 sin cos^2 - 3 sin^3.
  x = _X.astype(np.float64)
  want = np.diag(6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3)
  np.testing.assert_allclose(np.asarray(h), want, rtol=1e-5, atol=1e-6)


def test_hessian_of_nested_jit_and_rev_rev():
  inner = jax.jit(_f)
  h1 = jax.hessian(jax.jit(lambda x: inner(x) * 2.0))(_X)
  h2 = jax.jacrev(jax.jacrev(jax.jit(_f)))(_X)
  h3 = jax.jit(jax.hessian(jax.jit(_f)))(_X)
  x = _X.astype(np.float64)
  want = np.diag(6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3)
  np.testing.assert_allclose(np.asarray(h1), 2 * want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(h2), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.asarray(h3), want, rtol=1e-5, atol=1e-6)


def test_vmap_of_hessian_of_jit_matches_loop():
  xs = np.array([[0.5, 1.5, 2.5], [0.25, 0.75, 3.0]], np.float32)
  got = jax.vmap(jax.hessian(jax.jit(_f)))(xs)
  want = np.stack([np.asarray(jax.hessian(jax.jit(_f))(x)) for x in xs])
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_vjp_of_jit_residuals_drop_unused_value():
  def f(x):
    return [(jax.nn.one_hot(jax.scipy.special.gammainc(x, x), 3)).sum() + jnp.sum(jnp.sin(x))]

  _, lin, res, nz, _ = ad.linearize_flat(jax.jit(f), [_X])
  # Only cos(x) is needed by the tangent map; the gammainc derivatives
  # (igamma_grad_a and friends) are neither residuals nor equations.
  assert nz == [True]
  assert len(res) == 1, res
  np.testing.assert_allclose(np.asarray(res[0]), np.cos(_X), rtol=1e-6)
  assert len(lin.constvars) == 1
  assert all(e.primitive.name in ("mul", "reduce_sum") for e in lin.eqns), lin
  # The unjitted function still linearizes to the same values.
  out, f_vjp = jax.vjp(lambda x: f(x)[0], _X)
  out_j, f_vjp_j = jax.vjp(lambda x: jax.jit(f)(x)[0], _X)
  np.testing.assert_allclose(np.asarray(out_j), np.asarray(out), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(f_vjp_j(np.float32(1.0))[0]),
                             np.cos(_X), rtol=1e-6)


def test_make_jaxpr_grad_of_jit_has_no_dead_equations():
  jaxpr = jax.make_jaxpr(jax.grad(jax.jit(_f)))(_X)
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert "igamma" not in names and "igamma_grad_a" not in names, names
  assert len(names) <= 8, jaxpr


def test_effects_inside_jit_are_kept_under_grad():
  def f(x):
    jax.debug.print("seen {}", x[0])
    return jnp.sum(x * 2.0)

  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    g = jax.grad(jax.jit(f))(_X)
  np.testing.assert_allclose(np.asarray(g), np.full(3, 2.0), rtol=1e-6)
  assert "seen 0.5" in buf.getvalue()


def test_check_grads_through_jit_order2(x64):
  f = jax.jit(lambda x: jnp.sum(jnp.tanh(x) * jnp.exp(x)) + jnp.round(x).sum())
  x = np.array([0.3, -0.7], np.float64)
  check_grads(f, (x,), order=2, modes=("fwd", "rev"))
  # Second order through the jit, against the hand-derived value of the smooth part:
  # (tanh e^x)'' = e^x (tanh + 2 sech^2 - 2 tanh sech^2).
  t, s2 = np.tanh(x), 1 / np.cosh(x) ** 2
  want = np.diag(np.exp(x) * (t + 2 * s2 - 2 * t * s2))
  np.testing.assert_allclose(np.asarray(jax.hessian(f)(x)), want, rtol=1e-10)
