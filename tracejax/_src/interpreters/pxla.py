"""pmap: a function mapped over a leading axis, one member per device, as ONE replicated
XLA program (`num_replicas` = the axis size, replica i on device i).

The staged form is the `xla_pmap` primitive, whose `call_jaxpr` is the per-member body
(collectives over `axis_name` inside). Its rules:

* impl: lower the body with the axis env `((axis_name, size),)`, compile it once per
  signature as a replicated program (this module owns the replica count and the
  device assignment), split the mapped arguments over the devices and run it; the
  outputs are Arrays with a `PmapSharding` whose shards stay on their devices, and a
  second pmap over the same devices consumes them without a copy;
* jvp: a primal pmap and a tangent pmap of the body's JVP; transpose: a pmap of the
  body's transpose (so psum's transpose, psum, runs across the devices, as in JAX);
  batching (vmap of pmap): the vmapped axis moves inside the per-member body;
* lowering inside another program (jit of pmap, pmap of pmap): the body runs as a
  named-axis vmap inside that program: the same values, on that program's device(s).

`pmap(f)` keeps a per-signature cache of compiled programs: a repeated call flattens
its arguments, finds the entry and runs it, without tracing.
"""
import functools
import operator

import numpy as np

from tracejax._src import tree_util, util
from tracejax._src.config import config
from tracejax._src.core import ir
from tracejax._src.core.avals import get_aval, raise_to_shaped
from tracejax._src.core.trace import Primitive, Tracer, eval_trace
from tracejax._src.core.trace import _ctx as _trace_ctx
from tracejax._src.interpreters import ad, batching, lowering, staging
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
  if devices is not None:
    devices = tuple(devices)
    if len(devices) != n:
      raise ValueError(f"Leading axis size of input to pmapped function must equal the "
                       f"number of local devices passed to pmap. Got axis_size={n}, "
                       f"num_local_devices={len(devices)}.")
    return devices
  available = xb.local_devices(backend_name) if backend_name else xb.local_devices()
  if n > len(available):
    raise ValueError(
        f"compiling computation that requires {n} logical devices, but only "
        f"{len(available)} XLA devices are available (num_replicas={n}, "
        "num_partitions=1)")
  # The default device first (`jax.default_device`), then the others in order.
  default = xb.default_device()
  if default in available and default != available[0] and not backend_name:
    available = [default] + [d for d in available if d != default]
  return tuple(available[:n])


# ---- compiling the body as a replicated program ----

class _Compiled:
  """A body compiled for `devices`: run it on per-device argument Arrays (after
  `const_bufs`, constants of the program, replicated)."""
  __slots__ = ("exe", "devices", "out_avals", "n", "const_bufs")

  def __init__(self, exe, devices, out_avals, const_bufs):
    self.exe, self.devices, self.out_avals, self.n = exe, devices, out_avals, len(devices)
    self.const_bufs = const_bufs

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


def _compile(call_jaxpr, axis_name, devices, name, mapped):
  key = (id(call_jaxpr), axis_name, devices, tuple(mapped))
  hit = _compiled_cache.get(key)
  if hit is not None and hit[0] is call_jaxpr:
    return hit[1]
  n = len(devices)
  platform = devices[0].client.platform
  jaxpr, consts = _block_jaxpr(call_jaxpr, mapped, axis_name, n)
  text, _ = lowering.lower_jaxpr(jaxpr, name=f"pmap_{name}", platform=platform,
                                 num_replicas=n, axis_env=((axis_name, n),))
  out_avals = [v.aval.update(shape=(n,) + tuple(v.aval.shape)) for v in call_jaxpr.outvars]
  psharding = sharding_mod.pmap_sharding(devices)
  exe = xb.compile(text, out_avals, devices=devices, num_replicas=n, committed=True,
                   out_shardings=[psharding] * len(out_avals), name=f"pmap_{name}")
  const_bufs = [sharding_mod.shard_to_devices(c, get_aval(c), devices, False)
                for c in consts]
  c = _Compiled(exe, devices, out_avals, const_bufs)
  if len(_compiled_cache) > 4096:
    _compiled_cache.clear()
  _compiled_cache[key] = (call_jaxpr, c)
  return c


def _execute(compiled, args, mapped_invars):
  bufs = [sharding_mod.shard_to_devices(x, _global_aval(x), compiled.devices, m)
          for x, m in zip(args, mapped_invars)]
  return compiled.execute(bufs)


def _global_aval(x):
  return x.aval if type(x) is Array else get_aval(x)


# ---- the xla_pmap primitive ----

