"""Compositionality: awkward functions under every nesting of jit, grad, jvp, vjp,
linearize and vmap, checked against each other and against finite differences."""
import itertools

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.test_util import check_grads

C = np.array([0.5, -1.5, 2.0], np.float32)


def closure(x):
  return jnp.sum(jnp.sin(x) * C)


def control_flow(x):  # Python control flow on concrete values (not jittable)
  if jnp.sum(x) > 0:
    return jnp.sum(x ** 2)
  return jnp.sum(jnp.cos(x))


def pytree_fn(x):
  d = {"a": x, "b": (x * 2., [jnp.tanh(x)])}
  leaves = jax.tree_util.tree_leaves(d)
  return sum(jnp.sum(l * l) for l in leaves)


def int_arg(x, n=3):
  return jnp.sum(x ** n) + n


def complex_fn(x):
  z = lax.complex(x, 2. * x)
  return jnp.sum(jnp.real(z * jnp.conj(z)) + jnp.imag(z * z))


def unused(x, y=None):
  return jnp.sum(jnp.exp(x * 0.3))


def nested_jit(x):
  inner = jax.jit(lambda y: jnp.sin(y) * y)
  return jnp.sum(inner(x) + inner(2. * x))


FUNS = [closure, pytree_fn, int_arg, complex_fn, unused, nested_jit, control_flow]
JITTABLE = {f.__name__: f is not control_flow for f in FUNS}

X = np.array([0.3, -0.7, 1.1], np.float32)


def _fd_grad(f, x, eps=1e-3):
  x = np.asarray(x, np.float64)
  g = np.zeros_like(x)
  for i in range(x.size):
    e = np.zeros_like(x)
    e[i] = eps
    g[i] = (float(f((x + e).astype(np.float32))) - float(f((x - e).astype(np.float32)))) / (2 * eps)
  return g


@pytest.mark.parametrize("f", FUNS, ids=lambda f: f.__name__)
def test_grad_agrees_everywhere(f):
  expected = _fd_grad(f, X)
  variants = {"grad": jax.grad(f),
              "vjp": lambda x: jax.vjp(f, x)[1](np.float32(1.))[0],
              "jvp_basis": lambda x: np.array([jax.jvp(f, (x,), (np.eye(3, dtype=np.float32)[i],))[1]
                                               for i in range(3)]),
              "linearize": lambda x: np.array([jax.linearize(f, x)[1](np.eye(3, dtype=np.float32)[i])
                                               for i in range(3)]),
              "jacfwd": jax.jacfwd(f), "jacrev": jax.jacrev(f)}
  if JITTABLE[f.__name__]:
    variants.update({"jit(grad)": jax.jit(jax.grad(f)), "grad(jit)": jax.grad(jax.jit(f)),
                     "jit(grad(jit))": jax.jit(jax.grad(jax.jit(f)))})
  for name, g in variants.items():
    np.testing.assert_allclose(np.asarray(g(X)), expected, rtol=2e-2, atol=2e-2, err_msg=name)


@pytest.mark.parametrize("f", [f for f in FUNS if f is not control_flow], ids=lambda f: f.__name__)
def test_vmap_of_grad_matches_loop(f):
  xs = np.stack([X, X * 0.5, -X]).astype(np.float32)
  loop = np.stack([np.asarray(jax.grad(f)(x)) for x in xs])
  for name, g in {"vmap(grad)": jax.vmap(jax.grad(f)),
                  "jit(vmap(grad))": jax.jit(jax.vmap(jax.grad(f))),
                  "vmap(jit(grad))": jax.vmap(jax.jit(jax.grad(f))),
                  "vmap(jacrev)": jax.vmap(jax.jacrev(f)),
                  "vmap(jit(jacrev))": jax.vmap(jax.jit(jax.jacrev(f)))}.items():
    np.testing.assert_allclose(np.asarray(g(xs)), loop, rtol=1e-4, atol=1e-5, err_msg=name)


def test_deep_nesting():
  f = lambda x: jnp.sin(x) * x ** 2
  g = jax.grad(jax.jit(jax.grad(jax.jit(jax.grad(f)))))
  x = 0.7
  # third derivative of sin(x) x^2
  d3 = (-np.cos(x) * x ** 2 - 6 * np.sin(x) * x + 6 * np.cos(x))
  np.testing.assert_allclose(float(g(x)), d3, rtol=1e-4)


