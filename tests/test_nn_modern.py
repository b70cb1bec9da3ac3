"""Tests of today's `jax.nn` names: activations against values recorded from JAX
0.10.2, and the block-scaled matmuls (`scaled_matmul`, `scaled_dot_general`,
`get_scaled_dot_general_config`) against NumPy computations of their definition
(JAX 0.10.2 itself runs those two only on GPUs, through cuDNN)."""
import ml_dtypes
import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import nn
from tracejax._src.test_util import check_grads

_X = np.array([-3.0, -0.7, 0.0, 0.4, 2.5], np.float32)

# jax.nn.<name>(_X) computed with JAX 0.10.2 (CPU), printed to 7 significant digits.
_RECORDED = [
    ("mish", [-0.1456475, -0.2678702, 0, 0.2890306, 2.471392]),
    ("squareplus", [0.3027756, 0.709481, 1, 1.219804, 2.850781]),
    ("sparse_plus", [0, 0.0225, 0.25, 0.49, 2.5]),
    ("sparse_sigmoid", [0, 0.15, 0.5, 0.7, 1]),
    ("celu", [-0.950213, -0.5034147, 0, 0.4, 2.5]),
    ("selu", [-1.670569, -0.885053, 0, 0.4202804, 2.626753]),
    ("hard_silu", [-0, -0.2683333, 0, 0.2266667, 2.291667]),
    ("relu6", [0, 0, 0, 0.4, 2.5]),
    ("hard_tanh", [-1, -0.7, 0, 0.4, 1]),
    ("soft_sign", [-0.75, -0.4117647, 0, 0.2857143, 0.7142857]),
    ("log_sigmoid", [-3.048587, -1.103186, -0.6931472, -0.5130153, -0.07888974]),
]


@pytest.mark.parametrize("name,want", _RECORDED, ids=[r[0] for r in _RECORDED])
def test_activations_match_recorded_jax(name, want):
  f = getattr(nn, name)
  np.testing.assert_allclose(np.asarray(f(_X)), want, rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(np.asarray(tracejax.jit(f)(_X)), want, rtol=2e-6, atol=1e-6)
  xs = np.stack([_X, -_X])
  np.testing.assert_allclose(np.asarray(tracejax.vmap(f)(xs)),
                             np.stack([np.asarray(f(r)) for r in xs]), rtol=1e-6)


def test_log1mexp_recorded_and_grads(x64):
  got = nn.log1mexp(np.abs(_X) + 0.1)
  want = [-0.04609546, -0.5966177, -2.352169, -0.9327521, -0.07717654]  # JAX 0.10.2
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6)
  check_grads(nn.log1mexp, (np.array([0.3, 1.0, 4.0]),), order=2, modes=("fwd", "rev"))
  check_grads(nn.squareplus, (np.array([-1.3, 0.2, 2.0]),), order=2, modes=("fwd", "rev"))
  check_grads(nn.mish, (np.array([-1.3, 0.2, 2.0]),), order=2, modes=("fwd", "rev"))


# ---- block-scaled matmuls ----

def test_scaled_matmul_against_numpy():
  rng = np.random.RandomState(0)
  a = rng.randn(2, 3, 8).astype(np.float32)
  b = rng.randn(2, 4, 8).astype(np.float32)
  sa = rng.rand(2, 3, 2).astype(np.float32) + 0.5   # blocks of 4
  sb = rng.rand(2, 4, 1).astype(np.float32) + 0.5   # one block of 8
  want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 8, -1))
  got = nn.scaled_matmul(a, b, sa, sb)
  assert got.dtype == np.float32
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
  got = tracejax.jit(nn.scaled_matmul, static_argnums=4)(a, b, sa, sb, jnp.bfloat16)
  assert got.dtype == jnp.bfloat16
  # Low-precision inputs with e8m0 scales (what mxfp8 produces).
  a8 = a.astype(ml_dtypes.float8_e4m3fn)
  s8 = np.full((2, 3, 2), 0.25, np.float32).astype(ml_dtypes.float8_e8m0fnu)
  want = np.einsum("bmk,bnk->bmn", a8.astype(np.float32) * 0.25, b * np.repeat(sb, 8, -1))
  np.testing.assert_allclose(np.asarray(nn.scaled_matmul(a8, b, s8, sb)), want, rtol=1e-5,
                             atol=1e-5)
  with pytest.raises(ValueError, match="does not block"):
    nn.scaled_matmul(a, b, rng.rand(2, 3, 3), sb)


