"""Descriptive statistics of `jax.scipy.stats`: `rankdata`, `mode`, `sem`.

All three work along one axis with static shapes: they sort, then find the runs of
equal values with cumulative max/min scans instead of data-dependent sizes, so they
jit and vmap.
"""
from typing import NamedTuple

import numpy as np


def _jnp():
  import tracejax.numpy as jnp
  return jnp


class ModeResult(NamedTuple):
  """`(mode, count)`, as SciPy's ModeResult."""
  mode: object
  count: object


def _check_nan_policy(nan_policy, name, allowed=("propagate",)):
  if nan_policy not in ("propagate", "omit", "raise"):
    raise ValueError(f"{name}: nan_policy must be 'propagate', 'omit' or 'raise', got "
                     f"{nan_policy!r}")
  if nan_policy not in allowed:
    raise NotImplementedError(f"{name}: nan_policy={nan_policy!r} is not supported "
                              f"(supported: {', '.join(allowed)})")


def _run_bounds(sorted_vals):
  """For each position of a sorted last axis: the index of the first and of the last
  element of its run of equal values (NaNs form one run, as NumPy sorts them last)."""
  from tracejax._src.lax import reductions  # noqa: F401  (keeps lax loaded)
  import tracejax.lax as lax
  jnp = _jnp()
  n = sorted_vals.shape[-1]
  idx = jnp.broadcast_to(jnp.arange(n), sorted_vals.shape)
  same = (sorted_vals[..., 1:] == sorted_vals[..., :-1]) | (
      jnp.isnan(sorted_vals[..., 1:]) & jnp.isnan(sorted_vals[..., :-1]))
  starts = jnp.concatenate([jnp.ones(sorted_vals.shape[:-1] + (1,), bool), ~same], -1)
  ends = jnp.concatenate([~same, jnp.ones(sorted_vals.shape[:-1] + (1,), bool)], -1)
  first = lax.cummax(jnp.where(starts, idx, 0), axis=sorted_vals.ndim - 1)
  last = lax.cummin(jnp.where(ends, idx, n - 1), axis=sorted_vals.ndim - 1, reverse=True)
  return first, last, starts


def _rank_last_axis(a, method):
  jnp = _jnp()
  order = jnp.argsort(a, axis=-1, stable=True)
  s = jnp.take_along_axis(a, order, axis=-1)
  first, last, starts = _run_bounds(s)
  if method == "ordinal":
    r = jnp.broadcast_to(jnp.arange(1, a.shape[-1] + 1), a.shape)
  elif method == "min":
    r = first + 1
  elif method == "max":
    r = last + 1
  elif method == "average":
    r = (first + last) / 2 + 1
  else:  # dense
    r = jnp.cumsum(starts, axis=-1)
  inv = jnp.argsort(order, axis=-1)
  return jnp.take_along_axis(r, inv, axis=-1)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """Ranks of the data, 1-based, with ties resolved by `method` (as SciPy's rankdata).

  Args:
    a: the data.
    method: 'average' (mean rank of the ties), 'min', 'max', 'dense' (consecutive
      ranks of the distinct values) or 'ordinal' (order of appearance).
    axis: None ranks the flattened array; an int ranks along that axis.
    nan_policy: 'propagate' (a NaN makes every rank of its slice NaN); 'omit' and
      'raise' are not supported (as in JAX).

  Returns float ranks of `a`'s shape (flattened when axis is None).

  >>> rankdata(jnp.array([3., 1., 3., 2.]))
  DeviceArray([3.5, 1. , 3.5, 2. ], dtype=float32)
  """
  jnp = _jnp()
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"rankdata: unknown method {method!r}; use 'average', 'min', "
                     "'max', 'dense' or 'ordinal'")
  _check_nan_policy(nan_policy, "rankdata")
  a = jnp.asarray(a)
  if axis is None:
    a = a.ravel()
    axis = 0
  if a.ndim == 0:
    raise ValueError("rankdata: a must have at least one dimension along axis")
  axis = int(axis) % a.ndim
  moved = jnp.moveaxis(a, axis, -1)
  fdt = jnp.result_type(float)
  r = _rank_last_axis(moved, method).astype(fdt)
  if jnp.issubdtype(a.dtype, np.inexact):
    has_nan = jnp.any(jnp.isnan(moved), axis=-1, keepdims=True)
    r = jnp.where(has_nan, jnp.nan, r)
  return jnp.moveaxis(r, -1, axis)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
  """The most common value along `axis` (the smallest one on ties) and its count.

  Args:
    a: the data.
    axis: the axis (None: the flattened array).
    nan_policy: 'propagate' (NaNs count as one value, as in SciPy); 'omit' and 'raise'
      are not supported (as in JAX).
    keepdims: keep the reduced axis with size 1.

  Returns ModeResult(mode, count).

  >>> mode(jnp.array([1, 2, 2, 3]))
  ModeResult(mode=DeviceArray(2, dtype=int32), count=DeviceArray(2, dtype=int32))
  """
  jnp = _jnp()
  _check_nan_policy(nan_policy, "mode")
  a = jnp.asarray(a)
  if axis is None:
    a = a.ravel()
    axis = 0
  if a.ndim == 0:
    a = a.reshape(1)
  axis = int(axis) % a.ndim
  if a.shape[axis] == 0:
    raise ValueError("mode: the reduced axis has size 0")
  moved = jnp.moveaxis(a, axis, -1)
  s = jnp.sort(moved, axis=-1)
  first, last, _ = _run_bounds(s)
  counts = last - first + 1
  best = jnp.argmax(counts, axis=-1)[..., None]
  m = jnp.take_along_axis(s, best, axis=-1)[..., 0]
  c = jnp.take_along_axis(counts, best, axis=-1)[..., 0].astype(jnp.result_type(int))
  if keepdims:
    m, c = jnp.expand_dims(m, axis), jnp.expand_dims(c, axis)
  return ModeResult(m, c)


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """Standard error of the mean: std(a, ddof) / sqrt(n) along `axis`.

  Args:
    a: the data; axis: the axis (None: all elements); ddof: delta degrees of freedom.
    nan_policy: 'propagate' (NaN in, NaN out) or 'omit' (NaNs ignored); 'raise' is not
      supported (it would need a host check).
    keepdims: keep the reduced axis with size 1.

  >>> sem(jnp.array([1., 2., 3., 4.]))
  DeviceArray(0.6454972, dtype=float32)
  """
  jnp = _jnp()
  from tracejax._src.scipy.special import _promote_inexact
  _check_nan_policy(nan_policy, "sem", ("propagate", "omit"))
  a, = _promote_inexact(a)
  if axis is None:
    a = a.ravel()
    axis = 0
  if nan_policy == "omit":
    n = jnp.sum(~jnp.isnan(a), axis=axis, keepdims=keepdims)
    return jnp.nanstd(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n)
  n = a.shape[axis]
  return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / np.sqrt(n)
