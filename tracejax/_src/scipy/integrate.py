"""`jax.scipy.integrate`: the trapezoidal rule, as `scipy.integrate.trapezoid`."""
import operator

from tracejax._src.numpy import util
import tracejax.numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integrate samples `y` along `axis` with the composite trapezoidal rule.

  Args:
    y: the samples (integers become the default float).
    x: the sample points: 1-D with y.shape[axis] entries, or an array that
      broadcasts against y. If None, the points are spaced `dx` apart.
    dx: the spacing when `x` is None.
    axis: the axis to integrate along.

  Returns:
    `sum((y[1:] + y[:-1]) / 2 * diff(x))` along `axis`: y with that axis removed.

  Example:
    >>> trapezoid(jnp.array([1., 2., 3.]), dx=0.5)
    Array(2., dtype=float32)
  """
  util.check_arraylike("trapezoid", y)
  if x is None:
    util.check_arraylike("trapezoid", dx)
    y, dx = util.promote_dtypes_inexact(util.to_array(y), dx)
    axis = util.canonicalize_axis(operator.index(axis), y.ndim)
    y = jnp.moveaxis(y, axis, -1)
    return dx * jnp.sum(y[..., 1:] + y[..., :-1], -1) / 2
  util.check_arraylike("trapezoid", x)
  y, x = util.promote_dtypes_inexact(util.to_array(y), util.to_array(x))
  axis = util.canonicalize_axis(operator.index(axis), y.ndim)
  y = jnp.moveaxis(y, axis, -1)
  if x.ndim == 1:
    if x.shape[0] != y.shape[-1]:
      raise ValueError(f"trapezoid: x has {x.shape[0]} points but y has {y.shape[-1]} along "
                       f"axis {axis}")
  else:
    x = jnp.moveaxis(x, util.canonicalize_axis(axis, x.ndim), -1)
  d = jnp.diff(x, axis=-1)
  return jnp.sum(d * (y[..., 1:] + y[..., :-1]), -1) / 2
