"""Disagreements with JAX found by tools/fuzz_vs_jax.py, round 5 (seed chunk 301, x64 on).

Issue 13. Every expected value, dtype or error below was produced by real JAX 0.10.2
(/work/jaxvenv, run by hand on the same inputs; JAX is never imported here) and is
recorded as a literal. The reproducers are /work/notes/fuzz/rep301/repro_x1_s301_*.py.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax

NAN, INF = np.nan, np.inf
F0 = jax.dtypes.float0

JACREV_F0 = ("jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
             "np.floating), but got void. For differentiation of functions with integer "
             "outputs, use jax.vjp directly.")
GRAD_F0 = JACREV_F0.replace("jacrev", "grad", 1)


def raises(exc, message):
  return pytest.raises(exc, match="^" + re.escape(message))


def assert_float0(x, shape):
  assert np.asarray(x).dtype == F0 and np.shape(x) == shape


# ---- float0 outputs of a jit under AD never reach XLA (00607) --------------------------------

def _vjp_int_arg(a, b):
  # The vjp of a function of an int16 argument: its cotangent is float0 zeros, which
  # the jit below returns (a float0 output of a jitted program).
  o, fn = jax.vjp(lambda d: b, a)
  return o, fn(jnp.ones_like(o))[0]


A16 = np.array([-1], np.int16)


def test_jacrev_of_jit_with_float0_output_raises_jax_error(x64):
  # We inlined the jit under linearize and copied its forwarded float0 value with a
  # device primitive: "INVALID_ARGUMENT: Unknown NumPy dtype ... float0".
  b = np.array([[613.900396839878, -595.8876346864874, -951.7540401181885],
                [200.42552509308086, -76.65876581611553, -160.98518668856977]])
  with raises(TypeError, JACREV_F0):
    jax.jacrev(jax.jit(_vjp_int_arg), argnums=1)(A16, b)
  with raises(TypeError, JACREV_F0):
    jax.hessian(jax.jit(_vjp_int_arg), argnums=1)(A16, b)
  with raises(TypeError, JACREV_F0):
    jax.vmap(jax.jacrev(jax.jit(_vjp_int_arg), argnums=1), in_axes=(None, 0))(A16, b)
  with raises(TypeError, "Gradient only defined for scalar-output functions. "
                         "Output had shape: (1,)."):
    jax.grad(lambda a, b: jax.jit(_vjp_int_arg)(a, b)[1], argnums=1)(A16, b)


@pytest.mark.parametrize("jit", [False, True])
def test_float0_output_of_jit_under_ad(jit, x64):
  f = jax.jit(_vjp_int_arg) if jit else _vjp_int_arg
  b = np.ones((2, 3))
  jf, jf0 = jax.jacfwd(f, argnums=1)(A16, b)
  assert jf.dtype == np.float64 and jf.shape == (2, 3, 2, 3)
  assert_float0(jf0, (1, 2, 3))
  g = jax.grad(lambda a, b: f(a, b)[0].sum(), argnums=1)(A16, b)
  np.testing.assert_array_equal(g, np.ones((2, 3)))
  (o, o0), vjp_fn = jax.vjp(f, A16, b)
  assert_float0(o0, (1,))
  ca, cb = vjp_fn((np.ones((2, 3)), np.zeros((1,), F0)))
  assert_float0(ca, (1,))
  np.testing.assert_array_equal(cb, np.ones((2, 3)))
  (p, p0), lin = jax.linearize(f, A16, b)
  assert_float0(p0, (1,))
  t, t0 = lin(np.zeros((1,), F0), np.ones((2, 3)))
  np.testing.assert_array_equal(t, np.ones((2, 3)))
  assert_float0(t0, (1,))
  _, (tt, tt0) = jax.jvp(f, (A16, b), (np.zeros((1,), F0), np.ones((2, 3))))
  assert_float0(tt0, (1,))
  vo, vo0 = jax.vmap(f, in_axes=(None, 0))(A16, b)
  assert_float0(vo0, (2, 1))


def test_float0_constant_output_of_jit_under_ad():
  f = jax.jit(lambda x: (x, np.zeros((), F0)))
  with raises(TypeError, JACREV_F0):
    jax.jacrev(f)(1.0)
  d, d0 = jax.jacfwd(f)(1.0)
  assert float(d) == 1.0
  assert_float0(d0, ())
  ct, = jax.vjp(f, 1.0)[1]((1.0, np.zeros((), F0)))
  assert float(ct) == 1.0
  with raises(TypeError, GRAD_F0):
    jax.value_and_grad(lambda x: np.zeros((), F0))(1.0)
  with raises(TypeError, "jacfwd with holomorphic=True requires outputs with complex "
                         "dtype, but got void."):
    jax.jacfwd(lambda x: np.zeros((), F0), holomorphic=True)(1.0 + 0j)


@pytest.mark.parametrize("make", [
    lambda: jnp.zeros((2,), F0), lambda: jnp.ones((2,), F0), lambda: jnp.full((2,), 1, F0),
    lambda: jnp.empty((2,), F0), lambda: jnp.zeros_like(np.ones(2), F0),
    lambda: jnp.ones_like(np.ones(2), F0), lambda: jnp.full_like(np.ones(2), 0, F0),
    lambda: jnp.zeros_like(np.zeros(2, F0)), lambda: lax.full((2,), 0, F0),
    lambda: lax.full_like(np.ones(2), 0, F0), lambda: jnp.ones(2).astype(F0),
    lambda: lax.convert_element_type(jnp.ones(2), F0)])
def test_float0_arrays_are_host_zeros(make):
  # JAX 0.10.2 makes every float0 array on the host (under jit too); we raised
  # "a bytes-like object is required" or sent float0 to XLA.
  assert_float0(make(), (2,))
  assert_float0(jax.jit(make)(), (2,))


# ---- cumulative reductions: complex cumlogsumexp, JAX's dtype errors (00323) -----------------

XC = np.array([[(-1.2443135508914143 - 0.8463772406362284j),
                (1.168801441917556 - 0.40635119119884483j)],
               [(4.3498456440883535 - 0.03919570256503024j),
                (-0.06891978689071947 + 2.119714084181209j)]])


def test_cumlogsumexp_complex_matches_jax(x64):
  np.testing.assert_allclose(
      lax.cumlogsumexp(XC, axis=0, reverse=True),
      [[(4.352418122214656 - 0.0418755686257275j), (0.9220639214053261 - 0.19034185248407054j)],
       [(4.3498456440883535 - 0.03919570256503002j),
        (-0.06891978689071947 + 2.1197140841812097j)]], rtol=1e-14)
  np.testing.assert_allclose(
      jax.grad(lambda y: jnp.real(lax.cumlogsumexp(y, axis=0)).sum())(XC),
      [[(1.0025727537533335 - 0.0026729778240598724j), (2.2501002942106947 - 0.2743131558590541j)],
       [(0.9974272462466661 + 0.0026729778240599023j),
        (-0.25010029421069574 + 0.27431315585905397j)]], rtol=1e-13)
  np.testing.assert_allclose(
      jax.jvp(lambda y: lax.cumlogsumexp(y, axis=1), (XC,), (np.ones_like(XC),))[1],
      [[1, 1], [1, 1]], atol=1e-15)
  out = jax.vmap(lax.cumlogsumexp)(XC.astype(np.complex64))
  assert out.dtype == np.complex64
  np.testing.assert_allclose(
      out, [[(-1.2443135976791382 - 0.8463771343231201j), (1.2473162412643433 - 0.441617488861084j)],
            [(4.3498454093933105 - 0.03919577598571777j),
             (4.343189239501953 - 0.029103994369506836j)]], rtol=1e-6)


def test_cumlogsumexp_derivatives_use_jax_logaddexp_rule(x64):
  # JAX differentiates the associative scan of its custom-JVP logaddexp: the tangent is
  # t1 exp(x1 - out) + t2 exp(x2 - out) with +inf zeroed first (in float16 too).
  h = np.array([0.5, 2.0, 1.0, -3.0, 0.75], np.float16)
  np.testing.assert_array_equal(
      jax.jvp(lax.cumlogsumexp, (h,), (np.ones_like(h),))[1],
      np.array([1.0, 1.0, 0.9990234375, 0.99951171875, 1.0], np.float16))
  np.testing.assert_array_equal(
      jax.grad(lambda y: lax.cumlogsumexp(y).sum())(h),
      np.array([1.580078125, 2.6015625, 0.65673828125, 0.007785797119140625, 0.1522216796875],
               np.float16))
  b = np.array([0.5, INF, 1.0, -INF, 2.0])
  np.testing.assert_allclose(
      jax.jvp(lax.cumlogsumexp, (b,), (np.ones_like(b),))[1],
      [1.0, 2.648721270700128, 5.367003099159174, 5.367003099159174, 12.756059198089824],
      rtol=1e-14)
  np.testing.assert_allclose(
      jax.grad(lambda y: lax.cumlogsumexp(y).sum())(b),
      [7.594885082800513, 4.0, 8.154845485377137, 0.0, 7.38905609893065], rtol=1e-14)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_cumulative_bool_error_matches_jax(name):
  x = np.array([True, False])
  msg = f"{name} does not accept dtype bool. Accepted dtypes are subtypes of number."
  with raises(TypeError, msg):
    getattr(lax, name)(x)
  with raises(TypeError, msg):
    jax.vmap(getattr(lax, name))(x[None])


def test_cumlogsumexp_integer_stays_an_error():
  # JAX fails converting its -inf init value (OverflowError); ours is a TypeError, the
  # deliberate difference tools/fuzz_vs_jax.py ('jax-error-type-varies') accepts.
  with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
    lax.cumlogsumexp(np.array([1, 2], np.int32))


# ---- slogdet: JAX's closed forms for n <= 2 and its trace(solve) derivative (00459) ----------

def test_slogdet_value_and_grad_singular_batch_member():
  # One (2, 2) member is [[1, 0], [0, inf]]: JAX's 2x2 jvp is tr(adj(A) dA) / det(A),
  # which is NaN only where inf * 0 appears; we differentiated through LU (all NaN).
  a = np.array([[[0.7801666259765625, 1.0], [-2.113161325454712, -0.0]],
                [[1.0, 0.0], [-0.0, INF]]], np.float32)
  v, g = jax.value_and_grad(lambda d: jnp.sum(jnp.linalg.slogdet(d)[1]))(a)
  assert v.dtype == np.float32 and float(v) == INF
  np.testing.assert_array_equal(
      g, np.array([[[0.0, 1.0], [-0.4732246398925781, 0.36919406056404114]],
                   [[NAN, 0.0], [0.0, 0.0]]], np.float32))


def test_slogdet_small_closed_forms():
  a1 = np.array([[[1.6243454]], [[-0.6117564]], [[0.0]]], np.float32)
  sign, logdet = jnp.linalg.slogdet(a1)
  np.testing.assert_array_equal(sign, [1.0, -1.0, 0.0])
  # The bits of JAX's jitted (fused) log.
  assert np.asarray(logdet).view(np.int32).tolist() == [1056464812, -1090806898, -8388608]
  np.testing.assert_array_equal(
      jax.grad(lambda d: jnp.linalg.slogdet(d)[1][:2].sum())(a1),
      np.array([[[0.6156325936317444]], [[-1.6346375942230225]], [[NAN]]], np.float32))
  hh = np.array([[1.5, 0.25], [-0.75, 2.0]], np.float16)   # no LU: float16 itself
  s, l = jnp.linalg.slogdet(hh)
  assert s.dtype == l.dtype == np.float16 and float(s) == 1.0 and float(l) == 1.1591796875
  np.testing.assert_array_equal(
      jax.grad(lambda d: jnp.linalg.slogdet(d)[1])(hh),
      np.array([[0.62744140625, 0.2353515625], [-0.07843017578125, 0.470703125]], np.float16))


def test_slogdet_singular_derivatives(x64):
  a2 = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [1.0, 0.0]]])
  sign, logdet = jnp.linalg.slogdet(a2)
  np.testing.assert_array_equal(sign, [0.0, -1.0])
  np.testing.assert_array_equal(logdet, [-INF, 0.0])
  np.testing.assert_array_equal(jax.grad(lambda d: jnp.linalg.slogdet(d)[1].sum())(a2),
                                [[[INF, -INF], [-INF, INF]], [[0.0, 1.0], [1.0, 0.0]]])
  a3 = np.array([[[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
                 [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]])
  sign, logdet = jnp.linalg.slogdet(a3)
  np.testing.assert_array_equal(sign, [1.0, 0.0])
  np.testing.assert_allclose(logdet, [2.8903717578961645, -INF], rtol=1e-15)
  g = np.asarray(jax.grad(lambda d: jnp.linalg.slogdet(d)[1].sum())(a3))
  # The regular member's gradient is A^-T; the singular one's is what A^-1 gives (JAX's).
  np.testing.assert_allclose(
      g[0], [[0.6111111111111112, -0.22222222222222224, 0.05555555555555556],
             [-0.22222222222222224, 0.4444444444444445, -0.11111111111111112],
             [0.05555555555555556, -0.11111111111111112, 0.2777777777777778]], rtol=1e-14)
  np.testing.assert_array_equal(g[1], [[-INF, -INF, INF], [NAN, NAN, NAN], [NAN, NAN, NAN]])


def test_slogdet_complex_jvp(x64):
  c = np.array([[1 + 2j, 0.5 - 1j], [0.25j, 2 - 0.5j]])
  sign, logdet = jnp.linalg.slogdet(c)
  np.testing.assert_allclose(sign, 0.6316729511622357 + 0.7752349855172892j, rtol=1e-15)
  np.testing.assert_allclose(logdet, 1.4709844127921894, rtol=1e-15)
  ds, dl = jax.jvp(jnp.linalg.slogdet, (c,), (np.ones_like(c) * (1 + 0.5j),))[1]
  np.testing.assert_allclose(ds, -0.20387465818632747 + 0.1661200918555261j, rtol=1e-14)
  np.testing.assert_allclose(dl, 0.8227535037098104, rtol=1e-14)
  c3 = np.array([[1 + 2j, 0.5 - 1j, 0], [0.25j, 2 - 0.5j, 1], [1, 1j, 3]])
  ds, dl = jax.jvp(jnp.linalg.slogdet, (c3,), (np.ones_like(c3) * (1 + 0.5j),))[1]
  np.testing.assert_allclose(ds, -0.12704226065715157 + 0.16808668333100055j, rtol=1e-13)
  np.testing.assert_allclose(dl, 0.9673866276568284, rtol=1e-13)


def test_linear_map_of_jit_returns_new_arrays():
  # A jit that passes its input through: JAX's linear (and transposed) program returns
  # a new Array of canonical dtype; we handed back the caller's host (co)tangent as is
  # (a float64 NumPy array under x32, or a Python float).
  b = np.ones(2, np.float32)
  ct, = jax.vjp(jax.jit(lambda b: b), b)[1](np.ones(2))
  assert isinstance(ct, jax.Array) and ct.dtype == np.float32 and not ct.weak_type
  ct, = jax.vjp(jax.jit(lambda b: b), 1.0)[1](1.0)
  assert isinstance(ct, jax.Array) and ct.dtype == np.float32 and ct.weak_type
  t = jax.linearize(jax.jit(lambda b: b), b)[1](np.ones(2, np.float32))
  assert isinstance(t, jax.Array) and t.dtype == np.float32
  # Without a jit, the cotangent passes through untouched, in JAX too.
  ct, = jax.vjp(lambda b: b, b)[1](np.ones(2))
  assert type(ct) is np.ndarray and ct.dtype == np.float64
