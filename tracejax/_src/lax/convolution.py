"""Convolutions: `conv_general_dilated` (the primitive) and the wrappers built on it
(`conv`, `conv_with_general_padding`, `conv_transpose`), with dimension numbers.

Dimension numbers say where the batch, feature and spatial dimensions are: as
strings (`('NHWC', 'HWIO', 'NHWC')`: N batch, C feature, I/O kernel in/out
feature, any other letter a spatial dimension) or as `ConvDimensionNumbers`
of index tuples `(batch, feature, spatial...)` / `(out feature, in feature,
spatial...)`. Spatial dimensions are matched by letter and ordered as in the
kernel spec: `window_strides[0]` belongs to the first spatial letter of the
rhs spec. The primitive always carries the canonical `ConvDimensionNumbers`.

Padding is `'SAME'`, `'SAME_LOWER'`, `'VALID'` or one `(low, high)` pair per
spatial dimension; the wrapper turns a string into pairs (`padtype_to_pads`),
so the primitive only ever sees pairs.
"""
import math
import operator
from typing import NamedTuple, Sequence

import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import utils
from tracejax._src.lax.dot import _precision_attr, canonicalize_precision
from tracejax._src.lax.structural import _aval, _shape, reshape, rev, transpose
from tracejax._src.lax.utils import standard_primitive

__all__ = [
    "ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
    "conv_general_dilated", "conv_general_dilated_p", "conv", "conv_with_general_padding",
    "conv_transpose", "padtype_to_pads", "conv_shape_tuple", "conv_general_shape_tuple",
    "conv_transpose_shape_tuple", "conv_general_dilated_patches", "conv_general_dilated_local",
]


# =============================================================================
# Padding and dimension numbers
# =============================================================================

def _dilate_shape(shape, dilation):
  """The size of each dimension after inserting `dilation - 1` holes between elements."""
  return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation))


