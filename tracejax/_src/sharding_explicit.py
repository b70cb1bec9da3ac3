"""Sharding in types: mesh axes of type `AxisType.Explicit`.

On a mesh whose axes are `Explicit`, an array's sharding over those axes is part of its
type, as in JAX 0.10.2: `jax.typeof(x)` prints `float32[8@x,4]`, every primitive
computes the sharding of its result from its operands' (under `jit` as well as
eagerly), and an operation whose result cannot be laid out unambiguously is a
`ShardingTypeError` at trace time, not a silent choice of XLA's partitioner.

How it is wired (the rest of tracejax is unchanged while no mesh has Explicit axes):

* `ShardedShapedArray` is a `ShapedArray` that also carries `(mesh, spec)`: `spec` has
  one entry per array axis naming only Explicit mesh axes. `==` ignores the sharding
  (structural checks see one type) but the hash does not (caches keyed on avals, jit
  signatures and jaxlib result handlers, keep typed and untyped values apart);
* `put_sharded` (runtime/sharding.py) gives the Arrays it makes such an aval when their
  NamedSharding's mesh has Explicit axes, so `jit` traces with typed avals;
* `Primitive.out_avals` (core/trace.py) calls `_sharding_rule` once a mesh with Explicit
  axes exists: it looks up the primitive's rule in `_RULES` and types the outputs;
  `lower_spmd` (interpreters/pxla.py) lays out each typed result by its type;
* every transpose rule is wrapped so that a cotangent has its primal's type, as JAX's
  rules build them (the cotangents grown from `grad`'s untyped seed are laid out so;
  dot_general's: the weights' gradient of a data-parallel step contracts over the
  split batch axis, a sum, not an ambiguity).

Rules exist for: elementwise primitives (operand specs merge axis by axis; two
different mesh axes on one array axis are an error), `select_n` (the cases must agree),
`convert_element_type` and other unary ops, `concatenate` (typed operands must agree),
reductions (`reduce_*`, `argmax`/`argmin`:
the reduced axes are dropped), cumulative reductions and `sort` (the axis must not be
split), `broadcast_in_dim`, `reshape` (splitting and merging of axes where JAX allows
it), `squeeze`, `transpose`, `rev`, `concatenate`, `slice`/`pad`/`dynamic_slice` (the
spec is kept), `dot_general` (batch axes merge, contracting axes split on both sides
are an error unless `out_sharding=` is given), `sharding_constraint` (`reshard`) and
`shard_map` (typed by their sharding / out_specs); `slice`/`pad`/`dynamic_slice`/
`reduce_window*` (an axis whose size changes must stay divisible; the max-pool
gradient's `select_and_scatter_add` takes the operand's sharding, its JVP's
`select_and_gather_add` needs tangents laid out as the operand), `gather` and the
scatters (JAX's rules: what is indexed into must be whole or unsplit), `dynamic_update_slice`
(the update has the operand's sharding), `top_k`, `bitcast_convert_type`,
`conv_general_dilated` (unsplit kernel and feature axis), `split`/`stack`/`unstack`/
`tile`, and control flow: `cond` (typed by its branches, `check_branches`), `scan`
(carries as the body's, stacked outputs with an unsplit leading axis; `scan_x_avals`,
`check_carry`) and `while` (its carry's types). NumPy indexing of a concrete typed
array goes through a gather (as JAX's does), `x.at[...]` lays its updates out as
`x[...]`, and `zeros_like`/`ones_like`/`full_like` keep a typed array's sharding. Other
primitives give untyped results; in a program over a mesh whose axes are all Explicit
those are replicated over it, as in JAX. Also typed: `fft` (the operand's spec), typed
PRNG keys (`random_wrap`/`random_unwrap`: the key data's extra word axis is unsplit;
`threefry2x32` as elementwise), and a jitted call whose body was traced untyped (`vmap`
of `jit`: `_call`). The indexing, windowed and convolution families' rules are in
sharding_rules_indexing.py.

Inside `jax.set_mesh(mesh)` (`sharding_mod.context_mesh`), as in JAX: `jit` runs over
the mesh (jit.py, pxla.py), `with_sharding_constraint` on an all-Explicit mesh is an
assertion on the type (`assert_constraint`), and an untyped value counts as replicated
over the mesh when loop carries and cond branches are compared (`_type_of`).
"""
import contextlib
import threading

import numpy as np

from tracejax._src.core import avals as avals_mod
from tracejax._src.core import trace as trace_mod
from tracejax._src.runtime import sharding as sharding_mod

AxisType = sharding_mod.AxisType
P = sharding_mod.PartitionSpec


class ShardingTypeError(Exception):
  """An operation on arrays with Explicit shardings whose result sharding is illegal or
  ambiguous (JAX's `ShardingTypeError`)."""


# ---- the abstract mesh of a type ----

class TypeMesh(avals_mod.AbstractMesh):
  """The abstract mesh (names, sizes, axis types, no devices) a type's sharding refers
  to; what `jax.sharding.get_abstract_mesh()` returns inside `jax.set_mesh(mesh)`.

  Args:
    mesh: the concrete `Mesh` it abstracts.
  """
  __slots__ = ("platform", "concrete")

  def __init__(self, mesh):
    super().__init__(mesh.axis_sizes, mesh.axis_names, mesh.axis_types)
    flat = mesh._flat_devices
    self.platform = flat[0].platform if flat else "cpu"
    self.concrete = mesh   # what a type's sharding lays values out on (`concrete_of`)

  def _names_of(self, t):
    return tuple(n for n, k in zip(self.axis_names, self.axis_types) if k == t)

  explicit_axes = property(lambda self: self._names_of(AxisType.Explicit))
  auto_axes = property(lambda self: self._names_of(AxisType.Auto))
  manual_axes = property(lambda self: self._names_of(AxisType.Manual))
  are_all_axes_explicit = property(lambda self: all(t == AxisType.Explicit
                                                    for t in self.axis_types))
  are_all_axes_auto = property(lambda self: all(t == AxisType.Auto for t in self.axis_types))
  are_all_axes_manual = property(lambda self: all(t == AxisType.Manual
                                                  for t in self.axis_types))

  def __eq__(self, other):
    return (isinstance(other, avals_mod.AbstractMesh) and
            self.axis_sizes == other.axis_sizes and self.axis_names == other.axis_names and
            tuple(self.axis_types) == tuple(other.axis_types))

  def __hash__(self):
    return hash((self.axis_sizes, self.axis_names, tuple(self.axis_types)))

  def __repr__(self):
    sizes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
    types = "(" + ", ".join(t.name for t in self.axis_types) + \
        ("," if len(self.axis_types) == 1 else "") + ")"
    return (f"AbstractMesh({sizes}, axis_types={types}, device_kind={self.platform}, "
            f"num_cores=None, platform={self.platform})")


_type_meshes = {}


def type_mesh(mesh):
  """The `TypeMesh` of concrete `mesh` (one object per mesh)."""
  m = _type_meshes.get(mesh)
  if m is None:
    m = _type_meshes[mesh] = TypeMesh(mesh)
  return m


def concrete_of(sharding):
  """The NamedSharding over a concrete mesh that `sharding` stands for: a type's
  sharding (`jax.typeof(x).sharding`, over the abstract mesh of a concrete one) becomes
  the NamedSharding over that mesh; the empty mesh's (one device) None; any other
  sharding is returned as is."""
  if isinstance(sharding, avals_mod.AbstractNamedSharding):
    mesh = getattr(sharding.mesh, "concrete", None)
    if mesh is None:
      return None
    return sharding_mod.NamedSharding(mesh, P(*sharding.spec))
  return sharding


