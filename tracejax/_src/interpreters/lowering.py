"""Lowering: jaxprs to StableHLO, built with jaxlib's MLIR Python builders.

A lowering rule has the form `rule(ctx, *operands, **params) -> [ir.Value]`
(a single value is accepted too) and is registered with
`register_lowering(prim, rule, platform=None)`, the interface of the 2024
primitives document. `ctx` is a `LoweringRuleContext` carrying the avals.
"""
import dataclasses

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core import ir as jir
from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime import backend
from tracejax._src.runtime.backend import ir, stablehlo, func_dialect, chlo  # noqa: F401

hlo = stablehlo
_lowerings = {}            # primitive -> rule (all platforms)
_platform_lowerings = {}   # (primitive, platform) -> rule


def register_lowering(prim, rule, platform=None):
  """Register `rule(ctx, *operands, **params)` as the StableHLO lowering of `prim`."""
  if platform is None:
    _lowerings[prim] = rule
  else:
    _platform_lowerings[(prim, "gpu" if platform in ("cuda", "rocm") else platform)] = rule
  return rule


def get_lowering(prim, platform):
  rule = _platform_lowerings.get((prim, platform)) or _lowerings.get(prim)
  if rule is None:
    raise NotImplementedError(
        f"MLIR translation rule for primitive '{prim.name}' not found for platform {platform}")
  return rule


def has_lowering(prim):
  return prim in _lowerings or any(p is prim for p, _ in _platform_lowerings)


@dataclasses.dataclass
class ModuleContext:
  platform: str
  name: str = "jit"
  axis_env: tuple = ()
  host_callbacks: list = dataclasses.field(default_factory=list)
  num_replicas: int = 1


@dataclasses.dataclass
class LoweringRuleContext:
  module_context: ModuleContext
  primitive: object
  avals_in: list
  avals_out: list

  def replace(self, **kw):
    return dataclasses.replace(self, **kw)


# ---- types and constants ----

_ir_type_makers = {
    np.dtype(np.bool_): lambda: ir.IntegerType.get_signless(1),
    np.dtype(np.int8): lambda: ir.IntegerType.get_signless(8),
    np.dtype(np.int16): lambda: ir.IntegerType.get_signless(16),
    np.dtype(np.int32): lambda: ir.IntegerType.get_signless(32),
    np.dtype(np.int64): lambda: ir.IntegerType.get_signless(64),
    np.dtype(np.uint8): lambda: ir.IntegerType.get_unsigned(8),
    np.dtype(np.uint16): lambda: ir.IntegerType.get_unsigned(16),
    np.dtype(np.uint32): lambda: ir.IntegerType.get_unsigned(32),
    np.dtype(np.uint64): lambda: ir.IntegerType.get_unsigned(64),
    np.dtype(np.float16): lambda: ir.F16Type.get(),
    np.dtype(np.float32): lambda: ir.F32Type.get(),
    np.dtype(np.float64): lambda: ir.F64Type.get(),
    np.dtype(np.complex64): lambda: ir.ComplexType.get(ir.F32Type.get()),
    np.dtype(np.complex128): lambda: ir.ComplexType.get(ir.F64Type.get()),
    np.dtype(dtypes.bfloat16): lambda: ir.BF16Type.get(),
}
try:
  import ml_dtypes
  _ir_type_makers[np.dtype(ml_dtypes.float8_e4m3fn)] = lambda: ir.Float8E4M3FNType.get()
  _ir_type_makers[np.dtype(ml_dtypes.float8_e5m2)] = lambda: ir.Float8E5M2Type.get()
  # The other narrow types of ml_dtypes that XLA (jaxlib 0.10.2) computes with.
  for _name, _make in (
      ("float8_e4m3b11fnuz", lambda: ir.Float8E4M3B11FNUZType.get()),
      ("float8_e4m3fnuz", lambda: ir.Float8E4M3FNUZType.get()),
      ("float8_e5m2fnuz", lambda: ir.Float8E5M2FNUZType.get()),
      ("float8_e3m4", lambda: ir.Float8E3M4Type.get()),
      ("float8_e4m3", lambda: ir.Float8E4M3Type.get()),
      ("float8_e8m0fnu", lambda: ir.Float8E8M0FNUType.get()),
      ("float4_e2m1fn", lambda: ir.Float4E2M1FNType.get()),
      ("int4", lambda: ir.IntegerType.get_signless(4)),
      ("uint4", lambda: ir.IntegerType.get_unsigned(4)),
      ("int2", lambda: ir.IntegerType.get_signless(2)),
      ("uint2", lambda: ir.IntegerType.get_unsigned(2))):
    if hasattr(ml_dtypes, _name):
      _ir_type_makers[np.dtype(getattr(ml_dtypes, _name))] = _make
