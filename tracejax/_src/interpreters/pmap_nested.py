"""Nested pmap as one replicated XLA program over a grid of devices.

`pmap(pmap(f, 'j'), 'i')` on an array of shape (n, k, ...) runs on n*k devices laid out
as an (n, k) grid, replica `a*k + b` on grid position (a, b), as JAX's pmap did: the
outer body's `xla_pmap` equation does not become a loop (or a vmap) on the outer
member's device; each of the k devices of an outer member runs one inner member.
Collectives over 'i', 'j' and ('i', 'j') become cross-replica ops whose replica groups
come from the module's axis env `(('i', n), ('j', k))` (lax/parallel.py
`replica_groups`), so a psum over 'j' combines the k devices of one outer member, one
over 'i' the n devices of one inner position.

The per-device program is built by evaluating the outer body with an interpreter
(`eval_body`) that tracks, for each value, whether a device holds all of it (the outer
member's value, computed redundantly by its k devices) or only its own *row* (index b
of the leading axis, what an inner pmap produces):

* an inner `xla_pmap` takes its mapped operands as rows (a full value is sliced at
  `axis_index('j')`) and runs its body inline; its results are rows;
* any other equation needs full values: a row becomes full with an `all_gather` over
  'j' (once per value);
* outer-body inputs used only as mapped operands of inner pmaps arrive as rows, and
  outer-body results that are rows leave as rows, so `pmap(pmap(f))(x)` moves each
  device its own (1, 1, ...) block in and out, with no gather. The global Arrays are
  laid out by NamedShardings over the grid's Mesh: `P(i, j)` for rows, `P(i)` (the same
  block on the k devices of an outer member) for full values.

Deeper nesting (`pmap(pmap(pmap(...)))`) recurses: each level's body is evaluated the
same way one level down, and rows of a deeper level are gathered at its end.
Inner pmaps at one depth must map over the same axis (name and size); an inner pmap
hidden inside another higher-order primitive (cond, scan, ...) keeps the single-device
lowering of pxla.py (a named-axis vmap).
"""
import contextlib
import math

import numpy as np

from tracejax._src.core import ir
from tracejax._src.core.trace import bind
from tracejax._src.interpreters import staging
from tracejax._src.lax import parallel


# ---- which pmaps are nested, level by level ----

def _call_jaxpr(eqn):
  """The body of a call primitive (jit's `xla_call`), through which nested pmaps are
  found and inlined; None for every other equation."""
  if getattr(eqn.primitive, "call_primitive", False):
    j = eqn.params.get("call_jaxpr")
    if isinstance(j, ir.Jaxpr) and not j.constvars:
      return j
  return None


def contains_pmap(jaxpr, pmap_p):
  """Whether `jaxpr` binds `pmap_p` at its top level or inside call primitives."""
  for eqn in jaxpr.eqns:
    if eqn.primitive is pmap_p:
      return True
    inner = _call_jaxpr(eqn)
    if inner is not None and contains_pmap(inner, pmap_p):
      return True
  return False


def inner_axes(jaxpr, pmap_p):
  """The axes `[(name, size), ...]` of the pmaps nested in the pmap body `jaxpr`,
  outermost first ([] when there are none).

  Raises ValueError for nested pmaps this program layout cannot hold: two at the same
  depth over different axes, one given `devices=`, one spanning several processes."""
  levels = []
  for eqn in jaxpr.eqns:
    if eqn.primitive is pmap_p:
      p = eqn.params
      if p.get("devices") is not None:
        raise ValueError("Nested pmap with explicit devices argument: give `devices` to "
                         "neither the inner nor the outer pmap")
      if p.get("global_axis_size"):
        raise ValueError("a nested pmap cannot span several processes (jax.distributed)")
      found = [(p["axis_name"], p["axis_size"])] + inner_axes(p["call_jaxpr"], pmap_p)
    else:
      inner = _call_jaxpr(eqn)
      if inner is None:
        continue
      found = inner_axes(inner, pmap_p)
    for a, b in zip(levels, found):
      if a != b:
        raise ValueError(
            f"pmaps nested in one pmap body must map over the same axis at each depth, "
            f"got axis {a[0]!r} of size {a[1]} and axis {b[0]!r} of size {b[1]}")
    if len(found) > len(levels):
      levels = found
  return levels


