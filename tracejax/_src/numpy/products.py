"""Products and diagonals: dot, matmul, vdot, inner, outer, tensordot, kron, trace, diagonal.

Every contraction is one `lax.dot_general` (plus transposes/reshapes), and
takes the `precision` argument of the 2020 API (C-S15).
"""
import numpy as np

from tracejax._src.lax import dot as lax_dot
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.numpy import reductions, shape_ops, ufuncs, util


def _operands(fun_name, a, b):
  util.check_arraylike_or_list(fun_name, a, b)
  a, b = util.promote_dtypes(a, b)
  return util.to_array(a), util.to_array(b)


def _contraction_operands(fun_name, a, b):
  """`a`, `b` in their common dtype for one dot_general, each keeping its weak type.

  JAX's dot, matmul and tensordot hand dot_general the operands as they are (their
  common dtype as its preferred type): no weak-to-strong conversion is staged, so the
  cotangent of a weak operand next to a strong one comes back strong from dot_general's
  transpose; the product is weak only when both operands are."""
  util.check_arraylike_or_list(fun_name, a, b)
  a, b = util.to_operand(a), util.to_operand(b)
  dt, weak = util._result_dtype([a, b])
  a, b = (x if util.dtype_of(x) == dt else util.convert(x, dt, util.is_weak(x))
          for x in (a, b))
  return util.to_array(a), util.to_array(b), dt, weak


def _contraction_result(out, dt, weak, preferred_element_type):
  """The product in the operands' promoted type (weak when they promote to a weak type,
  an integer array with a Python float), or strong in the preferred_element_type, as
  JAX converts dot_general's result."""
  if preferred_element_type is not None:
    return util.convert(out, util.dtype_of(out), False)
  return util.convert(out, dt, weak)


def _dot_general(a, b, contract, batch, precision, preferred_element_type=None):
  return lax_dot.dot_general(a, b, (contract, batch), precision=precision,
                             preferred_element_type=preferred_element_type)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """NumPy's dot: the sum product over the last axis of `a` and the second-to-last of `b`.
  `out_sharding=` (a NamedSharding, or a PartitionSpec under `jax.set_mesh`) lays the
  result out so (on Explicit mesh axes, it resolves a contraction over a split axis)."""
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: dot(
        a, b, precision=precision, preferred_element_type=preferred_element_type),
        out_sharding, "dot")
  a, b, dt, weak = _contraction_operands("dot", a, b)
  a_nd, b_nd = util.ndim(a), util.ndim(b)
  if a_nd == 0 or b_nd == 0:  # a product with nothing contracted (JAX's dot_general too)
    return _contraction_result(lax_dot.dot_general(
        a, b, (((), ()), ((), ())), precision=precision,
        preferred_element_type=preferred_element_type), dt, weak, preferred_element_type)
  b_axis = 0 if b_nd == 1 else b_nd - 2
  _check_contract("dot", util.shape(a)[-1], util.shape(b)[b_axis], a, b)
  out = lax_dot.dot_general(a, b, (((a_nd - 1,), (b_axis,)), ((), ())), precision=precision,
                            preferred_element_type=preferred_element_type)
  return _contraction_result(out, dt, weak, preferred_element_type)


