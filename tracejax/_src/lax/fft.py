"""The fft primitive: XLA's FFT over the trailing 1 to 3 dimensions.

Four transforms (`FftType`): FFT and IFFT (complex -> complex), RFFT (real ->
complex, the last transformed dimension shrinks to n//2 + 1) and IRFFT (complex
-> real, the last dimension grows back to `fft_lengths[-1]`).

fft is linear, so its JVP is itself and reverse mode needs a transpose rule.
Transposes follow JAX's convention for complex numbers, which is the plain
(bilinear, not conjugate) transpose: for a linear map A and cotangent c,
Re(sum(c * A(v))) == Re(sum(A^T(c) * v)). The DFT matrix is symmetric, so FFT and
IFFT are their own transposes; RFFT and IRFFT, which are only real-linear, get
the formulas below.
"""
import enum
import operator

import numpy as np

from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo
from tracejax._src.lax import utils
from tracejax._src.lax.structural import _shape, broadcast_in_dim, pad
from tracejax._src.lax.utils import standard_primitive

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
  """The kind of transform `lax.fft` computes (the numbering of XLA and JAX)."""
  FFT = 0    # complex -> complex, forward
  IFFT = 1   # complex -> complex, inverse (scaled by 1/n)
  RFFT = 2   # real -> complex, forward; the last dimension keeps n//2 + 1 entries
  IRFFT = 3  # complex -> real, inverse of RFFT

  def __str__(self):  # how jaxprs print the parameter
    return f"FftType.{self.name}"

  __repr__ = __str__


def _canonicalize_fft_type(fft_type):
  """An FftType from an FftType, an int, a name ('fft', 'FFT', 'FftType.FFT') or an
  object with such a `name` (e.g. a jaxlib/xla_client enum member)."""
  if isinstance(fft_type, FftType):
    return fft_type
  if isinstance(fft_type, (int, np.integer)) and not isinstance(fft_type, bool):
    try:
      return FftType(int(fft_type))
    except ValueError:
      pass
  else:
    name = fft_type if isinstance(fft_type, str) else getattr(fft_type, "name", None)
    if isinstance(name, str):
      name = name.rsplit(".", 1)[-1].upper()
      if name in FftType.__members__:
        return FftType[name]
  raise ValueError(f"Unknown fft_type {fft_type!r}: expected an FftType or one of 'fft', "
                   "'ifft', 'rfft', 'irfft'.")


def fft(x, fft_type, fft_lengths):
  """Wraps XLA's FFT operator over the trailing `len(fft_lengths)` (1 to 3) dimensions.

  `fft_type` is an `FftType` or its name ('fft', 'ifft', 'rfft', 'irfft', in any
  case). `fft_lengths` are the sizes of the transformed dimensions of the real
  side of the transform: the input's trailing dimensions for FFT, IFFT and RFFT;
  for IRFFT the output's (the input's last dimension is fft_lengths[-1]//2 + 1).
  """
  fft_type = _canonicalize_fft_type(fft_type)
  if isinstance(fft_lengths, (int, np.integer)):
    fft_lengths = (fft_lengths,)
  try:
    fft_lengths = tuple(int(operator.index(n)) for n in fft_lengths)
  except TypeError:
    raise TypeError("fft fft_lengths must be an integer or a sequence of integers, got "
                    f"{fft_lengths!r}.") from None
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _fft_shape_rule(x, *, fft_type, fft_lengths):
  n = len(fft_lengths)
  if not 1 <= n <= 3:
    raise ValueError(f"fft supports 1 to 3 transformed dimensions, got fft_lengths "
                     f"{fft_lengths}.")
  # Zero lengths are allowed (empty transforms, as in JAX), except the real axis of an
  # RFFT: its n // 2 + 1 outputs need at least one input.
  if any(d < 0 for d in fft_lengths) or (fft_type == FftType.RFFT and fft_lengths[-1] == 0):
    raise ValueError(f"fft fft_lengths must be positive, got {fft_lengths}.")
  if x.ndim < n:
    raise ValueError(f"fft with fft_lengths {fft_lengths} needs an operand of rank >= "
                     f"{n}, got shape {x.shape}.")
  lead, trailing = x.shape[:-n], x.shape[-n:]
  if fft_type == FftType.IRFFT:
    expected = fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
    # (an empty output may come from an empty input too: JAX accepts both)
    empty_ok = fft_lengths[-1] == 0 and trailing == fft_lengths
    if trailing != expected and not empty_ok:
      raise ValueError(f"IRFFT with fft_lengths {fft_lengths} needs trailing operand "
                       f"dimensions {expected}, got shape {x.shape}.")
    return lead + fft_lengths
  if trailing != fft_lengths:
    raise ValueError(f"{fft_type.name} with fft_lengths {fft_lengths} needs trailing "
                     f"operand dimensions {fft_lengths}, got shape {x.shape}.")
  if fft_type == FftType.RFFT:
    return lead + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
  return x.shape


