"""`jax.scipy.stats.nbinom`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    nbinom_logpmf as logpmf,
    nbinom_pmf as pmf,
)
