"""User-facing transformations and utilities (the `jax` namespace).

Only argument handling lives here: flattening pytrees, argnums, error checks.
The machinery is in `interpreters/` and `jit.py`.
"""
import contextlib
import functools

import numpy as np

from tracejax._src import api_util, dtypes, tree_util, util
from tracejax._src import traceback_util
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import staging
from tracejax._src.jit import jit  # noqa: F401  (re-exported)
from tracejax._src.runtime import backend
from tracejax._src.runtime.array import Array


def _struct_dtype(dtype):
  """`np.dtype(dtype)`, or the extended dtype itself (typed keys: `key<fry>`)."""
  if not isinstance(dtype, (np.dtype, str, type)) and dtypes._extended_type_of(dtype):
    return dtype
  return np.dtype(dtype)


class ShapeDtypeStruct:
  """A shape and a dtype: an abstract stand-in for an array argument (and what
  `eval_shape` returns). Immutable; `update` makes a changed copy.

  Args:
    shape: a sequence of ints.
    dtype: anything `np.dtype` accepts (required).
    sharding: optional; a `Sharding`, or a `PartitionSpec` that `.sharding` resolves
      against the mesh current when it is read (`with mesh:` / `set_mesh`).
    weak_type: whether it stands for a weakly typed value (a Python scalar).

  >>> s = ShapeDtypeStruct((2, 3), np.float32)
  >>> s.shape, s.dtype, s.ndim, s.size, len(s)
  ((2, 3), dtype('float32'), 2, 6, 2)
  >>> s.update(weak_type=True)
  ShapeDtypeStruct(shape=(2, 3), dtype=float32, weak_type=True)
  """
  __slots__ = ("shape", "dtype", "weak_type", "_sharding")

  def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified.")
    if isinstance(shape, (int, np.integer)):
      shape = (shape,)
    if sharding is not None:
      from tracejax._src.runtime import sharding as sharding_mod  # only when one is given
      if not isinstance(sharding, (sharding_mod.Sharding, sharding_mod.PartitionSpec)):
        raise ValueError(
            "sharding should be an instance of `jax.sharding.Sharding` or "
            f"`jax.sharding.PartitionSpec`. Got {sharding!r} of type {type(sharding)}.")
    init = object.__setattr__  # __setattr__ refuses: the struct is immutable (and hashable)
    init(self, "shape", tuple(shape))
    init(self, "dtype", _struct_dtype(dtype))
    init(self, "weak_type", bool(weak_type))
    init(self, "_sharding", sharding)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def sharding(self):
    """The sharding given (None if none); a PartitionSpec becomes a NamedSharding over
    the current mesh."""
    from tracejax._src.runtime import sharding as sharding_mod
    s = self._sharding
    if isinstance(s, sharding_mod.PartitionSpec):
      mesh = sharding_mod.current_mesh()
      if mesh is None:
        raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context "
                        "mesh cannot be empty. Please use `jax.set_mesh` to set the mesh "
                        "context.")
      return sharding_mod.NamedSharding(mesh, s)
    return s

  def update(self, **kwargs):
    """A copy with some of `shape`, `dtype`, `sharding`, `weak_type` replaced.

    >>> ShapeDtypeStruct((2,), np.float32).update(shape=(3,), dtype=np.int32)
    ShapeDtypeStruct(shape=(3,), dtype=int32)
    """
    fields = {"shape": self.shape, "dtype": self.dtype, "sharding": self._sharding,
              "weak_type": self.weak_type}
    unknown = sorted(set(kwargs) - set(fields))
    if unknown:
      raise TypeError(f"ShapeDtypeStruct.update got unexpected keyword arguments {unknown}; "
                      f"it takes {sorted(fields)}.")
    fields.update(kwargs)
    shape, dtype = fields.pop("shape"), fields.pop("dtype")
    return ShapeDtypeStruct(shape, dtype, **fields)

  def __setattr__(self, name, value):
    raise RuntimeError(f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct "
                       "objects")

  def __delattr__(self, name):
    raise RuntimeError(f"Cannot delete attributes ({name}) of immutable ShapeDtypeStruct "
                       "objects")

  def __reduce__(self):  # the default would restore the slots through __setattr__
    return _rebuild_shape_dtype_struct, (self.shape, self.dtype, self._sharding,
                                         self.weak_type)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __repr__(self):
    sh = "" if self._sharding is None else f", sharding={self.sharding}"
    wt = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sh}{wt})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self._sharding == other._sharding
            and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self._sharding, self.weak_type))


def _rebuild_shape_dtype_struct(shape, dtype, sharding, weak_type):
  return ShapeDtypeStruct(shape, dtype, sharding=sharding, weak_type=weak_type)


avals_mod.pytype_aval_mappings[ShapeDtypeStruct] = (
    lambda x: avals_mod.ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype, True),
                                    x.weak_type))


