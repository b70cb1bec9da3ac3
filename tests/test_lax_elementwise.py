"""Elementwise lax primitives: one record per primitive, checked against NumPy/SciPy.

Each record names the wrapper, its reference (`lax/reference.py`), the dtypes it is
run on and how its inputs are drawn. `check_primitive` runs eager vs reference, jit
vs eager and abstract evaluation vs the real result. Each record runs every listed
dtype at shape (2, 3), plus shapes () and (3,) on its first dtype, plus (for n-ary
ops) a rank-0 operand broadcast against a (2, 3) one. Compiles dominate the run time,
so most records list one or two dtypes of each kind they accept; a handful sweep all.

The same records then drive the transformation rules: `check_grads` (forward and
reverse, order 2, float64; complex reverse mode with JAX's check_vjp convention) and
`vmap` against a Python loop over several `in_axes`.
"""
import contextlib
import functools
import types
import warnings
import zlib

import numpy as np
import pytest

import tracejax.numpy  # noqa: F401  (as `import jax` does: the Array methods, x[i] and ==)

from lax_test_util import (ALL, BOOL, COMPLEX, FLOATS, INTS, NUMBER, assert_close, bfloat16,
                           check_primitive, rand)
from tracejax._src import dtypes
from tracejax._src.api import make_jaxpr, vjp, vmap
from tracejax._src.config import config
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering
from tracejax._src.jit import jit
from tracejax._src.lax import elementwise as _lax_elementwise
from tracejax._src.lax import reference as ref
from tracejax._src.lax import special as _lax_special
from tracejax._src.runtime.array import Array
from tracejax._src.test_util import check_grads, numerical_jvp

# The two elementwise families (elementwise.py, and special.py for the special
# functions) under one name, as `tracejax.lax` has them.
lax = types.SimpleNamespace(**{**vars(_lax_elementwise), **vars(_lax_special),
                               "__all__": _lax_elementwise.__all__ + _lax_special.__all__})

d = np.dtype
f16, f32, f64 = d(np.float16), d(np.float32), d(np.float64)
c64, c128 = d(np.complex64), d(np.complex128)
i8, i16, i32, i64 = d(np.int8), d(np.int16), d(np.int32), d(np.int64)
u8, u16, u32, u64 = d(np.uint8), d(np.uint16), d(np.uint32), d(np.uint64)
b1 = d(np.bool_)

# Samples with one or two dtypes of each kind (64-bit ones included).
INT_S = [i8, i32, u16, u64]
FLOAT_S = [bfloat16, f32, f64]
NUM_S = [i32, u8] + [f16, f32, f64] + [c64]
ANY_S = [b1, i16, u32, f32, bfloat16, c128]
ORDERED = BOOL + [i8, i64, u32, bfloat16, f32]


@contextlib.contextmanager
def x64_for(*dts):
  """Enable x64 while any 64-bit dtype is involved (they only exist with it on)."""
  need = any(np.dtype(t).itemsize == 8 and np.dtype(t).kind in "iuf" or np.dtype(t) == c128
             for t in dts)
  old = config.jax_enable_x64
  if need:
    config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


# ---- input generation ----

def _draw(rng, shape, dtype, kind):
  dtype = np.dtype(dtype)
  if kind == "shift":  # shift amounts, including some at or past the bit width
    bits = dtype.itemsize * 8
    return rng.choice([0, 1, 3, bits - 1, bits, bits + 2], shape).astype(dtype)
  if kind == "ge1":
    return rng.uniform(1.0, 4.0, shape).astype(dtype)
  if kind == "gt1":
    return rng.uniform(1.5, 4.0, shape).astype(dtype)
  if kind == "unit01":
    return rng.uniform(0.05, 0.95, shape).astype(dtype)
  if kind == "order":  # polygamma's integer order
    return rng.integers(0, 4, shape).astype(dtype)
  if kind == "gamma_a":
    return rng.uniform(0.5, 6.0, shape).astype(dtype)
  if kind == "gamma_x":
    return rng.uniform(0.1, 8.0, shape).astype(dtype)
  if kind == "bits" and dtype != np.bool_:  # any bit pattern of an integer type
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
  if kind == "halves":  # ties for round
    return (rng.integers(-6, 7, shape) + 0.5 * rng.integers(0, 2, shape)).astype(dtype)
  if kind == "special":  # finite values, infinities and NaNs
    x = rng.normal(0, 2, shape).astype(np.float64)
    flat = x.reshape(-1)
    flat[::3] = np.inf
    flat[1::4] = np.nan
    return x.astype(dtype)
  return rand(rng, shape, dtype, kind)


class Rec:
  def __init__(self, name, fun, reference, dtypes, kinds=("default",), tol=None,
               nary_broadcast=True, arg_dtypes=None, shapes=True):
    self.name, self.fun, self.ref, self.dtypes = name, fun, reference, list(dtypes)
    self.kinds, self.tol, self.arg_dtypes = tuple(kinds), tol, arg_dtypes
    self.nary_broadcast = nary_broadcast and len(kinds) > 1
    self.shapes = shapes  # also run shapes () and (3,)? (costly for the loop compositions)

  def args(self, rng, shape, dtype, scalar_first=False):
    arg_dts = self.arg_dtypes(dtype) if self.arg_dtypes else [dtype] * len(self.kinds)
    out = []
    for i, (k, t) in enumerate(zip(self.kinds, arg_dts)):
      s = () if (scalar_first and i == 0) else shape
      out.append(_draw(rng, s, t, k))
    return out


