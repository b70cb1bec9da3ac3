"""pmap: a function mapped over a leading axis, one member per device, as ONE replicated
XLA program (`num_replicas` = the axis size, replica i on device i).

The staged form is the `xla_pmap` primitive, whose `call_jaxpr` is the per-member body
(collectives over `axis_name` inside). Its rules:

* impl: lower the body with the axis env `((axis_name, size),)`, compile it once per
  signature as a replicated program (this module owns the replica count and the
  device assignment), split the mapped arguments over the devices and run it; the
  outputs are Arrays whose shards stay on their devices, laid out (as in JAX 0.10.2)
  by a NamedSharding over a 1-d mesh of the devices named after the pmap's axis, and a
  second pmap over the same devices consumes them without a copy;
* jvp: a primal pmap and a tangent pmap of the body's JVP; transpose: a pmap of the
  body's transpose (so psum's transpose, psum, runs across the devices, as in JAX);
  batching (vmap of pmap): the vmapped axis moves inside the per-member body;
* nested pmaps (`pmap(pmap(f, 'j'), 'i')`, also through a jit in the outer body): the
  outer pmap's program spans a grid of outer x inner devices, one inner member per
  device, with replica groups per axis (pmap_nested.py); its results are laid out by
  NamedShardings over that grid;
* lowering inside another program (jit of pmap; a pmap under grad-of-jit, scan or cond
  in a jit): jit compiles that program as ONE SPMD program over the pmap's devices
  (`staged_mesh` gives their mesh, `mhlo.num_partitions` = their count) and the pmap
  lowers to XLA manual code, one member per partition (pmap_spmd.py), as in JAX 0.10.2;
  a pmap hidden in a cond/scan of a pmap body is JAX 0.10.2's error (pmap_errors.py); in
  a program over other devices, the body runs as a named-axis vmap on its device(s).

`pmap(f)` keeps a per-signature cache of compiled programs: a repeated call flattens
its arguments, finds the entry and runs it, without tracing.

SPMD programs (the second half of this module): `compile_spmd` lowers a jaxpr with
`mhlo.sharding` attributes on its arguments and results and `num_partitions` = the
mesh size, and XLA's partitioner splits it (partition i on the mesh's i-th device);
`call_spmd` is jit's path for `in_shardings`/`out_shardings` and for arguments laid
out over several devices (cached calls then run in jaxlib's C++ dispatcher),
`apply_spmd` runs an eager primitive on such arguments (a pmap's result too: its
PmapSharding joins as the NamedSharding `spmd_view` gives it, without a copy, and the
results are NamedShardings over its devices, as in JAX 0.10.2), `stage_spmd` and
`lower_spmd`/`compile_lowered_spmd` are the same programs for `jit(f).lower()` and
`.compile()` (stages.py), and `sharding_constraint_p` is
`lax.with_sharding_constraint`. `shard_map` (tracejax/_src/shard_map.py) lowers to
XLA's manual partitioning inside these programs.
"""
import functools
import math
import operator

import numpy as np

from tracejax._src import traceback_util, tree_util, util
from tracejax._src.config import config
from tracejax._src.core import ir
from tracejax._src.core.avals import get_aval, raise_to_shaped
from tracejax._src.core.trace import Primitive, Tracer, eval_trace
from tracejax._src.core.trace import _ctx as _trace_ctx
from tracejax._src.interpreters import ad, batching, lowering, pmap_aot, pmap_nested, pmap_spmd
from tracejax._src.interpreters import staging
from tracejax._src.lax import parallel
from tracejax._src.runtime import backend as xb
from tracejax._src.runtime import sharding as sharding_mod
from tracejax._src.runtime.array import Array

xla_pmap_p = Primitive("xla_pmap")
xla_pmap_p.multiple_results = True
xla_pmap_p.map_primitive = True


# ---- devices ----

def _pmap_devices(n, devices, backend_name):
  """The devices of a pmap over `n` members (errors as JAX words them)."""
  if n < 1:
    raise ValueError(f"pmap needs a mapped axis of size at least 1, got {n}")
  if devices is not None:
    devices = tuple(devices)
    if len(devices) != n:
      raise ValueError(f"Leading axis size of input to pmapped function must equal the "
                       f"number of local devices passed to pmap. Got axis_size={n}, "
                       f"num_local_devices={len(devices)}.")
    return devices
  available = xb.local_devices(backend_name) if backend_name else xb.local_devices()
  everywhere = xb.devices(backend_name) if backend_name else xb.devices()
  if len(everywhere) > len(available):
    return _multiprocess_devices(n, available, everywhere)
  if n > len(available):
    raise ValueError(
        f"compiling computation that requires {n} logical devices, but only "
        f"{len(available)} XLA devices are available (num_replicas={n}, "
        "num_partitions=1)")
  # The first n local devices, in order: as in JAX, `jax.default_device` does not move
  # a pmap (it places single-device computations).
  return tuple(available[:n])


def _multiprocess_devices(n, local, everywhere):
  """Several processes (`jax.distributed`): each passes `n` members (its local slice) and
  the program spans the first `n` devices of every process, process by process, so that
  each process's members are a contiguous block of the global axis."""
  if n > len(local):
    raise ValueError(
        f"pmap over {n} members per process needs {n} local devices, but this process "
        f"has {len(local)} (with several processes each passes its local slice)")
  by_process = {}
  for d in everywhere:
    by_process.setdefault(d.process_index, []).append(d)
  out = []
  for p in sorted(by_process):
    if len(by_process[p]) < n:
      raise ValueError(f"pmap over {n} members per process, but process {p} has only "
                       f"{len(by_process[p])} devices")
    out.extend(by_process[p][:n])
  return tuple(out)


def global_axis_size(n, devices, backend_name):
  """The size of the mapped axis across every process for a pmap whose arguments carry
  `n` members (n itself in a single process)."""
  if devices is not None:
    return n
  every = xb.devices(backend_name) if backend_name else xb.devices()
  local = xb.local_devices(backend_name) if backend_name else xb.local_devices()
  if len(every) == len(local):
    return n
  return len(_pmap_devices(n, None, backend_name))


def _local_part(devices):
  """The devices of `devices` this process addresses (all of them in one process)."""
  pid = devices[0].client.process_index()
  local = tuple(d for d in devices if d.process_index == pid)
  return devices if len(local) == len(devices) else local


# ---- compiling the body as a replicated program ----

class _Compiled:
  """A body compiled for `devices`: run it on per-device argument Arrays (after
  `const_bufs`, constants of the program, replicated).

  A plain pmap's mapped arguments and results are laid out by `psharding` (a
  PmapSharding); a nested pmap's (pmap_nested.py) by the NamedShardings
  `in_shardings` (one per body argument) and `out_shardings` over its device grid,
  its constants by `const_sharding`."""
  __slots__ = ("exe", "devices", "out_avals", "n", "const_bufs", "psharding",
               "in_shardings", "out_shardings", "const_sharding")

  def __init__(self, exe, devices, out_avals, const_bufs, psharding=None, in_shardings=None,
               out_shardings=None, const_sharding=None):
    self.exe, self.devices, self.out_avals, self.n = exe, devices, out_avals, len(devices)
    self.const_bufs = const_bufs
    self.psharding, self.in_shardings = psharding, in_shardings
    self.out_shardings, self.const_sharding = out_shardings, const_sharding

  def place(self, x, aval, mapped, i):
    """Body argument `i` (value `x` of global aval `aval`) on the program's devices;
    an Array already laid out so is used in place."""
    if not isinstance(aval.dtype, np.dtype):  # key arrays (prng.py) travel as their data
      x, aval = aval.dtype.physical_value(x), aval.dtype.physical_aval(aval)
    if self.in_shardings is None:
      if mapped and type(x) is Array and x._sharding == self.psharding:
        return x   # a previous pmap's result over these devices
      return sharding_mod.shard_to_devices(x, aval, self.devices, mapped)
    return sharding_mod.put_sharded(x, aval, self.in_shardings[i])

  def execute(self, bufs):
    return self.exe.execute(self.const_bufs + bufs)


_compiled_cache = {}   # (id(call_jaxpr), ...) -> (call_jaxpr, _Compiled)


def _block_jaxpr(call_jaxpr, mapped, axis_name, n):
  """The program each device runs: mapped inputs and every output are blocks of shape
  (1, *member shape), as in JAX, so that a device's buffer is exactly its slice of the
  global array (and a one-device result reads as the global array)."""
  from tracejax._src.lax import structural
  avals = _member_avals(call_jaxpr)
  in_avals = [a.update(shape=(1,) + tuple(a.shape)) if m else a
              for a, m in zip(avals, mapped)]

  def f(*xs):
    xs = [structural.reshape(x, tuple(a.shape)) if m else x
          for x, a, m in zip(xs, avals, mapped)]
    outs = ir.eval_jaxpr(call_jaxpr, [], *xs)
    return [structural.reshape(o, (1,) + tuple(v.aval.shape))
            for o, v in zip(outs, call_jaxpr.outvars)]

  with parallel.extend_axis_env(axis_name, n):
    return staging.trace_to_jaxpr(f, in_avals)


