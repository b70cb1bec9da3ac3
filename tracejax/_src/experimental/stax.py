"""Stax is a small but flexible neural net specification library from scratch
(`jax.experimental.stax`, later `jax.example_libraries.stax`).

A layer is an `(init_fun, apply_fun)` pair:

* `init_fun(rng, input_shape) -> (output_shape, params)`;
* `apply_fun(params, inputs, **kwargs) -> outputs` (`rng=` for stochastic layers).

Combinators (`serial`, `parallel`, `shape_dependent`) build layers out of layers.
Shapes may contain -1 for a batch size that is not known at init time.
"""
import functools
import operator as op

import tracejax.lax as lax
import tracejax.numpy as jnp
from tracejax._src.nn.functions import (
    elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize)
from tracejax._src.nn.initializers import glorot_normal, normal, ones, zeros


def _random():
  from tracejax import random
  return random


# aliases for backwards compatibility (2020 stax exported these names)
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ---- layers ----

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """Layer constructor function for a dense (fully-connected) layer."""
  def init_fun(rng, input_shape):
    output_shape = tuple(input_shape[:-1]) + (out_dim,)
    k1, k2 = _random().split(rng)
    W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
    return output_shape, (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    out = jnp.dot(inputs, W)
    # b is reshaped to the output's rank so that the bias add is not a rank promotion,
    # which `jax_numpy_rank_promotion='warn'/'raise'` would report on every call.
    return out + jnp.reshape(b, (1,) * (out.ndim - 1) + (-1,))
  return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID',
                W_init=None, b_init=normal(1e-6)):
  """Layer construction function for a general convolution layer.

  `dimension_numbers` is a triple of layout strings `(lhs_spec, rhs_spec, out_spec)`,
  e.g. `('NHWC', 'HWIO', 'NHWC')`; `filter_shape` lists the spatial kernel sizes in the
  order they appear in `rhs_spec`.
  """
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  one = (1,) * len(filter_shape)
  strides = strides or one
  W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))

  def init_fun(rng, input_shape):
    filter_shape_iter = iter(filter_shape)
    kernel_shape = [out_chan if c == 'O' else
                    input_shape[lhs_spec.index('C')] if c == 'I' else
                    next(filter_shape_iter) for c in rhs_spec]
    output_shape = lax.conv_general_shape_tuple(
        input_shape, kernel_shape, strides, padding, dimension_numbers)
    bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
    k1, k2 = _random().split(rng)
    W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)
    return output_shape, (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ('NHWC', 'HWIO', 'NHWC'))
Conv.__doc__ = "Layer construction function for a general convolution layer (NHWC/HWIO)."


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding='VALID', W_init=None, b_init=normal(1e-6)):
  """Layer construction function for a general transposed-convolution layer."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  one = (1,) * len(filter_shape)
  strides = strides or one
  W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))

  def init_fun(rng, input_shape):
    filter_shape_iter = iter(filter_shape)
    kernel_shape = [out_chan if c == 'O' else
                    input_shape[lhs_spec.index('C')] if c == 'I' else
                    next(filter_shape_iter) for c in rhs_spec]
    output_shape = lax.conv_transpose_shape_tuple(
        input_shape, kernel_shape, strides, padding, dimension_numbers)
    bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
    k1, k2 = _random().split(rng)
    W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)
    return output_shape, (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return lax.conv_transpose(inputs, W, strides, padding,
                              dimension_numbers=dimension_numbers) + b
  return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ('NHC', 'HIO', 'NHC'))
Conv1DTranspose.__doc__ = "Layer construction function for a 1D transposed-convolution layer."
ConvTranspose = functools.partial(GeneralConvTranspose, ('NHWC', 'HWIO', 'NHWC'))
ConvTranspose.__doc__ = "Layer construction function for a 2D transposed-convolution layer."


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,
              beta_init=zeros, gamma_init=ones):
  """Layer construction function for a batch normalization layer.

  Statistics are computed over `axis` of each batch (there are no running averages);
  `beta`/`gamma` have the shape of the remaining axes.
  """
  def _beta_init(rng, shape):
    return beta_init(rng, shape) if center else ()

  def _gamma_init(rng, shape):
    return gamma_init(rng, shape) if scale else ()
  axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    ax = {a % len(input_shape) for a in axis}
    shape = tuple(d for i, d in enumerate(input_shape) if i not in ax)
    k1, k2 = _random().split(rng)
    beta, gamma = _beta_init(k1, shape), _gamma_init(k2, shape)
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    ax = {a % jnp.ndim(x) for a in axis}
    # Index with None at the reduced axes to broadcast beta/gamma back against x.
    ed = tuple(None if i in ax else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, tuple(sorted(ax)), epsilon=epsilon)
    if center and scale:
      return gamma[ed] * z + beta[ed]
    if center:
      return z + beta[ed]
    if scale:
      return gamma[ed] * z
    return z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """Layer that applies a scalar function elementwise on its inputs."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding='VALID', spec=None):
    """Layer construction function for a pooling layer."""
    window_shape = tuple(window_shape)
    strides = tuple(strides) if strides else (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None

    # The window covers the spatial axes; batch and channel get a window of 1.
    if spec is None:
      non_spatial_axes = 0, len(window_shape) + 1
    else:
      non_spatial_axes = spec.index('N'), spec.index('C')
    dims, strd = window_shape, strides
    for i in sorted(non_spatial_axes):
      dims = dims[:i] + (1,) + dims[i:]
      strd = strd[:i] + (1,) + strd[i:]

    def init_fun(rng, input_shape):
      # An unknown batch size (-1) is computed as 1 and put back afterwards: the shape
      # rule rejects negative sizes, and the batch axis has a window of 1 anyway.
      unknown = [i for i, d in enumerate(input_shape) if d < 0]
      known_shape = tuple(1 if d < 0 else d for d in input_shape)
      padding_vals = lax.padtype_to_pads(known_shape, dims, strd, padding)
      ones_ = (1,) * len(dims)
      out_shape = list(lax.reduce_window_shape_tuple(
          known_shape, dims, strd, padding_vals, ones_, ones_))
      for i in unknown:
        out_shape[i] = input_shape[i]
      return tuple(out_shape), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, dims, strd, padding)
      return rescale(out, inputs, spec) if rescale else out
    return init_fun, apply_fun
  return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    if spec is None:
      non_spatial_axes = 0, inputs.ndim - 1
    else:
      non_spatial_axes = spec.index('N'), spec.index('C')
    spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                          if i not in non_spatial_axes)
    # Count the in-bounds elements of each window, so SAME-padded edges average only
    # over real inputs.
    one = jnp.ones(spatial_shape, dtype=inputs.dtype)
    window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
    for i in sorted(non_spatial_axes):
      window_sizes = jnp.expand_dims(window_sizes, i)
    return outputs / window_sizes
  return rescale


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)
AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def _flatten():
  def init_fun(rng, input_shape):
    output_shape = input_shape[0], functools.reduce(op.mul, input_shape[1:], 1)
    return output_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten()  # a layer, not a constructor: `serial(Conv(...), Flatten, Dense(10))`


