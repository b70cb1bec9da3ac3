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
from tracejax._src.config import config
from tracejax._src.custom_derivatives import custom_jvp
from tracejax._src.jit import jit
from tracejax._src.lax.misc import stop_gradient
from tracejax._src.numpy import util as np_util
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


@custom_jvp
@jit
def softplus(x):
  r"""Softplus activation function: :math:`\log(1 + e^x)`, computed without overflow.

  Its derivative is `sigmoid(x)`, given as a rule: differentiating `logaddexp(x, 0)`
  through its `max`/`abs` would split the tie at x == 0 unevenly (softplus'(0) must be
  0.5, and log_sigmoid'(0) too).
  """
  return jnp.logaddexp(x, 0)


softplus.defjvps(lambda g, ans, x: g * sigmoid(x))


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
  r"""Squareplus activation function: :math:`(x + \sqrt{x^2 + b}) / 2`.

  Evaluated literally, as JAX does, so results agree with it bit for bit: large
  negative x cancels to 0 (e.g. float32 squareplus(-1e5) is 0) and x = -inf, or an
  x whose square overflows, gives NaN (-inf + inf). An integer x is squared (and b
  added) in its own dtype before the square root, as in JAX, so an int8 98 wraps
  around and gives NaN; a weak int stays weak (as a float).
  """
  np_util.check_arraylike("squareplus", x, b)
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
    # JAX's inexact promotion: int32/bool -> float32 even with x64 on; int64 -> float64.
    x = x.astype(dtypes.to_inexact_dtype(x.dtype))
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  return x * (lax.erf(x / np.asarray(np.sqrt(2), x.dtype)) + 1) / 2


@jit
def sparse_plus(x):
  r"""Sparse plus: 0 for x <= -1, :math:`(x + 1)^2 / 4` on (-1, 1), x for x >= 1.

  A piecewise-quadratic twin of softplus that is exactly 0 and exactly linear outside
  [-1, 1]; its derivative is `sparse_sigmoid`.
  """
  x = jnp.asarray(x)
  # (x + 1.0: an integer x gives a weak default float, as in JAX; fuzzer seed 201)
  return jnp.where(x <= -1.0, jnp.zeros_like(x),
                   jnp.where(x >= 1.0, x, jnp.square(x + 1.0) / 4))


@jit
def sparse_sigmoid(x):
  r"""Sparse sigmoid: 0 for x <= -1, (x + 1) / 2 on (-1, 1), 1 for x >= 1 (the
  derivative of `sparse_plus`)."""
  return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@jit
