"""Typed PRNG key arrays (`jax.random.key`): array leaves of the extended dtype `key<fry>`.

Design. A key array of shape `s` is an array of dtype `key<fry>` whose data are the
uint32 words of shape `s + (2,)` (its *physical* data: Threefry's two words, always
the trailing axis). Keys are leaves everywhere: in pytrees, as arguments and results
of `jit`/`vmap`/`grad`/`scan`/`cond`/..., and their aval is `ShapedArray(s, key<fry>)`
(`jax.typeof(key)` prints `key<fry>[]`). Concrete keys are `PRNGKeyArray`s over a
uint32 Array; traced keys are ordinary tracers whose aval has the key dtype.

Only two primitives see both sides: `random_wrap` (uint32 data -> keys) and
`random_unwrap` (keys -> data). Every random function is unwrap, Threefry on the
uint32 words (`lax/random_bits.py`), wrap; so typed and raw keys give bit-identical
numbers. The data is converted at the edges of the machinery, through the dtype
object (`KeyTy`), which the lower layers ask without importing this module:

* lowering: the IR type of a key aval is that of its physical aval
  (`lowering.aval_to_ir_type`), and wrap/unwrap lower to nothing;
* execution: a key argument travels as its data buffer (`dispatch.to_buffer`), a
  key result is wrapped again (`backend.Executable`); jitted functions with keys in
  or out stay off jaxlib's C++ fast path (it knows only plain arrays);
* structure: the primitives that only move elements (transpose, reshape,
  broadcast_in_dim, squeeze, rev, slice, dynamic_slice, dynamic_update_slice,
  gather, concatenate, select_n, copy), bound with key operands, are rewritten at
  `bind` (`Primitive.extended_rule`) as unwrap, the same primitive on the data with
  the word axis appended to its parameters, wrap. That is how `vmap` moves and
  broadcasts batch axes of keys, how `scan` slices and stacks them, how `cond`
  under `vmap` selects between them and how indexing and `reshape` work, with no
  rule of their own for keys;
* AD: keys are not differentiable (like integers): their tangents are float0 and
  wrap/unwrap have zero derivatives.

Any other primitive given a key fails its dtype check: arithmetic on keys is a
TypeError, as in JAX.
"""
import math
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering
from tracejax._src.lax import elementwise as lax_elementwise
from tracejax._src.lax import gather as lax_gather
from tracejax._src.lax import misc as lax_misc
from tracejax._src.lax.random_bits import threefry2x32_p, threefry_2x32  # noqa: F401 (JAX's names here)
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural as lax_structural
from tracejax._src.lax import utils as lax_utils
from tracejax._src.runtime.array import PublicArray as _PublicArray

__all__ = ["KeyTy", "PRNGKeyArray", "key_dtype", "is_key", "wrap", "unwrap",
           "random_wrap", "random_unwrap", "random_wrap_p", "random_unwrap_p",
           "threefry_2x32", "threefry2x32_p"]

KEY_SHAPE = (2,)          # Threefry-2x32: two uint32 words per key
KEY_DATA_DTYPE = np.dtype(np.uint32)


# =============================================================================
# The dtype
# =============================================================================

