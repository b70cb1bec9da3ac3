"""Fuzzer finds (seeds 300-303, run 3) that are deliberate differences from JAX 0.10.2.

Each case was narrowed to a minimal program and run under real JAX; the JAX results
quoted here were recorded from it.  Two kinds of check: tracejax's own side of each
difference (what it returns or raises), and that tools/fuzz_vs_jax.py's DELIBERATE
tests recognise exactly the case (README.md, "Deliberate differences from JAX") and not
its neighbours.
"""
import base64
import os
import sys

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.special as sp
from tracejax import lax

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import fuzz_vs_jax as F  # noqa: E402


def _err(exc, msg):
  return {"ok": False, "exc": exc, "mro": [exc, "Exception"], "msg": msg}


def _ok(*leaves):
  return {"ok": True, "leaves": list(leaves)}


def _leaf(x, weak=False):
  x = np.asarray(x)
  return {"dtype": x.dtype.name, "shape": list(x.shape), "weak": weak,
          "b64": base64.b64encode(x.tobytes()).decode()}


# ------------------------------------------------------------------ generic reduce_window

def _rw_min(x):
  # The init value is built inside the function: under jit JAX sees a traced value and
  # falls back to its generic reduce_window; here it is a known constant (the min monoid).
  return lax.reduce_window(x, jnp.asarray(jnp.inf, x.dtype), lax.min, (2,), (1,), "SAME")


def test_jit_jacfwd_reduce_window_traced_init():
  x = np.array([3., 1., 2.], np.float32)
  want = [[0., 1., 0.], [0., 1., 0.], [0., 0., 1.]]  # JAX's jacfwd without jit
  assert jax.jacfwd(_rw_min)(x).tolist() == want
  # JAX: ValueError "at vmap out_axes[0], got axis spec None but output was batched on
  # axis 0" (repro_x1_s301_01856); the deliberate generic-reduce-window-rev.
  assert jax.jit(jax.jacfwd(_rw_min))(x).tolist() == want


def test_jacfwd_generic_reduce_window_raises_in_both():
  # A computation that is not a monoid is generic on both sides: ValueError in both.
  def f(x):
    return lax.reduce_window(x, jnp.asarray(1., x.dtype), lax.mul, (2,), (1,), "SAME")
  with pytest.raises(ValueError):
    jax.jacfwd(f)(np.arange(3.0, dtype=np.float32))


def test_jit_jacrev_reduce_window_int_output():
  # JAX under jit: ValueError "Linearization failed ..." (generic reduce_window) before
  # its check of the output; here (and in JAX without jit) jacrev's TypeError.
  def f(x):
    return jnp.searchsorted(lax.reduce_window(
        x, jnp.asarray(jnp.inf, x.dtype), lax.min, (2,), (1,), "VALID"), 3.0)
  with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
    jax.jit(jax.hessian(f))(np.arange(3.0, dtype=np.float32))


def test_deliberate_generic_reduce_window():
  src = "lax.reduce_window(x1, jnp.asarray(jnp.inf, ...), lax.min, ...); jax.jacfwd; jax.jit"
  j = _err("ValueError", "at vmap out_axes[0], got axis spec None but output was batched "
           "on axis 0")
  assert F.deliberate(src, j, _ok(_leaf(np.zeros((0, 0))))) == "generic-reduce-window-rev"
  # ...but not when tracejax fails too (then it is the same exception type anyway), and
  # not without a reduce_window.
  assert F.deliberate(src, j, _err("TypeError", "x")) is None
  assert F.deliberate("jnp.sum(x)", j, _ok(_leaf(np.zeros((0, 0))))) is None
  j = _err("ValueError", "Linearization failed to produce known values for all output "
           "primals.")
  t = _err("TypeError", "jacrev requires real-valued outputs (output dtype that is a "
           "sub-dtype of np.floating), but got int32.")
  assert F.deliberate(src, j, t) == "generic-reduce-window-rev"
  assert F.deliberate(src, j, _err("TypeError", "add got incompatible shapes")) is None
  # seed 304 #2817: a later `>>` of the float16 window result fails its dtype check here
  t = _err("TypeError", "shift_right_arithmetic does not accept dtype float16 (operand 0). "
           "Accepted dtypes are subtypes of integer.")
  assert F.deliberate(src, j, t) == "generic-reduce-window-rev"


# ------------------------------------------------------------------ rfft of half precision

def test_deliberate_rfft_half_precision_later_error():
  j = _err("ValueError", "RFFT input must be float32 or float64, got bfloat16")
  t = _err("TypeError", "jacrev requires real-valued outputs (output dtype that is a "
           "sub-dtype of np.floating), but got int32.")
  assert F.deliberate("jnp.fft.ihfft(v1); jax.jacrev", j, t) == "rfft-half-precision"
  t = _err("AttributeError", "'numpy.ndarray' object has no attribute 'at'")
  assert F.deliberate("jnp.fft.rfft(x0); x0.at[:, None, 0].min(0.001)", j, t) == \
      "rfft-half-precision"
  assert F.deliberate("jnp.fft.rfft(x0)", j, _err("IndexError", "index 3")) is None
  # seed 304 #55: a later `|` of the bfloat16 input fails its dtype check here
  t = _err("TypeError", "or does not accept dtype bfloat16 (operand 0). Accepted dtypes "
           "are subtypes of bool, integer.")
  assert F.deliberate("jnp.fft.rfft(v0); (v2 | float('inf'))", j, t) == "rfft-half-precision"
  # seed 337 #1635 (x64): vjp of jit(reduce_window(rfft(x), -inf as a jnp array, max))
  # of a float16 x: past the rfft, reverse mode of the generic reduce_window fails here
  # (with a float32 x JAX fails there too: generic-reduce-window-rev)
  t = _err("NotImplementedError", "Transpose rule (for reverse-mode differentiation) for "
           "'reduce_window' not implemented")
  src = "jnp.fft.rfft(x0, axis=0); lax.reduce_window(v0, jnp.asarray(-jnp.inf))"
  assert F.deliberate(src, j, t) == "rfft-half-precision"
  assert F.deliberate("jnp.fft.rfft(x0, axis=0)", j, t) is None


def test_rfft_half_precision_then_jacrev_of_int_output():
  def f(x):
    jnp.fft.ihfft(x, n=4)
    return jnp.argmin(x)
  x = np.array([[-2.390625, -2.078125, 1.609375]], np.float32).astype(jnp.bfloat16)
  with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
    jax.jacrev(f)(x)


# ------------------------------------------------------------------ host passthrough

def test_while_loop_invariant_carry_is_an_array():
  # JAX returns the loop-invariant carry as the NumPy input itself, so `.at` is an
  # AttributeError there ('numpy.ndarray' object has no attribute 'at').
  x = np.array(True)
  v = lax.while_loop(lambda st: st[0] < 1, lambda st: (st[0] + 1, st[1]), (0, x))[1]
  assert bool(v.at[..., None].set(x, mode="clip")) is True
  xs = np.ones(3, np.float32)
  assert lax.fori_loop(0, 3, lambda i, c: c, xs).at[0].set(2.).tolist() == [2., 1., 1.]


def test_vjp_bool_mod_python_float():
  # JAX computes `d % 2.0` of vjp's untraced bool input on the host: a float64 NumPy
  # array [[1.], [0.], [1.]]; here the traced rule: a weak float32 Array.
  b = np.array([[True], [False], [True]])
  o, _ = jax.vjp(lambda d: d % 2.0, b)
  assert o.dtype == np.float32 and o.weak_type
  assert o.tolist() == [[1.], [0.], [1.]]