# ---- the per-device program ----

def eval_body(jaxpr, args, rows_in, levels, pmap_p, keep_rows):
  """Bind the equations of pmap body `jaxpr` (under the current trace) as one device of
  a program whose nested pmaps map over `levels` runs them.

  Args:
    jaxpr: the body (no constvars).
    args: one value per invar: the full value, or (where `rows_in`) this device's row
      along the leading axis of the first of `levels`.
    rows_in: a flag per argument.
    levels: `[(name, size), ...]` of the nested pmaps, outermost first.
    pmap_p: the `xla_pmap` primitive.
    keep_rows: return results that are rows as rows (else gathered to full values).

  Returns:
    (outputs, flags): one value per outvar, and whether it is a row.
  """
  if not levels:
    return ir.eval_jaxpr(jaxpr, [], *args), [False] * len(jaxpr.outvars)
  from tracejax._src.lax import slicing
  name, _ = levels[0]
  env, rows, gathered = {}, {}, {}

  def is_row(v):
    return type(v) is not ir.Literal and v in rows

  def full(v):
    if type(v) is ir.Literal:
      return v.val
    if v in env:
      return env[v]
    g = gathered.get(v)
    if g is None:   # every device needs the whole value: gather the rows over `name`
      g = gathered[v] = parallel.all_gather(rows[v], name)
    return g

  def row(v):
    if is_row(v):
      return rows[v]
    return slicing.dynamic_index_in_dim(full(v), parallel.axis_index(name), 0,
                                        keepdims=False)

  for v, x, r in zip(jaxpr.invars, args, rows_in):
    (rows if r else env)[v] = x
  for eqn in jaxpr.eqns:
    inner = _call_jaxpr(eqn)
    if eqn.primitive is pmap_p:
      p = eqn.params
      ins = [row(v) if m else full(v) for v, m in zip(eqn.invars, p["mapped_invars"])]
      outs, _ = eval_body(p["call_jaxpr"], ins, [False] * len(ins), levels[1:], pmap_p,
                          keep_rows=False)
      flags = [True] * len(outs)
    elif inner is not None and contains_pmap(inner, pmap_p):
      flags_in = [is_row(v) for v in eqn.invars]
      ins = [rows[v] if f else full(v) for v, f in zip(eqn.invars, flags_in)]
      outs, flags = eval_body(inner, ins, flags_in, levels, pmap_p, keep_rows=True)
    else:
      outs = bind(eqn.primitive, *[full(v) for v in eqn.invars], **eqn.params)
      if not eqn.primitive.multiple_results:
        outs = (outs,)
      flags = [False] * len(eqn.outvars)
    for v, o, f in zip(eqn.outvars, outs, flags):
      if type(v) is not ir.DropVar:
        (rows if f else env)[v] = o
  res, res_rows = [], []
  for v in jaxpr.outvars:
    if keep_rows and is_row(v):
      res.append(rows[v])
      res_rows.append(True)
    else:
      res.append(full(v))
      res_rows.append(False)
  return res, res_rows


def _feeds_only_pmaps(jaxpr, var, pmap_p):
  """Whether `var` is used only as a mapped operand of `pmap_p` equations (so each
  device needs only its own row of it)."""
  if var in jaxpr.outvars:
    return False
  used = False
  for eqn in jaxpr.eqns:
    for k, v in enumerate(eqn.invars):
      if v is not var:
        continue
      if eqn.primitive is not pmap_p or not eqn.params["mapped_invars"][k]:
        return False
      used = True
  return used


