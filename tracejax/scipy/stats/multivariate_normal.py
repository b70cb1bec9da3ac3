"""`jax.scipy.stats.multivariate_normal`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    multivariate_normal_logpdf as logpdf,
    multivariate_normal_pdf as pdf,
)
