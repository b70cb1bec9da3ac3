"""`jax.random`'s distributions beyond the basic samplers: bernoulli, rademacher,
categorical, the transforms of one uniform or normal draw (cauchy, laplace,
pareto, weibull_min, ...), gamma and the samplers built on it (beta, dirichlet, t,
chisquare, f, ...), and the rejection samplers (poisson, binomial, multinomial).

Split off `tracejax/_src/random.py` by subject; its keys, argument helpers and basic
samplers (uniform, normal, ...) are used here, under the same conventions: each
sampler follows JAX 0.10.2's algorithm step by step, and `lax`/`jnp` are that
module's namespaces of tracejax's own functions. `tracejax/random.py` re-exports
both modules.
"""
import functools
import math

import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.lax import random_bits as prng
from tracejax._src.lax import utils as lax_utils
from tracejax._src.numpy import util as _jnp_util
from tracejax._src.random import (
    _check_broadcast_shapes, _check_float, _check_prng_key, _check_shape, _concrete_int,
    _const, _isnan, _jit, _linalg, _normal, _random_bits, _shape_arg, _split,
    _out_sharding_arg, _top_k_indices, _uniform, _unstack_keys, _user_dtype, gumbel, jnp,
    lax)

__all__ = [
    "bernoulli", "beta", "gamma", "loggamma", "dirichlet", "categorical",
    "laplace", "logistic", "cauchy", "exponential", "poisson", "t", "pareto", "rademacher",
    "maxwell", "double_sided_maxwell", "weibull_min", "ball", "orthogonal", "chisquare", "f",
    "geometric", "binomial", "multinomial", "rayleigh", "wald", "triangular",
    "generalized_normal", "random_gamma_p",
]


def _softmax(x, axis=-1):
  # jax.nn.softmax: the max is a constant for the derivative; initial=-inf (as there)
  # lets an empty axis through: dirichlet of a (..., 0) alpha is empty, not an error.
  x_max = jnp.max(x, axis, keepdims=True, initial=-np.inf)
  unnormalized = jnp.exp(x - lax.stop_gradient(x_max))
  return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


# =============================================================================
# bernoulli, rademacher, categorical
# =============================================================================

def bernoulli(key, p=0.5, shape=None, mode="low"):
  """Boolean samples that are True with probability `p` (broadcast against `shape`).

  mode='high' spends a second uniform on the low bits, for tiny `p`.
  """
  if shape is not None:
    shape = _shape_arg(shape)
  if mode not in ["high", "low"]:
    raise ValueError(f"got {mode=}, expected 'high' or 'low'")
  key, _ = _check_prng_key("bernoulli", key)
  dtype = dtypes.dtype(p, canonicalize=True)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = lax.convert_element_type(p, dtype)
  return _bernoulli(key, p, shape, mode)


@_jit(static_argnums=(2, 3))
def _bernoulli(key, p, shape, mode):
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  dtype = p.dtype
  if mode == "high":
    u1, u2 = _unstack_keys(_uniform(key, 0., 1., (2, *shape), dtype))
    u2 = u2 * (2 ** -dtypes.finfo(dtype).nmant)  # resolution of one uniform sample
    return u2 < p - u1
  return _uniform(key, 0., 1., shape, dtype) < p


def rademacher(key, shape=(), dtype=None):
  """Random signs: -1 and +1 with probability 1/2 each."""
  key, _ = _check_prng_key("rademacher", key)
  dtype = _user_dtype(dtype, int)
  shape = _shape_arg(shape)
  return _rademacher(key, shape, dtype)


@_jit(static_argnums=(1, 2))
def _rademacher(key, shape, dtype):
  # JAX passes the Python float 0.5: float32, or float64 with x64 on.
  p = lax.convert_element_type(0.5, dtypes.canonicalize_dtype(float))
  bernoulli_samples = _bernoulli(key, p, shape, "low").astype(dtype)
  return (2 * bernoulli_samples - 1).astype(dtype)


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
  """Samples of categories with unnormalized log-probabilities `logits` along `axis`.

  `shape` must be broadcast-compatible with the batch shape `np.delete(logits.shape,
  axis)` (the default); returns integer indices. Uses the Gumbel-max trick.
  """
  key, _ = _check_prng_key("categorical", key)
  _jnp_util.check_arraylike("categorical", logits)
  logits_arr = _jnp_util.to_array(logits)
  batch_shape = tuple(np.delete(logits_arr.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _shape_arg(shape)
    _check_shape("categorical", shape, batch_shape)
  shape_prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    if axis >= 0:
      axis -= len(logits_arr.shape)
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % len(logits_arr.shape), logits_arr.shape[axis])
    return jnp.argmax(
        gumbel(key, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode) +
        lax.expand_dims(logits_arr, tuple(range(len(shape_prefix)))),
        axis=axis)
  logits_arr = logits_arr + gumbel(key, logits_arr.shape, logits_arr.dtype, mode=mode)
  k = math.prod(shape_prefix)
  if k > logits_arr.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number "
                     f"of categories ({logits_arr.shape[axis]}).")
  indices = _top_k_indices(jnp.moveaxis(logits_arr, axis, -1), k)
  dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
  return lax.reshape(indices, shape, dimensions)


