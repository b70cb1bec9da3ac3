"""`jax.scipy.stats.gennorm`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    gennorm_cdf as cdf,
    gennorm_logpdf as logpdf,
    gennorm_pdf as pdf,
)