def _abstractify(x):
  return avals_mod.raise_to_shaped(avals_mod.get_aval(x))


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
  """A function that returns the jaxpr of `fun` traced at the given example arguments.

  `axis_env`: a sequence of (axis name, size) pairs that collectives in `fun` may name
  (as if `fun` ran inside pmaps over those axes).

  >>> print(make_jaxpr(lambda x: x + 1)(5))
  { lambda ; a.
    let b = add a 1
    in b }
  """
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  @traceback_util.api_boundary
  def make_jaxpr_f(*args, **kwargs):
    dyn = [a for i, a in enumerate(args) if i not in static_argnums]
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    out_tree_store = []

    def flat_fun(*flat):
      dargs, kw = tree_util.tree_unflatten(in_tree, flat)
      it = iter(dargs)
      full = [args[i] if i in static_argnums else next(it) for i in range(len(args))]
      out = fun(*full, **kw)
      outs, out_tree = tree_util.tree_flatten(out)
      out_tree_store.append(out_tree)
      return outs

    with contextlib.ExitStack() as stack:
      if axis_env:
        from tracejax._src.lax import parallel
        for name, size in axis_env:
          stack.enter_context(parallel.extend_axis_env(name, size))
      jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
    closed = ir.ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, weak_type=v.aval.weak_type)
                for v in jaxpr.outvars]
      return closed, tree_util.tree_unflatten(out_tree_store[0], shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({util.fun_name(fun)})"
  return make_jaxpr_f


@traceback_util.api_boundary
def eval_shape(fun, *args, **kwargs):
  """The output shapes/dtypes of `fun(*args)` as ShapeDtypeStructs, without computing."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  out_tree_store = []

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(in_tree, flat)
    outs, out_tree = tree_util.tree_flatten(fun(*a, **kw))
    out_tree_store.append(out_tree)
    return outs

  jaxpr, _ = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
  return tree_util.tree_unflatten(
      out_tree_store[0],
      [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, weak_type=v.aval.weak_type)
       for v in jaxpr.outvars])


# ---- devices and transfers ----

def devices(backend_name=None):
  """All devices of the backend (default: GPU if one was found, else CPU).

  >>> devices()   # doctest: +SKIP
  [CpuDevice(id=0)]
  """
  return backend.devices(backend_name)


def local_devices(process_index=None, backend_name=None, host_id=None):
  """The devices attached to this process (`process_index`, default this one).

  >>> local_devices()   # doctest: +SKIP
  [CpuDevice(id=0)]
  """
  pid = process_index if process_index is not None else host_id
  devs = backend.local_devices(backend_name)
  if pid is not None:
    if not isinstance(pid, (int, np.integer)) or isinstance(pid, bool):
      raise TypeError(f"local_devices process_index must be an int, got {pid!r}")
    devs = [d for d in backend.devices(backend_name) if d.process_index == pid]
    if not devs:
      raise ValueError(f"Unknown process_index {pid}")
  return devs


def device_count(backend_name=None):
  """The number of devices of the backend, over every process.

  >>> device_count()   # doctest: +SKIP
  1
  """
  return len(backend.devices(backend_name))


def local_device_count(backend_name=None):
  """The number of devices attached to this process.

  >>> local_device_count()   # doctest: +SKIP
  1
  """
  return len(backend.local_devices(backend_name))


def default_backend():
  """The name of the default platform ('cpu' or 'gpu')."""
  return backend.default_platform()


def process_index(backend_name=None):
  """The index of this process among those running the program (0 in one process).

  >>> process_index()
  0
  """
  return backend.get_client(backend_name).process_index()


def process_count(backend_name=None):
  """The number of processes running the program (1 without `jax.distributed`).

  >>> process_count()
  1
  """
  return len({d.process_index for d in backend.devices(backend_name)})


def process_indices(backend_name=None):
  """The indices of every process taking part, in order (`[0]` in a single process).

  >>> process_indices()
  [0]
  """
  return sorted({d.process_index for d in backend.devices(backend_name)})


def host_id(backend_name=None):
  """2020 name of `process_index`."""
  return process_index(backend_name)


def host_count(backend_name=None):
  """2020 name of `process_count`."""
  return process_count(backend_name)


def host_ids(backend_name=None):
  """The ids of every host (process) taking part: `[0]` in a single process (2020 API).

  >>> host_ids()
  [0]
  """
  return list(range(process_count(backend_name)))


class default_device:
  """Context manager (and object) setting the device for uncommitted arrays and
  computations in this thread; `None` keeps the current one. The global setting is
  `config.update('jax_default_device', device)`.

  Args:
    device: a Device (or a platform name, for its first device).

  >>> with default_device(devices()[-1]):   # doctest: +SKIP
  ...   jnp.ones(3).devices()
  {CpuDevice(id=3)}
  """

  def __init__(self, device):
    if device is not None and not isinstance(device, (backend._jax.Device, str)):
      raise TypeError(f"default_device expects a Device or a platform name, got {device!r}")
    self.device = device

  def __enter__(self):
    backend.push_default_device(self.device)
    return self

  def __exit__(self, *exc):
    backend.pop_default_device()
    return False


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Transfer a pytree of arrays to `device`: a Device or a sharding
  (`SingleDeviceSharding`, or `PmapSharding` to split the leading axis over its devices),
  or a pytree prefix of `x` of those (one per subtree).

  With a device the arrays are committed to it: computations on them run there.
  Without one, values go to the default device, uncommitted. `donate=True`: the input
  Arrays are deleted once moved (as JAX); `may_alias=False`: always a new Array, even
  when the input is already where it should be. `src` is accepted for compatibility.

  >>> y = device_put(np.ones(3), devices()[0]); y.committed
  True
  """
  from tracejax._src.runtime import sharding as sharding_mod
  from tracejax._src.runtime.array import from_numpy
  del src
  if donate or may_alias is False:
    out = device_put(x, device)
    ins = tree_util.tree_leaves(x)
    outs = tree_util.tree_leaves(out)
    if may_alias is False:
      outs = [o.copy() if o is i and isinstance(o, Array) else o for i, o in zip(ins, outs)]
      out = tree_util.tree_unflatten(tree_util.tree_structure(out), outs)
    if donate:
      for i, o in zip(ins, outs):
        if isinstance(i, Array) and i is not o and not i.is_deleted():
          i.delete()
    return out
  if device is not None and not isinstance(device, (backend._jax.Device, sharding_mod.Sharding,
                                                    sharding_mod.PartitionSpec, str)):
    # A pytree prefix of `x`: each subtree goes where its entry says.
    is_leaf = lambda d: d is None or isinstance(d, (backend._jax.Device, sharding_mod.Sharding,
                                                    sharding_mod.PartitionSpec))
    try:
      where = tree_util.broadcast_prefix(device, x, is_leaf=is_leaf)
    except (ValueError, TypeError):
      raise ValueError(f"device_put: device must be a Device, a Sharding or a pytree prefix "
                       f"of the value of those, got {device!r}") from None
    leaves, tree = tree_util.tree_flatten(x)
    return tree_util.tree_unflatten(tree, [device_put(l, w) for l, w in zip(leaves, where)])
  if isinstance(device, sharding_mod.PartitionSpec):   # a spec of the `jax.set_mesh` mesh
    mesh = sharding_mod.current_mesh()
    if mesh is None:
      raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed "
                       "to device_put")
    device = sharding_mod.NamedSharding(mesh, device)
  if device is not None and not isinstance(device, (backend._jax.Device,
                                                    sharding_mod.Sharding)):
    raise ValueError("`jax.device_put` only accepts `None`, `jax.sharding.Sharding` or "
                     f"`jax.Device` (as JAX: a ValueError). Received invalid value: {device!r}")
  target = device
  if isinstance(device, sharding_mod.SingleDeviceSharding):
    target = device._device

  def put(leaf):
    if isinstance(leaf, Tracer):
      if isinstance(target, sharding_mod.NamedSharding) and \
          sharding_mod.AxisType.Explicit in tuple(target.mesh.axis_types):
        # Under `jit`, as in JAX: over a mesh with Explicit axes the value is laid out
        # and typed by the sharding (over Auto axes JAX leaves it to the partitioner).
        from tracejax._src.interpreters import pxla
        return pxla.constrain(leaf, target)
      return leaf
    aval = avals_mod.get_aval(api_util.check_array_dtype(leaf))
    if not isinstance(aval.dtype, np.dtype):  # key arrays (prng.py) move their data
      return aval.dtype.wrap(put(aval.dtype.physical_value(leaf)))
    if isinstance(target, sharding_mod.PmapSharding):
      return sharding_mod.shard_to_devices(leaf, aval, target._devices, True)
    if sharding_mod.is_spmd_sharding(target):  # NamedSharding: one block per device
      return sharding_mod.put_sharded(leaf, aval, target)
    if isinstance(target, sharding_mod.Sharding):
      raise TypeError(f"device_put does not support sharding {target!r} yet")
    if isinstance(leaf, Array):
      if target is None:
        return leaf
      if leaf.devices() == {target}:
        return leaf if leaf.committed else from_numpy(
            np.asarray(leaf), weak_type=aval.weak_type, device=target)
      return sharding_mod.put_on_device(leaf, target) if leaf.committed else \
          from_numpy(np.asarray(leaf), weak_type=aval.weak_type, device=target)
    return from_numpy(np.asarray(leaf, aval.dtype), weak_type=aval.weak_type, device=target)
  return tree_util.tree_map(put, x)


