"""`jax.image`: image resampling (`resize`, `scale_and_translate`).

This module only re-exports; the implementation is `tracejax/_src/image.py`.
"""
# flake8: noqa: F401
from tracejax._src.image import (
    ResizeMethod as ResizeMethod,
    resize as resize,
    scale_and_translate as scale_and_translate,
)
