"""`jax.scipy.stats.gamma`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    gamma_logpdf as logpdf,
    gamma_pdf as pdf,
    gamma_cdf as cdf,
)