def check_out_sharding_axes(sharding, fun_name):
  """The ValueError JAX 0.10.2 raises when an `out_sharding=` names mesh axes that are
  not Explicit (an Auto axis is XLA's to choose; `with_sharding_constraint` or
  `reshard` lay values out over those).

  Args:
    sharding: a NamedSharding.
    fun_name: the function's name, for the message (e.g. "jnp.zeros").
  """
  mesh = getattr(sharding, "mesh", None)
  types = dict(zip(getattr(mesh, "axis_names", ()), getattr(mesh, "axis_types", ())))
  for entry in getattr(sharding, "spec", ()) or ():
    for name in _entries(entry):
      t = types.get(name)
      if t is not None and t != AxisType.Explicit:
        raise ValueError(
            f"PartitionSpec passed to {fun_name} cannot contain axis names that are of "
            f"type Auto or Manual. Got PartitionSpec: {sharding.spec!r} with axis name: "
            f"{name} of type: AxisType.{t.name}.")


# ---- typed avals ----

def _entry_str(e):
  return e if isinstance(e, str) else "(" + ",".join(e) + ")"


class ShardedShapedArray(avals_mod.ShapedArray):
  """A ShapedArray whose sharding over the Explicit axes of `mesh` is part of the type.

  Args:
    shape, dtype, weak_type: as for ShapedArray.
    mesh: the concrete `Mesh`.
    spec: one entry per axis (None, a mesh axis name, or a tuple of names), naming
      Explicit axes only.
  """
  __slots__ = ("mesh", "spec")

  def __init__(self, shape, dtype, weak_type=False, mesh=None, spec=None):
    super().__init__(shape, dtype, weak_type)
    self.mesh = mesh
    spec = tuple(spec) if spec is not None else ()
    self.spec = spec + (None,) * (len(self.shape) - len(spec))

  def update(self, shape=None, dtype=None, weak_type=None):
    if shape is not None and tuple(shape) != self.shape:
      return avals_mod.ShapedArray(shape, self.dtype if dtype is None else dtype,
                                   self.weak_type if weak_type is None else weak_type)
    return ShardedShapedArray(self.shape, self.dtype if dtype is None else dtype,
                              self.weak_type if weak_type is None else weak_type,
                              self.mesh, self.spec)

  def at_least_vspace(self):
    plain = avals_mod.ShapedArray.at_least_vspace(self)
    return ShardedShapedArray(plain.shape, plain.dtype, plain.weak_type, self.mesh,
                              self.spec)

  def __eq__(self, other):
    # Equal to the plain ShapedArray of the same shape and dtype: the sharding is
    # checked by the rules, not by aval comparisons (see the module docstring).
    return (isinstance(other, avals_mod.ShapedArray) and
            type(other) in (avals_mod.ShapedArray, ShardedShapedArray) and
            self.shape == other.shape and self.dtype == other.dtype and
            self.weak_type == other.weak_type)

  def __ne__(self, other):
    return not self.__eq__(other)

  def __hash__(self):
    # Deliberately not the plain aval's hash although == ignores the sharding: caches
    # keyed on avals (jit signatures, jaxlib result handlers) then keep typed and
    # untyped values apart, while structural checks (jaxpr typing, tangent vs primal
    # avals) still see them as the same type.
    h = self._hash
    if h is None:
      h = self._hash = hash((self.shape, self.dtype, self.weak_type, self.spec,
                             self.mesh))
    return h

  def str_short(self, short_dtypes=False):
    base = avals_mod.ShapedArray.str_short(self, short_dtypes)
    name = base[:base.index("[")]
    dims = [str(d) if e is None else f"{d}@{_entry_str(e)}"
            for d, e in zip(self.shape, self.spec)]
    return f"{name}[{','.join(dims)}]"

  @property
  def sharding(self):
    """The type's sharding: a NamedSharding over the abstract mesh."""
    return avals_mod.AbstractNamedSharding(type_mesh(self.mesh), P(*self.spec))

  def concrete_sharding(self):
    """The NamedSharding over the concrete mesh that lays a value of this type out."""
    return sharding_mod.NamedSharding(self.mesh, P(*self.spec))


avals_mod.shaped_subtypes.add(ShardedShapedArray)


def explicit_names(mesh):
  return frozenset(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                   if t == AxisType.Explicit)


def type_spec(sharding, ndim):
  """The spec of `sharding` (a NamedSharding) restricted to its mesh's Explicit axes,
  one entry per axis; None when the mesh has no Explicit axis."""
  names = explicit_names(sharding.mesh)
  if not names:
    return None
  out = []
  for entry in sharding.spec._normalized(ndim):
    kept = tuple(n for n in entry if n in names)
    out.append(None if not kept else kept[0] if len(kept) == 1 else kept)
  return tuple(out)


def typed_aval(aval, sharding):
  """`aval` typed by `sharding` when it is a NamedSharding over a mesh with Explicit
  axes (else `aval` unchanged)."""
  if not isinstance(sharding, sharding_mod.NamedSharding) or \
      not isinstance(aval, avals_mod.ShapedArray):
    return aval
  spec = type_spec(sharding, len(aval.shape))
  if spec is None:
    return aval
  install()
  return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding.mesh, spec)


def retype(aval, sharding):
  """`aval` typed by `sharding` alone (its old type dropped); as is when None."""
  if sharding is None or not isinstance(aval, avals_mod.ShapedArray):
    return aval
  return typed_aval(avals_mod.ShapedArray(aval.shape, aval.dtype, aval.weak_type),
                    sharding)


def out_sharding_of(aval, mesh=None, meshed=True):
  """The NamedSharding a result of type `aval` of a program over `mesh` must have: its
  type's; replicated over `mesh` when it is untyped and the mesh's axes are all
  Explicit (as in JAX, whose untyped values there are replicated ones): `P(None, ...)`
  when it derives from typed values (`meshed`: JAX would have typed it, tracejax has no
  rule), else `P()` (JAX's values of the empty mesh, from NumPy inputs under
  `jax.set_mesh`, are laid out so); else None (XLA's partitioner chooses)."""
  if type(aval) is ShardedShapedArray and explicit_names(aval.mesh):
    return aval.concrete_sharding()
  if mesh is not None and mesh.axis_names and isinstance(aval, avals_mod.ShapedArray) \
      and all(t == AxisType.Explicit for t in mesh.axis_types):
    return sharding_mod.NamedSharding(mesh, P(*(None,) * len(aval.shape)) if meshed else P())
  return None


# Primitives whose result JAX gives the `jax.set_mesh` mesh when no operand has one
# (its rules for broadcasting n-ary ops, `broadcast_in_dim`, `concatenate`, `select_n`
# and `iota` fall back on the context mesh; unary ops, reductions, `transpose`,
# `dot_general` and the rest keep their operand's empty mesh, and XLA lays such results
# out replicated, `P()`). tracejax leaves all of them untyped (its internal values, e.g.
# the cotangents grown from `grad`'s seed, are untyped where JAX's are typed, so typing
# these would make types disagree); only the results' layout follows JAX's rule.
_TAKES_CONTEXT_MESH = frozenset(["broadcast_in_dim", "concatenate", "select_n", "iota"])


