"""`jax.scipy.stats.expon`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    expon_cdf as cdf,
    expon_logpdf as logpdf,
    expon_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    expon_logcdf as logcdf,
    expon_logsf as logsf,
    expon_ppf as ppf,
    expon_sf as sf,
)
