"""`jax.scipy.stats.bernoulli`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    bernoulli_logpmf as logpmf,
    bernoulli_pmf as pmf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    bernoulli_cdf as cdf,
    bernoulli_ppf as ppf,
)
