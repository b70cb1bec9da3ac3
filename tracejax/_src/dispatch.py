"""Eager execution: a primitive applied outside `jit` runs as its own small XLA program.

Each (primitive, params, input avals) is lowered and compiled once, then only
dispatched. Execution is asynchronous: the result Arrays may still be
computing when they are returned.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src import errors
from tracejax._src.interpreters import lowering
from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding
from tracejax._src.runtime.array import Array

_cache = {}


def _params_key(params):
  try:
    key = tuple(params.items())
    hash(key)
    return key
  except TypeError:
    return tuple((k, _hashable(v)) for k, v in params.items())


def _hashable(v):
  try:
    hash(v)
    return v
  except TypeError:
    if isinstance(v, (list, tuple)):
      return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
      return tuple((k, _hashable(x)) for k, x in sorted(v.items()))
    if isinstance(v, np.ndarray):
      return (v.shape, v.dtype.str, v.tobytes())
    return id(v)


# ---- values to device buffers ----

_scalar_bufs = {}


def to_buffer(x, aval, device=None):
  """The device buffer for argument `x` (an Array, NumPy value or Python scalar)."""
  if type(x) is Array:
    return x
  if isinstance(x, Tracer):
    raise errors.UnexpectedTracerError(x)
  if not isinstance(aval.dtype, np.dtype):  # a key array (extended dtype): its data
    return to_buffer(aval.dtype.physical_value(x), aval.dtype.physical_aval(aval), device)
  if not aval.shape:  # small constants recur (1.0, 0, -inf): keep their buffers
    key = (aval.dtype, np.asarray(x, aval.dtype).tobytes(), device)
    buf = _scalar_bufs.get(key)
    if buf is None:
      if len(_scalar_bufs) > 4096:
        _scalar_bufs.clear()
      buf = _scalar_bufs[key] = backend.device_put(np.asarray(x, aval.dtype), device)
    return buf
  return backend.device_put(np.asarray(x, aval.dtype), device)


def arg_aval(x):
  if type(x) is Array:
    return x.aval
  if isinstance(x, Tracer):
    raise errors.UnexpectedTracerError(x)
  return avals_mod.get_aval(x)


# ---- applying one primitive ----

class _Compiled:
  __slots__ = ("exe", "out_avals")

  def __init__(self, exe, out_avals):
    self.exe, self.out_avals = exe, out_avals


def apply_primitive(prim, *args, **params):
  """The eager implementation of every lax primitive."""
  avals = tuple([x.aval if type(x) is Array else arg_aval(x) for x in args])
  try:
    key = (prim, tuple(params.items()), avals)
    entry = _cache.get(key)
  except TypeError:  # an unhashable parameter (a list, an array): hash a converted copy
    key = (prim, _params_key(params), avals)
    entry = _cache.get(key)
  if sharding.needs_placement(args):
    cmesh = sharding.context_mesh()
    if sharding.spmd_arrays(args) or (cmesh is not None and cmesh.size > 1):
      # Laid out over a mesh, or inside `jax.set_mesh`: runs sharded, as in JAX.
      from tracejax._src.interpreters import pxla  # (pxla is below dispatch's users)
      return pxla.apply_spmd(prim, args, avals, params, key[1], cmesh)
    # Committed inputs (or several devices, or another default device): run where the
    # committed inputs are, moving the others there.
    device, committed = sharding.placement(args, prim.name)
    pkey = (key, device, committed)
    entry = _cache.get(pkey)
    if entry is None:
      entry = _cache[pkey] = _compile_primitive(prim, avals, params, device, committed)
    bufs = [sharding.on_device(x, a, device, to_buffer) for x, a in zip(args, avals)]
  else:
    if entry is None:
      entry = _cache[key] = _compile_primitive(prim, avals, params)
    bufs = [x if type(x) is Array else to_buffer(x, a) for x, a in zip(args, avals)]
  results = entry.exe.execute(bufs)  # Arrays carrying entry.out_avals
  if config.jax_debug_nans or config.jax_debug_infs:
    check_nans(prim.name, results)
  return results if prim.multiple_results else results[0]


class _SpmdBody:
  """Stands in for the executable of a primitive whose sub-jaxprs hold a pmap or a
  shard_map over several devices (an eager `scan`/`cond` around a pmap): it runs as one
  SPMD program over that mesh (pxla.py), as it would under `jit`."""
  __slots__ = ("jaxpr", "avals", "mesh", "name")

  def __init__(self, jaxpr, avals, mesh, name):
    self.jaxpr, self.avals, self.mesh, self.name = jaxpr, avals, mesh, name

  def execute(self, bufs):
    from tracejax._src.interpreters import pxla
    return pxla.apply_spmd_jaxpr(self.jaxpr, bufs, self.avals, self.name, self.mesh)


def _compile_primitive(prim, avals, params, device=None, committed=False):
  out_avals = prim.out_avals(list(avals), params)
  invars = [ir.Var(a) for a in avals]
  outvars = [ir.Var(a) for a in out_avals]
  eqn = ir.JaxprEqn(invars, outvars, prim, params)
  jaxpr = ir.Jaxpr([], invars, outvars, [eqn])
  if device is None and next(ir.subjaxprs(eqn), None) is not None:  # (cond, scan, ...)
    import sys
    pxla = sys.modules.get("tracejax._src.interpreters.pxla")  # loaded by pmap/shard_map
    mesh = pxla.staged_mesh(jaxpr) if pxla is not None else None
    if mesh is not None:
      return _Compiled(_SpmdBody(jaxpr, list(avals), mesh, prim.name), out_avals)
  platform = device.client.platform if device is not None else None
  text, _ = lowering.lower_jaxpr(jaxpr, name=prim.name, platform=platform)
  exe = backend.compile(text, out_avals, device, committed=committed)
  return _Compiled(exe, out_avals)


def check_nans(name, arrays):
  """Raise FloatingPointError if any inexact output holds a NaN (or inf, if asked)."""
  for x in arrays:
    if not isinstance(x, Array) or not dtypes.issubdtype(x.dtype, np.inexact):
      continue
    v = np.asarray(x)
    if config.jax_debug_nans and np.isnan(v).any():
      raise FloatingPointError(f"invalid value (nan) encountered in {name}")
    if config.jax_debug_infs and np.isinf(v).any():
      raise FloatingPointError(f"invalid value (inf) encountered in {name}")


def clear_cache():
  _cache.clear()
  _scalar_bufs.clear()
