"""`pmap`: map a function over a leading axis, one member per device, with named-axis
collectives.

Semantics are those of `vmap` with an `axis_name` (collectives in
`lax/parallel.py` run over the mapped axis); the staged form is the seeds'
`xla_pmap` call primitive. Execution: the members run as one batched XLA
program on the first device. (Placing members on separate devices as XLA
replicas is future work; results are the same.)
"""
import functools

import numpy as np

from tracejax._src import tree_util, util
from tracejax._src.core import ir
from tracejax._src.core.avals import ShapedArray, get_aval, raise_to_shaped
from tracejax._src.core.trace import Primitive, Tracer
from tracejax._src.interpreters import ad, batching, staging
from tracejax._src.runtime import backend

xla_pmap_p = Primitive("xla_pmap")
xla_pmap_p.multiple_results = True


def _as_vmap(call_jaxpr, axis_name, axis_size, mapped_invars):
  """The function a pmap equation computes, as a named-axis vmap of its body."""
  from tracejax._src import api
  in_axes = tuple(0 if m else None for m in mapped_invars)
  return api.vmap(lambda *args: ir.eval_jaxpr(call_jaxpr, [], *args), in_axes=in_axes,
                  axis_name=axis_name, axis_size=axis_size)


_compiled = {}


def _xla_pmap_impl(*args, call_jaxpr, axis_name, axis_size, mapped_invars, **_):
  from tracejax._src.jit import jit
  key = (id(call_jaxpr), axis_name, axis_size, mapped_invars)
  entry = _compiled.get(key)
  if entry is None or entry[0] is not call_jaxpr:
    entry = _compiled[key] = (call_jaxpr, jit(_as_vmap(call_jaxpr, axis_name, axis_size,
                                                       mapped_invars)))
  return entry[1](*args)


xla_pmap_p.def_impl(_xla_pmap_impl)


def _xla_pmap_abstract_eval(*avals, call_jaxpr, axis_size, **_):
  return [a.update(shape=(axis_size,) + a.shape) for a in call_jaxpr.out_avals]


xla_pmap_p.def_abstract_eval(_xla_pmap_abstract_eval)


def _xla_pmap_jvp(primals, tangents, *, call_jaxpr, axis_name, axis_size, mapped_invars, **_):
  from tracejax._src import api
  f = _as_vmap(call_jaxpr, axis_name, axis_size, mapped_invars)
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  return api.jvp(lambda *a: f(*a), tuple(primals), tuple(tangents))


ad.primitive_jvps[xla_pmap_p] = _xla_pmap_jvp


def _xla_pmap_batch(args, dims, *, call_jaxpr, axis_name, axis_size, mapped_invars, **_):
  from tracejax._src import api
  f = _as_vmap(call_jaxpr, axis_name, axis_size, mapped_invars)
  outs = api.vmap(lambda *a: f(*a), in_axes=tuple(dims))(*args)
  return outs, [0] * len(outs)


batching.primitive_batchers[xla_pmap_p] = _xla_pmap_batch


def _xla_pmap_lowering(ctx, *args, call_jaxpr, axis_name, axis_size, mapped_invars, **_):
  from tracejax._src.interpreters import lowering
  rule = lowering.lower_fun(lambda *a: _as_vmap(call_jaxpr, axis_name, axis_size,
                                                mapped_invars)(*a), multiple_results=True)
  return rule(ctx, *args)


def _register_lowering():
  from tracejax._src.interpreters import lowering
  lowering.register_lowering(xla_pmap_p, _xla_pmap_lowering)


_register_lowering()


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(), global_arg_shapes=None):
  """Map `fun` over the leading axis of its arguments, one member per device; collectives
  (`lax.psum(x, axis_name)`, ...) combine the members.

  >>> pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.ones(1))
  """
  if isinstance(static_broadcasted_argnums, int):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  static = tuple(static_broadcasted_argnums)

  @functools.wraps(fun)
  def pmap_f(*args, **kwargs):
    dyn_idx = [i for i in range(len(args)) if i not in static]
    dyn = [args[i] for i in dyn_idx]
    ax = in_axes
    if isinstance(ax, (list, tuple)) and len(static) and len(ax) == len(args):
      ax = tuple(ax[i] for i in dyn_idx)
    if isinstance(ax, int) or ax is None:
      ax = (ax,) * len(dyn)
    dims = tree_util.broadcast_prefix(tuple(ax), tuple(dyn), is_leaf=lambda x: x is None)
    leaves, in_tree = tree_util.tree_flatten(tuple(dyn))
    from tracejax._src.lax import utils as lax_utils
    moved, sizes = [], set()
    for x, d in zip(leaves, dims):
      if d is None:
        moved.append(x)
        continue
      shape = x.shape if isinstance(x, Tracer) else np.shape(x)
      sizes.add(shape[d])
      moved.append(lax_utils.moveaxis(x, d, 0) if d != 0 else x)
    if axis_size is not None:
      n = axis_size
    elif len(sizes) == 1:
      n = sizes.pop()
    else:
      raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: {sorted(sizes)}"
                       if sizes else "pmap requires at least one mapped argument")
    ndev = len(devices) if devices is not None else len(backend_devices(backend))
    if n > ndev:
      raise ValueError(
          f"compiling computation that requires {n} logical devices, but only {ndev} XLA "
          f"devices are available (num_replicas={n}, num_partitions=1)")
    mapped = tuple(d is not None for d in dims)
    per_avals = [raise_to_shaped(_aval(x)).update(shape=_aval(x).shape[1:]) if m
                 else raise_to_shaped(_aval(x)) for x, m in zip(moved, mapped)]
    store = []

    def flat(*xs):
      dargs = tree_util.tree_unflatten(in_tree, xs)
      it = iter(dargs)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      out = fun(*full, **kwargs)
      ol, ot = tree_util.tree_flatten(out)
      store.append(ot)
      return ol

    from tracejax._src.core.trace import current_trace
    name = axis_name if axis_name is not None else object()
    jaxpr, consts = _trace_with_axis(flat, per_avals, name, n)
    call_jaxpr, const_args = staging.closed_call_jaxpr(jaxpr, consts)
    outs = xla_pmap_p.bind(*const_args, *moved, call_jaxpr=call_jaxpr, axis_name=name,
                           axis_size=n, backend=backend, devices=devices,
                           global_axis_size=None,
                           mapped_invars=(False,) * len(const_args) + mapped,
                           name=util.fun_name(fun))
    _ = current_trace
    out_tree = store[0]
    if out_axes not in (0, None) or isinstance(out_axes, tuple):
      od = tree_util.broadcast_prefix(out_axes, tree_util.tree_unflatten(out_tree, outs))
      outs = [lax_utils.moveaxis(o, 0, d) if d else o for o, d in zip(outs, od)]
    return tree_util.tree_unflatten(out_tree, outs)

  return pmap_f


def _aval(x):
  return x.aval if isinstance(x, Tracer) else get_aval(x)


def backend_devices(name):
  return backend.devices(name) if name else backend.devices()


def _trace_with_axis(flat, per_avals, name, n):
  """Trace the per-member function; collectives stage as equations of the body."""
  return staging.trace_to_jaxpr(flat, per_avals)


_ = (ShapedArray,)
