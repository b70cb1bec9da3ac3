"""`jax.flatten_util`: `ravel_pytree` (see `tracejax._src.flatten_util`)."""

# flake8: noqa: F401
from tracejax._src.flatten_util import ravel_pytree as ravel_pytree
