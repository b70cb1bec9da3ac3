"""`jit`: trace once per argument signature, compile with XLA, then only dispatch.

`jit(f)` is jaxlib's C++ dispatcher (a PjitFunction, made in runtime/backend.py)
in front of a `Jitted`, which holds everything in Python: tracing, compiling,
the tracing cache (shared by every `jit` of the same function), `.lower()`.
A call whose signature (pytree structure, avals, flags) the C++ side has seen
runs the executable without entering Python; any other call reaches
`Jitted._cache_miss`. Under a transformation (or when an argument is a tracer)
the traced jaxpr is bound as the `xla_call` primitive so the outer trace sees
one call equation, as the seeds print it; `inline=True` jits (the jnp ufuncs)
instead join the outer jaxpr. Static arguments and donation keep to the Python
path. The ahead-of-time stages (`.trace()`, `.lower()`, `.compile()`) and the
compile logging are `stages.py`; this module constructs them.
"""
import collections
import functools
import inspect
import sys
import time
import warnings
import weakref

import numpy as np

from tracejax._src import api_util, dtypes, errors, tree_util, util
from tracejax._src import traceback_util
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core import trace as _trace_mod
from tracejax._src.core.trace import Primitive, Tracer, current_trace, eval_trace
from tracejax._src.core.trace import _ctx as _trace_ctx
from tracejax._src import dispatch, stages
from tracejax._src.interpreters import lowering, staging
from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding
from tracejax._src.runtime.array import Array

# interpreters/pxla.py (SPMD programs, shard_map, sharding constraints, pmap: with
# lax/parallel.py a tenth of the code `import tracejax.numpy` would load) is imported
# when first needed. Until it is, no jaxpr can hold its primitives and no cache its
# StagedSpmd entries, so the checks below skip it then.
_PXLA = "tracejax._src.interpreters.pxla"


def _pxla():
  from tracejax._src.interpreters import pxla
  return pxla


def _is_staged_spmd(e):
  pxla = sys.modules.get(_PXLA)
  return pxla is not None and type(e) is pxla.StagedSpmd


# ---- the xla_call primitive (a nested jit inside a traced function) ----

xla_call_p = Primitive("xla_call")
xla_call_p.multiple_results = True
xla_call_p.call_primitive = True


def _xla_call_abstract_eval(*avals, call_jaxpr, **_):
  return [v.aval for v in call_jaxpr.outvars]


xla_call_p.def_abstract_eval(_xla_call_abstract_eval)

_call_exes = weakref.WeakKeyDictionary()   # call_jaxpr -> {avals: _Compiled}


def _xla_call_impl(*args, call_jaxpr, name, device=None, backend=None, donated_invars=None):
  per_jaxpr = _call_exes.setdefault(call_jaxpr, {})
  strip = per_jaxpr.get("float0")
  if strip is None:
    strip = per_jaxpr["float0"] = _strip_float0(call_jaxpr, prune_invars=True)
  jaxpr, _, keep_in, f0_outs = strip
  all_args = args
  avals = tuple(dispatch.arg_aval(x) for x in args)
  if keep_in is not None:  # float0 at the boundary: those values stay on the host
    pairs = [_device_value(x, a) for x, a, k in zip(args, avals, keep_in) if k]
    args, avals = tuple(x for x, _ in pairs), tuple(a for _, a in pairs)
  placed = sharding.placement(args, name) if sharding.needs_placement(args) else None
  mesh = per_jaxpr.get("mesh", False)
  if mesh is False:   # pmaps/shard_maps inside run over their mesh's devices (pxla.py)
    pxla = sys.modules.get(_PXLA)
    mesh = per_jaxpr["mesh"] = pxla.staged_mesh(jaxpr) if pxla is not None else None
  if (placed is not None and sharding.spmd_arrays(args)) or mesh is not None:
    # Arguments laid out over several devices: one SPMD program over them (pxla.py).
    if _trace_mod.sharding_rule is not None and any(
        type(a) is not type(v.aval) for a, v in zip(avals, jaxpr.invars)):
      jaxpr = _typed_call(per_jaxpr, jaxpr, avals, name)
    outs = _pxla().apply_spmd_jaxpr(jaxpr, args, avals, name, mesh)
    if config.jax_debug_nans or config.jax_debug_infs:
      _check_nans_op_by_op(call_jaxpr, [], all_args, _with_host_float0(outs, f0_outs), name)
    return _with_host_float0(outs, f0_outs)
  key = avals if placed is None else (avals, placed)
  entry = per_jaxpr.get(key)
  if entry is None:
    entry = per_jaxpr[key] = _compile_jaxpr(jaxpr, name, None, *(placed or ()))
  if placed is None:
    bufs = [dispatch.to_buffer(x, a) for x, a in zip(args, avals)]
  else:
    bufs = [sharding.on_device(x, a, placed[0], dispatch.to_buffer)
            for x, a in zip(args, avals)]
  outs = entry.exe.execute(bufs)
  if config.jax_debug_nans or config.jax_debug_infs:
    _check_nans_op_by_op(call_jaxpr, [], all_args, _with_host_float0(outs, f0_outs), name)
  return _with_host_float0(outs, f0_outs)


