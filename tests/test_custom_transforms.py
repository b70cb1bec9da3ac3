"""The 2020 custom-derivative API: custom_transforms, defjvp, defjvp_all, defvjp,
defvjp_all, custom_gradient, jarrett.

Values are hand-derived (d/dx sin(x^2) = 2x cos(x^2), ...); each rule is checked under
jit, vmap (against a Python loop), jvp, grad and grad of grad, and with check_grads
where the rule is the true derivative. Rules that deliberately differ from the true
derivative show that the rule, not the function, is differentiated.
"""
import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import api
from tracejax._src.api import grad, jvp, make_jaxpr, vjp, vmap
from tracejax._src.custom_transforms import (custom_gradient, custom_transforms, defjvp,
                                             defjvp_all, defvjp, defvjp_all, jarrett)
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads


def close(a, b, tol=1e-5):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                             rtol=tol, atol=tol)


def sin_sq():
  return custom_transforms(lambda x: jnp.sin(x ** 2))


# ---- custom_transforms alone: the function's own derivatives ----

def test_custom_transforms_without_rules_is_the_function():
  f = sin_sq()
  assert "custom_transforms function" in repr(f)
  close(f(3.), np.sin(9.))
  close(grad(f)(3.), 6 * np.cos(9.))                   # 2x cos(x^2)
  close(jit(grad(f))(3.), 6 * np.cos(9.))
  xs = np.array([0.5, 1., 2.], np.float32)
  close(vmap(grad(f))(xs), [grad(f)(x) for x in xs])
  check_grads(f, (1.3,), order=2)


def test_docstring_example_defvjp_replaces_gradient():
  f = sin_sq()
  close(grad(f)(3.), -5.4667816)
  defvjp(f, lambda g, ans, x: g * x)
  close(f(3.), 0.4121185)
  close(grad(f)(3.), 3.)
  assert tracejax.jit(grad(f))(3.) == 3.


# ---- defjvp_all ----

def test_defjvp_all_forward_reverse_and_higher_order():
  f = sin_sq()
  defjvp_all(f, lambda p, t: (f(p[0]), 2 * p[0] * jnp.cos(p[0] ** 2) * t[0]))
  y, t = jvp(f, (3.,), (1.,))
  close(y, 0.4121185)
  close(t, -5.4667816)
  close(grad(f)(3.), -5.4667816)                       # by transposing the rule
  x = 1.1
  close(grad(grad(f))(x), 2 * np.cos(x * x) - 4 * x * x * np.sin(x * x), 1e-4)
  close(jit(grad(f))(x), 2 * x * np.cos(x * x))
  check_grads(f, (0.7,), order=2, modes=("fwd", "rev"))


def test_defjvp_all_rule_is_what_gets_differentiated():
  f = custom_transforms(lambda x: jnp.sin(x))
  defjvp_all(f, lambda p, t: (jnp.sin(p[0]), 10. * t[0]))   # deliberately not cos
  close(grad(f)(0.3), 10.)
  close(jvp(f, (0.3,), (2.,))[1], 20.)
  xs = np.linspace(0., 1., 3).astype(np.float32)
  close(vmap(grad(f))(xs), [10.] * 3)
  close(jit(vmap(grad(f)))(xs), [10.] * 3)


def test_defjvp_all_pytrees():
  @custom_transforms
  def f(d, pair):
    return {"s": d["a"] * pair[0], "t": (jnp.sin(d["b"]), pair[1] ** 2)}

  def f_jvp(primals, tangents):
    (d, pair), (dd, dpair) = primals, tangents
    out = f(d, pair)
    tout = {"s": dd["a"] * pair[0] + d["a"] * dpair[0],
            "t": (jnp.cos(d["b"]) * dd["b"], 2 * pair[1] * dpair[1])}
    return out, tout
  defjvp_all(f, f_jvp)
  d = {"a": 2., "b": 0.5}
  pair = (3., 4.)
  out, tout = jvp(f, (d, pair), ({"a": 1., "b": 1.}, (0., 1.)))
  close(out["s"], 6.)
  close(tout["s"], 3.)
  close(tout["t"][0], np.cos(0.5))
  close(tout["t"][1], 8.)
  g = grad(lambda d, p: f(d, p)["s"] + f(d, p)["t"][0] + f(d, p)["t"][1], argnums=(0, 1))(d, pair)
  close(g[0]["a"], 3.)
  close(g[0]["b"], np.cos(0.5))
  close(g[1][0], 2.)
  close(g[1][1], 8.)
  check_grads(lambda a, b: f({"a": a, "b": b}, (a, b))["t"][0] * f({"a": a, "b": b}, (a, b))["s"],
              (0.4, 0.9), order=2)


