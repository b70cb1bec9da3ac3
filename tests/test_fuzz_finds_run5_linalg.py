"""Regression tests for the differential fuzzer's run-5 finds in linalg and reduce_window.

Every expected value, dtype and error message was recorded from JAX 0.10.2 (run with
/work/jaxvenv/bin/python), not computed from it at test time. Reproducers:
/work/notes/fuzz/run5/s310_x0/repro_x0_s310_{00585,02706,04766,00597}.py and
/work/notes/fuzz/run5/s309_x1/repro_x1_s309_00812.py.
"""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax

_GE_MSG = ("ge does not accept dtype complex64 at position 0. Accepted dtypes at position 0 "
           "are subtypes of integer, floating, bool.")
_LE_MSG = _GE_MSG.replace("ge does", "le does")


# ---- 1. reduce_window max/min of complex operands ----

_CX = np.array([3 + 5j, 3 - 1j, 1 + 1j], np.complex64)


def _rw_max(x):
  return lax.reduce_window(x, -np.inf + 0j, lax.max, (2,), (1,), "VALID")


def _rw_min(x):
  return lax.reduce_window(x, np.complex64(np.inf), lax.min, (2,), (1,), "VALID")


def test_complex_reduce_window_max_min_values():
  # JAX: the identity init makes these the reduce_window_max/min primitives, which take
  # complex operands and order them lexicographically (real part, then imaginary part).
  assert _rw_max(_CX).tolist() == [3 + 5j, 3 - 1j]
  assert _rw_min(_CX).tolist() == [3 - 1j, 1 + 1j]
  assert jax.jit(_rw_min)(_CX).tolist() == [3 - 1j, 1 + 1j]
  padded = lax.reduce_window(_CX, np.complex64(np.inf), lax.min, (2,), (1,), ((1, 1),))
  assert padded.tolist() == [3 + 5j, 3 - 1j, 1 + 1j, 1 + 1j]
  assert jax.vmap(_rw_min)(_CX[None]).tolist() == [[3 - 1j, 1 + 1j]]
  assert lax.cummin(_CX).tolist() == [3 + 5j, 3 - 1j, 1 + 1j]
  assert lax.cummax(_CX, reverse=True).tolist() == [3 + 5j, 3 - 1j, 1 + 1j]
  # The primitives themselves accept complex operands too.
  from tracejax._src.lax import windowed
  assert windowed._reduce_window_max(_CX, (2,), (1,), "VALID").tolist() == [3 + 5j, 3 - 1j]


def test_complex_reduce_window_max_min_derivative_fails_where_jax_does():
  # JAX: the JVP (select_and_gather_add) and the VJP (select_and_scatter_add) trace,
  # but lowering them fails in the `ge`/`le` that picks each window's element.
  with pytest.raises(TypeError) as e:
    jax.jvp(_rw_max, (_CX,), (_CX,))
  assert str(e.value) == _GE_MSG
  with pytest.raises(TypeError) as e:
    jax.jvp(_rw_min, (_CX,), (np.zeros_like(_CX),))
  assert str(e.value) == _LE_MSG
  f = jax.jit(lambda x: jax.jvp(_rw_max, (x,), (x,)))
  f.trace(_CX)    # tracing succeeds
  assert "select_and_gather_add" in str(jax.make_jaxpr(lambda x: jax.jvp(_rw_max, (x,), (x,)))(_CX))
  with pytest.raises(TypeError, match="^ge does not accept dtype complex64 at position 0"):
    f.lower(_CX)
  out, vjp = jax.vjp(_rw_max, _CX)       # the forward pass runs
  assert out.tolist() == [3 + 5j, 3 - 1j]
  with pytest.raises(TypeError) as e:
    vjp(out)
  assert str(e.value) == _GE_MSG
  with pytest.raises(TypeError) as e:
    jax.grad(lambda x: jnp.sum(_rw_max(x)).real)(_CX)
  assert str(e.value) == _GE_MSG


def test_complex_reduce_window_generic_init_is_differentiable():
  # An init that is not the identity keeps the generic reduce_window, whose JVP works.
  f = lambda x: lax.reduce_window(x, np.complex64(0), lax.max, (2,), (1,), "VALID")
  y, t = jax.jvp(f, (_CX,), (_CX * 1j,))
  assert y.tolist() == [3 + 5j, 3 - 1j]
  assert t.tolist() == [-5 + 3j, 1 + 3j]