def log1mexp(x):
  r"""Numerically stable :math:`\log(1 - e^{-x})` for x >= 0.

  Below log 2 the argument of the log is small and `log(-expm1(-x))` keeps its digits;
  above it, `exp(-x)` is small and `log1p(-exp(-x))` does (Maechler's switch point).
  """
  x = jnp.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.inexact):
    x = x.astype(dtypes.canonicalize_dtype(jnp.float_))
  small = x < np.log(2.0)
  # Each branch gets an operand safe for it, so the unused branch's inf/NaN does not
  # leak into gradients through `where`.
  x_small = jnp.where(small, x, 1.0)
  x_large = jnp.where(small, 1.0, x)
  return jnp.where(small, jnp.log(-jnp.expm1(-x_small)), jnp.log1p(-jnp.exp(-x_large)))


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
  if where is None:
    _reject_bool(x, axis)
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = _int_operand_as_float(x, where)
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

  As in JAX (whose `jax_softmax_custom_jvp` flag defaults to False), the derivative
  is that of the composition exp/sum/divide, the max subtracted under
  `stop_gradient`; with the flag on (and no `where`) it is the closed form
  `y * (t - sum(y * t))` of a `custom_jvp`. `where` masks elements out; masked
  outputs are 0.
  """
  del initial
  x = jnp.asarray(x)
  if where is None:
    _reject_bool(x, axis)
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = _int_operand_as_float(x, where)
  if where is None and config.jax_softmax_custom_jvp:
    return _softmax(x, _axis_key(axis))
  if where is None:
    # The order of JAX's operations (x - max, exp, sum, divide), so that rounding
    # (bfloat16 second derivatives especially) agrees with it.
    unnormalized = jnp.exp(x - stop_gradient(
        jnp.max(x, axis, initial=-jnp.inf, keepdims=True)))
    return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)
  x_max = jnp.max(x, axis, where=where, initial=-jnp.inf, keepdims=True)
  x_safe = jnp.where(where, x, -jnp.inf)
  unnormalized = jnp.exp(x_safe - stop_gradient(x_max))
  result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
  return jnp.where(where, result, 0)


def _int_operand_as_float(x, where):
  """An int (or, with `where`, bool) operand of softmax/log_softmax in the float dtype
  JAX's result has: masked, the default float (JAX's `where` against -inf promotes it);
  otherwise what its `exp` gives (float32 for int32 even with x64 on). Computing in
  floats from the start keeps the max subtraction from wrapping around."""
  if where is not None:
    return x.astype(dtypes.canonicalize_dtype(np.float64))
  x, = np_util.promote_dtypes_inexact(x)
  return x


def _reject_bool(x, axis):
  """JAX subtracts the max from a bool input with lax.sub, which refuses bools; with
  `where`, its masking promotes them first, so only the unmasked forms raise."""
  if x.dtype == np.bool_:
    jnp.max(x, axis, initial=False)  # a bad axis is reported first, as in JAX
    lax.sub(x, x)  # raises JAX's TypeError ("sub does not accept dtype bool ...")


def _axis_key(axis):
  # custom_jvp's nondiff arguments must be hashable-friendly Python values.
  return tuple(axis) if isinstance(axis, list) else axis


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis):
  # initial=-inf: an empty axis gives an empty result (as JAX), not a max error.
  unnormalized = jnp.exp(x - jnp.max(x, axis, keepdims=True, initial=-jnp.inf))
  return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x,), (x_dot,) = primals, tangents
  y = _softmax(x, axis)
  return y, y * (x_dot - jnp.sum(y * x_dot, axis, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
  r"""Normalise `x` by subtracting `mean` and dividing by :math:`\sqrt{variance + \epsilon}`.

  `mean` and `variance` default to the statistics of `x` along `axis` (int, tuple or
  None). With `algorithm="fast"` (the default, as in JAX) the variance is
  `E[x^2] - E[x]^2`, one pass but prone to cancellation when |mean| >> std;
  `"stable"` uses the two-pass `E[(x - E[x])^2]`.
  """
  if algorithm not in ("fast", "stable"):
    raise ValueError(f"standardize: algorithm must be 'fast' or 'stable', got {algorithm!r}.")
  x = jnp.asarray(x)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "fast":
      variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
      # JAX 0.10.2 clips the one-pass variance at 0 (cancellation can make it negative,
      # and rsqrt of that is NaN); a complex one is a ValueError, as clip's.
      variance = jnp.clip(variance, 0)
    else:
      variance = jnp.mean(jnp.square(x - mean), axis, keepdims=True, where=where)
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


def logmeanexp(x, axis=None, where=None, keepdims=False):
  r"""Log-mean-exp: :math:`\log \frac{1}{n} \sum_i e^{x_i}` along `axis`, i.e.
  `logsumexp(x) - log(n)`, where `n` counts the elements `where` selects."""
  x = jnp.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.inexact):
    x = x.astype(dtypes.canonicalize_dtype(jnp.float_))
  lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
  if where is None:
    axes = range(x.ndim) if axis is None else \
        ((axis,) if isinstance(axis, int) else tuple(axis))
    n = np.prod([x.shape[a] for a in axes], dtype=np.float64)
    return lse - jnp.asarray(np.log(n), lse.dtype)
  count = jnp.sum(jnp.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims,
                  dtype=lse.dtype)
  return lse - jnp.log(count)


def tanh(x):
  """Hyperbolic tangent (JAX's `jax.nn.tanh` is `jax.numpy.tanh`)."""
  return jnp.tanh(x)


def identity(x):
  """Identity activation function: returns `x` unchanged."""
  return x



# ---- attention ----

def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
  r"""Scaled dot-product attention: `softmax(scale * q k^T + bias, masked) v` per head.

  Shapes use `B` batch, `T` query length, `S` key length, `N` query heads, `K` key/value
  heads and `H` head size: `query` is `(B, T, N, H)`, `key`/`value` are `(B, S, K, H)`
  (the batch axis may be absent from all three). `N` must be a multiple of `K`: groups of
  `N // K` query heads share one key/value head (grouped-query attention). `bias` and
  `mask` broadcast against the `(B, N, T, S)` logits; `mask` is boolean, True = attend.
  `scale` defaults to `1 / sqrt(H)`. `is_causal` lets query `t` see keys `s <= t`;
  `query_seq_lengths`/`key_value_seq_lengths` (shape `(B,)`) mask out padding;
  `local_window_size` (`w` or `(left, right)`) lets query `t` see keys in
  `[t - left, t + right]`. Only the XLA implementation exists here.
  """
  if implementation not in (None, "xla"):
    raise NotImplementedError(
        f"dot_product_attention: implementation={implementation!r} is not available in "
        "tracejax; use None or 'xla'.")
  if return_residual:
    raise NotImplementedError("dot_product_attention: return_residual=True is not supported.")
  query, key, value = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
  unbatched = query.ndim == 3
  if unbatched:
    query, key, value = query[None], key[None], value[None]
    for name, v in (("bias", bias), ("mask", mask)):
      # A 4-D bias/mask of an unbatched call already names the (size-1) batch axis.
      if v is not None and jnp.ndim(v) == 4 and jnp.shape(v)[0] != 1:
        raise ValueError(f"dot_product_attention: {name} of an unbatched call must not "
                         "have a batch axis larger than 1.")
  if not (query.ndim == key.ndim == value.ndim == 4):
    raise ValueError("dot_product_attention: query, key and value must all be 3-D "
                     f"(T, N, H) or 4-D (B, T, N, H), got {query.shape}, {key.shape}, "
                     f"{value.shape}.")
  B, T, N, H = query.shape
  _, S, K, _ = key.shape
  if key.shape != value.shape[:3] + (H,) or value.shape[:3] != (B, S, K):
    raise ValueError(f"dot_product_attention: key {key.shape} and value {value.shape} "
                     f"must be (B, S, K, H) matching query {query.shape}.")
  if N % K:
    raise ValueError(f"dot_product_attention: the number of query heads ({N}) must be a "
                     f"multiple of the number of key/value heads ({K}).")
  dtype = dtypes.result_type(query, key, value)
  scale = 1.0 / np.sqrt(H) if scale is None else scale

  # (B, T, K, G, H) x (B, S, K, H) -> (B, K, G, T, S): every group of G = N // K query
  # heads attends to its own key/value head without materialising repeated keys.
  q = jnp.reshape(query, (B, T, K, N // K, H))
  logits = jnp.einsum("btkgh,bskh->bkgts", q, key,
                      preferred_element_type=jnp.float32) * jnp.float32(scale)
  logits = jnp.reshape(logits, (B, N, T, S))
  if bias is not None:
    logits = logits + _to_rank4(jnp.asarray(bias), "bias").astype(jnp.float32)

  allowed = None

  def restrict(m):
    nonlocal allowed
    allowed = m if allowed is None else jnp.logical_and(allowed, m)
  if mask is not None:
    restrict(_to_rank4(jnp.asarray(mask, bool), "mask"))
  t_idx = lax.broadcasted_iota(np.int32, (1, 1, T, S), 2)
  s_idx = lax.broadcasted_iota(np.int32, (1, 1, T, S), 3)
  if is_causal:
    restrict(s_idx <= t_idx)
  if local_window_size is not None:
    left, right = ((local_window_size, local_window_size)
                   if isinstance(local_window_size, int) else local_window_size)
    restrict((s_idx >= t_idx - left) & (s_idx <= t_idx + right))
  if key_value_seq_lengths is not None:
    lengths = jnp.reshape(jnp.asarray(key_value_seq_lengths), (B, 1, 1, 1))
    restrict(s_idx < lengths)
  if allowed is not None:
    # A large finite negative rather than -inf: a row with nothing allowed gets uniform
    # weights instead of NaN, and the gradient stays finite.
    big_neg = jnp.float32(-0.7 * np.finfo(np.float32).max)
    logits = jnp.where(allowed, logits, big_neg)
  probs = softmax(logits, axis=-1).astype(dtype)
  # (B, K, G, T, S) x (B, S, K, H) -> (B, T, K, G, H) -> (B, T, N, H)
  probs = jnp.reshape(probs, (B, K, N // K, T, S))
  out = jnp.einsum("bkgts,bskh->btkgh", probs, value)
  out = jnp.reshape(out, (B, T, N, H))
  if query_seq_lengths is not None:
    # Padding queries attend to nothing at all: their output rows are zero (not the
    # uniform average a fully masked row otherwise gets), as in JAX.
    valid = lax.broadcasted_iota(np.int32, (1, T, 1, 1), 1) < jnp.reshape(
        jnp.asarray(query_seq_lengths), (B, 1, 1, 1))
    out = jnp.where(valid, out, jnp.zeros((), out.dtype))
  return out[0] if unbatched else out


def _to_rank4(x, name):
  # bias/mask are documented as broadcastable to (B, N, T, S); leading axes may be absent.
  if x.ndim > 4:
    raise ValueError(f"dot_product_attention: {name} must have at most 4 dimensions, "
                     f"got shape {x.shape}.")
  return jnp.reshape(x, (1,) * (4 - x.ndim) + x.shape)


# ---- block-scaled matmuls (microscaling formats: mxfp8, nvfp4) ----
#
# A block-scaled operand stores low-precision values plus one scale per block of
# `block_size` consecutive elements along the contracting (last) axis; the real
# value is `value * scale`. On GPUs cuDNN fuses this; here it is computed as its
# definition, in float32, which is what the fused kernels approximate.

import dataclasses as _dataclasses  # noqa: E402
import ml_dtypes as _ml_dtypes  # noqa: E402


@_dataclasses.dataclass(frozen=True)
class BlockScaleConfig:
  """How `scaled_dot_general` quantizes one operand: `mode` ('mxfp8' or 'nvfp4'),
  `block_size`, `data_type` (of the values), `scale_type` (of the block scales),
  `global_scale` (nvfp4: a float32 array dividing the operand first), `infer_only`."""
  mode: str
  block_size: int
  data_type: object
  scale_type: object
  global_scale: object
  infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
  """The quantization config of `scaled_dot_general` for `mode`.

  Args:
    mode: 'mxfp8' (float8_e4m3fn values, power-of-two float8_e8m0fnu scales per 32
      elements) or 'nvfp4' (float4_e2m1fn values, float8_e4m3fn scales per 16
      elements, after dividing by `global_scale`).
    global_scale: nvfp4 only: a float32 array (default `ones((1,))`).

  >>> get_scaled_dot_general_config("mxfp8").block_size
  32
  """
  if mode == "nvfp4":
    return BlockScaleConfig(
        "nvfp4", 16, _ml_dtypes.float4_e2m1fn, _ml_dtypes.float8_e4m3fn,
        jnp.ones((1,), np.float32) if global_scale is None else global_scale, False)
  if mode == "mxfp8":
    return BlockScaleConfig("mxfp8", 32, _ml_dtypes.float8_e4m3fn,
                            _ml_dtypes.float8_e8m0fnu, None, False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """Block-scaled batched matmul: `einsum('BMK,BNK->BMN', lhs * s_l, rhs * s_r)`, where
  each scale is repeated over its block of `K // scales.shape[-1]` elements.

  Args:
    lhs: (B, M, K). rhs: (B, N, K).
    lhs_scales: (B, M, K_l) with `K % K_l == 0`. rhs_scales: (B, N, K_r), `K % K_r == 0`.
    preferred_element_type: the output dtype (computed in float32).

  >>> a = jnp.array([1., 2., 3.]).reshape((1, 1, 3))
  >>> b = jnp.array([4., 5., 6.]).reshape((1, 1, 3))
  >>> s = jnp.array([0.5]).reshape((1, 1, 1))
  >>> scaled_matmul(a, b, s, s)
  DeviceArray([[[8.]]], dtype=float32)
  """
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  lhs_scales, rhs_scales = jnp.asarray(lhs_scales), jnp.asarray(rhs_scales)
  for name, x in (("lhs", lhs), ("rhs", rhs), ("lhs_scales", lhs_scales),
                  ("rhs_scales", rhs_scales)):
    if x.ndim != 3:
      raise ValueError(f"scaled_matmul: {name} must have 3 dimensions (B, rows, K), got "
                       f"shape {x.shape}")
  (B, M, K), (B2, N, K2) = lhs.shape, rhs.shape
  if B != B2 or K != K2:
    raise ValueError(f"scaled_matmul: lhs {lhs.shape} and rhs {rhs.shape} must agree on "
                     "the batch and contracting (last) dimensions")
  expanded = []
  for name, x, s in (("lhs_scales", lhs, lhs_scales), ("rhs_scales", rhs, rhs_scales)):
    if s.shape[:2] != x.shape[:2] or s.shape[2] == 0 or K % s.shape[2]:
      raise ValueError(f"scaled_matmul: {name} of shape {s.shape} does not block "
                       f"an operand of shape {x.shape}")
    s32 = s.astype(np.float32)
    expanded.append(x.astype(np.float32) * jnp.repeat(s32, K // s.shape[2], axis=-1))
  out = jnp.einsum("bmk,bnk->bmn", expanded[0], expanded[1], precision="highest")
  return out.astype(preferred_element_type)


def _e8m0_round_up(s):
  """Power-of-two scales >= `s` (float32), as the uint8 biased exponents of
  float8_e8m0fnu: the exponent of `s`, plus one when `s` is not a power of two."""
  bits = lax.bitcast_convert_type(s.astype(np.float32), np.uint32)
  exp = bits >> np.uint32(23)
  mant = bits & np.uint32(0x7FFFFF)
  # Not rounded up: exact powers of two, the largest finite exponent (0xFE: rounding
  # would give NaN) and subnormals no larger than half the smallest normal.
  up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
  return jnp.where(up, exp + np.uint32(1), exp).astype(np.uint8)


def _e8m0_value(e, dtype):
  v = lax.bitcast_convert_type(e.astype(np.uint32) << np.uint32(23), np.float32)
  tiny = 2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127
  return jnp.where(v == 0, np.float32(tiny), v).astype(dtype)


def _quantize(x, config):
  """(B, M, K) -> low-precision values (B, M, K) and block scales (B, M, K / block)."""
  B, M, K = x.shape
  bs = config.block_size
  if K < bs or K % bs:
    raise ValueError(f"scaled_dot_general: the contracting size {K} must be a multiple of "
                     f"the block size {bs}")
  xb = jnp.reshape(x, (B, M, K // bs, bs))
  vmax = np.array(float(_ml_dtypes.finfo(config.data_type).max), x.dtype)
  amax = jnp.max(jnp.abs(xb), axis=-1, keepdims=True) / vmax
  if config.mode == "mxfp8":
    e = _e8m0_round_up(amax)
    scaled = xb / _e8m0_value(e, x.dtype)
    scales = lax.bitcast_convert_type(e[..., 0], np.dtype(config.scale_type))
  elif config.mode == "nvfp4":
    smax = np.array(float(_ml_dtypes.finfo(config.scale_type).max), x.dtype)
    xb = xb / config.global_scale
    amax = jnp.max(jnp.abs(xb), axis=-1, keepdims=True) / vmax
    scales = jnp.clip(amax, 0, smax).astype(config.scale_type)
    scaled = xb / scales.astype(np.float32)
    scales = scales[..., 0]
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  q = jnp.clip(scaled, -vmax, vmax).astype(config.data_type)
  return jnp.reshape(q, (B, M, K)), scales


def _to_bmk(x, contract, batch):
  """Transpose and reshape `x` to (batch, kept, contracting)."""
  kept = [d for d in range(x.ndim) if d not in contract and d not in batch]
  order = list(batch) + kept + list(contract)
  size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))
  return jnp.reshape(jnp.transpose(x, order), (size(batch), size(kept), size(contract)))


def _scaled_dot(lhs, rhs, dims, out_dtype, cfg_l, cfg_r):
  """dot_general of quantized operands; result in dot_general's axis order."""
  (lc, rc), (lb, rb) = dims
  a, sa = _quantize(_to_bmk(lhs, lc, lb), cfg_l)
  b, sb = _quantize(_to_bmk(rhs, rc, rb), cfg_r)
  nv = cfg_l.mode == "nvfp4"
  out = scaled_matmul(a, b, sa, sb, np.float32 if nv else out_dtype)
  if nv:
    out = (out * (cfg_l.global_scale * cfg_r.global_scale)).astype(out_dtype)
  shape = ([lhs.shape[d] for d in lb] +
           [lhs.shape[d] for d in range(lhs.ndim) if d not in lc and d not in lb] +
           [rhs.shape[d] for d in range(rhs.ndim) if d not in rc and d not in rb])
  return jnp.reshape(out, shape)


def _scaled_dot_grad_lhs(g, x, y, dims, out_dtype, cfg_g, cfg_y, swap=False):
  """The cotangent of x in `g = dot_general(x, y, dims)` (or of dot_general(y, x)
  with `swap`), computed as a block-scaled dot of g and y over y's kept axes."""
  (xc, yc), (xb, yb) = dims
  x_kept = [d for d in range(x.ndim) if d not in xc and d not in xb]
  y_kept = [d for d in range(y.ndim) if d not in yc and d not in yb]
  nb = len(xb)
  if swap:   # g's axes: batch, y kept, x kept
    g_y = list(range(nb, nb + len(y_kept)))
    g_x = list(range(nb + len(y_kept), g.ndim))
  else:      # g's axes: batch, x kept, y kept
    g_x = list(range(nb, nb + len(x_kept)))
    g_y = list(range(nb + len(x_kept), g.ndim))
  g_batch = list(range(nb))
  if cfg_g.mode != "nvfp4":
    out = _scaled_dot(g, y, ((tuple(g_y), tuple(y_kept)), (tuple(g_batch), tuple(yb))),
                      out_dtype, cfg_g, cfg_y)
  else:   # nvfp4 gradients are computed in full precision
    out = lax.dot_general(g, y, ((tuple(g_y), tuple(y_kept)), (tuple(g_batch), tuple(yb))),
                          preferred_element_type=out_dtype)
  # `out` axes: batch, x kept (g's order), then y's contracting axes in y's order:
  # put them back in x's order.
  xc_by_y = [xc[i] for i in np.argsort(yc)]
  perm = np.argsort(list(xb) + x_kept + xc_by_y)
  del g_x
  return jnp.transpose(out, tuple(int(p) for p in perm))


def _make_scaled_dot(dims, out_dtype, configs):
  from tracejax._src.custom_derivatives import custom_vjp
  c_l, c_r, c_g = configs

  @custom_vjp
  def f(lhs, rhs):
    return _scaled_dot(lhs, rhs, dims, out_dtype, c_l, c_r)

  def fwd(lhs, rhs):
    return f(lhs, rhs), (lhs, rhs)

  def bwd(res, g):
    lhs, rhs = res
    (lc, rc), (lb, rb) = dims
    gl = _scaled_dot_grad_lhs(g, lhs, rhs, dims, out_dtype, c_g, c_r)
    gr = _scaled_dot_grad_lhs(g, rhs, lhs, ((rc, lc), (rb, lb)), out_dtype, c_g, c_l,
                              swap=True)
    if c_g.mode == "nvfp4":
      # Straight-through estimator: no gradient where quantization clipped the input.
      vmax = float(_ml_dtypes.finfo(c_l.data_type).max)
      smax = float(_ml_dtypes.finfo(c_l.scale_type).max)
      gl = jnp.where(jnp.abs(lhs) <= c_l.global_scale * vmax * smax, gl, 0)
      gr = jnp.where(jnp.abs(rhs) <= c_r.global_scale * vmax * smax, gr, 0)
    return gl.astype(lhs.dtype), gr.astype(rhs.dtype)

  f.defvjp(fwd, bwd)
  return f


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """`lax.dot_general` of operands quantized to a block-scaled format (as configured
  by `configs`, three `BlockScaleConfig`s: lhs, rhs, gradients); differentiable, with
  gradients also computed from quantized operands. `configs=None`: plain dot_general.

  Args:
    lhs, rhs: arrays. dimension_numbers: `((lhs_contract, rhs_contract), (lhs_batch,
      rhs_batch))`; the contracting size must be a multiple of the block size.
    preferred_element_type: float32, bfloat16 or float16.
    configs: None, or `[get_scaled_dot_general_config(mode)] * 3`.
    implementation: ignored (the backend chooses).

  >>> x = jnp.ones((2, 4, 64)); y = jnp.ones((2, 3, 64))
  >>> cfg = [get_scaled_dot_general_config("mxfp8")] * 3
  >>> scaled_dot_general(x, y, (((2,), (2,)), ((0,), (0,))), configs=cfg).shape
  (2, 4, 3)
  """
  del implementation
  if configs is None:
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  out_dtype = np.dtype(preferred_element_type)
  if out_dtype not in (np.dtype(np.float32), np.dtype(dtypes.bfloat16), np.dtype(np.float16)):
    raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                    f"{out_dtype}")
  configs = list(configs)
  if len(configs) != 3 or not all(isinstance(c, BlockScaleConfig) for c in configs):
    raise TypeError("scaled_dot_general: configs must be three BlockScaleConfigs "
                    "(lhs, rhs, gradient)")
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  (lc, rc), (lb, rb) = dimension_numbers
  lc, rc, lb, rb = (tuple(int(d) for d in t) for t in (lc, rc, lb, rb))
  squeeze = not lb
  if squeeze:  # give both operands a unit batch axis (the quantized matmul is batched)
    lhs, rhs = lhs[..., None], rhs[..., None]
    lb, rb = (lhs.ndim - 1,), (rhs.ndim - 1,)
  out = _make_scaled_dot(((lc, rc), (lb, rb)), out_dtype, configs)(lhs, rhs)
  return out[0] if squeeze else out
