"""`jax.scipy.stats.cauchy`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    cauchy_logpdf as logpdf,
    cauchy_pdf as pdf,
)
