"""`lax.composite`: an operation with a name, defined by its decomposition.

`composite_p(*operands, name, version, attributes, jaxpr)` lowers to StableHLO's
`composite` op, which names the operation (and its static attributes) for a compiler
that knows a faster implementation, and points at a private function holding the
decomposition, which every other compiler (XLA:CPU included) inlines. tracejax
differentiates and batches a composite through its decomposition.
"""
import functools

import numpy as np

from tracejax._src import dispatch, tree_util
from tracejax._src.control_flow import common
from tracejax._src.core import ir
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching, lowering
from tracejax._src.interpreters.lowering import func_dialect, hlo, ir as mlir_ir


def composite(decomposition, name, version=0):
  """Wrap `decomposition` as a composite operation called `name`.

  Calling the result with arrays (positional) and static attributes (keyword: Python
  scalars, strings or NumPy arrays) stages one `composite` operation whose semantics
  are `decomposition(*args, **attributes)`.

  Args:
    decomposition: the function that defines the operation.
    name: the operation's name, e.g. "my_lib.tangent".
    version: an int, for compilers that match on it.

  >>> tangent = composite(lambda x, *, scale=1.: jnp.sin(x) / jnp.cos(x) * scale,
  ...                     name="my.tangent")
  >>> tangent(1., scale=2.)
  DeviceArray(3.1148154, dtype=float32)
  """
  if not isinstance(name, str) or not name:
    raise TypeError(f"composite name must be a non-empty string, got {name!r}.")
  version = int(version)

  @functools.wraps(decomposition)
  def call(*args, **attributes):
    attrs = tuple(sorted((k, _freeze(k, v)) for k, v in attributes.items()))
    leaves, in_tree = tree_util.tree_flatten(args)
    avals = [common.aval_of(x) for x in leaves]
    jaxpr, consts, out_tree = common.trace_fun(
        lambda *a: decomposition(*a, **attributes), in_tree, avals)
    outs = composite_p.bind(*consts, *leaves, name=name, version=version, attributes=attrs,
                            jaxpr=jaxpr)
    return tree_util.tree_unflatten(out_tree, outs)
  return call


class _FrozenArray(tuple):
  """A NumPy attribute as a hashable param: (dtype name, shape, values)."""

  def array(self):
    dtype, shape, values = self
    return np.array(values, dtype=dtype).reshape(shape)


def _freeze(key, v):
  if isinstance(v, (bool, int, float, str, np.bool_, np.integer, np.floating)):
    return v.item() if isinstance(v, np.generic) else v
  if isinstance(v, np.ndarray):
    return _FrozenArray((v.dtype.name, v.shape, tuple(v.ravel().tolist())))
  raise TypeError(f"composite attribute {key}={v!r}: attributes must be Python scalars, "
                  "strings or NumPy arrays (arrays to compute with are positional).")


composite_p = Primitive("composite")
composite_p.multiple_results = True
composite_p.def_impl(functools.partial(dispatch.apply_primitive, composite_p))
composite_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))


def _composite_jvp(primals, tangents, *, jaxpr, **_):
  return ad.jvp_flat(lambda *xs: ir.eval_jaxpr(jaxpr, [], *xs), primals, tangents)


def _composite_batch(args, dims, *, jaxpr, **params):
  size = next(_shape_of(x)[d] for x, d in zip(args, dims) if d is not None)
  bj, consts, out_dims = batching.batch_jaxpr(jaxpr, size, list(dims))
  bj, consts = common.close_jaxpr(bj, consts)
  outs = composite_p.bind(*consts, *args, jaxpr=bj, **params)
  return outs, out_dims


def _shape_of(x):
  return common.aval_of(x).shape


ad.primitive_jvps[composite_p] = _composite_jvp
batching.primitive_batchers[composite_p] = _composite_batch


def _attr(v):
  if isinstance(v, bool):
    return mlir_ir.BoolAttr.get(v)
  if isinstance(v, int):
    return mlir_ir.IntegerAttr.get(mlir_ir.IntegerType.get_signless(64), v)
  if isinstance(v, float):
    return mlir_ir.FloatAttr.get(mlir_ir.F64Type.get(), v)
  if isinstance(v, str):
    return mlir_ir.StringAttr.get(v)
  arr = v.array()
  return mlir_ir.DenseElementsAttr.get(np.ascontiguousarray(arr),
                                       type=lowering.dtype_to_ir_type(arr.dtype),
                                       shape=arr.shape)


def _enclosing_module():
  op = mlir_ir.InsertionPoint.current.block.owner
  while op is not None and op.name != "builtin.module":
    op = op.parent
  return op


def _composite_lowering(ctx, *args, name, version, attributes, jaxpr):
  mctx = ctx.module_context
  funcs = mctx.__dict__.setdefault("_composite_funcs", {})
  sym = funcs.get(id(jaxpr))
  if sym is None:
    sym = name if name not in funcs.values() else f"{name}_{len(funcs)}"
    funcs[id(jaxpr)] = sym
    module = _enclosing_module()
    in_types = [lowering.aval_to_ir_type(a) for a in ctx.avals_in]
    out_types = [lowering.aval_to_ir_type(a) for a in ctx.avals_out]
    with mlir_ir.InsertionPoint(module.regions[0].blocks[0]):
      fn = func_dialect.FuncOp(sym, mlir_ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = mlir_ir.StringAttr.get("private")
      entry = fn.add_entry_block()
      with mlir_ir.InsertionPoint(entry):
        outs = lowering.jaxpr_subcomp(mctx, jaxpr, [], list(entry.arguments))
        func_dialect.return_(outs)
  out_types = [lowering.aval_to_ir_type(a) for a in ctx.avals_out]
  attrs = mlir_ir.DictAttr.get({k: _attr(v) for k, v in attributes})
  op = hlo.CompositeOp(out_types, list(args), name, sym, composite_attributes=attrs,
                       version=mlir_ir.IntegerAttr.get(mlir_ir.IntegerType.get_signless(32),
                                                       version))
  return list(op.results)


lowering.register_lowering(composite_p, _composite_lowering)
