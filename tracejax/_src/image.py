"""`jax.image`: resampling images (any array) with interpolation kernels.

Every kernel method is separable: along each resized axis the output is a
weighted sum of the input, `out[..., j, ...] = sum_i W[i, j] in[..., i, ...]`,
with `W` (in_size x out_size) built from the kernel evaluated at the distance
between output pixel centers (mapped back into input coordinates) and input
pixel centers. When downsampling with `antialias`, the kernel is stretched by
the inverse scale, so it low-pass filters as it interpolates. Each output
column of `W` is normalized to sum to one (so samples near the border, whose
kernel partly falls outside the image, keep the image's brightness), and
output pixels whose center maps outside the input get weight zero. The axes
are contracted one after another with `tensordot`.

'nearest' is a gather instead: output pixel `j` takes input pixel
`floor((j + 0.5) * in_size / out_size)`.
"""
import enum

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core import avals as avals_mod
from tracejax._src.jit import jit
import tracejax.numpy as jnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
  """The interpolation of `resize` / `scale_and_translate`.

  NEAREST (nearest neighbour), LINEAR (triangle kernel), LANCZOS3 and LANCZOS5
  (windowed sinc, radius 3 or 5), CUBIC (Keys cubic, a=-0.5), CUBIC_PYTORCH
  (PyTorch's bicubic: Keys a=-0.75 with repeated edges when not antialiased) and
  AREA (the overlap of each output pixel with the input pixels).

  >>> ResizeMethod.from_string("bilinear")
  <ResizeMethod.LINEAR: 1>
  """
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s):
    """The method a string names ('nearest', 'linear'/'bilinear'/'trilinear'/
    'triangle', 'lanczos3', 'lanczos5', 'cubic'/'bicubic'/'tricubic',
    'cubic-pytorch'/'bicubic-pytorch', 'area')."""
    method = _NAMES.get(s)
    if method is None:
      raise ValueError(f'Unknown resize method "{s}"')
    return method


_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    "linear": ResizeMethod.LINEAR, "bilinear": ResizeMethod.LINEAR,
    "trilinear": ResizeMethod.LINEAR, "triangle": ResizeMethod.LINEAR,
    "lanczos3": ResizeMethod.LANCZOS3, "lanczos5": ResizeMethod.LANCZOS5,
    "cubic": ResizeMethod.CUBIC, "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "area": ResizeMethod.AREA,
}


def _as_method(method):
  if isinstance(method, ResizeMethod):
    return method
  if isinstance(method, str):
    return ResizeMethod.from_string(method)
  raise TypeError(f"method must be a string or a ResizeMethod, got {method!r}")


# ---- kernels: functions of the (non-negative) distance x, zero beyond the radius ----

def _triangle(x):
  return jnp.maximum(0.0, 1.0 - x)


def _cubic(a):
  # Keys' cubic convolution kernel with parameter a (piecewise cubic on [0,1), [1,2)).
  def kernel(x):
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return jnp.where(x >= 2.0, 0.0, jnp.where(x >= 1.0, far, near))
  return kernel


def _lanczos(radius):
  # sinc(x) sinc(x / radius), written so that x = 0 needs no 0/0.
  def kernel(x):
    num = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    safe = jnp.where(x > 1e-3, np.pi ** 2 * x * x, 1.0)
    return jnp.where(x > radius, 0.0, jnp.where(x > 1e-3, num / safe, 1.0))
  return kernel


_AREA = "area"
_KERNELS = {   # method -> (radius, kernel)
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5)),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}

_MIN_TOTAL = 1000.0 * float(np.finfo(np.float32).eps)


def _weights(in_size, out_size, scale, translation, kernel, antialias, pad):
  """The (in_size, out_size) weight matrix of one axis.

  `pad` > 0 repeats the edge pixels `pad` times beyond each border (the weights
  that fall there are added to the edge pixel's) instead of zeroing out-of-image
  samples.
  """
  dtype = dtypes.result_type(scale, translation)
  inv = 1.0 / scale
  # Input coordinate of each output pixel's center, in units where input pixel i
  # is centered at i.
  centers = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv - translation * inv - 0.5
  if kernel is _AREA:
    left = jnp.arange(out_size, dtype=dtype) * inv - translation * inv
    lo = jnp.arange(in_size, dtype=dtype)
    w = jnp.maximum(0.0, jnp.minimum(left[None, :] + inv, lo[:, None] + 1.0)
                    - jnp.maximum(left[None, :], lo[:, None]))
  else:
    stretch = jnp.maximum(inv, 1.0) if antialias else 1.0
    pos = jnp.arange(-pad, in_size + pad, dtype=dtype)
    w = kernel(jnp.abs(centers[None, :] - pos[:, None]) / stretch)
    if pad:
      # Fold the rows of the padded positions onto the edge pixels they repeat.
      src = np.clip(np.arange(-pad, in_size + pad), 0, in_size - 1)
      fold = (src[None, :] == np.arange(in_size)[:, None]).astype(np.float32)
      w = jnp.matmul(fold.astype(w.dtype), w, precision="highest")
  total = jnp.sum(w, axis=0, keepdims=True)
  w = jnp.where(jnp.abs(total) > _MIN_TOTAL, w / jnp.where(total != 0, total, 1.0), 0.0)
  if not pad:
    inside = (centers >= -0.5) & (centers <= in_size - 0.5)
    w = jnp.where(inside[None, :], w, 0.0)
  return w


