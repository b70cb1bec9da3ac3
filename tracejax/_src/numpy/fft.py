"""`jax.numpy.fft`: NumPy's discrete Fourier transforms on the `lax.fft` primitive.

Every transform here is built from `lax/fft.py`'s one primitive (FFT, IFFT,
RFFT, IRFFT over 1 to 3 trailing dimensions), plus static slices, zero padding
and transposes; so `jit`, `vmap` and derivatives of any order come from the
rules of those primitives and nothing here needs a rule of its own.

How NumPy's arguments map onto the primitive:

* `n` / `s` crop (a static slice) or zero-pad (lax.pad) each transformed axis
  of the input before the transform; `-1` in `s` means the input's length
  there (NumPy 2; taken literally, even for irfftn). For the inverse real
  transforms they are the *output* lengths: the input's last transformed axis
  is resized to `s[-1] // 2 + 1`.
* The primitive only transforms trailing dimensions, so the transformed axes
  are moved to the end with one transpose (none when they already are
  there) and moved back after. More than three axes are done three at a time:
  for the real transforms, the group holding the last axis is the real one
  (RFFT first; IRFFT last, after the complex inverse of the other groups).
* `norm`: XLA's IFFT already divides by n ("backward"); "ortho" and "forward"
  multiply the result by a constant.

Dtypes follow JAX's rules: float32, float16, bfloat16, integers and bools
become complex64; float64 (and integers, as everywhere in tracejax) become
complex128 only with x64 on; with x64 off, complex128 and float64 requests
are already narrowed to complex64 and float32. Inverse real transforms return
the matching real dtype (float32 or float64).
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import fft as lax_fft
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural
from tracejax._src.numpy import creation, shape_ops, ufuncs, util
from tracejax._src.runtime.array import Array

FftType = lax_fft.FftType

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
    "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")
# hfft/ihfft are irfft/rfft of the conjugate with the scaling on the other side.
_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}
# The XLA primitive transforms at most this many trailing dimensions at once.
_MAX_FFT_DIMS = 3


# ---- argument checking ----

def _full_name(fun_name):
  return f"jax.numpy.fft.{fun_name}"


def _check_norm(fun_name, norm):
  if norm is None or (isinstance(norm, str) and norm in _NORMS):
    return
  raise ValueError(f'{_full_name(fun_name)}: invalid norm value {norm!r}; should be None, '
                   '"backward", "ortho" or "forward".')


def _operand(fun_name, a, fft_type):
  """`a` as a device array of the dtype the primitive wants for `fft_type`."""
  util.check_arraylike_or_list(fun_name, a)
  a = util.to_array(a)
  dt = util.dtype_of(a)
  if fft_type == FftType.RFFT:
    if dtypes.is_complex(dt):
      raise TypeError(f"{_full_name(fun_name)} needs a real input array, got dtype "
                      f"{dt.name}; use fft/fftn for complex input.")
    # float16/bfloat16/ints go to float32 (x64 off: the default float).
    target = np.dtype(np.float64) if dtypes.to_inexact_dtype(dt) == np.float64 else (
        np.dtype(np.float32))
  else:
    inexact = dtypes.to_inexact_dtype(dt)
    target = np.dtype(np.complex128) if inexact in (np.float64, np.complex128) else (
        np.dtype(np.complex64))
  return util.convert(a, target, weak_type=False)


def _index(fun_name, arg_name, value):
  try:
    return operator.index(value)
  except TypeError:
    raise TypeError(f"{_full_name(fun_name)}: {arg_name} must be an integer, got "
                    f"{value!r}.") from None


def _canonical_axes(fun_name, axes, ndim):
  out = []
  for ax in axes:
    ax = _index(fun_name, "axes", ax)
    if not -ndim <= ax < ndim:
      raise ValueError(f"{_full_name(fun_name)}: axis {ax} is out of bounds for an array "
                       f"of dimension {ndim}.")
    out.append(ax % ndim)
  if len(set(out)) != len(out):
    raise ValueError(f"{_full_name(fun_name)} does not support repeated axes, got axes "
                     f"{tuple(axes)}.")
  return tuple(out)


def _as_sequence(fun_name, arg_name, value):
  if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
    return (value,)
  try:
    return tuple(value)
  except TypeError:
    raise TypeError(f"{_full_name(fun_name)}: {arg_name} must be a sequence of integers, "
                    f"got {value!r}.") from None


def _resolve(fun_name, fft_type, shape, s, axes):
  """(axes, lengths): the transformed axes and the real-side transform lengths."""
  ndim = len(shape)
  if s is not None:
    s = tuple(_index(fun_name, "s", n) for n in _as_sequence(fun_name, "s", s))
  if axes is None:
    count = ndim if s is None else len(s)
    if count > ndim:
      raise ValueError(f"{_full_name(fun_name)}: s {s} has more entries than the input "
                       f"has dimensions ({ndim}).")
    axes = tuple(range(ndim - count, ndim))
  else:
    axes = _canonical_axes(fun_name, _as_sequence(fun_name, "axes", axes), ndim)
  if s is not None and len(s) != len(axes):
    raise ValueError(f"{_full_name(fun_name)}: s and axes have different lengths "
                     f"(s={s}, axes={axes}).")
  lengths = []
  for i, ax in enumerate(axes):
    n = -1 if s is None else s[i]
    real_axis = fft_type in (FftType.RFFT, FftType.IRFFT) and i == len(axes) - 1
    if s is None:
      # The input's lengths (JAX 0.10.2): an empty axis transforms to an empty axis, and
      # irfft of an input of length 0 or 1 is empty there (2 * (m - 1) <= 0); only the
      # real axis of rfft needs data. Explicit lengths below 1 are errors.
      n = shape[ax]
      if real_axis and fft_type == FftType.IRFFT:
        n = max(2 * (n - 1), 0)
      if n >= 1 or not (real_axis and fft_type == FftType.RFFT):
        lengths.append(n)
        continue
    elif n == -1:  # NumPy 2: the input's length (taken literally, even for irfftn)
      n = shape[ax]
    if n < 1:
      raise ValueError(f"{_full_name(fun_name)}: invalid number of FFT data points ({n}) "
                       f"along axis {ax}; it must be at least 1.")
    lengths.append(n)
  return axes, tuple(lengths)


# ---- the transform ----

def _resize(x, axes, sizes):
  """Crop (static slice) and zero-pad `x` so that `x.shape[axes[i]] == sizes[i]`."""
  shape = util.shape(x)
  limits = list(shape)
  grow = [0] * len(shape)
  for ax, n in zip(axes, sizes):
    if n < shape[ax]:
      limits[ax] = n
    else:
      grow[ax] = n - shape[ax]
  if tuple(limits) != shape:
    x = lax_slicing.slice(x, (0,) * len(shape), limits)
  if any(grow):
    zero = np.zeros((), util.dtype_of(x))
    x = structural.pad(x, zero, [(0, g, 0) for g in grow])
  return x


def _fft_trailing(x, fft_type, axes, lengths):
  """One primitive application over `axes` (1 to 3 of them, in this order), which
  are moved to the end for it and back after."""
  nd = util.ndim(x)
  perm = [i for i in range(nd) if i not in axes] + list(axes)
  identity = perm == list(range(nd))
  if not identity:
    x = structural.transpose(x, perm)
  y = lax_fft.fft(x, fft_type, lengths)
  if not identity:
    y = structural.transpose(y, tuple(np.argsort(perm)))
  return y


def _groups(axes, lengths):
  """`axes` split into consecutive groups of at most three, the last group full."""
  out = []
  end = len(axes)
  while end > 0:
    start = max(0, end - _MAX_FFT_DIMS)
    out.append((axes[start:end], lengths[start:end]))
    end = start
  return out[::-1]


def _fft_core(fft_type, x, axes, lengths):
  """The unnormalized transform of `x` (already of the right dtype and size)."""
  if fft_type in (FftType.FFT, FftType.IFFT):
    # A complex transform over several axes is separable: their order does not
    # matter, and ascending order keeps already-trailing axes in place.
    order = sorted(range(len(axes)), key=lambda i: axes[i])
  else:
    # The real transform's own axis must stay last; the others commute.
    order = sorted(range(len(axes) - 1), key=lambda i: axes[i]) + [len(axes) - 1]
  axes = tuple(axes[i] for i in order)
  lengths = tuple(lengths[i] for i in order)
  groups = _groups(axes, lengths)
  if fft_type == FftType.IRFFT:
    # Complex inverse over the leading groups, then the real one on the last.
    for g_axes, g_lengths in groups[:-1]:
      x = _fft_trailing(x, FftType.IFFT, g_axes, g_lengths)
    g_axes, g_lengths = groups[-1]
    return _fft_trailing(x, FftType.IRFFT, g_axes, g_lengths)
  first = fft_type
  rest = FftType.IFFT if fft_type == FftType.IFFT else FftType.FFT
  for k, (g_axes, g_lengths) in enumerate(reversed(groups)):
    x = _fft_trailing(x, first if k == 0 else rest, g_axes, g_lengths)
  return x


def _normalize(y, fft_type, lengths, norm):
  size = float(np.prod(lengths, dtype=np.float64))
  if norm is None or norm == "backward" or size == 0:
    return y  # (an empty result needs no scaling)
  factor = np.sqrt(size) if norm == "ortho" else size
  if fft_type in (FftType.FFT, FftType.RFFT):
    factor = 1.0 / factor
  return ufuncs.multiply(y, np.asarray(factor, util.dtype_of(y)))


def _fftn(fun_name, fft_type, a, s, axes, norm, conj_out=False):
  _check_norm(fun_name, norm)
  x = _operand(fun_name, a, fft_type)
  shape = util.shape(x)
  axes, lengths = _resolve(fun_name, fft_type, shape, s, axes)
  if s is None and fft_type in (FftType.FFT, FftType.IFFT) and 0 in shape:
    # JAX 0.10.2: a complex transform of an empty array is that empty array (complex);
    # only an explicit length of 0 is an error.
    return util.fresh_array(x)
  if not axes:
    if fft_type in (FftType.RFFT, FftType.IRFFT):
      raise ValueError(f"{_full_name(fun_name)} needs at least one axis to transform.")
    return x  # as NumPy: nothing to transform (already converted to complex)
  in_sizes = list(lengths)
  if fft_type == FftType.IRFFT:
    in_sizes[-1] = lengths[-1] // 2 + 1
  x = _resize(x, axes, in_sizes)
  y = _fft_core(fft_type, x, axes, lengths)
  if conj_out:  # ihfft: conjugated before the scaling, as JAX (0 * (1/n) gives +0j)
    y = lax_ew.conj(y)
  return _normalize(y, fft_type, lengths, norm)


def _fft1d(fun_name, fft_type, a, n, axis, norm, conj_out=False):
  if isinstance(axis, (tuple, list)):
    raise ValueError(f"{_full_name(fun_name)} does not support multiple axes; use "
                     f"{_full_name(fun_name)}n. Got axis={axis!r}.")
  axis = _index(fun_name, "axis", axis)
  s = None if n is None else (_index(fun_name, "n", n),)
  if s is not None and s[0] < 1:
    raise ValueError(f"{_full_name(fun_name)}: invalid number of FFT data points "
                     f"n={s[0]}; it must be at least 1.")
  return _fftn(fun_name, fft_type, a, s, (axis,), norm, conj_out)


# ---- one-dimensional transforms ----

def fft(a, n=None, axis=-1, norm=None):
  """One-dimensional discrete Fourier transform (NumPy's `numpy.fft.fft`).

  Args:
    a: input array (real inputs are converted to complex).
    n: length of the transform; the input is cropped or zero-padded along
      `axis` to this length (default: its length there).
    axis: the axis to transform (default: the last).
    norm: None or "backward" (no scaling), "ortho" (1/sqrt(n)) or "forward" (1/n).

  Returns:
    A complex array, the shape of `a` with `n` along `axis`.

  Example:
    >>> jnp.fft.fft(jnp.array([1., 2., 3., 4.]))
    DeviceArray([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
  """
  return _fft1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
  """One-dimensional inverse discrete Fourier transform (`numpy.fft.ifft`).

  Args:
    a: input array.
    n: length of the transform (crop or zero-pad the input along `axis`).
    axis: the axis to transform (default: the last).
    norm: None or "backward" (scale by 1/n), "ortho" (1/sqrt(n)) or "forward"
      (no scaling).

  Returns:
    A complex array, the shape of `a` with `n` along `axis`.

  Example:
    >>> jnp.fft.ifft(jnp.array([10., -2. + 2j, -2., -2. - 2j]))
    DeviceArray([1.+0.j, 2.+0.j, 3.+0.j, 4.+0.j], dtype=complex64)
  """
  return _fft1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
  """One-dimensional discrete Fourier transform of a real input (`numpy.fft.rfft`).

  Only the `n // 2 + 1` non-negative frequencies are returned (the others are
  their complex conjugates).

  Args:
    a: real input array (complex input is a TypeError).
    n: length of the transform (crop or zero-pad the input along `axis`).
    axis: the axis to transform (default: the last).
    norm: None/"backward", "ortho" or "forward", as for `fft`.

  Returns:
    A complex array with `n // 2 + 1` entries along `axis`.

  Example:
    >>> jnp.fft.rfft(jnp.array([1., 2., 3., 4.]))
    DeviceArray([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
  """
  return _fft1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
  """Inverse of `rfft`: a real signal from its non-negative frequencies (`numpy.fft.irfft`).

  The imaginary parts of the zero frequency (and, for even `n`, of the Nyquist
  frequency) do not contribute, as in NumPy.

  Args:
    a: input array, the non-negative half of a Hermitian spectrum.
    n: length of the output along `axis` (default `2 * (a.shape[axis] - 1)`);
      the input is cropped or zero-padded to `n // 2 + 1` entries there.
    axis: the axis to transform (default: the last).
    norm: None/"backward", "ortho" or "forward", as for `ifft`.

  Returns:
    A real array with `n` entries along `axis`.

  Example:
    >>> jnp.fft.irfft(jnp.array([10., -2. + 2j, -2.]))
    DeviceArray([1., 2., 3., 4.], dtype=float32)
  """
  return _fft1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
  """Transform of a signal with Hermitian symmetry, given by its first half (`numpy.fft.hfft`).

  `hfft(a, n) == irfft(conj(a), n) * n`: the result is real.

  Args:
    a: input array, the first `n // 2 + 1` entries of a Hermitian signal.
    n: length of the output along `axis` (default `2 * (a.shape[axis] - 1)`).
    axis: the axis to transform (default: the last).
    norm: None/"backward" (no scaling), "ortho" or "forward" (1/n).

  Returns:
    A real array with `n` entries along `axis`.

  Example:
    >>> jnp.fft.hfft(jnp.array([1., 2., 3.]))
    DeviceArray([ 8., -2.,  0., -2.], dtype=float32)
  """
  _check_norm("hfft", norm)
  x = _operand("hfft", a, FftType.IRFFT)
  return _fft1d("hfft", FftType.IRFFT, lax_ew.conj(x), n, axis, _SWAPPED_NORM[norm])


def ihfft(a, n=None, axis=-1, norm=None):
  """Inverse of `hfft`: `conj(rfft(a, n)) / n` (`numpy.fft.ihfft`).

  Args:
    a: real input array.
    n: length of the transform (crop or zero-pad the input along `axis`).
    axis: the axis to transform (default: the last).
    norm: None/"backward" (1/n), "ortho" or "forward" (no scaling).

  Returns:
    A complex array with `n // 2 + 1` entries along `axis`.

  Example:
    >>> jnp.fft.ihfft(jnp.array([8., -2., 0., -2.]))
    DeviceArray([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
  """
  _check_norm("ihfft", norm)
  return _fft1d("ihfft", FftType.RFFT, a, n, axis, _SWAPPED_NORM[norm], conj_out=True)


# ---- multi-dimensional transforms ----

def fftn(a, s=None, axes=None, norm=None):
  """N-dimensional discrete Fourier transform (`numpy.fft.fftn`).

  Args:
    a: input array.
    s: transform length along each axis of `axes` (crop or zero-pad; -1 keeps
      the input's length). Default: the input's lengths.
    axes: the axes to transform (default: the last `len(s)` axes, or all).
      Any number of distinct axes; XLA transforms three at a time.
    norm: None/"backward", "ortho" or "forward", as for `fft`.

  Returns:
    A complex array.

  Example:
    >>> jnp.fft.fftn(jnp.ones((2, 2)))
    DeviceArray([[4.+0.j, 0.+0.j],
                 [0.+0.j, 0.+0.j]], dtype=complex64)
  """
  return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  """N-dimensional inverse discrete Fourier transform (`numpy.fft.ifftn`).

  Args:
    a: input array.
    s: transform length along each axis of `axes` (crop or zero-pad).
    axes: the axes to transform (default: the last `len(s)` axes, or all).
    norm: None/"backward", "ortho" or "forward", as for `ifft`.

  Returns:
    A complex array.

  Example:
    >>> jnp.fft.ifftn(jnp.array([[4., 0.], [0., 0.]]))
    DeviceArray([[1.+0.j, 1.+0.j],
                 [1.+0.j, 1.+0.j]], dtype=complex64)
  """
  return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  """N-dimensional discrete Fourier transform of a real input (`numpy.fft.rfftn`).

  The last axis of `axes` keeps `s[-1] // 2 + 1` frequencies; the others are
  transformed in full.

  Args:
    a: real input array.
    s: transform length along each axis of `axes` (crop or zero-pad).
    axes: the axes to transform (default: the last `len(s)` axes, or all).
    norm: None/"backward", "ortho" or "forward", as for `fft`.

  Returns:
    A complex array.

  Example:
    >>> jnp.fft.rfftn(jnp.ones((2, 4)))
    DeviceArray([[8.+0.j, 0.+0.j, 0.+0.j],
                 [0.+0.j, 0.+0.j, 0.+0.j]], dtype=complex64)
  """
  return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  """Inverse of `rfftn` (`numpy.fft.irfftn`).

  Args:
    a: input array (the output of `rfftn`).
    s: output length along each axis of `axes`; along the last one the input
      is resized to `s[-1] // 2 + 1`. Default: the input's lengths, and
      `2 * (m - 1)` along the last axis of length m.
    axes: the axes to transform (default: the last `len(s)` axes, or all).
    norm: None/"backward", "ortho" or "forward", as for `ifft`.

  Returns:
    A real array.

  Example:
    >>> jnp.fft.irfftn(jnp.array([[8., 0., 0.], [0., 0., 0.]]))
    DeviceArray([[1., 1., 1., 1.],
                 [1., 1., 1., 1.]], dtype=float32)
  """
  return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


_DOC_2D = """{summary}

  Args:
    a: {a_doc}.
    s: {s_doc}.
    axes: the axes to transform (default: the last two).
    norm: None/"backward", "ortho" or "forward".

  Returns:
    {returns}.

  Example:
    >>> {example}
  """


def _two_dim(name, fft_type, summary, a_doc, s_doc, returns, example):
  """The 2-D member `name` of a family: its n-D transform with `axes` defaulting to the
  last two. The four share their code and the `_DOC_2D` frame of their docstrings."""
  def transform(a, s=None, axes=(-2, -1), norm=None):
    return _fftn(name, fft_type, a, s, axes, norm)
  transform.__name__ = transform.__qualname__ = name
  transform.__doc__ = _DOC_2D.format(summary=summary, a_doc=a_doc, s_doc=s_doc,
                                     returns=returns, example=example)
  return transform


_CROP = "transform lengths along `axes` (crop or zero-pad)"
fft2 = _two_dim(
    "fft2", FftType.FFT,
    "Two-dimensional discrete Fourier transform (`numpy.fft.fft2`): `fftn` over `axes`.",
    "input array", _CROP, "A complex array",
    "jnp.fft.fft2(jnp.array([[1., 2.], [3., 4.]]))\n"
    "    DeviceArray([[10.+0.j, -2.+0.j],\n"
    "                 [-4.+0.j,  0.+0.j]], dtype=complex64)")
ifft2 = _two_dim(
    "ifft2", FftType.IFFT,
    "Two-dimensional inverse discrete Fourier transform (`numpy.fft.ifft2`).",
    "input array", _CROP, "A complex array",
    "jnp.fft.ifft2(jnp.array([[10., -2.], [-4., 0.]]))\n"
    "    DeviceArray([[1.+0.j, 2.+0.j],\n"
    "                 [3.+0.j, 4.+0.j]], dtype=complex64)")
rfft2 = _two_dim(
    "rfft2", FftType.RFFT,
    "Two-dimensional transform of a real input (`numpy.fft.rfft2`): `rfftn` over `axes`.",
    "real input array", _CROP, "A complex array with `s[-1] // 2 + 1` entries along `axes[-1]`",
    "jnp.fft.rfft2(jnp.array([[1., 2.], [3., 4.]]))\n"
    "    DeviceArray([[10.+0.j, -2.+0.j],\n"
    "                 [-4.+0.j,  0.+0.j]], dtype=complex64)")
irfft2 = _two_dim(
    "irfft2", FftType.IRFFT,
    "Inverse of `rfft2` (`numpy.fft.irfft2`): `irfftn` over `axes`.",
    "input array", "output lengths along `axes` (default: as `irfftn`)", "A real array",
    "jnp.fft.irfft2(jnp.array([[10., -2.], [-4., 0.]]))\n"
    "    DeviceArray([[1., 2.],\n"
    "                 [3., 4.]], dtype=float32)")


# ---- frequencies and shifts ----

def _freq_args(fun_name, n, d, dtype):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of {_full_name(fun_name)} only takes an int, got "
                     f"n={list(n)}.")
  n = _index(fun_name, "n", n)
  if n < 1:
    raise ValueError(f"{_full_name(fun_name)}: n must be a positive integer, got {n}.")
  if isinstance(d, (list, tuple)) or util.ndim(d) != 0:
    raise ValueError(f"The d argument of {_full_name(fun_name)} only takes a single value, "
                     f"got d={d!r}.")
  out_dtype = util.check_dtype(dtype, fun_name)
  if out_dtype is None:
    out_dtype = dtypes.default_float_dtype()
  # Computed in the real floating type of the request; an integer request gets the
  # default float's values truncated, as in JAX.
  calc = dtypes.to_real_dtype(dtypes.to_inexact_dtype(out_dtype))
  return n, out_dtype, np.dtype(calc)


def _freqs(k, n, d, out_dtype, calc):
  if isinstance(d, (Array, Tracer)):
    # A device (possibly traced) spacing: compute on the device.
    k = creation.asarray(k.astype(calc))
    denom = ufuncs.multiply(util.convert(d, calc), np.asarray(n, calc))
    return util.convert(ufuncs.true_divide(k, denom), out_dtype)
  # A host spacing: compute exactly on the host (double precision), round once.
  values = k / (np.float64(np.real(d)) * n)
  return creation.asarray(values.astype(calc).astype(out_dtype))


def fftfreq(n, d=1.0, *, dtype=None):
  """The sample frequencies of an `n`-point `fft` (`numpy.fft.fftfreq`).

  `[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)`.

  Args:
    n: window length (a positive int).
    d: sample spacing (a scalar; may be a traced value). Default 1.
    dtype: dtype of the result (default: the default float type).

  Returns:
    An array of `n` frequencies.

  Example:
    >>> jnp.fft.fftfreq(4, d=0.5)
    DeviceArray([ 0. ,  0.5, -1. , -0.5], dtype=float32)
  """
  n, out_dtype, calc = _freq_args("fftfreq", n, d, dtype)
  k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
  return _freqs(k, n, d, out_dtype, calc)


def rfftfreq(n, d=1.0, *, dtype=None):
  """The sample frequencies of an `n`-point `rfft` (`numpy.fft.rfftfreq`).

  `[0, 1, ..., n // 2] / (d * n)`.

  Args:
    n: window length (a positive int).
    d: sample spacing (a scalar; may be a traced value). Default 1.
    dtype: dtype of the result (default: the default float type).

  Returns:
    An array of `n // 2 + 1` frequencies.

  Example:
    >>> jnp.fft.rfftfreq(5, d=0.1)
    DeviceArray([0., 2., 4.], dtype=float32)
  """
  n, out_dtype, calc = _freq_args("rfftfreq", n, d, dtype)
  return _freqs(np.arange(0, n // 2 + 1), n, d, out_dtype, calc)


def _shift(fun_name, x, axes, sign):
  util.check_arraylike_or_list(fun_name, x)
  x = util.to_array(x)
  shape = util.shape(x)
  if axes is None:
    axes = tuple(range(len(shape)))
  elif isinstance(axes, (int, np.integer)):
    axes = (axes,)
  axes = tuple(util.canonicalize_axis(_index(fun_name, "axes", ax), len(shape))
               for ax in axes)
  if not axes:
    return util.fresh_array(x)  # a jit in JAX: a new value even when nothing moves
  shifts = tuple(sign * (shape[ax] // 2) for ax in axes)
  return shape_ops.roll(x, shifts, axes)


def fftshift(x, axes=None):
  """Move the zero-frequency entry to the middle of the spectrum (`numpy.fft.fftshift`).

  A roll by `n // 2` along each axis of `axes`.

  Args:
    x: input array.
    axes: an int or a sequence of ints (default: every axis).

  Returns:
    The rolled array (same shape and dtype).

  Example:
    >>> jnp.fft.fftshift(jnp.fft.fftfreq(5))
    DeviceArray([-0.4, -0.2,  0. ,  0.2,  0.4], dtype=float32)
  """
  return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
  """Inverse of `fftshift` (`numpy.fft.ifftshift`): a roll by `-(n // 2)` per axis.

  Args:
    x: input array.
    axes: an int or a sequence of ints (default: every axis).

  Returns:
    The rolled array (same shape and dtype).

  Example:
    >>> jnp.fft.ifftshift(jnp.array([-0.4, -0.2, 0., 0.2, 0.4]))
    DeviceArray([ 0. ,  0.2,  0.4, -0.4, -0.2], dtype=float32)
  """
  return _shift("ifftshift", x, axes, -1)