def _program_devices(call_jaxpr, n, devices, backend_name):
  """(devices, levels) of the program of a pmap over `n` members with body
  `call_jaxpr`: `levels` are the axes of the pmaps nested in it (pmap_nested.py), which
  multiply the device count (a grid of n * inner sizes devices)."""
  levels = pmap_nested.inner_axes(call_jaxpr, xla_pmap_p)
  if not levels:
    return _pmap_devices(n, devices, backend_name), ()
  if devices is not None:
    raise ValueError("Nested pmap with explicit devices argument: give `devices` to "
                     "neither the inner nor the outer pmap")
  every = xb.devices(backend_name) if backend_name else xb.devices()
  local = xb.local_devices(backend_name) if backend_name else xb.local_devices()
  if len(every) != len(local):
    raise ValueError("a nested pmap cannot span several processes (jax.distributed)")
  total = n * math.prod(s for _, s in levels)
  return _pmap_devices(total, None, backend_name), tuple(levels)


def _compile(call_jaxpr, axis_name, devices, name, mapped, levels=()):
  key = (id(call_jaxpr), axis_name, devices, tuple(mapped))
  hit = _compiled_cache.get(key)
  if hit is not None and hit[0] is call_jaxpr:
    return hit[1]
  if levels:
    c = _compile_nested(call_jaxpr, axis_name, devices, name, mapped, levels)
    _compiled_cache[key] = (call_jaxpr, c)
    return c
  n = len(devices)
  platform = devices[0].client.platform
  jaxpr, consts = _block_jaxpr(call_jaxpr, mapped, axis_name, n)
  text, _ = lowering.lower_jaxpr(jaxpr, name=f"pmap_{name}", platform=platform,
                                 num_replicas=n, axis_env=((axis_name, n),))
  # Across processes, each process feeds and gets back only its own devices' members:
  # the outputs' leading axis is the local member count.
  local = _local_part(devices)
  out_avals = [v.aval.update(shape=(len(local),) + tuple(v.aval.shape))
               for v in call_jaxpr.outvars]
  if len(local) == len(devices):
    # As JAX 0.10.2: a NamedSharding over a 1-d mesh of the devices, named after the
    # pmap's axis (`_internal_pmap_axis_name` when it has none), leading axis split.
    psharding = pmap_spmd.named(pmap_nested.grid_mesh(devices, ((axis_name, n),)))
  else:   # across processes: this process's members, as a PmapSharding of them
    psharding = sharding_mod.pmap_sharding(local, axis_name if isinstance(axis_name, str)
                                           else None)
  exe = xb.compile(text, out_avals, devices=devices, num_replicas=n, committed=True,
                   out_shardings=[psharding] * len(out_avals), name=f"pmap_{name}")
  const_bufs = [sharding_mod.shard_to_devices(c, get_aval(c), local, False)
                for c in consts]
  c = _Compiled(exe, local, out_avals, const_bufs, psharding)
  if len(_compiled_cache) > 4096:
    _compiled_cache.clear()
  _compiled_cache[key] = (call_jaxpr, c)
  return c


def _compile_nested(call_jaxpr, axis_name, devices, name, mapped, levels):
  """A pmap whose body holds pmaps over `levels`, as one replicated program over the
  grid of `devices` (pmap_nested.py): its arguments and results are laid out by
  NamedShardings over the grid's Mesh."""
  n = len(devices) // math.prod(s for _, s in levels)
  axes = ((axis_name, n),) + tuple(levels)
  jaxpr, consts, rows_in, rows_out = pmap_nested.block_jaxpr(
      call_jaxpr, mapped, (axis_name, n), levels, xla_pmap_p)
  text, _ = lowering.lower_jaxpr(jaxpr, name=f"pmap_{name}",
                                 platform=devices[0].client.platform,
                                 num_replicas=len(devices), axis_env=axes)
  mesh = pmap_nested.grid_mesh(devices, axes)
  ins, outs, rep = pmap_nested.layouts(mesh, mapped, rows_in, rows_out)
  out_avals = [v.aval.update(shape=(n,) + tuple(v.aval.shape)) for v in call_jaxpr.outvars]
  exe = xb.compile(text, out_avals, devices=devices, num_replicas=len(devices),
                   committed=True, out_shardings=outs, name=f"pmap_{name}")
  const_bufs = [sharding_mod.put_sharded(c, get_aval(c), rep) for c in consts]
  return _Compiled(exe, devices, out_avals, const_bufs, None, ins, outs, rep)


def _execute(compiled, args, mapped_invars):
  bufs = [compiled.place(x, _global_aval(x), m, i)
          for i, (x, m) in enumerate(zip(args, mapped_invars))]
  return compiled.execute(bufs)


def _global_aval(x):
  return x.aval if type(x) is Array else get_aval(x)


# ---- the xla_pmap primitive ----

def _xla_pmap_impl(*args, call_jaxpr, axis_name, axis_size, mapped_invars, devices, backend,
                   name, **_):
  devs, levels = _program_devices(call_jaxpr, axis_size, devices, backend)
  return _execute(_compile(call_jaxpr, axis_name, devs, name, mapped_invars, levels), args,
                  mapped_invars)


xla_pmap_p.def_impl(_xla_pmap_impl)


def _xla_pmap_abstract_eval(*avals, call_jaxpr, axis_size, **_):
  return [v.aval.update(shape=(axis_size,) + tuple(v.aval.shape)) for v in call_jaxpr.outvars]


xla_pmap_p.def_abstract_eval(_xla_pmap_abstract_eval)


def _member_avals(call_jaxpr):
  return [v.aval for v in call_jaxpr.invars]


def _trace_body(f, avals, axis_name, axis_size):
  with parallel.extend_axis_env(axis_name, axis_size):
    jaxpr, consts = staging.trace_to_jaxpr(f, avals)
  return staging.closed_call_jaxpr(jaxpr, consts)


def _xla_pmap_jvp(primals, tangents, *, call_jaxpr, mapped_invars, axis_name, axis_size,
                  **params):
  p_out = xla_pmap_p.bind(*primals, call_jaxpr=call_jaxpr, mapped_invars=mapped_invars,
                          axis_name=axis_name, axis_size=axis_size, **params)
  nz = [type(t) is not ad.Zero for t in tangents]
  avals = _member_avals(call_jaxpr)
  t_avals = [a.at_least_vspace() for a, z in zip(avals, nz) if z]

  def tangent_body(*xs):
    ps, ts = xs[:len(avals)], iter(xs[len(avals):])
    tin = [next(ts) if z else ad.Zero(a.at_least_vspace()) for a, z in zip(avals, nz)]
    _, t_out = ad.jvp_of_jaxpr(call_jaxpr, ps, tin)
    return [ad.instantiate_zeros(t) if type(t) is ad.Zero else t for t in t_out]

  # Across processes the body sees the global axis size (`global_axis_size`).
  body, consts = _trace_body(tangent_body, avals + t_avals, axis_name,
                             params.get("global_axis_size") or axis_size)
  nz_t = [t for t in tangents if type(t) is not ad.Zero]
  mapped = ((False,) * len(consts) + tuple(mapped_invars) +
            tuple(m for m, z in zip(mapped_invars, nz) if z))
  t_out = xla_pmap_p.bind(*consts, *primals, *nz_t, call_jaxpr=body, mapped_invars=mapped,
                          axis_name=axis_name, axis_size=axis_size, **params)
  return p_out, t_out


ad.primitive_jvps[xla_pmap_p] = _xla_pmap_jvp


def _xla_pmap_transpose(cts, *args, call_jaxpr, mapped_invars, axis_name, axis_size,
                        **params):
  from tracejax._src.lax import reductions
  linear = [ad.is_undefined_primal(a) for a in args]
  with parallel.extend_axis_env(axis_name, params.get("global_axis_size") or axis_size):
    t_jaxpr, t_consts = pmap_aot.transpose_body(call_jaxpr, linear)
  body, consts = staging.closed_call_jaxpr(t_jaxpr, t_consts)
  known = [a for a, l in zip(args, linear) if not l]
  cts = [ad.instantiate_zeros(c) if type(c) is ad.Zero else c
         for c in (cts if isinstance(cts, (list, tuple)) else [cts])]
  mapped = ((False,) * len(consts) + tuple(m for m, l in zip(mapped_invars, linear) if not l)
            + (True,) * len(cts))
  outs = iter(xla_pmap_p.bind(*consts, *known, *cts, call_jaxpr=body, mapped_invars=mapped,
                              axis_name=axis_name, axis_size=axis_size, **params))
  res = []
  for l, m in zip(linear, mapped_invars):
    if not l:
      res.append(None)
      continue
    ct = next(outs)
    # A broadcast (unmapped) input's cotangent is the sum of every member's.
    res.append(ct if m else reductions.reduce_sum(ct, (0,)))
  return res


