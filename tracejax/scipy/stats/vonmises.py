"""`jax.scipy.stats.vonmises`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions_extra import (
    vonmises_logpdf as logpdf,
    vonmises_pdf as pdf,
)
