"""Shape manipulation: reshape, transpose, stacking, splitting, tiling, flipping, rolling.

Every size and axis here is static (C-S09, C-S10): shapes must be known when
tracing. Nothing returns a view (C-S14): results are new arrays.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import canonicalize_shape
from tracejax._src.core.trace import Tracer
from tracejax._src.lax import structural
from tracejax._src.numpy import util


def _arr(x, fun_name):
  util.check_arraylike_or_list(fun_name, x)
  return util.to_array(x)


def shape(a):
  """The shape of `a`."""
  return util.shape(a)


def ndim(a):
  """The number of dimensions of `a`."""
  return util.ndim(a)


def size(a, axis=None):
  """The number of elements of `a` (along `axis` if given)."""
  s = util.shape(a)
  if axis is None:
    return int(np.prod(s, dtype=np.int64))
  return s[util.canonicalize_axis(axis, len(s))]


def _infer_shape(in_size, newshape):
  newshape = (newshape,) if isinstance(newshape, (int, np.integer, Tracer)) else tuple(newshape)
  if any(isinstance(d, Tracer) for d in newshape):
    canonicalize_shape(newshape)  # raises the seed's error for value-dependent shapes
  newshape = tuple(operator.index(d) for d in newshape)
  neg = [i for i, d in enumerate(newshape) if d < 0]
  if len(neg) > 1:
    raise ValueError("can only specify one unknown dimension")
  if neg:
    known = int(np.prod([d for d in newshape if d >= 0], dtype=np.int64))
    if known == 0 or in_size % known:
      raise ValueError(f"cannot reshape array of size {in_size} into shape {newshape}")
    newshape = tuple(in_size // known if d < 0 else d for d in newshape)
  if int(np.prod(newshape, dtype=np.int64)) != in_size:
    raise ValueError(f"cannot reshape array of size {in_size} into shape {newshape}")
  return newshape


def reshape(a, newshape=None, order="C", *, shape=None, out_sharding=None):
  """`a` with a new shape of the same size; one dimension may be -1 (inferred).
  `out_sharding=` (a NamedSharding, or a PartitionSpec under `jax.set_mesh`) lays the
  result out (a reshape of split axes that Explicit sharding cannot type).

  >>> reshape(jnp.arange(4), (2, 2)).shape
  (2, 2)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: reshape(a, newshape, order, shape=shape), out_sharding,
                                               "reshape")
  if shape is not None:
    newshape = shape
  a = _arr(a, "reshape")
  new = _infer_shape(size(a), newshape)
  if order == "C":
    return util.reshape(a, new)
  if order == "F":
    # Fortran order = C order on the reversed axes.
    return transpose(util.reshape(transpose(a), new[::-1]))
  raise NotImplementedError(f"jnp.reshape: order={order!r} is not supported (use 'C' or 'F')")