def _xla_pmap_impl(*args, call_jaxpr, axis_name, axis_size, mapped_invars, devices, backend,
                   name, **_):
  devs = _pmap_devices(axis_size, devices, backend)
  return _execute(_compile(call_jaxpr, axis_name, devs, name, mapped_invars), args,
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

  body, consts = _trace_body(tangent_body, avals + t_avals, axis_name, axis_size)
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
  with parallel.extend_axis_env(axis_name, axis_size):
    t_jaxpr, t_consts = ad.transpose_jaxpr(call_jaxpr, linear)
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
  with parallel.extend_axis_env(axis_name, axis_size):
    new_jaxpr, consts, _ = batching.batch_jaxpr(
        call_jaxpr, size, in_dims, out_dims_wanted=[0] * len(call_jaxpr.outvars))
  body, const_args = staging.closed_call_jaxpr(new_jaxpr, consts)
  outs = xla_pmap_p.bind(*const_args, *moved, call_jaxpr=body,
                         mapped_invars=(False,) * len(const_args) + tuple(mapped_invars),
                         axis_name=axis_name, axis_size=axis_size, **params)
  return outs, [1] * len(outs)


batching.primitive_batchers[xla_pmap_p] = _xla_pmap_batch


def _xla_pmap_lowering(ctx, *args, call_jaxpr, axis_name, axis_size, mapped_invars, **_):
  """An xla_pmap inside another program (jit of pmap, pmap of pmap): its body runs as a
  vmap with the axis name, on the enclosing program's device(s)."""
  outer = ctx.module_context.num_replicas
  ndev = len(xb.devices(ctx.module_context.platform))
  if outer * axis_size > ndev:
    raise ValueError(
        f"compiling computation that requires {outer * axis_size} logical devices, but "
        f"only {ndev} XLA devices are available (num_replicas={outer * axis_size}, "
        "num_partitions=1)")
  from tracejax._src import api
  in_axes = tuple(0 if m else None for m in mapped_invars)
  fun = api.vmap(lambda *a: ir.eval_jaxpr(call_jaxpr, [], *a), in_axes=in_axes,
                 axis_name=axis_name, axis_size=axis_size)
  return lowering.lower_fun(lambda *a: fun(*a), multiple_results=True)(ctx, *args)


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

  # -- arguments --

  def _split(self, args):
    nargs = len(args)
    static = set()
    for i in self.static:
      j = i + nargs if i < 0 else i
      if not 0 <= j < nargs:
        raise ValueError(f"pmapped function {self._name} has static_broadcasted_argnums="
                         f"{self.static}, but was called with only {nargs} positional "
                         "arguments.")
      static.add(j)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    skey = []
    for j in sorted(static):
      try:
        hash(args[j])
      except TypeError:
        raise ValueError(f"Non-hashable static arguments are not supported. An error "
                         f"occurred while trying to hash an object of type {type(args[j])}, "
                         f"{args[j]!r}.") from None
      skey.append((j, args[j]))
    return dyn, tuple(skey), static

  def _in_dims(self, dyn, kwargs, in_tree, static):
    ax = self.in_axes
    if isinstance(ax, list):
      ax = tuple(ax)
    if isinstance(ax, tuple) and static and len(ax) == len(dyn) + len(static):
      ax = tuple(a for i, a in enumerate(ax) if i not in static)
    if ax is None or isinstance(ax, int):
      ax = (ax,) * len(dyn)
    elif not isinstance(ax, tuple):
      raise TypeError(f"pmap in_axes must be an int, None, or a tuple of entries "
                      f"corresponding to the positional arguments, got {self.in_axes!r}")
    try:
      dims = tree_util.broadcast_prefix(tuple(ax), tuple(dyn), is_leaf=lambda x: x is None)
    except (ValueError, TypeError):
      raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                       f"corresponding value, got specification {self.in_axes} for value "
                       f"tree {tree_util.tree_structure(tuple(dyn))}.") from None
    return list(dims) + [0] * len(tree_util.tree_leaves(kwargs))

  def _axis_size(self, leaves, dims):
    sizes = set()
    for x, d in zip(leaves, dims):
      if d is None:
        continue
      shape = x.shape if isinstance(x, Tracer) else np.shape(x)
      if not -len(shape) <= d < len(shape):
        raise ValueError(f"pmap in_axes {d} is out of bounds for an argument of rank "
                         f"{len(shape)}")
      sizes.add(shape[d])
    if self.axis_size is not None:
      if sizes and sizes != {self.axis_size}:
        raise ValueError(f"pmap got axis_size={self.axis_size} but mapped arguments of "
                         f"size {sorted(sizes)}")
      return self.axis_size
    if len(sizes) != 1:
      raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                       f"{sorted(sizes)}" if sizes else
                       "pmap requires at least one argument with a mapped axis, or "
                       "axis_size")
    return sizes.pop()

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
      return self._run(e, leaves), e
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
    body, consts, out_tree = self._trace(args, static, in_tree, leaves, dims, n)
    if any(isinstance(c, Tracer) for c in consts):
      return None
    e = _Entry()
    e.mapped = [False] * len(consts) + [d is not None for d in dims]
    e.compiled = _compile(body, self._anon, devices, self._name, e.mapped)
    e.dims = [d if d is None else d % max(np.ndim(x), 1) for x, d in zip(leaves, dims)]
    e.const_bufs = [sharding_mod.shard_to_devices(c, get_aval(c), devices, False)
                    for c in consts]
    e.out_tree = out_tree
    e.per_out_avals = [v.aval for v in body.outvars]
    e.out_dims = self._out_dims(out_tree, len(body.outvars))
    return e

  def _run(self, e, leaves):
    devices = e.compiled.devices
    bufs = list(e.const_bufs)
    for x, d in zip(leaves, e.dims):
      if d is None:
        bufs.append(sharding_mod.shard_to_devices(x, _global_aval(x), devices, False))
      elif d == 0:
        bufs.append(sharding_mod.shard_to_devices(x, _global_aval(x), devices, True))
      else:  # the mapped axis is not leading: move it first (on the host)
        v = np.moveaxis(np.asarray(x), d, 0)
        bufs.append(sharding_mod.shard_to_devices(v, get_aval(v), devices, True))
    outs = e.compiled.execute(bufs)
    return tree_util.tree_unflatten(e.out_tree, [_out_axis(o, d, a) for o, d, a in
                                                 zip(outs, e.out_dims, e.per_out_avals)])

  def _call_traced(self, args, static, in_tree, leaves, dyn, kwargs):
    from tracejax._src.lax import utils as lax_utils
    dims = self._in_dims(dyn, kwargs, in_tree, static)
    n = self._axis_size(leaves, dims)
    if self.devices is not None and len(self.devices) != n:
      _pmap_devices(n, self.devices, self.backend)  # its error
    body, consts, out_tree = self._trace(args, static, in_tree, leaves, dims, n)
    moved = [x if d in (None, 0) else lax_utils.moveaxis(x, d, 0)
             for x, d in zip(leaves, dims)]
    mapped = tuple(d is not None for d in dims)
    outs = xla_pmap_p.bind(*consts, *moved, call_jaxpr=body, axis_name=self._anon,
                           axis_size=n, backend=self.backend, devices=self.devices,
                           global_axis_size=None,
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
    donate_argnums: accepted for compatibility; inputs are not donated.
    global_arg_shapes: accepted for compatibility (single process).

  Returns:
    The mapped function. Its outputs are Arrays sharded over the devices
    (`PmapSharding`): each member's result stays on its device.

  >>> pmap(lambda x: x / lax.psum(x, 'i'), axis_name='i')(jnp.arange(1., 3.))  # doctest: +SKIP
  DeviceArray([0.33333334, 0.6666667 ], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"pmap requires a callable argument, got {type(fun)}.")
  if isinstance(static_broadcasted_argnums, (int, np.integer)):
    static_broadcasted_argnums = (static_broadcasted_argnums,)
  try:
    static = tuple(operator.index(i) for i in static_broadcasted_argnums)
  except TypeError:
    raise TypeError(f"pmap static_broadcasted_argnums must be an int or a tuple of ints, "
                    f"got {static_broadcasted_argnums!r}") from None
  _check_axis("axis_size", axis_size)
  pf = PmapFunction(fun, axis_name, in_axes, out_axes, static, devices, backend,
                    axis_size, donate_argnums)
  if in_axes == 0 and out_axes == 0 and not static and type(in_axes) is int:
    return _cpp_pmap(pf)
  return pf


def _cpp_pmap(pf):
  """jaxlib's C++ dispatcher in front of `pf` (every argument and output mapped over
  axis 0): once a signature is compiled, a call whose arguments are already split over
  the devices (a previous pmap's outputs) runs without entering Python; NumPy arguments
  are split by `PmapSharding._shard_arg`. Anything else reaches `pf` (cache_miss)."""

  def cache_miss(*args, **kwargs):
    out, e = pf._call_with_entry(args, kwargs)
    fastpath = None
    if e is not None and all(d == 0 for d in e.dims) and all(d == 0 for d in e.out_dims):
      psh = sharding_mod.pmap_sharding(e.compiled.devices)
      consts = e.compiled.const_bufs + e.const_bufs
      n_in = len(consts) + len(e.dims)
      out_treedef = xb.pytree_registry.flatten(out)[1]
      fastpath = xb.fastpath_data_sharded(e.compiled.exe, out_treedef, [psh] * n_in,
                                          [psh] * len(e.out_dims), consts)
    return out, fastpath, False

  # `pf` as the function: under `disable_jit` the C++ dispatcher calls it directly.
  f = xb.make_cpp_jit(f"pmap_{pf._name}", pf, cache_miss, (), (), ("pmap", id(pf)))
  f = functools.wraps(pf.fun)(f)
  f._pmapped = pf
  return f
