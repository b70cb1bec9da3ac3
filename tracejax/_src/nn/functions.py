"""`jax.nn`: activation functions, softmax/log_softmax, standardize and one_hot.

Everything here is a composition of `jax.numpy`/`lax` operations: no new primitives.
Where the textbook formula has a bad derivative (relu at 0, softmax's cancellation,
gradients through `where` of an overflowing branch) the function carries a
`custom_jvp` or a "safe" operand, as JAX does, so gradients stay finite and match
JAX's conventions (relu'(0) == 0).
"""
import functools

import numpy as np

from tracejax._src import dtypes
from tracejax._src.custom_derivatives import custom_jvp
from tracejax._src.jit import jit
from tracejax._src.lax.misc import stop_gradient
import tracejax.lax as lax
import tracejax.numpy as jnp


def _canonical_axis(axis, ndim):
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


# ---- rectifiers ----

@custom_jvp
@jit
def relu(x):
  r"""Rectified linear unit activation function: :math:`\max(x, 0)`.

  Its derivative at 0 is defined as 0 (a subgradient), not the 0.5 that
  differentiating `maximum` would give, so sparse activations stay sparse.
  """
  return jnp.maximum(x, 0)


# The rule is on the primal input: the gradient is g where x > 0, else 0 (also at x == 0).
relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
@jit
def relu6(x):
  r"""Rectified linear unit 6: :math:`\min(\max(x, 0), 6)`.

  Derivatives at the kinks 0 and 6 are 0, as for `relu`.
  """
  return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: jnp.where((x > 0) & (x < 6), g, jnp.zeros_like(g)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  r"""Leaky rectified linear unit: `x` where `x >= 0`, else `negative_slope * x`."""
  return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  r"""Hard tanh: `x` clipped to [-1, 1]."""
  return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def elu(x, alpha=1.0):
  r"""Exponential linear unit: `x` where `x > 0`, else `alpha * (exp(x) - 1)`."""
  # `safe_x` keeps expm1 away from large positive x, whose inf would leak NaN into the
  # gradient of the unused branch of `where`.
  safe_x = jnp.where(x > 0, 0., x)
  return jnp.where(x > 0, x, alpha * jnp.expm1(safe_x))


@jit
def celu(x, alpha=1.0):
  r"""Continuously-differentiable exponential linear unit:
  :math:`\max(x, 0) + \alpha \min(e^{x/\alpha} - 1, 0)`."""
  return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@jit
def selu(x):
  r"""Scaled exponential linear unit: `scale * elu(x, alpha)` with the constants of
  Klambauer et al. (2017) that make activations self-normalising."""
  alpha = 1.6732632423543772848170429916717
  scale = 1.0507009873554804934193349852946
  return scale * elu(x, alpha)


# ---- sigmoids and smooth rectifiers ----

@jit
def sigmoid(x):
  r"""Sigmoid activation function: :math:`1 / (1 + e^{-x})`."""
  return lax.logistic(x)


@jit
def softplus(x):
  r"""Softplus activation function: :math:`\log(1 + e^x)`, computed without overflow."""
  return jnp.logaddexp(x, 0)


@jit
def soft_sign(x):
  r"""Soft-sign activation function: :math:`x / (|x| + 1)`."""
  return x / (jnp.abs(x) + 1)


@jit
def silu(x):
  r"""SiLU (a.k.a. swish) activation function: :math:`x \cdot \mathrm{sigmoid}(x)`."""
  return x * sigmoid(x)


swish = silu


@jit
def log_sigmoid(x):
  r"""Log-sigmoid activation function: :math:`-\mathrm{softplus}(-x)`, stable for
  large |x|."""
  return -softplus(-x)


@jit
def hard_sigmoid(x):
  r"""Hard sigmoid: :math:`\mathrm{relu6}(x + 3) / 6`."""
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  r"""Hard SiLU (a.k.a. hard swish): :math:`x \cdot \mathrm{hard\_sigmoid}(x)`."""
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@jit
def mish(x):
  r"""Mish activation function: :math:`x \tanh(\mathrm{softplus}(x))`."""
  return x * jnp.tanh(softplus(x))


@jit
def squareplus(x, b=4):
  r"""Squareplus activation function: :math:`(x + \sqrt{x^2 + b}) / 2`."""
  return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@functools.partial(jit, static_argnames=("approximate",))
def gelu(x, approximate=True):
  r"""Gaussian error linear unit activation function.

  With `approximate=True` (the default, as in JAX) the tanh approximation
  :math:`x/2 \, (1 + \tanh(\sqrt{2/\pi}(x + 0.044715 x^3)))`; otherwise the exact
  :math:`x/2 \, (1 + \mathrm{erf}(x/\sqrt{2}))`.
  """
  x = jnp.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.inexact):
    x = x.astype(dtypes.canonicalize_dtype(jnp.float_))
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  return x * (lax.erf(x / np.asarray(np.sqrt(2), x.dtype)) + 1) / 2


