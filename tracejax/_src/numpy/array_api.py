"""The Python array API standard's names in jax.numpy, and other NumPy 2 functions.

The array API (https://data-apis.org/array-api/) renames a number of NumPy
functions (`acos` for `arccos`, `concat` for `concatenate`, `pow` for
`power`, ...) and adds a few (`unstack`, `vecdot`, `isdtype`, ...). The
renamed ones are the same functions as NumPy's; the new ones are written
here with the other jnp functions, so they trace, differentiate and batch.
"""
import builtins

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer, concrete_or_error
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.numpy import (array_methods, creation, indexing, products, reductions,
                                 shape_ops, ufuncs, util)
from tracejax._src.runtime.array import Array

# ---- renamed functions (the same functions under the array API's names) ----

acos = ufuncs.arccos
acosh = ufuncs.arccosh
asin = ufuncs.arcsin
asinh = ufuncs.arcsinh
atan = ufuncs.arctan
atanh = ufuncs.arctanh
atan2 = ufuncs.arctan2
pow = ufuncs.power
bitwise_left_shift = ufuncs.left_shift
bitwise_right_shift = ufuncs.right_shift
bitwise_invert = ufuncs.bitwise_not
iterable = np.iterable


def astype(x, dtype, /, *, copy=False, device=None):
  """`x` converted to `dtype` (the array API's function form of `x.astype`).

  Args:
    x: array-like.
    dtype: the target dtype; 64-bit types narrow (with a warning) when x64 is off.
      None means the default floating dtype, as `np.dtype(None)` does.
    copy: if True, the result is a new array even when nothing changes.
    device: if given, the result is placed on this device.

  >>> astype(jnp.array([1.7, -2.5]), jnp.int32)
  DeviceArray([ 1, -2], dtype=int32)
  """
  if util.key_impls and util.has_keys(x):  # key arrays (prng.py)
    return creation._place(util.key_impls["astype"](x, dtype), device)
  util.check_arraylike("astype", x)
  if dtype is None:
    dt = dtypes.default_float_dtype()
  else:
    dt = util.check_dtype(dtype, "astype")
  x = util.to_array(x)
  x = array_methods.astype_operand(x, dt)
  out = util.convert(x, dt, False)
  out = util.fresh_array(out) if copy else util.converted(out)
  return creation._place(out, device)


def concat(arrays, /, *, axis=0):
  """Join arrays along an existing axis (flattened first when `axis` is None).

  Args:
    arrays: a sequence of arrays with equal shapes except along `axis`.
    axis: the joining axis, or None to join the flattened arrays.

  >>> concat([jnp.array([1, 2]), jnp.array([3])])
  DeviceArray([1, 2, 3], dtype=int32)
  """
  if isinstance(arrays, (Array, Tracer, np.ndarray)) or not hasattr(arrays, "__len__"):
    raise TypeError(f"concat: `arrays` must be a sequence of arrays, got {type(arrays)}")
  if axis is None:
    return shape_ops.concatenate([shape_ops.ravel(a) for a in arrays], axis=0)
  return shape_ops.concatenate(arrays, axis=axis)


def permute_dims(a, /, axes):
  """The axes of `a` reordered: axis i of the result is axis `axes[i]` of `a`.

  >>> permute_dims(jnp.zeros((2, 3, 4)), (2, 0, 1)).shape
  (4, 2, 3)
  """
  util.check_arraylike("permute_dims", a)
  return shape_ops.transpose(a, tuple(axes))


def matrix_transpose(x, /):
  """Swap the last two axes (a batch of matrices transposed); needs ndim >= 2.

  >>> matrix_transpose(jnp.zeros((5, 2, 3))).shape
  (5, 3, 2)
  """
  util.check_arraylike("matrix_transpose", x)
  if util.ndim(x) < 2:
    raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape "
                     f"{util.shape(x)}")
  return shape_ops.swapaxes(x, -1, -2)