ad.primitive_transposes[xla_pmap_p] = _xla_pmap_transpose



def _xla_pmap_batch(args, dims, *, call_jaxpr, mapped_invars, axis_name, axis_size,
                    **params):
  """vmap of pmap: the vmapped axis becomes axis 0 of each member's value."""
  from tracejax._src.lax import utils as lax_utils
  size = next(np.shape(x)[d] if not isinstance(x, Tracer) else x.shape[d]
              for x, d in zip(args, dims) if d is not None)
  moved, in_dims = [], []
  for x, d, m in zip(args, dims, mapped_invars):
    if d is None:
      moved.append(x)
      in_dims.append(None)
    elif m:  # (pmap axis, vmap axis, ...): the member sees the vmap axis first
      x = lax_utils.moveaxis(x, d, 1)
      moved.append(x)
      in_dims.append(0)
    else:
      moved.append(lax_utils.moveaxis(x, d, 0))
      in_dims.append(0)
  with parallel.extend_axis_env(axis_name, params.get("global_axis_size") or axis_size):
    new_jaxpr, consts, _ = batching.batch_jaxpr(
        call_jaxpr, size, in_dims, batching.rule_axis_name((axis_name,)),
        out_dims_wanted=[0] * len(call_jaxpr.outvars))
  body, const_args = staging.closed_call_jaxpr(new_jaxpr, consts)
  outs = xla_pmap_p.bind(*const_args, *moved, call_jaxpr=body,
                         mapped_invars=(False,) * len(const_args) + tuple(mapped_invars),
                         axis_name=axis_name, axis_size=axis_size, **params)
  return outs, [1] * len(outs)


batching.primitive_batchers[xla_pmap_p] = _xla_pmap_batch


def _xla_pmap_lowering(ctx, *args, call_jaxpr, axis_name, axis_size, mapped_invars, **params):
  """An xla_pmap inside another program (jit of pmap, a pmap under grad-of-jit, scan or
  cond). In an SPMD program over the pmap's devices (`staged_mesh` asked for one): the
  manual computation of pmap_spmd.py, one member per partition. In a pmap body (hidden
  in a cond/scan there): JAX's error. Elsewhere (a program on one device): its body runs
  as a vmap with the axis name, on the enclosing program's device(s)."""
  if params.get("global_axis_size"):
    raise ValueError("a pmap spanning several processes (jax.distributed) cannot be staged "
                     "into another jit or pmap; call it at the top level")
  prog = pmap_spmd.program_devices()
  if prog is not None:
    mesh = pmap_mesh(call_jaxpr, axis_name, axis_size, params.get("devices"),
                     params.get("backend"))
    if mesh is not None and mesh._flat_devices == prog:
      return _manual_pmap_lowering(ctx, args, call_jaxpr, axis_name, axis_size,
                                   mapped_invars, mesh)
  from tracejax._src.interpreters import pmap_errors   # JAX's error inside a pmap body
  pmap_errors.check_vmap_lowering(ctx, axis_name, axis_size)
  from tracejax._src import api
  in_axes = tuple(0 if m else None for m in mapped_invars)
  fun = api.vmap(lambda *a: ir.eval_jaxpr(call_jaxpr, [], *a), in_axes=in_axes,
                 axis_name=axis_name, axis_size=axis_size)
  return lowering.lower_fun(lambda *a: fun(*a), multiple_results=True)(ctx, *args)


def _manual_pmap_lowering(ctx, args, call_jaxpr, axis_name, n, mapped, mesh):
  """The pmap as manual code over `mesh` (pmap_spmd.py): mapped operands split along
  axis 0 (for a nested pmap, pmap_nested.py's layouts over its grid), the others
  replicated; every result split along axis 0."""
  levels = tuple(pmap_nested.inner_axes(call_jaxpr, xla_pmap_p))
  if levels:
    body, consts, rows_in, rows_out = pmap_nested.block_jaxpr(
        call_jaxpr, mapped, (axis_name, n), levels, xla_pmap_p)
    ins, outs, _ = pmap_nested.layouts(mesh, mapped, rows_in, rows_out)
  else:
    body, consts = _block_jaxpr(call_jaxpr, mapped, axis_name, n)
    split, rep = pmap_spmd.named(mesh), pmap_spmd.named(mesh, replicated=True)
    ins = [split if m else rep for m in mapped]
    outs = [split] * len(body.outvars)
  return pmap_spmd.manual_computation(ctx, args, body, consts,
                                      ((axis_name, n),) + levels, ins, outs)


_pmap_meshes = {}   # (id(call_jaxpr), axis, size, devices, ...) -> (call_jaxpr, mesh)


def pmap_mesh(call_jaxpr, axis_name, axis_size, devices=None, backend=None):
  """The Mesh of the devices a pmap runs on (one axis named after the pmap's; a grid with
  an axis per level for a nested pmap, pmap_nested.py), in member order; None for a
  pmap on one device. Raises the pmap's ValueError when there are too few devices."""
  key = (id(call_jaxpr), axis_name, axis_size, devices, backend, xb.default_device())
  hit = _pmap_meshes.get(key)
  if hit is not None and hit[0] is call_jaxpr:
    return hit[1]
  devs, levels = _program_devices(call_jaxpr, axis_size, devices, backend)
  mesh = None
  if len(devs) > 1:
    mesh = pmap_nested.grid_mesh(devs, ((axis_name, axis_size),) + tuple(levels))
  if len(_pmap_meshes) > 4096:
    _pmap_meshes.clear()
  _pmap_meshes[key] = (call_jaxpr, mesh)
  return mesh


def _eqn_pmap_mesh(eqn):
  """The mesh of an xla_pmap equation's devices; None where it has none (across
  processes, or too few devices: errors its lowering raises)."""
  p = eqn.params
  if p.get("global_axis_size"):
    return None
  try:
    return pmap_mesh(p["call_jaxpr"], p["axis_name"], p["axis_size"], p.get("devices"),
                     p.get("backend"))
  except ValueError:
    return None


def _pmap_arg_hints(jaxpr, devices):
  """A sharding (or None) per invar of a jitted `jaxpr` run over `devices`: an argument
  that a pmap in it maps is laid out as that pmap splits it (as JAX's shard_map asks of
  its operands), so it reaches the pmap's devices without going through a replica."""
  if not any(e.primitive is xla_pmap_p for e in jaxpr.eqns):
    return None
  pos = {v: i for i, v in enumerate(jaxpr.invars)}
  hints = [None] * len(jaxpr.invars)
  for eqn in jaxpr.eqns:
    if eqn.primitive is not xla_pmap_p:
      continue
    mesh = _eqn_pmap_mesh(eqn)
    if mesh is None or mesh._flat_devices != tuple(devices):
      continue
    for v, m in zip(eqn.invars, eqn.params["mapped_invars"]):
      i = pos.get(v) if type(v) is ir.Var else None
      if m and i is not None and hints[i] is None:
        hints[i] = pmap_spmd.named(mesh)
  return hints


lowering.register_lowering(xla_pmap_p, _xla_pmap_lowering)


# ---- the public pmap ----

def _check_axis(name, value, allow_none=True):
  if value is None and allow_none:
    return
  if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
    raise TypeError(f"pmap {name} must be an int or None, got {value!r}")


class _Entry:
  __slots__ = ("compiled", "mapped", "dims", "out_tree", "out_dims", "const_bufs",
               "per_out_avals")


