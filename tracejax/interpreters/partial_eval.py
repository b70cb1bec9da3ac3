"""`jax.interpreters.partial_eval`: staging Python into jaxprs.

Re-exports only; see `tracejax/_src/interpreters/staging.py` (the trace that
`jit` and `make_jaxpr` run) and the known/unknown split used by reverse mode
(`PartialEvalTrace` in `tracejax/_src/interpreters/ad.py`). The 2020 entry
points `PartialVal` and `trace_to_jaxpr(wrapped_fun, pvals)` (with
`linear_util.wrap_init` and `api_util.flatten_fun`) are in
`tracejax/_src/interpreters/partial_eval.py`.
"""
# flake8: noqa: F401
from tracejax._src.interpreters.ad import (
    PartialEvalTrace as PartialEvalTrace,
    partial_eval_rules as partial_eval_rules,
)
from tracejax._src.interpreters.partial_eval import (
    PartialVal as PartialVal,
    convert_constvars_jaxpr as convert_constvars_jaxpr,
    trace_to_jaxpr as trace_to_jaxpr,
    trace_to_jaxpr_dynamic as trace_to_jaxpr_dynamic,
)
from tracejax._src.interpreters.staging import (
    DynamicJaxprTrace as DynamicJaxprTrace,
    DynamicJaxprTracer as DynamicJaxprTracer,
    closed_call_jaxpr as closed_call_jaxpr,
    custom_staging_rules as custom_staging_rules,
    dce_jaxpr as dce_jaxpr,
    dce_rules as dce_rules,
)
