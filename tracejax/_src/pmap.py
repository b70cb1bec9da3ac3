"""`pmap`: the public entry point. The machinery (the `xla_pmap` primitive, compiling
the body as one replicated XLA program, the cached call path) is
`tracejax/_src/interpreters/pxla.py`; collectives are `tracejax/_src/lax/parallel.py`.
"""
from tracejax._src.interpreters.pxla import PmapFunction, pmap, xla_pmap_p  # noqa: F401
