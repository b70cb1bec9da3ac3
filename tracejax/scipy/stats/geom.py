"""`jax.scipy.stats.geom`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    geom_logpmf as logpmf,
    geom_pmf as pmf,
)