def _takes_context_mesh(eqn):
  name = eqn.primitive.name
  return name in _TAKES_CONTEXT_MESH or (name in _ELEMENTWISE and len(eqn.invars) > 1)


def meshed_outputs(jaxpr, in_meshed=None):
  """Per result of `jaxpr`: whether JAX would give it a mesh (`out_sharding_of`'s
  `meshed`): it derives from a typed value (an input, constant or result of a mesh
  type) or from an operation that takes the context mesh (`_TAKES_CONTEXT_MESH`, also
  inside jitted calls: their bodies are looked into).

  Args:
    jaxpr: the program's jaxpr.
    in_meshed: per input, whether it has a mesh (default: whether it is typed).
  """
  typed = lambda v: type(v.aval) is ShardedShapedArray
  is_lit = lambda v: type(v).__name__ == "Literal"
  meshed = {v for v in jaxpr.constvars if typed(v)}
  for i, v in enumerate(jaxpr.invars):
    if typed(v) or (in_meshed is not None and in_meshed[i]):
      meshed.add(v)
  for eqn in jaxpr.eqns:
    ins = [not is_lit(v) and v in meshed for v in eqn.invars]
    call = eqn.params.get("call_jaxpr") if eqn.primitive.name == "xla_call" else None
    if call is not None:
      outs = meshed_outputs(getattr(call, "jaxpr", call), ins)
      meshed.update(v for v, m in zip(eqn.outvars, outs) if m)
    elif any(ins) or _takes_context_mesh(eqn) or any(typed(v) for v in eqn.outvars):
      meshed.update(eqn.outvars)
  return [not is_lit(v) and (v in meshed or typed(v)) for v in jaxpr.outvars]


def mesh_typed(aval, sharding):
  """What `jax.typeof` gives for an Array of plain type `aval` laid out by `sharding`
  over a mesh of Auto axes (a NamedSharding, or a pmap's result viewed as one): the
  type names that mesh and splits no axis (`P(None, ...)`), as in JAX; else `aval`."""
  if type(sharding) is sharding_mod.PmapSharding:
    from tracejax._src.interpreters import pxla
    sharding = pxla.spmd_view(sharding)
  if not isinstance(sharding, sharding_mod.NamedSharding) or not sharding.mesh.axis_names:
    return aval
  return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding.mesh,
                            (None,) * len(aval.shape))


def auto_arg_avals(leaves, avals):
  """jit's argument types for an SPMD call: an Array laid out by a NamedSharding over a
  mesh with no Explicit axis gets the type that names that mesh and splits no axis
  (`mesh_typed`), so that `jax.typeof(arg).sharding` inside the function reports the
  mesh, as in JAX. No sharding rule runs on such types (`_sharding_rule`), and no
  layout is asked for them (`out_sharding_of`, `_typed_transpose`).

  Args:
    leaves: the call's argument leaves.
    avals: their avals (returned when none changes).
  """
  out = None
  for i, (x, a) in enumerate(zip(leaves, avals)):
    s = getattr(x, "_sharding", None)
    if type(a) is not avals_mod.ShapedArray or s is None:
      continue
    if type(s) is sharding_mod.PmapSharding:
      from tracejax._src.interpreters import pxla
      s = pxla.spmd_view(s)
    if not isinstance(s, sharding_mod.NamedSharding) or explicit_names(s.mesh):
      continue
    t = mesh_typed(a, s)
    if t is not a:
      out = list(avals) if out is None else out
      out[i] = t
  return avals if out is None else tuple(out)


def _layout_typed(a):
  """Whether typed aval `a` asks for a layout: a mesh with Explicit axes, or a split
  axis (`explicit_axes`); not the plain types of arguments on Auto meshes."""
  return AxisType.Explicit in tuple(a.mesh.axis_types) or any(e is not None for e in a.spec)


# ---- the rules ----

def _entries(e):
  return () if e is None else (e,) if isinstance(e, str) else tuple(e)


def _spec_str(spec):
  return "(" + ", ".join(repr(e) for e in spec) + ("," if len(spec) == 1 else "") + ")"


def _merge(name, specs, ndim):
  """Axis-by-axis merge of operand specs (None entries take the other's); two different
  mesh axes on one array axis are an error, in JAX's words."""
  out = []
  for d in range(ndim):
    got = {s[d] for s in specs if s[d] is not None}
    if len(got) > 1:
      raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                              f"{', '.join(_spec_str(s) for s in specs)}.")
    out.append(next(iter(got)) if got else None)
  return tuple(out)


def _elementwise(prim, avals, specs, params):
  nd = max(len(a.shape) for a in avals)   # clamp's bounds may be scalars
  full = [s if s is not None else (None,) * nd for a, s in zip(avals, specs)
          if len(a.shape) == nd]
  return [_merge(prim.name, full, nd)]


def _select_n(prim, avals, specs, params):
  nd = len(avals[1].shape)
  typed = [s for a, s in zip(avals[1:], specs[1:]) if s is not None]
  if any(s != typed[0] for s in typed):
    mesh = next(a.mesh for a in avals if type(a) is ShardedShapedArray)
    shown = ", ".join(repr(avals_mod.AbstractNamedSharding(type_mesh(mesh), P(*s)))
                      for s in [s if s is not None else (None,) * nd for s in specs[1:]])
    raise ShardingTypeError(f"select cases must have the same shardings, got [{shown}].")
  return [_merge(prim.name, [s if s is not None else (None,) * nd for s in specs], nd)]


def _same_as_operand(prim, avals, specs, params):
  s = specs[0] if specs[0] is not None else (None,) * len(avals[0].shape)
  return [s] * (len(avals) if prim.multiple_results else 1)


def _reduce(prim, avals, specs, params):
  axes = set(params["axes"])
  s = specs[0] or (None,) * len(avals[0].shape)
  return [tuple(e for d, e in enumerate(s) if d not in axes)]


def _cumulative(prim, avals, specs, params):
  axis = params["axis"]
  s = specs[0] or (None,) * len(avals[0].shape)
  if s[axis] is not None:
    raise ShardingTypeError(f"Input should be unsharded over the axis being reduced. Got "
                            f"input type={avals[0]} and axis={axis}")
  return [s]


def check_cumulative_axis(aval, axis):
  """The cumulative reductions' rule (for `jnp.cumsum` & co., built of slices): the
  scan axis of a typed operand must be unsplit."""
  _cumulative(None, [aval], [aval.spec], {"axis": axis})


def _sort(prim, avals, specs, params):
  dim = params["dimension"]
  for a, s in zip(avals, specs):
    if s is not None and s[dim] is not None:
      raise ShardingTypeError(
          f"Arguments to sort must be unsharded over the sorting dimension. Got arg "
          f"sharding={a.sharding!r} and sorting dimension={dim}")
  nd = len(avals[0].shape)
  merged = _merge(prim.name, [s or (None,) * nd for s in specs], nd)
  return [merged] * len(avals)


def _transpose(prim, avals, specs, params):
  s = specs[0]
  return [tuple(s[p] for p in params["permutation"])]


def _rev(prim, avals, specs, params):
  return [specs[0]]


def _broadcast_in_dim(prim, avals, specs, params):
  shape, bdims = params["shape"], params["broadcast_dimensions"]
  out = [None] * len(shape)
  s = specs[0] or ()
  for i, d in enumerate(bdims):
    if i < len(s) and avals[0].shape[i] == shape[d]:
      out[d] = s[i]
  return [tuple(out)]


