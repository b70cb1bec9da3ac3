"""NumPy indexing (`x[idx]`), `x.at[idx]` updates, `take` and `take_along_axis`.

Every NumPy index works: integers (negative too; static or traced), slices of
any step, `None`, `Ellipsis`, integer arrays and lists (advanced indexing, with
broadcasting between them and NumPy's placement of their dimensions), boolean
masks (they need concrete values: the result's shape depends on them), and
tuples mixing all of these.

Two routes:

* Basic indices with the default mode become one `lax.slice` (after a `rev`
  for negative steps) and, for traced integers, one `lax.dynamic_slice`: no
  gather in the common case.
* Everything else becomes one `lax.gather`, built by `_index_to_gather`; the
  updates of `x.at[idx]` use the same description with the matching scatter.

As in JAX, negative indices count from the end; out-of-bounds reads clamp
(C-S07: `jnp.arange(10)[11]` is 9) and out-of-bounds updates are dropped.
"""
import operator
import warnings

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import gather as lax_gather
from tracejax._src.lax import reductions as lax_reductions
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural
from tracejax._src.numpy import util
from tracejax._src.runtime.array import Array

_Mode = lax_gather.GatherScatterMode


# The public error class (prints as jax.errors.NonConcreteBooleanIndexError).
from tracejax._src.errors import NonConcreteBooleanIndexError  # noqa: E402


# ---- parsed index entries ----

class _Int:
  """A static integer index: `raw` counts negative indices from the end; `i` is it
  clamped into [0, n) (the basic route's reading); `oob` if it had to be."""
  __slots__ = ("i", "raw", "oob")

  def __init__(self, raw, n):
    self.raw = raw + n if raw < 0 else raw
    self.i = min(max(self.raw, 0), n - 1)
    self.oob = not 0 <= self.raw < n


class _DynInt:
  """A traced (or device-array) integer scalar index."""
  __slots__ = ("i",)

  def __init__(self, i):
    self.i = i


class _IntArray:
  """An integer array index (advanced indexing); a host array stays on the host."""
  __slots__ = ("a",)

  def __init__(self, a):
    self.a = a


class _Slice:
  """A static slice along one axis: `length` elements from `start` by `step`."""
  __slots__ = ("start", "step", "length")

  def __init__(self, start, step, length):
    self.start, self.step, self.length = start, step, length


class _NewAxis:
  """`None` (size 1), or a scalar False index (a new axis of size 0)."""
  __slots__ = ("size",)

  def __init__(self, size=1):
    self.size = size


_ADVANCED = (_Int, _DynInt, _IntArray)
_array_types = (Array, Tracer, np.ndarray)


def _is_int_dtype(x):
  return dtypes.is_integer(util.dtype_of(x))


def _float_index_error(dtype):
  return TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                   f"{np.dtype(dtype).name}")


def _bool_mask_value(mask):
  """The concrete value of a boolean mask, or the JAX error when it is traced."""
  if isinstance(mask, Tracer):
    v = mask.to_concrete_value()
    if v is None:
      raise NonConcreteBooleanIndexError(mask.aval)
    return np.asarray(v)
  return np.asarray(mask)


def _canonical_items(idx):
  """The entries of `idx` as a tuple: lists become arrays (NumPy's advanced
  indexing); bools, ints, slices, None and Ellipsis are kept."""
  if isinstance(idx, list):
    # JAX 0.10.2 rejects a bare list index (NumPy's old ambiguous reading of it as
    # either a tuple or an array); lists inside a tuple stay advanced indices.
    nested = any(e is None or e is Ellipsis or isinstance(e, (slice, list, tuple))
                 for e in idx)
    hint = "tuple" if nested else "array"
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                    f"allowed; use `arr[{hint}(seq)]` instead of `arr[seq]`.")
  if not isinstance(idx, tuple):
    idx = (idx,)
  items = []
  for pos, i in enumerate(idx):
    if i is None or i is Ellipsis or isinstance(i, slice):
      items.append(i)
    elif isinstance(i, (bool, np.bool_)):
      items.append(bool(i))
    elif isinstance(i, (int, np.integer)):
      items.append(int(i))
    elif isinstance(i, _array_types):
      dt = util.dtype_of(i)
      if dt == np.bool_:
        items.append(i if util.ndim(i) else bool(_bool_mask_value(i)))
      elif not dtypes.is_integer(dt):
        raise _float_index_error(dt)
      elif util.ndim(i) == 0 and isinstance(i, np.ndarray):
        items.append(int(i))
      else:
        items.append(i)
    elif isinstance(i, (list, tuple)):
      items.append(_list_index(i, pos))
    elif isinstance(i, (float, complex, np.inexact)):
      raise _float_index_error(np.asarray(i).dtype)
    elif hasattr(i, "__index__"):
      items.append(int(i.__index__()))
    elif hasattr(i, "__jax_array__"):
      items.extend(_canonical_items(i.__jax_array__()))
    else:
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                      f"{type(i).__name__} at position {pos}, indexer value {i!r}")
  return items