xla_call_p.def_impl(_xla_call_impl)


def _typed_call(per_jaxpr, jaxpr, avals, name):
  """A program calling `jaxpr` (traced on untyped arguments: the body of a jitted
  function under `vmap`) on arguments of Explicit sharding types `avals`, its results
  typed by the call's sharding rule (sharding_explicit.py), so they are laid out as
  JAX lays them out. Cached per signature on `per_jaxpr`."""
  key = ("typed", avals)
  typed = per_jaxpr.get(key)
  if typed is None:
    params = dict(call_jaxpr=jaxpr, name=name, device=None, backend=None,
                  donated_invars=(False,) * len(avals))
    ins = [ir.Var(a) for a in avals]
    outs = [ir.Var(a) for a in xla_call_p.out_avals(list(avals), params)]
    typed = per_jaxpr[key] = ir.Jaxpr([], ins, outs, [ir.JaxprEqn(ins, outs, xla_call_p,
                                                                   params)])
  return typed


def _xla_call_lowering(ctx, *args, call_jaxpr, **_):
  return lowering.jaxpr_subcomp(ctx.module_context, call_jaxpr, [], args)


lowering.register_lowering(xla_call_p, _xla_call_lowering)


def _compile_jaxpr(jaxpr, name, donated=None, device=None, committed=False):
  text = stages.lower_jaxpr(jaxpr, name, donated)
  out_avals = [v.aval for v in jaxpr.outvars]
  exe = backend.compile(text, out_avals, device, name=name, committed=committed)
  return dispatch._Compiled(exe, out_avals)


def _check_nans_op_by_op(jaxpr, consts, args, outs, name):
  """On a NaN in a jitted result, re-run op by op so the error names the primitive."""
  try:
    dispatch.check_nans(name, outs)
  except FloatingPointError:
    ir.eval_jaxpr(jaxpr, consts, *args)  # raises at the first primitive that made a NaN
    raise


# ---- float0 values stay on the host ----
# float0 (the tangent type of integer values) holds no data and XLA has no such
# type: float0 outputs of a jitted program are made on the host as zeros, and a
# float0 constant or argument is never sent to the device.

def _is_float0_var(v):
  return getattr(v, "aval", None) is not None and v.aval.dtype == dtypes.float0


def _strip_float0(jaxpr, prune_invars=False):
  """(jaxpr without float0 outputs, keep-const mask, keep-invar mask, float0 outs).

  The float0 outputs are dropped (with the equations only they used), then any
  float0 constvar (and, with `prune_invars`, invar) nothing reads any more.
  `float0 outs` lists (position, aval) of each dropped output, or is None when
  the jaxpr has no float0 at its boundary (the jaxpr is then returned as is).
  """
  if not any(map(_is_float0_var, jaxpr.constvars + jaxpr.outvars + jaxpr.invars)):
    return jaxpr, None, None, None
  f0_outs = [(i, v.aval) for i, v in enumerate(jaxpr.outvars) if _is_float0_var(v)]
  j, _ = staging.dce_jaxpr(jaxpr, [not _is_float0_var(v) for v in jaxpr.outvars])
  used = {v for e in j.eqns for v in e.invars if type(v) is ir.Var}
  used.update(v for v in j.outvars if type(v) is ir.Var)
  keep_c = [not (_is_float0_var(v) and v not in used) for v in j.constvars]
  keep_i = [not (prune_invars and _is_float0_var(v) and v not in used) for v in j.invars]
  j = ir.Jaxpr([v for v, k in zip(j.constvars, keep_c) if k],
               [v for v, k in zip(j.invars, keep_i) if k], j.outvars, j.eqns)
  return j, keep_c, keep_i, f0_outs


def _device_value(x, aval):
  """A float0 value still read by the program travels as bool zeros (its lowering)."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, np.bool_), avals_mod.ShapedArray(aval.shape, np.bool_)
  return x, aval


def _with_host_float0(outs, f0_outs):
  """The device outputs with each float0 output (made on the host) put back."""
  if not f0_outs:
    return outs
  outs = list(outs)
  for i, aval in f0_outs:
    outs.insert(i, np.zeros(aval.shape, dtypes.float0))
  return outs


# ---- static arguments ----

class _IdentityKey:
  """Stands for an array (or tracer) passed as a static argument: equal only to itself.

  2020 JAX hashed such static arguments by object identity, and the seeds rely on it
  (seed 015 jits `elbo` with arrays at `static_argnums`); today's JAX raises instead.
  tracejax keeps the 2020 behaviour for arrays and tracers, with a warning, and raises
  JAX's error for every other unhashable value (lists, dicts, sets, ...)."""
  __slots__ = ("obj",)

  def __init__(self, obj):
    self.obj = obj

  def __hash__(self):
    return id(self.obj)

  def __eq__(self, other):
    return type(other) is _IdentityKey and other.obj is self.obj


