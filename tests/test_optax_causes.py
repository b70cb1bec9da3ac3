"""Regressions for the causes of optax 0.2.8 test failures (tools/client_suite.py).

Each test pins a JAX 0.10.2 behaviour that optax relies on; the expected values were
checked against real JAX (/work/jaxvenv) and are written out here by hand.
"""
import inspect

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.special as jsp
from tracejax._src.test_util import check_grads


# ---- 1. jax.typeof(x).sharding and out_sharding= ----

def test_aval_sharding_outside_and_inside_jit():
  x = jnp.ones((2, 3))
  s = jax.typeof(x).sharding
  # JAX 0.10.2 prints exactly this for a (2, 3) array, outside and inside jit.
  assert repr(s) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None))"
  assert s.spec == jax.sharding.PartitionSpec(None, None)
  assert s.mesh.empty and s.mesh.axis_names == () and s.mesh.size == 0
  assert not s.mesh.are_all_axes_explicit
  assert s.shard_shape((2, 3)) == (2, 3) and s.is_fully_replicated
  assert repr(jax.typeof(jnp.float32(1)).sharding.spec) == "P()"
  seen = []

  def f(v):
    seen.append(jax.typeof(v).sharding)
    return v
  jax.jit(f)(jnp.ones(3))
  assert repr(seen[0]) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))"


# The samplers that take out_sharding= in JAX 0.10.2 (inspect.signature there).
_SAMPLERS = ["ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
             "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric",
             "gumbel", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
             "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
             "poisson", "rademacher", "randint", "rayleigh", "t", "triangular",
             "truncated_normal", "uniform", "wald"]


def test_samplers_take_out_sharding():
  for name in _SAMPLERS:
    p = inspect.signature(getattr(jax.random, name)).parameters["out_sharding"]
    assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None, name
  for name in ["binomial", "multinomial", "double_sided_maxwell", "weibull_min", "choice"]:
    assert "out_sharding" not in inspect.signature(getattr(jax.random, name)).parameters


def test_sampler_out_sharding_values_and_errors():
  key = jax.random.key(0)
  x = jnp.zeros((2, 3))
  s = jax.typeof(x).sharding
  ref = jax.random.normal(key, (2, 3))
  np.testing.assert_array_equal(jax.random.normal(key, (2, 3), out_sharding=s), ref)
  out = jax.jit(lambda v: jax.random.uniform(key, v.shape, out_sharding=jax.typeof(v).sharding))(x)
  np.testing.assert_array_equal(out, jax.random.uniform(key, (2, 3)))
  np.testing.assert_array_equal(jax.random.gamma(key, 2., (3,), out_sharding=s),
                                jax.random.gamma(key, 2., (3,)))
  with pytest.raises(ValueError, match="not under a mesh context"):
    jax.random.normal(key, (3,), out_sharding=jax.sharding.PartitionSpec())
  with pytest.raises(TypeError, match="only supports instances of `NamedSharding`"):
    jax.random.normal(key, (3,), out_sharding=x.sharding)  # a SingleDeviceSharding


def test_creation_device_and_out_sharding():
  x = jnp.ones((2,))
  s = jax.typeof(x).sharding
  for fn, args, want in [(jnp.zeros, (3,), np.zeros(3)), (jnp.ones, (2,), np.ones(2)),
                         (jnp.empty, (2,), np.zeros(2)), (jnp.full, (2, 7.), np.full(2, 7.)),
                         (jnp.arange, (3,), np.arange(3)), (jnp.asarray, ([1, 2],), [1, 2]),
                         (jnp.array, ([1., 2.],), [1., 2.]),
                         (jnp.zeros_like, (x,), np.zeros(2)), (jnp.full_like, (x, 3), [3, 3])]:
    np.testing.assert_array_equal(fn(*args, out_sharding=s), want)
    np.testing.assert_array_equal(fn(*args, device=jax.devices()[0]), want)
    assert "out_sharding" in inspect.signature(fn).parameters
  # JAX also accepts a type's sharding as device=.
  np.testing.assert_array_equal(jnp.zeros(2, device=s), np.zeros(2))
  with pytest.raises(ValueError, match="Only one of `device` or `out_sharding`"):
    jnp.zeros(2, device=jax.devices()[0], out_sharding=s)
  with pytest.raises(TypeError, match="`out_sharding` argument of zeros"):
    jnp.zeros(2, out_sharding=x.sharding)


# ---- 2. typed keys are jax.Arrays ----

def test_typed_key_is_array():
  assert isinstance(jax.random.key(0), jax.Array)
  assert isinstance(jax.random.split(jax.random.key(0), 3), jax.Array)
  assert not isinstance(np.zeros(2, np.uint32), jax.Array)


# ---- 3. a list of axes ----