def device_get(x):
  """Fetch a pytree of arrays to NumPy."""
  return tree_util.tree_map(lambda l: np.asarray(l) if isinstance(l, Array) else l, x)


def block_until_ready(x):
  """Wait for every array in a pytree to be computed; returns its argument."""
  # jaxlib's C++ flatten (it mirrors every tracejax pytree registration) is the fast one.
  arrays = [leaf for leaf in backend.pytree_registry.flatten(x)[0] if type(leaf) is Array]
  if len(arrays) == 1:
    arrays[0].block_until_ready()
  elif arrays:
    backend.block_until_ready_many(arrays)
  return x


_ = config


# =============================================================================
# Differentiation
# =============================================================================

from tracejax._src.interpreters import ad, batching  # noqa: E402


def _check_tangent(p, t, i):
  pa, ta = _abstractify(p), _abstractify(t)
  expected = pa.at_least_vspace()
  if ta.shape != pa.shape:
    raise ValueError(f"jvp called with different primal and tangent shapes at leaf {i}: "
                     f"primal {pa.str_short()}, tangent {ta.str_short()}")
  if ta.dtype != expected.dtype:
    raise TypeError(f"primal and tangent arguments to jax.jvp do not match; dtypes must be "
                    f"equal, or in case of int/bool primal dtype the tangent dtype must be "
                    f"float0.Got primal dtype {pa.dtype} and so expected tangent dtype "
                    f"{expected.dtype}, but got tangent dtype {ta.dtype} instead.")  # (JAX's)


def _zeros_to_values(ts, avals):
  return [ad.zeros_like_aval(a) if type(t) is ad.Zero else t for t, a in zip(ts, avals)]


def _flatten_fun(fun, in_tree, store):
  def flat(*args):
    a, kw = tree_util.tree_unflatten(in_tree, args)
    out = fun(*a, **kw)
    leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves
  return flat


def _flat_fun_args(fun, args):
  leaves, in_tree = tree_util.tree_flatten(args)
  store = []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    leaves_out, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves_out
  return flat, leaves, in_tree, store


