"""`jax.scipy.stats.chi2`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    chi2_cdf as cdf,
    chi2_logcdf as logcdf,
    chi2_logpdf as logpdf,
    chi2_logsf as logsf,
    chi2_pdf as pdf,
    chi2_sf as sf,
)
