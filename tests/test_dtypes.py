"""Tests of tracejax._src.dtypes: the C-T promotion table, weak types, x64."""
import timeit
import warnings

import ml_dtypes
import numpy as np
import pytest

from tracejax._src import dtypes
from tracejax._src.config import config

# The 2020 `jax.numpy.promote_types` documentation table (FEATURES.md C-T).
_TABLE = """
   b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8
b1 b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8
u1 u1 u1 u2 u4 u8 i2 i2 i4 i8 bf f2 f4 f8 c4 c8
u2 u2 u2 u2 u4 u8 i4 i4 i4 i8 bf f2 f4 f8 c4 c8
u4 u4 u4 u4 u4 u8 i8 i8 i8 i8 bf f2 f4 f8 c4 c8
u8 u8 u8 u8 u8 u8 f8 f8 f8 f8 bf f2 f4 f8 c4 c8
i1 i1 i2 i4 i8 f8 i1 i2 i4 i8 bf f2 f4 f8 c4 c8
i2 i2 i2 i4 i8 f8 i2 i2 i4 i8 bf f2 f4 f8 c4 c8
i4 i4 i4 i4 i8 f8 i4 i4 i4 i8 bf f2 f4 f8 c4 c8
i8 i8 i8 i8 i8 f8 i8 i8 i8 i8 bf f2 f4 f8 c4 c8
bf bf bf bf bf bf bf bf bf bf bf f4 f4 f8 c4 c8
f2 f2 f2 f2 f2 f2 f2 f2 f2 f2 f4 f2 f4 f8 c4 c8
f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c4 c8
f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c8 c8
c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c4 c8 c4 c8
c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8
"""

_CODES = {
    "b1": np.bool_, "u1": np.uint8, "u2": np.uint16, "u4": np.uint32, "u8": np.uint64,
    "i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64,
    "bf": ml_dtypes.bfloat16, "f2": np.float16, "f4": np.float32, "f8": np.float64,
    "c4": np.complex64, "c8": np.complex128,
}


def _parse_table():
  header, *rows = [line.split() for line in _TABLE.strip().splitlines()]
  cells = []
  for row in rows:
    for col, out in zip(header, row[1:]):
      cells.append((row[0], col, out))
  return cells


_CELLS = _parse_table()
assert len(_CELLS) == 225


class _Weak:
  """A stand-in for a weakly typed array value (e.g. a traced Python scalar)."""

  def __init__(self, dtype, weak_type=True):
    self.dtype = np.dtype(dtype)
    self.weak_type = weak_type
    self.shape = ()


class _Tracer:
  """A stand-in for a tracer: no `weak_type` of its own, but an aval with one."""

  def __init__(self, dtype, weak_type):
    self.dtype = np.dtype(dtype)
    self.aval = _Weak(dtype, weak_type)


@pytest.fixture
def x64(x64_mode):
  """conftest's `x64_mode` (x64 off, then on) under this file's older name."""
  return x64_mode


@pytest.fixture
def x32():
  old = config.jax_enable_x64
  config.update("jax_enable_x64", False)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


# ---- the promotion table --------------------------------------------------

@pytest.mark.parametrize("a,b,out", _CELLS, ids=[f"{a}-{b}" for a, b, _ in _CELLS])
def test_promote_types_table(a, b, out, x64):
  # promote_types never canonicalizes, so the answer is the same in both modes.
  got = dtypes.promote_types(_CODES[a], _CODES[b])
  assert got == np.dtype(_CODES[out])
  assert isinstance(got, np.dtype)
  # Same answer from dtype objects and from string spellings.
  assert dtypes.promote_types(np.dtype(_CODES[a]), np.dtype(_CODES[b])) == got


@pytest.mark.parametrize("a,b,out", _CELLS, ids=[f"{a}-{b}" for a, b, _ in _CELLS])
def test_result_type_table_canonicalized(a, b, out, x64):
  got = dtypes.result_type(np.dtype(_CODES[a]), np.dtype(_CODES[b]))
  assert got == dtypes.canonicalize_dtype(_CODES[out])
  dt, weak = dtypes.result_type(np.dtype(_CODES[a]), np.dtype(_CODES[b]),
                                return_weak_type_flag=True)
  assert dt == got
  # Strong operands give a strong result except uint64 vs signed (lattice `f*`).
  assert weak == ((a, b) in {("u8", s) for s in ("i1", "i2", "i4", "i8")}
                  or (b, a) in {("u8", s) for s in ("i1", "i2", "i4", "i8")})