class PmapFunction:
  """What `pmap(fun)` returns: callable, with a per-signature cache of compiled programs."""

  def __init__(self, fun, axis_name, in_axes, out_axes, static_argnums, devices,
               backend_name, axis_size, donate_argnums):
    self.fun, self.axis_name = fun, axis_name
    self.in_axes, self.out_axes = in_axes, out_axes
    self.static = static_argnums
    self.devices = tuple(devices) if devices is not None else None
    self.backend, self.axis_size = backend_name, axis_size
    self.donate_argnums = donate_argnums
    self._name = util.fun_name(fun)
    self._cache = {}
    self._anon = axis_name if axis_name is not None else _AnonymousAxis(self._name)
    functools.update_wrapper(self, fun, updated=())

  def __repr__(self):
    return f"<pmapped function {self._name}>"

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  # -- ahead of time: the pmap as the one SPMD program jit makes of it --

  def lower(self, *args, **kwargs):
    """The pmap lowered for these arguments (a `Lowered`: `.as_text()`, `.compile()`).

    >>> jax.pmap(lambda x: x * 2).lower(np.ones((jax.device_count(), 3)))  # doctest: +SKIP
    """
    return pmap_aot.as_jit(self).lower(*args, **kwargs)

  def trace(self, *args, **kwargs):
    """The pmap traced for these arguments (a `Traced`: `.jaxpr`, `.lower()`)."""
    return pmap_aot.as_jit(self).trace(*args, **kwargs)

  def eval_shape(self, *args, **kwargs):
    """The shapes and dtypes of the outputs, as ShapeDtypeStructs (nothing runs)."""
    return pmap_aot.as_jit(self).eval_shape(*args, **kwargs)

  def clear_cache(self):
    """Forget the compiled programs (the next call traces and compiles again)."""
    self._cache.clear()
    if "_jit" in self.__dict__:
      self.__dict__["_jit"].clear_cache()

  # -- arguments --

  def _split(self, args):
    nargs = len(args)
    static = set()
    for i in self.static:
      j = i + nargs if i < 0 else i
      if j >= nargs:   # (a negative one out of range is ignored, as in JAX)
        raise ValueError(f"pmapped function has static_broadcasted_argnums={self.static} but "
                         f"was called with only {nargs} positional argument"
                         f"{'s' if nargs > 1 else ''}. All static broadcasted arguments must "
                         "be passed positionally.")
      if j >= 0:
        static.add(j)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    skey = []
    for j in sorted(static):
      try:
        hash(args[j])
      except TypeError:
        raise ValueError(f"Non-hashable static arguments are not supported, as this can "
                         f"lead to unexpected cache-misses. Static argument (index {j}) of type"
                         f" {type(args[j])} for function {self._name} is non-hashable.") from None
      skey.append((j, args[j]))
    return dyn, tuple(skey), static

  def _in_dims(self, dyn, kwargs, in_tree, static):
    ax = self.in_axes
    from tracejax._src.interpreters import pmap_errors   # (JAX's words for bad in_axes)
    if isinstance(ax, list):   # JAX 0.10.2's pmap takes no list (a tree prefix mismatch)
      raise pmap_errors.in_axes_prefix_error(ax, dyn, kwargs)
    if isinstance(ax, tuple) and static and len(ax) == len(dyn) + len(static):
      ax = tuple(a for i, a in enumerate(ax) if i not in static)
    if ax is None or isinstance(ax, int):
      ax = (ax,) * len(dyn)
    elif not isinstance(ax, tuple):
      raise TypeError(f"pmap in_axes must be an int, None, or (nested) container with those "
                      f"types as leaves, but got {self.in_axes}.")
    try:
      dims = tree_util.broadcast_prefix(tuple(ax), tuple(dyn), is_leaf=lambda x: x is None)
    except (ValueError, TypeError):
      raise pmap_errors.in_axes_prefix_error(ax, dyn, kwargs) from None
    return list(dims) + [0] * len(tree_util.tree_leaves(kwargs))

  def _axis_size(self, leaves, dims):
    from tracejax._src.interpreters import pmap_errors   # (its checks, in JAX's words)
    return pmap_errors.mapped_axis_size(self, leaves, dims)

  # -- tracing --

  def _trace(self, args, static, in_tree, leaves, dims, n):
    per_avals = []
    for x, d in zip(leaves, dims):
      a = raise_to_shaped(x.aval if isinstance(x, Tracer) else get_aval(x))
      if d is not None:
        shape = list(a.shape)
        del shape[d]
        a = a.update(shape=tuple(shape))
      per_avals.append(a)
    store = []

    def flat(*xs):
      dyn, kw = tree_util.tree_unflatten(in_tree, xs)
      it = iter(dyn)
      full = [args[i] if i in static else next(it) for i in range(len(args))]
      out = self.fun(*full, **kw)
      ol, ot = tree_util.tree_flatten(out)
      store.append(ot)
      return ol

    body, consts = _trace_body(flat, per_avals, self._anon, n)
    return body, consts, store[0]

  def _out_dims(self, out_tree, n_out):
    oa = self.out_axes
    if oa is None or isinstance(oa, int):
      return [oa] * n_out
    if isinstance(oa, list):
      oa = tuple(oa)
    tree = tree_util.tree_unflatten(out_tree, [object()] * n_out)
    return list(tree_util.broadcast_prefix(oa, tree, is_leaf=lambda x: x is None))

  # -- calling --

  @traceback_util.api_boundary
  def __call__(self, *args, **kwargs):
    return self._call_with_entry(args, kwargs)[0]

  def _call_with_entry(self, args, kwargs):
    """(output, the cache entry that ran, or None under a transformation)."""
    dyn, skey, static = self._split(args)
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    if _trace_ctx.trace is eval_trace and not any(isinstance(x, Tracer) for x in leaves):
      try:
        key = (in_tree, skey, tuple([x.aval if type(x) is Array else get_aval(x)
                                     for x in leaves]), config.jax_enable_x64,
               xb.default_device())
      except TypeError:
        key = None
      e = self._cache.get(key) if key is not None else None
      if e is None:
        e = self._build(args, static, in_tree, leaves, dyn, kwargs)
        if e is None:   # the body closes over traced values: stage it
          return self._call_traced(args, static, in_tree, leaves, dyn, kwargs), None
        if key is not None:
          self._cache[key] = e
      out = self._run(e, leaves)
      if self.donate_argnums:
        pmap_aot.delete_donated(self.donate_argnums, args, static, out)
      return out, e
    return self._call_traced(args, static, in_tree, leaves, dyn, kwargs), None

  def _build(self, args, static, in_tree, leaves, dyn, kwargs):
    dims = self._in_dims(dyn, kwargs, in_tree, static)
    for x, i in zip(leaves, range(len(leaves))):
      try:
        get_aval(x) if type(x) is not Array else None
      except TypeError:
        raise TypeError(f"Argument {i} of type {type(x)} passed to pmapped function "
                        f"{self._name} is not a valid JAX type.") from None
    n = self._axis_size(leaves, dims)
    devices = _pmap_devices(n, self.devices, self.backend)
    body, consts, out_tree = self._trace(args, static, in_tree, leaves, dims, len(devices))
    if any(isinstance(c, Tracer) for c in consts):
      return None
    levels = ()
    if pmap_nested.contains_pmap(body, xla_pmap_p):   # nested pmaps: a grid of devices
      devices, levels = _program_devices(body, n, self.devices, self.backend)
    e = _Entry()
    e.mapped = [False] * len(consts) + [d is not None for d in dims]
    e.compiled = _compile(body, self._anon, devices, self._name, e.mapped, levels)
    e.dims = [d if d is None else d % max(np.ndim(x), 1) for x, d in zip(leaves, dims)]
    e.const_bufs = [e.compiled.place(c, get_aval(c), False, i) for i, c in enumerate(consts)]
    e.out_tree = out_tree
    e.per_out_avals = [v.aval for v in body.outvars]
    e.out_dims = self._out_dims(out_tree, len(body.outvars))
    return e

  def _run(self, e, leaves):
    c = e.compiled
    bufs = list(e.const_bufs)
    k = len(bufs)
    for i, (x, d) in enumerate(zip(leaves, e.dims)):
      if d is None:
        bufs.append(c.place(x, _global_aval(x), False, k + i))
      elif d == 0:
        bufs.append(c.place(x, _global_aval(x), True, k + i))
      else:  # the mapped axis is not leading: move it first (on the host)
        v = np.moveaxis(np.asarray(x), d, 0)
        bufs.append(c.place(v, get_aval(v), True, k + i))
    outs = c.execute(bufs)
    return tree_util.tree_unflatten(e.out_tree, [_out_axis(o, d, a) for o, d, a in
                                                 zip(outs, e.out_dims, e.per_out_avals)])

  def _call_traced(self, args, static, in_tree, leaves, dyn, kwargs):
    from tracejax._src.lax import utils as lax_utils
    dims = self._in_dims(dyn, kwargs, in_tree, static)
    n = self._axis_size(leaves, dims)
    if self.devices is not None and len(self.devices) != n:
      _pmap_devices(n, self.devices, self.backend)  # its error
    gn = global_axis_size(n, self.devices, self.backend)
    body, consts, out_tree = self._trace(args, static, in_tree, leaves, dims, gn)
    moved = [x if d in (None, 0) else lax_utils.moveaxis(x, d, 0)
             for x, d in zip(leaves, dims)]
    mapped = tuple(d is not None for d in dims)
    outs = xla_pmap_p.bind(*consts, *moved, call_jaxpr=body, axis_name=self._anon,
                           axis_size=n, backend=self.backend, devices=self.devices,
                           global_axis_size=None if gn == n else gn,
                           mapped_invars=(False,) * len(consts) + mapped, name=self._name)
    out_dims = self._out_dims(out_tree, len(outs))
    res = []
    for o, d in zip(outs, out_dims):
      if d is None:
        from tracejax._src.lax import slicing
        res.append(slicing.index_in_dim(o, 0, 0, keepdims=False))
      else:
        res.append(lax_utils.moveaxis(o, 0, d) if d else o)
    return tree_util.tree_unflatten(out_tree, res)


def _out_axis(o, d, per_aval):
  if d == 0:
    return o
  if d is None:  # every member computed the same value: take the first device's
    buf = o._arrays[0]
    if getattr(o._sharding, "mesh", None) is not None and \
        len(o._sharding.mesh.axis_names) > 1:   # a nested pmap's
      return xb.device_put(np.ascontiguousarray(np.asarray(o)[0]),
                           sharding_mod.device_of_single(buf), per_aval)
    return xb.device_put(np.ascontiguousarray(xb.to_numpy(buf)[0]),
                         sharding_mod.device_of_single(buf), per_aval)
  return xb.device_put(np.ascontiguousarray(np.moveaxis(np.asarray(o), 0, d)),
                       aval=o.aval.update(shape=tuple(np.moveaxis(
                           np.empty(o.shape, np.bool_), 0, d).shape)))


