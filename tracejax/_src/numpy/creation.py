"""Array creation: array, asarray, zeros/ones/full/empty, arange, linspace, eye, tri...

Host data (NumPy arrays, nested lists of numbers) is converted on the host
and transferred with a single `device_put`; only nested sequences holding
device arrays or tracers are assembled on the device (by stacking).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import AbstractNamedSharding, canonicalize_shape
from tracejax._src.core.trace import Tracer, concrete_or_error
from tracejax._src.core import trace as _trace_mod
from tracejax._src.lax import structural
from tracejax._src.numpy import util
from tracejax._src.runtime.array import Array, from_numpy

_py_scalar_set = util._py_scalar_set


# ---- array / asarray ----

def _flatten_nested(obj, out):
  """Append the leaves of nested lists/tuples to `out`."""
  for x in obj:
    if isinstance(x, (list, tuple)):
      _flatten_nested(x, out)
    else:
      out.append(x)
  return out


def _leaf_dtype(leaves):
  """The dtype of a nested sequence: JAX promotion over one leaf per kind of leaf."""
  exemplars = {}
  for x in leaves:
    t = type(x)
    key = t if t in _py_scalar_set else getattr(x, "dtype", t)
    if key not in exemplars:
      exemplars[key] = x
  if not exemplars:
    return dtypes.canonicalize_dtype(np.float64)
  for x in exemplars.values():
    if not util.is_arraylike(x):
      raise TypeError(f"JAX arrays cannot be made from values of type {type(x)}: {x!r}")
  return dtypes.result_type(*exemplars.values())


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None,
          out_sharding=None):
  """Create a device array from an array, a NumPy array, a scalar, or nested sequences.

  Python scalars give weakly typed arrays; 64-bit inputs are narrowed to
  32-bit unless `jax_enable_x64` is set. Sequences containing device arrays
  or tracers are stacked on the device, so `jnp.array([x, y])` works under
  `jit`. `device=`/`out_sharding=` as for `full`.
  """
  if device is not None or out_sharding is not None:
    return _placed(array(object, dtype, copy, order, ndmin), device, out_sharding, "array")
  if order not in (None, "K", "A", "C"):
    raise NotImplementedError(f"jax.numpy.array: only C order is supported, got order={order!r}")
  if dtypes._extended_type_of(getattr(object, "dtype", None)) is not None and (
      dtype is None or dtype == object.dtype) and not ndmin:
    return object  # a key array (extended dtype) is already an array of its kind
  dt = util.check_dtype(dtype, "array")
  if isinstance(object, (Array, Tracer)):
    # A copy (JAX binds `copy`) is a new value even under vmap/jvp of a NumPy input;
    # asarray (copy=False/None) hands a tracer back itself, as JAX's, unless it is
    # concrete (a jvp of a value), which JAX's conversion binds.
    out = object if dt is None else util.convert(object, dt, False)
    out = util.fresh_array(out) if copy else util.converted(out)
  elif hasattr(object, "__jax_array__"):
    return array(object.__jax_array__(), dtype, copy, order, ndmin)
  elif type(object) in _py_scalar_set:
    weak = dt is None and type(object) is not bool
    if dt is None:
      dt = dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(object)])
    out = from_numpy(util._host_scalar(object, dt), weak_type=weak)
  elif isinstance(object, (np.ndarray, np.generic)):
    if object.dtype == dtypes.float0 and dt in (None, dtypes.float0):
      # float0 (tangents of integers) has no data and no XLA type: it stays a host
      # array, as jnp.asarray/jnp.real of one do in JAX 0.10.2.
      return np.zeros(np.shape(object), dtypes.float0)
    _check_numeric(object)
    dt = dt if dt is not None else dtypes.canonicalize_dtype(object.dtype)
    out = from_numpy(object if object.dtype == dt else np.asarray(object, dt))
  elif isinstance(object, (list, tuple)):
    leaves = _flatten_nested(object, [])
    if any(isinstance(x, (Array, Tracer)) or hasattr(x, "__jax_array__") for x in leaves):
      out = _stack_nested(object, dt)
      if dtypes.is_weakly_typed(out):
        # An array built from a list is strongly typed even from weak elements (JAX).
        out = util.convert(out, util.dtype_of(out), False)
    else:
      dt = dt if dt is not None else _leaf_dtype(leaves)
      out = from_numpy(np.array(object, dtype=dt))
  elif hasattr(object, "__array__"):
    return array(np.asarray(object), dtype, copy, order, ndmin)
  elif isinstance(object, (bytes, str)):
    # As in JAX: bytes and str are strings to NumPy (dtype S/U), not byte buffers.
    _check_numeric(np.asarray(object))
  elif _is_buffer(object):
    # memoryview, bytearray, array.array...: the buffer's own format gives the dtype.
    return array(np.asarray(memoryview(object)), dtype, copy, order, ndmin)
  else:
    raise TypeError(f"Unexpected input type for array: {type(object)}")
  if ndmin > util.ndim(out):
    out = util.reshape(out, (1,) * (ndmin - util.ndim(out)) + util.shape(out))
  return out


def _on_context_mesh(out, ndmin=0):
  """Inside `jax.set_mesh(mesh)`, as in JAX: a new array made from host data (or a copy
  of an uncommitted one) is committed to the mesh, replicated (`NamedSharding(mesh,
  P())`); on a mesh with Explicit axes it then has the mesh's type. Not under a trace
  (there it is a constant of no mesh)."""
  if type(out) is not Array or out._committed or \
      _trace_mod.current_trace() is not _trace_mod.eval_trace:
    return out
  from tracejax._src.runtime import sharding as sharding_mod   # (runtime is below numpy)
  mesh = sharding_mod.context_mesh()
  if mesh is None:
    return out
  out = _place(out, sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec()))
  if ndmin > out.ndim:   # the reshape `ndmin` asks for is an op on the typed array
    out = util.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
  return out


def _check_numeric(x):
  """TypeError for host arrays of strings, bytes or objects (XLA has no such dtypes)."""
  if x.dtype.kind in "SUOMm":  # not "V": bfloat16 and the ml_dtypes are kind V
    raise TypeError(f"Value {x!r} with dtype {x.dtype} is not a valid JAX array type. Only "
                    "arrays of numeric types are supported by JAX.")


def _is_buffer(obj):
  """True for objects that expose the buffer protocol (memoryview, bytearray, array.array)."""
  try:
    memoryview(obj)
  except TypeError:
    return False
  return True


def _stack_nested(obj, dt):
  from tracejax._src.numpy import shape_ops
  if not isinstance(obj, (list, tuple)):
    return array(obj, dt)
  if not obj:
    return array(np.zeros((0,), dt if dt is not None else np.float32))
  parts = [_stack_nested(x, dt) for x in obj]
  return shape_ops.stack(parts)


def asarray(a, dtype=None, order=None, copy=None, *, device=None, out_sharding=None):
  """Convert `a` to a device array (arrays of the requested dtype are returned as is).
  `device=`/`out_sharding=` as for `full`."""
  out = array(a, dtype=dtype, copy=bool(copy), order=order)
  if device is None and out_sharding is None:
    return out
  return _placed(out, device, out_sharding, "asarray")


# ---- filled arrays ----

def _shape_arg(shape, fun_name):
  return canonicalize_shape(shape, fun_name)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of `shape` filled with `fill_value` (which may itself be an array).

  `device=` places the result on a device (or sharding); `out_sharding=` (a
  `NamedSharding`, or a type's `jax.typeof(x).sharding`) lays it out.
  """
  if device is not None or out_sharding is not None:
    out = full(shape, fill_value, dtype)
    if device is not None and not isinstance(device, AbstractNamedSharding) and \
        not isinstance(out, Tracer) and out.aval.weak_type:
      out = full(shape, fill_value, out.dtype)   # placed on a device: strongly typed (JAX)
    return _placed(out, device, out_sharding, "full", True)
  shape = _shape_arg(shape, "full")
  dt = util.check_dtype(dtype, "full")
  if dt is not None and np.dtype(dt) == dtypes.float0:   # no data, no XLA type (as JAX)
    return np.zeros(shape, dtypes.float0)
  if util.ndim(fill_value):
    return util.broadcast_to(asarray(fill_value, dt), shape)
  weak = dt is None and util.is_weak(fill_value)
  if dt is None:
    dt = util.dtype_of(fill_value)
  return _broadcast_scalar(util.convert(_int_fill(fill_value, dt), dt, weak), shape)


