"""`jax.scipy.stats`: distributions as modules of functions."""
# flake8: noqa: F401
from tracejax.scipy.stats import (
    norm as norm,
    expon as expon,
    laplace as laplace,
    logistic as logistic,
    gamma as gamma,
    beta as beta,
    t as t,
    cauchy as cauchy,
    uniform as uniform,
    poisson as poisson,
    bernoulli as bernoulli,
    multivariate_normal as multivariate_normal,
    pareto as pareto,
    dirichlet as dirichlet,
)
