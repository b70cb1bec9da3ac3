"""`jax.scipy.cluster.vq`: nearest code-book entries."""
# flake8: noqa: F401
from tracejax._src.scipy.cluster import vq as vq
