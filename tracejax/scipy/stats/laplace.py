"""`jax.scipy.stats.laplace`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    laplace_cdf as cdf,
    laplace_logpdf as logpdf,
    laplace_pdf as pdf,
)