def unstack(x, /, *, axis=0):
  """A tuple of the slices of `x` along `axis` (the inverse of `stack`).

  >>> unstack(jnp.array([[1, 2], [3, 4]]), axis=1)
  (DeviceArray([1, 3], dtype=int32), DeviceArray([2, 4], dtype=int32))
  """
  util.check_arraylike("unstack", x)
  x = util.to_array(x)
  if util.ndim(x) == 0:
    raise ValueError("unstack requires arrays with rank > 0, however a scalar array was "
                     "passed.")
  axis = util.canonicalize_axis(axis, util.ndim(x))
  moved = shape_ops.moveaxis(x, axis, 0)
  return tuple(indexing.getitem(moved, i) for i in range(util.shape(x)[axis]))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """The dot product of vectors along `axis`, `x1` conjugated, broadcasting the rest.

  Args:
    x1, x2: arrays whose `axis` dimensions are equal; other axes broadcast.
    axis: the contracted axis (of both, after broadcasting).
    precision, preferred_element_type: passed on to the underlying matmul.

  >>> vecdot(jnp.array([[1., 2.], [3., 4.]]), jnp.array([1., 1.]))
  DeviceArray([3., 7.], dtype=float32)
  """
  util.check_arraylike("vecdot", x1, x2)
  x1, x2 = util.to_array(x1), util.to_array(x2)
  if util.ndim(x1) == 0 or util.ndim(x2) == 0:
    raise ValueError("vecdot: both arguments need at least one dimension")
  # `axis` counts in the broadcast shape (the array API's rule).
  shape = util.broadcast_shapes(util.shape(x1), util.shape(x2))
  if not -len(shape) <= axis < len(shape):
    raise ValueError(f"vecdot: axis {axis} is out of bounds for the broadcast shape {shape}")
  x1, x2 = util.broadcast_to(x1, shape), util.broadcast_to(x2, shape)
  x1 = shape_ops.moveaxis(x1, axis, -1)
  x2 = shape_ops.moveaxis(x2, axis, -1)
  out = products.matmul(ufuncs.conjugate(x1)[..., None, :], x2[..., :, None],
                        precision=precision, preferred_element_type=preferred_element_type)
  return out[..., 0, 0]


def matvec(x1, x2, /):
  """Batched matrix-vector products: (..., m, n) times (..., n) gives (..., m).

  >>> matvec(jnp.eye(2) * 2, jnp.array([1., 3.]))
  DeviceArray([2., 6.], dtype=float32)
  """
  util.check_arraylike("matvec", x1, x2)
  if util.ndim(x1) < 2 or util.ndim(x2) < 1:
    raise ValueError(f"matvec: x1 needs ndim >= 2 and x2 ndim >= 1, got shapes "
                     f"{util.shape(x1)} and {util.shape(x2)}")
  return products.matmul(x1, util.to_array(x2)[..., None])[..., 0]


def vecmat(x1, x2, /):
  """Batched vector-matrix products, `x1` conjugated: (..., n) times (..., n, m) gives (..., m).

  >>> vecmat(jnp.array([1., 3.]), jnp.eye(2) * 2)
  DeviceArray([2., 6.], dtype=float32)
  """
  util.check_arraylike("vecmat", x1, x2)
  if util.ndim(x1) < 1 or util.ndim(x2) < 2:
    raise ValueError(f"vecmat: x1 needs ndim >= 1 and x2 ndim >= 2, got shapes "
                     f"{util.shape(x1)} and {util.shape(x2)}")
  return products.matmul(ufuncs.conjugate(x1)[..., None, :], x2)[..., 0, :]


def bitwise_count(x, /):
  """The number of 1 bits in the absolute value of each element, as uint8 (NumPy 2's).

  >>> bitwise_count(jnp.array([7, -1, 0]))
  DeviceArray([3, 1, 0], dtype=uint8)
  """
  util.check_arraylike("bitwise_count", x)
  x, = util.promote_args("bitwise_count", x)
  dt = util.dtype_of(x)
  if not (dtypes.is_integer(dt) or dtypes.is_bool(dt)):
    raise TypeError(f"bitwise_count requires integer or bool input, got dtype {dt}")
  if dtypes.is_bool(dt):
    return util.convert(x, np.uint8, False)
  if dtypes.is_signed(dt):
    x = ufuncs.absolute(x)
  return util.to_array(util.convert(lax_ew.population_count(x), np.uint8, False))