def R(*a, **k):
  return Rec(*a, **k)


TOL_SPECIAL = {f32: 1e-4, f64: 1e-9, f16: 1e-2, bfloat16: 5e-2}

RECORDS = [
    # arithmetic
    R("add", lax.add, ref.add, NUMBER, ["default"] * 2),
    R("sub", lax.sub, ref.sub, NUM_S, ["default"] * 2),
    R("mul", lax.mul, ref.mul, NUMBER, ["default"] * 2),
    R("div", lax.div, ref.div, NUM_S + [i8, u64, bfloat16, c128], ["default", "nonzero"]),
    R("rem", lax.rem, ref.rem, INT_S + FLOAT_S, ["default", "nonzero"]),
    R("neg", lax.neg, ref.neg, [i8, i64, u32] + FLOATS + COMPLEX),
    R("sign", lax.sign, ref.sign, [i8, i64, u8, u32, bfloat16, f32, f64] + COMPLEX),
    R("abs", lax.abs, ref.abs, [i8, i32, i64] + FLOATS + COMPLEX),
    R("max", lax.max, ref.max, ALL, ["default"] * 2),
    R("min", lax.min, ref.min, ANY_S + [i8, u64], ["default"] * 2),
    R("pow", lax.pow, ref.pow, FLOATS + COMPLEX, ["positive", "small"],
      tol={f32: 1e-4, c64: 1e-4, f16: 1e-2, f64: 1e-10, c128: 1e-10}),
    R("pow_int_exponent", lax.pow, ref.pow, [f32, f64, c64, bfloat16], ["nonzero", "default"],
      arg_dtypes=lambda t: [t, i32], tol={f32: 1e-4, c64: 1e-4, f64: 1e-10}),
    R("integer_pow_3", functools.partial(lax.integer_pow, y=3),
      functools.partial(ref.integer_pow, y=3), [i8, i32, u16] + FLOAT_S + [c64]),
    R("integer_pow_neg5", functools.partial(lax.integer_pow, y=-5),
      functools.partial(ref.integer_pow, y=-5), [f16, f32, c128], ["nonzero"],
      tol={f16: 5e-3, f32: 5e-5}),
    R("integer_pow_0", functools.partial(lax.integer_pow, y=0),
      functools.partial(ref.integer_pow, y=0), [i32, f32]),
    R("reciprocal", lax.reciprocal, ref.reciprocal, FLOAT_S + COMPLEX, ["nonzero"]),
    R("square", lax.square, ref.square, [i8, i32, u32, f16, f32, f64, c64, c128]),
    R("sqrt", lax.sqrt, ref.sqrt, FLOATS + COMPLEX, ["positive"]),
    R("sqrt_complex_plane", lax.sqrt, ref.sqrt, COMPLEX),
    R("rsqrt", lax.rsqrt, ref.rsqrt, FLOAT_S + [c64], ["positive"]),
    R("cbrt", lax.cbrt, ref.cbrt, FLOATS),
    # exponentials and logarithms
    R("exp", lax.exp, ref.exp, FLOATS + COMPLEX, ["small"]),
    R("exp2", lax.exp2, ref.exp2, FLOAT_S + [c64]),
    R("log", lax.log, ref.log, FLOATS + [c64], ["positive"]),
    R("log_complex_plane", lax.log, ref.log, COMPLEX),
    R("log1p", lax.log1p, ref.log1p, FLOAT_S + [c64], ["unit"]),
    R("expm1", lax.expm1, ref.expm1, FLOAT_S + [c64], ["small"]),
    R("tanh", lax.tanh, ref.tanh, FLOATS + COMPLEX, ["small"]),
    R("logistic", lax.logistic, ref.logistic, FLOATS + [c64]),
    # trigonometric and hyperbolic
    R("sin", lax.sin, ref.sin, FLOATS + COMPLEX, ["small"]),
    R("cos", lax.cos, ref.cos, FLOATS + COMPLEX, ["small"]),
    R("tan", lax.tan, ref.tan, FLOAT_S + [f16, c64, c128], ["unit"]),
    R("asin", lax.asin, ref.asin, FLOAT_S + [c64, c128], ["unit"]),
    R("acos", lax.acos, ref.acos, FLOAT_S + [c64, c128], ["unit"]),
    R("atan", lax.atan, ref.atan, FLOAT_S + [c64], ["default"]),
    R("atan2", lax.atan2, ref.atan2, FLOATS, ["default"] * 2),
    R("sinh", lax.sinh, ref.sinh, FLOAT_S + [c64], ["small"]),
    R("cosh", lax.cosh, ref.cosh, FLOAT_S + [c64], ["small"]),
    R("asinh", lax.asinh, ref.asinh, FLOAT_S + [c64], ["default"]),
    R("acosh", lax.acosh, ref.acosh, FLOAT_S + [c64], ["ge1"]),
    R("atanh", lax.atanh, ref.atanh, FLOAT_S + [c64], ["unit"]),
    # rounding and floating-point structure
    R("floor", lax.floor, ref.floor, FLOATS),
    R("ceil", lax.ceil, ref.ceil, FLOAT_S),
    R("round_away", lax.round, ref.round, FLOATS, ["halves"]),
    R("round_even",
      functools.partial(lax.round, rounding_method=lax.RoundingMethod.TO_NEAREST_EVEN),
      functools.partial(ref.round, rounding_method=1), FLOAT_S, ["halves"]),
    R("nextafter", lax.nextafter, ref.nextafter, FLOATS, ["default"] * 2),
    R("is_finite", lax.is_finite, ref.is_finite, FLOATS, ["special"]),
    # special functions
    R("erf", lax.erf, ref.erf, FLOATS),
    R("erfc", lax.erfc, ref.erfc, FLOAT_S, ["small"]),
    R("erf_inv", lax.erf_inv, ref.erf_inv, FLOAT_S, ["unit"], tol=TOL_SPECIAL),
    R("lgamma", lax.lgamma, ref.lgamma, FLOATS, ["positive"], tol=TOL_SPECIAL),
    R("digamma", lax.digamma, ref.digamma, FLOAT_S, ["positive"], tol=TOL_SPECIAL),
    R("polygamma", lax.polygamma, ref.polygamma, [f32, f64], ["order", "positive"],
      tol=TOL_SPECIAL),
    R("zeta", lax.zeta, ref.zeta, [f32, f64], ["gt1", "positive"], tol=TOL_SPECIAL),
    R("igamma", lax.igamma, ref.igamma, [f32, bfloat16, f16, f64], ["gamma_a", "gamma_x"],
      tol=TOL_SPECIAL),
    # The loop compositions compile slowly (~0.5 s): igamma alone sweeps dtypes and shapes.
    R("igammac", lax.igammac, ref.igammac, [f32, f64], ["gamma_a", "gamma_x"],
      tol=TOL_SPECIAL, shapes=False, nary_broadcast=False),
    R("igamma_grad_a", lax.igamma_grad_a, ref.igamma_grad_a, [f32, f64],
      ["gamma_a", "gamma_x"], tol={f32: 2e-4, f64: 1e-7}, shapes=False, nary_broadcast=False),
    R("random_gamma_grad", lax.random_gamma_grad, ref.random_gamma_grad, [f32, f64],
      ["gamma_a", "gamma_x"], tol={f32: 5e-4, f64: 1e-7}, shapes=False,
      nary_broadcast=False),
    R("betainc", lax.betainc, ref.betainc, [f32, bfloat16, f64],
      ["gamma_a", "gamma_a", "unit01"], tol=TOL_SPECIAL, shapes=False),
    R("bessel_i0e", lax.bessel_i0e, ref.bessel_i0e, FLOATS, ["default"], tol=TOL_SPECIAL),
    R("bessel_i1e", lax.bessel_i1e, ref.bessel_i1e, FLOAT_S, ["default"], tol=TOL_SPECIAL),
    # comparisons
    R("eq", lax.eq, ref.eq, ALL, ["default"] * 2),
    R("ne", lax.ne, ref.ne, ANY_S, ["default"] * 2),
    R("lt", lax.lt, ref.lt, ORDERED, ["default"] * 2),
    R("le", lax.le, ref.le, ORDERED, ["default"] * 2),
    R("gt", lax.gt, ref.gt, [b1, i32, u8, f16, f64], ["default"] * 2),
    R("ge", lax.ge, ref.ge, [b1, i16, u64, f32], ["default"] * 2),
    # bitwise
    R("bitwise_not", lax.bitwise_not, ref.bitwise_not, BOOL + INT_S, ["bits"]),
    R("bitwise_and", lax.bitwise_and, ref.bitwise_and, BOOL + INTS, ["bits"] * 2),
    R("bitwise_or", lax.bitwise_or, ref.bitwise_or, BOOL + INT_S, ["bits"] * 2),
    R("bitwise_xor", lax.bitwise_xor, ref.bitwise_xor, BOOL + INT_S, ["bits"] * 2),
    R("shift_left", lax.shift_left, ref.shift_left, INTS, ["bits", "shift"]),
    R("shift_right_logical", lax.shift_right_logical, ref.shift_right_logical, INT_S + [i16],
      ["bits", "shift"]),
    R("shift_right_arithmetic", lax.shift_right_arithmetic, ref.shift_right_arithmetic,
      INT_S + [u8], ["bits", "shift"]),
    R("population_count", lax.population_count, ref.population_count, INTS, ["bits"]),
    R("clz", lax.clz, ref.clz, INT_S + [u8], ["bits"]),
    # complex numbers
    R("complex", lax.complex, ref.complex, [f32, f64], ["default"] * 2),
    R("conj", lax.conj, ref.conj, [f32, f64, c64, c128]),
    R("real", lax.real, ref.real, COMPLEX),
    R("imag", lax.imag, ref.imag, COMPLEX),
    # selection
    R("select", lax.select, ref.select, ANY_S + [i8, u64], ["default"] * 3,
      arg_dtypes=lambda t: [b1, t, t]),
    R("select_n_int", lax.select_n, ref.select_n, [f32, i8, c64], ["order"] + ["default"] * 3),
    R("clamp", lax.clamp, ref.clamp, ORDERED[1:] + [f16, u8], ["small", "default", "positive"]),
]