def glu(x, axis=-1):
  r"""Gated linear unit: split `x` in two halves `a, b` along `axis`, return
  `a * sigmoid(b)`."""
  x = jnp.asarray(x)
  size = x.shape[axis]
  if size % 2:
    raise ValueError(f"axis size must be divisible by 2, got {size}")
  x1, x2 = jnp.split(x, 2, axis)
  return x1 * sigmoid(x2)


# ---- normalisation ----

def log_softmax(x, axis=-1, where=None, initial=None):
  r"""Log-softmax: :math:`x_i - \log \sum_j e^{x_j}` along `axis`.

  `axis` may be an int, a tuple or None (all axes). `where` masks elements out of the
  reduction; masked outputs are -inf. The maximum is subtracted for stability and
  carries no gradient (it cancels analytically).
  """
  del initial  # kept for signature compatibility; the -inf identity is always right here
  x = jnp.asarray(x)
  x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -jnp.inf)
  shifted = x_safe - stop_gradient(x_max)
  shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_logsumexp
  if where is not None:
    return jnp.where(where, result, -jnp.inf)
  return result


def softmax(x, axis=-1, where=None, initial=None):
  r"""Softmax: :math:`e^{x_i} / \sum_j e^{x_j}` along `axis` (int, tuple or None).

  Without `where` the derivative is the closed form `y * (t - sum(y * t))`
  (a `custom_jvp`), which is cheaper and better conditioned than differentiating
  through exp/sum/divide. `where` masks elements out; masked outputs are 0.
  """
  del initial
  x = jnp.asarray(x)
  if where is None:
    return _softmax(x, _axis_key(axis))
  x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
  x_safe = jnp.where(where, x, -jnp.inf)
  unnormalized = jnp.exp(x_safe - stop_gradient(x_max))
  result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
  return jnp.where(where, result, 0)


def _axis_key(axis):
  # custom_jvp's nondiff arguments must be hashable-friendly Python values.
  return tuple(axis) if isinstance(axis, list) else axis


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis):
  unnormalized = jnp.exp(x - jnp.max(x, axis, keepdims=True))
  return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x,), (x_dot,) = primals, tangents
  y = _softmax(x, axis)
  return y, y * (x_dot - jnp.sum(y * x_dot, axis, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
  r"""Normalise `x` by subtracting `mean` and dividing by :math:`\sqrt{variance + \epsilon}`.

  `mean` and `variance` default to the statistics of `x` along `axis`; the variance
  is `E[x^2] - E[x]^2`, as in JAX.
  """
  x = jnp.asarray(x)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
  return jnp.subtract(x, jnp.asarray(mean)) * lax.rsqrt(jnp.asarray(variance) + epsilon)


def normalize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
  """Normalises an array by subtracting mean and dividing by sqrt(var) (the 2020 name
  of `standardize`)."""
  return standardize(x, axis, mean, variance, epsilon, where)


# ---- one_hot ----

def one_hot(x, num_classes, *, dtype=None, axis=-1):
  """One-hot encode `x` with `num_classes` classes along a new axis `axis`.

  `one_hot(jnp.array([0, 1, 2]), 3)` is the 3x3 identity. Indices outside
  `[0, num_classes)` give an all-zero row. `dtype` defaults to the default float type.
  """
  try:
    num_classes = int(num_classes)
  except Exception as e:
    raise TypeError("jax.nn.one_hot: `num_classes` must be a concrete integer, got "
                    f"{num_classes!r}. If it is traced, make it static (static_argnums).") from e
  dtype = dtypes.canonicalize_dtype(jnp.float_ if dtype is None else dtype)
  x = jnp.asarray(x)
  out_axis = _canonical_axis(axis, x.ndim + 1)
  lhs = lax.expand_dims(x, (out_axis,))
  rhs_shape = [1] * x.ndim
  rhs_shape.insert(out_axis, num_classes)
  rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), out_axis)
  return jnp.asarray(lhs == rhs, dtype=dtype)


# ---- re-exported reductions and simple functions (JAX exposes them in jax.nn) ----

def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """Log-sum-exp, computed stably (the same function as `jax.scipy.special.logsumexp`).

  `where` masks elements out of the reduction, which is done here by sending them to
  -inf (and weight 0) before the stable reduction.
  """
  from tracejax._src.scipy.special import logsumexp as _lse
  if where is not None:
    a = jnp.where(where, a, -jnp.inf)
    if b is not None:
      b = jnp.where(where, b, 0)
  return _lse(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def tanh(x):
  """Hyperbolic tangent (JAX's `jax.nn.tanh` is `jax.numpy.tanh`)."""
  return jnp.tanh(x)


def identity(x):
  """Identity activation function: returns `x` unchanged."""
  return x

