"""Abstract values: what a tracer knows about an array (shape, dtype, weak type).

`get_aval(x)` maps a concrete value to its aval through `pytype_aval_mappings`,
which later layers extend (the runtime registers `Array`) so that this module
never imports them.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config


class AbstractValue:
  __slots__ = ()


def _short_dtype_name(dtype):
  if dtype == dtypes.float0:
    return "float0"
  if not isinstance(dtype, np.dtype) and dtypes._extended_type_of(dtype) is not None:
    return dtype.name  # an extended dtype: `key<fry>`
  return np.dtype(dtype).name


_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "bool": "bool", "complex64": "c64", "complex128": "c128", "float0": "float0"}


class ShapedArray(AbstractValue):
  """The abstract value of an array: its shape and dtype, but not its contents."""
  __slots__ = ("shape", "dtype", "weak_type", "_hash")
  array_abstraction_level = 1

  def __init__(self, shape, dtype, weak_type=False):
    self.shape = tuple(shape)
    try:
      self.dtype = np.dtype(dtype)
    except TypeError:
      # Extended dtypes (typed PRNG keys, `key<fry>`: see prng.py) are kept as given.
      if dtypes._extended_type_of(dtype) is None:
        raise
      self.dtype = dtype
    self.weak_type = bool(weak_type)
    self._hash = None

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def update(self, shape=None, dtype=None, weak_type=None):
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self):
    return self.update(weak_type=False) if self.weak_type else self

  def __eq__(self, other):
    return (type(self) is type(other) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    h = self._hash
    if h is None:
      h = self._hash = hash((self.shape, self.dtype, self.weak_type))
    return h

  def str_short(self, short_dtypes=False):
    name = _short_dtype_name(self.dtype)
    if short_dtypes:
      name = _SHORT.get(name, name)
    return f"{name}[{','.join(map(str, self.shape))}]"

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.str_short()}{weak})"

  def __str__(self):
    # Today's JAX prints a type as `float32[3]` (`~float32[]` when weakly typed):
    # what `print(jax.typeof(x))` shows. The repr keeps the seeds' ShapedArray(...).
    return ("~" if self.weak_type else "") + self.str_short()

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def at_least_vspace(self):
    """The aval of this value's tangents (float0 for integer and bool values)."""
    return ShapedArray(self.shape, tangent_dtype(self.dtype), self.weak_type)

  @property
  def sharding(self):
    """The type-level sharding (`jax.typeof(x).sharding`): as in JAX 0.10.2 without
    explicit sharding, a `NamedSharding` over the empty `AbstractMesh` that splits no
    axis (spec `P(None, ...)`, one entry per axis). Shardings are not part of
    tracejax's types, so every aval reports this one."""
    return AbstractNamedSharding(AbstractMesh.EMPTY, (None,) * len(self.shape))


class AbstractMesh:
  """A mesh known only by its axis names, sizes and types (no devices): what a type's
  sharding refers to. `AbstractMesh.EMPTY` (no axes) is the mesh of every aval here.

  Args:
    axis_sizes: one size per axis.
    axis_names: one name per axis.
    axis_types: optional, one `AxisType` per axis.

  >>> AbstractMesh.EMPTY.empty, AbstractMesh.EMPTY.are_all_axes_explicit
  (True, False)
  """
  __slots__ = ("axis_sizes", "axis_names", "axis_types")

  def __init__(self, axis_sizes=(), axis_names=(), axis_types=None):
    self.axis_sizes = tuple(int(s) for s in axis_sizes)
    self.axis_names = tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh axis_sizes {self.axis_sizes} and axis_names "
                       f"{self.axis_names} must have the same length")
    self.axis_types = tuple(axis_types) if axis_types is not None else ()

  shape = property(lambda self: dict(zip(self.axis_names, self.axis_sizes)))
  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
  # JAX's empty abstract mesh reports size 0 and is "empty".
  size = property(lambda self: int(np.prod(self.axis_sizes)) if self.axis_sizes else 0)
  empty = property(lambda self: not self.axis_names)
  abstract_mesh = property(lambda self: self)
  # No axis is Explicit/Manual on the empty mesh (JAX: all three are False).
  are_all_axes_explicit = property(lambda self: False)
  are_all_axes_auto = property(lambda self: False)
  are_all_axes_manual = property(lambda self: False)
  explicit_axes = auto_axes = manual_axes = property(lambda self: ())

  def __eq__(self, other):
    return (isinstance(other, AbstractMesh) and self.axis_sizes == other.axis_sizes
            and self.axis_names == other.axis_names)

  def __hash__(self):
    return hash((self.axis_sizes, self.axis_names))

  def __repr__(self):
    shape = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)   # JAX's: no parens
    return f"AbstractMesh({shape or '()'}, axis_types={self.axis_types})"


AbstractMesh.EMPTY = AbstractMesh()

# The PartitionSpec class lives in the runtime (a layer below); the runtime installs
# it here so that `aval.sharding.spec` compares equal to `jax.P(...)`.
partition_spec_type = tuple


