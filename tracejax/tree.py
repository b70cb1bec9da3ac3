"""`jax.tree`: the short names of today's JAX for the pytree functions.

`jax.tree.map` is `jax.tree_util.tree_map`, `jax.tree.leaves` is
`tree_leaves`, and so on; `jax.tree.static` declares a static dataclass
field for `jax.tree_util.register_dataclass`.
"""

# flake8: noqa: F401
from tracejax._src.tree_util import (
    tree_all as all,
    tree_flatten as flatten,
    tree_flatten_with_path as flatten_with_path,
    tree_leaves as leaves,
    tree_leaves_with_path as leaves_with_path,
    tree_map as map,
    tree_map_with_path as map_with_path,
    tree_reduce as reduce,
    tree_structure as structure,
    tree_transpose as transpose,
    tree_unflatten as unflatten,
)
from tracejax._src.tree_util_ext import (
    static_field as static,
    tree_broadcast as broadcast,
    tree_reduce_associative as reduce_associative,
)
