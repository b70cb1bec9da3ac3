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
  symmetric, maximum, minimum, mean, median and empty (zeros).

  Args:
    array: the array to pad.
    pad_width: int, (before, after) pair, or one pair per axis.
    mode: one of the modes above.
    constant_values: the value(s) for mode 'constant' (a scalar or pairs per axis).
    stat_length: for 'maximum', 'minimum', 'mean' and 'median', how many elements at
      each end the statistic is taken over (int, pair, or pairs per axis; None: all).

  Example: `pad(jnp.array([1, 2, 3, 9]), 1, mode="mean", stat_length=2)` is
  `[2, 1, 2, 3, 9, 6]`.
  """
  x = util.to_array(array)
  nd = util.ndim(x)
  widths = [(int(lo), int(hi)) for lo, hi in _pairs(pad_width, nd, "pad_width")]
  if any(lo < 0 or hi < 0 for lo, hi in widths):
    raise ValueError("index can't contain negative values")
  if callable(mode):
    raise NotImplementedError("jnp.pad with a callable mode is not supported")
  if mode in ("constant", "empty") or (
      mode in _ALL_MODES and all(lo == 0 and hi == 0 for lo, hi in widths)):
    # Zero widths in any mode still stage a pad, so the result is always a device
    # array (JAX; under jvp a NumPy input would otherwise come back as a NumPy primal).
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
  lengths = None
  if mode in _STAT_MODES:
    lengths = _stat_lengths(kwargs.get("stat_length"), nd)
  for axis, (lo, hi) in enumerate(widths):
    if lo == 0 and hi == 0:
      continue
    n = util.shape(x)[axis]
    if mode in _STAT_MODES and n == 0:
      raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' "
                       "or 'empty'")
    if mode in _STAT_MODES:
      # NumPy: the statistic of the first (last) stat_length elements along the axis,
      # or of all of them (stat_length=None or larger than the axis).
      len_lo, len_hi = lengths[axis] if lengths is not None else (n, n)
      len_lo, len_hi = min(len_lo, n), min(len_hi, n)
      stat_lo = _stat(mode, shape_ops._slice_axis(x, axis, 0, len_lo), axis) if lo else None
      if not hi:
        stat_hi = None
      elif len_hi == len_lo == n and stat_lo is not None:
        stat_hi = stat_lo  # the same elements: one reduction
      else:
        stat_hi = _stat(mode, shape_ops._slice_axis(x, axis, n - len_hi, n), axis)
      x = _concat_edges(x, axis, _repeat_block(stat_lo, axis, lo),
                        _repeat_block(stat_hi, axis, hi))
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


_STAT_MODES = ("maximum", "minimum", "mean", "median")
_ALL_MODES = _STAT_MODES + ("edge", "wrap", "reflect", "symmetric", "linear_ramp")


def _stat_lengths(stat_length, nd):
  """Per-axis (before, after) stat lengths (None: whole axes), checked as JAX/NumPy do."""
  if stat_length is None:
    return None
  arr = np.asarray(stat_length)
  if arr.dtype == object or not (arr.dtype.kind in "iu" or arr.dtype == np.bool_):
    raise TypeError(f"`stat_length` must be integers, got {stat_length!r}")
  pairs = [(int(a), int(b)) for a, b in _pairs(arr, nd, "stat_length")]
  if any(a < 0 or b < 0 for a, b in pairs):
    raise ValueError("index can't contain negative values")
  if any(a == 0 or b == 0 for a, b in pairs):
    raise ValueError("stat_length of 0 yields no value for padding")
  return pairs


def _stat(mode, part, axis):
  """The padding value from `part` (keepdims along `axis`), in `part`'s dtype."""
  dt = util.dtype_of(part)
  if mode == "maximum":
    return reductions.max(part, axis=axis, keepdims=True)
  if mode == "minimum":
    return reductions.min(part, axis=axis, keepdims=True)
  if mode == "mean":
    stat = reductions.mean(part, axis=axis, keepdims=True)
  else:
    from tracejax._src.numpy import statistics
    src = util.convert(part, np.float32, False) if dt == np.bool_ else part
    stat = statistics.median(src, axis=axis, keepdims=True)
  if dtypes.is_integer(dt):
    stat = ufuncs.round(stat)  # NumPy rounds the mean or median of integers (half to even)
  # (not of bools: any nonzero mean is True, so 0.5 must not round to False)
  return util.convert(stat, dt, False)


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
