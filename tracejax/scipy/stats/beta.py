"""`jax.scipy.stats.beta`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    beta_logpdf as logpdf,
    beta_pdf as pdf,
    beta_cdf as cdf,
)
