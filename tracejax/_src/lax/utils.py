"""Helpers for defining lax primitives: `standard_primitive` and argument checks."""
import functools

import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive
from tracejax._src import dispatch


def standard_primitive(shape_rule, dtype_rule, name, weak_type_rule=None,
                       multiple_results=False):
  """A primitive whose impl is eager XLA dispatch and whose avals come from the rules."""
  prim = Primitive(name)
  prim.multiple_results = multiple_results
  prim.def_impl(functools.partial(dispatch.apply_primitive, prim))
  weak_type_rule = weak_type_rule or _standard_weak_type_rule
  if multiple_results:
    def abstract_eval(*avals, **params):
      shapes = shape_rule(*avals, **params)
      dts = dtype_rule(*avals, **params)
      weak = weak_type_rule(*avals, **params)
      if isinstance(weak, bool):
        weak = [weak] * len(shapes)
      return [ShapedArray(s, d, w) for s, d, w in zip(shapes, dts, weak)]
  else:
    def abstract_eval(*avals, **params):
      return ShapedArray(shape_rule(*avals, **params), dtype_rule(*avals, **params),
                         weak_type_rule(*avals, **params))
  prim.def_abstract_eval(abstract_eval)
  prim.shape_rule, prim.dtype_rule = shape_rule, dtype_rule
  return prim


def _standard_weak_type_rule(*avals, **params):
  return bool(avals) and all(a.weak_type for a in avals)


def input_dtype(x, **_):
  return x.dtype


def check_dtypes(name, accepted, *avals):
  """TypeError naming the primitive when an operand's dtype is not accepted."""
  for i, a in enumerate(avals):
    if not any(dtypes.issubdtype(a.dtype, t) for t in accepted):
      names = ", ".join(getattr(t, "__name__", str(t)) for t in accepted)
      raise TypeError(f"{name} does not accept dtype {a.dtype.name} (operand {i}). "
                      f"Accepted dtypes are subtypes of {names}.")


def check_same_dtypes(name, *avals):
  dts = [a.dtype for a in avals]
  if len(set(dts)) > 1:
    raise TypeError(f"{name} requires arguments to have the same dtypes, got "
                    f"{', '.join(d.name for d in dts)}.")


def broadcast_shapes_strict(name, *shapes):
  """The shape of an n-ary elementwise result, by lax's rules (not NumPy's).

  Rank-0 operands broadcast; the others must have one rank (no implicit rank
  promotion: that is jax.numpy's job), and along each axis their sizes must agree
  or be 1 (a size-1 axis broadcasts, as in JAX's lax binary operators).

  Args:
    name: the primitive's name, for the error messages.
    *shapes: the operands' shapes.

  >>> broadcast_shapes_strict("add", (3, 1), (1, 4), ())
  (3, 4)
  """
  shapes = [tuple(s) for s in shapes if len(s)]
  if not shapes:
    return ()
  ranks = {len(s) for s in shapes}
  if len(ranks) > 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions, got "
                    f"{ranks}")
  out = []
  for sizes in zip(*shapes):
    not_one = set(sizes) - {1}
    if len(not_one) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(map(str, shapes))}.")
    out.append(not_one.pop() if not_one else 1)
  return tuple(out)


def check_same_shapes(name, *avals):
  shapes = [a.shape for a in avals]
  if len(set(shapes)) > 1:
    raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                    f"{', '.join(map(str, shapes))}.")


# dtype classes accepted by families of primitives
_bool = [np.bool_]
_int = [np.integer]
_float = [np.floating]
_complex = [np.complexfloating]
_inexact = [np.inexact]
_num = [np.integer, np.inexact]
_any = [np.bool_, np.integer, np.inexact]
_bool_or_int = [np.bool_, np.integer]
_signedint = [np.signedinteger]


# ---- Python scalars in lax wrappers ----

_py_scalars = (int, float, complex, bool)


def promote_python_scalars(args):
  """Give Python scalars the dtype of the array operands (the lax convenience).

  A scalar whose default (weak) dtype already matches is passed through as is,
  so it stays weakly typed and prints inline in jaxprs.
  """
  for a in args:
    if type(a) in _py_scalars:
      break
  else:
    return args  # the common case: nothing to convert
  from tracejax._src.core.avals import get_aval
  target = None
  for a in args:
    if type(a) not in _py_scalars:
      target = get_aval(a).dtype
      break
  if target is None:  # only scalars: the weakly typed result dtype of them all
    target = dtypes.result_type(*args)
  out = []
  for a in args:
    if type(a) in _py_scalars:
      if get_aval(a).dtype != target:
        _check_scalar_fits(a, target)
        a = np.asarray(a, target)
    out.append(a)
  return out


