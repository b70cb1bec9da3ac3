"""jax.numpy extras against NumPy: gcd/lcm, gradient, vectorize, convolve/correlate, the
polynomial functions, and edge cases of geomspace, roll, nonzero, arange and buffers.

Each runs eagerly and under jit; vmap is compared with a Python loop; derivatives are
checked against finite differences in float64 (x64 switched on for the test).
"""
import array as pyarray

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.config import config
from tracejax.test_util import check_grads


def _close(a, b, tol=1e-5):
  a = np.asarray(a)
  b = np.asarray(b)
  assert a.shape == b.shape, (a.shape, b.shape)
  np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- gcd / lcm ----

def test_gcd_lcm_against_numpy():
  a = np.array([[12, -18, 0, 7, 0], [100, 35, -9, 1, 0]], np.int32)
  b = np.array([8, 24, 6, 0, 0], np.int32)
  for f, nf in ((jnp.gcd, np.gcd), (jnp.lcm, np.lcm)):
    out = f(a, b)
    assert out.dtype == np.int32
    _close(out, nf(a, b))
    _close(jax.jit(f)(a, b), nf(a, b))
    _close(jax.vmap(f)(a, a[::-1]), np.stack([nf(x, y) for x, y in zip(a, a[::-1])]))
  assert jnp.gcd(np.uint8(12), np.uint8(18)).dtype == np.uint8
  assert int(jnp.gcd(np.uint8(12), np.uint8(18))) == 6
  assert int(jnp.gcd(0, 0)) == 0 and int(jnp.lcm(0, 5)) == 0
  with pytest.raises(ValueError, match="must be integers"):
    jnp.gcd(1.0, 2)
  with pytest.raises(ValueError, match="must be integers"):
    jnp.lcm(1.0, 2)
  # a bool operand is promoted with the int (JAX 0.10.2: gcd(True, 3) = 1, lcm = 3)
  assert int(jnp.gcd(True, 3)) == 1 and int(jnp.lcm(True, 3)) == 3


# ---- gradient ----

def test_gradient_against_numpy():
  f = np.array([[1., 2., 4., 7.], [11., 16., 22., 30.], [0., -1., 3., 2.]], np.float32)
  coords = np.array([0., 1., 1.5, 3.5], np.float32)
  cases = [((), {}), ((2.,), {}), ((0.5, coords), {}), ((coords,), {"axis": 1}),
           ((), {"axis": 0}), ((), {"axis": (1,)}), ((3.,), {"axis": -1, "edge_order": 2}),
           ((coords,), {"axis": 1, "edge_order": 2})]
  for args, kw in cases:
    ref = np.gradient(f.astype(np.float64), *args, **kw)
    out = jnp.gradient(f, *args, **kw)
    jit_out = jax.jit(lambda x: jnp.gradient(x, *args, **kw))(f)
    if isinstance(ref, (list, tuple)):
      assert isinstance(out, list) and len(out) == len(ref)
      for o, j, r in zip(out, jit_out, ref):
        _close(o, r, 1e-4)
        _close(j, r, 1e-4)
    else:
      _close(out, ref, 1e-4)
      _close(jit_out, ref, 1e-4)
  assert jnp.gradient(jnp.array([1, 2, 4])).dtype == np.float32
  assert jnp.gradient(jnp.array(1.)) == []
  with pytest.raises(ValueError, match="too small"):
    jnp.gradient(jnp.array([1.]))
  with pytest.raises(ValueError, match="match the length"):
    jnp.gradient(f, jnp.arange(3.), axis=1)
  with pytest.raises(TypeError, match="spacing"):
    jnp.gradient(f, 1., 2., 3.)
  with pytest.raises(ValueError, match="edge_order"):
    jnp.gradient(f, edge_order=3)


def test_gradient_vmap_and_grads(x64):
  rng = np.random.RandomState(0)
  f = rng.randn(3, 5)
  h = np.cumsum(rng.uniform(0.5, 1.5, 5))
  fun = lambda x, c: jnp.gradient(x, c)
  _close(jax.vmap(fun, (0, None))(f, h), np.stack([np.gradient(r, h) for r in f]), 1e-10)
  check_grads(jax.jit(fun), (f[0], h), order=2)
  check_grads(jax.jit(lambda x: jnp.gradient(x, 0.3, edge_order=2)), (f,), order=1)


