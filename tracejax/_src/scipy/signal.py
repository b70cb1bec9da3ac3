"""`jax.scipy.signal`: convolutions, detrending and spectral analysis with SciPy's conventions.

* `convolve` / `correlate` (N-d) and `convolve2d` / `correlate2d` lower to one
  `lax.conv_general_dilated` (a cross-correlation: convolution flips the kernel);
  the modes are paddings of that convolution, so nothing is computed and then
  thrown away. `fftconvolve` multiplies `jnp.fft` transforms over `axes`.
* `stft`, `istft`, `csd` and `welch` follow SciPy's legacy spectral helper:
  segments are a gather of overlapping windows, and `istft`'s overlap-add is one
  scatter-add. Windows named by a string (or a `(name, param)` tuple) come from
  the small host-side table below, built periodic ("fftbins") as SciPy's
  `get_window` builds them for spectral analysis; an array window is used as is.

Integer inputs become the default float dtype, as in JAX. Everything here is a
composition of jnp/lax operations, so it jits, vmaps and differentiates.
"""
import operator
import warnings

import numpy as np

from tracejax._src import dtypes
from tracejax._src.numpy import util
import tracejax.lax as lax
import tracejax.numpy as jnp

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend",
           "stft", "istft", "csd", "welch"]

_MODES = ("full", "same", "valid")


def _check_mode(fun_name, mode):
  if mode not in _MODES:
    raise ValueError(f"{fun_name}: mode must be one of {list(_MODES)}, got {mode!r}")


def _inexact_pair(fun_name, in1, in2):
  util.check_arraylike(fun_name, in1, in2)
  in1, in2 = util.promote_dtypes_inexact(util.to_array(in1), util.to_array(in2))
  if in1.ndim != in2.ndim:
    raise ValueError(f"{fun_name}: in1 and in2 must have the same number of dimensions, "
                     f"got {in1.ndim} and {in2.ndim}")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"{fun_name}: in1 and in2 must not be empty")
  return in1, in2


def _valid_swap(fun_name, s1, s2):
  """True when 'valid' mode needs in2 as the larger operand; error when neither is."""
  if all(a >= b for a, b in zip(s1, s2)):
    return False
  if all(b >= a for a, b in zip(s1, s2)):
    return True
  raise ValueError(f"{fun_name}: for mode='valid', one input must be at least as large as "
                   f"the other in every dimension, got shapes {s1} and {s2}")


def _mode_padding(mode, kernel_shape):
  """Padding of a kernel-sized cross-correlation that yields SciPy's `mode` output."""
  pads = []
  for k in kernel_shape:
    if mode == "full":
      pads.append((k - 1, k - 1))
    elif mode == "same":
      # SciPy centres the 'same' output in the full one: it starts at (k - 1) // 2.
      lo = k - 1 - (k - 1) // 2
      pads.append((lo, k - 1 - lo))
    else:
      pads.append((0, 0))
  return pads


def _xcorr(lhs, rhs, padding, precision):
  """Plain N-d cross-correlation sum_n lhs[n + k] rhs[n] (no conjugation), `padding` given."""
  out = lax.conv_general_dilated(lhs[None, None], rhs[None, None], (1,) * lhs.ndim, padding,
                                 precision=precision)
  return out[0, 0]


def _convolve_nd(fun_name, in1, in2, mode, precision):
  if mode == "valid" and _valid_swap(fun_name, in1.shape, in2.shape):
    in1, in2 = in2, in1   # convolution commutes, and the larger operand slides
  return _xcorr(in1, jnp.flip(in2), _mode_padding(mode, in2.shape), precision)


