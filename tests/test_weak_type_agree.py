"""Weak types (and dtypes) that agree with JAX 0.10.2 (issue 13, the differential
fuzzer's weak_type finds), recorded from JAX and written here as literals.

The general rules behind them:
* autodiff's `add_any`, traced, has its first operand's type; run eagerly it is an
  ordinary sum (weak only when both are): `jit(vjp(x / median(x)))` at a Python float;
* a weak loop carry whose body output is strong becomes strong (once, before the
  loop), and the loop's result keeps that carry type (`while_loop`, `scan`): gcd/lcm;
* a weak array's cotangent through a slice's transpose (a pad with a strong zero)
  is strong, through a split's (a concatenation) it stays weak: roll, fftshift
  (two slices even for a zero shift), split, polyval;
* dot/matmul/tensordot/inner/vdot/einsum give dot_general the operands unconverted
  (each keeps its weak type) and convert the product at the end; dot_general's result
  is weak when both operands are, even with a preferred_element_type;
* a jnp function that promotes a weak operand against a strong constant (jnp.where in
  nan_to_num and trace) stages a weak-to-strong conversion whose transpose re-weakens
  the cotangent.
"""
import os
import sys

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.config import config


def _cases():
  W = lambda v, s: jnp.broadcast_to(jnp.asarray(v), s)   # a weak array of shape s
  def vjp_half(f, x):
    o, fn = jax.vjp(f, x)
    return o, fn(jnp.ones_like(o) * 0.5)[0]
  S = lambda c: c * np.array(1, c.dtype)                    # strong result, same dtype
  PAIR = lambda: (W(2, (1,)), W(2, (1,)))                   # two weak carries
  C = {
    # r_201: jit(vjp) of x / median(x) at a Python float (x64)
    "median_div_jit": lambda: (
        jax.jit(lambda x: vjp_half(lambda d: jnp.true_divide(d, jnp.median(d)), x))(np.nan)),
    "median_div_eager": lambda: vjp_half(lambda d: jnp.true_divide(d, jnp.median(d)), 1.5),
    "median_jit": lambda: jax.jit(lambda x: vjp_half(jnp.median, x))(1.5),
    "two_uses_jit": lambda: (
        jax.jit(lambda x: vjp_half(lambda d: d * jnp.float32(2) + jnp.sum(d), x))(1.5)),
    # r_203 00505: gcd/lcm of weak arrays
    "lcm_atleast_2d": lambda: jnp.lcm(jnp.atleast_2d(0), jnp.atleast_2d(0)),
    "gcd_w0": lambda: jnp.gcd(jnp.asarray(4), jnp.asarray(6)),
    "gcd_py": lambda: jnp.gcd(4, 6),
    "gcd_w1": lambda: jnp.gcd(W(4, (2,)), W(6, (2,))),
    "gcd_w1_py": lambda: jnp.gcd(W(4, (2,)), 6),
    "lcm_w1_py": lambda: jnp.lcm(W(4, (2,)), 6),
    "gcd_jit_w1": lambda: jax.jit(jnp.gcd)(W(4, (2,)), W(6, (2,))),
    "lcm_strong": lambda: jnp.lcm(jnp.asarray([4], jnp.int32), 6),
    # loops: a weak carry meeting a strong body output
    "while_w1": lambda: lax.while_loop(lambda c: False, S, W(2, (1,))),
    "while_py": lambda: lax.while_loop(lambda c: False, S, 2),
    "while_weak_body": lambda: lax.while_loop(lambda c: False, lambda c: c + 1, W(2, (1,))),
    "while_pair": lambda: (
        lax.while_loop(lambda c: False, lambda c: (c[0] + c[1], S(c[1])), PAIR())),
    "while_fwd": lambda: (
        lax.while_loop(lambda c: False, lambda c: (c[1], S(c[1])), PAIR())),
    "fori_pair": lambda: (
        lax.fori_loop(0, 1, lambda i, c: (c[0] + c[1], S(c[1])), PAIR())),
    "scan_pair": lambda: (
        lax.scan(lambda c, x: ((c[0] + c[1], S(c[1])), None), PAIR(), None, length=1)[0]),
    "jit_while_w1": lambda: jax.jit(lambda w: lax.while_loop(lambda c: False, S, w))(W(2, (1,))),
    # r_204: vjp of x[..., None] then fftshift, and the roll family
    "fftshift_index_vjp": lambda: vjp_half(lambda d: jnp.fft.fftshift(d[..., None]), 1 - 0.5j),
    "fftshift_vjp": lambda: vjp_half(jnp.fft.fftshift, W(1.5, (4,))),
    "ifftshift_vjp": lambda: vjp_half(lambda d: jnp.fft.ifftshift(d, 0), W(1.5, (3, 2))),
    "roll0_vjp": lambda: vjp_half(lambda d: jnp.roll(d, 0), W(1.5, (3,))),
    "roll_vjp": lambda: vjp_half(lambda d: jnp.roll(d, 1, 0), W(1.5, (3, 2))),
    "roll_none_vjp": lambda: vjp_half(lambda d: jnp.roll(d, 2), W(1.5, (3, 2))),
    "index_vjp": lambda: vjp_half(lambda d: d[..., None], 1.5),
    "split_vjp": lambda: vjp_half(lambda d: jnp.split(d, 3, 1)[0], W(1.5, (2, 3))),
    "array_split_vjp": lambda: vjp_half(lambda d: jnp.array_split(d, 2)[1], W(1.5, (3, 2))),
    "slice_vjp": lambda: vjp_half(lambda d: lax.slice(d, (0,), (1,)), W(1.5, (2,))),
    # contractions: operands keep their weak types; the result is promoted at the end
    "dot_w_s_vjp": lambda: vjp_half(lambda d: jnp.dot(d, jnp.float32(2)), W(1.5, (2, 2))),
    "matmul_w_s_vjp": lambda: vjp_half(lambda d: d @ jnp.ones((2, 1), jnp.float32), W(1.5, (2, 2))),
    "tensordot_vjp": lambda: (
        vjp_half(lambda d: jnp.tensordot(d, jnp.float32(2), 0), jnp.asarray(1.5))),
    "inner_vjp": lambda: vjp_half(lambda d: jnp.inner(d, jnp.ones(2, jnp.float32)), W(1.5, (2,))),
    "vdot_vjp": lambda: vjp_half(lambda d: jnp.vdot(d, jnp.ones(2, jnp.float32)), W(1.5, (2,))),
    "einsum_vjp": lambda: (
        vjp_half(lambda d: jnp.einsum("i,i->", d, jnp.ones(2, jnp.float32)), W(1.5, (2,)))),
    "dot_w_w": lambda: jnp.dot(W(1.5, (2,)), W(1.5, (2,))),
    "dot_w_int": lambda: jnp.dot(W(1.5, (2,)), jnp.arange(2)),
    "dot_int_py": lambda: jnp.dot(jnp.arange(2), 2.0),
    "matmul_w_int": lambda: jnp.matmul(jnp.arange(4).reshape(2, 2), W(1.5, (2,))),
    "einsum_w_int": lambda: jnp.einsum("i,i->i", W(1.5, (2,)), jnp.arange(2)),
    "dot_pref_w_w_vjp": lambda: (
        vjp_half(lambda d: jnp.dot(d, W(1.5, (2,)), preferred_element_type=jnp.float32),
                 W(1.5, (2,)))),
    "lax_dot_pref_w_w": lambda: (
        lax.dot(W(1.5, (2,)), W(1.5, (2,)), preferred_element_type=jnp.float32)),
    "lax_dot_pref_w_s": lambda: (
        lax.dot(W(1.5, (2,)), jnp.ones(2), preferred_element_type=jnp.float32)),
    # other jnp functions whose weak operand meets a strong constant
    "nan_to_num_vjp": lambda: vjp_half(jnp.nan_to_num, W(1.5, (2, 2))),
    "trace_vjp": lambda: vjp_half(jnp.trace, W(1.5, (2, 2))),
    "trace_offset": lambda: jnp.trace(jnp.arange(24.).reshape(2, 3, 4), -1, 0, 2, dtype=jnp.int32),
    "polyval_vjp": lambda: vjp_half(lambda d: jnp.polyval(d, 2.), W(1.5, (3,))),
    "polyval_2d_vjp": lambda: vjp_half(lambda d: jnp.polyval(d, d[0]), W(1.5, (2, 2))),
    "polyval_empty": lambda: jnp.polyval(jnp.zeros(0), 2.),
    "interp_vjp": lambda: (
        vjp_half(lambda d: jnp.interp(d, jnp.array([0., 1.]), jnp.array([0., 1.])),
                 W(0.5, (2, 2)))),
    # vjp of a jitted identity of a 0-d Array: an Array, weak as its input
    "vjp_jit_id_0d": lambda: vjp_half(jax.jit(lambda d: d), jnp.asarray(1.5)),
  }
  return C