def _stride_shape(padded, window, strides):
  """How many windows of `window` fit in `padded` stepping by `strides`."""
  return tuple(0 if d < w else (d - w) // s + 1 for d, w, s in zip(padded, window, strides))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """(low, high) padding pairs for a padding string over `in_shape`.

  'SAME' pads so the output has ceil(in / stride) elements, the odd element at
  the end; 'SAME_LOWER' puts it at the start; 'VALID' does not pad.
  """
  if not isinstance(padding, str):
    raise TypeError(f"padtype_to_pads expects a padding string, got {padding!r}.")
  kind = padding.upper()
  if kind == "VALID":
    return [(0, 0)] * len(in_shape)
  if kind in ("SAME", "SAME_LOWER"):
    out_shape = [-(-d // s) for d, s in zip(in_shape, window_strides)]
    pads = [max((o - 1) * s + w - d, 0)
            for o, s, w, d in zip(out_shape, window_strides, window_shape, in_shape)]
    if kind == "SAME":
      return [(p // 2, p - p // 2) for p in pads]
    return [(p - p // 2, p // 2) for p in pads]
  raise ValueError(f"Unknown padding type: {padding!r}; expected 'SAME', 'SAME_LOWER' or "
                   "'VALID', or a sequence of (low, high) pairs.")


class ConvDimensionNumbers(NamedTuple):
  """Where the dimensions of a convolution are.

  lhs_spec: `(batch dimension, feature dimension, spatial dimensions...)`.
  rhs_spec: `(out feature dimension, in feature dimension, spatial dimensions...)`.
  out_spec: `(batch dimension, feature dimension, spatial dimensions...)`.
  """
  lhs_spec: Sequence[int]
  rhs_spec: Sequence[int]
  out_spec: Sequence[int]


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
  """Canonical `ConvDimensionNumbers` from None, a triple of strings, or itself.

  Only the ranks of `lhs_shape` and `rhs_shape` matter. `None` means the
  layout `('NC...', 'OI...', 'NC...')` (e.g. NCHW/OIHW for 2-D).
  """
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if isinstance(dimension_numbers, (list, tuple)):
    if len(dimension_numbers) != 3:
      raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                      f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
      if all(isinstance(s, (list, tuple)) for s in dimension_numbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
      raise TypeError("convolution dimension_numbers elements must be strings, got "
                      f"{tuple(type(s).__name__ for s in dimension_numbers)}.")
    for i, spec in enumerate(dimension_numbers):
      if len(spec) != len(lhs_shape):
        raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                        f"ndim of lhs and rhs, got {len(spec)} for lhs and rhs shapes "
                        f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
  raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                  f"{type(dimension_numbers).__name__}.")


def conv_general_permutations(dimension_numbers):
  """Index permutations `(lhs_perm, rhs_perm, out_perm)` for a triple of spec strings."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(charpairs):
    spec = dimension_numbers[i]
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {spec}.")
    if len(spec) != len(set(spec)):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                      f"characters, got {spec}.")
  if not (set(lhs_spec) - set("NC") == set(rhs_spec) - set("OI") ==
          set(out_spec) - set("NC")):
    raise TypeError("convolution dimension_numbers elements must each have the same set "
                    f"of spatial characters, got {dimension_numbers}.")

  def perm(spec, pair):
    spatial = [i for i, c in enumerate(spec) if c not in pair]
    if spec is not rhs_spec:  # spatial dimensions follow the kernel's order
      spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

  return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape of a convolution with shapes in canonical (NC..., OI...) order."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError("Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = tuple(int(d) + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads))
  if any(d < 0 for d in padded):
    raise ValueError("Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={tuple(pads)} for lhs spatial shape "
                     f"{tuple(lhs_shape[2:])}.")
  out_space = _stride_shape(padded, rhs_shape[2:], strides)
  batch = lhs_shape[0] // batch_group_count
  return (int(batch), int(rhs_shape[0])) + tuple(out_space)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
  """The output shape of `conv_general_dilated` without dilation."""
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, dn.lhs_spec), np.take(rhs_shape, dn.rhs_spec),
                         window_strides, padding)
  return tuple(int(d) for d in np.take(out, np.argsort(dn.out_spec)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """The output shape of `conv_transpose`."""
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, dn.lhs_spec), np.take(rhs_shape, dn.rhs_spec)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding)
               for k, s in zip(rhs_t[2:], window_strides)]
  out_space = [(i - 1) * s - k + 2 + lo + hi
               for i, k, s, (lo, hi) in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  out = (int(lhs_t[0]), int(rhs_t[0])) + tuple(int(d) for d in out_space)
  return tuple(int(d) for d in np.take(out, np.argsort(dn.out_spec)))


def _int_seq(name, arg, value, n):
  """`value` as a tuple of `n` Python ints (None: all ones)."""
  if value is None:
    return (1,) * n
  try:
    out = tuple(int(operator.index(v)) for v in value)
  except TypeError:
    raise TypeError(f"{name} {arg} must be a sequence of integers, got {value!r}.") from None
  if len(out) != n:
    raise ValueError(f"{name} {arg} must have one entry per spatial dimension ({n}), "
                     f"got {value!r}.")
  return out


# =============================================================================
# conv_general_dilated
# =============================================================================

def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None):
  """General n-dimensional convolution operator, with optional dilation.

  Wraps XLA's Conv. `lhs` is the input (default layout `(N, C, spatial...)`),
  `rhs` the kernel (default `(O, I, spatial...)`). `window_strides` has one
  stride per spatial dimension; `padding` is 'SAME', 'SAME_LOWER', 'VALID' or
  `(low, high)` pairs. `lhs_dilation` inserts holes in the input (a
  transposed convolution), `rhs_dilation` in the kernel (atrous). With
  `feature_group_count` G, the input features and kernel outputs split into G
  groups convolved separately (G = C: depthwise); with `batch_group_count`
  the input batch splits into groups instead. `dimension_numbers` is None,
  a `ConvDimensionNumbers`, or strings like `('NHWC', 'HWIO', 'NHWC')`.
  """
  lhs_shape, rhs_shape = _shape(lhs), _shape(rhs)
  dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  nspatial = len(lhs_shape) - 2
  if nspatial < 0:
    raise TypeError(f"conv_general_dilated needs operands of rank >= 2, got lhs shape "
                    f"{lhs_shape}.")
  window_strides = _int_seq("conv_general_dilated", "window_strides", window_strides,
                            nspatial)
  lhs_dilation = _int_seq("conv_general_dilated", "lhs_dilation", lhs_dilation, nspatial)
  rhs_dilation = _int_seq("conv_general_dilated", "rhs_dilation", rhs_dilation, nspatial)
  if isinstance(padding, str):
    if any(d != 1 for d in lhs_dilation):
      raise ValueError("String padding is not implemented for transposed convolution "
                       "using this op. Please either exactly specify the required padding "
                       "or use conv_transpose.")
    kernel_space = np.take(rhs_shape, dnums.rhs_spec)[2:]
    padding = padtype_to_pads(np.take(lhs_shape, dnums.lhs_spec)[2:],
                              _dilate_shape(kernel_space, rhs_dilation), window_strides,
                              padding)
  try:
    padding = tuple((int(operator.index(lo)), int(operator.index(hi))) for lo, hi in padding)
  except (TypeError, ValueError):
    raise ValueError("padding argument to conv_general_dilated should be a string or a "
                     f"sequence of (low, high) pairs, got {padding!r}.") from None
  if preferred_element_type is not None:
    preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dnums,
      feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=canonicalize_precision(precision),
      preferred_element_type=preferred_element_type)