def _check_method(method):
  if method not in ("auto", "direct", "fft"):
    raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """N-dimensional convolution of `in1` with `in2`, as `scipy.signal.convolve`.

  Args:
    in1, in2: arrays with the same number of dimensions.
    mode: 'full' (every overlap), 'same' (the size of `in1`, centred) or 'valid'
      (full overlaps only; one input must be at least as large as the other).
    method: 'auto' or 'direct' (one XLA convolution) or 'fft' (`fftconvolve`).
    precision: passed to `lax.conv_general_dilated`.

  Example:
    >>> convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  _check_mode("convolve", mode)
  _check_method(method)
  in1, in2 = _inexact_pair("convolve", in1, in2)
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  return _convolve_nd("convolve", in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """N-dimensional cross-correlation sum_n in1[n + k] conj(in2[n]), as `scipy.signal.correlate`.

  Args: as `convolve`; the output index k runs over every lag that `mode` keeps.

  Example:
    >>> correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
    Array([0.5, 2. , 3.5, 3. , 0. ], dtype=float32)
  """
  _check_mode("correlate", mode)
  _check_method(method)
  in1, in2 = _inexact_pair("correlate", in1, in2)
  kernel = jnp.flip(jnp.conj(in2))
  if method == "fft":
    return fftconvolve(in1, kernel, mode=mode)
  return _convolve_nd("correlate", in1, kernel, mode, precision)


_BOUNDARIES = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap",
               "symm": "symmetric", "symmetric": "symmetric"}


def _conv2d(fun_name, in1, in2, mode, boundary, fillvalue, precision, flip):
  _check_mode(fun_name, mode)
  if boundary not in _BOUNDARIES:
    raise ValueError(f"{fun_name}: boundary must be one of {sorted(_BOUNDARIES)}, "
                     f"got {boundary!r}")
  in1, in2 = _inexact_pair(fun_name, in1, in2)
  if in1.ndim != 2:
    raise ValueError(f"{fun_name}() only supports 2-dimensional inputs, got in1.ndim="
                     f"{in1.ndim}")
  swapped = mode == "valid" and _valid_swap(fun_name, in1.shape, in2.shape)
  if swapped:
    in1, in2 = in2, in1
  kernel = jnp.flip(in2) if flip else jnp.conj(in2)
  pads = _mode_padding(mode, in2.shape)
  if not flip:
    # SciPy's correlate2d centres 'same' on the unflipped kernel: the odd point goes last.
    pads = [(hi, lo) for lo, hi in pads]
  pad_mode = _BOUNDARIES[boundary]
  if pad_mode == "constant" and isinstance(fillvalue, (int, float)) and fillvalue == 0:
    out = _xcorr(in1, kernel, pads, precision)
  else:
    # Any other boundary is an explicit extension of in1, then a 'valid' pass.
    kw = {"constant_values": jnp.asarray(fillvalue, in1.dtype)} if pad_mode == "constant" else {}
    ext = jnp.pad(in1, pads, mode=pad_mode, **kw)
    out = _xcorr(ext, kernel, [(0, 0)] * 2, precision)
  if swapped and not flip:
    out = jnp.flip(out)   # SciPy's correlate2d reverses the swapped result
  return out


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-D convolution, as `scipy.signal.convolve2d`.

  Args:
    in1, in2: 2-D arrays.
    mode: 'full', 'same' or 'valid' (see `convolve`).
    boundary: how `in1` is extended: 'fill' (with `fillvalue`, default 0), 'wrap'
      (periodic) or 'symm' (mirrored, edge repeated).
    fillvalue: the value outside `in1` for boundary='fill'.
    precision: passed to `lax.conv_general_dilated`.

  Example:
    >>> convolve2d(jnp.ones((3, 3)), jnp.ones((2, 2)), mode='valid')
    Array([[4., 4.],
           [4., 4.]], dtype=float32)
  """
  return _conv2d("convolve2d", in1, in2, mode, boundary, fillvalue, precision, flip=True)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-D cross-correlation, as `scipy.signal.correlate2d` (arguments as `convolve2d`).

  Example:
    >>> correlate2d(jnp.eye(2), jnp.array([[1., 2.], [3., 4.]]), mode='valid')
    Array([[5.]], dtype=float32)
  """
  return _conv2d("correlate2d", in1, in2, mode, boundary, fillvalue, precision, flip=False)


def _centered(x, shape):
  start = [(cur - new) // 2 for cur, new in zip(x.shape, shape)]
  return lax.slice(x, start, [s + n for s, n in zip(start, shape)])


def fftconvolve(in1, in2, mode="full", axes=None):
  """Convolution through FFTs, as `scipy.signal.fftconvolve`.

  Args:
    in1, in2: arrays with the same number of dimensions.
    mode: 'full', 'same' or 'valid' (see `convolve`).
    axes: the axes to convolve over (default all); along the others the inputs
      broadcast (their lengths must be equal or 1).

  Example:
    >>> fftconvolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))  # doctest: +SKIP
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
  """
  _check_mode("fftconvolve", mode)
  in1, in2 = _inexact_pair("fftconvolve", in1, in2)
  ndim = in1.ndim
  if axes is None:
    axes = tuple(range(ndim))
  else:
    axes = util.canonicalize_axes(
        list(axes) if isinstance(axes, (tuple, list)) else axes, ndim)
  # Length-1 axes are a broadcast multiplication, as SciPy treats them.
  axes = [a for a in axes if in1.shape[a] != 1 and in2.shape[a] != 1]
  s1, s2 = in1.shape, in2.shape
  for a in range(ndim):
    if a not in axes and s1[a] != s2[a] and s1[a] != 1 and s2[a] != 1:
      raise ValueError(f"fftconvolve: incompatible shapes for in1 and in2: {s1} and {s2}")
  if mode == "valid" and axes and _valid_swap(
      "fftconvolve", [s1[a] for a in axes], [s2[a] for a in axes]):
    in1, in2 = in2, in1
    s1, s2 = s2, s1
  if not axes:
    ret = in1 * in2
  else:
    full = [s1[a] + s2[a] - 1 for a in axes]
    if dtypes.is_complex(in1.dtype):
      ret = jnp.fft.ifftn(jnp.fft.fftn(in1, full, axes) * jnp.fft.fftn(in2, full, axes),
                          full, axes)
    else:
      ret = jnp.fft.irfftn(jnp.fft.rfftn(in1, full, axes) * jnp.fft.rfftn(in2, full, axes),
                           full, axes)
    ret = ret.astype(in1.dtype)
  if mode == "full":
    return ret
  if mode == "same":
    return _centered(ret, s1)
  shape = [s1[a] - s2[a] + 1 if a in axes else ret.shape[a] for a in range(ndim)]
  return _centered(ret, shape)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
  """Remove a least-squares line (or the mean) along `axis`, as `scipy.signal.detrend`.

  Args:
    data: the array.
    axis: the axis along which to detrend.
    type: 'linear' (or 'l'): subtract a line fitted to each piece between breakpoints;
      'constant' (or 'c'): subtract the mean.
    bp: breakpoints (static ints) splitting the axis into independently fitted pieces.
    overwrite_data: accepted for SciPy compatibility; has no effect.

  Example:
    >>> detrend(jnp.array([1., 2., 3., 5.]))
    Array([ 0.2, -0.1, -0.4,  0.3], dtype=float32)
  """
  del overwrite_data
  if type not in ("linear", "l", "constant", "c"):
    raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
  util.check_arraylike("detrend", data)
  (data,) = util.promote_dtypes_inexact(util.to_array(data))
  axis = util.canonicalize_axis(axis, data.ndim)
  if type in ("constant", "c"):
    return data - jnp.mean(data, axis, keepdims=True)
  n = data.shape[axis]
  try:
    bp = np.asarray(bp, dtype=np.int64).reshape(-1)
  except (TypeError, ValueError):
    raise TypeError(f"detrend: bp must be static integers, got {bp!r}") from None
  bp = np.unique(np.concatenate([[0], bp, [n]]))
  if np.any(bp > n) or np.any(bp < 0):
    raise ValueError("detrend: breakpoints must be between 0 and the length of data along "
                     f"axis ({n}), got {bp}")
  x = jnp.moveaxis(data, axis, -1)
  pieces = []
  for lo, hi in zip(bp[:-1], bp[1:]):
    seg = x[..., int(lo):int(hi)]
    t = np.arange(hi - lo, dtype=np.float64)
    t -= t.mean()
    tt = float((t * t).sum())
    tj = jnp.asarray(t, x.dtype)
    resid = seg - jnp.mean(seg, -1, keepdims=True)
    if tt > 0:   # a one-point piece is fitted exactly by its mean
      slope = jnp.sum(resid * tj, -1, keepdims=True) / tt
      resid = resid - slope * tj
    pieces.append(resid)
  out = pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, -1)
  return jnp.moveaxis(out, -1, axis)


# ---- windows (host side, float64): the periodic forms SciPy's get_window returns ----

def _cosine_sum(m, coeffs):
  n = np.arange(m)
  return sum((-1) ** k * a * np.cos(2 * np.pi * k * n / max(m - 1, 1))
             for k, a in enumerate(coeffs))


def _triang(m):
  n = np.arange(1, (m + 1) // 2 + 1)
  if m % 2 == 0:
    w = (2 * n - 1.0) / m
    return np.concatenate([w, w[::-1]])
  w = 2 * n / (m + 1.0)
  return np.concatenate([w, w[-2::-1]])


def _bartlett(m):
  n = np.arange(m)
  return np.where(n <= (m - 1) / 2.0, 2.0 * n / (m - 1), 2.0 - 2.0 * n / (m - 1))


def _parzen(m):
  n = np.arange(-(m - 1) / 2.0, (m - 1) / 2.0 + 0.5, 1.0)
  na = n[n < -(m - 1) / 4.0]
  nb = n[np.abs(n) <= (m - 1) / 4.0]
  wa = 2 * (1 - np.abs(na) / (m / 2.0)) ** 3.0
  wb = 1 - 6 * (np.abs(nb) / (m / 2.0)) ** 2.0 + 6 * (np.abs(nb) / (m / 2.0)) ** 3.0
  return np.concatenate([wa, wb, wa[::-1]])


def _bohman(m):
  fac = np.abs(np.linspace(-1, 1, m)[1:-1])
  w = (1 - fac) * np.cos(np.pi * fac) + 1.0 / np.pi * np.sin(np.pi * fac)
  return np.concatenate([[0.0], w, [0.0]])


def _tukey(m, alpha=0.5):
  if alpha <= 0:
    return np.ones(m)
  if alpha >= 1:
    return _cosine_sum(m, (0.5, 0.5))
  n = np.arange(m)
  width = int(np.floor(alpha * (m - 1) / 2.0))
  n1, n3 = n[:width + 1], n[m - width - 1:]
  w1 = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * n1 / alpha / (m - 1))))
  w3 = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * n3 / alpha / (m - 1))))
  return np.concatenate([w1, np.ones(m - 2 * (width + 1)), w3])


def _kaiser(m, beta):
  n = np.arange(m)
  alpha = (m - 1) / 2.0
  return np.i0(beta * np.sqrt(1 - ((n - alpha) / alpha) ** 2.0)) / np.i0(beta)


def _gaussian(m, std):
  n = np.arange(m) - (m - 1.0) / 2.0
  return np.exp(-n ** 2 / (2 * std * std))


def _exponential(m, center=None, tau=1.0):
  center = (m - 1) / 2 if center is None else center
  return np.exp(-np.abs(np.arange(m) - center) / tau)


# name -> (symmetric-window function of (m, *params), number of required params)
_WINDOWS = {
    "boxcar": (lambda m: np.ones(m), 0),
    "triang": (_triang, 0),
    "bartlett": (_bartlett, 0),
    "hann": (lambda m: _cosine_sum(m, (0.5, 0.5)), 0),
    "hamming": (lambda m: _cosine_sum(m, (0.54, 0.46)), 0),
    "blackman": (lambda m: _cosine_sum(m, (0.42, 0.50, 0.08)), 0),
    "blackmanharris": (lambda m: _cosine_sum(m, (0.35875, 0.48829, 0.14128, 0.01168)), 0),
    "nuttall": (lambda m: _cosine_sum(m, (0.3635819, 0.4891775, 0.1365995, 0.0106411)), 0),
    "flattop": (lambda m: _cosine_sum(m, (0.21557895, 0.41663158, 0.277263158, 0.083578947,
                                          0.006947368)), 0),
    "parzen": (_parzen, 0),
    "bohman": (_bohman, 0),
    "cosine": (lambda m: np.sin(np.pi / m * (np.arange(m) + 0.5)), 0),
    "tukey": (_tukey, 0),
    "kaiser": (_kaiser, 1),
    "gaussian": (_gaussian, 1),
    "exponential": (_exponential, 0),
}
_ALIASES = {
    "box": "boxcar", "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar",
    "triangle": "triang", "tri": "triang", "bart": "bartlett", "brt": "bartlett",
    "hanning": "hann", "han": "hann", "hamm": "hamming", "ham": "hamming",
    "black": "blackman", "blk": "blackman", "blackharr": "blackmanharris", "bkh": "blackmanharris",
    "nutl": "nuttall", "nut": "nuttall", "flat": "flattop", "flt": "flattop",
    "parz": "parzen", "par": "parzen", "bman": "bohman", "bmn": "bohman",
    "halfcosine": "cosine", "tuk": "tukey", "ksr": "kaiser", "gauss": "gaussian",
    "gss": "gaussian", "poisson": "exponential",
}


def get_window(window, nx):
  """The periodic window `window` of length nx: a name, `(name, *params)` or a Kaiser beta."""
  if isinstance(window, (int, float)) and not isinstance(window, bool):
    name, params = "kaiser", (float(window),)
  elif isinstance(window, str):
    name, params = window, ()
  elif isinstance(window, tuple) and window and isinstance(window[0], str):
    name, params = window[0], tuple(window[1:])
  else:
    raise ValueError(f"window must be a string, a tuple (name, *params) or an array, "
                     f"got {window!r}")
  key = _ALIASES.get(name.lower(), name.lower())
  if key not in _WINDOWS:
    raise ValueError(f"Unknown window type {name!r}; known: {sorted(_WINDOWS)}")
  fun, nreq = _WINDOWS[key]
  if len(params) < nreq:
    raise ValueError(f"The {key!r} window needs one or more parameters -- pass a tuple.")
  if nx <= 1:
    return np.ones(max(nx, 0))
  # A periodic window is the symmetric one of length nx + 1 without its last point.
  return np.asarray(fun(nx + 1, *params), np.float64)[:nx]


# ---- spectral analysis ----

def _triage_window(fun_name, window, nperseg, input_length):
  """(window array, nperseg), following SciPy's rules for string and array windows."""
  if isinstance(window, (str, tuple)):
    if nperseg is None:
      nperseg = 256
    if nperseg > input_length:
      warnings.warn(f"nperseg = {nperseg} is greater than input length = {input_length}, "
                    f"using nperseg = {input_length}", stacklevel=3)
      nperseg = input_length
    return get_window(window, nperseg), nperseg
  util.check_arraylike(fun_name, window)
  win = window if util.is_array(window) else np.asarray(window)
  if win.ndim != 1:
    raise ValueError(f"{fun_name}: window must be 1-D")
  if input_length < win.shape[0]:
    raise ValueError(f"{fun_name}: window is longer than input signal")
  if nperseg is None:
    nperseg = win.shape[0]
  elif nperseg != win.shape[0]:
    raise ValueError(f"{fun_name}: value specified for nperseg is different from length "
                     "of window")
  return win, nperseg


