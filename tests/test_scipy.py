"""jax.scipy.special and jax.scipy.stats against SciPy, with gradients."""
import numpy as np
import pytest
import scipy.special as osp_special
import scipy.stats as osp_stats

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import scipy as jsp
from tracejax.test_util import check_grads

X = np.linspace(-2.5, 2.5, 9).astype(np.float32)
P = np.linspace(0.05, 0.95, 7).astype(np.float32)
POS = np.linspace(0.2, 4., 8).astype(np.float32)

SPECIAL = [
    ("gammaln", (POS,), osp_special.gammaln), ("digamma", (POS,), osp_special.digamma),
    ("erf", (X,), osp_special.erf), ("erfc", (X,), osp_special.erfc),
    ("erfinv", (P * 2 - 1,), osp_special.erfinv), ("expit", (X,), osp_special.expit),
    ("logit", (P,), osp_special.logit), ("i0e", (X,), osp_special.i0e),
    ("i1e", (X,), osp_special.i1e), ("ndtr", (X,), osp_special.ndtr),
    ("ndtri", (P,), osp_special.ndtri), ("log_ndtr", (X * 6,), osp_special.log_ndtr),
    ("gammainc", (POS, POS[::-1]), osp_special.gammainc),
    ("gammaincc", (POS, POS[::-1]), osp_special.gammaincc),
    ("betainc", (POS, POS[::-1], P[:1]), osp_special.betainc),
    ("xlogy", (np.array([0., 1., 2.], np.float32), np.array([0., 2., 3.], np.float32)),
     osp_special.xlogy),
    ("xlog1py", (np.array([0., 1., 2.], np.float32), np.array([-1., 2., 3.], np.float32)),
     osp_special.xlog1py),
    ("entr", (np.array([0., 0.5, 2.], np.float32),), osp_special.entr),
    ("betaln", (POS, POS[::-1]), osp_special.betaln),
]


@pytest.mark.parametrize("name,args,ref", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_against_scipy(name, args, ref):
  out = getattr(jsp.special, name)(*args)
  np.testing.assert_allclose(np.asarray(out), ref(*[np.asarray(a, np.float64) for a in args]),
                             rtol=2e-4, atol=2e-5)


def test_logsumexp_and_multigammaln():
  a = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
  for axis in (None, 0, 1, (0, 1)):
    np.testing.assert_allclose(jsp.special.logsumexp(a, axis=axis),
                               osp_special.logsumexp(a, axis=axis), rtol=1e-5)
  np.testing.assert_allclose(jsp.special.logsumexp(a, axis=1, keepdims=True),
                             osp_special.logsumexp(a, axis=1, keepdims=True), rtol=1e-5)
  np.testing.assert_allclose(jsp.special.multigammaln(3.5, 3), osp_special.multigammaln(3.5, 3),
                             rtol=1e-5)
  g = jax.grad(lambda v: jsp.special.logsumexp(v))(a)
  np.testing.assert_allclose(np.asarray(g), np.exp(a - osp_special.logsumexp(a)), rtol=1e-5)


STATS = [
    ("norm", "logpdf", (X, 0.5, 2.)), ("norm", "pdf", (X,)), ("norm", "cdf", (X, 0.1, 1.5)),
    ("norm", "logcdf", (X,)), ("norm", "ppf", (P, 1., 2.)), ("norm", "sf", (X,)),
    ("expon", "logpdf", (POS, 0., 2.)), ("expon", "cdf", (POS,)),
    ("laplace", "logpdf", (X, 0.2, 1.3)), ("laplace", "cdf", (X,)),
    ("logistic", "logpdf", (X,)), ("logistic", "cdf", (X,)), ("logistic", "ppf", (P,)),
    ("logistic", "sf", (X,)), ("logistic", "isf", (P,)),
    ("gamma", "logpdf", (POS, 2.5)), ("gamma", "cdf", (POS, 2.5)),
    ("beta", "logpdf", (P, 2., 3.)), ("beta", "cdf", (P, 2., 3.)),
    ("t", "logpdf", (X, 3.)), ("cauchy", "logpdf", (X,)), ("uniform", "logpdf", (P,)),
]


@pytest.mark.parametrize("dist,fn,args", STATS, ids=[f"{a}.{b}" for a, b, _ in STATS])
def test_stats_against_scipy(dist, fn, args):
  out = getattr(getattr(jsp.stats, dist), fn)(*args)
  ref = getattr(getattr(osp_stats, dist), fn)(*[np.asarray(a, np.float64) for a in args])
  np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-4, atol=2e-5)


def test_discrete_and_multivariate():
  k = np.arange(5.)
  np.testing.assert_allclose(jsp.stats.poisson.logpmf(k, 2.5), osp_stats.poisson.logpmf(k, 2.5),
                             rtol=1e-5)
  np.testing.assert_allclose(jsp.stats.bernoulli.logpmf(np.array([0., 1.]), 0.3),
                             osp_stats.bernoulli.logpmf([0, 1], 0.3), rtol=1e-5)
  alpha = np.array([1.5, 2., 3.])
  x = np.array([0.2, 0.3, 0.5])
  np.testing.assert_allclose(jsp.stats.dirichlet.logpdf(x, alpha),
                             osp_stats.dirichlet.logpdf(x, alpha), rtol=1e-5)


def test_stats_transform():
  f = lambda loc: jnp.sum(jsp.stats.norm.logpdf(X, loc, 2.))
  check_grads(f, (0.3,), order=2, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  out = jax.vmap(lambda s: jsp.stats.norm.logpdf(X, 0., s))(jnp.array([1., 2.]))
  np.testing.assert_allclose(np.asarray(out), np.stack([osp_stats.norm.logpdf(X, 0., s)
                                                        for s in (1., 2.)]), rtol=1e-5)
  np.testing.assert_allclose(jax.jit(jsp.special.expit)(X), osp_special.expit(X), rtol=1e-6)