_ISDTYPE_KINDS = {
    "bool": lambda d: dtypes.is_bool(d),
    "signed integer": lambda d: dtypes.is_integer(d) and dtypes.issubdtype(d, np.signedinteger),
    "unsigned integer": lambda d: dtypes.is_integer(d) and not dtypes.issubdtype(
        d, np.signedinteger),
    "integral": lambda d: dtypes.is_integer(d),
    "real floating": lambda d: dtypes.is_floating(d),
    "complex floating": lambda d: dtypes.is_complex(d),
    "numeric": lambda d: dtypes.is_integer(d) or dtypes.is_inexact(d),
}


def isdtype(dtype, kind):
  """Whether `dtype` is of `kind`: a kind name, a dtype, or a tuple of them (array API).

  Kind names: 'bool', 'signed integer', 'unsigned integer', 'integral',
  'real floating', 'complex floating', 'numeric'. bfloat16 and the float8
  types are real floating; int4/uint4 are integral.

  >>> isdtype(jnp.bfloat16, 'real floating'), isdtype(jnp.int32, ('bool', jnp.int32))
  (True, True)
  """
  try:
    dt = np.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"isdtype: dtype must be a dtype, got {dtype!r}") from e
  kinds = kind if isinstance(kind, tuple) else (kind,)
  for k in kinds:
    if isinstance(k, str):
      if k not in _ISDTYPE_KINDS:
        raise ValueError(f"isdtype: unrecognized kind {k!r}; expected one of "
                         f"{sorted(_ISDTYPE_KINDS)} or a dtype")
      if _ISDTYPE_KINDS[k](dt):
        return True
    else:
      try:
        if dt == np.dtype(k):
          return True
      except TypeError as e:
        raise TypeError(f"isdtype: kind must be a str, a dtype or a tuple of them, got "
                        f"{k!r}") from e
  return False


def from_dlpack(x, /, *, device=None, copy=None):
  """An array from an object that supports the DLPack protocol (`__dlpack__`).

  Host (CPU) producers are read through NumPy's DLPack import and transferred;
  a tracejax array is returned as it is.

  >>> from_dlpack(np.arange(3.0))
  DeviceArray([0., 1., 2.], dtype=float32)
  """
  del copy  # the transfer always copies; arrays are immutable anyway
  if isinstance(x, Array):
    out = x
  elif hasattr(x, "__dlpack__"):
    out = creation.asarray(np.from_dlpack(x))
  else:
    raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(x)}")
  return creation._place(out, device)


def copy(a, order=None):
  """A copy of `a` as a new device array.

  >>> copy(jnp.array([1, 2]))
  DeviceArray([1, 2], dtype=int32)
  """
  util.check_arraylike("copy", a)
  return creation.array(a, copy=True, order=order or "K")


# ---- elementwise functions of floats ----