def _squeeze(prim, avals, specs, params):
  dims = {d % len(avals[0].shape) for d in params["dimensions"]}
  return [tuple(e for d, e in enumerate(specs[0]) if d not in dims)]


def _concatenate(prim, avals, specs, params):
  """JAX's rule: the operands that have a mesh must all have one sharding. (Inside
  `jax.set_mesh` JAX gives every value made there the mesh, so an untyped operand is
  a replicated one; here untyped operands, which tracejax's own helpers also make,
  are left out of the comparison.)"""
  typed = [(a.mesh, a.spec) for a in avals if type(a) is ShardedShapedArray]
  if any(t != typed[0] for t in typed):
    shown = ", ".join(repr(a.sharding) for a in avals)
    raise ShardingTypeError(f"All operands should have the same sharding. Got shardings "
                            f"{shown}")
  return [typed[0][1]]


def _size_of(mesh, entry):
  n = 1
  for name in _entries(entry):
    n *= mesh.axis_size(name)
  return n


def _reshape(prim, avals, specs, params):
  """Groups of input and output axes whose sizes have equal products: a group of one
  input axis split into several keeps the input's mesh axes on its first output axis
  (which they must divide); a group of several input axes merged into one takes their
  mesh axes in order (the split ones must come first); anything else that moves a
  split axis needs `out_sharding=`, as in JAX."""
  a = avals[0]
  spec = specs[0]
  if params.get("dimensions") is not None and \
      tuple(params["dimensions"]) != tuple(range(len(a.shape))):
    raise ShardingTypeError("reshape with `dimensions` of an operand with an Explicit "
                            "sharding is not supported.")
  old, new = list(a.shape), list(params["new_sizes"])
  mesh = a.mesh
  out = [None] * len(new)

  def fail():
    raise ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of jax.lax.reshape. Got operand type: {a}, new sizes: "
        f"{tuple(new)}")

  i = j = 0
  while i < len(old) or j < len(new):
    # Size-1 axes on either side form groups of their own.
    if j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
      j += 1
      continue
    if i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
      if spec[i] is not None:
        fail()
      i += 1
      continue
    i0, j0 = i, j
    pi, pj = old[i], new[j]
    i += 1
    j += 1
    while pi != pj:
      if pi < pj:
        pi *= old[i]
        i += 1
      else:
        pj *= new[j]
        j += 1
    ins, outs = list(range(i0, i)), list(range(j0, j))
    in_specs = [spec[k] for k in ins]
    if all(e is None for e in in_specs):
      continue
    if len(ins) == 1 and len(outs) == 1:
      out[outs[0]] = in_specs[0]
    elif len(ins) == 1:
      e = in_specs[0]
      if new[outs[0]] % _size_of(mesh, e):
        fail()
      out[outs[0]] = e
    elif len(outs) == 1:
      seen_none = False
      names = []
      for e in in_specs:
        if e is None:
          seen_none = True
        elif seen_none:
          fail()
        else:
          names += list(_entries(e))
      out[outs[0]] = names[0] if len(names) == 1 else tuple(names)
    else:
      fail()
  return [tuple(out)]


def _dot_general(prim, avals, specs, params):
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  lhs, rhs = avals
  ls = specs[0] or (None,) * len(lhs.shape)
  rs = specs[1] or (None,) * len(rhs.shape)
  lcs, rcs = tuple(ls[d] for d in lc), tuple(rs[d] for d in rc)
  for l, r in zip(lcs, rcs):
    if l is not None and r is not None:
      if getattr(_transposing, "on", False) and l == r:
        continue   # a cotangent: summed over the axis, then laid out as its primal
      if l != r:
        raise ShardingTypeError(
            "dot_general requires contracting dimensions to have consistent sharding, got "
            f"{lcs} and {rcs}.")
      raise ShardingTypeError(
          "Contracting dimensions are sharded and it is ambiguous how the output should be "
          "sharded. Please specify the output sharding via the `out_sharding` parameter. "
          f"Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
  batch = _merge(prim.name, [tuple(ls[d] for d in lb), tuple(rs[d] for d in rb)], len(lb))
  lfree = tuple(ls[d] for d in range(len(ls)) if d not in lc and d not in lb)
  rfree = tuple(rs[d] for d in range(len(rs)) if d not in rc and d not in rb)
  return [batch + lfree + rfree]


def _full(a, s):
  return s if s is not None else (None,) * len(a.shape)


def _axis_types_str(mesh):
  if mesh is None:
    return "{}"
  groups = {}
  for n, t in zip(mesh.axis_names, mesh.axis_types):
    groups.setdefault(t.name, []).append(n)
  return "{" + ", ".join(f"{k}: {tuple(v)!r}" for k, v in groups.items()) + "}"


def _typed_str(a):
  """`f32[8@x,4]({Explicit: ('x', 'y')})`: a type with its mesh's axis types, as JAX
  prints it in some messages (`({})` for a type without a mesh)."""
  # An untyped value made inside `jax.set_mesh` has that mesh in JAX (replicated).
  mesh = a.mesh if type(a) is ShardedShapedArray else sharding_mod.current_mesh()
  return f"{a.str_short()}({_axis_types_str(mesh)})"


# ---- control flow ----

def _cond(prim, avals, specs, params, outs):
  """A cond's results: each is typed as the branch that types it (a branch returning a
  value of no mesh, e.g. `jnp.zeros`, agrees with any; `check_branches` has compared
  the typed ones)."""
  res = []
  for i, o in enumerate(outs):
    typed = [b.out_avals[i] for b in params["branches"]
             if type(b.out_avals[i]) is ShardedShapedArray]
    res.append(typed[0].spec if typed else KEEP)
  return res


_cond.with_outs = True


def _scan(prim, avals, specs, params, outs):
  """A scan's carries are typed as its body's; its stacked outputs as the body's with an
  unsplit leading axis."""
  nc = params["num_carry"]
  body = params["jaxpr"].out_avals
  res = []
  for i, (o, b) in enumerate(zip(outs, body)):
    if type(b) is not ShardedShapedArray:
      res.append(KEEP)
    else:
      res.append(b.spec if i < nc else (None,) + b.spec)
  return res


_scan.with_outs = True


def _while(prim, avals, specs, params, outs):
  """A while loop's carries are typed as its body's results (`check_carry` has made
  sure a typed carry keeps its type)."""
  return [b.spec if type(b) is ShardedShapedArray else KEEP
          for b in params["body_jaxpr"].out_avals]


_while.with_outs = True

KEEP = object()   # a rule's "leave this result's type as abstract evaluation gave it"


def _call(prim, avals, specs, params, outs):
  """A jitted function's call (`xla_call`) whose body was traced on untyped arguments
  (`vmap` of `jit` traces the body per example, then batches it): its results are
  typed by running the body's equations on the typed arguments, as JAX, which traces
  it on them, types them. (The body itself is unchanged: only its results' layout is
  part of the program's interface.)"""
  jaxpr = getattr(params["call_jaxpr"], "jaxpr", params["call_jaxpr"])
  invars = jaxpr.invars
  if len(invars) != len(avals) or all(type(v.aval) is type(a)
                                      for v, a in zip(invars, avals)):
    return [o.spec if type(o) is ShardedShapedArray else KEEP for o in
            (v.aval for v in jaxpr.outvars)]
  env = dict(zip(invars, avals))
  read = lambda v: env.get(v, v.aval) if type(v).__name__ != "Literal" else v.aval
  try:
    for eqn in jaxpr.eqns:
      for v, a in zip(eqn.outvars, eqn.primitive.out_avals([read(v) for v in eqn.invars],
                                                         eqn.params)):
        env[v] = a
  except Exception:   # a form the rules do not know: leave the results as they were
    return [KEEP] * len(outs)
  res = [read(v) for v in jaxpr.outvars]
  return [a.spec if type(a) is ShardedShapedArray and a.shape == o.shape else KEEP
          for a, o in zip(res, outs)]


_call.with_outs = True


def _type_of(a):
  """(mesh, spec) of type `a` as JAX compares loop carries and branch results: a typed
  one's; an untyped one's inside `jax.set_mesh` of a mesh with Explicit axes is
  replicated over it (JAX gives every value made there that mesh); else None (no
  mesh: agrees with any)."""
  if type(a) is ShardedShapedArray:
    return a.mesh, a.spec
  if _spmd_state is not None and _spmd_state.partitions:
    return None   # lowering a checked program: its helpers' results are left untyped
  m = sharding_mod.context_mesh()
  if m is not None and isinstance(a, avals_mod.ShapedArray) and explicit_names(m):
    return m, (None,) * len(a.shape)
  return None


def _types_differ(a, b):
  """JAX's comparison of two types' shardings (see `_type_of`)."""
  if type(a) is not ShardedShapedArray and type(b) is not ShardedShapedArray:
    return False
  ta, tb = _type_of(a), _type_of(b)
  return ta is not None and tb is not None and ta != tb


def _fun_info(f):
  import functools
  import inspect
  while isinstance(f, functools.partial):
    f = f.func
  f = inspect.unwrap(f)
  try:
    return f"{f.__name__} at {f.__code__.co_filename}:{f.__code__.co_firstlineno}"
  except AttributeError:
    return "<unknown>"


def check_branches(api_name, names, funs, out_avals_list):
  """TypeError, in JAX's words, when two branches of a `cond`/`switch` give results whose
  Explicit shardings differ (shapes and dtypes are checked before).

  Args:
    api_name: "cond" or "switch".
    names: the branches' names as JAX's messages give them.
    funs: the branch functions (in the same order).
    out_avals_list: each branch's flat output avals.
  """
  first = out_avals_list[0]
  for name, fun, avs in zip(names[1:], funs[1:], out_avals_list[1:]):
    diffs = [f"the output of {names[0]} has type {a1.str_short()} but the corresponding "
             f"output of {name} has type {a2.str_short()}"
             for a1, a2 in zip(first, avs) if _types_differ(a1, a2)]
    if not diffs:
      continue
    if len(diffs) == 1:
      differences = diffs[0][0].upper() + diffs[0][1:] + ".\n"
    else:
      differences = "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
    raise TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n"
        f"{names[0]} is {_fun_info(funs[0])}\n{name} is {_fun_info(fun)}\n\n"
        f"{differences}\nRevise {names[0]} and/or {name} so that all output types match.")


