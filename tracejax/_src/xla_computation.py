"""`xla_computation` (a function's XLA HLO, as the 2020 API gave it) and `soft_pmap`.

jaxlib 0.10.2 has no XlaBuilder, so `xla_computation` traces the function to a
jaxpr, lowers it to StableHLO with the ordinary lowering rules, and has XLA
convert that module to HLO (`backend.stablehlo_to_hlo`).

`axis_env` names axes that the function's collectives (`psum`, `pmax`, `pmin`,
`pmean`, `ppermute`, `axis_index`) refer to without an enclosing `pmap`: the
computation is then a replicated program, one replica per position in the
product of the axes (row-major: the last axis varies fastest), and each
collective lowers to an XLA cross-replica op over the replica groups of its
axes: the collectives' own lowering rules read the module's axis env, the one
mechanism that pmap's replicated programs use too.
"""
import contextlib
import functools
import math
import operator

import numpy as np

from tracejax._src import tree_util, util
from tracejax._src.api import ShapeDtypeStruct, _abstractify
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import lowering
from tracejax._src.interpreters.lowering import func_dialect, ir
from tracejax._src.interpreters import staging
from tracejax._src.lax import parallel
from tracejax._src.runtime import backend as _backend


class XlaComputation:
  """The HLO of a function, as built by `xla_computation`.

  Methods mirror the 2020 XlaComputation: `as_hlo_text()`, `as_hlo_module()`,
  `get_hlo_module()`, `as_serialized_hlo_module_proto()`, `as_hlo_dot_graph()`,
  `program_shape()`, `name()`; `as_stablehlo_text()` gives the module it came from.
  """

  def __init__(self, hlo_computation, stablehlo_text):
    self._c = hlo_computation
    self._text = stablehlo_text

  def as_hlo_text(self):
    """The HLO module as text (`HloModule ... ENTRY ... { ... }`)."""
    return self._c.as_hlo_text()

  def as_hlo_module(self):
    """The HLO module object (jaxlib's HloModule: `to_string()`, `computations()`)."""
    return self._c.as_hlo_module()

  def get_hlo_module(self):
    """The HLO module object (same as `as_hlo_module()`)."""
    return self._c.get_hlo_module()

  def as_serialized_hlo_module_proto(self):
    """The HloModuleProto, serialized (bytes)."""
    return self._c.as_serialized_hlo_module_proto()

  def as_hlo_dot_graph(self):
    """The entry computation as a Graphviz dot graph (text)."""
    return self._c.as_hlo_dot_graph()

  def program_shape(self):
    """The program's parameter and result shapes."""
    return self._c.program_shape()

  def name(self):
    return self._c.name()

  def as_stablehlo_text(self):
    """The StableHLO module the HLO was converted from (MLIR text)."""
    return self._text

  def __repr__(self):
    return f"<XlaComputation {self.name()}>"


def _check_axis_env(axis_env):
  if axis_env is None:
    return ()
  try:
    pairs = [tuple(p) for p in axis_env]
  except TypeError:
    raise TypeError(f"xla_computation axis_env must be a list of (axis_name, size) pairs, "
                    f"got {axis_env!r}.") from None
  names = []
  for p in pairs:
    if len(p) != 2 or not isinstance(p[1], (int, np.integer)) or isinstance(p[1], bool) \
        or p[1] < 1:
      raise TypeError(f"xla_computation axis_env must be a list of (axis_name, size) pairs "
                      f"with positive integer sizes, got the entry {p!r}.")
    try:
      hash(p[0])
    except TypeError:
      raise TypeError(f"xla_computation axis_env: axis name {p[0]!r} is not hashable.") \
          from None
    if p[0] in names:
      raise ValueError(f"xla_computation axis_env names axis {p[0]!r} twice.")
    names.append(p[0])
  return tuple((n, int(s)) for n, s in pairs)


