"""`jax.debug`: print values, call Python, and stop at a prompt from inside
transformed and compiled code. Re-exports from `tracejax/_src/debugging.py`."""
# flake8: noqa: F401
from tracejax._src.debugging import (
    breakpoint as breakpoint,
    debug_callback as callback,
    debug_print as print,
)
from tracejax._src.debugging import (
    inspect_array_sharding as inspect_array_sharding,
    visualize_array_sharding as visualize_array_sharding,
    visualize_sharding as visualize_sharding,
)