def _check_spec(name, spec, ndim):
  if tuple(sorted(spec)) != tuple(range(ndim)):
    raise TypeError(f"conv_general_dilated dimension_numbers.{name} must be a permutation "
                    f"of range({ndim}), got {tuple(spec)}.")


def _conv_general_dilated_shape_rule(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                     rhs_dilation, dimension_numbers, feature_group_count,
                                     batch_group_count, **_):
  if lhs.ndim != rhs.ndim:
    raise ValueError("conv_general_dilated lhs and rhs must have the same number of "
                     f"dimensions, but got {lhs.shape} and {rhs.shape}.")
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dimension_numbers):
    _check_spec(name, spec, lhs.ndim)
  nspatial = lhs.ndim - 2
  for arg, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                 ("rhs_dilation", rhs_dilation), ("padding", padding)):
    if len(v) != nspatial:
      raise ValueError(f"conv_general_dilated {arg} must have {nspatial} entries (one per "
                       f"spatial dimension), got {v}.")
  for arg, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                 ("rhs_dilation", rhs_dilation)):
    if not all(d > 0 for d in v):
      raise ValueError(f"conv_general_dilated {arg} must be positive, got {v}.")
  if feature_group_count <= 0:
    raise ValueError("conv_general_dilated feature_group_count must be a positive "
                     f"integer, got {feature_group_count}.")
  if batch_group_count <= 0:
    raise ValueError("conv_general_dilated batch_group_count must be a positive integer, "
                     f"got {batch_group_count}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, "
                     f"got batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")
  lhs_features = lhs.shape[lhs_spec[1]]
  quot, rem = divmod(lhs_features, feature_group_count)
  if rem:
    raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {feature_group_count} does not divide "
                     f"{lhs_features}.")
  if quot != rhs.shape[rhs_spec[1]]:
    raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                     "feature_group_count must equal the rhs input feature dimension size, "
                     f"but {lhs_features} // {feature_group_count} != "
                     f"{rhs.shape[rhs_spec[1]]}.")
  out_features = rhs.shape[rhs_spec[0]]
  if out_features % feature_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {out_features} is not a "
                     f"multiple of {feature_group_count}.")
  lhs_batch = lhs.shape[lhs_spec[0]]
  if lhs_batch % batch_group_count:
    raise ValueError("conv_general_dilated batch_group_count must divide lhs batch "
                     f"dimension size, but {batch_group_count} does not divide {lhs_batch}.")
  if out_features % batch_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {out_features} is not a multiple "
                     f"of {batch_group_count}.")
  lhs_t = _dilate_shape(np.take(lhs.shape, lhs_spec), (1, 1) + tuple(lhs_dilation))
  rhs_t = _dilate_shape(np.take(rhs.shape, rhs_spec), (1, 1) + tuple(rhs_dilation))
  out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
  return tuple(int(d) for d in np.take(out_t, np.argsort(out_spec)))


def _conv_general_dilated_dtype_rule(lhs, rhs, *, preferred_element_type=None, **_):
  # bool too (JAX: an OR of ANDs over each window, as XLA computes a pred convolution)
  utils.check_dtypes("conv_general_dilated", utils._any, lhs, rhs)
  utils.check_same_dtypes("conv_general_dilated", lhs, rhs)
  if preferred_element_type is None:
    return lhs.dtype
  pref, src = np.dtype(preferred_element_type), lhs.dtype
  ok = (pref == src
        or (dtypes.is_integer(src) and (dtypes.is_inexact(pref) or (
            dtypes.is_integer(pref) and dtypes.is_signed(pref) == dtypes.is_signed(src))))
        or (dtypes.is_floating(src) and dtypes.is_inexact(pref))
        or (dtypes.is_complex(src) and dtypes.is_complex(pref)))
  if not ok:
    raise TypeError(f"conv_general_dilated preferred_element_type {pref.name} is "
                    f"incompatible with the input dtype {src.name}.")
  return pref


