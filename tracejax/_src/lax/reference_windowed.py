"""NumPy references for the convolution and windowed primitives.

Test oracles only (the lowering rules are the implementation). They follow
XLA's definitions literally: a convolution is a loop over kernel positions
of strided slices of the dilated, padded input; a windowed reduction is a
loop over window positions of the dilated, padded operand. Floating results
are computed in float64 (complex128) and rounded to the result dtype.
"""
import itertools

import numpy as np

__all__ = []  # test oracles, not API: `tracejax.lax` must not re-export them


def _dilate(x, dilation, fill, axes):
  """`x` with `dilation - 1` copies of `fill` between neighbours along `axes`."""
  for axis, d in zip(axes, dilation):
    if d == 1 or x.shape[axis] == 0:
      continue
    shape = list(x.shape)
    shape[axis] = (x.shape[axis] - 1) * d + 1
    out = np.full(shape, fill, x.dtype)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(None, None, d)
    out[tuple(idx)] = x
    x = out
  return x


def _pad(x, padding, fill, axes):
  """Pad (or crop, for negative amounts) `x` along `axes` with `fill`."""
  for axis, (lo, hi) in zip(axes, padding):
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
    x = x[tuple(idx)]
    widths = [(0, 0)] * x.ndim
    widths[axis] = (max(lo, 0), max(hi, 0))
    x = np.pad(x, widths, constant_values=fill)
  return x


