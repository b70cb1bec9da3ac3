"""Tests of `jax.experimental.jet` (Taylor mode) against nested `jvp` and by hand."""
import math

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.experimental.jet import jet, jet_rules, zero_series, zero_term


def _repeated_jvp(f, x, series):
  """Derivatives 1..K of t -> f(x + sum_k s_k t^k / k!) at 0, by nested jvp (jitted)."""
  K = len(series)

  def curve(t):
    return x + sum(s * t ** (k + 1) / math.factorial(k + 1) for k, s in enumerate(series))

  g = lambda t: f(curve(t))
  derivs = []
  d = g
  for _ in range(K):
    d = (lambda h: lambda t: jax.jvp(h, (t,), (jnp.ones_like(t),))[1])(d)
    derivs.append(d)
  t0 = jnp.zeros((), x.dtype)
  return [np.asarray(jax.jit(d)(t0)) for d in derivs]


X = np.array([0.3, 0.7])
S = [np.array([1.0, -0.5]), np.array([0.2, 0.1]), np.array([-0.3, 0.4])]

UNARY = {
    "exp2": jnp.exp2, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "exp": jnp.exp, "log": jnp.log,
    "log1p": jnp.log1p, "expm1": jnp.expm1, "tanh": jnp.tanh, "sinh": jnp.sinh,
    "cosh": jnp.cosh, "logistic": lax.logistic, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt,
    "cbrt": jnp.cbrt, "asin": jnp.arcsin, "acos": jnp.arccos, "atan": jnp.arctan,
    "asinh": jnp.arcsinh, "atanh": jnp.arctanh, "acosh": lambda x: jnp.arccosh(x + 1.5),
    "erf": lax.erf, "erfc": lax.erfc,
    "integer_pow3": lambda x: x ** 3, "integer_pow_neg": lambda x: x ** -2,
    "square": lax.square, "pow_const": lambda x: x ** 1.7, "pow_xx": lambda x: x ** x,
    "div": lambda x: jnp.sin(x) / jnp.cos(x + 1), "div_const": lambda x: x / 3.0,
    "abs": lambda x: jnp.abs(x - 0.5), "atan2": lambda x: jnp.arctan2(x, x ** 2 + 1),
    "max": lambda x: jnp.maximum(jnp.sin(x), 0.5), "min": lambda x: jnp.minimum(x, 0.5),
    "clamp": lambda x: lax.clamp(0.4, x, 0.6) * x,
    "reduce_max": lambda x: jnp.max(x * x), "reduce_min": lambda x: jnp.min(jnp.exp(x)),
    "reduce_sum": lambda x: jnp.sum(jnp.sin(x) * x),
    "dot": lambda x: jnp.dot(jnp.sin(x), x) + jnp.outer(x, x) @ x,
    "structural": lambda x: jnp.concatenate([x, x ** 2])[1:3].reshape(2, 1).T[0, ::-1],
    "broadcast": lambda x: jnp.exp(jnp.broadcast_to(x, (3, 2))).sum(0),
    "expand_squeeze": lambda x: jnp.squeeze(jnp.expand_dims(x, 0) * 2.0, 0),
    "cumsum": lambda x: jnp.cumsum(jnp.exp(x)),
    "sort": lambda x: lax.sort(jnp.sin(x * 9.0)) * jnp.arange(2.0),
    "where": lambda x: jnp.where(x > 0.5, jnp.sin(x), x ** 2),
    "convert": lambda x: lax.convert_element_type(x, np.float32).astype(x.dtype) * x,
    "pad_dynamic": lambda x: lax.dynamic_slice(jnp.pad(x ** 2, 1), (1,), (2,)),
    "stop_gradient": lambda x: lax.stop_gradient(x) * x,
    "sign_floor": lambda x: jnp.sign(x) * jnp.floor(x + 1.0) * x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_rule_vs_repeated_jvp(name, x64):
  f = UNARY[name]
  x = jnp.asarray(X)
  series = [jnp.asarray(s) for s in S]
  y, terms = jet(f, (x,), (series,))
  np.testing.assert_allclose(np.asarray(y), np.asarray(f(x)), rtol=1e-12)
  expected = _repeated_jvp(f, x, series)
  for k, (got, want) in enumerate(zip(terms, expected)):
    rtol = 1e-6 if name == "convert" else 1e-9  # that one rounds through float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-11,
                               err_msg=f"{name} term {k + 1}")


