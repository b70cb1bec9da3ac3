"""jax.scipy.special of JAX 0.10.2 (the 53 names) against SciPy, under jit and vmap,
with gradients checked against finite differences."""
import numpy as np
import pytest
import scipy.special as osp

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.special as jsp
from tracejax._src.test_util import check_grads

JAX_0_10_2_NAMES = [
    'bernoulli', 'bessel_jn', 'beta', 'betainc', 'betaln', 'boxcox', 'boxcox1p', 'comb',
    'dawsn', 'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp1', 'expi', 'expit',
    'expn', 'factorial', 'fresnel', 'gamma', 'gammainc', 'gammaincc', 'gammaln', 'gammasgn',
    'hyp1f1', 'hyp2f1', 'i0', 'i0e', 'i1', 'i1e', 'kl_div', 'log_ndtr', 'log_softmax',
    'loggamma', 'logit', 'logsumexp', 'multigammaln', 'ndtr', 'ndtri', 'owens_t', 'poch',
    'polygamma', 'rel_entr', 'sici', 'softmax', 'spence', 'sph_harm_y', 'wofz', 'xlog1py',
    'xlogy', 'zeta']


def test_every_name_of_jax_0_10_2_exists():
  missing = [n for n in JAX_0_10_2_NAMES if not callable(getattr(jsp, n, None))]
  assert missing == []


X = np.linspace(-12., 12., 49)
POS = np.concatenate([np.linspace(0., 3., 13), [4.5, 7., 15., 30., 60.]])
UNIT = np.linspace(0., 3.5, 15)

# (name, args as float64 arrays, scipy reference)
CASES = [
    ("gamma", (np.array([-2.5, -0.5, 0.3, 1., 4.5, 10.]),), osp.gamma),
    ("gammasgn", (np.array([-2.5, -1.5, -0.5, 0.3, 4.]),), osp.gammasgn),
    ("loggamma", (np.array([0.2, 1.5, 7.]),), osp.loggamma),
    ("beta", (np.array([-0.5, 0.5, 2., 3.]), np.array([1.2, 0.7, 3., 0.4])), osp.beta),
    ("factorial", (np.array([-1., 0., 3., 4.5]),), osp.factorial),
    ("comb", (np.array([5., 5., 5., 10., 4.5]), np.array([2., 6., -1., 3., 2.])), osp.comb),
    ("poch", (np.array([-2.5, 1., 3., 0.5]), np.array([2., 0.5, -1., 3.])), osp.poch),
    ("boxcox", (np.array([0.5, 2., 3.]), np.array([0., 0.5, -1.2])), osp.boxcox),
    ("boxcox1p", (np.array([-0.5, 2., 3.]), np.array([0., 0.5, -1.2])), osp.boxcox1p),
    ("kl_div", (np.array([0., 1., -1., 1., 2.]), np.array([1., 0., 1., 2., 0.5])), osp.kl_div),
    ("rel_entr", (np.array([0., 1., -1., 1., 2.]), np.array([1., 0., 1., 2., 0.5])),
     osp.rel_entr),
    ("zeta", (np.array([-3.5, -2., -1., 0., 0.3, 0.8, 2., 4.5]),), osp.zeta),
    ("exp1", (POS,), osp.exp1),
    ("expi", (X,), osp.expi),
    ("erfcx", (X,), osp.erfcx),
    ("dawsn", (X,), osp.dawsn),
    ("spence", (np.concatenate([POS, [-1.]]),), osp.spence),
    ("owens_t", (np.array([-3., -0.5, 0., 0.5, 2., 5.]), np.array([0.3, 1., 2.5, -0.7, 9., 0.5])),
     osp.owens_t),
]