def _compute_dtype(dtype):
  dtype = np.dtype(dtype)
  if dtype.kind == "c":
    return np.complex128
  if dtype.kind in "iub":
    return np.int64
  return np.float64


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
  """`lax.conv_general_dilated` on NumPy arrays, with explicit padding pairs and
  dimension numbers as index tuples `(lhs_spec, rhs_spec, out_spec)` (or None)."""
  lhs, rhs = np.asarray(lhs), np.asarray(rhs)
  out_dtype = np.dtype(preferred_element_type or lhs.dtype)
  nsp = lhs.ndim - 2
  if dimension_numbers is None:
    dimension_numbers = (tuple(range(lhs.ndim)),) * 3
  lhs_spec, rhs_spec, out_spec = (tuple(s) for s in dimension_numbers)
  lhs_dilation = lhs_dilation or (1,) * nsp
  rhs_dilation = rhs_dilation or (1,) * nsp
  cdt = _compute_dtype(out_dtype)
  # Canonical layouts: lhs (N, C, spatial...), rhs (O, I, spatial...).
  x = np.transpose(lhs, lhs_spec).astype(cdt)
  w = np.transpose(rhs, rhs_spec).astype(cdt)
  sp = tuple(range(2, 2 + nsp))
  x = _pad(_dilate(x, lhs_dilation, 0, sp), padding, 0, sp)
  w = _dilate(w, rhs_dilation, 0, sp)
  out_space = [max(0, (x.shape[a] - w.shape[a]) // s + 1)
               for a, s in zip(sp, window_strides)]
  n, c = x.shape[:2]
  o, i = w.shape[:2]
  fg, bg = feature_group_count, batch_group_count
  out = np.zeros((n // bg, o) + tuple(out_space), cdt)
  og = o // (fg * bg)  # output features per group
  for g in range(fg * bg):
    # Feature groups split the input features into contiguous blocks (the batch
    # is shared); batch groups split the batch instead (the features are shared).
    xg = x[:, g * i:(g + 1) * i] if fg > 1 else x[g * (n // bg):(g + 1) * (n // bg)]
    wg = w[g * og:(g + 1) * og]
    if not all(out_space):
      continue
    for k in itertools.product(*(range(w.shape[a]) for a in sp)):
      idx = (slice(None), slice(None)) + tuple(
          slice(kk, kk + s * (m - 1) + 1, s) for kk, s, m in zip(k, window_strides, out_space))
      out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xg[idx],
                                               wg[(slice(None), slice(None)) + k])
  return np.transpose(out, np.argsort(out_spec)).astype(out_dtype)


def _is_integer(dtype):
  return np.dtype(dtype).kind in "iu"


_MONOIDS = {"sum": (np.add, lambda dt: 0),
            "max": (np.maximum, lambda dt: np.iinfo(dt).min if _is_integer(dt)
                    else (False if np.dtype(dt) == np.bool_ else -np.inf)),
            "min": (np.minimum, lambda dt: np.iinfo(dt).max if _is_integer(dt)
                    else (True if np.dtype(dt) == np.bool_ else np.inf)),
            "prod": (np.multiply, lambda dt: 1)}


def reduce_window(operand, init_value, op, window_dimensions, window_strides, padding,
                  base_dilation=None, window_dilation=None):
  """`lax.reduce_window` with a NumPy binary ufunc `op` (or 'sum'/'max'/'min'/'prod',
  then `init_value` None means the identity) and explicit padding pairs."""
  operand = np.asarray(operand)
  dtype = operand.dtype
  if isinstance(op, str):
    op, ident = _MONOIDS[op]
    if init_value is None:
      init_value = ident(dtype)
  nd = operand.ndim
  base_dilation = base_dilation or (1,) * nd
  window_dilation = window_dilation or (1,) * nd
  cdt = _compute_dtype(dtype) if dtype != np.bool_ else np.bool_
  x = operand.astype(cdt)
  axes = tuple(range(nd))
  x = _pad(_dilate(x, base_dilation, init_value, axes), padding, init_value, axes)
  win = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
  out_shape = [max(0, (x.shape[a] - win[a]) // s + 1) for a, s in zip(axes, window_strides)]
  acc = np.full(out_shape, init_value, cdt)
  if all(out_shape):
    for k in itertools.product(*(range(w) for w in window_dimensions)):
      idx = tuple(slice(kk * d, kk * d + s * (m - 1) + 1, s)
                  for kk, d, s, m in zip(k, window_dilation, window_strides, out_shape))
      acc = op(acc, x[idx])
  return acc.astype(dtype)


def _cumulative(accumulate, x, axis, reverse):
  x = np.asarray(x)
  dtype = x.dtype
  y = x.astype(_compute_dtype(dtype))
  if reverse:
    y = np.flip(y, axis)
  y = accumulate(y, axis=axis)
  if reverse:
    y = np.flip(y, axis)
  return y.astype(dtype)


def cumsum(operand, axis=0, reverse=False):
  return _cumulative(np.add.accumulate, operand, axis, reverse)


def cumprod(operand, axis=0, reverse=False):
  return _cumulative(np.multiply.accumulate, operand, axis, reverse)


def cummax(operand, axis=0, reverse=False):
  return _cumulative(np.maximum.accumulate, operand, axis, reverse)


def cummin(operand, axis=0, reverse=False):
  return _cumulative(np.minimum.accumulate, operand, axis, reverse)


def cumlogsumexp(operand, axis=0, reverse=False):
  return _cumulative(np.logaddexp.accumulate, operand, axis, reverse)


def select_and_scatter_add(source, operand, select, window_dimensions, window_strides,
                           padding):
  """Adds each `source` element at the first position of its window of `operand`
  that is >= (`select` 'ge') or <= ('le') all others: the max-pool gradient."""
  source, operand = np.asarray(source), np.asarray(operand)
  nd = operand.ndim
  fill = _MONOIDS["max" if select == "ge" else "min"][1](operand.dtype)
  x = _pad(operand.astype(np.float64), padding, fill, tuple(range(nd)))
  out = np.zeros(x.shape, _compute_dtype(source.dtype))
  better = np.greater if select == "ge" else np.less
  for pos in itertools.product(*(range(m) for m in source.shape)):
    start = [p * s for p, s in zip(pos, window_strides)]
    best = None
    for k in itertools.product(*(range(w) for w in window_dimensions)):
      i = tuple(st + kk for st, kk in zip(start, k))
      if best is None or better(x[i], x[best]):
        best = i
    out[best] += source[pos]
  idx = tuple(slice(lo, lo + d) for (lo, _), d in zip(padding, operand.shape))
  return out[idx].astype(source.dtype)