def _select_n_int_args(rng, shape, dtype, scalar_first=False):
  which = rng.integers(0, 3, () if scalar_first else shape).astype(np.int32)
  return [which] + [_draw(rng, shape, dtype, "default") for _ in range(3)]


_BY_NAME = {r.name: r for r in RECORDS}
# records whose lowering is a while-loop composition (slow to compile)
LOOPS = {"igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc"}
_BY_NAME["select_n_int"].args = _select_n_int_args

CASES = []
for _r in RECORDS:
  for _t in _r.dtypes:
    CASES.append(pytest.param(_r.name, _t, (2, 3), False, id=f"{_r.name}-{np.dtype(_t).name}"))
  _t0 = _r.dtypes[0]
  for _s in [(), (3,)] if _r.shapes else []:
    CASES.append(pytest.param(_r.name, _t0, _s, False,
                              id=f"{_r.name}-{np.dtype(_t0).name}-shape{_s}"))
  if _r.nary_broadcast:
    CASES.append(pytest.param(_r.name, _t0, (2, 3), True,
                              id=f"{_r.name}-{np.dtype(_t0).name}-rank0"))


@pytest.mark.parametrize("name,dtype,shape,scalar_first", CASES)
def test_primitive(name, dtype, shape, scalar_first):
  rec = _BY_NAME[name]
  rng = np.random.default_rng(zlib.crc32(f"{name}-{np.dtype(dtype).name}-{shape}".encode()))
  with x64_for(dtype):
    args = rec.args(rng, shape, dtype, scalar_first)
    # jit lowers a loop composition exactly as eager does, and each compiles for ~1 s:
    # check jit once per such record.
    check_jit = name not in LOOPS or (np.dtype(dtype) == np.dtype(rec.dtypes[0]) and
                                      shape == (2, 3) and not scalar_first)
    check_primitive(rec.fun, rec.ref, args, tol=rec.tol, check_jit=check_jit)