@traceback_util.api_boundary
def jvp(fun, primals, tangents, has_aux=False):
  """Forward mode: `(fun(*primals), J(primals) @ tangents)`, pytrees in and out.

  >>> jvp(jnp.sin, (0.,), (1.,))
  (DeviceArray(0., dtype=float32), DeviceArray(1., dtype=float32))
  """
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
  t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
  if p_tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {p_tree} whereas tangents have "
                    f"tree structure {t_tree}.")
  for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
    _check_tangent(p, t, i)
  aux_store, store = [], []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(p_tree, xs))
    if has_aux:
      out, aux = api_util.split_aux(out)
      aux_store.append(aux)
    leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves

  t_in = [ad.Zero(_abstractify(p).at_least_vspace()) if _is_float0(t) else t
          for p, t in zip(p_leaves, t_leaves)]
  p_out, t_out = ad.jvp_flat(flat, p_leaves, t_in)
  t_out = _zeros_to_values(t_out, [_abstractify(p).at_least_vspace() for p in p_out])
  out_tree = store[0]
  res = (tree_util.tree_unflatten(out_tree, p_out), tree_util.tree_unflatten(out_tree, t_out))
  if has_aux:
    return res + (_strip_aux(aux_store[0]),)
  return res


def _is_float0(t):
  return getattr(t, "dtype", None) == dtypes.float0


def _strip_aux(aux):
  return aux


@traceback_util.api_boundary
def linearize(fun, *primals, has_aux=False):
  """`(fun(*primals), f_jvp)` where `f_jvp` evaluates the linearized function."""
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  store, aux_store = [], []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(p_tree, xs))
    if has_aux:
      out, aux = api_util.split_aux(out)
      aux_store.append(aux)
    leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves

  p_out, jaxpr, consts, out_nz, out_t_avals = ad.linearize_flat(flat, p_leaves)
  out_tree = store[0]
  in_avals = [_abstractify(p).at_least_vspace() for p in p_leaves]

  def f_jvp(*tangents):
    t_leaves, t_tree = tree_util.tree_flatten(tangents)
    if t_tree != p_tree:
      raise TypeError(f"linearized function called on tangents of structure {t_tree}, "
                      f"expected {p_tree}")
    outs = iter(ir.eval_jaxpr(jaxpr, consts, *t_leaves))
    res = [next(outs) if nz else ad.zeros_like_aval(a) for nz, a in zip(out_nz, out_t_avals)]
    return tree_util.tree_unflatten(out_tree, res)

  _ = in_avals
  out = tree_util.tree_unflatten(out_tree, p_out)
  if has_aux:
    return out, f_jvp, aux_store[0]
  return out, f_jvp


class _VJPFunction:
  """The pullback returned by `vjp`: maps output cotangents to input cotangents."""

  def __init__(self, jaxpr, consts, out_nz, out_tree, in_tree, in_avals, out_avals):
    self.jaxpr, self.consts, self.out_nz = jaxpr, consts, out_nz
    self.out_tree, self.in_tree, self.in_avals, self.out_avals = (
        out_tree, in_tree, in_avals, out_avals)

  def __call__(self, *cts):
    # As JAX: exactly one argument, of the output's tree, each leaf of its output's
    # tangent type (a wrong dtype would otherwise surface as an internal lax error).
    if len(cts) != 1:
      raise TypeError(f"The function returned by `jax.vjp` was called with {len(cts)} "
                      "arguments, but functions returned by `jax.vjp` must be called with a "
                      "single argument corresponding to the single value returned by the "
                      "function being differentiated (even if that returned value is a tuple "
                      "or other container)")
    ct_leaves, ct_tree = tree_util.tree_flatten(cts[0])
    if ct_tree != self.out_tree:
      raise ValueError("unexpected tree structure of the argument to a VJP function returned "
                       "by `jax.vjp`: it must match the pytree structure of the output of the "
                       f"differentiated function, {self.out_tree}, but got {ct_tree}.")
    for c, a in zip(ct_leaves, self.out_avals):
      ca, ta = _abstractify(c), a.at_least_vspace()
      if ca.shape != a.shape or (ta.dtype != dtypes.float0 and ca.dtype != ta.dtype):
        raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                         f"function: got {ca.str_short()}, but expected {ta.str_short()} "
                         "because the corresponding output of the differentiated function "
                         f"had JAX type {a.str_short()}")
    lin_cts = [c for c, nz in zip(ct_leaves, self.out_nz) if nz]
    cts_in = ad.backward_pass(self.jaxpr, self.consts, lin_cts)
    cts_in = [_ct_value(c, a) for c, a in zip(cts_in, self.in_avals)]
    return tree_util.tree_unflatten(self.in_tree, cts_in)


def _ct_value(c, aval):
  if type(c) is ad.Zero:
    return ad.zeros_like_aval(aval)
  return c