def _static_key(value, where, fun):
  try:
    hash(value)
    return value
  except TypeError as e:
    if isinstance(value, (np.ndarray, Array, Tracer)):
      warnings.warn(
          f"Static argument {where} of type {type(value)} for function "
          f"{util.fun_name(fun)} is not hashable; it is compared by identity (as in 2020 "
          "JAX), so each new object retraces. Today's JAX raises here: pass hashable "
          "values (tuples, numbers, strings) as static arguments.", stacklevel=4)
      return _IdentityKey(value)
    # JAX's error (0.10.2 wording): a static argument is part of the cache key.
    raise ValueError(
        "Non-hashable static arguments are not supported. An error occurred while trying "
        f"to hash an object of type {type(value)}, {value}. The error was:\n"
        f"{type(e).__name__}: {e}\n") from None


# ---- the jitted function ----

class _Entry:
  __slots__ = ("exe", "out_avals", "out_tree", "const_bufs", "jaxpr", "consts", "float0_outs",
               "extended")

  def __init__(self):
    self.extended = False  # key-array (extended dtype) inputs: no C++ fast path


def _arg_aval(x, fun, path):
  if type(x) is Array:
    return x.aval
  api_util.check_array_dtype(x)  # NumPy strings/objects: JAX's error, not XLA's
  try:
    return avals_mod.get_aval(x)
  except TypeError:
    raise TypeError(
        f"Argument {path} of type {type(x)} passed to jitted function "
        f"{util.fun_name(fun)} is not a valid JAX type (arrays, NumPy arrays, Python "
        "scalars, and pytrees of them). Mark it static with static_argnums or "
        "static_argnames if it is a Python value.") from None


# Flags that change what tracing a function produces: part of every cache key.
_TRACE_FLAGS = ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_threefry_partitionable",
                "jax_default_matmul_precision", "jax_enable_checks")

# fun -> {jit options: trace cache}. Two `jit(f)` of the same `f` share their cache,
# as in JAX (the seeds' "Sharp Bits" relies on it); the C++ dispatcher's cache is
# likewise keyed by (fun, options).
_shared_caches = weakref.WeakKeyDictionary()


def _cache_for(fun, options):
  try:
    per_fun = _shared_caches.setdefault(fun, {})
  except TypeError:  # not weak-referenceable: a private cache
    return {}
  return per_fun.setdefault(options, {})


_UNKNOWN = object()  # Jitted._signature not computed yet


