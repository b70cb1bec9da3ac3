"""`jax.interpreters.ad` (2020: `jax.ad`): forward- and reverse-mode rule tables.

Re-exports only; see `tracejax/_src/interpreters/ad.py`. A user primitive gets
its JVP with `ad.primitive_jvps[p] = rule` and its transpose with
`ad.primitive_transposes[p] = rule`. Symbolic zeros come in both spellings:
the modern class `ad.Zero(aval)` and the 2020 singleton `ad.zero` (an instance
of that class, so `type(t) is ad.Zero` holds for both).
"""
# flake8: noqa: F401
from tracejax._src.interpreters.ad import (
    JVPTrace as JVPTrace,
    JVPTracer as JVPTracer,
    PartialEvalTrace as PartialEvalTrace,
    UndefinedPrimal as UndefinedPrimal,
    Zero as Zero,
    add_any_p as add_any_p,
    add_any_p as add_jaxvals_p,
    add_tangents as add_tangents,
    add_tangents as add_jaxvals,
    backward_pass as backward_pass,
    defbilinear as defbilinear,
    defjvp as defjvp,
    defjvp2 as defjvp2,
    defjvp_zero as defjvp_zero,
    deflinear as deflinear,
    deflinear2 as deflinear2,
    get_transpose_rule as get_primitive_transpose,
    instantiate_zeros as instantiate_zeros,
    is_undefined_primal as is_undefined_primal,
    linear_jvp as linear_jvp,
    linear_primitives as linear_primitives,
    partial_eval_rules as partial_eval_rules,
    primitive_jvps as primitive_jvps,
    primitive_transposes as primitive_transposes,
    zero as zero,
    zeros_like_aval as zeros_like_aval,
)
