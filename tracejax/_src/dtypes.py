"""Dtypes, canonicalization and JAX's type-promotion rules.

Three ideas live here:

* **Canonicalization.** With `jax_enable_x64` off (the default) every 64-bit
  dtype is silently narrowed to its 32-bit counterpart (C-S05).
* **The promotion lattice.** `promote_types` follows JAX's own table (C-T),
  not NumPy's: an int or bool against a float always takes the float type,
  bfloat16 with float16 gives float32, and uint64 with a signed int gives
  float64.
* **Weak types.** Python scalars (int, float, complex; *not* bool) and arrays
  whose aval has `weak_type=True` only contribute their *kind* to promotion,
  so `int8_array + 1` stays int8 and `float16_array * 2.0` stays float16
  (C-S16).

The table is generated from the 2020 JAX lattice, which has three weak nodes
(`i*`, `f*`, `c*`) between the concrete dtypes. Taking least upper bounds in
that one graph gives both the C-T table (weak results read as the 64-bit
default type) and the weak-type rules of `result_type`.

Every answer that depends on `jax_enable_x64` is cached under a key that
includes the flag's current value, so flipping the flag at run time needs no
cache invalidation.
"""
import warnings

import ml_dtypes
import numpy as np

from tracejax._src.config import config

# ---------------------------------------------------------------------------
# Dtype objects.

# The scalar type, as in JAX: `np.dtype(bfloat16)` is the dtype and
# `bfloat16(1.0)` makes a scalar.
bfloat16 = ml_dtypes.bfloat16
_bfloat16_dtype = np.dtype(bfloat16)

# Low-precision types XLA knows. They take part in promotion only with
# themselves and with weak (Python-scalar) operands.
float8_e4m3fn = ml_dtypes.float8_e4m3fn
float8_e5m2 = ml_dtypes.float8_e5m2

# The tangent dtype of integer and boolean primals: a zero-size structured
# dtype, so arrays of it carry a shape but no data.
float0 = np.dtype([("float0", np.void, 0)])


# Extended dtypes: element types that are not NumPy dtypes (typed PRNG keys,
# `key<fry>`). As in JAX, each has a `type` that subclasses `extended`, so
# `issubdtype(keys.dtype, prng_key)` and `issubdtype(keys.dtype, extended)` hold.
class extended(np.generic):
  """Scalar class of extended dtypes: `issubdtype(d, extended)` is True for them.

  >>> issubdtype(np.float32, extended)
  False
  """


DType = np.dtype  # the type of a dtype object (`jax._src.dtypes.DType`, annotations)


class ExtendedDType:
  """Base class of extended dtype objects (`jax._src.dtypes.ExtendedDType`).

  A subclass instance is the `dtype` of arrays whose elements are not NumPy scalars
  (typed PRNG keys: `prng.KeyTy`); it sets `type` (a subclass of `extended`) and
  `name`. Libraries built on JAX (flax's fp8 metadata) subclass it.

  >>> isinstance(np.dtype(np.float32), ExtendedDType)
  False
  """
  type = extended
  name = "extended"

  def __repr__(self):
    return self.name


class prng_key(extended):
  """Scalar class of PRNG key dtypes (`jax.random.key(0).dtype`).

  >>> issubdtype(prng_key, extended)
  True
  """


class TypePromotionError(ValueError):
  """Raised when two dtypes have no promotion (e.g. an extended dtype with a number)."""


def _extended_type_of(d):
  """The `extended` subclass an extended dtype object stands for, else None."""
  t = getattr(d, "type", None)
  if isinstance(t, type) and issubclass(t, extended) and not isinstance(d, type):
    return t
  # random.KeyTy (the key dtype) carries its implementation's name instead.
  if getattr(d, "_impl_name", None) is not None and not isinstance(d, type):
    return prng_key
  return None


def itemsize_bits(dtype):
  """The width of one element in bits (4 for int4, 8 for bool).

  >>> itemsize_bits(np.float32), itemsize_bits(ml_dtypes.int4)
  (32, 4)
  """
  if dtype is None or _extended_type_of(dtype) is not None:
    raise ValueError(f"unexpected input: dtype={dtype}")
  dt = np.dtype(dtype)
  if dt.type in _SUBBYTE_BITS:
    return _SUBBYTE_BITS[dt.type]
  return dt.itemsize * 8


