"""`jax.export`: a jitted function as a serialized StableHLO artifact that a later
process (or a later jaxlib) can load and run.

`export(jit(f))(*arg_specs)` traces and lowers `f` for the given argument types and
returns an `Exported`: the StableHLO module (kept as a versioned *portable artifact*,
which newer StableHLO versions promise to read), the flat input/output avals and the
input/output pytree structures. `Exported.serialize()` turns all that into bytes
and `deserialize(bytes)` back; `Exported.call(*args)` runs it, eagerly or inside a
traced function, through the `call_exported` primitive, whose lowering inlines the
module into the caller's (so it composes with `jit`, and with `vmap` by a loop).

The byte format is tracejax's own: a magic header, a JSON header with the metadata
(fun_name, avals, pytree structures, platforms, versions) and the portable artifact
bytes, each part length-prefixed. Differentiation: an `Exported` made in this
process can differentiate through the original function; one read back from bytes
can only if it was serialized with `vjp_order >= 1`, which stores the exported
VJP beside it (as JAX does).
"""
import base64
import collections
import dataclasses
import itertools
import json
import re
import struct

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src import dispatch
from tracejax._src.core import avals as avals_mod
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import ir
from tracejax._src.runtime import backend

__all__ = [
    "DisabledSafetyCheck", "Exported", "default_export_platform", "deserialize", "export",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
    "register_pytree_node_serialization", "serialize",
]

# The layout of `main` that tracejax emits (flat array arguments in, flat results out,
# no platform-index or token arguments) is what JAX calls calling conventions 9 and 10.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_CALLING_CONVENTION = 10

_MAGIC = b"TRACEJAX-EXPORT\x00"
_FORMAT_VERSION = 1
_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def default_export_platform():
  """The platform `export` lowers for when `platforms` is not given: the default
  backend's ('cpu', 'cuda', ...).

  >>> default_export_platform()
  'cpu'
  """
  plat = backend.default_platform()
  return "cuda" if plat == "gpu" else plat


class DisabledSafetyCheck:
  """A check `export` or `Exported.call` may skip (`export(f, disabled_checks=[...])`).

  `DisabledSafetyCheck.platform()` lets `call` run on a platform the function was not
  exported for; `custom_call(target)` and `shape_assertions()` are accepted for JAX
  compatibility (tracejax's modules never carry shape assertions).

  >>> DisabledSafetyCheck.platform().is_platform()
  True
  """

  def __init__(self, name):
    self._name = name

  @classmethod
  def platform(cls):
    return cls("platform")

  @classmethod
  def custom_call(cls, target_name):
    return cls(f"custom_call:{target_name}")

  @classmethod
  def shape_assertions(cls):
    return cls("shape_assertions")

  def is_platform(self):
    return self._name == "platform"

  def is_custom_call(self):
    return self._name[len("custom_call:"):] if self._name.startswith("custom_call:") else None

  def __eq__(self, other):
    return isinstance(other, DisabledSafetyCheck) and self._name == other._name

  def __hash__(self):
    return hash(self._name)

  def __str__(self):
    return self._name

  __repr__ = lambda self: f"DisabledSafetyCheck({self._name!r})"


# ---- the Exported artifact ----

