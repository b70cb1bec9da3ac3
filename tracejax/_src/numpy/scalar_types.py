"""The dtype objects of `jax.numpy`: `jnp.float32`, `jnp.int32`, `jnp.bfloat16`, ...

Each is a class that stands for a NumPy scalar type: it compares and hashes
equal to it, `np.dtype(jnp.float32)` is float32 (through the class attribute
`dtype`), and it is accepted wherever a `dtype=` is. Calling it makes a
device array of that dtype rather than a NumPy scalar, so `jnp.float32(3)`
computes on the device like every other jnp function.
"""

import ml_dtypes
import numpy as np

from tracejax._src.runtime.array import Array, PublicArray


class _ScalarMeta(type):
  """Metaclass making a scalar class interchangeable with its NumPy scalar type."""

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __call__(cls, x):
    from tracejax._src.numpy import creation  # creation imports this module
    return creation.array(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)

  def __repr__(cls):
    # The spelling the 2020 documents print, e.g. in the x64 truncation warning:
    # "Explicitly requested dtype <class 'jax.numpy.lax_numpy.int64'> ...".
    return f"<class 'jax.numpy.lax_numpy.{cls.__name__}'>"


def _make_scalar_type(np_type, name=None):
  dt = np.dtype(np_type)
  name = name or dt.name
  return _ScalarMeta(name, (object,), {
      "dtype": dt,
      "__module__": "tracejax.numpy",
      "__doc__": f"The {dt.name} scalar type; calling it makes a {dt.name} device array.",
  })


bool_ = _make_scalar_type(np.bool_, "bool_")
uint8 = _make_scalar_type(np.uint8)
uint16 = _make_scalar_type(np.uint16)
uint32 = _make_scalar_type(np.uint32)
uint64 = _make_scalar_type(np.uint64)
int8 = _make_scalar_type(np.int8)
int16 = _make_scalar_type(np.int16)
int32 = _make_scalar_type(np.int32)
int64 = _make_scalar_type(np.int64)
bfloat16 = _make_scalar_type(ml_dtypes.bfloat16)
float16 = _make_scalar_type(np.float16)
float32 = _make_scalar_type(np.float32)
float64 = _make_scalar_type(np.float64)
complex64 = _make_scalar_type(np.complex64)
complex128 = _make_scalar_type(np.complex128)

# NumPy's "default" aliases (64-bit; canonicalized to 32-bit when x64 is off).
int_ = _make_scalar_type(np.int64, "int_")
uint = _make_scalar_type(np.uint64, "uint")
float_ = _make_scalar_type(np.float64, "float_")
complex_ = _make_scalar_type(np.complex128, "complex_")
single, double = float32, float64
csingle, cdouble = complex64, complex128

# Abstract scalar classes are NumPy's own: they only appear in issubdtype tests.
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
flexible = np.flexible
character = np.character
object_ = np.object_
dtype = np.dtype


# The array type for isinstance checks (device arrays, tracers and typed key arrays):
# as in JAX, `jnp.ndarray` is `jax.Array` itself.
ndarray = PublicArray

# The narrow types of ml_dtypes (XLA computes with all but float6, int1, uint1).
float8_e4m3fn = _make_scalar_type(ml_dtypes.float8_e4m3fn)
float8_e5m2 = _make_scalar_type(ml_dtypes.float8_e5m2)
float8_e4m3b11fnuz = _make_scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fnuz = _make_scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _make_scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e3m4 = _make_scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _make_scalar_type(ml_dtypes.float8_e4m3)
float8_e8m0fnu = _make_scalar_type(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = _make_scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _make_scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _make_scalar_type(ml_dtypes.float6_e3m2fn)
int4 = _make_scalar_type(ml_dtypes.int4)
uint4 = _make_scalar_type(ml_dtypes.uint4)
int2 = _make_scalar_type(ml_dtypes.int2)
uint2 = _make_scalar_type(ml_dtypes.uint2)
int1 = _make_scalar_type(ml_dtypes.int1)
uint1 = _make_scalar_type(ml_dtypes.uint1)
# NumPy 2's name for the bool scalar type (the array API's `bool`).
bool = _make_scalar_type(np.bool_, "bool")  # noqa: A001  (jnp.bool, as in JAX)
