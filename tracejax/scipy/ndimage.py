"""`jax.scipy.ndimage`: interpolation at arbitrary coordinates (`map_coordinates`)."""
# flake8: noqa: F401
from tracejax._src.scipy.ndimage import map_coordinates