# ---- vectorize ----

def test_vectorize_signature_and_outputs():
  rng = np.random.RandomState(1)
  a, b = rng.randn(2, 3, 4).astype(np.float32), rng.randn(4).astype(np.float32)
  vdot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
  _close(vdot(a, b), np.einsum("ijk,k->ij", a, b))
  _close(jax.jit(vdot)(a, b), np.einsum("ijk,k->ij", a, b))
  mm = jnp.vectorize(jnp.matmul, signature="(m,n),(n,k)->(m,k)")
  x, y = rng.randn(5, 1, 2, 3), rng.randn(4, 3, 2)
  _close(mm(x, y), np.matmul(x, y), 1e-4)
  two = jnp.vectorize(lambda v: (jnp.sum(v), v * 2), signature="(n)->(),(n)")
  s, d = two(a)
  _close(s, a.sum(-1), 1e-5)
  _close(d, a * 2)
  # Elementwise without a signature; excluded positions and keywords pass through.
  _close(jnp.vectorize(lambda u, v: u + v)(jnp.ones(3), 2.), np.full(3, 3.))
  _close(jnp.vectorize(lambda u, p: u ** p, excluded={1})(jnp.arange(3.), 2), [0., 1., 4.])
  _close(jnp.vectorize(lambda u, p=1: u * p, excluded={"p"})(jnp.ones(2), p=3), [3., 3.])
  _close(jnp.vectorize(lambda u, p=1: u * p)(jnp.ones(2), p=jnp.full((3, 1), 2.)),
         np.full((3, 2), 2.))
  assert jnp.vectorize(np.sum).__doc__ == np.sum.__doc__
  with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
    vdot(jnp.ones((3, 4)), jnp.ones(5))
  with pytest.raises(ValueError, match="does not match core dimensions"):
    jnp.vectorize(lambda v: v.sum(), signature="(n)->(n)")(jnp.ones((3, 4)))
  with pytest.raises(ValueError, match="signature"):
    jnp.vectorize(jnp.dot, signature="(n)->>()")
  with pytest.raises(TypeError, match="positional arguments"):
    vdot(jnp.ones(3))
  old = config.jax_numpy_rank_promotion
  config.update("jax_numpy_rank_promotion", "raise")
  try:
    with pytest.raises(ValueError, match="jnp.vectorize"):
      vdot(a, b)
    _close(vdot(a, a), np.einsum("ijk,ijk->ij", a, a))  # equal loop ranks are fine
  finally:
    config.update("jax_numpy_rank_promotion", old)


def test_vectorize_vmap_and_grads(x64):
  rng = np.random.RandomState(2)
  f = jnp.vectorize(lambda v, w: jnp.sum(jnp.sin(v) * w), signature="(n),(n)->()")
  a, b = rng.randn(2, 3, 4), rng.randn(4)
  _close(jax.vmap(f, (0, None))(a, b), np.stack([np.asarray(f(r, b)) for r in a]), 1e-10)
  check_grads(jax.jit(f), (a[0], b), order=2)


# ---- convolve / correlate ----

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_correlate_against_numpy(mode):
  rng = np.random.RandomState(3)
  for m, n in ((5, 3), (4, 4), (2, 5), (6, 2), (1, 1)):
    a = (rng.randn(m) + 1j * rng.randn(m)).astype(np.complex64)
    v = (rng.randn(n) + 1j * rng.randn(n)).astype(np.complex64)
    for f, nf in ((jnp.convolve, np.convolve), (jnp.correlate, np.correlate)):
      _close(f(a, v, mode), nf(a, v, mode), 1e-4)
      _close(f(a.real, v.real, mode=mode), nf(a.real, v.real, mode), 1e-4)
      _close(jax.jit(lambda x, y: f(x, y, mode))(a.real, v.real), nf(a.real, v.real, mode),
             1e-4)