def _list_index(seq, pos):
  """A list (or nested sequence) used as an index: an integer or boolean array."""
  flat = []
  stack = [seq]
  while stack:
    s = stack.pop()
    if isinstance(s, (list, tuple)):
      stack.extend(s)
    else:
      flat.append(s)
  if any(isinstance(e, (slice, type(None), type(Ellipsis))) for e in flat):
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                    f"allowed; use `arr[tuple(seq)]` instead of `arr[seq]` (index at "
                    f"position {pos}: {seq!r}).")
  if any(isinstance(e, (Array, Tracer)) for e in flat):
    from tracejax._src.numpy import creation
    arr = creation.array(seq)
  else:
    arr = np.asarray(seq)
    if arr.size == 0:
      arr = arr.astype(np.int32)  # [] is an empty integer index, as in NumPy
  dt = util.dtype_of(arr)
  if dt != np.bool_ and not dtypes.is_integer(dt):
    raise _float_index_error(dt)
  return arr


def _parse(idx, shape):
  """Per-entry specs of `idx` against `shape`: Ellipsis expanded, missing axes
  filled with full slices, boolean masks turned into integer arrays."""
  items = _canonical_items(idx)
  n_ellipsis = sum(e is Ellipsis for e in items)
  if n_ellipsis > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  consumes = lambda e: (0 if e is None or e is Ellipsis or isinstance(e, bool)
                        else util.ndim(e) if isinstance(e, _array_types)
                        and util.dtype_of(e) == np.bool_ else 1)
  consumed = sum(consumes(e) for e in items)
  if consumed > len(shape):
    raise IndexError(f"Too many indices for array: {consumed} non-None/Ellipsis indices "
                     f"for dim {len(shape)}.")
  fill = [slice(None)] * (len(shape) - consumed)
  if n_ellipsis:
    # By identity: `list.index` compares with ==, which an array entry answers
    # elementwise ("truth value ambiguous" for x[np.array([0, 2]), ...]).
    k = next(j for j, e in enumerate(items) if e is Ellipsis)
    items = items[:k] + fill + items[k + 1:]
  else:
    items = items + fill
  specs = []
  dim = 0
  for e in items:
    if e is None:
      specs.append(_NewAxis())
      continue
    if isinstance(e, bool):
      # A scalar bool is a mask over a new axis of size 1: True keeps it, False
      # selects nothing.
      specs.append(_NewAxis(1 if e else 0))
      continue
    if isinstance(e, _array_types) and util.dtype_of(e) == np.bool_:
      mask = _bool_mask_value(e)
      expected = tuple(shape[dim:dim + mask.ndim])
      if mask.shape != expected:
        raise IndexError(f"boolean index did not match shape of indexed array in index "
                         f"{dim}: got {mask.shape}, expected {expected}")
      for a in np.nonzero(mask):
        specs.append(_IntArray(a.astype(dtypes.canonicalize_dtype(np.int64))))
      dim += mask.ndim
      continue
    n = shape[dim]
    if isinstance(e, slice):
      for part in (e.start, e.stop, e.step):
        if isinstance(part, Tracer):
          raise IndexError("Array slice indices must have static start/stop/step to be "
                           "used with NumPy indexing syntax. Use lax.dynamic_slice instead.")
      start, stop, step = _slice_indices(e, n)
      specs.append(_Slice(start, step, len(range(start, stop, step))))
    elif isinstance(e, int) or util.ndim(e) == 0:
      if n == 0:
        raise IndexError(f"index is out of bounds for axis {dim} with size 0")
      specs.append(_Int(e, n) if isinstance(e, int) else _DynInt(e))
    else:
      specs.append(_IntArray(e))
    dim += 1
  return specs


def _slice_indices(s, n):
  """`slice.indices` with NumPy's tolerance of integer-like parts (device scalars)."""
  parts = [None if p is None else operator.index(p) if not isinstance(p, Array)
           else int(p) for p in (s.start, s.stop, s.step)]
  return slice(*parts).indices(n)


def _axis_specs(specs):
  """The specs that consume an axis of the operand, in axis order."""
  return [s for s in specs if not isinstance(s, _NewAxis)]


def _typed_partial(x, specs, shape):
  """Whether `x` is a concrete Array typed over Explicit mesh axes and the index takes an
  integer or a part of an axis: JAX reads those through a gather (whose sharding rule
  may then ask for `out_sharding=`), not a slice."""
  from tracejax._src.core import trace as trace_mod
  if trace_mod.sharding_rule is None or isinstance(x, Tracer) or \
      type(getattr(x, "aval", None)).__name__ != "ShardedShapedArray":
    return False
  return any(isinstance(s, (_Int, _DynInt)) or
             (isinstance(s, _Slice) and (s.start, s.step, s.length) != (0, 1, n))
             for s, n in zip(_axis_specs(specs), shape))


def _is_basic(specs):
  return not any(isinstance(s, _IntArray) for s in specs) and \
      all(s.size == 1 for s in specs if isinstance(s, _NewAxis))


# =============================================================================
# Reading: x[idx]
# =============================================================================

def getitem(x, idx):
  """`x[idx]` with NumPy's indexing; out-of-bounds integers are clamped."""
  return rewriting_take(x, idx)


