"""Order statistics and covariances: quantile, percentile, median (and their nan* forms),
cov and corrcoef.

Quantiles sort the reduced axes (merged into one) with `lax.sort`, whose NaNs go
last, and gather the two order statistics around the virtual index q * (n - 1);
everything is differentiable with respect to the data (through the sort's JVP
and the gather) and to `q` (through the interpolation weight). As in JAX, the
result is always inexact (NumPy keeps integer dtypes for 'lower', 'higher' and
'nearest'); 'nearest' rounds half-way indices to even, as NumPy does.
"""
import operator
import warnings

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.jit import inline_jit
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import sorting as lax_sort
from tracejax._src.numpy import indexing, products, reductions, shape_ops, ufuncs, util

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


# ---- quantiles ----

def _is_concrete(x):
  if util.is_array(x):
    return getattr(x, "to_concrete_value", lambda: x)() is not None
  return True


def _check_q(q, fun_name, scale):
  """NumPy's range check of `q`, when its value is known (it cannot be under jit)."""
  if not _is_concrete(q):
    return
  qv = np.asarray(concrete_or_error(None, util.to_operand(q)))
  if qv.dtype.kind == "c":
    raise TypeError(f"{fun_name}: q must be real, got {qv.dtype}")
  if qv.size and (np.any(qv < 0) or np.any(qv > scale)):
    what = "Percentiles" if scale == 100 else "Quantiles"
    raise ValueError(f"{fun_name}: {what} must be in the range [0, {scale}]")


def _quantile_front(fun_name, a, q, axis, out, overwrite_input, method, keepdims,
                    interpolation, nan, scale):
  """Checks shared by the six public functions, then the staged computation."""
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{fun_name} is not supported.")
  if overwrite_input:
    raise ValueError(f"jnp.{fun_name} does not support overwrite_input=True: arrays are "
                     "immutable.")
  if interpolation is not None:
    if method not in ("linear", interpolation):
      raise TypeError(f"jnp.{fun_name}: pass only one of 'method' and 'interpolation' "
                      "(the 2020 name of 'method').")
    method = interpolation
  if method not in _METHODS:
    raise ValueError(f"jnp.{fun_name}: method must be one of {_METHODS}, got {method!r}")
  util.check_arraylike_or_list(fun_name, a, q)
  a, q = util.to_array(a), util.to_operand(q)
  if dtypes.is_complex(util.dtype_of(a)) or dtypes.is_complex(util.dtype_of(q)):
    # JAX 0.10.2's ValueError and text, for the whole median/quantile family
    raise ValueError("quantile does not support complex input, as the operation is "
                     "poorly defined.")
  _check_q(q, fun_name, scale)
  if scale != 1:
    q, = util.promote_dtypes_inexact(q)
    q = ufuncs.true_divide(q, scale)
  nd = util.ndim(a)
  if nd == 0 and axis is None and keepdims:
    # JAX 0.10.2 reads a 0-d array as 1-d here: median(x, keepdims=True) has shape (1,).
    a = shape_ops.reshape(a, (1,))
  axes = None if axis is None else util.canonicalize_axes(
      tuple(axis) if isinstance(axis, list) else axis, nd)
  return _quantile(a, q, axes, method, bool(keepdims), nan)


def _lerp(lo, hi, t):
  """lo + (hi - lo) * t, computed from the nearer end (NumPy's formula: exact at t=0, 1)."""
  d = ufuncs.subtract(hi, lo)
  one = util.convert(1, util.dtype_of(t), False)
  return ufuncs.where(ufuncs.greater_equal(t, util.convert(0.5, util.dtype_of(t), False)),
                      ufuncs.subtract(hi, ufuncs.multiply(d, ufuncs.subtract(one, t))),
                      ufuncs.add(lo, ufuncs.multiply(d, t)))


