"""`jax.example_libraries.optimizers`: the library that was `jax.experimental.optimizers`
until 2021.

Both names export the same functions; the list lives in
`tracejax/experimental/optimizers.py` and the implementation in
`tracejax/_src/experimental/optimizers.py`.
"""
from tracejax.experimental.optimizers import *  # noqa: F401,F403
