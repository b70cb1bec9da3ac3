"""`jax.scipy.stats.beta`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    beta_cdf as cdf,
    beta_logpdf as logpdf,
    beta_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    beta_logcdf as logcdf,
    beta_logsf as logsf,
    beta_sf as sf,
)