def rewriting_take(x, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
                   fill_value=None):
  """`x[idx]`, read with `mode` (None: clamp) and `fill_value` ('fill' mode)."""
  x = util.to_array(x)
  shape = util.shape(x)
  specs = _parse(idx, shape)
  if mode is None and fill_value is None and _is_basic(specs) and \
      not _typed_partial(x, specs, shape):
    return _basic_take(x, specs, shape)
  # Reads clamp by default (C-S07): PROMISE_IN_BOUNDS, as JAX, whose values XLA
  # clamps and whose transpose (a scatter-add) drops what is out of bounds, so
  # x[..., [-4, 1]] of a 3-column x gives column 0 no gradient (CLIP would).
  gmode = _Mode.PROMISE_IN_BOUNDS if mode is None else _Mode.from_any(mode)
  ix = _index_to_gather(shape, specs)
  dtype = util.dtype_of(x)
  if 0 in ix.out_shape:
    # Where JAX reads through a gather (an index array or mask, or a mode other than
    # clamping), an empty result is zeros free of x, so reverse mode never reaches
    # what made x; integers and slices it reads as a slice, which depends on x.
    slices = gmode in (_Mode.PROMISE_IN_BOUNDS, _Mode.CLIP) and _is_basic(specs)
    return _empty_result(x, ix.out_shape, depends=slices)
  ix.check_empty_axes()
  y = x
  if ix.indices is not None:
    y = lax_gather.gather(x, ix.indices, ix.dnums, ix.slice_sizes,
                          unique_indices=unique_indices or ix.unique,
                          indices_are_sorted=indices_are_sorted or ix.sorted, mode=gmode,
                          fill_value=fill_value)
  if ix.new_axes:
    y = structural.expand_dims(y, ix.new_axes)
  if y is x and (gmode == _Mode.FILL_OR_DROP or
                 any(isinstance(s, _Slice) and s.step != 1 for s in specs)):
    # JAX gathers for every 'fill' read and every strided slice (length <= 1 too)
    y = util.fresh_array(y)
  return y


def _basic_take(x, specs, shape):
  """Basic indexing: static slices, one dynamic slice for traced integers."""
  axis_specs = _axis_specs(specs)
  # 1. Reverse the axes with negative steps, so every slice steps forward.
  rev_dims = tuple(d for d, s in enumerate(axis_specs) if isinstance(s, _Slice) and s.step < 0)
  if rev_dims:
    x = structural.rev(x, rev_dims)
  # 2. One static slice for every slice and static integer.
  bounds = [_static_bounds(s, n) for s, n in zip(axis_specs, shape)]
  starts, limits, strides = (list(b) for b in zip(*bounds)) if bounds else ([], [], [])
  if starts != [0] * len(shape) or limits != list(shape) or any(st != 1 for st in strides):
    x = lax_slicing.slice(x, tuple(starts), tuple(limits),
                          tuple(strides) if any(st != 1 for st in strides) else None)
  # 3. One dynamic slice for the traced integers (it clamps them into range).
  dyn = [d for d, s in enumerate(axis_specs) if isinstance(s, _DynInt)]
  if dyn:
    cur = util.shape(x)
    idx_dtype = dtypes.default_int_dtype()
    start_idx = [util.convert(axis_specs[d].i, idx_dtype, False) if d in dyn else 0
                 for d in range(len(cur))]
    sizes = [1 if d in dyn else cur[d] for d in range(len(cur))]
    x = lax_slicing.dynamic_slice(x, start_idx, sizes)
  # 4. Drop the integer-indexed axes, then insert the new axes.
  int_dims = tuple(d for d, s in enumerate(axis_specs) if isinstance(s, (_Int, _DynInt)))
  if int_dims:
    x = structural.squeeze(x, int_dims)
  new_axes = []
  pos = 0
  for s in specs:
    if isinstance(s, _NewAxis):
      new_axes.append(pos)
      pos += 1
    elif isinstance(s, _Slice):
      pos += 1
  if new_axes:
    x = structural.expand_dims(x, tuple(new_axes))
  return x  # x[...] under vmap/jvp is the input itself, as JAX's slice fast path


def _static_bounds(spec, n):
  """(start, limit, stride) of `lax.slice` along one axis (after any reversal)."""
  if isinstance(spec, _Slice):
    start = (n - 1 - spec.start) if spec.step < 0 else spec.start
    if spec.length == 0:
      start = min(max(start, 0), n)
      return start, start, 1
    step = abs(spec.step)
    return start, start + (spec.length - 1) * step + 1, step
  if isinstance(spec, _Int):
    return spec.i, spec.i + 1, 1
  return 0, n, 1  # a traced integer: the dynamic slice comes next


# =============================================================================
# The general route: one gather (or scatter) for any index
# =============================================================================

class _GatherIndexer:
  """An index as one gather: `indices` (None when nothing is gathered, only whole
  axes kept), its dimension numbers and slice sizes; the gather's output then
  gets `new_axes` inserted to give `out_shape`."""
  __slots__ = ("indices", "dnums", "slice_sizes", "gather_shape", "new_axes", "out_shape",
               "slice_axes",
               "unique", "sorted", "empty_axes")

  def check_empty_axes(self):
    # An empty axis has nothing to clamp to. An index array there is a TypeError in
    # JAX (its gather's slice of size 1 does not fit); an integer was an IndexError
    # already (_parse).
    if self.empty_axes:
      d = self.empty_axes[0]
      raise TypeError(f"index is out of bounds for axis {d} with size 0: the gather's "
                      f"slice size 1 at index {d} is out of range [0, 0 + 1).")


