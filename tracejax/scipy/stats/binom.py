"""`jax.scipy.stats.binom`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    binom_logpmf as logpmf,
    binom_pmf as pmf,
)
