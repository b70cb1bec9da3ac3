"""vmap: the batching trace. Each tracer carries a value and the axis that is mapped.

Rules have the form `rule(batched_args, batch_dims, **params) -> (out, out_dim)`
with `not_mapped` (None) for unbatched operands; they run with the parent as
the current trace. Family-wide rule factories (vectorized, broadcasting,
reducers) live beside the primitives, in `lax/utils.py`.
"""
import threading

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Trace, Tracer, set_current_trace, current_trace

primitive_batchers = {}  # prim -> rule(batched_args, batch_dims, **params) -> (out, out_dim)
not_mapped = None


class BatchTracer(Tracer):
  __slots__ = ("val", "batch_dim")

  def __init__(self, trace, val, batch_dim):
    self._trace, self.val, self.batch_dim = trace, val, batch_dim

  @property
  def aval(self):
    aval = _aval_of(self.val)
    if self.batch_dim is None:
      return aval
    shape = list(aval.shape)
    del shape[self.batch_dim]
    return avals_mod.ShapedArray(tuple(shape), aval.dtype, aval.weak_type)

  def to_concrete_value(self):
    return None


def _aval_of(x):
  return x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x)


class BatchTrace(Trace):
  """Interprets primitives on batched values of one mapped axis of size `axis_size`."""

  def __init__(self, parent, axis_size, axis_name=None):
    self.parent, self.axis_size, self.axis_name = parent, axis_size, axis_name
    self.level = parent.level + 1

  def to_batched(self, x):
    if isinstance(x, BatchTracer) and x._trace is self:
      return x.val, x.batch_dim
    return x, None

  def process_primitive(self, primitive, args, params):
    vals, dims = [], []
    for x in args:
      v, d = self.to_batched(x)
      vals.append(v)
      dims.append(d)
    with set_current_trace(self.parent):
      if all(d is None for d in dims) and primitive not in _needs_axis:
        return primitive.bind(*vals, **params)
      rule = primitive_batchers.get(primitive)
      if rule is None and primitive.call_primitive and "call_jaxpr" in params:
        out, out_dim = self.process_call(primitive, vals, dims, params)
      elif rule is None:
        raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
      elif primitive in _axis_rules:
        out, out_dim = rule(self, vals, dims, **params)
      elif self.axis_name is not None:
        # A rule that batches inner jaxprs (scan, cond, while...) batches them over
        # this named axis, so the collectives inside that name it are batched too.
        _rule_axis.names.append(self.axis_name)
        try:
          out, out_dim = rule(vals, dims, **params)
        finally:
          _rule_axis.names.pop()
      else:
        out, out_dim = rule(vals, dims, **params)
    if primitive.multiple_results:
      return [BatchTracer(self, o, d) if d is not None else o for o, d in zip(out, out_dim)]
    return BatchTracer(self, out, out_dim) if out_dim is not None else out

  def process_call(self, primitive, vals, dims, params):
    """jit under vmap: batch the called jaxpr, call it in the parent trace."""
    call_jaxpr = params["call_jaxpr"]
    new_jaxpr, consts, out_dims = batch_jaxpr(call_jaxpr, self.axis_size, dims, self.axis_name)
    from tracejax._src.interpreters.staging import closed_call_jaxpr
    cj, const_args = closed_call_jaxpr(new_jaxpr, consts)
    outs = primitive.bind(*const_args, *vals, **{**params, "call_jaxpr": cj})
    return outs, out_dims


class _RuleAxis(threading.local):
  def __init__(self):
    self.names = []   # the axis name of the named BatchTrace running a batching rule


_rule_axis = _RuleAxis()


def rule_axis_name(shadowed=()):
  """The name of the named vmap running the current batching rule (None if none), for a
  rule that batches a body binding names of its own (pmap's axis, shard_map's mesh
  axes): if one of those, `shadowed`, is the vmap's too, the body's binding wins, so
  the body is batched under a name no collective can use."""
  name = _rule_axis.names[-1] if _rule_axis.names else None
  return object() if name is not None and name in tuple(shadowed) else name
_needs_axis = set()   # primitives that must see the trace even when nothing is batched
_axis_rules = set()   # primitives whose batching rule takes the trace first (collectives)


