"""The 2020 `jax.abstract_arrays` module: abstract values and the helpers around them.

`ShapedArray`, `ConcreteArray` and `raise_to_shaped` are those of `core.avals`;
this module adds the 2020 names that had no modern twin: `UnshapedArray` (an
array of known dtype and unknown shape), `make_shaped_array`, `array_types`,
`zeros_like_array`, `zeros_like_shaped_array`, `abstractify`.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import (AbstractValue, ConcreteArray, ShapedArray,
                                      canonicalize_shape, get_aval, raise_to_shaped)

__all__ = ["AbstractValue", "ConcreteArray", "ShapedArray", "UnshapedArray", "abstractify",
           "array_types", "canonicalize_shape", "make_shaped_array", "raise_to_shaped",
           "zeros_like_array", "zeros_like_shaped_array"]


class UnshapedArray(AbstractValue):
  """The abstract value of an array whose dtype is known but not its shape.

  Args:
    dtype: anything `np.dtype` accepts.
    weak_type: whether the value is weakly typed (came from a Python scalar).

  >>> UnshapedArray(np.float32)
  UnshapedArray(float32)
  >>> UnshapedArray(np.int32).str_short()
  'int32'
  """
  __slots__ = ("dtype", "weak_type")
  array_abstraction_level = 2

  def __init__(self, dtype, weak_type=False):
    self.dtype = np.dtype(dtypes.canonicalize_dtype(dtype))
    self.weak_type = bool(weak_type)

  def __eq__(self, other):
    return (type(self) is type(other) and self.dtype == other.dtype
            and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.dtype, self.weak_type))

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"UnshapedArray({self.dtype.name}{weak})"

  def str_short(self, short_dtypes=False):
    return self.dtype.name

  def strip_weak_type(self):
    return UnshapedArray(self.dtype) if self.weak_type else self

  def update(self, dtype=None, weak_type=None):
    return UnshapedArray(self.dtype if dtype is None else dtype,
                         self.weak_type if weak_type is None else weak_type)

  def _no_shape(self):
    raise AttributeError("UnshapedArray has no shape: its value's shape is unknown. "
                         "Use a ShapedArray where the shape is needed.")

  shape = property(lambda self: self._no_shape())
  ndim = property(lambda self: self._no_shape())
  size = property(lambda self: self._no_shape())


def make_shaped_array(x):
  """The ShapedArray of a concrete value: its shape and canonical dtype (no weak type).

  >>> make_shaped_array(np.ones((2, 3)))
  ShapedArray(float32[2,3])
  """
  return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(dtypes.dtype(x)))


def abstractify(x):
  """The ShapedArray of an array, Python scalar or tracer (weak types kept).

  >>> abstractify(1.0)
  ShapedArray(float32[], weak_type=True)
  """
  return raise_to_shaped(get_aval(x))


def zeros_like_shaped_array(aval):
  """A concrete zero array of `aval`'s shape and dtype.

  >>> zeros_like_shaped_array(ShapedArray((2,), np.int32))
  array([0, 0], dtype=int32)
  """
  if not isinstance(aval, ShapedArray):
    raise TypeError(f"zeros_like_shaped_array needs a ShapedArray, got {aval!r}")
  return np.zeros(aval.shape, aval.dtype)


def zeros_like_array(x):
  """A concrete zero array of the shape and canonical dtype of `x`.

  >>> zeros_like_array(np.ones(3, np.float32))
  array([0., 0., 0.], dtype=float32)
  """
  return zeros_like_shaped_array(make_shaped_array(x))


# The concrete array types that abstract to a ShapedArray: ndarray and every NumPy
# scalar type (the Python scalars are weakly typed and listed apart in 2020).
array_types = {np.ndarray} | {t for t in set(np.sctypeDict.values())
                              if issubclass(t, np.generic) and t is not np.object_
                              and not issubclass(t, (np.str_, np.bytes_, np.void,
                                                     np.datetime64, np.timedelta64))}
try:
  import ml_dtypes as _ml_dtypes
  array_types.add(_ml_dtypes.bfloat16)
except ImportError:
  pass
