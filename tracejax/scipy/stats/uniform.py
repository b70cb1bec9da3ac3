"""`jax.scipy.stats.uniform`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    uniform_logpdf as logpdf,
    uniform_pdf as pdf,
)