def _conv_general_dilated_weak_type_rule(lhs, rhs, **params):
  return params.get("preferred_element_type") is None and lhs.weak_type and rhs.weak_type


def _conv_spec_transpose(spec):
  """A spec with its first two entries swapped (batch <-> feature, out <-> in)."""
  return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_into(src, dst, x):
  """Merge axis `src` of `x` into axis `dst` (numbered without `src`), as its major part."""
  shape = _shape(x)
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new_shape = [d for i, d in enumerate(shape) if i != src]
  new_shape[dst] *= shape[src]
  return reshape(x, tuple(new_shape), tuple(perm))


def _reshape_axis_out_of(src, size1, x):
  """Split axis `src` of `x` into `(size1, rest)`."""
  shape = list(_shape(x))
  size2, ragged = divmod(shape[src], size1)
  assert not ragged, (shape, src, size1)
  shape[src:src + 1] = [size1, size2]
  return reshape(x, tuple(shape))


def _conv_general_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                  padding, lhs_dilation, rhs_dilation):
  """Padding of the convolution that maps the output cotangent back onto the input."""
  lhs_dilated = _dilate_shape(in_shape, lhs_dilation)
  rhs_dilated = _dilate_shape(window_dimensions, rhs_dilation)
  out_dilated = _dilate_shape(out_shape, window_strides)
  before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
  after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_dilated, rhs_dilated, out_dilated,
                                                   before)]
  return tuple(zip(before, after))


def _conv_general_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                  padding, lhs_dilation, rhs_dilation):
  """Padding of the convolution of input and output cotangent giving the kernel's."""
  if not len(in_shape):
    return ()
  lhs_dilated = _dilate_shape(in_shape, lhs_dilation)
  rhs_dilated = _dilate_shape(window_dimensions, rhs_dilation)
  out_dilated = _dilate_shape(out_shape, window_strides)
  lows = [lo for lo, _ in padding]
  highs = [o - l + r - lo - 1
           for o, l, r, lo in zip(out_dilated, lhs_dilated, rhs_dilated, lows)]
  return tuple(zip(lows, highs))


# The transposes treat a convolution like a matmul over (batch m, in feature j,
# out feature k), forward [m, j] x [j, k] -> [m, k], plus a correlation over
# the spatial dimensions:
#   lhs cotangent: [m, k] x [k, j] -> [m, j]: convolve the output cotangent with
#     the spatially reversed kernel, its in/out features swapped; strides become
#     lhs dilation and vice versa.
#   rhs cotangent: [j, m] x [m, k] -> [j, k]: convolve the input (batch as
#     features) with the output cotangent (batch as in features).
# Groups move with the roles: feature groups [m, gj] x [j, gk] become feature
# groups of the lhs cotangent (the group moved into the kernel's out features)
# and batch groups of the rhs cotangent; batch groups [gm, j] x [j, gk] become
# feature groups of both.

