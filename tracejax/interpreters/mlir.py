"""`jax.interpreters.mlir`: lowering rules to StableHLO (the 2024 interface).

Re-exports only; see `tracejax/_src/interpreters/lowering.py`. A rule is
`rule(ctx, *operands, **params) -> [ir.Value]`, registered with
`mlir.register_lowering(prim, rule, platform=None)`; `ctx` is a
`LoweringRuleContext` with `avals_in`/`avals_out`. `ir` and `hlo` are jaxlib's
MLIR builders, so `hlo.AddOp(x, y).result` works as in the seeds.
"""
# flake8: noqa: F401
from tracejax._src.interpreters.lowering import (
    LoweringRuleContext as LoweringRuleContext,
    ModuleContext as ModuleContext,
    aval_to_ir_type as aval_to_ir_type,
    dtype_to_ir_type as dtype_to_ir_type,
    hlo as hlo,
    ir as ir,
    ir_constant as ir_constant,
    jaxpr_subcomp as jaxpr_subcomp,
    lower_fun as lower_fun,
    register_lowering as register_lowering,
)
