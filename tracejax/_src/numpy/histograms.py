"""Binning and piecewise-linear interpolation: histogram (1-D, 2-D, N-D), bin edges,
bincount, digitize and interp, all built on `searchsorted` and a scatter-add.

Output lengths must be static under `jit`: `bincount` takes `length=`, and
histogram bins are an int or explicit edges (NumPy's string estimators such as
'auto' need the data, so they work on concrete arrays only). As in JAX, counts
are in the inexact dtype of the data, `bincount` clips negative values to 0
(NumPy raises), and indices are int32.
"""
import builtins
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.jit import inline_jit
from tracejax._src.lax import structural
from tracejax._src.numpy import (creation, indexing, reductions, shape_ops, sorting, ufuncs,
                                 util)


def _is_concrete(x):
  if util.is_array(x):
    return getattr(x, "to_concrete_value", lambda: x)() is not None
  return True


def _host(x):
  return np.asarray(concrete_or_error(None, util.to_operand(x)))


def _at(x):
  return indexing.IndexUpdateHelper(x)


# ---- bincount ----

def bincount(x, weights=None, minlength=0, *, length=None):
  """How often each non-negative integer occurs in `x` (or the sum of its `weights`).

  Args:
    x: 1-D array of non-negative integers (negative values count as 0, as in JAX).
    weights: optional weights, one per element of `x`.
    minlength: the least length of the result.
    length: the static length of the result, required under `jit` (values at or
      beyond it are dropped); by default max(x) + 1 (at least `minlength`).

  >>> bincount(jnp.array([0, 1, 1, 3]))
  DeviceArray([1, 2, 0, 1], dtype=int32)
  """
  util.check_arraylike_or_list("bincount", x)
  x = util.to_array(x)
  dt = util.dtype_of(x)
  if not (dtypes.is_integer(dt) or dt == np.bool_):
    raise TypeError(f"x argument to bincount must have an integer type; got {dt}")
  if util.ndim(x) != 1:
    raise ValueError(f"bincount: x must be 1-dimensional, got shape {util.shape(x)}")
  minlength = concrete_or_error(operator.index, minlength,
                                "The minlength argument of jnp.bincount must be static.")
  if minlength < 0:
    raise ValueError("bincount: minlength must not be negative")
  if length is None:
    xv = concrete_or_error(
        np.asarray, x, "The error arose in jnp.bincount: its output length depends on the "
        "values of x. Pass a static `length=` to use it under jit.")
    length = builtins.max(minlength, int(xv.max()) + 1 if xv.size else 0)
  else:
    length = concrete_or_error(operator.index, length,
                               "The length argument of jnp.bincount must be static.")
    if length < 0:
      raise ValueError(f"bincount: length must be non-negative, got {length}")
  if weights is None:
    w = structural.full(util.shape(x), np.array(1, dtypes.default_int_dtype()))
  else:
    util.check_arraylike_or_list("bincount", weights)
    w = util.to_array(weights)
    if util.shape(w) != util.shape(x):
      raise ValueError(f"bincount: weights must have the shape of x, {util.shape(x)}; got "
                       f"{util.shape(w)}")
    if util.dtype_of(w) == np.bool_:
      w = util.convert(w, dtypes.default_int_dtype(), False)
  idx = ufuncs.maximum(x, util.convert(0, util.dtype_of(x), False)) if dt != np.bool_ \
      else util.convert(x, np.int32, False)
  zeros = structural.full((length,), np.array(0, util.dtype_of(w)))
  return _at(zeros)[idx].add(w, mode="drop")


# ---- digitize ----

