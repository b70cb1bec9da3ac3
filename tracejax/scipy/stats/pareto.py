"""`jax.scipy.stats.pareto`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    pareto_logpdf as logpdf,
    pareto_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    pareto_cdf as cdf,
    pareto_logcdf as logcdf,
    pareto_logsf as logsf,
    pareto_ppf as ppf,
    pareto_sf as sf,
)
