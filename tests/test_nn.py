"""jax.nn: activations, softmax family, standardize, one_hot, attention and the
initializers, against NumPy/SciPy references (values, gradients, edge cases).

Derivative conventions at kinks and ties (relu'(0) == 0, softplus'(0) == 0.5, ...)
were read off real JAX 0.10.2 and are stored here as plain numbers.
"""
import numpy as np
import pytest
import scipy.special as osp_special

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import nn
from tracejax.nn import initializers
from tracejax.test_util import check_grads

X = np.linspace(-4., 4., 12).astype(np.float32)  # avoids 0, +-1 and other kinks
BIG = np.array([-1000., -100., -30., 30., 100., 1000.], np.float32)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _sigmoid(x):
  return osp_special.expit(x)


def _gelu_tanh(x):
  return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# name, tracejax function, NumPy reference (float64), whether check_grads runs order 2
ACTIVATIONS = [
    ("relu", nn.relu, lambda x: np.maximum(x, 0), 1),
    ("relu6", nn.relu6, lambda x: np.clip(x, 0, 6), 1),
    ("sigmoid", nn.sigmoid, _sigmoid, 2),
    ("softplus", nn.softplus, lambda x: np.logaddexp(x, 0), 2),
    ("soft_sign", nn.soft_sign, lambda x: x / (np.abs(x) + 1), 1),
    ("silu", nn.silu, lambda x: x * _sigmoid(x), 2),
    ("swish", nn.swish, lambda x: x * _sigmoid(x), 2),
    ("log_sigmoid", nn.log_sigmoid, lambda x: -np.logaddexp(-x, 0), 2),
    ("elu", nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), 1),
    ("leaky_relu", nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x), 1),
    ("hard_tanh", nn.hard_tanh, lambda x: np.clip(x, -1, 1), 1),
    ("celu", nn.celu, lambda x: np.maximum(x, 0) + np.minimum(np.expm1(x), 0), 1),
    ("selu", nn.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), 1),
    ("gelu", nn.gelu, _gelu_tanh, 2),
    ("gelu_exact", lambda x: nn.gelu(x, approximate=False),
     lambda x: x * (1 + osp_special.erf(x / np.sqrt(2))) / 2, 2),
    ("hard_sigmoid", nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, 1),
    ("hard_silu", nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6, 1),
    ("mish", nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0)), 2),
    ("squareplus", nn.squareplus, lambda x: (x + np.sqrt(x * x + 4)) / 2, 2),
    ("sparse_plus", nn.sparse_plus,
     lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)), 1),
    ("sparse_sigmoid", nn.sparse_sigmoid, lambda x: np.clip((x + 1) / 2, 0, 1), 1),
    ("tanh", nn.tanh, np.tanh, 2),
    ("identity", nn.identity, lambda x: x, 1),
]


