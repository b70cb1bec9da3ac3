"""`jax.scipy.stats.betabinom`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    betabinom_logpmf as logpmf,
    betabinom_pmf as pmf,
)