# ---- conversions ----

CONVERT_TARGETS = [b1, i32, u8, f32, bfloat16, c64]
CONVERT_CASES = [(s, t) for s in ALL for t in CONVERT_TARGETS] + \
                [(f32, t) for t in ALL if t not in CONVERT_TARGETS]


@pytest.mark.parametrize("src,dst", CONVERT_CASES,
                         ids=[f"{np.dtype(s).name}->{np.dtype(t).name}" for s, t in CONVERT_CASES])
def test_convert_element_type(src, dst):
  rng = np.random.default_rng(0)
  with x64_for(src, dst):
    x = _draw(rng, (2, 3), src, "default")
    if np.dtype(dst).kind == "u" and np.dtype(src).kind in "fcV":
      x = np.where(x.real < 0, -x, x).astype(src)  # negative floats to unsigned: undefined
    if np.dtype(dst).kind in "iu" and np.dtype(src).kind in "fcV":
      # out-of-range float -> int saturates in XLA but wraps in NumPy: stay in range
      hi = float(np.iinfo(dst).max // 2)  # with margin: bfloat16 rounds 255 up to 256
      x = np.clip(np.asarray(x.real if np.iscomplexobj(x) else x, np.float64), -hi, hi).astype(src)
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
      check_primitive(lambda v: lax.convert_element_type(v, dst),
                      lambda v: ref.convert_element_type(
                          v.astype(np.float32) if v.dtype.name == "bfloat16" else v, dst), [x])


def test_convert_element_type_semantics():
  x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7], np.float32)
  np.testing.assert_array_equal(lax.convert_element_type(x, np.int32), [-2, 0, 0, 0, 2])
  np.testing.assert_array_equal(lax.convert_element_type(x, np.bool_),
                                [True, True, False, True, True])
  z = np.array([1 + 2j, 0 + 3j], np.complex64)
  with pytest.warns(np.exceptions.ComplexWarning, match="discards the imaginary part"):
    r = lax.convert_element_type(z, np.float32)
  np.testing.assert_array_equal(r, [1.0, 0.0])
  with pytest.warns(np.exceptions.ComplexWarning):
    np.testing.assert_array_equal(lax.convert_element_type(z, np.bool_), [True, False])
  # Python scalars and Python types; 64-bit requests narrow with x64 off
  assert lax.convert_element_type(3.7, np.int32).dtype == i32
  assert int(lax.convert_element_type(3.7, int)) == 3
  assert lax.convert_element_type(np.ones(2, np.float32), np.float64).dtype == f32
  assert lax.convert_element_type(2 ** 40, np.float32) == np.float32(2 ** 40)
  a = lax.add(np.float32(1), np.float32(1))
  assert lax.convert_element_type(a, np.float32) is a  # a no-op stays out of the jaxpr
  jaxpr = make_jaxpr(lambda v: lax.convert_element_type(v, np.int32))(np.float32(1))
  assert "convert_element_type" in str(jaxpr) and "new_dtype=int32" in str(jaxpr)
  # weak type control (used by jax.numpy)
  w = lax._convert_element_type(np.float32(1), np.float32, weak_type=True)
  assert w.aval.weak_type


BITCAST_CASES = [(f32, i32, (2, 3)), (i32, f32, (2, 3)), (u32, f32, (3,)), (f32, u8, (2, 3)),
                 (u8, f32, (2, 4)), (bfloat16, i16, (3,)), (f16, u16, (2, 3)),
                 (f64, u32, (3,)), (u16, f64, (2, 4)), (i64, f64, (3,))]


@pytest.mark.parametrize("src,dst,shape", BITCAST_CASES,
                         ids=[f"{np.dtype(s).name}->{np.dtype(t).name}" for s, t, _ in
                              BITCAST_CASES])
def test_bitcast_convert_type(src, dst, shape):
  rng = np.random.default_rng(1)
  src, dst = np.dtype(src), np.dtype(dst)
  with x64_for(src, dst):
    if src.kind in "iu" and dst.kind == "f":
      # integers holding the bits of ordinary floats (NaN payloads are not portable)
      wide = shape if src.itemsize == dst.itemsize else shape[:-1]
      x = _draw(rng, wide, dst, "default").reshape(wide + (1,)).view(src).reshape(shape)
    else:
      x = _draw(rng, shape, src, "bits" if src.kind in "iu" else "default")
    out = check_primitive(lambda v: lax.bitcast_convert_type(v, dst),
                          lambda v: ref.bitcast_convert_type(v, dst), [x])
    back = np.asarray(lax.bitcast_convert_type(out, src))  # the bits survive a round trip
    unsigned = np.dtype(f"u{src.itemsize}")
    np.testing.assert_array_equal(back.view(unsigned), x.view(unsigned))