@pytest.mark.parametrize("name,f,ref,order", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_grads(name, f, ref, order):
  out = f(X)
  assert out.shape == X.shape and out.dtype == np.float32, name
  np.testing.assert_allclose(np.asarray(out), ref(X.astype(np.float64)), rtol=2e-6, atol=2e-6)
  # Large inputs must neither overflow nor produce NaN.
  if name == "squareplus":
    # JAX 0.10.2 evaluates the textbook formula, which cancels for large negative x in
    # float32; these are its values for BIG (ours must agree, not be more accurate).
    np.testing.assert_array_equal(np.asarray(f(BIG)), np.array(
        [0.001007080078125, 0.009998321533203125, 0.03329658508300781,
         30.033296585083008, 100.00999450683594, 1000.0009765625], np.float32))
  else:
    with np.errstate(over="ignore", invalid="ignore"):
      np.testing.assert_allclose(np.asarray(f(BIG)), ref(BIG.astype(np.float64)),
                                 rtol=1e-6, atol=1e-30)
  check_grads(f, (X,), order=order, modes=("fwd", "rev"))


def test_activations_jit_vmap_and_large_input_gradients():
  g = jax.vmap(jax.grad(nn.softplus))(BIG)
  np.testing.assert_allclose(np.asarray(g), _sigmoid(BIG.astype(np.float64)), atol=1e-7)
  g = jax.vmap(jax.grad(nn.log_sigmoid))(BIG)
  np.testing.assert_allclose(np.asarray(g), _sigmoid(-BIG.astype(np.float64)), atol=1e-7)
  for f in (nn.elu, nn.selu, nn.celu, nn.gelu, nn.silu, nn.mish):
    g = np.asarray(jax.vmap(jax.grad(f))(BIG))
    assert np.all(np.isfinite(g)), f
  np.testing.assert_allclose(jax.jit(nn.selu)(X), nn.selu(X), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(nn.leaky_relu)(X, 0.3),
                             np.where(X >= 0, X, 0.3 * X), rtol=1e-6)
  np.testing.assert_allclose(nn.elu(X, 2.), np.where(X > 0, X, 2. * np.expm1(X)), rtol=1e-5)
  np.testing.assert_allclose(nn.celu(X, 2.),
                             np.maximum(X, 0) + 2. * np.minimum(np.expm1(X / 2.), 0),
                             rtol=1e-5, atol=1e-7)
  # gelu of an integer input is computed in the default float type
  assert nn.gelu(np.array([1, -2], np.int32)).dtype == np.float32
  assert nn.relu(np.array([1, -2], np.int32)).dtype == np.int32


# Derivatives where the function is not differentiable (or where naive differentiation
# splits a tie unevenly), as JAX 0.10.2 defines them.
KINKS = [
    (nn.relu, [-1., 0., 1.], [0., 0., 1.]),
    (nn.relu6, [0., 3., 6., 7.], [0., 1., 0., 0.]),
    (nn.softplus, [0.], [0.5]),
    (nn.log_sigmoid, [0.], [0.5]),
    (nn.leaky_relu, [-1., 0., 1.], [0.01, 1., 1.]),
    (nn.hard_tanh, [-1., 0., 1.], [1., 1., 1.]),
    (nn.elu, [0.], [1.]),
    (nn.celu, [0.], [1.]),
    (nn.selu, [0.], [SELU_SCALE * SELU_ALPHA]),
    (nn.hard_sigmoid, [-3., 0., 3.], [0., 1 / 6, 0.]),
    (nn.hard_silu, [-3., 3.], [0., 1.]),
    (nn.soft_sign, [0.], [1.]),
    (nn.sparse_plus, [-1., 1.], [0., 1.]),
    (nn.sparse_sigmoid, [-1., 1.], [0.25, 0.25]),
]


@pytest.mark.parametrize("f,xs,expected", KINKS, ids=[k[0].__name__ for k in KINKS])
def test_derivative_conventions_at_kinks(f, xs, expected):
  g = jax.vmap(jax.grad(f))(np.array(xs, np.float32))
  np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6)


def test_glu():
  x = np.arange(24.).reshape(2, 3, 4).astype(np.float32) / 7
  np.testing.assert_allclose(nn.glu(x), x[..., :2] * _sigmoid(x[..., 2:]), rtol=1e-6)
  np.testing.assert_allclose(nn.glu(x, axis=0), x[:1] * _sigmoid(x[1:]), rtol=1e-6)
  check_grads(jax.jit(nn.glu), (x,), order=1)
  with pytest.raises(ValueError):
    nn.glu(x, axis=1)


M = (np.arange(24.).reshape(2, 3, 4) / 3 - 3).astype(np.float32)


