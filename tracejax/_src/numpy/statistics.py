"""Statistics on arrays: cov and corrcoef (sorting-based ones arrive with sort)."""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.numpy import products, reductions, shape_ops, ufuncs, util


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
  """The covariance matrix of the variables in `m` (rows, unless `rowvar` is False)."""
  if fweights is not None or aweights is not None:
    raise NotImplementedError("jnp.cov: fweights and aweights are not supported yet")
  m = util.to_array(m)
  if util.ndim(m) > 2:
    raise ValueError("m has more than 2 dimensions")
  m, = util.promote_dtypes_inexact(m)
  x = shape_ops.atleast_2d(m)
  if not rowvar and util.shape(x)[0] != 1:
    x = shape_ops.transpose(x)
  if util.shape(x)[0] == 0:
    return util.to_array(np.array([], dtypes.to_inexact_dtype(util.dtype_of(m))).reshape(0, 0))
  if y is not None:
    y, = util.promote_dtypes_inexact(util.to_array(y))
    y = shape_ops.atleast_2d(y)
    if not rowvar and util.shape(y)[0] != 1:
      y = shape_ops.transpose(y)
    x = shape_ops.concatenate(util.promote_dtypes(x, y), axis=0)
  if ddof is None:
    ddof = 0 if bias else 1
  n = util.shape(x)[1]
  x = ufuncs.subtract(x, reductions.mean(x, axis=1, keepdims=True))
  c = products.dot(x, ufuncs.conj(shape_ops.transpose(x)))
  c = ufuncs.true_divide(c, max(n - ddof, 0))
  return shape_ops.squeeze(c)


def corrcoef(x, y=None, rowvar=True):
  """Pearson correlation coefficients, clipped to [-1, 1]."""
  c = cov(x, y, rowvar)
  if util.ndim(c) == 0:
    return ufuncs.true_divide(c, c)
  d = products.diagonal(c)
  stddev = ufuncs.sqrt(ufuncs.real(d))
  c = ufuncs.true_divide(c, util.reshape(stddev, util.shape(stddev) + (1,)))
  c = ufuncs.true_divide(c, util.reshape(stddev, (1,) + util.shape(stddev)))
  if ufuncs.iscomplexobj(c):
    from tracejax._src.lax import elementwise as lax_ew
    return lax_ew.complex(ufuncs.clip(ufuncs.real(c), -1, 1), ufuncs.clip(ufuncs.imag(c), -1, 1))
  return ufuncs.clip(c, -1, 1)