def _index_dtype(specs, shape):
  """int32, unless an index array is 64-bit or an axis is too long for int32."""
  wide = any(n > np.iinfo(np.int32).max for n in shape) or any(
      isinstance(s, (_IntArray, _DynInt)) and
      np.dtype(util.dtype_of(s.a if isinstance(s, _IntArray) else s.i)).itemsize == 8
      for s in specs)
  return dtypes.canonicalize_dtype(np.int64 if wide else np.int32)


def _normalize(a, n, dtype):
  """Index array `a` in `dtype`, negative entries counted from the end (as
  NumPy does; what is still out of bounds is left to the gather's mode)."""
  if isinstance(a, np.ndarray):
    a = np.asarray(a, np.int64)
    return np.where(a < 0, a + n, a).astype(dtype)
  a = util.convert(a, dtype, False)
  if dtypes.is_unsigned(util.dtype_of(a)):
    return a
  return lax_ew.select(lax_ew.lt(a, np.zeros((), dtype)),
                       lax_ew.add(a, np.array(n, dtype)), a)


def _index_to_gather(shape, specs):
  """Describe `x[specs]` as one gather (see `_GatherIndexer`).

  The integer and array indices form one group broadcast together (shape B);
  as in NumPy, B's dimensions replace the group where it is contiguous and come
  first otherwise. Gathered operand axes: the group's (collapsed), and strided
  slices (collapsed, their positions an iota: one batch dimension each). Whole
  axes and unit-step slices are windows (offset dimensions). The batch
  dimensions are laid out in the order the result wants, so no transpose is
  needed afterwards.
  """
  axis_specs = _axis_specs(specs)
  adv_pos = [k for k, s in enumerate(specs) if isinstance(s, _ADVANCED)]
  adv_shapes = [util.shape(s.a) if isinstance(s, _IntArray) else () for s in specs
                if isinstance(s, _ADVANCED)]
  try:
    bshape = util.broadcast_shapes(*adv_shapes) if adv_shapes else ()
  except ValueError:
    raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                     f"with shapes {' '.join(map(str, adv_shapes))}") from None
  contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos))) \
      if adv_pos else True
  # The result's layout: items "B", ("slice", spec) and ("new", spec), in order.
  layout = []
  if adv_pos and not contiguous:
    layout.append("B")
  for k, s in enumerate(specs):
    if isinstance(s, _NewAxis):
      layout.append(("new", s))
    elif isinstance(s, _Slice):
      layout.append(("slice", s))
    elif contiguous and k == adv_pos[0]:
      layout.append("B")
  is_window = lambda s: s.step == 1 or s.length <= 1
  out_shape, new_axes, gather_shape, offset_dims, batch_shape = [], [], [], [], []
  batch_at = {}  # id(spec) or "B" -> first batch dimension
  axis_of = {id(s): d for d, s in enumerate(axis_specs)}
  slice_axes = []   # per gather_shape dimension: the operand axis a slice keeps, or None
  for item in layout:
    if item == "B":
      batch_at["B"] = len(batch_shape)
      batch_shape.extend(bshape)
      slice_axes.extend([None] * len(bshape))
      gather_shape.extend(bshape)
      out_shape.extend(bshape)
      continue
    kind, s = item
    if kind == "new":
      new_axes.append(len(out_shape))
      out_shape.append(s.size)
      continue
    slice_axes.append(axis_of[id(s)])
    if is_window(s):
      offset_dims.append(len(gather_shape))
    else:
      batch_at[id(s)] = len(batch_shape)
      batch_shape.append(s.length)
    gather_shape.append(s.length)
    out_shape.append(s.length)
  ix = _GatherIndexer()
  ix.out_shape, ix.new_axes, ix.gather_shape = tuple(out_shape), tuple(new_axes), \
      tuple(gather_shape)
  ix.slice_axes = tuple(slice_axes)
  ix.empty_axes = [d for d, (s, n) in enumerate(zip(axis_specs, shape))
                   if n == 0 and isinstance(s, _ADVANCED)]
  # One index component per gathered axis (operand order); the others are windows.
  dtype = _index_dtype(specs, shape)
  components, index_map, collapsed, slice_sizes = [], [], [], []
  nb = len(bshape)
  for d, (s, n) in enumerate(zip(axis_specs, shape)):
    if isinstance(s, _Slice) and is_window(s):
      slice_sizes.append(s.length)
      if s.length == n:
        continue  # the whole axis: nothing to index
      components.append(("const", s.start))
    elif isinstance(s, _Slice):
      slice_sizes.append(1)
      collapsed.append(d)
      components.append(("iota", s, batch_at[id(s)]))
    else:
      slice_sizes.append(1)
      collapsed.append(d)
      if isinstance(s, _Int):
        # `raw` already counts from the end once; normalising it again would wrap
        # -5 (-> -2) into bounds for n = 3, where JAX drops (or fills) it.
        a = np.asarray(s.raw, dtype)
      else:
        a = _normalize(s.a if isinstance(s, _IntArray) else s.i, n, dtype)
      components.append(("adv", a, batch_at["B"]))
    index_map.append(d)
  ix.slice_sizes = tuple(slice_sizes)
  ix.dnums = lax_gather.GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
      start_index_map=tuple(index_map))
  # Only int scalars and slices: every position is read (written) once, in order.
  single = not any(isinstance(s, _IntArray) for s in specs)
  ix.unique = single
  ix.sorted = single and all(s.step > 0 for s in axis_specs if isinstance(s, _Slice))
  ix.indices = _build_indices(components, tuple(batch_shape), nb, dtype) \
      if components else None
  return ix


