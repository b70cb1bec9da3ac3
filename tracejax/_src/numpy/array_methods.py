"""The operators and NumPy-style methods of arrays and tracers, in one table.

`core.trace.Tracer` and `runtime.array.Array` are defined without them (the
layers below jax.numpy cannot import it); importing this module attaches the
same functions to both, so traced code and eager code behave alike (C-S24).
"""
import warnings

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer
from tracejax._src.numpy import shape_ops, ufuncs, util
from tracejax._src.runtime.array import Array


class _Deferred:
  """The function `name` of numpy/`module`.py as an array method, imported on first use.

  numpy/reductions.py and numpy/products.py (with lax/reductions.py and lax/dot.py
  under them) are not needed to run a first operation, so `import tracejax.numpy`
  leaves them out. The first lookup of such a method (`x.sum`) imports the module and
  puts the real function in this stand-in's place on the classes, so later calls
  cost nothing extra; an operator (`x @ y`) calls the stand-in, which calls it.
  """

  def __init__(self, module, name):
    self.module, self.name, self.attr, self.fn = module, name, None, None

  def resolve(self):
    if self.fn is None:
      import importlib
      self.fn = getattr(importlib.import_module(f"tracejax._src.numpy.{self.module}"),
                        self.name)
      for cls in (Tracer, Array):
        if self.attr is not None and cls.__dict__.get(self.attr) is self:
          setattr(cls, self.attr, self.fn)
    return self.fn

  def __get__(self, obj, cls=None):
    return self.resolve().__get__(obj, cls)

  def __call__(self, *args, **kwargs):
    return self.resolve()(*args, **kwargs)


# ---- operators ----

def _accepts(other):
  """Operands an array operator handles; anything else gets NotImplemented."""
  return type(other) in util._py_scalar_set or isinstance(
      other, (Array, Tracer, np.ndarray, np.generic))


def _binop(fn, name):
  def op(self, other):
    if not _accepts(other):
      return NotImplemented
    return fn(self, other)
  op.__name__ = op.__qualname__ = f"__{name}__"
  op.__doc__ = f"`self {name} other` through jnp.{getattr(fn, '__name__', name)}."
  return op


def _rbinop(fn, name):
  def op(self, other):
    if not _accepts(other):
      return NotImplemented
    return fn(other, self)
  op.__name__ = op.__qualname__ = f"__r{name}__"
  op.__doc__ = f"`other {name} self` through jnp.{getattr(fn, '__name__', name)}."
  return op


def _pow(self, other, mod=None):
  if mod is not None:
    raise NotImplementedError("pow() with a modulus is not supported for arrays")
  if not _accepts(other):
    return NotImplemented
  return ufuncs.power(self, other)


def _rpow(self, other, mod=None):
  if not _accepts(other):
    return NotImplemented
  return ufuncs.power(other, self)


# name -> jnp function; each gets __name__ and, if reflected, __rname__.
_BINARY = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "divmod": ufuncs.divmod, "matmul": _Deferred("products", "matmul"),
    "and": ufuncs.bitwise_and, "or": ufuncs.bitwise_or, "xor": ufuncs.bitwise_xor,
    "lshift": ufuncs.left_shift, "rshift": ufuncs.right_shift,
}
_COMPARISONS = {
    "lt": ufuncs.less, "le": ufuncs.less_equal, "gt": ufuncs.greater,
    "ge": ufuncs.greater_equal, "eq": ufuncs.equal, "ne": ufuncs.not_equal,
}
_UNARY = {
    "neg": ufuncs.negative, "pos": ufuncs.positive, "abs": ufuncs.absolute,
    "invert": ufuncs.bitwise_not,
}


# ---- methods ----

def _reshape(self, *args, order="C", shape=None):
  """`a.reshape(shape)` or `a.reshape(*shape)`."""
  if shape is not None:
    newshape = shape
  elif len(args) == 1 and not isinstance(args[0], (int, np.integer, Tracer)):
    newshape = args[0]
  else:
    newshape = args
  return shape_ops.reshape(self, newshape, order)


def _transpose(self, *args):
  """`a.transpose()`, `a.transpose(axes)` or `a.transpose(*axes)`."""
  if not args or (len(args) == 1 and args[0] is None):
    axes = None
  elif len(args) == 1 and not isinstance(args[0], (int, np.integer)):
    axes = args[0]
  else:
    axes = args
  return shape_ops.transpose(self, axes)


_COMPLEX_TO_REAL = ("Casting from complex to real dtypes will soon raise a ValueError. "
                    "Please first use jnp.real or jnp.imag to take the real/imaginary "
                    "component of your input.")