@traceback_util.api_boundary
def vjp(fun, *primals, has_aux=False):
  """`(fun(*primals), f_vjp)`; `f_vjp(ct)` returns the cotangents of the primals (a tuple)."""
  p_leaves, p_tree = tree_util.tree_flatten(primals)
  store, aux_store = [], []

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(p_tree, xs))
    if has_aux:
      out, aux = api_util.split_aux(out)
      aux_store.append(aux)
    leaves, tree = tree_util.tree_flatten(out)
    store.append(tree)
    return leaves

  p_out, jaxpr, consts, out_nz, out_t_avals = ad.linearize_flat(flat, p_leaves)
  p_out = [_typed_input(o) if any(o is p for p in p_leaves) else o for o in p_out]
  out_tree = store[0]
  in_avals = [_abstractify(p).at_least_vspace() for p in p_leaves]
  out_avals = [_abstractify(p) for p in p_out]
  f_vjp = _VJPFunction(jaxpr, consts, out_nz, out_tree, p_tree, in_avals, out_avals)
  out = tree_util.tree_unflatten(out_tree, p_out)
  if has_aux:
    return out, tree_util.Partial(f_vjp), aux_store[0]
  return out, tree_util.Partial(f_vjp)


def _typed_input(x):
  """An input that `vjp` returns unchanged, as JAX 0.10.2 returns it: vjp types its
  host inputs first, so NumPy values come back with their canonical dtype (a float64
  array is float32 with x64 off; JAX's TypedNdArray), and a Python number comes back
  as a typed scalar (JAX's TypedFloat...; here the weakly typed 0-d Array of that type)."""
  if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc":
    return np.asarray(x, dtypes.canonicalize_dtype(x.dtype))
  if type(x) in (int, float, complex):
    from tracejax._src.runtime.array import from_numpy
    return from_numpy(np.asarray(x, _abstractify(x).dtype), weak_type=True)
  return x


def _check_input_dtype_grad(holomorphic, allow_int, x, argnum, name="grad"):
  aval = _abstractify(x)
  dt = aval.dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                      f"but got {dt.name}.")
  if (dtypes.issubdtype(dt, np.integer) or dt == np.bool_
      or dtypes.issubdtype(dt, dtypes.extended)) and not allow_int:  # (keys: extended)
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_output_grad(holomorphic, out):
  if not avals_mod.is_valid_jaxtype(out):  # a tuple, a dict, None...: not one scalar
    raise TypeError(f"Gradient only defined for scalar-output functions. Output was {out}.")
  aval = _abstractify(out)
  if aval.shape != ():
    raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                    f"{aval.shape}.")
  _check_output_dtype("grad", holomorphic, aval.dtype)


def _check_output_dtype(name, holomorphic, dt):
  """The output dtype check of reverse-mode `grad`/`jacrev` (`name`): real, or complex
  with `holomorphic`."""
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                      f"but got {dt.name}.")
  elif dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex outputs, use jax.vjp directly.")
  elif not dtypes.issubdtype(dt, np.floating):
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For differentiation of functions with "
                    "integer outputs, use jax.vjp directly.")


def _argnums_split(args, argnums, fun_name):
  n = len(args)
  nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
  for i in nums:
    if not -n <= i < n:
      raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                      f"{max(nums) + 1} positional arguments to be passed by the caller, but "
                      f"got only {n} positional arguments.")
  return tuple(i % n for i in nums)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
  """A function returning `(fun(*args), gradient)` (and aux with `has_aux`)."""
  api_util.check_callable(fun)
  @util.wraps(fun, docstr="Value and gradient of {fun} with respect to positional "
              "argument(s) " + str(argnums) + ".")
  @traceback_util.api_boundary
  def value_and_grad_f(*args, **kwargs):
    nums = _argnums_split(args, argnums, fun)
    dyn = tuple(args[i] for i in nums)
    for i, x in zip(nums, dyn):
      for leaf in tree_util.tree_leaves(x):
        _check_input_dtype_grad(holomorphic, allow_int, leaf, i)

    def f_part(*dargs):
      full = list(args)
      for i, a in zip(nums, dargs):
        full[i] = a
      return fun(*full, **kwargs)

    if has_aux:
      ans, f_vjp, aux = vjp(f_part, *dyn, has_aux=True)
    else:
      ans, f_vjp = vjp(f_part, *dyn)
    _check_output_grad(holomorphic, ans)
    one = _ones_like(ans)
    g = f_vjp(one)
    g = g[0] if isinstance(argnums, int) else g
    g = tree_util.tree_map(_float0_for_ints if allow_int else (lambda x: x), g)
    g_leaves, g_tree = tree_util.tree_flatten(g)
    p_leaves = tree_util.tree_leaves(dyn[0] if isinstance(argnums, int) else dyn)
    if len(g_leaves) == len(p_leaves):
      g = tree_util.tree_unflatten(g_tree, [_grad_as_array(a, p)
                                            for a, p in zip(g_leaves, p_leaves)])
    return ((ans, aux), g) if has_aux else (ans, g)

  return value_and_grad_f


def _ones_like(x):
  from tracejax._src.core import trace as trace_mod
  if trace_mod.sharding_rule is not None:   # sharding in types: JAX's eager-grad error
    from tracejax._src import sharding_explicit
    sharding_explicit.check_seed_placement(x)
  aval = _abstractify(x)
  if aval.weak_type:
    # JAX seeds with ones of the output's type, weak type included: the gradient is
    # then weak exactly where the cotangent's path keeps it weak.
    from tracejax._src.runtime.array import from_numpy
    return from_numpy(np.ones(aval.shape, aval.dtype), weak_type=True)
  return np.ones(aval.shape, aval.dtype)


def _float0_for_ints(x):
  return x


def _weak_like(piece, example):
  """`piece` with `example`'s weak type when their dtypes agree: JAX casts each block of
  a Jacobian (jacfwd: to its output's type, jacrev: to its input's) and each standard
  basis piece this way."""
  if not isinstance(piece, (Array, Tracer)):
    return piece
  pa, ea = _abstractify(piece), _abstractify(example)
  if pa.dtype == ea.dtype and pa.weak_type != ea.weak_type:
    from tracejax._src.lax import elementwise
    return elementwise._convert_element_type(piece, pa.dtype, weak_type=ea.weak_type)
  return piece


