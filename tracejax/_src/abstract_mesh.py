"""`jax.sharding` names of JAX 0.10.2 beyond runtime/sharding.py and sharding_explicit.py:
`AbstractDevice`, `ManualAxisType`, `make_single_device_sharding` and
`use_abstract_mesh`.
"""
import threading

from tracejax._src.core import avals as avals_mod
from tracejax._src.runtime import sharding as sharding_mod


class AbstractDevice:
  """The kind of device an abstract mesh is for: `device_kind`, `num_cores` (None when
  the platform has no such notion) and `platform`. Equal when all three are.

  >>> AbstractDevice(device_kind='cpu', num_cores=None, platform='cpu')
  AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)
  """
  __slots__ = ("device_kind", "num_cores", "platform")

  def __init__(self, device_kind, num_cores, platform):
    object.__setattr__(self, "device_kind", device_kind)
    object.__setattr__(self, "num_cores", num_cores)
    object.__setattr__(self, "platform", platform)

  def __setattr__(self, name, value):
    raise AttributeError(f"cannot assign to field {name!r}")   # frozen, as JAX's

  def _key(self):
    return (self.device_kind, self.num_cores, self.platform)

  def __eq__(self, other):
    return type(other) is AbstractDevice and other._key() == self._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform})")


class ManualAxisType:
  """How a value inside `shard_map` relates to the Manual mesh axes: the axes it
  `varying`ly differs over, and those it is `unreduced` or `reduced` over (frozensets of
  axis names). Interned: equal arguments give the same object (compared by identity).

  >>> ManualAxisType(varying={'x'}) is ManualAxisType(varying=frozenset({'x'}))
  True
  """
  __slots__ = ("varying", "unreduced", "reduced", "__weakref__")
  _interned = {}
  _lock = threading.Lock()

  def __new__(cls, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
    varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
    if varying & unreduced:
      raise ValueError("varying and unreduced cannot have common mesh axes. Got "
                       f"varying={set(varying)} and unreduced={set(unreduced)}")
    if varying & reduced:
      raise ValueError("varying and reduced cannot have common mesh axes. Got "
                       f"varying={set(varying)} and reduced={set(reduced)}")
    key = (varying, unreduced, reduced)
    with cls._lock:
      obj = cls._interned.get(key)
      if obj is None:
        obj = object.__new__(cls)
        object.__setattr__(obj, "varying", varying)
        object.__setattr__(obj, "unreduced", unreduced)
        object.__setattr__(obj, "reduced", reduced)
        cls._interned[key] = obj
    return obj

  def __setattr__(self, name, value):
    raise AttributeError(f"ManualAxisType is immutable (cannot set {name!r})")

  def __getnewargs_ex__(self):
    return (), {"varying": self.varying, "unreduced": self.unreduced,
                "reduced": self.reduced}

  def __repr__(self):
    return (f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})")


def make_single_device_sharding(device, *, memory_kind=None):
  """`SingleDeviceSharding(device, memory_kind=memory_kind)`."""
  return sharding_mod.SingleDeviceSharding(device, memory_kind=memory_kind)


class _AbstractMeshes(threading.local):
  def __init__(self):
    self.stack = []


_abstract = _AbstractMeshes()


def current_abstract_mesh():
  """The mesh of the innermost `use_abstract_mesh` block of this thread, else None."""
  return _abstract.stack[-1] if _abstract.stack else None


class use_abstract_mesh:
  """Make `mesh` (an `AbstractMesh`) what `jax.sharding.get_abstract_mesh()` returns
  inside the `with` block (this thread). It may not change the size of a non-empty
  current abstract mesh (JAX's error).

  Args:
    mesh: an `AbstractMesh`.

  >>> with use_abstract_mesh(AbstractMesh((2,), ('x',))):   # doctest: +SKIP
  ...   get_abstract_mesh()
  AbstractMesh('x': 2, axis_types=(Auto,))
  """
  __slots__ = ("mesh",)

  def __init__(self, mesh):
    if not isinstance(mesh, avals_mod.AbstractMesh):
      raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type:"
                       f" {type(mesh)}")
    self.mesh = mesh

  def __enter__(self):
    from tracejax._src import sharding_explicit   # (above this module)
    prev = sharding_explicit.get_abstract_mesh()
    if not prev.empty and not self.mesh.empty and prev.size != self.mesh.size:
      raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new mesh:"
                       f" {self.mesh} with size={self.mesh.size} and prev mesh: {prev} with "
                       f"size={prev.size}")
    _abstract.stack.append(self.mesh)
    return self.mesh

  def __exit__(self, *exc):
    _abstract.stack.pop()
    return False