class Jitted:
  """The Python side of a jitted function: tracing, compiling and every slow path.

  `jit` returns jaxlib's C++ dispatcher (a PjitFunction) wrapping this; it calls
  `_cache_miss` for a signature it has not seen, for tracer arguments and under
  transformations, and otherwise runs the executable itself.
  """

  def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
               device=None, backend=None, inline=False, keep_unused=False,
               in_shardings=None, out_shardings=None):
    api_util.check_callable(fun)
    self.fun = fun
    self.static_argnums = _normalize_argnums(static_argnums, "static_argnums")
    if isinstance(static_argnames, str):
      static_argnames = (static_argnames,)
    self.static_argnames = tuple(static_argnames)
    self.donate_argnums = _normalize_argnums(donate_argnums, "donate_argnums")
    one = _single_device_of(in_shardings, out_shardings) if device is None else None
    if one is not None:   # SingleDeviceShardings of one device: jit(device=...)'s program
      device, in_shardings, out_shardings = one, None, None
    self.device, self.backend, self.inline = device, backend, inline
    self._shardings = None if in_shardings is None and out_shardings is None else \
        _pxla().spmd_options(in_shardings, out_shardings)
    self.options = (self.static_argnums, self.static_argnames, self.donate_argnums,
                    device, backend, inline) + \
        ((self._shardings[:2],) if self._shardings else ())
    self._cache = _cache_for(fun, self.options)
    self._name = util.fun_name(fun)
    self._signature = _UNKNOWN
    if (self.static_argnums or self.static_argnames or self.donate_argnums) and \
        self._sig is not None:  # (with none of them there is nothing to check)
      _check_argnums_against_signature(self._sig, self.static_argnums, self.static_argnames,
                                       self.donate_argnums)
    functools.update_wrapper(self, fun, updated=())

  @property
  def _sig(self):
    """`inspect.signature(fun)`, or None; computed when first needed (static and donated
    arguments, error messages), as jax.numpy makes ~100 jitted functions at import."""
    if self._signature is _UNKNOWN:
      try:
        self._signature = inspect.signature(self.fun)
      except (TypeError, ValueError):
        self._signature = None
    return self._signature

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  def __repr__(self):
    return f"<jitted function {self._name}>"

  # -- argument handling --

  def _split(self, args, kwargs):
    """(dynamic positional args, dynamic kwargs, static key, static values)."""
    snums, snames = self.static_argnums, self.static_argnames
    if not snums and not snames:
      return args, kwargs, (), None
    nargs = len(args)
    static_pos = []
    for i in snums:
      j = i + nargs if i < 0 else i
      if j >= nargs or j < 0:
        if self._sig is not None and not self._static_has_default(i):
          raise ValueError(
              f"jitted function {self._name} has static_argnums={snums}, but was called "
              f"with only {nargs} positional arguments.")
        continue
      static_pos.append(j)
    dyn = tuple(a for i, a in enumerate(args) if i not in static_pos)
    skeys, svals = [], []
    for j in sorted(static_pos):
      skeys.append(_static_key(args[j], f"at position {j}", self.fun))
      svals.append((j, args[j]))
    dkw = kwargs
    if snames and kwargs:
      dkw = {k: v for k, v in kwargs.items() if k not in snames}
      for k in sorted(kwargs):
        if k in snames:
          skeys.append((k, _static_key(kwargs[k], f"'{k}'", self.fun)))
          svals.append((k, kwargs[k]))
    return dyn, dkw, tuple(skeys), svals

  def _static_has_default(self, i):
    params = list(self._sig.parameters.values())
    return i < len(params) and params[i].default is not inspect.Parameter.empty

  def _merge(self, dyn, dkw, svals):
    if not svals:
      return dyn, dkw
    args = list(dyn)
    kwargs = dict(dkw)
    for k, v in svals:
      if isinstance(k, int):
        args.insert(k, v)
      else:
        kwargs[k] = v
    return tuple(args), kwargs

  # -- tracing and compiling --

  def _trace(self, in_tree, in_avals, svals):
    out_store = []

    def flat_fun(*flat_args):
      dyn, dkw = tree_util.tree_unflatten(in_tree, flat_args)
      args, kwargs = self._merge(dyn, dkw, svals)
      if flat_args and isinstance(flat_args[0], Tracer):  # for errors naming an argument
        flat_args[0]._trace.debug_info = _debug_info(self, in_tree, svals, len(args))
      out = self.fun(*args, **kwargs)
      leaves, out_tree = tree_util.tree_flatten(out)
      for i, x in enumerate(leaves):
        if not isinstance(x, Tracer) and not avals_mod.is_valid_jaxtype(x):
          raise TypeError(f"jitted function {self._name} returned a value of type "
                          f"{type(x)} at output leaf {i}, which is not a valid JAX type.")
      out_store.append(out_tree)
      return leaves

    t0 = time.perf_counter()
    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, in_avals)
    stages.log_traced(self._name, time.perf_counter() - t0)
    if config.jax_enable_checks:
      ir.check_jaxpr(jaxpr)
    return jaxpr, consts, out_store[0]

  def _donated(self, dyn, dkw):
    if not self.donate_argnums:
      return None
    flags = []
    for i, a in enumerate(dyn):
      flags += [i in self.donate_argnums] * len(tree_util.tree_leaves(a))
    flags += [False] * len(tree_util.tree_leaves(dkw))
    return flags

  def _compile(self, key, in_tree, in_avals, svals, dyn, dkw, placed=None):
    aot = self._cache.pop(("aot", key), None)  # traced by `.trace()`/`.lower()` already
    if aot is not None:
      jaxpr, consts, out_tree = aot
    else:
      jaxpr, consts, out_tree = self._trace(in_tree, in_avals, svals)
    e = _Entry()
    e.jaxpr, e.consts, e.out_tree = jaxpr, consts, out_tree
    e.extended = not all(isinstance(a.dtype, np.dtype) for a in in_avals)
    if any(isinstance(c, Tracer) for c in consts):
      return e  # closes over an outer trace's values: goes through xla_call
    pxla = sys.modules.get(_PXLA)
    # A staged mesh wins over placement by committed inputs (which then must be on its
    # devices, pxla's error), not over jit's device=/backend=.
    mesh = pxla.staged_mesh(jaxpr) if pxla is not None and (placed is None or (
        self.device is None and self.backend is None)) else None
    if mesh is not None:  # shard_map/sharding constraints/pmaps over a mesh: an SPMD program
      e = self._cache[key] = pxla.StagedSpmd(jaxpr, consts, out_tree, mesh)
      return e
    donated = self._donated(dyn, dkw)
    # float0 outputs are made on the host and float0 constants never sent (above).
    jaxpr, keep_c, _, e.float0_outs = _strip_float0(jaxpr)
    if keep_c is not None:
      consts = [c for c, k in zip(consts, keep_c) if k]
    compiled = _compile_jaxpr(jaxpr, self._name, donated, *(placed or ()))
    e.exe, e.out_avals = compiled.exe, compiled.out_avals
    dev = placed[0] if placed else None
    e.const_bufs = [dispatch.to_buffer(*_device_value(c, avals_mod.get_aval(c)), dev)
                    for c in consts]
    self._cache[key] = e
    return e

  # -- calling --

  @traceback_util.api_boundary
  def __call__(self, *args, **kwargs):
    return self._call_python(args, kwargs)[0]

  @traceback_util.api_boundary  # the C++ dispatcher's way into Python: errors surface here
  def _cache_miss(self, *args, **kwargs):
    """Called by the C++ dispatcher: (output, fast-path data or None, False)."""
    out, e, leaves = self._call_python(args, kwargs)
    fastpath = None
    if e is not None and not (config.jax_debug_nans or config.jax_debug_infs
                              or getattr(e, "extended", False)):
      out_treedef = backend.pytree_registry.flatten(out)[1]
      spmd = getattr(e, "spmd_fastpath", None)   # an SPMD entry (interpreters/pxla.py)
      fastpath = spmd(out_treedef, leaves) if spmd is not None else \
          backend.fastpath_data(e.exe, out_treedef, len(leaves), e.const_bufs)
    return out, fastpath, False

  def _call_python(self, args, kwargs):
    """(output, the entry that ran if the C++ path may reuse it, the flat arguments)."""
    if config.jax_disable_jit:
      return self.fun(*args, **kwargs), None, ()
    if self.inline and _trace_ctx.trace is not eval_trace:
      args, kwargs = _jvp_typed_tangents(args, kwargs)
      return self.fun(*args, **kwargs), None, ()
    dyn, dkw, skey, svals = self._split(args, kwargs)
    leaves, in_tree = tree_util.tree_flatten((dyn, dkw))
    if _trace_ctx.trace is not eval_trace or any(isinstance(x, Tracer) for x in leaves):
      if self.inline:
        return self.fun(*args, **kwargs), None, ()
      return self._call_traced(leaves, in_tree, skey, svals), None, ()
    if self.inline and not all(map(avals_mod.is_valid_jaxtype, leaves)):
      return self.fun(*args, **kwargs), None, ()  # the function's own error message
    in_avals = tuple([_arg_aval(x, self.fun, i) for i, x in enumerate(leaves)])
    key = (in_tree, skey, in_avals, tuple([getattr(config, f) for f in _TRACE_FLAGS]))
    cmesh = sharding.context_mesh()
    if cmesh is not None:   # inside `jax.set_mesh`: it runs over that mesh (pxla.py)
      key = key[:3] + (key[3] + (cmesh,),)
    if self._shardings is not None or cmesh is not None or sharding.spmd_arrays(leaves):
      # Shardings asked for, arguments laid out over a mesh, or `jax.set_mesh`: one
      # SPMD program.
      out, e = _pxla().call_spmd(self, leaves, in_tree, in_avals, key, svals, dyn, dkw)
      return out, e, leaves
    placed = None
    if self.device is not None or self.backend is not None or \
        sharding.needs_placement(leaves):
      # Where committed inputs are (or `device=`): runtime/sharding.py decides.
      placed = sharding.placement(leaves, self._name, self._requested_device(), lambda: (
          stages.leaf_names(self._sig, self._dyn_positions(len(args), svals), dyn, dkw)))
      key = key[:3] + (key[3] + (placed,),)
    e = self._cache.get(key)
    if e is None:
      if config.jax_explain_cache_misses:
        self._explain_miss(key, args, dyn, dkw, svals)
      e = self._compile(key, in_tree, in_avals, svals, dyn, dkw, placed)
      if not hasattr(e, "exe") and not _is_staged_spmd(e):
        return self._call_traced(leaves, in_tree, skey, svals, e), None, ()
    if _is_staged_spmd(e):  # shard_map/sharding constraints inside: SPMD (pxla.py)
      out, e = _pxla().call_spmd(self, leaves, in_tree, in_avals, key, svals, dyn, dkw, e)
      return out, e, leaves
    if placed is not None:
      bufs = e.const_bufs + [sharding.on_device(x, a, placed[0], dispatch.to_buffer)
                             for x, a in zip(leaves, in_avals)]
      outs = e.exe.execute(bufs)
      # The C++ path may reuse this executable only when every argument was an Array
      # already on its device (it then checks each argument's sharding itself).
      reuse = e if (self.device is None and self.backend is None and not self.donate_argnums
                    and e.float0_outs is None
                    and all(b is x for b, x in zip(bufs[len(e.const_bufs):], leaves))) \
          else None
      outs = _with_host_float0(outs, e.float0_outs)
      return tree_util.tree_unflatten(e.out_tree, outs), reuse, leaves
    if self.donate_argnums:  # donated inputs need buffers of their own (see _private_buffer)
      bufs = e.const_bufs + [x if type(x) is Array else _private_buffer(x, a)
                             for x, a in zip(leaves, in_avals)]
    elif e.float0_outs is not None:  # a float0 argument goes as bool zeros (its lowering)
      bufs = e.const_bufs + [x if type(x) is Array else dispatch.to_buffer(*_device_value(x, a))
                             for x, a in zip(leaves, in_avals)]
    else:
      bufs = e.const_bufs + [x if type(x) is Array else dispatch.to_buffer(x, a)
                             for x, a in zip(leaves, in_avals)]
    outs = e.exe.execute(bufs)
    if config.jax_debug_nans or config.jax_debug_infs:
      _check_nans_op_by_op(e.jaxpr, e.consts, leaves, outs, self._name)
    # Host-made float0 outputs need this Python path: the C++ one returns device outputs.
    reusable = None if self.donate_argnums or e.float0_outs is not None else e
    outs = _with_host_float0(outs, e.float0_outs)
    return tree_util.tree_unflatten(e.out_tree, outs), reusable, leaves

  def _requested_device(self):
    if self.device is not None:
      return self.device
    if self.backend is not None:
      return backend.local_devices(self.backend)[0]
    return None

  def _call_traced(self, leaves, in_tree, skey, svals, entry=None):
    in_avals = tuple(avals_mod.raise_to_shaped(avals_mod.get_aval(x)) for x in leaves)
    if entry is None:
      # As the eager key: what the trace reads (the flags, the `set_mesh` mesh) keys it.
      key = ("traced", in_tree, skey, in_avals,
             tuple([getattr(config, f) for f in _TRACE_FLAGS]), sharding.context_mesh())
      entry = self._cache.get(key)
      if entry is None:
        jaxpr, consts, out_tree = self._trace(in_tree, in_avals, svals)
        entry = _Entry()
        entry.jaxpr, entry.consts, entry.out_tree = jaxpr, consts, out_tree
        if not any(isinstance(c, Tracer) for c in consts):
          self._cache[key] = entry
    call_jaxpr, const_args = staging.closed_call_jaxpr(entry.jaxpr, entry.consts)
    outs = xla_call_p.bind(*const_args, *leaves, call_jaxpr=call_jaxpr, name=self._name,
                           device=self.device, backend=self.backend)
    return tree_util.tree_unflatten(entry.out_tree, outs)

  # -- ahead-of-time stages (stages.py) --

  def _dyn_positions(self, nargs, svals):
    static = {k for k, _ in (svals or ()) if isinstance(k, int)}
    return [i for i in range(nargs) if i not in static]

  def _explain_miss(self, key, args, dyn, dkw, svals):
    seen = [k for k in self._cache if type(k) is tuple and len(k) == 4 and
            not isinstance(k[0], str)]
    names = lambda: stages.leaf_names(self._sig, self._dyn_positions(len(args), svals), dyn,
                                      dkw)
    stages.explain_cache_miss(self.fun, self._name, key, seen, _TRACE_FLAGS, names)

  def trace(self, *args, **kwargs):
    """Trace for these arguments (arrays, `ShapeDtypeStruct`s, static values); returns a
    `stages.Traced` (`.jaxpr`, `.out_info`, `.args_info`, `.lower()`).

    Reuses the tracing cache: a signature already called is not traced again, and a
    later call with this signature does not trace again.
    """
    dyn, dkw, skey, svals = self._split(args, kwargs)
    leaves, in_tree = tree_util.tree_flatten((dyn, dkw))
    in_avals = tuple([_arg_aval(x, self.fun, i) for i, x in enumerate(leaves)])
    key = (in_tree, skey, in_avals, tuple([getattr(config, f) for f in _TRACE_FLAGS]))
    e = self._cache.get(key)
    if e is not None:
      jaxpr, consts, out_tree = e.jaxpr, e.consts, e.out_tree
    else:
      aot = self._cache.get(("aot", key))
      if aot is None:
        if config.jax_explain_cache_misses:
          self._explain_miss(key, args, dyn, dkw, svals)
        aot = self._trace(in_tree, tuple(map(avals_mod.raise_to_shaped, in_avals)), svals)
        if not any(isinstance(c, Tracer) for c in aot[1]) and not self.inline:
          self._cache[("aot", key)] = aot
      jaxpr, consts, out_tree = aot
    names = stages.leaf_names(self._sig, self._dyn_positions(len(args), svals), dyn, dkw)
    info = stages._StageInfo(self._name, in_tree, out_tree, in_avals,
                             [v.aval for v in jaxpr.outvars], self._donated(dyn, dkw), names,
                             self.donate_argnums)
    # A sharded signature lowers to the SPMD program its call compiles (pxla.py).
    spmd = None if self.inline or any(isinstance(c, Tracer) for c in consts) else \
        _pxla().stage_spmd(self, leaves, in_avals, dyn, dkw, jaxpr, out_tree)
    return stages.Traced(ir.ClosedJaxpr(jaxpr, consts), info, spmd)

  @traceback_util.api_boundary
  def lower(self, *args, **kwargs):
    """Trace and lower for these arguments; returns a `stages.Lowered`
    (`.as_text()`, `.compile()`, `.cost_analysis()`)."""
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    return self.trace(*args, **kwargs).out_info

  def clear_cache(self):
    self._cache.clear()