def ravel(a, order="C", *, out_sharding=None):
  """`a` flattened to one dimension; `out_sharding=` as for `reshape`.

  >>> ravel(jnp.ones((2, 2))).shape
  (4,)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: ravel(a, order), out_sharding,
                                               "ravel")
  # (a new array even when `a` is already flat: jitted in JAX, so under vmap/jvp a
  # NumPy input never comes back as itself)
  return util.fresh_array(reshape(a, (-1,), order))


def transpose(a, axes=None):
  """`a` with its axes permuted (reversed by default)."""
  a = _arr(a, "transpose")
  nd = util.ndim(a)
  if axes is None:
    axes = tuple(range(nd - 1, -1, -1))
  else:
    axes = tuple(util.canonicalize_axis(i, nd) for i in axes)
    if sorted(axes) != list(range(nd)):
      raise ValueError(f"axes {axes} don't match array of dimension {nd}")
  if axes == tuple(range(nd)):
    return a
  return structural.transpose(a, axes)


def swapaxes(a, axis1, axis2):
  """`a` with two axes interchanged."""
  a = _arr(a, "swapaxes")
  perm = list(range(util.ndim(a)))
  i, j = util.canonicalize_axis(axis1, len(perm)), util.canonicalize_axis(axis2, len(perm))
  perm[i], perm[j] = perm[j], perm[i]
  return util.fresh_array(transpose(a, perm))  # a jit in JAX: new even when unmoved


def moveaxis(a, source, destination):
  """`a` with the axes `source` moved to the positions `destination`."""
  a = _arr(a, "moveaxis")
  nd = util.ndim(a)
  src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
  dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
  if len(src) != len(dst):
    raise ValueError("Inconsistent number of elements: "
                     f"{len(src)} vs {len(dst)}")
  src = tuple(util.canonicalize_axis(i, nd) for i in src)
  dst = tuple(util.canonicalize_axis(i, nd) for i in dst)
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return util.fresh_array(transpose(a, perm))  # a jit in JAX: new even when unmoved


def rollaxis(a, axis, start=0):
  """Roll `axis` backwards until it lies before `start` (NumPy's legacy rollaxis)."""
  nd = util.ndim(a)
  axis = util.canonicalize_axis(axis, nd)
  if start < 0:
    start += nd
  if axis < start:
    start -= 1
  return moveaxis(a, axis, start)


def squeeze(a, axis=None):
  """`a` without the size-1 axes `axis` (all of them by default)."""
  a = _arr(a, "squeeze")
  s = util.shape(a)
  if axis is None:
    dims = tuple(i for i, d in enumerate(s) if d == 1)
  else:
    dims = util.canonicalize_axes(axis, len(s))
    for i in dims:
      if s[i] != 1:
        raise ValueError("cannot select an axis to squeeze out which has size not equal "
                         f"to one, got shape={s} and dimensions={dims}")
  if not dims:
    return util.fresh_array(a)
  return structural.squeeze(a, dims)


def expand_dims(a, axis):
  """`a` with new size-1 axes inserted at the positions `axis` of the result."""
  if util.key_impls and util.has_keys(a):  # key arrays (prng.py)
    return util.key_impls["expand_dims"](a, axis)
  a = _arr(a, "expand_dims")
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  nd = util.ndim(a) + len(axes)
  axes = tuple(sorted(util.canonicalize_axis(i, nd) for i in axes))
  if len(set(axes)) != len(axes):
    raise ValueError(f"repeated axis in expand_dims: {axis}")
  return structural.expand_dims(a, axes)


def atleast_1d(*arys):
  """Inputs as arrays with at least one dimension (a list for several inputs)."""
  out = [util.reshape(x, (1,)) if util.ndim(x) == 0 else util.fresh_array(x)
         for x in (util.to_array(a) for a in arys)]
  return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
  """Inputs as arrays with at least two dimensions (leading axes added)."""
  out = []
  for x in arys:
    x = util.to_array(x)
    if util.ndim(x) < 2:
      x = util.reshape(x, (1,) * (2 - util.ndim(x)) + util.shape(x))
    out.append(util.fresh_array(x))
  return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
  """Inputs as arrays with at least three dimensions ((N,) -> (1, N, 1), (M, N) -> (M, N, 1))."""
  out = []
  for x in arys:
    x = util.to_array(x)
    s = util.shape(x)
    if len(s) == 0:
      x = util.reshape(x, (1, 1, 1))
    elif len(s) == 1:
      x = util.reshape(x, (1, s[0], 1))
    elif len(s) == 2:
      x = util.reshape(x, s + (1,))
    out.append(util.fresh_array(x))
  return out[0] if len(out) == 1 else out


# ---- joining ----

def _sequence(arrays, fun_name):
  if util.is_array(arrays) or isinstance(arrays, np.ndarray):
    return [arrays[i] for i in range(util.shape(arrays)[0])]
  arrays = list(arrays)
  if not arrays:
    raise ValueError(f"Need at least one array to {fun_name}.")
  util.check_arraylike_or_list(fun_name, *arrays)
  return arrays


def concatenate(arrays, axis=0, dtype=None):
  """Join arrays along an existing axis (flattening them first if `axis` is None)."""
  if util.key_impls and isinstance(arrays, (list, tuple)) and util.has_keys(*arrays):
    return util.key_impls["concatenate"](arrays, axis)  # key arrays (prng.py)
  arrays = _sequence(arrays, "concatenate")
  arrays = util.promote_dtypes(*arrays)
  if dtype is not None:
    dt = util.check_dtype(dtype, "concatenate")
    arrays = [util.convert(x, dt, False) for x in arrays]
  arrays = [util.to_array(x) for x in arrays]
  if axis is None:
    arrays = [ravel(x) for x in arrays]
    axis = 0
  nd = util.ndim(arrays[0])
  if nd == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  for x in arrays[1:]:
    if util.ndim(x) != nd:
      raise ValueError("All input arrays must have the same number of dimensions, got "
                       f"shapes {[util.shape(x) for x in arrays]}")
  axis = util.canonicalize_axis(axis, nd)
  if len(arrays) == 1:
    return arrays[0]
  return structural.concatenate(arrays, axis)


def stack(arrays, axis=0, dtype=None):
  """Join arrays of one shape along a new axis."""
  if util.key_impls and isinstance(arrays, (list, tuple)) and util.has_keys(*arrays):
    return util.key_impls["stack"](arrays, axis)  # key arrays (prng.py)
  arrays = _sequence(arrays, "stack")
  shapes = {util.shape(x) for x in arrays}
  if len(shapes) != 1:
    raise ValueError("All input arrays must have the same shape.")
  nd = util.ndim(arrays[0]) + 1
  axis = util.canonicalize_axis(axis, nd)
  arrays = [expand_dims(x, axis) for x in util.promote_dtypes(*arrays)]
  return concatenate(arrays, axis, dtype)


def vstack(tup, dtype=None):
  """Stack arrays vertically (along axis 0, after making them at least 2-D)."""
  arrays = [atleast_2d(x) for x in _sequence(tup, "vstack")]
  return concatenate(arrays, 0, dtype)


row_stack = vstack


def hstack(tup, dtype=None):
  """Stack arrays horizontally (axis 1, or axis 0 for 1-D arrays)."""
  arrays = [atleast_1d(x) for x in _sequence(tup, "hstack")]
  return concatenate(arrays, 0 if util.ndim(arrays[0]) == 1 else 1, dtype)


def dstack(tup, dtype=None):
  """Stack arrays depth-wise (along axis 2, after making them at least 3-D)."""
  arrays = [atleast_3d(x) for x in _sequence(tup, "dstack")]
  return concatenate(arrays, 2, dtype)


def column_stack(tup):
  """Stack 1-D arrays as columns of a 2-D array (2-D arrays are stacked as they are)."""
  arrays = []
  for x in _sequence(tup, "column_stack"):
    x = util.to_array(x)
    if util.ndim(x) < 2:
      x = reshape(x, (-1, 1))
    arrays.append(x)
  return concatenate(arrays, 1)


def append(arr, values, axis=None):
  """`arr` with `values` appended (both flattened when `axis` is None)."""
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], 0)
  return concatenate([arr, values], axis)


