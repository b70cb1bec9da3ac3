"""`ravel_pytree`: a pytree of arrays as one flat vector, and back.

The flat vector has the dtype all leaves promote to (`result_type` of their
dtypes, taken as strong types); the returned `unravel` function splits a
vector of that dtype and length back into the leaves, casting each piece to
its leaf's original dtype.  Both directions are built from differentiable,
batchable primitives (ravel, concatenate, slice, reshape, convert), so they
work under `jit`, `grad` and `vmap`.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.tree_util import tree_flatten
import tracejax.lax as lax
import tracejax.numpy as jnp

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
  """Flattens a pytree of arrays into a 1-D array, with the inverse function.

  Args:
    pytree: a pytree whose leaves are arrays or scalars.

  Returns:
    `(flat, unravel)`: `flat` concatenates the raveled leaves, converted to
    the dtype they all promote to (float32 when there are no leaves);
    `unravel(v)` maps a vector of that shape and dtype back to a pytree
    with the structure, shapes and dtypes of `pytree`.  `unravel` is
    hashable, so it can be a static argument of `jit`.

  Example:
    >>> flat, unravel = ravel_pytree({"a": jnp.ones((2, 2)), "b": 3.0})
    >>> print(flat)
    [1. 1. 1. 1. 3.]
    >>> print(unravel(flat * 2)["b"])
    6.0
  """
  leaves, treedef = tree_flatten(pytree)
  if not leaves:
    return jnp.zeros(0, np.float32), _Unravel(treedef, (), (), (),
                                              np.dtype(np.float32))
  from_dtypes = tuple(dtypes.dtype(x, canonicalize=True) for x in leaves)
  to_dtype = dtypes.result_type(*from_dtypes)
  shapes = tuple(tuple(jnp.shape(x)) for x in leaves)
  sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
  if all(dt == to_dtype for dt in from_dtypes):
    # No conversion, so a weakly typed input (a Python scalar) stays weak.
    parts = [jnp.ravel(x) for x in leaves]
  else:
    parts = [jnp.ravel(lax.convert_element_type(x, to_dtype)) for x in leaves]
  flat = parts[0] if len(parts) == 1 else jnp.concatenate(parts)
  return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


class _Unravel:
  """The inverse of one `ravel_pytree` call: flat vector -> pytree.

  Equal (and equally hashed) to another unravel function of the same
  structure, shapes and dtypes.
  """
  __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

  def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype):
    self.treedef = treedef
    self.sizes = sizes
    self.shapes = shapes
    self.from_dtypes = from_dtypes
    self.to_dtype = to_dtype

  def _key(self):
    return (self.treedef, self.sizes, self.shapes, self.from_dtypes,
            self.to_dtype)

  def __eq__(self, other):
    return type(other) is _Unravel and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"<unravel function for {self.treedef}>"

  def __call__(self, flat):
    total = sum(self.sizes)
    shape = tuple(jnp.shape(flat))
    # A (total, 1, ...) column is accepted, as JAX's split along axis 0 does.
    if not shape or shape[0] != total or int(np.prod(shape)) != total:
      raise ValueError(f"unravel: expected a flat array of shape ({total},), "
                       f"got an array of shape {shape}.")
    dt = dtypes.dtype(flat, canonicalize=True)
    if dt != self.to_dtype:
      raise TypeError(f"unravel function given array of dtype {dt}, but "
                      f"expected dtype {self.to_dtype}")
    if len(shape) != 1:
      flat = jnp.reshape(flat, (total,))
    leaves = []
    start = 0
    for size, leaf_shape, from_dtype in zip(self.sizes, self.shapes,
                                            self.from_dtypes):
      piece = lax.slice(flat, (start,), (start + size,))
      start += size
      if from_dtype != dt:
        if (dtypes.issubdtype(dt, np.complexfloating)
            and not dtypes.issubdtype(from_dtype, np.complexfloating)):
          piece = jnp.real(piece)  # a real leaf keeps the real part
        piece = lax.convert_element_type(piece, from_dtype)
      leaves.append(jnp.reshape(piece, leaf_shape))
    return self.treedef.unflatten(leaves)
