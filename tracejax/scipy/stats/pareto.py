"""`jax.scipy.stats.pareto`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    pareto_logpdf as logpdf,
    pareto_pdf as pdf,
)