def xla_computation(fun, static_argnums=(), axis_env=None, backend=None, tuple_args=False,
                    instantiate_const_outputs=True, return_shape=False):
  """A function that builds the XLA computation (HLO) of `fun` for example arguments.

  Args:
    fun: the function to stage out (pytrees in and out).
    static_argnums: int or tuple of ints: positional arguments that are Python values
      baked into the computation rather than parameters.
    axis_env: optional list of `(axis_name, size)` pairs naming the axes that
      collectives in `fun` (`lax.psum(x, 'i')`, ...) refer to; the computation then
      runs as `prod(sizes)` replicas and the collectives become cross-replica ops.
    backend: optional platform name ('cpu', 'gpu') whose lowering rules are used.
    tuple_args: if True, the parameters are passed as one tuple parameter.
    instantiate_const_outputs: accepted for compatibility; every output, constant or
      not, is an output of the computation (as in JAX since 2020's "omnistaging").
    return_shape: if True, the built function returns `(computation, out_shape)`,
      `out_shape` a pytree of `ShapeDtypeStruct` like `fun`'s output.

  Returns:
    A function taking `fun`'s arguments (arrays, scalars or `ShapeDtypeStruct`s; only
    their shapes and dtypes matter) and returning an `XlaComputation`
    (`as_hlo_text()`, `as_serialized_hlo_module_proto()`, `as_hlo_dot_graph()`,
    `get_hlo_module()`, ...). Results are always a tuple in the HLO.

  >>> c = xla_computation(lambda x: jnp.sin(jnp.cos(x)))(3.)
  >>> print(c.as_hlo_text())  # doctest: +SKIP
  HloModule xla_computation__lambda_, entry_computation_layout={(f32[])->(f32[])}
  ENTRY main.1 {
    Arg_0.1 = f32[] parameter(0)
    cosine.1 = f32[] cosine(Arg_0.1)
    sine.1 = f32[] sine(cosine.1)
    ROOT tuple.1 = (f32[]) tuple(sine.1)
  }
  >>> c = xla_computation(lambda x: x - lax.psum(x, 'i'), axis_env=[('i', 4)])(2)
  """
  if not callable(fun):
    raise TypeError(f"xla_computation requires a callable argument, got {type(fun)}.")
  if isinstance(static_argnums, (int, np.integer)) and not isinstance(static_argnums, bool):
    static_argnums = (int(static_argnums),)
  try:
    static_argnums = tuple(operator.index(i) for i in static_argnums)
  except TypeError:
    raise TypeError(f"xla_computation static_argnums must be an int or a tuple of ints, got "
                    f"{static_argnums!r}.") from None
  env = _check_axis_env(axis_env)
  if backend is not None and not isinstance(backend, str):
    raise TypeError(f"xla_computation backend must be a platform name (str) or None, got "
                    f"{backend!r}.")
  for name, flag in (("tuple_args", tuple_args), ("return_shape", return_shape),
                     ("instantiate_const_outputs", instantiate_const_outputs)):
    if not isinstance(flag, (bool, np.bool_)):
      raise TypeError(f"xla_computation {name} must be a bool, got {flag!r}.")
  fun_name = util.fun_name(fun)
  platform = {"cuda": "gpu", "rocm": "gpu"}.get(backend, backend)

  def computation_maker(*args, **kwargs):
    nargs = len(args)
    for i in static_argnums:
      if not -nargs <= i < nargs:
        raise ValueError(f"xla_computation static_argnums {static_argnums} refers to argument "
                         f"{i}, but the function was called with {nargs} positional "
                         "arguments.")
    static = {i % nargs for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    in_avals = []
    for i, x in enumerate(leaves):
      try:
        in_avals.append(_abstractify(x))
      except TypeError:
        raise TypeError(f"xla_computation of {fun_name}: argument leaf {i} has type "
                        f"{type(x)}, which is not a valid JAX type.") from None
    out_store = []

    def flat_fun(*xs):
      dargs, kw = tree_util.tree_unflatten(in_tree, list(xs))
      it = iter(dargs)
      full = [args[i] if i in static else next(it) for i in range(nargs)]
      out = fun(*full, **kw)
      ol, ot = tree_util.tree_flatten(out)
      out_store[:] = [ot]
      return ol

    with contextlib.ExitStack() as stack:
      for axis, size in env or ():  # shape rules (all_gather's) read the axis sizes
        stack.enter_context(parallel.extend_axis_env(axis, size))
      jaxpr, consts = staging.trace_to_jaxpr(flat_fun, in_avals)
    if any(isinstance(c, Tracer) for c in consts):
      raise TypeError(f"xla_computation of {fun_name}: the function closes over a value "
                      "traced by an enclosing transformation; an XLA computation can only "
                      "close over concrete arrays.")
    text = _lower_to_stablehlo(jaxpr, consts, f"xla_computation_{fun_name}", platform, env)
    comp = XlaComputation(_backend.stablehlo_to_hlo(text, tuple_args=tuple_args), text)
    if return_shape:
      shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, weak_type=v.aval.weak_type)
                for v in jaxpr.outvars]
      return comp, tree_util.tree_unflatten(out_store[0], shapes)
    return comp

  computation_maker.__name__ = f"xla_computation({fun_name})"
  computation_maker.__doc__ = f"Builds the XLA computation of {fun_name}."
  return computation_maker