def digitize(x, bins, right=False, *, method=None):
  """The index of the bin of each element of `x`, for monotonic `bins` (NumPy's rule).

  For increasing bins, `i` with bins[i-1] <= x < bins[i] (or bins[i-1] < x <= bins[i]
  with `right=True`); decreasing bins are mirrored. `method` is passed to
  `searchsorted`.

  >>> digitize(jnp.array([0.5, 1.5, 3.5]), jnp.array([1., 2., 3.]))
  DeviceArray([0, 1, 3], dtype=int32)
  """
  util.check_arraylike_or_list("digitize", x, bins)
  bins = util.to_array(bins)
  if util.ndim(bins) != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape "
                     f"{util.shape(bins)}")
  x = util.to_array(x)
  if util.shape(bins)[0] == 0:
    return structural.full(util.shape(x), np.array(0, np.int32))
  if _is_concrete(bins):
    b = _host(bins)
    d = np.diff(b)
    if not (np.all(d >= 0) or np.all(d <= 0)):
      raise ValueError("digitize: bins must be monotonically increasing or decreasing")
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  inc = sorting.searchsorted(bins, x, side=side, **kw)
  dec = ufuncs.subtract(np.array(util.shape(bins)[0], np.int32),
                        sorting.searchsorted(bins[::-1], x, side=side, **kw))
  return ufuncs.where(ufuncs.greater_equal(bins[-1], bins[0]), inc, dec)


# ---- histograms ----

def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """The edges of the bins `histogram` would use.

  Args:
    a: data (flattened).
    bins: the number of equal-width bins over `range`, or the edges themselves
      (a 1-D increasing array), or one of NumPy's estimator names ('auto',
      'sturges', ...: concrete data only).
    range: (lower, upper) of the bins; default (a.min(), a.max()).
    weights: accepted as NumPy does (no estimator here uses them).

  >>> histogram_bin_edges(jnp.array([0., 1., 4.]), bins=2)
  DeviceArray([0., 2., 4.], dtype=float32)
  """
  util.check_arraylike_or_list("histogram_bin_edges", a)
  a = util.to_array(a)
  if weights is not None and util.shape(weights) != util.shape(a):
    raise ValueError("histogram: weights should have the same shape as a.")
  a = util.reshape(a, (int(np.prod(util.shape(a), dtype=np.int64)),))
  dt = dtypes.to_inexact_dtype(util.dtype_of(a))
  if isinstance(bins, str):
    av = concrete_or_error(
        np.asarray, a, f"The error arose in jnp.histogram_bin_edges with bins={bins!r}: "
        "estimating the number of bins needs the data. Pass an int or explicit edges to "
        "use it under jit.")
    wv = None if weights is None else _host(weights).ravel()
    edges = np.histogram_bin_edges(av, bins, None if range is None else
                                   tuple(float(_host(r)) for r in range), wv)
    return creation.asarray(edges.astype(dt))
  if isinstance(bins, (list, tuple)) or (util.is_arraylike(bins) and util.ndim(bins) >= 1):
    b = util.to_array(bins)
    if util.ndim(b) != 1:
      raise ValueError(f"histogram: bins must be an int or a 1-D array, got shape "
                       f"{util.shape(b)}")
    if _is_concrete(b) and np.any(np.diff(_host(b)) < 0):
      raise ValueError("histogram: bins must increase monotonically, when an array")
    return b
  n = concrete_or_error(operator.index, bins, "The number of bins of jnp.histogram must be "
                        "static (an int or explicit edges).")
  if n < 1:
    raise ValueError("`bins` must be positive, when an integer")
  if range is None:
    lo = hi = None
    if util.shape(a)[0] == 0:
      lo, hi = np.array(0, dt), np.array(1, dt)
  else:
    if len(range) != 2:
      raise ValueError(f"histogram: range must be a pair (lower, upper), got {range!r}")
    lo, hi = (util.convert(util.to_operand(r), dt, False) for r in range)
    if _is_concrete(lo) and _is_concrete(hi):
      lv, hv = float(_host(lo)), float(_host(hi))
      if lv > hv:
        raise ValueError("max must be larger than min in range parameter.")
      if not (np.isfinite(lv) and np.isfinite(hv)):
        raise ValueError(f"supplied range of [{lv}, {hv}] is not finite")
  return _equal_edges(a, lo, hi, n, dt)