def _int_fill(fill_value, dt):
  """A Python float/int fill value for an integer `dt`, cast as JAX casts it.

  JAX gives `full_like(int32_array, nan)` zeros, saturates +-inf and too-large floats,
  truncates 2.7 to 2 and wraps out-of-range Python ints (-1 -> 255 in uint8), where a
  plain scalar conversion would raise OverflowError.
  """
  dt = np.dtype(dt)
  if type(fill_value) not in (int, float) or dt.kind not in "iu":
    return util.to_operand(fill_value)
  info = np.iinfo(dt)
  if type(fill_value) is float:
    return util.host_astype(np.float64(fill_value), dt)[()]  # XLA's float -> int
  if info.min <= fill_value <= info.max:
    return fill_value
  return dt.type(fill_value % (1 << (8 * dt.itemsize)) if dt.kind == "u" else
                 (fill_value + (1 << (8 * dt.itemsize - 1))) % (1 << (8 * dt.itemsize))
                 - (1 << (8 * dt.itemsize - 1)))


def _broadcast_scalar(x, shape):
  """A scalar (host or device) broadcast to `shape`; host scalars stay inline literals."""
  if isinstance(x, np.generic):
    x = np.asarray(x)
  return structural.broadcast_in_dim(x, shape, ())


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of zeros (float32 by default). `device=`/`out_sharding=` as for `full`."""
  dt = util.check_dtype(dtype, "zeros") or dtypes.default_float_dtype()
  return _placed(full(shape, 0, dt), device, out_sharding, "zeros", True)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of ones (float32 by default). `device=`/`out_sharding=` as for `full`."""
  dt = util.check_dtype(dtype, "ones") or dtypes.default_float_dtype()
  return _placed(full(shape, 1, dt), device, out_sharding, "ones", True)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """Like `zeros`: JAX arrays are never uninitialized (C-S13). `device=`/`out_sharding=` as for `full`."""
  dt = util.check_dtype(dtype, "empty") or dtypes.default_float_dtype()
  return _placed(full(shape, 0, dt), device, out_sharding, "empty", True)


