"""lax binary operators broadcast the size-1 axes of equal-rank operands (issue 10 item 7).

As in JAX: `lax.add` of f32[3,4] and f32[1,4] is f32[3,4], staged as one `add` with
mixed shapes (no broadcast_in_dim in the jaxpr; the lowering broadcasts). Rank
mismatches stay errors, and `select_n`/`clamp` stay strict. Checked against NumPy
eagerly and under jit, under vmap with operands batched on different axes (against
a Python loop), and with gradients that sum the cotangent back to the size-1 shape.
"""
import re

import numpy as np
import pytest
from scipy import special

import tracejax as jax
from tracejax import lax
from tracejax._src.test_util import check_grads

RNG = np.random.default_rng(0)


def _f32(*shape, lo=0.5, hi=2.0):
  return RNG.uniform(lo, hi, shape).astype(np.float32)


def _i32(*shape):
  return RNG.integers(1, 8, shape).astype(np.int32)


def _bool(*shape):
  return RNG.integers(0, 2, shape).astype(bool)


# (lax function, NumPy reference, operand maker)
BINARY = {
    "add": (lax.add, np.add, _f32),
    "sub": (lax.sub, np.subtract, _f32),
    "mul": (lax.mul, np.multiply, _f32),
    "div": (lax.div, np.divide, _f32),
    "rem": (lax.rem, np.fmod, _f32),
    "pow": (lax.pow, np.power, _f32),
    "max": (lax.max, np.maximum, _f32),
    "min": (lax.min, np.minimum, _f32),
    "atan2": (lax.atan2, np.arctan2, _f32),
    "nextafter": (lax.nextafter, np.nextafter, _f32),
    "igamma": (lax.igamma, special.gammainc, _f32),
    "igammac": (lax.igammac, special.gammaincc, _f32),
    "complex": (lax.complex, lambda x, y: x + 1j * y, _f32),
    "eq": (lax.eq, np.equal, _i32),
    "lt": (lax.lt, np.less, _f32),
    "ge": (lax.ge, np.greater_equal, _f32),
    "and": (lax.bitwise_and, np.bitwise_and, _i32),
    "or_bool": (lax.bitwise_or, np.logical_or, _bool),
    "xor": (lax.bitwise_xor, np.bitwise_xor, _i32),
    "shift_left": (lax.shift_left, np.left_shift, _i32),
    "shift_right_logical": (lax.shift_right_logical, np.right_shift, _i32),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_size_one_axes_broadcast_eager_and_jit(name):
  fn, ref, make = BINARY[name]
  for k, (xs, ys) in enumerate([((3, 4), (1, 4)), ((3, 1), (1, 4))]):
    x, y = make(*xs), make(*ys)
    want = ref(x, y)
    for f in ((fn, jax.jit(fn)) if k == 0 else (fn,)):
      got = f(x, y)
      assert got.shape == want.shape
      np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, err_msg=f"{name} {xs} {ys}")
      got = f(y, x)  # either operand may be the size-1 one
      np.testing.assert_allclose(np.asarray(got), ref(y, x), rtol=2e-5)


def test_ternary_betainc_and_zero_sized_axes():
  a, b, x = _f32(3, 1), _f32(1, 4), _f32(1, 1, lo=0.1, hi=0.9)
  np.testing.assert_allclose(lax.betainc(a, b, x), special.betainc(a, b, x), rtol=2e-4)
  # A size-1 axis broadcasts to size 0, as in NumPy.
  assert lax.add(np.ones((0, 4), np.float32), np.ones((1, 4), np.float32)).shape == (0, 4)


def test_jaxpr_stages_one_op_with_mixed_shapes():
  # JAX 0.10.2 prints `c:f32[3,4] = add a b` for f32[3,4] + f32[1,4]: no broadcast.
  x, y = _f32(3, 4), _f32(1, 4)
  jaxpr = jax.make_jaxpr(lax.add)(x, y)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["add"]
  assert jaxpr.out_avals[0].shape == (3, 4)
  jaxpr = jax.make_jaxpr(lax.mul)(_f32(3, 1), _f32(1, 4))
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["mul"]
  assert jaxpr.out_avals[0].shape == (3, 4)


def test_rank_mismatch_and_incompatible_sizes_raise():
  with pytest.raises(TypeError, match=re.escape(
      "add: arrays must have the same number of dimensions, got {1, 2}")):
    lax.add(np.ones((3, 4), np.float32), np.ones(4, np.float32))
  with pytest.raises(TypeError, match=re.escape(
      "mul got incompatible shapes for broadcasting: (3, 4), (2, 4).")):
    jax.jit(lax.mul)(np.ones((3, 4), np.float32), np.ones((2, 4), np.float32))
  # Rank-0 operands still broadcast against anything.
  assert lax.add(np.ones((3, 4), np.float32), np.float32(1)).shape == (3, 4)


def test_select_and_clamp_stay_strict():
  f, g = np.ones((3, 4), np.float32), np.ones((1, 4), np.float32)
  with pytest.raises(TypeError, match="select cases must have the same shapes"):
    lax.select_n(np.ones((3, 4), bool), f, g)
  with pytest.raises(TypeError, match="`which` must be scalar or have the same shape"):
    lax.select_n(np.ones((1, 4), bool), f, f)
  with pytest.raises(TypeError, match="clamp requires min.shape == operand.shape"):
    lax.clamp(g, f, np.float32(2))


# ---- vmap: operands batched on different axes ----

