"""`jax.scipy.stats.poisson`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    poisson_logpmf as logpmf,
    poisson_pmf as pmf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    poisson_cdf as cdf,
    poisson_entropy as entropy,
)
