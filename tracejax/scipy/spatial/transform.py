"""`jax.scipy.spatial.transform`: `Rotation` and `Slerp`."""
# flake8: noqa: F401
from tracejax._src.scipy.spatial import Rotation as Rotation, Slerp as Slerp