def test_bitcast_convert_type_errors():
  with pytest.raises(TypeError, match="bool or complex"):
    lax.bitcast_convert_type(np.ones(3, np.bool_), np.uint8)
  with pytest.raises(ValueError, match="bitcast_convert_type"):
    lax.bitcast_convert_type(np.ones((2, 3), np.uint8), np.float32)


REDUCE_PRECISION_CASES = [(f32, 5, 10), (f32, 8, 7), (f32, 4, 3), (f16, 5, 3), (bfloat16, 5, 2),
                          (f64, 8, 23), (f64, 11, 30)]


@pytest.mark.parametrize("dtype,e,m", REDUCE_PRECISION_CASES,
                         ids=[f"{np.dtype(t).name}-e{e}m{m}" for t, e, m in
                              REDUCE_PRECISION_CASES])
def test_reduce_precision(dtype, e, m):
  rng = np.random.default_rng(2)
  with x64_for(dtype):
    x = (rng.normal(0, 1, (2, 3)) * np.exp(rng.uniform(-12, 12, (2, 3)))).astype(dtype)
    x.reshape(-1)[0] = np.nan
    check_primitive(lambda v: lax.reduce_precision(v, e, m),
                    lambda v: ref.reduce_precision(v, e, m), [x], tol=0)


def test_reduce_precision_matches_casts():
  x = np.random.default_rng(3).normal(0, 10, 100).astype(np.float32)
  np.testing.assert_array_equal(lax.reduce_precision(x, 8, 7),
                                x.astype(bfloat16).astype(np.float32))
  np.testing.assert_array_equal(lax.reduce_precision(x, 5, 10),
                                x.astype(np.float16).astype(np.float32))


# ---- semantics beyond the records ----

def test_integer_division_and_remainder_truncate_toward_zero():
  x = np.array([7, -7, 7, -7], np.int32)
  y = np.array([2, 2, -2, -2], np.int32)
  np.testing.assert_array_equal(lax.div(x, y), [3, -3, -3, 3])
  np.testing.assert_array_equal(lax.rem(x, y), [1, -1, 1, -1])
  np.testing.assert_allclose(lax.rem(np.float32([5.5, -5.5]), np.float32([2, 2])), [1.5, -1.5])


def test_max_min_propagate_nans_and_order_complex():
  x = np.array([1.0, np.nan, 3.0], np.float32)
  y = np.array([np.nan, 2.0, 1.0], np.float32)
  np.testing.assert_array_equal(lax.max(x, y), [np.nan, np.nan, 3.0])
  np.testing.assert_array_equal(lax.min(x, y), [np.nan, np.nan, 1.0])
  z = np.array([1 + 5j, 2 + 0j, 1 + 1j], np.complex64)
  w = np.array([1 + 2j, 1 + 9j, 1 + 1j], np.complex64)
  np.testing.assert_array_equal(lax.max(z, w), [1 + 5j, 2 + 0j, 1 + 1j])
  np.testing.assert_array_equal(lax.min(z, w), [1 + 2j, 1 + 9j, 1 + 1j])


def test_round_methods():
  x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997], np.float32)
  np.testing.assert_array_equal(lax.round(x), [-3, -2, -1, 1, 2, 3, 0])
  np.testing.assert_array_equal(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                                [-2, -2, -0, 0, 2, 2, 0])
  assert "rounding_method=1" in str(make_jaxpr(lambda v: lax.round(v, 1))(x))


def test_special_function_edge_cases():
  nan, inf = np.nan, np.inf
  a = np.array([1.0, 2.0, -1.0, 0.0, 0.0, nan, 3.0], np.float32)
  x = np.array([0.0, inf, 1.0, 0.0, 2.0, 1.0, 0.5], np.float32)
  np.testing.assert_allclose(lax.igamma(a, x), [0, 1, nan, nan, 1, nan,
                                                ref.igamma(np.float32(3), np.float32(.5))],
                             rtol=1e-5)
  np.testing.assert_allclose(lax.igammac(a, x), [1, 0, nan, nan, 0, nan,
                                                 ref.igammac(np.float32(3), np.float32(.5))],
                             rtol=1e-5)
  b = np.float32([2.0, 2.0, 2.0, 0.0, -1.0])
  xx = np.float32([0.0, 1.0, 1.5, 0.5, 0.5])
  np.testing.assert_allclose(lax.betainc(np.float32(3), b, xx), [0, 1, nan, 0, nan])
  np.testing.assert_allclose(lax.bessel_i0e(np.float32([0.0, -1.0])), ref.bessel_i0e(
      np.float32([0.0, -1.0])), rtol=1e-6)


def test_add_rank0_broadcasting():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  out = lax.add(x, 2.0)
  assert out.shape == (2, 3) and out.dtype == f32
  np.testing.assert_array_equal(out, x + 2)
  np.testing.assert_array_equal(lax.mul(np.float32(3), x), 3 * x)
  np.testing.assert_array_equal(jit(lambda a: lax.sub(2.0, a))(x), 2 - x)
  text = str(make_jaxpr(lambda a: lax.mul(a, 3.0))(x))
  assert "mul" in text and "3.0" in text and "broadcast" not in text


