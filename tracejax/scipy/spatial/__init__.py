"""`jax.scipy.spatial`: rotations (`jax.scipy.spatial.transform`)."""
# flake8: noqa: F401
from tracejax.scipy.spatial import transform as transform