def _check_contract(name, n, m, a, b):
  if n != m:
    raise TypeError(f"Incompatible shapes for {name}: got {util.shape(a)} and "
                    f"{util.shape(b)}.")


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product with NumPy's rules: 1-D operands are promoted, batch axes broadcast.
  `out_sharding=` as for `dot`."""
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: matmul(
        a, b, precision=precision, preferred_element_type=preferred_element_type),
        out_sharding, "matmul")
  a, b, dt, weak = _contraction_operands("matmul", a, b)
  a_nd, b_nd = util.ndim(a), util.ndim(b)
  if a_nd == 0 or b_nd == 0:
    raise ValueError(f"matmul: Input operand does not have enough dimensions, got shapes "
                     f"{util.shape(a)} and {util.shape(b)}.")
  a_vec, b_vec = a_nd == 1, b_nd == 1
  a_shape, b_shape = util.shape(a), util.shape(b)
  kw = dict(precision=precision, preferred_element_type=preferred_element_type)
  if a_vec or b_vec:
    # A 1-D operand is contracted as it is: no unit axis added and squeezed away after.
    # Under vmap such a unit axis stays in every activation (f32[B, 1, n]), and the
    # weight gradients of `vmap(lambda x: x @ w)` then contract over (B, 1), which XLA
    # lowers with transposes and copies of the activations (issue 14).
    kb = 0 if b_vec else b_nd - 2
    _check_contract("matmul", a_shape[-1], b_shape[kb], a, b)
    return _contraction_result(lax_dot.dot_general(
        a, b, (((a_nd - 1,), (kb,)), ((), ())), **kw), dt, weak, preferred_element_type)
  _check_contract("matmul", a_shape[-1], b_shape[-2], a, b)
  a_batch, b_batch = a_shape[:-2], b_shape[:-2]
  if not b_batch:
    # (..., n, k) @ (k, m): the batch axes of `a` are just more free axes.
    out = lax_dot.dot_general(a, b, (((len(a_shape) - 1,), (0,)), ((), ())), **kw)
  elif not a_batch:
    # (n, k) @ (..., k, m): contract, then move `a`'s free axis next to the end.
    out = lax_dot.dot_general(a, b, (((1,), (len(b_shape) - 2,)), ((), ())), **kw)
    nb = len(b_batch)
    out = shape_ops.transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
  else:
    batch = util.broadcast_shapes(a_batch, b_batch)
    a = util.broadcast_to(a, batch + a_shape[-2:])
    b = util.broadcast_to(b, batch + b_shape[-2:])
    nb = len(batch)
    out = lax_dot.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                              **kw)
  return _contraction_result(out, dt, weak, preferred_element_type)


def vdot(a, b, *, precision=None):
  """The dot product of the flattened arrays, conjugating `a` if it is complex."""
  util.check_arraylike_or_list("vdot", a, b)
  a, b = util.to_array(util.to_operand(a)), util.to_array(util.to_operand(b))
  if ufuncs.iscomplexobj(a):  # (dot promotes the two; see _contraction_operands)
    a = lax_ew.conj(a)
  return dot(shape_ops.ravel(a), shape_ops.ravel(b), precision=precision)


def inner(a, b, *, precision=None):
  """The sum product over the last axes of `a` and `b`."""
  if util.ndim(a) == 0 or util.ndim(b) == 0:
    a, b = _operands("inner", a, b)
    return ufuncs.multiply(a, b)
  a, b, dt, weak = _contraction_operands("inner", a, b)
  _check_contract("inner", util.shape(a)[-1], util.shape(b)[-1], a, b)
  return _contraction_result(
      _dot_general(a, b, ((util.ndim(a) - 1,), (util.ndim(b) - 1,)), ((), ()), precision),
      dt, weak, None)


def outer(a, b, out=None):
  """The outer product of the flattened `a` and `b`."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
  a, b = _operands("outer", a, b)
  a, b = shape_ops.ravel(a), shape_ops.ravel(b)
  return ufuncs.multiply(util.reshape(a, util.shape(a) + (1,)),
                         util.reshape(b, (1,) + util.shape(b)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Sum products over the given axes: an int N (last N of `a`, first N of `b`) or two
  lists. `out_sharding=` as for `dot`.

  >>> tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), 1).shape
  (2, 4)
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(
        lambda: tensordot(a, b, axes, precision=precision,
                          preferred_element_type=preferred_element_type),
        out_sharding, "tensordot")
  a, b, dt, weak = _contraction_operands("tensordot", a, b)
  a_nd, b_nd = util.ndim(a), util.ndim(b)
  if isinstance(axes, (int, np.integer)):
    n = int(axes)
    if n < 0 or n > min(a_nd, b_nd):
      raise TypeError(f"Number of tensordot axes (axes {n}) exceeds input ranks "
                      f"({a_nd} and {b_nd})")
    ca, cb = tuple(range(a_nd - n, a_nd)), tuple(range(n))
  else:
    try:
      ax_a, ax_b = axes
    except (TypeError, ValueError):
      raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                      f"of lists/tuples of ints, got {axes}") from None
    ax_a = (ax_a,) if isinstance(ax_a, (int, np.integer)) else tuple(ax_a)
    ax_b = (ax_b,) if isinstance(ax_b, (int, np.integer)) else tuple(ax_b)
    if len(ax_a) != len(ax_b):
      raise TypeError("tensordot requires axes lists to have equal length, got "
                      f"{ax_a} and {ax_b}.")
    ca = tuple(util.canonicalize_axis(i, a_nd) for i in ax_a)
    cb = tuple(util.canonicalize_axis(i, b_nd) for i in ax_b)
  for i, j in zip(ca, cb):
    if util.shape(a)[i] != util.shape(b)[j]:
      raise TypeError(f"tensordot: shape mismatch on contracted axes {i} of {util.shape(a)} "
                      f"and {j} of {util.shape(b)}")
  return _contraction_result(_dot_general(a, b, (ca, cb), ((), ()), precision,
                                          preferred_element_type),
                             dt, weak, preferred_element_type)