def clear_caches():
  """Clear every tracing, lowering and compilation cache held in this process.

  Each jitted function traces and compiles again on its next call (the on-disk
  compilation cache, if enabled, still spares the XLA compile).

  >>> from tracejax import jit
  >>> f = jit(lambda x: x + 1)
  >>> _ = f(1.0)
  >>> clear_caches()   # the next f(1.0) traces again
  """
  for per_fun in list(_shared_caches.values()):
    for cache in per_fun.values():
      cache.clear()  # in place: every Jitted holds its cache dict
  _call_exes.clear()
  dispatch.clear_cache()
  backend.clear_caches()


def _private_buffer(x, aval):
  """A fresh device buffer for a non-Array argument of a function with donation:
  `dispatch.to_buffer` shares the buffers of small constants between calls, and
  donating one would delete it for every later user."""
  if not isinstance(aval.dtype, np.dtype):  # a key array: a fresh copy of its data
    return _private_buffer(aval.dtype.physical_value(x), aval.dtype.physical_aval(aval))
  return backend.device_put(np.asarray(x, aval.dtype))


def _debug_info(jitted, in_tree, svals, nargs):
  """(name, source location, "jit", names of the flat inputs) for error messages
  (`errors.origin_message`); the names are computed only if an error needs them."""
  fun = inspect.unwrap(jitted.fun)
  code = getattr(fun, "__code__", None)
  where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""

  def names():
    try:
      params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
      params = []
    pos = jitted._dyn_positions(nargs, svals)
    out = []
    for path, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(in_tree, [0] * in_tree.num_leaves))[0]:
      kind, key, rest = path[0].idx, path[1], path[2:]
      if kind == 0:
        i = pos[key.idx] if key.idx < len(pos) else key.idx
        base = params[i] if i < len(params) and not params[i].startswith("*") else f"args[{i}]"
      else:
        base = key.key
      out.append(base + tree_util.keystr(tuple(rest)))
    return out
  return getattr(jitted, "_name", "<fun>"), where, "jit", names