_SUBBYTE_BITS = {getattr(ml_dtypes, n): b for n, b in (
    ("int4", 4), ("uint4", 4), ("int2", 2), ("uint2", 2), ("int1", 1), ("uint1", 1),
    ("float4_e2m1fn", 4)) if hasattr(ml_dtypes, n)}

# Default types (the 64-bit ones; canonicalize to get what is in effect).
bool_ = np.bool_
int_ = np.int64
uint = np.uint64
float_ = np.float64
complex_ = np.complex128

_b1 = np.dtype(np.bool_)
_u1, _u2, _u4, _u8 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_i1, _i2, _i4, _i8 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_bf = _bfloat16_dtype
_f2, _f4, _f8 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
_c4, _c8 = np.dtype(np.complex64), np.dtype(np.complex128)

bool_dtypes = [_b1]
unsigned_dtypes = [_u1, _u2, _u4, _u8]
signed_dtypes = [_i1, _i2, _i4, _i8]
int_dtypes = unsigned_dtypes + signed_dtypes
float_dtypes = [_bf, _f2, _f4, _f8]
complex_dtypes = [_c4, _c8]
inexact_dtypes = float_dtypes + complex_dtypes

# The 15 dtypes of the promotion table, in the table's order.
all_dtypes = bool_dtypes + int_dtypes + float_dtypes + complex_dtypes

_dtype_to_32bit_dtype = {_i8: _i4, _u8: _u4, _f8: _f4, _c8: _c4}

# Floating types numpy does not know to be floating (their kind is 'V').
# The narrow float and integer types of ml_dtypes that jax.numpy names
# (float6 and int1/uint1 have no XLA support in jaxlib 0.10.2: known, not computable).
_ML_FLOAT_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz",
                   "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3",
                   "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
_ML_INT_NAMES = ("int4", "uint4", "int2", "uint2", "int1", "uint1")
_ml_float_dtypes = frozenset(
    np.dtype(getattr(ml_dtypes, n)) for n in _ML_FLOAT_NAMES if hasattr(ml_dtypes, n))
_ml_float_types = frozenset(d.type for d in _ml_float_dtypes)
_ml_int_types = frozenset(
    getattr(ml_dtypes, n) for n in _ML_INT_NAMES if hasattr(ml_dtypes, n))
_ml_uint_types = frozenset(
    getattr(ml_dtypes, n) for n in _ML_INT_NAMES if n.startswith("u") and hasattr(ml_dtypes, n))

# The classes of the dtype objects we meet most, for `type(x) in ...` tests:
# `isinstance(x, np.dtype)` is several times slower under NumPy 2.
_dtype_classes = frozenset(type(d) for d in all_dtypes + [float0] + sorted(_ml_float_dtypes, key=str))

# Python scalar types and the dtypes they stand for before canonicalization.
# Spelled out (not `np.dtype(int)`) so the answer does not depend on platform.
python_scalar_dtypes = {bool: _b1, int: _i8, float: _f8, complex: _c8}

# Python scalar types that are weakly typed. bool is deliberately absent: a
# Python bool is an ordinary (strong) bool.
_weak_scalar_types = (int, float, complex)


def supported_dtypes():
  """The table dtypes usable under the current `jax_enable_x64` setting."""
  if config.jax_enable_x64:
    return list(all_dtypes)
  return [d for d in all_dtypes if d not in _dtype_to_32bit_dtype]


# ---------------------------------------------------------------------------
# Canonicalization.

_canonicalize_cache = {}


def _canonicalize_uncached(dtype, x64):
  dt = np.dtype(dtype)
  if x64:
    return dt
  return _dtype_to_32bit_dtype.get(dt, dt)


def canonicalize_dtype(dtype, allow_extended_dtype=False):
  """Return the dtype `dtype` becomes under the current x64 setting.

  With `jax_enable_x64` off: int64->int32, uint64->uint32, float64->float32,
  complex128->complex64; every other dtype is returned as an `np.dtype`.
  Accepts anything `np.dtype` accepts, including the Python types. An extended
  dtype (a PRNG key's) is returned unchanged if `allow_extended_dtype`, else it is
  a ValueError.
  """
  x64 = config.jax_enable_x64
  try:
    return _canonicalize_cache[(dtype, x64)]
  except KeyError:
    pass
  except TypeError:  # unhashable spelling, e.g. a list-of-fields structured dtype
    return _canonicalize_uncached(dtype, x64)
  if _extended_type_of(dtype) is not None:  # never cached: keeps the hit path short
    if allow_extended_dtype:
      return dtype
    raise ValueError(f"canonicalize_dtype called on extended dtype {dtype} with "
                     "allow_extended_dtype=False")
  out = _canonicalize_uncached(dtype, x64)
  _canonicalize_cache[(dtype, x64)] = out
  return out