def block(arrays):
  """Assemble an array from nested lists of blocks (the innermost lists join on the last axis)."""
  def depth(x):
    return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)

  if isinstance(arrays, tuple):
    raise TypeError("jnp.block: arrays is a tuple; only lists can be used to arrange blocks")
  levels = depth(arrays)
  if levels == 0:
    return util.to_array(arrays)

  def leaves_ndim(x):
    return max(leaves_ndim(y) for y in x) if isinstance(x, list) else util.ndim(x)

  rank = max(levels, leaves_ndim(arrays))

  def assemble(x, level):
    if not isinstance(x, list):
      x = util.to_array(x)
      return util.reshape(x, (1,) * (rank - util.ndim(x)) + util.shape(x))
    if isinstance(x, list) and not x:
      raise ValueError("Lists cannot be empty")
    parts = [assemble(y, level + 1) for y in x]
    return concatenate(parts, axis=-(levels - level))

  return assemble(arrays, 0)


# ---- broadcasting ----

def broadcast_to(array, shape, *, out_sharding=None):
  """`array` broadcast to `shape` (a new array, not a view: C-S14); `out_sharding=` as
  for `reshape`.

  >>> broadcast_to(jnp.ones(2), (3, 2)).shape
  (3, 2)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: broadcast_to(array, shape), out_sharding,
                                               "broadcast_to")
  if util.key_impls and util.has_keys(array):  # key arrays (prng.py)
    return util.key_impls["broadcast_to"](array, shape)
  array = _arr(array, "broadcast_to")
  shape = canonicalize_shape(shape)
  return util.broadcast_to(array, shape)


def broadcast_arrays(*args):
  """The arguments broadcast against each other (new arrays, not views)."""
  args = [util.to_array(x) for x in args]
  out_shape = util.broadcast_shapes(*[util.shape(x) for x in args])
  return [util.broadcast_to(x, out_shape) for x in args]


def broadcast_shapes(*shapes):
  """The shape that arrays of `shapes` broadcast to."""
  return util.broadcast_shapes(*[canonicalize_shape(s) for s in shapes])


# ---- flipping, rotating, rolling ----

def flip(m, axis=None):
  """`m` with the order of elements reversed along `axis` (all axes by default)."""
  m = _arr(m, "flip")
  if axis is not None and util.ndim(m) == 0:  # JAX 0.10.2: no axis 0 (or -1) in a 0-d array
    raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
  dims = util.canonicalize_axes(axis, util.ndim(m))
  if not dims:
    return util.fresh_array(m)
  return structural.rev(m, dims)


def fliplr(m):
  """Reverse along axis 1."""
  m = _arr(m, "fliplr")
  if util.ndim(m) < 2:
    raise ValueError("fliplr requires an array of at least two dimensions")
  return flip(m, 1)


def flipud(m):
  """Reverse along axis 0."""
  m = _arr(m, "flipud")
  if util.ndim(m) < 1:
    raise ValueError("flipud requires an array of at least one dimension")
  return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
  """Rotate `m` by 90 degrees `k` times in the plane of `axes`."""
  m = _arr(m, "rot90")
  ax1, ax2 = (util.canonicalize_axis(a, util.ndim(m)) for a in axes)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  k = k % 4
  if k == 0:
    return util.fresh_array(m)  # a jit in JAX: a new value
  if k == 2:
    return flip(flip(m, ax1), ax2)
  perm = list(range(util.ndim(m)))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  if k == 1:
    return transpose(flip(m, ax2), perm)
  return flip(transpose(m, perm), ax2)


def roll(a, shift, axis=None):
  """Roll elements along `axis` by `shift` (a traced shift works through dynamic_slice)."""
  a = _arr(a, "roll")
  if axis is not None and util.ndim(a) == 0:  # (canonicalize_axis lets axis 0 through)
    raise ValueError(f"axis {axis} is out of bounds for array of dimension 0")
  if axis is None:
    return reshape(roll(ravel(a), shift, 0), util.shape(a))
  axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
  if util.ndim(shift) == 0:
    shifts = (shift,)
  elif util.ndim(shift) == 1:
    # A (possibly traced) array of shifts is split into scalars, one per axis.
    shifts = tuple(shift[i] for i in range(util.shape(shift)[0])) if util.is_array(shift) \
        else tuple(shift)
  else:
    raise ValueError(f"roll: 'shift' must be a scalar or 1-D, got shape {util.shape(shift)}")
  # NumPy broadcasts 'shift' against 'axis'.
  if len(shifts) == 1:
    shifts = shifts * len(axes)
  elif len(axes) == 1:
    axes = axes * len(shifts)
  if len(shifts) != len(axes):
    raise ValueError("'shift' and 'axis' must have the same length")
  for sh, ax in zip(shifts, axes):
    a = _roll_one(a, sh, util.canonicalize_axis(ax, util.ndim(a)))
  return util.fresh_array(a)  # a zero shift under vmap/jvp: not the NumPy input itself


def _roll_one(a, shift, axis):
  n = util.shape(a)[axis]
  if n == 0:
    return a
  if isinstance(shift, Tracer) or (util.is_array(shift) and not _is_concrete(shift)):
    from tracejax._src.numpy import ufuncs
    shift = util.convert(shift, dtypes.default_int_dtype(), False)
    start = ufuncs.remainder(ufuncs.negative(shift), n)
    doubled = structural.concatenate([a, a], axis)
    from tracejax._src.lax import slicing as lax_slicing  # (not needed at import)
    return lax_slicing.dynamic_slice_in_dim(doubled, start, n, axis)
  # Two static slices joined, even for a zero shift (one slice is then empty), as in
  # JAX: the slices' transposes (pads with a strong zero) make the cotangent of a weak
  # array of rank >= 1 strong, as JAX's is (vjp of jnp.roll and fft.fftshift).
  start = -int(shift) % n
  from tracejax._src.lax import slicing as lax_slicing  # (not needed at import)
  nd = util.ndim(a)
  pieces = []
  for lo, hi in ((start, n), (0, start)):
    starts, limits = [0] * nd, list(util.shape(a))
    starts[axis], limits[axis] = lo, hi
    pieces.append(lax_slicing.slice(a, starts, limits))
  return structural.concatenate(pieces, axis)


def _is_concrete(x):
  return not isinstance(x, Tracer)


def _slice_axis(a, axis, start, stop, step=1):
  """`a[..., start:stop:step, ...]` along one axis with a static lax.slice."""
  s = util.shape(a)
  starts = [0] * len(s)
  limits = list(s)
  starts[axis], limits[axis] = start, stop
  strides = None
  if step != 1:
    strides = [1] * len(s)
    strides[axis] = step
  if starts == [0] * len(s) and limits == list(s) and strides is None:
    return a
  from tracejax._src.lax import slicing as lax_slicing  # (not needed at import)
  return lax_slicing.slice(a, tuple(starts), tuple(limits), None if strides is None
                           else tuple(strides))


# ---- splitting ----

def _split(name, ary, indices_or_sections, axis, equal):
  ary = _arr(ary, name)
  axis = util.canonicalize_axis(axis, util.ndim(ary))
  n = util.shape(ary)[axis]
  if isinstance(indices_or_sections, (int, np.integer)) or (
      util.is_arraylike(indices_or_sections) and util.ndim(indices_or_sections) == 0):
    sections = util.concrete_int(indices_or_sections, f"'indices_or_sections' of jnp.{name}")
    if sections <= 0:
      raise ValueError("number sections must be larger than 0.")
    if equal and n % sections:
      raise ValueError("array split does not result in an equal division")
    q, r = divmod(n, sections)
    sizes = [q + 1] * r + [q] * (sections - r)
    bounds = np.cumsum([0] + sizes).tolist()
  else:
    idx = [util.concrete_int(i, f"'indices_or_sections' of jnp.{name}")
           for i in np.asarray(indices_or_sections).tolist()]
    bounds = [0] + [min(max(i + n if i < 0 else i, 0), n) for i in idx] + [n]
  sizes = np.diff(bounds).tolist()
  if bounds[0] == 0 and bounds[-1] == n and min(sizes, default=0) >= 0:
    # One lax.split, as in JAX (its transpose concatenates the pieces' cotangents, so
    # a weak array's cotangent stays weak, where slices' pads would make it strong).
    return list(structural.split(ary, sizes, axis))
  out = []  # indices out of order: NumPy's overlapping/empty pieces, one slice each
  for lo, hi in zip(bounds[:-1], bounds[1:]):
    out.append(_slice_axis(ary, axis, lo, max(lo, hi)))
  return out


def split(ary, indices_or_sections, axis=0):
  """Split into equal sections, or at the given (static) indices."""
  return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
  """Like `split`, but the sections may differ in size by one."""
  return _split("array_split", ary, indices_or_sections, axis, False)


def vsplit(ary, indices_or_sections):
  """Split along axis 0."""
  return split(ary, indices_or_sections, 0)


def hsplit(ary, indices_or_sections):
  """Split along axis 1 (axis 0 for 1-D arrays)."""
  return split(ary, indices_or_sections, 1 if util.ndim(ary) > 1 else 0)


def dsplit(ary, indices_or_sections):
  """Split along axis 2."""
  return split(ary, indices_or_sections, 2)


# ---- repeating ----

def tile(A, reps):
  """Repeat `A` the number of times given by `reps` along each axis."""
  A = _arr(A, "tile")
  reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
  reps = tuple(operator.index(r) for r in reps)
  s = util.shape(A)
  nd = max(len(s), len(reps))
  s = (1,) * (nd - len(s)) + s
  reps = (1,) * (nd - len(reps)) + reps
  A = util.reshape(A, s)
  # Interleave a size-1 axis before each axis, broadcast it to the repeat count, merge.
  expanded = util.reshape(A, tuple(d for size_ in s for d in (1, size_)))
  tiled = util.broadcast_to(expanded, tuple(d for r, size_ in zip(reps, s) for d in (r, size_)))
  return util.reshape(tiled, tuple(r * size_ for r, size_ in zip(reps, s)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  """Repeat each element `repeats` times along `axis` (the flattened array if None).

  `repeats` must be concrete: the result's shape depends on it. `out_sharding=` as for
  `reshape`.

  >>> repeat(jnp.arange(2), 2)
  DeviceArray([0, 0, 1, 1], dtype=int32)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(
        lambda: repeat(a, repeats, axis, total_repeat_length=total_repeat_length),
        out_sharding, "repeat")
  a = _arr(a, "repeat")
  if axis is None:
    a = ravel(a)
    axis = 0
  axis = util.canonicalize_axis(axis, util.ndim(a))
  s = util.shape(a)
  if util.is_array(repeats) or isinstance(repeats, (list, tuple, np.ndarray)):
    reps = np.asarray(_concrete_array(repeats))
  else:
    reps = np.asarray(repeats)
  if reps.ndim == 0:
    r = int(reps)
    if r < 0:
      raise ValueError("repeats may not contain negative values")
    # Broadcast a new axis right after `axis`, then merge the two.
    x = expand_dims(a, axis + 1)
    bshape = list(util.shape(x))
    bshape[axis + 1] = r
    x = util.broadcast_to(x, tuple(bshape))
    out_shape = list(s)
    out_shape[axis] = s[axis] * r
    out = util.reshape(x, tuple(out_shape))
  else:
    if reps.shape != (s[axis],):
      raise ValueError(f"repeats has shape {reps.shape}, expected ({s[axis]},)")
    pieces = [repeat(_slice_axis(a, axis, i, i + 1), int(r), axis)
              for i, r in enumerate(reps.tolist()) if r > 0]
    if not pieces:
      out = _slice_axis(a, axis, 0, 0)
    else:
      out = concatenate(pieces, axis)
  if total_repeat_length is not None and util.shape(out)[axis] != total_repeat_length:
    raise ValueError(f"total_repeat_length={total_repeat_length} does not match the "
                     f"repeated length {util.shape(out)[axis]}")
  return out