class _AnonymousAxis:
  """The axis name of a pmap given none: unique, so no collective can name it."""

  def __init__(self, name):
    self.name = name

  def __repr__(self):
    return f"<axis of pmap({self.name})>"


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
  """Map `fun` over a leading axis of its arguments, one member per device, as one XLA
  program; collectives (`lax.psum(x, axis_name)`, ...) combine the members.

  Args:
    fun: the per-member function (pytrees in and out).
    axis_name: the name collectives use for the mapped axis.
    in_axes: which axis of each argument is mapped (an int, None for a broadcast
      argument, or a tuple/pytree prefix per positional argument).
    out_axes: where the mapped axis goes in each output (None: the members' equal
      value, unmapped).
    static_broadcasted_argnums: positional arguments that are hashable Python values,
      baked into the program (one compile per value).
    devices: the devices to run on, one per member (default: the first local devices).
    backend: the platform ('cpu', 'gpu').
    axis_size: the mapped size, when no argument is mapped.
    donate_argnums: positional arguments whose Arrays are donated: deleted once the
      program has read them (using them afterwards raises RuntimeError), as in JAX.
    global_arg_shapes: accepted for compatibility (single process).

  Returns:
    The mapped function. Its outputs are Arrays sharded over the devices (a
    NamedSharding over a 1-d Mesh of them, its axis named after `axis_name`, as in JAX
    0.10.2): each member's result stays on its device. Under `jit` (and grad-of-jit,
    scan, cond inside a jit) the pmap is part of one SPMD program over its devices.
    When `fun` itself
    calls pmap (`pmap(pmap(f, 'j'), 'i')`), the program spans outer size x inner size
    devices laid out as a grid, one inner member per device, and the outputs are laid
    out by NamedShardings over that grid (a Mesh with axes named after the pmaps').

  >>> pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.arange(1., 3.))  # doctest: +SKIP
  DeviceArray([0.33333334, 0.6666667 ], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if isinstance(static_broadcasted_argnums, (int, np.integer)):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  try:
    static = tuple(operator.index(i) for i in static_broadcasted_argnums)
  except TypeError:
    raise TypeError(f"pmap static_broadcasted_argnums must be an int or a tuple of ints, "
                    f"got {static_broadcasted_argnums!r}") from None
  _check_axis("axis_size", axis_size)
  if isinstance(donate_argnums, (int, np.integer)):
    donate_argnums = (donate_argnums,)
  donate_argnums = tuple(operator.index(i) for i in donate_argnums)
  from tracejax._src.interpreters import pmap_errors   # (JAX's checks of the arguments)
  pmap_errors.check_pmap_args(devices, static, donate_argnums)
  pf = PmapFunction(fun, axis_name, in_axes, out_axes, static, devices, backend,
                    axis_size, donate_argnums)
  if in_axes == 0 and out_axes == 0 and not static and type(in_axes) is int and \
      not donate_argnums:   # donation deletes inputs after each call: the Python path
    return _cpp_pmap(pf)
  return pf


def _cpp_pmap(pf):
  """jaxlib's C++ dispatcher in front of `pf` (every argument and output mapped over
  axis 0): once a signature is compiled, a call whose arguments are already split over
  the devices (a previous pmap's outputs) runs without entering Python; NumPy arguments
  are split by the input sharding's `_shard_arg`. Anything else reaches `pf`
  (cache_miss)."""

  @traceback_util.api_boundary
  def cache_miss(*args, **kwargs):
    out, e = pf._call_with_entry(args, kwargs)
    fastpath = None
    if e is not None and all(d == 0 for d in e.dims) and all(d == 0 for d in e.out_dims):
      c = e.compiled
      consts = c.const_bufs + e.const_bufs
      out_treedef = xb.pytree_registry.flatten(out)[1]
      if c.in_shardings is None:
        psh = c.psharding
        ins, outs = [psh] * (len(consts) + len(e.dims)), [psh] * len(e.out_dims)
      else:   # a nested pmap: NamedShardings over its device grid
        ins = [c.const_sharding] * len(c.const_bufs) + list(c.in_shardings)
        outs = list(c.out_shardings)
      fastpath = xb.fastpath_data_sharded(c.exe, out_treedef, ins, outs, consts,
                                          xb.pytree_registry.flatten((args, kwargs))[0])
    return out, fastpath, False

  # `pf` as the function: under `disable_jit` the C++ dispatcher calls it directly.
  f = xb.make_cpp_jit(f"pmap_{pf._name}", pf, cache_miss, (), (), ("pmap", id(pf)))
  f = functools.wraps(pf.fun)(f)
  f._pmapped = pf
  f._jitted = pf   # `.lower()`, `.trace()`, `.eval_shape()`, `.clear_cache()` (jit.py)
  return f


# ---- SPMD: one program partitioned by XLA over a mesh (jit with shardings) ----
#
# A jaxpr is lowered as usual, then its module gets `mhlo.num_partitions` and an
# `mhlo.sharding` attribute (the HloSharding of runtime/sharding.py) on each argument
# and on each result whose sharding was asked for; XLA's partitioner (GSPMD, see
# runtime/sharding.py for why) splits it, and reports the shardings it chose for the
# other results, which become NamedShardings over the mesh. Partition p runs on
# `mesh.devices.flat[p]`.

# The lowering state of an SPMD module (its partition count and devices) lives in
# pmap_spmd.py, with the manual-partitioning ops shard_map and a staged pmap emit.
_spmd_state = pmap_spmd._spmd_state
lowering_partitions = pmap_spmd.lowering_partitions
_spmd_lowering = pmap_spmd.spmd_lowering


def _set_shardings(text, n, in_hlos, out_hlos):
  """Module text with `mhlo.num_partitions = n` and the given argument/result
  shardings (None: left to the partitioner)."""
  from tracejax._src.runtime.backend import ir as mir
  with xb.make_ir_context():
    m = mir.Module.parse(text)
    i32 = mir.IntegerType.get_signless(32)
    m.operation.attributes["mhlo.num_partitions"] = mir.IntegerAttr.get(i32, n)
    m.operation.attributes["mhlo.num_replicas"] = mir.IntegerAttr.get(i32, 1)
    main = next(op for op in m.body.operations
                if mir.StringAttr(op.attributes["sym_name"]).value == "main")
    for attr_name, hlos in (("arg_attrs", in_hlos), ("res_attrs", out_hlos)):
      old = (list(mir.ArrayAttr(main.attributes[attr_name]))
             if attr_name in main.attributes else [None] * len(hlos))
      new = []
      for a, h in zip(old, hlos):
        entries = {}
        if a is not None:
          d = mir.DictAttr(a)
          for i in range(len(d)):
            entries[d[i].name] = d[i].attr
        if h is not None:
          entries["mhlo.sharding"] = mir.StringAttr.get(str(h))
        new.append(mir.DictAttr.get(entries))
      main.attributes[attr_name] = mir.ArrayAttr.get(new)
    return m.operation.get_asm()


class SpmdExecutable:
  """A program partitioned over `devices`: `in_shardings` for its arguments (constants
  first), `out_shardings` for its results (those XLA chose included)."""
  __slots__ = ("exe", "devices", "in_shardings", "out_shardings", "const_bufs", "out_avals",
               "text")

  def execute(self, args, in_avals):
    bufs = list(self.const_bufs)
    for x, a, s in zip(args, in_avals, self.in_shardings[len(self.const_bufs):]):
      bufs.append(x if type(x) is Array and x._sharding == s else
                  sharding_mod.put_sharded(x, a, s))
    return self.exe.execute(bufs)


def compile_spmd(jaxpr, consts, name, devices, in_shardings, out_shardings, mesh=None,
                 donated=None):
  """Compile `jaxpr` (its constvars bound to `consts`) as one SPMD program over
  `devices`, each argument laid out by `in_shardings` (Sharding objects), each result by
  `out_shardings` (None entries: XLA's choice, as a NamedSharding over `mesh` when one
  describes it)."""
  return compile_lowered_spmd(lower_spmd(jaxpr, consts, name, devices, in_shardings,
                                         out_shardings, mesh, donated))


class SpmdLowering:
  """An SPMD program lowered but not compiled (what `jit(f).lower(...)` of a sharded
  signature holds): its StableHLO `text` (with `mhlo.num_partitions` and the
  `mhlo.sharding` of each argument and requested result) and what compiling needs."""
  __slots__ = ("text", "devices", "in_shardings", "out_shardings", "out_avals", "mesh",
               "consts", "rep", "name")


def lower_spmd(jaxpr, consts, name, devices, in_shardings, out_shardings, mesh=None,
               donated=None):
  """Lower `jaxpr` as `compile_spmd` does, without compiling: a `SpmdLowering`."""
  devices = tuple(devices)
  n = len(devices)
  platform = devices[0].client.platform
  if mesh is not None:
    rep = sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec())
  else:
    rep = sharding_mod.GSPMDSharding(devices, xb.xc.HloSharding.replicate())
  in_avals = [v.aval for v in jaxpr.invars]
  out_avals = [v.aval for v in jaxpr.outvars]
  if sharding_mod.aval_typer is not None:
    # Sharding in types (sharding_explicit.py): a result is laid out by its type unless
    # a sharding is asked for; then its type follows its layout (on an Explicit mesh).
    from tracejax._src import sharding_explicit as _se
    out_shardings = [s if s is not None else _se.out_sharding_of(a, mesh, m)
                     for s, a, m in zip(out_shardings, out_avals, _se.meshed_outputs(jaxpr))]
    out_avals = [a if s is None else _se.retype(a, s)
                 for s, a in zip(out_shardings, out_avals)]
  const_sh = [rep] * len(consts)
  all_in = const_sh + list(in_shardings)
  # (key arrays: the rank of their data, which XLA sees)
  in_hlos = [s._to_xla_hlo_sharding(pmap_spmd.physical_ndim(v.aval))
             for s, v in zip(all_in, list(jaxpr.constvars) + list(jaxpr.invars))]
  out_hlos = [None if s is None else s._to_xla_hlo_sharding(pmap_spmd.physical_ndim(a))
              for s, a in zip(out_shardings, out_avals)]
  with _spmd_lowering(n, devices, mesh):
    text, _ = lowering.lower_jaxpr(jaxpr, name=name, platform=platform, donated=donated)
  low = SpmdLowering()
  low.text = _set_shardings(text, n, in_hlos, out_hlos)
  low.devices, low.in_shardings, low.out_shardings = devices, all_in, list(out_shardings)
  low.out_avals, low.mesh, low.consts, low.rep, low.name = out_avals, mesh, consts, rep, name
  return low


def compile_lowered_spmd(low, compiler_options=None):
  """Compile a `SpmdLowering` (partition i on `low.devices[i]`): a `SpmdExecutable`
  whose results XLA did not get a sharding for take the one its partitioner chose."""
  devices, mesh, out_avals, text = low.devices, low.mesh, low.out_avals, low.text
  out_shardings, n = low.out_shardings, len(devices)
  chosen = []

  def resolve(loaded):
    got = loaded.get_output_shardings() or []
    res = []
    for i, (s, a) in enumerate(zip(out_shardings, out_avals)):
      if s is None:
        h = xb.xc.HloSharding.from_proto(got[i]) if i < len(got) else \
            xb.xc.HloSharding.replicate()
        if mesh is not None:
          s = sharding_mod.named_from_hlo(mesh, h, pmap_spmd.physical_ndim(a))
          if isinstance(s, sharding_mod.NamedSharding) and len(s.spec) > len(a.shape):
            s = sharding_mod.GSPMDSharding(devices, h)   # splits a key's data
        else:
          s = sharding_mod.GSPMDSharding(devices, h)
      res.append(s)
    chosen[:] = res
    return res

  exe = xb.compile(text, out_avals, devices=devices, num_partitions=n, committed=True,
                   out_shardings=resolve, name=low.name, compiler_options=compiler_options,
                   propagate_outputs=tuple(s is None for s in out_shardings)
                   if any(s is None for s in out_shardings) else None)
  e = SpmdExecutable()
  e.exe, e.devices, e.in_shardings, e.text = exe, devices, low.in_shardings, text
  e.out_shardings = chosen
  e.out_avals = out_avals
  e.const_bufs = [sharding_mod.put_sharded(c, get_aval(c), low.rep) for c in low.consts]
  return e


# ---- jit's SPMD path (jit.py asks here; it has no SPMD branches of its own) ----

def _as_sharding(s, mesh_hint, what):
  if s is None or isinstance(s, sharding_mod.Sharding):
    return s
  if isinstance(s, sharding_mod.PartitionSpec):
    mesh = mesh_hint or sharding_mod.current_mesh()
    if mesh is None:
      raise ValueError(f"{what}: a bare PartitionSpec {s!r} needs a mesh: use "
                       "NamedSharding(mesh, spec) or call inside `with mesh:`")
    return sharding_mod.NamedSharding(mesh, s)
  raise TypeError(f"{what} must be Shardings (or PartitionSpecs inside `with mesh:`), "
                  f"got {s!r}")


def spmd_options(in_shardings, out_shardings):
  """jit's `in_shardings`/`out_shardings`, hashable (None when neither is given)."""
  def freeze(t):
    if isinstance(t, list):
      t = tuple(t)
    if isinstance(t, tuple) and not isinstance(t, sharding_mod.PartitionSpec):
      return tuple(freeze(x) for x in t)
    if isinstance(t, dict):
      return tuple(sorted((k, freeze(v)) for k, v in t.items()))
    return t
  if in_shardings is None and out_shardings is None:
    return None
  return (freeze(in_shardings), freeze(out_shardings), in_shardings, out_shardings)


def _leaf_shardings(spec_tree, values, what):
  """One sharding (or None) per leaf of `values` from a pytree prefix `spec_tree`."""
  if spec_tree is None:
    return [None] * len(tree_util.tree_leaves(values))
  is_leaf = lambda x: x is None or isinstance(x, (sharding_mod.Sharding,
                                                  sharding_mod.PartitionSpec))
  if is_leaf(spec_tree):
    return [spec_tree] * len(tree_util.tree_leaves(values))
  try:
    return list(tree_util.broadcast_prefix(spec_tree, values, is_leaf=is_leaf))
  except (ValueError, TypeError):
    raise ValueError(f"{what} must be a Sharding or a pytree prefix of the arguments, got "
                     f"{spec_tree!r} for arguments {tree_util.tree_structure(values)}") \
        from None


class StagedSpmd:
  """jit's cache entry for a signature whose traced program holds shard_maps, sharding
  constraints or pmaps over a mesh (`staged_mesh`): it runs through `call_spmd` as an
  SPMD program over that mesh, as in JAX."""
  __slots__ = ("jaxpr", "consts", "out_tree", "mesh")

  def __init__(self, jaxpr, consts, out_tree, mesh):
    self.jaxpr, self.consts, self.out_tree, self.mesh = jaxpr, consts, out_tree, mesh


def staged_mesh(jaxpr):
  """The mesh (over several devices) of the first shard_map, NamedSharding constraint or
  pmap (`pmap_mesh`) in `jaxpr` or the jaxprs nested in its equations; None if there is
  none."""
  for eqn in jaxpr.eqns:
    p = eqn.params
    if eqn.primitive.name == "shard_map":
      if p["mesh"].size > 1:
        return p["mesh"]
    elif eqn.primitive is sharding_constraint_p:
      s = p["sharding"]
      if isinstance(s, sharding_mod.NamedSharding) and s.mesh.size > 1:
        return s.mesh
    elif eqn.primitive is xla_pmap_p:
      m = _eqn_pmap_mesh(eqn)   # a pmap inside: one program over its devices
      if m is not None:
        return m
      continue
    for v in p.values():
      for item in (v if isinstance(v, (tuple, list)) else (v,)):   # cond's branches
        inner = getattr(item, "jaxpr", item)
        if isinstance(inner, ir.Jaxpr):
          m = staged_mesh(inner)
          if m is not None:
            return m
  return None


class _SpmdEntry:
  """jit's cache entry for an SPMD signature; `spmd_fastpath` feeds jaxlib's C++ jit."""
  __slots__ = ("prog", "out_tree", "jaxpr", "consts")

  def spmd_fastpath(self, out_treedef, args):
    p = self.prog
    return xb.fastpath_data_sharded(p.exe, out_treedef, p.in_shardings, p.out_shardings,
                                    p.const_bufs, args)


def _check_jit_shape(s, shape, what):
  """JAX's errors for a jit argument or output that sharding `s` cannot lay out: a spec
  longer than the rank, or a dimension the tiles do not divide."""
  if isinstance(s, sharding_mod.NamedSharding) and len(s.spec) > len(shape):
    raise ValueError(
        f"One of {what} is incompatible with its sharding annotation {s!r}: Sharding "
        f"{s!r} is only valid for values of rank at least {len(s.spec)}, but was applied "
        f"to a value of rank {len(shape)}")
  sharding_mod._SpmdSharding.check_shape(s, shape)


def _pick_mesh(shardings):
  mesh = None
  for s in shardings:
    if isinstance(s, sharding_mod.NamedSharding):
      if mesh is None:
        mesh = s.mesh
      elif s.mesh._flat_devices != mesh._flat_devices:
        raise ValueError(
            "Received incompatible devices for jitted computation. Got shardings over "
            f"devices {[d.id for d in mesh._flat_devices]} and "
            f"{[d.id for d in s.mesh._flat_devices]}")
  return mesh


def call_spmd(jitted, leaves, in_tree, in_avals, key, svals, dyn, dkw, staged=None):
  """Run `jitted` as an SPMD program: its `in_shardings`/`out_shardings`, else the
  shardings of its committed sharded arguments, else (`staged`, a `StagedSpmd`) over
  the mesh of the shard_maps/constraints it holds. Returns (output, cache entry)."""
  ins, devices, mesh, out_spec = _resolve_spmd(
      jitted, leaves, in_avals, dyn, dkw, staged.mesh if staged is not None else None,
      staged.jaxpr if staged is not None else None)
  ckey = ("spmd", key, tuple(ins))
  e = jitted._cache.get(ckey)
  if e is None:
    if staged is not None:
      jaxpr, consts, out_tree = staged.jaxpr, staged.consts, staged.out_tree
    else:
      from tracejax._src import sharding_explicit as _se   # (imports this module)
      in_avals = _se.auto_arg_avals(leaves, in_avals)   # typeof reports their mesh
      jaxpr, consts, out_tree = jitted._trace(in_tree, in_avals, svals)
      if any(e.primitive is xla_pmap_p for e in jaxpr.eqns):
        # the arguments its pmaps map arrive split, as `.lower()` shows (stage_spmd)
        ins = _resolve_spmd(jitted, leaves, in_avals, dyn, dkw, None, jaxpr)[0]
    outs = _out_shardings(out_spec, out_tree, [v.aval for v in jaxpr.outvars], mesh)
    e = _SpmdEntry()
    e.jaxpr, e.consts, e.out_tree = jaxpr, consts, out_tree
    e.prog = compile_spmd(jaxpr, consts, f"jit_{jitted._name}", devices, ins, outs, mesh,
                          jitted._donated(dyn, dkw))
    jitted._cache[ckey] = e
  outs = e.prog.execute(leaves, in_avals)
  return tree_util.tree_unflatten(e.out_tree, outs), e


class SpmdLayout:
  """The SPMD layout of one signature of a jitted function (for its AOT stages): the
  program's devices, a sharding per argument leaf, a sharding (or None: XLA's choice)
  per result, and the mesh results are described over."""
  __slots__ = ("devices", "in_shardings", "out_shardings", "mesh")

  def __init__(self, devices, in_shardings, out_shardings, mesh):
    self.devices, self.in_shardings = tuple(devices), list(in_shardings)
    self.out_shardings, self.mesh = list(out_shardings), mesh


def stage_spmd(jitted, leaves, in_avals, dyn, dkw, jaxpr, out_tree):
  """Where `jitted`'s call would run for these argument leaves and its traced `jaxpr`:
  a `SpmdLayout` for an SPMD program (in_shardings/out_shardings given, arguments laid
  out over several devices, or shard_maps/constraints over a mesh inside); else the
  Device of its committed arguments, `jit(device=...)` or `jax.default_device` when
  that is not the default one; else None. `jit(f).trace/lower` ask here (stages.py)."""
  staged = staged_mesh(jaxpr)
  if jitted._shardings is None and staged is None and \
      sharding_mod.context_mesh() is None and not any(
      sharding_mod.is_spmd_sharding(_leaf_sharding(x)) for x in leaves):
    if jitted.device is None and jitted.backend is None and \
        not sharding_mod.needs_placement(leaves):
      return None
    return sharding_mod.placement(leaves, jitted._name, jitted._requested_device())[0]
  ins, devices, mesh, out_spec = _resolve_spmd(jitted, leaves, in_avals, dyn, dkw, staged,
                                               jaxpr)
  outs = _out_shardings(out_spec, out_tree, [v.aval for v in jaxpr.outvars], mesh)
  return SpmdLayout(devices, ins, outs, mesh)


def _leaf_sharding(x):
  """The sharding of a jit argument leaf: an Array's (a PmapSharding as its SPMD view),
  a ShapeDtypeStruct's `.sharding` (for `jit(f).lower(ShapeDtypeStruct(...))`), else
  None."""
  if type(x) is Array:
    return spmd_view(x._sharding)
  if isinstance(x, (Tracer, np.ndarray, np.generic)) or not hasattr(x, "dtype"):
    return None
  return spmd_view(getattr(x, "sharding", None))


def _out_shardings(out_spec, out_tree, out_avals, mesh):
  """One sharding (None: left to XLA) per result leaf, from jit's `out_shardings`."""
  outs = _leaf_shardings(out_spec, tree_util.tree_unflatten(out_tree, out_avals),
                         "jit out_shardings")
  outs = [_as_sharding(s, mesh, "jit out_shardings") for s in outs]
  for s, a in zip(outs, out_avals):
    if s is not None:
      _check_jit_shape(s, tuple(a.shape), "pjit outputs")
  return outs


def _resolve_spmd(jitted, leaves, in_avals, dyn, dkw, staged_mesh_=None, jaxpr=None):
  """(a sharding per argument leaf, the program's devices, its mesh or None, jit's
  out_shardings) of an SPMD call of `jitted`; `staged_mesh_`: the mesh of the
  shard_maps/constraints/pmaps its jaxpr holds, if any; `jaxpr`: its traced program,
  whose pmaps say how to lay out the arguments they map (`_pmap_arg_hints`)."""
  if (jitted.device is not None or jitted.backend is not None) and \
      sharding_mod.context_mesh() is not None:
    raise ValueError("Mesh context manager should not be used with jit when backend or "
                     "device is also specified as an argument to jit.")
  opts = jitted._shardings
  in_spec, out_spec = (opts[2], opts[3]) if opts is not None else (None, None)
  if isinstance(in_spec, list):
    in_spec = tuple(in_spec)
  given = _leaf_shardings(in_spec, tuple(dyn), "jit in_shardings") + \
      [None] * len(tree_util.tree_leaves(dkw))
  arg_sh = [_leaf_sharding(x) for x in leaves]
  mesh = _pick_mesh([s for s in given if s is not None] +
                    [s for s in arg_sh if isinstance(s, sharding_mod.NamedSharding)])
  if mesh is None and out_spec is not None:
    mesh = _pick_mesh([s for s in tree_util.tree_leaves(
        out_spec, is_leaf=lambda s: isinstance(s, sharding_mod.Sharding))
        if isinstance(s, sharding_mod.Sharding)])
  given = [_as_sharding(s, mesh, "jit in_shardings") for s in given]
  mesh = mesh or _pick_mesh(given) or staged_mesh_ or sharding_mod.current_mesh()
  devices = None
  for s in given + [s for s in arg_sh if sharding_mod.is_spmd_sharding(s)]:
    if s is not None and devices is None:
      devices = s._device_assignment
  if devices is None:
    devices = mesh._flat_devices if mesh is not None else None
  if devices is None:
    raise ValueError(f"jit of {jitted._name}: out_shardings alone need a mesh")
  rep = (sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec()) if mesh is not None
         else sharding_mod.GSPMDSharding(devices, xb.xc.HloSharding.replicate()))
  hints = _pmap_arg_hints(jaxpr, devices) if jaxpr is not None else None
  ins = []
  for i, (x, s, a) in enumerate(zip(leaves, given, in_avals)):
    if s is None:
      xs = arg_sh[i]
      if sharding_mod.is_spmd_sharding(xs):
        s = xs
      elif type(x) is Array and x._committed and type(xs) is sharding_mod.SingleDeviceSharding \
          and (xs._device,) != tuple(devices):
        # As JAX: a committed array cannot join a program over other devices.
        what = ("a pmap or shard_map inside jit with" if staged_mesh_ is not None else
                "jit's context mesh with" if mesh is sharding_mod.context_mesh() and
                not any(map(sharding_mod.is_spmd_sharding, arg_sh)) else "shardings over")
        raise ValueError(
            f"Received incompatible devices for jitted computation. Got "
            f"{sharding_mod._describe(x, f'{i} of {jitted._name}')} and {what}"
            f" device ids {[d.id for d in devices]} on platform "
            f"{devices[0].platform.upper()}")
      else:
        s = hints[i] if hints is not None and hints[i] is not None else rep
    if tuple(s._device_assignment) != tuple(devices):
      raise ValueError(
          f"Received incompatible devices for jitted computation. Got argument {i} of "
          f"{jitted._name} with devices {[d.id for d in s._device_assignment]} and "
          f"others with devices {[d.id for d in devices]}")
    _check_jit_shape(s, tuple(a.shape), f"pjit arguments with pytree key path args[{i}]")
    ins.append(s)
  return ins, devices, mesh, out_spec