def test_defjvp_all_tree_mismatch_is_an_error():
  f = custom_transforms(lambda x: (x, x))
  defjvp_all(f, lambda p, t: ((p[0], p[0]), t[0]))
  with pytest.raises(TypeError, match="tree structures"):
    jvp(f, (1.,), (1.,))


# ---- defjvp (one rule per argument) ----

def test_defjvp_two_arguments():
  f = custom_transforms(lambda x, y: jnp.sin(x ** 2 + y))
  defjvp(f, lambda g, ans, x, y: jnp.cos(x ** 2 + y) * 2 * x * g,
         lambda g, ans, x, y: jnp.cos(x ** 2 + y) * g)
  y, t = jvp(f, (2., 3.), (1., 1.))
  close(y, np.sin(7.))
  close(t, 5 * np.cos(7.))                             # (2x + 1) cos(x^2 + y)
  gx, gy = grad(f, argnums=(0, 1))(2., 3.)
  close(gx, 4 * np.cos(7.))
  close(gy, np.cos(7.))
  check_grads(f, (0.6, 0.2), order=2)
  xs = np.array([0., 0.5, 1.], np.float32)
  ys = np.array([1., 2., 3.], np.float32)
  close(vmap(grad(f, 1))(xs, ys), [grad(f, 1)(a, b) for a, b in zip(xs, ys)])
  close(jvp(vmap(f), (xs, ys), (np.ones(3, np.float32), np.zeros(3, np.float32)))[1],
        2 * xs * np.cos(xs ** 2 + ys))


def test_defjvp_none_rule_and_integer_argument():
  f = custom_transforms(lambda x, n: x ** n)
  defjvp(f, lambda g, ans, x, n: g * n * x ** (n - 1), None)
  close(grad(f)(2., 3), 12.)
  close(jvp(lambda x: f(x, 3), (2.,), (1.,))[1], 12.)
  h = custom_transforms(lambda x, y: x * y)
  defjvp(h, None, lambda g, ans, x, y: g * x)
  close(grad(h, argnums=(0, 1))(2., 5.), (0., 2.))     # no rule for x: zero


def test_defjvp_wrong_number_of_rules():
  f = custom_transforms(lambda x, y: x * y)
  defjvp(f, lambda g, ans, x, y: g * y)
  with pytest.raises(TypeError, match="2 positional arguments but 1 JVP rules"):
    grad(f)(1., 2.)


# ---- defvjp_all and defvjp ----

def test_defvjp_all_docstring_example():
  f = custom_transforms(lambda x, y: x * y)
  defvjp_all(f, lambda x, y: (x * y, lambda g: (y * g, x * g)))
  ans, f_vjp = vjp(f, 3., 4.)
  close(ans, 12.)
  cx, cy = f_vjp(1.)
  close(cx, 4.)
  close(cy, 3.)


def test_defvjp_all_closure_residuals_grad_of_grad():
  f = custom_transforms(lambda x: jnp.sin(x))
  defvjp_all(f, lambda x: (jnp.sin(x), lambda g: (g * jnp.cos(x),)))
  x = 0.9
  close(grad(f)(x), np.cos(x))
  close(grad(grad(f))(x), -np.sin(x))                  # the vjp closure is differentiated
  close(grad(grad(grad(f)))(x), -np.cos(x))
  close(jit(grad(grad(f)))(x), -np.sin(x))
  xs = np.array([0., 1., 2.], np.float32)
  close(vmap(grad(f))(xs), np.cos(xs))
  close(grad(lambda v: jnp.sum(vmap(f)(v)))(xs), np.cos(xs))
  close(vmap(grad(grad(f)))(xs), [grad(grad(f))(v) for v in xs])
  check_grads(f, (0.3,), order=2, modes=("rev",))


