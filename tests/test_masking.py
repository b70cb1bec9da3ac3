"""Tests of the 2020 shape-polymorphism API: `jax.mask` and `jax.shapecheck`."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax, mask, shapecheck
from tracejax._src.experimental.masking import Poly, ShapeError, parse_spec


def test_parse_spec():
  n, m = Poly.var("n"), Poly.var("m")
  assert parse_spec("n") == (n,)
  assert parse_spec("(n, _)")[0] == n and str(parse_spec("(n, _)")[1]) == "_"
  assert parse_spec("(n+1,)") == (n + 1,)
  assert parse_spec("2*n") == (2 * n,)
  assert parse_spec("") == ()
  assert parse_spec("(n, 3, m*n - 1)") == (n, 3, m * n - 1)
  assert parse_spec("(2*(n+1), )") == (2 * n + 2,)
  assert (n + 1) * (n - 1) == n * n - 1
  assert (n + 2) - 2 == n and 2 * n - n - n == 0
  assert (3 * n + m).evaluate({"n": 2, "m": 5}) == 11
  with pytest.raises(ValueError, match="shape spec"):
    parse_spec("(n, +)")
  with pytest.raises(TypeError, match="string"):
    parse_spec(3)


def test_padded_sum():
  padded_sum = mask(jnp.sum, ["n"], "")
  x = jnp.array([3, 1, 4, 1, 5])
  assert int(padded_sum([x], dict(n=3))) == 8
  assert int(padded_sum([x], dict(n=5))) == 14
  assert int(padded_sum([x], dict(n=0))) == 0


def test_reductions_and_elementwise():
  x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
  for jfn, nfn, spec_out in [(jnp.max, np.max, "_"), (jnp.min, np.min, "_"),
                             (jnp.sum, np.sum, "_"), (jnp.prod, np.prod, "_"),
                             (jnp.argmax, np.argmax, "_")]:
    f = mask(lambda x: jfn(jnp.sin(x) * 2.0 + 1.0, axis=0), ["(n, _)"], spec_out)
    for n in (1, 2, 5):
      want = nfn(np.sin(x[:n]) * 2 + 1, axis=0)
      np.testing.assert_allclose(f([x], dict(n=n)), want, rtol=1e-5, err_msg=f"{jfn} {n}")
  # Reducing the other axis keeps the polymorphic one: the logical part of the output.
  g = mask(lambda x: jnp.max(jnp.exp(x), axis=1), ["(n, _)"], "n")
  np.testing.assert_allclose(g([x], dict(n=2))[:2], np.exp(x[:2]).max(1), rtol=1e-6)
  # Two polymorphic axes.
  h = mask(lambda x: jnp.sum(x * x), ["(n, m)"], "")
  np.testing.assert_allclose(h([x], dict(n=3, m=2)), np.sum(x[:3, :2] ** 2), rtol=1e-5)


def test_concatenate_places_logical_pieces():
  cat = mask(lambda x, y: jnp.concatenate([x, y]), ["n", "m"], "n+m")
  out = cat([jnp.arange(5.0), 10 + jnp.arange(4.0)], dict(n=2, m=3))
  assert out.shape == (9,)
  np.testing.assert_allclose(out[:5], [0, 1, 10, 11, 12])
  twice = mask(lambda x: jnp.sum(jnp.concatenate([x, x * 2])), ["n"], "")
  np.testing.assert_allclose(twice([jnp.arange(6.0)], dict(n=4)), 3 * (0 + 1 + 2 + 3))


def test_dot_cumsum_where():
  rng = np.random.default_rng(1)
  a = rng.standard_normal((4, 5)).astype(np.float32)
  b = rng.standard_normal((5, 2)).astype(np.float32)
  a[:, 3:] = np.nan  # garbage in the padding must not leak through the contraction
  f = mask(lambda a, b: jnp.tanh(a @ b), ["(_, k)", "(k, _)"], "(_, _)")
  np.testing.assert_allclose(f([a, b], dict(k=3)), np.tanh(a[:, :3] @ b[:3]), rtol=1e-5)
  for cs in (jnp.cumsum, lax.cumsum):
    c = mask(cs, ["n"], "n")
    np.testing.assert_allclose(c([jnp.arange(1.0, 6.0)], dict(n=3))[:3], [1, 3, 6])
  # Unit-stride slices of a polymorphic axis count from the logical end.
  sl = mask(lambda x: x[1:] - x[:-1], ["n"], "n-1")
  np.testing.assert_allclose(sl([jnp.array([1.0, 4.0, 9.0, 0.0, 0.0])], dict(n=3))[:2], [3, 5])
  rc = mask(lambda x: lax.cumsum(x, reverse=True), ["n"], "n")
  np.testing.assert_allclose(rc([jnp.arange(1.0, 6.0)], dict(n=3))[:3], [6, 5, 3])
  w = mask(lambda x: jnp.sum(jnp.where(x > 2, x, 0.0)), ["n"], "")
  np.testing.assert_allclose(w([jnp.arange(6.0)], dict(n=5)), 3 + 4)


def test_jit_vmap_grad():
  x = jnp.arange(5.0)
  s = mask(jnp.sum, ["n"], "")
  np.testing.assert_allclose(jax.jit(lambda x, n: s([x], dict(n=n)))(x, 3), 3.0)
  from tracejax._src.core import ir
  cat = mask(lambda x: jnp.concatenate([x, x]), ["n"], "2*n")
  ir.check_jaxpr(jax.make_jaxpr(lambda x, n: cat([x], dict(n=n)))(x, 3).jaxpr)
  by_n = jax.vmap(lambda n: s([x], dict(n=n)))(jnp.arange(6))
  np.testing.assert_allclose(by_n, [sum(range(k)) for k in range(6)])
  g = jax.grad(lambda x: s([x ** 2], dict(n=2)))(x)
  np.testing.assert_allclose(g, [0, 2, 0, 0, 0])
  # jit inside the masked function.
  inner = jax.jit(lambda v: jnp.sum(v * 2))
  np.testing.assert_allclose(mask(inner, ["n"], "")([x], dict(n=4)), 12.0)


def test_mask_errors():
  s = mask(jnp.sum, ["n"], "")
  with pytest.raises(ValueError, match="no size for"):
    s([jnp.ones(3)], {})
  with pytest.raises(ValueError, match="exceeds"):
    s([jnp.ones(3)], dict(n=4))
  with pytest.raises(TypeError, match="pytree"):
    s([jnp.ones(3), jnp.ones(3)], dict(n=2))
  with pytest.raises(ShapeError, match="out_shape"):
    mask(lambda x: x, ["n"], "")([jnp.ones(3)], dict(n=2))
  with pytest.raises(ShapeError, match="rank"):
    s([jnp.ones((3, 2))], dict(n=2))
  with pytest.raises(ShapeError, match="incompatible"):
    mask(lambda x, y: lax.add(x, y), ["n", "m"], "n")([jnp.ones(3), jnp.ones(3)],
                                                      dict(n=2, m=3))
  with pytest.raises(NotImplementedError, match="Masking rule for 'sort'"):
    mask(lambda x: lax.sort(x), ["n"], "n")([jnp.ones(3)], dict(n=2))


def test_shapecheck():
  @shapecheck(["n"], "2*n")
  def f(x):
    return jnp.concatenate([x, x])

  assert f(jnp.ones(2)).shape == (4,)  # returns the function itself
  shapecheck(["(n, _)", "n"], "(n, _)")(lambda x, y: jnp.where(x > 0, x, 0.0) * y[:, None])
  shapecheck(["(n, m)", "(m, k)"], "(n, k)")(lambda a, b: jnp.tanh(a @ b))
  shapecheck(["n"], "")(lambda x: jnp.sum(x) + jnp.max(x))
  shapecheck(["n", "m"], "n+m+1")(lambda x, y: jnp.concatenate([x, jnp.ones(1), y]))
  shapecheck(["(n, 3)"], "(3, n)")(lambda x: x.T)
  shapecheck(["(n, m)"], "(1, n, m)")(lambda x: jnp.expand_dims(x, 0))
  with pytest.raises(ShapeError, match="out_shape"):
    shapecheck(["n"], "n")(f)
  with pytest.raises(ShapeError):
    shapecheck(["n", "m"], "n")(lambda x, y: x + y)
  with pytest.raises(ShapeError):
    shapecheck(["(n, m)", "(n, m)"], "(n, m)")(lambda a, b: a @ b)
