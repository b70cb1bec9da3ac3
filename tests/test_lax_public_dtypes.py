"""The public `tracejax.lax` checks dtypes as JAX 0.10.2's `jax.lax` does (issue 13).

A Python scalar operand has its own default dtype (float32/int32 with x64 off,
float64/int64 with x64 on; weakly typed, bool strong) and then must be accepted by
the operator and equal the other operands' dtype; unary operators reject ints. The
lenient `tracejax._src.lax` functions that the library uses are unchanged.

Every message below was recorded from JAX 0.10.2 (not computed at test time).
"""
import numpy as np
import pytest

import tracejax
import tracejax.lax as lax
import tracejax.numpy as jnp
from tracejax._src.lax import elementwise as lenient
from tracejax._src.lax import public_checks


F32 = np.ones(3, np.float32)
F16 = np.ones(3, np.float16)
I32 = np.ones(3, np.int32)
U8 = np.ones(3, np.uint8)
B = np.ones(3, bool)
C64 = np.ones(3, np.complex64)


def _tip(fn):
  return f" (Tip: jnp.{fn} is a similar function that does automatic type promotion on inputs)."


def _same(name, dts, tip=None):
  return (f"lax.{name} requires arguments to have the same dtypes, got {dts}."
          + (_tip(tip) if tip else ""))


