"""`jax.numpy`: the NumPy API on device arrays, written with lax primitives.

This module only re-exports; the implementations live in `tracejax/_src/numpy/`,
one module per family (creation, ufuncs, reductions, shape_ops, products,
einsum, indexing, searching, scalar_types). Importing it attaches operators
and methods to arrays and tracers (`_src/numpy/array_methods.py`).
"""
# flake8: noqa: F401
import numpy as _np

# Families that the first operation does not need are imported on first use of one
# of their names (`jnp.sort`, `jnp.linalg`, `jnp.take`, ...): PEP 562's module
# __getattr__ keeps `import tracejax.numpy` cheap (about half of jax.numpy's code is
# never run by a typical program); `from tracejax.numpy import sort` works as before,
# `dir(jnp)` lists every name and `from tracejax.numpy import *` imports them all
# (`__all__` is computed on demand, so names added below are never missed).
_LAZY_NAMES = {}  # public name -> module under tracejax._src.numpy
_LAZY_SUBMODULES = ("linalg", "fft")  # jnp.linalg, jnp.fft


def _lazy(module, names):
  for n in names.split():
    _LAZY_NAMES[n] = module


def __getattr__(name):
  import importlib
  if name == "__all__":  # `from tracejax.numpy import *`: the eager and the lazy names
    return sorted(n for n in __dir__() if not n.startswith("_"))
  module = _LAZY_NAMES.get(name)
  if module is not None:
    value = getattr(importlib.import_module(f"tracejax._src.numpy.{module}"), name)
  elif name in _LAZY_SUBMODULES:
    value = importlib.import_module(f"{__name__}.{name}")
  else:
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
  globals()[name] = value  # later lookups are plain attribute reads
  return value


def __dir__():
  return sorted(set(globals()) | set(_LAZY_NAMES) | set(_LAZY_SUBMODULES))


