"""Types for annotations and inspection: `ArrayLike`, `DTypeLike`, `Device`,
`typeof`.

`ArrayLike` and `DTypeLike` are the `typing.Union`s JAX documents for
"anything jnp accepts as an array" and "anything that names a dtype";
`Device` is jaxlib's device class (what `jax.devices()` returns), and
`typeof(x)` gives the abstract value (`ShapedArray`) a transformation sees
for `x`.
"""
from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from tracejax._src import dtypes
from tracejax._src.api import ShapeDtypeStruct
from tracejax._src.core import avals
from tracejax._src.runtime import backend
from tracejax._src.runtime.array import Array

__all__ = ["ArrayLike", "DTypeLike", "SupportsDType", "Device", "typeof"]

# jaxlib's device class; the runtime layer is the one that imports jaxlib.
Device = backend._jax.Device


@runtime_checkable
class SupportsDType(Protocol):
  """Anything with a `dtype` attribute (arrays, `ShapeDtypeStruct`, ...)."""

  @property
  def dtype(self) -> np.dtype: ...


# Values accepted where an array is expected: arrays, NumPy arrays and
# scalars, and Python scalars.
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float,
                  complex]

# Values accepted where a dtype is expected: names ('float32'), scalar types
# (jnp.float32, float), np.dtype objects, and objects with a `.dtype`.
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]


def typeof(x):
  """The abstract value of `x`: its shape, dtype and weak type.

  Args:
    x: an array, tracer, NumPy array or scalar, Python scalar, or
      `ShapeDtypeStruct`.

  Returns:
    A `ShapedArray`; under a transformation, the aval the tracer carries.
    Python scalars give weakly typed avals.  Raises TypeError for other
    values (lists, strings, ...).

  Example:
    >>> typeof(jnp.ones(3))
    ShapedArray(float32[3])
    >>> typeof(1.0)
    ShapedArray(float32[], weak_type=True)
  """
  if isinstance(x, ShapeDtypeStruct):
    return avals.ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype, True),
                             bool(x.weak_type))
  try:
    aval = avals.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX "
                    "type") from None
  if not isinstance(aval, avals.ShapedArray):
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX "
                    "type")
  aval = avals.raise_to_shaped(aval)
  if type(aval) is avals.ShapedArray and type(x) is backend.ArrayImpl:
    # An Array laid out over a mesh whose axes are not Explicit: its type still names
    # the mesh (no axis split), as in JAX.
    from tracejax._src import sharding_explicit
    aval = sharding_explicit.mesh_typed(aval, x._sharding)
  return aval