def test_defvjp_all_rule_is_used_and_forward_mode_is_an_error():
  @custom_transforms
  def clip_gradient(x):
    return x

  defvjp_all(clip_gradient, lambda x: (x, lambda g: (jnp.clip(g, -1., 1.),)))
  close(grad(lambda x: 5. * clip_gradient(x))(2.), 1.)
  close(grad(lambda x: -5. * clip_gradient(x))(2.), -1.)
  with pytest.raises(TypeError, match="forward-mode"):
    jvp(clip_gradient, (1.,), (1.,))


def test_defvjp_all_pytrees_and_errors():
  @custom_transforms
  def p(d):
    return {"a": d["x"] * d["y"], "b": jnp.sin(d["x"])}

  defvjp_all(p, lambda d: (p.fun(d), lambda ct: (
      {"x": ct["a"] * d["y"] + ct["b"] * jnp.cos(d["x"]), "y": ct["a"] * d["x"]},)))
  g = grad(lambda d: p(d)["a"] + p(d)["b"])({"x": 2., "y": 3.})
  close(g["x"], 3. + np.cos(2.))
  close(g["y"], 2.)
  q = custom_transforms(lambda x, y: x + y)
  defvjp_all(q, lambda x, y: (x + y, lambda g: (g,)))
  with pytest.raises(TypeError, match="1 cotangents for 2 positional arguments"):
    grad(q)(1., 2.)


def test_defvjp_per_argument():
  f = custom_transforms(lambda x, y: jnp.sin(x ** 2 + y))
  defvjp(f, lambda g, ans, x, y: g * jnp.cos(x ** 2 + y) * 2 * x,
         lambda g, ans, x, y: g * jnp.cos(x ** 2 + y))
  val, f_vjp = vjp(f, 3., 4.)
  close(val, np.sin(13.))
  cx, cy = f_vjp(1.)
  close(cx, 6 * np.cos(13.))
  close(cy, np.cos(13.))
  check_grads(f, (0.5, 0.25), order=1, modes=("rev",))
  h = custom_transforms(lambda x, n: x ** n)
  defvjp(h, lambda g, ans, x, n: g * n * x ** (n - 1), None)
  close(grad(h)(2., 3), 12.)
  xs = np.array([1., 2., 3.], np.float32)
  close(vmap(grad(h), (0, None))(xs, 3), 3 * xs ** 2)


def test_defvjp_uses_ans():
  f = custom_transforms(jnp.exp)
  defvjp(f, lambda g, ans, x: g * ans)
  close(grad(f)(0.5), np.exp(0.5))
  close(grad(grad(f))(0.5), np.exp(0.5), 1e-4)


# ---- custom_gradient ----

def test_custom_gradient_examples():
  @custom_gradient
  def f(x):
    return x ** 2, lambda g: (g * x,)
  close(f(3.), 9.)
  close(grad(f)(3.), 3.)                                # the custom rule, not 2x

  @custom_gradient
  def h(x, y):
    return x * y, lambda g: (y, x)
  close(h(3., 4.), 12.)
  gx, gy = grad(h, argnums=(0, 1))(3., 4.)
  close(gx, 4.)
  close(gy, 3.)
  assert isinstance(gx, tracejax.Array)

  @custom_gradient
  def bare(x):                                          # TF style: a bare cotangent
    return jnp.sin(x), lambda g: g * jnp.cos(x)
  close(grad(bare)(0.2), np.cos(0.2))
  close(jit(vmap(grad(bare)))(np.array([0., 0.2], np.float32)), np.cos([0., 0.2]))
  check_grads(bare, (0.4,), order=2, modes=("rev",))


# ---- jarrett ----

def test_jarrett_elementwise():
  f = jarrett(lambda x: jnp.sin(jnp.cos(x)))
  x = np.array([0.5, 1., 2.], np.float32)
  close(f(x), np.sin(np.cos(x)))
  d = -np.cos(np.cos(x)) * np.sin(x)
  close(grad(lambda v: jnp.sum(f(v)))(x), d)
  close(jvp(f, (x,), (np.ones(3, np.float32),))[1], d)
  close(jit(grad(lambda v: jnp.sum(f(v))))(x), d)
  check_grads(f, (x,), order=2)