class KeyTy(dtypes.ExtendedDType):
  """The dtype of typed key arrays: `key<fry>` (threefry2x32).

  An extended dtype: `jax.dtypes.issubdtype(k.dtype, jax.dtypes.prng_key)` holds, and
  it is not a NumPy dtype (`np.dtype(k.dtype)` raises). The methods below are the
  protocol the lower layers use to move keys as their uint32 data.

  >>> k = PRNGKeyArray(np.zeros(2, np.uint32)); k.dtype, k.dtype.physical_shape((3,))
  (key<fry>, (3, 2))
  """
  name = "key<fry>"
  itemsize = 8
  kind = "V"
  type = dtypes.prng_key
  _impl_name = "threefry2x32"

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return isinstance(other, KeyTy) or (isinstance(other, str) and other == self.name)

  def __ne__(self, other):
    return not self == other

  def __hash__(self):
    return hash(self.name)

  def __reduce__(self):  # one dtype object per process, also after unpickling
    return (key_dtype, ())

  # -- the protocol of extended dtypes (see the module docstring) --

  @staticmethod
  def physical_shape(shape):
    return tuple(shape) + KEY_SHAPE

  def physical_aval(self, aval):
    """The aval of the uint32 data under a key aval (typed by a sharding, its spec
    with the word axis unsplit: sharding_explicit.py)."""
    shape = tuple(aval.shape) + KEY_SHAPE
    spec = getattr(aval, "spec", None)
    if spec is not None:
      return type(aval)(shape, KEY_DATA_DTYPE, False, aval.mesh, tuple(spec) + (None,))
    return ShapedArray(shape, KEY_DATA_DTYPE)

  @staticmethod
  def physical_value(x):
    """The uint32 data Array of a concrete key array."""
    return x._base_array

  @staticmethod
  def wrap(data):
    """Keys over the uint32 data `data` (concrete or traced)."""
    return wrap(data)

  @staticmethod
  def full(shape, fill_value):
    """Keys of `shape` all equal to `fill_value` (a key, or a number for the words)."""
    shape = tuple(shape)
    if is_key(fill_value):
      if np.ndim(fill_value):
        raise TypeError(f"full of keys needs a scalar key, got shape {np.shape(fill_value)}")
      data = unwrap(fill_value)
    else:
      data = lax_structural.full(KEY_SHAPE, fill_value, KEY_DATA_DTYPE)
    return wrap(lax_structural.broadcast_in_dim(data, shape + KEY_SHAPE, (len(shape),)))


_key_dtype = KeyTy()


def key_dtype(impl=None):
  """The dtype of typed keys, `key<fry>` (`impl`: None or 'threefry2x32').

  >>> key_dtype()
  key<fry>
  """
  if impl not in (None, "threefry2x32", _key_dtype):
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                     '"threefry2x32"?')
  return _key_dtype


# =============================================================================
# Concrete key arrays
# =============================================================================

class PRNGKeyArray:
  """A concrete array of typed PRNG keys (`jax.random.key(0)`): shape `s` over uint32
  data of shape `s + (2,)`.

  A pytree leaf and a `jax.Array` (`isinstance(k, jax.Array)`), of aval
  `ShapedArray(s, key<fry>)`. Indexing, `reshape`, `transpose`, `squeeze`, iteration
  and `==` act on the key axes; arithmetic raises a TypeError.

  >>> k = PRNGKeyArray(np.zeros((3, 2), np.uint32)); k.shape, k[0].shape
  ((3,), ())
  """
  __slots__ = ("_base_array",)
  __array_priority__ = 100

  def __init__(self, base_array):
    self._base_array = base_array

  shape = property(lambda self: tuple(self._base_array.shape[:-1]))
  ndim = property(lambda self: len(self._base_array.shape) - 1)
  size = property(lambda self: math.prod(self.shape))
  dtype = property(lambda self: _key_dtype)
  itemsize = property(lambda self: _key_dtype.itemsize)
  nbytes = property(lambda self: self.size * _key_dtype.itemsize)
  weak_type = False

  @property
  def aval(self):
    base = self._base_array.aval
    spec = getattr(base, "spec", None)
    if spec is not None:   # data typed by a sharding (sharding_explicit.py): keys too
      return type(base)(self.shape, _key_dtype, False, base.mesh, tuple(spec)[:-1])
    return ShapedArray(self.shape, _key_dtype)

  # -- placement: that of the data, over the key axes --
  @property
  def sharding(self):
    s = self._base_array.sharding
    spec = getattr(s, "spec", None)
    if spec is not None and len(spec) > self.ndim:   # the word axis is never split
      s = type(s)(s.mesh, type(spec)(*tuple(spec)[:self.ndim]))
    return s
  committed = property(lambda self: self._base_array.committed)

  def devices(self):
    return self._base_array.devices()

  @property
  def device(self):
    return self._base_array.device

  def block_until_ready(self):
    self._base_array.block_until_ready()
    return self

  def is_deleted(self):
    return self._base_array.is_deleted()

  def delete(self):
    self._base_array.delete()

  def copy(self):
    return PRNGKeyArray(self._base_array.copy())

  def __copy__(self):
    return self

  def __deepcopy__(self, memo):
    return self

  def __reduce__(self):
    return (PRNGKeyArray, (np.asarray(self._base_array),))

  # -- conversions that keys do not have --

  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. "
                    "Use jax.random.key_data(arr) if you wish to extract the underlying "
                    "integer array.")

  def __bool__(self):
    raise TypeError("key array cannot be converted to boolean.")

  def __int__(self):
    raise TypeError("key array cannot be converted to int.")

  def __float__(self):
    raise TypeError("key array cannot be converted to float.")

  def __index__(self):
    raise TypeError("key array cannot be used as an index.")

  __hash__ = None

  def __repr__(self):
    return f"Array({self.shape}, dtype={_key_dtype}) overlaying:\n{self._base_array}"

  __str__ = __repr__

  def __format__(self, spec):
    return format(str(self), spec)