def _grad_as_array(g, primal):
  # A gradient that never met a traced operation (the identity's, or a custom_vjp bwd
  # returning NumPy values) is a host value: grad returns Arrays, so put it on the device
  # with the primal's tangent dtype and weak type, as JAX's grad does.
  if isinstance(g, (Array, Tracer)) or not isinstance(
      g, (np.ndarray, np.generic, int, float, complex, bool)):
    return g
  aval = _abstractify(primal).at_least_vspace()
  value = np.asarray(g)
  if value.dtype == dtypes.float0 or aval.dtype == dtypes.float0:
    return value  # float0 gradients (allow_int) are host values in JAX too; never on device
  if dtypes.issubdtype(aval.dtype, np.inexact):
    value = value.astype(aval.dtype)
  from tracejax._src.runtime.array import from_numpy
  return from_numpy(value, weak_type=aval.weak_type)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
  """The gradient of scalar-valued `fun` with respect to positional argument(s) `argnums`.

  >>> grad(jnp.tanh)(0.2)
  DeviceArray(0.96104515, dtype=float32)
  """
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @util.wraps(fun, docstr="Gradient of {fun} with respect to positional argument(s) "
              + str(argnums) + ".")
  @traceback_util.api_boundary
  def grad_f(*args, **kwargs):
    if has_aux:
      (_, aux), g = vg(*args, **kwargs)
      return g, aux
    _, g = vg(*args, **kwargs)
    return g
  return grad_f


# ---- Jacobians and Hessians ----

