"""`jax.abstract_arrays` (the 2020 import path of the abstract values).

`from jax.abstract_arrays import ShapedArray` and `from jax import abstract_arrays;
abstract_arrays.ShapedArray(shape, dtype)` name the same classes as `jax.core`.
"""
# flake8: noqa: F401
from tracejax._src.core.avals import (
    AbstractValue as AbstractValue,
    ConcreteArray as ConcreteArray,
    ShapedArray as ShapedArray,
    raise_to_shaped as raise_to_shaped,
)
