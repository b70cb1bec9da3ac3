"""`jax.scipy.stats.t`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    t_logpdf as logpdf,
    t_pdf as pdf,
)