# JAX 0.10.2's (dtype, weak_type) of each leaf: (x64 off, x64 on).
EXPECTED = {
    'median_div_jit': ((('float32', False), ('float32', True)),
                       (('float64', False), ('float64', True))),
    'median_div_eager': ((('float32', False), ('float32', False)),
                         (('float64', False), ('float64', False))),
    'median_jit': ((('float32', False), ('float32', False)),
                   (('float64', False), ('float64', False))),
    'two_uses_jit': ((('float32', False), ('float32', True)),
                     (('float64', False), ('float64', True))),
    'lcm_atleast_2d': ((('int32', False),),
                       (('int64', False),)),
    'gcd_w0': ((('int32', True),),
               (('int64', True),)),
    'gcd_py': ((('int32', True),),
               (('int64', True),)),
    'gcd_w1': ((('int32', False),),
               (('int64', False),)),
    'gcd_w1_py': ((('int32', False),),
                  (('int64', False),)),
    'lcm_w1_py': ((('int32', False),),
                  (('int64', False),)),
    'gcd_jit_w1': ((('int32', False),),
                   (('int64', False),)),
    'lcm_strong': ((('int32', False),),) * 2,
    'while_w1': ((('int32', False),),
                 (('int64', False),)),
    'while_py': ((('int32', False),),
                 (('int64', False),)),
    'while_weak_body': ((('int32', True),),
                        (('int64', True),)),
    'while_pair': ((('int32', True), ('int32', False)),
                   (('int64', True), ('int64', False))),
    'while_fwd': ((('int32', True), ('int32', False)),
                  (('int64', True), ('int64', False))),
    'fori_pair': ((('int32', True), ('int32', False)),
                  (('int64', True), ('int64', False))),
    'scan_pair': ((('int32', True), ('int32', False)),
                  (('int64', True), ('int64', False))),
    'jit_while_w1': ((('int32', False),),
                     (('int64', False),)),
    'fftshift_index_vjp': ((('complex64', True), ('complex64', False)),
                           (('complex128', True), ('complex128', False))),
    'fftshift_vjp': ((('float32', True), ('float32', False)),
                     (('float64', True), ('float64', False))),
    'ifftshift_vjp': ((('float32', True), ('float32', False)),
                      (('float64', True), ('float64', False))),
    'roll0_vjp': ((('float32', True), ('float32', False)),
                  (('float64', True), ('float64', False))),
    'roll_vjp': ((('float32', True), ('float32', False)),
                 (('float64', True), ('float64', False))),
    'roll_none_vjp': ((('float32', True), ('float32', False)),
                      (('float64', True), ('float64', False))),
    'index_vjp': ((('float32', True), ('float32', True)),
                  (('float64', True), ('float64', True))),
    'split_vjp': ((('float32', True), ('float32', True)),
                  (('float64', True), ('float64', True))),
    'array_split_vjp': ((('float32', True), ('float32', True)),
                        (('float64', True), ('float64', True))),
    'slice_vjp': ((('float32', True), ('float32', False)),
                  (('float64', True), ('float64', False))),
    'dot_w_s_vjp': ((('float32', False), ('float32', False)),
                    (('float32', False), ('float64', True))),
    'matmul_w_s_vjp': ((('float32', False), ('float32', False)),
                       (('float32', False), ('float64', True))),
    'tensordot_vjp': ((('float32', False), ('float32', False)),
                      (('float32', False), ('float64', True))),
    'inner_vjp': ((('float32', False), ('float32', False)),
                  (('float32', False), ('float64', True))),
    'vdot_vjp': ((('float32', False), ('float32', False)),
                 (('float32', False), ('float64', True))),
    'einsum_vjp': ((('float32', False), ('float32', False)),
                   (('float32', False), ('float64', True))),
    'dot_w_w': ((('float32', True),),
                (('float64', True),)),
    'dot_w_int': ((('float32', True),),
                  (('float64', True),)),
    'dot_int_py': ((('float32', True),),
                   (('float64', True),)),
    'matmul_w_int': ((('float32', True),),
                     (('float64', True),)),
    'einsum_w_int': ((('float32', True),),
                     (('float64', True),)),
    'dot_pref_w_w_vjp': ((('float32', False), ('float32', True)),
                         (('float32', False), ('float64', True))),
    'lax_dot_pref_w_w': ((('float32', True),),) * 2,
    'lax_dot_pref_w_s': ((('float32', False),),) * 2,
    'nan_to_num_vjp': ((('float32', False), ('float32', True)),
                       (('float64', False), ('float64', True))),
    'trace_vjp': ((('float32', False), ('float32', True)),
                  (('float64', False), ('float64', True))),
    'trace_offset': ((('int32', False),),) * 2,
    'polyval_vjp': ((('float32', False), ('float32', True)),
                    (('float64', False), ('float64', True))),
    'polyval_2d_vjp': ((('float32', False), ('float32', False)),
                       (('float64', False), ('float64', False))),
    'polyval_empty': ((('float32', False),),
                      (('float64', False),)),
    'interp_vjp': ((('float32', False), ('float32', True)),
                   (('float64', False), ('float64', True))),
    'vjp_jit_id_0d': ((('float32', True), ('float32', True)),
                      (('float64', True), ('float64', True))),
}


