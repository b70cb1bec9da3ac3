"""Issue 14: the compiled training step of a 784-512-512-10 MLP is JAX's program.

What made tracejax slower than JAX on an MLP written for one example and vmapped
(`x @ w` with `x` a vector, as in examples/demo.py): `jnp.matmul` gave a 1-D operand
a unit axis and squeezed it away after. Under vmap that axis stayed in every
activation (f32[128, 1, 512]); the weight gradients then contracted over (128, 1),
and XLA lowered them with transposes and copies of the activations and dots on
transposed operands. JAX contracts the vector directly. These tests compile the step
and check the properties of the optimized HLO that say so (no transpose, no copy, no
rank-3 array, dots as in JAX's program), so the difference cannot come back silently.
The batched (stax) MLP is checked too: there the programs were already the same.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import nn
from tracejax.example_libraries import stax
from tracejax.test_util import check_grads

SIZES = (784, 512, 512, 10)
BATCH = 128


def _data():
  rng = np.random.RandomState(0)
  params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(SIZES[:-1], SIZES[1:])]
  x = rng.randn(BATCH, SIZES[0]).astype(np.float32)
  y = np.eye(SIZES[-1], dtype=np.float32)[rng.randint(0, SIZES[-1], BATCH)]
  return params, x, y


def _vmap_step():
  def predict_one(params, x):
    for w, b in params[:-1]:
      x = nn.relu(x @ w + b)
    w, b = params[-1]
    return nn.log_softmax(x @ w + b)

  def loss(params, x, y):
    logp = jax.vmap(predict_one, in_axes=(None, 0))(params, x)
    return -jnp.mean(jnp.sum(logp * y, axis=1))
  return jax.jit(jax.value_and_grad(loss))


def _stax_step():
  layers = []
  for n in SIZES[1:-1]:
    layers += [stax.Dense(n), stax.Relu]
  _, apply_fun = stax.serial(*layers, stax.Dense(SIZES[-1]), stax.LogSoftmax)

  def loss(params, x, y):
    return -jnp.mean(jnp.sum(apply_fun(params, x) * y, axis=1))
  return jax.jit(jax.value_and_grad(loss))


def _stax_params(params):
  out = []
  for p in params:
    out += [p, ()]
  return out


_OP = re.compile(r"^\s*(?:ROOT )?%\S+ = (\S+) ([a-z-]+)\(", re.M)


def _ops(hlo):
  """(shape, opcode) of every instruction of an optimized HLO module's text."""
  return _OP.findall(hlo)


def _check_step_program(step, args):
  lowered = step.lower(*args)
  mlir = lowered.as_text()
  # Every dot_general of the StableHLO multiplies matrices: no unit axis rides along.
  dots = re.findall(r"stablehlo.dot_general .*: \((tensor<[^>]*>), (tensor<[^>]*>)\)", mlir)
  assert len(dots) == 8, dots  # 3 forward, 3 weight gradients, 2 input gradients
  for lhs, rhs in dots:
    assert lhs.count("x") == 2 and rhs.count("x") == 2, (lhs, rhs)

  ops = _ops(lowered.compile().as_text())
  opcodes = [op for _, op in ops]
  assert "transpose" not in opcodes and "copy" not in opcodes, \
      sorted(set((s, op) for s, op in ops if op in ("transpose", "copy")))
  assert not [s for s, _ in ops if re.match(r"f32\[\d+,\d+,\d+", s)], \
      "a rank-3 array in the program (a unit axis that vmap carried along)"
  # XLA folds the transposes of the weight gradients into their dots: each gradient of a
  # weight matrix is one dot that writes the [in, out] matrix directly, as in JAX.
  dot_shapes = sorted(s.split("{")[0] for s, op in ops if op == "dot")
  for m, n in zip(SIZES[:-1], SIZES[1:]):
    assert f"f32[{m},{n}]" in dot_shapes, dot_shapes
  return lowered


def test_vmapped_mlp_step_is_transpose_free():
  params, x, y = _data()
  step = _vmap_step()
  _check_step_program(step, (params, x, y))
  # ... and computes what the batched network computes.
  value, grads = step(params, x, y)
  ref_value, ref_grads = _stax_step()(_stax_params(params), x, y)
  np.testing.assert_allclose(value, ref_value, rtol=1e-5)
  for (gw, gb), (rw, rb) in zip(grads, ref_grads[::2]):
    np.testing.assert_allclose(gw, rw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gb, rb, rtol=1e-4, atol=1e-6)


def test_stax_mlp_step_is_transpose_free():
  params, x, y = _data()
  _check_step_program(_stax_step(), (_stax_params(params), x, y))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((3,), (3, 4)), ((2, 5, 3), (3,)),
                                   ((3,), (2, 3, 4))])
def test_matmul_vector_operands(sa, sb):
  rng = np.random.RandomState(1)
  a, b = rng.randn(*sa).astype(np.float32), rng.randn(*sb).astype(np.float32)
  expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
  np.testing.assert_allclose(jnp.matmul(a, b), expected, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(jax.jit(lambda a, b: a @ b)(a, b), expected, rtol=1e-5, atol=1e-5)
  check_grads(jnp.matmul, (a, b), order=2, modes=("fwd", "rev"))


def test_matmul_vector_is_one_dot_general():
  # A 1-D operand is contracted as it is: one dot_general, no reshape or squeeze ...
  jaxpr = jax.make_jaxpr(lambda x, w: x @ w)(np.ones(3, np.float32), np.ones((3, 4), np.float32))
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["dot_general"]
  # ... and under vmap it stays one matrix product, checked against a Python loop.
  rng = np.random.RandomState(2)
  xs, w = rng.randn(5, 3).astype(np.float32), rng.randn(3, 4).astype(np.float32)
  f = jax.vmap(lambda x: x @ w)
  jaxpr = jax.make_jaxpr(f)(xs)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["dot_general"]
  np.testing.assert_allclose(f(xs), np.stack([x @ w for x in xs]), rtol=1e-5, atol=1e-6)
  g = jax.vmap(lambda v: w.T @ v)  # matrix @ vector, batched vector
  vs = rng.randn(5, 3).astype(np.float32)
  np.testing.assert_allclose(g(vs), np.stack([w.T @ v for v in vs]), rtol=1e-5, atol=1e-6)
  with pytest.raises(TypeError, match="Incompatible shapes for matmul"):
    jnp.matmul(np.ones(3), np.ones((4, 5)))