@pytest.mark.parametrize("f", [closure, pytree_fn, unused, nested_jit],
                         ids=lambda f: f.__name__)
def test_check_grads_order2(f):
  check_grads(f, (X,), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)


def test_hessian():
  f = lambda x: jnp.sum(x ** 3)
  h = jax.hessian(f)(X)
  np.testing.assert_allclose(np.asarray(h), np.diag(6 * X), rtol=1e-5)


def test_value_and_grad_argnums_has_aux():
  f = lambda x, y: (jnp.sum(x * y), {"aux": x})
  (v, aux), (gx, gy) = jax.value_and_grad(f, argnums=(0, 1), has_aux=True)(X, 2 * X)
  np.testing.assert_allclose(float(v), float(np.sum(2 * X * X)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gx), 2 * X, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gy), X, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(aux["aux"]), X)


def test_grad_errors():
  with pytest.raises(TypeError, match="Gradient only defined for scalar-output functions"):
    jax.grad(lambda x: x * 2)(X)
  with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
    jax.grad(lambda x: x * 2)(3)
  g = jax.grad(lambda x, n: jnp.sum(x) * 1.0, allow_int=True, argnums=1)
  g(X, 3)


def test_jvp_errors():
  with pytest.raises(TypeError, match="same tree structure"):
    jax.jvp(lambda x, y: x, (1., 2.), (1.,))
  with pytest.raises(TypeError, match="dtypes must be equal"):
    jax.jvp(lambda x: x, (np.float32(1.),), (np.float16(1.),))


def test_vmap_in_axes_and_errors():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  out = jax.vmap(lambda a, b: a * b, in_axes=(1, None))(x, 2.)
  np.testing.assert_allclose(np.asarray(out), (x * 2).T)
  out = jax.vmap(lambda a: a.sum(), in_axes=-1)(x)
  np.testing.assert_allclose(np.asarray(out), x.sum(0))
  out = jax.vmap(lambda t: t["a"] + t["b"], in_axes=({"a": 0, "b": None},))({"a": x, "b": 1.})
  np.testing.assert_allclose(np.asarray(out), x + 1)
  out = jax.vmap(lambda a: (a, a.sum()), out_axes=(1, 0))(x)
  np.testing.assert_allclose(np.asarray(out[0]), x.T)
  with pytest.raises(ValueError, match="inconsistent sizes"):
    jax.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
  with pytest.raises(ValueError, match="tree prefix"):
    jax.vmap(lambda a, b: a, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
  nested = jax.vmap(jax.vmap(lambda a: a * 2.))(x)
  np.testing.assert_allclose(np.asarray(nested), 2 * x)


def test_batched_dot_is_one_dot_general():
  a = np.ones((5, 2, 3), np.float32)
  b = np.ones((5, 3, 4), np.float32)
  closed = jax.make_jaxpr(jax.vmap(jnp.dot))(a, b)
  assert [str(e.primitive) for e in closed.eqns].count("dot_general") == 1


def test_symbolic_zeros_no_mul_by_zero():
  # y is closed over, so its tangent is a symbolic zero: no `mul x 0.0` is staged.
  closed = jax.make_jaxpr(lambda x, y: jax.jvp(lambda a: a * y + jnp.sin(y), (x,), (1.,)))(2., 3.)
  text = str(closed)
  assert "0.0" not in text, text


def test_jit_of_vjp_with_python_control_flow():
  def f(x):
    if x < 3:
      return 3. * x ** 2
    return -4 * x
  y, f_vjp = jax.vjp(f, 4.)
  np.testing.assert_allclose(float(jax.jit(f_vjp)(1.)[0]), -4.)


def test_stop_gradient():
  g = jax.grad(lambda x: x * lax.stop_gradient(x))(3.)
  assert float(g) == 3.


def test_custom_jvp_and_vjp_under_transforms():
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return f(x), 10. * t

  for g in (jax.grad(f), jax.jit(jax.grad(f)), jax.grad(jax.jit(f))):
    assert float(g(1.)) == 10.
  np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(f))(X)), 10. * np.ones(3))

  @jax.custom_vjp
  def h(x):
    return jnp.sin(x)
  h.defvjp(lambda x: (h(x), x), lambda r, ct: (7. * ct,))
  for g in (jax.grad(h), jax.jit(jax.grad(h)), jax.grad(jax.jit(h))):
    assert float(g(1.)) == 7.
  np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(h))(X)), 7. * np.ones(3))
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    jax.jvp(h, (1.,), (1.,))