_real_to_complex = {np.dtype(np.float32): np.dtype(np.complex64),
                    np.dtype(np.float64): np.dtype(np.complex128)}
_complex_to_real = {c: r for r, c in _real_to_complex.items()}


def _fft_dtype_rule(x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    if x.dtype not in _real_to_complex:
      raise TypeError(f"RFFT needs a float32 or float64 operand, got {x.dtype.name}.")
    return _real_to_complex[x.dtype]
  if x.dtype not in _complex_to_real:
    raise TypeError(f"{fft_type.name} needs a complex64 or complex128 operand, got "
                    f"{x.dtype.name}.")
  return _complex_to_real[x.dtype] if fft_type == FftType.IRFFT else x.dtype


def _rfft_transpose(ct, fft_lengths):
  # RFFT = slice(FFT(x + 0j)) on the last axis; transposing each piece: the slice
  # becomes zero padding, FFT is symmetric, and the real -> complex embedding
  # becomes the real part.
  from tracejax._src.lax import elementwise
  n = fft_lengths[-1]
  config = [(0, 0, 0)] * len(_shape(ct))
  config[-1] = (0, n - (n // 2 + 1), 0)
  full = pad(ct, np.array(0, elementwise._dtype(ct)), config)
  return elementwise.real(fft(full, FftType.FFT, fft_lengths))


def _irfft_transpose(ct, fft_lengths):
  # IRFFT reads each retained frequency of a Hermitian spectrum once, but it stands
  # for two entries (k and n - k) except for DC and, for even n, Nyquist: hence the
  # mask of 2s. The scale is IRFFT's 1/n, and the conjugate comes from
  # sum_k c_k e^{+2 pi i jk/n} = conj(RFFT(c)_j) for a real c.
  from tracejax._src.lax import elementwise
  if 0 in fft_lengths:
    # The 1/n scale is undefined (JAX fails here too, with a ZeroDivisionError).
    raise ValueError(f"irfft: invalid number of FFT data points {fft_lengths} for reverse-"
                     "mode differentiation: an empty inverse real transform has no 1/n "
                     "scale.")
  x = fft(ct, FftType.RFFT, fft_lengths)
  m = _shape(x)[-1]
  is_odd = fft_lengths[-1] % 2
  mask = np.concatenate([[1.0], np.full(m - 2 + is_odd, 2.0), np.ones(1 - is_odd)])
  mask = (mask / np.prod(fft_lengths)).astype(elementwise._dtype(x))
  mask = broadcast_in_dim(mask, _shape(x), (len(_shape(x)) - 1,))
  # conj spelled as complex(re, -im): it must keep complex128 complex128 under x64.
  y = elementwise.mul(mask, x)
  return elementwise.complex(elementwise.real(y), elementwise.neg(elementwise.imag(y)))


def _fft_transpose_rule(ct, x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft(ct, fft_type, fft_lengths)]


def _fft_batch_rule(args, dims, *, fft_type, fft_lengths):
  # fft acts on the trailing dimensions: a batch axis among the leading ones passes
  # through; one among the trailing ones moves to the front.
  (x,), (d,) = args, dims
  if d >= np.ndim(x) - len(fft_lengths):
    x, d = utils.moveaxis(x, d, 0), 0
  return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


def _fft_lowering(ctx, x, *, fft_type, fft_lengths):
  aval_out = ctx.avals_out[0]
  if 0 in aval_out.shape or 0 in ctx.avals_in[0].shape:
    # Nothing to transform: XLA's FFT wants non-empty operands; the result is empty
    # (or, for an IRFFT of length > 0 over an empty batch, zeros).
    return [mlir.full_like_aval(0, aval_out)]
  return [hlo.fft(x, hlo.FftTypeAttr.get(fft_type.name), list(fft_lengths),
                  results=[mlir.aval_to_ir_type(ctx.avals_out[0])])]


fft_p = standard_primitive(_fft_shape_rule, _fft_dtype_rule, "fft")
ad.deflinear2(fft_p, _fft_transpose_rule)
batching.primitive_batchers[fft_p] = _fft_batch_rule
mlir.register_lowering(fft_p, _fft_lowering)