def astype_operand(x, dt):
  """What astype converts to `dt`. From complex: to bool, x != 0 (as NumPy and JAX: 2j
  is True); to a real dtype, the real part, with JAX's DeprecationWarning (that cast is
  going away; lax.convert_element_type keeps NumPy's ComplexWarning)."""
  if not dtypes.is_complex(util.dtype_of(x)) or dtypes.is_complex(dt):
    return x
  if dt == np.bool_:
    return ufuncs.not_equal(x, 0)
  warnings.warn(_COMPLEX_TO_REAL, DeprecationWarning, stacklevel=util.user_stacklevel())
  return ufuncs.real(x)


def _astype(self, dtype, copy=False, device=None):
  """`self` converted to `dtype` (64-bit types narrow, with a warning, when x64 is off)."""
  dtypes.check_user_dtype_supported(dtype, "astype", stacklevel=util.user_stacklevel() + 1)
  dt = dtypes.canonicalize_dtype(dtypes.dtype(dtype))
  out = util.convert(astype_operand(self, dt), dt, False)
  return util.fresh_array(out) if copy else util.converted(out)


def _flatten(self, order="C"):
  """A copy of the array collapsed into one dimension."""
  return shape_ops.ravel(self, order)


def _iter(self):
  """Iterate over the leading axis."""
  if not self.shape:
    raise TypeError("iteration over a 0-d array")
  getitem = _indexing().getitem
  return (getitem(self, i) for i in range(self.shape[0]))


def _round(self, decimals=0, out=None):
  return ufuncs.round(self, decimals, out)


def _dunder_round(self, ndigits=None):
  if ndigits is None:
    if self.shape:
      raise TypeError("round() of an array needs ndigits; use jnp.round")
    return round(float(self))
  return ufuncs.round(self, ndigits)


def _clip(self, min=None, max=None, out=None, **kw):
  return ufuncs.clip(self, kw.pop("a_min", min), kw.pop("a_max", max), out)


def _dot(self, b, *, precision=None, preferred_element_type=None):
  from tracejax._src.numpy import products
  return products.dot(self, b, precision=precision,
                      preferred_element_type=preferred_element_type)


def _copy(self):
  # A new buffer (not `self`): `x.copy()` must survive `x.delete()`.
  if isinstance(self, Array):
    return self.__copy__()
  return util.to_array(self)


def _nonzero(self, *, size=None, fill_value=None):
  from tracejax._src.numpy import searching
  return searching.nonzero(self, size=size, fill_value=fill_value)


# Sorting methods (functional, unlike NumPy's in-place `a.sort()`: arrays are immutable).
def _sort_method(self, axis=-1, kind=None, order=None, *, stable=True, descending=False):
  """A sorted copy of the array along `axis` (see jnp.sort)."""
  from tracejax._src.numpy import sorting
  return sorting.sort(self, axis, kind=kind, order=order, stable=stable,
                      descending=descending)


def _argsort_method(self, axis=-1, kind=None, order=None, *, stable=True, descending=False):
  """The indices that sort the array along `axis` (see jnp.argsort)."""
  from tracejax._src.numpy import sorting
  return sorting.argsort(self, axis, kind=kind, order=order, stable=stable,
                         descending=descending)


def _searchsorted_method(self, v, side="left", sorter=None, *, method="scan"):
  """Insertion points of `v` into this sorted 1-D array (see jnp.searchsorted)."""
  from tracejax._src.numpy import sorting
  return sorting.searchsorted(self, v, side, sorter, method=method)


def _argpartition_method(self, kth, axis=-1):
  """Indices that partition the array around its kth element (see jnp.argpartition)."""
  from tracejax._src.numpy import sorting
  return sorting.argpartition(self, kth, axis)


# ---- indexing: numpy/indexing.py is imported on the first `x[i]` or `x.at` ----
# It and lax/gather.py under it are a tenth of jax.numpy's code, not needed to run a
# first operation: until the first use these stand-ins take the places of its
# functions, and then put the real ones in (on the classes where nothing has wrapped
# a stand-in meanwhile, as prng.py does for key tracers: its wrapper keeps calling
# the stand-in, which calls indexing.py).

_indexing_module = None


def _indexing():
  global _indexing_module
  if _indexing_module is None:
    from tracejax._src.numpy import indexing
    for cls in (Tracer, Array):
      if cls.__dict__.get("__getitem__") is _getitem:
        cls.__getitem__ = indexing.getitem
      at = cls.__dict__.get("at")
      if isinstance(at, property) and at.fget is _at:
        cls.at = property(indexing.IndexUpdateHelper)
    _indexing_module = indexing
  return _indexing_module


def _getitem(self, idx):
  """`self[idx]`: NumPy's basic and advanced indexing (see numpy/indexing.py)."""
  return _indexing().getitem(self, idx)


def _at(self):
  """`self.at[idx].set(v)`, `.add(v)`, `.get()`, ...: functional updates."""
  return _indexing().IndexUpdateHelper(self)