def _conv_general_dilated_transpose_lhs(g, lhs, rhs, *, window_strides, padding,
                                        lhs_dilation, rhs_dilation, dimension_numbers,
                                        feature_group_count, batch_group_count, precision,
                                        preferred_element_type):
  assert batch_group_count == 1 or feature_group_count == 1
  lhs_aval = lhs.aval
  lhs_shape, rhs_shape, g_shape = lhs_aval.shape, _shape(rhs), _shape(g)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_sdims, rhs_sdims, out_sdims = (tuple(s[2:]) for s in dimension_numbers)
  t_rhs_spec = _conv_spec_transpose(rhs_spec)
  if feature_group_count > 1:
    # The group must be the major part of the transposed kernel's out features.
    rhs = _reshape_axis_out_of(rhs_spec[0], feature_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
  elif batch_group_count > 1:
    rhs = _reshape_axis_out_of(rhs_spec[0], batch_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    feature_group_count = batch_group_count
  trans_dnums = ConvDimensionNumbers(out_spec, t_rhs_spec, lhs_spec)
  pads = _conv_general_vjp_lhs_padding(
      np.take(lhs_shape, lhs_sdims), np.take(rhs_shape, rhs_sdims), window_strides,
      np.take(g_shape, out_sdims), padding, lhs_dilation, rhs_dilation)
  revd_weights = rev(rhs, rhs_sdims)
  g_dtype = _aval(g).dtype
  if _aval(revd_weights).dtype != g_dtype:
    revd_weights = _convert(revd_weights, g_dtype)
  out = conv_general_dilated(
      g, revd_weights, window_strides=lhs_dilation, padding=pads,
      lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
      dimension_numbers=trans_dnums, feature_group_count=feature_group_count,
      batch_group_count=1, precision=precision)
  if batch_group_count > 1:
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return _convert(out, lhs_aval.dtype)


def _conv_general_dilated_transpose_rhs(g, lhs, rhs, *, window_strides, padding,
                                        lhs_dilation, rhs_dilation, dimension_numbers,
                                        feature_group_count, batch_group_count, precision,
                                        preferred_element_type):
  assert batch_group_count == 1 or feature_group_count == 1
  rhs_aval = rhs.aval
  if int(np.prod(_shape(g), dtype=np.int64)) == 0:
    # No output: the kernel's cotangent is zero (and a degenerate conv is avoided).
    return ad.Zero(rhs_aval)
  lhs_shape, rhs_shape, g_shape = _shape(lhs), rhs_aval.shape, _shape(g)
  lhs_sdims, rhs_sdims, out_sdims = (tuple(s[2:]) for s in dimension_numbers)
  lhs_t, rhs_t, out_t = (_conv_spec_transpose(s) for s in dimension_numbers)
  if batch_group_count > 1:
    feature_group_count, batch_group_count = batch_group_count, 1
  elif feature_group_count > 1:
    feature_group_count, batch_group_count = 1, feature_group_count
  trans_dnums = ConvDimensionNumbers(lhs_t, out_t, rhs_t)
  pads = _conv_general_vjp_rhs_padding(
      np.take(lhs_shape, lhs_sdims), np.take(rhs_shape, rhs_sdims), window_strides,
      np.take(g_shape, out_sdims), padding, lhs_dilation, rhs_dilation)
  g_dtype = _aval(g).dtype
  if _aval(lhs).dtype != g_dtype:
    lhs = _convert(lhs, g_dtype)
  out = conv_general_dilated(
      lhs, g, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
      rhs_dilation=window_strides, dimension_numbers=trans_dnums,
      feature_group_count=feature_group_count, batch_group_count=batch_group_count,
      precision=precision)
  return _convert(out, rhs_aval.dtype)


def _convert(x, dtype):
  if _aval(x).dtype == np.dtype(dtype):
    return x
  from tracejax._src.lax import elementwise
  return elementwise.convert_element_type(x, dtype)


def _conv_general_dilated_batch_rule(args, dims, *, dimension_numbers, feature_group_count,
                                     batch_group_count, **params):
  # The vmapped axis is folded into an axis the convolution already has, so
  # the batched computation stays ONE convolution: into the batch (lhs only),
  # the kernel's out features (rhs only), or the features with one group per
  # example (both).
  lhs, rhs = args
  lhs_bdim, rhs_bdim = dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  assert batch_group_count == 1 or feature_group_count == 1

  def conv(x, y, fgc, bgc):
    return conv_general_dilated_p.bind(x, y, dimension_numbers=dimension_numbers,
                                       feature_group_count=fgc, batch_group_count=bgc,
                                       **params)

  size = _shape(lhs)[lhs_bdim] if lhs_bdim is not None else _shape(rhs)[rhs_bdim]
  if size == 0:
    lhs_u = _aval(lhs).update(shape=tuple(d for i, d in enumerate(_shape(lhs))
                                          if i != lhs_bdim))
    rhs_u = _aval(rhs).update(shape=tuple(d for i, d in enumerate(_shape(rhs))
                                          if i != rhs_bdim))
    full_params = dict(params, dimension_numbers=dimension_numbers,
                       feature_group_count=feature_group_count,
                       batch_group_count=batch_group_count)
    out_aval = conv_general_dilated_p.abstract_eval(lhs_u, rhs_u, **full_params)
    from tracejax._src.lax.structural import full
    return full((0,) + out_aval.shape, np.zeros((), out_aval.dtype)), 0

  if lhs_bdim is not None and rhs_bdim is not None:
    if batch_group_count > 1:
      new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[0], lhs)
      batch_group_count *= size
    else:
      new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[1], lhs)
      feature_group_count *= size
    new_rhs = _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs)
    out = conv(new_lhs, new_rhs, feature_group_count, batch_group_count)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]

  if lhs_bdim is not None:
    if batch_group_count == 1:
      new_lhs = _reshape_axis_into(lhs_bdim, lhs_spec[0], lhs)
      out = conv(new_lhs, rhs, feature_group_count, batch_group_count)
      return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    # Batch groups must stay the major part of the batch: split them out, put
    # the vmapped axis under them, and merge back.
    new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(lhs_bdim <= lhs_spec[0]),
                                   batch_group_count, lhs)
    new_lhs = _reshape_axis_into(lhs_bdim + int(lhs_spec[0] < lhs_bdim), lhs_spec[0] + 1,
                                 new_lhs)
    new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
    out = conv(new_lhs, rhs, feature_group_count, batch_group_count)
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]

  if feature_group_count == 1 and batch_group_count == 1:
    new_rhs = _reshape_axis_into(rhs_bdim, rhs_spec[0], rhs)
    out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  # Groups must stay the major part of the kernel's out features: put the
  # vmapped axis inside each group, and take it back out of each group after.
  groups = feature_group_count if feature_group_count > 1 else batch_group_count
  new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rhs_bdim <= rhs_spec[0]), groups, rhs)
  new_rhs = _reshape_axis_into(rhs_bdim + int(rhs_spec[0] < rhs_bdim), rhs_spec[0] + 1,
                               new_rhs)
  new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
  out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
  out = _reshape_axis_out_of(out_spec[1], groups, out)
  out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
  out = _reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
  return out, out_spec[1]