@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
  """A function lowered for fixed argument types, ready to serialize or call.

  Fields: `fun_name`, `in_tree`/`out_tree` (pytree structures of `(args, kwargs)` and
  of the result), `in_avals`/`out_avals` (flat `ShapedArray`s), `platforms`,
  `mlir_module_serialized` (the portable StableHLO artifact), `nr_devices`,
  `calling_convention_version`, `disabled_safety_checks`, `module_kept_var_idx`...

  >>> import numpy as np, tracejax
  >>> exp = export(tracejax.jit(lambda x: x * 2.0))(np.ones(3, np.float32))
  >>> exp.in_avals, exp.out_avals
  ((ShapedArray(float32[3]),), (ShapedArray(float32[3]),))
  >>> exp.call(np.ones(3, np.float32))
  DeviceArray([2., 2., 2.], dtype=float32)
  """
  fun_name: str
  in_tree: tree_util.PyTreeDef
  in_avals: tuple
  out_tree: tree_util.PyTreeDef
  out_avals: tuple
  platforms: tuple
  mlir_module_serialized: bytes
  calling_convention_version: int = _CALLING_CONVENTION
  nr_devices: int = 1
  disabled_safety_checks: tuple = ()
  ordered_effects: tuple = ()
  unordered_effects: tuple = ()
  uses_global_constants: bool = False
  _get_vjp: object = None
  _text_cache: dict = dataclasses.field(default_factory=dict, init=False, repr=False)

  @property
  def in_shardings_hlo(self):
    return (None,) * len(self.in_avals)

  @property
  def out_shardings_hlo(self):
    return (None,) * len(self.out_avals)

  @property
  def module_kept_var_idx(self):
    return tuple(range(len(self.in_avals)))

  def __str__(self):
    return f"Exported(fun_name={self.fun_name}, ...)"

  def mlir_module(self):
    """The StableHLO module as MLIR text."""
    text = self._text_cache.get("text")
    if text is None:
      text = self._text_cache["text"] = backend.deserialize_portable_artifact(
          self.mlir_module_serialized)
    return text

  def has_vjp(self):
    """Whether `call` can be differentiated (reverse mode)."""
    return self._get_vjp is not None

  def vjp(self):
    """The `Exported` VJP: called with the flat primal inputs then the cotangents of
    the flat (inexact) outputs, it returns the cotangents of the (inexact) inputs."""
    if self._get_vjp is None:
      raise ValueError(f"No VJP is available for the exported function {self.fun_name}: "
                       "it was deserialized from bytes serialized with vjp_order=0. "
                       "Serialize with `exported.serialize(vjp_order=1)` to keep one.")
    vjp = self._text_cache.get("vjp")
    if vjp is None:
      vjp = self._text_cache["vjp"] = self._get_vjp(self)
    return vjp

  def serialize(self, vjp_order=0):
    """The artifact as bytes (`deserialize` reads them back, in any later process).

    Args:
      vjp_order: how many orders of VJP to store with it, so that the deserialized
        function can be differentiated that many times.
    """
    return serialize(self, vjp_order=vjp_order)

  def call(self, *args, **kwargs):
    """Run the exported function on arguments of the exported types.

    Works eagerly and inside `jit`, `vmap` (as a loop over the batch) and, when
    `has_vjp()`, `grad`.
    """
    return call_exported(self)(*args, **kwargs)


# ---- export ----

def _is_jitted(f):
  from tracejax._src import stages
  return isinstance(f, stages.Wrapped)