def test_table_is_symmetric_and_differs_from_numpy():
  for a, b, out in _CELLS:
    assert dtypes.promote_types(_CODES[a], _CODES[b]) == dtypes.promote_types(_CODES[b], _CODES[a])
  # The headline differences from NumPy (C-S03, C-S04).
  assert dtypes.promote_types(np.int64, np.float16) == np.float16
  assert dtypes.promote_types(np.uint64, dtypes.bfloat16) == dtypes.bfloat16
  assert dtypes.promote_types(dtypes.bfloat16, np.float16) == np.float32
  assert np.promote_types(np.int64, np.float16) == np.float64


def test_promote_types_other_dtypes():
  assert dtypes.promote_types(dtypes.float0, dtypes.float0) == dtypes.float0
  assert dtypes.promote_types(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fn) == \
      np.dtype(ml_dtypes.float8_e4m3fn)
  assert dtypes.promote_types("float32", "int8") == np.float32
  assert dtypes.promote_types(int, float) == np.float64  # Python types read as 64-bit
  with pytest.raises(TypeError):
    dtypes.promote_types(dtypes.float0, np.float32)
  with pytest.raises(TypeError):
    dtypes.promote_types(ml_dtypes.float8_e4m3fn, np.float32)


# ---- canonicalization ------------------------------------------------------

def test_canonicalize_dtype(x64):
  narrowed = {np.int64: np.int32, np.uint64: np.uint32, np.float64: np.float32,
              np.complex128: np.complex64}
  for code, t in _CODES.items():
    want = t if x64 else narrowed.get(t, t)
    assert dtypes.canonicalize_dtype(t) == np.dtype(want), code
    assert dtypes.canonicalize_dtype(np.dtype(t)) == np.dtype(want), code
    assert isinstance(dtypes.canonicalize_dtype(t), np.dtype)
  assert dtypes.canonicalize_dtype(int) == (np.int64 if x64 else np.int32)
  assert dtypes.canonicalize_dtype(float) == (np.float64 if x64 else np.float32)
  assert dtypes.canonicalize_dtype(complex) == (np.complex128 if x64 else np.complex64)
  assert dtypes.canonicalize_dtype(bool) == np.bool_
  assert dtypes.canonicalize_dtype("float64") == (np.float64 if x64 else np.float32)
  assert dtypes.canonicalize_dtype(dtypes.float0) == dtypes.float0
  assert dtypes.default_int_dtype() == (np.int64 if x64 else np.int32)
  assert dtypes.default_uint_dtype() == (np.uint64 if x64 else np.uint32)
  assert dtypes.default_float_dtype() == (np.float64 if x64 else np.float32)
  assert dtypes.default_complex_dtype() == (np.complex128 if x64 else np.complex64)


def test_canonicalize_follows_flag_changes():
  old = config.jax_enable_x64
  try:
    config.update("jax_enable_x64", False)
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    config.update("jax_enable_x64", True)
    assert dtypes.canonicalize_dtype(np.float64) == np.float64
    assert dtypes.result_type(np.dtype("int32"), np.dtype("int64")) == np.int64
    config.update("jax_enable_x64", False)
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    assert dtypes.result_type(np.dtype("int32"), np.dtype("int64")) == np.int32
  finally:
    config.update("jax_enable_x64", old)


def test_supported_dtypes(x64):
  names = {d.name for d in dtypes.supported_dtypes()}
  assert len(dtypes.all_dtypes) == 15
  assert ("float64" in names) == x64
  assert {"bool", "int32", "bfloat16", "float16", "complex64"} <= names
  assert len(names) == (15 if x64 else 11)


# ---- weak types ------------------------------------------------------------

def _f(x32_dtype, x64_dtype, x64):
  return np.dtype(x64_dtype if x64 else x32_dtype)