def test_hand_derived(x64):
  # exp along a straight line: the k-th derivative is e^x v^k.
  x, v = 0.5, 2.0
  y, terms = jet(jnp.exp, (x,), ([v, 0.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [np.exp(x) * v ** k for k in range(1, 5)], rtol=1e-12)
  # sin: cos, -sin, -cos at a unit speed.
  _, terms = jet(jnp.sin, (1.0,), ([1.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [np.cos(1), -np.sin(1), -np.cos(1)], rtol=1e-12)
  # second-order input term: d2/dt2 sin(1 + t + t^2/2) = -sin(1) + cos(1).
  _, terms = jet(jnp.sin, (1.0,), ([1.0, 1.0, 0.0],))
  np.testing.assert_allclose(terms[1], -np.sin(1) + np.cos(1), rtol=1e-12)
  # x^3 at 0 is exact (no division by the primal): derivatives 0, 0, 6 v^3.
  _, terms = jet(lambda x: x ** 3, (0.0,), ([2.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [0.0, 0.0, 48.0], atol=1e-12)
  # product of two curves: (1 + t)(2 + t^2/2).
  y, terms = jet(lambda a, b: a * b, (1.0, 2.0), ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]))
  np.testing.assert_allclose([y] + list(terms), [2.0, 2.0, 1.0, 3.0], rtol=1e-12)
  # reduce_max with a tie averages the tied entries' terms.
  _, (t1,) = jet(jnp.max, (jnp.array([1.0, 3.0, 3.0]),), ([jnp.array([1.0, 2.0, 4.0])],))
  np.testing.assert_allclose(t1, 3.0)


def test_zero_series_and_terms():
  # Linear functions have zero higher terms (symbolic, returned as zero arrays).
  y, terms = jet(lambda x: 2.0 * x, (1.0,), ([1.0, 0.0, 0.0],))
  np.testing.assert_allclose(terms, [2.0, 0.0, 0.0])
  # A constant output.
  y, terms = jet(lambda x: jnp.ones(2), (1.0,), ([1.0, 0.0],))
  assert [np.shape(t) for t in terms] == [(2,), (2,)]
  np.testing.assert_allclose(terms, np.zeros((2, 2)))
  # zero_series / zero_term inputs.
  y, terms = jet(lambda a, b: a * b, (1.0, 2.0), ([1.0, zero_term], zero_series))
  np.testing.assert_allclose(terms, [2.0, 0.0])
  y, terms = jet(lambda a, b: a * b, (1.0, 2.0), ([1.0, zero_term], [1.0, 2.0]))
  np.testing.assert_allclose(terms, [3.0, 4.0])
  # An empty series is order 0.
  y, terms = jet(jnp.sin, (1.0,), ([],))
  assert terms == []


def test_pytree_outputs_and_multiple_inputs():
  f = lambda x, y: (jnp.sin(x) * y, {"a": x + y})
  x, y = jnp.array([0.1, 0.2]), jnp.array([1.0, 2.0])
  (p, d), (s0, s1) = jet(f, (x, y), ([jnp.ones(2), jnp.zeros(2)], [jnp.ones(2), jnp.ones(2)]))
  assert set(s1) == {"a"} and len(s0) == 2 and len(s1["a"]) == 2
  np.testing.assert_allclose(s1["a"][0], 2 * np.ones(2))
  np.testing.assert_allclose(s1["a"][1], np.ones(2))
  want = np.cos(x) * y + np.sin(x)
  np.testing.assert_allclose(s0[0], want, rtol=1e-6)


def test_jit_inside_and_outside(x64):
  inner = jax.jit(lambda x: jnp.exp(jnp.sin(x)) * x)
  f = lambda x: inner(x) + 1.0
  x, series = jnp.asarray(X), [jnp.asarray(s) for s in S]
  y, terms = jet(f, (x,), (series,))
  want = _repeated_jvp(f, x, series)
  for got, w in zip(terms, want):
    np.testing.assert_allclose(got, w, rtol=1e-10)
  y2, terms2 = jax.jit(lambda x, s: jet(f, (x,), (s,)))(x, series)
  for got, w in zip(terms2, want):
    np.testing.assert_allclose(got, w, rtol=1e-10)
  np.testing.assert_allclose(y2, y)
  from tracejax._src.core import ir
  ir.check_jaxpr(jax.make_jaxpr(lambda x, s: jet(f, (x,), (s,)))(x, series).jaxpr)


def test_custom_jvp_uses_function_body(x64):
  @jax.custom_jvp
  def f(x):
    return jnp.sin(x) * x

  f.defjvp(lambda p, t: (f(p[0]), (jnp.cos(p[0]) * p[0] + jnp.sin(p[0])) * t[0]))
  x, series = jnp.asarray(X), [jnp.asarray(s) for s in S]
  _, terms = jet(f, (x,), (series,))
  want = _repeated_jvp(lambda x: jnp.sin(x) * x, x, series)
  for got, w in zip(terms, want):
    np.testing.assert_allclose(got, w, rtol=1e-10)


def test_nested_jet(x64):
  # The first term of an inner jet, Taylor-expanded again by an outer jet: the mixed
  # derivative d/ds [f'(x(s)) v] with x(s) = x + s u.
  def first_deriv(x):
    return jet(jnp.sin, (x,), ([2.0],))[1][0]    # 2 cos(x)

  y, (t1, t2) = jet(first_deriv, (0.3,), ([1.0, 0.0],))
  np.testing.assert_allclose([y, t1, t2], [2 * np.cos(0.3), -2 * np.sin(0.3), -2 * np.cos(0.3)],
                             rtol=1e-12)


def test_grad_and_vmap_of_jet(x64):
  def third(x):
    return jet(jnp.sin, (x,), ([1.0, 0.0, 0.0],))[1][2]  # -cos(x)

  np.testing.assert_allclose(jax.grad(third)(0.4), np.sin(0.4), rtol=1e-12)
  xs = jnp.array([0.1, 0.2, 0.3])
  np.testing.assert_allclose(jax.vmap(third)(xs), -np.cos(xs), rtol=1e-12)
  np.testing.assert_allclose(jax.jit(jax.vmap(third))(xs), -np.cos(xs), rtol=1e-12)


def test_rule_table_convention_and_user_rule():
  from tracejax import core
  # The built-in rules answer in the derivative convention when called directly.
  rule = jet_rules[lax.exp_p]
  y, terms = rule((jnp.float32(0.0),), [[jnp.float32(1.0), jnp.float32(0.0)]])
  np.testing.assert_allclose(terms, [1.0, 1.0], rtol=1e-6)

  # A user primitive with a rule in JAX's (derivative) convention.
  cube_p = core.Primitive("jet_test_cube")
  cube_p.def_impl(lambda x: x * x * x)
  cube_p.def_abstract_eval(lambda a: a)

  def cube_rule(primals, series):
    (x,), ((x1, x2),) = primals, series
    return x ** 3, [3 * x ** 2 * x1, 6 * x * x1 ** 2 + 3 * x ** 2 * x2]

  jet_rules[cube_p] = cube_rule
  try:
    y, (t1, t2) = jet(cube_p.bind, (2.0,), ([1.0, 1.0],))
    np.testing.assert_allclose([y, t1, t2], [8.0, 12.0, 12.0 + 12.0], rtol=1e-6)
  finally:
    del jet_rules[cube_p]


def test_errors():
  with pytest.raises(ValueError, match="inconsistent lengths"):
    jet(jnp.sin, (1.0, 2.0), ([1.0, 0.0], [1.0]))
  with pytest.raises(TypeError, match="primals must be a tuple"):
    jet(jnp.sin, 1.0, ([1.0],))
  with pytest.raises(ValueError, match="shape"):
    jet(jnp.sin, (jnp.ones(2),), ([jnp.ones(3)],))
  with pytest.raises(ValueError, match="not an array"):
    jet(lambda t: t[0], ((1.0, 2.0),), ([1.0],))
  with pytest.raises(TypeError, match="series\\[0\\]"):
    jet(jnp.sin, (1.0,), (1.0,))
  with pytest.raises(NotImplementedError, match="Jet rule for 'cumprod'"):
    jet(lax.cumprod, (jnp.ones(3),), ([jnp.ones(3)],))


def _unrolled_scan(x):
  c, ys = x, []
  for a in (1.0, 2.0, 3.0):
    ys.append(c * c)
    c = jnp.sin(c) * a + x
  return c + sum(ys)


def _unrolled_tanh(x):
  for _ in range(3):
    x = jnp.tanh(x) * 1.5
  return x


CONTROL_FLOW = {
    "cond": (lambda x: lax.cond(x > 0, lambda x: jnp.sin(x) * x, lambda x: jnp.cos(x), x),
             lambda x: jnp.sin(x) * x),
    "scan": (lambda x: (lambda c, ys: c + ys.sum())(*lax.scan(
        lambda c, a: (jnp.sin(c) * a + x, c * c), x, jnp.arange(1.0, 4.0))), _unrolled_scan),
    "while": (lambda x: lax.while_loop(lambda c: c[0] < 3,
                                       lambda c: (c[0] + 1, jnp.tanh(c[1]) * 1.5, c[2]),
                                       (0, x, 2.0))[1], _unrolled_tanh),
    "fori": (lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.tanh(c) * 1.5, x), _unrolled_tanh),
}


@pytest.mark.parametrize("name", sorted(CONTROL_FLOW))
def test_control_flow(name, x64):
  f, unrolled = CONTROL_FLOW[name]
  series = [jnp.asarray(1.0), jnp.asarray(0.5), jnp.asarray(-0.2)]
  y, terms = jet(f, (0.4,), (series,))
  y2, terms2 = jet(unrolled, (0.4,), (series,))
  np.testing.assert_allclose(y, y2, rtol=1e-12)
  np.testing.assert_allclose(terms, terms2, rtol=1e-10)
  want = _repeated_jvp(unrolled, jnp.asarray(0.4), series)
  np.testing.assert_allclose(terms, want, rtol=1e-10)