def test_convolve_errors_dtypes_vmap_and_grads(x64):
  assert jnp.convolve(jnp.array([1, 2, 3]), jnp.array([0, 1])).dtype == np.float64
  with pytest.raises(ValueError, match="1-dimensional"):
    jnp.convolve(jnp.ones((2, 2)), jnp.ones(2))
  with pytest.raises(ValueError, match="empty"):
    jnp.correlate(jnp.zeros(0), jnp.ones(2))
  with pytest.raises(ValueError, match="mode"):
    jnp.convolve(jnp.ones(3), jnp.ones(2), mode="bad")
  out = jnp.convolve(jnp.ones(3), jnp.ones(2), precision=jax.lax.Precision.HIGHEST)
  _close(out, [1., 2., 2., 1.])
  rng = np.random.RandomState(4)
  a, v = rng.randn(3, 6), rng.randn(3)
  for f, nf in ((jnp.convolve, np.convolve), (jnp.correlate, np.correlate)):
    _close(jax.vmap(lambda x: f(x, v, "same"))(a), np.stack([nf(r, v, "same") for r in a]),
           1e-10)
    check_grads(jax.jit(lambda x, y: f(x, y, "full")), (a[0], v), order=2)
    check_grads(jax.jit(lambda x, y: f(x, y, "valid")), (a[0] + 1j * a[1], v + 0.5j),
                order=1)


# ---- polynomials ----

def test_polynomials_against_numpy():
  p = np.array([1., -3., 0.5, 2.], np.float32)
  q = np.array([2., 1.], np.float32)
  x = np.linspace(-2, 2, 7).astype(np.float32)
  _close(jnp.polyval(p, x), np.polyval(p, x), 1e-5)
  _close(jnp.polyval(np.ones((3, 2), np.float32), 2.), np.polyval(np.ones((3, 2)), 2.))
  assert jnp.polyval(jnp.array([1, 2]), 3).dtype == np.int32
  _close(jnp.polyadd(q, p), np.polyadd(q, p))
  _close(jnp.polysub(q, p), np.polysub(q, p))
  assert jnp.polysub(jnp.array([1, 2]), jnp.array([1, 2, 3])).dtype == np.int32
  _close(jnp.polymul(p, q), np.polymul(p, q))
  _close(jnp.polymul(jnp.array([0., 1., 2.]), q, trim_leading_zeros=True),
         np.polymul(np.array([1., 2.]), q))
  for m in (0, 1, 2, 5):
    _close(jnp.polyder(p, m), np.polyder(p, m) if m < 4 else np.zeros(0))
  _close(jnp.polyint(p), np.polyint(p), 1e-6)
  _close(jnp.polyint(p, 2, k=[1., 2.]), np.polyint(p, 2, k=[1., 2.]), 1e-6)
  _close(jnp.polyint(p, 2, k=3.), np.polyint(p, 2, k=3.), 1e-6)
  qd, rd = jnp.polydiv(p, q)
  nq, nr = np.polydiv(p, q)
  _close(qd, nq, 1e-6)
  _close(rd[-len(nr):], nr, 1e-6)
  assert np.all(np.asarray(rd[:-len(nr)]) == 0)
  _close(jnp.polydiv(p, q, trim_leading_zeros=True)[1], nr, 1e-6)
  _close(jnp.poly(np.array([1., 2., 3.])), np.poly([1., 2., 3.]))
  _close(jnp.poly(np.array(2.)), [1., -2.])
  _close(jnp.poly(np.zeros(0)), np.poly(np.zeros(0)))
  m2 = np.array([[1., 2.], [3., 4.]], np.float32)
  _close(jnp.poly(m2), np.poly(m2).astype(np.complex64), 1e-5)
  with pytest.raises(ValueError, match="square"):
    jnp.poly(np.ones((2, 3)))