def test_reductions_take_list_axis():
  a = np.arange(24.).reshape(2, 3, 4).astype(np.float32)
  x = jnp.asarray(a)
  for name in ["sum", "mean", "max", "min", "prod", "var", "std", "ptp", "amax"]:
    np.testing.assert_allclose(getattr(jnp, name)(x, axis=[-1]),
                               getattr(np, name)(a, axis=(-1,)), rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(getattr(jnp, name)(x, [0, 2], keepdims=True),
                               getattr(np, name)(a, (0, 2), keepdims=True), rtol=1e-6)
  np.testing.assert_array_equal(jnp.any(x > 20, axis=[0, 1]), np.any(a > 20, axis=(0, 1)))
  np.testing.assert_array_equal(jnp.all(x > 0, axis=[1]), np.all(a > 0, axis=1))
  np.testing.assert_allclose(jax.jit(lambda v: jnp.sum(v, axis=[-1]))(x), a.sum(-1))
  np.testing.assert_allclose(x.sum(axis=[0]), a.sum(0))
  np.testing.assert_allclose(jsp.logsumexp(x, axis=[-1]),
                             np.log(np.exp(a.astype(np.float64)).sum(-1)), rtol=1e-6)
  # argmax takes one axis only (JAX raises TypeError for a list too).
  with pytest.raises(TypeError):
    jnp.argmax(x, axis=[-1])


# ---- 4. vmap maps keyword arguments over axis 0 ----

def test_vmap_kwargs_mapped_at_zero():
  f = lambda x, y=1.: x * y + 1.
  xs, ys = np.arange(3.), np.arange(3.) + 2.
  np.testing.assert_allclose(jax.vmap(f)(xs, y=ys), [f(a, b) for a, b in zip(xs, ys)])
  # in_axes covers positional arguments only; the keyword argument is still mapped.
  np.testing.assert_allclose(jax.vmap(f, in_axes=(None,))(2., y=ys), [f(2., b) for b in ys])
  np.testing.assert_allclose(jax.vmap(f, in_axes=1)(np.ones((2, 3)), y=ys),
                             [f(np.ones(2), b) for b in ys])
  # A keyword argument without axis 0 cannot be mapped (JAX raises ValueError too).
  with pytest.raises(ValueError):
    jax.vmap(f)(xs, y=2.)


# ---- 5. logsumexp with zero weights: finite second derivatives ----

def test_logsumexp_zero_weight_hessian_finite():
  b = jnp.array([0., 1.])
  g = lambda a: jsp.logsumexp(a, b=b)
  a = jnp.array([0., -50.])
  np.testing.assert_array_equal(jax.grad(g)(a), [0., 1.])           # JAX: [0. 1.]
  np.testing.assert_array_equal(jax.hessian(g)(a), np.zeros((2, 2)))  # JAX: zeros
  np.testing.assert_allclose(g(a), -50.)
  # The optax focal-loss pattern (sigmoid_focal_loss with gamma=0.5).
  labels = jnp.array([0.9, 0.1, 1.0, 0.0])

  def focal(logits):
    lp, lq = jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits)
    w = jnp.stack([1 - labels, labels], -1)
    return jnp.sum(jnp.exp(0.5 * jax.nn.logsumexp(jnp.stack([lp, lq], -1), axis=-1, b=w)))
  h = jax.hessian(focal)(jnp.array([100., -100., 50., -50.]))
  assert np.all(np.isfinite(np.asarray(h)))


def test_logsumexp_weights_check_grads(x64):
  a = np.array([0.3, -1.2, 2.0])
  b = np.array([0.5, 0., 2.0])
  check_grads(lambda v: jsp.logsumexp(v, b=b), (a,), order=2)
  check_grads(lambda v, w: jsp.logsumexp(v, b=w), (a, np.array([0.5, 0.7, 2.0])), order=2)
  np.testing.assert_allclose(jsp.logsumexp(a, b=b), np.log(np.sum(b * np.exp(a))))
  np.testing.assert_allclose(jax.jit(lambda v: jsp.logsumexp(v, b=b))(a),
                             np.log(np.sum(b * np.exp(a))))
  rows = np.stack([a, a + 1.])
  np.testing.assert_allclose(jax.vmap(lambda v: jsp.logsumexp(v, b=b))(rows),
                             [np.log(np.sum(b * np.exp(r))) for r in rows])


def test_out_sharding_real_named_sharding_one_device():
  # out_sharding= names Explicit mesh axes (JAX 0.10.2 rejects Auto axes with a ValueError)
  from tracejax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
  mesh = Mesh(np.array(jax.devices()[:1]), ("x",), axis_types=(AxisType.Explicit,))
  s = NamedSharding(mesh, P("x"))
  a = jnp.zeros(4, out_sharding=s)
  np.testing.assert_array_equal(a, np.zeros(4))
  assert a.sharding == s
  k = jax.random.key(1)
  r = jax.random.normal(k, (2,), out_sharding=s)
  np.testing.assert_array_equal(r, jax.random.normal(k, (2,)))
  assert r.sharding == s and str(jax.typeof(r)) == "float32[2@x]"
  with jax.set_mesh(mesh):  # a PartitionSpec names axes of the current mesh
    assert jnp.ones(2, out_sharding=P()).sharding == NamedSharding(mesh, P(None))
  auto = Mesh(np.array(jax.devices()[:1]), ("x",))
  with pytest.raises(ValueError, match="cannot contain axis names that are of type Auto"):
    jnp.zeros(4, out_sharding=NamedSharding(auto, P("x")))