# (call, the message JAX 0.10.2 gives with x64 off)
ERRORS_X32 = [
    (lambda: lax.add(F32, 2), _same("add", "float32, int32", "add")),
    (lambda: lax.add(2, F32), _same("add", "int32, float32", "add")),
    (lambda: lax.add(F16, 2.0), _same("add", "float16, float32", "add")),
    (lambda: lax.add(U8, 2), _same("add", "uint8, int32", "add")),
    (lambda: lax.add(U8, 300), _same("add", "uint8, int32", "add")),
    (lambda: lax.add(1, 2.0), _same("add", "int32, float32", "add")),
    (lambda: lax.add(C64, 2.0), _same("add", "complex64, float32", "add")),
    (lambda: lax.add(F32, 2j), _same("add", "float32, complex64", "add")),
    (lambda: lax.mul(I32, 2.0), _same("mul", "int32, float32", "multiply")),
    (lambda: lax.sub(F32, -1), _same("sub", "float32, int32", "subtract")),
    (lambda: lax.max(F32, True), _same("max", "float32, bool", "maximum")),
    (lambda: lax.max(True, 1), _same("max", "bool, int32", "maximum")),
    (lambda: lax.eq(F32, 1), _same("eq", "float32, int32", "equal")),
    (lambda: lax.eq(True, 1), _same("eq", "bool, int32", "equal")),
    (lambda: lax.lt(I32, 1.0), _same("lt", "int32, float32")),
    (lambda: lax.rem(F32, 2), _same("rem", "float32, int32")),
    (lambda: lax.shift_left(U8, 1), _same("shift_left", "uint8, int32", "left_shift")),
    (lambda: lax.bitwise_and(I32, True), _same("and", "int32, bool")),
    (lambda: lax.bitwise_xor(True, 1), _same("xor", "bool, int32")),
    (lambda: lax.mulhi(U8, 2), _same("mulhi", "uint8, int32")),
    (lambda: lax.nextafter(F16, 1.0), _same("nextafter", "float16, float32", "nextafter")),
    (lambda: lax.atan2(F32, 1j), _same("atan2", "float32, complex64", "arctan2")),
    (lambda: lax.clamp(0, F32, 1.0), _same("clamp", "int32, float32, float32")),
    (lambda: lax.clamp(0., F16, 1.0), _same("clamp", "float32, float16, float32")),
    (lambda: lax.clamp(2, I32, 1.0), _same("clamp", "int32, int32, float32")),
    (lambda: lax.add(I32, True),
     "add does not accept dtype bool at position 1. Accepted dtypes at position 1 are "
     "subtypes of integer, floating, complexfloating."),
    (lambda: lax.add(True, False),
     "add does not accept dtype bool at position 0. Accepted dtypes at position 0 are "
     "subtypes of integer, floating, complexfloating."),
    (lambda: lax.atan2(F32, 1),
     "atan2 does not accept dtype int32 at position 1. Accepted dtypes at position 1 are "
     "subtypes of floating, complexfloating."),
    (lambda: lax.complex(1, 2),
     "complex does not accept dtype int32 at position 0. Accepted dtypes at position 0 are "
     "subtypes of float32, float64."),
    (lambda: lax.igamma(F32, 1),
     "igamma does not accept dtype int32 at position 1. Accepted dtypes at position 1 are "
     "subtypes of floating."),
    (lambda: lax.betainc(1, 2.0, F32),
     "regularized_incomplete_beta does not accept dtype int32 at position 0. Accepted "
     "dtypes at position 0 are subtypes of floating."),
    (lambda: lax.shift_right_logical(True, 1),
     "shift_right_logical does not accept dtype bool at position 0. Accepted dtypes at "
     "position 0 are subtypes of integer."),
    (lambda: lax.lt(1j, 1j),
     "lt does not accept dtype complex64 at position 0. Accepted dtypes at position 0 are "
     "subtypes of integer, floating, bool."),
    # unary operators: no position
    (lambda: lax.log(I32), "log does not accept dtype int32. Accepted dtypes are subtypes "
     "of floating, complexfloating."),
    (lambda: lax.log1p(2), "log1p does not accept dtype int32. Accepted dtypes are subtypes "
     "of floating, complexfloating."),
    (lambda: lax.sin(True), "sin does not accept dtype bool. Accepted dtypes are subtypes "
     "of floating, complexfloating."),
    (lambda: lax.floor(1), "floor does not accept dtype int32. Accepted dtypes are subtypes "
     "of floating."),
    (lambda: lax.abs(U8), "abs does not accept dtype uint8. Accepted dtypes are subtypes of "
     "floating, complexfloating, signedinteger."),
    (lambda: lax.bitwise_not(2.0), "not does not accept dtype float32. Accepted dtypes are "
     "subtypes of integer, bool."),
    (lambda: lax.conj(1), "conj does not accept dtype int32. Accepted dtypes are subtypes of "
     "float32, complexfloating, float64."),
    (lambda: lax.round(1), "round does not accept dtype int32. Accepted dtypes are subtypes "
     "of floating."),
    (lambda: lax.reduce_precision(2, 5, 10), "reduce_precision does not accept dtype int32. "
     "Accepted dtypes are subtypes of floating."),
    (lambda: lax.integer_pow(True, 2), "integer_pow does not accept dtype bool. Accepted "
     "dtypes are subtypes of integer, floating, complexfloating."),
    (lambda: lax.integer_pow(2, -1),
     "Integers cannot be raised to negative powers, got integer_pow(~int32[], -1)"),
    (lambda: lax.reciprocal(2),
     "Integers cannot be raised to negative powers, got integer_pow(~int32[], -1)"),
    # pow: an integer exponent is fine, an inexact one must match
    (lambda: lax.pow(2, F32), "pow does not accept dtype int32 at position 0. Accepted "
     "dtypes at position 0 are subtypes of floating, complexfloating."),
    (lambda: lax.pow(F32, True), "pow does not accept dtype bool at position 1. Accepted "
     "dtypes at position 1 are subtypes of integer, floating, complexfloating."),
    (lambda: lax.pow(F16, 2.0),
     "the first argument to pow must have an inexact dtype (float or complex), and the "
     "second argument must have an inexact or integer dtype, and two inexact dtypes must "
     "match, but got float16 and float32 respectively."),
    # selection: the cases in select_n order (on_false first for select)
    (lambda: lax.select(True, 1.0, 2), _same("select", "int32, float32", "where")),
    (lambda: lax.select(B[0], F16[0], 2.0), _same("select", "float32, float16", "where")),
    (lambda: lax.select_n(True, 1.0, 2), _same("select", "float32, int32", "where")),
    (lambda: lax.select_n(1.5, F32, F32),
     "select `which` must be boolean or integer type, got float32."),
    (lambda: lax.select_n(True, 1.0, 2.0, 3.0),
     "select with boolean `which` cannot have > 2 cases."),
    # padding values, update dtypes, start indices
    (lambda: lax.pad(F32, 0, [(1, 1, 0)]),
     "pad operand and padding_value must be same dtype: got float32 and int32."),
    (lambda: lax.pad(I32, True, [(1, 1, 0)]),
     "pad operand and padding_value must be same dtype: got int32 and bool."),
    (lambda: lax.pad(2, 0.0, []),
     "pad operand and padding_value must be same dtype: got int32 and float32."),
    (lambda: lax.dynamic_update_index_in_dim(F32, 1, 1, 0),
     _same("dynamic_update_slice", "float32, int32")),
    (lambda: lax.dynamic_update_slice(I32, F32[:1], (1,)),
     _same("dynamic_update_slice", "int32, float32")),
    (lambda: lax.dynamic_slice(np.ones((3, 3)), (1, np.int8(1)), (2, 2)),
     "index arguments to dynamic_slice must be integers of the same type, got: int32, int8"),
    (lambda: lax.dynamic_slice(np.ones((3, 3)), [1, 1.0], (2, 2)),
     "index arguments to dynamic_slice must be integers of the same type, got: int32, "
     "float32"),
    (lambda: lax.dynamic_slice(F32, (True,), (2,)),
     "index arguments to dynamic_slice must be integers of the same type, got: bool"),
    (lambda: lax.dynamic_slice_in_dim(F32, 1.0, 2),
     "index arguments to dynamic_slice must be integers of the same type, got: float32"),
    (lambda: lax.dynamic_update_slice(np.ones((3, 3)), np.ones((1, 1)), (1, True)),
     "index arguments to dynamic_update_slice must be integers of the same type, got int32, "
     "bool"),
    (lambda: lax.dynamic_update_slice(F32, F32[:1], (1.0,)),
     "index arguments to dynamic_update_slice must be integers of the same type, got "
     "float32"),
    (lambda: lax.concatenate([F32, F16], 0), _same("concatenate", "float32, float16",
                                                   "concatenate")),
]