def _conv_general_dilated_lowering(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation,
                                   rhs_dilation, dimension_numbers, feature_group_count,
                                   batch_group_count, precision, preferred_element_type):
  lhs_aval, rhs_aval = ctx.avals_in
  aval_out = ctx.avals_out[0]
  if lhs_aval.dtype != aval_out.dtype:
    # A wider preferred_element_type: convert first (XLA:CPU does not mix types).
    lhs = hlo.convert(mlir.aval_to_ir_type(lhs_aval.update(dtype=aval_out.dtype)), lhs)
    rhs = hlo.convert(mlir.aval_to_ir_type(rhs_aval.update(dtype=aval_out.dtype)), rhs)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dnums = hlo.ConvDimensionNumbers.get(
      input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
      input_spatial_dimensions=list(lhs_spec[2:]),
      kernel_output_feature_dimension=rhs_spec[0],
      kernel_input_feature_dimension=rhs_spec[1],
      kernel_spatial_dimensions=list(rhs_spec[2:]),
      output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
      output_spatial_dimensions=list(out_spec[2:]))
  nspatial = len(rhs_spec) - 2
  pads = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(nspatial, 2),
                                     shape=(nspatial, 2))
  i64 = ir.IntegerType.get_signless(64)
  out = hlo.convolution(
      mlir.aval_to_ir_type(aval_out), lhs, rhs, dimension_numbers=dnums,
      feature_group_count=ir.IntegerAttr.get(i64, feature_group_count),
      batch_group_count=ir.IntegerAttr.get(i64, batch_group_count),
      window_strides=list(window_strides), padding=pads, lhs_dilation=list(lhs_dilation),
      rhs_dilation=list(rhs_dilation), window_reversal=[False] * nspatial,
      precision_config=_precision_attr(precision))
  return [out]


def _complex_conv(lhs, rhs, *, preferred_element_type, **params):
  """A complex convolution as three real ones (Gauss's trick): XLA:CPU runs complex
  convolutions as a slow loop and XLA:GPU may not run them at all."""
  from tracejax._src.lax import elementwise as ew
  if preferred_element_type is not None:
    preferred_element_type = np.finfo(preferred_element_type).dtype
  conv = lambda x, y: conv_general_dilated_p.bind(
      x, y, preferred_element_type=preferred_element_type, **params)
  x_re, x_im, y_re, y_im = ew.real(lhs), ew.imag(lhs), ew.real(rhs), ew.imag(rhs)
  k1 = conv(ew.add(x_re, x_im), y_re)
  k2 = conv(x_re, ew.sub(y_im, y_re))
  k3 = conv(x_im, ew.add(y_re, y_im))
  return ew.complex(ew.sub(k1, k3), ew.add(k1, k2))


_complex_conv_lowering = mlir.lower_fun(_complex_conv, multiple_results=False)


def _conv_general_dilated_cpu_gpu_lowering(ctx, lhs, rhs, **params):
  if dtypes.is_complex(ctx.avals_in[0].dtype):
    return _complex_conv_lowering(ctx, lhs, rhs, **params)
  return _conv_general_dilated_lowering(ctx, lhs, rhs, **params)