@inline_jit(static_argnames=("axes", "method", "keepdims", "nan"))
def _quantile(a, q, axes, method, keepdims, nan):
  # The result has `a`'s type made inexact; `q` follows it (JAX: a float32 array
  # with a float64 q gives float32; an int32 array gives float32 with x64 on).
  a, = util.promote_dtypes_inexact(a)
  a = util.to_array(a)
  dt = util.dtype_of(a)
  q = util.convert(q, dt, False)
  shape = util.shape(a)
  dims = tuple(range(len(shape))) if axes is None else axes
  rest = tuple(d for d in range(len(shape)) if d not in dims)
  rest_shape = tuple(shape[d] for d in rest)
  n = int(np.prod([shape[d] for d in dims], dtype=np.int64))
  qshape = util.shape(q)
  out_rest = tuple(1 if d in dims else shape[d] for d in range(len(shape))) if keepdims \
      else rest_shape
  if n == 0:  # NumPy gives NaN (with a warning) for an empty reduction
    return util.to_array(np.full(qshape + out_rest, np.nan, dt))
  # The reduced axes, merged, become the last axis; q's axes go in front.
  x = shape_ops.transpose(a, rest + dims) if rest + dims != tuple(range(len(shape))) else a
  x = util.reshape(x, rest_shape + (n,))
  s = lax_sort.sort(x, dimension=len(rest_shape)) if n > 1 else x
  nq, nr = len(qshape), len(rest_shape)
  s = util.reshape(s, (1,) * nq + rest_shape + (n,))
  qb = util.reshape(q, qshape + (1,) * nr)
  if nan:
    count = reductions.sum(ufuncs.logical_not(ufuncs.isnan(x)), axis=-1, dtype=dt)
    last = ufuncs.subtract(count, util.convert(1, dt, False))
  else:
    last = util.convert(n - 1, dt, False)
  vi = ufuncs.multiply(qb, last)  # the virtual index, shape qshape + rest
  top = util.convert(n - 1, dt, False)
  zero = util.convert(0, dt, False)
  lo = ufuncs.clip(ufuncs.floor(vi), zero, top)
  hi = ufuncs.clip(ufuncs.ceil(vi), zero, top)
  idx_dt = np.dtype(np.int32)

  def at(i):
    i = util.convert(i, idx_dt, False)
    i = util.broadcast_to(i, qshape + rest_shape)
    return indexing.take_along_axis(s, i[..., None], axis=-1, mode="clip")[..., 0]

  if method == "nearest":
    res = at(ufuncs.clip(ufuncs.rint(vi), zero, top))
  elif method == "lower":
    res = at(lo)
  elif method == "higher":
    res = at(hi)
  elif method == "midpoint":
    # half of each end, as JAX's (lo + hi) / 2 (median's method there): its derivative
    # is 1/2 to each end even for an infinite cotangent, where the lerp's zero weight
    # would give inf * 0 = NaN (fuzzer seed 201).
    half = util.convert(0.5, dt, False)
    res = ufuncs.add(ufuncs.multiply(at(lo), half), ufuncs.multiply(at(hi), half))
  else:
    res = _lerp(at(lo), at(hi), ufuncs.subtract(vi, ufuncs.floor(vi)))
  if not nan and dtypes.is_floating(dt):
    # NumPy: a NaN anywhere in the slice makes its quantiles NaN.
    has_nan = reductions.any(ufuncs.isnan(x), axis=-1)
    res = ufuncs.where(has_nan, util.convert(np.nan, dt, False), res)
  return util.reshape(res, qshape + out_rest)


def _quantile_function(name, nan, scale, doc):
  """The public function `name` of the quantile family: NaNs ignored or not, q on a
  [0, `scale`] scale. The four share their signature and checks."""
  def fun(a, q, axis=None, out=None, overwrite_input=False, method="linear",
          keepdims=False, *, interpolation=None):
    return _quantile_front(name, a, q, axis, out, overwrite_input, method, keepdims,
                           interpolation, nan, scale)
  fun.__name__ = fun.__qualname__ = name
  fun.__doc__ = doc
  return fun


