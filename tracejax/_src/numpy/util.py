"""Argument handling for jax.numpy: conversion, dtype promotion and broadcasting.

lax primitives are strict (one dtype, one shape, except rank-0 operands), so
every NumPy convenience is applied here before a primitive is bound:

* `promote_dtypes` applies JAX's promotion with weak types (C-S03, C-S16);
* `promote_shapes` applies NumPy broadcasting under the rank-promotion policy
  (C-S06). It is the only place where jax.numpy broadcasts implicitly.

Python scalars are kept as scalars wherever possible, so a staged `x * 3.0`
prints as `mul b 3.0` with an inline literal.
"""
import warnings

import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.core.trace import Tracer, is_concrete
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import structural
from tracejax._src.runtime.array import Array

_py_scalar_types = (bool, int, float, complex)
_py_scalar_set = frozenset(_py_scalar_types)


# ---- what counts as an array ----

def is_array(x):
  """True for device arrays and tracers: the values that live in the jax world."""
  return isinstance(x, (Array, Tracer))


def is_arraylike(x):
  """True for anything a jnp function takes as an array argument."""
  return (type(x) in _py_scalar_set or isinstance(x, (Array, Tracer, np.ndarray, np.generic))
          or hasattr(x, "__jax_array__"))


# Key arrays (typed PRNG keys, of an extended dtype) in the few jnp functions JAX
# applies to them (stack, concatenate, expand_dims, broadcast_to, where): prng.py
# registers each one's key version here by name (numpy/ may not import prng.py).
key_impls = {}


def has_keys(*xs):
  """True if one of `xs` is a key array (a value of an extended dtype)."""
  return any(dtypes._extended_type_of(getattr(x, "dtype", None)) is not None for x in xs)


def check_arraylike(fun_name, *args):
  """TypeError naming `fun_name` if an argument is not an array or scalar."""
  for pos, a in enumerate(args):
    if not is_arraylike(a):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(a)} at position {pos}.")


def shape(x):
  """The shape of an array-like value (works for tracers and Python scalars)."""
  s = getattr(x, "shape", None)
  if s is not None:
    return tuple(s)
  return np.shape(x)


def ndim(x):
  """The number of dimensions of an array-like value."""
  return len(shape(x))


def to_operand(x):
  """`x` in a form lax accepts: arrays and Python scalars as they are, host values canonical.

  NumPy values are narrowed on the host to their canonical dtype (float64 ->
  float32 with x64 off); the primitive transfers them. Lists and tuples go
  through `jnp.array`.
  """
  if type(x) in _py_scalar_set or isinstance(x, (Tracer, Array)):
    return x
  if isinstance(x, (np.ndarray, np.generic)):
    dt = dtypes.canonicalize_dtype(x.dtype)
    return x if x.dtype == dt else np.asarray(x, dt)
  if isinstance(x, (list, tuple)):
    from tracejax._src.numpy import creation  # creation builds on this module
    return creation.array(x)
  if hasattr(x, "__jax_array__"):
    return to_operand(x.__jax_array__())
  if hasattr(x, "__array__"):
    return to_operand(np.asarray(x))
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX array type.")


def to_array(x):
  """`x` as a device array or tracer (host values are transferred)."""
  x = to_operand(x)
  if isinstance(x, (Array, Tracer)):
    return x
  from tracejax._src.numpy import creation
  return creation.asarray(x)


def fresh_array(x):
  """`x` as a device array, never the caller's own object, for functions that return
  their argument unchanged (jnp.real of a real array, squeeze with nothing to squeeze).

  In JAX such functions are jitted, so under vmap/jvp/vjp their result is a new Array
  even when the input was a NumPy array; returning the tracer itself would hand the
  NumPy input back out of the transformation. Only then is a `copy` bound; a staged
  or device value passes through, adding nothing to jaxprs.
  """
  x = to_array(x)
  inner = x
  while isinstance(inner, Tracer):  # a vmap/jvp tracer over a host (NumPy) value?
    inner = getattr(inner, "val", getattr(inner, "primal", None))
  if inner is not x and (isinstance(inner, (np.ndarray, np.generic))
                         or type(inner) in _py_scalar_set):  # (a Python scalar primal too)
    from tracejax._src.lax import misc as lax_misc
    return lax_misc.copy_p.bind(x)
  return x