def test_deliberate_host_passthrough_cases():
  j = _err("AttributeError", "'numpy.ndarray' object has no attribute 'at'")
  src = "lax.while_loop(lambda st: st[0] < 1, ...)[1]; v0.at[..., None].set(x0)"
  assert F.deliberate(src, j, _ok(_leaf(True))) == "jax-host-passthrough"
  assert F.deliberate("jnp.sin(x0).at[0].set(1)", j, _ok(_leaf(True))) is None
  val = np.array([[1.], [0.], [1.]])
  j = _ok(_leaf(val, weak="host"))
  t = _ok(_leaf(val.astype(np.float32), weak=True))
  assert F.deliberate("jax.vjp(lambda d: f0(d), a[0])", j, t) == "jax-host-passthrough"
  assert F.deliberate("jax.jit(f0)", j, t) is None          # only vjp's host inputs
  t = _ok(_leaf(val.astype(np.float32) + 1, weak=True))
  assert F.deliberate("jax.vjp(lambda d: f0(d), a[0])", j, t) is None
  # seed 304 #59: `x >> 2` of vjp's untraced bool input is a NumPy int64 scalar in JAX
  # (recorded as a host leaf), a weak int32 Array here
  j = _ok(_leaf(np.int64(0), weak="host"))
  t = _ok(_leaf(np.int32(0), weak=True))
  assert F.deliberate("jax.vjp(lambda d: f0(d), a[0])", j, t) == "jax-host-passthrough"
  # seed 322 #1599: JAX's fori_loop returns a loop-invariant Python float carry itself
  j = _err("TypeError", "'float' object is not subscriptable")
  src = "lax.fori_loop(0, 1, lambda i, v: (lambda v: v)(v), x0); v0[...]"
  t = _ok(_leaf(np.float32(2.0), weak=True))
  assert F.deliberate(src, j, t) == "jax-host-passthrough"
  assert F.deliberate("jnp.sin(x0)[...]", j, t) is None
  assert lax.fori_loop(0, 1, lambda i, v: v, 2.0)[...].weak_type
  # seed 324 #2079/#2264: JAX's eager stop_gradient and checkpoint return a Python scalar
  # input as its typed host scalar (TypedFloat: weak, no `.at`); here a weak Array
  j = _err("AttributeError", "'TypedFloat' object has no attribute 'at'")
  src = "lax.stop_gradient(x0); v0.at[...].set(v0, mode='clip')"
  assert F.deliberate(src, j, _ok(_leaf(np.float32(-1.5), weak=True))) == \
      "jax-host-passthrough"
  assert F.deliberate("jnp.sin(x0).at[0].set(1)", j, _ok(_leaf(True))) is None
  j = _ok(dict(_leaf(np.float32(2.0)), weak="py:TypedFloat"),
          _leaf(np.float32(0.0), weak="host:weak"))
  src = "jax.checkpoint(f1); jax.vjp(lambda d: f0(d), a[0])"
  t = _ok(_leaf(np.float32(2.0), weak=True), _leaf(np.float32(0.0), weak=True))
  assert F.deliberate(src, j, t) == "jax-host-passthrough"
  t = _ok(_leaf(np.float32(3.0), weak=True), _leaf(np.float32(0.0), weak=True))
  assert F.deliberate(src, j, t) is None                       # another value
  assert lax.stop_gradient(-1.5).at[...].set(2.0).weak_type
  # seed 345 #5 (x64): `checkpoint(identity)(0) ** ...` is a plain Python int in JAX
  # (host arithmetic on its TypedInt), so `[...]` of it is a TypeError; a weak Array here
  j = _err("TypeError", "'int' object is not subscriptable")
  src = "jax.checkpoint((lambda v: v))(x0); (v0 ** v0); v2[...]"
  t = _ok(_leaf(np.int64(1), weak=True))
  assert F.deliberate(src, j, t) == "jax-host-passthrough"
  assert F.deliberate("(x0 ** x0); v2[...]", j, t) is None
  assert jax.checkpoint(lambda v: v)(0)[...].weak_type


# ------------------------------------------------------------------ dead code

def test_jit_dead_xlog1py_int_is_dropped():
  def dead(x):
    sp.xlog1py(x, jnp.zeros(2, jnp.int32) + 1)
    return x * 2
  x = np.array([0.5, 0.25], np.float32)
  # JAX: TypeError "log1p does not accept dtype int32. ..." from the JVP of the dead code.
  _, tan = jax.jvp(jax.jit(dead), (x,), (x,))
  assert tan.tolist() == [1.0, 0.5]
  # Live, or without jit (no staging, nothing dropped), it is a TypeError in both.
  with pytest.raises(TypeError, match="log1p does not accept dtype int32"):
    jax.grad(lambda x: sp.xlog1py(x, jnp.zeros(2, jnp.int32) + 1).sum())(x)
  with pytest.raises(TypeError, match="log1p does not accept dtype int32"):
    jax.jvp(dead, (x,), (x,))


def test_checkpoint_dead_complex_argmax_is_dropped():
  x = np.array([1.5 + 0j, -2 + 1j], np.complex64)
  def dead(x):
    jnp.argmax(x)
    return x * 2
  # JAX: TypeError (gt of complex) from compiling the dead argmax eagerly; jit(checkpoint)
  # agrees with this.
  assert jax.checkpoint(dead)(x).tolist() == [3 + 0j, -4 + 2j]
  assert jax.jit(jax.checkpoint(dead))(x).tolist() == [3 + 0j, -4 + 2j]
  with pytest.raises(TypeError, match="gt does not accept dtype complex64 at position 0. "
                     "Accepted dtypes at position 0 are subtypes of integer, floating, bool"):
    jax.checkpoint(jnp.argmax)(x)


def test_deliberate_dead_code_errors():
  j = _err("TypeError", "log1p does not accept dtype int32. Accepted dtypes are subtypes "
           "of floating, complexfloating.")
  t = _ok(_leaf(np.float16(0.5)))
  src = "jax.scipy.special.xlog1py(v1, v2); f1 = jax.jit(f0); jax.vjp"
  assert F.deliberate(src, j, t) == "jax-dead-code-errors"
  assert F.deliberate(src.replace("jax.jit(f0)", "f0"), j, t) is None
  assert F.deliberate(src, j, _err("TypeError", "log1p does not accept dtype int32.")) is None
  j = _err("TypeError", "gt does not accept dtype complex128 at position 0. Accepted "
           "dtypes at position 0 are subtypes of integer, floating, bool.")
  src = "jnp.argmax(v2, axis=-1); f1 = jax.checkpoint(f0)"
  assert F.deliberate(src, j, t) == "jax-dead-code-errors"
  assert F.deliberate("jnp.argmax(v2, axis=-1)", j, t) is None
  # seed 335 #1836 (x64): vjp of jit(jvp(f)) where f computes an unused eigvals
  j = _err("NotImplementedError", "Derivatives of non-symmetric eigenvectors are only "
           "valid under assumptions on the input that JAX cannot check")
  src = "jnp.linalg.eigvals(x0); f2 = jax.jit(f1); jax.vjp"
  assert F.deliberate(src, j, t) == "jax-dead-code-errors"
  assert F.deliberate(src.replace("jax.jit(f1)", "f1"), j, t) is None
  assert F.deliberate(src, j, _err("NotImplementedError", "The derivatives of the "
                                   "eigenvectors of eig are only valid")) is None
  x = np.array([[1., 2., 0.], [-3., 1., 1.], [0., 1., 4.]], np.float32)
  unused = jax.jit(lambda d: jax.jvp(lambda e: (jnp.linalg.eigvals(e), e * 2)[1], (d,),
                                     (jnp.ones_like(d),))[1].sum())
  np.testing.assert_array_equal(jax.vjp(unused, x)[1](1.0)[0], np.zeros((3, 3)))
  used = jax.jit(lambda d: jax.jvp(jnp.linalg.eigvals, (d,), (jnp.ones_like(d),))[1]
                 .real.sum())
  with pytest.raises(NotImplementedError, match="eigenvectors of eig are only valid"):
    jax.vjp(used, x)[1](1.0)