# ---- eager primitives on sharded arrays: run sharded, as in JAX ----

_pmap_views = {}


def spmd_view(s):
  """The sharding an SPMD program gives an argument laid out by `s`: `s` itself, except
  that a PmapSharding (a pmap's result) becomes the NamedSharding over a 1-d mesh of its
  devices that puts the same blocks there (its leading axis split over the mesh axis,
  named after the pmap's axis as in JAX, else `_internal_pmap_axis_name`). The
  buffers are the same, so the array joins the program without a copy
  (`sharding.relabel`); the program's results are NamedShardings over that mesh."""
  if type(s) is not sharding_mod.PmapSharding:
    return s
  key = (s._devices, s._axis_name)
  v = _pmap_views.get(key)
  if v is None:
    name = s._axis_name if isinstance(s._axis_name, str) else "_internal_pmap_axis_name"
    mesh = sharding_mod.Mesh(np.array(s._devices, dtype=object), (name,))
    v = _pmap_views[key] = sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec(name))
  return v


def _arg_spmd_sharding(x):
  """The SPMD sharding of argument `x` if it is laid out over devices (else None)."""
  if type(x) is not Array:
    return None
  s = spmd_view(x._sharding)
  return s if sharding_mod.is_spmd_sharding(s) else None


_prim_spmd = {}


