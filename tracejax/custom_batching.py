"""`jax.custom_batching`: functions with user-defined `vmap` rules.

Re-exports `tracejax/_src/custom_batching.py`.
"""
# flake8: noqa: F401
from tracejax._src.custom_batching import custom_vmap, sequential_vmap