def _build_indices(components, batch_shape, nb, dtype):
  """The (*batch_shape, k) index array: on the host when every component is
  known there, else one broadcast per device component and a concatenate."""
  cols = []
  for c in components:
    if c[0] == "const":
      cols.append(np.full(batch_shape, c[1], dtype))
    elif c[0] == "iota":
      _, s, at = c
      v = (s.start + s.step * np.arange(s.length)).astype(dtype)
      shape = [1] * len(batch_shape)
      shape[at] = s.length
      cols.append(np.broadcast_to(v.reshape(shape), batch_shape))
    else:
      # The group's arrays are right-aligned in B, which starts at batch dim `at`.
      _, a, at = c
      a_shape = util.shape(a)
      dims = tuple(at + nb - len(a_shape) + j for j in range(len(a_shape)))
      if isinstance(a, np.ndarray):
        shape = [1] * len(batch_shape)
        for j, d in enumerate(dims):
          shape[d] = a_shape[j]
        cols.append(np.broadcast_to(a.reshape(shape), batch_shape))
      else:
        cols.append((a, dims))
  if all(isinstance(c, np.ndarray) for c in cols):
    return np.stack(cols, -1)
  # Each column gets the trailing index-vector axis; size-1 axes of a device
  # index stretch in the same broadcast.
  full = batch_shape + (1,)
  expanded = [np.asarray(c)[..., None] if isinstance(c, np.ndarray)
              else structural.broadcast_in_dim(c[0], full, c[1]) for c in cols]
  return structural.concatenate(expanded, len(batch_shape))


# =============================================================================
# Functional updates: x.at[idx].set(y) and friends
# =============================================================================

def _warn_unless_safe_cast(y, dt):
  """JAX's FutureWarning for updates that standard promotion would not cast to `x`'s
  dtype `dt` (int.at[i].set(1.5), float16 from float32, bool from a Python int)."""
  ydt = util.dtype_of(y)
  if ydt != dt and util._result_dtype((y, dt))[0] != dt:
    warnings.warn(
        f"scatter inputs have incompatible types: cannot safely cast value from "
        f"dtype={ydt.name} to dtype={np.dtype(dt).name} with "
        "jax_numpy_dtype_promotion=standard. In future JAX releases this will result in "
        "an error.", FutureWarning, stacklevel=util.user_stacklevel())


def _scatter_update(x, idx, y, scatter_op, fun_name, *, indices_are_sorted=False,
                    unique_indices=False, mode=None, normalize_indices=True):
  """`x` with `y` combined (by `scatter_op`) into `x[idx]`; `y` broadcasts to the
  shape of `x[idx]`. Out-of-bounds updates are dropped (mode None)."""
  x = util.to_array(x)
  shape = util.shape(x)
  dt = util.dtype_of(x)
  util.check_arraylike_or_list(fun_name, y)
  y = util.to_operand(y)
  _warn_unless_safe_cast(y, dt)
  weak = util.is_weak(x)
  if type(y) is complex and dt.kind != "c" and scatter_op is lax_gather.scatter:
    # JAX 0.10.2 drops the imaginary part (with a ComplexWarning) here. The combining
    # ops instead promote and cast back below: a complex min/max orders
    # lexicographically, so nan.at[i].min(1-2j) is 1, not nan.
    y = y.real
  if type(y) in (bool, int, float) and dt.kind in "iu" and not (
      np.iinfo(dt).min <= y <= np.iinfo(dt).max):
    # A Python scalar outside an integer x's range (or NaN): JAX makes it an array of
    # its own default dtype and casts as XLA does (uint8: -1 -> 255, -1.5 -> 0,
    # 300 -> 44), where arithmetic would raise OverflowError.
    sdt = dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(y)])
    y = util.convert_element_type(np.asarray(y, sdt), sdt, True)
  if util.dtype_of(y) != dt or (weak and not util.is_weak(y)):
    # As JAX: combine in the promoted dtype, then cast back (int x .at[i].add(-1.5):
    # 4 + -1.5 = 2.5 -> 2, not 4 + (-1) = 3; a set too, so every element of a uint32 x
    # .at[i].set(2.) passes through float32: 3430187372 comes back as 3430187264). A
    # weak x meeting a strong y is combined strongly too and only the result made weak
    # again: under AD those casts give JAX's cotangent weak types.
    px, py = util.promote_dtypes(x, y)
    if util.dtype_of(px) != dt or util.is_weak(px) != weak:
      if _selects_nothing(idx, shape):
        return util.fresh_array(x)  # (JAX returns x itself, not x cast there and back)
      out = _scatter_update(px, idx, py, scatter_op, fun_name,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode,
                            normalize_indices=normalize_indices)
      return util.convert(out, dt, weak)
  y = util.convert(y, dt, weak)
  mask_update = _mask_update(x, idx, y, scatter_op)
  if mask_update is not None:
    return mask_update
  specs = _parse(idx, shape)
  ix = _index_to_gather(shape, specs)
  y = util.broadcast_to(y, ix.out_shape)
  if 0 in ix.out_shape:
    return util.fresh_array(x)  # nothing selected
  if ix.new_axes:
    y = structural.squeeze(y, ix.new_axes)
  if type(getattr(x, "aval", None)).__name__ == "ShardedShapedArray":
    from tracejax._src import sharding_explicit  # the sharding-in-types layer, above
    y = sharding_explicit.type_updates(x.aval, y, ix.slice_axes)
  if ix.indices is None:
    # Whole axes only: an elementwise update of all of x.
    if scatter_op is lax_gather.scatter:
      # JAX scatters here, so the tangent is x's with y's written over it: zeros,
      # not a symbolic zero (jacfwd of log(x.at[...].set(0.)) is nan, as 0/0).
      # A select on a constant True has that rule and costs XLA nothing.
      return lax_ew.select(np.bool_(True), util.to_operand(y), x)
    if scatter_op in (lax_gather.scatter_min, lax_gather.scatter_max) and \
        util.dtype_of(x) != np.bool_:
      # JAX scatters here too, and the scatter's derivative (unlike max's) is strong.
      ix.indices = np.zeros((0,), np.int32)
    else:
      return _COMBINE[scatter_op](x, y)
  if ix.empty_axes:
    return util.fresh_array(x)  # every update is out of bounds
  sdnums = lax_gather._scatter_dnums_of(ix.dnums)
  return scatter_op(x, ix.indices, y, sdnums,
                    indices_are_sorted=indices_are_sorted or ix.sorted,
                    unique_indices=unique_indices or ix.unique, mode=mode)