@inline_jit(static_argnames=("n", "dt"))
def _equal_edges(a, lo, hi, n, dt):
  """n + 1 equal-width edges over [lo, hi] (default: the range of `a`)."""
  if lo is None:
    lo = util.convert(reductions.min(a), dt, False)
    hi = util.convert(reductions.max(a), dt, False)
  # An empty range is widened by 0.5 on each side, as NumPy does.
  same = ufuncs.equal(lo, hi)
  lo = ufuncs.where(same, ufuncs.subtract(lo, util.convert(0.5, dt, False)), lo)
  hi = ufuncs.where(same, ufuncs.add(hi, util.convert(0.5, dt, False)), hi)
  return creation.linspace(lo, hi, n + 1, dtype=dt)


def _bin_index(edges, x):
  """Bin numbers 1..len(edges)-1 for `x` inside the edges; 0 below, len(edges) above (and
  NaN). The last bin is closed on the right."""
  nb = util.shape(edges)[0]
  idx = sorting.searchsorted(edges, x, side="right")
  return ufuncs.where(ufuncs.equal(x, edges[-1]), np.array(nb - 1, np.int32), idx)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """A histogram of `a` (flattened): the counts (or summed weights) and the bin edges.

  Args:
    a: data.
    bins, range: as in `histogram_bin_edges`; every bin is half-open [lo, hi)
      but the last, which includes its upper edge. Values outside are ignored.
    weights: optional weight per element of `a`.
    density: normalize the counts into a probability density.

  Counts are in `a`'s inexact dtype (as in JAX; NumPy counts in integers).

  >>> histogram(jnp.array([0., 1., 1., 3.]), bins=3)[0]
  DeviceArray([1., 2., 1.], dtype=float32)
  """
  util.check_arraylike_or_list("histogram", a)
  a = util.to_array(a)
  if weights is not None:
    util.check_arraylike_or_list("histogram", weights)
    if util.shape(weights) != util.shape(a):
      raise ValueError("histogram: weights should have the same shape as a.")
  a = util.reshape(a, (int(np.prod(util.shape(a), dtype=np.int64)),))
  if weights is not None:
    weights = util.reshape(util.to_array(weights), util.shape(a))
  edges = histogram_bin_edges(a, bins, range, weights)
  return _histogram(a, edges, weights, bool(density)), edges


@inline_jit(static_argnames=("density",))
def _histogram(a, edges, weights, density):
  a_in, edges_in = util.promote_dtypes_inexact(a, edges)
  if weights is None:
    w = structural.full(util.shape(a), np.array(1, util.dtype_of(a_in)))
  else:
    w, = util.promote_dtypes_inexact(weights)
  nb = util.shape(edges)[0]
  idx = _bin_index(edges_in, a_in)
  counts = _at(structural.full((nb + 1,), np.array(0, util.dtype_of(w))))[idx].add(w)
  counts = counts[1:-1]
  if density:
    widths = ufuncs.subtract(edges_in[1:], edges_in[:-1])
    counts = ufuncs.true_divide(ufuncs.true_divide(counts, widths), reductions.sum(counts))
  return counts


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
  """A D-dimensional histogram of N points: the counts and the list of D edge arrays.

  Args:
    sample: an (N, D) array, or a sequence of D arrays of N coordinates.
    bins: an int for every dimension, or a sequence of D ints or edge arrays.
    range: None, or a sequence of D (lower, upper) pairs (or Nones).
    weights: optional weight per point.
    density: normalize into a probability density.

  >>> histogramdd(jnp.array([[0., 0.], [1., 1.], [1., 0.]]), bins=2)[0]
  DeviceArray([[1., 0.],
               [1., 1.]], dtype=float32)
  """
  if isinstance(sample, (list, tuple)):
    util.check_arraylike_or_list("histogramdd", *sample)
    sample = shape_ops.stack([util.to_array(s) for s in sample], axis=1)
  util.check_arraylike_or_list("histogramdd", sample)
  sample = util.to_array(sample)
  if util.ndim(sample) == 1:
    sample = util.reshape(sample, (util.shape(sample)[0], 1))
  if util.ndim(sample) != 2:
    raise ValueError(f"histogramdd: sample must be an (N, D) array, got shape "
                     f"{util.shape(sample)}")
  n, d = util.shape(sample)
  if isinstance(bins, (list, tuple)) or (util.is_arraylike(bins) and util.ndim(bins) > 0):
    if len(bins) != d:
      raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    bins = list(bins)
  else:
    bins = [bins] * d
  if range is None:
    range = [None] * d
  elif len(range) != d:
    raise ValueError(f"histogramdd: range must have one entry per dimension ({d})")
  if weights is not None:
    util.check_arraylike_or_list("histogramdd", weights)
    if util.shape(weights) != (n,):
      raise ValueError(f"histogramdd: weights must have shape ({n},), got "
                       f"{util.shape(weights)}")
  sample, = util.promote_dtypes_inexact(sample)
  edges = [histogram_bin_edges(sample[:, i], bins[i], range[i]) for i in builtins.range(d)]
  w = None if weights is None else util.to_array(weights)
  return _histogramdd(sample, edges, w, bool(density)), edges