@pytest.fixture(params=[False, True], ids=["x64_off", "x64_on"])
def x64_mode(request):
  old = config.jax_enable_x64
  config.update("jax_enable_x64", request.param)
  try:
    yield request.param
  finally:
    config.update("jax_enable_x64", old)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_weak_types_as_jax(name, x64_mode):
  out = _cases()[name]()
  leaves = jax.tree_util.tree_leaves(out)
  got = tuple((str(np.asarray(x).dtype), getattr(x, "weak_type", "host")) for x in leaves)
  assert got == EXPECTED[name][int(x64_mode)]
  # Every leaf is a device Array (a jit returns new Arrays, never a NumPy value).
  assert all(isinstance(x, jax.Array) for x in leaves)


def test_values_unchanged():
  # gcd/lcm of weak arrays, trace by masking, polyval over split coefficients (JAX).
  np.testing.assert_array_equal(jnp.gcd(jnp.broadcast_to(jnp.asarray(12), (2,)), 18), [6, 6])
  np.testing.assert_array_equal(jnp.lcm(jnp.atleast_2d(4), 6), [[12]])
  np.testing.assert_array_equal(
      jnp.trace(jnp.arange(24.).reshape(2, 3, 4), -1, 0, 2, dtype=jnp.int32), [12, 16, 20])
  assert float(jnp.trace(jnp.ones((3, 3)), 5)) == 0.0
  assert float(jnp.trace(jnp.ones((0, 3)))) == 0.0
  np.testing.assert_allclose(jnp.polyval(jnp.array([[1., 2.], [3., 4.]]), jnp.array([1., 2.])),
                             [4., 8.])
  assert float(jnp.polyval(jnp.array([1., 2., 3.]), 2.)) == 11.0
  np.testing.assert_array_equal(jnp.roll(jnp.arange(5), 2), [3, 4, 0, 1, 2])
  np.testing.assert_array_equal(jnp.roll(jnp.arange(6).reshape(2, 3), -1, 1),
                                [[1, 2, 0], [4, 5, 3]])
  np.testing.assert_array_equal(jnp.fft.fftshift(jnp.arange(5)), [3, 4, 0, 1, 2])
  assert [p.shape for p in jnp.split(jnp.zeros((4, 3)), [1, 3])] == [(1, 3), (2, 3), (1, 3)]
  # Indices out of order keep NumPy's overlapping pieces (JAX: a ValueError).
  assert [p.shape for p in jnp.split(jnp.zeros((4, 3)), [3, 1])] == [(3, 3), (0, 3), (3, 3)]
  assert float(jnp.dot(jnp.arange(2), 2.0).sum()) == 2.0
  pullback = jax.vjp(lambda d: jnp.roll(d, 1), jnp.arange(3.))[1]
  np.testing.assert_array_equal(pullback(jnp.array([1., 2., 3.]))[0], [2., 3., 1.])


