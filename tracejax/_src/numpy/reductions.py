"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax, argmin, cumsum...

`axis` may be None (all axes), an int (negative allowed) or a tuple; results
keep reduced axes as size 1 with `keepdims=True`. As in JAX, sums and
products of bools and small integers accumulate in the default integer type,
and float16/bfloat16 sums are computed in float32.
"""
import builtins

import functools

import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import reductions as lax_red
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural
from tracejax._src.numpy import creation, ufuncs, util

_low_precision = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _promote_integer(dt):
  """Bools and integers narrower than the default accumulate in the default int type."""
  if dt == np.bool_:
    return dtypes.default_int_dtype()
  if dtypes.is_unsigned(dt) and dt.itemsize < dtypes.default_uint_dtype().itemsize:
    return dtypes.default_uint_dtype()
  if dtypes.is_signed(dt) and dt.itemsize < dtypes.default_int_dtype().itemsize:
    return dtypes.default_int_dtype()
  return dt


def _keepdims_shape(in_shape, dims):
  return tuple(1 if i in dims else d for i, d in enumerate(in_shape))


def _prepare(name, a, axis):
  util.check_arraylike_or_list(name, a)
  a = util.to_array(a)
  if util.ndim(a) == 0 and axis is not None and axis != ():
    # JAX 0.10.2: a 0-d array has no axis 0 either (fuzzer seed 202: jnp.max(x_0d, axis=0)
    # reached an IndexError here)
    ax = axis[0] if isinstance(axis, (tuple, list)) else axis
    raise ValueError(f"axis {ax} is out of bounds for array of dimension 0")
  return a, util.canonicalize_axes(axis, util.ndim(a))


def _reduce(name, a, axis, dtype, keepdims, lax_fn, *, bool_fn=None, promote_integers=False,
            upcast_f16=False, identity=None, initial=None, where=None, combine=None):
  """The shared skeleton of the monoid reductions (sum, prod, max, min, all, any).

  `upcast_f16`: float16/bfloat16 accumulate in float32 (as JAX's sum and prod do when
  no dtype is given; an explicit float16 dtype accumulates in float16)."""
  a, dims = _prepare(name, a, axis)
  in_shape = util.shape(a)
  dt = util.check_dtype(dtype, name)
  if dt is None:
    dt = util.dtype_of(a)
    if promote_integers:
      dt = _promote_integer(dt)
  comp = np.dtype(np.float32) if upcast_f16 and dt in _low_precision else dt
  a = util.convert(a, comp, False)  # reductions of weakly typed values are strong, as in JAX
  if where is not None:
    if identity is None:
      raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                       "where mask one has to specify 'initial'")
    a = ufuncs.where(where, a, util.convert(identity, comp, False))
  if identity is None and initial is None and builtins.any(in_shape[d] == 0 for d in dims):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  fn = bool_fn if (bool_fn is not None and comp == np.bool_) else lax_fn
  # (0-d: never the NumPy input.) max/min reduce even over no axes, as in JAX: their
  # derivative is NaN where the value is NaN (fuzzer seed 201: jvp of min(nan) is nan).
  chooser = fn in (lax_red.reduce_max, lax_red.reduce_min)
  out = fn(a, dims) if dims or chooser else util.fresh_array(a)
  if initial is not None:
    out = combine(out, util.convert(initial, comp, False))
  out = util.convert(out, dt, False) if util.dtype_of(out) != dt else out
  if keepdims:
    out = util.reshape(out, _keepdims_shape(in_shape, dims))
  return out


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
  """Sum of array elements over `axis` (all axes by default)."""
  _no_out(out, "sum")
  return _reduce("sum", a, axis, dtype, keepdims, lax_red.reduce_sum,
                 bool_fn=lax_red.reduce_or, promote_integers=promote_integers,
                 upcast_f16=dtype is None, identity=0, initial=initial, where=where,
                 combine=ufuncs.add)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of array elements over `axis`."""
  _no_out(out, "prod")
  return _reduce("prod", a, axis, dtype, keepdims, lax_red.reduce_prod,
                 bool_fn=lax_red.reduce_and, promote_integers=promote_integers,
                 upcast_f16=dtype is None, identity=1, initial=initial, where=where,
                 combine=ufuncs.multiply)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum over `axis` (NaNs propagate)."""
  _no_out(out, "max")
  return _reduce("max", a, axis, None, keepdims, lax_red.reduce_max,
                 bool_fn=lax_red.reduce_or, initial=initial, where=where,
                 identity=None if where is None else initial, combine=ufuncs.maximum)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum over `axis` (NaNs propagate)."""
  _no_out(out, "min")
  return _reduce("min", a, axis, None, keepdims, lax_red.reduce_min,
                 bool_fn=lax_red.reduce_and, initial=initial, where=where,
                 identity=None if where is None else initial, combine=ufuncs.minimum)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
  """True if all elements along `axis` are nonzero."""
  _no_out(out, "all")
  a = ufuncs._to_bool(util.to_array(a))
  return _reduce("all", a, axis, None, keepdims, lax_red.reduce_and, identity=True,
                 where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
  """True if any element along `axis` is nonzero."""
  _no_out(out, "any")
  a = ufuncs._to_bool(util.to_array(a))
  return _reduce("any", a, axis, None, keepdims, lax_red.reduce_or, identity=False,
                 where=where)


alltrue, sometrue, product = all, any, prod


def _no_out(out, name):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def _count(a, dims, where):
  """The number of elements reduced over `dims` (a Python int unless masked)."""
  shp = util.shape(a)
  if where is None:
    return int(np.prod([shp[d] for d in dims], dtype=np.int64))
  mask = util.broadcast_to(util.to_array(where), shp)
  return sum(mask, axis=dims, keepdims=True, dtype=dtypes.default_int_dtype())


def _check_axis_lengths(name, a, axis):
  """mean, var and argmax/argmin look the reduced axes' lengths up first in JAX, so an
  out-of-bounds axis (also axis 0 of a 0-d array) is an IndexError there, where the
  other reductions raise ValueError."""
  if axis is None:
    return
  nd = util.ndim(a)
  for ax in axis if isinstance(axis, (tuple, list)) else (axis,):
    try:
      i = operator.index(ax)
    except TypeError:
      continue  # (canonicalize_axis names the bad axis)
    if not -nd <= i < nd:
      raise IndexError(f"{name}: axis {i} is out of bounds for array of dimension {nd}")


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean over `axis` (integers average to floats)."""
  _no_out(out, "mean")
  _check_axis_lengths("mean", a, axis)
  a, dims = _prepare("mean", a, axis)
  dt = util.check_dtype(dtype, "mean") or dtypes.to_inexact_dtype(util.dtype_of(a))
  comp = np.dtype(np.float32) if dtype is None and dt in _low_precision else dt
  total = sum(a, dims, dtype=comp, keepdims=True, where=where)
  n = _count(a, dims, where)
  out = ufuncs.true_divide(total, util.convert(n, comp, False))
  out = util.convert(out, dt, False)
  return out if keepdims else util.reshape(out, _drop_dims(util.shape(out), dims))


def _drop_dims(shape, dims):
  return tuple(d for i, d in enumerate(shape) if i not in dims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """Variance over `axis`, normalized by N - ddof (complex inputs give real variances)."""
  _no_out(out, "var")
  if correction is not None:
    ddof = correction
  _check_axis_lengths("var", a, axis)
  a, dims = _prepare("var", a, axis)
  a_dt = util.dtype_of(a)
  comp = dtypes.to_inexact_dtype(a_dt)
  if comp in _low_precision:
    comp = np.dtype(np.float32)
  dt = util.check_dtype(dtype, "var") or dtypes.to_real_dtype(dtypes.to_inexact_dtype(a_dt))
  a = util.convert(a, comp, False)
  centered = ufuncs.subtract(a, mean(a, dims, keepdims=True, where=where))
  if dtypes.is_complex(comp):
    centered = lax_ew.real(lax_ew.mul(centered, lax_ew.conj(centered)))
  else:
    centered = lax_ew.mul(centered, centered)
  total = sum(centered, dims, keepdims=True, where=where)
  n = _count(a, dims, where)  # an int, or a keepdims array of counts under a mask
  real_comp = util.dtype_of(total)
  normalizer = (util.convert(n - ddof, real_comp, False) if type(n) is int
                else util.convert(ufuncs.subtract(n, ddof), real_comp, False))
  quotient = ufuncs.true_divide(total, normalizer)
  if type(n) is not int or n - ddof <= 0:
    # JAX 0.10.2: NaN where N - ddof <= 0 (var of an empty array with ddof=1 is NaN,
    # not 0 / -1 = -0; var([1, 2], ddof=2) is NaN, not inf).
    quotient = ufuncs.where(ufuncs.greater(normalizer, 0), quotient,
                            util.convert(np.nan, util.dtype_of(quotient), False))
  out = util.convert(quotient, dt, False)
  return out if keepdims else util.reshape(out, _drop_dims(util.shape(out), dims))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """Standard deviation over `axis`: sqrt(var(...))."""
  _no_out(out, "std")
  return ufuncs.sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where,
                         correction=correction))


def _arg_reduce(name, lax_fn, a, axis, keepdims):
  util.check_arraylike_or_list(name, a)
  a = util.to_array(a)
  if axis is None:
    shp = util.shape(a)
    a = util.reshape(a, (int(np.prod(shp, dtype=np.int64)),))
    ax = 0
  else:
    shp = util.shape(a)
    _check_axis_lengths(name, a, axis)
    ax = util.canonicalize_axis(axis, util.ndim(a))
  if util.shape(a)[ax] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  out = lax_fn(a, ax, dtypes.default_int_dtype())
  if keepdims:
    out = util.reshape(out, (1,) * len(shp) if axis is None else _keepdims_shape(shp, (ax,)))
  return out


def argmax(a, axis=None, out=None, keepdims=False):
  """Indices of the maximum values along `axis` (of the flattened array if None)."""
  _no_out(out, "argmax")
  return _arg_reduce("argmax", lax_red.argmax, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
  """Indices of the minimum values along `axis` (of the flattened array if None)."""
  _no_out(out, "argmin")
  return _arg_reduce("argmin", lax_red.argmin, a, axis, keepdims)


def count_nonzero(a, axis=None, keepdims=False):
  """The number of nonzero elements along `axis`."""
  a = util.to_array(a)
  return sum(ufuncs.not_equal(a, util.convert(0, util.dtype_of(a), False)), axis=axis,
             dtype=dtypes.default_int_dtype(), keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
  """Range of values (max - min) along `axis`."""
  _no_out(out, "ptp")
  return ufuncs.subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted average along `axis` (`mean` when there are no weights)."""
  if weights is None:
    avg = mean(a, axis, keepdims=keepdims)
    if not returned:
      return avg
    from tracejax._src.numpy import creation
    a = util.to_array(a)
    count = _count(a, util.canonicalize_axes(axis, util.ndim(a)), None)
    return avg, creation.full(util.shape(avg), count, util.dtype_of(avg))
  a, weights = util.promote_dtypes_inexact(a, weights)
  a, weights = util.to_array(a), util.to_array(weights)
  if util.shape(a) != util.shape(weights):
    if axis is None or util.ndim(weights) != 1:
      raise ValueError("Axis must be specified when shapes of a and weights differ, and "
                       "1-D weights then.")
    ax = util.canonicalize_axis(axis, util.ndim(a))
    if util.shape(weights)[0] != util.shape(a)[ax]:
      raise ValueError("Length of weights not compatible with specified axis.")
    shp = [1] * util.ndim(a)
    shp[ax] = util.shape(weights)[0]
    weights = util.broadcast_to(util.reshape(weights, shp), util.shape(a))
  wsum = sum(weights, axis, keepdims=keepdims)
  avg = ufuncs.true_divide(sum(ufuncs.multiply(a, weights), axis, keepdims=keepdims), wsum)
  return (avg, wsum) if returned else avg


# ---- NaN-ignoring reductions ----

def _nan_replaced(a, value):
  a = util.to_array(a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    return a
  # The fill keeps `a`'s weak type so nancumsum(1.5, axis=0) is still the weak 0-d
  # value that the cumulative reductions treat as a vector (as JAX, which fills after).
  fill = util.convert(value, util.dtype_of(a), util.is_weak(a))
  return ufuncs.where(ufuncs.isnan(a), fill, a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False):
  """Sum treating NaNs as zero."""
  return sum(_nan_replaced(a, 0), axis, dtype, out, keepdims)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False):
  """Product treating NaNs as one."""
  return prod(_nan_replaced(a, 1), axis, dtype, out, keepdims)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum ignoring NaNs (NaN where a slice is all NaN, unless `initial` is given).

  Args:
    a: the array; axis, keepdims: as in `max`.
    initial: a value that takes part in every slice's max (as in `max`); with it, a
      slice with no numbers gives `initial`.
    where: only these elements take part (then `initial` is required, as in `max`).

  >>> nanmax(jnp.array([jnp.nan, 2., 1.]))
  DeviceArray(2., dtype=float32)
  """
  a = util.to_array(a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    return max(a, axis, out, keepdims, initial=initial, where=where)
  out_ = max(_nan_replaced(a, -np.inf), axis, out, keepdims, initial=initial, where=where)
  if initial is not None:
    return out_
  all_nan = all(ufuncs.isnan(a), axis, keepdims=keepdims)
  return ufuncs.where(all_nan, util.convert(np.nan, util.dtype_of(a), False), out_)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum ignoring NaNs (NaN where a slice is all NaN, unless `initial` is given).

  Args:
    a: the array; axis, keepdims: as in `min`.
    initial: a value that takes part in every slice's min (as in `min`); with it, a
      slice with no numbers gives `initial`.
    where: only these elements take part (then `initial` is required, as in `min`).

  >>> nanmin(jnp.array([jnp.nan, 2., 1.]))
  DeviceArray(1., dtype=float32)
  """
  a = util.to_array(a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    return min(a, axis, out, keepdims, initial=initial, where=where)
  out_ = min(_nan_replaced(a, np.inf), axis, out, keepdims, initial=initial, where=where)
  if initial is not None:
    return out_
  all_nan = all(ufuncs.isnan(a), axis, keepdims=keepdims)
  return ufuncs.where(all_nan, util.convert(np.nan, util.dtype_of(a), False), out_)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
  """Mean over the non-NaN elements."""
  _no_out(out, "nanmean")
  a = util.to_array(a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    return mean(a, axis, dtype, None, keepdims)
  dt = util.check_dtype(dtype, "nanmean") or util.dtype_of(a)
  total = nansum(a, axis, dtype=dt, keepdims=keepdims)
  count = sum(ufuncs.logical_not(ufuncs.isnan(a)), axis, dtype=dt, keepdims=keepdims)
  return ufuncs.true_divide(total, count)


# ---- cumulative reductions ----

def _cumulative(name, a, axis, dtype, op, identity, promote_bool):
  """A prefix scan along one axis in log2(n) shifted combines (Hillis-Steele).

  Unlike `sum`, integers keep their dtype (as in JAX); bools count in the
  default integer type for cumsum and cumprod.
  """
  util.check_arraylike_or_list(name, a)
  a = util.to_array(a)
  if axis is None or (util.ndim(a) == 0 and util.is_weak(a)):
    # JAX flattens when axis is None, and also treats a weakly typed 0-d value (a
    # Python int/float/complex, or a tracer of one) as a 1-element vector, so
    # cumsum(1.5, axis=0) is [1.5]. A strong 0-d array (np.float32, a Python bool)
    # keeps its 0 dimensions and any axis is out of bounds.
    a = util.reshape(a, (int(np.prod(util.shape(a), dtype=np.int64)),))
    if axis is None:
      axis = 0
  elif util.ndim(a) == 0:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
  axis = util.canonicalize_axis(axis, util.ndim(a))
  dt = util.check_dtype(dtype, name)
  if dt is None:
    dt = util.dtype_of(a)
    if dt == np.bool_ and promote_bool:
      dt = dtypes.default_int_dtype()
  a = util.convert(a, dt, False)
  if type(getattr(a, "aval", None)).__name__ == "ShardedShapedArray":
    # Sharding in types: lax's cumulative rule (the scan axis must be unsplit).
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above
    sharding_explicit.check_cumulative_axis(a.aval, axis)
  shp = util.shape(a)
  n = shp[axis]
  if dt != np.bool_ and op in (ufuncs.add, ufuncs.multiply):
    # lax.cumsum/cumprod (one reduce_window), as JAX's jnp does: float16 steps round
    # (and overflow) as in JAX, where fused shifted combines kept float32 intermediates
    # (fuzzer seed 204: cumprod of float16 gave 5.4e4 where JAX gives inf).
    from tracejax._src.lax import windowed as lax_windowed
    fn = lax_windowed.cumsum if op is ufuncs.add else lax_windowed.cumprod
    return util.fresh_array(fn(a, axis))
  shift = 1
  while shift < n:
    pad_shape = list(shp)
    pad_shape[axis] = shift
    pad = creation.full(pad_shape, identity(dt), dt)
    start, limit = [0] * len(shp), list(shp)
    limit[axis] = n - shift
    head = lax_slicing.slice(a, tuple(start), tuple(limit), None)
    a = op(a, structural.concatenate([pad, head], axis))
    shift *= 2
  return util.fresh_array(a)  # n <= 1: no NumPy input handed back out of vmap/jvp


def _sum_identity(dt):
  return False if dt == np.bool_ else 0


def _prod_identity(dt):
  return True if dt == np.bool_ else 1


def _max_identity(dt):
  if dtypes.is_floating(dt):
    return -np.inf
  if dt == np.bool_:
    return False
  return dtypes.iinfo(dt).min


def _min_identity(dt):
  if dtypes.is_floating(dt):
    return np.inf
  if dt == np.bool_:
    return True
  return dtypes.iinfo(dt).max


def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along `axis` (of the flattened array if None)."""
  _no_out(out, "cumsum")
  return _cumulative("cumsum", a, axis, dtype, ufuncs.add, _sum_identity, True)


def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along `axis` (of the flattened array if None)."""
  _no_out(out, "cumprod")
  return _cumulative("cumprod", a, axis, dtype, ufuncs.multiply, _prod_identity, True)


def cummax(a, axis=None, dtype=None):
  """Cumulative maximum along `axis`."""
  return _cumulative("cummax", a, axis, dtype, ufuncs.maximum, _max_identity, False)


def cummin(a, axis=None, dtype=None):
  """Cumulative minimum along `axis`."""
  return _cumulative("cummin", a, axis, dtype, ufuncs.minimum, _min_identity, False)


def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum treating NaNs as zero."""
  return cumsum(_nan_replaced(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product treating NaNs as one."""
  return cumprod(_nan_replaced(a, 1), axis, dtype, out)


def _cumulative_api(name, x, axis, dtype, include_initial, fn, identity, what,
                    promote_ints):
  """The array API's cumulative_sum/prod: axis required above 1-D, optional leading
  identity. With no dtype, cumulative_sum accumulates small integers in the default
  (u)int type, as `sum` does, but cumulative_prod keeps them (JAX 0.10.2: uint16 in,
  uint16 out); bools become the default int in both."""
  util.check_arraylike(name, x)
  x = util.to_array(x)
  nd = util.ndim(x)
  if nd == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however "
                     "a scalar value or scalar array was given.")
  if axis is None:
    if nd > 1:
      raise ValueError(f"The input array has rank {nd}, however axis was not set to an "
                       "explicit value. The axis argument is only optional for "
                       "one-dimensional arrays.")
    axis = 0
  axis = util.canonicalize_axis(axis, nd)
  dt = util.check_dtype(dtype, name)
  if dt is None:
    dt = util.dtype_of(x)
    if promote_ints or dt == np.bool_:
      dt = _promote_integer(dt)
  out = fn(util.convert(x, dt, False), axis=axis, dtype=dt)
  if include_initial:
    shp = list(util.shape(out))
    shp[axis] = 1
    out = structural.concatenate([creation.full(shp, identity(dt), dt), out], axis)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative sum along `axis` (the array API's cumsum).

  Args:
    x: array with at least one dimension.
    axis: required when `x` has more than one dimension.
    dtype: accumulation and result dtype (default: as `sum`, so small integers and
      bools accumulate in the default integer type).
    include_initial: start the result with the sum of nothing (a zero), making the
      axis one longer.

  >>> cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)
  DeviceArray([0, 1, 3, 6], dtype=int32)
  """
  return _cumulative_api("cumulative_sum", x, axis, dtype, include_initial, cumsum,
                         _sum_identity, "sum", True)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative product along `axis` (the array API's cumprod).

  Args:
    x: array with at least one dimension.
    axis: required when `x` has more than one dimension.
    dtype: accumulation and result dtype (default: the input's; bools count in the
      default integer type).
    include_initial: start the result with the empty product (a one).

  >>> cumulative_prod(jnp.array([1, 2, 3]))
  DeviceArray([1, 2, 6], dtype=int32)
  """
  return _cumulative_api("cumulative_prod", x, axis, dtype, include_initial, cumprod,
                         _prod_identity, "product", False)


cumproduct = cumprod


# ---- NaN-ignoring arg-reductions and moments ----

def _nan_arg_reduce(name, arg_fn, fill, a, axis, keepdims):
  util.check_arraylike_or_list(name, a)
  a = util.to_array(a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    return arg_fn(a, axis, keepdims=bool(keepdims))
  nan_mask = ufuncs.isnan(a)
  res = arg_fn(ufuncs.where(nan_mask, util.convert(fill, util.dtype_of(a), False), a), axis,
               keepdims=bool(keepdims))
  # All-NaN slices have no answer; JAX returns -1 there instead of raising.
  all_nan = all(nan_mask, axis, keepdims=bool(keepdims))
  return ufuncs.where(all_nan, util.convert(-1, util.dtype_of(res), False), res)


def nanargmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum along `axis`, ignoring NaNs (-1 where a slice is all NaN).

  >>> nanargmax(jnp.array([jnp.nan, 2., 1.]))
  DeviceArray(1, dtype=int32)
  """
  _no_out(out, "nanargmax")
  return _nan_arg_reduce("nanargmax", argmax, -np.inf, a, axis, keepdims)


def nanargmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum along `axis`, ignoring NaNs (-1 where a slice is all NaN).

  >>> nanargmin(jnp.array([jnp.nan, 2., 1.]))
  DeviceArray(2, dtype=int32)
  """
  _no_out(out, "nanargmin")
  return _nan_arg_reduce("nanargmin", argmin, np.inf, a, axis, keepdims)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """Variance over `axis` of the non-NaN elements, normalized by (count - ddof).

  Args:
    a: array; axis, dtype, ddof, keepdims: as in `var`.
    where: only these elements take part (besides skipping NaNs).
    mean: a precomputed mean (broadcastable with keepdims=True), used instead of
      the NaN-ignoring mean.

  Slices with count <= ddof give NaN.

  >>> nanvar(jnp.array([1., jnp.nan, 3.]))
  DeviceArray(1., dtype=float32)
  """
  _no_out(out, "nanvar")
  a, dims = _prepare("nanvar", a, axis)
  a_dt = util.dtype_of(a)
  comp = dtypes.to_inexact_dtype(a_dt)
  if comp in _low_precision:
    comp = np.dtype(np.float32)
  dt = util.check_dtype(dtype, "nanvar") or dtypes.to_real_dtype(dtypes.to_inexact_dtype(a_dt))
  a = util.convert(a, comp, False)
  mask = ufuncs.logical_not(ufuncs.isnan(a))
  if where is not None:
    mask = ufuncs.logical_and(mask, where)
  zero = util.convert(0, comp, False)
  # where(skip, 0, value) rather than where(keep, value, 0): on an empty array
  # jnp.where returns its `x`, so (as in JAX) the skipped-zero branch carries the
  # tangent, a symbolic zero (jvp of nanstd([]) is 0, not nan).
  skip = ufuncs.logical_not(mask)
  if mean is None:
    m = ufuncs.true_divide(
        sum(ufuncs.where(skip, zero, a), dims, keepdims=True),
        util.convert(sum(mask, dims, keepdims=True), dtypes.to_real_dtype(comp), False))
  else:
    m = util.convert(util.to_array(mean), comp, False)
  centered = ufuncs.where(skip, zero, ufuncs.subtract(a, m))
  if dtypes.is_complex(comp):
    sq = lax_ew.real(lax_ew.mul(centered, lax_ew.conj(centered)))
  else:
    sq = lax_ew.mul(centered, centered)
  total = sum(sq, dims, keepdims=True)
  real_comp = util.dtype_of(total)
  normalizer = ufuncs.subtract(util.convert(sum(mask, dims, keepdims=True), real_comp, False),
                               util.convert(ddof, real_comp, False))
  res = ufuncs.where(ufuncs.greater(normalizer, 0), ufuncs.true_divide(total, normalizer),
                     util.convert(np.nan, real_comp, False))
  res = util.convert(res, dt, False)
  return res if keepdims else util.reshape(res, _drop_dims(util.shape(res), dims))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """Standard deviation over `axis` of the non-NaN elements: sqrt(nanvar(...)).

  >>> nanstd(jnp.array([1., jnp.nan, 3.]))
  DeviceArray(1., dtype=float32)
  """
  _no_out(out, "nanstd")
  return ufuncs.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean))


# ---- eager dispatch ----
# The common reductions are inline jits (as JAX's are): eagerly, one C++ dispatch
# of one compiled program per signature; under a transformation, inlined.

def _axis_list_as_tuple(fun):
  """`fun` taking `axis=[...]` as `axis=(...)`: JAX accepts a list of axes, but the
  inline jit needs hashable static arguments. `axis` is the second parameter."""
  @functools.wraps(fun)
  def reduction(a, *args, **kwargs):
    if args and isinstance(args[0], list):
      args = (tuple(args[0]),) + args[1:]
    if isinstance(kwargs.get("axis"), list):
      kwargs["axis"] = tuple(kwargs["axis"])
    return fun(a, *args, **kwargs)
  return reduction


def _eager_jit_reductions(namespace):
  from tracejax._src.jit import inline_jit
  statics = {
      "sum": ("axis", "dtype", "out", "keepdims", "promote_integers"),
      "prod": ("axis", "dtype", "out", "keepdims", "promote_integers"),
      "max": ("axis", "out", "keepdims"), "min": ("axis", "out", "keepdims"),
      "all": ("axis", "out", "keepdims"), "any": ("axis", "out", "keepdims"),
      "mean": ("axis", "dtype", "out", "keepdims"),
      "var": ("axis", "dtype", "out", "ddof", "keepdims", "correction"),
      "std": ("axis", "dtype", "out", "ddof", "keepdims", "correction"),
      "argmax": ("axis", "out", "keepdims"), "argmin": ("axis", "out", "keepdims"),
  }
  for name, static in statics.items():
    namespace[name] = _axis_list_as_tuple(inline_jit(namespace[name], static_argnames=static))
  namespace["amax"], namespace["amin"] = namespace["max"], namespace["min"]
  namespace["alltrue"], namespace["sometrue"] = namespace["all"], namespace["any"]
  namespace["product"] = namespace["prod"]


_eager_jit_reductions(globals())