def check_carry(loop_name, body_fun, carry, in_avals, out_avals):
  """TypeError, in JAX's words, when a loop body's carry output has another Explicit
  sharding than its input (shapes and dtypes are checked before).

  Args:
    loop_name: "while_loop" or "scan".
    body_fun: the body function (its first parameter names the carry).
    carry: the initial carry (a pytree; its paths name the components).
    in_avals, out_avals: the flat carry avals in and out.
  """
  from tracejax._src import tree_util
  import inspect
  if not any(_types_differ(a, b) for a, b in zip(in_avals, out_avals)):
    return
  try:
    params = list(inspect.signature(body_fun).parameters)
    cname = params[0] if params else None
  except (TypeError, ValueError):
    cname = None
  try:
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(carry)[0]]
  except Exception:   # a node type without keys: name no path
    paths = [""] * len(in_avals)
  diffs = []
  for p, a, b in zip(paths, in_avals, out_avals):
    if not _types_differ(a, b):
      continue
    if cname:
      comp = f"the input carry component {cname}{p}" if p else f"the input carry {cname}"
    else:
      comp = f"the input carry at path {p}" if p else "the input carry"
    diffs.append(f"{comp} has type {a.str_short()} but the corresponding output carry "
                 f"component has type {b.str_short()}")
  if len(diffs) == 1:
    differences = diffs[0][0].upper() + diffs[0][1:] + ".\n"
  else:
    differences = "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"
  raise TypeError(f"{loop_name} body function carry input and carry output must have equal "
                  f"types, but they differ:\n\n{differences}\nRevise the function so that all "
                  "output types match the corresponding input types.")


def scan_x_avals(x_avals):
  """The avals of one step's slices of scan's `xs` (typed: their leading axis dropped
  from the spec); a ValueError, as in JAX, for an `xs` split along that axis."""
  out = []
  for a in x_avals:
    if type(a) is ShardedShapedArray:
      if a.spec[0] is not None:
        raise ValueError(f"0th dimension of all xs should be replicated. Got "
                         f"{P(*a.spec)!r}")
      out.append(ShardedShapedArray(a.shape[1:], a.dtype, a.weak_type, a.mesh, a.spec[1:]))
    else:
      out.append(a.update(shape=a.shape[1:]))
  return out


def check_seed_placement(x):
  """The ValueError JAX 0.10.2 raises when eager `grad` makes its output cotangent (a
  value of the output's type) with no mesh set: outside `jit` and `jax.set_mesh`, a value
  made from nothing is on one device, which cannot hold a type over a larger mesh."""
  aval = getattr(x, "aval", None)
  if type(aval) is not ShardedShapedArray or hasattr(x, "_trace"):
    return
  if sharding_mod.current_mesh() is not None or aval.mesh.size == 1:
    return
  raise ValueError(f"Length of device assignment 1 is not equal to the size of the mesh "
                   f"{aval.mesh.size} of aval {aval.str_short(True)}"
                   f"({_axis_types_str(aval.mesh)}). Please enter your `jit` into a mesh "
                   "context via `jax.set_mesh`.")


def like_sharding(a, shape):
  """The NamedSharding `zeros_like`/`ones_like`/`full_like(a)` keep, as in JAX: `a`'s
  when it is a typed Array (a tracer: its type's) and the shape is kept; else None."""
  aval = getattr(a, "aval", None)
  if type(aval) is not ShardedShapedArray:
    return None
  if shape is not None and tuple(shape) != aval.shape:
    return None
  return aval.concrete_sharding() if hasattr(a, "_trace") else a.sharding


_ELEMENTWISE = frozenset("""
mulhi erf erfc erf_inv lgamma digamma polygamma zeta igamma igammac igamma_grad_a
random_gamma_grad regularized_incomplete_beta bessel_i0e bessel_i1e add sub mul div rem
neg sign abs max min square sqrt rsqrt cbrt exp exp2 log log1p expm1 tanh logistic sin
cos tan asin acos atan atan2 sinh cosh asinh acosh atanh floor ceil nextafter is_finite
not and or xor shift_left shift_right_arithmetic shift_right_logical population_count clz
complex real imag eq ne lt le gt ge pow integer_pow round conj convert_element_type
reduce_precision clamp copy copy_p stop_gradient add_any
""".split())