def test_errors_as_jax():
  with pytest.raises(ValueError, match="axis 0 is out of bounds for array of dimension 0"):
    jnp.roll(jnp.asarray(1.5), 1, 0)
  with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
    jnp.trace(jnp.ones(3))
  with pytest.raises(ValueError,
                     match="axis1 and axis2 can not be same. axis1=0 and axis2=-2"):
    jnp.trace(jnp.ones((3, 3)), axis1=0, axis2=-2)
  with pytest.raises(TypeError, match="trace requires ndarray or scalar arguments"):
    jnp.trace([[1, 2], [3, 4]])


def test_add_any_eager_and_traced():
  from tracejax._src.interpreters import ad
  w, s = jnp.asarray(1.5), jnp.float32(2)
  # Eagerly, JAX's sum of two tangents is weak only when both are...
  assert not ad.add_any_p.bind(w, s).weak_type
  assert not ad.add_any_p.bind(s, w).weak_type
  assert ad.add_any_p.bind(w, w).weak_type
  # ...traced, it has its first operand's type.
  assert jax.jit(ad.add_any_p.bind)(w, s).weak_type
  assert not jax.jit(ad.add_any_p.bind)(s, w).weak_type
  assert float(ad.add_any_p.bind(w, s)) == 3.5


def test_fuzz_host_leaf_with_weak_type_is_deliberate():
  # JAX's zero tangent of jvp under checkpoint is a host TypedNdArray with weak_type
  # True; tracejax gives a weak device Array: the documented jax-host-passthrough.
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                  "tools"))
  import fuzz_vs_jax as F
  leaf = {"dtype": "float64", "shape": [], "b64": "AAAAAAAAAAA="}
  j = {"ok": True, "leaves": [dict(leaf, weak="host:weak")]}
  assert F.deliberate("", j, {"ok": True, "leaves": [dict(leaf, weak=True)]}) == \
      "jax-host-passthrough"
  assert F.deliberate("", j, {"ok": True, "leaves": [dict(leaf, weak=False)]}) is None
  j = {"ok": True, "leaves": [dict(leaf, weak="host")]}
  assert F.deliberate("", j, {"ok": True, "leaves": [dict(leaf, weak=False)]}) == \
      "jax-host-passthrough"