# =============================================================================
# Simple transforms of one uniform or normal draw
# =============================================================================

def _float_sampler_args(name, key, dtype):
  key, _ = _check_prng_key(name, key)
  dtype = _user_dtype(dtype, float, stacklevel=5)
  _check_float(name, dtype)
  return key, dtype


def cauchy(key, shape=(), dtype=None):
  """Standard Cauchy samples: tan(pi * (U - 1/2))."""
  key, dtype = _float_sampler_args("cauchy", key, dtype)
  return _cauchy(key, _shape_arg(shape), dtype)


@_jit(static_argnums=(1, 2))
def _cauchy(key, shape, dtype):
  _check_shape("cauchy", shape)
  u = _uniform(key, dtypes.finfo(dtype).eps, 1., shape, dtype)
  pi = _const(u, np.pi)
  return lax.tan(lax.mul(pi, lax.sub(u, _const(u, 0.5))))


def exponential(key, shape=(), dtype=None):
  """Standard exponential samples: -log(1 - U)."""
  key, dtype = _float_sampler_args("exponential", key, dtype)
  return _exponential(key, _shape_arg(shape), dtype)


@_jit(static_argnums=(1, 2))
def _exponential(key, shape, dtype):
  _check_shape("exponential", shape)
  u = _uniform(key, 0., 1., shape, dtype)
  # 1 - u is in (0, 1]: log never sees 0.
  return lax.neg(lax.log1p(lax.neg(u)))


def laplace(key, shape=(), dtype=None):
  """Standard Laplace samples."""
  key, dtype = _float_sampler_args("laplace", key, dtype)
  return _laplace(key, _shape_arg(shape), dtype)


@_jit(static_argnums=(1, 2))
def _laplace(key, shape, dtype):
  _check_shape("laplace", shape)
  u = _uniform(key, -1. + dtypes.finfo(dtype).epsneg, 1., shape, dtype)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
  """Standard logistic samples: log(U / (1 - U))."""
  key, dtype = _float_sampler_args("logistic", key, dtype)
  return _logistic(key, _shape_arg(shape), dtype)


@_jit(static_argnums=(1, 2))
def _logistic(key, shape, dtype):
  _check_shape("logistic", shape)
  x = _uniform(key, dtypes.finfo(dtype).tiny, 1., shape, dtype)
  return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def pareto(key, b, shape=None, dtype=None):
  """Pareto samples with shape parameter `b` (support [1, inf)): exp(E / b)."""
  key, dtype = _float_sampler_args("pareto", key, dtype)
  shape = _check_broadcast_shapes("pareto", shape, b)
  return _pareto(key, b, shape, dtype)


