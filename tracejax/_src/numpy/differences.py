"""Discrete differences and integrals: diff, ediff1d and the trapezoidal rule."""
from tracejax._src.numpy import reductions, shape_ops, ufuncs, util


def diff(a, n=1, axis=-1, prepend=None, append=None):
  """The `n`-th discrete difference along `axis` (bools give `!=`, as in NumPy)."""
  a = util.to_array(a)
  n = util.concrete_int(n, "n argument of jnp.diff")
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if n == 0:
    return util.fresh_array(a)  # a jit in JAX: a new value
  nd = util.ndim(a)
  if nd == 0:
    raise ValueError("diff requires input that is at least one dimensional")
  axis = util.canonicalize_axis(axis, nd)
  def edge(v):
    v = util.to_array(v)
    if util.ndim(v) == 0:  # a scalar fills a slab of thickness one
      shape = list(util.shape(a))
      shape[axis] = 1
      v = util.broadcast_to(v, tuple(shape))
    return v

  if prepend is not None or append is not None:
    pieces = (([edge(prepend)] if prepend is not None else []) + [a]
              + ([edge(append)] if append is not None else []))
    a = shape_ops.concatenate(pieces, axis)
  for _ in range(n):
    m = util.shape(a)[axis]
    # Once the axis is empty it stays empty (n larger than the axis: JAX and
    # NumPy return a size-0 result, not an error).
    hi = shape_ops._slice_axis(a, axis, min(1, m), m)
    lo = shape_ops._slice_axis(a, axis, 0, max(m - 1, 0))
    a = ufuncs.not_equal(hi, lo) if util.dtype_of(a) == bool else ufuncs.subtract(hi, lo)
  return a


def ediff1d(ary, to_end=None, to_begin=None):
  """Differences between consecutive elements of the flattened array, with optional ends."""
  out = diff(shape_ops.ravel(ary))
  parts = []
  if to_begin is not None:
    parts.append(shape_ops.ravel(util.to_array(to_begin)))
  parts.append(out)
  if to_end is not None:
    parts.append(shape_ops.ravel(util.to_array(to_end)))
  return shape_ops.concatenate(parts) if len(parts) > 1 else out


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """The integral of `y` along `axis` by the trapezoidal rule."""
  y = util.to_array(y)
  y, = util.promote_dtypes_inexact(y)
  axis = util.canonicalize_axis(axis, util.ndim(y))
  if x is None:
    d = dx
  else:
    x = util.to_array(x)
    if util.ndim(x) == 1:
      d = diff(x)
      shape = [1] * util.ndim(y)
      shape[axis] = util.shape(d)[0]
      d = util.reshape(d, tuple(shape))
    else:
      d = diff(x, axis=axis)
  m = util.shape(y)[axis]
  avg = ufuncs.true_divide(ufuncs.add(shape_ops._slice_axis(y, axis, 1, m),
                                      shape_ops._slice_axis(y, axis, 0, max(m - 1, 0))), 2.0)
  return reductions.sum(ufuncs.multiply(d, avg), axis=axis)


trapz = trapezoid