def _identity():
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return inputs
  return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
  """Layer construction function for a fan-out layer: `num` copies of its input."""
  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum():
  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
  """Layer construction function for a fan-in concatenation layer."""
  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    concat_size = sum(shape[ax] for shape in input_shape)
    out_shape = tuple(input_shape[0][:ax]) + (concat_size,) + tuple(input_shape[0][ax + 1:])
    return out_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode='train'):
  """Layer construction function for a dropout layer with given rate.

  As in JAX's stax, `rate` is the probability of *keeping* a unit; kept units are
  scaled by `1 / rate`. In `mode='train'` apply_fun needs an `rng=` key; any other
  mode is the identity.
  """
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get('rng', None)
    if rng is None:
      raise ValueError(
          "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
          "is, instead of `apply_fun(params, inputs)`, call it like "
          "`apply_fun(params, inputs, rng)` where `rng` is a jax.random.PRNGKey value.")
    if mode == 'train':
      keep = _random().bernoulli(rng, rate, jnp.shape(inputs))
      return jnp.where(keep, inputs / rate, 0)
    return inputs
  return init_fun, apply_fun


# ---- combinators ----

def serial(*layers):
  """Combinator for composing layers in serial.

  Args:
    *layers: a sequence of layers, each an (init_fun, apply_fun) pair.

  Returns:
    A new layer, meaning an (init_fun, apply_fun) pair, representing the serial
    composition of the given sequence of layers.
  """
  nlayers = len(layers)
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = _random().split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop('rng', None)
    rngs = _random().split(rng, nlayers) if rng is not None else (None,) * nlayers
    for fun, param, r in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=r, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """Combinator for composing layers in parallel.

  The layer resulting from this combinator is often used with the FanOut and FanInSum
  layers.

  Args:
    *layers: a sequence of layers, each an (init_fun, apply_fun) pair.

  Returns:
    A new layer, meaning an (init_fun, apply_fun) pair, representing the parallel
    composition of the given sequence of layers. In particular, the returned layer
    takes a sequence of inputs and returns a sequence of outputs with the same length
    as the argument `layers`.
  """
  nlayers = len(layers)
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    rngs = _random().split(rng, nlayers)
    outs = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
    return tuple(o[0] for o in outs), tuple(o[1] for o in outs)

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.pop('rng', None)
    rngs = _random().split(rng, nlayers) if rng is not None else (None,) * nlayers
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """Combinator to delay layer constructor pair until input shapes are known.

  Args:
    make_layer: a one-argument function that takes an input shape as an argument (a
      tuple of positive integers) and returns an (init_fun, apply_fun) pair.

  Returns:
    A new layer, meaning an (init_fun, apply_fun) pair, representing the same layer as
    returned by `make_layer` but with its construction delayed until input shapes are
    known.
  """
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun

