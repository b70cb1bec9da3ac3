"""`jax.abstract_arrays` (the 2020 import path of the abstract values).

`from jax.abstract_arrays import ShapedArray` and `from jax import abstract_arrays;
abstract_arrays.ShapedArray(shape, dtype)` name the same classes as `jax.core`.
Re-exports only; see `tracejax/_src/abstract_arrays.py`.
"""
# flake8: noqa: F401
from tracejax._src.abstract_arrays import (
    AbstractValue as AbstractValue,
    ConcreteArray as ConcreteArray,
    ShapedArray as ShapedArray,
    UnshapedArray as UnshapedArray,
    abstractify as abstractify,
    array_types as array_types,
    canonicalize_shape as canonicalize_shape,
    make_shaped_array as make_shaped_array,
    raise_to_shaped as raise_to_shaped,
    zeros_like_array as zeros_like_array,
    zeros_like_shaped_array as zeros_like_shaped_array,
)