@_jit(static_argnums=(2, 3))
def _pareto(key, b, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  e = _exponential(key, shape, dtype)
  return lax.exp(e / b)


def maxwell(key, shape=(), dtype=None):
  """Maxwell samples: the norm of three standard normals."""
  key, dtype = _float_sampler_args("maxwell", key, dtype)
  return _maxwell(key, _shape_arg(shape), dtype)


@_jit(static_argnums=(1, 2))
def _maxwell(key, shape, dtype):
  norm_rvs = _normal(key, shape + (3,), dtype)
  # jnp.linalg.norm of a real vector: sqrt(sum(x * x)).
  return jnp.sqrt(jnp.sum(norm_rvs * norm_rvs, axis=-1))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Double-sided Maxwell samples: random sign * Maxwell * scale + loc.

  The result shape is `shape + broadcast(loc, scale).shape`.
  """
  key, dtype = _float_sampler_args("double_sided_maxwell", key, dtype)
  return _double_sided_maxwell(key, loc, scale, _shape_arg(shape), dtype)


@_jit(static_argnums=(3, 4))
def _double_sided_maxwell(key, loc, scale, shape, dtype):
  params_shapes = lax.broadcast_shapes(np.shape(loc), np.shape(scale))
  if not shape:
    shape = params_shapes
  shape = shape + params_shapes
  maxwell_key, rademacher_key = _unstack_keys(_split(key))
  maxwell_rvs = _maxwell(maxwell_key, shape, dtype)
  random_sign = _rademacher(rademacher_key, shape, dtype)
  return random_sign * maxwell_rvs * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull samples: scale * (-log(1 - U)) ** (1 / concentration)."""
  key, dtype = _float_sampler_args("weibull_min", key, dtype)
  return _weibull_min(key, scale, concentration, _shape_arg(shape), dtype)


@_jit(static_argnums=(3, 4))
def _weibull_min(key, scale, concentration, shape, dtype):
  random_uniform = _uniform(key, 0, 1, shape, dtype)
  return jnp.power(-jnp.log1p(-random_uniform), 1.0 / concentration) * scale


def rayleigh(key, scale, shape=None, dtype=None):
  """Rayleigh samples: scale * sqrt(-2 log U)."""
  key, dtype = _float_sampler_args("rayleigh", key, dtype)
  shape = _check_broadcast_shapes("rayleigh", shape, scale)
  return _rayleigh(key, scale, shape, dtype)


@_jit(static_argnums=(2, 3))
def _rayleigh(key, scale, shape, dtype):
  u = _uniform(key, 0., 1., shape, dtype)
  scale = jnp.asarray(scale).astype(dtype)
  scale = jnp.broadcast_to(scale, shape)
  log_u = lax.log(u)
  n_two = _const(scale, -2)
  sqrt_u = lax.sqrt(lax.mul(log_u, n_two))
  return lax.mul(scale, sqrt_u)


def wald(key, mean, shape=None, dtype=None):
  """Wald (inverse Gaussian, unit shape) samples with mean `mean`."""
  key, dtype = _float_sampler_args("wald", key, dtype)
  shape = _check_broadcast_shapes("wald", shape, mean)
  return _wald(key, mean, shape, dtype)


@_jit(static_argnums=(2, 3))
def _wald(key, mean, shape, dtype):
  k1, k2 = _unstack_keys(_split(key, 2))
  mean = jnp.asarray(mean).astype(dtype)
  mean = jnp.broadcast_to(mean, shape)
  v = _normal(k1, shape, dtype)
  z = _uniform(k2, 0., 1., shape, dtype)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def geometric(key, p, shape=None, dtype=None):
  """Geometric samples (number of trials to the first success, >= 1)."""
  key, _ = _check_prng_key("geometric", key)
  dtype = _user_dtype(dtype, int)
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
  shape = _check_broadcast_shapes("geometric", shape, p)
  return _geometric(key, p, shape, dtype)


@_jit(static_argnums=(2, 3))
def _geometric(key, p, shape, dtype):
  _jnp_util.check_arraylike("geometric", p)
  p, = _jnp_util.promote_dtypes_inexact(p)
  p = _jnp_util.to_array(p)
  u = _uniform(key, 0., 1., shape, p.dtype)
  # u == 0 would give log(0): JAX maps it to 1, keeping every other sample.
  u = jnp.where(u == 0, 1, u)
  log_u = lax.log(u)
  log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
  g = lax.floor(lax.div(log_u, log_one_minus_p)) + 1
  return g.astype(dtype)


def triangular(key, left, mode, right, shape=None, dtype=None):
  """Triangular samples on [left, right] with peak at `mode`."""
  key, dtype = _float_sampler_args("triangular", key, dtype)
  shape = _check_broadcast_shapes("triangular", shape, left, mode, right)
  return _triangular(key, left, mode, right, shape, dtype)


@_jit(static_argnums=(4, 5))
def _triangular(key, left, mode, right, shape, dtype):
  left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
  right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
  mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
  fc = (mode - left) / (right - left)
  u = _uniform(key, 0., 1., shape, dtype)
  out1 = left + lax.sqrt(u * (right - left) * (mode - left))
  out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
  return lax.select(u < fc, out1, out2)


def orthogonal(key, n, shape=(), dtype=None, m=None):
  """Random `n x m` (default square) matrices with orthonormal columns or rows,
  Haar-distributed: the Q of the QR of a normal matrix, with sign-fixed diagonal."""
  _m = n if m is None else m
  shape = _shape_arg(shape)
  key, _ = _check_prng_key("orthogonal", key)
  dtype = _user_dtype(dtype, float)
  _check_shape("orthogonal", shape)
  n = _concrete_int(n, "jax.random.orthogonal()")
  _m = _concrete_int(_m, "jax.random.orthogonal()")
  return _orthogonal(key, n, _m, shape, dtype)


@_jit(static_argnums=(1, 2, 3, 4))
def _orthogonal(key, n, _m, shape, dtype):
  z = _normal(key, (*shape, max(n, _m), min(n, _m)), dtype)
  q, r = _linalg().qr(z)
  d = jnp.diagonal(r, axis1=-2, axis2=-1)
  x = q * jnp.expand_dims(jnp.sign(d), -2)
  return jnp.swapaxes(x, -1, -2) if n < _m else x


# =============================================================================
# Gamma and the samplers built on it
# =============================================================================

def _gamma_one(key, alpha, log_space):
  # Marsaglia and Tsang (2000), "A simple method for generating gamma variables".
  from tracejax._src.control_flow import while_loop
  dtype = alpha.dtype
  zero, one, two, minus_one = (_const(alpha, v) for v in (0, 1, 2, -1))
  one_over_two = _const(alpha, 0.5)
  one_over_three = _const(alpha, 1. / 3.)
  squeeze_const = _const(alpha, 0.0331)
  # alpha < 1: sample Gamma(alpha + 1) * U ** (1 / alpha). In log space (loggamma) the
  # boost is log(U) / alpha, which does not underflow for tiny alpha.
  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, one_over_three)
  c = lax.div(one_over_three, lax.sqrt(d))

  def _cond_fn(kXVU):
    _, X, V, U = kXVU
    # Both tests are evaluated (no short-circuit in a batched loop).
    return lax.bitwise_and(
        lax.ge(U, lax.sub(one, lax.mul(squeeze_const, lax.mul(X, X)))),
        lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                   lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

  def _body_fn(kXVU):
    def _next_kxv(kxv):
      k = kxv[0]
      k, subkey = _unstack_keys(_split(k))
      x = _normal(subkey, (), dtype)
      v = lax.add(one, lax.mul(x, c))
      return k, x, v

    k = kXVU[0]
    k, x_key, U_key = _unstack_keys(_split(k, 3))
    _, x, v = while_loop(lambda kxv: lax.le(kxv[2], zero), _next_kxv, (x_key, zero, minus_one))
    X = lax.mul(x, x)
    V = lax.mul(lax.mul(v, v), v)
    U = _uniform(U_key, 0., 1., (), dtype)
    return k, X, V, U

  # The initial state makes _cond_fn true: the body runs at least once.
  key, subkey = _unstack_keys(_split(key))
  _, _, V, _ = while_loop(_cond_fn, _body_fn, (key, zero, one, two))
  if log_space:
    log_samples = lax.neg(_exponential(subkey, (), dtype))
    log_boost = lax.select(lax.bitwise_or(boost_mask, log_samples == 0), zero,
                           lax.mul(log_samples, lax.div(one, alpha_orig)))
    return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
  samples = 1 - _uniform(subkey, 0., 1., (), dtype)
  boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, V), boost)


