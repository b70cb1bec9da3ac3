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
from tracejax import lax
from tracejax._src.config import enable_x64


def raises(exc, fragment):
  return pytest.raises(exc, match=re.escape(fragment))


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
  # is all NaN and the gradient of sum(expm) is 0 (also for [[1e30, 2], [3, 1e30]]);
  # diag(-300000, -1) is computed ([0, 0, 0, 0.36783504]: float32 squarings, exp(-1) =
  # 0.36787944); a NaN entry still gives a NaN gradient.
  import tracejax.scipy.linalg as jsl
  m = jnp.array([[[-520000., 0.], [0., -1.]], [[-300000., 0.], [0., -1.]],
                 [[1e30, 2.], [3., 1e30]], [[np.nan, 2.], [3., 1.]]], jnp.float32)
  r = jax.jit(jsl.expm)(m)
  assert np.isnan(r[0]).all() and np.isnan(r[2]).all() and np.isnan(r[3]).all()
  np.testing.assert_allclose(r[1], [[0., 0.], [0., 0.36783504]], rtol=1e-5, atol=1e-7)
  g = jax.jit(jax.grad(lambda a: jnp.sum(jsl.expm(a))))(m)
  np.testing.assert_array_equal(g[0], np.zeros((2, 2)))
  np.testing.assert_array_equal(g[2], np.zeros((2, 2)))
  assert np.isfinite(g[1]).all() and np.isnan(g[3]).all()
  # max_squarings=0: diag(-8, -1) (norm 8 > 2 * 3.9257) is NaN; diag(-2, -.25) is not
  r = jax.jit(lambda a: jsl.expm(a, max_squarings=0))(
      jnp.array([[[-8., 0.], [0., -1.]], [[-2., 0.], [0., -.25]]]))
  assert np.isnan(r[0]).all()
  np.testing.assert_allclose(r[1], np.diag(np.exp([-2., -.25])), rtol=1e-5, atol=1e-6)


# ---- median's derivative with an infinite cotangent (s201 #180) ------------------------------

def test_median_is_the_midpoint_of_its_two_middle_values():
  # JAX 0.10.2 computes median (and nanmedian) as quantile(..., method='midpoint'),
  # (lo + hi) / 2: grad(lambda x: median(x) * inf)(2.) = inf (a zero lerp weight would
  # give inf * 0 = NaN), also for [x, 1, 3]; values are unchanged.
  assert float(jax.grad(lambda x: jnp.median(x) * np.inf)(2.)) == np.inf
  assert float(jax.grad(lambda x: jnp.nanmedian(x) * np.inf)(2.)) == np.inf
  assert float(jax.grad(lambda x: jnp.median(jnp.stack([x, 1., 3.])) * np.inf)(2.)) == np.inf
  np.testing.assert_allclose(jnp.median(jnp.array([[1, 3], [2, 8]]), axis=0), [1.5, 5.5])
  np.testing.assert_allclose(jnp.median(jnp.array([4., 1., 3.])), 3.)
  np.testing.assert_allclose(jax.grad(jnp.median)(jnp.array([4., 1., 3., 2.])),
                             [0., 0., 0.5, 0.5])
  # the fuzzer's program (x64 on): jacrev of xlogy(median(max(x) * .5), rint(max(x)))
  with enable_x64():
    import tracejax.scipy.special as jss
    x0 = np.array([[np.inf, 2.5, np.inf], [0.28, 1.92, -2.5]])

    def f0(x):
      v0 = jnp.max(x)
      return jss.xlogy(jnp.median(lax.mul(v0, 0.5)), jnp.rint(v0))

    np.testing.assert_array_equal(jax.jacrev(f0)(x0),
                                  [[np.inf, np.nan, np.inf], [np.nan, np.nan, np.nan]])



# ---- max/min of a 0-d array reduce, so NaN gives a NaN tangent (s201 #179) --------------------

