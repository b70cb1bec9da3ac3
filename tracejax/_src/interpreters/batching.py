"""vmap: the batching trace and its rule table (filled by the primitives' families)."""

primitive_batchers = {}  # prim -> rule(batched_args, batch_dims, **params) -> (out, out_dim)
not_mapped = None