# `isinstance(jax.random.key(0), jax.Array)` holds in JAX (key arrays are arrays of an
# extended dtype); the public Array type is an ABC that device arrays and tracers are
# registered with.
_PublicArray.register(PRNGKeyArray)


def is_key(x):
  """Whether `x` is a typed key array (concrete, or a tracer of a key dtype).

  >>> is_key(PRNGKeyArray(np.zeros(2, np.uint32))), is_key(np.zeros(2, np.uint32))
  (True, False)
  """
  if type(x) is PRNGKeyArray:
    return True
  return isinstance(x, Tracer) and type(getattr(x.aval, "dtype", None)) is KeyTy


# =============================================================================
# wrap / unwrap: the only primitives on both sides
# =============================================================================

def _check_key_data(data):
  for attr in ("ndim", "shape", "dtype"):
    if not hasattr(data, attr):
      raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have "
                      f"ndim, shape, and dtype attributes. Got {data}")
  if data.ndim < 1:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; "
                    f"got ndim={data.ndim}")
  if tuple(data.shape[-1:]) != KEY_SHAPE:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to "
                    f"end with (2,); got shape={tuple(data.shape)} for impl=threefry2x32")
  if data.dtype != KEY_DATA_DTYPE:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                    f"uint32; got dtype={data.dtype}")


def wrap(data):
  """Typed keys over uint32 `data` of shape `(..., 2)` (an Array or a tracer).

  >>> wrap(np.zeros((4, 2), np.uint32)).shape
  (4,)
  """
  if isinstance(data, Tracer):
    return random_wrap_p.bind(data)
  if not hasattr(data, "_buf"):  # NumPy data: onto the device first
    from tracejax._src.numpy import creation
    _check_key_data(np.asarray(data) if not hasattr(data, "dtype") else data)
    data = creation.asarray(data)
  _check_key_data(data)
  return PRNGKeyArray(data)


def unwrap(keys):
  """The uint32 data `(*keys.shape, 2)` under typed `keys` (concrete or traced).

  >>> unwrap(PRNGKeyArray(np.zeros((4, 2), np.uint32))).shape
  (4, 2)
  """
  if type(keys) is PRNGKeyArray:
    return keys._base_array
  return random_unwrap_p.bind(keys)


def random_wrap(base_arr, *, impl=None):
  """JAX's internal name for `wrap` (`jax._src.prng.random_wrap`).

  >>> random_wrap(np.zeros(2, np.uint32)).dtype
  key<fry>
  """
  key_dtype(impl)
  return wrap(base_arr)