def test_min_max_of_0d_nan_has_nan_tangent():
  # JAX 0.10.2: jvp(jnp.min, (nan,), (0.5,)) = (nan, nan) (reduce_min over no axes: its
  # tangent divides by the count of locations equal to the NaN result, 0); jvp of
  # min(log1p(x), keepdims=True) at -inf is (nan, nan); a finite 0-d passes the tangent.
  for f in (jnp.min, jnp.max, jnp.amax, lambda v: jnp.min(v, keepdims=True)):
    p, t = jax.jvp(f, (jnp.float32(np.nan),), (jnp.float32(0.5),))
    assert np.isnan(p) and np.isnan(t)
    p, t = jax.jvp(f, (jnp.float32(2.),), (jnp.float32(0.5),))
    assert float(p) == 2. and float(t) == 0.5
  p, t = jax.jvp(lambda v: jnp.min(jnp.log1p(v), axis=None, keepdims=True),
                 (jnp.float32(-np.inf),), (jnp.float32(0.5),))
  assert np.isnan(p) and np.isnan(t)
  assert float(jax.grad(jnp.max)(2.)) == 1.0
  np.testing.assert_array_equal(jax.vmap(jnp.max)(jnp.arange(3.)), [0., 1., 2.])
  assert int(jnp.max(jnp.int8(3))) == 3 and bool(jnp.min(True))


# ---- lax.cummax/cummin of complex (s201 #349) ---------------------------------------------------

def test_cummax_cummin_of_complex_are_lexicographic():
  # JAX 0.10.2 accepts complex (lexicographic order, NaNs as its reduce_window drops them):
  c = jnp.array([1 + 2j, 1 + 3j, 5j, 2 - 1j, complex(np.nan, 0), 3 + 0j], jnp.complex64)
  nan = complex(np.nan, 0)
  expected = {
      (lax.cummax, False): [1 + 2j, 1 + 3j, 1 + 3j, 2 - 1j, nan, 3 + 0j],
      (lax.cummax, True): [3 + 0j] * 6,
      (lax.cummin, False): [1 + 2j, 1 + 2j, 5j, 5j, nan, 3 + 0j],
      (lax.cummin, True): [3 + 0j] * 6,
  }
  for (f, rev), want in expected.items():
    for g in (f, jax.jit(f, static_argnames="reverse")):
      got = g(c, reverse=rev)
      assert got.dtype == np.complex64
      np.testing.assert_array_equal(got, np.array(want, np.complex64))
  # derivatives and vmap (JAX: grad of sum(real(cummax(c[:4]))) = [1, 2, 0, 1])
  np.testing.assert_array_equal(jax.grad(lambda x: jnp.sum(jnp.real(lax.cummax(x))))(c[:4]),
                                np.array([1, 2, 0, 1], np.complex64))
  np.testing.assert_array_equal(jax.vmap(lax.cummin)(jnp.stack([c[:4], c[:4][::-1]])),
                                [[1 + 2j, 1 + 2j, 5j, 5j], [2 - 1j, 5j, 5j, 5j]])
  with pytest.raises(TypeError, match="cummax does not accept dtype bool"):
    lax.cummax(jnp.array([True, False]))


# ---- jax.nn.sparse_plus of integers (s201 #765) ------------------------------------------------

def test_sparse_plus_of_integers_is_a_weak_default_float():
  # JAX 0.10.2: sparse_plus(int8 0) -> 0.25, float32 weak (float64 weak with x64 on);
  # int32 [0, 2, -3] -> [0.25, 2., 0.] weak; float16 stays float16, strong.
  r = jax.nn.sparse_plus(np.int8(0))
  assert r.dtype == np.float32 and r.weak_type and float(r) == 0.25
  r = jax.nn.sparse_plus(np.array([0, 2, -3], np.int32))
  assert r.dtype == np.float32 and r.weak_type
  np.testing.assert_array_equal(r, [0.25, 2., 0.])
  r = jax.nn.sparse_plus(np.array([0.5], np.float16))
  assert r.dtype == np.float16 and not r.weak_type
  with enable_x64():
    r = jax.nn.sparse_plus(np.int8(0))
    assert r.dtype == np.float64 and r.weak_type


# ---- entr of complex (s202 #227) ------------------------------------------------------------------

