"""`jax.ops`: functional indexed updates (`index`, `index_update`, `index_add`,
`index_mul`, `index_min`, `index_max`) and segment reductions (`segment_sum`,
`segment_prod`, `segment_max`, `segment_min`).

This module only re-exports; the implementations live in `tracejax/_src/ops.py`.
"""
# flake8: noqa: F401
from tracejax._src.ops import (
    index, index_add, index_max, index_min, index_mul, index_update, segment_max,
    segment_min, segment_prod, segment_sum,
)