def _close(out, ref, rtol, atol=0.):
  np.testing.assert_allclose(np.asarray(out, np.float64), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,args,ref", CASES, ids=[c[0] for c in CASES])
def test_against_scipy_float32(name, args, ref):
  out = getattr(jsp, name)(*[a.astype(np.float32) for a in args])
  assert out.dtype == np.float32
  with np.errstate(over="ignore"):  # the float32 reference overflows where ours must
    expected = np.asarray(ref(*[a.astype(np.float32).astype(np.float64) for a in args]))
    expected = expected.astype(np.float32).astype(np.float64)
  _close(out, expected, rtol=3e-5, atol=1e-6)


def test_against_scipy_float64(x64):
  for name, args, ref in CASES:
    out = getattr(jsp, name)(*args)
    assert out.dtype == np.float64, name
    _close(out, ref(*args), rtol=5e-13, atol=1e-300)


def test_expn_and_pairs(x64):
  n = np.array([0., 1., 2., 3., 5., 20., -1., 1.5])
  x = np.array([0.5, 0., 0., 1.5, 0.01, 30., 1., 1.])
  with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
    expected = osp.expn(n, x)   # SciPy truncates n = 1.5 with a warning
  _close(jsp.expn(n, x), expected, rtol=1e-13)
  xs = np.linspace(-8., 8., 33)
  for got, ref in zip(jsp.fresnel(xs), osp.fresnel(xs)):
    _close(got, ref, rtol=1e-13, atol=1e-15)
  for got, ref in zip(jsp.sici(xs), osp.sici(xs)):
    _close(got, ref, rtol=1e-12, atol=1e-14)


def test_hypergeometric(x64):
  x1 = np.array([-20., -1., 0., 0.5, 3., 25.])
  for a, b in [(1.5, 2.5), (0.3, 1.2), (-2., 3.), (2., 1.5)]:
    _close(jsp.hyp1f1(a, b, x1), osp.hyp1f1(a, b, x1), rtol=1e-12)
  x2 = np.array([-3., -0.5, 0., 0.3, 0.7, 0.95, 1.])
  for a, b, c in [(1.5, 2.5, 3.2), (1.5, 2.5, 5.2), (0.3, 0.7, 1.4), (-2., 1., 3.)]:
    _close(jsp.hyp2f1(a, b, c, x2), osp.hyp2f1(a, b, c, x2), rtol=1e-11)
  assert np.isinf(jsp.hyp2f1(1.5, 2.5, 3.2, 1.))


def test_hypergeometric_float32():
  x = np.array([-10., -1., 0., 0.5, 3., 10.], np.float32)
  _close(jsp.hyp1f1(np.float32(1.5), np.float32(2.5), x), osp.hyp1f1(1.5, 2.5, x), rtol=2e-5)
  z = np.array([-3., 0.3, 0.9], np.float32)
  _close(jsp.hyp2f1(1.5, 2.5, 3.2, z), osp.hyp2f1(1.5, 2.5, 3.2, z.astype(np.float64)),
         rtol=2e-5)


def test_bernoulli_softmax_logsumexp():
  _close(jsp.bernoulli(8), osp.bernoulli(8), rtol=1e-6)
  with pytest.raises(ValueError, match="n must be"):
    jsp.bernoulli(-1)
  a = np.random.RandomState(0).randn(3, 4).astype(np.float32)
  _close(jsp.softmax(a), osp.softmax(a), rtol=1e-5)
  _close(jsp.softmax(a, axis=1), osp.softmax(a, axis=1), rtol=1e-5)
  _close(jsp.log_softmax(a, axis=(0, 1)), osp.log_softmax(a, axis=(0, 1)), rtol=1e-5)
  w = a > 0
  _close(jsp.logsumexp(a, axis=1, where=w),
         [osp.logsumexp(r[m]) if m.any() else -np.inf for r, m in zip(a, w)], rtol=1e-5)
  b = np.array([1., -2., 0.5, 1.], np.float32)
  val, sign = jsp.logsumexp(a, axis=1, b=b, return_sign=True)
  rval, rsign = osp.logsumexp(a, axis=1, b=b, return_sign=True)
  _close(val, rval, rtol=1e-5)
  _close(sign, rsign, rtol=0)
  with pytest.raises(NotImplementedError):
    jsp.factorial(3, exact=True)


def test_bessel_sph_harm_wofz():
  z = np.array([0., 0.5, 1., 2., -3., 10., 20.], np.float32)
  ref = np.stack([osp.jv(k, z.astype(np.float64)) for k in range(6)])
  _close(jsp.bessel_jn(z, v=5), ref, rtol=0, atol=2e-6)
  n = np.array([0, 1, 2, 3, 5, 5, 4])
  m = np.array([0, -1, 2, -2, 3, -5, 0])
  th, ph = np.linspace(0.1, 3., 7), np.linspace(0.2, 6., 7)
  out = jsp.sph_harm_y(n, m, th.astype(np.float32), ph.astype(np.float32))
  assert out.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(out), osp.sph_harm_y(n, m, th, ph), atol=2e-6)
  out = jax.jit(lambda n, m, t, p: jsp.sph_harm_y(n, m, t, p, n_max=5))(n, m, th, ph)
  np.testing.assert_allclose(np.asarray(out), osp.sph_harm_y(n, m, th, ph), atol=2e-6)
  zs = np.array([1 + 1j, 0.5 - 2j, 3., -4 + 0.1j, 10j, -2 - 3j], np.complex64)
  np.testing.assert_allclose(np.asarray(jsp.wofz(zs)), osp.wofz(zs.astype(np.complex128)),
                             rtol=2e-5)


