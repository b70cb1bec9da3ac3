"""Numeric disagreements with JAX found by tools/fuzz_vs_jax.py, run 5 (seed chunk 310).

Every expected value below was produced by real JAX 0.10.2 (/work/jaxvenv, run by hand
on the same inputs; JAX is never imported here) and is recorded as a literal. The
reproducers are /work/notes/fuzz/run5/s310_x0/repro_x0_s310_{00553,01316,05222,00734}.py.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.scipy import special as sp
from tracejax._src.config import config

NAN, INF = np.nan, np.inf


def assert_same(got, want, dtype=None):
  """Equal values, NaNs in the same places and the same signs of (zero) numbers."""
  got = np.asarray(got)
  want = np.asarray(want, dtype=dtype or got.dtype)
  assert got.shape == want.shape and (dtype is None or got.dtype == dtype)
  np.testing.assert_array_equal(got, want)
  ok = ~np.isnan(want)  # a NaN's sign bit is not part of the contract
  np.testing.assert_array_equal(np.signbit(got)[ok], np.signbit(want)[ok])


# ---- .at[].min/max with a complex update combine in complex (00553) --------------------------
# JAX promotes a real operand to the update's complex dtype, combines there (complex
# min/max order lexicographically, so NaN + 0j against 1 - 2j picks 1 - 2j) and casts
# back; the imaginary part was dropped first here, so NaN won as in a real minimum.

def test_at_min_max_complex_update_of_real_operand():
  x = jnp.array([NAN, 1., 3., -2.], jnp.float32)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert_same(x.at[..., None].min(1 - 2j), [1., 1., 1., -2.])
    assert_same(jax.jit(lambda x: x.at[..., None].min(1 - 2j))(x), [1., 1., 1., -2.])
    assert_same(x.at[0].min(1 - 2j), [1., 1., 3., -2.])
    assert_same(x.at[0].max(1 - 2j), [1., 1., 3., -2.])
    assert_same(x.at[1].min(NAN + 1j), [NAN, NAN, 3., -2.])
    assert_same(x.at[1].max(NAN + 1j), [NAN, NAN, 3., -2.])
    assert_same(x.at[jnp.array([0, 0, 2])].min(2 + 1j), [2., 1., 2., -2.])
    assert_same(x.at[:].max(-1j), [-0., 1., 3., -0.])
    assert_same(x.at[0].add(1 - 2j), [NAN, 1., 3., -2.])
    assert_same(x.at[2].multiply(2 + INF * 1j), [NAN, 1., NAN, -2.])
    xi = jnp.array([1, -3, 7], jnp.int32)
    assert_same(xi.at[1].min(-5.5 + 1j), [1, -5, 7])
    assert_same(xi.at[...].max(complex(NAN, 0)), [0, 0, 0])


def test_at_min_max_nan_real_update_propagates():
  # Real operands and updates: XLA's scatter min/max propagate NaN from either side.
  x = jnp.array([NAN, 1., 3., -2.], jnp.float32)
  assert_same(x.at[1].min(NAN), [NAN, NAN, 3., -2.])
  assert_same(x.at[...].max(jnp.array([0., NAN, 1., 5.])), [NAN, NAN, 3., 5.])
  assert_same(x.at[...].min(2.), [NAN, 1., 2., -2.])


# ---- jit(hessian(erf)): the basis is built in the program (01316) ----------------------------
# JAX makes jacfwd/jacrev's standard basis from iota == iota inside the traced program,
# where XLA rewrites `eye * v` as a select: an inf in v no longer makes 0 * inf = NaN
# off the diagonal. A constant eye kept those NaNs.

_ERF_X = np.array([0.4262557923793793, -INF, NAN, -1.0321277379989624], np.float32)
_H_ROW = [[-0., NAN, -0., -0.], [NAN] * 4, [-0., -0., -0., 0.]]


def test_jit_hessian_erf_at_minus_inf():
  h = jax.jit(jax.hessian(lax.erf))(_ERF_X)
  want = [[[-0.8021335005760193, -0., -0., -0.]] + _H_ROW,
          [[-0., -0., -0., -0.]] + _H_ROW,
          [[-0., -0., -0., -0.]] + _H_ROW,
          [[-0., -0., -0., -0.]] + _H_ROW[:2] + [[-0., -0., -0., 0.8027308583259583]]]
  assert_same(h, want, np.float32)


def test_jit_hessian_erfc_at_minus_inf():
  h = jax.jit(jax.hessian(lax.erfc))(_ERF_X)
  nanrow, mz = [NAN] * 4, [-0., -0., -0., -0.]
  want = [[[0.8021335005760193, 0., 0., 0.], [-0., NAN, -0., -0.], nanrow, [-0., -0., -0., 0.]],
          [mz, [0., NAN, 0., 0.], nanrow, [-0., -0., -0., 0.]],
          [mz, [-0., NAN, -0., -0.], nanrow, [-0., -0., -0., 0.]],
          [mz, [-0., NAN, -0., -0.], nanrow, [0., 0., 0., -0.8027308583259583]]]
  assert_same(h, want, np.float32)


def test_jit_jacfwd_keeps_inf_on_the_diagonal():
  j = jax.jit(jax.jacfwd(jnp.square))(jnp.array([1., -INF, NAN]))
  assert_same(j, [[2., 0., 0.], [0., -INF, 0.], [0., 0., NAN]], np.float32)


# ---- cumlogsumexp's second derivatives at +inf (05222) ---------------------------------------
# The JVP rule of its logaddexp computes the primal through the custom_jvp again, as
# JAX's does, so differentiating the JVP uses the rule (weights exp(0) = 1 where both
# operands are +inf) rather than the composition, whose select leaked NaN cotangents.

def test_grad_of_jvp_of_float16_cumlogsumexp():
  def f0(x):
    v2 = jnp.broadcast_to(jnp.square(x), (2,) + jnp.shape(x))
    return lax.cumlogsumexp(v2, axis=0, reverse=True)

  def f2(x):
    sc = lambda d: sum(jnp.sum(l) for l in jax.jvp(f0, (d,), (jnp.ones_like(d) * 0.5,)))  # noqa: E731
    return jax.grad(sc)(x)

  out = jax.vmap(f2)(np.array([-337.25, 568.0], np.float16))
  assert_same(out, [-2.021e+03, 3.412e+03], np.float16)


def test_vjp_of_jvp_of_cumlogsumexp_at_inf():
  v = jnp.array([INF, INF], jnp.float16)
  f = lambda v: jax.jvp(lambda v: lax.cumlogsumexp(v, axis=0, reverse=True),  # noqa: E731
                        (v,), (jnp.ones_like(v),))
  ct = jax.vjp(f, v)[1]((jnp.ones_like(v), jnp.ones_like(v)))[0]
  assert_same(ct, [1., 2.], np.float16)
  h = jax.hessian(lax.cumlogsumexp)(jnp.array([INF, INF, 1., -INF], jnp.float32))
  want = np.zeros((4, 4, 4), np.float32)
  want[2, 2, 2] = want[3, 2, 2] = 2.7182817459106445
  assert_same(h, want, np.float32)


# ---- gamma of a bfloat16-computed parameter (00734) ------------------------------------------
# Not a tracejax bug: JAX's eager answer is ours. Under jit XLA fuses tanh, abs and + 0.5
# and rounds to bfloat16 only once (alpha 1.464844 instead of 1.46875), which gives
# JAX's jitted 0.164791 (the half-precision-fusion class).

def test_gamma_of_bfloat16_parameter_matches_jax_eager():
  old = config.jax_threefry_partitionable
  config.update("jax_threefry_partitionable", False)
  try:
    def g(x0):
      v1 = lax.scan(lambda c, xi: (c, jnp.tanh(xi)), 0, jnp.full_like(x0, 2), length=1)[1]
      return jax.random.gamma(jax.random.PRNGKey(65), jnp.abs(jnp.real(v1)) + 0.5)

    xb = np.array([-1.59375], ml_dtypes.bfloat16)
    assert_same(g(xb), [0.16613046824932098], np.float32)
    assert_same(jax.jit(g)(xb), [0.16613046824932098], np.float32)
    # JAX's jitted value, from the alpha its fusion computes:
    assert_same(jax.random.gamma(jax.random.PRNGKey(65), jnp.array([1.464844], jnp.float32)),
                [0.1647912710905075], np.float32)
  finally:
    config.update("jax_threefry_partitionable", old)


# ---- ndtr / log_ndtr in JAX's formulation (found checking item 01316's pattern) --------------
# ndtr switches from 1 + erf to erfc at |x| = 1 (it switched at sqrt(2): last-bit
# differences for 1 < |x| < 1.41); log_ndtr is a custom_jvp with JAX's thresholds and
# series, so its second derivative far in the lower tail is finite, not NaN.

def test_ndtr_matches_jax_bits():
  assert_same(sp.ndtr(np.array([-1.38, -1.2, 1.3, 1.4], np.float32)),
              [0.08379335701465607, 0.11506970971822739, 0.9031994342803955,
               0.919243335723877], np.float32)


def test_log_ndtr_values_and_derivatives():
  x = np.array([-40., -12., -INF, 6., 0.5], np.float32)
  assert_same(sp.log_ndtr(x), [-804.6084594726562, -75.41067504882812, -INF,
                               -9.865895878036213e-10, -0.3689464330673218], np.float32)
  g = jax.grad(sp.log_ndtr)
  assert_same(jax.vmap(g)(x), [40.025394439697266, 12.082249641418457, NAN,
                               6.075888236978244e-09, 0.5091604590415955], np.float32)
  assert_same(jax.vmap(jax.grad(g))(x), [-1.0164794921875, -0.9937591552734375, NAN,
                                         -3.6455329421869465e-08, -0.5138245820999146],
              np.float32)
  assert_same(sp.log_ndtr(np.float32(-12.), series_order=0), -75.40384674072266, np.float32)
  assert_same(sp.log_ndtr(np.float32(-12.), series_order=30), -75.41067504882812, np.float32)


def test_log_ndtr_series_order_errors():
  with pytest.raises(TypeError, match="^series_order must be a Python integer.$"):
    sp.log_ndtr(-12., series_order=1.5)
  with pytest.raises(TypeError, match="^series_order must be a Python integer.$"):
    sp.log_ndtr(-12., series_order=np.int64(3))
  with pytest.raises(ValueError, match="^series_order must be non-negative.$"):
    sp.log_ndtr(-12., series_order=-1)
  with pytest.raises(ValueError, match="^series_order must be <= 30.$"):
    sp.log_ndtr(-12., series_order=31)
