"""`jax.core`: primitives, abstract values, tracers and traces, jaxprs.

Re-exports only; see `tracejax/_src/core/` (avals.py, trace.py, ir.py, pp.py).
`TypedJaxpr` (2020) and `ClosedJaxpr` (modern) are the same class, whose
`literals` and `consts` are the same list. `unit`, `unitvar` and
`abstract_unit` are the 2020 placeholder for a known output that a jaxpr from
`partial_eval.trace_to_jaxpr` does not compute (printed `*`).
"""
# flake8: noqa: F401
from tracejax._src.core.avals import (
    AbstractValue as AbstractValue,
    ConcreteArray as ConcreteArray,
    ShapedArray as ShapedArray,
    canonicalize_shape as canonicalize_shape,
    get_aval as get_aval,
    is_valid_jaxtype as is_valid_jaxtype,
    is_valid_jaxtype as valid_jaxtype,
    pytype_aval_mappings as pytype_aval_mappings,
    raise_to_shaped as raise_to_shaped,
)
from tracejax._src.core.ir import (
    AbstractUnit as AbstractUnit,
    ClosedJaxpr as ClosedJaxpr,
    DropVar as DropVar,
    Jaxpr as Jaxpr,
    JaxprEqn as JaxprEqn,
    JaxprTypeError as JaxprTypeError,
    Literal as Literal,
    TypedJaxpr as TypedJaxpr,
    Unit as Unit,
    UnitVar as UnitVar,
    Var as Var,
    abstract_unit as abstract_unit,
    check_jaxpr as check_jaxpr,
    eval_jaxpr as eval_jaxpr,
    jaxpr_as_fun as jaxpr_as_fun,
    subjaxprs as subjaxprs,
    unit as unit,
    unitvar as unitvar,
)
from tracejax._src.core.pp import pp_eqn as pp_eqn, pp_jaxpr as pp_jaxpr
from tracejax._src.core.trace import (
    EvalTrace as EvalTrace,
    Primitive as Primitive,
    Trace as Trace,
    Tracer as Tracer,
    bind as bind,
    concrete_or_error as concrete_or_error,
    current_trace as current_trace,
    eval_trace as eval_trace,
    get_opaque_trace_state as get_opaque_trace_state,
    is_concrete as is_concrete,
    set_current_trace as set_current_trace,
)
from tracejax._src.errors import (
    ConcretizationTypeError as ConcretizationTypeError,
    UnexpectedTracerError as UnexpectedTracerError,
)