def _extend(x, n, kind):
  """SciPy's boundary extensions (even/odd/constant/zeros) of the last axis by n points."""
  if n < 1:
    return x
  if kind in ("even", "odd") and n > x.shape[-1] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                     f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
  if kind == "even":
    left, right = x[..., n:0:-1], x[..., -2:-(n + 2):-1]
  elif kind == "odd":
    left = 2 * x[..., :1] - x[..., n:0:-1]
    right = 2 * x[..., -1:] - x[..., -2:-(n + 2):-1]
  elif kind == "constant":
    left = jnp.repeat(x[..., :1], n, axis=-1)
    right = jnp.repeat(x[..., -1:], n, axis=-1)
  else:
    zeros = jnp.zeros(x.shape[:-1] + (n,), x.dtype)
    left = right = zeros
  return jnp.concatenate([left, x, right], -1)


def _positive_int(fun_name, name, value):
  try:
    value = operator.index(value)
  except TypeError:
    raise TypeError(f"{fun_name}: {name} must be an integer, got {value!r}") from None
  if value < 1:
    raise ValueError(f"{fun_name}: {name} must be a positive integer, got {value}")
  return value


def _spectral(fun_name, x, y, fs, window, nperseg, noverlap, nfft, detrend_type,
              return_onesided, scaling, axis, mode, boundary=None, padded=False):
  """SciPy's legacy `_spectral_helper`: (freqs, times, result with freq at `axis`, time last)."""
  if boundary not in ("even", "odd", "constant", "zeros", None):
    raise ValueError(f"{fun_name}: unknown boundary option {boundary!r}, must be one of "
                     "['even', 'odd', 'constant', 'zeros', None]")
  if scaling not in ("density", "spectrum"):
    raise ValueError(f"{fun_name}: unknown scaling: {scaling!r}")
  same = y is None or y is x   # SciPy: the same object gives a real auto-spectrum
  util.check_arraylike(fun_name, x)
  if same:
    (x,) = util.promote_dtypes_inexact(util.to_array(x))
  else:
    util.check_arraylike(fun_name, y)
    x, y = util.promote_dtypes_inexact(util.to_array(x), util.to_array(y))
  axis = operator.index(axis)
  axis_c = util.canonicalize_axis(axis, x.ndim)
  x = jnp.moveaxis(x, axis_c, -1)
  if not same:
    y = jnp.moveaxis(y, util.canonicalize_axis(axis, y.ndim), -1)
    try:
      outer = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    except ValueError:
      raise ValueError(f"{fun_name}: x and y cannot be broadcast together.") from None
    del outer
    if x.shape[-1] < y.shape[-1]:
      x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, y.shape[-1] - x.shape[-1])])
    elif y.shape[-1] < x.shape[-1]:
      y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, x.shape[-1] - y.shape[-1])])
  if nperseg is not None:
    nperseg = _positive_int(fun_name, "nperseg", nperseg)
  win, nperseg = _triage_window(fun_name, window, nperseg, x.shape[-1])
  if nfft is None:
    nfft = nperseg
  else:
    nfft = operator.index(nfft)
    if nfft < nperseg:
      raise ValueError(f"{fun_name}: nfft must be greater than or equal to nperseg.")
  noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
  if noverlap >= nperseg:
    raise ValueError(f"{fun_name}: noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  if boundary is not None:
    x = _extend(x, nperseg // 2, boundary)
    if not same:
      y = _extend(y, nperseg // 2, boundary)
  if padded:
    # Pad to a whole number of segments (after the boundary extension, as SciPy).
    nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, nadd)])
    if not same:
      y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, nadd)])
  cdtype = dtypes.to_complex_dtype(x.dtype)
  rdtype = dtypes.to_real_dtype(cdtype)
  if isinstance(win, np.ndarray):
    win = jnp.asarray(win, cdtype if np.iscomplexobj(win) else rdtype)
  if scaling == "density":
    scale = 1.0 / (fs * jnp.sum(win * win))
  else:
    scale = 1.0 / jnp.sum(win) ** 2
  if mode == "stft":
    scale = jnp.sqrt(scale)
  complex_in = dtypes.is_complex(x.dtype) or (not same and dtypes.is_complex(y.dtype))
  if return_onesided and complex_in:
    warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
  onesided = return_onesided and not complex_in
  freqs = (np.fft.rfftfreq(nfft) if onesided else np.fft.fftfreq(nfft))
  freqs = jnp.asarray(freqs, rdtype) * jnp.asarray(fs, rdtype)

  def segments_fft(z):
    nseg = (z.shape[-1] - nperseg) // nstep + 1
    idx = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]
    seg = z[..., idx]                                   # (..., nseg, nperseg)
    if detrend_type is not False and detrend_type is not None:
      if callable(detrend_type):
        # A user function sees the time axis where it was in x (SciPy's wrapper).
        seg = detrend_type(seg) if axis == -1 else \
            jnp.moveaxis(detrend_type(jnp.moveaxis(seg, -1, axis)), axis, -1)
      else:
        seg = detrend(seg, axis=-1, type=detrend_type)
    seg = win * seg
    if onesided:
      return jnp.fft.rfft(jnp.real(seg), n=nfft)
    return jnp.fft.fft(seg, n=nfft)

  result = segments_fft(x)
  if not same:
    result = jnp.conj(result) * segments_fft(y)
  elif mode == "psd":
    result = jnp.conj(result) * result
  result = result * scale
  if onesided and mode == "psd":
    weight = np.full(result.shape[-1], 2.0)
    weight[0] = 1.0
    if nfft % 2 == 0:
      weight[-1] = 1.0   # the Nyquist bin has no mirror image
    result = result * jnp.asarray(weight, rdtype)
  time = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nstep)
  if boundary is not None:
    time = time - nperseg / 2
  time = jnp.asarray(time, rdtype) / jnp.asarray(fs, rdtype)
  result = result.astype(cdtype)
  if same and mode != "stft":
    result = jnp.real(result)
  out_axis = axis - 1 if axis < 0 else axis
  return freqs, time, jnp.moveaxis(result, -1, out_axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """Short-time Fourier transform, as `scipy.signal.stft` (scaling 'spectrum').

  Args:
    x: the signal.
    fs: sampling frequency.
    window: a window name ('hann', 'hamming', 'boxcar', 'blackman', 'tukey', ...), a
      tuple `(name, param)` (e.g. `('kaiser', 8.0)`), or a 1-D array of length nperseg.
    nperseg: segment length (capped at the signal length for named windows).
    noverlap: points shared by consecutive segments (default nperseg // 2).
    nfft: FFT length (default nperseg).
    detrend: False, 'constant', 'linear' or a function of a segment array.
    return_onesided: a one-sided spectrum for real input.
    boundary: extend the signal by nperseg // 2 at both ends: 'zeros', 'even', 'odd',
      'constant' or None.
    padded: zero-pad the end to a whole number of segments.
    axis: the time axis of x.

  Returns:
    `(f, t, Zxx)`: frequencies, segment times and the STFT (frequency at `axis`, time last).

  Example:
    >>> f, t, Z = stft(jnp.sin(jnp.arange(64.)), nperseg=16)
    >>> Z.shape
    (9, 9)
  """
  return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                   return_onesided, "spectrum", axis, "stft", boundary, padded)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
  """Cross power spectral density by Welch's method, as `scipy.signal.csd`.

  Args:
    x, y: the signals (y None means y = x, giving a real power spectrum).
    fs, window, nperseg, noverlap, nfft, detrend, return_onesided, axis: as `stft`
      (nperseg defaults to 256; detrend to 'constant').
    scaling: 'density' (V**2/Hz) or 'spectrum' (V**2).
    average: 'mean' or 'median' (bias-corrected) over segments.

  Returns:
    `(f, Pxy)`.

  Example:
    >>> f, p = csd(jnp.arange(32.), jnp.ones(32), nperseg=8)
    >>> p.shape
    (5,)
  """
  if average not in ("mean", "median"):
    raise ValueError(f'csd: average must be "median" or "mean", got {average!r}')
  freqs, _, pxy = _spectral("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling, axis, "psd")
  if pxy.ndim >= 2 and pxy.size > 0:
    if pxy.shape[-1] > 1:
      if average == "median":
        k = pxy.shape[-1]
        ii = 2 * np.arange(1, (k - 1) // 2 + 1)
        bias = 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)
        if dtypes.is_complex(pxy.dtype):
          pxy = (jnp.median(jnp.real(pxy), -1) + 1j * jnp.median(jnp.imag(pxy), -1))
        else:
          pxy = jnp.median(pxy, -1)
        pxy = pxy / jnp.asarray(bias, dtypes.to_real_dtype(pxy.dtype))
      else:
        pxy = jnp.mean(pxy, -1)
    else:
      pxy = jnp.reshape(pxy, pxy.shape[:-1])
  return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1, average="mean"):
  """Power spectral density by Welch's method, as `scipy.signal.welch` (arguments as `csd`).

  Example:
    >>> f, p = welch(jnp.sin(jnp.arange(256.)), nperseg=64)
    >>> p.shape
    (33,)
  """
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, jnp.real(pxx)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """Inverse short-time Fourier transform, as `scipy.signal.istft` (scaling 'spectrum').

  Args:
    Zxx: the STFT, at least 2-D.
    fs, window, noverlap: as in `stft`.
    nperseg: segment length (default from the frequency axis: 2 (n - 1) if one-sided).
    nfft: FFT length (default nperseg, or the two-sided length).
    input_onesided: Zxx holds the one-sided spectrum of a real signal.
    boundary: remove the nperseg // 2 points `stft` added at each end.
    time_axis, freq_axis: where the segments and frequencies are in Zxx.

  Returns:
    `(t, x)`: times `arange(x.shape[0]) / fs` (SciPy's convention) and the signal,
    with time at the position of `time_axis`.

  Example:
    >>> x = jnp.sin(jnp.arange(64.))
    >>> t, y = istft(stft(x, nperseg=16)[2], nperseg=16)
    >>> y.shape
    (64,)
  """
  util.check_arraylike("istft", Zxx)
  Zxx = util.to_array(Zxx)
  cdtype = dtypes.to_complex_dtype(dtypes.to_inexact_dtype(Zxx.dtype))
  Zxx = Zxx.astype(cdtype)
  rdtype = dtypes.to_real_dtype(cdtype)
  if Zxx.ndim < 2:
    raise ValueError("istft: input stft must be at least 2d!")
  freq_axis = util.canonicalize_axis(freq_axis, Zxx.ndim)
  time_axis = util.canonicalize_axis(time_axis, Zxx.ndim)
  if freq_axis == time_axis:
    raise ValueError("istft: must specify differing time and frequency axes!")
  nseg = Zxx.shape[time_axis]
  n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nperseg = n_default if nperseg is None else _positive_int("istft", "nperseg", nperseg)
  if nfft is None:
    nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
  else:
    nfft = operator.index(nfft)
    if nfft < nperseg:
      raise ValueError("istft: nfft must be greater than or equal to nperseg.")
  noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
  if noverlap >= nperseg:
    raise ValueError("istft: noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  outer = [a for a in range(Zxx.ndim) if a not in (time_axis, freq_axis)]
  Zxx = jnp.transpose(Zxx, outer + [time_axis, freq_axis])   # (..., nseg, nfreq)
  if isinstance(window, (str, tuple)):
    win = get_window(window, nperseg)
  else:
    util.check_arraylike("istft", window)
    win = window if util.is_array(window) else np.asarray(window)
    if win.ndim != 1:
      raise ValueError("istft: window must be 1-D")
    if win.shape[0] != nperseg:
      raise ValueError(f"istft: window must have length of {nperseg}")
  host_win = isinstance(win, np.ndarray)
  xsubs = (jnp.fft.irfft(Zxx, n=nfft) if input_onesided else jnp.fft.ifft(Zxx, n=nfft))
  xsubs = xsubs[..., :nperseg]
  w = jnp.asarray(win, xsubs.dtype if host_win else None)
  xsubs = xsubs * jnp.sum(w)
  out_len = nperseg + (nseg - 1) * nstep
  idx = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)[None, :]
  x = jnp.zeros(xsubs.shape[:-2] + (out_len,), xsubs.dtype).at[..., idx].add(xsubs * w)
  if host_win:
    norm = np.zeros(out_len)
    np.add.at(norm, idx, np.broadcast_to(np.abs(win) ** 2, idx.shape))
  else:
    norm = jnp.zeros((out_len,), rdtype).at[idx].add(
        jnp.broadcast_to(jnp.abs(w) ** 2, idx.shape).astype(rdtype))
  if boundary:
    h = nperseg // 2
    x = x[..., h:out_len - h]
    norm = norm[h:out_len - h]
  if host_win and np.sum(norm > 1e-10) != len(norm):
    warnings.warn("NOLA condition failed, STFT may not be invertible."
                  + (" Possibly due to missing boundary" if not boundary else ""),
                  stacklevel=2)
  if host_win:
    x = x / jnp.asarray(np.where(norm > 1e-10, norm, 1.0), rdtype)
  else:
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if input_onesided:
    x = jnp.real(x)
  if x.ndim > 1 and time_axis != len(outer) + 1:
    dest = time_axis - 1 if freq_axis < time_axis else time_axis
    x = jnp.moveaxis(x, -1, dest)
  time = jnp.arange(x.shape[0], dtype=rdtype) / jnp.asarray(fs, rdtype)
  return time, x