def apply_spmd(prim, args, avals, params, params_key, mesh=None):
  """One primitive on arguments among which some are laid out over a mesh (or, with
  none, over `mesh`: the `jax.set_mesh` context's): an SPMD program whose inputs keep
  their shardings (others replicated) and whose outputs take the shardings XLA's
  partitioner chose."""
  def build():
    out_avals = prim.out_avals(list(avals), params)
    invars = [ir.Var(a) for a in avals]
    outvars = [ir.Var(a) for a in out_avals]
    return ir.Jaxpr([], invars, outvars, [ir.JaxprEqn(invars, outvars, prim, params)])

  outs = _run_on_arg_devices(args, avals, (prim, params_key), build, prim.name, mesh)
  return outs if prim.multiple_results else outs[0]


def apply_spmd_jaxpr(jaxpr, args, avals, name, mesh=None):
  """`jaxpr` (no constvars) evaluated on arguments among which some are laid out over
  devices, as one SPMD program over them (what `apply_spmd` does for one primitive):
  the eager `xla_call` of a jitted function under a transformation (jit.py). `mesh`:
  the mesh of the pmaps/shard_maps inside (`staged_mesh`), the program's devices when
  no argument is laid out over any."""
  return _run_on_arg_devices(args, avals, ("jaxpr", jaxpr), lambda: jaxpr, name, mesh,
                             jaxpr)


