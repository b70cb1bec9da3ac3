"""`jax.interpreters.pxla` (2020): the names of the pmap machinery that 2020 programs use.

* `ShardedDeviceArray` is the array type that `pmap` returns (`tracejax.Array`,
  which holds every member's slice: `isinstance(pmap(f)(x), ShardedDeviceArray)`).
* `xla_pmap_p` is the primitive that a `pmap` appears as in jaxprs.
* `xla_pmap(fun, *args, axis_name=..., axis_size=...)` maps a function of flat
  arrays over the leading axis of every argument, as `pmap` does.
* `PmapSharding` is the sharding of a pmap result; `replica_groups` the replica groups of
  a collective over named axes.
Re-exports from `tracejax/_src/interpreters/pxla.py`.
"""
# flake8: noqa: F401
from tracejax._src.interpreters.pxla import pmap as _pmap
from tracejax._src.interpreters.pxla import xla_pmap_p as xla_pmap_p
from tracejax._src.lax.parallel import replica_groups as replica_groups
from tracejax._src.runtime.sharding import PmapSharding as PmapSharding
from tracejax._src.runtime.array import Array as ShardedDeviceArray


def xla_pmap(fun, *args, axis_name=None, axis_size=None, devices=None, backend=None,
             name=None, **_):
  """Run `fun` (a `linear_util.WrappedFun` or a function of flat arrays returning a
  list) once per slice of the leading axis of `args`, in parallel (2020 `xla_pmap`).

  Args:
    fun: the per-member function.
    *args: flat arrays mapped over their leading axis (of size `axis_size`).
    axis_name: the name collectives inside `fun` use.
    axis_size: the mapped size, checked against the arguments'.
    devices, backend: where the members run (as in `pmap`).

  Returns:
    The list of flat outputs, each with a leading axis of `axis_size`.

  >>> pxla.xla_pmap(lambda x: [x * 2], np.arange(1.0), axis_name='i')  # doctest: +SKIP
  [DeviceArray([0.], dtype=float32)]
  """
  import numpy as np
  sizes = {np.shape(a)[0] for a in args if np.ndim(a)}
  if axis_size is not None and sizes and sizes != {axis_size}:
    raise ValueError(f"xla_pmap: axis_size={axis_size} but the arguments' leading axes "
                     f"have sizes {sorted(sizes)}")
  call = getattr(fun, "call_wrapped", fun)
  mapped = _pmap(lambda *xs: list(call(*xs)), axis_name=axis_name, devices=devices,
                 backend=backend)
  return list(mapped(*args))