def test_complex_reduce_window_jnp_init_under_jit_is_generic():
  # JAX: under jit / checkpoint a jnp init value made while tracing is a tracer, so the
  # reduce_window stays generic and its JVP works; a NumPy init stays the monoid, whose
  # JVP fails in the lowering as eagerly.
  rmin = lambda x: lax.reduce_window(x, jnp.asarray(jnp.inf, x.dtype), lax.min, (2,), (1,),
                                     "VALID")
  want = [[3 - 1j, 1 + 1j], [1 + 3j, -1 + 1j]]
  assert [t.tolist() for t in jax.jit(lambda x: jax.jvp(rmin, (x,), (x * 1j,)))(_CX)] == want
  assert [t.tolist() for t in jax.jvp(jax.checkpoint(rmin), (_CX,), (_CX * 1j,))] == want
  np_init = lambda x: lax.reduce_window(x, np.complex64(np.inf), lax.min, (2,), (1,), "VALID")
  with pytest.raises(TypeError) as e:
    jax.jit(lambda x: jax.jvp(np_init, (x,), (x,)))(_CX)
  assert str(e.value) == _LE_MSG


def test_fuzz_reduce_window_complex_jvp_programs():
  # repro_x0_s310_00585 and _02706 (x64 off).
  x0 = np.array([[5.2075700759887695 - 1.2226766347885132j],
                 [0.4697837829589844 - 1.0300627946853638j],
                 [2.1424286365509033 + 1.6837525367736816j]], np.complex64)
  f0 = lambda x: lax.reduce_window(x, jnp.asarray(jnp.inf, jnp.asarray(x).dtype), lax.min,
                                   (1, 1), (1, 1), "VALID")
  with pytest.raises(TypeError) as e:
    jax.jvp(f0, (x0,), (jnp.ones_like(x0) * 0.5,))
  assert str(e.value) == _LE_MSG

  def f1(x):
    v0 = jax.checkpoint(lambda v: v * 2)(x)
    v1 = lax.complex(v0, float("nan"))
    return lax.reduce_window(v1, jnp.asarray(-jnp.inf, jnp.asarray(v1).dtype), lax.max,
                             (1,), (1,), "VALID")
  x1 = np.array([0.8364489285498136, 2.807160301601683, -0.7563535997483228,
                 0.001412991515735291], np.float32)
  with pytest.raises(TypeError) as e:
    jax.jvp(f1, (x1,), (jnp.ones_like(x1) * 0.5,))
  assert str(e.value) == _GE_MSG


# ---- 2. norms of empty vectors and matrices ----

_ZERO_SIZE_MIN = "zero-size array to reduction operation min which has no identity"

# (shape, ord, JAX's float32 value or the start of its ValueError)
_EMPTY_NORMS = [
    ((0,), None, 0.0), ((0,), 1, 0.0), ((0,), -1, np.inf), ((0,), 2, 0.0),
    ((0,), -2, np.inf), ((0,), np.inf, 0.0), ((0,), -np.inf, _ZERO_SIZE_MIN),
    ((0,), 0, 0.0), ((0,), 3, 0.0), ((0,), -3, np.inf), ((0,), 0.5, 0.0),
    ((0,), "fro", "Invalid order 'fro' for vector norm."),
    ((0, 0), None, 0.0), ((0, 0), "fro", 0.0), ((0, 0), "nuc", 0.0), ((0, 0), 1, 0.0),
    ((0, 0), -1, _ZERO_SIZE_MIN), ((0, 0), 2, 0.0), ((0, 0), -2, _ZERO_SIZE_MIN),
    ((0, 0), np.inf, 0.0), ((0, 0), -np.inf, _ZERO_SIZE_MIN),
    ((0, 0), 3, "Invalid order '3' for matrix norm."),
    ((0, 3), "nuc", 0.0), ((0, 3), 1, 0.0), ((0, 3), -1, 0.0), ((0, 3), 2, 0.0),
    ((0, 3), np.inf, 0.0), ((0, 3), -np.inf, _ZERO_SIZE_MIN),
    ((3, 0), 1, 0.0), ((3, 0), -1, _ZERO_SIZE_MIN), ((3, 0), 2, 0.0),
    ((3, 0), np.inf, 0.0), ((3, 0), -np.inf, 0.0),
]


@pytest.mark.parametrize("shape,ord,expected", _EMPTY_NORMS,
                         ids=[f"{s}-{o}" for s, o, _ in _EMPTY_NORMS])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_norm_of_empty(shape, ord, expected, dtype):
  x = np.zeros(shape, dtype)
  if isinstance(expected, str):
    with pytest.raises(ValueError, match="^" + expected.replace("(", r"\(")):
      jnp.linalg.norm(x, ord)
    return
  for keepdims in (False, True):
    r = jnp.linalg.norm(x, ord, keepdims=keepdims)
    assert r.dtype == np.float32
    assert r.shape == ((1,) * len(shape) if keepdims else ())
    assert np.all(np.asarray(r) == expected)