VMAP_CASES = [
    # (in_axes, per-example x shape, per-example y shape)
    ((0, 1), (1, 4), (3, 4)),
    ((1, 0), (3, 1), (1, 4)),
    ((0, None), (1, 4), (3, 4)),
    ((None, 2), (3, 1), (1, 4)),
    ((0, 0), (), (3, 4)),      # a batched scalar against a batched array
    ((0, None), (), (3, 4)),
]


def _batched(shape, axis, n, make):
  if axis is None:
    return make(*shape)
  full = list(shape)
  full.insert(axis, n)
  return make(*full)


@pytest.mark.parametrize("name", ["add", "pow", "atan2", "igamma", "complex", "xor", "lt",
                                  "nextafter"])
def test_vmap_matches_loop(name):
  fn, ref, make = BINARY[name]
  n = 5
  for in_axes, xs, ys in VMAP_CASES:
    x, y = _batched(xs, in_axes[0], n, make), _batched(ys, in_axes[1], n, make)
    got = np.asarray(jax.vmap(fn, in_axes)(x, y))
    for i in range(n):
      xi = x if in_axes[0] is None else np.take(x, i, axis=in_axes[0])
      yi = y if in_axes[1] is None else np.take(y, i, axis=in_axes[1])
      np.testing.assert_allclose(got[i], ref(xi, yi), rtol=2e-5,
                                 err_msg=f"{name} {in_axes} {xs} {ys}")


def test_vmap_jaxpr_like_jax():
  # JAX 0.10.2 batches an unbatched operand with a size-1 axis and a batched scalar
  # with size-1 trailing axes, then lets `add` broadcast (no batch-sized copies).
  jaxpr = jax.make_jaxpr(jax.vmap(lax.add, (0, None)))(_f32(5), _f32(3, 4))
  eqns = jaxpr.jaxpr.eqns
  assert [e.primitive.name for e in eqns] == ["broadcast_in_dim", "broadcast_in_dim", "add"]
  assert eqns[0].params["shape"] == (1, 3, 4)
  assert eqns[1].params["shape"] == (5, 1, 1)
  # Same batch axis and shape: the primitive alone, batched where the inputs are.
  # (out_axes=0 then moves the batch axis to the front, as JAX does.)
  jaxpr = jax.make_jaxpr(jax.vmap(lax.add, (1, 1)))(_f32(3, 5), _f32(3, 5))
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["add", "transpose"]
  # Different shapes on the same axis: no transpose or broadcast needed either.
  jaxpr = jax.make_jaxpr(jax.vmap(lax.add))(_f32(5, 1), _f32(5, 3))
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["add"]


def test_vmap_of_jit_and_nested_vmap():
  x, y = _f32(5, 1, 4), _f32(3, 4, 5)
  f = jax.vmap(jax.jit(lax.mul), (0, 2))
  want = np.stack([x[i] * y[:, :, i] for i in range(5)])
  np.testing.assert_allclose(f(x, y), want, rtol=1e-6)
  g = jax.vmap(jax.vmap(lax.sub, (0, None)), (None, 0))
  a, b = _f32(2, 1, 3), _f32(4, 2, 1)
  want = np.stack([np.stack([a[i] - b[j] for i in range(2)]) for j in range(4)])
  np.testing.assert_allclose(g(a, b), want, rtol=1e-6)


# ---- derivatives: cotangents summed back to the size-1 shape ----

@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "max", "atan2"])
def test_check_grads_size_one_operands(name):
  fn = BINARY[name][0]
  x, y = _f32(3, 1), _f32(1, 4)
  check_grads(fn, (x, y), order=2, modes=("fwd", "rev"), atol=3e-2, rtol=3e-2)


def test_check_grads_rem_nextafter_complex_igamma():
  x, y = _f32(2, 1, lo=2.0, hi=3.0), _f32(1, 3, lo=0.3, hi=0.45)
  check_grads(lax.rem, (x, y), order=1, modes=("fwd", "rev"))
  check_grads(lambda a: lax.nextafter(a, y), (x,), order=1, modes=("fwd", "rev"))
  check_grads(lambda a, b: lax.complex(a, b).real * 2 + lax.complex(a, b).imag, (x, y),
              order=1, modes=("fwd", "rev"))
  check_grads(lambda a: lax.igamma(y, a), (x,), order=1, modes=("fwd", "rev"))


def test_grad_jaxpr_sums_then_reshapes():
  # The cotangent of the f32[1,4] operand: reduce_sum over axis 0, then reshape to
  # (1, 4), as in JAX's jaxpr.
  x, y = _f32(3, 4), _f32(1, 4)
  g = jax.grad(lambda a, b: lax.mul(a, b).sum(), (0, 1))
  gx, gy = g(x, y)
  assert gy.shape == (1, 4)
  np.testing.assert_allclose(gy, x.sum(0, keepdims=True), rtol=1e-6)
  np.testing.assert_allclose(gx, np.broadcast_to(y, (3, 4)), rtol=1e-6)
  names = [e.primitive.name for e in jax.make_jaxpr(g)(x, y).jaxpr.eqns]
  i = names.index("reduce_sum")
  assert names[i + 1] == "reshape"
  # Under jit and vmap too.
  gj = jax.jit(g)(x, y)
  np.testing.assert_allclose(gj[1], gy, rtol=1e-6)
  gv = jax.vmap(lambda a: jax.grad(lambda b: lax.add(a, b).sum())(y))(np.stack([x, 2 * x]))
  np.testing.assert_allclose(gv, np.full((2, 1, 4), 3.0), rtol=1e-6)