def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Jacobian of `fun` by forward mode (vmap of jvp over the input basis)."""
  api_util.check_callable(fun)
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    nums = _argnums_split(args, argnums, fun)
    dyn = tuple(args[i] for i in nums)

    def f_part(*dargs):
      full = list(args)
      for i, a in zip(nums, dargs):
        full[i] = a
      return fun(*full, **kwargs)

    leaves, tree = tree_util.tree_flatten(dyn)
    for leaf in leaves:
      _check_jac_input(leaf, holomorphic)
    basis, sizes = _std_basis(leaves)

    def push(t_flat):
      ts = tree_util.tree_unflatten(tree, t_flat)
      out = jvp(f_part, dyn, ts, has_aux=has_aux)
      return out[1] if not has_aux else (out[1], out[2])

    primal_out = None
    if has_aux:
      y, _, aux = jvp(f_part, dyn, tree_util.tree_unflatten(tree, [b[0] for b in basis]),
                      has_aux=True)
      jac = vmap(lambda *b: push(list(b))[0])(*basis)
    else:
      # The primal output comes from the same vmapped jvp (unbatched: out_axes None), so
      # fun runs once, on tracers, never on the raw (possibly NumPy) inputs.
      def push_both(*b):
        out = jvp(f_part, dyn, tree_util.tree_unflatten(tree, list(b)))
        return out[0], out[1]
      y, jac = vmap(push_both, out_axes=(None, 0))(*basis)
    if holomorphic:
      for yl in tree_util.tree_leaves(y):
        dt = _abstractify(yl).dtype
        if not dtypes.issubdtype(dt, np.complexfloating):
          raise TypeError("jacfwd with holomorphic=True requires outputs with complex dtype, "
                          f"but got {dt.name}.")
    primal_out = y
    in_shapes = [np.shape(x) for x in leaves]
    # jac leaves have the basis axis first; move it last and split per input.
    from tracejax._src.lax import structural
    from tracejax._src.lax import utils as lax_utils

    def arrange(jl, yl):
      yshape = np.shape(yl)
      if getattr(jl, "dtype", None) == dtypes.float0 and dtypes.dtype(yl) == dtypes.float0:
        # A float0 output (say a jvp's tangent of an integer): a float0 Jacobian, built
        # on the host, since XLA has no float0 type (JAX returns the same).
        parts = [np.zeros(tuple(yshape) + tuple(shp), dtypes.float0) for shp in in_shapes]
        per = tree_util.tree_unflatten(tree, parts)
        return per[0] if isinstance(argnums, int) else per
      if getattr(jl, "dtype", None) == dtypes.float0:
        # An integer output's tangents are float0 (no data, never sent to XLA); its
        # Jacobian is zeros of the output's dtype, as JAX returns.
        jl = np.zeros(np.shape(jl), dtypes.dtype(yl))
      jl = lax_utils.moveaxis(jl, 0, -1) if np.ndim(jl) > 0 else jl
      parts = []
      # One split (not slices): a split's transpose is a concatenation, so a weak
      # cotangent stays weak through it, as through JAX's unravelling.
      for shp, piece in zip(in_shapes, _split_last(jl, sizes)):
        piece = structural.reshape(piece, tuple(yshape) + tuple(shp))
        parts.append(_weak_like(piece, yl))  # JAX: weak exactly when the output is
      per = tree_util.tree_unflatten(tree, parts)
      return per[0] if isinstance(argnums, int) else per

    jac_tree = tree_util.tree_map(arrange, jac, primal_out)
    return (jac_tree, aux) if has_aux else jac_tree
  return jacfun


def _split_last(x, sizes):
  """`x` split along its last axis into pieces of `sizes` (one `split`, as JAX's
  Jacobians unravel)."""
  from tracejax._src.lax import structural
  if not isinstance(x, (Array, Tracer)):
    x = np.asarray(x)
    return [x[..., a:a + n] for a, n in zip(np.cumsum([0] + list(sizes[:-1])), sizes)]
  return structural.split(x, tuple(sizes), axis=np.ndim(x) - 1)


def _check_jac_input(x, holomorphic):
  # Forward mode: real inputs, or complex ones with `holomorphic` (JAX's rule and words).
  dt = _abstractify(x).dtype
  if holomorphic:
    if not dtypes.issubdtype(dt, np.complexfloating):
      raise TypeError("jacfwd with holomorphic=True requires inputs with complex dtype, "
                      f"but got {dt.name}.")
  elif not dtypes.issubdtype(dt, np.floating):
    raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                    "holomorphic=True. For differentiation of non-holomorphic functions "
                    "involving complex inputs or integer inputs, use jax.jvp directly.")


def _std_basis(leaves):
  """The standard basis of the flattened inputs, as one batch of tangents per leaf."""
  from tracejax._src.lax import structural
  sizes = [int(np.prod(np.shape(x))) for x in leaves]
  total = sum(sizes)
  dt = dtypes.result_type(*[_abstractify(x).dtype for x in leaves]) if leaves else np.float32
  if any(isinstance(x, Tracer) for x in leaves):
    # Traced (under jit): as JAX, the identity is computed in the program (iota == iota),
    # where XLA turns `eye * v` into a select, so an inf/nan in v stays off the diagonal
    # (jit(hessian(lax.erf)) at -inf: fuzzer run5 01316).
    return _traced_std_basis(leaves, sizes, total, dt), sizes
  eye = np.eye(total, dtype=dt)
  basis, start = [], 0
  for x, n in zip(leaves, sizes):
    a = _abstractify(x)
    piece = eye[:, start:start + n].reshape((total,) + a.shape).astype(a.dtype)
    if a.weak_type:  # JAX casts each basis piece to its leaf's dtype and weak type
      from tracejax._src.runtime.array import from_numpy
      piece = from_numpy(piece, weak_type=True)
    basis.append(piece)
    start += n
  _ = structural
  return basis, sizes


def _traced_std_basis(leaves, sizes, total, dt):
  """`_std_basis`'s pieces built from lax ops (staged into the enclosing trace)."""
  from tracejax._src.lax import elementwise as ew
  from tracejax._src.lax import structural
  eye = ew._convert_element_type(ew.eq(structural.broadcasted_iota(np.int32, (total, total), 0),
                                       structural.broadcasted_iota(np.int32, (total, total), 1)),
                                 dt)
  pieces = structural.split(eye, tuple(sizes), axis=1) if len(sizes) > 1 else [eye]
  basis = []
  for x, piece in zip(leaves, pieces):
    a = _abstractify(x)
    if (total,) + a.shape != (total, piece.shape[1]):
      piece = structural.reshape(piece, (total,) + a.shape)
    basis.append(ew._convert_element_type(piece, a.dtype, weak_type=a.weak_type))
  return basis


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
  """The Jacobian of `fun` by reverse mode (vmap of vjp over the output basis)."""
  api_util.check_callable(fun)
  @traceback_util.api_boundary
  def jacfun(*args, **kwargs):
    nums = _argnums_split(args, argnums, fun)
    dyn = tuple(args[i] for i in nums)
    for i, x in zip(nums, dyn):
      for leaf in tree_util.tree_leaves(x):
        _check_input_dtype_grad(holomorphic, allow_int, leaf, i, name="jacrev")

    def f_part(*dargs):
      full = list(args)
      for i, a in zip(nums, dargs):
        full[i] = a
      return fun(*full, **kwargs)

    if has_aux:
      y, f_vjp, aux = vjp(f_part, *dyn, has_aux=True)
    else:
      y, f_vjp = vjp(f_part, *dyn)
    y_leaves, y_tree = tree_util.tree_flatten(y)
    for yl in y_leaves:
      _check_output_dtype("jacrev", holomorphic, _abstractify(yl).dtype)
    basis, sizes = _std_basis(y_leaves)
    cts = vmap(lambda *b: f_vjp(tree_util.tree_unflatten(y_tree, list(b))))(*basis)
    # cts: tuple over dyn args of pytrees with a leading basis axis (size sum(sizes)).
    from tracejax._src.lax import structural
    y_shapes = [np.shape(l) for l in y_leaves]

    def arrange(ct, x):
      x_shape = np.shape(ct)[1:]
      if getattr(ct, "dtype", None) == dtypes.float0:
        # An integer input (allow_int): its cotangents are float0 (never sent to XLA);
        # its Jacobian is zeros of the input's dtype, as JAX returns.
        from tracejax._src.runtime.array import from_numpy
        return tree_util.tree_unflatten(y_tree, [from_numpy(
            np.zeros(tuple(shp) + tuple(x_shape), _abstractify(x).dtype)) for shp in y_shapes])
      parts = []
      # One split along the basis axis (its transpose, a concatenation, keeps a weak
      # cotangent weak, as JAX's unravelling does; a slice's pad would make it strong).
      pieces = (structural.split(ct, tuple(sizes), axis=0) if isinstance(ct, (Array, Tracer))
                else [np.asarray(ct)[a:a + n] for a, n in
                      zip(np.cumsum([0] + list(sizes[:-1])), sizes)])
      for shp, piece in zip(y_shapes, pieces):
        piece = structural.reshape(piece, tuple(shp) + tuple(x_shape))
        # JAX 0.10.2: jacrev's result is weakly typed exactly when its input is.
        parts.append(_weak_like(piece, x))
      return tree_util.tree_unflatten(y_tree, parts)

    per_arg = [tree_util.tree_map(arrange, c, d) for c, d in zip(cts, dyn)]
    # Result structure: output tree outside, argument tree inside (as JAX).
    if isinstance(argnums, int):
      jac = per_arg[0]
      jac = _transpose_out_in(jac, y_tree)
    else:
      jac = _transpose_out_in(tuple(per_arg), y_tree)
    return (jac, aux) if has_aux else jac
  return jacfun


