"""Basic indexing (`x[idx]`) and functional updates (`x.at[idx].set(v)` and friends).

Supported indices: integers (negative too; static or traced), slices of any
step, `None`/`np.newaxis`, `Ellipsis`, and tuples of these. Static parts
become one `lax.slice` (after a `rev` for negative steps); integer indices
that are traced, or arrays, become one `lax.dynamic_slice`, which also clamps
them into range. Out-of-bounds static integers clamp the same way, as the
2020 documents require (C-S07: `jnp.arange(10)[11]` is 9).

Advanced indexing (integer or boolean arrays) needs gather and scatter,
which land in a later issue.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import Tracer
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural
from tracejax._src.numpy import util
from tracejax._src.runtime.array import Array

_ADVANCED_MSG = ("advanced indexing lands with gather: integer-array and boolean indices "
                 "are not supported yet (got an index of type {}). Use integers, slices, "
                 "None and Ellipsis, or lax.dynamic_slice.")


class _Int:
  """A static integer index, already clamped into [0, n); `oob` if it had to be."""
  __slots__ = ("i", "oob")

  def __init__(self, i, oob=False):
    self.i, self.oob = i, oob


class _DynInt:
  """A traced (or device-array) integer index; dynamic_slice clamps it."""
  __slots__ = ("i",)

  def __init__(self, i):
    self.i = i


class _Slice:
  """A static slice along one axis: `length` elements from `start` by `step`."""
  __slots__ = ("start", "step", "length")

  def __init__(self, start, step, length):
    self.start, self.step, self.length = start, step, length


class _NewAxis:
  __slots__ = ()


def _is_int_array(x):
  return isinstance(x, (Array, Tracer, np.ndarray)) and util.ndim(x) == 0 and \
      dtypes.is_integer(x.dtype)


def _parse(idx, shape):
  """Per-entry specs of `idx` against `shape` (Ellipsis expanded, missing axes filled)."""
  if not isinstance(idx, tuple):
    idx = (idx,)
  entries = []
  for i in idx:
    if i is None:
      entries.append(None)
    elif i is Ellipsis:
      entries.append(Ellipsis)
    elif isinstance(i, slice):
      entries.append(i)
    elif isinstance(i, (bool, np.bool_)):
      raise NotImplementedError(_ADVANCED_MSG.format(type(i)))
    elif isinstance(i, (int, np.integer)):
      entries.append(int(i))
    elif _is_int_array(i):
      entries.append(i)
    elif hasattr(i, "__index__") and not isinstance(i, (Array, Tracer, np.ndarray)):
      entries.append(int(i.__index__()))
    else:
      if isinstance(i, (Array, Tracer, np.ndarray)) and dtypes.is_floating(i.dtype):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                        f"type {i.dtype} ")
      raise NotImplementedError(_ADVANCED_MSG.format(type(i)))
  n_ellipsis = sum(e is Ellipsis for e in entries)
  if n_ellipsis > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  consumed = sum(e is not None and e is not Ellipsis for e in entries)
  if consumed > len(shape):
    raise IndexError(f"Too many indices for array: {consumed} non-None/Ellipsis indices "
                     f"for dim {len(shape)}.")
  fill = [slice(None)] * (len(shape) - consumed)
  if n_ellipsis:
    k = entries.index(Ellipsis)
    entries = entries[:k] + fill + entries[k + 1:]
  else:
    entries = entries + fill
  specs = []
  dim = 0
  for e in entries:
    if e is None:
      specs.append(_NewAxis())
      continue
    n = shape[dim]
    if isinstance(e, slice):
      for part in (e.start, e.stop, e.step):
        if isinstance(part, Tracer):
          raise IndexError("Array slice indices must have static start/stop/step to be "
                           "used with NumPy indexing syntax. Use lax.dynamic_slice instead.")
      start, stop, step = e.indices(n)
      specs.append(_Slice(start, step, len(range(start, stop, step))))
    elif isinstance(e, int):
      if n == 0:
        raise IndexError(f"index {e} is out of bounds for axis {dim} with size 0")
      i = e + n if e < 0 else e
      # Clamp, as XLA's dynamic_slice does for traced indices (C-S07).
      specs.append(_Int(min(max(i, 0), n - 1), oob=not 0 <= i < n))
    else:
      if n == 0:
        raise IndexError(f"index is out of bounds for axis {dim} with size 0")
      specs.append(_DynInt(e))
    dim += 1
  return specs


def _axis_specs(specs):
  """The specs that consume an axis of the operand, in axis order."""
  return [s for s in specs if not isinstance(s, _NewAxis)]


def getitem(x, idx):
  """`x[idx]` for basic indices, with out-of-bounds integers clamped."""
  x = util.to_array(x)
  shape = util.shape(x)
  specs = _parse(idx, shape)
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
  return x


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


def _indexed_shape(specs, shape):
  out = []
  for s in specs:
    if isinstance(s, _NewAxis):
      out.append(1)
    elif isinstance(s, _Slice):
      out.append(s.length)
  return tuple(out)


# ---- functional updates: x.at[idx].set(y) ----

def _update(x, idx, y, op, fun_name):
  """`x` with `op(x[idx], y)` (or `y` for op=None) written at the basic index `idx`."""
  x = util.to_array(x)
  shape = util.shape(x)
  dt = util.dtype_of(x)
  specs = _parse(idx, shape)
  axis_specs = _axis_specs(specs)
  # Scatter semantics: updates at out-of-bounds indices are dropped. (Traced
  # indices are clamped by dynamic_update_slice until scatter lands.)
  if any(isinstance(s, _Int) and s.oob for s in axis_specs):
    return x
  if any(isinstance(s, _Slice) and s.length == 0 for s in axis_specs):
    return x  # nothing selected
  util.check_arraylike_or_list(fun_name, y)
  y = util.convert(util.to_operand(y), dt, util.is_weak(x))
  y = util.broadcast_to(y, _indexed_shape(specs, shape))
  # The update block: one axis per operand axis (length 1 for integer indices), in
  # increasing index order along each axis.
  box = tuple(s.length if isinstance(s, _Slice) else 1 for s in axis_specs)
  y = util.reshape(y, box)
  neg = tuple(d for d, s in enumerate(axis_specs) if isinstance(s, _Slice) and s.step < 0)
  if neg:
    y = structural.rev(y, neg)
  lo, span, steps = [], [], []
  for s in axis_specs:
    if isinstance(s, _Slice):
      # The first element in increasing order, the extent, and the stride.
      lo.append(s.start + (s.length - 1) * s.step if s.step < 0 else s.start)
      span.append((s.length - 1) * abs(s.step) + 1)
      steps.append(abs(s.step))
    else:
      lo.append(s.i if isinstance(s, _Int)
                else util.convert(s.i, dtypes.default_int_dtype(), False))
      span.append(1)
      steps.append(1)
  strided = any(st != 1 for st in steps)
  if op is None and not strided:
    return lax_slicing.dynamic_update_slice(x, y, lo)
  window = lax_slicing.dynamic_slice(x, lo, span)
  if strided:
    # Spread the update over the window with interior padding; a mask marks its elements.
    cfg = [(0, 0, st - 1) for st in steps]
    y = structural.pad(y, util.convert(0, dt, False), cfg)
    mask = structural.pad(structural.broadcast_in_dim(np.bool_(True), box, ()),
                          np.bool_(False), cfg)
    new = y if op is None else op(window, y)
    new = lax_ew.select(mask, new, window)
  else:
    new = op(window, y)
  return lax_slicing.dynamic_update_slice(x, new, lo)


def _add(a, b):
  return lax_ew.bitwise_or(a, b) if a.dtype == np.bool_ else lax_ew.add(a, b)


def _mul(a, b):
  return lax_ew.bitwise_and(a, b) if a.dtype == np.bool_ else lax_ew.mul(a, b)


def _min(a, b):
  return lax_ew.min(a, b)


def _max(a, b):
  return lax_ew.max(a, b)


def _div(a, b):
  return lax_ew.div(a, b)


def _pow(a, b):
  return lax_ew.pow(a, b)


class _IndexUpdateRef:
  """`x.at[idx]`: methods return a new array with the indexed elements updated."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array, self.index = array, index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None):
    """`x[idx]`."""
    return getitem(self.array, self.index)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] = values`."""
    return _update(self.array, self.index, values, None, "set")

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] += values`."""
    return _update(self.array, self.index, values, _add, "add")

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] *= values`."""
    return _update(self.array, self.index, values, _mul, "multiply")

  mul = multiply

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] /= values`."""
    return _update(self.array, self.index, values, _div, "divide")

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] **= values`."""
    return _update(self.array, self.index, values, _pow, "power")

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] = minimum(x[idx], values)`."""
    return _update(self.array, self.index, values, _min, "min")

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] = maximum(x[idx], values)`."""
    return _update(self.array, self.index, values, _max, "max")

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None):
    """`x` with `x[idx] = func(x[idx])` (func is elementwise)."""
    return _update(self.array, self.index, 0, lambda w, _: func(w), "apply")


class IndexUpdateHelper:
  """The `x.at` property: `x.at[idx]` is an `_IndexUpdateRef`."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


def index_update(x, idx, y):
  """The 2020 `jax.ops.index_update(x, idx, y)`: `x.at[idx].set(y)`."""
  return _update(x, idx, y, None, "index_update")


def index_add(x, idx, y):
  """The 2020 `jax.ops.index_add(x, idx, y)`: `x.at[idx].add(y)`."""
  return _update(x, idx, y, _add, "index_add")


def index_mul(x, idx, y):
  """The 2020 `jax.ops.index_mul(x, idx, y)`: `x.at[idx].multiply(y)`."""
  return _update(x, idx, y, _mul, "index_mul")


def index_min(x, idx, y):
  """The 2020 `jax.ops.index_min(x, idx, y)`: `x.at[idx].min(y)`."""
  return _update(x, idx, y, _min, "index_min")


def index_max(x, idx, y):
  """The 2020 `jax.ops.index_max(x, idx, y)`: `x.at[idx].max(y)`."""
  return _update(x, idx, y, _max, "index_max")