def batch_jaxpr(jaxpr, axis_size, in_dims, axis_name=None, out_dims_wanted=None):
  """A jaxpr of batched inputs (`in_dims`) computing the batched outputs; returns
  (jaxpr, consts, out_dims). `axis_name` defaults to the name of the vmap whose
  batching rule asks (a scan/cond/while body under `vmap(..., axis_name=...)`)."""
  from tracejax._src.interpreters import staging
  if axis_name is None and _rule_axis.names:
    axis_name = _rule_axis.names[-1]
  in_avals = []
  for v, d in zip(jaxpr.invars, in_dims):
    a = v.aval
    if d is not None:
      shape = list(a.shape)
      shape.insert(d, axis_size)
      a = a.update(shape=tuple(shape))
    in_avals.append(a)
  out_dims = []

  def f(*args):
    trace = BatchTrace(current_trace(), axis_size, axis_name)
    ins = [BatchTracer(trace, x, d) if d is not None else x for x, d in zip(args, in_dims)]
    with set_current_trace(trace):
      outs = ir.eval_jaxpr(jaxpr, [], *ins)
    res = []
    for i, o in enumerate(outs):
      v, d = trace.to_batched(o)
      if out_dims_wanted is not None and out_dims_wanted[i] is not None:
        v = matchaxis(v, d, out_dims_wanted[i], axis_size)
        d = out_dims_wanted[i]
      res.append(v)
      out_dims.append(d)
    return res

  new_jaxpr, consts = staging.trace_to_jaxpr(f, in_avals)
  return new_jaxpr, consts, out_dims


def matchaxis(x, src, dst, axis_size):
  """Put `x`'s batch axis at `dst` (broadcasting an unbatched `x`)."""
  from tracejax._src.lax import utils as lax_utils
  if src == dst:
    return x
  if getattr(x, "dtype", None) == dtypes.float0:
    # float0 tangents (of integer outputs) hold no data and never reach XLA: build
    # the moved/broadcast zeros on the host, as JAX returns them.
    shape = list(np.shape(x))
    if src is not None:
      del shape[src]
    dst = dst if dst >= 0 else dst + len(shape) + 1
    shape.insert(dst, axis_size)
    return np.zeros(shape, dtypes.float0)
  if src is None:
    x = lax_utils.bdim_at_front(x, None, axis_size)
    src = 0
  return lax_utils.moveaxis(x, src, dst)


def vmap_flat(fun, axis_size, args, in_dims, out_dims_fn, axis_name=None, out_where=None):
  """Apply flat `fun` to `args` batched along `in_dims`; `out_dims_fn(n)` gives the wanted
  output axes (None: leave unbatched outputs unbatched). Inside a named vmap's batching
  rule (cond's branches under a batched predicate) `axis_name` defaults to its name.
  `out_where(i)` names output `i` in errors (its pytree path, e.g. "[1]")."""
  if axis_name is None and _rule_axis.names:
    axis_name = _rule_axis.names[-1]
  trace = BatchTrace(current_trace(), axis_size, axis_name)
  ins = [BatchTracer(trace, x, d) if d is not None else x for x, d in zip(args, in_dims)]
  with set_current_trace(trace):
    outs = fun(*ins)
  wanted = out_dims_fn(len(outs))
  res = []
  for o, w in zip(outs, wanted):
    v, d = trace.to_batched(o)
    if w is None:
      if d is not None:
        where = out_where(len(res)) if out_where is not None else ""
        raise ValueError(f"at vmap out_axes{where}, got axis spec None but output was "
                         f"batched on axis {d}")
      res.append(v)
    else:
      # The result has one more axis than an example's output; out_axes must index it
      # (JAX's message, checked before moving anything).
      rank = np.ndim(v) + (1 if d is None else 0)
      if not -rank <= w < rank:
        raise ValueError(f"axis {w} is out of bounds for array of dimension {rank}")
      res.append(matchaxis(v, d, w, axis_size))
  from tracejax._src.config import config
  if config.jax_check_tracer_leaks:
    from tracejax._src.interpreters.staging import check_trace_for_leaks
    ins = outs = o = v = None  # our own references are not leaks
    check_trace_for_leaks(trace)
  return res