def _np_quantize(x, mode, global_scale=1.0):
  """The block quantization of `scaled_dot_general`, by its definition, in NumPy:
  (B, M, K) -> dequantized (B, M, K)."""
  B, M, K = x.shape
  bs = 32 if mode == "mxfp8" else 16
  data = ml_dtypes.float8_e4m3fn if mode == "mxfp8" else ml_dtypes.float4_e2m1fn
  vmax = float(ml_dtypes.finfo(data).max)
  xb = x.reshape(B, M, K // bs, bs).astype(np.float32) / global_scale
  amax = np.abs(xb).max(-1, keepdims=True) / vmax
  if mode == "mxfp8":
    scale = 2.0 ** np.ceil(np.log2(amax))   # the next power of two (amax > 0 here)
  else:
    scale = np.clip(amax, 0, 448.0).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
  q = np.clip(xb / scale, -vmax, vmax).astype(data).astype(np.float32)
  return (q * scale * global_scale).reshape(B, M, K)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_against_numpy(mode):
  rng = np.random.RandomState(1)
  lhs = (rng.randn(2, 4, 64) * 3).astype(np.float32)
  rhs = rng.randn(2, 3, 64).astype(np.float32)
  gs = np.float32(0.5)
  cfg = nn.get_scaled_dot_general_config(mode, jnp.array([gs]) if mode == "nvfp4" else None)
  assert cfg.mode == mode and cfg.block_size == (32 if mode == "mxfp8" else 16)
  dims = (((2,), (2,)), ((0,), (0,)))
  got = nn.scaled_dot_general(lhs, rhs, dims, configs=[cfg] * 3)
  g = gs if mode == "nvfp4" else 1.0
  want = np.einsum("bmk,bnk->bmn", _np_quantize(lhs, mode, g), _np_quantize(rhs, mode, g))
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-4)
  # Close to the exact product (up to the formats' precision).
  exact = np.einsum("bmk,bnk->bmn", lhs, rhs)
  assert np.abs(np.asarray(got) - exact).max() < (0.15 if mode == "mxfp8" else 0.5) * \
      np.abs(exact).max()
  jitted = tracejax.jit(lambda a, b: nn.scaled_dot_general(a, b, dims, configs=[cfg] * 3))
  np.testing.assert_allclose(np.asarray(jitted(lhs, rhs)), np.asarray(got), rtol=1e-6)


def test_scaled_dot_general_layouts_and_grads():
  rng = np.random.RandomState(2)
  a = rng.randn(64, 32).astype(np.float32)    # contracting axis 0
  b = rng.randn(32, 64).astype(np.float32)    # contracting axis 1
  w = rng.randn(32, 32).astype(np.float32)
  cfg = [nn.get_scaled_dot_general_config("mxfp8")] * 3
  dims = (((0,), (1,)), ((), ()))
  out = nn.scaled_dot_general(a, b, dims, configs=cfg)
  assert out.shape == (32, 32)
  want = _np_quantize(a.T[None], "mxfp8")[0] @ _np_quantize(b[None], "mxfp8")[0].T
  np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-4)
  # Gradients: quantized products of the cotangent with the other operand, close to
  # the exact gradients of the unquantized product.
  loss = lambda a, b: jnp.sum(w * nn.scaled_dot_general(a, b, dims, configs=cfg))
  ga, gb = tracejax.grad(loss, argnums=(0, 1))(a, b)
  np.testing.assert_allclose(np.asarray(ga), b.T @ w.T, atol=0.1 * np.abs(b.T @ w.T).max())
  np.testing.assert_allclose(np.asarray(gb), w.T @ a.T, atol=0.1 * np.abs(w.T @ a.T).max())
  # configs=None is plain dot_general (and differentiates exactly).
  plain = lambda a: nn.scaled_dot_general(a, b, dims)
  np.testing.assert_allclose(np.asarray(plain(a)), a.T @ b.T, rtol=1e-5, atol=1e-4)
  check_grads(plain, (a[:, :3],), order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  with pytest.raises(TypeError, match="preferred_element_type"):
    nn.scaled_dot_general(a, b, dims, preferred_element_type=np.int32, configs=cfg)
  with pytest.raises(ValueError, match="multiple of the block size"):
    nn.scaled_dot_general(a[:40], b[:, :40], dims, configs=cfg)
  with pytest.raises(ValueError, match="Unsupported mode"):
    nn.get_scaled_dot_general_config("int4")