def block_jaxpr(call_jaxpr, mapped, outer, levels, pmap_p):
  """The program each device runs for an outer pmap over `outer = (name, size)` whose
  body `call_jaxpr` holds pmaps over `levels`.

  Returns (jaxpr, consts, rows_in, rows_out): a mapped input arrives as a block of
  shape (1, 1, *rest) where `rows_in` (its row) and (1, *member shape) otherwise, an
  unmapped one whole; an output leaves as (1, 1, *rest) where `rows_out`, else as
  (1, *member shape).
  """
  from tracejax._src.lax import structural
  avals = [v.aval for v in call_jaxpr.invars]
  rows_in = [bool(m) and _feeds_only_pmaps(call_jaxpr, v, pmap_p)
             for v, m in zip(call_jaxpr.invars, mapped)]
  in_avals = [a.update(shape=(1, 1) + tuple(a.shape[1:])) if r else
              a.update(shape=(1,) + tuple(a.shape)) if m else a
              for a, m, r in zip(avals, mapped, rows_in)]
  out_shapes = [tuple(v.aval.shape) for v in call_jaxpr.outvars]
  rows_out = []

  def per_device(*xs):
    args = [structural.reshape(x, tuple(a.shape[1:])) if r else
            structural.reshape(x, tuple(a.shape)) if m else x
            for x, a, m, r in zip(xs, avals, mapped, rows_in)]
    outs, flags = eval_body(call_jaxpr, args, rows_in, levels, pmap_p, keep_rows=True)
    rows_out[:] = flags
    return [structural.reshape(o, (1, 1) + s[1:]) if f else structural.reshape(o, (1,) + s)
            for o, f, s in zip(outs, flags, out_shapes)]

  # Every level's axis is bound while the program is traced: the shape rules of the
  # gathers and of the inner bodies' collectives read the sizes.
  with contextlib.ExitStack() as stack:
    for name, size in [outer] + list(levels):
      stack.enter_context(parallel.extend_axis_env(name, size))
    jaxpr, consts = staging.trace_to_jaxpr(per_device, in_avals)
  return jaxpr, consts, rows_in, rows_out


# ---- the global layout ----

def mesh_axis_names(names):
  """Mesh axis names (distinct strings) for pmap axis names: the name itself when it is
  a string, else `_internal_pmap_axis_name` (JAX's name for a pmap given none)."""
  out = []
  for k, n in enumerate(names):
    m = n if isinstance(n, str) else "_internal_pmap_axis_name"
    while m in out:
      m = f"{m}_{k}"
    out.append(m)
  return tuple(out)


def grid_mesh(devices, axes):
  """The Mesh of the program's devices as a grid, one axis per pmap level: replica r
  (on `devices[r]`) sits at the row-major position r."""
  from tracejax._src.runtime import sharding as sharding_mod
  sizes = tuple(s for _, s in axes)
  if math.prod(sizes) != len(devices):
    raise ValueError(f"{len(devices)} devices cannot form a grid of shape {sizes}")
  grid = np.array(devices, dtype=object).reshape(sizes)
  return sharding_mod.Mesh(grid, mesh_axis_names([n for n, _ in axes]))


def layouts(mesh, mapped, rows_in, rows_out):
  """(input shardings, output shardings, the replicated sharding) over `mesh` of a
  nested pmap's program: rows split over the first two mesh axes, full mapped values
  over the first (the same block on every device of an outer member), unmapped inputs
  (and the program's constants) replicated."""
  from tracejax._src.runtime import sharding as sharding_mod
  P = sharding_mod.PartitionSpec
  a, b = mesh.axis_names[0], mesh.axis_names[1]
  by_kind = {"row": sharding_mod.NamedSharding(mesh, P(a, b)),
             "full": sharding_mod.NamedSharding(mesh, P(a)),
             "rep": sharding_mod.NamedSharding(mesh, P())}
  ins = [by_kind["row" if r else "full" if m else "rep"] for m, r in zip(mapped, rows_in)]
  outs = [by_kind["row" if r else "full"] for r in rows_out]
  return ins, outs, by_kind["rep"]