def test_entr_of_complex_is_a_value_error():
  # JAX 0.10.2: ValueError "entr does not support complex-valued inputs."
  import tracejax.scipy.special as jss
  with raises(ValueError, "entr does not support complex-valued inputs."):
    jss.entr(jnp.ones(2, jnp.complex64))
  with raises(ValueError, "entr does not support complex-valued inputs."):
    jax.vmap(jss.entr)(jnp.ones(2, jnp.complex64))
  np.testing.assert_allclose(jss.entr(jnp.array([0.5, -1., 0.])), [0.3465736, -np.inf, 0.])


# ---- reduce_window / reduce with the public lax.add / lax.max (s201 #968) ---------------------

def test_reduce_window_and_reduce_of_public_monoids_are_differentiable():
  # JAX 0.10.2: grad of sum(reduce_window(x, 0., lax.add, (2, 1), (1, 1), 'SAME')) at
  # arange(4.).reshape(2, 2) -> [[1, 1], [2, 2]]; with (-inf, lax.max) -> [[0, 0], [2, 2]];
  # grad of sum(reduce(x, 0., lax.add, (0,))) -> ones. (The public lax.add is a checked
  # wrapper of the internal one: the monoid must still be recognised.)
  x = jnp.arange(4.).reshape(2, 2)

  def win(y, init, fn):
    return jnp.sum(lax.reduce_window(y, init, fn, (2, 1), (1, 1), 'SAME'))

  np.testing.assert_array_equal(jax.grad(win)(x, 0., lax.add), [[1., 1.], [2., 2.]])
  np.testing.assert_array_equal(jax.jit(jax.grad(win), static_argnums=(1, 2))(x, -np.inf, lax.max),
                                [[0., 0.], [2., 2.]])
  np.testing.assert_array_equal(
      jax.grad(lambda y: jnp.sum(lax.reduce(y, 0., lax.add, (0,))))(x), np.ones((2, 2)))


# ---- cholesky of a matrix that is not positive definite (s201 #835) ---------------------------

def test_cholesky_failure_is_nan_below_and_zero_above_the_diagonal():
  # JAX 0.10.2: cholesky([[1, 2], [2, 1]]) -> [[nan, 0], [nan, nan]]; a 3x3 with a negative
  # pivot -> NaN lower triangle, zeros above.
  r = np.asarray(jnp.linalg.cholesky(jnp.array([[1., 2.], [2., 1.]])))
  assert np.isnan(r[np.tril_indices(2)]).all() and r[0, 1] == 0
  r = np.asarray(jnp.linalg.cholesky(jnp.array([[4., 1., 1.], [1., -4., 1.], [1., 1., 4.]])))
  assert np.isnan(r[np.tril_indices(3)]).all() and (r[np.triu_indices(3, 1)] == 0).all()


# ---- jax.scipy.special.zeta is differentiable in x (s201 #569) ---------------------------------