@pytest.mark.parametrize("args,want32,want64,weak", [
    ((np.dtype("int32"), 1.0), "float32", "float64", True),
    ((np.dtype("int8"), 1), "int8", "int8", False),
    ((np.dtype("uint8"), 1), "uint8", "uint8", False),
    ((np.dtype("float16"), 1.0), "float16", "float16", False),
    ((np.dtype(ml_dtypes.bfloat16), 2.0), "bfloat16", "bfloat16", False),
    ((np.dtype("int32"), 1j), "complex64", "complex128", True),
    ((np.dtype("float32"), 1j), "complex64", "complex64", False),
    ((np.dtype("float64"), 1j), "complex64", "complex128", False),
    ((np.dtype("int16"), 1.0), "float32", "float64", True),
    ((1, 2.0), "float32", "float64", True),
    ((1, 2), "int32", "int64", True),
    ((1.0, 2j), "complex64", "complex128", True),
    ((True, 2), "int32", "int64", True),
    ((True, False), "bool", "bool", False),  # a Python bool is not weak
    ((True, np.dtype("int8")), "int8", "int8", False),
    ((np.dtype("bool"), 2.0), "float32", "float64", True),
    ((np.dtype("int64"), 1), "int32", "int64", False),
    ((np.float16(1), 3.0), "float16", "float16", False),
    ((np.zeros(3, np.int8), 3), "int8", "int8", False),
    ((np.zeros(3, np.int8), np.zeros(3, np.int16)), "int16", "int16", False),
    ((np.dtype("int32"), float), "float32", "float64", True),  # Python type = weak
    ((_Weak(np.float32), np.dtype("float16")), "float16", "float16", False),
    ((_Weak(np.int32), np.dtype("uint8")), "uint8", "uint8", False),
    ((_Weak(np.float32), _Weak(np.int32)), "float32", "float64", True),
    ((_Weak(np.float32, weak_type=False), np.dtype("float16")), "float32", "float32", False),
    ((_Tracer(np.float32, True), np.dtype("bfloat16")), "bfloat16", "bfloat16", False),
    ((_Tracer(np.float32, False), np.dtype("bfloat16")), "float32", "float32", False),
    ((np.dtype("float32"),), "float32", "float32", False),
    ((3.0,), "float32", "float64", True),
    ((np.dtype("int8"), np.dtype("int16"), 2.0, 1), "float32", "float64", True),
    ((np.dtype("int8"), np.dtype("float16"), 2.0, 1), "float16", "float16", False),
])
def test_result_type_weak(args, want32, want64, weak, x64):
  got, got_weak = dtypes.result_type(*args, return_weak_type_flag=True)
  assert got == _f(want32, want64, x64)
  assert got_weak == weak
  assert dtypes.result_type(*args) == got


def test_result_type_errors():
  with pytest.raises(ValueError):
    dtypes.result_type()
  with pytest.raises(TypeError):
    dtypes.result_type(dtypes.float0, np.dtype("float32"))


def test_result_type_other_floats():
  f8 = np.dtype(ml_dtypes.float8_e4m3fn)
  assert dtypes.result_type(f8, 2.0) == f8
  assert dtypes.result_type(f8, True) == f8
  assert dtypes.result_type(f8, f8) == f8
  assert dtypes.result_type(dtypes.float0, dtypes.float0) == dtypes.float0


def test_is_weakly_typed():
  assert dtypes.is_weakly_typed(1)
  assert dtypes.is_weakly_typed(1.0)
  assert dtypes.is_weakly_typed(1j)
  assert not dtypes.is_weakly_typed(True)
  assert not dtypes.is_weakly_typed(np.float32(1))
  assert not dtypes.is_weakly_typed(np.float64(1))  # a float subclass, but a numpy scalar
  assert not dtypes.is_weakly_typed(np.zeros(3))
  assert dtypes.is_weakly_typed(_Weak(np.float32))
  assert dtypes.is_weakly_typed(_Tracer(np.float32, True))
  assert not dtypes.is_weakly_typed(_Tracer(np.float32, False))


