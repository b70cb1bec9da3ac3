"""`jax.scipy.fft`: discrete cosine transforms (types 1 to 4) on `jnp.fft`, as `scipy.fft`.

JAX 0.10.2 implements type 2 only; the other types are a superset here, with
SciPy's definitions (N is the transformed length, norm=None):

* type 1: y_k = x_0 + (-1)^k x_{N-1} + 2 sum_{n=1}^{N-2} x_n cos(pi k n / (N - 1))
* type 2: y_k = 2 sum_n x_n cos(pi k (2n + 1) / (2N))
* type 3: y_k = x_0 + 2 sum_{n>=1} x_n cos(pi n (2k + 1) / (2N))
* type 4: y_k = 2 sum_n x_n cos(pi (2n + 1)(2k + 1) / (4N))

Type 2 is Makhoul's algorithm (one complex FFT of the even/odd reordered input and
a twiddle); type 3 is its exact inverse run backwards; type 1 is the real part of
the FFT of the even extension; type 4 is a twiddled, zero-padded FFT of length 2N.
`idct` of type t is the inverse of `dct` of type t (type 2 <-> 3 up to scale).
Complex inputs are transformed as real and imaginary parts. Everything is jnp, so
jit, vmap and derivatives come for free.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.numpy import util
import tracejax.lax as lax
import tracejax.numpy as jnp

__all__ = ["dct", "idct", "dctn", "idctn"]


def _check(fun_name, type, norm):
  if type not in (1, 2, 3, 4):
    raise ValueError(f"jax.scipy.fft.{fun_name}: type must be 1, 2, 3 or 4, got {type!r}")
  if norm not in (None, "backward", "ortho", "forward"):
    raise ValueError(f"jax.scipy.fft.{fun_name}: norm must be None, 'backward', 'ortho' or "
                     f"'forward', got {norm!r}")


def _resize(x, n):
  """Crop or zero-pad the last axis to length n."""
  m = x.shape[-1]
  if n == m:
    return x
  if n < m:
    return x[..., :n]
  return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - m)])


def _twiddle(n, sign, num, den, dtype):
  """exp(sign * i * pi * (num * k) / den) for k < n, as a device constant."""
  return jnp.asarray(np.exp(sign * 1j * np.pi * num * np.arange(n) / den), dtype)


def _dct2(x):
  n = x.shape[-1]
  v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], -1)
  cdt = dtypes.to_complex_dtype(x.dtype)
  y = jnp.fft.fft(v) * _twiddle(n, -1, 1, 2 * n, cdt)
  return 2 * jnp.real(y)


def _dct3(y):
  """SciPy's unnormalized DCT-III, = 2N * inverse(DCT-II): Makhoul's algorithm backwards."""
  n = y.shape[-1]
  cdt = dtypes.to_complex_dtype(y.dtype)
  # X_{N-k} for k >= 1, with X_N = 0.
  rev = jnp.concatenate([jnp.zeros(y.shape[:-1] + (1,), y.dtype), jnp.flip(y[..., 1:], -1)], -1)
  v = jnp.real(jnp.fft.ifft((y - 1j * rev) * _twiddle(n, 1, 1, 2 * n, cdt))) * n
  half = (n + 1) // 2
  even, odd = v[..., :half], jnp.flip(v[..., half:], -1)
  # Interleave: x[2m] = v[m], x[2m + 1] = v[n - 1 - m].
  if n % 2:
    odd = jnp.pad(odd, [(0, 0)] * (odd.ndim - 1) + [(0, 1)])
  out = jnp.stack([even, odd], -1).reshape(y.shape[:-1] + (2 * half,))
  return out[..., :n]


def _dct1(x, fun_name):
  n = x.shape[-1]
  if n < 2:
    raise ValueError(f"jax.scipy.fft.{fun_name}: the length of a type 1 transform must be at "
                     f"least 2, got {n}")
  ext = jnp.concatenate([x, jnp.flip(x[..., 1:n - 1], -1)], -1)
  return jnp.real(jnp.fft.fft(ext))[..., :n]


def _dct4(x):
  n = x.shape[-1]
  cdt = dtypes.to_complex_dtype(x.dtype)
  z = x * jnp.asarray(np.exp(-1j * np.pi * (2 * np.arange(n) + 1) / (4 * n)), cdt)
  y = jnp.fft.fft(z, n=2 * n)[..., :n] * _twiddle(n, -1, 1, 2 * n, cdt)
  return 2 * jnp.real(y)


def _scale(x, s):
  return x * jnp.asarray(s, x.dtype)


def _ortho_ends(x, f):
  """Multiply the first and last points (type 1's orthonormalization) by f."""
  n = x.shape[-1]
  w = np.ones(n)
  w[0] = w[-1] = f
  return _scale(x, w)


def _ortho_first(x, f):
  w = np.ones(x.shape[-1])
  w[0] = f
  return _scale(x, w)


def _forward(x, type, norm, fun_name):
  """dct of `type` along the last axis of a real array."""
  n = x.shape[-1]
  if type == 1:
    if norm == "ortho":
      x = _ortho_ends(x, np.sqrt(2))
    y = _dct1(x, fun_name)
    if norm == "ortho":
      y = _ortho_ends(y, 1 / np.sqrt(2)) * jnp.asarray(np.sqrt(0.5 / (n - 1)), x.dtype)
    elif norm == "forward":
      y = _scale(y, 1.0 / (2 * (n - 1)))
    return y
  if type == 2:
    y = _dct2(x)
    if norm == "ortho":
      y = _ortho_first(y, np.sqrt(0.5)) * jnp.asarray(np.sqrt(0.5 / n), x.dtype)
  elif type == 3:
    if norm == "ortho":
      x = _ortho_first(x, np.sqrt(2)) * jnp.asarray(np.sqrt(0.5 / n), x.dtype)
    y = _dct3(x)
  else:
    y = _dct4(x)
    if norm == "ortho":
      y = _scale(y, np.sqrt(0.5 / n))
  if norm == "forward":
    y = _scale(y, 1.0 / (2 * n))
  return y


_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _inverse(x, type, norm, fun_name):
  """idct of `type`: the forward transform of the inverse type, rescaled."""
  n = x.shape[-1]
  if norm == "ortho":
    return _forward(x, _INVERSE_TYPE[type], "ortho", fun_name)
  y = _forward(x, _INVERSE_TYPE[type], None, fun_name)
  if norm == "forward":
    return y
  return _scale(y, 1.0 / (2 * (n - 1) if type == 1 else 2 * n))


def _apply(fun_name, transform, x, type, lengths, axes, norm):
  _check(fun_name, type, norm)
  util.check_arraylike(f"jax.scipy.fft.{fun_name}", x)
  (x,) = util.promote_dtypes_inexact(util.to_array(x))
  for ax, n in zip(axes, lengths):
    x = jnp.moveaxis(x, ax, -1)
    if n is not None:
      x = _resize(x, n)
    if dtypes.is_complex(x.dtype):
      x = lax.complex(transform(jnp.real(x), type, norm, fun_name),
                      transform(jnp.imag(x), type, norm, fun_name))
    else:
      x = transform(x, type, norm, fun_name)
    x = jnp.moveaxis(x, -1, ax)
  return x


def _length(fun_name, n):
  if n is None:
    return None
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"jax.scipy.fft.{fun_name}: n must be an integer, got {n!r}") from None
  if n < 1:
    raise ValueError(f"jax.scipy.fft.{fun_name}: invalid number of data points ({n}) "
                     "specified")
  return n