def _lower_to_stablehlo(jaxpr, consts, name, platform, axis_env):
  """A StableHLO module whose `main` takes the jaxpr's inputs; the constants it closes
  over are embedded as constants (not parameters, unlike a jit's)."""
  platform = platform or _backend.default_platform()
  num_replicas = math.prod(s for _, s in axis_env) if axis_env else 1
  mctx = lowering.ModuleContext(platform, name, axis_env, [], num_replicas)
  with _backend.make_ir_context(), ir.Location.unknown():
    in_types = [lowering.aval_to_ir_type(v.aval) for v in jaxpr.invars]
    out_types = [lowering.aval_to_ir_type(v.aval) for v in jaxpr.outvars]
    module = ir.Module.create()
    module.operation.attributes["sym_name"] = ir.StringAttr.get(lowering._sanitize(name))
    if num_replicas > 1:
      module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(
          ir.IntegerType.get_signless(32), num_replicas)
    with ir.InsertionPoint(module.body):
      fn = func_dialect.FuncOp("main", ir.FunctionType.get(in_types, out_types))
      fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
      entry = fn.add_entry_block()
      with ir.InsertionPoint(entry):
        const_vals = [lowering.ir_constant(np.asarray(c, v.aval.dtype))
                      for c, v in zip(consts, jaxpr.constvars)]
        outs = lowering.jaxpr_subcomp(mctx, jaxpr, const_vals, list(entry.arguments))
        func_dialect.return_(outs)
    return module.operation.get_asm(enable_debug_info=False)


# Collectives over the axes of an axis environment are lowered by their own rules
# (tracejax/_src/lax/parallel.py) from the module's axis env: the same mechanism that
# pmap's replicated programs use. `replica_groups` is re-exported for 2020-style callers.
replica_groups = parallel.replica_groups


# =============================================================================
# soft_pmap
# =============================================================================

def soft_pmap(fun, axis_name=None, in_axes=0):
  """Map `fun` over the leading axis of its arguments, whatever its size, spreading the
  members over the available devices; collectives over `axis_name` combine all members.

  An axis no larger than the number of devices is mapped directly (`pmap`, one
  member per device). A larger one must be a multiple of the number of devices;
  its members run as a vectorized map (`vmap` with the axis name), compiled once.
  With one device that is always the case.

  Args:
    fun: the function to map (pytrees in and out).
    axis_name: optional name for the mapped axis, for collectives (`lax.psum`, ...).
    in_axes: 0 or None per argument (or a pytree prefix of them): which arguments are
      mapped (over their leading axis) and which are broadcast.

  Returns:
    The mapped function; outputs have the mapped axis first.

  >>> soft_pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.arange(1., 5.))
  DeviceArray([0.1, 0.2, 0.3, 0.4], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"soft_pmap requires a callable argument, got {type(fun)}.")
  for leaf in tree_util.tree_leaves(in_axes):
    if leaf != 0 or isinstance(leaf, bool):
      raise ValueError(f"soft_pmap in_axes leaves must be 0 or None, got {in_axes}.")
  name = axis_name if axis_name is not None else _AnonymousAxis(fun)
  vmapped = {}  # number of arguments -> the compiled vmap (traced once per signature)

  @functools.wraps(fun)
  def soft_pmap_f(*args):
    from tracejax._src.api import device_count, vmap
    from tracejax._src.jit import jit
    from tracejax._src.pmap import pmap
    ax = (in_axes,) * len(args) if in_axes is None or isinstance(in_axes, int) else in_axes
    try:
      dims = tree_util.broadcast_prefix(tuple(ax), tuple(args), is_leaf=lambda x: x is None)
    except ValueError:
      raise ValueError(f"soft_pmap in_axes specification {in_axes} must be a tree prefix of "
                       f"the arguments' structure {tree_util.tree_structure(args)}.") from None
    sizes = set()
    for x, d in zip(tree_util.tree_leaves(args), dims):
      if d is None:
        continue
      shape = x.shape if isinstance(x, Tracer) else np.shape(x)
      if not shape:
        raise ValueError("soft_pmap was asked to map a scalar argument (in_axes 0 needs "
                         "at least one dimension).")
      sizes.add(shape[0])
    if len(sizes) != 1:
      raise ValueError("soft_pmap requires at least one mapped argument" if not sizes else
                       f"soft_pmap got inconsistent sizes for the mapped axis: "
                       f"{sorted(sizes)}")
    size = sizes.pop()
    ndev = device_count()
    if size <= ndev and ndev > 1:
      return pmap(fun, name, in_axes=in_axes)(*args)  # one member per device
    if size % ndev:
      raise ValueError(f"soft_pmap mapped axis size must be divisible by the number of XLA "
                       f"devices (or be less than or equal to that number), but got an axis "
                       f"size of {size} with {ndev} devices.")
    # Many members per device: collectives must combine the members of every device
    # at once, which a vmap over the whole axis does exactly.
    f = vmapped.get(len(args))
    if f is None:
      f = vmapped[len(args)] = jit(vmap(fun, in_axes=tuple(ax), axis_name=name))
    return f(*args)

  soft_pmap_f.__name__ = f"soft_pmap({util.fun_name(fun)}, axis_name={axis_name})"
  return soft_pmap_f


class _AnonymousAxis:
  """The axis name of a soft_pmap given none: unique, so no collective can name it."""

  def __init__(self, fun):
    self.fun_name = util.fun_name(fun)

  def __repr__(self):
    return f"<axis of soft_pmap({self.fun_name})>"