def converted(x):
  """`x` as a dtype conversion that changed nothing returns it: JAX binds
  `convert_element_type` for a concrete tracer (jvp of a value), a new value, and
  hands any other tracer back as it is (vmap of a NumPy input returns that input)."""
  if isinstance(x, Tracer) and not is_concrete(x):
    return x
  return fresh_array(x)


# ---- dtypes ----

def _weak_scalar_type_for(dtype):
  """The Python type whose weak dtype is `dtype`, if there is one."""
  for t in (int, float, complex):
    if dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[t]) == dtype:
      return t
  return None


def convert(x, dtype, weak_type=False):
  """`x` converted to `dtype` (with the given weak-type flag), changing as little as possible.

  Python scalars become a Python scalar (when the result is weak) or a NumPy
  scalar of `dtype`, so they stay inline literals; host arrays are converted
  on the host; device values get a `convert_element_type` only when their
  dtype or weak type differ.
  """
  if not isinstance(dtype, np.dtype):
    dtype = np.dtype(dtype)
  t = type(x)
  if t is int and dtype.kind in "iu" and not (np.iinfo(dtype).min <= x <= np.iinfo(dtype).max) \
      and np.iinfo(np.int64).min <= x <= np.iinfo(np.int64).max:
    # A weak Python int meeting a narrower integer array (jnp.where(c, -1, u8),
    # maximum(-1, u8)): JAX converts it as XLA does, wrapping (-1 -> 255), rather than
    # raising; only an explicit jnp.asarray(-1, uint8) is an OverflowError.
    x = np.asarray(x, np.int64).astype(dtype)[()]
    return convert_element_type(np.asarray(x), dtype, True) if weak_type else x
  if t in _py_scalar_set:
    if weak_type:
      st = _weak_scalar_type_for(dtype)
      if st is not None and (t is not complex or st is complex):
        return st(x)
      # a complex scalar to a weak real type keeps its real part (NumPy's astype, with
      # its ComplexWarning), as JAX's weak conversion does: full_like(1, 1 - 2j) is 1
      h = np.asarray(x).astype(dtype) if t is complex else np.asarray(x, dtype)
      return convert_element_type(h, dtype, True)
    return _host_scalar(x, dtype)
  if isinstance(x, (np.ndarray, np.generic)):
    if weak_type:
      # A host bool/int array meeting a weak float (or a bool one a weak int) promotes
      # to a weak type, as in JAX: a weak cast, else the op would come out strong.
      return convert_element_type(host_astype(x, dtype), dtype, True)
    return x if x.dtype == dtype else host_astype(x, dtype)
  aval = x.aval
  if aval.dtype == dtype and aval.weak_type == bool(weak_type):
    return x
  return convert_element_type(x, dtype, weak_type)


def host_astype(x, dtype):
  """Host array `x` as `dtype`, converted as XLA converts on the device (and so as JAX
  gives it): a float or complex to an integer type takes the real part, truncates,
  makes NaN 0 and saturates at the type's bounds, where NumPy's cast wraps or gives
  the minimum (`.at[0].set(nan)` into an int32 array writes 0)."""
  x = np.asarray(x)
  if x.dtype.kind not in "fc" or dtype.kind not in "iu":
    return np.asarray(x, dtype)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # (NumPy's ComplexWarning, invalid-value warnings)
    r = np.real(x).astype(np.float64)
    info = np.iinfo(dtype)
    hi, lo = r >= float(info.max), r <= float(info.min)
    out = np.trunc(np.where(hi | lo | np.isnan(r), 0, r)).astype(dtype)
    return np.where(hi, info.max, np.where(lo, info.min, out)).astype(dtype)