conv_general_dilated_p = standard_primitive(
    _conv_general_dilated_shape_rule, _conv_general_dilated_dtype_rule,
    "conv_general_dilated", weak_type_rule=_conv_general_dilated_weak_type_rule)
ad.defbilinear(conv_general_dilated_p, _conv_general_dilated_transpose_lhs,
               _conv_general_dilated_transpose_rhs)
batching.primitive_batchers[conv_general_dilated_p] = _conv_general_dilated_batch_rule
mlir.register_lowering(conv_general_dilated_p, _conv_general_dilated_lowering)
mlir.register_lowering(conv_general_dilated_p, _conv_general_dilated_cpu_gpu_lowering,
                       platform="cpu")
mlir.register_lowering(conv_general_dilated_p, _conv_general_dilated_cpu_gpu_lowering,
                       platform="gpu")


# =============================================================================
# Functions built on conv_general_dilated
# =============================================================================

def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """Convenience wrapper around `conv_general_dilated`: NCHW input, OIHW kernel
  (for 2-D; any rank), 'SAME' or 'VALID' padding, no dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation,
                              rhs_dilation, precision=None, preferred_element_type=None):
  """Convenience wrapper around `conv_general_dilated`: NCHW input, OIHW kernel,
  explicit padding pairs (or a string) and dilations."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
  """(low, high) padding of the fractionally strided conv for one spatial dimension:
  `k` the (dilated) kernel size, `s` the stride, `padding` the forward conv's
  'SAME' or 'VALID'."""
  if padding == "SAME":
    pad_len = k + s - 2
    pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    pad_a = k - 1
  else:
    raise ValueError(f"Invalid padding mode: {padding!r}")
  return pad_a, pad_len - pad_a


_CONV_TRANSPOSE_DEFAULT_DNUMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                                 4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None):
  """Convenience wrapper for calculating the N-d convolution "transpose".

  A fractionally strided convolution: the input is dilated by `strides`.
  'SAME'/'VALID' `padding` is that of the forward convolution being
  transposed (the output is `in * stride` for 'SAME'); explicit pairs pad the
  dilated input directly. `dimension_numbers` defaults to the TensorFlow
  layouts (NHWC/HWIO for 2-D). With `transpose_kernel`, the kernel's spatial
  axes are flipped and its in/out features swapped, which makes the result
  the gradient of `conv_general_dilated` with that kernel (Keras'
  Conv2DTranspose).
  """
  lhs_shape, rhs_shape = _shape(lhs), _shape(rhs)
  if len(lhs_shape) != len(rhs_shape) or len(lhs_shape) < 2:
    raise TypeError("conv_transpose needs lhs and rhs of equal rank >= 2, got shapes "
                    f"{lhs_shape} and {rhs_shape}.")
  ndims = len(lhs_shape)
  if dimension_numbers is None:
    if ndims not in _CONV_TRANSPOSE_DEFAULT_DNUMS:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _CONV_TRANSPOSE_DEFAULT_DNUMS[ndims]
  dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
  k_sdims = np.take(rhs_shape, dn.rhs_spec)[2:]
  strides = _int_seq("conv_transpose", "strides", strides, ndims - 2)
  rhs_dilation = _int_seq("conv_transpose", "rhs_dilation", rhs_dilation, ndims - 2)
  if isinstance(padding, str):
    kind = padding.upper()
    effective_k = _dilate_shape(k_sdims, rhs_dilation)
    pads = tuple(_conv_transpose_padding(k, s, kind) for k, s in zip(effective_k, strides))
  else:
    pads = padding
  if transpose_kernel:
    rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
    perm = list(range(ndims))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
    rhs = transpose(rhs, tuple(perm))
  return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, lhs_dilation=strides,
                              rhs_dilation=rhs_dilation, dimension_numbers=dn,
                              precision=precision,
                              preferred_element_type=preferred_element_type)



# =============================================================================
# Patches and unshared (locally connected) convolutions, built on conv
# =============================================================================

