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


def _strict_pairs(value, nd, name):
  """(before, after) pairs for pad_width, stat_length and end_values: JAX takes only the
  shapes (nd, 2), (1, 2), (2,), (1,) and () (no other broadcasting)."""
  arr = np.asarray(value)
  if arr.dtype == object:
    raise TypeError(f"`{name}` must be numbers, got {value!r}")
  if arr.shape not in ((nd, 2), (1, 2), (2,), (1,), ()):
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. "
                     f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")
  return np.broadcast_to(arr, (nd, 2)).tolist()


def _pad_widths(pad_width, nd):
  try:
    arr = np.asarray(pad_width)
  except Exception:  # noqa: BLE001 (a traced pad_width: concrete_int below says so)
    arr = None
  if arr is None or arr.dtype == object:
    return [(util.concrete_int(lo, "pad_width argument of jnp.pad"),
             util.concrete_int(hi, "pad_width argument of jnp.pad"))
            for lo, hi in _pairs(pad_width, nd, "pad_width")]
  if arr.dtype.kind not in "iu" and arr.size:
    raise TypeError("`pad_width` must be of integral type.")
  widths = [(int(lo), int(hi)) for lo, hi in _strict_pairs(arr, nd, "pad_width")]
  if any(lo < 0 or hi < 0 for lo, hi in widths):
    raise ValueError("index can't contain negative values")
  return widths


# The keyword arguments each mode takes (anything else is an error, as in NumPy).
_MODE_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"}, "maximum": {"stat_length"},
    "minimum": {"stat_length"}, "mean": {"stat_length"}, "median": {"stat_length"},
}


def pad(array, pad_width, mode="constant", **kwargs):
  """Pad `array` by `pad_width` with NumPy's modes: constant, edge, linear_ramp, wrap,
  reflect, symmetric, maximum, minimum, mean, median, empty (zeros here), or a function.

  Args:
    array: the array to pad.
    pad_width: int, (before, after) pair, or one pair per axis.
    mode: one of the modes above, or a callable `mode(vector, iaxis_pad_width, iaxis,
      kwargs)` that returns a padded 1-D `vector` (it is applied along each axis in
      turn, to the array padded with zeros; the other keyword arguments are `kwargs`).
    constant_values: the value(s) for mode 'constant' (a scalar or pairs per axis).
    end_values: for 'linear_ramp', the value(s) the ramps start from (default 0).
    reflect_type: for 'reflect' and 'symmetric': 'even' (default) mirrors the values,
      'odd' reflects them through the edge value (2 * edge - mirrored).
    stat_length: for 'maximum', 'minimum', 'mean' and 'median', how many elements at
      each end the statistic is taken over (int, pair, or pairs per axis; None: all;
      a negative length counts from the other end, as a Python slice does).

  Example: `pad(jnp.array([1, 2, 3, 9]), 1, mode="mean", stat_length=2)` is
  `[2, 1, 2, 3, 9, 6]`; `pad(jnp.array([1., 2.]), 2, mode="linear_ramp")` is
  `[0., 0.5, 1., 2., 1., 0.]`.
  """
  x = util.to_array(array)
  nd = util.ndim(x)
  widths = _pad_widths(pad_width, nd)
  if callable(mode):
    if nd == 0:
      # As JAX: its function mode re-checks the widths it kept for a 0-d array (none,
      # shape (0,)), and refuses them.
      _strict_pairs(np.asarray(widths, int).reshape(0), nd, "pad_width")
    return _pad_with_function(x, widths, mode, kwargs)
  if not isinstance(mode, str) or mode not in _MODE_KWARGS:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
  unsupported = set(kwargs) - _MODE_KWARGS[mode]
  if unsupported:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
  if nd == 0:
    # nothing to pad: JAX returns the 0-d array itself (no pad, so grad's cotangent
    # keeps its weak type; a pad's transpose would make it strong)
    return util.fresh_array(x)
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
  out = x
  if mode == "linear_ramp":
    ends = _end_values(kwargs.get("end_values", 0), nd)
    for axis, ((lo, hi), (end_lo, end_hi)) in enumerate(zip(widths, ends)):
      out = _linear_ramp(out, axis, lo, hi, end_lo, end_hi)
  elif mode in _STAT_MODES:
    lengths = _stat_lengths(kwargs.get("stat_length"), nd)
    for axis, (lo, hi) in enumerate(widths):
      out = _stat_pad(out, mode, axis, lo, hi, lengths[axis] if lengths else None)
  else:
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
      raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    odd = reflect_type == "odd" and mode in ("reflect", "symmetric")
    if odd and util.dtype_of(x) == np.bool_:
      # (JAX: a TypeError too, from mixing the int 2 * edge with the bools)
      raise TypeError("jnp.pad: reflect_type='odd' needs a numeric array, got bool")
    for axis, (lo, hi) in enumerate(widths):
      if lo == 0 and hi == 0:
        continue
      n = util.shape(out)[axis]
      if n == 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")
      if mode == "edge" or (mode == "reflect" and n == 1):
        out = _edge_pad(out, axis, lo, hi)
      elif odd:
        out = _odd_reflect(out, axis, lo, hi, mode == "reflect")
      else:
        if mode == "wrap":
          period = out
        elif mode == "reflect":
          period = shape_ops.concatenate(
              [out, shape_ops.flip(shape_ops._slice_axis(out, axis, 1, n - 1), axis)], axis)
        else:
          period = shape_ops.concatenate([out, shape_ops.flip(out, axis)], axis)
        out = _periodic_window(period, axis, lo, n + hi)
  if out is x:
    # Zero widths still stage a pad, so the result is always a device array (JAX; under
    # jvp a NumPy input would otherwise come back as a NumPy primal).
    return structural.pad(x, util.convert(0, util.dtype_of(x), util.is_weak(x)),
                          [(0, 0, 0)] * nd)
  if util.is_weak(x) and not util.is_weak(out):
    out = util.convert(out, util.dtype_of(x), True)  # padding keeps a weak type (JAX)
  return out