def _normalize_argnums(argnums, name):
  if argnums is None:
    return ()
  if isinstance(argnums, int):
    return (argnums,)
  try:
    items = list(argnums)
  except TypeError:
    raise TypeError(f"{name} must be an int or a sequence of ints, got {argnums!r}") from None
  # operator.index, not int(): a string or float argnum is a TypeError (as in JAX), not
  # parsed or truncated.
  for i in items:
    if not hasattr(type(i), "__index__"):
      raise TypeError(f"{name} must be an int or a sequence of ints, got {argnums!r}")
  return tuple(int(i) for i in items)


def _check_argnums_against_signature(sig, static_argnums, static_argnames, donate_argnums):
  """Reject, when `jit` is applied, argument numbers/names the function cannot take.

  As JAX: an argnum past the positional parameters (unless there is `*args`), a
  static name that is no parameter (unless there is `**kwargs`), and an argument
  both static and donated are ValueErrors, instead of being silently ignored.
  """
  params = list(sig.parameters.values())
  kinds = {p.kind for p in params}
  P = inspect.Parameter
  n_pos = sum(p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) for p in params)
  if P.VAR_POSITIONAL not in kinds:
    for name, nums in (("static_argnums", static_argnums), ("donate_argnums", donate_argnums)):
      if any(not -n_pos <= i < n_pos for i in nums):
        raise ValueError(f"Jitted function has {name}={nums}, but only accepts {n_pos} "
                         "positional arguments.")
  if P.VAR_KEYWORD not in kinds:
    names = {p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    bad = set(static_argnames) - names
    if bad:
      raise ValueError(f"Jitted function has invalid argnames {bad} in static_argnames. "
                       "Function does not take these args.")
  if P.VAR_POSITIONAL not in kinds and n_pos:
    both = {i % n_pos for i in static_argnums} & {i % n_pos for i in donate_argnums}
    both |= {i for i, p in enumerate(params[:n_pos]) if p.name in static_argnames
             and i in {j % n_pos for j in donate_argnums}}
    if both:
      names = {params[i].name for i in both}
      raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                       f"names {names} appear in both static_argnames and donate_argnames")


def _jvp_typed_tangents(args, kwargs):
  """(args, kwargs) with each tangent of a forward JVP trace typed as its primal.

  An inline jit (a jnp function) is still a jit call to JAX's JVP, which gives the
  called function tangents of its primals' types: a strong tangent of a weak primal
  (one a rule made strong, as x**2's) enters weak, so what the function computes from
  it is weak again. Handled: a forward JVP trace on top, or under vmaps (eager jvp,
  jvp under jit or of a vmap); staged code inlines these calls before any JVP sees
  them, as JAX's staging does. Linearizing (vjp, grad, linearize) is left alone: JAX
  inlines an inline jit into the staged tangent computation, losing the retyping; a
  real jit's is `ad._linearize_call`'s (an identity `weak_retype`)."""
  from tracejax._src.interpreters import ad, batching
  top = _trace_ctx.trace
  if type(top) not in (ad.JVPTrace, batching.BatchTrace):
    return args, kwargs

  def retype(x, trace):
    if type(trace) is batching.BatchTrace:
      if isinstance(x, batching.BatchTracer) and x._trace is trace:
        v = retype(x.val, trace.parent)
        return x if v is x.val else batching.BatchTracer(trace, v, x.batch_dim)
      return retype(x, trace.parent)
    if type(trace) is not ad.JVPTrace or isinstance(trace.parent, ad.PartialEvalTrace) \
        or not isinstance(x, ad.JVPTracer) or x._trace is not trace \
        or type(x.tangent) is ad.Zero:
      return x
    pa, t = ad._aval_of(x.primal), x.tangent
    ta = ad._aval_of(t)
    if pa.weak_type == ta.weak_type or pa.dtype != ta.dtype:
      return x
    from tracejax._src.lax import elementwise
    with _trace_mod.set_current_trace(trace.parent):
      t = elementwise._convert_element_type(t, ta.dtype, weak_type=pa.weak_type)
    return ad.JVPTracer(trace, x.primal, t)

  if not any(isinstance(x, Tracer) for x in (*args, *kwargs.values())):
    return args, kwargs
  return (tuple(retype(x, top) for x in args), {k: retype(v, top) for k, v in kwargs.items()})