@inline_jit(static_argnames=("density",))
def _histogramdd(sample, edges, weights, density):
  n, d = util.shape(sample)
  sizes = [util.shape(e)[0] + 1 for e in edges]  # outlier bins at both ends
  flat = None
  stride = 1
  for i in reversed(builtins.range(d)):
    e, = util.promote_dtypes_inexact(edges[i])
    idx = _bin_index(util.convert(e, util.dtype_of(sample), False), sample[:, i])
    term = ufuncs.multiply(idx, np.array(stride, np.int32))
    flat = term if flat is None else ufuncs.add(flat, term)
    stride *= sizes[i]
  dt = util.dtype_of(sample)
  if weights is None:
    w = structural.full((n,), np.array(1, dt))
  else:
    w, = util.promote_dtypes_inexact(util.to_array(weights))
  hist = _at(structural.full((stride,), np.array(0, util.dtype_of(w))))[flat].add(w)
  hist = util.reshape(hist, tuple(sizes))
  hist = hist[tuple(slice(1, -1) for _ in builtins.range(d))]
  if density:
    total = reductions.sum(hist)
    for i, e in enumerate(edges):
      e, = util.promote_dtypes_inexact(e)
      shp = [1] * d
      shp[i] = util.shape(e)[0] - 1
      hist = ufuncs.true_divide(hist, util.reshape(ufuncs.subtract(e[1:], e[:-1]), shp))
    hist = ufuncs.true_divide(hist, total)
  return hist


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
  """A 2-D histogram of the points (x[i], y[i]): counts, x edges, y edges.

  `bins` is an int, a pair of ints or edge arrays, or one edge array for both
  axes; the other arguments are as in `histogramdd`.

  >>> histogram2d(jnp.array([0., 1., 2.]), jnp.array([1., 2., 3.]), bins=2)[0]
  DeviceArray([[1., 0.],
               [0., 2.]], dtype=float32)
  """
  util.check_arraylike_or_list("histogram2d", x, y)
  x, y = util.to_array(x), util.to_array(y)
  if util.ndim(x) != 1 or util.shape(x) != util.shape(y):
    raise ValueError(f"histogram2d: x and y must be 1-D of one length, got shapes "
                     f"{util.shape(x)} and {util.shape(y)}")
  if isinstance(bins, (list, tuple)) or (util.is_arraylike(bins) and util.ndim(bins) > 0):
    if len(bins) != 2:  # one edge array, shared by both axes
      bins = [bins, bins]
  hist, edges = histogramdd(shape_ops.stack(util.promote_dtypes(x, y), axis=1), bins, range,
                            weights, density)
  return hist, edges[0], edges[1]


# ---- interp ----