def random_unwrap(keys):
  """JAX's internal name for `unwrap` (`jax._src.prng.random_unwrap`); TypeError for
  anything but a key array.

  >>> random_unwrap(PRNGKeyArray(np.zeros(2, np.uint32))).dtype
  dtype('uint32')
  """
  if not is_key(keys):
    raise TypeError(f"random_unwrap takes key array operand, got {getattr(keys, 'dtype', type(keys))}")
  return unwrap(keys)


random_wrap_p = Primitive("random_wrap")
random_unwrap_p = Primitive("random_unwrap")


def _wrap_abstract_eval(data):
  _check_key_data(data)
  return ShapedArray(tuple(data.shape[:-1]), _key_dtype)


def _unwrap_abstract_eval(keys):
  if type(keys.dtype) is not KeyTy:
    raise TypeError(f"random_unwrap expects a key array, got dtype {keys.dtype}")
  return ShapedArray(tuple(keys.shape) + KEY_SHAPE, KEY_DATA_DTYPE)


random_wrap_p.def_impl(lambda data: PRNGKeyArray(data))
random_wrap_p.def_abstract_eval(_wrap_abstract_eval)
random_unwrap_p.def_impl(lambda keys: keys._base_array)
random_unwrap_p.def_abstract_eval(_unwrap_abstract_eval)
# Keys and their words are integers to AD: zero (float0) tangents.
ad.defjvp_zero(random_wrap_p)
ad.defjvp_zero(random_unwrap_p)
# The data already has the physical type: nothing to emit.
lowering.register_lowering(random_wrap_p, lambda ctx, x: [x])
lowering.register_lowering(random_unwrap_p, lambda ctx, x: [x])


def _wrap_batch(args, dims):
  (x,), (d,) = args, dims
  if d == np.ndim(x) - 1:  # the batch axis may not be the word axis
    x, d = lax_utils.moveaxis(x, d, 0), 0
  return random_wrap_p.bind(x), d


def _unwrap_batch(args, dims):
  # Key axes are the leading axes of the data: the batch axis keeps its position.
  return random_unwrap_p.bind(args[0]), dims[0]


batching.primitive_batchers[random_wrap_p] = _wrap_batch
batching.primitive_batchers[random_unwrap_p] = _unwrap_batch


# =============================================================================
# Structural primitives on keys: rewritten at bind (Primitive.extended_rule)
# =============================================================================

def _nonneg(dims, ndim):
  return tuple(operator.index(d) % ndim if ndim else operator.index(d) for d in dims)


def _index_zero(idx):
  """A zero start index of the dtype of the other start indices (the word axis)."""
  dt = getattr(idx[0], "dtype", None) if idx else None
  return np.zeros((), dt if dt is not None and type(dt) is not KeyTy else np.int32)


def _transpose(x, *, permutation):
  n = np.ndim(x)
  return wrap(lax_structural.transpose_p.bind(
      unwrap(x), permutation=tuple(permutation) + (n,)))


def _reshape(x, *, new_sizes, dimensions, **params):
  n = np.ndim(x)
  dims = None if dimensions is None else tuple(dimensions) + (n,)
  return wrap(lax_structural.reshape_p.bind(
      unwrap(x), new_sizes=tuple(new_sizes) + KEY_SHAPE, dimensions=dims, **params))


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, **params):
  return wrap(lax_structural.broadcast_in_dim_p.bind(
      unwrap(x), shape=tuple(shape) + KEY_SHAPE,
      broadcast_dimensions=tuple(broadcast_dimensions) + (len(shape),), **params))


def _squeeze(x, *, dimensions):
  return wrap(lax_structural.squeeze_p.bind(
      unwrap(x), dimensions=_nonneg(dimensions, np.ndim(x))))


def _rev(x, *, dimensions):
  return wrap(lax_structural.rev_p.bind(unwrap(x), dimensions=_nonneg(dimensions, np.ndim(x))))


def _concatenate(*xs, dimension):
  if not all(map(is_key, xs)):
    raise TypeError("concatenate of key arrays with arrays of another dtype: "
                    f"{[str(getattr(x, 'dtype', type(x))) for x in xs]}")
  return wrap(lax_structural.concatenate_p.bind(
      *map(unwrap, xs), dimension=_nonneg((dimension,), np.ndim(xs[0]))[0]))


