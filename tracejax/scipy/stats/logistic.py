"""`jax.scipy.stats.logistic`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    logistic_cdf as cdf,
    logistic_isf as isf,
    logistic_logpdf as logpdf,
    logistic_pdf as pdf,
    logistic_ppf as ppf,
    logistic_sf as sf,
)