def _selects_nothing(idx, shape):
  """Whether `x[idx]` is known to be empty (a concrete all-False mask selects nothing)."""
  if isinstance(idx, _array_types) and util.dtype_of(idx) == np.bool_:
    return not isinstance(idx, Tracer) and not np.any(np.asarray(idx))
  try:
    return 0 in _index_to_gather(shape, _parse(idx, shape)).out_shape
  except Exception:  # (the update itself reports a bad index)
    return False


def _mask_update(x, idx, y, scatter_op):
  """`x.at[mask].op(scalar)` as a select of a concrete mask (no nonzero). A traced mask
  is JAX's NonConcreteBooleanIndexError, as for every boolean index."""
  if not isinstance(idx, _array_types) or util.dtype_of(idx) != np.bool_ \
      or util.ndim(y) != 0 or scatter_op not in _COMBINE:
    return None
  _bool_mask_value(idx)  # (raises for a traced mask)
  mshape, shape = util.shape(idx), util.shape(x)
  if not mshape or mshape != shape[:len(mshape)]:
    return None
  mask = util.to_operand(idx)
  if mshape != shape:
    mask = structural.broadcast_in_dim(mask, shape, tuple(range(len(mshape))))
  new = _COMBINE[scatter_op](x, util.broadcast_to(y, shape))
  return lax_ew.select(mask, new, x)


def _empty_result(x, shape, depends=True):
  """The empty result (`shape` has a 0) of a read of `x`: x's dtype and weak type, as
  the gather JAX would do gives."""
  dt = util.dtype_of(x)
  if depends and isinstance(x, Tracer) and dtypes.is_inexact(dt) and util.ndim(x) > 0:
    # Traced, the result still depends on x, as JAX's gather does: derivatives flow
    # through it (as zeros) and reach the rules JAX reaches (reverse mode through a
    # sampler's while_loop raises). The zero sum of an empty slice of x carries that.
    nd = util.ndim(x)
    empty = lax_slicing.slice(x, (0,) * nd, (0,) * nd)
    total = lax_reductions.reduce_sum(empty, tuple(range(nd)))
    return structural.broadcast_in_dim(total, shape, ())
  out = structural.full(shape, np.zeros((), dt))
  return util.convert(out, dt, True) if util.is_weak(x) else out


def _set(x, y):
  # `y` may still be a host value (a Python or NumPy scalar): .at[...].set returns an Array
  return util.fresh_array(y)


def _add(x, y):
  return lax_ew.bitwise_or(x, y) if util.dtype_of(x) == np.bool_ else lax_ew.add(x, y)


def _mul(x, y):
  return lax_ew.bitwise_and(x, y) if util.dtype_of(x) == np.bool_ else lax_ew.mul(x, y)


def _min(x, y):
  return lax_ew.bitwise_and(x, y) if util.dtype_of(x) == np.bool_ else lax_ew.min(x, y)


def _max(x, y):
  return lax_ew.bitwise_or(x, y) if util.dtype_of(x) == np.bool_ else lax_ew.max(x, y)


_COMBINE = {lax_gather.scatter: _set, lax_gather.scatter_add: _add,
            lax_gather.scatter_sub: lax_ew.sub, lax_gather.scatter_mul: _mul,
            lax_gather.scatter_min: _min, lax_gather.scatter_max: _max}


