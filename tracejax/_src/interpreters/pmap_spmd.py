"""pmap inside another program (jit of pmap, a pmap under grad-of-jit, scan or cond) as
part of ONE multi-device SPMD program, as JAX 0.10.2 does.

A traced `pmap` is an `xla_pmap` equation of an outer jaxpr. When that jaxpr is compiled
as an SPMD program over the pmap's devices (`mhlo.num_partitions` = the device count;
interpreters/pxla.py `staged_mesh` asks for one), the equation lowers to XLA's manual
partitioning, the same mechanism as `shard_map` (tracejax/_src/shard_map.py):

* each operand goes through a `Sharding` custom call (its layout over the devices: a
  mapped operand split along axis 0, one member per device; an unmapped one
  replicated), then `SPMDFullToShardShape` to its per-device block;
* the per-device body (the pmap body on a (1, *member shape) block, reshaped around it,
  or pmap_nested.py's per-device program for a nested pmap) is lowered, as a private
  function of the module that the program calls, with the pmap's axes as the axis env
  and `spmd_manual` set, so its collectives become cross-partition ops
  (lax/parallel.py) and `axis_index` reads the partition id;
* each result goes back through `SPMDShardToFullShape`, split along axis 0.

Partition p of the program runs on the p-th device of the pmap (its mesh's device
order), so member p of the pmap is partition p. shard_map's lowering inside an SPMD
program is `manual_computation` too, with its mesh axes and specs. This module also owns the thread-local
lowering state (`lowering_partitions`, `program_devices`) that tells lowering rules
whether they are inside such a program, and over which devices.
"""
import contextlib
import dataclasses
import threading

import numpy as np

from tracejax._src.interpreters import lowering
from tracejax._src.runtime import backend as xb
from tracejax._src.runtime import sharding as sharding_mod


class _SpmdState(threading.local):
  def __init__(self):
    self.partitions = 0   # while lowering an SPMD module: its partition count
    self.devices = None   # ... and its devices, partition i on devices[i]
    self.mesh = None      # ... and the mesh its shardings refer to (None: none)


_spmd_state = _SpmdState()


def lowering_partitions():
  """The partition count of the SPMD module being lowered (0 outside one): sharding
  constraints, shard_map and pmap lower to partitioner ops only inside one."""
  return _spmd_state.partitions


def program_devices():
  """The devices of the SPMD module being lowered (None outside one, and inside a
  manual computation's body, where nothing may be partitioned again)."""
  return _spmd_state.devices if _spmd_state.partitions else None


@contextlib.contextmanager
def spmd_lowering(n, devices=None, mesh=None):
  """Lower, within the block, as part of an SPMD module of `n` partitions over `devices`
  (n = 0: not partitioned, as inside a manual computation's body) whose shardings refer
  to `mesh` (read by `jax.debug.inspect_array_sharding`)."""
  st = _spmd_state
  prev = st.partitions, st.devices, st.mesh
  st.partitions, st.devices, st.mesh = n, (tuple(devices) if devices else None), mesh
  try:
    yield
  finally:
    st.partitions, st.devices, st.mesh = prev


def named(mesh, replicated=False):
  """The NamedSharding over a pmap's `mesh` of its mapped values (axis 0 split over the
  mesh's first axis, as JAX lays out a pmap's results), or of its replicated ones."""
  spec = sharding_mod.PartitionSpec() if replicated else \
      sharding_mod.PartitionSpec(mesh.axis_names[0])
  return sharding_mod.NamedSharding(mesh, spec)


def physical_ndim(aval):
  """The rank XLA sees for a value of `aval`: a key array's data has trailing axes."""
  if not isinstance(aval.dtype, np.dtype):
    aval = aval.dtype.physical_aval(aval)
  return len(aval.shape)


def sharding_custom_call(x, out_type, hlo_text, target="Sharding"):
  """A custom call XLA's SPMD partitioner reads: `Sharding` (a layout annotation), or
  `SPMDFullToShardShape`/`SPMDShardToFullShape` (into and out of manual code)."""
  op = lowering.hlo.CustomCallOp([out_type], [x], target)
  op.attributes["mhlo.sharding"] = lowering.ir.StringAttr.get(hlo_text)
  return op.results[0]


def manual_computation(ctx, args, body, consts, axis_env, in_shardings, out_shardings):
  """Emit `body` (a jaxpr over per-device blocks) as manual code inside the SPMD program
  being lowered.

  Args:
    ctx: the lowering rule's context (`avals_in`/`avals_out`: the global values).
    args: the global operands (ir.Values).
    body: the per-device jaxpr: one invar per operand, of its block's shape; one outvar
      per result.
    consts: values for `body`'s constvars (host arrays).
    axis_env: `((axis_name, size), ...)`: the named axes the body's collectives see,
      row-major over the partitions.
    in_shardings, out_shardings: a Sharding per operand and per result (their layout
      over the program's devices).

  Returns:
    The global results (ir.Values).
  """
  manual = str(xb.xc.HloSharding.manual())
  blocks = []
  for x, a, v, s in zip(args, ctx.avals_in, body.invars, in_shardings):
    full = str(s._to_xla_hlo_sharding(physical_ndim(a)))
    y = sharding_custom_call(x, lowering.aval_to_ir_type(a), full)
    blocks.append(sharding_custom_call(y, lowering.aval_to_ir_type(v.aval), manual,
                                       "SPMDFullToShardShape"))
  outs = _call_body(ctx.module_context, body, consts, axis_env, blocks)
  res = []
  for o, v, a, s in zip(outs, body.outvars, ctx.avals_out, out_shardings):
    y = sharding_custom_call(o, lowering.aval_to_ir_type(v.aval), manual)
    full = str(s._to_xla_hlo_sharding(physical_ndim(a)))
    res.append(sharding_custom_call(y, lowering.aval_to_ir_type(a), full,
                                    "SPMDShardToFullShape"))
  return res


def _call_body(outer, body, consts, axis_env, blocks):
  """Lower the manual `body` as a private function of the module and call it (as JAX
  does): inlined into the caller, XLA would merge its constants (a reduction's zero,
  say) with the caller's, and its sharding propagation would then carry the body's
  `{manual}` layout onto the caller's operations and fail."""
  ir = lowering.ir
  mctx = dataclasses.replace(outer, axis_env=tuple(axis_env))
  mctx.spmd_manual = True   # collectives become cross-partition ops (lax/parallel.py)
  count = outer.__dict__.get("_manual_bodies", 0)
  outer._manual_bodies = count + 1
  sym = "shmap_body" if count == 0 else f"shmap_body_{count}"
  in_types = [lowering.aval_to_ir_type(v.aval) for v in body.invars]
  out_types = [lowering.aval_to_ir_type(v.aval) for v in body.outvars]
  op = ir.InsertionPoint.current.block.owner
  while op is not None and op.name != "builtin.module":
    op = op.parent
  with ir.InsertionPoint(op.regions[0].blocks[0]):
    fn = lowering.func_dialect.FuncOp(sym, ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    entry = fn.add_entry_block()
    with ir.InsertionPoint(entry), spmd_lowering(0, mesh=_spmd_state.mesh):  # not partitioned again
      const_vals = [lowering.ir_constant(np.asarray(c)) for c in consts]
      outs = lowering.jaxpr_subcomp(mctx, body, const_vals, list(entry.arguments))
      lowering.func_dialect.return_(outs)
  call = lowering.func_dialect.CallOp(out_types, ir.FlatSymbolRefAttr.get(sym), blocks)
  return list(call.results)
