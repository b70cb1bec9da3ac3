"""`jax.scipy.stats`: distributions as modules of functions, plus `gaussian_kde`,
`mode`, `rankdata` and `sem`."""
# flake8: noqa: F401
from tracejax.scipy.stats import (
    bernoulli as bernoulli,
    beta as beta,
    betabinom as betabinom,
    binom as binom,
    cauchy as cauchy,
    chi2 as chi2,
    dirichlet as dirichlet,
    expon as expon,
    gamma as gamma,
    gennorm as gennorm,
    geom as geom,
    gumbel_l as gumbel_l,
    gumbel_r as gumbel_r,
    laplace as laplace,
    logistic as logistic,
    multinomial as multinomial,
    multivariate_normal as multivariate_normal,
    nbinom as nbinom,
    norm as norm,
    pareto as pareto,
    poisson as poisson,
    t as t,
    truncnorm as truncnorm,
    uniform as uniform,
    vonmises as vonmises,
    wrapcauchy as wrapcauchy,
)
from tracejax._src.scipy.stats.core import (
    mode as mode,
    rankdata as rankdata,
    sem as sem,
)
from tracejax._src.scipy.stats.kde import gaussian_kde as gaussian_kde