def _run_on_arg_devices(args, avals, key, build, name, staged=None, jaxpr=None):
  """Run the jaxpr `build()` makes as an SPMD program over the devices of the sharded
  Arrays among `args`, else over the devices of mesh `staged` (cached on `key`, the
  avals and the shardings)."""
  shs = [_arg_spmd_sharding(x) for x in args]
  mesh = _pick_mesh([s for s in shs if s is not None])
  first = next((i for i, s in enumerate(shs) if s is not None), None)
  if first is None:
    mesh, devices, first = staged, staged._flat_devices, 0
  else:
    devices = shs[first]._device_assignment
  rep = (sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec()) if mesh is not None
         else sharding_mod.GSPMDSharding(devices, xb.xc.HloSharding.replicate()))
  hints = _pmap_arg_hints(jaxpr, devices) if jaxpr is not None else None
  if hints is not None:
    shs = [h if s is None and not (type(x) is Array and x._committed) else s
           for x, s, h in zip(args, shs, hints)]
  ins = []
  for i, (x, s) in enumerate(zip(args, shs)):
    # As JAX: committed arguments must all live on the same devices (an uncommitted
    # one is replicated onto them).
    if (s is None and type(x) is Array and x._committed and
        tuple(x._sharding._device_assignment) != tuple(devices)) or \
        (s is not None and tuple(s._device_assignment) != tuple(devices)):
      raise ValueError(
          "Received incompatible devices for jitted computation. Got "
          f"{sharding_mod._describe(args[first], f'{first} of {name}')} and "
          f"{sharding_mod._describe(x, f'{i} of {name}')}")
    ins.append(rep if s is None else s)
  key = key + (tuple(avals), tuple(ins), mesh)   # mesh: no input may name it (iota)
  prog = _prim_spmd.get(key)
  if prog is None:
    jaxpr = build()
    if len(_prim_spmd) > 4096:
      _prim_spmd.clear()
    prog = _prim_spmd[key] = compile_spmd(jaxpr, [], name, devices, ins,
                                          [None] * len(jaxpr.outvars), mesh)
  return prog.execute(args, avals)


# ---- with_sharding_constraint ----

_sharding_custom_call = pmap_spmd.sharding_custom_call


sharding_constraint_p = Primitive("sharding_constraint")


def with_sharding_constraint(x, shardings):
  """Ask that `x` (a pytree of arrays) be laid out by `shardings` at this point of a
  jitted program (XLA's partitioner then lays out what follows around it); outside
  `jit` the values are moved to that layout. Specs may name only Auto mesh axes: a
  layout over Explicit axes is part of the type and changes with `jax.reshard`.

  Args:
    x: a pytree of arrays.
    shardings: a Sharding (or, inside `with mesh:`, a PartitionSpec), or a pytree prefix
      of `x` of them.

  >>> f = jit(lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(mesh, P('x'))))  # doctest: +SKIP
  """
  if sharding_mod.context_mesh() is not None:   # an assertion on all-Explicit meshes
    from tracejax._src import sharding_explicit as _se
    checked = _se.assert_constraint(x, shardings)
    if checked is not None:
      return checked[0]
  return constrain(x, shardings, check_auto=True)


def _check_auto_axes(s):
  mesh, spec = getattr(s, "mesh", None), getattr(s, "spec", None)
  types = dict(zip(getattr(mesh, "axis_names", ()), getattr(mesh, "axis_types", ())))
  for entry in spec or ():
    for name in (entry if isinstance(entry, tuple) else (entry,)):
      if name is not None and types.get(name) == sharding_mod.AxisType.Explicit:
        raise ValueError(
            "The spec of NamedSharding passed to with_sharding_constraint can only refer "
            f"to Auto axes of the mesh. Got spec={spec} and mesh={mesh.abstract_mesh}. "
            "You probably meant to use `reshard` API?")


def constrain(x, shardings, check_auto=False):
  """`with_sharding_constraint` for internal callers (`reshard`, typed layouts), which
  may name Explicit axes."""
  leaves, tree = tree_util.tree_flatten(x)
  shs = _leaf_shardings(shardings, x, "with_sharding_constraint shardings")
  out = []
  for v, s in zip(leaves, shs):
    s = _as_sharding(s, None, "with_sharding_constraint shardings")
    if s is None:
      out.append(v)
      continue
    if check_auto:
      _check_auto_axes(s)
    shape = tuple(np.shape(v)) if not isinstance(v, Tracer) else tuple(v.shape)
    try:
      s.check_shape(shape)
    except ValueError as err:
      raise ValueError(f"One of with_sharding_constraint arguments is incompatible with its "
                       f"sharding annotation {s!r}: {err}") from None
    out.append(sharding_constraint_p.bind(v, sharding=s))
  return tree_util.tree_unflatten(tree, out)


def _sharding_constraint_impl(x, *, sharding):
  return sharding_mod.put_sharded(x, x.aval if type(x) is Array else get_aval(x), sharding)


sharding_constraint_p.def_impl(_sharding_constraint_impl)
sharding_constraint_p.def_abstract_eval(lambda aval, *, sharding: aval)
ad.deflinear(sharding_constraint_p,
             lambda ct, *, sharding: [sharding_constraint_p.bind(ct, sharding=sharding)])


def _sharding_constraint_batch(vals, dims, *, sharding):
  x, d = vals[0], dims[0]
  if d is None:
    return sharding_constraint_p.bind(x, sharding=sharding), None
  if isinstance(sharding, sharding_mod.NamedSharding):
    # The batch axis is not split: insert a None at its place in the spec.
    parts = list(sharding.spec) + [None] * (len(x.shape) - 1 - len(sharding.spec))
    parts.insert(d, None)
    return sharding_constraint_p.bind(
        x, sharding=sharding_mod.NamedSharding(sharding.mesh,
                                               sharding_mod.PartitionSpec(*parts))), d
  return x, d   # a raw HloSharding cannot gain an axis: leave the layout to XLA


batching.primitive_batchers[sharding_constraint_p] = _sharding_constraint_batch


def _sharding_constraint_lowering(ctx, x, *, sharding):
  if lowering_partitions() != len(sharding._device_assignment):
    return [x]   # not an SPMD program over these devices: a constraint changes nothing
  hlo_s = sharding._to_xla_hlo_sharding(len(ctx.avals_in[0].shape))
  return [_sharding_custom_call(x, lowering.aval_to_ir_type(ctx.avals_out[0]), str(hlo_s))]


lowering.register_lowering(sharding_constraint_p, _sharding_constraint_lowering)


def reshard(x, shardings):
  """`x` laid out by `shardings` (a Sharding, a PartitionSpec inside `with mesh:`, or a
  pytree prefix of them): a move outside `jit`, a sharding constraint inside.

  >>> y = reshard(x, NamedSharding(mesh, P('x')))   # doctest: +SKIP
  """
  return constrain(x, shardings)