def _check_scalar_fits(x, dtype):
  kind = {bool: 0, int: 1, float: 2, complex: 3}[type(x)]
  tkind = (0 if dtype == np.bool_ else 1 if dtypes.issubdtype(dtype, np.integer)
           else 2 if dtypes.issubdtype(dtype, np.floating) else 3)
  if kind > tkind:
    raise TypeError(f"lax operations require arguments of the same dtype; the Python "
                    f"{type(x).__name__} {x!r} does not fit dtype {np.dtype(dtype).name}")


# ---- batching rule factories (vmap) for families of primitives ----

def _batching():
  from tracejax._src.interpreters import batching
  return batching


def moveaxis(x, src, dst):
  """Move axis `src` of `x` to position `dst` with a transpose (identity if equal)."""
  from tracejax._src.lax import structural
  ndim = np.ndim(x)
  src, dst = src % ndim, dst % ndim
  if src == dst:
    return x
  perm = [i for i in range(ndim) if i != src]
  perm.insert(dst, src)
  return structural.transpose(x, tuple(perm))


def bdim_at_front(x, bdim, size):
  """`x` with its batch axis first; an unbatched `x` is broadcast to `size` first."""
  from tracejax._src.lax import structural
  if bdim is None:
    shape = np.shape(x)
    return structural.broadcast_in_dim(x, (size,) + tuple(shape),
                                       tuple(range(1, len(shape) + 1)))
  return moveaxis(x, bdim, 0)


def defvectorized(prim):
  """Batching for unary elementwise primitives: the batch axis passes through."""
  def rule(args, dims, **params):
    return prim.bind(*args, **params), dims[0]
  _batching().primitive_batchers[prim] = rule


def defbroadcasting(prim, size_one=False):
  """Batching for n-ary elementwise primitives.

  Operands batched on the same axis with the same shape (and rank-0 operands) go
  straight to `prim`. Otherwise the batch axes move to the front. With
  `size_one=False` (primitives whose shape rule only broadcasts rank-0 operands,
  and the 2020 rule for user primitives) unbatched operands are broadcast to the
  full batch; with `size_one=True` (the lax binary operators, which broadcast
  size-1 dimensions of equal-rank operands) an unbatched operand gets a size-1
  batch axis and a batched scalar gets size-1 trailing axes, and the primitive's
  own broadcasting does the rest (no batch-sized copies).
  """
  from tracejax._src.lax import structural

  def full_rule(args, dims, **params):
    size = next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)
    per_shapes = [tuple(s for i, s in enumerate(np.shape(x)) if i != d) if d is not None
                  else np.shape(x) for x, d in zip(args, dims)]
    out_shape = next((s for s in per_shapes if s), ())
    new = []
    for x, d, s in zip(args, dims, per_shapes):
      if d is None:
        if s:
          x = bdim_at_front(x, None, size)
      else:
        x = moveaxis(x, d, 0)
        if s != out_shape:
          x = structural.broadcast_in_dim(x, (size,) + out_shape, (0,))
      new.append(x)
    return new

  def size_one_rule(args, dims, **params):
    new = [bdim_at_front(x, d, 1) if np.ndim(x) else x for x, d in zip(args, dims)]
    ndim = max(np.ndim(x) for x in new)
    for i, (x, d) in enumerate(zip(new, dims)):
      if d is not None and np.ndim(x) < ndim:  # a batched scalar: (B,) -> (B, 1, ..., 1)
        shape = tuple(np.shape(x)) + (1,) * (ndim - np.ndim(x))
        new[i] = structural.broadcast_in_dim(x, shape, tuple(range(np.ndim(x))))
    return new

  def rule(args, dims, **params):
    bdim, shape = next((d, np.shape(x)) for x, d in zip(args, dims) if d is not None)
    if all(d == bdim and np.shape(x) == shape for x, d in zip(args, dims) if np.ndim(x)):
      out = prim.bind(*args, **params)
      return (out, [bdim] * len(out)) if prim.multiple_results else (out, bdim)
    new = (size_one_rule if size_one else full_rule)(args, dims, **params)
    out = prim.bind(*new, **params)
    return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
  _batching().primitive_batchers[prim] = rule


def defreducer(prim, axes_param="axes"):
  """Batching for reductions over `params[axes_param]`: shift the axes past the batch axis."""
  def rule(args, dims, **params):
    (x,), (d,) = args, dims
    axes = tuple(a + (a >= d) for a in params[axes_param])
    out = prim.bind(x, **{**params, axes_param: axes})
    return out, d - sum(a < d for a in axes)
  _batching().primitive_batchers[prim] = rule