def test_dtype_of_values(x64):
  assert dtypes.python_scalar_dtypes == {bool: np.dtype("bool"), int: np.dtype("int64"),
                                         float: np.dtype("float64"),
                                         complex: np.dtype("complex128")}
  assert dtypes.dtype(1) == np.int64
  assert dtypes.dtype(1, canonicalize=True) == (np.int64 if x64 else np.int32)
  assert dtypes.dtype(1.0, canonicalize=True) == (np.float64 if x64 else np.float32)
  assert dtypes.dtype(True) == np.bool_
  assert dtypes.dtype(float) == np.float64
  assert dtypes.dtype(np.float16) == np.float16
  assert dtypes.dtype(dtypes.bfloat16) == np.dtype(ml_dtypes.bfloat16)
  assert dtypes.dtype("int8") == np.int8
  assert dtypes.dtype(np.zeros(2, np.uint16)) == np.uint16
  assert dtypes.dtype(np.float32(3)) == np.float32
  assert dtypes.dtype(_Weak(np.complex64)) == np.complex64
  with pytest.raises(ValueError):
    dtypes.dtype(None)


def test_python_scalar_helpers():
  assert dtypes.is_python_scalar(1) and dtypes.is_python_scalar(True)
  assert not dtypes.is_python_scalar(np.float32(1))
  assert dtypes.scalar_type_of(1) is int
  assert dtypes.scalar_type_of(np.zeros(2, np.bool_)) is bool
  assert dtypes.scalar_type_of(np.zeros(2, ml_dtypes.bfloat16)) is float
  assert dtypes.scalar_type_of(np.complex64(1)) is complex
  assert dtypes.scalar_type_of(np.uint8(1)) is int


# ---- kinds, issubdtype, finfo ---------------------------------------------

def test_issubdtype_bfloat16():
  for a in (dtypes.bfloat16, np.dtype(dtypes.bfloat16), "bfloat16"):
    assert dtypes.issubdtype(a, np.floating)
    assert dtypes.issubdtype(a, np.inexact)
    assert dtypes.issubdtype(a, np.number)
    assert dtypes.issubdtype(a, dtypes.bfloat16)
    assert not dtypes.issubdtype(a, np.integer)
    assert not dtypes.issubdtype(a, np.complexfloating)
    assert not dtypes.issubdtype(a, np.float32)
    assert not dtypes.issubdtype(a, np.float16)
  assert not dtypes.issubdtype(np.float32, dtypes.bfloat16)
  assert dtypes.issubdtype(np.float32, np.floating)
  assert dtypes.issubdtype(np.int8, np.integer)
  assert not dtypes.issubdtype(np.bool_, np.integer)
  assert dtypes.issubdtype(np.floating, np.inexact)
  assert not dtypes.issubdtype(dtypes.float0, np.inexact)


def test_kind_predicates():
  assert dtypes.is_floating(dtypes.bfloat16) and dtypes.is_floating(np.float16)
  assert not dtypes.is_floating(np.int32) and not dtypes.is_floating(np.complex64)
  assert dtypes.is_integer(np.uint8) and dtypes.is_integer("int64")
  assert not dtypes.is_integer(np.bool_)
  assert dtypes.is_unsigned(np.uint32) and not dtypes.is_unsigned(np.int32)
  assert dtypes.is_complex(np.complex128) and not dtypes.is_complex(np.float64)
  assert dtypes.is_bool(np.bool_) and dtypes.is_bool(bool) and not dtypes.is_bool(np.int8)
  assert dtypes.is_inexact(dtypes.bfloat16) and dtypes.is_inexact(np.complex64)
  assert not dtypes.is_inexact(np.int8)


def test_finfo_iinfo():
  fi = dtypes.finfo(dtypes.bfloat16)
  assert fi.bits == 16 and fi.nmant == 7
  assert float(fi.eps) == 2.0 ** -7
  assert dtypes.finfo(np.float32).eps == np.finfo(np.float32).eps
  assert dtypes.iinfo(np.int8).min == -128
  assert dtypes.iinfo(np.uint16).max == 65535