def test_roots_and_polyfit_against_numpy():
  p = np.array([0., 1., -6., 11., -6., 0.], np.float32)
  r = jnp.roots(p)
  assert r.dtype == np.complex64
  _close(np.sort_complex(np.asarray(r)), np.sort_complex(np.roots(p).astype(np.complex64)),
         1e-4)
  r2 = jax.jit(lambda c: jnp.roots(c, strip_zeros=False))(p[1:])
  _close(np.sort_complex(np.asarray(r2)), np.sort_complex(np.roots(p[1:]).astype(complex)),
         1e-4)
  _close(np.sort_complex(np.asarray(jnp.roots(np.array([1., 0., 1.])))),
         np.sort_complex(np.roots([1., 0., 1.])).astype(np.complex64), 1e-6)
  assert jnp.roots(np.array([2.])).shape == (0,)
  assert jnp.roots(np.array([0., 0.])).shape == (0,)
  with pytest.raises(Exception, match="concrete"):
    jax.jit(jnp.roots)(p)

  x = np.arange(6.)
  y = np.array([1., 2., 5., 10., 17.5, 26.])
  w = np.arange(1., 7.)
  _close(jnp.polyfit(x, y, 2), np.polyfit(x, y, 2), 1e-3)
  _close(jax.jit(lambda a, b: jnp.polyfit(a, b, 1))(x, y), np.polyfit(x, y, 1), 1e-3)
  _close(jnp.polyfit(x, y, 1, w=w), np.polyfit(x, y, 1, w=w), 1e-3)
  _close(jnp.polyfit(x.astype(int), x.astype(int), 1), [1., 0.], 1e-4)
  c, res, rank, sv, rc = jnp.polyfit(x, y, 1, full=True)
  nc, nres, nrank, nsv, nrc = np.polyfit(x, y, 1, full=True)
  _close(res, nres, 1e-3)
  assert int(rank) == nrank
  _close(sv, nsv, 1e-4)
  for cov in (True, "unscaled"):
    _, v = jnp.polyfit(x, y, 1, cov=cov)
    _, nv = np.polyfit(x, y, 1, cov=cov)
    _close(v, nv, 1e-3)
  y2 = np.stack([y, 2 * y], 1)
  c2, v2 = jnp.polyfit(x, y2, 1, cov=True)
  nc2, nv2 = np.polyfit(x, y2, 1, cov=True)
  _close(c2, nc2, 1e-3)
  _close(v2, nv2, 1e-3)
  with pytest.raises(ValueError, match="deg"):
    jnp.polyfit(x, y, -1)
  with pytest.raises(TypeError, match="same length"):
    jnp.polyfit(x, y[:3], 1)


def test_polynomial_vmap_and_grads(x64):
  rng = np.random.RandomState(5)
  p, x = rng.randn(4), rng.randn(3)
  ps = rng.randn(3, 4)
  _close(jax.vmap(jnp.polyval, (0, None))(ps, x), np.stack([np.polyval(r, x) for r in ps]),
         1e-10)
  check_grads(jax.jit(jnp.polyval), (p, x), order=2)
  check_grads(jax.jit(lambda a, b: jnp.polymul(a, b)), (p, x), order=1)
  check_grads(jax.jit(lambda a: jnp.polyint(jnp.polyder(a), k=1.)), (p,), order=1)
  check_grads(jax.jit(lambda a, b: jnp.polydiv(a, b)[0]), (p, x[:2] + 3.), order=1)
  ys = rng.randn(2, 3)
  _close(jax.vmap(lambda a: jnp.polyfit(x, a, 1))(ys),
         np.stack([np.polyfit(x, r, 1) for r in ys]), 1e-8)


# ---- edge cases of creation / searching / roll ----

def test_geomspace_edges():
  assert jnp.geomspace(1., 10., 0).shape == (0,)
  _close(jnp.geomspace(1., 1000., 4), np.geomspace(1., 1000., 4))
  _close(jnp.geomspace(-1., -100., 3), [-1., -10., -100.])
  out = jnp.geomspace(1, 100, 3, dtype=int)
  assert out.dtype == np.int32 and list(np.asarray(out)) == [1, 10, 100]
  _close(jnp.geomspace(2., 50., 5, endpoint=False), np.geomspace(2., 50., 5, endpoint=False),
         1e-5)
  starts, stops = np.array([1., 2.]), np.array([8., 32.])
  _close(jnp.geomspace(starts, stops, 4, axis=1), np.geomspace(starts, stops, 4, axis=1),
         1e-5)
  assert float(jnp.geomspace(3., 7., 5)[-1]) == 7.0  # endpoints are exact


def test_roll_edges():
  x = jnp.arange(6).reshape(2, 3)
  assert jnp.roll(jnp.zeros((0, 3)), 2, axis=0).shape == (0, 3)
  assert jnp.roll(jnp.zeros((0, 3)), 2).shape == (0, 3)
  assert jax.jit(lambda s: jnp.roll(jnp.zeros((3, 0)), s, axis=1))(2).shape == (3, 0)
  assert jax.jit(lambda s: jnp.roll(jnp.zeros((2, 0, 3)), s, axis=(0, 1, 2)))(
      jnp.array([1, 2, 3])).shape == (2, 0, 3)
  _close(jnp.roll(jnp.arange(4), (1, 2)), np.roll(np.arange(4), (1, 2)))
  _close(jax.jit(lambda s: jnp.roll(jnp.arange(5), s))(jnp.array([1, 2])),
         np.roll(np.arange(5), (1, 2)))
  _close(jnp.roll(x, 1, axis=(0, 1)), np.roll(np.arange(6).reshape(2, 3), 1, axis=(0, 1)))
  assert int(jnp.roll(jnp.array(5), 1)) == 5