def test_zeta_derivative_in_x():
  # JAX 0.10.2 (float32): jvp of zeta at x=[2.5, 3, 1.5, 4], q=[1, .5, 2, 3]: in x
  # [-0.38734195, 5.278735, -3.9322395, -0.02558957], in q [-2.8168347, -48.704552,
  # -0.5122308, -0.022711022]; the bf16 program of the fuzzer: jvp(zeta(., -0.0)) at
  # [0.4355, 0.3555, -1.492] (tangent 0.5) -> primal [inf, inf, -7.125], tangent
  # [nan, nan, 9.5] (the series' value under jvp, as in JAX).
  import tracejax.scipy.special as jss
  from tracejax._src.test_util import check_grads
  x = jnp.array([2.5, 3., 1.5, 4.])
  q = jnp.array([1., 0.5, 2., 3.])
  zeros, ones = jnp.zeros(4), jnp.ones(4)
  tangent = jax.jit(lambda tx, tq: jax.jvp(jss.zeta, (x, q), (tx, tq))[1])
  np.testing.assert_allclose(tangent(ones, zeros),
                             [-0.38734195, 5.278735, -3.9322395, -0.02558957], rtol=1e-5)
  np.testing.assert_allclose(tangent(zeros, ones),
                             [-2.8168347, -48.704552, -0.5122308, -0.022711022], rtol=1e-5)
  gx, gq = jax.jit(jax.grad(lambda a, b: jnp.sum(jss.zeta(a, b)), argnums=(0, 1)))(x, q)
  np.testing.assert_allclose(gx, [-0.38734195, 5.278735, -3.9322395, -0.02558957], rtol=1e-5)
  with enable_x64():
    check_grads(jax.jit(jss.zeta), (np.array([2.5, 3.5]), np.array([1.5, 0.75])), order=1,
                modes=["fwd", "rev"])
  xb = jnp.array([0.435546875, 0.35546875, -1.4921875], jnp.bfloat16)
  p, t = jax.jit(lambda d, td: jax.jvp(lambda v: jss.zeta(v, -0.0), (d,), (td,)))(
      xb, jnp.full(3, 0.5, jnp.bfloat16))
  assert p.dtype == jnp.bfloat16
  np.testing.assert_array_equal(np.asarray(p, np.float32), [np.inf, np.inf, -7.125])
  np.testing.assert_array_equal(np.asarray(t, np.float32), [np.nan, np.nan, 9.5])


# ---- logsumexp of complex is the principal log (s202 #1070) ------------------------------------

def test_logsumexp_complex_is_the_principal_log():
  # JAX 0.10.2 shifts by the largest real part, so the imaginary part is the angle of the
  # sum, in (-pi, pi]: logsumexp(-382.8958+101.06027j) = -382.8958+0.5293073j,
  # logsumexp([1+5j, 2-7j]) = 2.2815785-0.86632305j, with b=2: 2.9747257-0.86632305j.
  import tracejax.scipy.special as jss
  np.testing.assert_allclose(jax.nn.logsumexp(jnp.complex64(-382.89581298828125
                                                            + 101.06027221679688j)),
                             -382.8958 + 0.5293073j, rtol=1e-6)
  z = jnp.array([1 + 5j, 2 - 7j], jnp.complex64)
  np.testing.assert_allclose(jax.nn.logsumexp(z), 2.2815785 - 0.86632305j, rtol=1e-6)
  np.testing.assert_allclose(jss.logsumexp(z, b=2.), 2.9747257 - 0.86632305j, rtol=1e-6)
  # the fuzzer's program: vdot of it with itself, under jit: 146609.48
  v = jax.jit(lambda x: jnp.vdot(jax.nn.logsumexp(x)[None], jax.nn.logsumexp(x)[None]))(
      jnp.complex64(-382.89581298828125 + 101.06027221679688j))
  np.testing.assert_allclose(v, 146609.48, rtol=1e-5)


# ---- reductions of a 0-d array over axis 0 (s202, found while triaging #1070) -----------------

def test_reduction_of_0d_over_axis_0_is_a_value_error():
  # JAX 0.10.2: ValueError "axis 0 is out of bounds for array of dimension 0" (max gave an
  # IndexError here, sum a ValueError from lax); axis=() and None still work.
  for f in (jnp.max, jnp.min, jnp.sum, jnp.any, jax.nn.logsumexp):
    with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
      f(jnp.float32(1.), axis=0)
  with raises(ValueError, "out of bounds for array of dimension 0"):
    jnp.max(jnp.float32(1.), axis=(0,))
  assert float(jnp.sum(jnp.float32(2.), axis=())) == 2. and float(jnp.max(3., axis=None)) == 3.


# ---- second derivative of igamma in a: NotImplementedError (s202 #504) -----------------------

def test_igamma_grad_a_has_no_derivative_in_a():
  # JAX 0.10.2: hessian(lambda a: gammainc(a, 2.))(1.5) -> NotImplementedError
  # "Differentiation rule for 'igamma_grad_a' not implemented" (also for gammaincc).
  import tracejax.scipy.special as jss
  with pytest.raises(NotImplementedError, match="igamma_grad_a"):
    jax.hessian(lambda a: jss.gammainc(a, 2.))(1.5)
  with pytest.raises(NotImplementedError, match="igamma_grad_a"):
    jax.hessian(lambda a: jss.gammaincc(a, 2.))(1.5)


