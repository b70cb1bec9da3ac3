"""`custom_vmap`: a function with a user-defined batching rule; `sequential_vmap`.

A call binds `custom_vmap_call_p` with the function traced to a jaxpr (`call`)
and the user's rule as parameters. Evaluation, lowering and staging use the
jaxpr; the batching rule calls the user's rule `rule(axis_size, in_batched,
*args) -> (out, out_batched)` on the arguments with their mapped axis first.
Differentiation goes through the function itself (JAX 0.10.2 cannot
reverse-differentiate a `custom_vmap` function at all; here both modes work,
and the batching rule applies to the undifferentiated function only).
"""
import functools

from tracejax._src import tree_util, util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching, lowering, staging


def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


custom_vmap_call_p = Primitive("custom_vmap_call")
custom_vmap_call_p.multiple_results = True


def _impl(*args, call, **_):
  return ir.eval_jaxpr(call.jaxpr, call.consts, *args)


custom_vmap_call_p.def_impl(_impl)
custom_vmap_call_p.def_abstract_eval(lambda *avals, call, **_: list(call.out_avals))


def _lowering(ctx, *args, call, **_):
  consts = [lowering.ir_constant(c) for c in call.consts]
  return lowering.jaxpr_subcomp(ctx.module_context, call.jaxpr, consts, args)


lowering.register_lowering(custom_vmap_call_p, _lowering)


def _jvp(primals, tangents, *, call, **_):
  # Differentiate the function itself (its batching rule describes its primal only).
  return ad.jvp_of_jaxpr(call.jaxpr, primals, tangents, call.consts)


ad.primitive_jvps[custom_vmap_call_p] = _jvp


def _batch(args, dims, *, call, rule, in_tree, out_tree, name):
  size = next(_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [batching.matchaxis(x, d, 0, size) if d is not None else x
          for x, d in zip(args, dims)]
  batched = [d is not None for d in dims]
  in_args = tree_util.tree_unflatten(in_tree, args)
  in_batched = list(tree_util.tree_unflatten(in_tree, batched))
  out, out_batched = rule(size, in_batched, *in_args)
  out_leaves, tree = tree_util.tree_flatten(out)
  if tree != out_tree:
    raise ValueError(f"structure of output returned by custom vmap rule ({name}) does not "
                     f"match that of the original custom-vmapped function ({name}).\n"
                     f"Original output: {out_tree}\nRule output: {tree}")
  ob_leaves, ob_tree = tree_util.tree_flatten(out_batched)
  if ob_tree != tree:
    raise ValueError("structure of output value and output batching specification returned "
                     f"by custom vmap rule ({name}) do not match.\nOutput values: {tree}\n"
                     f"Batching spec: {ob_tree}")
  res = []
  for i, (o, b, a) in enumerate(zip(out_leaves, ob_leaves, call.out_avals)):
    if not isinstance(b, bool):
      raise TypeError(f"custom vmap rule ({name}) must return booleans as its output "
                      f"batching specification, got {b!r}")
    want = ((size,) + tuple(a.shape)) if b else tuple(a.shape)
    if tuple(_aval(o).shape) != want:
      raise ValueError(f"custom vmap rule ({name}) output {i} has shape "
                       f"{tuple(_aval(o).shape)}, expected {want} (batched={b}).")
    res.append(o if b else batching.matchaxis(o, None, 0, size))
  return res, [0] * len(res)


batching.primitive_batchers[custom_vmap_call_p] = _batch


class custom_vmap:
  """A function whose `vmap` is given by a rule (`def_vmap`).

  Args:
    fun: the function (called with positional arguments).

  The rule is called as `rule(axis_size, in_batched, *args)`, where `in_batched` is
  a list (one entry per argument) of pytrees of bools telling which arguments are
  batched (their mapped axis is first), and returns `(out, out_batched)`.

  >>> @custom_vmap
  ... def f(x, y):
  ...   return x + y
  >>> @f.def_vmap
  ... def rule(axis_size, in_batched, xs, ys):
  ...   return xs * ys, True
  >>> vmap(f)(jnp.arange(3.), jnp.arange(3.))   # the rule's product, not a sum
  DeviceArray([0., 1., 4.], dtype=float32)
  """

  def __init__(self, fun):
    if not callable(fun):
      raise TypeError(f"custom_vmap expects a callable, got {fun!r}")
    self.fun = fun
    self.vmap_rule = None
    functools.update_wrapper(self, fun)

  def def_vmap(self, vmap_rule):
    """Set the batching rule `rule(axis_size, in_batched, *args) -> (out, out_batched)`;
    returns it (usable as a decorator)."""
    if not callable(vmap_rule):
      raise TypeError(f"def_vmap expects a callable, got {vmap_rule!r}")
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def __call__(self, *args, **kwargs):
    name = util.fun_name(self.fun)
    if kwargs:
      raise TypeError(f"custom_vmap function {name} takes positional arguments only")
    if self.vmap_rule is None:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                           "using def_vmap.")
    leaves, in_tree = tree_util.tree_flatten(args)
    store = []

    def flat(*xs):
      out = self.fun(*tree_util.tree_unflatten(in_tree, xs))
      out_leaves, tree = tree_util.tree_flatten(out)
      store.append(tree)
      return out_leaves

    jaxpr, consts = staging.trace_to_jaxpr(flat, [_aval(x) for x in leaves])
    out_tree = store[0]
    if any(isinstance(c, Tracer) for c in consts):
      # Closes over traced values: those must be operands, so the rule cannot see them
      # as constants. Inline the function (as if it had no custom rule).
      return tree_util.tree_unflatten(out_tree, ir.eval_jaxpr(jaxpr, consts, *leaves))
    closed = ir.ClosedJaxpr(jaxpr, consts)
    outs = custom_vmap_call_p.bind(*leaves, call=closed, rule=self.vmap_rule,
                                   in_tree=in_tree, out_tree=out_tree, name=name)
    return tree_util.tree_unflatten(out_tree, outs)


def sequential_vmap(f):
  """`f` as a `custom_vmap` whose batching rule loops over the batch with `lax.map`.

  Args:
    f: the function.

  Useful for functions that batch poorly (e.g. a host callback): `vmap` then runs
  one call per batch element in a compiled loop.

  >>> g = sequential_vmap(lambda x, y: jnp.sum(x) * y)
  >>> vmap(g, in_axes=(0, None))(jnp.ones((3, 2)), 2.)
  DeviceArray([4., 4., 4.], dtype=float32)
  """
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    from tracejax._src.control_flow.loops import map as lax_map
    leaves, tree = tree_util.tree_flatten(args)
    flags = tree_util.tree_leaves(in_batched)
    batched_leaves = [x for x, b in zip(leaves, flags) if b]

    def one(xs):
      it = iter(xs)
      full = [next(it) if b else x for x, b in zip(leaves, flags)]
      return f.fun(*tree_util.tree_unflatten(tree, full))

    out = lax_map(one, batched_leaves)
    return out, tree_util.tree_map(lambda _: True, out)

  return f