def default_int_dtype():
  """The dtype of a Python int: int32, or int64 with x64 on."""
  return canonicalize_dtype(_i8)


def default_uint_dtype():
  """uint32, or uint64 with x64 on."""
  return canonicalize_dtype(_u8)


def default_float_dtype():
  """The dtype of a Python float: float32, or float64 with x64 on."""
  return canonicalize_dtype(_f8)


def default_complex_dtype():
  """The dtype of a Python complex: complex64, or complex128 with x64 on."""
  return canonicalize_dtype(_c8)


# ---------------------------------------------------------------------------
# Dtype of a value, and weak types.


def dtype(x, canonicalize=False):
  """Return the `np.dtype` of a value, a dtype spelling or a scalar type.

  Python scalars and the Python types give their default (64-bit) dtype;
  objects with a `.dtype` (arrays, tracers, avals) give that. With
  `canonicalize=True` the answer is narrowed under the current x64 setting.
  """
  t = type(x)
  if t in python_scalar_dtypes:
    dt = python_scalar_dtypes[t]
  elif t in _dtype_classes:
    dt = x
  elif x is None:
    raise ValueError(f"Invalid argument to dtype: {x}.")
  elif isinstance(x, type):
    # Scalar type classes have a `dtype` attribute that is a descriptor, not a
    # dtype, so types must be handled before the `.dtype` test below.
    dt = python_scalar_dtypes[x] if x in python_scalar_dtypes else np.dtype(x)
  elif isinstance(x, np.dtype):
    dt = x
  else:
    dt = getattr(x, "dtype", None)
    if dt is not None:
      dt = dt if type(dt) in _dtype_classes else np.dtype(dt)
    else:
      try:
        dt = np.dtype(x)
      except TypeError:
        dt = np.asarray(x).dtype
  return canonicalize_dtype(dt) if canonicalize else dt


def is_weakly_typed(x):
  """True for Python int/float/complex scalars and values with `weak_type`."""
  t = type(x)
  if t in _weak_scalar_types:
    return True
  if t is bool or t in _dtype_classes or t is np.ndarray or isinstance(x, (np.generic, type)):
    return False
  weak = getattr(x, "weak_type", None)
  if weak is None:
    aval = getattr(x, "aval", None)
    weak = getattr(aval, "weak_type", False) if aval is not None else False
  return bool(weak)


def is_python_scalar(x):
  """True for Python scalars (bool included) and weakly typed 0-d values."""
  if type(x) in python_scalar_dtypes:
    return True
  aval = getattr(x, "aval", None)
  if aval is not None and getattr(aval, "weak_type", False):
    return len(getattr(aval, "shape", (None,))) == 0
  return False


def dtype_and_weak_type(x):
  """Return `(dtype(x), weak)`, the pair `result_type` promotes on.

  The Python types `int`, `float` and `complex` themselves count as weak here,
  as in JAX, so `result_type(x, float)` means "x with a Python float".
  """
  t = type(x)
  if t in _weak_scalar_types:
    return python_scalar_dtypes[t], True
  if t is type and x in _weak_scalar_types:
    return python_scalar_dtypes[x], True
  return dtype(x), is_weakly_typed(x)


# ---------------------------------------------------------------------------
# Kind predicates. They accept any dtype spelling.


def _as_dtype(d):
  return d if isinstance(d, np.dtype) else dtype(d)


def is_bool(d):
  """True for the bool dtype."""
  return _as_dtype(d) == _b1


def is_integer(d):
  """True for signed and unsigned integer dtypes (not bool)."""
  d = _as_dtype(d)
  return d.kind in "iu" or d.type in _ml_int_types


def is_unsigned(d):
  """True for unsigned integer dtypes (uint4 and uint2 included)."""
  d = _as_dtype(d)
  return d.kind == "u" or d.type in _ml_uint_types