# ---- jnp.i0 of complex (s203 #1109) ----------------------------------------------------------------

def test_i0_of_complex_is_a_value_error():
  # JAX 0.10.2: ValueError "Unsupported input type to jax.numpy.i0: complex64"; ints and
  # bools are promoted (i0(1) = 1.266066).
  with raises(ValueError, "Unsupported input type to jax.numpy.i0: complex64"):
    jnp.i0(jnp.ones(1, jnp.complex64))
  np.testing.assert_allclose(jnp.i0(jnp.ones(1, jnp.int32)), [1.266066], rtol=1e-6)


# ---- .at[].get(mode='fill') with a fill value the dtype cannot hold (s204 #1241, #2390) --------

def test_gather_fill_value_is_cast_as_numpy_astype():
  # JAX 0.10.2 (uint16 [4, 2], index [5, 0]): fill -3 -> [65533, 4], 70000 -> [4464, 4],
  # -1.5 -> [65535, 4], nan -> [0, 4]; int8 fill -300 -> [-44, 4]; take(..., fill -3) ->
  # [65533].
  x = jnp.array([4, 2], jnp.uint16)
  idx = jnp.array([5, 0])
  for fv, want in [(-3, 65533), (70000, 4464), (-1.5, 65535), (np.nan, 0), (True, 1)]:
    np.testing.assert_array_equal(x.at[idx].get(mode='fill', fill_value=fv), [want, 4])
  np.testing.assert_array_equal(
      jnp.array([4, 2], jnp.int8).at[idx].get(mode='fill', fill_value=-300), [-44, 4])
  np.testing.assert_array_equal(jnp.take(x, jnp.array([5]), fill_value=-3, mode='fill'),
                                [65533])
  np.testing.assert_array_equal(
      jax.jit(lambda v: v.at[idx].get(mode='fill', fill_value=-3))(x), [65533, 4])


# ---- float16 cumsum/cumprod round every step (s204 #1431) ---------------------------------------

def test_float16_cumprod_overflows_as_in_jax():
  # JAX 0.10.2: cumprod([300, -300, .5, -2] f16) = [300, -inf, -inf, inf]; cumsum([6e4,
  # 6e4, -6e4] f16) = [6e4, inf, inf]; bfloat16 [300, -90112, -45056, 90112].
  x = jnp.array([300., -300., 0.5, -2.], jnp.float16)
  np.testing.assert_array_equal(jnp.cumprod(x), np.array([300, -np.inf, -np.inf, np.inf]))
  np.testing.assert_array_equal(jax.jit(jnp.cumprod)(x),
                                np.array([300, -np.inf, -np.inf, np.inf]))
  np.testing.assert_array_equal(jnp.cumsum(jnp.array([6e4, 6e4, -6e4], jnp.float16)),
                                np.array([6e4, np.inf, np.inf], np.float16))
  np.testing.assert_array_equal(
      np.asarray(jnp.cumprod(x.astype(jnp.bfloat16)), np.float32), [300, -90112, -45056, 90112])
  # integers, bools and gradients are unchanged
  assert jnp.cumsum(jnp.array([True, True])).dtype == jnp.int32
  np.testing.assert_array_equal(jnp.cumsum(jnp.arange(5, dtype=jnp.int8)), [0, 1, 3, 6, 10])
  np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jnp.cumprod(v)))(jnp.array([1., 2., 3.])),
                             [9., 4., 2.])


# ---- vmap of cond with a batched predicate under grad (s204 #1008) ------------------------------