def export(fun_jit, *, platforms=None, disabled_checks=()):
  """Returns a function that exports `fun_jit` (a `jit`-ted function) for argument
  specs (`ShapeDtypeStruct`s or arrays; static arguments as values).

  Args:
    fun_jit: the result of `tracejax.jit`.
    platforms: None (the default backend's platform) or a one-element sequence of
      'cpu', 'cuda', 'rocm', 'tpu'.
    disabled_checks: a sequence of `DisabledSafetyCheck`.

  >>> import numpy as np, tracejax
  >>> from tracejax import ShapeDtypeStruct
  >>> exp = export(tracejax.jit(lambda x: x + 1))(ShapeDtypeStruct((2,), np.int32))
  >>> exp.call(np.array([1, 2], np.int32))
  DeviceArray([2, 3], dtype=int32)
  """
  if not _is_jitted(fun_jit):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  if platforms is None:
    platforms = (default_export_platform(),)
  elif isinstance(platforms, str):
    raise TypeError(f"export: platforms must be a sequence of strings, got {platforms!r}")
  platforms = tuple(str(p).lower() for p in platforms)
  for p in platforms:
    if p not in _PLATFORMS:
      raise ValueError(f"export: unknown platform {p!r} in platforms; expected some of "
                       f"{_PLATFORMS}.")
  if len(platforms) != 1:
    raise ValueError(f"export: tracejax lowers for one platform at a time, got "
                     f"platforms={platforms}. Export once per platform.")
  disabled_checks = tuple(disabled_checks)
  for c in disabled_checks:
    if not isinstance(c, DisabledSafetyCheck):
      raise TypeError(f"export: disabled_checks must hold DisabledSafetyCheck values, got {c!r}")

  def do_export(*args_specs, **kwargs_specs):
    traced = fun_jit.trace(*args_specs, **kwargs_specs)
    closed = traced.jaxpr
    name = traced.fun_name
    plat = {"cuda": "gpu", "rocm": "gpu"}.get(platforms[0], platforms[0])
    text = _lower_closed(closed, name, plat)
    in_avals = tuple(avals_mod.raise_to_shaped(a) for a in traced._info.in_avals)
    out_avals = tuple(avals_mod.raise_to_shaped(a) for a in traced._info.out_avals)
    return Exported(
        fun_name=name, in_tree=traced.in_tree, in_avals=in_avals, out_tree=traced.out_tree,
        out_avals=out_avals, platforms=platforms,
        mlir_module_serialized=backend.serialize_portable_artifact(text),
        disabled_safety_checks=disabled_checks,
        _get_vjp=lambda exp: _export_vjp(fun_jit, exp))

  return do_export


def _lower_closed(closed, name, platform):
  """StableHLO text of a closed jaxpr whose constants are embedded in the module (an
  artifact carries no side buffers)."""
  jaxpr, consts = closed.jaxpr, closed.consts
  if any(isinstance(c, Tracer) for c in consts):
    raise TypeError(f"Cannot export {name}: it closes over values traced by an enclosing "
                    "transformation. Pass them as arguments instead.")
  mctx = mlir.ModuleContext(platform, f"jit_{name}")
  with backend.make_ir_context(), ir.Location.unknown():
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(mlir.module_name(f"jit_{name}"))
    in_types = [mlir.aval_to_ir_type(v.aval) for v in jaxpr.invars]
    out_types = [mlir.aval_to_ir_type(v.aval) for v in jaxpr.outvars]
    with ir.InsertionPoint(module.body):
      fn = mlir.func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      entry = fn.add_entry_block()
      with ir.InsertionPoint(entry):
        const_vals = [mlir.ir_constant(np.asarray(c)) for c in consts]
        outs = mlir.jaxpr_subcomp(mctx, jaxpr, const_vals, list(entry.arguments))
        mlir.func_dialect.return_(outs)
    text = module.operation.get_asm(enable_debug_info=False)
  if mctx.host_callbacks or backend.PYTHON_CALLBACK_TARGET in text:
    raise ValueError(f"Cannot export {name}: it calls back into Python (pure_callback, "
                     "io_callback or jax.debug), and a host callback cannot be serialized.")
  return text


def _inexact(aval):
  return dtypes.issubdtype(aval.dtype, np.inexact)


def _export_vjp(fun_jit, exp):
  """Export the VJP of `fun_jit` at `exp`'s types: (primals..., out cts...) -> in cts."""
  from tracejax._src import api
  from tracejax._src.jit import jit
  n_in = len(exp.in_avals)
  in_idx = [i for i, a in enumerate(exp.in_avals) if _inexact(a)]
  out_idx = [i for i, a in enumerate(exp.out_avals) if _inexact(a)]

  def flat_fun(*diff_args, rest):
    full = list(rest)
    for i, x in zip(in_idx, diff_args):
      full[i] = x
    args, kwargs = tree_util.tree_unflatten(exp.in_tree, full)
    outs = tree_util.tree_leaves(fun_jit(*args, **kwargs))
    return [outs[i] for i in out_idx]

  def vjp_fun(*primals_and_cts):
    primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]
    _, pullback = api.vjp(lambda *d: flat_fun(*d, rest=primals), *[primals[i] for i in in_idx])
    return pullback(list(cts))

  specs = [_spec(a) for a in exp.in_avals] + [_spec(exp.out_avals[i]) for i in out_idx]
  vexp = export(jit(vjp_fun), platforms=exp.platforms,
                disabled_checks=exp.disabled_safety_checks)(*specs)
  return dataclasses.replace(vexp, fun_name=f"vjp_{exp.fun_name}")