def test_norm_of_empty_batched_and_fuzz_program():
  # JAX: the batched matrix norms of empty matrices are zeros too.
  x = np.zeros((2, 0, 3), np.float32)
  for ord in (2, np.inf):
    assert jnp.linalg.norm(x, ord, axis=(1, 2)).tolist() == [0.0, 0.0]
  assert jnp.linalg.norm(np.zeros((2, 3, 0), np.float32), 1, axis=(1, 2)).tolist() == [0.0, 0.0]
  assert jnp.linalg.vector_norm(np.zeros((2, 0), np.float32), ord=np.inf, axis=1).tolist() == [
      0.0, 0.0]
  assert jnp.linalg.matrix_norm(np.zeros((0, 0), np.float32), ord=2) == 0.0
  assert jax.jit(lambda x: jnp.linalg.norm(x, 2))(np.zeros((0, 4), np.float32)) == 0.0
  assert jax.grad(lambda x: jnp.linalg.norm(jnp.outer(x, x), 2))(
      np.zeros((0,), np.float32)).shape == (0,)
  # repro_x0_s310_04766 (x64 off): float32 0.0.
  out = jnp.linalg.norm(jnp.outer(np.zeros((0,)), np.zeros((0,))), 2)
  assert out.dtype == np.float32 and not out.weak_type and float(out) == 0.0


def test_norm_max_starts_at_zero_in_derivatives_as_jax():
  # JAX's maxima start from 0 (max(0, reduce_max)): at an all-zero input the derivative
  # is split evenly between them and the 0.
  g = jax.grad(lambda a: jnp.linalg.norm(a, np.inf))(np.zeros(3, np.float32))
  np.testing.assert_allclose(g, [0.1666666716337204] * 3, rtol=1e-7)
  g = jax.grad(lambda a: jnp.linalg.norm(a, 1))(np.zeros((2, 3), np.float32))
  np.testing.assert_allclose(g, np.full((2, 3), 0.1666666716337204), rtol=1e-7)
  g = jax.grad(lambda a: jnp.linalg.norm(a, np.inf))(np.zeros((2, 3), np.float32))
  np.testing.assert_allclose(g, np.full((2, 3), 0.25), rtol=1e-7)
  g = jax.grad(lambda a: jnp.linalg.norm(a, np.inf))(np.array([1., -3., 3.], np.float32))
  np.testing.assert_allclose(g, [0.0, -0.5, 0.5], rtol=1e-7)


# ---- 3. lstsq of an all-zero matrix ----

def test_lstsq_of_zero_matrix():
  # JAX: zero singular values never count (rank 0), so x = 0 (not NaN).
  z = np.zeros((3, 2), np.float32)
  b = np.ones(3, np.float32)
  for rcond in (None, 0.0, -1.0, 0.5):
    x, resid, rank, s = jnp.linalg.lstsq(z, b, rcond=rcond)
    assert x.tolist() == [0.0, 0.0] and resid.tolist() == [3.0]
    assert int(rank) == 0 and rank.dtype == np.int32 and s.tolist() == [0.0, 0.0]
    x, resid, rank, _ = jnp.linalg.lstsq(z, b, rcond=rcond, numpy_resid=True)
    assert x.tolist() == [0.0, 0.0] and resid.shape == (0,) and int(rank) == 0
  zc = np.zeros((3, 3), np.complex64)
  x, resid, rank, s = jnp.linalg.lstsq(zc, zc)
  assert x.dtype == np.complex64 and np.all(np.asarray(x) == 0)
  assert resid.dtype == np.float32 and resid.tolist() == [0.0] * 3 and int(rank) == 0
  assert jax.jit(lambda a: jnp.linalg.lstsq(a, a)[0])(zc).tolist() == [[0j] * 3] * 3
  # A zero singular value with rcond=0 is dropped too (JAX: rank 1, residual
  # sqrt(2) ** 2 = 1.9999998807907104 in float32).
  a1 = np.array([[1., 0.], [0., 0.], [0., 0.]], np.float32)
  x, resid, rank, s = jnp.linalg.lstsq(a1, b, rcond=0.)
  assert x.tolist() == [1.0, 0.0] and resid.tolist() == [1.9999998807907104]
  assert int(rank) == 1 and s.tolist() == [1.0, 0.0]
  # JAX's derivative at the zero matrix is NaN (0 * inf in the SVD's JVP).
  t = jax.jvp(lambda a: jnp.linalg.lstsq(a, a)[0], (np.zeros((3, 3), np.float32),),
              (np.full((3, 3), 0.5, np.float32),))[1]
  assert np.all(np.isnan(np.asarray(t)))


def test_lstsq_numpy_resid_under_jit_raises_as_jax():
  a = np.array([[1., 2.], [3., 4.], [5., 7.]], np.float32)
  b = np.array([1., 1., 2.], np.float32)
  with pytest.raises(jax.errors.TracerBoolConversionError):
    jax.jit(lambda a, b: jnp.linalg.lstsq(a, b, numpy_resid=True)[1])(a, b)


