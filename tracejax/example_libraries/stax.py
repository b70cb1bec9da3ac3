"""`jax.example_libraries.stax`: the library that was `jax.experimental.stax` until 2021.

Both names export the same functions; the list lives in `tracejax/experimental/stax.py`
and the implementation in `tracejax/_src/experimental/stax.py`.
"""
from tracejax.experimental.stax import *  # noqa: F401,F403