_METHODS = {
    "__getitem__": _getitem,
    "__iter__": _iter,
    "__round__": _dunder_round,
    "__pow__": _pow,
    "__rpow__": _rpow,
    "astype": _astype,
    "reshape": _reshape,
    "transpose": _transpose,
    "flatten": _flatten,
    "ravel": shape_ops.ravel,
    "squeeze": shape_ops.squeeze,
    "swapaxes": shape_ops.swapaxes,
    "repeat": shape_ops.repeat,
    "sum": _Deferred("reductions", "sum"),
    "prod": _Deferred("reductions", "prod"),
    "max": _Deferred("reductions", "max"),
    "min": _Deferred("reductions", "min"),
    "mean": _Deferred("reductions", "mean"),
    "var": _Deferred("reductions", "var"),
    "std": _Deferred("reductions", "std"),
    "all": _Deferred("reductions", "all"),
    "any": _Deferred("reductions", "any"),
    "argmax": _Deferred("reductions", "argmax"),
    "argmin": _Deferred("reductions", "argmin"),
    "cumsum": _Deferred("reductions", "cumsum"),
    "cumprod": _Deferred("reductions", "cumprod"),
    "ptp": _Deferred("reductions", "ptp"),
    "dot": _dot,
    "conj": ufuncs.conjugate,
    "conjugate": ufuncs.conjugate,
    "clip": _clip,
    "round": _round,
    "diagonal": _Deferred("products", "diagonal"),
    "trace": _Deferred("products", "trace"),
    "nonzero": _nonzero,
    "sort": _sort_method,
    "argsort": _argsort_method,
    "searchsorted": _searchsorted_method,
    "argpartition": _argpartition_method,
    "copy": _copy,
}

_PROPERTIES = {
    "T": lambda self: shape_ops.transpose(self),
    "mT": lambda self: shape_ops.swapaxes(self, -1, -2),
    "real": ufuncs.real,
    "imag": ufuncs.imag,
    "at": _at,
    "nbytes": lambda self: self.size * self.dtype.itemsize,
    "itemsize": lambda self: self.dtype.itemsize,
}


def _table():
  """Every attribute this module attaches: name -> function or property."""
  table = {}
  for name, fn in _BINARY.items():
    table[f"__{name}__"] = _binop(fn, name)
    table[f"__r{name}__"] = _rbinop(fn, name)
  for name, fn in _COMPARISONS.items():
    table[f"__{name}__"] = _binop(fn, name)
  for name, fn in _UNARY.items():
    table[f"__{name}__"] = fn
  table.update(_METHODS)
  for name, fn in _PROPERTIES.items():
    table[name] = property(fn)
  return table


def attach(*classes):
  """Attach the operators and methods to `classes` (idempotent)."""
  table = _table()
  for cls in classes:
    for name, value in table.items():
      if isinstance(value, _Deferred):
        value.attr = name
      setattr(cls, name, value)


attach(Tracer, Array)


# ---- methods of today's JAX arrays (take, choose, compress, view, ...) ----

def _take_method(self, indices, axis=None, out=None, mode=None, unique_indices=False,
                 indices_are_sorted=False, fill_value=None):
  """Elements of the array at `indices` along `axis` (see jnp.take)."""
  indexing = _indexing()
  return indexing.take(self, indices, axis, out, mode, unique_indices=unique_indices,
                       indices_are_sorted=indices_are_sorted, fill_value=fill_value)


def _choose_method(self, choices, out=None, mode="raise"):
  """Pick from `choices` by this array of choice numbers (see jnp.choose)."""
  from tracejax._src.numpy import array_edit
  return array_edit.choose(self, choices, out, mode)


def _compress_method(self, condition, axis=None, *, out=None, size=None, fill_value=0):
  """The slices along `axis` where `condition` holds (see jnp.compress)."""
  from tracejax._src.numpy import array_edit
  return array_edit.compress(condition, self, axis, size=size, fill_value=fill_value,
                             out=out)


def _from_array_api(name):
  """array_api.py's `name`, imported on the first call (it is not needed at import)."""
  def method(*args, **kwargs):
    from tracejax._src.numpy import array_api
    return getattr(array_api, name)(*args, **kwargs)
  method.__name__ = method.__qualname__ = name
  method.__doc__ = f"See tracejax/_src/numpy/array_api.py, `{name}`."
  return method


def _modern_methods():
  both = {"take": _take_method, "choose": _choose_method, "compress": _compress_method,
          "view": _from_array_api("array_view"),
          "byteswap": _from_array_api("array_byteswap"),
          "flat": property(_from_array_api("array_flat"))}
  for cls in (Tracer, Array):
    for name, value in both.items():
      setattr(cls, name, value)
  Array.to_device = _from_array_api("array_to_device")
  Array.tobytes = _from_array_api("array_tobytes")
  # A tracer's value is unknown: these raise JAX's concretization error.
  Tracer.item = _from_array_api("tracer_item")
  Tracer.tolist = _from_array_api("tracer_tolist")


_modern_methods()
