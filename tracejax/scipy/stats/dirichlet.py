"""`jax.scipy.stats.dirichlet`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    dirichlet_logpdf as logpdf,
    dirichlet_pdf as pdf,
)