def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of the points (xp, fp) at `x`.

  Args:
    x: where to evaluate.
    xp: increasing 1-D sample positions (any order with `period`).
    fp: 1-D sample values (real or complex), as long as `xp`.
    left, right: the value below xp[0] / above xp[-1] (default fp[0] / fp[-1]),
      or 'extrapolate' to extend the first / last segment.
    period: the period of a periodic `xp` (then `left`/`right` are ignored).

  Differentiable in `x`, `xp` and `fp` (away from the sample points).

  >>> interp(jnp.array([0.5, 3.]), jnp.array([0., 1., 2.]), jnp.array([1., 2., 0.]))
  DeviceArray([1.5, 0. ], dtype=float32)
  """
  util.check_arraylike_or_list("interp", x, xp, fp)
  xp, fp = util.to_array(xp), util.to_array(fp)
  if util.ndim(xp) != 1 or util.ndim(fp) != 1:
    raise ValueError("interp: xp and fp must be 1-dimensional")
  if util.shape(xp)[0] != util.shape(fp)[0]:
    raise ValueError("fp and xp are not of the same length.")
  if util.shape(xp)[0] == 0:
    raise ValueError("interp: array of sample points is empty")
  for name, v in (("left", left), ("right", right)):
    if isinstance(v, str) and v != "extrapolate":
      raise ValueError(f"interp: {name} must be a value, None or 'extrapolate', got {v!r}")
  x, xp = util.promote_dtypes_inexact(x, xp)
  if dtypes.is_complex(util.dtype_of(xp)):
    raise TypeError("interp: x and xp must be real")
  fp, = util.promote_dtypes_inexact(fp)
  x, xp = util.to_array(x), util.to_array(xp)
  out_dt = dtypes.result_type(util.dtype_of(fp), util.dtype_of(x))
  fp = util.convert(fp, out_dt, False)
  if period is not None:
    util.check_arraylike("interp", period)
    if _is_concrete(period) and float(_host(period)) == 0:
      raise ValueError("period must be a non-zero value")
    period = util.convert(util.to_operand(period), util.dtype_of(xp), False)
    left = right = None
  # 'extrapolate' and None are static choices; values are traced arguments.
  left_mode = left if left is None or isinstance(left, str) else "value"
  right_mode = right if right is None or isinstance(right, str) else "value"
  left = util.convert(util.to_operand(left), out_dt, False) if left_mode == "value" else None
  right = util.convert(util.to_operand(right), out_dt, False) if right_mode == "value" \
      else None
  return _interp(x, xp, fp, left, right, period, left_mode, right_mode)


@inline_jit(static_argnames=("left_mode", "right_mode"))
def _interp(x, xp, fp, left, right, period, left_mode, right_mode):
  if period is not None:
    period = ufuncs.abs(period)
    x = ufuncs.remainder(x, period)
    xp = ufuncs.remainder(xp, period)
    order = sorting.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = shape_ops.concatenate([ufuncs.subtract(xp[-1:], period), xp,
                                ufuncs.add(xp[:1], period)])
    fp = shape_ops.concatenate([fp[-1:], fp, fp[:1]])
  m = util.shape(xp)[0]
  if m == 1:
    f = util.broadcast_to(fp[0], util.shape(x))
  else:
    i = ufuncs.clip(sorting.searchsorted(xp, x, side="right"), 1, m - 1)
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = ufuncs.subtract(x1, x0)
    flat = ufuncs.less_equal(ufuncs.abs(dx), util.convert(0, util.dtype_of(dx), False))
    safe_dx = ufuncs.where(flat, util.convert(1, util.dtype_of(dx), False), dx)
    slope = ufuncs.true_divide(ufuncs.subtract(f1, f0), safe_dx)
    f = ufuncs.where(flat, f1, ufuncs.add(f0, ufuncs.multiply(slope, ufuncs.subtract(x, x0))))
  if left_mode != "extrapolate":
    f = ufuncs.where(ufuncs.less(x, xp[0]), fp[0] if left is None else left, f)
  if right_mode != "extrapolate":
    f = ufuncs.where(ufuncs.greater(x, xp[-1]), fp[-1] if right is None else right, f)
  return f