quantile = _quantile_function("quantile", False, 1, """\
The `q`-th quantiles of `a` over `axis` (q in [0, 1]; any shape, it leads the result).

  Args:
    a: array (integers and bools are averaged as floats).
    q: a quantile or an array of them, in [0, 1].
    axis: int, tuple of ints, or None (all axes).
    out: not supported (must be None).
    overwrite_input: must be False (arrays are immutable).
    method: 'linear' (default), 'lower', 'higher', 'midpoint' or 'nearest'.
    keepdims: keep the reduced axes with size 1.
    interpolation: the 2020 name of `method`.

  A NaN in a slice makes its quantiles NaN (see `nanquantile`).

  >>> quantile(jnp.array([1., 2., 3., 4.]), 0.5)
  DeviceArray(2.5, dtype=float32)
  """)

nanquantile = _quantile_function("nanquantile", True, 1, """\
`quantile` ignoring NaNs (NaN where a slice is all NaN).

  >>> nanquantile(jnp.array([1., nan, 3.]), 0.5)
  DeviceArray(2., dtype=float32)
  """)

percentile = _quantile_function("percentile", False, 100, """\
The `q`-th percentiles of `a` (q in [0, 100]); arguments as in `quantile`.

  >>> percentile(jnp.array([1., 2., 3., 4., 5.]), 25)
  DeviceArray(2., dtype=float32)
  """)

nanpercentile = _quantile_function("nanpercentile", True, 100, """\
`percentile` ignoring NaNs.

  >>> nanpercentile(jnp.array([1., nan, 3.]), 100)
  DeviceArray(3., dtype=float32)
  """)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median of `a` over `axis` (the mean of the two middle values for even counts).

  >>> median(jnp.array([[1, 3], [2, 8]]), axis=0)
  DeviceArray([1.5, 5.5], dtype=float32)
  """
  return _quantile_front("median", a, 0.5, axis, out, overwrite_input, "midpoint", keepdims,
                         None, False, 1)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """`median` ignoring NaNs.

  >>> nanmedian(jnp.array([1., nan, 3., 4.]))
  DeviceArray(3., dtype=float32)
  """
  return _quantile_front("nanmedian", a, 0.5, axis, out, overwrite_input, "midpoint", keepdims,
                         None, True, 1)


# ---- covariance ----

def _weights(name, w, n, integer):
  """A checked 1-D weight vector of length `n` (values checked when they are known)."""
  util.check_arraylike_or_list("cov", w)
  w = util.to_array(w)
  if util.ndim(w) > 1:
    raise ValueError(f"cov: cannot handle multidimensional {name}")
  if util.ndim(w) == 0 or util.shape(w)[0] != n:
    raise ValueError(f"cov: incompatible numbers of samples and {name}")
  if integer and not (dtypes.is_integer(util.dtype_of(w)) or util.dtype_of(w) == np.bool_):
    raise TypeError(f"cov: {name} must be integer, got {util.dtype_of(w)}")
  if _is_concrete(w) and np.any(np.asarray(concrete_or_error(None, w)) < 0):
    raise ValueError(f"cov: {name} cannot be negative")
  return w


def _variables(name, v, dt, rowvar):
  """`cov`'s argument `name` (m or y) as an inexact 2-D array, one variable per row."""
  v = util.to_array(v)
  if util.ndim(v) > 2:
    raise ValueError(f"cov: {name} has more than 2 dimensions")
  if dt is not None:
    v = util.convert(v, dt, False)
  v, = util.promote_dtypes_inexact(v)
  v = shape_ops.atleast_2d(v)
  if not rowvar and util.shape(v)[0] != 1:
    v = shape_ops.transpose(v)
  return v


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """The covariance matrix of the variables in `m` (and `y`), estimated from samples.

  Args:
    m: 1-D or 2-D array; each row is a variable and each column an observation
      (the other way round with `rowvar=False`).
    y: more variables, laid out like `m`, stacked below them.
    rowvar: whether rows (True) or columns are the variables.
    bias: normalize by N (True) rather than N - 1; overridden by `ddof`.
    ddof: normalize by N - ddof.
    fweights: integer frequency weights, one per observation.
    aweights: observation weights (relative importance), one per observation.
    dtype: the dtype of the computation (default: `m`'s, made inexact).

  Returns the matrix, squeezed (a scalar for one variable).

  >>> cov(jnp.array([[0., 1., 2.], [2., 1., 0.]]))
  DeviceArray([[ 1., -1.],
               [-1.,  1.]], dtype=float32)
  """
  util.check_arraylike_or_list("cov", m)
  dt = util.check_dtype(dtype, "cov")
  x = _variables("m", m, dt, rowvar)
  if util.shape(x)[0] == 0:
    return util.to_array(np.zeros((0, 0), util.dtype_of(x)))
  if y is not None:
    util.check_arraylike_or_list("cov", y)
    y = _variables("y", y, dt, rowvar)
    if util.shape(y)[1] != util.shape(x)[1]:
      raise ValueError(f"cov: m and y must have the same number of observations, got "
                       f"{util.shape(x)[1]} and {util.shape(y)[1]}")
    x = shape_ops.concatenate(util.promote_dtypes(x, y), axis=0)
  if ddof is None:
    ddof = 0 if bias else 1
  ddof = concrete_or_error(operator.index, ddof, "The ddof argument of jnp.cov.")
  n = util.shape(x)[1]
  cdt = util.dtype_of(x)
  rdt = dtypes.to_real_dtype(cdt)
  w = fw = aw = None
  if fweights is not None:
    fw = util.convert(_weights("fweights", fweights, n, True), rdt, False)
    w = fw
  if aweights is not None:
    aw = util.convert(_weights("aweights", aweights, n, False), rdt, False)
    w = aw if w is None else ufuncs.multiply(w, aw)
  return _cov(x, w, aw, ddof)