class AbstractNamedSharding:
  """The sharding of a type: a mesh (abstract) and a partition spec. Printed as JAX
  prints it, `NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))`.

  Args:
    mesh: an `AbstractMesh`.
    spec: one entry per array axis (None: not split).

  >>> ShapedArray((2, 3), 'float32').sharding.shard_shape((2, 3))
  (2, 3)
  """
  __slots__ = ("mesh", "spec")

  def __init__(self, mesh, spec=()):
    self.mesh = mesh
    self.spec = spec if isinstance(spec, partition_spec_type) else partition_spec_type(
        *spec) if partition_spec_type is not tuple else tuple(spec)

  memory_kind = None
  is_fully_replicated = property(lambda self: all(p is None for p in self.spec))
  is_fully_addressable = property(lambda self: True)
  num_devices = property(lambda self: self.mesh.size)

  @property
  def device_set(self):
    raise ValueError("device_set is not implemented for an abstract mesh "
                     "(`jax.typeof(x).sharding` names no devices).")

  def shard_shape(self, global_shape):
    """The shape of one shard: the whole array (no axis is split on the empty mesh)."""
    sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
    out = list(global_shape)
    for i, p in enumerate(self.spec):
      names = () if p is None else (p,) if isinstance(p, str) else tuple(p)
      out[i] //= int(np.prod([sizes[n] for n in names])) if names else 1
    return tuple(out)

  def __eq__(self, other):
    # Trailing None entries do not matter, as for JAX's NamedSharding.
    if not isinstance(other, AbstractNamedSharding) or self.mesh != other.mesh:
      return False
    strip = lambda s: tuple(s)[:max([i + 1 for i, p in enumerate(s) if p is not None],
                                    default=0)]
    return strip(self.spec) == strip(other.spec)

  def __hash__(self):
    return hash((self.mesh, tuple(p for p in self.spec if p is not None)))

  def __repr__(self):
    spec = ("P(" + ", ".join(repr(p) for p in self.spec)
            + ("," if len(self.spec) == 1 else "") + ")")
    return f"NamedSharding(mesh={self.mesh!r}, spec={spec})"


def tangent_dtype(dtype):
  if dtypes.issubdtype(dtype, np.inexact):
    return dtype
  return dtypes.float0


class ConcreteArray(ShapedArray):
  """A ShapedArray that also knows its value (2020 API; seen in printed tracers)."""
  __slots__ = ("val",)
  array_abstraction_level = 0

  def __init__(self, val, weak_type=False, dtype=None):
    val = np.asarray(val) if dtype is None else np.asarray(val, dtype)
    super().__init__(val.shape, val.dtype, weak_type)
    self.val = val

  def __eq__(self, other):
    return self is other

  def __hash__(self):
    return id(self)

  def __repr__(self):
    weak = ", weak_type=True" if self.weak_type else ""
    return f"ConcreteArray({self.val}, dtype={self.dtype.name}{weak})"

  __str__ = __repr__


# ShapedArray subclasses that raise_to_shaped keeps as they are (the avals of
# sharding_explicit.py, which carry a sharding in the type).
shaped_subtypes = set()


def raise_to_shaped(aval, weak_type=None):
  if weak_type is None and (type(aval) is ShapedArray or type(aval) in shaped_subtypes):
    return aval
  return ShapedArray(aval.shape, aval.dtype,
                     aval.weak_type if weak_type is None else weak_type)


# ---- concrete value -> aval ----

pytype_aval_mappings = {}


def _scalar_aval(x):
  dt = dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(x)])
  return ShapedArray((), dt, type(x) is not bool)


def _numpy_aval(x):
  return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))


for _t in (int, float, complex, bool):
  pytype_aval_mappings[_t] = _scalar_aval
pytype_aval_mappings[np.ndarray] = _numpy_aval
for _t in set(np.sctypeDict.values()):
  pytype_aval_mappings[_t] = _numpy_aval
for _name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "int4", "uint4"):
  try:
    import ml_dtypes
    pytype_aval_mappings[getattr(ml_dtypes, _name)] = _numpy_aval
  except (ImportError, AttributeError):
    pass


def get_aval(x):
  """The aval of a concrete value or tracer; TypeError names unsupported types."""
  fn = pytype_aval_mappings.get(type(x))
  if fn is not None:
    return fn(x)
  aval = getattr(x, "aval", None)
  if aval is not None:
    return aval
  for t in type(x).__mro__[1:]:
    fn = pytype_aval_mappings.get(t)
    if fn is not None:
      return fn(x)
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  raise TypeError(f"Value {x!r} of type {type(x)} is not a valid JAX type")


def is_valid_jaxtype(x):
  try:
    get_aval(x)
    return True
  except TypeError:
    return False


def canonicalize_shape(shape, context=""):
  """Turn a user shape into a tuple of ints, with the seed's error for traced sizes."""
  from tracejax._src.core.trace import Tracer  # lazy: trace imports this module
  from tracejax._src.errors import NonConcreteShapeError
  try:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
      return (int(shape),)
    return tuple(int(operator_index(d)) for d in shape)
  except TypeError:
    pass
  if not isinstance(shape, (tuple, list)):
    shape = (shape,)
  if any(isinstance(d, Tracer) for d in shape):
    raise NonConcreteShapeError(tuple(shape))
  raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {shape}.")


def operator_index(d):
  import operator
  if isinstance(d, (bool, np.bool_)):
    raise TypeError("boolean shape entry")
  return operator.index(d)


_ = config  # config is read by later helpers through this module's users