def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None,
                                 dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The receptive-field patches of `lhs`: what a convolution with a kernel of spatial
  shape `filter_shape` would see at each output position, laid out as features.

  The output has the layout of a conv output; its feature dimension has size
  `C * prod(filter_shape)`, ordered channel-major: feature `c * prod(filter_shape) + k`
  is channel `c` at position `k` (row-major) of the window. It is computed as a grouped
  convolution with a one-hot kernel, so every conv option applies.

  Args:
    lhs: the input, rank n+2.
    filter_shape: the n spatial sizes of the window.
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers, precision,
      preferred_element_type: as for `conv_general_dilated`.

  >>> conv_general_dilated_patches(jnp.arange(4.).reshape(1, 1, 4), (2,), (1,), 'VALID')
  DeviceArray([[[0., 1., 2.],
                [1., 2., 3.]]], dtype=float32)
  """
  lhs_shape = _shape(lhs)
  filter_shape = tuple(operator.index(d) for d in filter_shape)
  if len(filter_shape) != len(lhs_shape) - 2:
    raise ValueError(f"conv_general_dilated_patches: filter_shape {filter_shape} must have "
                     f"one size per spatial dimension of lhs (shape {lhs_shape}).")
  dnums = conv_dimension_numbers(lhs_shape, (1, 1) + filter_shape, dimension_numbers)
  n_channels = lhs_shape[dnums.lhs_spec[1]]
  window = math.prod(filter_shape)
  dtype = _aval(lhs).dtype
  # canonical (O, I, spatial...) one-hot kernel: output feature c*window+k of group c
  # picks window position k.
  eye = np.eye(window, dtype=dtype).reshape((window, 1) + filter_shape)
  kernel = np.tile(eye, (n_channels,) + (1,) * (len(filter_shape) + 1))
  # put O and I where rhs_spec says, the spatial dimensions in order elsewhere
  rank = len(lhs_shape)
  spatial_src = iter(range(2, rank))
  perm = [0 if a == dnums.rhs_spec[0] else 1 if a == dnums.rhs_spec[1] else next(spatial_src)
          for a in range(rank)]
  kernel = np.transpose(kernel, perm)
  rhs_spec = (dnums.rhs_spec[0], dnums.rhs_spec[1]) + tuple(
      a for a in range(rank) if a not in dnums.rhs_spec[:2])
  dnums = ConvDimensionNumbers(dnums.lhs_spec, rhs_spec, dnums.out_spec)
  return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                             rhs_dilation, dnums, feature_group_count=n_channels,
                             precision=precision,
                             preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """An unshared (locally connected) convolution: a separate kernel at every output
  position.

  Args:
    lhs: the input, rank n+2.
    rhs: the kernels, in the layout of `dimension_numbers[1]`: its spatial dimensions
      are the *output* positions, its `I` dimension has size `C * prod(filter_shape)`
      (the patches' channel-major order) and `O` the output features.
    window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as for
      `conv_general_dilated`.
    filter_shape: the n spatial sizes of the receptive window.
    precision: as for `conv_general_dilated` (one, or a pair for lhs and rhs).

  >>> lhs = jnp.arange(4.).reshape(1, 1, 4)
  >>> conv_general_dilated_local(lhs, jnp.ones((1, 2, 3)), (1,), 'VALID', (2,))
  DeviceArray([[[1., 3., 5.]]], dtype=float32)
  """
  prec = canonicalize_precision(precision)
  lhs_prec, rhs_prec = (None, None) if prec is None else prec
  patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                         lhs_dilation, rhs_dilation, dimension_numbers,
                                         precision=lhs_prec)
  filter_shape = tuple(operator.index(d) for d in filter_shape)
  lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(_shape(lhs), (1, 1) + filter_shape,
                                                        dimension_numbers)
  # contract the patch features with I; pair each output position with rhs's spatial
  # dimension of the same rank in the spec (sorted like the patches' positions)
  p_spatial = tuple(out_spec[2:])
  r_spatial = tuple(rhs_spec[2:])
  order = sorted(range(len(p_spatial)), key=lambda k: p_spatial[k])
  dn = (((out_spec[1],), (rhs_spec[1],)),
        (tuple(p_spatial[k] for k in order), tuple(r_spatial[k] for k in order)))
  from tracejax._src.lax.dot import dot_general
  out = dot_general(patches, rhs, dn, precision=rhs_prec)
  # dot_general's result: the spatial dimensions (sorted), then N, then O; move N and O
  # to their places in the output layout
  rank = len(_shape(out))
  src = [r for r in range(rank - 2)]
  perm = [None] * rank
  perm[out_spec[0]], perm[out_spec[1]] = rank - 2, rank - 1
  rest = iter(src)
  perm = [p if p is not None else next(rest) for p in perm]
  return transpose(out, tuple(perm))
