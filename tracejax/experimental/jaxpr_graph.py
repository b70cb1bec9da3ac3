"""`jax.experimental.jaxpr_graph`: pictures of jaxprs (DOT text, SVG/PNG files).

Re-exports `tracejax/_src/experimental/jaxpr_graph.py`. Command line:
`python -m tracejax.experimental.jaxpr_graph script.py:function --args "f32[3]"`.
"""
# flake8: noqa: F401
from tracejax._src.experimental.jaxpr_graph import (
    jaxpr_to_dot as jaxpr_to_dot,
    main as main,
    parse_arg_specs as parse_arg_specs,
    render as render,
)

if __name__ == "__main__":
  import sys
  sys.exit(main())