@pytest.mark.parametrize("i", range(len(ERRORS_X32)))
def test_errors_x64_off(i):
  call, msg = ERRORS_X32[i]
  with pytest.raises(TypeError) as e:
    call()
  assert str(e.value) == msg


ERRORS_X64 = [
    (lambda: lax.add(F32, 2.0), _same("add", "float32, float64", "add")),
    (lambda: lax.add(I32, 2), _same("add", "int32, int64", "add")),
    (lambda: lax.add(C64, 2j), _same("add", "complex64, complex128", "add")),
    (lambda: lax.max(F32, float("nan")), _same("max", "float32, float64", "maximum")),
    (lambda: lax.clamp(0., F32, 1.0), _same("clamp", "float64, float32, float64")),
    (lambda: lax.complex(F32, 1.0), _same("complex", "float32, float64")),
    (lambda: lax.igamma(F32, 1.0), _same("igamma", "float32, float64")),
    (lambda: lax.bitwise_or(I32, 1), _same("or", "int32, int64")),
    (lambda: lax.div(2.0, F32), _same("div", "float64, float32", "divide")),
    (lambda: lax.select(True, F32[0], 2.0), _same("select", "float64, float32", "where")),
    (lambda: lax.log(2), "log does not accept dtype int64. Accepted dtypes are subtypes of "
     "floating, complexfloating."),
    (lambda: lax.pow(F32, 2.0),
     "the first argument to pow must have an inexact dtype (float or complex), and the "
     "second argument must have an inexact or integer dtype, and two inexact dtypes must "
     "match, but got float32 and float64 respectively."),
    (lambda: lax.pad(F32, 0.0, [(1, 1, 0)]),
     "pad operand and padding_value must be same dtype: got float32 and float64."),
    (lambda: lax.dynamic_slice(np.ones((3, 3)), (1, jnp.int32(1)), (2, 2)),
     "index arguments to dynamic_slice must be integers of the same type, got: int64, int32"),
    (lambda: lax.dynamic_update_index_in_dim(F32, 1.0, 1, 0),
     _same("dynamic_update_slice", "float32, float64")),
]


@pytest.mark.parametrize("i", range(len(ERRORS_X64)))
def test_errors_x64_on(i, x64):
  call, msg = ERRORS_X64[i]
  with pytest.raises(TypeError) as e:
    call()
  assert str(e.value) == msg


def _aval(x):
  return ("~" if x.aval.weak_type else "") + x.aval.str_short()


def test_accepted_x64_off():
  # What JAX accepts, with its dtypes and weak types.
  assert _aval(lax.add(jnp.asarray(F32), 2.0)) == "float32[3]"
  assert _aval(lax.add(1, 2)) == "~int32[]"
  assert _aval(lax.add(1.0, 2.0)) == "~float32[]"
  assert _aval(lax.add(jnp.asarray(C64), 2j)) == "complex64[3]"
  assert _aval(lax.clamp(0., jnp.asarray(F32), 1.0)) == "float32[3]"
  assert _aval(lax.bitwise_not(True)) == "bool[]"
  assert _aval(lax.pow(jnp.asarray(F32), 2)) == "float32[3]"
  assert _aval(lax.pow(2.0, 2)) == "~float32[]"
  assert _aval(lax.pow(2j, 2)) == "~complex64[]"
  assert _aval(lax.pow(2.0, jnp.asarray(F32))) == "float32[3]"
  assert _aval(lax.integer_pow(2, 2)) == "~int32[]"
  assert _aval(lax.select_n(1, 1.0, 2.0)) == "~float32[]"
  assert _aval(lax.complex(1.0, 2.0)) == "~complex64[]"
  assert _aval(lax.eq(jnp.asarray(B), True)) == "bool[3]"
  assert _aval(lax.pad(jnp.asarray(B), True, [(1, 1, 0)])) == "bool[5]"
  # NumPy scalars and arrays keep their own (canonical) dtype: np.float64 is float32 here.
  assert _aval(lax.add(np.float64(1.0), jnp.asarray(F32))) == "float32[3]"
  assert _aval(lax.pad(jnp.asarray(F32), np.float64(0), [(1, 1, 0)])) == "float32[5]"
  assert _aval(lax.dynamic_update_index_in_dim(jnp.asarray(F32), 1.0, 1, 0)) == "float32[3]"
  assert _aval(lax.dynamic_slice_in_dim(jnp.ones((3, 3)), jnp.int8(1), 2, 0)) == "float32[2,3]"
  np.testing.assert_array_equal(lax.max(jnp.asarray(F32), float("inf")), np.inf)
  np.testing.assert_array_equal(lax.sub(2.0, jnp.asarray(F32)), [1, 1, 1])