def is_signed(d):
  """True for signed integer dtypes (int4 and int2 included)."""
  d = _as_dtype(d)
  return d.kind == "i" or (d.type in _ml_int_types and d.type not in _ml_uint_types)


def is_floating(d):
  """True for real floating dtypes, bfloat16 and the float8 types included."""
  d = _as_dtype(d)
  return d.kind == "f" or d in _ml_float_dtypes


def is_complex(d):
  """True for complex dtypes."""
  return _as_dtype(d).kind == "c"


def is_inexact(d):
  """True for floating and complex dtypes."""
  return is_floating(d) or is_complex(d)


def issubdtype(a, b):
  """`np.issubdtype` that also knows bfloat16 and float8 are floating types, and
  extended dtypes (`issubdtype(key.dtype, prng_key)`)."""
  ext = _extended_type_of(a)
  if ext is not None:
    if isinstance(b, type) and issubclass(b, np.generic):
      return issubclass(ext, b)
    return a == b
  if isinstance(b, type) and issubclass(b, extended):
    return isinstance(a, type) and issubclass(a, b)
  if isinstance(a, type) and issubclass(a, np.generic):
    a_type = a
  elif a is None:  # NumPy's (and JAX's) reading of None: the default dtype, float64
    a_type = np.float64
  else:
    try:
      a_type = _as_dtype(a).type
    except TypeError:
      return np.issubdtype(a, b)
  if a_type in _ml_float_types:
    if isinstance(b, type) and issubclass(b, np.generic) and b in (
        np.floating, np.inexact, np.number, np.generic):
      return True
    try:
      return np.dtype(b).type is a_type
    except TypeError:
      return False
  if a_type in _ml_int_types:
    kind = np.unsignedinteger if a_type in _ml_uint_types else np.signedinteger
    if isinstance(b, type) and issubclass(b, np.generic) and b in (
        kind, np.integer, np.number, np.generic):
      return True
    try:
      return np.dtype(b).type is a_type
    except TypeError:
      return False
  return np.issubdtype(a_type, b)


def finfo(d):
  """Machine limits of a floating dtype (`ml_dtypes.finfo` for bfloat16)."""
  dt = _as_dtype(d)
  if dt in _ml_float_dtypes:
    return ml_dtypes.finfo(dt)
  return np.finfo(dt)


def iinfo(d):
  """Machine limits of an integer dtype."""
  dt = _as_dtype(d)
  if dt.type in _ml_int_types:
    return ml_dtypes.iinfo(dt)
  return np.iinfo(dt)


def scalar_type_of(x):
  """The Python scalar type (bool/int/float/complex) matching `x`'s dtype."""
  dt = dtype(x)
  if dt == _b1:
    return bool
  if is_integer(dt):
    return int
  if is_floating(dt):
    return float
  if is_complex(dt):
    return complex
  raise TypeError(f"Invalid scalar value {x}")


def to_inexact_dtype(d):
  """`d` if it is inexact; else the float type JAX gives integers and bools.

  Integers of up to 32 bits and bool become float32 and 64-bit integers float64
  (then canonicalized, so float32 again with x64 off): with x64 on, `mean` of an
  int32 or bool array is float32, as in JAX, not the default float64.
  """
  dt = _as_dtype(d)
  if is_inexact(dt):
    return dt
  if dt.kind in "iu" and dt.itemsize == 8:
    return canonicalize_dtype(_f8)
  if dt.kind in "iub" or dt.type in _ml_int_types:
    return _f4
  return default_float_dtype()


def to_complex_dtype(d):
  """The complex dtype holding `d`: complex128 for float64, else complex64.

  Integers and bools go through the default float type first.
  """
  dt = to_inexact_dtype(d)
  if is_complex(dt):
    return dt
  return _c8 if dt == _f8 else _c4


def to_real_dtype(d):
  """The real dtype of `d`'s components: complex64->float32, complex128->float64."""
  dt = _as_dtype(d)
  if dt == _c4:
    return _f4
  if dt == _c8:
    return _f8
  return dt


# ---------------------------------------------------------------------------
# The promotion lattice.


class _WeakKind:
  """A weak lattice node: the kind of a Python scalar, with its default type."""
  __slots__ = ("name", "rank", "default")

  def __init__(self, name, rank, default):
    self.name, self.rank, self.default = name, rank, default

  def __repr__(self):
    return self.name


