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
  the cotangent;
* linearizing a (non-inline) jit, JAX types the tangents it is given as their primals
  and transposes it traced: a weak primal's strong tangent is weak inside it, and
  cotangents summed inside it take the first one's type even in an eager grad.
"""
import os
import sys

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax


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


# ---- run 3 of the fuzzer (seeds 300-302) and jnp.ldexp ----
# * jacrev/jacfwd unravel a Jacobian with one split (its transpose a concatenation keeps
#   a weak cotangent weak), as JAX does; slices (a pad with a strong zero) made it strong;
# * igamma's x-rule builds its 1 as a full_like of `a` (weak when `a` is) and promotes
#   as JAX's operators do (a weak tangent meeting a strong factor is cast to strong);
# * `where` is a jit of its own (not inline) and the inline jits of jnp functions type a
#   forward JVP's tangents as their primals: a tangent a rule made strong (x**2's) is
#   weak again inside, as JAX's jit JVP gives; vmap of an empty where is a new Array;
# * a cond's branches are transposed at the cotangents' own types (a strong cotangent of
#   a weak output stays strong);
# * jnp.ldexp casts a weak x1 to strong first, so its cotangent is weak again.
def _cases_run3():
  import tracejax.nn  # noqa: F401  (jax.nn.sparse_plus)
  import tracejax.scipy.special  # noqa: F401
  W = lambda v, s: jnp.broadcast_to(jnp.asarray(v), s)   # a weak array of shape s
  def vjp_half(f, x):
    o, fn = jax.vjp(f, x)
    return o, fn(jnp.ones_like(o) * 0.5)[0]
  def jvp_half(f, x):
    return jax.jvp(f, (x,), (jnp.ones_like(x) * 0.5,))
  sc = lambda o: jnp.sum(jnp.real(o))
  gammainc = jax.scipy.special.gammainc
  A = lambda: jnp.array([0.5, 1., 2.])                      # strong, the default float
  I3 = lambda: np.array([-3, 0, 1], np.int32)
  cond_sq = lambda d: lax.cond(True, jnp.square, jnp.negative, d)
  cond2 = lambda d: lax.cond(True, lambda a: a * 2, jnp.negative, d)
  sin_sq = lambda d: jnp.sin(d ** 2)
  where_sq = lambda d: jnp.where(d > 0, d ** 2, d)
  E = lambda: np.zeros((3, 2, 0), np.float32)
  C = {
    # r3 s300 455: jacrev unravels its cotangent basis with one split (not slices)
    "jacrev_dot_vjp": lambda: vjp_half(jax.jacrev(lambda x: jnp.dot(x, x)), 1.5),
    "jacrev_mul_vjp": lambda: vjp_half(jax.jacrev(lambda x: x * x), 1.5),
    "jacrev_w1_vjp": lambda: vjp_half(jax.jacrev(lambda x: jnp.sin(x) * x), W(1.5, (2,))),
    "jacfwd_w1_vjp": lambda: vjp_half(jax.jacfwd(lambda x: jnp.sin(x) * x), W(1.5, (2,))),
    "jacrev_argnums_vjp": lambda: vjp_half(
        lambda x: jax.jacrev(lambda a, b: a * b, argnums=(0, 1))(x, jnp.float32(2))[0], 1.5),
    "hessian_vjp": lambda: vjp_half(jax.hessian(lambda x: jnp.sum(x ** 3)), W(1.5, (2,))),
    # r3 s300 2937: igamma's x-rule (1 as a full_like of a; jnp promotion as JAX's operators)
    "gammainc_int_a_vjp": lambda: vjp_half(lambda d: gammainc(I3(), d), 1.5),
    "vmap_gammainc_min_vjp": lambda: jax.vmap(lambda a: vjp_half(
        lambda d: jnp.min(gammainc(a, d), axis=-1), 1.5))(I3()[None, None]),
    "igamma_mixed_vjp": lambda: vjp_half(lambda d: lax.igamma(A(), jnp.broadcast_to(d, (3,))), 1.5),
    "igammac_mixed_vjp": lambda: (
        vjp_half(lambda d: lax.igammac(A(), jnp.broadcast_to(d, (3,))), 1.5)),
    "igamma_a_vjp": lambda: vjp_half(lambda d: lax.igamma(d, A()), W(1.5, (3,))),
    # r3 s301 1590: where is a jit of its own; jnp functions type tangents as primals
    "sparse_plus_reshape_jvp": lambda: jvp_half(
        lambda d: jax.nn.sparse_plus(lax.reshape(d, (1,))), -np.inf),
    "sparse_plus_w1_jvp": lambda: jvp_half(jax.nn.sparse_plus, W(0.5, (3,))),
    "where_sq_jvp": lambda: jvp_half(where_sq, W(0.5, (3,))),
    "jit_where_sq_jvp": lambda: jvp_half(jax.jit(where_sq), W(0.5, (3,))),
    "sin_sq_jvp": lambda: jax.jvp(sin_sq, (W(0.5, (3,)),), (jnp.ones(3),)),
    "div_sq_jvp": lambda: jvp_half(lambda d: d ** 2 / 4, W(0.5, (3,))),
    "jit_sin_sq_jvp": lambda: jax.jvp(jax.jit(sin_sq), (W(0.5, (3,)),), (jnp.ones(3),)),
    "jvp_vmap_sin_sq": lambda: jax.jvp(jax.vmap(sin_sq), (W(0.5, (3,)),), (jnp.ones(3),)),
    "vmap_jvp_sin_sq": lambda: jax.vmap(lambda a: jax.jvp(sin_sq, (a,), (jnp.ones_like(a),)))(
        W(0.5, (3,))),
    "lax_select_jvp": lambda: jax.jvp(lambda d: lax.select(d > 0, d, d), (W(0.5, (3,)),),
                                      (jnp.ones(3),)),
    "linearize_sin_sq": lambda: jax.linearize(sin_sq, W(0.5, (3,)))[1](jnp.ones(3)),
    "vjp_sin_sq": lambda: vjp_half(sin_sq, W(0.5, (3,))),
    # r3 s302 407: a cond's branches are transposed at the cotangents' own types
    "cond_complex_grad": lambda: jax.grad(lambda d: sc(cond_sq(d)))(1 - 0.5j),
    "cond_id_complex_grad": lambda: jax.grad(
        lambda d: sc(lax.cond(True, lambda a: a, lambda a: a, d)))(1 - 0.5j),
    "switch_complex_grad": lambda: jax.grad(
        lambda d: sc(lax.switch(0, [jnp.square, jnp.negative], d)))(1 - 0.5j),
    "cond_float_grad": lambda: jax.grad(lambda d: sc(cond_sq(d)))(1.5),
    "cond_vjp_strong_ct": lambda: jax.vjp(cond2, 1.5)[1](jnp.ones((), jnp.asarray(1.5).dtype)),
    "cond_vjp_weak_ct": lambda: jax.vjp(cond2, jnp.ones(()))[1](1.0),
    "cond_vjp_w1": lambda: jax.vjp(cond2, W(1.5, (2,)))[1](jnp.ones(2)),
    "vmap_cond_vjp_w1": lambda: jax.vmap(lambda x, ct: jax.vjp(cond2, x)[1](ct))(
        W(1.5, (2,)), jnp.ones(2)),
    # r3 s302 1758: vmap of an empty where is a new Array (where is a jit in JAX)
    "vmap_where_empty": lambda: jax.vmap(lambda a: jnp.where(a, a, a))(E()),
    "vmap_where_empty_py": lambda: jax.vmap(lambda a: jnp.where(a, a, 1.0))(E()),
    "vmap_where_empty_consts": lambda: jax.vmap(lambda a: jnp.where(a, 2.0, 1.0))(E()),
    # jnp.ldexp: the result is strong; a weak x1's cotangent stays weak (cast first)
    "ldexp_vjp_py": lambda: (lambda o, fn: (o, fn(jnp.ones_like(o) * 0.5)[0]))(
        *jax.vjp(jnp.ldexp, 1.5, 2)),
    "ldexp_vjp_w1": lambda: (lambda o, fn: (o, fn(jnp.ones_like(o) * 0.5)[0]))(
        *jax.vjp(jnp.ldexp, W(1.5, (2,)), jnp.arange(2))),
    "ldexp_vjp_strong": lambda: (lambda o, fn: (o, fn(jnp.ones_like(o) * 0.5)[0]))(
        *jax.vjp(jnp.ldexp, jnp.ones(2), 2)),
    "ldexp_grad": lambda: jax.grad(jnp.ldexp)(1.5, 2),
    "ldexp_jvp_py": lambda: jax.jvp(lambda x: jnp.ldexp(x, 2), (1.5,), (1.0,)),
  }
  return C


EXPECTED_RUN3 = {
    'jacrev_dot_vjp': ((('float32', True), ('float32', True)),
                       (('float64', True), ('float64', True))),
    'jacrev_mul_vjp': ((('float32', True), ('float32', True)),
                       (('float64', True), ('float64', True))),
    'jacrev_w1_vjp': ((('float32', True), ('float32', True)),
                      (('float64', True), ('float64', True))),
    'jacfwd_w1_vjp': ((('float32', True), ('float32', True)),
                      (('float64', True), ('float64', True))),
    'jacrev_argnums_vjp': ((('float32', True), ('float32', True)),
                           (('float64', True), ('float64', True))),
    'hessian_vjp': ((('float32', True), ('float32', False)),
                    (('float64', True), ('float64', False))),
    'gammainc_int_a_vjp': ((('float32', True), ('float32', True)),
                           (('float64', True), ('float64', True))),
    'vmap_gammainc_min_vjp': ((('float32', False), ('float32', True)),
                              (('float64', False), ('float64', True))),
    'igamma_mixed_vjp': ((('float32', False), ('float32', True)),
                         (('float64', False), ('float64', True))),
    'igammac_mixed_vjp': ((('float32', False), ('float32', True)),
                          (('float64', False), ('float64', True))),
    'igamma_a_vjp': ((('float32', False), ('float32', True)),
                     (('float64', False), ('float64', True))),
    'sparse_plus_reshape_jvp': ((('float32', True), ('float32', True)),
                                (('float64', True), ('float64', True))),
    'sparse_plus_w1_jvp': ((('float32', True), ('float32', True)),
                           (('float64', True), ('float64', True))),
    'where_sq_jvp': ((('float32', True), ('float32', True)),
                     (('float64', True), ('float64', True))),
    'jit_where_sq_jvp': ((('float32', True), ('float32', True)),
                         (('float64', True), ('float64', True))),
    'sin_sq_jvp': ((('float32', True), ('float32', True)), (('float64', True), ('float64', True))),
    'div_sq_jvp': ((('float32', True), ('float32', True)), (('float64', True), ('float64', True))),
    'jit_sin_sq_jvp': ((('float32', True), ('float32', False)),
                       (('float64', True), ('float64', False))),
    'jvp_vmap_sin_sq': ((('float32', True), ('float32', True)),
                        (('float64', True), ('float64', True))),
    'vmap_jvp_sin_sq': ((('float32', True), ('float32', True)),
                        (('float64', True), ('float64', True))),
    'lax_select_jvp': ((('float32', True), ('float32', False)),
                       (('float64', True), ('float64', False))),
    'linearize_sin_sq': ((('float32', False),), (('float64', False),)),
    'vjp_sin_sq': ((('float32', True), ('float32', False)),
                   (('float64', True), ('float64', False))),
    'cond_complex_grad': ((('complex64', False),), (('complex128', False),)),
    'cond_id_complex_grad': ((('complex64', False),), (('complex128', False),)),
    'switch_complex_grad': ((('complex64', False),), (('complex128', False),)),
    'cond_float_grad': ((('float32', True),), (('float64', True),)),
    'cond_vjp_strong_ct': ((('float32', False),), (('float64', False),)),
    'cond_vjp_weak_ct': ((('float32', True),), (('float64', True),)),
    'cond_vjp_w1': ((('float32', False),), (('float64', False),)),
    'vmap_cond_vjp_w1': ((('float32', False),), (('float64', False),)),
    'vmap_where_empty': ((('float32', False),), (('float32', False),)),
    'vmap_where_empty_py': ((('float32', False),), (('float32', False),)),
    'vmap_where_empty_consts': ((('float32', True),), (('float64', True),)),
    'ldexp_vjp_py': ((('float32', False), ('float32', True)),
                     (('float64', False), ('float64', True))),
    'ldexp_vjp_w1': ((('float32', False), ('float32', True)),
                     (('float64', False), ('float64', True))),
    'ldexp_vjp_strong': ((('float32', False), ('float32', False)),
                         (('float64', False), ('float64', False))),
    'ldexp_grad': ((('float32', True),), (('float64', True),)),
    'ldexp_jvp_py': ((('float32', False), ('float32', False)),
                     (('float64', False), ('float64', False))),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_RUN3))
def test_weak_types_as_jax_run3(name, x64_mode):
  out = _cases_run3()[name]()
  leaves = jax.tree_util.tree_leaves(out)
  got = tuple((str(np.asarray(x).dtype), getattr(x, "weak_type", "host")) for x in leaves)
  assert got == EXPECTED_RUN3[name][int(x64_mode)]
  assert all(isinstance(x, jax.Array) for x in leaves)


def test_run3_values_as_jax():
  # Values recorded from JAX 0.10.2 (x64 off): the weak-type fixes change no value.
  C = _cases_run3()
  np.testing.assert_allclose(C["jacrev_dot_vjp"]()[1], 1.0)
  np.testing.assert_allclose(C["gammainc_int_a_vjp"]()[1], 0.1115650, rtol=1e-5)
  np.testing.assert_allclose(C["sparse_plus_w1_jvp"](), [[0.5625] * 3, [0.375] * 3])
  np.testing.assert_allclose(C["cond_complex_grad"](), 2 - 1j)
  np.testing.assert_allclose(C["ldexp_vjp_w1"](), [[1.5, 3.], [0.5, 1.]])
  assert C["vmap_where_empty"]().shape == (3, 2, 0)


def test_where_is_one_call_as_jax():
  # JAX 0.10.2: make_jaxpr(lambda x: jnp.where(x > 0, x, 0.)) has a `jit[name=_where]`.
  eqns = jax.make_jaxpr(lambda x: jnp.where(x > 0, x, 0.))(jnp.ones(2)).jaxpr.eqns
  assert [e.primitive.name for e in eqns] == ["gt", "xla_call"]
  assert eqns[1].params["name"] == "_where"


def test_grad_through_jit_types_tangents_as_primals():
  # JAX 0.10.2 (x64 off): float32, weak_type=True (seed 301 program 1590 under grad).
  import tracejax.nn  # noqa: F401
  g = jax.grad(lambda d: jnp.sum(jax.nn.sparse_plus(d)))(
      jnp.broadcast_to(jnp.asarray(0.5), (2,)))
  assert g.weak_type


def _cases_linearized_jit():
  # Linearizing a (non-inline) jit, JAX keeps it a call: the tangents it is given are
  # typed as their primals (a weak primal's strong tangent is weak inside it), and its
  # transpose is traced (cotangents summed inside it take the first one's type).
  import tracejax.nn  # noqa: F401
  W = lambda v, s=(2,): jnp.broadcast_to(jnp.asarray(v), s)
  sp = lambda d: jnp.sum(jax.nn.sparse_plus(d))
  where_both = lambda x: jnp.sum(jnp.where(x > 0, x ** 2, x * 2.0))
  two_uses = lambda x: jnp.sum(
      jax.jit(lambda y: y * jnp.asarray([1., 2.]) + y)(x ** 2) + x ** 2)
  nested = lambda x: jnp.sum(jax.jit(lambda y: jax.jit(lambda z: z * z)(y) + y)(x ** 3))

  def vjp1(f, x):
    o, fn = jax.vjp(f, x)
    return fn(jnp.ones_like(o))[0]
  return {
    "sparse_plus_grad_w2": lambda: jax.grad(sp)(W(0.5)),
    "sparse_plus_vjp_w2": lambda: vjp1(sp, W(0.5)),
    "sparse_plus_jit_grad_w2": lambda: jax.jit(jax.grad(sp))(W(0.5)),
    "sparse_plus_vmap_grad_w2": lambda: jax.vmap(jax.grad(sp))(W(0.5, (3, 2))),
    "sparse_plus_grad_py": lambda: jax.grad(lambda d: jax.nn.sparse_plus(d))(-0.5),
    "sparse_plus_grad_strong": lambda: jax.grad(sp)(jnp.ones(2) * 0.5),
    "where_grad_w2": lambda: jax.grad(where_both)(W(0.5)),
    "where_jit_grad_w2": lambda: jax.jit(jax.grad(where_both))(W(0.5)),
    "where_jacrev_w2": lambda: jax.jacrev(where_both)(W(0.5)),
    "jit_two_uses_grad_w2": lambda: jax.grad(two_uses)(W(0.5)),
    "jit_two_uses_hessian_w2": lambda: jax.hessian(two_uses)(W(0.5)),
    "nested_jit_grad_w2": lambda: jax.grad(nested)(W(0.5)),
    "nested_jit_jit_grad_py": lambda: jax.jit(jax.grad(
        lambda x: nested(jnp.broadcast_to(x, (2,)))))(0.5),
    "sin_sq_grad_w2": lambda: jax.grad(lambda x: jnp.sum(jnp.sin(x ** 2)))(W(3.0)),
  }


# (dtype, weak_type) recorded from JAX 0.10.2, x64 off and on; then the first values.
EXPECTED_LINEARIZED_JIT = {
    'sparse_plus_grad_w2': (('float32', True), ('float64', True), [0.75, 0.75]),
    'sparse_plus_vjp_w2': (('float32', True), ('float64', True), [0.75, 0.75]),
    'sparse_plus_jit_grad_w2': (('float32', True), ('float64', True), [0.75, 0.75]),
    'sparse_plus_vmap_grad_w2': (('float32', True), ('float64', True), [0.75, 0.75]),
    'sparse_plus_grad_py': (('float32', True), ('float64', True), [0.25]),
    'sparse_plus_grad_strong': (('float32', False), ('float64', False), [0.75, 0.75]),
    'where_grad_w2': (('float32', False), ('float64', False), [1.0, 1.0]),
    'where_jit_grad_w2': (('float32', True), ('float64', True), [1.0, 1.0]),
    'where_jacrev_w2': (('float32', True), ('float64', True), [1.0, 1.0]),
    'jit_two_uses_grad_w2': (('float32', False), ('float64', False), [3.0, 4.0]),
    'jit_two_uses_hessian_w2': (('float32', True), ('float64', True), [6.0, 0.0]),
    'nested_jit_grad_w2': (('float32', False), ('float64', False), [0.9375, 0.9375]),
    'nested_jit_jit_grad_py': (('float32', False), ('float64', False), [1.875]),
    'sin_sq_grad_w2': (('float32', False), ('float64', False), [-5.4667816, -5.4667816]),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_LINEARIZED_JIT))
def test_linearized_jit_weak_types_as_jax(name, x64_mode):
  g = _cases_linearized_jit()[name]()
  assert (str(g.dtype), g.weak_type) == EXPECTED_LINEARIZED_JIT[name][int(x64_mode)]
  np.testing.assert_allclose(np.ravel(g)[:2], EXPECTED_LINEARIZED_JIT[name][2], rtol=1e-6)


def test_linearized_jit_retype_leaves_grad_jaxpr_alone():
  # The retyping is an identity: JAX's grad jaxpr has no conversion for it, nor ours.
  import tracejax.nn  # noqa: F401
  jaxpr = jax.make_jaxpr(jax.grad(lambda d: jnp.sum(jax.nn.sparse_plus(d))))(
      jnp.broadcast_to(jnp.asarray(0.5), (2,)))
  names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
  assert "weak_retype" not in names and names.count("convert_element_type") == 1