def _gamma_grad(sample, a, *, log_space):
  # The implicit reparameterization gradient d sample / d a = -(dF/da) / (dF/dx) of the
  # Gamma CDF F, which `random_gamma_grad` computes elementwise.
  samples = sample
  if log_space:
    # d log(x) / da = (dx / da) / x; exp(log x) may round to 0: use the tiniest float.
    samples = lax.exp(samples)
    tiny = lax.full_like(samples, dtypes.finfo(samples.dtype).tiny)
    samples = lax.select(lax.eq(samples, _const(samples, 0)), tiny, samples)
    return lax.random_gamma_grad(a, samples) / samples
  return lax.random_gamma_grad(a, samples)


def _gamma_impl(key, a, *, log_space):
  # One key per element of `a`: the keys (leading axes of `a`, from batching) are
  # each split into as many keys as the remaining elements.
  from tracejax._src.api import vmap
  a_shape = tuple(np.shape(a))
  key_ndim = np.ndim(key) - 1
  if math.prod(a_shape) == 0:
    return lax.full(a_shape, 0, a.dtype)
  split_count = math.prod(a_shape[key_ndim:])
  keys = lax.reshape(key, (math.prod(np.shape(key)[:-1]), 2))
  keys = vmap(lambda k: prng.threefry_split(k, (split_count,)))(keys)
  keys = lax.reshape(keys, (math.prod(a_shape), 2))
  alphas = lax.reshape(a, (math.prod(a_shape),))
  samples = vmap(functools.partial(_gamma_one, log_space=log_space))(keys, alphas)
  return lax.reshape(samples, a_shape)