def test_vmap_cond_untaken_branch_adds_no_nan_to_the_gradient():
  # JAX 0.10.2: grad(sum(vmap(f)))([[-inf, 1], [.5, .25]]) for f = cond(sum(x) > 0, cos,
  # 2x) -> [[2, 2], [-0.47942555, -0.24740396]] (cos is not differentiated at -inf).
  def f(x):
    return lax.cond(jnp.sum(x) > 0, jnp.cos, lambda v: v * 2, x)

  x = jnp.array([[-np.inf, 1.], [0.5, 0.25]])
  want = [[2., 2.], [-0.47942555, -0.24740396]]
  g = jax.grad(lambda v: jnp.sum(jax.vmap(f)(v)))
  np.testing.assert_allclose(g(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(g)(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.vmap(f)(jnp.array([[1., 2.], [-1., -2.]])),
                             [np.cos([1., 2.]), [-2., -4.]], rtol=1e-6)


# ---- matrix_power(a, 3) multiplies as (a @ a) @ a (s204 #2270) ---------------------------------

def test_matrix_power_3_order():
  # JAX 0.10.2: matrix_power([[0, -inf], [0.3237864, 0.0993819]], 3) ->
  # [[nan, nan], [-inf, -inf]].
  a = jnp.array([[0.0, -np.inf], [0.3237864375114441, 0.09938190132379532]], jnp.float32)
  r = np.asarray(jnp.linalg.matrix_power(a, 3))
  assert np.isnan(r[0]).all() and (r[1] == -np.inf).all()
  b = np.array([[1., 2.], [3., 4.]], np.float32)
  np.testing.assert_allclose(jnp.linalg.matrix_power(b, 3), b @ b @ b, rtol=1e-6)
  np.testing.assert_allclose(jnp.linalg.matrix_power(b, 5), np.linalg.matrix_power(b, 5),
                             rtol=1e-5)


# ---- lax.dot_general of mixed dtypes (s203 #1190) -----------------------------------------------

def test_dot_general_promotes_mixed_operand_dtypes():
  # JAX 0.10.2: f32 x i32 -> float32 [[3, 3], [3, 3]] (ones (2, 3) contracted on axis 1);
  # i8 x i32 -> int32; bool x f16 -> float16; (2020 JAX raised TypeError "same dtypes").
  dn = (((1,), (1,)), ((), ()))
  r = lax.dot_general(jnp.ones((2, 3), jnp.float32), jnp.ones((2, 3), jnp.int32), dn)
  assert r.dtype == np.float32
  np.testing.assert_array_equal(r, np.full((2, 2), 3.))
  v = (((0,), (0,)), ((), ()))
  assert lax.dot_general(jnp.ones(3, jnp.int8), jnp.ones(3, jnp.int32), v).dtype == np.int32
  assert lax.dot_general(jnp.ones(3, bool), jnp.ones(3, jnp.float16), v).dtype == np.float16
  np.testing.assert_array_equal(
      jax.grad(lambda x: lax.dot_general(x, jnp.arange(3), v))(jnp.ones(3)), [0., 1., 2.])


# ---- lax.clamp of complex operands --------------------------------------------------------

def test_clamp_accepts_complex_as_jax_and_its_jvp_does_not():
  # JAX 0.10.2: lax.clamp(0j, [1+2j, 3-1j, -1+0j], 2+1j) -> [1+2j, 2+1j, 0j] (XLA's
  # lexicographic order), eagerly, under jit and vmap; its JVP raises TypeError (gt of
  # complex); jnp.clip of complex raises ValueError with JAX's text.
  z = jnp.array([1 + 2j, 3 - 1j, -1 + 0j], jnp.complex64)
  lo, hi = jnp.complex64(0), jnp.complex64(2 + 1j)
  want = np.array([1 + 2j, 2 + 1j, 0j], np.complex64)
  clamp = lambda v: lax.clamp(lo, v, hi)
  np.testing.assert_array_equal(clamp(z), want)
  np.testing.assert_array_equal(jax.jit(clamp)(z), want)
  np.testing.assert_array_equal(jax.vmap(clamp)(z), want)
  with pytest.raises(TypeError, match="gt does not accept dtype complex64"):
    jax.jvp(clamp, (z,), (jnp.ones(3, jnp.complex64),))
  with pytest.raises(ValueError, match="Complex values have no ordering and cannot be clipped"):
    jnp.clip(z, 0, 1)
