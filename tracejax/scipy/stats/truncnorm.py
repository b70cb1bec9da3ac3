"""`jax.scipy.stats.truncnorm`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    truncnorm_cdf as cdf,
    truncnorm_logcdf as logcdf,
    truncnorm_logpdf as logpdf,
    truncnorm_logsf as logsf,
    truncnorm_pdf as pdf,
    truncnorm_sf as sf,
)
