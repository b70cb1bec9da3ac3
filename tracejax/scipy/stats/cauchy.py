"""`jax.scipy.stats.cauchy`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    cauchy_logpdf as logpdf,
    cauchy_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    cauchy_cdf as cdf,
    cauchy_isf as isf,
    cauchy_logcdf as logcdf,
    cauchy_logsf as logsf,
    cauchy_ppf as ppf,
    cauchy_sf as sf,
)