_RULES = {name: _elementwise for name in _ELEMENTWISE}
_RULES.update({
    "select_n": _select_n,
    "reduce_sum": _reduce, "reduce_max": _reduce, "reduce_min": _reduce,
    "reduce_prod": _reduce, "reduce_and": _reduce, "reduce_or": _reduce,
    "reduce_xor": _reduce, "argmax": _reduce, "argmin": _reduce,
    "cumsum": _cumulative, "cumprod": _cumulative, "cummax": _cumulative,
    "cummin": _cumulative, "cumlogsumexp": _cumulative,
    "sort": _sort,
    "transpose": _transpose, "rev": _rev,
    "broadcast_in_dim": _broadcast_in_dim, "squeeze": _squeeze,
    "concatenate": _concatenate, "reshape": _reshape,
    "dot_general": _dot_general,
    "tile": _same_as_operand,
    # JAX keeps the operand's spec (an axis whose size changes and that the mesh axes
    # no longer divide, rfft's, is left unsplit by `_sharding_rule`).
    "fft": _same_as_operand,
    "cond": _cond, "scan": _scan, "while": _while,
})
# The indexing, windowed and convolution families' rules are in
# sharding_rules_indexing.py (added to `_RULES` by `install`).
# Typed PRNG keys (prng.py): the uint32 data has one more, never split, trailing axis.
_RULES["xla_call"] = _call
_RULES["random_unwrap"] = lambda prim, avals, specs, params: [
    _full(avals[0], specs[0]) + (None,)]
_RULES["random_wrap"] = lambda prim, avals, specs, params: [_full(avals[0], specs[0])[:-1]]
_RULES["threefry2x32"] = lambda prim, avals, specs, params: \
    _elementwise(prim, avals, specs, params) * 2


def _check_duplicates(prim, avals_in, out_avals, specs):
  for a, s in zip(out_avals, specs):
    used = [n for e in s for n in _entries(e)]
    if len(used) != len(set(used)):
      ins = ", ".join(x.str_short(short_dtypes=True) for x in avals_in)
      typed = ShardedShapedArray(a.shape, a.dtype, a.weak_type, None, s)
      raise ShardingTypeError(f"{prim.name} operation with inputs: {ins} produces an "
                              f"illegally sharded result: {typed.str_short(True)}")


_suspended = threading.local()


@contextlib.contextmanager
def suspended():
  """Inside: no sharding rule runs (the results are untyped); for operations given an
  explicit `out_sharding=`, which is applied afterwards."""
  prev = getattr(_suspended, "on", False)
  _suspended.on = True
  try:
    yield
  finally:
    _suspended.on = prev


def _sharding_rule(prim, avals_in, params, outs):
  if prim.name == "sharding_constraint":   # typed by its sharding, whatever its input
    s = params["sharding"]
    if isinstance(s, sharding_mod.NamedSharding) and explicit_names(s.mesh):
      return [retype(outs[0], s)]
    return outs
  if prim.name == "shard_map":   # typed by its out_specs over the mesh's Explicit axes
    m = params["mesh"]
    if explicit_names(m):
      return [retype(o, sharding_mod.NamedSharding(m, s))
              for o, s in zip(outs, params["out_specs"])]
    return outs
  mesh = None
  for a in avals_in:
    if type(a) is ShardedShapedArray:
      mesh = a.mesh
      break
  if mesh is None or getattr(_suspended, "on", False):
    return outs
  if AxisType.Explicit not in tuple(mesh.axis_types) and not any(
      _layout_typed(a) for a in avals_in if type(a) is ShardedShapedArray):
    return outs   # only arguments on Auto meshes (`auto_arg_avals`): no rules there
  rule = _RULES.get(prim.name)
  if rule is None:
    return outs
  for a in avals_in:
    if type(a) is ShardedShapedArray and a.mesh != mesh:
      raise ShardingTypeError(f"Mesh for all inputs of {prim.name} should be equal. Got "
                              f"{a.mesh} and {mesh}")
  if _spmd_state is not None and _spmd_state.partitions:
    return outs   # lowering a checked program: its helpers' types are not needed
  specs = [a.spec if type(a) is ShardedShapedArray else None for a in avals_in]
  try:
    if getattr(rule, "with_outs", False):
      out_specs = rule(prim, avals_in, specs, params, outs)
    else:
      out_specs = rule(prim, avals_in, specs, params)
  except ShardingTypeError:
    raise
  except (KeyError, IndexError, TypeError, ValueError, AttributeError):
    return outs   # a form the rule does not know (e.g. under vmap): leave it untyped
  if out_specs is None or len(out_specs) != len(outs):
    return outs
  for o, s in zip(outs, out_specs):
    if s is not KEEP and len(s) != len(o.shape):
      return outs
  kept = [(o, s) for o, s in zip(outs, out_specs) if s is not KEEP]
  _check_duplicates(prim, avals_in, [o for o, _ in kept], [s for _, s in kept])
  # An axis the mesh axes no longer divide (a split) is left unsplit: tracejax lays
  # arrays out in even blocks only (JAX would shard it unevenly).
  return [o if s is KEEP else ShardedShapedArray(
      o.shape, o.dtype, o.weak_type, mesh,
      tuple(e if e is None or o.shape[d] % _size_of(mesh, e) == 0 else None
            for d, e in enumerate(s))) for o, s in zip(outs, out_specs)]


_transposing = threading.local()
_spmd_state = None   # pxla's lowering state (set by `install`)


def _typed_transpose(rule, contracting=False):
  """A transpose rule, typed as JAX types them: each cotangent has its primal's type
  (JAX's rules build their results with the primal's sharding; here a cotangent of
  another type, e.g. one grown from the untyped seed of `grad`, is laid out so).
  `contracting`: dot_general's, where a contraction over an axis split on both sides
  is a sum across it, not an ambiguity (the sum is then laid out as the primal)."""
  def transpose(ct, *args, **params):
    from tracejax._src.interpreters import ad, pxla
    if contracting:
      prev = getattr(_transposing, "on", False)
      _transposing.on = True
      try:
        outs = rule(ct, *args, **params)
      finally:
        _transposing.on = prev
    else:
      outs = rule(ct, *args, **params)
    if not isinstance(outs, (list, tuple)) or len(outs) != len(args):
      return outs
    res = []
    for c, a in zip(outs, args):
      if c is not None and type(c) is not ad.Zero and ad.is_undefined_primal(a) and \
          type(a.aval) is ShardedShapedArray and _layout_typed(a.aval) and \
          _retypable(c, a.aval):
        c = pxla.constrain(c, a.aval.concrete_sharding())
      res.append(c)
    return type(outs)(res) if isinstance(outs, tuple) else res
  transpose._typed = True
  return transpose


def _retypable(c, want):
  """Whether cotangent `c` has another type than `want` (its primal's) and the same
  shape (a rule that gives something else is left alone)."""
  aval = getattr(c, "aval", None)
  if aval is None:
    return tuple(np.shape(c)) == want.shape and want.mesh.size > 1
  if tuple(aval.shape) != want.shape:
    return False
  return not (type(aval) is ShardedShapedArray and aval.mesh == want.mesh and
              aval.spec == want.spec)


