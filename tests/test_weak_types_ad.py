"""Weak types under autodiff, jit, vmap and control flow (issue 13, item 10).

Each case's expected type was recorded once from real JAX 0.10.2 (`~` marks a weakly
typed result, as `jax.typeof` prints it); nothing here runs JAX. The rules they pin:

* reverse mode: the gradient seed has the output's weak type; a cotangent keeps the
  weak type its path gives it (convert_element_type's transpose restores the operand's
  weak type; add/sub/select pass the cotangent's own type on), and weak literals of the
  linear jaxpr stay weak in the backward pass;
* jacfwd's blocks take the output's weak type, jacrev's the input's, and the standard
  basis the input's;
* rule constants: `_const` is weak only for a weak scalar, `_one`/`_zeros` (full_like)
  for any weak operand; pow's tangent in x is strong (JAX casts first);
* promotion: a host bool/int array meeting a weak float gives a weak float (also under
  tracing); weak bools promote to a strong bool; cond/switch results take branch 0's
  types.
"""
import numpy as np
import pytest

import tracejax as jax
import tracejax.nn as nn
import tracejax.numpy as jnp
import tracejax.scipy.special as sp
from tracejax import lax

f32 = np.float32
_B2 = np.array([True, False])
_I1 = np.array([-52])


def _ty(x):
  """'float32~' for a weak float32 Array (a tuple for a tuple of results)."""
  if isinstance(x, (tuple, list)):
    return tuple(_ty(a) for a in x)
  if not hasattr(x, "dtype"):
    return type(x).__name__
  return str(x.dtype) + ("~" if getattr(x, "weak_type", False) else "")


