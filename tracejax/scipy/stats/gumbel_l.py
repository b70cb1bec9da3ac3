"""`jax.scipy.stats.gumbel_l`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    gumbel_l_cdf as cdf,
    gumbel_l_logcdf as logcdf,
    gumbel_l_logpdf as logpdf,
    gumbel_l_logsf as logsf,
    gumbel_l_pdf as pdf,
    gumbel_l_ppf as ppf,
    gumbel_l_sf as sf,
)