def kron(a, b):
  """The Kronecker product of `a` and `b`."""
  a, b = _operands("kron", a, b)
  nd = max(util.ndim(a), util.ndim(b))
  a = util.reshape(a, (1,) * (nd - util.ndim(a)) + util.shape(a))
  b = util.reshape(b, (1,) * (nd - util.ndim(b)) + util.shape(b))
  a_inter = util.reshape(a, tuple(d for s in util.shape(a) for d in (s, 1)))
  b_inter = util.reshape(b, tuple(d for s in util.shape(b) for d in (1, s)))
  out = ufuncs.multiply(a_inter, b_inter)
  return util.reshape(out, tuple(x * y for x, y in zip(util.shape(a), util.shape(b))))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """The cross product of (arrays of) 3-vectors (or 2-vectors, giving the z component)."""
  if axis is not None:
    axisa = axisb = axisc = axis
  a, b = _operands("cross", a, b)
  a = shape_ops.moveaxis(a, axisa, -1)
  b = shape_ops.moveaxis(b, axisb, -1)
  na, nb = util.shape(a)[-1], util.shape(b)[-1]
  if na not in (2, 3) or nb not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")

  def comp(x, i, n):
    if i >= n:
      return None
    return shape_ops._slice_axis(x, util.ndim(x) - 1, i, i + 1)

  a0, a1, a2 = (comp(a, i, na) for i in range(3))
  b0, b1, b2 = (comp(b, i, nb) for i in range(3))
  if na == 2 and nb == 2:
    return shape_ops.squeeze(ufuncs.subtract(ufuncs.multiply(a0, b1),
                                             ufuncs.multiply(a1, b0)), -1)
  zero = 0
  a2 = a2 if a2 is not None else zero
  b2 = b2 if b2 is not None else zero
  c0 = ufuncs.subtract(ufuncs.multiply(a1, b2), ufuncs.multiply(a2, b1))
  c1 = ufuncs.subtract(ufuncs.multiply(a2, b0), ufuncs.multiply(a0, b2))
  c2 = ufuncs.subtract(ufuncs.multiply(a0, b1), ufuncs.multiply(a1, b0))
  c = shape_ops.concatenate(util.promote_shapes("cross", c0, c1, c2), -1)
  return shape_ops.moveaxis(c, -1, axisc)


# ---- diagonals ----

def diagonal(a, offset=0, axis1=0, axis2=1):
  """The `offset` diagonal of the 2-D sub-arrays on axes (axis1, axis2), as a last axis.

  Element (i, i + k) of an (n, m) matrix sits at flat index i * (m + 1) + k,
  so the diagonal is one strided slice of the flattened matrix: no gather.
  """
  a = util.to_array(a)
  nd = util.ndim(a)
  if nd < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  ax1, ax2 = util.canonicalize_axis(axis1, nd), util.canonicalize_axis(axis2, nd)
  if ax1 == ax2:
    raise ValueError("axis1 and axis2 can not be the same")
  offset = util.concrete_int(offset, "'offset' argument of jnp.diagonal")
  a = shape_ops.moveaxis(a, (ax1, ax2), (-2, -1))
  *batch, n, m = util.shape(a)
  if offset >= 0:
    length = max(0, min(n, m - offset))
    start = offset
  else:
    length = max(0, min(n + offset, m))
    start = -offset * m
  flat = util.reshape(a, tuple(batch) + (n * m,))
  if length == 0:
    return shape_ops._slice_axis(flat, len(batch), 0, 0)
  stop = start + (length - 1) * (m + 1) + 1
  return shape_ops._slice_axis(flat, len(batch), start, stop, m + 1)


def diag(v, k=0):
  """The `k`-th diagonal of a 2-D `v`, or a 2-D array with 1-D `v` on its `k`-th diagonal."""
  from tracejax._src.numpy import creation
  v = util.to_array(v)
  k = util.concrete_int(k, "'k' argument of jnp.diag")
  if util.ndim(v) == 2:
    return diagonal(v, k)
  if util.ndim(v) != 1:
    raise ValueError("diag input must be 1d or 2d")
  n = util.shape(v)[0] + abs(k)
  mask = creation.eye(n, k=k, dtype=bool)
  if k >= 0:
    row = shape_ops.concatenate([v, creation.zeros((k,), util.dtype_of(v))]) if k else v
    vals = util.broadcast_to(util.reshape(row, (n, 1)), (n, n))
  else:
    row = shape_ops.concatenate([creation.zeros((-k,), util.dtype_of(v)), v])
    vals = util.broadcast_to(util.reshape(row, (n, 1)), (n, n))
  return ufuncs.where(mask, vals, creation.zeros((n, n), util.dtype_of(v)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """The sum along the `offset` diagonal of the axes (axis1, axis2)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  util.check_arraylike("trace", a)
  a = util.to_array(a)
  nd = util.ndim(a)
  ax1, ax2 = (util.canonicalize_axis(ax, nd) for ax in (axis1, axis2))
  if ax1 == ax2:
    raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
  offset = util.concrete_int(offset, "'offset' argument of jnp.trace")
  n, m = util.shape(a)[ax1], util.shape(a)[ax2]
  a = shape_ops.moveaxis(a, (ax1, ax2), (-2, -1))
  # As JAX: everything off the diagonal masked to zero, then the last two axes summed
  # (no strided slice, whose transpose would make a weak array's cotangent strong).
  from tracejax._src.numpy import creation  # (creation imports this module)
  a = ufuncs.where(creation.eye(n, m, k=offset, dtype=bool), a, creation.zeros_like(a))
  return reductions.sum(a, axis=(-2, -1), dtype=dtype)