def test_python_scalars():
  out = lax.add(1, 2)
  assert isinstance(out, Array) and out.dtype == i32 and int(out) == 3
  assert repr(out) == "DeviceArray(3, dtype=int32)"
  assert lax.mul(2.0, 3.0).dtype == f32
  assert lax.add(np.int8(1), 2).dtype == i8  # the scalar takes the array's dtype
  with pytest.raises(TypeError, match="does not fit dtype int32"):
    lax.add(np.int32(1), 2.5)


def test_mismatched_dtypes_raise():
  with pytest.raises(TypeError, match=r"lax.add requires arguments to have the same dtypes, "
                                      r"got float32, int32"):
    lax.add(np.float32(1), np.int32(1))
  with pytest.raises(TypeError, match="same dtypes"):
    lax.mul(np.ones(3, np.float16), np.ones(3, np.float32))
  with pytest.raises(TypeError, match="select requires arguments to have the same dtypes"):
    lax.select(np.ones(3, bool), np.ones(3, np.float32), np.ones(3, np.int32))
  with pytest.raises(TypeError, match="clamp"):
    lax.clamp(np.int32(0), np.ones(3, np.float32), np.float32(1))
  with pytest.raises(TypeError, match="pow"):
    lax.pow(np.float32(2), np.float16(2))


def test_mismatched_shapes_raise():
  with pytest.raises(TypeError, match=r"add: arrays must have the same number of "
                                      r"dimensions, got \{1, 2\}"):
    lax.add(np.ones((2, 3), np.float32), np.ones(3, np.float32))
  with pytest.raises(TypeError, match="incompatible shapes"):
    make_jaxpr(lambda a, b: lax.atan2(a, b))(np.ones(2, np.float32), np.ones(3, np.float32))
  with pytest.raises(TypeError, match="select cases must have the same shapes"):
    lax.select(np.ones(3, bool), np.ones(3, np.float32), np.ones(2, np.float32))
  with pytest.raises(TypeError, match="`which` must be scalar or have the same shape"):
    lax.select(np.ones(2, bool), np.ones(3, np.float32), np.ones(3, np.float32))
  with pytest.raises(TypeError, match=r"clamp requires min.shape == operand.shape"):
    lax.clamp(np.zeros(2, np.float32), np.ones(3, np.float32), np.float32(1))


@pytest.mark.parametrize("fun,args,name", [
    (lax.sin, [np.int32(1)], "sin"),
    (lax.bitwise_and, [np.float32(1), np.float32(1)], "and"),
    (lax.add, [np.bool_(True), np.bool_(True)], "add"),
    (lax.lt, [np.complex64(1), np.complex64(1)], "lt"),
    (lax.abs, [np.uint8(1)], "abs"),
    (lax.floor, [np.complex64(1)], "floor"),
    (lax.real, [np.float32(1)], "real"),
    (lax.complex, [np.float16(1), np.float16(1)], "complex"),
    (lax.shift_left, [np.float32(1), np.float32(1)], "shift_left"),
    (lax.is_finite, [np.int32(1)], "is_finite"),
    (lax.igamma, [np.int32(1), np.int32(1)], "igamma"),
])
def test_unsupported_dtypes_raise(fun, args, name):
  with pytest.raises(TypeError, match=rf"{name} does not accept dtype"):
    fun(*args)


def test_other_errors():
  with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
    lax.integer_pow(np.int32(2), -1)
  with pytest.raises(TypeError, match="boolean `which` cannot have > 2 cases"):
    lax.select_n(np.bool_(True), *[np.float32(1)] * 3)
  with pytest.raises(TypeError, match="`which` must be boolean or integer"):
    lax.select_n(np.float32(1), np.float32(1), np.float32(2))
  with pytest.raises(ValueError, match="no cases"):
    lax.select_n(np.int32(0))
  with pytest.raises(TypeError, match="float0"):
    lax.neg(np.zeros(3, dtypes.float0))


def test_select_n_and_clamp_forms():
  which = np.array([0, 1, 2, 1], np.int32)
  cases = [np.full(4, i, np.float32) for i in range(3)]
  np.testing.assert_array_equal(lax.select_n(which, *cases), [0, 1, 2, 1])
  np.testing.assert_array_equal(lax.select_n(np.int32(2), *cases), cases[2])
  np.testing.assert_array_equal(lax.select_n(which, cases[0]), cases[0])  # one case
  five = [np.full(4, i, np.int8) for i in range(5)]
  np.testing.assert_array_equal(jit(lax.select_n)(np.array([4, 0, 3, 2], np.int32), *five),
                                [4, 0, 3, 2])
  np.testing.assert_array_equal(lax.select(np.bool_(False), cases[1], cases[2]), cases[2])
  x = np.array([-2, 0, 5], np.float32)
  np.testing.assert_array_equal(lax.clamp(-1.0, x, 1.0), [-1, 0, 1])
  np.testing.assert_array_equal(lax.clamp(np.float32([0, 1, 2]), x, np.float32([1, 1, 3])),
                                [0, 1, 3])


def test_pow_int_exponent_and_jaxpr():
  x = np.float32([2.0, -2.0, 0.5])
  np.testing.assert_allclose(lax.pow(x, 3), [8.0, -8.0, 0.125])
  jaxpr = str(make_jaxpr(lambda v: lax.pow(v, np.int32(2)))(x))
  assert "pow" in jaxpr
  assert lax.pow(x, np.int32(2)).dtype == f32
  np.testing.assert_allclose(lax.pow(2.0, np.int32([1, 3])), [2.0, 8.0])
  np.testing.assert_allclose(lax.pow(x, 0.5)[:1], [np.sqrt(2)], rtol=1e-6)