# Identity-compared sentinels, so that they never collide with np.dtype's
# permissive `==` (np.dtype('int64') == int is True).
_i_weak = _WeakKind("i*", 1, _i8)
_f_weak = _WeakKind("f*", 2, _f8)
_c_weak = _WeakKind("c*", 3, _c8)
_weak_nodes = (_i_weak, _f_weak, _c_weak)

# Each node lists the nodes directly above it (JAX 0.2.x `_type_promotion_lattice`).
_lattice = {
    _b1: [_i_weak],
    _u1: [_i2, _u2], _u2: [_i4, _u4], _u4: [_i8, _u8], _u8: [_f_weak],
    _i_weak: [_u1, _i1], _i1: [_i2], _i2: [_i4], _i4: [_i8], _i8: [_f_weak],
    _f_weak: [_bf, _f2, _c_weak], _bf: [_f4], _f2: [_f4], _f4: [_f8, _c4], _f8: [_c8],
    _c_weak: [_c4], _c4: [_c8], _c8: [],
}


def _make_lub_table():
  """Least upper bound of every pair of lattice nodes, keyed by the pair."""
  nodes = list(_lattice)
  upper = {}
  for n in nodes:
    seen, stack = set(), [n]
    while stack:
      m = stack.pop()
      if id(m) not in seen:
        seen.add(id(m))
        stack.extend(_lattice[m])
    upper[n] = seen
  table = {}
  by_id = {id(n): n for n in nodes}
  for a in nodes:
    for b in nodes:
      common = upper[a] & upper[b]
      # the common upper bound whose own upper set is all of them (upper[n] is a
      # subset of `common` for each n in it: equal sizes mean equal sets)
      least = [by_id[i] for i in common if len(upper[by_id[i]]) == len(common)]
      assert len(least) == 1, (a, b)  # the graph really is a lattice
      table[(a, b)] = least[0]
  return table


_lub = _make_lub_table()

# `promote_types` works on concrete dtypes only; a weak result (uint64 with a
# signed int gives `f*`) reads as its 64-bit default type.
_promote_table = {
    (a, b): (r.default if isinstance(r, _WeakKind) else r)
    for (a, b), r in _lub.items()
    if not isinstance(a, _WeakKind) and not isinstance(b, _WeakKind)
}
_promote_cache = {}


def _kind_rank(dt):
  """0 bool, 1 integer, 2 floating, 3 complex; None for other dtypes."""
  if dt == _b1:
    return 0
  if is_integer(dt):
    return 1
  if is_floating(dt):
    return 2
  if is_complex(dt):
    return 3
  return None


def _lub_nodes(a, b):
  """Least upper bound of two nodes; dtypes outside the table join only trivially."""
  try:
    return _lub[(a, b)]
  except KeyError:
    pass
  if a is b or (not isinstance(a, _WeakKind) and not isinstance(b, _WeakKind) and a == b):
    return a
  # A dtype outside the table (float8, float0, ...) absorbs bool and weak
  # operands of no higher kind, so `float8_array * 2.0` stays float8.
  for x, y in ((a, b), (b, a)):
    if isinstance(x, np.dtype) and x not in _promote_table_dtypes:
      rank = _kind_rank(x)
      y_rank = y.rank if isinstance(y, _WeakKind) else (0 if y == _b1 else None)
      if rank is not None and y_rank is not None and y_rank <= rank:
        return x
  raise TypeError(f"Invalid type promotion of {a} and {b}.")


_promote_table_dtypes = frozenset(all_dtypes)


def promote_types(a, b):
  """The dtype both `a` and `b` promote to, by JAX's table (C-T).

  Unlike `result_type` this does not canonicalize: `promote_types(int32,
  int64)` is int64 even with x64 off. Python types are read as their 64-bit
  dtypes (not as weak types).
  """
  try:
    return _promote_cache[(a, b)]
  except (KeyError, TypeError):
    pass
  da, db = np.dtype(a), np.dtype(b)
  out = _promote_table.get((da, db))
  if out is None:
    out = _lub_nodes(da, db)
    if isinstance(out, _WeakKind):
      out = out.default
  try:
    _promote_cache[(a, b)] = out
  except TypeError:
    pass
  return out


def _node(dt, weak):
  """The lattice node of a dtype: its weak kind when weak, else the dtype."""
  if weak:
    rank = _kind_rank(dt)
    if rank:  # bool stays strong even when flagged weak, as in JAX
      return _weak_nodes[rank - 1]
  return dt