def modf(x, /, out=None):
  """(fractional part, integral part) of each element, both with the sign of `x`.

  >>> modf(jnp.array([-3.5, 2.25]))
  (DeviceArray([-0.5 ,  0.25], dtype=float32), DeviceArray([-3.,  2.], dtype=float32))
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  util.check_arraylike("modf", x)
  x, = util.promote_args_inexact("modf", x)
  whole = ufuncs.trunc(x)
  frac = ufuncs.subtract(x, whole)
  # inf - inf is nan; NumPy gives a zero fraction (with x's sign) for infinities.
  frac = ufuncs.where(ufuncs.isinf(x), ufuncs.copysign(util.convert(0, util.dtype_of(x),
                                                                   util.is_weak(x)), x),
                      frac)
  return frac, whole


def spacing(x, /):
  """The distance from each element to the next representable number away from zero.

  >>> spacing(jnp.array([1.0, -1.0]))
  DeviceArray([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
  """
  util.check_arraylike("spacing", x)
  x, = util.promote_args_inexact("spacing", x)
  dt = util.dtype_of(x)
  if dtypes.is_complex(dt):
    raise TypeError("spacing does not support complex-valued inputs")
  away = ufuncs.where(ufuncs.less(x, 0), util.convert(-np.inf, dt), util.convert(np.inf, dt))
  nxt = ufuncs.nextafter(x, away)
  # At zero the step is the smallest subnormal itself; subtracting zero from it
  # would be flushed to zero on CPUs that flush denormal results.
  return ufuncs.where(ufuncs.equal(x, 0), nxt, ufuncs.subtract(nxt, x))


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """Unwrap phases: add multiples of `period` so that neighbours along `axis` never
  jump by more than max(discont, period / 2).

  >>> unwrap(jnp.array([0., 1., 2., 8., 9., 3.]))  # doctest: +SKIP
  DeviceArray([0., 1., 2., 1.7168, 2.7168, 3.], dtype=float32)
  """
  util.check_arraylike("unwrap", p)
  p, = util.promote_args_inexact("unwrap", p)
  dt = util.dtype_of(p)
  if dtypes.is_complex(dt):
    raise TypeError("unwrap does not support complex-valued inputs")
  axis = util.canonicalize_axis(axis, util.ndim(p))
  period = util.convert(util.to_operand(period), dt)
  if discont is None:
    discont = ufuncs.true_divide(period, 2)
  dd = _diff(p, axis)
  high = ufuncs.true_divide(period, 2)
  low = ufuncs.negative(high)
  ddmod = ufuncs.add(ufuncs.remainder(ufuncs.subtract(dd, low), period), low)
  # An exact half-period jump keeps the direction it had.
  ddmod = ufuncs.where(ufuncs.logical_and(ufuncs.equal(ddmod, low), ufuncs.greater(dd, 0)),
                       high, ddmod)
  correct = ufuncs.subtract(ddmod, dd)
  correct = ufuncs.where(ufuncs.less(ufuncs.absolute(dd), discont),
                         util.convert(0, dt), correct)
  head = shape_ops._slice_axis(p, axis, 0, 1)
  rest = ufuncs.add(shape_ops._slice_axis(p, axis, 1, util.shape(p)[axis]),
                    reductions.cumsum(correct, axis=axis))
  return shape_ops.concatenate([head, rest], axis=axis)


def _diff(a, axis):
  n = util.shape(a)[axis]
  return ufuncs.subtract(shape_ops._slice_axis(a, axis, 1, n),
                         shape_ops._slice_axis(a, axis, 0, max(n - 1, 0)))


# ---- shapes and construction ----

def diagflat(v, k=0):
  """A 2-D array with the flattened `v` on diagonal `k`.

  >>> diagflat(jnp.array([[1, 2]]))
  DeviceArray([[1, 0],
               [0, 2]], dtype=int32)
  """
  util.check_arraylike("diagflat", v)
  return products.diag(shape_ops.ravel(v), k)


def resize(a, new_shape):
  """An array of `new_shape` filled with the elements of `a` repeated in order.

  >>> resize(jnp.array([1, 2, 3]), (2, 4))
  DeviceArray([[1, 2, 3, 1],
               [2, 3, 1, 2]], dtype=int32)
  """
  util.check_arraylike("resize", a)
  if isinstance(new_shape, (int, np.integer)):
    new_shape = (new_shape,)
  new_shape = tuple(util.concrete_int(d, "new_shape of jnp.resize") for d in new_shape)
  if builtins.any(d < 0 for d in new_shape):
    raise ValueError(f"resize: all elements of new_shape must be non-negative, got "
                     f"{new_shape}")
  flat = shape_ops.ravel(a)
  n = util.shape(flat)[0]
  total = int(np.prod(new_shape, dtype=np.int64))
  if n == 0:
    return creation.zeros(new_shape, util.dtype_of(flat))
  reps = -(-total // n)
  return util.reshape(shape_ops.tile(flat, reps)[:total], new_shape)


def indices(dimensions, dtype=None, sparse=False):
  """The index grid of an array of shape `dimensions`: out[k][i0, i1, ...] = ik.

  Args:
    dimensions: the grid's shape.
    dtype: integer dtype of the result (default: the default integer dtype).
    sparse: return a tuple of broadcastable arrays instead of one stacked array.

  >>> indices((2, 3))[1]
  DeviceArray([[0, 1, 2],
               [0, 1, 2]], dtype=int32)
  """
  dims = tuple(util.concrete_int(d, "dimensions of jnp.indices") for d in dimensions)
  dt = util.check_dtype(dtype, "indices") or dtypes.default_int_dtype()
  out = []
  for i, n in enumerate(dims):
    shape = [1] * len(dims)
    shape[i] = n
    r = util.reshape(creation.arange(n, dtype=dt), tuple(shape))
    out.append(r if sparse else util.broadcast_to(r, dims))
  if sparse:
    return tuple(out)
  if not out:
    return creation.zeros((0,), dt)
  return shape_ops.stack(out, axis=0)


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """`function` evaluated on every index of `shape`. As in JAX it is vmapped over
  scalar coordinates of `dtype`, so any traceable function of scalars works.

  Args:
    function: called as `function(i0, i1, ..., **kwargs)`.
    shape: the grid's shape (static).
    dtype: the coordinates' dtype (default: the default float dtype).

  >>> fromfunction(lambda i, j: i + 2 * j, (2, 2), dtype=int)
  DeviceArray([[0, 2],
               [1, 3]], dtype=int32)
  """
  from tracejax._src import api  # api sits above jax.numpy's modules
  shape = tuple(util.concrete_int(d, "shape of jnp.fromfunction") for d in shape)
  dt = util.check_dtype(dtype, "fromfunction")
  nd = len(shape)
  fun = lambda *idx: function(*idx, **kwargs)  # noqa: E731
  # The outermost vmap (applied last) maps coordinate 0, so result axis i is index i.
  for i in range(nd - 1, -1, -1):
    fun = api.vmap(fun, in_axes=tuple(0 if j == i else None for j in range(nd)))
  return fun(*[creation.arange(n, dtype=dt) for n in shape])


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  """An array from the raw bytes of `buffer` (NumPy's `frombuffer`, then transferred).

  >>> frombuffer(b'\\x01\\x02', dtype=jnp.uint8)
  DeviceArray([1, 2], dtype=uint8)
  """
  return creation.asarray(np.frombuffer(buffer, dtype=np.dtype(dtype), count=count,
                                        offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """An array from text data separated by `sep` (NumPy's `fromstring`, then transferred).

  >>> fromstring('1 2 3', dtype=int, sep=' ')
  DeviceArray([1, 2, 3], dtype=int32)
  """
  return creation.asarray(np.fromstring(string, dtype=np.dtype(dtype), count=count, sep=sep))


def fromiter(iter, dtype, count=-1, *, like=None):
  """An array from the values of an iterable (read on the host, then transferred).

  >>> fromiter(range(3), dtype=float)
  DeviceArray([0., 1., 2.], dtype=float32)
  """
  del like
  return creation.asarray(np.fromiter(iter, dtype=np.dtype(dtype), count=count))


def fromfile(file, dtype=float, count=-1, sep="", offset=0):
  """An array from a binary or text file (NumPy's `fromfile`, then transferred).

  Args:
    file: an open file or a path.
    dtype, count, sep, offset: as in `numpy.fromfile`.

  >>> fromfile('x.bin', dtype=jnp.float32)  # doctest: +SKIP
  """
  return creation.asarray(np.fromfile(file, dtype=np.dtype(dtype), count=count, sep=sep,
                                      offset=offset))


def load(file, *args, **kwargs):
  """Load an array saved by `jnp.save`/`np.save` (a `.npy` file) as a device array.

  `.npz` archives come back as NumPy's lazy mapping, as NumPy returns them.

  >>> load('x.npy')  # doctest: +SKIP
  """
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray) and out.dtype.kind in "biufc" + "V":
    try:
      return creation.asarray(out)
    except TypeError:
      return out
  return out


save = np.save
savez = np.savez


# ---- bits ----

def _bit_order(bitorder, fun_name):
  if bitorder not in ("big", "little"):
    raise ValueError(f"{fun_name}: bitorder must be 'big' or 'little', got {bitorder!r}")
  return bitorder


def packbits(a, axis=None, bitorder="big"):
  """Pack the truth values of `a` into the bits of uint8 (8 per byte, zero-padded).

  >>> packbits(jnp.array([1, 0, 1, 1, 1, 1, 1, 1, 1]))
  DeviceArray([191, 128], dtype=uint8)
  """
  util.check_arraylike("packbits", a)
  a = util.to_array(a)
  if not (dtypes.is_integer(util.dtype_of(a)) or dtypes.is_bool(util.dtype_of(a))):
    raise TypeError("packbits: expected an integer or boolean array")
  _bit_order(bitorder, "packbits")
  if axis is None:
    a = shape_ops.ravel(a)
    axis = 0
  axis = util.canonicalize_axis(axis, util.ndim(a))
  bits = util.convert(ufuncs.not_equal(a, 0), np.uint8)
  bits = shape_ops.moveaxis(bits, axis, -1)
  n = util.shape(bits)[-1]
  pad = (-n) % 8
  if pad:
    bits = shape_ops.concatenate(
        [bits, creation.zeros(util.shape(bits)[:-1] + (pad,), np.uint8)], axis=-1)
  bits = util.reshape(bits, util.shape(bits)[:-1] + ((n + pad) // 8, 8))
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  packed = reductions.sum(ufuncs.left_shift(bits, shifts), axis=-1, dtype=np.uint8)
  return shape_ops.moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
  """The bits of a uint8 array as 0/1 uint8 values (8 per byte), optionally cut or
  zero-padded to `count` bits along `axis`.

  >>> unpackbits(jnp.array([3], jnp.uint8), bitorder='little', count=4)
  DeviceArray([1, 1, 0, 0], dtype=uint8)
  """
  util.check_arraylike("unpackbits", a)
  a = util.to_array(a)
  if util.dtype_of(a) != np.uint8:
    raise TypeError(f"unpackbits: expected an array of dtype uint8, got {util.dtype_of(a)}")
  _bit_order(bitorder, "unpackbits")
  if axis is None:
    a = shape_ops.ravel(a)
    axis = 0
  axis = util.canonicalize_axis(axis, util.ndim(a))
  shifts = np.arange(8, dtype=np.uint8)
  if bitorder == "big":
    shifts = shifts[::-1].copy()
  moved = shape_ops.moveaxis(a, axis, -1)
  bits = ufuncs.bitwise_and(ufuncs.right_shift(moved[..., None], shifts), np.uint8(1))
  bits = util.reshape(bits, util.shape(moved)[:-1] + (util.shape(moved)[-1] * 8,))
  if count is not None:
    count = util.concrete_int(count, "count of jnp.unpackbits")
    n = util.shape(bits)[-1]
    if count < 0:
      count = builtins.max(n + count, 0)
    if count <= n:
      bits = bits[..., :count]
    else:
      bits = shape_ops.concatenate(
          [bits, creation.zeros(util.shape(bits)[:-1] + (count - n,), np.uint8)], axis=-1)
  return shape_ops.moveaxis(bits, -1, axis)


# ---- functions of functions ----

def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """`func1d` applied to each 1-D slice of `arr` along `axis` (by `vmap`); the axis is
  replaced by the dimensions of `func1d`'s result.

  >>> apply_along_axis(jnp.sum, 1, jnp.ones((2, 3)))
  DeviceArray([3., 3.], dtype=float32)
  """
  from tracejax._src import api  # api sits above jax.numpy's modules
  util.check_arraylike("apply_along_axis", arr)
  arr = util.to_array(arr)
  nd = util.ndim(arr)
  axis = util.canonicalize_axis(axis, nd)
  fun = lambda x: func1d(x, *args, **kwargs)  # noqa: E731
  # Map the axes after `axis`, then those before, so the result keeps their order.
  for i in range(1, nd - axis):
    fun = api.vmap(fun, in_axes=-1, out_axes=-1)
  for i in range(axis):
    fun = api.vmap(fun, in_axes=0, out_axes=0)
  return util.to_array(fun(arr))


def apply_over_axes(func, a, axes):
  """`func(a, axis)` applied for each axis in turn; a result that lost the axis gets
  it back as a size-1 dimension, so the dimensions are kept.

  >>> apply_over_axes(jnp.sum, jnp.ones((2, 3)), [0, 1])
  DeviceArray([[6.]], dtype=float32)
  """
  util.check_arraylike("apply_over_axes", a)
  a = util.to_array(a)
  for axis in axes:
    b = util.to_array(func(a, axis))
    if util.ndim(b) == util.ndim(a) - 1:
      b = shape_ops.expand_dims(b, axis)
    elif util.ndim(b) != util.ndim(a):
      raise ValueError("apply_over_axes: function is not returning an array of the "
                       "correct shape")
    a = b
  return a


def piecewise(x, condlist, funclist, *args, **kw):
  """Values of `x` mapped by the function (or constant) of the condition they meet.

  Args:
    x: the input array.
    condlist: boolean arrays (or one) of `x`'s shape; a later true condition wins.
    funclist: one function or constant per condition, plus optionally a default
      for where none holds (otherwise 0 there). Functions are applied elementwise
      (to all of `x`), with `*args, **kw`.

  >>> piecewise(jnp.array([-1., 2.]), [jnp.array([True, False])], [lambda v: -v, 10.])
  DeviceArray([ 1., 10.], dtype=float32)
  """
  util.check_arraylike("piecewise", x)
  x = util.to_array(x)
  if util.is_arraylike(condlist) and util.ndim(condlist) == util.ndim(x):
    condlist = [condlist]
  conds = [util.to_array(c) for c in condlist]
  funcs = list(funclist)
  n = len(conds)
  if len(funcs) == n + 1:
    default = funcs.pop()
  elif len(funcs) == n:
    default = 0
  else:
    raise ValueError(f"piecewise: with {n} condition(s), funclist needs {n} or {n + 1} "
                     f"entries, got {len(funcs)}")
  dt = util.dtype_of(x)

  def value(f):
    v = f(x, *args, **kw) if callable(f) else f
    return util.broadcast_to(util.convert(util.to_operand(v), dt), util.shape(x))
  out = value(default)
  for c, f in zip(conds, funcs):
    if util.dtype_of(c) != np.bool_:
      c = ufuncs.not_equal(c, 0)
    out = ufuncs.where(c, value(f), out)
  return out


def trim_zeros(filt, trim="fb", axis=None):
  """`filt` without its leading ('f') and/or trailing ('b') zeros, along `axis`
  (every axis when None). The length depends on the values, so `filt` must be
  concrete (not traced).

  >>> trim_zeros(jnp.array([0, 1, 0, 2, 0, 0]))
  DeviceArray([1, 0, 2], dtype=int32)
  """
  util.check_arraylike("trim_zeros", filt)
  trim = trim.lower()
  if builtins.any(c not in "fb" for c in trim):
    raise ValueError(f"trim_zeros: unexpected character(s) in trim {trim!r}")
  filt_arr = util.to_array(filt)
  host = concrete_or_error(np.asarray, filt_arr,
                           "The error arose in jnp.trim_zeros: its result's size depends "
                           "on the values of `filt`.")
  nd = host.ndim
  if nd == 0:
    raise ValueError("trim_zeros: filt must be at least 1-D")
  axes = range(nd) if axis is None else [
      util.canonicalize_axis(a, nd) for a in (axis if isinstance(axis, (tuple, list))
                                             else (axis,))]
  nz = host != 0
  index = [slice(None)] * nd
  for ax in axes:
    other = tuple(i for i in range(nd) if i != ax)
    mask = nz.any(axis=other) if other else nz
    pos = np.flatnonzero(mask)
    if pos.size == 0:
      # All zeros: trimming from either end removes everything.
      start, stop = (0, 0) if trim else (0, host.shape[ax])
    else:
      start = int(pos[0]) if "f" in trim else 0
      stop = int(pos[-1]) + 1 if "b" in trim else host.shape[ax]
    index[ax] = slice(start, stop)
  return indexing.getitem(filt_arr, tuple(index))



# ---- implementations of Array methods without a jnp function ----

def array_view(x, dtype=None, type=None):
  """`x.view(dtype)`: the same bits read as `dtype`. A different item size changes
  the last dimension (which must then divide evenly), as in NumPy.

  >>> jnp.array([1.0], jnp.float32).view(jnp.int32)
  DeviceArray([1065353216], dtype=int32)
  """
  if type is not None:
    raise NotImplementedError("`type` argument of array.view() is not supported.")
  x = util.to_array(x)
  if dtype is None:
    return x
  util.check_dtype(dtype, "view")
  dt_in, dt_out = util.dtype_of(x), np.dtype(dtype)
  if dt_out == dt_in:
    return x
  # XLA cannot bitcast bools; they are bytes holding 0 or 1, as in NumPy.
  if dt_in == np.bool_:
    x, dt_in = util.convert(x, np.uint8), np.dtype(np.uint8)
  to_bool = dt_out == np.bool_
  target = np.dtype(np.uint8) if to_bool else dt_out
  n_in, n_out = dt_in.itemsize, target.itemsize
  if n_in == n_out:
    out = lax_ew.bitcast_convert_type(x, target)
  elif util.ndim(x) == 0:
    raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize "
                     "is unchanged")
  elif n_in > n_out:
    out = lax_ew.bitcast_convert_type(x, target)  # a new trailing axis of n_in // n_out
    out = util.reshape(out, util.shape(x)[:-1] + (util.shape(x)[-1] * (n_in // n_out),))
  else:
    k = n_out // n_in
    if util.shape(x)[-1] % k:
      raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                       "total size in bytes of the last axis of the array.")
    x = util.reshape(x, util.shape(x)[:-1] + (util.shape(x)[-1] // k, k))
    out = lax_ew.bitcast_convert_type(x, target)
  if to_bool:
    out = ufuncs.not_equal(out, np.uint8(0))
  return out


def array_byteswap(x, inplace=False):
  """`x.byteswap()`: every element's bytes in reverse order (a new array).

  >>> jnp.array([1], jnp.int16).byteswap()
  DeviceArray([256], dtype=int16)
  """
  if inplace:
    raise ValueError("Inplace byteswapping is not supported: JAX arrays are immutable.")
  x = util.to_array(x)
  dt = util.dtype_of(x)
  if dt.itemsize == 1:
    return x
  b = lax_ew.bitcast_convert_type(x, np.uint8)
  b = shape_ops.flip(b, axis=-1)
  return lax_ew.bitcast_convert_type(b, dt)


def array_to_device(x, device, *, stream=None):
  """`x.to_device(device)`: a copy of `x` on `device` (the array API's method)."""
  if stream is not None:
    raise NotImplementedError("to_device: the stream argument is not supported")
  return creation._place(x, device)


def array_tobytes(x, order="C"):
  """`x.tobytes()`: the raw bytes of the value (fetched to the host)."""
  return np.asarray(x).tobytes(order=order)


def tracer_item(x, *args):
  """`x.item()` of a traced value: a concretization error, since its value is unknown."""
  return concrete_or_error(lambda v: np.asarray(v).item(*args), x,
                           "The error arose in the .item() method of a traced array.")


def tracer_tolist(x):
  """`x.tolist()` of a traced value: a concretization error, since its value is unknown."""
  return concrete_or_error(lambda v: np.asarray(v).tolist(), x,
                           "The error arose in the .tolist() method of a traced array.")


def array_flat(x):
  """`x.flat` is NumPy's in-place flat iterator, which immutable arrays cannot offer."""
  raise NotImplementedError("JAX Arrays do not implement the arr.flat property: consider "
                            "arr.flatten() instead.")