_host_scalar_cache = {}


def _host_scalar(x, dtype):
  """Python scalar `x` as a NumPy scalar of `dtype` (cached: the same constants recur)."""
  # (the sign bit too: 0.0 == -0.0 and they hash alike, but x / 0. and x / -0. differ)
  key = (type(x), x, dtype, type(x) is float and np.signbit(x))
  try:
    return _host_scalar_cache[key]
  except (KeyError, TypeError):
    pass
  if dtype.kind in "iu" and not (np.iinfo(dtype).min <= x <= np.iinfo(dtype).max):
    raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
  with warnings.catch_warnings():
    # NumPy warns on float overflow (1e40 -> inf in float32); so does no one else.
    warnings.simplefilter("ignore", RuntimeWarning)
    out = np.asarray(x, dtype)[()]
  if len(_host_scalar_cache) > 4096:
    _host_scalar_cache.clear()
  _host_scalar_cache[key] = out
  return out


def convert_element_type(x, dtype, weak_type=False):
  """`lax.convert_element_type` that also sets the result's weak type."""
  return lax_ew._convert_element_type(x, np.dtype(dtype), weak_type=bool(weak_type))


def _promotion_key(x):
  """What promotion looks at in `x` (hashable), or None when it needs a closer look."""
  t = type(x)
  if t in _py_scalar_set:
    return t
  if t is Array or isinstance(x, Tracer):
    aval = x.aval
    return aval.dtype, aval.weak_type
  return None


_result_cache = {}


def _result_dtype(args):
  """(dtype, weak) that `args` promote to; cached on their dtypes, the hot path of every op."""
  keys = tuple(_promotion_key(x) for x in args)
  if None in keys:
    return dtypes.result_type(*args, return_weak_type_flag=True)
  key = (keys, config.jax_enable_x64)
  out = _result_cache.get(key)
  if out is None:
    out = _result_cache[key] = dtypes.result_type(*args, return_weak_type_flag=True)
  return out


def _convert_all(args, to_dtype, weak):
  return [convert(x, to_dtype, weak) for x in args]


def promote_dtypes(*args):
  """Convert `args` to their common dtype; the result is weak only if all are weak."""
  args = [to_operand(x) for x in args]
  if len(args) < 2:
    return args
  return _convert_all(args, *_result_dtype(args))


def promote_dtypes_inexact(*args):
  """Like `promote_dtypes`, but integer and bool results become the default float."""
  args = [to_operand(x) for x in args]
  to_dtype, weak = _result_dtype(args)
  return _convert_all(args, dtypes.to_inexact_dtype(to_dtype), weak)


def promote_dtypes_numeric(*args):
  """Like `promote_dtypes`, but a bool result becomes int32 (strongly typed), as
  JAX's numeric promotion makes it: int32 even with x64 on, never weak."""
  args = [to_operand(x) for x in args]
  to_dtype, weak = _result_dtype(args)
  if to_dtype == np.bool_:
    to_dtype, weak = np.dtype(np.int32), False
  return _convert_all(args, to_dtype, weak)


def dtype_of(x):
  """The canonical dtype of an array-like value."""
  return dtypes.dtype(x, canonicalize=True)


def is_weak(x):
  """True for Python scalars and weakly typed arrays/tracers."""
  return dtypes.is_weakly_typed(x)


def check_dtype(dtype, fun_name):
  """The canonical np.dtype of a user's `dtype=` argument (None stays None)."""
  if dtype is None:
    return None
  dtypes.check_user_dtype_supported(dtype, fun_name, stacklevel=user_stacklevel() + 1)
  return dtypes.canonicalize_dtype(dtypes.dtype(dtype))


# ---- shapes ----

_RANK_PROMOTION_DOC = "https://jax.readthedocs.io/en/latest/rank_promotion_warning.html"