def _type_transposes():
  """Wrap every transpose rule registered so far (see `_typed_transpose`)."""
  from tracejax._src.interpreters import ad
  from tracejax._src.lax import dot
  table = ad.primitive_transposes
  if len(table) == _typed_count[0]:
    return   # nothing registered since the last time (install runs often)
  for prim, rule in list(table.items()):
    if not getattr(rule, "_typed", False):
      table[prim] = _typed_transpose(rule, prim is dot.dot_general_p)
  _typed_count[0] = len(table)


_typed_count = [-1]


def install():
  """Turn the rules on (done when the first mesh with Explicit axes is made)."""
  global _spmd_state
  from tracejax._src.interpreters import pxla
  from tracejax._src import sharding_rules_indexing
  _RULES.update(sharding_rules_indexing.RULES)
  _spmd_state = pxla._spmd_state
  trace_mod.sharding_rule = _sharding_rule
  sharding_mod.aval_typer = typed_aval
  _type_transposes()


# ---- the mesh context: jax.set_mesh, get_abstract_mesh ----

class set_mesh:
  """Make `mesh` the current mesh: bare `PartitionSpec`s (in `reshard`, `device_put`,
  `out_sharding=`, `jit`'s shardings, `shard_map`) refer to it. As a call it sets it
  for the rest of the thread; as a context manager, until the block ends.

  Args:
    mesh: a `Mesh` (or None to clear).

  >>> with jax.set_mesh(mesh):                  # doctest: +SKIP
  ...   y = jax.sharding.reshard(x, P('x'))
  """

  def __init__(self, mesh):
    if mesh is not None and not isinstance(mesh, sharding_mod.Mesh):
      raise TypeError(f"set_mesh expects a Mesh, got {mesh!r}")
    st = sharding_mod._mesh_stack
    self._prev = (list(st.stack), list(st.set_depths))
    self.mesh = mesh
    if mesh is None:
      st.stack.clear()
      st.set_depths.clear()
    else:
      st.stack.append(mesh)
      st.set_depths.append(len(st.stack) - 1)
    sharding_mod.sync_context_mesh()
    if mesh is not None and explicit_names(mesh):
      install()

  def __enter__(self):
    return self.mesh

  def __exit__(self, *exc):
    st = sharding_mod._mesh_stack
    st.stack[:], st.set_depths[:] = self._prev
    sharding_mod.sync_context_mesh()
    return False


def get_abstract_mesh():
  """The abstract mesh of the innermost `jax.set_mesh`, else the empty one (as in JAX, a
  legacy `with mesh:` block sets none).

  >>> get_abstract_mesh()
  AbstractMesh((), axis_types=())
  """
  from tracejax._src import abstract_mesh   # `use_abstract_mesh` blocks come first
  a = abstract_mesh.current_abstract_mesh()
  if a is not None:
    return a
  m = sharding_mod.context_mesh()
  return avals_mod.AbstractMesh.EMPTY if m is None else type_mesh(m)


def get_mesh():
  """The concrete mesh of the innermost `jax.set_mesh`, else the empty `Mesh` (as in
  JAX, a legacy `with mesh:` block sets none).

  >>> get_mesh().empty
  True
  """
  m = sharding_mod.context_mesh()
  return sharding_mod.Mesh((), ()) if m is None else m


def _as_named(s, what):
  if isinstance(s, sharding_mod.PartitionSpec):
    return sharding_mod.named_from_spec(s)
  if isinstance(s, sharding_mod.Sharding):
    return s
  raise TypeError(f"{what} must be a NamedSharding or a PartitionSpec, got {s!r}")


def reshard(xs, out_shardings):
  """`xs` (a pytree of arrays) laid out by `out_shardings`: a `NamedSharding`, or a
  `PartitionSpec` of the current mesh (`jax.set_mesh`), or a pytree prefix of them. Under
  `jit` the result's type carries the new sharding; eagerly the data moves.

  Args:
    xs: arrays (or a pytree of them).
    out_shardings: the target shardings.

  >>> with jax.set_mesh(mesh):                         # doctest: +SKIP
  ...   y = jax.sharding.reshard(x, P(None, 'x'))
  """
  from tracejax._src import tree_util
  from tracejax._src.interpreters import pxla
  is_leaf = lambda s: s is None or isinstance(s, (sharding_mod.Sharding,
                                                  sharding_mod.PartitionSpec))
  if is_leaf(out_shardings):
    shs = [out_shardings] * len(tree_util.tree_leaves(xs))
  else:
    shs = list(tree_util.broadcast_prefix(out_shardings, xs, is_leaf=is_leaf))
  shs = [_as_named(s, "reshard out_shardings") for s in shs]
  leaves, tree = tree_util.tree_flatten(xs)

  def full(s, x):   # on Explicit meshes JAX writes the spec with one entry per axis
    n = len(getattr(x, "shape", ())) if hasattr(x, "shape") else len(np.shape(x))
    if (isinstance(s, sharding_mod.NamedSharding) and len(s.spec) < n
        and AxisType.Explicit in tuple(getattr(s.mesh, "axis_types", ()))):
      return sharding_mod.NamedSharding(s.mesh, P(*s.spec, *([None] * (n - len(s.spec)))))
    return s
  return tree_util.tree_unflatten(
      tree, [pxla.constrain(x, full(s, x)) for x, s in zip(leaves, shs)])


def assert_constraint(x, shardings):
  """`with_sharding_constraint(x, shardings)` inside `jax.set_mesh(mesh)` of a mesh
  whose axes are all Explicit, as in JAX 0.10.2: an assertion that each value's type
  already has the sharding asked for (an AssertionError in JAX's words otherwise; an
  untyped value is replicated), the values coming back unchanged. Returns `(x,)`, or
  None where it does not apply (no such mesh: the constraint lays values out).

  Args:
    x: a pytree of arrays.
    shardings: a NamedSharding or PartitionSpec, or a pytree prefix of `x` of them.
  """
  mesh = sharding_mod.context_mesh()
  if mesh is None or not mesh.axis_names or \
      any(t != AxisType.Explicit for t in mesh.axis_types):
    return None
  from tracejax._src import tree_util
  from tracejax._src.interpreters import pxla
  leaves = tree_util.tree_leaves(x)
  shs = pxla._leaf_shardings(shardings, x, "with_sharding_constraint shardings")
  for v, s in zip(leaves, shs):
    s = pxla._as_sharding(s, mesh, "with_sharding_constraint shardings")
    if not isinstance(s, sharding_mod.NamedSharding):
      continue
    aval = getattr(v, "aval", None)
    nd = len(aval.shape) if aval is not None else np.ndim(v)
    want = tuple(s.spec) + (None,) * (nd - len(s.spec))
    have = aval.spec if type(aval) is ShardedShapedArray else (None,) * nd
    if tuple(s.spec._normalized(nd)) != tuple(P(*have)._normalized(nd)):
      raise AssertionError(
          "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
          f"`Explicit`. The array sharding: {P(*have)!r} did not match the sharding "
          f"provided: {P(*want)!r}. Please use `jax.sharding.reshard` to shard your input "
          "to the sharding you want.")
  return (x,)


# The primitive JAX 0.10.2 names in its `out_sharding=` errors for these functions.
_JAX_NAMES = {"dot": "dot_general", "matmul": "dot_general", "tensordot": "dot_general"}