def _apply(x, out_shape, spatial_dims, scales, translations, method, antialias, precision):
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC   # PyTorch antialiases with the a=-0.5 kernel
  radius, kernel = _KERNELS[method]
  pad = radius if (method == ResizeMethod.CUBIC_PYTORCH and not antialias) else 0
  for d, s, t in zip(spatial_dims, scales, translations):
    w = _weights(x.shape[d], out_shape[d], s, t, kernel, antialias, pad).astype(x.dtype)
    y = jnp.tensordot(x, w, axes=([d], [0]), precision=precision)
    x = jnp.moveaxis(y, -1, d)
  return x


def _inexact(x):
  x = jnp.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.inexact):
    x = x.astype(dtypes.default_float_dtype())
  return x


def _check_shape(image, shape):
  shape = avals_mod.canonicalize_shape(shape, "shape")
  if len(shape) != np.ndim(image):
    raise ValueError("shape must have length equal to the number of dimensions of x; "
                     f" {shape} vs {np.shape(image)}")
  return shape


def _nearest(x, shape):
  for d, (m, n) in enumerate(zip(x.shape, shape)):
    if m == n:
      continue
    # float32 arithmetic, as JAX does, so that the chosen pixels agree with it.
    idx = np.floor((np.arange(n, dtype=np.float32) + np.float32(0.5)) *
                   np.float32(m) / np.float32(n)).astype(np.int32)
    x = jnp.take(x, idx, axis=d)
  return x


def _resize_impl(image, shape, method, antialias, precision):
  if method == ResizeMethod.NEAREST:
    return _nearest(image, shape)
  image = _inexact(image)
  dims = [d for d in range(image.ndim) if image.shape[d] != shape[d]]
  scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
  return _apply(image, shape, dims, scales, [0.0] * len(dims), method, antialias, precision)


def resize(image, shape, method, antialias=True, precision="highest"):
  """Resample `image` to `shape` (same number of dimensions; every axis whose size
  changes is resampled).

  Args:
    image: an array (e.g. HWC or NHWC: give the unchanged sizes for N and C).
    shape: the output shape.
    method: a `ResizeMethod` or its name: 'nearest', 'linear' ('bilinear',
      'trilinear'), 'cubic' ('bicubic', 'tricubic'), 'lanczos3', 'lanczos5',
      'cubic-pytorch', 'area'.
    antialias: when downsampling, widen the kernel to filter out aliasing (not
      used by 'nearest').
    precision: the matmul precision of the contractions.

  Integer images are converted to the default float type (except for 'nearest').

  >>> import tracejax.numpy as jnp
  >>> resize(jnp.array([0., 1.]), (4,), "linear")
  DeviceArray([0.  , 0.25, 0.75, 1.  ], dtype=float32)
  """
  shape = _check_shape(image, shape)
  method = _as_method(method)
  return _resize_jit(image, shape, method, bool(antialias), precision)


_resize_jit = jit(_resize_impl, static_argnums=(1, 2, 3, 4))


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision="highest"):
  """Resample `image` to `shape` under the map `out = in * scale + translation`
  along each of `spatial_dims` (pixel centers at i + 0.5).

  Args:
    image: an array.
    shape: the output shape (same number of dimensions as `image`).
    spatial_dims: the axes that are scaled and translated.
    scale: one scale per spatial axis (an array: may be traced).
    translation: one translation per spatial axis (an array: may be traced).
    method: as in `resize`, except 'nearest'.
    antialias: as in `resize`.
    precision: the matmul precision of the contractions.

  Output pixels whose center maps outside the input are zero.

  >>> import tracejax.numpy as jnp
  >>> scale_and_translate(jnp.array([0., 1.]), (4,), (0,), jnp.array([2.]),
  ...                     jnp.array([0.]), "linear")
  DeviceArray([0.  , 0.25, 0.75, 1.  ], dtype=float32)
  """
  shape = _check_shape(image, shape)
  method = _as_method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  spatial_dims = [int(d) for d in spatial_dims]
  ndim = len(shape)
  for d in spatial_dims:
    if not -ndim <= d < ndim:
      raise ValueError(f"scale_and_translate: spatial_dims entry {d} is out of bounds "
                       f"for an image of rank {ndim}")
  spatial_dims = [d % ndim for d in spatial_dims]
  image = _inexact(image)
  scale, translation = _inexact(scale), _inexact(translation)
  if scale.shape != (len(spatial_dims),) or translation.shape != (len(spatial_dims),):
    raise ValueError(f"scale_and_translate: scale and translation must have shape "
                     f"({len(spatial_dims)},), got {scale.shape} and {translation.shape}")
  if not spatial_dims:
    return image
  return _sat_jit(image, scale, translation, shape, tuple(spatial_dims), method,
                  bool(antialias), precision)


def _sat_impl(image, scale, translation, shape, spatial_dims, method, antialias, precision):
  scales = [scale[i] for i in range(len(spatial_dims))]
  translations = [translation[i] for i in range(len(spatial_dims))]
  return _apply(image, shape, spatial_dims, scales, translations, method, antialias,
                precision)


_sat_jit = jit(_sat_impl, static_argnums=(3, 4, 5, 6, 7))