def _transpose_out_in(per_arg_tree, y_tree):
  """From in-tree-of-(out-tree) to out-tree-of-(in-tree)."""
  if y_tree.num_leaves == 1 and tree_util.treedef_is_leaf(y_tree):
    return tree_util.tree_map(lambda t: t, per_arg_tree,
                              is_leaf=lambda t: not isinstance(t, (tuple, list, dict)) or True)
  outer = tree_util.tree_structure(per_arg_tree, is_leaf=lambda t: tree_util.tree_structure(t) == y_tree)
  return tree_util.tree_transpose(outer, y_tree, per_arg_tree)


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
  """The Hessian of scalar `fun`: jacfwd of jacrev."""
  return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                has_aux=has_aux, holomorphic=holomorphic)


# =============================================================================
# vmap
# =============================================================================

def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
  """Vectorize `fun` over array axes: `in_axes`/`out_axes` are ints, None, or pytrees of them.

  >>> vmap(lambda x: x * 2)(jnp.arange(3))
  DeviceArray([0, 2, 4], dtype=int32)
  """
  api_util.check_callable(fun)
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  if not (in_axes is None or isinstance(in_axes, (int, tuple, dict)) or
          tree_util.all_leaves([in_axes], is_leaf=lambda x: x is None) is not None):
    raise TypeError(f"vmap in_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {in_axes}.")
  if not all(a is None or isinstance(a, int)
             for a in tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is None)):
    raise TypeError("vmap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")

  @util.wraps(fun, docstr="Vectorized version of {fun}.")
  @traceback_util.api_boundary
  def vmap_f(*args, **kwargs):
    ax = in_axes
    if isinstance(ax, int) or ax is None:
      ax = (ax,) * len(args)
    elif isinstance(ax, tuple) and len(ax) != len(args):
      raise ValueError(f"vmap in_axes specification must be a tree prefix of the "
                       f"corresponding value, got specification {in_axes} for value tree "
                       f"{tree_util.tree_structure(args)}.")
    try:
      # As in JAX, keyword arguments are always mapped over their axis 0 (in_axes
      # describes the positional arguments only).
      dims = tree_util.broadcast_prefix((ax, 0), (args, kwargs),
                                        is_leaf=lambda x: x is None)
    except ValueError:
      raise ValueError(f"vmap in_axes specification must be a tree prefix of the "
                       f"corresponding value, got specification {in_axes} for value tree "
                       f"{tree_util.tree_structure(args)}.") from None
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    sizes = []
    norm_dims = []
    for x, d in zip(leaves, dims):
      if d is None:
        norm_dims.append(None)
        continue
      nd = np.ndim(x) if not isinstance(x, Tracer) else x.ndim
      if not isinstance(d, int):
        raise TypeError(f"vmap in_axes leaves must be ints or None, got {d!r}")
      if not -nd <= d < nd:
        raise ValueError(f"vmap was requested to map its argument along axis {d}, which "
                         f"implies that its rank should be at least {d + 1 if d >= 0 else -d}, "
                         f"but is only {nd} (its shape is {np.shape(x) if not isinstance(x, Tracer) else x.shape})")
      d = d % nd
      norm_dims.append(d)
      sizes.append((x.shape if isinstance(x, Tracer) else np.shape(x))[d])
    if axis_size is not None:
      size = axis_size
    elif not sizes:
      raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                       "must be specified")
    else:
      size = sizes[0]
    if any(s != size for s in sizes):
      lines = [f"  axis {d} of argument leaf {i} of shape "
               f"{(x.shape if isinstance(x, Tracer) else np.shape(x))} has size "
               f"{(x.shape if isinstance(x, Tracer) else np.shape(x))[d]}"
               for i, (x, d) in enumerate(zip(leaves, norm_dims)) if d is not None]
      raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                       + "\n".join(lines))
    store = []

    def flat(*xs):
      a, kw = tree_util.tree_unflatten(in_tree, xs)
      out = fun(*a, **kw)
      ol, ot = tree_util.tree_flatten(out)
      store.append(ot)
      return ol

    def out_dims_fn(n):
      try:
        od = tree_util.broadcast_prefix(out_axes, tree_util.tree_unflatten(store[0], [0] * n),
                                        is_leaf=lambda x: x is None)
      except ValueError:
        raise ValueError(f"vmap out_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {out_axes} for value tree "
                         f"{store[0]}.") from None
      return od

    def out_where(i):
      paths, _ = tree_util.tree_flatten_with_path(
          tree_util.tree_unflatten(store[0], [0] * store[0].num_leaves))
      return tree_util.keystr(paths[i][0])

    outs = batching.vmap_flat(flat, size, leaves, norm_dims, out_dims_fn, axis_name,
                              out_where)
    return tree_util.tree_unflatten(store[0], outs)

  return vmap_f