# ------------------------------------------------------------------ NaN sampler parameters

def test_beta_nan_parameters_are_nan():
  key = jax.random.fold_in(jax.random.PRNGKey(21), 3)
  a = np.array([np.nan, np.nan], np.float32)
  # JAX eagerly and under jit of a traced parameter: [nan nan]; jit with the NaN a
  # constant: XLA folds the sampler to [-7.6329512e+12, -2.4587193e-13].
  assert np.isnan(jax.random.beta(key, a, 2.0)).all()
  assert np.isnan(jax.jit(lambda: jax.random.beta(key, a, 2.0))()).all()


def test_deliberate_nan_sampler_parameters():
  src = "jax.random.beta(key, (jnp.abs(jnp.real(v1)) + 0.5), 2.0); f1 = jax.jit(f0)"
  j = _ok(_leaf(np.array([9.724388e-01, 1.559617e-09], np.float32)))
  t = _ok(_leaf(np.array([np.nan, np.nan], np.float32)))
  assert F.compare(j, t) == "value-nan"
  assert F.deliberate(src, j, t) == "nan-sampler-parameters"
  assert F.deliberate(src.replace("beta", "uniform"), j, t) is None
  # Numbers that differ from JAX's are still a disagreement.
  t = _ok(_leaf(np.array([np.nan, 0.5], np.float32)))
  assert F.deliberate(src, j, t) is None


# ------------------------------------------------------------------ tolerance

def test_compare_widened_float32_values_at_float32_tolerance():
  # seed 301 #1202 (x64 on): a float32 cotangent widened to the float64 input's dtype;
  # JAX's eager vjp and ours round its last float32 bit differently.
  j = _ok(_leaf(np.float32([0.7775347828865051, 0.7833275198936462]).astype(np.float64)))
  t = _ok(_leaf(np.float32([0.7775347232818604, 0.783327579498291]).astype(np.float64)))
  assert F.compare(j, t) is None
  # genuinely 64-bit values keep the 64-bit tolerance
  j = _ok(_leaf(np.array([0.1, 0.2])))
  t = _ok(_leaf(np.array([0.1, 0.2]) * (1 + 1e-7)))
  assert F.compare(j, t) is not None


# ------------------------------------------------------------------ run 4 (seed 305)

def test_deliberate_typed_scalar_passthrough():
  # seed 305 #142 and #585 (x64 on): JAX's vjp hands a Python int input over untraced
  # (TypedInt: no `.at`), and reduce_max(x, ()) of a Python float returns it untraced,
  # which jacfwd then fails on.
  t = _ok(_leaf(np.int64(6), weak=True))
  j = _err("AttributeError", "'TypedInt' object has no attribute 'at'")
  assert F.deliberate("x0.at[..., None].add(x0); jax.vjp", j, t) == "jax-host-arrays-untraced"
  j = _err("AttributeError", "'float' object has no attribute 'shape'")
  assert F.deliberate("lax.reduce_max(x0, ()); jax.vjp; jax.jacfwd", j, t) == \
      "jax-host-arrays-untraced"
  assert F.deliberate("lax.reduce_max(x0, ()); jax.grad", j, t) is None
  # seed 309 #1205 (x64 on): vjp of lax.reduce_max(x, ()) at a Python float: JAX fails
  # making the cotangent of its untraced TypedFloat
  j2 = _err("AttributeError", "'TypedFloat' object has no attribute 'shape'")
  assert F.deliberate("lax.reduce_max(x0, ()); jax.vjp", j2, t) == "jax-host-arrays-untraced"
  _, f_vjp = jax.vjp(lambda x: lax.reduce_max(x, ()), 1.5)
  assert f_vjp(1.0)[0] == 1.0
  assert jax.jacfwd(lambda x: lax.reduce_max(x, ()))(1.5) == 1.0   # JAX: that error
  assert F.deliberate("x", j, _err("AttributeError", "x")) is None
  # seed 301 #1141: `(x2 + x2).at[::-1].min(...)` of vjp's untraced bool input
  j = _err("AttributeError", "'numpy.ndarray' object has no attribute 'at'")
  t = _ok(_leaf(np.zeros((2, 3), bool)))
  assert F.deliberate("jax.vjp(lambda d: f0(d), a[2]); (x2 + x2).at[::-1]", j, t) == \
      "jax-host-arrays-untraced"
  assert F.deliberate("jax.jit(f0); x.at[::-1]", j, t) is None
  assert F.deliberate("x", _err("AttributeError", "'float' object has no attribute 'at'"),
                      t) is None


def test_out_of_range_float_constants_to_int_as_eager_jax():
  # JAX 0.10.2 eagerly: 0, 0, 2147483647, 255; under jit it gives 4294967295,
  # -2147483648, -2147483648, 44. Here the eager values in both.
  cases = [(np.array([8, 3], np.uint32), -1.5, 0), (np.int32([1]), np.nan, 0),
           (np.int32([1]), np.inf, 2147483647), (np.uint8([1]), 300.5, 255)]
  import warnings
  for x, fill, want in cases:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      assert jnp.full_like(x, fill).tolist() == [want] * x.size
      assert jax.jit(lambda x: jnp.full_like(x, fill))(x).tolist() == [want] * x.size


def test_deliberate_float_to_int_out_of_range():
  name = "float-to-int-out-of-range"
  j = _ok(_leaf(np.full((3, 3), 4294967295, np.uint32)))
  t = _ok(_leaf(np.zeros((3, 3), np.uint32)))
  assert F.deliberate("jnp.full_like(x0, -1.5); jax.jit", j, t) == name
  assert F.deliberate("jnp.full_like(x0, -1.5)", j, t) is None   # eager JAX agrees
  assert F.deliberate("jnp.sum(x0); jax.jit", j, t) is None      # no conversion
  j = _ok(_leaf(np.full((3, 3), 7, np.uint32)), )
  t = _ok(_leaf(np.full((3, 3), 8, np.uint32)))
  assert F.deliberate("jnp.full_like(x0, -1.5); jax.jit", j, t) is None
  # seed 307 #296, #2690 (x64 on): NaN and inf to int64
  j = _ok(_leaf(np.full((2,), -2**63, np.int64)))
  t = _ok(_leaf(np.zeros((2,), np.int64)))
  assert F.deliberate("jnp.full_like(v0, float('nan')); jax.jit(f0)", j, t) == name
  j = _ok(_leaf(np.int64(-2**63), weak=True))
  t = _ok(_leaf(np.int64(2**63 - 1), weak=True))
  assert F.deliberate("jnp.full_like(x1, float('inf')); jax.jit(f0)", j, t) == name




