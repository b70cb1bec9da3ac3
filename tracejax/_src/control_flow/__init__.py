"""Structured control flow: higher-order primitives with every rule."""
from tracejax._src.control_flow.cond import (  # noqa: F401
    cond, switch, cond_p, platform_dependent)
from tracejax._src.control_flow.loops import (  # noqa: F401
    while_loop, fori_loop, scan, map, associative_scan, while_p, scan_p)
from tracejax._src.control_flow.solves import (  # noqa: F401
    custom_linear_solve, custom_root, linear_solve_p)
from tracejax._src.control_flow.composite import composite, composite_p  # noqa: F401