def test_jarrett_two_arguments():
  f = jarrett(lambda x, y: x * jnp.sin(y))
  x, y = np.array([1., 2.], np.float32), np.array([0.3, 0.4], np.float32)
  t = jvp(f, (x, y), (np.ones(2, np.float32), np.full(2, 2., np.float32)))[1]
  close(t, np.sin(y) + 2 * x * np.cos(y))
  gx, gy = grad(lambda a, b: jnp.sum(f(a, b)), argnums=(0, 1))(x, y)
  close(gx, np.sin(y))
  close(gy, x * np.cos(y))
  check_grads(f, (x, y), order=2)
  with pytest.raises(TypeError, match="floating-point"):
    grad(jarrett(lambda x, n: x * n))(2., 3)


def test_jarrett_float64(x64):
  f = jarrett(lambda x: jnp.tanh(x) ** 2)
  x = np.linspace(-1., 1., 4)
  g = grad(lambda v: jnp.sum(f(v)))(x)
  assert g.dtype == np.float64
  np.testing.assert_allclose(np.asarray(g), 2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-12)


# ---- closures and transformations around the call ----

def test_closures():
  c = jnp.array([1., 2.])
  f = custom_transforms(lambda x: x * c)                 # closes over a constant array
  defjvp(f, lambda t, ans, x: t * c)
  close(jit(grad(lambda x: jnp.sum(f(x))))(3.), 3.)
  close(vmap(f)(np.arange(3., dtype=np.float32)), np.arange(3.)[:, None] * [1., 2.])

  def outer(y):                                          # closes over a vmap/jit tracer
    g = custom_transforms(lambda x: x * y)
    defjvp(g, lambda t, ans, x: t * y)
    return grad(g)(2.)
  ys = np.array([0., 1., 2.], np.float32)
  close(vmap(outer)(ys), ys)
  close(jit(outer)(5.), 5.)

  def diff_closed_over(w):                              # differentiated closed-over value
    g = custom_transforms(lambda x: x * w)
    defjvp(g, lambda t, ans, x: t * w)
    return g(3.)
  with pytest.raises(ValueError, match="closed-over values"):
    grad(diff_closed_over)(2.)

  def diff_closed_over_vjp(w):
    g = custom_transforms(lambda x: x * w)
    defvjp(g, lambda ct, ans, x: ct * w)
    return g(3.)
  with pytest.raises(ValueError, match="outside the scope"):
    grad(diff_closed_over_vjp)(2.)


def test_jaxpr_and_kwargs():
  f = custom_transforms(lambda x, scale=2.: x * scale)
  defjvp(f, lambda g, ans, x, scale: g * scale, None)
  close(f(3., scale=4.), 12.)
  close(grad(lambda x: f(x, scale=4.))(3.), 4.)
  text = str(make_jaxpr(f)(1.))
  assert "custom_jvp_call" in text and "<lambda>" in text


def test_bad_input():
  with pytest.raises(TypeError, match="callable"):
    custom_transforms(3)
  with pytest.raises(TypeError, match="requires a custom_transforms function"):
    defjvp(jnp.sin, lambda g, ans, x: g)
  with pytest.raises(TypeError, match="requires a custom_transforms function"):
    defvjp_all(lambda x: x, lambda x: (x, lambda g: (g,)))
  with pytest.raises(TypeError, match="rule 0 must be callable"):
    defvjp(sin_sq(), 3)
  with pytest.raises(TypeError, match="not a valid JAX type"):
    f = sin_sq()
    defjvp(f, lambda g, ans, x: g)
    f("a")


def test_public_names():
  for name in ("custom_transforms", "defjvp", "defjvp_all", "defvjp", "defvjp_all",
               "custom_gradient", "jarrett"):
    assert getattr(api, name) is getattr(tracejax, name)


def test_jacobians_and_hessians():
  x = np.array([0.5, 1.], np.float32)
  j = jarrett(jnp.tanh)
  d = 1 / np.cosh(x) ** 2
  close(tracejax.jacfwd(j)(x), np.diag(d))
  close(tracejax.jacrev(j)(x), np.diag(d))
  f = custom_transforms(lambda v: jnp.sum(jnp.sin(v ** 2)))
  defjvp(f, lambda g, ans, v: jnp.sum(jnp.cos(v ** 2) * 2 * v * g))
  close(tracejax.hessian(f)(x), np.diag(2 * np.cos(x ** 2) - 4 * x ** 2 * np.sin(x ** 2)), 1e-4)
  g = custom_gradient(lambda v: (jnp.sum(v ** 3), lambda ct: (ct * 3 * v ** 2,)))
  close(tracejax.hessian(g)(x), np.diag(6 * x))