_result_cache = {}


def _result_from_node(node, all_weak, x64):
  """(dtype, weak) for a lattice result, under the given x64 setting."""
  if isinstance(node, _WeakKind):
    out = node.default
    weak = True
  else:
    out, weak = node, all_weak
    if all_weak:
      # A weak result always carries the default dtype of its kind.
      rank = _kind_rank(node)
      if rank:
        out = _weak_nodes[rank - 1].default
  if not x64:
    out = _dtype_to_32bit_dtype.get(out, out)
  if out == np.bool_:
    weak = False  # as JAX: promotion of (weak) bools gives a strong bool
  return out, weak


# Lattice node and weakness of the argument types that need no inspection.
_scalar_nodes = {bool: (_b1, False), int: (_i_weak, True), float: (_f_weak, True),
                 complex: (_c_weak, True)}


def _arg_node(x):
  """(lattice node, weak) of one `result_type` argument."""
  t = type(x)
  if t in _scalar_nodes:
    return _scalar_nodes[t]
  if t in _dtype_classes:
    return x, False
  if t is np.ndarray:
    return x.dtype, False
  dt, weak = dtype_and_weak_type(x)
  return _node(dt, weak), weak


def result_type(*args, return_weak_type_flag=False):
  """The dtype that `args` (values, dtypes or types) promote to, canonicalized.

  Strongly typed operands promote through JAX's table. Weakly typed ones
  (Python int/float/complex scalars, the Python types themselves, and values
  whose aval has `weak_type=True`) only contribute their kind: `int8 array +
  1` is int8, `int32 array + 1.0` is the default float type. If every operand
  is weak, so is the result, with the default dtype of the highest kind.
  With `return_weak_type_flag=True`, returns `(dtype, weak_type)`.
  """
  x64 = config.jax_enable_x64
  if len(args) == 2:
    # Fast path: two dtype objects, a single dict lookup once warm.
    a, b = args
    if type(a) in _dtype_classes and type(b) in _dtype_classes:
      key = (a, b, x64)
      try:
        out = _result_cache[key]
      except KeyError:
        out = _result_cache[key] = _result_from_node(_lub_nodes(a, b), False, x64)
      return out if return_weak_type_flag else out[0]
  elif not args:
    raise ValueError("at least one array or dtype is required")
  node = None
  all_weak = True
  for x in args:
    n, weak = _arg_node(x)
    if not weak:
      all_weak = False
    node = n if node is None else _lub_nodes(node, n)
  key = (node, all_weak, x64)
  try:
    out = _result_cache[key]
  except KeyError:
    out = _result_cache[key] = _result_from_node(node, all_weak, x64)
  return out if return_weak_type_flag else out[0]


# ---------------------------------------------------------------------------
# User-requested dtypes.

_TRUNCATION_MSG = (
    "Explicitly requested dtype {dtype}{where} is not available, and will be "
    "truncated to dtype {truncated}. To enable more dtypes, set the "
    "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell "
    "environment variable. See https://github.com/google/jax#current-gotchas "
    "for more.")


def check_user_dtype_supported(dtype, fun_name=None, stacklevel=3):
  """Validate a `dtype=` argument, warning if x64-off will narrow it.

  The Python types bool/int/float/complex mean "the default type" and never
  warn. Non-numeric dtypes raise TypeError. `stacklevel` defaults to the
  caller's caller: the user's call of the jnp function.
  """
  if dtype is None:
    return
  if isinstance(dtype, type) and dtype in (bool, int, float, complex):
    return
  np_dtype = np.dtype(dtype)
  if (np_dtype.kind not in "biufc" and np_dtype not in _ml_float_dtypes
      and np_dtype.type not in _ml_int_types and np_dtype != float0):
    msg = f"JAX only supports number and bool dtypes, got dtype {dtype}"
    msg += f" in {fun_name}" if fun_name else ""
    raise TypeError(msg)
  truncated = canonicalize_dtype(np_dtype)
  if truncated != np_dtype:
    where = f" requested in {fun_name}" if fun_name else ""
    warnings.warn(_TRUNCATION_MSG.format(dtype=dtype, where=where, truncated=truncated.name),
                  UserWarning, stacklevel=stacklevel)
