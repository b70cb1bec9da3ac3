"""`jax.extend.random`: the threefry PRNG's primitive and hash function.

Re-exports only; see `tracejax/_src/lax/random_bits.py`.
"""
# flake8: noqa: F401
from tracejax._src.lax.random_bits import (
    threefry2x32_p as threefry2x32_p,
    threefry_2x32 as threefry_2x32,
)
