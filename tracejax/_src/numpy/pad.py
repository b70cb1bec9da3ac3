"""`jnp.pad`: constant padding is one `lax.pad`; the other modes concatenate slices."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import structural
from tracejax._src.numpy import creation, reductions, shape_ops, ufuncs, util


def _pairs(value, nd, name):
  """Per-axis (before, after) pairs from NumPy's spellings (int, pair, or one pair per axis)."""
  arr = np.asarray(value)
  if arr.dtype == object:
    raise TypeError(f"`{name}` must be numbers, got {value!r}")
  try:
    return np.broadcast_to(arr, (nd, 2)).tolist()
  except ValueError:
    raise ValueError(f"Unable to broadcast `{name}` of shape {arr.shape} to ({nd}, 2)") from None


def pad(array, pad_width, mode="constant", **kwargs):
  """Pad `array` by `pad_width` with NumPy's modes: constant, edge, wrap, reflect,
  symmetric, maximum, minimum, mean and empty (zeros)."""
  x = util.to_array(array)
  nd = util.ndim(x)
  widths = [(int(lo), int(hi)) for lo, hi in _pairs(pad_width, nd, "pad_width")]
  if any(lo < 0 or hi < 0 for lo, hi in widths):
    raise ValueError("index can't contain negative values")
  if callable(mode):
    raise NotImplementedError("jnp.pad with a callable mode is not supported")
  if mode in ("constant", "empty"):
    values = kwargs.get("constant_values", 0) if mode == "constant" else 0
    if util.ndim(values) == 0:
      cfg = [(lo, hi, 0) for lo, hi in widths]
      # weak when x is: padding a weak value keeps it weak (JAX)
      value = util.convert(util.to_operand(values), util.dtype_of(x), util.is_weak(x))
      return structural.pad(x, value, cfg)
    values = _pairs(values, nd, "constant_values")
    for axis, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, values)):
      x = _concat_edges(x, axis, _const_block(x, axis, lo, vlo), _const_block(x, axis, hi, vhi))
    return x
  for axis, (lo, hi) in enumerate(widths):
    if lo == 0 and hi == 0:
      continue
    n = util.shape(x)[axis]
    if mode in ("maximum", "minimum", "mean"):
      if kwargs.get("stat_length") is not None:
        raise NotImplementedError("jnp.pad: stat_length is not supported")
      stat = {"maximum": reductions.max, "minimum": reductions.min,
              "mean": reductions.mean}[mode](x, axis=axis, keepdims=True)
      if mode == "mean" and dtypes.is_integer(util.dtype_of(x)):
        stat = ufuncs.round(stat)  # NumPy rounds the mean of integers
      # (not of bools: any nonzero mean is True, so 0.5 must not round to False)
      stat = util.convert(stat, util.dtype_of(x), False)
      x = _concat_edges(x, axis, _repeat_block(stat, axis, lo), _repeat_block(stat, axis, hi))
    elif n == 0:
      raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' "
                       "or 'empty'")
    elif mode == "edge" or (mode == "reflect" and n == 1):
      first = shape_ops._slice_axis(x, axis, 0, 1)
      last = shape_ops._slice_axis(x, axis, n - 1, n)
      x = _concat_edges(x, axis, _repeat_block(first, axis, lo), _repeat_block(last, axis, hi))
    elif mode in ("wrap", "reflect", "symmetric"):
      if mode == "wrap":
        period = x
      elif mode == "reflect":
        period = shape_ops.concatenate(
            [x, shape_ops.flip(shape_ops._slice_axis(x, axis, 1, n - 1), axis)], axis)
      else:
        period = shape_ops.concatenate([x, shape_ops.flip(x, axis)], axis)
      x = _periodic_window(period, axis, lo, n + hi)
    else:
      raise NotImplementedError(f"jnp.pad: mode {mode!r} is not supported")
  return x


def _const_block(x, axis, width, value):
  shape = list(util.shape(x))
  shape[axis] = width
  return creation.full(tuple(shape), value, util.dtype_of(x)) if width else None


def _repeat_block(edge, axis, width):
  if not width:
    return None
  shape = list(util.shape(edge))
  shape[axis] = width
  return util.broadcast_to(edge, tuple(shape))


def _concat_edges(x, axis, before, after):
  parts = [p for p in (before, x, after) if p is not None]
  return shape_ops.concatenate(parts, axis) if len(parts) > 1 else x


def _periodic_window(period, axis, lo, stop):
  """Elements -lo .. stop-1 of the periodic extension of `period` along `axis`."""
  p = util.shape(period)[axis]
  before = -(-lo // p)  # periods needed before index 0
  after = -(-stop // p)
  tiled = shape_ops.concatenate([period] * (before + after), axis)
  start = before * p - lo
  return shape_ops._slice_axis(tiled, axis, start, start + lo + stop)