def with_out_sharding(fun, out_sharding, what):
  """`fun()` computed with the sharding rules suspended, its result laid out by
  `out_sharding` (a NamedSharding, or a PartitionSpec of the current mesh): the
  `out_sharding=` of `jnp.dot`/`matmul`/`einsum`/`lax.dot_general`/`reshape`."""
  if out_sharding is None:
    return fun()
  s = _as_named(out_sharding, f"{what} out_sharding")
  if isinstance(s, sharding_mod.NamedSharding):
    check_out_sharding_axes(s, _JAX_NAMES.get(what, what))
  with suspended():
    out = fun()
  from tracejax._src.interpreters import pxla
  return pxla.constrain(out, s)


# ---- auto_axes: some Explicit axes left to the partitioner inside a function ----

def _retype_p():
  """`retype`: the identity on values, whose result has the type given by its params
  (spec over the mesh's Explicit axes, or untyped): how `auto_axes` drops mesh axes from
  its arguments' types without moving data. Made on first use (its rules live in
  layers above this module's imports)."""
  if not _retype_prim:
    from tracejax._src.core.trace import Primitive
    from tracejax._src.interpreters import ad, batching, lowering
    p = Primitive("retype")

    def impl(x, *, mesh, spec):
      from tracejax._src.runtime import backend
      aval = _retyped(x.aval, mesh, spec)
      return backend.ArrayImpl(aval, x._sharding, list(x._arrays), x._committed, True)

    p.def_impl(impl)
    p.def_abstract_eval(lambda aval, *, mesh, spec: _retyped(aval, mesh, spec))
    lowering.register_lowering(p, lambda ctx, x, *, mesh, spec: [x])
    ad.deflinear(p, lambda ct, *, mesh, spec: [ct])
    batching.primitive_batchers[p] = lambda args, dims, *, mesh, spec: (args[0], dims[0])
    _retype_prim.append(p)
  return _retype_prim[0]


_retype_prim = []


def _retyped(aval, mesh, spec):
  plain = avals_mod.ShapedArray(aval.shape, aval.dtype, aval.weak_type)
  if spec is None or all(e is None for e in spec) and mesh is None:
    return plain
  return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type, mesh, spec)


def _drop_axes(x, axes):
  aval = getattr(x, "aval", None)
  if type(aval) is not ShardedShapedArray:
    return x
  spec = []
  for e in aval.spec:
    kept = tuple(n for n in _entries(e) if n not in axes)
    spec.append(None if not kept else kept[0] if len(kept) == 1 else kept)
  return _retype_p().bind(x, mesh=aval.mesh, spec=tuple(spec))


def auto_axes(f=None, /, *, axes=None, out_sharding):
  """`f` with the mesh axes `axes` (default: all of the current mesh's) treated as Auto
  inside it: its arguments' types drop them and what it computes from them is laid out
  by XLA's partitioner, not typed; its results are then laid out by `out_sharding` (a
  NamedSharding or a PartitionSpec of the current mesh, or a pytree of them).

  Args:
    f: the function (or None, for use as a decorator with keywords).
    axes: a mesh axis name or a tuple of them.
    out_sharding: the results' shardings (required, as in JAX).

  >>> with jax.set_mesh(mesh):                                     # doctest: +SKIP
  ...   y = jax.sharding.auto_axes(lambda w: w @ w.T, out_sharding=P('x', None))(x)
  """
  if f is None:
    return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)
  if not callable(f):
    raise TypeError(f"auto_axes requires a callable, got {f!r}")
  import functools

  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    from tracejax._src import tree_util
    names = axes
    if names is None:
      mesh = sharding_mod.current_mesh()
      names = mesh.axis_names if mesh is not None else ()
    names = frozenset((names,) if isinstance(names, str) else names)
    args, kwargs = tree_util.tree_map(lambda x: _drop_axes(x, names), (args, kwargs))
    return reshard(f(*args, **kwargs), out_sharding)

  return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding):
  """`f` with the mesh axes `axes` (default: all of the current mesh's) treated as
  Explicit inside it, on a mesh whose axes are Auto: its arguments are laid out by
  `in_sharding` and typed by it over those axes, the sharding rules apply to what it
  computes, and its results leave untyped (their layout XLA's partitioner's again).

  Args:
    f: the function (or None, for use as a decorator with keywords).
    axes: a mesh axis name or a tuple of them.
    in_sharding: the arguments' shardings (a NamedSharding or a PartitionSpec of the
      current mesh, or a pytree prefix of the arguments of them; required, as in JAX).

  >>> with jax.set_mesh(auto_mesh):                                        # doctest: +SKIP
  ...   y = jax.sharding.explicit_axes(lambda w: w.sum(0), in_sharding=P('x', 'y'))(x)
  """
  if f is None:
    return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)
  if not callable(f):
    raise TypeError(f"explicit_axes requires a callable, got {f!r}")
  import functools

  @functools.wraps(f)
  def wrapped(*args):
    from tracejax._src import tree_util
    install()
    args = reshard(args, in_sharding if isinstance(in_sharding, (
        sharding_mod.Sharding, sharding_mod.PartitionSpec)) else tuple(in_sharding))
    leaves, tree = tree_util.tree_flatten(args)
    typed = []
    for x in leaves:
      s = x.sharding if not hasattr(x, "_trace") else None
      if s is None:   # a tracer: the constraint's sharding is in the staged program
        s = _as_named(in_sharding, "explicit_axes in_sharding") if isinstance(
            in_sharding, (sharding_mod.Sharding, sharding_mod.PartitionSpec)) else None
      if not isinstance(s, sharding_mod.NamedSharding):
        typed.append(x)
        continue
      names = axes if axes is not None else s.mesh.axis_names
      names = frozenset((names,) if isinstance(names, str) else names)
      spec = []
      for e in s.spec._normalized(len(x.shape)):
        kept = tuple(n for n in e if n in names)
        spec.append(None if not kept else kept[0] if len(kept) == 1 else kept)
      typed.append(_retype_p().bind(x, mesh=s.mesh, spec=tuple(spec)))
    out = f(*tree_util.tree_unflatten(tree, typed))
    return tree_util.tree_map(
        lambda y: _retype_p().bind(y, mesh=None, spec=None)
        if type(getattr(y, "aval", None)) is ShardedShapedArray else y, out)

  return wrapped


def type_updates(x_aval, y, slice_axes):
  """The updates `y` of `x.at[idx].set/add/...` laid out as JAX lays them out: the axes
  that slices of `x` keep have `x`'s spec, the indexed ones are unsplit (an untyped
  `y` is resharded so; a typed one of another sharding is a ValueError, as in JAX).

  Args:
    x_aval: the typed aval of the array updated.
    y: the updates, broadcast to the shape of `x[idx]`.
    slice_axes: per axis of `y`, the axis of `x` a slice keeps (None: an indexed one).
  """
  want = tuple(None if d is None else x_aval.spec[d] for d in slice_axes)
  y_aval = getattr(y, "aval", None)
  if type(y_aval) is ShardedShapedArray:
    if y_aval.spec != want or y_aval.mesh != x_aval.mesh:
      req = ShardedShapedArray(y_aval.shape, y_aval.dtype, False, x_aval.mesh, want)
      raise ValueError(f"Incompatible types for broadcasting: input type={y_aval} and "
                       f"requested type={req}")
    return y
  if all(e is None for e in want) and not hasattr(y, "shape"):
    return y
  from tracejax._src.interpreters import pxla
  return pxla.constrain(y, sharding_mod.NamedSharding(x_aval.mesh, P(*want)))
