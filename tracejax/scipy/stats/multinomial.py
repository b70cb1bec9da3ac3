"""`jax.scipy.stats.multinomial`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    multinomial_logpmf as logpmf,
    multinomial_pmf as pmf,
)