class IncompatibleShapesError(ValueError, TypeError):
  """A shape mismatch between operands of a jnp function.

  The 2020 API raised ValueError("Incompatible shapes for broadcasting: ...")
  (seed 001); JAX 0.10.2 raises a TypeError ("add got incompatible shapes for
  broadcasting"). Deriving from both lets handlers written for either era catch it.
  """


def broadcast_shapes(*shapes):
  """NumPy's broadcast of `shapes`, with the 2020 error text on a mismatch.

  >>> broadcast_shapes((4, 3), (3,))
  (4, 3)
  """
  if len(shapes) == 1:
    return tuple(shapes[0])
  rank = max(len(s) for s in shapes)
  padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
  out = []
  for sizes in zip(*padded):
    non1 = {d for d in sizes if d != 1}
    if len(non1) > 1:
      raise IncompatibleShapesError(f"Incompatible shapes for broadcasting: {tuple(padded)}")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


def _check_rank_promotion(fun_name, shapes):
  mode = config.jax_numpy_rank_promotion
  if mode == "allow":
    return
  shapes_str = " ".join(str(tuple(s)) for s in shapes)
  if mode == "warn":
    # Attributed to the user's line, and shown once per call site: Python's own
    # registry would repeat it for every new shape (each trace) and forgets it
    # whenever a `catch_warnings` block changes the filters.
    level = user_stacklevel()
    import sys
    frame = sys._getframe(level - 1) if level > 1 else None
    site = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
    if site is not None and site in _RANK_PROMOTION_WARNED:
      return
    warnings.warn(
        f"Following NumPy automatic rank promotion for {fun_name} on shapes {shapes_str}. "
        "Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
        f"warning; for more information, see {_RANK_PROMOTION_DOC}.", UserWarning,
        stacklevel=level)
    if site is not None:
      _RANK_PROMOTION_WARNED.add(site)
  else:
    raise ValueError(
        f"Operands could not be broadcast together for {fun_name} on shapes {shapes_str} "
        "and with the config option jax_numpy_rank_promotion='raise'. For more "
        f"information, see {_RANK_PROMOTION_DOC}.")


_RANK_PROMOTION_WARNED = set()  # (file, line) of the call sites already warned about


def user_stacklevel():
  """The `warnings.warn` stacklevel of the innermost frame outside tracejax's sources."""
  import sys
  frame, level = sys._getframe(1), 1
  while frame is not None and frame.f_code.co_filename.startswith(_TRACEJAX_DIR):
    frame, level = frame.f_back, level + 1
  return level


_TRACEJAX_DIR = __file__.rsplit("/_src/", 1)[0] + "/"


def promote_shapes(fun_name, *args):
  """Bring `args` to a common rank (leading size-1 axes), applying the rank-promotion
  policy, as JAX does: size-1 axes are left for the lax operators to broadcast.

  Rank-0 operands are left alone (lax broadcasts them), and promoting a
  rank-0 operand is not rank promotion.
  """
  if len(args) < 2:
    return list(args)
  shapes = [shape(x) for x in args]
  first = shapes[0]
  if all(s == first for s in shapes[1:]):
    return list(args)
  nonscalar = [s for s in shapes if s]
  if len({len(s) for s in nonscalar}) > 1:
    _check_rank_promotion(fun_name, shapes)
  out_shape = broadcast_shapes(*shapes)
  # As JAX: operands are only brought to the result's rank (leading size-1 axes);
  # the lax operators broadcast size-1 axes themselves, so derivatives sum over
  # those axes where JAX's do.
  nd = len(out_shape)
  return [x if (not s or len(s) == nd) else broadcast_to(x, (1,) * (nd - len(s)) + s)
          for x, s in zip(args, shapes)]


