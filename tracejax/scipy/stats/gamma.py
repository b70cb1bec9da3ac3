"""`jax.scipy.stats.gamma`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    gamma_cdf as cdf,
    gamma_logpdf as logpdf,
    gamma_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    gamma_logcdf as logcdf,
    gamma_logsf as logsf,
    gamma_sf as sf,
)
