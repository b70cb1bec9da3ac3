"""Disagreements with JAX found by tools/fuzz_vs_jax.py, each fixed and pinned here.

Issue 13. Every expected value, dtype, weak type or error below was produced by real
JAX 0.10.2 (/work/jaxvenv, run by hand on the same inputs; JAX is never imported here)
and is recorded as a literal. The fuzzer's reproducers are under /work/notes/fuzz/.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.special as jsp
from tracejax import dtypes, lax
from tracejax._src.numpy import util as np_util


def raises(exc, fragment):
  return pytest.raises(exc, match=re.escape(fragment))


def _weak(shape, dtype=np.float32):
  """A weakly typed array of zeros (JAX: lax._convert_element_type(..., weak_type=True))."""
  return np_util.convert_element_type(jnp.zeros(shape, bool), dtype, True)


# ---- indexing with a bare list ------------------------------------------------------------

@pytest.mark.parametrize("idx,hint", [([-1, 0], "array"), ([True, False, True], "array"),
                                      ([], "array"), ([None], "tuple"), ([...], "tuple"),
                                      ([[0, 1]], "tuple"), ([slice(None), 0], "tuple")])
def test_bare_list_index_is_a_type_error(idx, hint):
  # JAX 0.10.2: TypeError "Using a non-tuple sequence for multidimensional indexing is not
  # allowed; use `arr[array(seq)]` instead of `arr[seq]`. See https://... 4564 ..." (or
  # `arr[tuple(seq)]` when the list holds slices, None, Ellipsis or sequences).
  x = jnp.arange(3.0)
  msg = f"Using a non-tuple sequence for multidimensional indexing is not allowed; use " \
        f"`arr[{hint}(seq)]` instead of `arr[seq]`"
  with raises(TypeError, msg):
    x[idx]
  with raises(TypeError, msg):
    jax.jit(lambda v: v[idx])(x)
  with raises(TypeError, "non-tuple sequence"):
    x.at[idx].set(1.0)


def test_list_inside_tuple_index_still_works():
  # JAX 0.10.2: x[([0, 1],)] -> [0., 1.]; x[..., [-1, 0]] -> [2., 0.]; .at[([0, 1],)].set(1.)
  x = jnp.arange(3.0)
  np.testing.assert_array_equal(x[([0, 1],)], [0.0, 1.0])
  np.testing.assert_array_equal(x[..., [-1, 0]], [2.0, 0.0])
  np.testing.assert_array_equal(jnp.zeros(3).at[([0, 1],)].set(1.0), [1.0, 1.0, 0.0])


# ---- .at[] with a Python scalar outside an integer array's range --------------------------

@pytest.mark.parametrize("dtype,method,value,expected", [
    ("uint8", "set", -1.5, 0), ("uint8", "set", 300, 44), ("int8", "set", 1e10, 127),
    ("uint8", "add", -1, 3), ("uint8", "set", -1, 255), ("uint8", "set", float("nan"), 0)])
def test_at_update_out_of_range_python_scalar(dtype, method, value, expected):
  # JAX 0.10.2 (with a FutureWarning): the scalar becomes an int32/float32 array and is
  # cast as XLA casts. Before the fix: OverflowError "Python int ... too large".
  x = jnp.array([4], dtype)
  out = getattr(x.at[0], method)(value)
  assert out.dtype == np.dtype(dtype)
  np.testing.assert_array_equal(out, [expected])
  out = jax.jit(lambda v: getattr(v.at[0], method)(value))(x)
  np.testing.assert_array_equal(out, [expected])


# ---- scipy.special.ndtr / ndtri / log_ndtr take only float32 and float64 ----------------

@pytest.mark.parametrize("fn,msg", [
    ("ndtr", "x.dtype={} is not supported, see docstring for supported types."),
    ("ndtri", "x.dtype={} is not supported, see docstring for supported types."),
    ("log_ndtr", "x.dtype={} is not supported.")])
def test_normal_cdf_family_rejects_other_dtypes(fn, msg):
  f = getattr(jsp, fn)
  for dt in ("int32", "bool", "uint8", "float16", "bfloat16", "complex64"):
    with raises(TypeError, msg.format(dt)):
      f(jnp.ones(2, dt))
  with raises(TypeError, msg.format("int32")):
    f(1)                                   # a Python int is int32: rejected too
  with raises(TypeError, msg.format("float16")):
    jax.jit(f)(jnp.ones(2, "float16"))
  out = f(0.5)                             # JAX: float32 (a Python float is accepted)
  assert out.dtype == np.float32


def test_ndtr_values_unchanged():
  np.testing.assert_allclose(jsp.ndtr(np.array([0.0, 1.0], np.float32)),
                             [0.5, 0.8413447], rtol=1e-6)
  np.testing.assert_allclose(jsp.log_ndtr(np.float32(0.5)), -0.36894640, rtol=1e-6)


# ---- det / slogdet of small half-precision matrices ---------------------------------------

def test_det_slogdet_half_precision_small():
  # JAX 0.10.2: det of 1x1..3x3 and slogdet of 1x1..2x2 float16/bfloat16 matrices work
  # and keep the dtype; larger ones fail in the LAPACK lowering (NotImplementedError
  # "Unsupported dtype float16"; ours: TypeError from lu, see README).
  for dt in ("float16", "bfloat16"):
    for n, det in ((1, 3.0), (2, 4.0), (3, 8.0)):
      a = (jnp.eye(n, dtype=dt) * 2).at[0, -1].add(1)
      d = jnp.linalg.det(a)
      assert d.dtype == np.dtype(dt if dt != "bfloat16" else dtypes.bfloat16)
      np.testing.assert_allclose(np.float32(d), det, rtol=2e-2)
    sign, logdet = jnp.linalg.slogdet((jnp.eye(2, dtype=dt) * 2).at[0, -1].add(1))
    assert sign.dtype == logdet.dtype == a.dtype
    np.testing.assert_allclose(np.float32(logdet), np.log(4.0), rtol=2e-2)
  # JAX: grad(det)(2*eye(2) in float16) = [[2, 0], [0, 2]] in float16
  g = jax.grad(jnp.linalg.det)(jnp.eye(2, dtype="float16") * 2)
  assert g.dtype == np.float16
  np.testing.assert_allclose(np.float32(g), [[2, 0], [0, 2]])
  with pytest.raises(TypeError, match="float16"):
    jnp.linalg.det(jnp.eye(4, dtype="float16"))


# ---- weak types of formula constants ------------------------------------------------------

# JAX 0.10.2, weak_type of f(w) for a weakly typed float32 w of shape () and (2,).
_WEAK_UNARY = {"logical_not": (1, 0), "deg2rad": (1, 0), "rad2deg": (1, 0), "sinc": (1, 0),
               "exp2": (1, 1), "square": (1, 1), "isnan": (1, 1), "isfinite": (1, 1),
               "radians": (1, 0), "degrees": (1, 0)}
_WEAK_BINARY = {"hypot": (1, 0), "logaddexp2": (1, 0), "heaviside": (1, 0),
                "floor_divide": (1, 1), "logical_and": (1, 0), "logical_xor": (1, 0),
                "remainder": (1, 1), "arctan2": (1, 1)}


def test_weak_type_of_formula_constants():
  for shape, k in (((), 0), ((2,), 1)):
    w = _weak(shape)
    for name, exp in _WEAK_UNARY.items():
      assert getattr(jnp, name)(w).weak_type == bool(exp[k]), (name, shape)
    for name, exp in _WEAK_BINARY.items():
      assert getattr(jnp, name)(w, w).weak_type == bool(exp[k]), (name, shape)
  wi = _weak((2,), np.int32)
  # JAX: isnan and floor_divide of a weak int32[2] stay weak, isfinite does not.
  assert jnp.isnan(wi).weak_type and jnp.floor_divide(wi, wi).weak_type
  assert not jnp.isfinite(wi).weak_type


def test_logical_and_of_converted_weak_bool():
  # JAX 0.10.2: jit(lambda a: jnp.logical_and(a, 1.0))(bool[1]) is not weak (the
  # `ne b 0.0` after the weak convert_element_type compares with a strong 0.0)
  out = jax.jit(lambda a: jnp.logical_and(a, 1.0))(jnp.array([True]))
  assert out.dtype == np.bool_ and not out.weak_type
  # ... while for Python scalars it stays weak (JAX: weak_type=True)
  assert jax.jit(lambda a: jnp.logical_and(a, True))(2.0).weak_type


def test_checkpoint_keeps_weak_results():
  # JAX 0.10.2: checkpoint(value_and_grad(lambda d: 0.0 + sum(y)))(x, y) gives a weak
  # float32 value 2.0 and a strong zero gradient.
  f = jax.checkpoint(lambda x, y: jax.value_and_grad(lambda d: 0.0 + jnp.sum(y))(x))
  v, g = f(np.ones(2, np.float32), np.ones(2, np.int32))
  assert v.weak_type and v.dtype == np.float32 and float(v) == 2.0
  assert not g.weak_type
  assert jax.checkpoint(lambda y: 0.0 + y)(np.ones(2, np.int32)).weak_type


# ---- values ------------------------------------------------------------------------------

def test_logsumexp_complex_keeps_the_phase():
  # JAX 0.10.2: logsumexp([1.087884, 0.3+2j, -1-3.5j]) = 0.90339+0.58192j (log of the
  # complex sum); we returned 0.90339+0j.
  z = np.array([1.087884, 0.3 + 2.0j, -1.0 - 3.5j], np.complex64)
  np.testing.assert_allclose(jax.nn.logsumexp(z), 0.90339+0.58192j, rtol=1e-4)
  z2 = np.array([[0.5 + 1j, -0.25 + 3j]], np.complex64)
  np.testing.assert_allclose(jax.nn.logsumexp(z2, axis=-1), [0.40682+1.49095j], rtol=1e-4)


def test_fmax_fmin_complex_lexicographic():
  # JAX 0.10.2 (eager and jit): fmax -> [1+2j, 1+1j, 0j]; fmin -> [1+1j, 2j, 0j]
  a = jnp.array([1 + 2j, 1 + 1j, np.nan], np.complex64)
  b = jnp.array([1 + 1j, 2j, 0], np.complex64)
  np.testing.assert_array_equal(jnp.fmax(a, b), [1 + 2j, 1 + 1j, 0j])
  np.testing.assert_array_equal(jax.jit(jnp.fmin)(a, b), [1 + 1j, 2j, 0j])


def test_median_quantile_of_0d_with_keepdims():
  # JAX 0.10.2: shape (1,) for median/nanmedian/quantile/percentile(0-d, keepdims=True)
  x = np.float32(1.5)
  for out in (jnp.median(x, keepdims=True), jnp.nanmedian(x, keepdims=True),
              jnp.quantile(x, 0.5, keepdims=True), jnp.percentile(x, 50.0, keepdims=True)):
    assert out.shape == (1,)
    np.testing.assert_array_equal(out, [1.5])
  assert jnp.median(x).shape == ()


def test_angle_of_ints_is_default_float(x64):
  # JAX 0.10.2 with x64: angle(bool/int8/int32/uint8 array) is float64
  for dt in ("bool", "int8", "int32", "uint8"):
    assert jnp.angle(np.ones(2, dt)).dtype == np.float64


# ---- errors ------------------------------------------------------------------------------

def test_round_of_bool_raises():
  # JAX 0.10.2: ValueError "data type <class 'numpy.bool'> not inexact"; ints round fine
  with raises(ValueError, "data type <class 'numpy.bool'> not inexact"):
    jnp.round(jnp.array([True, False]))
  with raises(ValueError, "not inexact"):
    jnp.round(True)
  np.testing.assert_array_equal(jnp.round(jnp.array([3], np.int8)), [3])


def test_ldexp_errors_are_value_errors():
  # JAX 0.10.2: ValueError "ldexp not supported for input types (dtype('float32'),
  # dtype('float32'))" (float exponent) / "(dtype('complex64'), dtype('int32'))"
  with raises(ValueError, "ldexp not supported for input types (dtype('float32'), "
              "dtype('float32'))"):
    jnp.ldexp(jnp.ones(2), jnp.ones(2))
  with raises(ValueError, "ldexp not supported for input types (dtype('float32'), "
              "dtype('float32'))"):
    jnp.ldexp(jnp.ones(2), 2.0)
  with raises(ValueError, "(dtype('complex64'), dtype('int32'))"):
    jnp.ldexp(jnp.ones(2, np.complex64), jnp.ones(2, np.int32))
  np.testing.assert_array_equal(jnp.ldexp(1.0, 2), 4.0)


# ---- float0 never reaches XLA; NumPy inputs never leak out as NumPy results ---------------

def test_float0_through_checkpoint_and_jacfwd():
  f0 = dtypes.float0
  # JAX 0.10.2: float0[2, 2] cotangent of an int input through checkpoint(vjp)
  out = jax.checkpoint(
      lambda x: jax.vjp(lambda d: d, x)[1](np.zeros(np.shape(x), f0)))(np.ones((2, 2),
                                                                             np.int32))
  assert out[0].dtype == f0 and out[0].shape == (2, 2)
  out = jax.checkpoint(lambda x: np.zeros((2,), f0))(1.0)
  assert out.dtype == f0 and out.shape == (2,)
  # JAX: jacfwd of a jvp with an int output: (int32[3, 3] zeros, float0[3, 3])
  p, t = jax.jacfwd(lambda x: jax.jvp(lambda d: d.astype(int), (x,), (x,)))(
      np.ones(3, np.float32))
  assert p.dtype == np.int32 and p.shape == (3, 3) and not np.any(p)
  assert t.dtype == f0 and t.shape == (3, 3)


def test_pad_with_zero_widths_returns_a_device_array():
  # JAX 0.10.2: the primal of jvp(lambda d: jnp.pad(d, 0, mode='reflect')) of a NumPy
  # input is an Array (weak_type False), not the NumPy input itself.
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  for mode in ("reflect", "edge", "wrap", "symmetric", "mean", "constant"):
    p, t = jax.jvp(lambda d: jnp.pad(d, 0, mode=mode), (x,), (np.ones_like(x),))
    assert isinstance(p, jax.Array) and not p.weak_type, mode
    np.testing.assert_array_equal(p, x)


def test_var_std_with_no_degrees_of_freedom_are_nan():
  # JAX 0.10.2: var/std of an empty array with ddof=1 are NaN (we gave -0.0), and so is
  # var([1, 2], ddof=2) (not inf); complex inputs too (a float32 NaN).
  assert np.isnan(jnp.var(np.array([], np.float32), ddof=1))
  assert np.isnan(jnp.std(np.array([], np.complex64), ddof=1))
  assert jnp.var(np.array([], np.complex64), ddof=1).dtype == np.float32
  assert np.isnan(jnp.var(np.array([1.0, 2.0], np.float32), ddof=2))
  np.testing.assert_array_equal(jnp.var(np.ones((2, 3), np.float32), ddof=4, axis=0),
                                [np.nan] * 3)
  np.testing.assert_allclose(jnp.var(np.array([1.0, 2.0], np.float32), ddof=1), 0.5)
  # with a mask: 2 selected elements, ddof=2 -> NaN; ddof=1 -> 0.5
  m = np.array([True, True, False])
  x = np.array([1.0, 2.0, 4.0], np.float32)
  np.testing.assert_allclose(jnp.var(x, ddof=1, where=m), 0.5)
  assert np.isnan(jnp.var(x, ddof=2, where=m))


def test_cumulative_of_0d_with_an_axis():
  # JAX 0.10.2: ValueError "axis 0 is out of bounds for array of dimension 0" (we raised
  # IndexError); axis=None flattens to shape (1,).
  for fn in (jnp.cumsum, jnp.cumprod):
    with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
      fn(np.float32(1.0), axis=0)
    assert fn(np.float32(2.0)).shape == (1,)


def test_asarray_of_float0_stays_on_the_host():
  # JAX 0.10.2: jnp.asarray / jnp.real of a float0 array give a host float0 array
  # (ours sent it to XLA: "Unknown NumPy dtype").
  z = np.zeros((2,), dtypes.float0)
  for out in (jnp.asarray(z), jnp.real(z)):
    assert out.dtype == dtypes.float0 and out.shape == (2,)


def test_identity_like_functions_return_new_arrays_under_transformations():
  # JAX 0.10.2: these are jitted there, so under vmap/jvp/vjp a NumPy input comes back
  # as an Array (weak_type False), e.g. vmap(jnp.real)(np.ones(3)) is an ArrayImpl; we
  # returned the NumPy input itself. (vmap(lambda v: v) returns the NumPy value in both.)
  x = np.ones(3, np.float32)
  for f in (jnp.real, jnp.conj, jnp.positive, jnp.flip, jnp.squeeze):
    out = jax.vmap(f)(x)
    assert isinstance(out, jax.Array) and not out.weak_type, f.__name__
    p, _ = jax.jvp(f, (x,), (x,))
    assert isinstance(p, jax.Array), f.__name__
  assert isinstance(jax.vjp(jnp.real, np.ones(2, np.int32))[0], jax.Array)
  # JAX: sort of a size-0 axis under jvp and atleast_2d of 2-d slices under vmap too
  p, _ = jax.jvp(lambda d: jnp.sort(d, axis=0), (np.zeros(0, np.float16),),
                 (np.zeros(0, np.float16),))
  assert isinstance(p, jax.Array) and p.dtype == np.float16
  assert isinstance(jax.vmap(jax.vmap(jnp.atleast_2d))(np.zeros((0, 2, 1, 3), np.float32)),
                    jax.Array)
  # JAX: x.at[..., [0, -1]].add(0.5, mode='clip') of an empty f32[3, 2, 0] under vmap
  assert isinstance(jax.vmap(jnp.ravel)(np.ones((1, 4), np.float32)), jax.Array)  # JAX too
  # JAX: vmap(lambda v: jnp.any(v, axis=None))(bool[2]) is a (non-weak) Array
  out = jax.vmap(lambda v: jnp.any(v, axis=None))(np.array([False, True]))
  assert isinstance(out, jax.Array) and not out.weak_type
  out = jax.vmap(lambda v: v.at[..., [0, -1]].add(0.5, mode="clip"))(
      np.zeros((3, 2, 0), np.float32))
  assert isinstance(out, jax.Array) and out.shape == (3, 2, 0)
  # nothing is added to a jaxpr, and gradients are unchanged
  assert "copy" not in str(jax.make_jaxpr(jax.grad(lambda v: jnp.sum(jnp.real(v))))(x))
  np.testing.assert_array_equal(jax.grad(lambda v: jnp.sum(jnp.real(v)))(x), [1, 1, 1])


def test_jacrev_is_weak_exactly_when_its_input_is():
  # JAX 0.10.2: jacrev(f)(-1.5) is weak for f = identity, x*2, sin, x*np.float32(2) and
  # x*jnp.ones(2); jacrev of a weak f32[2] input is weak; a strong input gives a strong
  # result. (We returned strong results throughout.)
  for f in (lambda x: x, lambda x: x * 2, jnp.sin, lambda x: x * np.float32(2),
            lambda x: x * jnp.ones(2)):
    assert jax.jacrev(f)(-1.5).weak_type
  assert jax.jacrev(lambda x: x)(_weak((2,))).weak_type
  assert not jax.jacrev(lambda x: x)(np.float32(1.5)).weak_type
  np.testing.assert_allclose(jax.jacrev(jnp.sin)(-1.5), np.cos(-1.5), rtol=1e-6)


def test_log_softmax_of_ints_under_vjp():
  # JAX 0.10.2: vjp of log_softmax(unique(argmin(x), size=1)) at x = True gives float32
  # [0.]; we raised OverflowError (-inf as an int `initial` of max).
  def f(x):
    return jax.nn.log_softmax(jnp.unique(jnp.argmin(x, axis=None), size=1, fill_value=0),
                              axis=0)
  out, _ = jax.vjp(f, np.array(True))
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [0.0])
  np.testing.assert_allclose(jax.nn.log_softmax(jnp.array([0, 2], np.int32)),
                             [-2.12693, -0.12693], rtol=1e-4)


def test_floor_divide_gradient_is_zero():
  # JAX 0.10.2: grad(x // x)(nan) = 0. (weak), grad(x // 0.)(1.5) = 0., both partials
  # of x // y at (1.5, 0.) are 0. (weak); we gave nan, inf and (inf, -inf).
  for g in (jax.grad(lambda x: x // x)(np.nan), jax.grad(lambda x: x // 0.0)(1.5),
            *jax.grad(lambda x, y: x // y, argnums=(0, 1))(1.5, 0.0)):
    assert float(g) == 0.0 and g.weak_type
  np.testing.assert_array_equal(jnp.floor_divide(np.array([1.5, -1.5, 0.0]), 0.0),
                                [np.inf, -np.inf, np.nan])
  assert float(jax.grad(lambda x: jnp.divmod(x, 0.7)[1])(1.5)) == 1.0  # JAX: 1.0


def test_jacfwd_never_calls_fun_on_raw_numpy_inputs():
  # JAX 0.10.2: jacfwd(lambda x: x.at[np.array([-2, 0])].mul(-2, mode=...))(np f32[3]) is
  # [[-2, 0, 0], [0, -2, 0], [0, 0, 1]]; we ran fun once on the NumPy input itself
  # (AttributeError: 'numpy.ndarray' object has no attribute 'at').
  x = np.array([2.0, 0.88, 0.76], np.float32)
  jac = jax.jacfwd(lambda v: v.at[np.array([-2, 0])].mul(-2, mode="promise_in_bounds"))(x)
  np.testing.assert_array_equal(jac, [[-2, 0, 0], [0, -2, 0], [0, 0, 1]])
  calls = []
  jax.jacfwd(lambda v: calls.append(type(v).__name__) or jnp.sin(v))(x)
  assert len(calls) == 1 and "ndarray" not in calls


def test_weak_python_int_wraps_into_narrow_int_arrays():
  # JAX 0.10.2: hard_tanh(uint8 [0, 5]) = [255, 1]; jnp.where(u8 > 1, -1, u8) = [0, 255];
  # full_like(u8, -1) = [255, 255]; clip(u8, -1, 1) = [1, 1]; hard_tanh of an empty uint8
  # is empty. We raised OverflowError. An explicit jnp.asarray(-1, uint8) still raises.
  u8 = jnp.array([0, 5], np.uint8)
  np.testing.assert_array_equal(jax.nn.hard_tanh(np.array([0, 5], np.uint8)), [255, 1])
  assert jax.nn.hard_tanh(np.array([], np.uint8)).shape == (0,)
  np.testing.assert_array_equal(jnp.where(u8 > 1, -1, u8), [0, 255])
  np.testing.assert_array_equal(jnp.full_like(u8, -1), [255, 255])
  np.testing.assert_array_equal(jnp.clip(u8, -1, 1), [1, 1])
  with pytest.raises(OverflowError):
    jnp.asarray(-1, np.uint8)


def test_reverse_mode_through_while_loop_fed_by_floor_divide():
  # JAX 0.10.2: x // x has a symbolic zero derivative, so vjp through a while_loop of it
  # works: primal [15.154261] * 3, cotangent zeros. We raised the while_loop
  # reverse-mode error.
  def f(x):
    v = x // x
    return lax.while_loop(lambda st: st[0] < 2, lambda st: (st[0] + 1, jnp.exp(st[1])),
                          (0, v))[1]
  x = np.array([1.03, 1.4, 1.25], np.float32)
  out, f_vjp = jax.vjp(f, x)
  np.testing.assert_allclose(out, [15.154261] * 3, rtol=1e-6)
  np.testing.assert_array_equal(f_vjp(jnp.ones(3))[0], [0, 0, 0])


def test_numpy_inputs_come_back_as_jax_gives_them():
  # JAX 0.10.2 (x64 off): basic indexing that selects everything returns its operand, so
  # vmap(vjp(lambda d: d[...]))(float64 NumPy input) hands the NumPy input back (float64);
  # jnp.array copies (a new Array, strongly typed under jvp); a strided slice gathers.
  x = np.linspace(-1, 1, 6).reshape(2, 3, 1)
  out = jax.vmap(lambda v: jax.vjp(lambda d: d[...], v)[0])(x)
  assert type(out) is np.ndarray and out.dtype == np.float64
  p, _ = jax.jvp(lambda d: jnp.array(d), (np.float32(-1.5),), (np.float32(0.5),))
  assert isinstance(p, jax.Array) and not p.weak_type
  p, _ = jax.jvp(lambda d: jnp.asarray(d), (np.ones(2, np.float32),), (np.ones(2, np.float32),))
  assert isinstance(p, jax.Array)   # a concrete tracer: JAX's conversion binds
  assert type(jax.vmap(jnp.asarray)(np.ones((2, 2), np.float32))) is np.ndarray
  assert isinstance(jax.vmap(lambda d: jnp.asarray(d, copy=True))(np.ones((2, 2))), jax.Array)
  out = jax.vmap(lambda d: d.at[::2].get(mode='fill', fill_value=-3))(np.ones((1, 1), np.int64))
  assert isinstance(out, jax.Array) and out.dtype == np.int32
  assert type(jax.vmap(lambda d: d.astype(d.dtype))(np.ones((2, 2), np.float32))) is np.ndarray
  for f in (jnp.floor, jnp.ceil, jnp.trunc, jnp.abs, jnp.nan_to_num):   # jits in JAX
    out = jax.vmap(f)(np.array([[False, True]]))
    assert isinstance(out, jax.Array) and not out.weak_type, f


def test_at_set_complex_scalar_into_real_array_drops_imaginary_part():
  # JAX 0.10.2: arctan(x).at[::2].set(1-2j) of a float32[1] gives [1.] (ComplexWarning);
  # we raised TypeError from float(complex).
  out = jnp.arctan(np.array([0.08], np.float32)).at[::2].set(1 - 2j)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, [1.0])


def test_complex_fft_of_an_empty_array():
  # JAX 0.10.2: fft/ifft/fftn of complex64[2, 0] are complex64[2, 0]; fft(x, n=0) raises
  # ValueError. We raised for every empty input.
  z = np.zeros((2, 0), np.complex64)
  for f in (jnp.fft.fft, jnp.fft.ifft, jnp.fft.fftn):
    out = f(z)
    assert out.shape == (2, 0) and out.dtype == np.complex64
  assert jnp.fft.fft(np.zeros((0,), np.float32)).dtype == np.complex64
  with pytest.raises(ValueError):
    jnp.fft.fft(z, n=0)


def test_astype_flip_of_0d_and_more_numpy_leaks():
  # JAX 0.10.2: vjp(lambda d: d.astype(jnp.float32), np.float32(-0.9)) has an Array
  # primal (we returned the NumPy input); flip(1-0.5j, axis=0) is ValueError "axis 0 is
  # out of bounds for array of dimension 0" (we raised TypeError from rev).
  p, _ = jax.vjp(lambda d: d.astype(jnp.float32), np.float32(-0.9))
  assert isinstance(p, jax.Array)
  with raises(ValueError, "axis 0 is out of bounds for array of dimension 0"):
    jnp.flip(1 - 0.5j, axis=0)
  np.testing.assert_array_equal(jnp.flip(np.arange(3), 0), [2, 1, 0])


def test_heaviside_nan_and_logsumexp_of_empty():
  # JAX 0.10.2: heaviside([nan, -inf, 0, 2], 0.5) = [nan, 0, 0.5, 1] (we gave 0.5 for nan);
  # logsumexp of an empty float16 with keepdims = [-inf] (float16), of an empty (2, 0)
  # along axis 1 = [-inf, -inf] (we raised "zero-size array to reduction max").
  np.testing.assert_array_equal(jnp.heaviside(np.array([np.nan, -np.inf, 0.0, 2.0]), 0.5),
                                [np.nan, 0.0, 0.5, 1.0])
  out = jax.nn.logsumexp(np.zeros(0, np.float16), keepdims=True)
  assert out.dtype == np.float16 and out.shape == (1,) and out[0] == -np.inf
  np.testing.assert_array_equal(jax.nn.logsumexp(np.zeros((2, 0), np.float32), axis=1),
                                [-np.inf, -np.inf])


def test_nonzero_with_size_of_an_empty_array_is_zeros():
  # JAX 0.10.2: nonzero/where/argwhere(empty, size=2, fill_value=-1) give zeros ([0, 0]);
  # a non-empty input pads with fill_value ([-1, -1, -1]).
  e = np.zeros(0, np.float16)
  np.testing.assert_array_equal(jnp.nonzero(e, size=2, fill_value=-1)[0], [0, 0])
  np.testing.assert_array_equal(jax.jit(lambda v: jnp.where(v, size=2, fill_value=-1)[0])(e),
                                [0, 0])
  np.testing.assert_array_equal(jnp.argwhere(np.zeros((0, 2)), size=2, fill_value=-1),
                                [[0, 0], [0, 0]])
  np.testing.assert_array_equal(jnp.nonzero(np.zeros(2), size=3, fill_value=-1)[0], [-1] * 3)


def test_full_like_of_a_weak_int_with_a_float_fill_stays_weak():
  # JAX 0.10.2: full_like(weak int32, 0.0) is a weak int32 (we gave a strong one); with
  # an explicit dtype it is strong.
  w = jnp.asarray(1) ** jnp.asarray(1)
  out = jnp.full_like(w, 0.0)
  assert out.dtype == np.int32 and out.weak_type
  assert not jnp.full_like(w, 0.0, dtype=int).weak_type


def test_zero_sign_kept_by_the_host_scalar_cache():
  # 0.0 and -0.0 compare and hash equal: a cached -0.0 used to come back for 0.0, so
  # x / 0. could give -inf (JAX 0.10.2: jacrev(lambda v: v / -0.0) has -inf on the
  # diagonal; 1 / full((2,), 0.0) is [inf, inf]).
  assert np.signbit(jnp.full((2,), -0.0, dtype=np.float32)).all()
  np.testing.assert_array_equal(1 / jnp.full((2,), 0.0, dtype=np.float32), [np.inf, np.inf])
  x = np.array([[-0.5], [1.1]], np.float32)
  assert jax.jacrev(lambda v: v / -0.0)(x)[0, 0, 0, 0] == -np.inf


def test_softmax_of_ints_and_bool_scatter_ops():
  # softmax of a uint32 array under jit raised OverflowError (-inf as a uint32); it is
  # computed in the default float (JAX gives wrapped-around garbage here, see README).
  out = jax.jit(lambda v: jax.nn.softmax(v, axis=-1))(np.array([[5, 3, 2]], np.uint32))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [[0.8437947, 0.11419519, 0.04201007]], rtol=1e-6)
  # (.at[].add/.mul of a bool array: JAX raises TypeError, tracejax ORs/ANDs; a documented
  # deliberate difference, "bool-scatter-add", pinned by tests/test_gather_scatter.py.)
  b = jnp.array([True])
  np.testing.assert_array_equal(b.at[0].min(False), [False])
  # and jnp.roll by 0 under vjp returns an Array (JAX), not the NumPy input
  assert isinstance(jax.vjp(lambda d: jnp.roll(d, 0, axis=-1), np.ones((3, 1), bool))[0],
                    jax.Array)


def test_standardize_clips_the_fast_variance():
  # JAX 0.10.2: standardize(complex) with the default (fast) algorithm raises ValueError
  # (from clipping the variance at 0); 'stable' and an explicit variance work:
  # [-1.0000005+1.43e-06j, 1.0000005-1.43e-06j] and [-0.999995+1.4999925j, ...].
  x = np.array([1 + 2j, 3 - 1j], np.complex64)
  with raises(ValueError, "complex"):
    jax.nn.standardize(x)
  np.testing.assert_allclose(jax.nn.standardize(x, algorithm="stable"),
                             [-1.0000005 + 1.43e-06j, 1.0000005 - 1.43e-06j], atol=1e-5)
  np.testing.assert_allclose(jax.nn.standardize(x, variance=np.ones(1, np.complex64)),
                             [-0.999995 + 1.4999925j, 0.999995 - 1.4999925j], rtol=1e-6)
  np.testing.assert_allclose(jax.nn.standardize(np.array([1.0, 3.0])), [-0.999995, 0.999995],
                             rtol=1e-6)


def test_fmod_of_booleans_keeps_xla_remainder_by_zero():
  # JAX 0.10.2 (fuzzer seed 300): the zero-divisor guard of fmod sees the bool result
  # type, so fmod(True, False) is XLA's 1 % 0 == 1; integers keep NumPy's x % 0 == 0.
  t, f = np.array([True, False, True]), np.array([False, False, True])
  for fn in (jnp.fmod, jax.jit(jnp.fmod)):
    r = fn(t, f)
    assert r.dtype == jnp.int32
    np.testing.assert_array_equal(r, [1, 0, 0])
  np.testing.assert_array_equal(jnp.remainder(t, f), [0, 0, 0])
  np.testing.assert_array_equal(jnp.fmod(t.astype(np.uint8), f.astype(np.uint8)), [0, 0, 0])
  np.testing.assert_array_equal(jnp.fmod(np.array([5, -5, 7], np.int32),
                                         np.array([0, 0, -3], np.int32)), [0, 0, 1])