_STAT_MODES = ("maximum", "minimum", "mean", "median")


def _stat_lengths(stat_length, nd):
  """Per-axis (before, after) stat lengths (None: whole axes), checked as JAX does."""
  if stat_length is None:
    return None
  arr = np.asarray(stat_length)
  if arr.dtype == object or not (arr.dtype.kind in "iu" or arr.dtype == np.bool_):
    raise TypeError(f"`stat_length` must be integers, got {stat_length!r}")
  pairs = [(int(a), int(b)) for a, b in _strict_pairs(arr, nd, "stat_length")]
  if any(a == 0 or b == 0 for a, b in pairs):
    raise ValueError("stat_length of 0 yields no value for padding")
  return pairs


def _stat_window(x, axis, length, at_end):
  """The elements a statistic is taken over: the first (last) `length` along `axis`, all
  of them if `length` is larger; a negative length drops -length from the other end."""
  n = util.shape(x)[axis]
  if length >= 0:
    length = min(length, n)
    return shape_ops._slice_axis(x, axis, n - length, n) if at_end else \
        shape_ops._slice_axis(x, axis, 0, length)
  if n + length < 0:
    # (JAX: a TypeError from its slice, too)
    raise TypeError(f"jnp.pad: stat_length {length} is out of range for an axis of size {n}")
  return shape_ops._slice_axis(x, axis, -length, n) if at_end else \
      shape_ops._slice_axis(x, axis, 0, n + length)


def _stat_pad(x, mode, axis, lo, hi, lengths):
  n = util.shape(x)[axis]
  if not (lo or hi or n == 0):
    return x
  # An empty axis has no maximum or minimum even when nothing is padded along it (JAX
  # computes the statistics of every axis), and its mean or median is NaN.
  len_lo, len_hi = lengths if lengths is not None else (n, n)
  stat_lo = _stat(mode, _stat_window(x, axis, len_lo, False), axis)
  if len_hi == len_lo and (len_lo >= n or len_lo <= -n):
    stat_hi = stat_lo  # the same elements: one reduction
  else:
    stat_hi = _stat(mode, _stat_window(x, axis, len_hi, True), axis)
  return _concat_edges(x, axis, _repeat_block(stat_lo, axis, lo),
                       _repeat_block(stat_hi, axis, hi))


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