@pytest.mark.parametrize("axis", [-1, 0, (0, 2), None])
def test_softmax_family_against_scipy(axis):
  np.testing.assert_allclose(nn.softmax(M, axis=axis), osp_special.softmax(M, axis=axis),
                             rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(nn.log_softmax(M, axis=axis),
                             osp_special.log_softmax(M, axis=axis), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(nn.logsumexp(M, axis=axis), osp_special.logsumexp(M, axis=axis),
                             rtol=1e-6)
  np.testing.assert_allclose(
      nn.logmeanexp(M, axis=axis),
      osp_special.logsumexp(M, axis=axis) - np.log(M.size / np.asarray(
          osp_special.logsumexp(M, axis=axis)).size), rtol=1e-5)


def test_softmax_family_grads():
  x = M[0]
  # jitted: each derivative compiles once instead of primitive by primitive
  check_grads(jax.jit(lambda v: nn.softmax(v, axis=-1)), (x,), order=2)
  check_grads(jax.jit(lambda v: nn.log_softmax(v, axis=0)), (x,), order=2)
  check_grads(jax.jit(lambda v: nn.logsumexp(v, axis=1)), (x,), order=1)
  # The closed-form softmax derivative y * (t - <y, t>), checked against the Jacobian.
  y = osp_special.softmax(x[0].astype(np.float64))
  jac = np.asarray(jax.jacobian(nn.softmax)(x[0]))
  np.testing.assert_allclose(jac, np.diag(y) - np.outer(y, y), atol=1e-6)
  g = np.asarray(jax.grad(lambda v: nn.logsumexp(v))(x))
  np.testing.assert_allclose(g, osp_special.softmax(x, axis=None), rtol=1e-5)


def test_softmax_family_stable_for_large_and_infinite_inputs():
  np.testing.assert_allclose(nn.softmax(BIG), [0, 0, 0, 0, 0, 1], atol=0)
  np.testing.assert_allclose(nn.log_softmax(BIG), BIG - 1000., rtol=1e-6)
  np.testing.assert_allclose(nn.logsumexp(BIG), 1000., rtol=1e-7)
  np.testing.assert_allclose(nn.logsumexp(np.array([1e30, 1e30], np.float32)),
                             1e30, rtol=1e-6)
  x = np.array([-np.inf, 0., 1.], np.float32)
  np.testing.assert_allclose(nn.softmax(x), osp_special.softmax(x), rtol=1e-6)
  np.testing.assert_allclose(nn.log_softmax(x), [-np.inf, -1.3132616, -0.31326166], rtol=1e-6)
  g = np.asarray(jax.grad(lambda v: nn.softmax(v)[2])(x))
  assert np.all(np.isfinite(g))
  assert float(nn.logsumexp(np.array([-np.inf, -np.inf], np.float32))) == -np.inf
  assert float(nn.logsumexp(np.array([np.inf, 0.], np.float32))) == np.inf
  val, sign = nn.logsumexp(np.array([1., 2.], np.float32), b=np.array([1., -2.], np.float32),
                           return_sign=True)
  np.testing.assert_allclose([val, sign], [np.log(2 * np.e ** 2 - np.e), -1.], rtol=1e-6)


def test_softmax_family_where_masks():
  x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
  w = np.array([[True, False, True], [True, True, False]])
  expect_sm = np.where(w, np.exp(x), 0)
  expect_sm = expect_sm / expect_sm.sum(-1, keepdims=True)
  np.testing.assert_allclose(nn.softmax(x, where=w), expect_sm, rtol=1e-6)
  np.testing.assert_allclose(nn.log_softmax(x, where=w),
                             np.where(w, np.log(np.where(w, expect_sm, 1)), -np.inf), rtol=1e-6)
  lse = np.log(np.where(w, np.exp(x), 0).sum(-1))
  np.testing.assert_allclose(nn.logsumexp(x, axis=-1, where=w), lse, rtol=1e-6)
  np.testing.assert_allclose(nn.logmeanexp(x, axis=-1, where=w), lse - np.log(2), rtol=1e-6)
  # Masked entries get no gradient; the unmasked ones get the renormalised softmax's.
  g = np.asarray(jax.grad(lambda v: nn.softmax(v, where=w)[0, 0])(x))
  y = expect_sm[0]
  np.testing.assert_allclose(g[0], [y[0] * (1 - y[0]), 0, -y[0] * y[2]], rtol=1e-5)
  np.testing.assert_allclose(g[1], 0)
  # A fully masked row: softmax 0, logsumexp -inf (JAX's behaviour).
  none = np.array([[False] * 3, [True] * 3])
  np.testing.assert_allclose(nn.softmax(x, where=none)[0], 0)
  assert float(nn.logsumexp(x, axis=-1, where=none)[0]) == -np.inf


def test_standardize_and_normalize():
  x = M.reshape(6, 4)
  mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
  np.testing.assert_allclose(nn.standardize(x), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(nn.normalize(x, axis=0),
                             (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(nn.standardize(x, mean=1., variance=4., epsilon=0.),
                             (x - 1.) / 2., rtol=1e-6)
  # 'stable' avoids E[x^2] - E[x]^2 cancellation when |mean| >> std.
  big = np.array([[1e4 + 1, 1e4 + 2, 1e4 + 3]], np.float32)
  np.testing.assert_allclose(nn.standardize(big, algorithm="stable", epsilon=0.),
                             [[-1.2247449, 0., 1.2247449]], rtol=1e-5)
  w = np.array([True, True, False, True])
  xm = x[:, w]
  np.testing.assert_allclose(
      nn.standardize(x, where=w)[:, w],
      (xm - xm.mean(-1, keepdims=True)) / np.sqrt(xm.var(-1, keepdims=True) + 1e-5),
      rtol=1e-4, atol=1e-5)
  check_grads(jax.jit(lambda v: nn.standardize(v, algorithm="stable")), (x[:2],), order=1)


def test_one_hot():
  out = nn.one_hot(np.array([0, 2, 5, -1]), 4)
  np.testing.assert_array_equal(out, [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
  assert out.dtype == np.float32
  x = np.array([[0, 2], [1, 3]])
  np.testing.assert_array_equal(nn.one_hot(x, 4, axis=0),
                                np.moveaxis(np.eye(4)[x], -1, 0))
  assert nn.one_hot(x, 4, dtype=jnp.int32).dtype == np.int32
  np.testing.assert_array_equal(jax.jit(lambda v: nn.one_hot(v, 3))(np.array([2, 0])),
                                [[0, 0, 1], [1, 0, 0]])
  with pytest.raises(TypeError, match="num_classes"):
    jax.jit(nn.one_hot)(np.array([1]), 3)


def test_log1mexp():
  y = np.array([1e-6, 0.1, 0.5, np.log(2), 1., 5., 30., 100.], np.float32)
  y64 = y.astype(np.float64)
  # The reference switches formulas too: either one alone loses digits in float64.
  ref = np.where(y64 < np.log(2), np.log(-np.expm1(-y64)), np.log1p(-np.exp(-y64)))
  np.testing.assert_allclose(nn.log1mexp(y), ref, rtol=1e-5, atol=1e-37)
  g = np.asarray(jax.vmap(jax.grad(nn.log1mexp))(y))
  np.testing.assert_allclose(g, 1 / np.expm1(y64), rtol=1e-4, atol=1e-37)


def _attention_reference(q, k, v, bias=None, mask=None, scale=None):
  q, k, v = (a.astype(np.float64) for a in (q, k, v))
  n, kh = q.shape[2], k.shape[2]
  k, v = np.repeat(k, n // kh, axis=2), np.repeat(v, n // kh, axis=2)
  scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
  logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
  if bias is not None:
    logits = logits + bias
  if mask is not None:
    logits = np.where(mask, logits, -1e30)
  p = osp_special.softmax(logits, axis=-1)
  return np.einsum("bnts,bsnh->btnh", p, v)


_dpa = jax.jit(nn.dot_product_attention,
               static_argnames=("scale", "is_causal", "local_window_size"))


def test_dot_product_attention():
  rs = np.random.RandomState(0)
  q = rs.randn(2, 5, 4, 8).astype(np.float32)
  k, v = rs.randn(2, 2, 6, 2, 8).astype(np.float32)
  bias = rs.randn(1, 4, 5, 6).astype(np.float32)
  mask = rs.rand(2, 1, 5, 6) > 0.3
  np.testing.assert_allclose(_dpa(q, k, v), _attention_reference(q, k, v),
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(
      _dpa(q, k, v, bias, mask, scale=0.3),
      _attention_reference(q, k, v, bias, mask, 0.3), rtol=1e-4, atol=1e-5)
  t, s = np.arange(5)[:, None], np.arange(6)[None, :]
  np.testing.assert_allclose(_dpa(q, k, v, is_causal=True),
                             _attention_reference(q, k, v, mask=s <= t), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(_dpa(q, k, v, local_window_size=(1, 2)),
                             _attention_reference(q, k, v, mask=(s >= t - 1) & (s <= t + 2)),
                             rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(_dpa(q[0], k[0], v[0]),
                             _attention_reference(q, k, v)[0], rtol=1e-4, atol=1e-5)
  # Padding queries give zero rows; padding keys are masked out.
  out = np.asarray(_dpa(q, k, v, query_seq_lengths=np.array([3, 5]),
                                            key_value_seq_lengths=np.array([4, 6])))
  ref = _attention_reference(q, k, v, mask=(s < np.array([4, 6])[:, None, None, None]))
  np.testing.assert_allclose(out[0, :3], ref[0, :3], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(out[0, 3:], 0)
  np.testing.assert_allclose(out[1], ref[1], rtol=1e-4, atol=1e-5)
  check_grads(lambda a: _dpa(a, k[:1, :3], v[:1, :3], is_causal=True),
              (q[:1, :3],), order=1, modes=("rev",))
  with pytest.raises(ValueError, match="multiple"):
    nn.dot_product_attention(q[:, :, :3], k, v)


# ---- initializers ----

KEY = jax.random.PRNGKey(0)


def test_initializer_factories_and_constants():
  for f in (initializers.zeros, initializers.ones):
    out = f(KEY, (2, 3))
    assert out.shape == (2, 3) and out.dtype == np.float32
    assert f(KEY, (2,), jnp.int32).dtype == np.int32
  np.testing.assert_array_equal(initializers.zeros(KEY, (2, 3)), np.zeros((2, 3)))
  np.testing.assert_array_equal(initializers.ones(KEY, (4,)), np.ones(4))
  np.testing.assert_array_equal(initializers.constant(3.)(KEY, (2,)), [3., 3.])
  assert initializers.constant(1, dtype=jnp.int32)(KEY, (2,)).dtype == np.int32
  # Factories return closures named like JAX's (the stax reprs of the seed show them).
  assert initializers.normal().__qualname__ == "normal.<locals>.init"
  assert initializers.glorot_normal().__qualname__ == "variance_scaling.<locals>.init"
  assert isinstance(initializers.normal(), initializers.Initializer)


def _stats(x):
  x = np.asarray(x, np.float64)
  return x.mean(), x.var()


SHAPE = (160, 240)  # fan_in 160, fan_out 240: 38400 samples


@pytest.mark.parametrize("name,variance,kind", [
    ("glorot_normal", 2 / (160 + 240), "trunc"), ("glorot_uniform", 2 / (160 + 240), "unif"),
    ("he_normal", 2 / 160, "trunc"), ("he_uniform", 2 / 160, "unif"),
    ("lecun_normal", 1 / 160, "trunc"), ("lecun_uniform", 1 / 160, "unif"),
    ("xavier_normal", 2 / 400, "trunc"), ("kaiming_uniform", 2 / 160, "unif"),
])
def test_variance_scaling_family_statistics(name, variance, kind):
  w = getattr(initializers, name)()(KEY, SHAPE)
  assert w.shape == SHAPE and w.dtype == np.float32
  mean, var = _stats(w)
  assert abs(mean) < 4 * np.sqrt(variance / w.size)
  np.testing.assert_allclose(var, variance, rtol=0.04)
  w = np.asarray(w)
  if kind == "unif":
    # uniform on [-sqrt(3 var), sqrt(3 var)]
    assert np.abs(w).max() <= np.sqrt(3 * variance) * (1 + 1e-6)
    assert np.abs(w).max() > 0.99 * np.sqrt(3 * variance)
  else:
    # truncated at two (pre-rescaling) standard deviations
    bound = 2 * np.sqrt(variance) / 0.87962566103423978
    assert np.abs(w).max() <= bound * (1 + 1e-5)
  assert getattr(initializers, name)(dtype=jnp.float16)(KEY, (3, 4)).dtype == np.float16


def test_variance_scaling_modes_and_receptive_field():
  # A 3x3 conv kernel HWIO = (3, 3, 20, 30): fans include the receptive field 9.
  shape = (3, 3, 20, 30)
  for mode, n in (("fan_in", 180), ("fan_out", 270), ("fan_avg", 225),
                  ("fan_geo_avg", np.sqrt(180 * 270))):
    w = initializers.variance_scaling(2., mode, "normal")(KEY, shape)
    np.testing.assert_allclose(_stats(w)[1], 2. / n, rtol=0.06)
  # in_axis/out_axis choose the fan axes (e.g. OIHW kernels).
  w = initializers.variance_scaling(1., "fan_in", "normal", in_axis=1, out_axis=0)(
      KEY, (30, 20, 3, 3))
  np.testing.assert_allclose(_stats(w)[1], 1 / 180, rtol=0.06)
  with pytest.raises(ValueError):
    initializers.variance_scaling(1., "fan_bad", "normal")
  with pytest.raises(ValueError):
    initializers.variance_scaling(1., "fan_in", "cauchy")
  with pytest.raises(ValueError):
    initializers.glorot_normal()(KEY, (5,))


def test_normal_uniform_truncated_normal():
  w = initializers.normal(0.5)(KEY, (200, 200))
  np.testing.assert_allclose(np.sqrt(_stats(w)[1]), 0.5, rtol=0.02)
  w = np.asarray(initializers.uniform(0.5)(KEY, (200, 200)))
  assert w.min() >= 0 and w.max() < 0.5
  np.testing.assert_allclose(w.mean(), 0.25, rtol=0.02)
  w = np.asarray(initializers.truncated_normal(2.)(KEY, (200, 200)))
  assert np.abs(w).max() <= 4. * (1 + 1e-6)
  # std of a unit normal truncated to [-2, 2] is 0.8796
  np.testing.assert_allclose(w.std(), 2 * 0.87962566, rtol=0.02)
  assert initializers.normal(dtype=jnp.float16)(KEY, (2,)).dtype == np.float16


@pytest.mark.parametrize("shape,column_axis", [((4, 6), -1), ((6, 4), -1), ((3, 2, 5), 0),
                                               ((5, 5), -1)])
def test_orthogonal(shape, column_axis):
  w = np.asarray(initializers.orthogonal(scale=2., column_axis=column_axis)(KEY, shape),
                 np.float64)
  assert w.shape == shape
  mat = np.moveaxis(w, column_axis, -1).reshape(-1, shape[column_axis])
  if mat.shape[0] >= mat.shape[1]:
    np.testing.assert_allclose(mat.T @ mat, 4 * np.eye(mat.shape[1]), atol=1e-5)
  else:
    np.testing.assert_allclose(mat @ mat.T, 4 * np.eye(mat.shape[0]), atol=1e-5)


def test_delta_orthogonal():
  w = np.asarray(initializers.delta_orthogonal()(KEY, (3, 3, 4, 5)), np.float64)
  centre = w[1, 1]
  np.testing.assert_allclose(centre @ centre.T, np.eye(4), atol=1e-5)
  w[1, 1] = 0
  np.testing.assert_array_equal(w, 0)
  assert initializers.delta_orthogonal()(KEY, (3, 4, 4)).shape == (3, 4, 4)
  with pytest.raises(ValueError):
    initializers.delta_orthogonal()(KEY, (4, 4))
  with pytest.raises(ValueError):
    initializers.delta_orthogonal()(KEY, (3, 3, 5, 4))


def test_nn_under_rank_promotion_raise():
  # Library code must not rely on implicit rank promotion. The check happens while
  # tracing, so make_jaxpr suffices (and compiles nothing).
  q = np.ones((1, 2, 2, 4), np.float32)
  kv = np.ones((1, 3, 1, 4), np.float32)
  with jax.numpy_rank_promotion("raise"):
    jax.make_jaxpr(lambda x: nn.standardize(x))(M)
    jax.make_jaxpr(lambda x: nn.softmax(x, axis=(0, 2)))(M)
    jax.make_jaxpr(lambda x: nn.logmeanexp(x, axis=1, where=x > 0))(M)
    jax.make_jaxpr(lambda x: nn.dot_product_attention(
        x, kv, kv, is_causal=True, key_value_seq_lengths=np.array([2])))(q)