def test_fuzz_lstsq_of_zeros_under_vmap_jvp_vmap():
  # repro_x0_s310_00597, reduced (x64 off): the lstsq of zeros_like(...) under
  # vmap(jvp(vmap(.))); JAX gives zeros for the primal and the (symbolic zero) tangent.
  def f0(x):
    v = jnp.zeros_like(x)
    return jnp.linalg.lstsq(v, v)[0]
  f2 = lambda a: jax.jvp(jax.vmap(f0, in_axes=1), (a,), (jnp.ones_like(a) * 0.5,))
  x = (np.arange(81).reshape(3, 3, 3, 3) * (1 + 0.5j)).astype(np.complex64)
  y, t = jax.vmap(f2)(x)
  assert y.dtype == t.dtype == np.complex64 and y.shape == t.shape == (3, 3, 3, 3)
  assert np.all(np.asarray(y) == 0) and np.all(np.asarray(t) == 0)


# ---- 4. second derivatives through the SVD (lstsq) ----

_X0 = np.array([[435.8457336425781, 45.54253387451172], [-307.74609375, 151.9258575439453]],
               np.float32)
_W = np.array([[1., 2.], [3., -1.]], np.float32)


def test_svd_and_lstsq_first_and_forward_second_derivatives_as_jax():
  t_u, t_s, t_vh = jax.jvp(jnp.linalg.svd, (_X0,), (_W,))[1]
  np.testing.assert_allclose(t_u, [[-0.00427917018532753, -0.005706426687538624],
                                   [-0.005706426687538624, 0.00427917018532753]], rtol=1e-5)
  np.testing.assert_allclose(t_s, [-1.219071626663208, 0.7039051055908203], rtol=1e-6)
  np.testing.assert_allclose(t_vh, [[-0.0006003337330184877, -0.005852119997143745],
                                    [-0.005852119997143745, 0.0006003337330184877]],
                             rtol=1e-5)
  f = lambda a: jnp.linalg.lstsq(a, _W)[0]
  np.testing.assert_allclose(jax.jvp(f, (_X0,), (_W,))[1],
                             [[-8.771053398959339e-05, -1.0581189599179197e-05],
                              [-4.891787102678791e-05, -9.268774010706693e-05]], rtol=1e-5)
  hess = jax.jvp(lambda a: jax.jvp(f, (a,), (_W,))[1], (_X0,), (_W,))[1]
  np.testing.assert_allclose(hess, [[4.5950514504511375e-07, 8.113105423035449e-07],
                                    [3.7507670640479773e-06, 8.411293492827099e-07]],
                             rtol=1e-5)


def _grad_of_outputs_and_vjp(f, x):
  def g(x):
    o, vjp = jax.vjp(f, x)
    return jnp.sum(jnp.real(o)) + jnp.sum(jnp.real(vjp(jnp.ones_like(o) * 0.5)[0]))
  return jax.grad(g)(x)


def test_fuzz_grad_of_vjp_of_lstsq(x64):
  # repro_x1_s309_00812 (x64 on): lstsq(x, x) is the identity, so the exact answer is 0.
  # JAX 0.10.2 gives rounding noise [[-2.0023435e-06, 7.7052973e-06], [3.0864030e-06,
  # 9.6848235e-06]]; tracejax gave ~5e-3, F's constant diagonal in the SVD JVP passing
  # huge cancelling cotangents to s. Ours is now within 1e-5 of JAX's and near 0.
  out = _grad_of_outputs_and_vjp(lambda a: jnp.linalg.lstsq(a, a)[0], _X0)
  assert out.dtype == np.float32
  jax_out = [[-2.0023435e-06, 7.7052973e-06], [3.0864030e-06, 9.6848235e-06]]
  np.testing.assert_allclose(out, jax_out, atol=1e-5)
  assert np.max(np.abs(np.asarray(out))) < 1e-7


def test_grad_of_vjp_through_svd_reconstruction(x64):
  # U diag(s) Vh is x, so the answer is all ones; JAX 0.10.2 gives [[1.0003517,
  # 0.9986473], [0.9994583, 0.99829966]] (tracejax gave 0.89..1.36).
  usvh = lambda x: (lambda u, s, vh: u @ (s[:, None] * vh))(*jnp.linalg.svd(x))
  out = _grad_of_outputs_and_vjp(usvh, _X0)
  np.testing.assert_allclose(out, [[1.0003517, 0.9986473], [0.9994583, 0.99829966]],
                             atol=2e-3)
  np.testing.assert_allclose(out, np.ones((2, 2)), atol=1e-5)
