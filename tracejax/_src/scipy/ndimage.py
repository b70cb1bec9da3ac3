"""`jax.scipy.ndimage`: interpolation of an array at arbitrary coordinates.

`map_coordinates` is a sum over the 2**N (order 1) or 1 (order 0) neighbouring
grid points of weight * gathered value, written with jnp operations: it jits,
vmaps, and differentiates with respect to the input (the gather is linear) and,
for order 1, the coordinates (through the interpolation weights).
"""
import functools
import itertools
import operator

import numpy as np

from tracejax._src import dtypes


def _jnp():
  import tracejax.numpy as jnp
  return jnp


def _mirror_index(index, size):
  """Whole-sample symmetric extension (d c b | a b c d | c b a): a triangle wave."""
  jnp = _jnp()
  if size == 1:
    return jnp.zeros_like(index)
  period = 2 * (size - 1)
  return jnp.abs((index + (size - 1)) % period - (size - 1))


def _reflect_index(index, size):
  """Half-sample symmetric extension (d c b a | a b c d | d c b a)."""
  jnp = _jnp()
  # Reflection about the sample edges is mirroring on the doubled grid, halved.
  return jnp.floor_divide(_mirror_index(2 * index + 1, 2 * size + 1) - 1, 2)


def _index_fixers():
  jnp = _jnp()
  return {
      "constant": lambda index, size: index,
      "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
      "wrap": lambda index, size: index % size,
      "mirror": _mirror_index,
      "reflect": _reflect_index,
  }


def _round_half_away_from_zero(x):
  jnp = _jnp()
  if dtypes.is_integer(x.dtype):
    return x
  return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def _nearest(coordinate):
  index = _round_half_away_from_zero(coordinate).astype(np.int32)
  return [(index, None)]


def _linear(coordinate):
  jnp = _jnp()
  lower = jnp.floor(coordinate)
  upper_weight = coordinate - lower
  index = lower.astype(np.int32)
  return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
  """Values of `input` interpolated at `coordinates` (SciPy's `ndimage.map_coordinates`).

  Args:
    input: N-dimensional array of samples on the integer grid.
    coordinates: a sequence of N arrays of one common shape (or an array whose
      leading axis has length N): the point `i` is `(coordinates[0][i], ...)`.
    order: 0 (nearest sample, halves rounded away from zero) or 1 (multilinear).
    mode: how points outside the grid are extended: 'constant' (`cval` beyond the
      samples, i.e. SciPy's 'grid-constant'), 'nearest' (edge value), 'wrap'
      (periodic, SciPy's 'grid-wrap'), 'mirror' (reflect about the edge samples) or
      'reflect' (reflect about the grid edges).
    cval: the value outside the grid for mode 'constant'.

  Returns an array of the coordinates' shape with the dtype of `input` (integer
  inputs are rounded).

  >>> x = jnp.arange(12.0).reshape(3, 4)
  >>> map_coordinates(x, [jnp.array([0.5, 1.5]), jnp.array([1.5, 2.5])], order=1)
  DeviceArray([3.5, 8.5], dtype=float32)
  """
  jnp = _jnp()
  from tracejax._src.numpy import util
  util.check_arraylike_or_list("map_coordinates", input)
  input_arr = jnp.asarray(input)
  if isinstance(coordinates, (list, tuple)):
    coords = [jnp.asarray(c) for c in coordinates]
  else:
    util.check_arraylike("map_coordinates", coordinates)
    coordinates = jnp.asarray(coordinates)
    if coordinates.ndim == 0:
      raise ValueError("map_coordinates: coordinates must have a leading axis of length "
                       "input.ndim")
    coords = [coordinates[i] for i in range(coordinates.shape[0])]
  if len(coords) != input_arr.ndim:
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coords)} != {input_arr.ndim}")
  if coords:
    shp = util.broadcast_shapes(*[c.shape for c in coords])
    coords = [jnp.broadcast_to(c, shp) for c in coords]
  fixers = _index_fixers()
  if mode not in fixers:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates does not support mode {mode!r}; the supported "
        f"modes are {sorted(fixers)}.")
  order = util.concrete_int(order, "'order' argument of map_coordinates")
  if order == 0:
    nodes_of = _nearest
  elif order == 1:
    nodes_of = _linear
    coords = [c if dtypes.is_inexact(c.dtype) else c.astype(dtypes.default_float_dtype())
              for c in coords]
  else:
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates supports only order 0 "
                              f"and 1, got order={order}")
  if input_arr.ndim == 0:
    return input_arr
  cval = jnp.asarray(cval, input_arr.dtype)
  fix = fixers[mode]

  per_axis = []
  for c, size in zip(coords, input_arr.shape):
    nodes = []
    for index, weight in nodes_of(c):
      valid = ((index >= 0) & (index < size)) if mode == "constant" else None
      nodes.append((fix(index, size), valid, weight))
    per_axis.append(nodes)

  terms = []
  for combo in itertools.product(*per_axis):
    indices = tuple(i for i, _, _ in combo)
    valids = [v for _, v, _ in combo if v is not None]
    weights = [w for _, _, w in combo if w is not None]
    if mode == "constant":
      # Out-of-grid indices are clamped for the gather, then replaced by cval.
      safe = tuple(jnp.clip(i, 0, s - 1) for i, s in zip(indices, input_arr.shape))
      value = jnp.where(functools.reduce(operator.and_, valids), input_arr[safe], cval)
    else:
      value = input_arr[indices]
    terms.append(functools.reduce(operator.mul, weights) * value if weights else value)
  result = functools.reduce(operator.add, terms)
  if dtypes.is_integer(input_arr.dtype):
    result = _round_half_away_from_zero(result)
  return result.astype(input_arr.dtype)