def test_weak_types():
  assert lax.add(1.0, 2.0).aval.weak_type
  assert not lax.add(np.float32(1), 2.0).aval.weak_type
  assert lax.lt(1.0, 2.0).aval.weak_type  # JAX 0.10.2: comparisons of weak operands are weak
  assert lax.neg(1.0).aval.weak_type


def test_conj_of_real_is_complex():
  out = lax.conj(np.float32([1, 2]))
  assert out.dtype == c64
  np.testing.assert_array_equal(out, [1, 2])


def test_add_any_and_zeros():
  x = np.ones((2, 3), np.float32)
  np.testing.assert_array_equal(ad.add_any_p.bind(x, x), 2 * x)
  np.testing.assert_array_equal(jit(lambda a: ad.add_any_p.bind(a, a))(x), 2 * x)
  z = ad.zeros_like_aval(ad.Zero(lax._aval(x)).aval)
  assert isinstance(z, Array) and z.shape == (2, 3) and z.dtype == f32
  np.testing.assert_array_equal(z, 0)
  z0 = ad.zeros_like_aval(lax._aval(np.float32(1)))
  assert isinstance(z0, Array) and z0.shape == ()
  assert ad.zeros_like_aval(lax._aval(np.int32(1)).at_least_vspace()).dtype == dtypes.float0
  assert ad.add_any_p in ad.primitive_transposes


def test_every_primitive_has_its_rules():
  # JVP rules, batching and lowering for every elementwise primitive; transposes for the
  # linear ones. (The rules themselves are exercised by the transformation tests.)
  prims = [v for v in vars(lax).values() if isinstance(v, type(lax.add_p))]
  assert len(prims) > 75
  for p in prims:
    assert lowering.has_lowering(p), p
    assert p in batching.primitive_batchers, p
    assert p in ad.primitive_jvps, p
  for p in [lax.add_p, lax.sub_p, lax.neg_p, lax.mul_p, lax.div_p, lax.convert_element_type_p,
            lax.real_p, lax.imag_p, lax.complex_p, lax.conj_p, lax.select_n_p,
            lax.reduce_precision_p, ad.add_any_p]:
    assert p in ad.primitive_transposes, p


def test_public_names():
  for name in ["add", "sub", "mul", "div", "rem", "pow", "integer_pow", "neg", "sign", "max",
               "min", "square", "reciprocal", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "log",
               "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos",
               "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "floor", "ceil",
               "round", "nextafter", "is_finite", "erf", "erfc", "erf_inv", "lgamma",
               "digamma", "igamma", "igammac", "igamma_grad_a", "random_gamma_grad",
               "bessel_i0e", "bessel_i1e", "betainc", "polygamma", "zeta", "eq", "ne", "lt",
               "le", "gt", "ge", "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor",
               "not_", "and_", "or_", "xor", "shift_left", "shift_right_arithmetic",
               "shift_right_logical", "population_count", "clz", "complex", "conj", "real",
               "imag", "convert_element_type", "bitcast_convert_type", "clamp", "select",
               "select_n", "reduce_precision", "abs", "RoundingMethod"]:
    assert name in lax.__all__ and hasattr(lax, name), name
    assert name == "RoundingMethod" or getattr(lax, name).__doc__, name
  assert lax.not_p.name == "not" and lax.and_p.name == "and"
  assert lax.regularized_incomplete_beta_p.name == "regularized_incomplete_beta"


# ---- transformation rules: JVP, transpose (reverse mode) and batching ----

NOT_DIFFERENTIABLE = {"floor", "ceil", "round_away", "round_even", "is_finite", "sign", "eq",
                      "ne", "lt", "le", "gt", "ge", "integer_pow_0"}
# differentiable only in some operands, or with no closed-form higher derivatives
PARTIAL = {"igamma": [1], "igammac": [1], "igamma_grad_a": [1], "betainc": [2],
           "polygamma": [1], "zeta": [1], "random_gamma_grad": [], "nextafter": [0]}
GRAD_RECORDS = [r.name for r in RECORDS if r.name not in NOT_DIFFERENTIABLE and
                any(np.dtype(t) in (f64, c128) for t in r.dtypes) and PARTIAL.get(r.name, 1)]


