"""`jax.stages`: the ahead-of-time stages of a jitted function.

`jit(f).trace(*args)` -> `Traced`, `.lower()` -> `Lowered`, `.compile()` ->
`Compiled`. Re-exports only; see `tracejax/_src/stages.py`.
"""
# flake8: noqa: F401
from tracejax._src.stages import (
    ArgInfo as ArgInfo,
    Compiled as Compiled,
    CompilerOptions as CompilerOptions,
    Lowered as Lowered,
    Traced as Traced,
    Wrapped as Wrapped,
)