def test_accepted_x64_on(x64):
  f64 = jnp.ones(3, jnp.float64)
  assert _aval(lax.add(f64, 2.0)) == "float64[3]"
  assert _aval(lax.add(jnp.ones(3, jnp.int64), 2)) == "int64[3]"
  assert _aval(lax.add(1, 2)) == "~int64[]"
  assert _aval(lax.pow(jnp.asarray(F32), 2)) == "float32[3]"
  assert _aval(lax.complex(1.0, 2.0)) == "~complex128[]"
  assert _aval(lax.dynamic_slice(jnp.ones((3, 3)), (1, jnp.int64(1)), (2, 2))) == "float64[2,2]"


def test_other_error_types():
  with pytest.raises(OverflowError, match="Python int 1099511627776 too large to convert "
                     "to int32"):
    lax.add(jnp.asarray(I32), 2 ** 40)
  with pytest.raises(ValueError, match=r"padding_value must be a scalar; got "
                     r"np.shape\(padding_value\)=\(1,\)"):
    lax.pad(jnp.asarray(F32), jnp.asarray(F32)[:1], [(1, 1, 0)])
  with pytest.raises(ValueError, match="select_n.. must have at least one case"):
    lax.select_n(jnp.asarray(B))
  with pytest.raises(ValueError, match="Invalid argument to dtype: None."):
    lax.full((2,), None)


def test_shape_errors_come_first():
  # JAX checks shapes before dtypes: with three operands a shape error wins.
  with pytest.raises(TypeError, match="select cases must have the same shapes"):
    lax.select_n(jnp.asarray(B), jnp.asarray(F32), 1)
  with pytest.raises(TypeError, match="min.shape"):
    lax.clamp(jnp.asarray(F32)[:2], jnp.asarray(F32), 1)
  with pytest.raises(TypeError, match="incompatible shapes"):
    lax.add(jnp.asarray(F32)[:2], jnp.asarray(I32))


def test_under_transformations():
  x = jnp.asarray(F32)
  # Tracers are checked like arrays; accepted scalars still stage inline.
  with pytest.raises(TypeError, match=r"lax\.add requires arguments to have the same"):
    tracejax.jit(lambda v: lax.add(v, 2))(x)
  with pytest.raises(TypeError, match="log does not accept dtype int32. Accepted"):
    tracejax.vmap(lax.log)(jnp.asarray(I32))
  assert "mul a 3.0" in str(tracejax.make_jaxpr(lambda v: lax.mul(v, 3.0))(x))
  np.testing.assert_allclose(tracejax.grad(lambda v: lax.mul(v, 3.0))(2.0), 3.0)
  np.testing.assert_allclose(tracejax.vmap(lambda v: lax.clamp(0.5, v, 1.0))(x), F32)
  np.testing.assert_allclose(tracejax.jit(lambda v: lax.pow(v, 2))(x * 3), 9 * F32)


def test_library_functions_stay_lenient():
  # tracejax's own code calls the `_src` functions, which convert Python scalars.
  assert lenient.add(np.ones(3, np.float16), 2.0).dtype == np.float16
  assert lenient.add(np.ones(3, np.int8), 2).dtype == np.int8
  assert jnp.add(jnp.ones(3, jnp.float16), 2).dtype == np.float16  # jnp promotes as usual
  assert lax.add is not lenient.add and lax.add.__wrapped__ is lenient.add
  assert lax.add.__doc__ == lenient.add.__doc__


def test_every_checked_name_is_public():
  wrapped = public_checks.public(vars(lax))
  assert set(wrapped) <= set(lax.__all__)
  assert {"add", "pow", "select", "select_n", "clamp", "pad", "dynamic_slice",
          "integer_pow", "betainc", "conj"} <= set(wrapped)
  for name in wrapped:
    assert getattr(lax, name).__doc__, name