def test_nonzero_edges_and_static_size():
  for bad in (jnp.array(1.), 0):
    with pytest.raises(ValueError, match="0d"):
      jnp.nonzero(bad)
    with pytest.raises(ValueError, match="0d"):
      jnp.where(bad)
  assert jnp.argwhere(jnp.array(3)).shape == (1, 0)
  assert jnp.argwhere(0).shape == (0, 0)
  _close(jnp.flatnonzero(3), [0])
  x = np.array([[0, 1, 2], [3, 0, 0]], np.int32)
  ref = np.nonzero(x)
  for size, fill in ((2, None), (5, -1), (5, (-1, -2))):
    fills = fill if isinstance(fill, tuple) else (fill or 0,) * 2
    want = [np.concatenate([r[:size], np.full(max(size - len(r), 0), f)])
            for r, f in zip(ref, fills)]
    for fn in (lambda a: jnp.nonzero(a, size=size, fill_value=fill),
               jax.jit(lambda a: jnp.nonzero(a, size=size, fill_value=fill))):
      for o, w in zip(fn(x), want):
        _close(o, w)
  _close(jax.jit(lambda a: jnp.argwhere(a, size=4))(x), jnp.argwhere(x, size=4))
  _close(jax.jit(lambda a: jnp.flatnonzero(a, size=4))(x), [1, 2, 3, 0])
  _close(jax.jit(lambda a: jnp.where(a, size=3)[0])(x[0]), [1, 2, 0])
  _close(jax.vmap(lambda a: jnp.nonzero(a, size=2, fill_value=9)[0])(x), [[1, 2], [0, 9]])
  with pytest.raises(Exception, match="size"):
    jax.jit(jnp.nonzero)(x)


def test_arange_edges():
  cases = [(5, 0, -1), (1.0, 0.0, -0.25), (0, 1, 0.3), (5, 0), (0,), (-3,), (2.5,),
           (0.5, 4), (10, 2, -3)]
  for args in cases:
    out = jnp.arange(*args)
    ref = np.arange(*args)
    assert out.shape == ref.shape, args
    _close(out, ref.astype(out.dtype), 1e-6)
  assert jnp.arange(5).dtype == np.int32 and jnp.arange(5.).dtype == np.float32
  assert jnp.arange(1, 10, 2, dtype=jnp.uint8).dtype == np.uint8
  _close(jnp.arange(0.5, 4, dtype=int), [0, 1, 2, 3])
  _close(jnp.arange(3, dtype=jnp.complex64), np.arange(3).astype(np.complex64))
  _close(jnp.arange(jnp.array(4)), np.arange(4))
  with pytest.raises(ZeroDivisionError, match="step"):
    jnp.arange(0, 3, 0)
  with pytest.raises(ValueError, match="complex"):
    jnp.arange(1j)
  with pytest.raises(TypeError, match="start"):
    jnp.arange(None, 4)


def test_array_from_buffers():
  out = jnp.array(memoryview(b"abc"))
  assert out.dtype == np.uint8 and list(np.asarray(out)) == [97, 98, 99]
  _close(jnp.asarray(memoryview(np.arange(6, dtype=np.int16).reshape(2, 3))),
         np.arange(6).reshape(2, 3))
  assert jnp.asarray(memoryview(np.arange(6, dtype=np.int16))).dtype == np.int16
  assert jnp.array(memoryview(np.arange(4.))).dtype == np.float32
  assert jnp.array(memoryview(np.arange(4.)), dtype=jnp.int32).dtype == np.int32
  _close(jnp.asarray(bytearray(b"ab")), [97, 98])
  _close(jnp.asarray(pyarray.array("f", [1., 2., 3.])), [1., 2., 3.])
  with pytest.raises(TypeError, match="numeric"):
    jnp.asarray(b"ab")
  with pytest.raises(TypeError, match="numeric"):
    jnp.asarray(np.array(["a"]))
