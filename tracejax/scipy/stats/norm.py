"""`jax.scipy.stats.norm`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    norm_logpdf as logpdf,
    norm_pdf as pdf,
    norm_cdf as cdf,
    norm_logcdf as logcdf,
    norm_sf as sf,
    norm_ppf as ppf,
    norm_isf as isf,
)