# name -> (program, JAX 0.10.2's result type, expected value(s) or None)
CASES = {
    # reverse mode
    "grad_sin": (lambda: jax.grad(jnp.sin)(0.5), "float32~", np.cos(0.5)),
    "grad_strong_add": (lambda: jax.grad(lambda x: x + f32(1))(0.5), "float32~", 1.0),
    "grad_const": (lambda: jax.grad(lambda x: f32(1.))(0.5), "float32~", 0.0),
    "grad_strong_input": (lambda: jax.grad(lambda x: x * 2.)(f32(0.5)), "float32", 2.0),
    "grad_logsumexp": (lambda: jax.grad(nn.logsumexp)(0.5), "float32", 1.0),
    "grad_select": (lambda: jax.grad(lambda x: lax.select(x > 0, x, jnp.zeros_like(x)))(0.5),
                    "float32~", 1.0),
    "grad_holomorphic": (lambda: jax.grad(lambda x: x * 2., holomorphic=True)(0.5 + 1j),
                         "complex64~", 2.0),
    "grad_grad_sin": (lambda: jax.grad(jax.grad(jnp.sin))(0.5), "float32~", -np.sin(0.5)),
    "grad_power": (lambda: jax.grad(lambda x: jnp.power(x, 3.0))(0.3), "float32", 0.27),
    "vjp_ipow2": (lambda: jax.vjp(lambda x: lax.integer_pow(x, 2), 1.5)[1](1.0),
                  ("float32~",), (3.0,)),
    "vjp_weak_ct": (lambda: jax.vjp(lambda x: x * 2., f32(0.5))[1](1.0), ("float32",), (2.0,)),
    "vjp_unused": (lambda: jax.vjp(lambda x: f32(2.), 0.5)[1](1.0), ("float32~",), (0.0,)),
    # forward mode
    "jvp_sin": (lambda: jax.jvp(jnp.sin, (0.5,), (1.,)), ("float32~", "float32~"),
                (np.sin(0.5), np.cos(0.5))),
    "jvp_relu": (lambda: jax.jvp(nn.relu, (0.3,), (0.5,)), ("float32~", "float32~"),
                 (0.3, 0.5)),
    "jvp_softplus": (lambda: jax.jvp(nn.softplus, (0.3,), (0.5,)), ("float32~", "float32~"),
                     (np.logaddexp(0, 0.3), 0.5 / (1 + np.exp(-0.3)))),
    "jvp_logaddexp_int": (lambda: jax.jvp(lambda x: jnp.logaddexp(_I1, x), (0.0,), (1.0,)),
                          ("float32~", "float32~"), ([np.logaddexp(-52., 0.)], [1.0])),
    "jvp_tanh_weak_vec": (lambda: jax.jvp(jnp.tanh, (jnp.full((2,), 0.3),),
                                          (jnp.full((2,), 0.5),)),
                          ("float32~", "float32~"),
                          ([np.tanh(0.3)] * 2, [0.5 / np.cosh(0.3) ** 2] * 2)),
    "jvp_exp2_weak_vec": (lambda: jax.jvp(jnp.exp2, (jnp.full((2,), 0.3),),
                                          (jnp.full((2,), 0.5),)),
                          ("float32~", "float32"),
                          ([2 ** 0.3] * 2, [0.5 * np.log(2) * 2 ** 0.3] * 2)),
    "jacfwd_sin": (lambda: jax.jacfwd(jnp.sin)(0.5), "float32~", np.cos(0.5)),
    "jacfwd_id": (lambda: jax.jacfwd(lambda x: x)(0.5), "float32~", 1.0),
    "jacfwd_strong_out": (lambda: jax.jacfwd(lambda x: x + f32(1))(0.5), "float32", 1.0),
    "jacrev_strong_out": (lambda: jax.jacrev(lambda x: x + f32(1))(0.5), "float32~", 1.0),
    "jacrev_strong_in": (lambda: jax.jacrev(lambda x: x * 2.)(f32(0.5)), "float32", 2.0),
    "hessian_median": (lambda: jax.hessian(jnp.median)(0.5), "float32~", 0.0),
    "jvp_real_py": (lambda: jax.jvp(jnp.real, (0.3,), (0.5,)), ("float32~", "float32~"),
                    (0.3, 0.5)),
    # forward weak types that the fuzzer met inside transformed programs
    "fwd_add_int_weak_jit": (lambda: jax.jit(lambda x: jnp.add(_I1, x))(0.0), "float32~",
                             [-52.0]),
    "fwd_bool_ne_nan_jit": (lambda: jax.jit(lambda b: b != float("nan"))(_B2), "bool~",
                            [True, True]),
    "fwd_weak_bool_ne": (lambda: jax.jit(lambda x: (x < 1) != (x < 1))(0.5), "bool", False),
    "fwd_iscomplex": (lambda: jnp.iscomplex(0.5), "bool~", False),
    "fwd_isreal": (lambda: jnp.isreal(0.5), "bool~", True),
    "fwd_isinf": (lambda: jax.jit(jnp.isinf)(0.5), "bool", False),
    "fwd_logit_int": (lambda: sp.logit(0), "float32~", -np.inf),
    "fwd_xlogy_complex": (lambda: sp.xlogy(3., 1 - 2j), "complex64~", 3 * np.log(1 - 2j)),
    "fwd_switch_branch0_weak": (
        lambda: lax.switch(1, [lambda v: v * 2, lambda v: v + f32(1)], 0.5), "float32~", 1.5),
    "fwd_switch_branch0_strong": (
        lambda: lax.switch(0, [lambda v: v + f32(1), lambda v: v * 2], 0.5), "float32", 1.5),
    "fwd_cond_false_fun_weak": (
        lambda: lax.cond(True, lambda v: v + f32(1), lambda v: v * 2, 0.5), "float32~", 1.5),
    "fwd_at_set_0d": (lambda: jnp.asarray(1.).at[...].set(-1.5), "float32~", -1.5),
    "fwd_take_empty_weak": (lambda: (jnp.zeros((2, 0), "int32") != 2.0)[jnp.array([0, 1])],
                            "bool~", np.zeros((2, 0), bool)),
    "vmap_cumsum_empty": (lambda: jax.vmap(lambda x: jnp.cumsum(x, axis=0))(
        np.zeros((2, 0), np.float32)), "float32", np.zeros((2, 0))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_weak_type_matches_jax(name):
  fn, want_type, want_value = CASES[name]
  out = fn()
  assert _ty(out) == want_type, name
  if want_value is not None:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    wants = want_value if isinstance(want_value, tuple) else (want_value,)
    for o, w in zip(outs, wants):
      # every result is a device Array (no NumPy or Python value handed back)
      assert isinstance(o, jax.Array), (name, type(o))
      np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-5, atol=1e-6)


# Recorded from JAX 0.10.2 with jax_enable_x64 on (the fuzzer's x64 reproducers).
CASES_X64 = {
    "jacfwd_minimum": (lambda: jax.jacfwd(lambda x: jnp.minimum(x, -1.5))(0.5), "float64~",
                       0.0),
    "jacrev_select_cbrt": (lambda: jax.jacrev(lambda x: jnp.cbrt(lax.select(
        x > 0, x, jnp.zeros_like(x))[..., None]))(0.125), "float64~", [4 / 3]),
    "grad_through_complex_add": (lambda: jax.grad(lambda y: jnp.sum(jnp.real(jax.jit(
        lambda a, b: a + b)(np.complex128(1), y))))(0.5), "float64~", 1.0),
    "jvp_of_jacfwd_log_sigmoid": (lambda: jax.jvp(jax.jacfwd(
        lambda x: nn.log_sigmoid(jnp.power(x, x)[None])), (0.5,), (0.5,)),
        ("float64~", "float64~"), None),
    "xlog1py_uint": (lambda: sp.xlog1py(np.array([1, 2], np.uint32), 0.0), "float64~",
                     [0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(CASES_X64))
def test_weak_type_matches_jax_x64(x64, name):
  fn, want_type, want_value = CASES_X64[name]
  out = fn()
  assert _ty(out) == want_type, name
  if want_value is not None:
    np.testing.assert_allclose(np.asarray(out), np.asarray(want_value), rtol=1e-12)


def test_jacfwd_and_jacrev_blocks_follow_jax_rule():
  """jacfwd blocks: the output leaf's weak type; jacrev blocks: the input leaf's."""
  def f(x, y):
    return x * y, y + f32(1)           # weak out (both weak), strong out
  jf = jax.jacfwd(f, argnums=(0, 1))(0.5, 2.0)
  jr = jax.jacrev(f, argnums=(0, 1))(0.5, f32(2.0))
  assert _ty(jf) == (("float32~", "float32~"), ("float32", "float32"))
  assert _ty(jr) == (("float32~", "float32"), ("float32~", "float32"))
  np.testing.assert_allclose(np.asarray(jf[0]), [2.0, 0.5])
  np.testing.assert_allclose(np.asarray(jr[1]), [0.0, 1.0])


def test_weak_gradient_promotes_like_a_python_scalar():
  """A weak gradient still promotes weakly afterwards: bf16 array + weak grad is bf16."""
  g = jax.grad(jnp.sin)(0.5)
  out = jnp.ones(2, jnp.bfloat16) + g
  assert out.dtype == jnp.bfloat16
  s = jax.grad(nn.logsumexp)(0.5)  # strong: promotes the bf16 array to float32
  assert (jnp.ones(2, jnp.bfloat16) + s).dtype == np.float32


def test_jit_grad_and_vmap_agree_with_eager():
  f = jax.grad(lambda x: jnp.tanh(x) * 2.0)
  eager = f(0.3)
  jitted = jax.jit(f)(0.3)
  assert _ty(eager) == _ty(jitted) == "float32~"
  np.testing.assert_allclose(np.asarray(jitted), 2 / np.cosh(0.3) ** 2, rtol=1e-6)
  xs = np.array([0.1, 0.2, 0.3], np.float32)
  batched = jax.vmap(f)(xs)
  np.testing.assert_allclose(np.asarray(batched), [np.asarray(f(x)) for x in xs], rtol=1e-6)


# ---------------------------------------------------------------------------
# Weak types of rule internals (issue 13 item 10, second pass). Recorded from JAX
# 0.10.2 with x64 off and on: name -> (program, type x64 off, type x64 on, value).
# The rules they pin: entr differentiates its own x*log(x) (tangent x_dot*(log x + 1)
# in x's types); sort's transpose is JAX's gather transpose (a scatter-add into
# strong zeros), also for a length-1 axis; hypot turns strong only at its last step
# (against a strong inf) for non-0-d results; scatter-max/min/mul JVPs build their
# constants like the operand/updates (full_like), and `.at[]` combines a weak x with
# a strong update strongly before restoring x's weak type.
# ---------------------------------------------------------------------------

def _w(n, v):
  return jnp.full((n,), v)


RULE_CASES = {
    "entr_jvp": (lambda: jax.jvp(sp.entr, (0.3,), (0.5,)),
                 ("float32~", "float32~"), ("float64~", "float64~"),
                 (-0.3 * np.log(0.3), -0.5 * (np.log(0.3) + 1))),
    "entr_jvp_vec": (lambda: jax.jvp(sp.entr, (_w(2, 0.3),), (_w(2, 0.5),)),
                     ("float32~", "float32~"), ("float64~", "float64~"),
                     ([-0.3 * np.log(0.3)] * 2, [-0.5 * (np.log(0.3) + 1)] * 2)),
    "sort_grad_weak_scalar": (lambda: jax.grad(lambda x: jnp.sort(x, axis=None).sum())(0.3),
                              "float32", "float64", 1.0),
    "sort_grad_weak_vec": (lambda: jax.grad(lambda x: jnp.sort(x, descending=True)[0])(
        _w(2, 0.3)), "float32", "float64", [0.0, 1.0]),
    "sort_jvp_weak_vec": (lambda: jax.jvp(jnp.sort, (_w(2, 0.3),), (_w(2, 0.5),)),
                          ("float32~", "float32~"), ("float64~", "float64~"),
                          ([0.3, 0.3], [0.5, 0.5])),
    "hypot_grad_weak_vec": (lambda: jax.grad(lambda x: jnp.hypot(x, x).sum())(_w(2, 0.3)),
                            "float32", "float64", [np.sqrt(2)] * 2),
    "hypot_grad_weak_vec_const": (
        lambda: jax.grad(lambda x: jnp.hypot(x, 2.0).sum())(_w(2, 0.3)), "float32", "float64",
        [0.3 / np.hypot(0.3, 2.0)] * 2),
    "hypot_grad_weak_scalars": (lambda: jax.grad(jnp.hypot, argnums=(0, 1))(0.3, 0.4),
                                ("float32~", "float32~"), ("float64~", "float64~"),
                                (0.6, 0.8)),
    "hypot_jvp_weak_vec": (lambda: jax.jvp(lambda x: jnp.hypot(x, 2.0), (_w(2, 0.3),),
                                           (_w(2, 1.0),)),
                           ("float32", "float32"), ("float64", "float64"),
                           ([np.hypot(0.3, 2.0)] * 2, [0.3 / np.hypot(0.3, 2.0)] * 2)),
    "at_max_grad_weak": (lambda: jax.grad(lambda x, u: x.at[1].max(u).sum(), argnums=(0, 1))(
        _w(3, 0.3), 0.5), ("float32", "float32~"), ("float64", "float64~"),
        ([1.0, 0.0, 1.0], 1.0)),
    "at_min_grad_weak_updates": (lambda: jax.grad(lambda u: _w(3, 0.3).at[:2].min(u).sum())(
        _w(2, 0.1)), "float32~", "float64~", [1.0, 1.0]),
    "at_max_grad_strong_update": (
        lambda: jax.grad(lambda x, u: x.at[1].max(u).sum(), argnums=(0, 1))(_w(3, 0.3), f32(0.5)),
        ("float32~", "float32"), ("float64~", "float32"), ([1.0, 0.0, 1.0], 1.0)),
    "at_max_grad_tie": (lambda: jax.grad(lambda x, u: x.at[jnp.array([1, 1])].max(u).sum(),
                                         argnums=(0, 1))(_w(3, 0.3), _w(2, 0.3)),
                        ("float32", "float32~"), ("float64", "float64~"),
                        ([1.0, 1 / 3, 1.0], [1 / 3, 1 / 3])),
    "at_mul_grad_weak": (lambda: jax.grad(lambda x, u: x.at[1].mul(u).sum(), argnums=(0, 1))(
        _w(3, 0.3), 0.5), ("float32~", "float32~"), ("float64~", "float64~"),
        ([1.0, 0.5, 1.0], 0.3)),
    "at_add_grad_strong_update": (
        lambda: jax.grad(lambda x, u: x.at[1].add(u).sum(), argnums=(0, 1))(_w(3, 0.3), f32(0.5)),
        ("float32~", "float32"), ("float64~", "float32"), ([1.0, 1.0, 1.0], 1.0)),
    "stop_gradient_add_eager": (lambda: 0.3 + lax.stop_gradient(0.3), "float32~", "float64~",
                                0.6),
    "stop_gradient_add_grad": (lambda: jax.grad(lambda x: x + lax.stop_gradient(x))(0.3),
                               "float32~", "float64~", 1.0),
    "stop_gradient_add_jit": (lambda: jax.jit(lambda x: x + lax.stop_gradient(x))(0.3),
                              "float32~", "float64~", 0.6),
    "vjp_real_primal": (lambda: jax.vjp(jnp.real, 0.3)[0], "float32~", "float64~", 0.3),
}


def _check_rule_case(name, x64_on):
  fn, t32, t64, want = RULE_CASES[name]
  out = fn()
  assert _ty(out) == (t64 if x64_on else t32), name
  outs = out if isinstance(out, tuple) else (out,)
  wants = want if isinstance(want, tuple) else (want,)
  for o, w in zip(outs, wants):
    np.testing.assert_allclose(np.asarray(o), np.asarray(w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_rule_weak_types_match_jax(name):
  _check_rule_case(name, False)


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_rule_weak_types_match_jax_x64(x64, name):
  _check_rule_case(name, True)


def test_entr_own_jvp_gradients_and_transforms():
  """entr's x*log(x) rule: derivatives to order 2, under jit and vmap; at 0 the
  derivative is -(log 0 + 1) = +inf, as JAX's."""
  from tracejax._src.test_util import check_grads
  check_grads(sp.entr, (np.array([0.3, 1.7], np.float32),), order=2, modes=("fwd", "rev"))
  g = jax.jit(jax.grad(sp.entr))
  assert _ty(g(0.3)) == "float32~"
  assert np.isposinf(np.asarray(jax.grad(sp.entr)(0.)))
  xs = np.array([0.2, 0.5, 2.0], np.float32)
  np.testing.assert_allclose(np.asarray(jax.vmap(g)(xs)), -(np.log(xs) + 1), rtol=1e-6)


def test_sort_length_one_axis_and_hypot_values_unchanged():
  """Sorting a length-0/1 axis (now a real sort) and hypot's edge values."""
  for n in (0, 1):
    x = jnp.full((n,), 0.3)
    assert _ty(jnp.sort(x)) == _ty(jax.jit(jnp.sort)(x)) == "float32~"
    assert jax.vmap(jnp.sort)(np.ones((2, n), np.float32)).shape == (2, n)
  x = np.array([0., 3., np.inf], np.float32)
  np.testing.assert_allclose(np.asarray(jnp.hypot(x, 4.)), [4., 5., np.inf])
  assert _ty(jnp.hypot(np.array([True]), 1)) == "float32"
  assert _ty(jnp.hypot(True, 1)) == "float32~"
  np.testing.assert_allclose(np.asarray(jax.grad(lambda v: jnp.hypot(v, 2.).sum())(x[:2])),
                             [0., 3 / np.hypot(3., 2.)], rtol=1e-6)
