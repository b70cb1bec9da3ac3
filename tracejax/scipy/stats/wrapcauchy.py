"""`jax.scipy.stats.wrapcauchy`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    wrapcauchy_logpdf as logpdf,
    wrapcauchy_pdf as pdf,
)
