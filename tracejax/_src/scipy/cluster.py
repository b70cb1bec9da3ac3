"""`jax.scipy.cluster.vq`: vector quantization (nearest code-book entry)."""
from tracejax._src.numpy import util
import tracejax.numpy as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
  """Assign each observation to its nearest code, as `scipy.cluster.vq.vq`.

  Args:
    obs: observations, shape (M, N) (or (M,) for 1-D features).
    code_book: codes, shape (K, N) (or (K,)).
    check_finite: accepted for SciPy compatibility; has no effect (a compiled
      program cannot raise on NaN).

  Returns:
    `(code, dist)`: for each observation the index of the nearest code (the first on
    ties) and its Euclidean distance to it.

  Example:
    >>> vq(jnp.array([[0., 0.], [2., 2.1]]), jnp.array([[2., 2.], [0., 0.1]]))[0]
    Array([1, 0], dtype=int32)
  """
  del check_finite
  util.check_arraylike("vq", obs, code_book)
  obs, code_book = util.promote_dtypes_inexact(util.to_array(obs), util.to_array(code_book))
  if obs.ndim != code_book.ndim:
    raise ValueError(f"vq: observation and code_book should have the same rank, got "
                     f"{obs.ndim} and {code_book.ndim}")
  if obs.ndim == 1:
    obs, code_book = obs[:, None], code_book[:, None]
  if obs.ndim != 2:
    raise ValueError(f"vq: ndim different than 1 or 2 are not supported, got {obs.ndim}")
  if obs.shape[1] != code_book.shape[1]:
    raise ValueError(f"vq: observations have {obs.shape[1]} features but codes have "
                     f"{code_book.shape[1]}")
  dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