def _slice(x, *, start_indices, limit_indices, strides):
  return wrap(lax_slicing.slice_p.bind(
      unwrap(x), start_indices=tuple(start_indices) + (0,),
      limit_indices=tuple(limit_indices) + KEY_SHAPE,
      strides=None if strides is None else tuple(strides) + (1,)))


def _dynamic_slice(x, *idx, slice_sizes):
  if is_key(idx[0] if idx else None) or any(map(is_key, idx)):
    raise TypeError("dynamic_slice start indices must be integers, got a key array")
  return wrap(lax_slicing.dynamic_slice_p.bind(
      unwrap(x), *idx, _index_zero(idx), slice_sizes=tuple(slice_sizes) + KEY_SHAPE))


def _dynamic_update_slice(x, update, *idx):
  if not (is_key(x) and is_key(update)):
    raise TypeError("dynamic_update_slice of a key array needs key updates (and the "
                    "other way round)")
  return wrap(lax_slicing.dynamic_update_slice_p.bind(
      unwrap(x), unwrap(update), *idx, _index_zero(idx)))


def _gather(x, indices, *, dimension_numbers, slice_sizes, **params):
  if is_key(indices):
    raise TypeError("gather indices must be integers, got a key array")
  dn = dimension_numbers
  out_rank = np.ndim(indices) - 1 + len(dn.offset_dims)  # the word axis comes last
  dn = dn._replace(offset_dims=tuple(dn.offset_dims) + (out_rank,))
  if params.get("fill_value") is not None:
    params = dict(params, fill_value=None)
  return wrap(lax_gather.gather_p.bind(
      unwrap(x), indices, dimension_numbers=dn,
      slice_sizes=tuple(slice_sizes) + KEY_SHAPE, **params))


def _select_n(which, *cases):
  if is_key(which):
    raise TypeError("select_n's predicate must be bool or integer, got a key array")
  if not all(map(is_key, cases)):
    raise TypeError("select_n of key arrays with arrays of another dtype")
  shape = tuple(np.shape(cases[0]))
  if np.ndim(which):  # the predicate spreads over the two words of each key
    which = lax_structural.broadcast_in_dim_p.bind(
        which, shape=shape + KEY_SHAPE, broadcast_dimensions=tuple(range(len(shape))))
  return wrap(lax_elementwise.select_n_p.bind(which, *map(unwrap, cases)))


def _copy(x):
  return wrap(lax_misc.copy_p.bind(unwrap(x)))


_STRUCTURAL = {
    lax_structural.transpose_p: _transpose,
    lax_structural.reshape_p: _reshape,
    lax_structural.broadcast_in_dim_p: _broadcast_in_dim,
    lax_structural.squeeze_p: _squeeze,
    lax_structural.rev_p: _rev,
    lax_structural.concatenate_p: _concatenate,
    lax_slicing.slice_p: _slice,
    lax_slicing.dynamic_slice_p: _dynamic_slice,
    lax_slicing.dynamic_update_slice_p: _dynamic_update_slice,
    lax_gather.gather_p: _gather,
    lax_elementwise.select_n_p: _select_n,
    lax_misc.copy_p: _copy,
}


def _extended_rule(prim, args, params):
  """`Primitive.extended_rule` of the structural primitives: NotImplemented (bind as
  usual) unless an operand is a key array."""
  for a in args:
    if is_key(a):
      return _STRUCTURAL[prim](*args, **params)
  return NotImplemented


for _p in _STRUCTURAL:
  _p.extended_rule = _extended_rule


# =============================================================================
# Methods of key arrays (concrete, and tracers of a key dtype)
# =============================================================================

def _key_getitem(k, idx):
  idx = idx if isinstance(idx, tuple) else (idx,)
  # A trailing full slice keeps the word axis; without an Ellipsis in `idx` one is
  # added first, so that the slice lands on the word axis whatever `idx` indexes.
  tail = (slice(None),) if any(i is Ellipsis for i in idx) else (Ellipsis, slice(None))
  return wrap(unwrap(k)[idx + tail])


