"""`jax.extend.linear_util`: `WrappedFun` and the transformations over it.

Re-exports only; see `tracejax/_src/linear_util.py` and `tracejax/_src/extend.py`.
"""
# flake8: noqa: F401
from typing import Callable as Callable

from tracejax._src.linear_util import (
    StoreException as StoreException,
    WrappedFun as WrappedFun,
    cache as cache,
    merge_linear_aux as merge_linear_aux,
    transformation as transformation,
    transformation_with_aux as transformation_with_aux,
    wrap_init as wrap_init,
)
from tracejax._src.extend import (
    transformation2 as transformation2,
    transformation_with_aux2 as transformation_with_aux2,
)
