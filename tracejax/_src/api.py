"""User-facing transformations and utilities (the `jax` namespace).

Only argument handling lives here: flattening pytrees, argnums, error checks.
The machinery is in `interpreters/` and `jit.py`.
"""
import functools

import numpy as np

from tracejax._src import dtypes, tree_util, util
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src.interpreters import staging
from tracejax._src.jit import jit  # noqa: F401  (re-exported)
from tracejax._src.runtime import backend
from tracejax._src.runtime.array import Array


class ShapeDtypeStruct:
  """A shape and a dtype: an abstract stand-in for an array argument."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type=False):
    self.shape, self.dtype, self.weak_type = tuple(shape), np.dtype(dtype), weak_type

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape)))

  def __repr__(self):
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype)

  def __hash__(self):
    return hash((self.shape, self.dtype))


avals_mod.pytype_aval_mappings[ShapeDtypeStruct] = (
    lambda x: avals_mod.ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type))


def _abstractify(x):
  return avals_mod.raise_to_shaped(avals_mod.get_aval(x))


def make_jaxpr(fun, static_argnums=(), return_shape=False):
  """A function that returns the jaxpr of `fun` traced at the given example arguments.

  >>> print(make_jaxpr(lambda x: x + 1)(5))
  { lambda ; a.
    let b = add a 1
    in b }
  """
  static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
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

    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [_abstractify(x) for x in leaves])
    closed = ir.ClosedJaxpr(jaxpr, consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in jaxpr.outvars]
      return closed, tree_util.tree_unflatten(out_tree_store[0], shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({util.fun_name(fun)})"
  return make_jaxpr_f


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
      [ShapeDtypeStruct(v.aval.shape, v.aval.dtype, v.aval.weak_type) for v in jaxpr.outvars])


# ---- devices and transfers ----

def devices(backend_name=None):
  """All devices of the backend (default: GPU if one was found, else CPU)."""
  return backend.devices(backend_name)


def local_devices(process_index=None, backend_name=None):
  return backend.local_devices(backend_name)


def device_count(backend_name=None):
  return len(backend.devices(backend_name))


def local_device_count(backend_name=None):
  return len(backend.local_devices(backend_name))


def default_backend():
  return backend.default_platform()


def process_index():
  return 0


def process_count():
  return 1


host_id, host_count = process_index, process_count


def device_put(x, device=None):
  """Transfer a pytree of arrays to `device` (default: the first device)."""
  from tracejax._src.runtime.array import from_numpy

  def put(leaf):
    if isinstance(leaf, Tracer):
      return leaf
    if isinstance(leaf, Array) and (device is None or leaf.device() == device):
      return leaf
    aval = avals_mod.get_aval(leaf)
    return from_numpy(np.asarray(leaf, aval.dtype), weak_type=aval.weak_type, device=device)
  return tree_util.tree_map(put, x)


def device_get(x):
  """Fetch a pytree of arrays to NumPy."""
  return tree_util.tree_map(lambda l: np.asarray(l) if isinstance(l, Array) else l, x)


def block_until_ready(x):
  """Wait for every array in a pytree to be computed; returns its argument."""
  for leaf in tree_util.tree_leaves(x):
    if isinstance(leaf, Array):
      leaf.block_until_ready()
  return x


_ = config