def _random_gamma_shape_rule(key, a, *, log_space):
  if key.dtype != np.uint32 or key.shape[-1:] != (2,) or \
      tuple(a.shape[:key.ndim - 1]) != tuple(key.shape[:-1]):
    raise TypeError(f"random_gamma: keys of shape {key.shape} do not lead the shape "
                    f"{a.shape} of a")
  return a.shape


def _random_gamma_dtype_rule(key, a, *, log_space):
  lax_utils.check_dtypes("random_gamma", lax_utils._float, a)
  return a.dtype


def _random_gamma_batch_rule(args, dims, *, log_space):
  k, a = args
  bk, ba = dims
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  k = lax_utils.bdim_at_front(k, bk, size)
  a = lax_utils.bdim_at_front(a, ba, size)
  return random_gamma_p.bind(k, a, log_space=log_space), 0


# random_gamma(keys, a): Gamma(a) samples (their logs with log_space), one key per
# leading element. A primitive, so the implicit gradient can be its JVP.
random_gamma_p = lax_utils.standard_primitive(
    _random_gamma_shape_rule, _random_gamma_dtype_rule, "random_gamma",
    weak_type_rule=lambda key, a, **_: a.weak_type)
ad.defjvp2(random_gamma_p, None,
           lambda g, ans, key, a, **kw: lax.mul(g, _gamma_grad(ans, a, **kw)))
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch_rule
mlir.register_lowering(random_gamma_p,
                       mlir.lower_fun(_gamma_impl, multiple_results=False))


def gamma(key, a, shape=None, dtype=None):
  """Gamma(a, 1) samples; differentiable in `a` (implicit reparameterization)."""
  key, dtype = _float_sampler_args("gamma", key, dtype)
  if shape is not None:
    shape = _shape_arg(shape)
  return _gamma(key, a, shape, dtype, False)


def loggamma(key, a, shape=None, dtype=None):
  """log of Gamma(a, 1) samples, accurate for small `a` where the samples underflow."""
  key, dtype = _float_sampler_args("loggamma", key, dtype)
  if shape is not None:
    shape = _shape_arg(shape)
  return _gamma(key, a, shape, dtype, True)


@_jit(static_argnums=(2, 3, 4))
def _gamma(key, a, shape, dtype, log_space):
  if shape is None:
    shape = np.shape(a)
  else:
    _check_shape("gamma", shape, np.shape(a))
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = jnp.broadcast_to(a, shape)
  return random_gamma_p.bind(key, a, log_space=log_space)


def beta(key, a, b, shape=None, dtype=None):
  """Beta(a, b) samples, from two log-gamma draws (accurate for small a, b)."""
  key, dtype = _float_sampler_args("beta", key, dtype)
  shape = _check_broadcast_shapes("beta", shape, a, b)
  return _beta(key, a, b, shape, dtype)


@_jit(static_argnums=(3, 4))
def _beta(key, a, b, shape, dtype):
  a = lax.convert_element_type(a, dtype)
  b = lax.convert_element_type(b, dtype)
  key_a, key_b = _unstack_keys(_split(key))
  a = jnp.broadcast_to(a, shape)
  b = jnp.broadcast_to(b, shape)
  log_gamma_a = _gamma(key_a, a, shape, dtype, True)
  log_gamma_b = _gamma(key_b, b, shape, dtype, True)
  # gamma_a / (gamma_a + gamma_b), scaled by the larger so nothing underflows.
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = jnp.exp(log_gamma_a - log_max)
  gamma_b_scaled = jnp.exp(log_gamma_b - log_max)
  return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


def dirichlet(key, alpha, shape=None, dtype=None):
  """Dirichlet(alpha) samples (the last axis of `alpha` indexes the categories)."""
  key, dtype = _float_sampler_args("dirichlet", key, dtype)
  if shape is not None:
    shape = _shape_arg(shape)
  return _dirichlet(key, alpha, shape, dtype)


@_jit(static_argnums=(2, 3))
def _dirichlet(key, alpha, shape, dtype):
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                     f"{np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = lax.convert_element_type(alpha, dtype)
  # Normalize gammas in log space: small alpha would underflow.
  log_gamma_samples = _gamma(key, alpha, shape + np.shape(alpha)[-1:], dtype, True)
  return _softmax(log_gamma_samples, -1)


