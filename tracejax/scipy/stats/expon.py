"""`jax.scipy.stats.expon`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    expon_logpdf as logpdf,
    expon_pdf as pdf,
    expon_cdf as cdf,
)
