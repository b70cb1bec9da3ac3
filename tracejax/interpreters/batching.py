"""`jax.interpreters.batching` (2020: `jax.batching`): vmap rule table and helpers.

Re-exports only; see `tracejax/_src/interpreters/batching.py` for the trace and
`tracejax/_src/lax/utils.py` for the family rule factories. A user primitive gets
its rule with `batching.primitive_batchers[p] = rule(args, dims) -> (out, dim)`,
where an unbatched operand's dim is `batching.not_mapped` (None).
"""
# flake8: noqa: F401
from tracejax._src.interpreters.batching import (
    BatchTrace as BatchTrace,
    BatchTracer as BatchTracer,
    batch_jaxpr as batch_jaxpr,
    matchaxis as matchaxis,
    not_mapped as not_mapped,
    primitive_batchers as primitive_batchers,
)
from tracejax._src.lax.utils import (
    bdim_at_front as bdim_at_front,
    defbroadcasting as defbroadcasting,
    defreducer as defreducer,
    defvectorized as defvectorized,
    moveaxis as moveaxis,
)
