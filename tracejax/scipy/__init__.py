"""`jax.scipy`: SciPy on tracejax (special functions, statistics, linear algebra)."""
# flake8: noqa: F401
from tracejax.scipy import special as special
from tracejax.scipy import stats as stats
from tracejax.scipy import ndimage as ndimage
from tracejax.scipy import linalg as linalg
from tracejax.scipy import signal as signal
from tracejax.scipy import optimize as optimize
from tracejax.scipy import sparse as sparse
from tracejax.scipy import integrate as integrate
from tracejax.scipy import fft as fft
from tracejax.scipy import cluster as cluster
# jax.scipy.spatial is not an attribute until imported, as in JAX.