def test_deliberate_vjp_returns_typed_inputs():
  # seed 308 #2055 (x64 off): vjp of the identity at 0.5. JAX 0.10.2 returns the input
  # typed (TypedFloat, dtype float32); tracejax a weak float32 Array (not the Python
  # float, which NumPy reads as float64). NumPy inputs come back canonical in both.
  out, _ = jax.vjp(lambda x: x, 0.5)
  assert isinstance(out, jax.Array) and out.dtype == np.float32 and out.weak_type
  out, _ = jax.vjp(lambda x: (x, x * 1), 2)
  assert out[0].dtype == np.int32 and out[0].weak_type
  out, _ = jax.vjp(lambda x: x, np.zeros(2))   # JAX: TypedNdArray float32
  assert type(out) is np.ndarray and out.dtype == np.float32
  out, _ = jax.vjp(lambda x: x, np.float64(0.5))
  assert type(out) is np.ndarray and out.shape == () and out.dtype == np.float32
  assert type(jax.linearize(lambda x: x, 0.5)[0]) is float    # JAX: the float itself
  j = _ok(dict(_leaf(np.float32(0.5)), weak="py:TypedFloat"))
  t = _ok(_leaf(np.float32(0.5), weak=True))
  assert F.deliberate("jax.vjp(lambda d: f0(d), a[0])", j, t) == "jax-host-arrays-untraced"


def test_int_fill_found_as_the_cause_downstream():
  # seed 307 #296 (x64 on): jit(jnp.any(jnp.full_like(int_array, nan))) is True in JAX
  # (XLA's minimum) and False here (0): the fuzzer reruns the program with its
  # non-finite fills set to 0 and counts it as float-to-int-out-of-range if that agrees.
  prog = {"inputs": [{"dtype": "int32", "shape": [2, 0], "kind": "positive"}],
          "ops": [{"t": "jnp.nansum({0}, axis=-1)", "a": ["x0"]},
                  {"t": "jnp.full_like({0}, float('nan'))", "a": ["v0"]},
                  {"t": "jnp.any({0})", "a": ["v1"]}],
          "out": "v2", "stack": [{"t": "jit"}], "seed": 1}
  seen = []

  class Runner:
    def classify(self, p):
      seen.append(p)
      return (None if all("float('nan')" not in op["t"] for op in p["ops"]) else "value"), {}, {}

  assert F._int_fill_is_the_cause(Runner(), prog)
  assert seen[-1]["ops"][1]["t"] == "jnp.full_like({0}, 0)"
  assert not F._int_fill_is_the_cause(Runner(), dict(prog, stack=[]))   # eager: JAX agrees

  class Still:
    def classify(self, p):
      return "value", {}, {}

  assert not F._int_fill_is_the_cause(Still(), prog)
  no_fill = dict(prog, ops=prog["ops"][:1])
  assert not F._int_fill_is_the_cause(Runner(), no_fill)


def test_vjp_of_python_int_weak_types():
  # seed 310 #3768: vjp at the Python bool False of cond(x << x)[..., None]: JAX computes
  # x << x on the host (the Python int 0, weak), so its result is a weak int32; tracejax
  # traces the shift of bools (a strong int32).
  prog = {"inputs": [{"py": False, "shape": [], "dtype": "py"}],
          "ops": [{"t": "({0} << {0})", "a": ["x0"]}], "out": "v0",
          "stack": [{"t": "vjp", "arg": 0}], "seed": 1}
  assert F._vjp_of_python_int(prog, "weak_type")
  assert F._found_by_rerun(None, prog, "weak_type", {}) == "jax-host-arrays-untraced"
  assert not F._vjp_of_python_int(prog, "value")
  assert not F._vjp_of_python_int(dict(prog, inputs=[{"py": 1.5, "shape": [],
                                                      "dtype": "py"}]), "weak_type")
  assert not F._vjp_of_python_int(dict(prog, stack=[{"t": "grad", "arg": 0}]), "weak_type")
  out, _ = jax.vjp(lambda x: x << x, False)
  assert out.dtype == np.int32 and not out.weak_type   # JAX: the Python int 0


def test_cholesky_nonfinite_found_as_the_cause_downstream():
  # seed 311 #1136 (x64 on): searchsorted over the sorted cholesky factor of a matrix with
  # inf entries (JAX's LAPACK factor keeps numbers where ours is NaN): the fuzzer reruns
  # the program with finite inputs (the same values, no NaN/inf) and counts it as
  # cholesky-nan-input if that agrees.
  prog = {"inputs": [{"dtype": "float32", "shape": [3, 3], "kind": "special"}],
          "ops": [{"t": "jnp.linalg.cholesky({0})", "a": ["x0"]},
                  {"t": "jnp.searchsorted(jnp.sort(jnp.ravel({0})), 0.5)", "a": ["v0"]}],
          "out": "v1", "stack": [], "seed": 1}

  class Runner:
    def __init__(self, verdict):
      self.verdict, self.seen = verdict, []

    def classify(self, p):
      self.seen.append(p)
      return (None if p["inputs"][0]["kind"] == "normal" else self.verdict), {}, {}

  r = Runner("value")
  assert F._cholesky_nonfinite_is_the_cause(r, prog)
  assert r.seen[-1]["inputs"][0]["kind"] == "normal"
  assert F._found_by_rerun(r, prog, "value", {"ok": True, "leaves": []}) == "cholesky-nan-input"
  assert not F._cholesky_nonfinite_is_the_cause(
      r, dict(prog, inputs=[dict(prog["inputs"][0], kind="normal")]))
  assert not F._cholesky_nonfinite_is_the_cause(
      r, dict(prog, ops=[{"t": "jnp.sort({0})", "a": ["x0"]}]))

  class Still(Runner):
    def classify(self, p):
      return "value", {}, {}

  assert not F._cholesky_nonfinite_is_the_cause(Still("value"), prog)


def test_jit_dependent_rounding_found_by_rerunning_without_jit():
  # seed 307 #4 (x64 on): jacrev(jit(zeta(x, x))) in float16: JAX 0.6094 (0.625 without
  # jit), tracejax 0.629 (0.625). seed 312 #474/#1508: eager float16 programs where
  # JAX's own jitted nn.standardize / linalg.norm round as fused code.
  prog = {"inputs": [{"dtype": "float16", "shape": [3, 1], "kind": "normal"}],
          "ops": [{"t": "jax.scipy.special.zeta({0}, {1})", "a": ["x0", "x0"]}],
          "out": "v0", "stack": [{"t": "jit"}, {"t": "jacrev", "argnums": 0}], "seed": 1}
  h = lambda v: _ok(_leaf(np.float16(v)))
  answers = {False: (h(0.6094), h(0.629)), True: (h(0.625), h(0.625))}

  class Runner:
    def __init__(self):
      self.seen = []

    def run_both(self, p):
      self.seen.append(p)
      return answers[p["stack"][-1]["t"] == "disable_jit"]

  j, _ = answers[False]
  r = Runner()
  assert F._jit_dependent_rounding(r, prog, "value-close", j)
  assert r.seen[-1]["stack"][-1] == {"t": "disable_jit"}
  assert "jax.disable_jit()(f2)" in F.G.render(r.seen[-1])
  assert F._found_by_rerun(Runner(), prog, "value", j) == "jit-dependent-rounding"
  answers[True] = (h(0.625), h(0.5))       # tracejax disagrees without jit too
  assert not F._jit_dependent_rounding(Runner(), prog, "value-close", j)
  answers[True] = (h(0.6094), h(0.625))    # JAX's answer does not depend on jit
  assert not F._jit_dependent_rounding(Runner(), prog, "value-close", j)
  answers[True] = (h(0.625), h(0.625))
  f32 = _ok(_leaf(np.float32(0.6094)))   # any precision (seed 313 #374: float32)
  assert F._jit_dependent_rounding(Runner(), prog, "value", f32)
  assert not F._jit_dependent_rounding(Runner(), prog, "weak_type", j)


