"""Taylor-mode automatic differentiation (`jax.experimental.jet`).

This module only re-exports; the implementation is `tracejax/_src/experimental/jet.py`.
"""
# flake8: noqa: F401
from tracejax._src.experimental.jet import (
    JetTrace as JetTrace,
    JetTracer as JetTracer,
    TaylorRule as TaylorRule,
    ZeroSeries as ZeroSeries,
    ZeroTerm as ZeroTerm,
    defbilinear as defbilinear,
    deflinear as deflinear,
    defzero as defzero,
    fact as fact,
    jet as jet,
    jet_rules as jet_rules,
    zero_series as zero_series,
    zero_term as zero_term,
)