def t(key, df, shape=None, dtype=None):
  """Student's t samples with `df` degrees of freedom."""
  key, dtype = _float_sampler_args("t", key, dtype)
  shape = _check_broadcast_shapes("t", shape, df)
  return _t(key, df, shape, dtype)


@_jit(static_argnums=(2, 3))
def _t(key, df, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _unstack_keys(_split(key))
  n = _normal(key_n, shape, dtype)
  two = _const(n, 2)
  half_df = lax.div(df, two)
  g = _gamma(key_g, half_df, shape, dtype, False)
  return n * jnp.sqrt(half_df / g)


def chisquare(key, df, shape=None, dtype=None):
  """Chi-square samples with `df` degrees of freedom: 2 * Gamma(df / 2)."""
  key, dtype = _float_sampler_args("chisquare", key, dtype)
  shape = _check_broadcast_shapes("chisquare", shape, df)
  return _chisquare(key, df, shape, dtype)


@_jit(static_argnums=(2, 3))
def _chisquare(key, df, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  two = _const(df, 2)
  half_df = lax.div(df, two)
  log_g = _gamma(key, half_df, shape, dtype, True)
  return lax.mul(jnp.exp(log_g), two)


def f(key, dfnum, dfden, shape=None, dtype=None):
  """F-distribution samples: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)."""
  key, dtype = _float_sampler_args("f", key, dtype)
  shape = _check_broadcast_shapes("f", shape, dfnum, dfden)
  return _f(key, dfnum, dfden, shape, dtype)


@_jit(static_argnums=(3, 4))
def _f(key, dfnum, dfden, shape, dtype):
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  key_dfd, key_dfn = _unstack_keys(_split(key))
  chi2_dfn = _chisquare(key_dfn, dfnum, shape, dtype)
  chi2_dfd = _chisquare(key_dfd, dfden, shape, dtype)
  num = lax.div(chi2_dfn, dfnum)
  den = lax.div(chi2_dfd, dfden)
  return lax.div(num, den)


def generalized_normal(key, p, shape=(), dtype=None):
  """Generalized normal samples with density proportional to exp(-|x|**p)."""
  shape = _shape_arg(shape)
  key, dtype = _float_sampler_args("generalized_normal", key, dtype)
  _check_shape("generalized_normal", shape)
  return _generalized_normal(key, p, shape, dtype)


@_jit(static_argnums=(2, 3))
def _generalized_normal(key, p, shape, dtype):
  k0, k1 = _unstack_keys(_split(key))
  g = _gamma(k0, jnp.asarray(1 / p).astype(dtype), shape, dtype, False)
  r = _rademacher(k1, shape, dtype)
  return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=None):
  """Uniform samples from the unit `p`-norm ball in `d` dimensions (shape + (d,))."""
  shape = _shape_arg(shape)
  key, dtype = _float_sampler_args("ball", key, dtype)
  _check_shape("ball", shape)
  d = _concrete_int(d, "jax.random.ball()")
  return _ball(key, p, d, shape, dtype)


@_jit(static_argnums=(2, 3, 4))
def _ball(key, p, d, shape, dtype):
  k1, k2 = _unstack_keys(_split(key))
  g = _generalized_normal(k1, p, (*shape, d), dtype)
  e = _exponential(k2, shape, dtype)
  return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# =============================================================================
# poisson, binomial, multinomial (rejection samplers: while loops)
# =============================================================================

@_jit(static_argnums=(2, 3, 4))
def _poisson_knuth(key, lam, shape, dtype, max_iters):
  # Knuth: count uniforms until their product drops below exp(-lam).
  from tracejax._src.control_flow import while_loop

  def body_fn(carry):
    i, k, rng, log_prod = carry
    rng, subkey = _unstack_keys(_split(rng))
    k = lax.select(log_prod > -lam, k + 1, k)
    u = _uniform(subkey, 0., 1., shape, np.dtype(np.float32))
    return i + 1, k, rng, log_prod + jnp.log(u)

  def cond_fn(carry):
    i, log_prod = carry[0], carry[3]
    return jnp.any(log_prod > -lam) & (i < max_iters)

  k_init = lax.full_like(lam, 0, dtype, shape)
  log_rate_init = lax.full_like(lam, 0, np.float32, shape)
  k = while_loop(cond_fn, body_fn, (0, k_init, key, log_rate_init))[1]
  return (k - 1).astype(dtype)


@_jit(static_argnums=(2, 3, 4))
def _poisson_rejection(key, lam, shape, dtype, max_iters):
  # Transformed rejection of Hormann (1993), "The transformed rejection method for
  # generating Poisson random variables".
  from tracejax._src.control_flow import while_loop
  log_lam = lax.log(lam)
  b = 0.931 + 2.53 * lax.sqrt(lam)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _unstack_keys(_split(key, 3))
    u = _uniform(subkey_0, 0., 1., shape, lam.dtype) - 0.5
    v = _uniform(subkey_1, 0., 1., shape, lam.dtype)
    u_shifted = 0.5 - abs(u)
    k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    t_ = -lam + k * log_lam - lax.lgamma(k + 1)
    accept1 = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
    accept2 = s <= t_
    accept = accept1 | (~reject & accept2)
    k_out = lax.select(accept, k, k_out)
    accepted = accepted | accept
    return i + 1, k_out, accepted, key

  def cond_fn(carry):
    i, k_out, accepted, key = carry
    return jnp.any(~accepted) & (i < max_iters)

  k_init = lax.full_like(lam, -1, lam.dtype, shape)
  accepted = lax.full_like(lam, False, np.dtype("bool"), shape)
  k = while_loop(cond_fn, body_fn, (0, k_init, accepted, key))[1]
  return k.astype(dtype)


@_jit(static_argnums=(2, 3))
def _poisson(key, lam, shape, dtype):
  # As TensorFlow and NumPy: Knuth for lam < 10, transformed rejection above.
  use_knuth = _isnan(lam) | (lam < 10)
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
  # Rejection acceptance is at most ~89%: a large lam where Knuth is used.
  lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  max_iters = dtype.type(dtypes.iinfo(dtype).max)  # no practical bound
  result = lax.select(
      use_knuth,
      _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
      _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
  return lax.select(lam == 0, jnp.zeros_like(result), result)


def poisson(key, lam, shape=None, dtype=None):
  """Poisson(lam) samples of integer `dtype`."""
  key, _ = _check_prng_key("poisson", key)
  dtype = _user_dtype(dtype, int)
  if shape is not None:
    shape = _shape_arg(shape)
  else:
    shape = np.shape(lam)
  lam = jnp.broadcast_to(lam, shape)
  lam = lax.convert_element_type(lam, np.float32)
  return _poisson(key, lam, shape, dtype)


def _stirling_approx_tail(k):
  stirling_tail_vals = jnp.array(
      [0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
       0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
       0.00925546218271273, 0.00833056343336287], dtype=k.dtype)
  use_tail_values = k <= 9
  k = lax.clamp(_const(k, 0.0), k, _const(k, 9.0))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = jnp.floor(k)
  return lax.select(use_tail_values, stirling_tail_vals[jnp.asarray(k, dtype="int32")],
                    approx)


@_jit(static_argnums=(3, 4, 5))
def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
  # Sum geometric waiting times until they pass `count`.
  from tracejax._src.control_flow import while_loop
  log1minusprob = jnp.log1p(-prob)

  def body_fn(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _unstack_keys(_split(key))
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = _uniform(subkey, 0., 1., shape, prob.dtype)
    geom = jnp.ceil(jnp.log(u) / log1minusprob)
    geom_sum = geom_sum + geom
    return i + 1, num_geom_out, geom_sum, key

  def cond_fn(carry):
    i, geom_sum = carry[0], carry[2]
    return jnp.any(geom_sum <= count) & (i < max_iters)

  num_geom_init = lax.full_like(prob, 0, prob.dtype, shape)
  geom_sum_init = lax.full_like(prob, 0, prob.dtype, shape)
  carry = (0, num_geom_init, geom_sum_init, key)
  k = while_loop(cond_fn, body_fn, carry)[1]
  return (k - 1).astype(dtype)


@_jit(static_argnums=(3, 4, 5))
def _btrs(key, count, prob, shape, dtype, max_iters):
  # Transformed rejection with squeeze of Hormann (1993), "The generation of binomial
  # random variates".
  from tracejax._src.control_flow import while_loop
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _unstack_keys(_split(key, 3))
    u = _uniform(subkey_0, 0., 1., shape, prob.dtype)
    v = _uniform(subkey_1, 0., 1., shape, prob.dtype)
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m)
          + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k)
          - _stirling_approx_tail(count - k))
    accept2 = v <= ub
    accept = accept1 | (~reject & accept2)
    k_out = lax.select(accept, k, k_out)
    accepted = accepted | accept
    return i + 1, k_out, accepted, key

  def cond_fn(carry):
    i, accepted = carry[0], carry[2]
    return jnp.any(~accepted) & (i < max_iters)

  k_init = lax.full_like(prob, -1, prob.dtype, shape)
  carry = (0, k_init, jnp.full(shape, False, bool), key)
  return while_loop(cond_fn, body_fn, carry)[1].astype(dtype)


