"""Fuzzer finds of run 4 (seeds 304+, this session), fixed in tracejax.

Every expected value, dtype and weak type here was recorded from real JAX 0.10.2.
"""
import numpy as np

import tracejax as jax
import tracejax.numpy as jnp


def _typed(r):
  return (np.asarray(r).dtype.name, bool(r.weak_type))


# ---- weak bools: signbit of a Python int, isclose of ints/bools (seed 304 #231, #3024)

def test_signbit_of_python_int_is_a_strong_bool():
  assert _typed(jnp.signbit(0)) == ("bool", False)
  assert _typed(jnp.signbit(-3)) == ("bool", False) and bool(jnp.signbit(-3))
  assert _typed(jax.jit(jnp.signbit)(0)) == ("bool", False)


def test_isclose_is_never_weak():
  assert _typed(jnp.isclose(1, 7)) == ("bool", False)
  assert _typed(jnp.isclose(1., 7)) == ("bool", False)
  assert _typed(jnp.isclose(jnp.zeros((2, 0), bool), 7)) == ("bool", False)
  r = jax.vmap(lambda b: jnp.isclose(b, 7))(jnp.zeros((2, 0), bool))
  assert _typed(r) == ("bool", False) and r.shape == (2, 0)


def test_isclose_of_integers_compares_in_float():
  # JAX promotes integer and bool inputs to the default float type first: 2**24 + 1 and
  # 2**24 are one float32 apart at most, so close.
  ints = np.array([2**24 + 1, 2**24, 0, -5, 7], np.int32)
  got = np.asarray(jnp.isclose(ints[:, None], ints[None]))
  want = np.eye(5, dtype=bool)
  want[0, 1] = want[1, 0] = True
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(jnp.isclose(np.array([True, False]), True), [True, False])


def test_isclose_special_values():
  inf, nan = np.inf, np.nan
  a = np.array([inf, inf, -inf, nan, nan, 1., 1., 0.], np.float32)
  b = np.array([inf, -inf, -inf, nan, 1., inf, 1.000001, 1e-9], np.float32)
  np.testing.assert_array_equal(jnp.isclose(a, b),
                                [True, False, True, False, False, False, True, True])
  np.testing.assert_array_equal(jnp.isclose(a, b, equal_nan=True),
                                [True, False, True, True, False, False, True, True])
  # complex: an infinite real or imaginary part of b is close only to b itself
  c = np.array([1 + 1j, complex(inf, 1), complex(1, nan)], np.complex64)
  np.testing.assert_array_equal(jnp.isclose(c, c), [True, True, False])
  np.testing.assert_array_equal(jnp.isclose(c, c, equal_nan=True), [True, True, True])


# ---- a complex fill for a weakly typed real array keeps its real part (seed 304 #439)

def test_full_like_weak_real_with_complex_fill():
  import warnings
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # NumPy's ComplexWarning, which JAX gives too
    r = jnp.full_like(1, 1 - 2j)
    assert (_typed(r), int(r)) == (("int32", True), 1)
    r = jnp.full_like(jnp.asarray(1.), 1 - 2j)
    assert (_typed(r), float(r)) == (("float32", True), 1.0)
    assert bool(jnp.full_like(True, 2 - 2j)) is True
  # a strong real array: a TypeError, as in JAX
  import pytest
  with pytest.raises(TypeError):
    jnp.full_like(np.float32(1), 1 - 2j)


# ---- scipy.special.polygamma's order must be an integer (JAX 0.10.2, verbatim)

def test_polygamma_order_must_be_integer():
  import pytest
  from tracejax.scipy import special as sp
  for n, dt in [(1., "float32"), (np.float32(1), "float32"), (True, "bool"),
                (jnp.array([1., 2.]), "float32")]:
    with pytest.raises(ValueError, match=f"Argument `n` to polygamma must be of integer "
                                         f"type. Got dtype {dt}."):
      sp.polygamma(n, 2.)
  with pytest.raises(ValueError, match="must be of integer type"):
    jax.jit(sp.polygamma)(1., 2.)
  r = sp.polygamma(jnp.array([1, 2]), 2.)
  np.testing.assert_allclose(r, [0.64493406, -0.40411392], rtol=1e-6)
  assert _typed(r) == ("float32", True)
  assert _typed(sp.polygamma(np.int8(1), 2)) == ("float32", False)


# ---- sinc's derivatives at 0 are its Maclaurin terms (seed 306 #1686)

def test_sinc_derivatives_at_zero():
  # JAX 0.10.2: -pi**2/3, 0, pi**4/5 (float32, weak for a Python float)
  d2 = jax.grad(jax.grad(jnp.sinc))(0.)
  assert _typed(d2) == ("float32", True)
  np.testing.assert_allclose(d2, -3.2898684, rtol=1e-6)
  assert float(jax.grad(jax.grad(jax.grad(jnp.sinc)))(0.)) == 0.
  np.testing.assert_allclose(jax.grad(jax.grad(jax.grad(jax.grad(jnp.sinc))))(0.), 19.481821,
                             rtol=1e-6)
  x = np.float32([0., -0., 0.5, 1.])
  np.testing.assert_allclose(jax.vmap(jax.grad(jax.grad(jnp.sinc)))(x),
                             [-3.2898684, -3.2898684, -1.190227, 2.0000002], rtol=1e-5)
  np.testing.assert_allclose(jnp.sinc(x), [1., 1., 0.63661975, -2.7827534e-08], atol=1e-7)