def test_conversions(x64):
  assert dtypes.to_real_dtype(np.complex64) == np.float32
  assert dtypes.to_real_dtype(np.complex128) == np.float64
  assert dtypes.to_real_dtype(np.float16) == np.float16
  assert dtypes.to_complex_dtype(np.float32) == np.complex64
  assert dtypes.to_complex_dtype(np.float64) == np.complex128
  assert dtypes.to_complex_dtype(dtypes.bfloat16) == np.complex64
  assert dtypes.to_complex_dtype(np.complex64) == np.complex64
  # JAX 0.10.2: ints of <= 32 bits and bool become float32 even with x64 on (issue 13)
  assert dtypes.to_complex_dtype(np.int32) == np.complex64
  assert dtypes.to_complex_dtype(np.int64) == (np.complex128 if x64 else np.complex64)
  assert dtypes.to_inexact_dtype(np.int8) == np.float32
  assert dtypes.to_inexact_dtype(np.bool_) == np.float32
  assert dtypes.to_inexact_dtype(np.int64) == (np.float64 if x64 else np.float32)
  assert dtypes.to_inexact_dtype(np.float16) == np.float16


# ---- float0 ------------------------------------------------------------------

def test_float0():
  assert dtypes.float0 == np.dtype([("float0", np.void, 0)])
  assert dtypes.float0.itemsize == 0
  z = np.zeros((2, 3), dtypes.float0)
  assert z.shape == (2, 3) and z.nbytes == 0 and z.dtype == dtypes.float0
  assert dtypes.float0 != np.float32 and dtypes.float0 != np.bool_
  assert dtypes.dtype(z) == dtypes.float0
  assert not dtypes.is_inexact(dtypes.float0)


# ---- the narrowing warning ---------------------------------------------------

_GOTCHAS = ("To enable more dtypes, set the jax_enable_x64 configuration option or the "
            "JAX_ENABLE_X64 shell environment variable. See "
            "https://github.com/google/jax#current-gotchas for more.")


def test_truncation_warning_text(x32):
  with pytest.warns(UserWarning) as rec:
    dtypes.check_user_dtype_supported(np.int64, "arange")
  assert str(rec[0].message) == (
      "Explicitly requested dtype <class 'numpy.int64'> requested in arange is not "
      "available, and will be truncated to dtype int32. " + _GOTCHAS)
  with pytest.warns(UserWarning) as rec:
    dtypes.check_user_dtype_supported(np.dtype("float64"))
  assert str(rec[0].message) == (
      "Explicitly requested dtype float64 is not available, and will be truncated to "
      "dtype float32. " + _GOTCHAS)
  with pytest.warns(UserWarning, match="truncated to dtype complex64"):
    dtypes.check_user_dtype_supported("complex128", "zeros")
  with pytest.warns(UserWarning, match="truncated to dtype uint32"):
    dtypes.check_user_dtype_supported(np.uint64, "zeros")


def test_no_truncation_warning():
  old = config.jax_enable_x64
  try:
    for flag in (False, True):
      config.update("jax_enable_x64", flag)
      with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in (None, int, float, complex, bool, np.float32, np.int32, dtypes.bfloat16,
                  np.float16, np.uint8, "int16"):
          dtypes.check_user_dtype_supported(t, "zeros")
        if flag:
          dtypes.check_user_dtype_supported(np.float64, "zeros")
          dtypes.check_user_dtype_supported(np.int64)
  finally:
    config.update("jax_enable_x64", old)


def test_non_numeric_dtype_rejected():
  with pytest.raises(TypeError, match="only supports number and bool dtypes"):
    dtypes.check_user_dtype_supported(np.dtype("U3"), "zeros")


# ---- speed -------------------------------------------------------------------

def test_hot_paths_are_fast(x32):
  f32, i32 = np.dtype("float32"), np.dtype("int32")
  dtypes.canonicalize_dtype(f32)
  dtypes.result_type(f32, i32)
  n = 20000
  t_canon = min(timeit.repeat(lambda: dtypes.canonicalize_dtype(f32), number=n, repeat=3)) / n
  t_result = min(timeit.repeat(lambda: dtypes.result_type(f32, i32), number=n, repeat=3)) / n
  # Generous bounds (dict lookups take well under a microsecond); they only catch
  # an accidental fall back to recomputing the lattice on every call.
  assert t_canon < 5e-6, t_canon
  assert t_result < 1e-5, t_result


def test_public_module():
  import tracejax.dtypes as public
  for name in ("bfloat16", "float0", "canonicalize_dtype", "promote_types", "result_type",
               "issubdtype", "finfo", "iinfo", "is_weakly_typed", "python_scalar_dtypes",
               "check_user_dtype_supported", "all_dtypes"):
    assert getattr(public, name) is getattr(dtypes, name)
