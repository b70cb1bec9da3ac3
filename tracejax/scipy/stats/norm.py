"""`jax.scipy.stats.norm`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    norm_cdf as cdf,
    norm_isf as isf,
    norm_logcdf as logcdf,
    norm_logpdf as logpdf,
    norm_pdf as pdf,
    norm_ppf as ppf,
    norm_sf as sf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    norm_logsf as logsf,
)