except Exception:  # pragma: no cover
  pass


def check_supported_dtype(dtype):
  """TypeError for a dtype XLA cannot hold (no MLIR context needed: abstract eval uses it)."""
  dtype = np.dtype(dtype)
  if dtype != dtypes.float0 and dtype not in _ir_type_makers:
    raise TypeError(f"No StableHLO type for dtype {dtype}")


def dtype_to_ir_type(dtype):
  dtype = np.dtype(dtype)
  if dtype == dtypes.float0:
    return ir.IntegerType.get_signless(1)  # float0 values are lowered as bool zeros
  try:
    return _ir_type_makers[dtype]()
  except KeyError:
    raise TypeError(f"No StableHLO type for dtype {dtype}") from None


def aval_to_ir_type(aval):
  if not isinstance(aval.dtype, np.dtype):  # an extended dtype (keys): its data's type
    aval = aval.dtype.physical_aval(aval)
  return ir.RankedTensorType.get(aval.shape, dtype_to_ir_type(aval.dtype))


def ir_constant(val, dtype=None):
  """A StableHLO constant holding NumPy value `val`."""
  val = np.asarray(val) if dtype is None else np.asarray(val, dtype)
  if val.dtype == dtypes.float0:
    val = np.zeros(val.shape, np.bool_)
  elt = dtype_to_ir_type(val.dtype)
  shape = val.shape
  if val.dtype == np.bool_:
    if val.size and (val == val.flat[0]).all():
      attr = ir.DenseElementsAttr.get_splat(
          ir.RankedTensorType.get(shape, elt), ir.BoolAttr.get(bool(val.flat[0])))
    else:
      packed = np.packbits(np.ascontiguousarray(val).reshape(-1), bitorder="little")
      attr = ir.DenseElementsAttr.get(packed, type=elt, shape=shape)
  else:
    if val.dtype.name in backend._MLIR_NAMES:
      raw = np.ascontiguousarray(val).view({1: np.uint8, 2: np.uint16}[val.dtype.itemsize])
      attr = ir.DenseElementsAttr.get(raw, type=elt, shape=shape)
    else:
      attr = ir.DenseElementsAttr.get(np.ascontiguousarray(val), type=elt, shape=shape)
  return hlo.constant(attr)


def full_like_aval(value, aval):
  """A constant of `aval`'s shape and dtype filled with `value` (a splat)."""
  c = ir_constant(np.array(value, aval.dtype))
  if aval.shape:
    c = hlo.broadcast_in_dim(aval_to_ir_type(aval), c, ir.DenseI64ArrayAttr.get([]))
  return c


def _as_values(out):
  if isinstance(out, ir.Value):
    return [out]
  if isinstance(out, ir.OpView):
    return list(out.results)
  if isinstance(out, ir.Operation):
    return list(out.results)
  return [v.result if isinstance(v, ir.OpView) else v for v in out]


# ---- the interpreter ----

def jaxpr_subcomp(mctx, jaxpr, consts, args):
  """Emit the ops of `jaxpr` at the current insertion point; returns its outputs."""
  env = {}

  def read(v):
    if type(v) is jir.Literal:
      return ir_constant(np.asarray(v.val, v.aval.dtype))
    return env[v]

  for v, x in zip(jaxpr.constvars, consts):
    env[v] = x
  for v, x in zip(jaxpr.invars, args):
    env[v] = x
  for eqn in jaxpr.eqns:
    rule = get_lowering(eqn.primitive, mctx.platform)
    ctx = LoweringRuleContext(mctx, eqn.primitive, [v.aval for v in eqn.invars],
                              [v.aval for v in eqn.outvars])
    with ir.Location.name(_loc_name(mctx, eqn)):
      outs = _as_values(rule(ctx, *map(read, eqn.invars), **eqn.params))
    if len(outs) != len(eqn.outvars):
      raise ValueError(f"lowering of {eqn.primitive} gave {len(outs)} results, "
                       f"expected {len(eqn.outvars)}")
    for v, x in zip(eqn.outvars, outs):
      env[v] = x
  return [read(v) for v in jaxpr.outvars]