# ---- lax.pow of a weak base and a Python int exponent is weak (seed 306 #1631)

def test_pow_python_int_exponent_keeps_weak_type():
  assert _typed(jax.jit(lambda x: jax.lax.pow(x, 2))(1 - 0.5j)) == ("complex64", True)
  assert _typed(jax.jit(lambda x: jax.lax.pow(x, 2))(1.5)) == ("float32", True)
  assert _typed(jax.jit(lambda x: jax.lax.pow(x, np.int32(2)))(1.5)) == ("float32", False)
  assert _typed(jax.lax.pow(np.float32([2.]), 3)) == ("float32", False)
  np.testing.assert_allclose(jax.jit(jax.grad(lambda v: jax.lax.pow(v, 2)))(1.5), 3.)


# ---- top_k's tangent is a gather of the input tangent (seed 306 #2382)

def test_top_k_tangent_weak_types():
  from tracejax import lax
  # JAX 0.10.2: the jvp keeps a weak tangent weak; grad at a Python float is strong
  # (the gather's transpose scatters into strong zeros).
  t = jax.jvp(lambda d: lax.top_k(jnp.ravel(d), 1)[0], (-1.5,), (jnp.ones_like(-1.5) * .5,))[1]
  assert _typed(t) == ("float32", True) and t.tolist() == [0.5]
  t = jax.jvp(lambda d: lax.top_k(jnp.ravel(d), 0)[0], (-1.5,), (jnp.ones_like(-1.5) * .5,))[1]
  assert _typed(t) == ("float32", True) and t.shape == (0,)
  g = jax.grad(lambda d: lax.top_k(jnp.ravel(d), 1)[0].sum())(1.5)
  assert _typed(g) == ("float32", False) and float(g) == 1.0
  x = np.float32([[3., 1., 2.], [0., -1., 5.]])
  np.testing.assert_array_equal(jax.jvp(lambda d: lax.top_k(d, 2)[0], (x,), (x * 2,))[1],
                                [[6., 4.], [10., 0.]])
  np.testing.assert_array_equal(jax.grad(lambda d: lax.top_k(d, 2)[0].sum())(x),
                                [[1., 0., 1.], [1., 0., 1.]])


# ---- grad through a user jit types the jit's tangent inputs as its primals
# (seed 306 #1631, seed 301 #1590 under grad)

def test_grad_through_jit_keeps_weak_cotangent():
  # JAX 0.10.2: complex64, weak_type=True, 0.651551-0.846143j
  f = jax.jit(lambda x: x ** x)
  r = jax.grad(lambda d: 0.0 + jnp.sum(jnp.real(f(d))))(1 - 0.5j)
  assert _typed(r) == ("complex64", True)
  np.testing.assert_allclose(r, 0.651551 - 0.846143j, rtol=1e-5)
  # JAX 0.10.2: weak_type=True, nan at -inf
  import tracejax.nn  # noqa: F401
  r = jax.grad(lambda d: jnp.sum(jax.nn.sparse_plus(jax.lax.reshape(d, (1,)))))(-np.inf)
  assert _typed(r) == ("float32", True) and np.isnan(r)


# ---- angle of a 0-d real input is in the default float type (seed 307, x64 on)

def test_angle_zero_d_real_goes_to_default_float():
  from tracejax._src.config import enable_x64
  # JAX 0.10.2 with x64: float64 for a 0-d float32/bfloat16, float32 for a 1-d float32
  with enable_x64():
    assert _typed(jnp.angle(np.float32(0.8))) == ("float64", False)
    assert _typed(jnp.angle(jnp.bfloat16(-1.1))) == ("float64", False)
    assert float(jnp.angle(jnp.bfloat16(-1.1))) == np.pi
    assert _typed(jnp.angle(np.float32([0.8]))) == ("float32", False)
    assert _typed(jnp.angle(np.float32(-2), deg=True)) == ("float64", False)
    # the cotangent of a weak input comes back weak through the strong conversion
    assert _typed(jax.vjp(jnp.angle, 0.5)[1](1.)[0]) == ("float64", True)
  assert _typed(jnp.angle(jnp.bfloat16(-1.1))) == ("float32", False)
  assert _typed(jax.vjp(jnp.angle, 0.5)[1](1.)[0]) == ("float32", True)


# ---- tril/triu keep a weak bool weak (lax.select, as JAX's) (seed 307 #3836)

def test_tril_triu_keep_weak_bool():
  b = jnp.less_equal(np.uint64([[0, 3], [1, 9]]), 3.0)
  assert _typed(b) == ("bool", True)
  r = jnp.tril(b, -1)
  assert _typed(r) == ("bool", True) and r.tolist() == [[False, False], [True, False]]
  assert _typed(jnp.triu(b)) == ("bool", True)


def test_top_k_tangent_of_empty_results():
  # seed 308: an empty batch axis, or k == 0 (JAX 0.10.2: empty tangents, no error)
  from tracejax import lax
  for shp, k in [((0, 5), 2), ((3, 0), 0), ((2, 4), 0), ((2, 0, 3), 1)]:
    x = np.ones(shp, np.float32)
    t = jax.jvp(lambda d: lax.top_k(d, k)[0], (x,), (x,))[1]
    assert t.shape == shp[:-1] + (k,) and t.dtype == np.float32
    assert jax.grad(lambda d: lax.top_k(d, k)[0].sum())(x).shape == shp