@_jit(static_argnums=(3, 4))
def _binomial(key, count, prob, shape, dtype):
  # As TensorFlow (Probability): inversion for n * p <= 10, BTRS above.
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(count), np.shape(prob))
  else:
    _check_shape("binomial", shape, np.shape(count), np.shape(prob))
  (prob,) = _jnp_util.promote_dtypes_inexact(prob)
  count = lax.convert_element_type(count, _jnp_util.to_array(prob).dtype)
  count = jnp.broadcast_to(count, shape)
  prob = jnp.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = _isnan(count) | (count < 0.0)
  count_inf = jnp.isinf(count)
  q_is_nan = _isnan(q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = jnp.floor(count)  # as np.random.binomial for float counts
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  max_iters = dtype.type(dtypes.finfo(dtype).max)
  samples = lax.select(
      use_inversion,
      _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
      _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
  # nan q -> nan; nan or negative count -> nan; +inf count -> inf.
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(count_inf & (~invalid), jnp.full_like(samples, np.inf, dtype),
                       samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf,
                    samples, count.astype(dtype) - samples)


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial(n, p) samples, as floats of `dtype` (n may be a float, nan or inf)."""
  key, _ = _check_prng_key("binomial", key)
  _jnp_util.check_arraylike("binomial", n, p)
  dtype = _user_dtype(dtype, float)
  _check_float("binomial", dtype)
  if shape is not None:
    shape = _shape_arg(shape)
  return _binomial(key, n, p, shape, dtype)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial(n, p) counts (the last axis of `p` indexes the categories), drawn as
  a chain of binomials."""
  from tracejax._src.control_flow import scan
  key, _ = _check_prng_key("multinomial", key)
  _jnp_util.check_arraylike("multinomial", n, p)
  n, p = _jnp_util.promote_dtypes_inexact(n, p)
  n, p = _jnp_util.to_array(n), _jnp_util.to_array(p)
  dtype = _user_dtype(dtype, float)
  if shape is None:
    shape = p.shape
  n = jnp.broadcast_to(n, shape[:-1])
  p = jnp.broadcast_to(p, shape)

  def body(remainder, ratio_key):
    ratio, k = ratio_key
    count = _binomial(k, remainder, jnp.clip(ratio, 0, 1), None, remainder.dtype)
    return remainder - count, count

  p = jnp.moveaxis(p, -1, 0)
  remaining_probs = jnp.flip(jnp.cumsum(jnp.flip(p, 0), 0), 0)
  ratios = p / jnp.where(remaining_probs == 0, 1, remaining_probs)
  keys = _split(key, ratios.shape[0])
  _, counts = scan(body, n, (ratios, keys))
  return jnp.moveaxis(counts, 0, -1).astype(dtype)


# JAX 0.10.2's samplers that take `out_sharding=` (see random._out_sharding_arg);
# binomial, multinomial, double_sided_maxwell and weibull_min do not.
ball = _out_sharding_arg(ball)
bernoulli = _out_sharding_arg(bernoulli)
beta = _out_sharding_arg(beta)
categorical = _out_sharding_arg(categorical)
cauchy = _out_sharding_arg(cauchy)
chisquare = _out_sharding_arg(chisquare)
dirichlet = _out_sharding_arg(dirichlet)
exponential = _out_sharding_arg(exponential)
f = _out_sharding_arg(f)
gamma = _out_sharding_arg(gamma)
generalized_normal = _out_sharding_arg(generalized_normal)
geometric = _out_sharding_arg(geometric)
laplace = _out_sharding_arg(laplace)
loggamma = _out_sharding_arg(loggamma)
logistic = _out_sharding_arg(logistic)
maxwell = _out_sharding_arg(maxwell)
orthogonal = _out_sharding_arg(orthogonal)
pareto = _out_sharding_arg(pareto)
poisson = _out_sharding_arg(poisson)
rademacher = _out_sharding_arg(rademacher)
rayleigh = _out_sharding_arg(rayleigh)
t = _out_sharding_arg(t)
triangular = _out_sharding_arg(triangular)
wald = _out_sharding_arg(wald)