def _spec(aval):
  from tracejax._src.api import ShapeDtypeStruct
  return ShapeDtypeStruct(aval.shape, aval.dtype)


# ---- calling: the call_exported primitive ----

call_exported_p = Primitive("call_exported")
call_exported_p.multiple_results = True


def _call_exported_abstract_eval(*avals, exported):
  return list(exported.out_avals)


call_exported_p.def_abstract_eval(_call_exported_abstract_eval)
call_exported_p.def_impl(
    lambda *args, exported: dispatch.apply_primitive(call_exported_p, *args, exported=exported))

_fresh = itertools.count()
_SYMBOL = re.compile(r"func\.func\s+(?:public\s+|private\s+)?@([\w.$-]+)")


def _enclosing_module_body():
  """The body block of the module being built around the current insertion point."""
  op = ir.InsertionPoint.current.block.owner
  while op is not None and op.name != "builtin.module":
    op = op.parent
  if op is None:
    raise ValueError("call_exported is lowered outside of a module")
  return op.regions[0].blocks[0]


def _call_exported_lowering(ctx, *args, exported):
  plat = ctx.module_context.platform
  plat = "cuda" if plat == "gpu" and "cuda" in exported.platforms else plat
  if (plat not in exported.platforms and
      DisabledSafetyCheck.platform() not in exported.disabled_safety_checks):
    raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                     f"{exported.platforms} but it is used on {(plat,)}.")
  text = exported.mlir_module()
  # Give the module's functions fresh names, so that calling several exported
  # functions (or one twice) never clashes; `main` becomes a private callee.
  prefix = f"exported_{mlir._sanitize(exported.fun_name)}_{next(_fresh)}_"
  for sym in set(_SYMBOL.findall(text)):
    text = re.sub(rf"@{re.escape(sym)}\b", f"@{prefix}{sym}", text)
  inner = ir.Module.parse(text)
  body = _enclosing_module_body()
  main = None
  for op in inner.body.operations:
    if op.operation.name != "func.func":
      continue
    cloned = op.operation.clone(ip=ir.InsertionPoint(body))
    cloned.attributes["sym_visibility"] = ir.StringAttr.get("private")
    if ir.StringAttr(cloned.attributes["sym_name"]).value == f"{prefix}main":
      main = cloned
  if main is None:
    raise ValueError(f"The exported module of {exported.fun_name} has no main function.")
  out_types = [mlir.aval_to_ir_type(a) for a in exported.out_avals]
  call = mlir.func_dialect.CallOp(out_types, ir.FlatSymbolRefAttr.get(f"{prefix}main"),
                                  list(args))
  return list(call.results)


mlir.register_lowering(call_exported_p, _call_exported_lowering)


def _call_exported_batch(args, dims, *, exported):
  # Exported modules have fixed shapes: run them once per batch element, in a loop.
  from tracejax._src.control_flow import map as lax_map
  from tracejax._src.lax import utils as lax_utils
  batched = [i for i, d in enumerate(dims) if d is not None]
  xs = [lax_utils.moveaxis(args[i], dims[i], 0) for i in batched]

  def one(xs_i):
    full = list(args)
    for i, x in zip(batched, xs_i):
      full[i] = x
    return call_exported_p.bind(*full, exported=exported)

  return lax_map(one, xs), [0] * len(exported.out_avals)


batching.primitive_batchers[call_exported_p] = _call_exported_batch


def _call_exported_jvp(primals, tangents, *, exported):
  # Reached only without a VJP (`call` routes differentiable artifacts through a
  # custom_vjp): say how to get one rather than naming a missing rule.
  raise ValueError(f"Cannot differentiate the exported function {exported.fun_name}: it was "
                   "deserialized without a VJP. Serialize it with "
                   "`exported.serialize(vjp_order=1)` (or more) to make it differentiable.")