class _IndexUpdateRef:
  """`x.at[idx]`: methods return a new array with the indexed elements updated.

  Out-of-bounds updates are dropped (mode None, 'fill' or 'drop'; 'clip' clamps
  them instead); where an index repeats, `add`/`multiply`/`min`/`max` combine all
  the updates and `set` keeps one of them.
  """
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array, self.index = array, index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, out_sharding=None):
    """`x[idx]`; with mode='fill', out-of-bounds reads give `fill_value`. `out_sharding=`
    (a NamedSharding, or a PartitionSpec under `jax.set_mesh`) lays the result out (a
    gather whose sharding Explicit mesh axes cannot type).

    >>> jnp.arange(4).at[1].get()
    DeviceArray(1, dtype=int32)
    """
    return _with_out_sharding(lambda: rewriting_take(
        self.array, self.index, indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices, mode=mode, fill_value=fill_value),
        out_sharding, ".get")

  def _update(self, values, op, name, indices_are_sorted, unique_indices, mode,
              out_sharding=None):
    return _with_out_sharding(lambda: _scatter_update(
        self.array, self.index, values, op, name, indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices, mode=mode), out_sharding, f".{name}")

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None):
    """`x` with `x[idx] = values`."""
    return self._update(values, lax_gather.scatter, "set", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None):
    """`x` with `x[idx] += values`."""
    return self._update(values, lax_gather.scatter_add, "add", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None):
    """`x` with `x[idx] -= values`."""
    return self._update(values, lax_gather.scatter_sub, "subtract", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None):
    """`x` with `x[idx] *= values`."""
    return self._update(values, lax_gather.scatter_mul, "multiply", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  mul = multiply

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] /= values` (repeated indices divide by every value)."""
    from tracejax._src.numpy import ufuncs
    x = util.to_array(self.array)
    denom = _scatter_update(structural.full_like(x, 1), self.index, values,
                            lax_gather.scatter_mul, "divide",
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode)
    return ufuncs.divide(x, denom)

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] **= values` (repeated indices raise to every value)."""
    from tracejax._src.numpy import ufuncs
    x = util.to_array(self.array)
    expo = _scatter_update(structural.full_like(x, 1), self.index, values,
                           lax_gather.scatter_mul, "power",
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)
    return ufuncs.power(x, expo)

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None):
    """`x` with `x[idx] = minimum(x[idx], values)`."""
    return self._update(values, lax_gather.scatter_min, "min", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None):
    """`x` with `x[idx] = maximum(x[idx], values)`."""
    return self._update(values, lax_gather.scatter_max, "max", indices_are_sorted,
                        unique_indices, mode, out_sharding)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] = func(x[idx])` (`func` elementwise; applied once per
    element, however often the index repeats it)."""
    x = util.to_array(self.array)
    read_mode = "clip" if mode is None else mode
    vals = rewriting_take(x, self.index, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=read_mode)
    return _scatter_update(x, self.index, func(vals), lax_gather.scatter, "apply",
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def _with_out_sharding(fun, out_sharding, what):
  if out_sharding is None:
    return fun()
  from tracejax._src import sharding_explicit  # the sharding-in-types layer, above numpy
  return sharding_explicit.with_out_sharding(fun, out_sharding, what)


class IndexUpdateHelper:
  """The `x.at` property: `x.at[idx]` is an `_IndexUpdateRef`."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


# =============================================================================
# take and take_along_axis
# =============================================================================

def _take_indices(fun_name, indices, n, mode):
  """Integer `indices` for a gather along an axis of size `n`, and the gather mode:
  'fill' (default) reads `fill_value` out of bounds, 'clip' clamps, 'wrap' wraps;
  negative indices count from the end except with 'clip' (NumPy's rules)."""
  util.check_arraylike(fun_name, indices)
  indices = util.to_operand(indices)
  if not _is_int_dtype(indices):
    raise TypeError(f"{fun_name} indices must be of integer type, got "
                    f"{util.dtype_of(indices)}")
  dtype = dtypes.canonicalize_dtype(
      np.int64 if np.dtype(util.dtype_of(indices)).itemsize == 8 or n > 2**31 - 1
      else np.int32)
  if mode is None or mode == "fill":
    return _normalize(indices, n, dtype), _Mode.FILL_OR_DROP
  if mode == "raise":
    raise NotImplementedError(f"The 'raise' mode to jnp.{fun_name} is not supported.")
  if mode == "wrap":
    indices = util.convert(indices, dtype, False) if not isinstance(indices, np.ndarray) \
        else np.asarray(indices, dtype)
    if isinstance(indices, np.ndarray):
      return np.mod(indices, max(n, 1)).astype(dtype), _Mode.PROMISE_IN_BOUNDS
    from tracejax._src.numpy import ufuncs
    return ufuncs.remainder(indices, np.array(max(n, 1), dtype)), _Mode.PROMISE_IN_BOUNDS
  if mode == "clip":
    return (np.asarray(indices, dtype) if isinstance(indices, np.ndarray)
            else util.convert(indices, dtype, False)), _Mode.CLIP
  if mode == "promise_in_bounds":
    return _normalize(indices, n, dtype), _Mode.PROMISE_IN_BOUNDS
  raise ValueError(f"Invalid mode for {fun_name}: {mode!r}")


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """Elements of `a` at `indices` along `axis` (the flattened `a` if None).

  Out-of-bounds indices read `fill_value` by default (mode 'fill'; NaN for
  inexact types); 'clip' clamps and 'wrap' wraps them (JAX's modes).
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
  if mode not in (None, "raise", "fill", "clip", "wrap"):
    raise ValueError(f"Invalid mode '{mode}' for np.take")
  util.check_arraylike("take", a)
  a = util.to_array(a)
  if axis is None:
    a = structural.reshape(a, (int(np.prod(util.shape(a), dtype=np.int64)),))
    axis = 0
  shape = util.shape(a)
  axis = util.canonicalize_axis(axis, len(shape))
  n = shape[axis]
  idx, gmode = _take_indices("take", indices, n, mode)
  ishape = util.shape(idx)
  out_shape = shape[:axis] + ishape + shape[axis + 1:]
  if n == 0 and 0 not in ishape:  # (JAX checks the indices, not the result's size)
    raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
  if 0 in out_shape:
    # JAX: no indices give zeros free of `a`; from an empty axis, or with indices into
    # an array empty elsewhere, the result depends on `a` (JAX returns it, or gathers).
    return _empty_result(a, out_shape, depends=n == 0 or 0 not in ishape)
  slice_sizes = shape[:axis] + (1,) + shape[axis + 1:]
  dnums = lax_gather.GatherDimensionNumbers(
      offset_dims=tuple(range(axis)) + tuple(range(axis + len(ishape), len(out_shape))),
      collapsed_slice_dims=(axis,), start_index_map=(axis,))
  idx = idx[..., None] if isinstance(idx, np.ndarray) else \
      structural.expand_dims(idx, (len(ishape),))
  return lax_gather.gather(a, idx, dnums, slice_sizes, mode=gmode, fill_value=fill_value,
                           unique_indices=unique_indices,
                           indices_are_sorted=indices_are_sorted)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
  """`arr` indexed by `indices` along `axis`, which match `arr` elsewhere (they
  broadcast): e.g. `take_along_axis(x, argsort(x, axis), axis)` sorts `x`.

  Out-of-bounds indices read `fill_value` by default (mode 'fill').
  """
  util.check_arraylike("take_along_axis", arr, indices)
  arr = util.to_array(arr)
  if axis is None:
    arr = structural.reshape(arr, (int(np.prod(util.shape(arr), dtype=np.int64)),))
    indices = util.reshape(util.to_operand(indices),
                           (int(np.prod(util.shape(indices), dtype=np.int64)),))
    axis = 0
  shape = util.shape(arr)
  ishape = util.shape(indices)
  if len(ishape) != len(shape):
    raise ValueError("indices and arr must have the same number of dimensions; "
                     f"{len(ishape)} vs. {len(shape)}")
  axis = util.canonicalize_axis(axis, len(shape))
  idx, gmode = _take_indices("take_along_axis", indices, shape[axis], mode)
  # The other axes broadcast between arr and indices.
  others = [(d, s, t) for d, (s, t) in enumerate(zip(shape, ishape)) if d != axis]
  for d, s, t in others:
    if s != t and s != 1 and t != 1:
      raise ValueError(f"take_along_axis: arr of shape {shape} and indices of shape "
                       f"{ishape} do not broadcast along axis {d}")
  out_shape = tuple(ishape[d] if d == axis else max(shape[d], ishape[d])
                    for d in range(len(shape)))
  if shape[axis] == 0:
    # As JAX: zeros of arr's dtype, strong and free of arr, whatever the indices.
    return structural.full(out_shape, np.zeros((), util.dtype_of(arr)))
  if 0 in out_shape:
    return _empty_result(arr, out_shape)
  # One gather, in the form JAX gives it (its sharding rule on Explicit mesh axes then
  # types it as JAX does): along `axis` the indices pick one element; an axis where the
  # indices have size 1 is an offset axis (arr's slice taken whole); an axis where arr
  # has size 1 is squeezed out of arr (the indices broadcast it); an axis where both
  # have the same size is a batching axis of operand and indices.
  nd = len(shape)
  squeezed = [d for d in range(nd) if d != axis and ishape[d] != 1 and shape[d] == 1]
  op_dims = [d for d in range(nd) if d not in squeezed]
  kept_idx = [d for d in range(nd) if d == axis or ishape[d] != 1]
  offset = tuple(d for d in range(nd) if d != axis and ishape[d] == 1)
  batching = [d for d in range(nd) if d != axis and ishape[d] != 1 and shape[d] != 1]
  if squeezed:
    arr = structural.squeeze(arr, tuple(squeezed))
  idx = util.reshape(idx, tuple(ishape[d] for d in kept_idx) + (1,))
  new_ax = op_dims.index(axis)
  dnums = lax_gather.GatherDimensionNumbers(
      offset_dims=offset, collapsed_slice_dims=(new_ax,), start_index_map=(new_ax,),
      operand_batching_dims=tuple(op_dims.index(d) for d in batching),
      start_indices_batching_dims=tuple(kept_idx.index(d) for d in batching))
  sizes = tuple(shape[d] if d in offset else 1 for d in op_dims)
  return lax_gather.gather(arr, idx, dnums, sizes, mode=gmode, fill_value=fill_value)