def _duck_shape_dtype(a, fun_name):
  """(shape, dtype) of an object that only has `shape` and `dtype` (a ShapeDtypeStruct)."""
  try:
    shp = tuple(int(d) for d in a.shape)
    dt = dtypes.canonicalize_dtype(np.dtype(a.dtype))
  except (TypeError, ValueError) as e:
    raise TypeError(f"{fun_name}: argument `a` must be an array or have `shape` and "
                    f"`dtype` attributes, got {type(a)}") from e
  return shp, dt


def _place(x, device):
  """`x` on `device` when one is named (the `device=` of the *_like functions)."""
  if device is None or isinstance(device, AbstractNamedSharding):
    # A type's sharding (`jax.typeof(x).sharding`) names no devices: the default one.
    return x
  from tracejax._src import api  # api sits above jax.numpy's modules
  return api.device_put(x, device)


def canonicalize_out_sharding(out_sharding, fun_name):
  """Checks an `out_sharding=` argument as JAX 0.10.2 does.

  Args:
    out_sharding: None, a `NamedSharding` (a real one, or a type's sharding from
      `jax.typeof(x).sharding`), or a `PartitionSpec` inside a `with mesh:` block.
    fun_name: the function's name, for errors.

  Returns:
    None when there is nothing to do (None, or the empty mesh's sharding: one device),
    else the `NamedSharding` to lay the result out by.

  >>> canonicalize_out_sharding(None, "zeros") is None
  True
  """
  from tracejax._src.runtime import sharding as sharding_mod
  from tracejax._src import sharding_explicit  # above jax.numpy's modules
  if out_sharding is None:
    return None
  if isinstance(out_sharding, AbstractNamedSharding):
    # A type's sharding: the mesh it was made from (None for the empty mesh).
    return sharding_explicit.concrete_of(out_sharding)
  if isinstance(out_sharding, sharding_mod.PartitionSpec):
    out_sharding = sharding_mod.named_from_spec(out_sharding)
  if isinstance(out_sharding, sharding_mod.NamedSharding):
    sharding_explicit.check_out_sharding_axes(out_sharding,
                                              _JAX_FUN_NAMES.get(fun_name, fun_name))
    return out_sharding
  raise TypeError(f"`out_sharding` argument of {fun_name} only supports instances of "
                  f"`NamedSharding` or `PartitionSpec`. Got {out_sharding!r} of type: "
                  f"{type(out_sharding)}")