def test_bessel_sph_harm_wofz_float64(x64):
  z = np.array([0.5, 2., -3., 15.])
  ref = np.stack([osp.jv(k, z) for k in range(4)])
  _close(jsp.bessel_jn(z, v=3), ref, rtol=0, atol=1e-13)
  zs = np.random.RandomState(0).randn(20) * 4 + 1j * np.random.RandomState(1).randn(20) * 4
  np.testing.assert_allclose(np.asarray(jsp.wofz(zs)), osp.wofz(zs), rtol=1e-11)


SERIES = ["expi", "exp1", "erfcx", "dawsn", "spence"]


def test_jit_and_vmap():
  x = np.array([0.3, 1.7, 4.], np.float32)
  for name in SERIES:
    f = getattr(jsp, name)
    _close(jax.jit(jax.vmap(f))(x), np.array([f(v) for v in x]), rtol=1e-6)
  s, c = jax.vmap(jsp.fresnel)(x)
  _close(s, [jsp.fresnel(v)[0] for v in x], rtol=1e-6)
  out = jax.jit(jax.vmap(jsp.hyp1f1, in_axes=(None, 0, 0)))(1.5, x + 1, -x)
  _close(out, osp.hyp1f1(1.5, x + 1., -x.astype(np.float64)), rtol=2e-5)
  out = jax.jit(jax.vmap(jsp.expn, in_axes=(0, None)))(np.array([1., 2., 3.], np.float32), 0.7)
  _close(out, osp.expn([1, 2, 3], 0.7), rtol=1e-5)
  out = jax.vmap(jsp.owens_t)(x, x[::-1])
  _close(out, osp.owens_t(x, x[::-1]), rtol=1e-5)


def _grads(f, args, order=1):
  check_grads(jax.jit(f), args, order=order, rtol=1e-5, atol=1e-5)


def test_grads(x64):
  x = np.array([0.7, 2.3])
  # One function of all the closed-form derivatives (one compilation), then second
  # order for a few whose rules differentiate again through the same kernels.
  def combo(v):
    s, c = jsp.fresnel(v)
    si, ci = jsp.sici(v)
    return (jsp.expi(v) + jsp.exp1(v) + jsp.erfcx(v) + jsp.dawsn(v) + jsp.spence(v)
            + s + 2 * c + si - 3 * ci + jsp.expn(2., v) + jsp.gamma(v) + jsp.loggamma(v))
  _grads(combo, (x,))
  _grads(lambda v: jsp.expi(-v) + jsp.dawsn(v), (np.array([1.3, 8.]),))
  _grads(lambda v: jsp.erfcx(v) + jsp.spence(v) + jsp.owens_t(v, 0.5), (x,), order=2)
  def pairs(a, b):
    return (jsp.beta(a, b) + jsp.poch(a, b) + jsp.boxcox(a, b) + jsp.kl_div(a, b)
            + jsp.rel_entr(a, b) + jsp.comb(a + 3, b) + jsp.owens_t(a, b))
  _grads(pairs, (np.array([1.3, 3.5]), np.array([0.4, 1.2])))
  _grads(jsp.hyp1f1, (np.array([1.5, 0.3]), np.array([2.5, 1.2]), np.array([-2., 3.])))
  _grads(jsp.hyp2f1, (np.array([1.5]), np.array([2.5]), np.array([3.2]), np.array([-0.5])))
  a = np.random.RandomState(0).randn(3, 4)
  _grads(lambda v: jsp.log_softmax(v, axis=1), (a,))
  _grads(lambda v: jsp.logsumexp(v, axis=0, where=a > -0.5), (a,))
  # Closed forms of the derivatives at a point.
  np.testing.assert_allclose(jax.grad(jsp.expi)(1.5), np.exp(1.5) / 1.5, rtol=1e-12)
  np.testing.assert_allclose(jax.grad(jsp.spence)(1.), -1., rtol=1e-12)
  np.testing.assert_allclose(jax.grad(jsp.erfcx)(2.),
                             2 * 2. * osp.erfcx(2.) - 2 / np.sqrt(np.pi), rtol=1e-12)


def test_bad_arguments():
  with pytest.raises(ValueError, match="v must be"):
    jsp.bessel_jn(1., v=-1)
  with pytest.raises(NotImplementedError, match="diff_n"):
    jsp.sph_harm_y(1, 0, 0.3, 0.2, diff_n=1)
  with pytest.raises(TypeError, match="axis"):
    jsp.softmax(jnp.ones(3), axis=1.5)