ad.primitive_jvps[call_exported_p] = _call_exported_jvp


def _check_and_convert(exported, flat_args):
  out = []
  for i, (x, want) in enumerate(zip(flat_args, exported.in_avals)):
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
      x = np.asarray(x, want.dtype)   # a Python scalar takes the exported dtype
    try:
      got = avals_mod.get_aval(x)
    except TypeError:
      raise TypeError(f"Argument {i} of exported function {exported.fun_name} has type "
                      f"{type(x)}, which is not a valid JAX type.") from None
    if got.dtype != want.dtype:
      raise ValueError(f"Dtype mismatch for args[{i}]: expected {want.dtype} and called "
                       f"with {got.dtype}")
    if tuple(got.shape) != tuple(want.shape):
      raise ValueError(f"Shape mismatch for args[{i}]: expected {tuple(want.shape)} and "
                       f"called with {tuple(got.shape)}")
    out.append(x)
  return out


def call_exported(exported):
  """A function of `(*args, **kwargs)` that runs `exported` (what `Exported.call` uses).

  >>> import numpy as np, tracejax
  >>> exp = export(tracejax.jit(lambda x: -x))(np.float32(1))
  >>> call_exported(exp)(np.float32(3))
  DeviceArray(-3., dtype=float32)
  """
  if not isinstance(exported, Exported):
    raise TypeError(f"call_exported expects an Exported, got {type(exported)}")

  def f(*args, **kwargs):
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
      raise ValueError(f"The invocation args and kwargs must have the same pytree structure "
                       f"as when the function '{exported.fun_name}' was exported, but they "
                       f"have the following structural differences: exported with "
                       f"{exported.in_tree}, called with {in_tree}")
    flat = _check_and_convert(exported, leaves)
    outs = _flat_caller(exported)(*flat)
    return tree_util.tree_unflatten(exported.out_tree, list(outs))

  return f


def _flat_caller(exported):
  if not exported.has_vjp():
    return lambda *flat: call_exported_p.bind(*flat, exported=exported)
  from tracejax._src.custom_derivatives import custom_vjp
  in_idx = [i for i, a in enumerate(exported.in_avals) if _inexact(a)]
  out_idx = [i for i, a in enumerate(exported.out_avals) if _inexact(a)]

  @custom_vjp
  def run(*flat):
    return tuple(call_exported_p.bind(*flat, exported=exported))

  def fwd(*flat):
    return run(*flat), flat

  def bwd(flat, cts):
    vexp = exported.vjp()
    cts = [np.zeros(exported.out_avals[i].shape, exported.out_avals[i].dtype)
           if _is_zero(cts[i]) else cts[i] for i in out_idx]
    in_cts = _flat_caller(vexp)(*flat, *cts)
    res = [None] * len(flat)
    for i, c in zip(in_idx, in_cts):
      res[i] = c
    return tuple(res)

  run.defvjp(fwd, bwd)
  return run


def _is_zero(ct):
  return ct is None or type(ct).__name__ == "Zero"


# ---- serialization ----

# Custom pytree nodes that can be serialized: type -> (name, to_bytes, from_bytes).
_node_serializers = {}
_node_deserializers = {}   # name -> (type, from_bytes)