def _loc_name(mctx, eqn):
  """An operation's location name, as JAX writes it: `jit(f)/scope/inner/prim`, the
  scopes being the `named_scope`s the equation was staged under."""
  prefix = mctx.name
  if prefix.startswith("jit_"):
    prefix = f"jit({prefix[4:]})"
  scope = eqn.source_info if isinstance(eqn.source_info, str) else None
  if scope:
    return f"{prefix}/{scope}/{eqn.primitive.name}"
  return f"{prefix}/{eqn.primitive.name}"


def lower_jaxpr(jaxpr, name="jit", platform=None, donated=None, const_args=True,
                num_replicas=1, axis_env=(), debug_info=False):
  """Lower a jaxpr whose constvars become leading arguments; returns (text, mctx).

  With `debug_info=True` the text shows each operation's location (its name stack,
  e.g. `loc("jit(f)/outer/sin")`), what `Lowered.as_text(debug_info=True)` prints."""
  platform = platform or backend.default_platform()
  mctx = ModuleContext(platform, name, axis_env, [], num_replicas)
  in_avals = [v.aval for v in jaxpr.constvars] + [v.aval for v in jaxpr.invars]
  out_avals = [v.aval for v in jaxpr.outvars]
  with backend.make_ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name(name))
    if num_replicas > 1:
      module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(
          ir.IntegerType.get_signless(32), num_replicas)
    in_types = [aval_to_ir_type(a) for a in in_avals]
    out_types = [aval_to_ir_type(a) for a in out_avals]
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      if donated is not None and any(donated):
        ncon = len(jaxpr.constvars)
        attrs = []
        for i in range(len(in_types)):
          d = i >= ncon and donated[i - ncon]
          attrs.append(ir.DictAttr.get({"jax.buffer_donor": ir.BoolAttr.get(True)}
                                       if d else {}))
        fn.arg_attrs = ir.ArrayAttr.get(attrs)
      entry = fn.add_entry_block()
      with ir.InsertionPoint(entry):
        args = list(entry.arguments)
        ncon = len(jaxpr.constvars)
        outs = jaxpr_subcomp(mctx, jaxpr, args[:ncon], args[ncon:])
        func_dialect.return_(outs)
    text = module.operation.get_asm(enable_debug_info=bool(debug_info))
  return text, mctx


def _sanitize(name):
  return "".join(c if c.isalnum() or c in "_." else "_" for c in name) or "jit"


def module_name(name):
  """The module's symbol name for `name` (e.g. "jit_<lambda>"), spelled as JAX 0.10.2
  spells it, since tools and tests match on it: every character other than a letter,
  digit, "_", "." or "-" becomes "_", then trailing "_" go.

  >>> module_name("jit_<lambda>")
  'jit__lambda'
  """
  return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name).rstrip("_") or "jit"


def lower_fun(fun, multiple_results=True):
  """A lowering rule that traces `fun` (a function of arrays) and lowers it inline."""
  from tracejax._src.interpreters import staging

  def rule(ctx, *args, **params):
    f = (lambda *xs: fun(*xs, **params)) if multiple_results else \
        (lambda *xs: [fun(*xs, **params)])
    from tracejax._src.core.trace import set_current_trace, eval_trace
    with set_current_trace(eval_trace):
      jaxpr, consts = staging.trace_to_jaxpr(f, ctx.avals_in)
    const_vals = [ir_constant(np.asarray(c)) for c in consts]
    return jaxpr_subcomp(ctx.module_context, jaxpr, const_vals, args)
  return rule


_ = avals_mod