from tracejax._src.numpy import array_methods as _array_methods  # attaches x + y, x[i], ...
from tracejax._src.numpy.creation import (
    arange, array, asarray, empty, empty_like, eye, full, full_like, geomspace, identity,
    linspace, logspace, meshgrid, ones, ones_like, tri, tril, triu, zeros, zeros_like,
)
# (set_mesh-aware: they commit host data to the `jax.set_mesh` mesh, as JAX's do)
from tracejax._src.numpy.creation import _user_array as array, _user_asarray as asarray
_lazy("differences", "diff ediff1d trapezoid trapz")
_lazy("einsum", "einsum einsum_path")
_lazy("index_tricks", """
    c_ diag_indices diag_indices_from index_exp ix_ mask_indices mgrid ogrid r_
    ravel_multi_index
    s_ tril_indices tril_indices_from triu_indices triu_indices_from unravel_index
""")
_lazy("indexing", "take take_along_axis")
_lazy("pad", "pad")
_lazy("math_extra", "convolve correlate gcd gradient lcm")
_lazy("polynomial", """
    poly polyadd polyder polydiv polyfit polyint polymul polysub polyval
    roots vander
""")
_lazy("vectorize", "vectorize")
from tracejax._src.numpy.printing import array_repr, array_str
_lazy("products", """
    cross diag diagonal dot inner kron matmul outer tensordot trace vdot
""")
_lazy("reductions", """
    all alltrue amax amin any argmax argmin average count_nonzero cummax cummin
    cumprod cumproduct cumsum cumulative_prod cumulative_sum max mean min
    nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmin nanprod nanstd
    nansum nanvar prod product ptp sometrue std sum var
""")
from tracejax._src.numpy.scalar_types import (
    bfloat16, bool_, cdouble, character, complex128, complex64, complex_, complexfloating,
    csingle, double, dtype, flexible, float16, float32, float64, float_, floating, generic,
    inexact, int16, int32, int64, int8, int_, integer, ndarray, number, object_,
    signedinteger, single, uint, uint16, uint32, uint64, uint8, unsignedinteger,
    float8_e4m3fn, float8_e5m2, float8_e4m3b11fnuz, float8_e4m3fnuz, float8_e5m2fnuz,
    float8_e3m4, float8_e4m3, float8_e8m0fnu, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn,
    int4, uint4, int2, uint2, int1, uint1, bool,
)
_lazy("searching", "argwhere flatnonzero nonzero")
_lazy("statistics", """
    corrcoef cov median nanmedian nanpercentile nanquantile percentile
    quantile
""")
_lazy("sorting", """
    argpartition argsort lexsort msort partition searchsorted sort
    sort_complex
""")
_lazy("setops", """
    in1d intersect1d isin setdiff1d setxor1d union1d unique unique_all
    unique_counts unique_inverse unique_values
""")
_lazy("histograms", """
    bincount digitize histogram histogram2d histogram_bin_edges
    histogramdd interp
""")
_lazy("windows", "bartlett blackman hamming hanning i0 kaiser")
from tracejax._src.numpy.shape_ops import (
    append, array_split, atleast_1d, atleast_2d, atleast_3d, block, broadcast_arrays,
    broadcast_shapes, broadcast_to, can_cast, column_stack, concatenate, dsplit, dstack,
    expand_dims, flip, fliplr, flipud, hsplit, hstack, isscalar, issubdtype, issubsctype,
    moveaxis,
    ndim, promote_types, ravel, repeat, reshape, result_type, roll, rollaxis, rot90,
    row_stack, shape, size, split, squeeze, stack, swapaxes, tile, transpose, vsplit, vstack,
)
from tracejax._src.numpy.ufuncs import (
    abs, absolute, add, allclose, angle, arccos, arccosh, arcsin, arcsinh, arctan, arctan2,
    arctanh, around, array_equal, array_equiv, bitwise_and, bitwise_not, bitwise_or,
    bitwise_xor, cbrt, ceil, clip, conj, conjugate, copysign, cos, cosh, deg2rad, degrees,
    divide, divmod, equal, exp, exp2, expm1, fabs, fix, float_power, floor, floor_divide,
    fmax, fmin, fmod, greater, greater_equal, heaviside, hypot, imag, invert, iscomplex,
    iscomplexobj, isclose, isfinite, isinf, isnan, isneginf, isposinf, isreal, isrealobj,
    left_shift, less, less_equal,
    log, log10, log1p, log2, logaddexp, logaddexp2, logical_and, logical_not, logical_or,
    logical_xor, maximum, minimum, mod, multiply, nan_to_num, negative, nextafter,
    not_equal, positive, power, rad2deg, radians, real, reciprocal, remainder, right_shift,
    rint, round, round_, select, sign, signbit, sin, sinc, sinh, sqrt, square, subtract,
    tan, tanh,
    true_divide, trunc, where, frexp, ldexp,
)
_lazy("array_api", """
    acos acosh apply_along_axis apply_over_axes asin asinh astype atan atan2 atanh
    bitwise_count bitwise_invert bitwise_left_shift bitwise_right_shift concat copy
    diagflat from_dlpack frombuffer fromfile fromfunction fromiter fromstring indices
    isdtype iterable load matrix_transpose matvec modf packbits permute_dims
    piecewise pow resize save savez spacing trim_zeros unpackbits unstack unwrap
    vecdot vecmat
""")
_lazy("array_edit", """
    choose compress delete extract fill_diagonal insert place put put_along_axis
""")
_lazy("ufunc_class", "frompyfunc ufunc")
ComplexWarning = _np.exceptions.ComplexWarning
from tracejax._src.runtime.array import Array as _Array

# Constants (C-S23) and NumPy's index helper.
pi = _np.pi
e = _np.e
euler_gamma = _np.euler_gamma
inf = _np.inf
nan = _np.nan
newaxis = None
NINF = -_np.inf
PZERO = 0.0
NZERO = -0.0

# Machine limits and printing come from NumPy (bfloat16-aware through dtypes).
from tracejax._src.dtypes import finfo, iinfo  # noqa: E402
from numpy import (  # noqa: E402
    printoptions, set_printoptions, get_printoptions,
)
DeviceArray = _Array
