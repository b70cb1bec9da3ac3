"""Disagreements with JAX found by tools/fuzz_vs_jax.py in the chunks of seeds 200+.

Issue 13 (second fuzzing round; the first round is tests/test_differential_fuzz_finds.py).
Every expected value, dtype or error below was produced by real JAX 0.10.2
(/work/jaxvenv, run by hand on the same inputs; JAX is never imported here) and is
recorded as a literal. The reproducers are under /work/notes/fuzz/s2*_x*/.
"""
import re
import warnings

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import config, lax


def raises(exc, fragment):
  return pytest.raises(exc, match=re.escape(fragment))


@pytest.fixture
def x64():
  old = config.jax_enable_x64
  config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


# ---- integer remainder by zero (s200 #162) ---------------------------------------------------

def test_integer_remainder_and_fmod_by_zero_are_zero():
  # JAX 0.10.2: remainder/fmod/% of ints by 0 -> 0 (XLA's rem would give the dividend);
  # floor_divide keeps XLA's -1 quotient with the floor correction: [-2, -2, -1, -7].
  a = jnp.array([5, -5, 0, 7], jnp.int32)
  z = jnp.array([0, 0, 0, -1], jnp.int32)
  for f in (jnp.remainder, jnp.fmod, jax.jit(jnp.remainder), jax.jit(jnp.fmod)):
    r = f(a, z)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, [0, 0, 0, 0])
  np.testing.assert_array_equal(a % 0, [0, 0, 0, 0])
  np.testing.assert_array_equal(jnp.floor_divide(a, z), [-2, -2, -1, -7])
  q, r = jnp.divmod(a, z)
  np.testing.assert_array_equal(q, [-2, -2, -1, -7])
  np.testing.assert_array_equal(r, [0, 0, 0, 0])
  u = jnp.array([5, 0], jnp.uint8)
  np.testing.assert_array_equal(jnp.remainder(u, jnp.zeros(2, jnp.uint8)), [0, 0])
  # the fuzzer's program: isfinite(b) % b of a bool array -> int32 [0, 0, 0]
  b = jnp.array([False, True, False])
  r = jnp.isfinite(b) % b
  assert r.dtype == np.int32
  np.testing.assert_array_equal(r, [0, 0, 0])
  # floats keep NaN: remainder(int, 0.0) -> nan
  assert np.isnan(jnp.remainder(a, 0.0)).all()
  # vmap agrees with a loop
  np.testing.assert_array_equal(jax.vmap(jnp.remainder)(a, z), [0, 0, 0, 0])


# ---- lax.convert_element_type of a Python complex (s200 #40) -------------------------------

@pytest.mark.parametrize("dtype", [jnp.int32, jnp.float16, jnp.uint8, jnp.float32])
def test_convert_python_complex_to_real_is_a_type_error(dtype):
  # JAX 0.10.2: TypeError "int() argument must be a string, a bytes-like object or a real
  # number, not 'complex'" (float() for float dtypes), eagerly, under jit and grad.
  with pytest.raises(TypeError, match="complex"):
    lax.convert_element_type(1 - 0.5j, dtype)
  with pytest.raises(TypeError, match="complex"):
    jax.jit(lambda: lax.convert_element_type(1 + 0j, dtype))()


def test_convert_python_complex_to_complex_bool_and_arrays_still_work():
  # JAX 0.10.2: complex64 (1-0.5j); bool True; an array of complex dtype casts to int32
  # dropping the imaginary part (1).
  assert complex(lax.convert_element_type(1 - 0.5j, jnp.complex64)) == 1 - 0.5j
  assert bool(lax.convert_element_type(1 - 0.5j, jnp.bool_))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert int(jnp.asarray(1 - 0.5j).astype(jnp.int32)) == 1
    assert int(lax.convert_element_type(jnp.asarray(1 - 0.5j), jnp.int32)) == 1


# ---- median/quantile of complex (s200 #469) ---------------------------------------------------

@pytest.mark.parametrize("name", ["median", "quantile", "percentile", "nanmedian",
                                  "nanquantile", "nanpercentile"])
def test_quantile_family_of_complex_is_a_value_error(name):
  # JAX 0.10.2: ValueError "quantile does not support complex input, as the operation is
  # poorly defined." for the whole family.
  c = jnp.array([1 + 1j, 2 - 1j])
  f = getattr(jnp, name)
  with raises(ValueError, "does not support complex input"):
    f(c) if "median" in name else f(c, 0.5)


# ---- expm of a matrix needing more than max_squarings squarings (s200 #1027) ---------------

def test_expm_too_many_squarings_is_nan_with_zero_gradient():
  # JAX 0.10.2 (float32): expm of diag(-520000, -1) (floor(log2(norm / 3.9257)) = 17 > 16)
  # is all NaN and the gradient of sum(expm) is 0; diag(-300000, -1) is computed
  # ([0, 0, 0, 0.36783504]: float32 squarings, exp(-1) = 0.36787944); a NaN entry still
  # gives a NaN gradient.
  import tracejax.scipy.linalg as jsl
  m = jnp.array([[[-520000., 0.], [0., -1.]], [[-300000., 0.], [0., -1.]]], jnp.float32)
  r = jsl.expm(m)
  assert np.isnan(r[0]).all()
  np.testing.assert_allclose(r[1], [[0., 0.], [0., 0.36783504]], rtol=1e-5, atol=1e-7)
  g = jax.grad(lambda a: jnp.sum(jsl.expm(a)))(m)
  np.testing.assert_array_equal(g[0], np.zeros((2, 2)))
  assert np.isfinite(g[1]).all()
  big = jnp.array([[1e30, 2.], [3., 1e30]], jnp.float32)
  np.testing.assert_array_equal(jax.grad(lambda a: jnp.sum(jsl.expm(a)))(big), np.zeros((2, 2)))
  nan = jnp.array([[np.nan, 2.], [3., 1.]], jnp.float32)
  assert np.isnan(jax.grad(lambda a: jnp.sum(jsl.expm(a)))(nan)).all()
  # max_squarings=0: diag(-8, -1) (norm 8 > 2 * 3.9257) is NaN; a quarter of it is not
  assert np.isnan(jsl.expm(jnp.diag(jnp.array([-8., -1.])), max_squarings=0)).all()
  np.testing.assert_allclose(jsl.expm(jnp.diag(jnp.array([-2., -.25])), max_squarings=0),
                             np.diag(np.exp([-2., -.25])), rtol=1e-5, atol=1e-6)