def _end_values(end_values, nd):
  if end_values is None:
    raise TypeError("jnp.pad: end_values must be numbers, got None")
  if util.is_array(end_values) and not isinstance(end_values, np.ndarray):
    end_values = np.asarray(end_values)  # (a concrete Array: its values, as NumPy's)
  return _strict_pairs(end_values, nd, "end_values")


def _linear_ramp(x, axis, lo, hi, end_lo, end_hi):
  """Ramps from end_lo up to the first element and from the last element down to end_hi.

  The edges are taken even when nothing is padded along `axis`, so an empty axis is an
  error (a slice out of range) as in JAX."""
  n = util.shape(x)[axis]
  first = shape_ops._slice_axis(x, axis, 0, 1)
  last = shape_ops._slice_axis(x, axis, n - 1, n) if n else shape_ops._slice_axis(x, axis, -1, 0)
  dt = util.dtype_of(x)
  # linspace in the array's dtype: integer ramps are floored, as JAX's are.
  before = creation.linspace(end_lo, shape_ops.squeeze(first, axis), lo, endpoint=False,
                             dtype=dt, axis=axis)
  after = shape_ops.flip(creation.linspace(end_hi, shape_ops.squeeze(last, axis), hi,
                                           endpoint=False, dtype=dt, axis=axis), axis)
  return _concat_edges(x, axis, before if lo else None, after if hi else None)


def _edge_pad(x, axis, lo, hi):
  n = util.shape(x)[axis]
  first = shape_ops._slice_axis(x, axis, 0, 1)
  last = shape_ops._slice_axis(x, axis, n - 1, n)
  return _concat_edges(x, axis, _repeat_block(first, axis, lo), _repeat_block(last, axis, hi))


def _odd_reflect(x, axis, lo, hi, reflect):
  """NumPy's odd reflection: `2 * edge - mirrored values`, in chunks of at most n - 1
  ('reflect', which skips the edge) or n ('symmetric') elements, each reflected through
  the outermost value padded so far (so wide pads continue the trend)."""
  n = util.shape(x)[axis]
  chunk = n - 1 if reflect else n
  skip = 1 if reflect else 0
  two = util.convert(2, util.dtype_of(x), util.is_weak(x))
  while lo > 0 or hi > 0:
    m = util.shape(x)[axis]
    left = right = None
    if lo > 0:
      c = min(lo, chunk)
      edge = shape_ops._slice_axis(x, axis, 0, 1)
      mirror = shape_ops.flip(shape_ops._slice_axis(x, axis, skip, skip + c), axis)
      left = ufuncs.subtract(ufuncs.multiply(two, edge), mirror)
      lo -= c
    if hi > 0:
      c = min(hi, chunk)
      edge = shape_ops._slice_axis(x, axis, m - 1, m)
      mirror = shape_ops.flip(shape_ops._slice_axis(x, axis, m - skip - c, m - skip), axis)
      right = ufuncs.subtract(ufuncs.multiply(two, edge), mirror)
      hi -= c
    x = _concat_edges(x, axis, left, right)
  return x


def _pad_with_function(x, widths, fn, kwargs):
  """NumPy's callable mode: pad with zeros, then `fn(vector, (before, after), axis,
  kwargs)` rewrites every 1-D slice along each axis in turn (here by vmap, so `fn`
  must return the new vector rather than edit it in place)."""
  from tracejax._src.numpy import array_api
  out = structural.pad(x, util.convert(0, util.dtype_of(x), util.is_weak(x)),
                       [(lo, hi, 0) for lo, hi in widths])
  for axis, width in enumerate(widths):
    out = array_api.apply_along_axis(fn, axis, out, width, axis, kwargs)
  return out


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