def jit(fun=None, static_argnums=(), static_argnames=(), donate_argnums=(), *,
        device=None, backend=None, inline=False, keep_unused=False, in_shardings=None,
        out_shardings=None):
  """Compile `fun` with XLA; traces once per argument shape/dtype/static values.

  Usable as `jit(f)`, `@jit` or `@jit(static_argnums=...)` (and with
  `functools.partial(jit, static_argnums=...)`). `inline=True` makes the call
  disappear under transformations: its operations join the outer jaxpr.
  `in_shardings`/`out_shardings` (Shardings, or pytree prefixes of the arguments and
  outputs; None entries: left to XLA) make it one SPMD program partitioned by XLA over
  their mesh, as do arguments already laid out by a NamedSharding
  (interpreters/pxla.py).

  >>> f = jit(lambda x: x * 2.)
  >>> f(3.)
  DeviceArray(6., dtype=float32)
  """
  if fun is None:
    return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                         donate_argnums=donate_argnums, device=device, backend=backend,
                         inline=inline, in_shardings=in_shardings,
                         out_shardings=out_shardings)
  if device is not None and backend is not None:
    raise ValueError("can't specify both a device and a backend for jit, "
                     f"got device={device!r} and backend={backend!r}")
  jitted = Jitted(fun, static_argnums, static_argnames, donate_argnums, device, backend,
                  inline, in_shardings=in_shardings, out_shardings=out_shardings)
  if jitted.donate_argnums or jitted.static_argnums or jitted.static_argnames:
    # Donation and static arguments stay on the Python path: the C++ one rejects
    # unhashable static values, which tracejax accepts (by identity, with a warning).
    return jitted
  return _cpp_jit(jitted)


def _single_device_of(in_shardings, out_shardings):
  """The device when every sharding given to jit is a SingleDeviceSharding of that one
  device (None otherwise): such a jit is a single-device program there."""
  found = set()
  for s in tree_util.tree_leaves((in_shardings, out_shardings),
                                 is_leaf=lambda v: isinstance(v, sharding.Sharding)):
    if type(s) is not sharding.SingleDeviceSharding:
      return None
    found.add(s._device)
  return found.pop() if len(found) == 1 else None


def _cpp_jit(jitted, static_argnums=(), static_argnames=()):
  """jaxlib's C++ dispatcher in front of `jitted` (see runtime/backend.py)."""
  f = backend.make_cpp_jit(jitted._name, jitted.fun, jitted._cache_miss, static_argnums,
                               static_argnames, jitted.options)
  f = functools.wraps(jitted.fun)(f)
  f._jitted = jitted
  return f


def inline_jit(fun=None, *, static_argnames=()):
  """An inline `jit` for tracejax's own jnp functions, static arguments included.

  Eager calls run through the C++ dispatcher, which also hashes the static
  arguments (axis, dtype, keepdims...): their values are always hashable here,
  so the user-facing policy for unhashable static values does not arise. Under a
  transformation the function runs inline, its operations joining the outer jaxpr.
  """
  if fun is None:
    return functools.partial(inline_jit, static_argnames=static_argnames)
  argnums = ()
  if static_argnames:
    params = list(inspect.signature(fun).parameters.values())
    argnums = tuple(i for i, p in enumerate(params) if p.name in static_argnames and
                    p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
  jitted = Jitted(fun, argnums, static_argnames, inline=True)
  return _cpp_jit(jitted, argnums, static_argnames)


def _install_cpp_jit_methods():
  """The AOT and cache methods of jitted functions, on jaxlib's PjitFunction type."""
  cls = backend.PjitFunction
  cls.lower = lambda self, *a, **k: self._jitted.lower(*a, **k)
  cls.trace = lambda self, *a, **k: self._jitted.trace(*a, **k)
  cls.eval_shape = lambda self, *a, **k: self._jitted.eval_shape(*a, **k)
  cls.clear_cache = lambda self: (self._jitted.clear_cache(), self._clear_cache())
  cls.fun = property(lambda self: self._jitted.fun)


_install_cpp_jit_methods()
stages.Wrapped.register(backend.PjitFunction)
stages.Wrapped.register(Jitted)
tree_util.add_registration_hook(backend.pytree_registry.register_node)


def _ordered_dict_flatten(x):
  keys = tuple(x)
  return [x[k] for k in keys], keys


def _defaultdict_flatten(x):
  keys = tree_util._sorted_keys(x)
  return [x[k] for k in keys], (x.default_factory, keys)


# jaxlib's registry knows None, tuples, namedtuples, lists and dicts; these two are
# nodes for tracejax too, with the same child order as tree_util's.
backend.pytree_registry.register_node(
    collections.OrderedDict, _ordered_dict_flatten,
    lambda keys, vals: collections.OrderedDict(zip(keys, vals)))
backend.pytree_registry.register_node(
    collections.defaultdict, _defaultdict_flatten,
    lambda aux, vals: collections.defaultdict(aux[0], zip(aux[1], vals)))
_trace_mod.on_trace_change = backend.tracing_flag.set_local
_ = (dtypes, errors)


def _register_call_rules():
  from tracejax._src.interpreters import ad
  ad.primitive_transposes[xla_call_p] = ad._call_transpose


_register_call_rules()