def test_worker_replies_survive_c_level_stdout_noise():
  # Run 5, seed 312: LAPACK's xerbla wrote "** On entry to SLASCL parameter number 4 had
  # an illegal value" to file descriptor 1 of the JAX worker, which broke the JSON
  # protocol and stopped the fuzzer. The worker (here on tracejax) now sends replies on a
  # private copy of stdout and points fd 1 at stderr.
  import json
  import subprocess
  tools = os.path.dirname(F.__file__)
  env = dict(os.environ, FUZZ_LIB="tracejax", FUZZ_X64="0", FUZZ_CACHE_DIR="")
  p = subprocess.Popen([sys.executable, os.path.join(tools, "_fuzz_common.py"), "--worker"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, env=env, cwd=tools)
  try:
    assert json.loads(p.stdout.readline()) == {"ready": True}
    src = ("import os\ndef main(x):\n  os.write(1, b'** On entry to SLASCL parameter\\n')\n"
           "  print('a stray print')\n  return x * 2\n")
    p.stdin.write(json.dumps({"src": src, "inputs": [{"py": 1.5}], "timeout": 60}) + "\n")
    p.stdin.flush()
    reply = json.loads(p.stdout.readline())
    assert reply["ok"] and reply["leaves"][0]["weak"] == "py:float"
  finally:
    p.kill()
    p.wait(10)


def test_a_hung_tracejax_worker_is_restarted(monkeypatch):
  # Run 10, seed 323 #522: pinv of a non-finite float64 matrix never returned from
  # LAPACK's SVD, in JAX and in tracejax alike; the in-process alarm cannot interrupt C
  # code, so the x64 run stopped there. tracejax now runs in a worker as JAX does: one
  # that does not answer within the read timeout is killed and restarted.
  monkeypatch.setenv("FUZZ_CACHE_DIR", "")
  w = F.JaxWorker(False, python=sys.executable, timeout=11, lib="tracejax")
  try:
    hang = ("import signal, time\ndef main(x):\n"
            "  signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\n"
            "  time.sleep(120)\n  return x\n")
    w.send(hang, [{"py": 1.5}])
    died = w.receive()
    assert died["exc"] == "WorkerDied" and died["msg"] == "tracejax worker"
    assert F.compare(died, dict(died, msg="jax worker")) is None   # both hang: agree
    assert F.compare(_ok(_leaf(np.float32(1))), died) == "timeout:tracejax"
    w.send("def main(x):\n  return x * 2\n", [{"py": 1.5}])
    assert w.receive()["ok"]
  finally:
    w.close()


def test_more_run5_deliberate_entries():
  # seed 312 #2553: vjp at an empty bool array of imag(x ^ 7): JAX computes on the host
  # from the untraced input (strong int32); tracejax traces it (weak).
  prog = {"inputs": [{"dtype": "bool", "shape": [0], "kind": "normal"}],
          "ops": [{"t": "jnp.imag(({0} ^ 7))", "a": ["x0"]}], "out": "v0",
          "stack": [{"t": "vjp", "arg": 0}], "seed": 1}
  assert F._vjp_of_python_int(prog, "weak_type")
  assert not F._vjp_of_python_int(dict(prog, inputs=[dict(prog["inputs"][0], dtype="float32")]),
                                  "weak_type")
  # seed 312 #1846: cumlogsumexp of int32: JAX returns an empty array / raises
  # OverflowError; tracejax raises TypeError naming the dtype.
  t = _err("TypeError", "cumlogsumexp does not accept dtype int32 (operand 0). Accepted "
           "dtypes are subtypes of inexact.")
  j = _ok(_leaf(np.zeros((0, 2), np.int32)))
  assert F.deliberate("lax.cumlogsumexp(v0, axis=0)", j, t) == "cumlogsumexp-int"
  j = _err("OverflowError", "cannot convert float infinity to integer")
  assert F.deliberate("lax.cumlogsumexp(v0, axis=0)", j, t) == "cumlogsumexp-int"
  assert F.deliberate("lax.cumsum(v0, axis=0)", j, t) is None
  # seed 322 #1850: vmap(grad(jit(f))) with an unused cumlogsumexp of an empty int array:
  # JAX's result (a gradient of another input) is not empty. (JAX cannot get past a
  # non-empty int array: -inf as an int is its OverflowError at trace time.)
  assert F.deliberate("lax.cumlogsumexp(v0)", _ok(_leaf(np.zeros(2, np.float32))), t) == \
      "cumlogsumexp-int"
  assert F.deliberate("lax.cumlogsumexp(v0)", _ok(_leaf(np.zeros(2, np.float32))),
                      _err("TypeError", "cumsum does not accept dtype bool")) is None
  with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
    lax.cumlogsumexp(np.zeros((0, 2), np.int32), axis=0)


def test_run5_late_entries():
  # seed 313 #3720: ihfft of a 0-d complex array: JAX IndexError, tracejax TypeError.
  j = _err("IndexError", "tuple index out of range")
  t = _err("TypeError", "jax.numpy.fft.ihfft needs a real input array, got dtype complex64")
  assert F.deliberate("jnp.fft.ihfft(x0, axis=0)", j, t) == "hfft-scalar-error-type"
  assert F.deliberate("jnp.fft.fft(x0, axis=0)", j, t) is None
  # seed 313 #2388: vjp at a uint32 array of clamp(0.0, x / 0, 1.0): JAX divides the
  # untraced input with NumPy (float64); with the function jitted both agree.
  prog = {"inputs": [{"dtype": "uint32", "shape": [3, 3], "kind": "normal"}],
          "ops": [{"t": "({0} / 0)", "a": ["x0"]},
                  {"t": "lax.clamp(0.0, {0}, 1.0)", "a": ["v0"]}],
          "out": "v1", "stack": [{"t": "vjp", "arg": 0}], "seed": 1}

  class Runner:
    def classify(self, p):
      return (None if p["stack"][0] == {"t": "jit"} else "value"), {}, {}

  assert F._vjp_untraced_is_the_cause(Runner(), prog)
  assert not F._vjp_untraced_is_the_cause(
      Runner(), dict(prog, inputs=[dict(prog["inputs"][0], dtype="float32")]))


def test_svd_derivative_noise():
  # seed 309 #812 (x64 on): grad of vjp of lstsq(x, x), exactly 0: JAX ~1e-5, ours ~1e-10.
  j = _ok(_leaf(np.array([-2.002344e-06, 7.705297e-06, 2.144836e-05], np.float32)))
  t = _ok(_leaf(np.array([-4.656613e-10, -4.656613e-10, -2.793968e-09], np.float32)))
  assert F.deliberate("jnp.linalg.lstsq(x0, x0)[0]; jax.vjp", j, t) == "svd-derivative-noise"
  assert F.deliberate("jnp.linalg.inv(x0); jax.vjp", j, t) is None
  assert F.deliberate("jnp.linalg.lstsq(x0, x0)[0]", t, j) is None    # ours the noisier
  far = _ok(_leaf(np.array([0.5, 0., 0.], np.float32)))
  assert F.deliberate("jnp.linalg.lstsq(x0, x0)[0]", far, t) is None  # beyond 1e-4


def test_empty_gather_crash_before_a_later_error():
  # seed 315 #915: ldexp(median(empty), float): JAX's gather crash comes first.
  j = _err("TypeError", "Slice size at index 0 in gather op is out of range, must be "
           "within [0, 0 + 1), got 1.")
  t = _err("ValueError", "ldexp not supported for input types (dtype('float32'), "
           "dtype('float32'))")
  assert F.deliberate("jnp.ldexp(jnp.median(x0, axis=0), x1)", j, t) == \
      "jax-empty-gather-crash"
  assert np.isnan(float(jnp.median(jnp.zeros((0,)), axis=0)))
  with pytest.raises(ValueError, match="ldexp not supported"):
    jnp.ldexp(jnp.median(jnp.zeros((0,)), axis=0), jnp.float32(1.5))


class _RerunRunner:
  """A stand-in for the fuzzer's Runner in causal-rerun tests: the sides agree on the
  programs `agrees_on` accepts and disagree (category `cat`) on the others; every
  program it is asked about is kept in `seen`."""

  def __init__(self, agrees_on, cat):
    self.agrees_on, self.cat, self.seen = agrees_on, cat, []

  def classify(self, p):
    self.seen.append(p)
    return (None if self.agrees_on(p) else self.cat), {}, {}


def test_host_reshape_found_as_the_cause_by_jitting_the_function():
  # seed 316 #1890 (x64 off): `jnp.reshape(x0, (-1,)) // itself` of a bool NumPy input.
  # JAX's jnp.reshape of a NumPy array returns a NumPy array, so the floor division is
  # NumPy's (int8, 0 // 0 = 0) where tracejax's is JAX's traced one (int32, -1). The
  # fuzzer reruns the program with the function jitted (JAX then traces the input as
  # tracejax does) and counts it as jax-host-passthrough if that agrees.
  out = jnp.reshape(np.array([[True], [False]]), (-1,))
  assert isinstance(out, jax.Array)
  np.testing.assert_array_equal(out // out, np.array([1, -1], np.int32))
  prog = {"inputs": [{"dtype": "bool", "shape": [3, 3], "kind": "normal"}],
          "ops": [{"t": "jnp.reshape({0}, (-1,))", "a": ["x0"]},
                  {"t": "({0} // {0})", "a": ["v0"]}],
          "out": "v1", "stack": [], "seed": 1}

  jitted = lambda p: p["stack"][:1] == [{"t": "jit"}]
  r = _RerunRunner(jitted, "dtype")
  assert F._host_value_is_the_cause(r, prog)
  assert r.seen[-1]["stack"] == [{"t": "jit"}]
  assert F._found_by_rerun(_RerunRunner(jitted, "dtype"), prog, "dtype",
                           {"ok": True}) == "jax-host-passthrough"
  assert not F._host_value_is_the_cause(_RerunRunner(lambda p: False, "dtype"), prog)
  no_reshape = dict(prog, ops=[{"t": "({0} // {0})", "a": ["x0"]}], out="v0")
  assert not F._host_value_is_the_cause(_RerunRunner(jitted, "dtype"), no_reshape)
  # seed 345 #2338 (x64): `stop_gradient(x0) // itself` of a Python False. JAX's eager
  # stop_gradient returns the input as a typed Python bool, so the division is Python's
  # (ZeroDivisionError); jitted, JAX gives int32 -1, as tracejax does eagerly too.
  prog = {"inputs": [{"py": False, "shape": [], "dtype": "py"}],
          "ops": [{"t": "lax.stop_gradient({0})", "a": ["x0"]},
                  {"t": "({0} // {0})", "a": ["v0"]}],
          "out": "v1", "stack": [], "seed": 1}
  cat = "tracejax-accepts:ZeroDivisionError [Teger division or modulo by zero]"
  assert F._found_by_rerun(_RerunRunner(jitted, cat), prog, cat,
                           {"ok": False}) == "jax-host-passthrough"
  # ...also when, jitted, JAX meets a documented crash instead (the original of #2338
  # under jacfwd: JAX's float0 crash), but not an undocumented difference
  class Float0Crash:
    def classify(self, p):
      if p["stack"][:1] != [{"t": "jit"}]:
        return cat, {"ok": False}, {"ok": True}
      j = _err("TypeError", "a bytes-like object is required, not 'int'")
      return "tracejax-accepts:TypeError [a bytes-like object is required, not #]", j, \
          _ok(_leaf(np.zeros((2, 1, 4), bool)))
  assert F._host_value_is_the_cause(Float0Crash(), prog)
  assert not F._host_value_is_the_cause(_RerunRunner(lambda p: False, "value"), prog)
  out = lax.stop_gradient(False) // lax.stop_gradient(False)
  assert out.dtype == np.int32 and int(out) == -1


def test_deliberate_log_softmax_int_is_only_the_unsigned_wrap_around():
  # JAX 0.10.2: log_softmax of uint8 [5, 1, 4] is [-inf, -inf, -inf] (its max is
  # subtracted in uint8, wrapping around); tracejax computes in float32 from the start.
  src = "jax.nn.log_softmax({0})"
  ours = jax.nn.log_softmax(np.array([5, 1, 4], np.uint8))
  assert ours.dtype == np.float32 and np.isfinite(np.asarray(ours)).all()
  j = _ok(_leaf(np.full(3, -np.inf, np.float32)))
  t = _ok(_leaf(np.asarray(ours)))
  assert F.deliberate(src, j, t) == "log-softmax-int"
  # A dtype difference, or a finite JAX value, is not this entry (seed 317 #2152: with
  # x64 on, JAX's log_softmax of int32 is float32, which tracejax now matches).
  assert F.deliberate(src, _ok(_leaf(np.float32([-0.3150722]))),
                      _ok(_leaf(np.float64([-0.31507216])))) is None
  assert F.deliberate(src, _ok(_leaf(np.float32([-0.3150722]))),
                      _ok(_leaf(np.float32([-0.3150721])))) is None
  assert F.deliberate(src, _err("TypeError", "sub does not accept dtype bool at position 0"),
                      t) is None


def test_log_softmax_of_ints_has_jax_result_dtype(x64):
  # JAX 0.10.2 (x64 on): exp's promotion of the int dtype (int32 -> float32), and the
  # default float under `where` (JAX's masking against -inf promotes).
  out = jax.nn.log_softmax(np.array([5, -1, 4], np.int32))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [-0.3150722, -6.315072, -1.3150722], rtol=1e-6)
  assert jax.nn.softmax(np.array([1, 2], np.int64)).dtype == np.float64
  assert jax.nn.softmax(np.array([1, 2], np.int8)).dtype == np.float32
  w = jax.nn.softmax(np.array([5, 1, 4], np.int32), where=np.array([True, False, True]))
  assert w.dtype == np.float64
  np.testing.assert_allclose(w, [0.73105858, 0.0, 0.26894142], rtol=1e-7)


def test_unsigned_softmax_found_as_the_cause_by_signed_inputs():
  # seed 319 #406 (x64 on): nansum(softmax(uint64 [9, 8, 5, 6])): JAX 0 (its wrapped-
  # around max subtraction gives NaNs, which nansum drops), tracejax 1. The fuzzer
  # reruns with the unsigned inputs made signed and positive; agreement there makes it
  # the documented log-softmax-int.
  out = jnp.nansum(jax.nn.softmax(np.array([9, 8, 5, 6], np.uint32), axis=0))
  np.testing.assert_allclose(out, 1.0, rtol=1e-6)
  prog = {"inputs": [{"dtype": "uint64", "shape": [4], "kind": "normal"}],
          "ops": [{"t": "jax.nn.softmax({0}, axis=0)", "a": ["x0"]},
                  {"t": "jnp.nansum({0}, axis=-1)", "a": ["v0"]}],
          "out": "v1", "stack": [], "seed": 1}

  signed = lambda p: p["inputs"][0]["dtype"] == "int64"
  r = _RerunRunner(signed, "value")
  assert F._unsigned_softmax_is_the_cause(r, prog)
  assert r.seen[-1]["inputs"][0] == {"dtype": "int64", "shape": [4], "kind": "positive"}
  assert F._found_by_rerun(_RerunRunner(signed, "value"), prog, "value",
                           {"ok": True}) == "log-softmax-int"
  assert not F._unsigned_softmax_is_the_cause(_RerunRunner(lambda p: False, "value"), prog)
  signed_prog = dict(prog, inputs=[{"dtype": "int64", "shape": [4], "kind": "normal"}])
  assert not F._unsigned_softmax_is_the_cause(_RerunRunner(signed, "value"), signed_prog)
  no_softmax = dict(prog, ops=[{"t": "jnp.nansum({0}, axis=-1)", "a": ["x0"]}], out="v0")
  assert not F._unsigned_softmax_is_the_cause(_RerunRunner(signed, "value"), no_softmax)


def test_deliberate_dead_xlogy_of_an_int():
  # seed 318 #2435: jvp of a jitted function whose unused xlogy(complex, 1) JAX
  # differentiates (TypeError from log of the int 1); tracejax drops it.
  j = _err("TypeError", "log does not accept dtype int32. Accepted dtypes are subtypes of "
           "floating, complexfloating.")
  t = _ok(_leaf(np.float32([15.625])))
  src = "v3 = jax.scipy.special.xlogy(v2, 1); f1 = jax.jit(f0); jax.jvp"
  assert F.deliberate(src, j, t) == "jax-dead-code-errors"
  assert F.deliberate(src.replace("jax.jit(f0)", "f0"), j, t) is None
  def dead(x):
    sp.xlogy(x, 1)
    return x * 2
  x = np.array([0.5, 0.25], np.float32)
  _, tan = jax.jvp(jax.jit(dead), (x,), (x,))
  assert tan.tolist() == [1.0, 0.5]


def test_deliberate_clip_mode_extremal_scatter_derivative():
  # seed 320 #1643: jacrev of x.at[[1, -4]].min(3.0, mode='clip'); JAX's jacfwd of the
  # same gives NaN for the row the clipped -4 updates (values recorded from JAX 0.10.2).
  x = jnp.array([[5., 5.], [6., 6.]])
  f = lambda x: x.at[jnp.array([-4])].min(3.0, mode="clip")
  np.testing.assert_array_equal(f(x), [[3., 3.], [6., 6.]])
  d = np.diag(np.asarray(jax.jacfwd(f)(x)).reshape(4, 4))
  np.testing.assert_array_equal(d, [0., 0., 1., 1.])   # JAX: [nan, nan, 1, 1]
  src = "x0.at[jnp.array([-4])].min(3.0, mode='clip'); f1 = jax.jacfwd(f0)"
  j = _ok(_leaf(np.float32([np.nan, np.nan, 1, 1])))
  t = _ok(_leaf(np.float32(d)))
  assert F.deliberate(src, j, t) == "scatter-extremal-clip-derivative"
  assert F.deliberate(src.replace("jax.jacfwd(f0)", "f0"), j, t) is None
  assert F.deliberate(src.replace("mode='clip'", "mode='drop'"), j, t) is None
  assert F.deliberate(src, j, _ok(_leaf(np.float64(d)))) is None


def test_deliberate_jax_fft_layout_crash():
  # seed 321 #2098: grad of jit(norm(fft2(x), 2)); JAX's XLA program fails a layout check.
  src = "v0 = jnp.fft.fft2(x1); v1 = jnp.linalg.norm(v0, 2); f1 = jax.jit(f0)"
  j = _err("JaxRuntimeError", "INTERNAL: RET_CHECK failure (external/xla/xla/backends/cpu/"
           "runtime/fft_thunk.cc:168) LayoutUtil::IsMonotonicWithDim0Major(input_shape_."
           "layout())")
  t = _ok(_leaf(np.zeros((3, 1))))
  assert F.deliberate(src, j, t) == "jax-fft-layout-crash"
  assert F.deliberate(src, j, dict(j)) is None   # both crashing is plain agreement
  assert F.deliberate("v1 = jnp.linalg.norm(v0, 2)", j, t) is None
  x = np.array([[0.7246, 2.3848], [1.0361, 1.084]], np.float16)
  g = jax.grad(jax.jit(lambda x: jnp.linalg.norm(jnp.fft.fft2(x), 2)))(x.astype(np.float32))
  assert g.shape == (2, 2) and np.isfinite(np.asarray(g)).all()


def test_run9_widened_entries():
  # seed 320 #2445: jit(value_and_grad(jvp)) of a windowed sum of an empty complex array:
  # JAX's generic reduce_window JVP fails on the symbolic zero; tracejax has no transpose.
  src = "lax.reduce_window(v0, jnp.asarray(0, jnp.asarray(v0).dtype), lax.add, (2,)"
  j = _err("ValueError", "Operands must have the same tree structure as init_values: "
           "PyTreeDef([*, *, *, CustomNode(Zero[complex64[0]], [])]) vs. PyTreeDef([*, *, *, *])")
  t = _err("NotImplementedError", "Transpose rule (for reverse-mode differentiation) for "
           "'reduce_window' not implemented")
  assert F.deliberate(src, j, t) == "generic-reduce-window-rev"
  assert F.deliberate("lax.add(v0, v0)", j, t) is None
  # seed 321 #4623: hessian through an identity fori_loop of a bool input, then .at: JAX
  # returns the NumPy input itself (AttributeError on .at); tracejax meets jacrev's
  # real-output check instead.
  src = "lax.fori_loop(0, 3, lambda i, v: (lambda v: v)(v), x0); v0.at[([-1, 0],)].max"
  j = _err("AttributeError", "'numpy.ndarray' object has no attribute 'at'")
  t = _err("TypeError", "jacrev requires real-valued outputs (output dtype that is a "
           "sub-dtype of np.floating), but got bool.")
  assert F.deliberate(src, j, t) == "jax-host-passthrough"
  assert F.deliberate(src, j, _err("TypeError", "something else")) is None


def test_fused_atan2_zero_found_by_rerunning_without_jit():
  # seed 321 #2677 (x64): arctan2(v, v) of a computed integer 0 under vjp+jit. XLA's
  # fused atan2 gives NaN for (0, 0) in some programs: JAX's program here gives 0 and
  # tracejax's NaN, the minimised one the other way round; without jit both give 0.
  prog = {"inputs": [{"dtype": "int64", "shape": [2, 3], "kind": "positive"}],
          "ops": [{"t": "jnp.amax({0})", "a": ["x0"]}, {"t": "({0} ^ {1})", "a": ["v0", "v0"]},
                  {"t": "({0} % {1})", "a": ["v0", "v1"]},
                  {"t": "jnp.arctan2({0}, {1})", "a": ["v2", "v2"]}],
          "out": "v3", "stack": [{"t": "jit"}], "seed": 1}
  nan, zero = _ok(_leaf(np.float64(np.nan))), _ok(_leaf(np.float64(0.0)))

  class Runner:
    def __init__(self, eager):
      self.eager = eager

    def classify(self, p):
      assert p["stack"][-1] == {"t": "disable_jit"}
      return (None if self.eager[0] == self.eager[1] else "value-nan"), None

  assert F._fused_atan2_zero(Runner((zero, zero)), prog, "value-nan")
  assert F._found_by_rerun(Runner((zero, zero)), prog, "value-nan", nan) == \
      "xla-fused-atan2-zero"
  assert not F._fused_atan2_zero(Runner((zero, nan)), prog, "value-nan")  # eager too
  assert not F._fused_atan2_zero(Runner((zero, zero)), prog, "value-close")
  other = dict(prog, ops=prog["ops"][:3] + [{"t": "jnp.sin({0})", "a": ["v2"]}])
  assert not F._fused_atan2_zero(Runner((zero, zero)), other, "value-nan")
  # eagerly atan2(0, 0) is 0 (under jit it is XLA's to decide: NaN with jaxlib 0.10.2)
  assert jnp.arctan2(jnp.asarray(4) % 0, jnp.asarray(4) % 0) == 0


def test_the_documented_list_and_the_fuzzers_tests_name_the_same_differences():
  # Every name the fuzzer counts (a DELIBERATE test, or a causal rerun's verdict) has its
  # reasoned entry in README.md's "Deliberate differences from JAX", and no entry lacks
  # a test.
  import re
  with open(os.path.join(os.path.dirname(F.__file__), os.pardir, "README.md")) as fh:
    readme = fh.read()
  start = readme.index("## Deliberate differences from JAX")
  section = readme[start:readme.index("\n## ", start + 1)]
  documented = set(re.findall(r"^\* `([a-z0-9-]+)`", section, re.M))
  with open(F.__file__) as fh:
    src = fh.read()
  reruns = src[src.index("def _found_by_rerun"):src.index("DELIBERATE = [")]
  counted = {n for n, _ in F.DELIBERATE} | set(re.findall(r'return "([a-z0-9-]+)"', reruns))
  assert "xla-fused-atan2-zero" in counted and "jax-float0-crash" in counted
  assert counted == documented, (sorted(counted - documented), sorted(documented - counted))


def test_half_precision_noise_found_by_rerunning_in_float32():
  # seed 324 #4249: jacrev of zeta(x, x) in bfloat16 at x = 0.1099: JAX -0.625, tracejax
  # -0.703 (-0.586 jitted), float32 -0.7414 on both sides.
  prog = {"inputs": [{"dtype": "bfloat16", "shape": [1], "kind": "normal"}],
          "ops": [{"t": "jax.scipy.special.zeta({0}, {1})", "a": ["x0", "x0"]}],
          "out": "v0", "stack": [{"t": "jacrev", "argnums": 0}], "seed": 1}
  import ml_dtypes
  bf = lambda v: _ok(_leaf(np.array([v], np.float32).astype(ml_dtypes.bfloat16)))
  f32 = lambda v: _ok(_leaf(np.array([v], np.float32)))

  class Runner:
    def __init__(self, j32, t32):
      self.j32, self.t32, self.seen = j32, t32, []

    def classify(self, p):
      self.seen.append(p)
      return F.compare(self.j32, self.t32), self.j32, self.t32

  r = Runner(f32(-0.7414298), f32(-0.74142957))
  assert F._half_precision_noise(r, prog, "value-close", bf(-0.625))
  assert r.seen[0]["inputs"][0]["dtype"] == "float32"
  assert F._found_by_rerun(r, prog, "value-close", bf(-0.625)) == "half-precision-noise"
  # JAX's half answer near its float32 one: tracejax's is the one off, not counted
  assert not F._half_precision_noise(r, prog, "value-close", bf(-0.742))
  # the two disagree in float32 too
  assert not F._half_precision_noise(Runner(f32(-0.74), f32(-0.5)), prog, "value-close",
                                     bf(-0.625))
  # not a half-precision program, or not a value difference
  p32 = dict(prog, inputs=[dict(prog["inputs"][0], dtype="float32")])
  assert not F._half_precision_noise(r, p32, "value-close", bf(-0.625))
  assert not F._half_precision_noise(r, prog, "weak_type", bf(-0.625))


def test_deliberate_mask_update_select():
  # seed 330 #437: jacfwd(jit(f)) where f has x.at[[True]].mul(x0, mode='drop'): JAX
  # makes the mask indices and has no scatter_mul derivative for them; here the masked
  # update is a select, with a derivative.
  j = _err("NotImplementedError",
           "scatter_mul gradients are only implemented if `unique_indices=True`")
  src = "v1.at[([True] * 1,)].mul(x0, mode='drop'); jax.jacfwd(f1, argnums=0)"
  assert F.deliberate(src, j, _ok(_leaf(np.float32([1.0])))) == "mask-update-select"
  assert F.deliberate(src.replace(".mul(", ".add("), j, _ok(_leaf(np.float32([1.0])))) is None
  t = _err("NotImplementedError",
           "scatter_mul gradients are only implemented if `unique_indices=True`")
  assert F.deliberate(src, j, t) is None  # both raise: agreement, not this entry
  g = jax.jacfwd(lambda x: jnp.zeros(1).at[np.array([True])].mul(x))(0.0)
  np.testing.assert_array_equal(g, [0.0])
  with pytest.raises(NotImplementedError, match="unique_indices=True"):
    jax.jacfwd(lambda x: x.at[np.array([0, 2])].mul(x[:2]))(jnp.arange(3.))


def test_complex_all_any_found_by_rerunning_with_nonzero_tests():
  # seed 332 #5218: jnp.all(x - (1-2j)) of a uint8 x holding a 1: every value has the
  # imaginary part 2, so NumPy and tracejax say True; JAX's all keeps the real parts
  # only (0 for x = 1) and says False. The rerun gives all/any `x != 0` on both sides.
  prog = {"inputs": [{"dtype": "uint8", "shape": [3], "kind": "normal"}],
          "ops": [{"t": "({0} - (1-2j))", "a": ["x0"]},
                  {"t": "jnp.all({0}, axis=None)", "a": ["v0"]}],
          "out": "v1", "stack": [], "seed": 1}

  class Runner:
    def __init__(self):
      self.seen = []

    def classify(self, p):
      self.seen.append(p)
      return (None if "not_equal" in p["ops"][1]["t"] else "value"), {}, {}

  r = Runner()
  assert F._complex_all_any_is_the_cause(r, prog)
  variant = r.seen[-1]["ops"][1]["t"]
  assert variant.startswith("(lambda a, *r, **k: jnp.all(jnp.not_equal(a, 0), *r, **k))(")
  assert F._found_by_rerun(r, prog, "value", {"ok": True, "leaves": []}) == "complex-all-any"
  assert not F._complex_all_any_is_the_cause(r, dict(prog, ops=prog["ops"][:1]))
  # tracejax: nonzero is true, as NumPy (and as JAX's astype(bool))
  z = jnp.array([2j, 0j, 1 + 0j], jnp.complex64)
  assert bool(jnp.all(z[:1])) and bool(jnp.any(z[:2])) and not bool(jnp.any(z[1:2]))
  np.testing.assert_array_equal(z.astype(bool), [True, False, True])
  np.testing.assert_array_equal(jnp.astype(z, bool), [True, False, True])
  np.testing.assert_array_equal(jax.jit(lambda v: v.astype(bool))(z), [True, False, True])
