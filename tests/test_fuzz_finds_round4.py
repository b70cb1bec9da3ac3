"""Disagreements with JAX found by tools/fuzz_vs_jax.py, round 4 (seed chunk 300, x64 off).

Issue 13. Every expected value, dtype or error below was produced by real JAX 0.10.2
(/work/jaxvenv, run by hand on the same inputs; JAX is never imported here) and is
recorded as a literal. The reproducers are /work/notes/fuzz/rep300/repro_x0_s300_*.py.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.special as sp
from tracejax import lax
from tracejax._src.config import enable_x64

NAN = np.nan


def raises(exc, fragment):
  return pytest.raises(exc, match=re.escape(fragment))



# ---- jnp.i0: a jit whose jvp is zero at 0 (00542) ---------------------------------------------

def test_i0_jvp_float16_matches_jax():
  # JAX 0.10.2: jnp.i0 is a jit of exp(|x|) * i0e(|x|) with a custom_jvp that zeroes the
  # tangent where x == 0 (we gave 0.5 there: abs's tangent at 0 is +1), and XLA fuses
  # the float16 steps in float32 (ours rounded every step: 0.1665 for 0.1664).
  x = np.array([[-np.inf, 0.6328125, -0.14599609375], [NAN, NAN, 1.4580078125],
                [-0.0, -0.0, -0.281494140625]], np.float16)
  p, t = jax.jvp(jnp.i0, (x,), (jnp.ones_like(x) * 0.5,))
  assert p.dtype == t.dtype == np.float16
  np.testing.assert_array_equal(p, np.array(
      [[NAN, 1.1025390625, 1.0048828125], [NAN, NAN, 1.6064453125],
       [1.0, 1.0, 1.01953125]], np.float16))
  np.testing.assert_array_equal(t, np.array(
      [[NAN, 0.1663818359375, -0.03656005859375], [NAN, NAN, 0.47021484375],
       [0.0, 0.0, -0.0711669921875]], np.float16))
  xb = jnp.asarray(x.astype(np.float32)).astype(jnp.bfloat16)
  tb = jax.jvp(jnp.i0, (xb,), (jnp.ones_like(xb) * 0.5,))[1]
  np.testing.assert_array_equal(np.asarray(tb).astype(np.float32), np.array(
      [[NAN, 0.1640625, -0.03515625], [NAN, NAN, 0.47265625], [0.0, 0.0, -0.0703125]],
      np.float32))


def test_i0_derivative_at_zero_and_kaiser():
  # JAX 0.10.2: grad(i0)(0.) = 0; jacfwd at [0, -0, 1] is diag(0, 0, 0.5651591);
  # d/dbeta sum(kaiser(5, beta)) at 0 is 0.
  assert float(jax.grad(jnp.i0)(0.)) == 0.0
  assert float(jax.jit(jax.grad(jnp.i0))(0.)) == 0.0
  np.testing.assert_allclose(jax.jacfwd(jnp.i0)(jnp.array([0., -0., 1.])),
                             np.diag([0., 0., 0.5651591]), rtol=1e-6)
  assert float(jax.grad(lambda b: jnp.kaiser(5, b).sum())(0.)) == 0.0
  assert float(jax.grad(lambda b: jnp.kaiser(4, b).sum())(0.)) == 0.0
  np.testing.assert_allclose(jnp.i0(jnp.array([-2., -1., 0., 1., 2.])),
                             [2.2795851, 1.266066, 1.0000001, 1.266066, 2.2795851], rtol=1e-6)
  with raises(ValueError, "Unsupported input type to jax.numpy.i0: complex64"):
    jnp.i0(1j)
  with raises(TypeError, "i0 requires ndarray or scalar arguments, got <class 'list'> at "
              "position 0."):
    jnp.i0([1., 2.])
  out = jnp.i0(2)
  assert out.dtype == np.float32 and out.weak_type


# ---- jax.nn.squareplus is the literal formula (03657) -----------------------------------------

def test_squareplus_of_minus_inf_is_nan():
  # JAX 0.10.2: squareplus(x) = (x + sqrt(x**2 + b)) / 2 as written, so -inf (and a
  # float16 x whose square overflows) gives -inf + inf = NaN, and large negative x
  # cancels to 0 in float32 (we used a cancellation-free form giving 0 and 1e-5).
  np.testing.assert_array_equal(
      jax.nn.squareplus(jnp.array([-np.inf, -300., -70000., 2.], jnp.float16)),
      np.array([NAN, np.inf, NAN, 2.414], np.float16))
  np.testing.assert_array_equal(
      jax.nn.squareplus(jnp.array([-np.inf, -1e5, -1e20, 1e20, np.inf], jnp.float32)),
      np.array([NAN, 0., np.inf, np.inf, np.inf], np.float32))
  np.testing.assert_array_equal(
      jax.nn.squareplus(np.array([-np.inf, 0., 3.], np.float32), b=2.),
      np.array([NAN, 0.70710677, 3.1583123], np.float32))
  out = jax.nn.squareplus(jnp.array([1, -2]))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [1.618034, 0.41421354], rtol=1e-6)
  assert np.isnan(float(jax.grad(jax.nn.squareplus)(-np.inf)))
  np.testing.assert_allclose(jax.grad(jax.nn.squareplus)(1.5), 0.8, rtol=1e-6)


def test_squareplus_of_logsumexp_of_empty():
  # The reproducer: logsumexp over an empty axis is -inf; JAX 0.10.2 gives [nan] float16.
  x = np.zeros((0,), np.float16)
  v0 = lax.cond(jnp.sum(x) > 0, jnp.exp, jnp.sin, x)
  out = jax.nn.squareplus(sp.logsumexp(v0, axis=0, keepdims=True))
  assert out.dtype == np.float16 and out.shape == (1,) and np.isnan(out[0])


# ---- cumulative reductions of weakly typed 0-d values (02672) ---------------------------------

@pytest.mark.parametrize("name", ["cumsum", "cumprod", "nancumsum", "nancumprod"])
def test_cumulative_of_python_scalar_with_axis(name):
  # JAX 0.10.2 treats a weakly typed 0-d input (a Python int/float/complex, or a jit
  # tracer of one) as a vector of one, so an axis of 0 or -1 works; strong 0-d inputs
  # (np.float32, 0-d arrays, a Python bool) still have no axis.
  f = getattr(jnp, name)
  out = f(-1.5, axis=0)
  assert out.dtype == np.float32 and out.shape == (1,) and not out.weak_type
  np.testing.assert_array_equal(out, [-1.5])
  out = f(3, axis=-1)
  assert out.dtype == np.int32 and out.shape == (1,)
  assert f(2 + 1j, axis=0).dtype == np.complex64
  out = f(2.5, axis=0, dtype=jnp.int16)
  assert out.dtype == np.int16
  np.testing.assert_array_equal(out, [2])
  np.testing.assert_array_equal(jax.jit(lambda x: f(x, axis=0))(1.5), [1.5])
  np.testing.assert_array_equal(jax.jvp(lambda x: f(x, axis=None), (1.5,), (1.,))[1], [1.])
  with raises(ValueError, "axis 1 is out of bounds for array of dimension 1"):
    f(1.5, axis=1)
  for strong in (True, np.float32(2.), np.int8(3), jnp.array(3, jnp.int16), np.array(True)):
    with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
      f(strong, axis=0)
    assert f(strong).shape == (1,)
  with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
    jax.jit(lambda x: f(x, axis=0))(np.float32(1.5))
  with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
    jax.jit(lambda x: f(x, axis=0))(True)
  out = jax.vmap(lambda x: f(x * 1.0, axis=0))(jnp.arange(3))
  assert out.shape == (3, 1)


def test_nancumprod_reproducer_and_nan_fill():
  # (02672) JAX 0.10.2: nancumprod(-1.5, axis=0) = [-1.5] float32; nancumsum(nan, axis=-1)
  # = [0.].
  np.testing.assert_array_equal(jnp.nancumprod(-1.5, axis=0), np.array([-1.5], np.float32))
  np.testing.assert_array_equal(jnp.nancumsum(float("nan"), axis=-1), [0.])
  np.testing.assert_array_equal(jnp.nancumprod(np.array([2., NAN, 3.], np.float32)),
                                [2., 2., 6.])


# ---- cumulative_sum/cumulative_prod dtypes (03567) --------------------------------------------

_SMALL = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32"]
# JAX 0.10.2, x64 off, no dtype: cumulative_sum promotes like sum; cumulative_prod keeps
# the input dtype (bool -> int32); cumsum/cumprod/nancumsum/nancumprod likewise keep it.
_SUM_X32 = ["int32", "int32", "uint32", "int32", "uint32", "int32", "uint32"]
_PROD_X32 = ["int32", "int8", "uint8", "int16", "uint16", "int32", "uint32"]
_SUM_X64 = ["int64", "int64", "uint64", "int64", "uint64", "int64", "uint64"]
_PROD_X64 = ["int64", "int8", "uint8", "int16", "uint16", "int32", "uint32"]


def _check_cumulative_dtypes(sums, prods):
  for dt, s, p in zip(_SMALL, sums, prods):
    x = np.array([1, 0, 1], dt)
    assert jnp.cumulative_sum(x).dtype == s, dt
    assert jnp.cumulative_prod(x).dtype == p, dt
    assert jnp.cumulative_prod(x, include_initial=True).dtype == p, dt
    for f in (jnp.cumsum, jnp.cumprod, jnp.nancumsum, jnp.nancumprod):
      assert f(x).dtype == p, (f.__name__, dt)
    for odt in ("bool", "int8", "uint16", "float16"):
      for f in (jnp.cumulative_sum, jnp.cumulative_prod, jnp.cumsum, jnp.cumprod):
        assert f(x, axis=0, dtype=odt).dtype == odt, (odt, dt)


def test_cumulative_prod_keeps_small_int_dtypes():
  x = np.array([7, 0, 8], np.uint16)
  out = jnp.cumulative_prod(x, axis=0, include_initial=False)
  assert out.dtype == np.uint16
  np.testing.assert_array_equal(out, [7, 0, 0])
  out = jnp.cumulative_prod(np.array([1, 0, 1], np.int8), axis=0, include_initial=True)
  assert out.dtype == np.int8
  np.testing.assert_array_equal(out, [1, 1, 0, 0])
  _check_cumulative_dtypes(_SUM_X32, _PROD_X32)
  # dtype=bool: the values are tested against 0 first (JAX 0.10.2: [True, True, True]
  # and [True, True, False] for [1, 0, 1]).
  np.testing.assert_array_equal(jnp.cumulative_sum(np.array([1, 0, 1], np.int8),
                                                   dtype=bool), [True, True, True])
  np.testing.assert_array_equal(jnp.cumulative_prod(np.array([1, 0, 1], np.int8),
                                                    dtype=bool), [True, False, False])


def test_cumulative_dtypes_x64():
  with enable_x64():
    _check_cumulative_dtypes(_SUM_X64, _PROD_X64)


def test_cumulative_sum_and_prod_errors_as_jax():
  with raises(ValueError, "The input must be non-scalar to take a cumulative sum, however "
              "a scalar value or scalar array was given."):
    jnp.cumulative_sum(1.5)
  with raises(ValueError, "The input must be non-scalar to take a cumulative product, "
              "however a scalar value or scalar array was given."):
    jnp.cumulative_prod(1.5, axis=0)
  with raises(ValueError, "The input array has rank 2, however axis was not set to an "
              "explicit value. The axis argument is only optional for one-dimensional "
              "arrays."):
    jnp.cumulative_prod(jnp.ones((2, 2)))


# ---- dirichlet of an empty alpha (03342) ------------------------------------------------------

def test_dirichlet_with_no_categories_is_empty():
  # JAX 0.10.2: the softmax over the (empty) category axis takes its max with
  # initial=-inf, so the result is empty (we raised "zero-size array to reduction
  # operation max which has no identity").
  key = jax.random.PRNGKey(18)
  out = jax.random.dirichlet(key, jnp.abs(jnp.zeros((0,), jnp.float32)) + 0.5)
  assert out.shape == (0,) and out.dtype == np.float32
  assert jax.random.dirichlet(key, np.ones((4, 0), np.float32)).shape == (4, 0)
  assert jax.random.dirichlet(key, np.ones((0, 3), np.float32)).shape == (0, 3)
  assert jax.random.dirichlet(key, np.ones((0,), np.float32), shape=(2,)).shape == (2, 0)
  assert jax.jit(jax.random.dirichlet)(key, np.ones((2, 0), np.float32)).shape == (2, 0)
  g = jax.grad(lambda a: jax.random.dirichlet(key, a).sum())(np.ones((0,), np.float32))
  assert g.shape == (0,)
  np.testing.assert_array_equal(jax.random.dirichlet(key, np.ones((2, 1), np.float32)),
                                [[1.], [1.]])


# ---- the incomplete gamma functions at a = 0 and a = inf (with 02292) -------------------------

def test_gammainc_gammaincc_edges_as_jax():
  # JAX 0.10.2 has no special case for a == 0 < x in gammainc (NaN below x = 1, where the
  # series runs with an underflowed prefactor; 1 from x = 1) nor for a = inf in
  # gammaincc (NaN for finite x, 0 at x = inf). We gave scipy's 1 / 1 / NaN.
  a = np.array([0, 0, 0, 0, 2.], np.float32)
  x = np.array([1e-3, 0.5, 1., 3., np.inf], np.float32)
  for f in (sp.gammainc, jax.jit(sp.gammainc)):
    np.testing.assert_array_equal(f(a, x), [NAN, NAN, 1., 1., 1.])
  a = np.array([np.inf, np.inf, np.inf, 0., 0.], np.float32)
  x = np.array([1., 50., np.inf, 0.5, 2.], np.float32)
  for f in (sp.gammaincc, jax.jit(sp.gammaincc)):
    np.testing.assert_array_equal(f(a, x), [NAN, NAN, 0., 0., 0.])
  assert np.isnan(float(sp.gammainc(jnp.float16(0), jnp.float16(0.25))))
  assert np.isnan(float(sp.gammaincc(jnp.float16(np.inf), jnp.float16(3))))
  # Unchanged neighbours: P(a, 0) = 0, Q(a, 0) = 1, NaN on the domain's edges.
  np.testing.assert_array_equal(sp.gammainc(np.float32([1., 0., -1.]), np.float32([0., 0., 1.])),
                                [0., NAN, NAN])
  np.testing.assert_array_equal(sp.gammaincc(np.float32([1., 0.]), np.float32([0., 0.])),
                                [1., NAN])
  np.testing.assert_allclose(sp.gammainc(1., 1.), 0.6321202, rtol=1e-6)
  np.testing.assert_allclose(sp.gammaincc(1., 1.), 0.36787927, rtol=1e-6)


def test_beta_of_nan_alpha_at_run_time_is_nan():
  # (02292) With the -inf from logsumexp arriving at run time, JAX 0.10.2 gives NaN in
  # every mode, as we do. (The reproducer's numbers come from XLA constant-folding the
  # reduction over an empty axis and then the gamma sampler's loop on NaN at compile
  # time: JAX gives [0.972, 1.6e-9], [0.49999452, 0.5] or even a negative "beta" sample
  # [-7.6e12, -2.5e-13] depending on the transformation, so there is nothing to match.)
  key = jax.random.fold_in(jax.random.PRNGKey(21), 3)

  def f(x):
    v0 = jax.nn.logsumexp(x, axis=1)
    return jax.random.beta(key, jnp.abs(sp.gammainc(v0, v0)) + 0.5, 2.0)

  x = np.full((2, 1), -np.inf, np.float32)
  for g in (f, jax.jit(f), lambda x: jax.vjp(jax.jit(f), x)[0]):
    out = g(x)
    assert out.shape == (2,) and np.isnan(out).all()
  assert np.isnan(f(np.zeros((2, 0), np.float32))).all()
