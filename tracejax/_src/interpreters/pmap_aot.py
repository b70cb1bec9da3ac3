"""What pmap adds around its compiled programs (interpreters/pxla.py): the
ahead-of-time stages of a pmapped function (`.lower()`, `.trace()`, `.eval_shape()`:
the pmap as the one SPMD program `jit` makes of it, as JAX 0.10.2 lowers a pmap),
donation of its arguments, and the transpose of a mapped body (used by pmap's and
shard_map's transpose rules).
"""
from tracejax._src import tree_util
from tracejax._src.core import ir
from tracejax._src.interpreters import ad, staging
from tracejax._src.runtime.array import Array


def as_jit(pf):
  """The `Jitted` of pmapped function `pf` (made once): its stages are pf's."""
  from tracejax._src import jit as jit_mod
  j = pf.__dict__.get("_jit")
  if j is None:
    j = pf.__dict__["_jit"] = jit_mod.Jitted(pf, tuple(pf.static), ())
  return j


def delete_donated(donate_argnums, args, static, out):
  """As JAX: the Arrays passed in donated positions are invalid after the call (their
  buffers are freed once the program has read them; outputs are fresh buffers, so an
  output is never the donated input itself, which is kept if it is)."""
  keep = {id(o) for o in tree_util.tree_leaves(out)}
  for i in donate_argnums:
    if 0 <= i < len(args) and i not in static:
      for x in tree_util.tree_leaves(args[i]):
        if type(x) is Array and id(x) not in keep and not x.is_deleted():
          x.delete()


def transpose_body(call_jaxpr, linear):
  """A mapped body's transpose: a jaxpr of (non-linear inputs, output cotangents) ->
  cotangents of the `linear` inputs (zeros instantiated), with its constants.

  The body (a pmap's or shard_map's JVP body: primal and tangent computations
  together) is first split by partial evaluation, so that a loop carrying both (a scan
  with a psum inside) becomes a known loop, run forward, and a linear one, transposed.
  """
  from tracejax._src.interpreters import partial_eval as pe
  nonlin = [v.aval for v, l in zip(call_jaxpr.invars, linear) if not l]
  out_avals = [v.aval for v in call_jaxpr.outvars]

  def f(*args):
    known, cts = iter(args[:len(nonlin)]), args[len(nonlin):]
    pvals = [pe.PartialVal.unknown(v.aval) if l else pe.PartialVal.known(next(known))
             for v, l in zip(call_jaxpr.invars, linear)]
    lin, _, res = pe.trace_to_jaxpr(lambda *xs: ir.eval_jaxpr(call_jaxpr, [], *xs), pvals,
                                    instantiate=True)
    cts_in = ad.backward_pass(lin, list(res), list(cts))
    return [ad.instantiate_zeros(c) if type(c) is ad.Zero else c for c in cts_in]

  return staging.trace_to_jaxpr(f, nonlin + out_avals)
