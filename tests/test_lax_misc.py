"""The small lax operations of issue 4 item 9, each under the transformations:
reduce_precision, stop_gradient, tie_in, full / full_like / zeros_like_array,
create_token / after_all, Precision on dot and conv, axis_index; and the public
`lax.linalg` module (also as `jax.lax.linalg` under `python -m tracejax run`).

The per-primitive records of test_lax_elementwise / test_lax_structural already
compare these with NumPy; here the point is that they compose with jit, vmap,
jvp and grad the way JAX programs expect.
"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- reduce_precision ----

@pytest.mark.parametrize("exponent_bits,mantissa_bits,narrow", [
    (8, 7, ml_dtypes.bfloat16), (5, 10, np.float16)])
def test_reduce_precision_is_a_round_trip_through_the_narrow_type(exponent_bits,
                                                                   mantissa_bits, narrow):
  x = np.random.default_rng(0).standard_normal(64).astype(np.float32) * 10
  want = x.astype(narrow).astype(np.float32)
  f = lambda v: lax.reduce_precision(v, exponent_bits, mantissa_bits)
  np.testing.assert_array_equal(f(x), want)
  np.testing.assert_array_equal(jax.jit(f)(x), want)
  # vmap: the mapped axis is just another elementwise axis.
  xs = np.stack([x, -x, 2 * x])
  np.testing.assert_array_equal(jax.vmap(f)(xs), xs.astype(narrow).astype(np.float32))
  np.testing.assert_array_equal(jax.vmap(f, in_axes=1, out_axes=1)(xs.T),
                                xs.T.astype(narrow).astype(np.float32))


def test_reduce_precision_derivatives_round_the_tangent():
  # Linear, as in JAX: the tangent (and cotangent) is rounded the same way.
  x = np.array([1.0, 1.0001, 3.14159], np.float32)
  t = np.array([0.1, 1e-4, 1.0], np.float32)
  f = lambda v: lax.reduce_precision(v, 8, 7)
  y, ty = jax.jvp(f, (x,), (t,))
  np.testing.assert_array_equal(y, x.astype(ml_dtypes.bfloat16).astype(np.float32))
  np.testing.assert_array_equal(ty, t.astype(ml_dtypes.bfloat16).astype(np.float32))
  np.testing.assert_array_equal(jax.grad(lambda v: f(v).sum())(x), np.ones(3, np.float32))
  batched = jax.vmap(lambda v, u: jax.jvp(f, (v,), (u,))[1])(np.stack([x, x]), np.stack([t, t]))
  np.testing.assert_array_equal(batched[1], ty)
  assert "reduce_precision[" in str(jax.make_jaxpr(f)(x))


def test_reduce_precision_rejects_bad_arguments():
  with pytest.raises(TypeError):
    lax.reduce_precision(np.arange(3), 8, 7)  # integers have no precision to reduce
  with pytest.raises(ValueError):
    lax.reduce_precision(np.ones(3, np.float32), 0, 7)


# ---- stop_gradient ----

def test_stop_gradient_under_every_transformation():
  f = lambda x: x * lax.stop_gradient(x)
  assert float(jax.grad(f)(3.)) == 3.
  assert float(jax.grad(jax.jit(f))(3.)) == 3.
  y, t = jax.jvp(f, (3.,), (1.,))
  assert (float(y), float(t)) == (9., 3.)
  np.testing.assert_array_equal(jax.vmap(jax.grad(f))(np.arange(3.)), np.arange(3.))
  assert float(jax.grad(jax.grad(f))(3.)) == 0.
  np.testing.assert_array_equal(jax.jit(lax.stop_gradient)(np.arange(3.)), np.arange(3.))


def test_stop_gradient_on_pytrees_and_integers():
  tree = {"a": np.float32(2.), "b": (np.arange(3), np.ones(2, np.float32))}
  out = lax.stop_gradient(tree)
  assert out["b"][0].dtype == np.arange(3).dtype
  g = jax.grad(lambda x: lax.stop_gradient({"w": x, "v": 2 * x})["v"] * x)(3.)
  assert float(g) == 6.


# ---- tie_in, full, full_like, zeros_like_array ----

def test_tie_in_is_the_identity():
  y = np.ones(3, np.float32)
  assert lax.tie_in(np.zeros(2), y) is y
  f = lambda x: lax.tie_in(x, lax.full((2,), 1.5)) + x
  np.testing.assert_array_equal(jax.jit(f)(1.), [2.5, 2.5])
  assert float(jax.grad(lambda x: lax.tie_in(x, x * x))(2.)) == 4.


def test_full_and_full_like():
  assert lax.full((2, 3), 1.5).shape == (2, 3)
  assert lax.full((2,), 1, np.int8).dtype == np.int8
  assert lax.full((), 7).dtype == np.int32
  x = np.arange(4, dtype=np.float32)
  np.testing.assert_array_equal(lax.full_like(x, 2), np.full(4, 2, np.float32))
  z = lax.full_like(x, 2, np.int32, (3,))
  assert (z.shape, z.dtype) == ((3,), np.int32)
  np.testing.assert_array_equal(jax.jit(lambda v: lax.full_like(v, 3.))(x), np.full(4, 3.))
  np.testing.assert_array_equal(jax.vmap(lambda v: lax.full_like(v, 5))(x.reshape(2, 2)),
                                np.full((2, 2), 5, np.float32))
  with pytest.raises(TypeError, match="scalar"):
    lax.full((2,), np.ones(2))


def test_zeros_like_array():
  for x in (np.arange(4, dtype=np.float32), np.int32(3), np.ones((2, 2), np.complex64)):
    z = lax.zeros_like_array(x)
    assert (z.shape, z.dtype) == (np.shape(x), np.asarray(x).dtype)
    assert not np.any(np.asarray(z))
  # The 2020 custom-JVP idiom: instantiate a symbolic zero tangent.
  g = jax.jit(lambda v: lax.zeros_like_array(v) + v)(np.ones(2, np.float32))
  np.testing.assert_array_equal(g, np.ones(2))


# ---- tokens ----

def test_create_token_and_after_all():
  t = lax.create_token()
  t2 = lax.after_all(t, lax.create_token(1.0))  # the 2020 form took an operand
  for tok in (t, t2):
    assert tok.shape == (0,) and tok.dtype == np.bool_
  y, tok = jax.jit(lambda x: (2 * x, lax.after_all(lax.create_token(x))))(1.)
  assert float(y) == 2. and tok.size == 0
  assert float(jax.grad(lambda x: x * lax.after_all(lax.create_token(x)).size + x)(1.)) == 1.
  ys, _ = jax.vmap(lambda x: (x, lax.create_token(x)))(np.ones(3))
  np.testing.assert_array_equal(ys, np.ones(3))


# ---- Precision ----

_PRECISIONS = [None, lax.Precision.DEFAULT, lax.Precision.HIGH, lax.Precision.HIGHEST,
               "highest", "bfloat16", (lax.Precision.HIGH, lax.Precision.HIGHEST)]


@pytest.mark.parametrize("precision", _PRECISIONS, ids=str)
def test_precision_accepted_by_dot_and_conv(precision):
  rng = np.random.default_rng(1)
  a = rng.standard_normal((3, 4)).astype(np.float32)
  b = rng.standard_normal((4, 2)).astype(np.float32)
  tol = dict(rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(lax.dot(a, b, precision=precision), a @ b, **tol)
  np.testing.assert_allclose(
      lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=precision), a @ b, **tol)
  np.testing.assert_allclose(jnp.dot(a, b, precision=precision), a @ b, **tol)
  np.testing.assert_allclose(jnp.matmul(a, b, precision=precision), a @ b, **tol)
  np.testing.assert_allclose(jnp.einsum("ij,jk->ik", a, b, precision=precision), a @ b, **tol)
  img = rng.standard_normal((1, 5, 5, 2)).astype(np.float32)
  ker = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
  conv = lambda x, k: lax.conv_general_dilated(
      x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=precision)
  np.testing.assert_allclose(jax.jit(conv)(img, ker), conv(img, ker), **tol)
  # Derivatives carry the precision through to the transposed products.
  g = jax.grad(lambda x, k: conv(x, k).sum(), argnums=(0, 1))(img, ker)
  assert g[0].shape == img.shape and g[1].shape == ker.shape


def test_precision_reaches_the_stablehlo():
  a = np.ones((2, 3), np.float32)
  text = jax.jit(lambda x: lax.dot(x, x.T, precision=lax.Precision.HIGHEST)).lower(a).as_text()
  assert "precision = [HIGHEST, HIGHEST]" in text
  img, ker = np.ones((1, 4, 4, 2), np.float32), np.ones((3, 3, 2, 5), np.float32)
  text = jax.jit(lambda x, k: lax.conv_general_dilated(
      x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
      precision=(lax.Precision.HIGH, lax.Precision.DEFAULT))).lower(img, ker).as_text()
  assert "#stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>" in text
  with pytest.raises(ValueError, match="Precision"):
    lax.dot(a, a.T, precision="not-a-precision")


# ---- axis_index ----

def test_axis_index_under_vmap_pmap_and_jit():
  np.testing.assert_array_equal(
      jax.vmap(lambda x: x + lax.axis_index("i"), axis_name="i")(np.zeros(4)), np.arange(4.))
  np.testing.assert_array_equal(
      jax.vmap(jax.jit(lambda x: x * lax.axis_index("i")), axis_name="i")(np.ones(3)),
      np.arange(3.))
  # Nested: each name counts along its own axis.
  out = jax.vmap(jax.vmap(lambda x: 10 * lax.axis_index("i") + lax.axis_index("j"),
                          axis_name="j"), axis_name="i")(np.zeros((2, 3)))
  np.testing.assert_array_equal(out, [[0, 1, 2], [10, 11, 12]])
  np.testing.assert_array_equal(
      jax.pmap(lambda x: x + lax.axis_index("d"), axis_name="d")(np.zeros(1)), [0.])
  # The index is an integer constant to grad: d(x * i)/dx = i.
  np.testing.assert_array_equal(
      jax.vmap(jax.grad(lambda x: x * lax.axis_index("i")), axis_name="i")(np.ones(3)),
      np.arange(3.))


def test_axis_index_unbound_name():
  with pytest.raises(NameError, match="unbound axis name"):
    lax.axis_index("nope")
  with pytest.raises(NameError, match="unbound axis name"):
    jax.jit(lambda x: x + lax.axis_index("nope"))(1.)


# ---- lax.linalg as a module ----

_LINALG_NAMES = ["cholesky", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd",
                 "triangular_solve", "cholesky_p", "eig_p", "eigh_p", "lu_p", "qr_p", "svd_p",
                 "triangular_solve_p"]


def test_lax_linalg_module():
  import tracejax.lax.linalg as L
  from tracejax.lax import linalg
  assert linalg is L is lax.linalg
  for name in _LINALG_NAMES:
    # public in jax.lax.linalg only, as in JAX 0.10.2 (no jax.lax.cholesky)
    assert getattr(L, name) is not None and not hasattr(lax, name), name
  a = np.array([[4., 1.], [1., 3.]], np.float32)
  np.testing.assert_allclose(np.asarray(L.cholesky(a)), np.linalg.cholesky(a), rtol=1e-6)


def test_jax_lax_linalg_under_the_run_hook(tmp_path):
  script = tmp_path / "uses_lax_linalg.py"
  script.write_text(
      "import numpy as np\n"
      "import jax\n"
      "from jax.lax import linalg\n"
      "import jax.lax.linalg as L2\n"
      "from jax.lax.linalg import cholesky, eigh\n"
      "a = np.array([[4., 1.], [1., 3.]], np.float32)\n"
      "assert linalg is L2 is jax.lax.linalg\n"
      "l = jax.lax.linalg.cholesky(a)\n"
      "assert np.allclose(l @ l.T, a, atol=1e-5)\n"
      "print('ok', float(eigh(a)[1][0]) < float(eigh(a)[1][1]), cholesky is L2.cholesky)\n")
  res = subprocess.run([sys.executable, "-m", "tracejax", "run", str(script)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
  assert res.returncode == 0, res.stderr
  assert res.stdout.strip() == "ok True True"
