"""`jax.scipy.cluster`: vector quantization (`jax.scipy.cluster.vq`)."""
# flake8: noqa: F401
from tracejax.scipy.cluster import vq as vq