def _check_vjp_complex(f, args, tol=1e-6):
  """JAX's check_vjp convention: <t, conj(vjp(conj(c)))> == <J t, c>, real inner products
  (a transpose, not an adjoint, is what reverse mode computes for complex values)."""
  rng = np.random.default_rng(4)

  def like(x):
    x = np.asarray(x)
    noise = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
      noise = noise + 1j * rng.standard_normal(x.shape)
    return noise.astype(x.dtype)

  def inner(xs, ys):
    return sum(np.real(np.vdot(np.asarray(x, np.complex128).ravel(),
                               np.asarray(y, np.complex128).ravel())) for x, y in zip(xs, ys))
  out, f_vjp = vjp(f, *args)
  t = [like(a) for a in args]
  t_out = numerical_jvp(f, tuple(args), tuple(t), 1e-5)
  c = like(out)
  c_in = [np.conj(np.asarray(v)) for v in f_vjp(np.conj(c))]
  np.testing.assert_allclose(inner(t, c_in), inner([t_out], [c]), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", GRAD_RECORDS)
def test_grads(name):
  rec = _BY_NAME[name]
  dtype = next(t for t in rec.dtypes if np.dtype(t) in (f64, c128))
  rng = np.random.default_rng(zlib.crc32(name.encode()))
  with x64_for(f64):
    args = rec.args(rng, (3,), dtype)
    argnums = PARTIAL.get(name, [i for i, a in enumerate(args) if a.dtype.kind in "fc"])

    def f(*xs):
      full = list(args)
      for i, x in zip(argnums, xs):
        full[i] = x
      return rec.fun(*full)
    xs = [args[i] for i in argnums]
    order = 1 if name in PARTIAL else 2
    if np.dtype(dtype) == c128 or np.iscomplexobj(f(*xs)):
      check_grads(f, xs, order=order, modes=("fwd",), atol=1e-5, rtol=1e-5)
      _check_vjp_complex(f, xs, tol=1e-5)
    else:
      check_grads(f, xs, order=order, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name,fun,args,argnums", [
    ("add_rank0", lax.add, [np.float64(2), np.array([1., 2., 3.])], [0, 1]),
    ("mul_rank0", lax.mul, [np.float64(2), np.array([1., 2., 3.])], [0, 1]),
    ("div_rank0", lax.div, [np.array([1., 2., 3.]), np.float64(2)], [0, 1]),
    ("sub_rank0", lax.sub, [np.array([1., 2., 3.]), np.float64(2)], [0, 1]),
    ("clamp_rank0_bounds", lax.clamp, [np.float64(-.5), np.array([-1., .2, 2.]), np.float64(1)],
     [0, 1, 2]),
    ("select_rank0_pred", lambda x, y: lax.select(np.bool_(True), x, y),
     [np.array([1., 2.]), np.array([3., 4.])], [0, 1]),
    ("pow_int_exponent", lambda x: lax.pow(x, np.array([0, 2, -1], np.int32)),
     [np.array([1.5, 2., 3.])], [0]),
    ("max_ties", lax.max, [np.array([1., 2.]), np.array([1., 3.])], [0, 1]),
    ("complex_rank0", lambda x, y: lax.real(lax.square(lax.complex(x, y))),
     [np.float64(2), np.array([1., 2., 3.])], [0, 1]),
    ("convert_to_complex", lambda x: lax.imag(lax.mul(lax.convert_element_type(
        x, np.complex128), 1 + 1j)), [np.array([1., 2.])], [0]),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 11, 52), [np.array([1., 2.])], [0]),
    ("abs_real", lax.abs, [np.array([-1., 2.])], [0]),
])
def test_grads_special_cases(name, fun, args, argnums):
  with x64_for(f64):
    def f(*xs):
      full = list(args)
      for i, x in zip(argnums, xs):
        full[i] = x
      return fun(*full)
    check_grads(f, [args[i] for i in argnums], order=1, modes=("fwd", "rev"), atol=1e-5,
                rtol=1e-5)


def test_grads_not_supported_raise():
  with x64_for(f64):
    a, x = np.array([1., 2.]), np.array([.5, 1.])
    with pytest.raises(ValueError, match="not supported"):
      vjp(lambda b: lax.betainc(b, a, x * .5), a)
    with pytest.raises(ValueError, match="not supported"):
      vjp(lambda m: lax.polygamma(m, x), a)


@pytest.mark.parametrize("name", [r.name for r in RECORDS])
def test_vmap(name):
  rec = _BY_NAME[name]
  dtype = rec.dtypes[0]
  rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
  with x64_for(dtype):
    examples = [rec.args(rng, (3,), dtype) for _ in range(4)]
    n = len(examples[0])
    all_axes = [(0,) * n, (1,) * n, (0,) + (None,) * (n - 1), (None,) * (n - 1) + (1,)]
    for axes in all_axes[:1] if name in LOOPS else set(all_axes):
      if all(a is None for a in axes):
        continue
      args = [np.stack([e[k] for e in examples], axis=a) if a is not None else examples[0][k]
              for k, a in enumerate(axes)]
      out = vmap(rec.fun, in_axes=axes)(*args)
      expected = np.stack([np.asarray(rec.fun(*[e[k] if a is not None else examples[0][k]
                                                for k, a in enumerate(axes)]))
                           for e in examples])
      # (the loop compositions iterate until every element converges: a batch may take
      # a few more steps than one example, so compare floats to the dtype's tolerance)
      assert_close(out, expected, err_msg=str(axes))


@pytest.mark.parametrize("name,fun,args,axes", [
    ("add_rank0_batched", lax.add, [np.arange(4.), np.ones((2, 3))], (0, None)),
    ("select_rank0_which", lax.select,
     [np.array([True, False]), np.ones((2, 3)), np.zeros((2, 3))], (0, None, None)),
    ("select_all_rank0", lax.select, [np.array([True, False]), np.float32(1), np.float32(2)],
     (0, None, None)),
    ("clamp_rank0_bound", lax.clamp,
     [np.arange(4.), np.linspace(-2, 5, 6).reshape(2, 3), np.float64(3)], (0, None, None)),
    ("clamp_rank0_operand", lax.clamp, [np.arange(4.), np.float64(2), np.float64(3)],
     (0, None, None)),
    ("integer_pow_axis1", lambda x: lax.integer_pow(x, 3), [np.ones((4, 3))], (1,)),
])
def test_vmap_rank0_operands(name, fun, args, axes):
  out = vmap(fun, in_axes=axes)(*args)
  size = next(np.shape(a)[d] for a, d in zip(args, axes) if d is not None)
  expected = np.stack([np.asarray(fun(*[np.take(a, i, d) if d is not None else a
                                        for a, d in zip(args, axes)])) for i in range(size)])
  np.testing.assert_allclose(out, expected)