def _axes_and_lengths(fun_name, x, s, axes):
  ndim = util.ndim(x)
  if axes is not None:
    axes = [util.canonicalize_axis(a, ndim) for a in
            (axes if isinstance(axes, (tuple, list)) else [axes])]
    if len(set(axes)) != len(axes):
      raise ValueError(f"jax.scipy.fft.{fun_name}: repeated axis in axes {axes}")
  if s is not None:
    s = [_length(fun_name, n) for n in (s if isinstance(s, (tuple, list)) else [s])]
    if axes is None:
      if len(s) > ndim:
        raise ValueError(f"jax.scipy.fft.{fun_name}: s has more entries ({len(s)}) than x "
                         f"has dimensions ({ndim})")
      axes = list(range(ndim - len(s), ndim))
    elif len(s) != len(axes):
      raise ValueError(f"jax.scipy.fft.{fun_name}: s and axes must have the same length, "
                       f"got {len(s)} and {len(axes)}")
  if axes is None:
    axes = list(range(ndim))
  return axes, (s if s is not None else [None] * len(axes))


def dct(x, type=2, n=None, axis=-1, norm=None):
  """Discrete cosine transform of `x` along `axis`, as `scipy.fft.dct`.

  Args:
    x: the input array (integers become the default float; complex inputs are
      transformed as real and imaginary parts).
    type: 1, 2 (default), 3 or 4 (JAX itself has only 2).
    n: crop or zero-pad the axis to this length first.
    axis: the axis to transform.
    norm: None / 'backward' (unscaled), 'ortho' (orthonormal) or 'forward' (the forward
      transform scaled by 1/(2N), or 1/(2(N-1)) for type 1).

  Example:
    >>> dct(jnp.array([1., 2., 3.]))
    Array([12.      , -3.464102,  0.      ], dtype=float32)
  """
  ndim = util.ndim(x)
  return _apply("dct", _forward, x, type, [_length("dct", n)],
                [util.canonicalize_axis(axis, ndim)], norm)


def idct(x, type=2, n=None, axis=-1, norm=None):
  """Inverse discrete cosine transform along `axis`, as `scipy.fft.idct` (`idct(dct(x)) == x`).

  Args: as `dct`.

  Example:
    >>> idct(dct(jnp.array([1., 2., 3.])))
    Array([1., 2., 3.], dtype=float32)
  """
  ndim = util.ndim(x)
  return _apply("idct", _inverse, x, type, [_length("idct", n)],
                [util.canonicalize_axis(axis, ndim)], norm)


def dctn(x, type=2, s=None, axes=None, norm=None):
  """Multidimensional DCT over `axes` (default all, or the last len(s)), as `scipy.fft.dctn`.

  Args:
    x, type, norm: as `dct`.
    s: the lengths to crop or zero-pad the transformed axes to.
    axes: the axes to transform.

  Example:
    >>> dctn(jnp.ones((2, 2)))
    Array([[16.,  0.],
           [ 0.,  0.]], dtype=float32)
  """
  axes, lengths = _axes_and_lengths("dctn", x, s, axes)
  return _apply("dctn", _forward, x, type, lengths, axes, norm)


def idctn(x, type=2, s=None, axes=None, norm=None):
  """Multidimensional inverse DCT, as `scipy.fft.idctn` (arguments as `dctn`).

  Example:
    >>> idctn(dctn(jnp.ones((2, 2))))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
  """
  axes, lengths = _axes_and_lengths("idctn", x, s, axes)
  return _apply("idctn", _inverse, x, type, lengths, axes, norm)
