"""`jax.typing`: annotation types `ArrayLike` and `DTypeLike`
(see `tracejax._src.typing`)."""

# flake8: noqa: F401
from tracejax._src.typing import (
    ArrayLike as ArrayLike,
    DTypeLike as DTypeLike,
)
