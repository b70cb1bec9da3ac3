"""`jax.scipy.stats.uniform`."""
# flake8: noqa: F401
from tracejax._src.scipy.stats.distributions import (
    uniform_logpdf as logpdf,
    uniform_pdf as pdf,
)
from tracejax._src.scipy.stats.distributions_extra import (
    uniform_cdf as cdf,
    uniform_ppf as ppf,
)