def _concrete_array(x):
  from tracejax._src.core.trace import concrete_or_error
  return concrete_or_error(np.asarray, x, "The 'repeats' argument of jnp.repeat must be "
                           "concrete: the size of the result depends on it.")


# ---- dtype queries (numpy-level API) ----

def result_type(*args):
  """The dtype that an operation on `args` produces (JAX's promotion, canonical)."""
  return dtypes.result_type(*args)


def promote_types(a, b):
  """The dtype both `a` and `b` promote to (JAX's table, C-T)."""
  return dtypes.promote_types(dtypes.dtype(a), dtypes.dtype(b))


def can_cast(from_, to, casting="safe"):
  """NumPy's can_cast on dtypes."""
  from_ = dtypes.dtype(from_) if not isinstance(from_, np.dtype) else from_
  return np.can_cast(from_, dtypes.dtype(to), casting)


def issubdtype(arg1, arg2):
  """`np.issubdtype` that knows bfloat16 is a floating type."""
  return dtypes.issubdtype(arg1, arg2)


def issubsctype(arg1, arg2):
  """Whether the scalar type of `arg1` is a subtype of that of `arg2` (NumPy 1 API)."""
  return dtypes.issubdtype(dtypes.dtype(arg1), dtypes.dtype(arg2))


def isscalar(element):
  """True for Python/NumPy scalars and 0-d arrays (JAX's definition)."""
  if type(element) in util._py_scalar_set or isinstance(element, np.generic):
    return True
  return util.is_array(element) and util.ndim(element) == 0