def _key_len(k):
  shape = np.shape(k)
  if not shape:
    raise TypeError("len() of unsized object")
  return shape[0]


def _key_iter(k):
  if not np.shape(k):
    raise TypeError("iteration over a 0-d key array")
  return (_key_getitem(k, i) for i in range(np.shape(k)[0]))


def _key_reshape(k, *shape, order="C"):
  if order != "C":
    raise NotImplementedError("reshape of key arrays supports order='C' only")
  if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
    shape = tuple(shape[0])
  from tracejax._src.numpy import shape_ops
  return wrap(shape_ops.reshape(unwrap(k), (*shape, *KEY_SHAPE)))


def _key_ravel(k, order="C"):
  return _key_reshape(k, -1, order=order)


def _key_transpose(k, *axes):
  n = np.ndim(k)
  if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
    axes = axes[0]
  perm = tuple(reversed(range(n))) if not axes else _nonneg(axes, n)
  return wrap(lax_structural.transpose(unwrap(k), perm + (n,)))


def _key_T(k):
  return _key_transpose(k)


def _key_swapaxes(k, axis1, axis2):
  n = np.ndim(k)
  perm = list(range(n))
  a, b = _nonneg((axis1, axis2), n)
  perm[a], perm[b] = perm[b], perm[a]
  return _key_transpose(k, tuple(perm))


def _key_squeeze(k, axis=None):
  shape = np.shape(k)
  if axis is None:
    dims = tuple(i for i, d in enumerate(shape) if d == 1)
  else:
    dims = _nonneg(axis if isinstance(axis, (tuple, list)) else (axis,), len(shape))
    for d in dims:
      if shape[d] != 1:
        raise ValueError("cannot select an axis to squeeze out which has size not equal "
                         f"to one, got shape={shape} and dimensions={dims}")
  return wrap(lax_structural.squeeze(unwrap(k), dims))


def _key_eq(a, b):
  if not (is_key(a) and is_key(b)):
    return NotImplemented
  from tracejax._src.numpy import reductions
  return reductions.all(lax_elementwise.eq(*_broadcast_data(a, b)), axis=-1)


def _key_ne(a, b):
  if not (is_key(a) and is_key(b)):
    return NotImplemented
  from tracejax._src.numpy import reductions
  return reductions.any(lax_elementwise.ne(*_broadcast_data(a, b)), axis=-1)


def _broadcast_data(a, b):
  shape = lax_structural.broadcast_shapes(np.shape(a), np.shape(b))
  out = []
  for k in (a, b):
    d = unwrap(k)
    if np.shape(k) != shape:
      n = np.ndim(k)
      d = lax_structural.broadcast_in_dim(
          d, shape + KEY_SHAPE, tuple(range(len(shape) - n, len(shape) + 1)))
    out.append(d)
  return out


def _key_astype(k, dtype, *args, **kwargs):
  if dtype == _key_dtype or dtype == "key<fry>":  # to its own dtype: the keys themselves
    return k
  raise TypeError(f"cannot convert a key array (dtype {_key_dtype}) to {dtype}: use "
                  "jax.random.key_data(keys) for its uint32 data")


def _key_copy(k):
  return _copy(k) if isinstance(k, Tracer) else k.copy()


_KEY_METHODS = {
    "__getitem__": _key_getitem, "__len__": _key_len, "__iter__": _key_iter,
    "reshape": _key_reshape, "ravel": _key_ravel, "flatten": _key_ravel,
    "transpose": _key_transpose, "swapaxes": _key_swapaxes, "squeeze": _key_squeeze,
    "__eq__": _key_eq, "__ne__": _key_ne, "astype": _key_astype, "copy": _key_copy,
}

for _name, _fn in _KEY_METHODS.items():
  if _name != "copy":
    setattr(PRNGKeyArray, _name, _fn)