def broadcast_to(x, out_shape):
  """`x` broadcast to `out_shape` with one `broadcast_in_dim` (NumPy rules, no policy)."""
  x = to_operand(x)
  s = shape(x)
  out_shape = tuple(out_shape)
  if s == out_shape:
    return x
  lead = len(out_shape) - len(s)
  if lead < 0 or any(d != 1 and d != o for d, o in zip(s, out_shape[lead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {s} and requested shape "
                     f"{out_shape}")
  # Size-1 axes that are stretched are dropped first: broadcast_in_dim maps
  # operand axes to equal-sized output axes only.
  keep = [i for i, (d, o) in enumerate(zip(s, out_shape[lead:])) if d == o]
  if len(keep) != len(s):
    x = reshape(x, tuple(s[i] for i in keep))
  if isinstance(x, np.generic):
    x = np.asarray(x)  # a 0-d host array stages as an inline literal
  return structural.broadcast_in_dim(x, out_shape, tuple(lead + i for i in keep))


def reshape(x, new_shape):
  """lax.reshape, skipped when the shape does not change (host values reshape on the host)."""
  new_shape = tuple(new_shape)
  if shape(x) == new_shape:
    return x
  if isinstance(x, (np.ndarray, np.generic)) or type(x) in _py_scalar_set:
    return np.reshape(np.asarray(to_operand(x)), new_shape)
  return structural.reshape(x, new_shape)


def _already_promoted(args, kinds=None):
  """The hot case: arrays (or tracers) of one aval, nothing to convert or broadcast."""
  a0 = args[0]
  if type(a0) is not Array and not isinstance(a0, Tracer):
    return False
  av = a0.aval
  if kinds is not None and av.dtype.kind not in kinds:
    return False
  if av.weak_type and av.dtype == np.bool_ and len(args) > 1:
    return False  # weak bools promote to a strong bool, as in JAX (a cast is needed)
  for a in args[1:]:
    if type(a) is not Array and not isinstance(a, Tracer):
      return False
    b = a.aval
    if b.dtype != av.dtype or b.shape != av.shape or b.weak_type != av.weak_type:
      return False
  return True


def promote_args(fun_name, *args):
  """Check, dtype-promote and broadcast the arguments of an n-ary jnp function."""
  if _already_promoted(args):
    return args
  check_arraylike_or_list(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name, *args):
  """`promote_args` whose result dtype is inexact (for true_divide, sqrt of ints...)."""
  if _already_promoted(args, "fc"):
    return args
  check_arraylike_or_list(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name, *args):
  """`promote_args` whose bool result becomes the default int (for arithmetic on bools)."""
  if _already_promoted(args, "iufc"):
    return args
  check_arraylike_or_list(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def check_arraylike_or_list(fun_name, *args):
  """Like `check_arraylike`, but also accepts lists and tuples (the 2020 numpy did)."""
  for pos, a in enumerate(args):
    if not (is_arraylike(a) or isinstance(a, (list, tuple))):
      raise TypeError(f"{fun_name} requires ndarray or scalar arguments, got "
                      f"{type(a)} at position {pos}.")


# ---- axes ----

def canonicalize_axis(axis, ndim_):
  """A non-negative axis, with NumPy's AxisError-like message when out of range."""
  try:
    axis = int(axis.__index__())
  except (AttributeError, TypeError):
    raise TypeError(f"axis must be an integer, got {axis!r}") from None
  if not -ndim_ <= axis < max(ndim_, 1) or (ndim_ == 0 and axis not in (0, -1)):
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim_}")
  return axis % ndim_ if ndim_ else 0


def canonicalize_axes(axis, ndim_):
  """A sorted tuple of distinct non-negative axes from None, an int or a sequence."""
  if axis is None:
    return tuple(range(ndim_))
  if isinstance(axis, (tuple, list)):
    axes = tuple(canonicalize_axis(a, ndim_) for a in axis)
    if len(set(axes)) != len(axes):
      raise ValueError(f"repeated axis in {axis}")
    return tuple(sorted(axes))
  return (canonicalize_axis(axis, ndim_),)


def concrete_int(x, context):
  """A Python int from a concrete value; a clear error for traced values."""
  from tracejax._src.core.trace import concrete_or_error
  return concrete_or_error(lambda v: int(np.asarray(v)), x, context)