# How JAX 0.10.2 names these functions in its `out_sharding=` errors.
_JAX_FUN_NAMES = {n: "jnp." + n for n in ("zeros", "ones", "zeros_like", "ones_like",
                                          "empty", "empty_like", "arange")}


def apply_out_sharding(x, sharding):
  """`x` laid out by `sharding` (from `canonicalize_out_sharding`; None: as is)."""
  if sharding is None:
    return x
  from tracejax._src import sharding_explicit  # above jax.numpy's modules
  return sharding_explicit.reshard(x, sharding)   # (its spec written out per axis, as JAX)


def _device_or_out_sharding(device, out_sharding, fun_name):
  """(device to place on, sharding to apply) from the `device=`/`out_sharding=` pair."""
  if device is not None and out_sharding is not None:
    raise ValueError(f"Only one of `device` or `out_sharding` can be set for {fun_name}. "
                     f"Got device={device} and out_sharding={out_sharding}")
  return device, canonicalize_out_sharding(out_sharding, fun_name)


def _placed(x, device, out_sharding, fun_name, jit_ignores_device=False):
  device, sharding = _device_or_out_sharding(device, out_sharding, fun_name)
  if jit_ignores_device and isinstance(x, Tracer) and device is not None and \
      not isinstance(device, AbstractNamedSharding):
    device = None   # as JAX's zeros/ones/full/empty: a concrete `device=` under `jit`
  if isinstance(device, AbstractNamedSharding):
    # A type's sharding as `device=`: the result takes that type (under `jit` too).
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    device, sharding = None, sharding_explicit.concrete_of(device)
  return apply_out_sharding(_place(x, device), sharding)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array with the shape (and dtype) of `a`, filled with `fill_value`.

  Args:
    a: an array, a scalar, or anything with `shape` and `dtype` attributes
      (e.g. a `jax.ShapeDtypeStruct`).
    fill_value: the value (broadcast to the shape).
    dtype: the result dtype (default: `a`'s).
    shape: the result shape (default: `a`'s).
    device: where to place the result (default: the default device).
    out_sharding: accepted for compatibility; same as `device`.

  >>> full_like(jnp.zeros((2,), jnp.int32), 7)
  DeviceArray([7, 7], dtype=int32)
  """
  return _full_like(a, fill_value, dtype, shape, device, out_sharding, "full_like")


def _full_like(a, fill_value, dtype, shape, device, out_sharding, fun_name):
  device, sharding = _device_or_out_sharding(device, out_sharding, fun_name)
  if isinstance(device, AbstractNamedSharding):
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    device, sharding = None, sharding_explicit.concrete_of(device)
  dt = util.check_dtype(dtype, "full_like")
  if not util.is_arraylike(a) and hasattr(a, "shape") and hasattr(a, "dtype"):
    a_shape, a_dtype = _duck_shape_dtype(a, "full_like")
    weak = False
  else:
    util.check_arraylike_or_list("full_like", a)
    a = util.to_operand(a)
    a_shape, a_dtype = util.shape(a), util.dtype_of(a)
    weak = dt is None and util.is_weak(a)
  shp = a_shape if shape is None else _shape_arg(shape, "full_like")
  dt = dt if dt is not None else a_dtype
  if np.dtype(dt) == dtypes.float0:   # no data, no XLA type: host zeros (as JAX)
    return np.zeros(shp, dtypes.float0)
  if util.ndim(fill_value):
    out = util.broadcast_to(asarray(fill_value, dt), shp)
  else:
    fill = _int_fill(fill_value, dt)
    if weak and isinstance(fill, np.generic):
      fill = fill.item()  # a weak result (JAX: full_like(weak int, 0.0) is weak)
    out = _broadcast_scalar(util.convert(fill, dt, weak), shp)
  if sharding is None and device is None:
    device = _committed_like(a, shape)
  if sharding is None and device is None and _trace_mod.sharding_rule is not None:
    # Sharding in types: the result keeps a typed `a`'s sharding (and type), as in JAX.
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    sharding = sharding_explicit.like_sharding(a, shape)
  return apply_out_sharding(_place(out, device), sharding)


def _committed_like(a, shape):
  """Where JAX's `*_like(a)` puts its result when `a` is a committed Array: on `a`'s
  sharding (a device's: whatever the shape; a mesh's: when the shape is kept)."""
  if isinstance(a, Tracer) or not isinstance(a, Array) or \
      not getattr(a, "committed", False) or not isinstance(a.dtype, np.dtype):
    return None
  from tracejax._src.runtime import sharding as sharding_mod
  s = a.sharding
  if isinstance(s, sharding_mod.SingleDeviceSharding) or shape is None or \
      tuple(shape) == tuple(a.shape):
    return s
  return None


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Zeros with the shape and dtype of `a` (an array or a ShapeDtypeStruct).

  >>> zeros_like(jnp.ones((2,)))
  DeviceArray([0., 0.], dtype=float32)
  """
  return _full_like(a, 0, dtype, shape, device, out_sharding, "zeros_like")


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Ones with the shape and dtype of `a` (an array or a ShapeDtypeStruct).

  >>> ones_like(jnp.zeros((2,)), shape=(3,))
  DeviceArray([1., 1., 1.], dtype=float32)
  """
  return _full_like(a, 1, dtype, shape, device, out_sharding, "ones_like")


def empty_like(prototype, dtype=None, shape=None, *, device=None):
  """Like `zeros_like`: JAX arrays are never uninitialized (C-S13).

  >>> empty_like(jnp.ones((2,)))
  DeviceArray([0., 0.], dtype=float32)
  """
  return full_like(prototype, 0, dtype, shape, device=device)


# ---- ranges ----

def _concrete(x, name, fun_name):
  if x is None:
    return None
  return concrete_or_error(
      np.asarray, x, f"It arose in jax.numpy.{fun_name} argument `{name}`.")


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in [start, stop) by `step` (see `_arange`); `device=` and
  `out_sharding=` as for `full`.

  >>> arange(3)
  DeviceArray([0, 1, 2], dtype=int32)
  """
  return _placed(_arange(start, stop, step, dtype), device, out_sharding, "arange")


def _arange(start, stop=None, step=None, dtype=None):
  """Evenly spaced values in [start, stop) by `step`; the bounds must be concrete.

  Asking for a 64-bit dtype with x64 off warns and gives the 32-bit dtype (C-S05).
  Values are computed as NumPy computes them (in 64 bits on the host) and then cast
  to `dtype`, so float steps give NumPy's values; the length is NumPy's
  `ceil((stop - start) / step)` (empty when the range is empty). A zero step raises
  ZeroDivisionError, as in NumPy and JAX; complex bounds raise ValueError (JAX).

  >>> arange(1.0, 0.0, -0.25)
  DeviceArray([1.  , 0.75, 0.5 , 0.25], dtype=float32)
  """
  dtypes.check_user_dtype_supported(dtype, "arange", stacklevel=util.user_stacklevel() + 1)
  if start is None:
    raise TypeError("jnp.arange: the `start` argument must not be None")
  start_c, stop_c, step_c = (_concrete(v, n, "arange") for v, n in
                             ((start, "start"), (stop, "stop"), (step, "step")))
  for v, n in ((start_c, "start"), (stop_c, "stop"), (step_c, "step")):
    if v is not None and np.iscomplexobj(v):
      raise ValueError(f"jnp.arange: complex `{n}` is not supported (got {v}).")
    if v is not None and np.ndim(v) != 0:
      raise ValueError(f"jnp.arange: `{n}` must be a scalar, got shape {np.shape(v)}.")
  if step_c is not None and step_c == 0:
    raise ZeroDivisionError("jnp.arange: the `step` argument must not be zero")
  if dtype is None:
    dt = dtypes.result_type(*[v for v in (start, stop, step) if v is not None])
  else:
    dt = dtypes.canonicalize_dtype(dtypes.dtype(dtype))
  if stop is None and step is None and _iota_ok(dt):
    # One iota, as JAX stages it, rather than a host constant.
    return structural.iota(dt, max(int(np.ceil(start_c)), 0))
  return from_numpy(np.arange(start_c, stop_c, step_c).astype(dt, copy=False))


def _iota_ok(dt):
  return dtypes.is_integer(dt) or dtypes.is_floating(dt)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
  """`num` evenly spaced samples over [start, stop] (or [start, stop) without endpoint);
  `device=` (a Device or Sharding) places the samples.

  >>> linspace(0., 1., 3)
  DeviceArray([0. , 0.5, 1. ], dtype=float32)
  """
  out = _linspace(start, stop, num, endpoint, retstep, dtype, axis)
  if device is None:
    return out
  if retstep:
    return _placed(out[0], device, None, "linspace"), out[1]
  return _placed(out, device, None, "linspace")


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
  from tracejax._src.numpy import shape_ops, ufuncs
  num = util.concrete_int(num, "'num' argument of jnp.linspace")
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  dtypes.check_user_dtype_supported(dtype, "linspace", stacklevel=util.user_stacklevel() + 1)
  # No dtype: the inputs' type made inexact (int32 -> float32 with x64 on, as JAX).
  dt = (dtypes.to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
        else dtypes.canonicalize_dtype(dtypes.dtype(dtype)))
  comp = dtypes.to_inexact_dtype(dt)
  start = asarray(start, comp)
  stop = asarray(stop, comp)
  bounds_shape = list(util.broadcast_shapes(util.shape(start), util.shape(stop)))
  start = util.broadcast_to(start, bounds_shape)
  stop = util.broadcast_to(stop, bounds_shape)
  axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
  bounds_shape.insert(axis, 1)
  div = (num - 1) if endpoint else num
  delta = None
  if num > 1:
    delta = ufuncs.true_divide(ufuncs.subtract(stop, start), div)
    iota_shape = [1] * len(bounds_shape)
    iota_shape[axis] = div
    # start * (1 - t) + stop * t (as JAX: it recovers the end points exactly; integer
    # dtypes floor the samples, so the rounding of each one matters).
    frac = ufuncs.true_divide(util.reshape(structural.iota(comp, div), iota_shape), div)
    one = util.convert(1, comp, True)
    out = ufuncs.add(ufuncs.multiply(util.reshape(start, bounds_shape),
                                     ufuncs.subtract(one, frac)),
                     ufuncs.multiply(util.reshape(stop, bounds_shape), frac))
    if endpoint:
      out = shape_ops.concatenate([out, util.reshape(stop, bounds_shape)], axis=axis)
  elif num == 1:
    delta = ufuncs.subtract(stop, start) if not endpoint else full(util.shape(start), np.nan, comp)
    out = util.reshape(start, bounds_shape)
  else:
    empty_shape = list(bounds_shape)
    empty_shape[axis] = 0
    out = zeros(empty_shape, comp)
    delta = full(util.shape(start), np.nan, comp)
  if dtypes.is_integer(dt) and not dtypes.is_inexact(dt):
    out = ufuncs.floor(out)
  out = util.convert(out, dt, False)
  if retstep:
    return out, delta
  return out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  """`base ** linspace(start, stop, ...)`."""
  from tracejax._src.numpy import ufuncs
  dtypes.check_user_dtype_supported(dtype, "logspace", stacklevel=util.user_stacklevel() + 1)
  # No dtype: the inputs' type made inexact (int32 -> float32 with x64 on, as JAX).
  dt = (dtypes.to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
        else dtypes.canonicalize_dtype(dtypes.dtype(dtype)))
  comp = dtypes.to_inexact_dtype(dt)
  lin = linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype=comp)
  return util.convert(ufuncs.power(util.convert(base, comp, False), lin), dt, False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """`num` samples evenly spaced on a log scale from `start` to `stop` (same sign, non-zero).

  Args:
    start, stop: scalars or arrays (broadcast against each other).
    num: number of samples (>= 0; 0 gives an empty axis).
    endpoint: include `stop` as the last sample.
    dtype: result dtype (default: the inexact promotion of start and stop).
    axis: where the new sample axis goes in the result.

  As in NumPy, the first sample is exactly `start` and (with `endpoint`) the last is
  exactly `stop`.

  >>> geomspace(1., 1000., 4)
  DeviceArray([   1.,   10.,  100., 1000.], dtype=float32)
  """
  from tracejax._src.numpy import shape_ops, ufuncs
  num = util.concrete_int(num, "'num' argument of jnp.geomspace")
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  dtypes.check_user_dtype_supported(dtype, "geomspace", stacklevel=util.user_stacklevel() + 1)
  # No dtype: the inputs' type made inexact (int32 -> float32 with x64 on, as JAX).
  dt = (dtypes.to_inexact_dtype(dtypes.result_type(start, stop)) if dtype is None
        else dtypes.canonicalize_dtype(dtypes.dtype(dtype)))
  comp = dtypes.to_inexact_dtype(dt)
  start, stop = asarray(start, comp), asarray(stop, comp)
  shp = util.broadcast_shapes(util.shape(start), util.shape(stop))
  start, stop = util.broadcast_to(start, shp), util.broadcast_to(stop, shp)
  axis = util.canonicalize_axis(axis, len(shp) + 1)
  sign = ufuncs.sign(start)
  # log10 as a ratio of natural logs: exact for powers of ten in float32.
  ln10 = ufuncs.log(np.asarray(10.0, comp))
  lo = ufuncs.true_divide(ufuncs.log(ufuncs.multiply(start, sign)), ln10)
  hi = ufuncs.true_divide(ufuncs.log(ufuncs.multiply(stop, sign)), ln10)
  res = ufuncs.multiply(sign, logspace(lo, hi, num, endpoint=endpoint, base=10.0,
                                       dtype=comp, axis=0))
  if num > 0:
    ends = [util.reshape(start, (1,) + shp)]
    middle_stop = num - 1 if (endpoint and num > 1) else num
    ends.append(res[1:middle_stop])
    if endpoint and num > 1:
      ends.append(util.reshape(stop, (1,) + shp))
    res = shape_ops.concatenate(ends, axis=0)
  if axis != 0:
    res = shape_ops.moveaxis(res, 0, axis)
  return util.convert(res, dt, False)


# ---- matrices ----

def _iota_2d(n, m, k):
  """(rows + k, cols) as int32 iotas of shape (n, m), for diagonal masks."""
  from tracejax._src.numpy import ufuncs
  i32 = np.dtype(np.int32)
  rows = structural.broadcasted_iota(i32, (n, m), 0)
  cols = structural.broadcasted_iota(i32, (n, m), 1)
  return ufuncs.add(rows, np.int32(k)) if k else rows, cols


def eye(N, M=None, k=0, dtype=None, *, device=None):
  """A 2-D array with ones on the `k`-th diagonal and zeros elsewhere; `device=` (a
  Device or Sharding) places it.

  >>> eye(2, dtype=int)
  DeviceArray([[1, 0],
               [0, 1]], dtype=int32)
  """
  out = _eye(N, M, k, dtype)
  return out if device is None else _placed(out, device, None, "eye")


def _eye(N, M, k, dtype):
  from tracejax._src.numpy import ufuncs
  dt = util.check_dtype(dtype, "eye") or dtypes.default_float_dtype()
  N = util.concrete_int(N, "'N' argument of jnp.eye")
  M = N if M is None else util.concrete_int(M, "'M' argument of jnp.eye")
  k = util.concrete_int(k, "'k' argument of jnp.eye")
  if N < 0 or M < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  rows, cols = _iota_2d(N, M, k)
  return util.convert(ufuncs.equal(rows, cols), dt, False)


def identity(n, dtype=None):
  """The `n` x `n` identity matrix."""
  return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
  """Ones at and below the `k`-th diagonal, zeros above."""
  from tracejax._src.numpy import ufuncs
  dt = util.check_dtype(dtype, "tri") or dtypes.default_float_dtype()
  N = util.concrete_int(N, "'N' argument of jnp.tri")
  M = N if M is None else util.concrete_int(M, "'M' argument of jnp.tri")
  rows, cols = _iota_2d(N, M, k)
  return util.convert(ufuncs.greater_equal(rows, cols), dt, False)


def _tri_mask(m, k, lower):
  from tracejax._src.numpy import ufuncs
  shp = util.shape(m)
  if len(shp) < 2:
    raise ValueError(f"{'tril' if lower else 'triu'} requires an array of at least two "
                     f"dimensions, got shape {shp}")
  rows, cols = _iota_2d(shp[-2], shp[-1], k)
  return ufuncs.greater_equal(rows, cols) if lower else ufuncs.less(rows, cols)


def tril(m, k=0):
  """The lower triangle of (the last two axes of) `m`: zeros above the `k`-th diagonal."""
  from tracejax._src.numpy import ufuncs
  m = util.to_array(m)
  k = util.concrete_int(k, "'k' argument of jnp.tril")
  # lax.select (not jnp.where, which makes a weak bool strong), as JAX's tril
  return ufuncs._select(_tri_mask(m, k, True), m, zeros_like(m))


def triu(m, k=0):
  """The upper triangle of (the last two axes of) `m`: zeros below the `k`-th diagonal."""
  from tracejax._src.numpy import ufuncs
  m = util.to_array(m)
  k = util.concrete_int(k, "'k' argument of jnp.triu")
  return ufuncs._select(_tri_mask(m, k - 1, True), zeros_like(m), m)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """Coordinate matrices from coordinate vectors (NumPy's meshgrid)."""
  xi = [util.to_array(x) for x in xi]
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  for x in xi:
    if util.ndim(x) != 1:
      raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape {util.shape(x)}")
  shape = [util.shape(x)[0] for x in xi]
  if indexing == "xy" and len(xi) >= 2:
    shape[0], shape[1] = shape[1], shape[0]
  out = []
  for i, x in enumerate(xi):
    axis = i
    if indexing == "xy" and len(xi) >= 2 and i < 2:
      axis = 1 - i
    s = [1] * len(xi)
    s[axis] = util.shape(x)[0]
    x = util.reshape(x, s)
    out.append(x if sparse else util.broadcast_to(x, shape))
  return out


# `jnp.array`/`jnp.asarray` as users call them: placed on the `jax.set_mesh` mesh as in
# JAX. tracejax's own functions convert their arguments with the plain `array`/`asarray`
# above, as JAX's mostly do (a NumPy argument of `jnp.sin` is of no mesh).
def _user_array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None,
                out_sharding=None):
  from tracejax._src.runtime import sharding as sharding_mod   # (runtime is below numpy)
  if device is not None or out_sharding is not None or sharding_mod.context_mesh() is None:
    return array(object, dtype, copy, order, ndmin, device=device, out_sharding=out_sharding)
  out = array(object, dtype, copy, order)
  if out is object and dtypes._extended_type_of(getattr(out, "dtype", None)) is not None:
    return array(out, ndmin=ndmin)   # a key array: returned as is
  return _on_context_mesh(out, ndmin) if type(out) is Array else \
      array(out, copy=False, ndmin=ndmin)


def _user_asarray(a, dtype=None, order=None, copy=None, *, device=None, out_sharding=None):
  out = asarray(a, dtype, order, copy, device=device, out_sharding=out_sharding)
  if out is a or device is not None or out_sharding is not None:
    return out   # an array of the requested dtype, as is (JAX's too)
  return _on_context_mesh(out)


for _f, _g in ((_user_array, array), (_user_asarray, asarray)):
  _f.__name__, _f.__qualname__, _f.__doc__ = _g.__name__, _g.__qualname__, _g.__doc__
  _f.__wrapped__ = _g
