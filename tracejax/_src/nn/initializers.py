"""`jax.nn.initializers`: parameter initializers consistent with Keras and Sonnet.

An initializer is a function `init(key, shape, dtype=float) -> array`. `zeros` and
`ones` are initializers themselves; everything else is a *factory* that returns one,
so its repr reads `<function normal.<locals>.init>` exactly as stax's documented
signatures show.
"""
import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tracejax._src import dtypes
import tracejax.numpy as jnp


@runtime_checkable
class Initializer(Protocol):
  """The type of an initializer: `init(key, shape, dtype=float) -> array`."""

  def __call__(self, key: Any, shape: Any, dtype: Any = None) -> Any:
    ...


def _random():
  # Imported on use: random sits beside nn in the layer order and pulls in the PRNG.
  from tracejax import random
  return random


def _dtype(dtype):
  return dtypes.canonicalize_dtype(jnp.float_ if dtype is None else dtype)


def _shape(shape):
  try:
    return tuple(int(d) for d in shape)
  except TypeError:
    return (int(shape),)


def zeros(key, shape, dtype=None):
  """An initializer that returns a zero-filled array: `zeros(key, (2, 3))`."""
  del key
  return jnp.zeros(_shape(shape), _dtype(dtype))


def ones(key, shape, dtype=None):
  """An initializer that returns an array filled with ones: `ones(key, (2, 3))`."""
  del key
  return jnp.ones(_shape(shape), _dtype(dtype))


def constant(value, dtype=None):
  """Builds an initializer that returns arrays full of `value`."""
  def init(key, shape, dtype=dtype):
    del key
    return jnp.full(_shape(shape), value, dtype=_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=None):
  """Builds an initializer drawing uniformly from `[0, scale)`."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype(dtype)
    return _random().uniform(key, _shape(shape), dtype) * jnp.array(scale, dtype)
  return init


def normal(stddev=1e-2, dtype=None):
  """Builds an initializer drawing from a centred normal with standard deviation `stddev`."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype(dtype)
    return _random().normal(key, _shape(shape), dtype) * jnp.array(stddev, dtype)
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
  """Builds an initializer drawing from a normal truncated to `[lower, upper]` (in
  units of the standard normal), then scaled by `stddev`."""
  def init(key, shape, dtype=dtype):
    dtype = _dtype(dtype)
    return _random().truncated_normal(key, lower, upper, _shape(shape), dtype) * \
        jnp.array(stddev, dtype)
  return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out) of a weight of `shape`: the sizes of the input and output axes,
  each multiplied by the receptive field (the product of all remaining axes, e.g. the
  spatial dimensions of a convolution kernel)."""
  if len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor. Must be at least 2D.")

  def size(axes):
    if isinstance(axes, int):
      return shape[axes]
    return math.prod(shape[a] for a in axes)
  in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
  receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive_field_size, out_size * receptive_field_size


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
  r"""Builds an initializer whose samples have variance `scale / n`.

  `n` is, by `mode`: `"fan_in"` (input units), `"fan_out"` (output units), `"fan_avg"`
  (their mean) or `"fan_geo_avg"` (their geometric mean), each counting the receptive
  field. `distribution` is `"truncated_normal"` (a normal truncated at two standard
  deviations, rescaled so the *truncated* variance is right), `"normal"`, or
  `"uniform"` (on :math:`[-\sqrt{3 \cdot scale/n}, \sqrt{3 \cdot scale/n}]`).
  """
  if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
    raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

  def init(key, shape, dtype=dtype):
    shape = _shape(shape)
    dtype = _dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                   "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
    variance = jnp.array(scale / denominator, dtype=dtype)
    random = _random()
    if distribution == "truncated_normal":
      # .8796... is the standard deviation of a standard normal truncated to (-2, 2).
      stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
      return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
  return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) uniform: `variance_scaling(1.0, "fan_avg", "uniform")`."""
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) normal: `variance_scaling(1.0, "fan_avg", "truncated_normal")`."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis,
                          batch_axis, dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun uniform: `variance_scaling(1.0, "fan_in", "uniform")`."""
  return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """LeCun normal: `variance_scaling(1.0, "fan_in", "truncated_normal")`."""
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis,
                          batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) uniform: `variance_scaling(2.0, "fan_in", "uniform")`."""
  return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """He (Kaiming) normal: `variance_scaling(2.0, "fan_in", "truncated_normal")`."""
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis,
                          batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """Builds an initializer returning (scaled) orthogonal matrices.

  The array is viewed as a matrix whose columns run along `column_axis`; the matrix is
  the Q factor of a Gaussian matrix, sign-corrected by diag(R) so it is uniformly
  (Haar) distributed.
  """
  def init(key, shape, dtype=dtype):
    shape = _shape(shape)
    dtype = _dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
    a = _random().normal(key, matrix_shape, dtype)
    q, r = jnp.linalg.qr(a)
    q = q * jnp.sign(jnp.diag(r))[None, :]
    if n_rows < n_cols:
      q = q.T
    q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
    q = jnp.moveaxis(q, -1, column_axis)
    return jnp.asarray(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
  """Builds an initializer for 3D/4D/5D convolution kernels: zero except at the spatial
  centre, which holds an orthogonal matrix (Xiao et al., 2018)."""
  def init(key, shape, dtype=dtype):
    shape = _shape(shape)
    dtype = _dtype(dtype)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp.zeros(shape, dtype).at[centre].set(ortho)
  return init