def register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata,
                                       deserialize_auxdata):
  """Let `Exported.serialize` write pytrees holding `nodetype` (a registered pytree
  node): `serialize_auxdata(aux) -> bytes`, `deserialize_auxdata(bytes) -> aux`.

  Args:
    nodetype: the registered node class.
    serialized_name: a name unique among registrations, stored in the artifact.
    serialize_auxdata: aux data -> bytes.
    deserialize_auxdata: bytes -> aux data.

  >>> class Box(tuple): pass
  >>> _ = tree_util.register_pytree_node(Box, lambda b: (tuple(b), None),
  ...                                     lambda _, c: Box(c))
  >>> register_pytree_node_serialization(Box, serialized_name="doc.Box",
  ...     serialize_auxdata=lambda a: b"", deserialize_auxdata=lambda b: None) is Box
  True
  """
  if not isinstance(serialized_name, str) or not serialized_name:
    raise ValueError("register_pytree_node_serialization: serialized_name must be a "
                     "non-empty string")
  if serialized_name in _node_deserializers:
    raise ValueError(f"Duplicate serialization registration for name {serialized_name!r}")
  if nodetype in _node_serializers:
    raise ValueError(f"Duplicate serialization registration for type {nodetype}")
  _node_serializers[nodetype] = (serialized_name, serialize_auxdata)
  _node_deserializers[serialized_name] = (nodetype, deserialize_auxdata)
  return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name):
  """Let `Exported.serialize` write pytrees holding the namedtuple class `nodetype`.

  >>> Point = collections.namedtuple("Point", "x y")
  >>> register_namedtuple_serialization(Point, serialized_name="doc.Point") is Point
  True
  """
  if not (isinstance(nodetype, type) and issubclass(nodetype, tuple) and
          hasattr(nodetype, "_fields")):
    raise ValueError(f"register_namedtuple_serialization: {nodetype} is not a namedtuple class")
  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name,
      serialize_auxdata=lambda aux: b"", deserialize_auxdata=lambda data: None)


def _encode_keys(keys, where):
  for k in keys:
    if not isinstance(k, str):
      raise ValueError(f"Cannot serialize {where} with a non-string key {k!r}")
  return list(keys)


def _encode_node(node):
  if node is None:
    return {"t": "*"}
  typ, aux, children = node
  kids = [_encode_node(c) for c in children]
  if typ is type(None):
    return {"t": "None"}
  if typ is tuple:
    return {"t": "tuple", "c": kids}
  if typ is list:
    return {"t": "list", "c": kids}
  if typ is dict:
    return {"t": "dict", "k": _encode_keys(aux, "a dict"), "c": kids}
  if typ is collections.OrderedDict:
    return {"t": "OrderedDict", "k": _encode_keys(aux, "an OrderedDict"), "c": kids}
  reg = _node_serializers.get(typ)
  if reg is None:
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type {typ}. "
                     "Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")
  name, to_bytes = reg
  return {"t": "custom", "n": name, "a": base64.b64encode(bytes(to_bytes(aux))).decode(),
          "c": kids}


def _decode_node(d):
  t = d["t"]
  if t == "*":
    return None
  kids = tuple(_decode_node(c) for c in d.get("c", ()))
  if t == "None":
    return (type(None), None, ())
  if t in ("tuple", "list"):
    return ({"tuple": tuple, "list": list}[t], None, kids)
  if t == "dict":
    return (dict, tuple(d["k"]), kids)
  if t == "OrderedDict":
    return (collections.OrderedDict, tuple(d["k"]), kids)
  if t == "custom":
    reg = _node_deserializers.get(d["n"])
    if reg is None:
      raise ValueError(f"Cannot deserialize a PyTreeDef with the custom node {d['n']!r}: "
                       "register it with `export.register_pytree_node_serialization` "
                       "(or `register_namedtuple_serialization`) in this process first.")
    typ, from_bytes = reg
    return (typ, from_bytes(base64.b64decode(d["a"])), kids)
  raise ValueError(f"deserialize: unknown pytree node kind {t!r}")


def _encode_treedef(td):
  return _encode_node(td._node)


def _decode_treedef(d):
  node = _decode_node(d)
  return tree_util.PyTreeDef(node) if node is not None else tree_util.tree_structure(0)


def _dtype_by_name(name):
  try:
    return np.dtype(name)
  except TypeError:  # bfloat16, float8_*: NumPy knows them only through ml_dtypes
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


def _encode_aval(a):
  return [list(a.shape), np.dtype(a.dtype).name, bool(getattr(a, "weak_type", False))]