PRNGKeyArray.T = property(_key_T)


def _key_aware(name, key_fn, tracer_fn):
  """A tracer method: `key_fn` for tracers of a key dtype, else the usual one."""
  def method(self, *args, **kwargs):
    if type(getattr(self.aval, "dtype", None)) is KeyTy:
      return key_fn(self, *args, **kwargs)
    return tracer_fn(self, *args, **kwargs)
  method.__name__ = method.__qualname__ = name
  method.__doc__ = getattr(tracer_fn, "__doc__", None)
  return method


def _attach_to_tracers():
  # jax.numpy attaches the array methods to Tracer; keys need their own versions of
  # the few that act on the key axes (imported here so that the table is complete).
  from tracejax._src.numpy import array_methods  # noqa: F401
  for name, fn in _KEY_METHODS.items():
    current = getattr(Tracer, name, None)
    if current is None or getattr(current, "_key_aware", False):
      continue
    m = _key_aware(name, fn, current)
    m._key_aware = True
    setattr(Tracer, name, m)
  prop = Tracer.__dict__.get("T")
  if isinstance(prop, property) and not getattr(prop.fget, "_key_aware", False):
    fget = _key_aware("T", _key_T, prop.fget)
    fget._key_aware = True
    Tracer.T = property(fget)


_attach_to_tracers()


# =============================================================================
# The jnp functions JAX applies to key arrays (hooked in numpy/util.key_impls)
# =============================================================================

def _all_keys(arrays, name):
  if not all(map(is_key, arrays)):
    raise TypeError(f"{name}: key arrays cannot be combined with arrays of another dtype, "
                    f"got dtypes {[str(getattr(a, 'dtype', type(a))) for a in arrays]}")


def _jnp_stack(arrays, axis=0):
  from tracejax._src.numpy import shape_ops, util
  arrays = list(arrays)
  _all_keys(arrays, "stack")
  axis = util.canonicalize_axis(axis, np.ndim(arrays[0]) + 1)
  return wrap(shape_ops.stack([unwrap(a) for a in arrays], axis))


def _jnp_concatenate(arrays, axis=0):
  from tracejax._src.numpy import shape_ops, util
  arrays = list(arrays)
  _all_keys(arrays, "concatenate")
  if axis is None:
    arrays, axis = [_key_ravel(a) for a in arrays], 0
  if np.ndim(arrays[0]) == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = util.canonicalize_axis(axis, np.ndim(arrays[0]))
  return wrap(shape_ops.concatenate([unwrap(a) for a in arrays], axis))


def _jnp_expand_dims(a, axis):
  from tracejax._src.numpy import shape_ops, util
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  nd = np.ndim(a) + len(axes)
  axes = tuple(util.canonicalize_axis(i, nd) for i in axes)
  return wrap(shape_ops.expand_dims(unwrap(a), axes))


def _jnp_broadcast_to(a, shape):
  from tracejax._src.numpy import shape_ops
  shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
  return wrap(shape_ops.broadcast_to(unwrap(a), shape + KEY_SHAPE))


def _jnp_where(condition, x, y):
  from tracejax._src.numpy import shape_ops, ufuncs
  _all_keys((x, y), "where")
  shape = lax_structural.broadcast_shapes(np.shape(condition), np.shape(x), np.shape(y))
  c = shape_ops.expand_dims(shape_ops.broadcast_to(condition, shape), -1)
  xd = shape_ops.broadcast_to(unwrap(x), shape + KEY_SHAPE)
  yd = shape_ops.broadcast_to(unwrap(y), shape + KEY_SHAPE)
  return wrap(ufuncs.where(c, xd, yd))


def _register_jnp():
  from tracejax._src.numpy import util
  util.key_impls.update(stack=_jnp_stack, concatenate=_jnp_concatenate,
                        expand_dims=_jnp_expand_dims, broadcast_to=_jnp_broadcast_to,
                        where=_jnp_where, astype=_key_astype)


_register_jnp()