@inline_jit(static_argnames=("ddof",))
def _cov(x, w, aw, ddof):
  n = util.shape(x)[1]
  if w is None:
    avg = reductions.mean(x, axis=1, keepdims=True)
    fact = util.convert(n - ddof, dtypes.to_real_dtype(util.dtype_of(x)), False)
  else:
    w_sum = reductions.sum(w)
    avg = ufuncs.true_divide(reductions.sum(ufuncs.multiply(x, w), axis=1, keepdims=True),
                             w_sum)
    if ddof == 0:
      fact = w_sum
    elif aw is None:
      fact = ufuncs.subtract(w_sum, ddof)
    else:
      fact = ufuncs.subtract(w_sum, ufuncs.true_divide(
          ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aw))), w_sum))
  # NumPy warns and divides by zero when the degrees of freedom run out.
  fact = ufuncs.maximum(fact, util.convert(0, util.dtype_of(fact), False))
  xc = ufuncs.subtract(x, avg)
  xw = xc if w is None else ufuncs.multiply(xc, w)
  c = products.dot(xc, ufuncs.conj(shape_ops.transpose(xw)))
  c = ufuncs.true_divide(c, fact)
  return shape_ops.squeeze(c)


_NoValue = object()


def corrcoef(x, y=None, rowvar=True, bias=_NoValue, ddof=_NoValue, *, dtype=None):
  """Pearson correlation coefficients of the variables in `x` (and `y`), in [-1, 1].

  Args:
    x, y, rowvar, dtype: as in `cov`.
    bias, ddof: deprecated by NumPy, without effect (they cancel out).

  >>> corrcoef(jnp.array([[0., 1., 2.], [2., 1., 0.]]))
  DeviceArray([[ 1., -1.],
               [-1.,  1.]], dtype=float32)
  """
  if bias is not _NoValue or ddof is not _NoValue:
    warnings.warn("bias and ddof have no effect and are deprecated", DeprecationWarning,
                  stacklevel=util.user_stacklevel())
  c = cov(x, y, rowvar, dtype=dtype)
  return _corrcoef(c)


@inline_jit
def _corrcoef(c):
  if util.ndim(c) == 0:
    return ufuncs.true_divide(c, c)
  d = products.diagonal(c)
  stddev = ufuncs.sqrt(ufuncs.real(d))
  c = ufuncs.true_divide(c, util.reshape(stddev, util.shape(stddev) + (1,)))
  c = ufuncs.true_divide(c, util.reshape(stddev, (1,) + util.shape(stddev)))
  if dtypes.is_complex(util.dtype_of(c)):
    return lax_ew.complex(ufuncs.clip(ufuncs.real(c), -1, 1),
                          ufuncs.clip(ufuncs.imag(c), -1, 1))
  return ufuncs.clip(c, -1, 1)