def _decode_aval(d):
  shape, name, weak = d
  return avals_mod.ShapedArray(tuple(shape), _dtype_by_name(name), weak_type=weak)


def _header(exp, vjp_order):
  return {
      "fun_name": exp.fun_name,
      "in_tree": _encode_treedef(exp.in_tree), "out_tree": _encode_treedef(exp.out_tree),
      "in_avals": [_encode_aval(a) for a in exp.in_avals],
      "out_avals": [_encode_aval(a) for a in exp.out_avals],
      "platforms": list(exp.platforms), "nr_devices": exp.nr_devices,
      "calling_convention_version": exp.calling_convention_version,
      "disabled_checks": [str(c) for c in exp.disabled_safety_checks],
      "stablehlo_version": backend.stablehlo_version(), "jaxlib": backend.JAXLIB_VERSION,
      "vjp_order": vjp_order,
  }


def serialize(exported, vjp_order=0):
  """The bytes of an `Exported` (also `exported.serialize()`); `deserialize` reads them.

  Args:
    exported: an `Exported`.
    vjp_order: how many orders of VJP to serialize with it (0: none).

  >>> import numpy as np, tracejax
  >>> exp = export(tracejax.jit(lambda x: x * x))(np.float32(0))
  >>> deserialize(serialize(exp)).call(np.float32(3))
  DeviceArray(9., dtype=float32)
  """
  if not isinstance(exported, Exported):
    raise TypeError(f"serialize expects an Exported, got {type(exported)}")
  if not isinstance(vjp_order, int) or vjp_order < 0:
    raise ValueError(f"serialize: vjp_order must be a non-negative int, got {vjp_order!r}")
  header = json.dumps(_header(exported, vjp_order)).encode()
  module = bytes(exported.mlir_module_serialized)
  vjp = serialize(exported.vjp(), vjp_order - 1) if vjp_order > 0 else b""
  return bytearray(_MAGIC + struct.pack("<IQQQ", _FORMAT_VERSION, len(header), len(module),
                                        len(vjp)) + header + module + vjp)


def deserialize(blob):
  """An `Exported` from the bytes `serialize` (or `Exported.serialize`) wrote.

  Args:
    blob: bytes or bytearray.
  """
  if not isinstance(blob, (bytes, bytearray, memoryview)):
    raise TypeError(f"deserialize expects bytes, got {type(blob)}")
  blob = bytes(blob)
  if not blob.startswith(_MAGIC):
    raise ValueError("deserialize: these bytes are not a tracejax serialized Exported "
                     "(bad magic header)")
  pos = len(_MAGIC)
  version, nh, nm, nv = struct.unpack_from("<IQQQ", blob, pos)
  if version != _FORMAT_VERSION:
    raise ValueError(f"deserialize: unsupported serialization format version {version}")
  pos += struct.calcsize("<IQQQ")
  header = json.loads(blob[pos:pos + nh].decode())
  module = blob[pos + nh:pos + nh + nm]
  vjp_blob = blob[pos + nh + nm:pos + nh + nm + nv]
  ccv = header["calling_convention_version"]
  if not (minimum_supported_calling_convention_version <= ccv <=
          maximum_supported_calling_convention_version):
    raise ValueError(f"deserialize: calling convention version {ccv} is not supported")
  vjp_exp = deserialize(vjp_blob) if vjp_blob else None
  return Exported(
      fun_name=header["fun_name"],
      in_tree=_decode_treedef(header["in_tree"]), out_tree=_decode_treedef(header["out_tree"]),
      in_avals=tuple(_decode_aval(a) for a in header["in_avals"]),
      out_avals=tuple(_decode_aval(a) for a in header["out_avals"]),
      platforms=tuple(header["platforms"]), mlir_module_serialized=module,
      calling_convention_version=ccv, nr_devices=header["nr_devices"],
      disabled_safety_checks=tuple(DisabledSafetyCheck(c) for c in header["disabled_checks"]),
      _get_vjp=(lambda _: vjp_exp) if vjp_exp is not None else None)
