"""`jnp.ufunc` and `jnp.frompyfunc`: NumPy's universal-function object around any
traceable scalar function.

A ufunc wraps `func(*nin scalars) -> nout scalars` and gives it NumPy's ufunc
methods: calling it broadcasts over arrays (by `jnp.vectorize`), and for
binary ufuncs `outer`, `reduce`, `accumulate`, `reduceat` and `at`. The
generic methods fold with `lax.scan` (left to right, as NumPy defines them),
so they need no associativity; specialised implementations can be passed in
(`call=`, `reduce=`, ...).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import concrete_or_error
from tracejax._src.numpy import indexing, shape_ops, util


class _UfuncMeta(type):
  """Makes the jnp functions that carry ufunc methods (jnp.add, ...) instances of ufunc."""

  def __instancecheck__(cls, obj):
    return type.__instancecheck__(cls, obj) or getattr(obj, "_ufunc", None) is not None


class ufunc(metaclass=_UfuncMeta):
  """A universal function: `func` broadcast elementwise, with NumPy's ufunc methods.

  Args:
    func: a function of `nin` scalars returning `nout` scalars (a tuple if nout > 1).
    nin, nout: the numbers of inputs and outputs.
    name: the name shown in reprs (default: func's name).
    nargs: accepted for NumPy compatibility (default nin + nout).
    identity: the value a reduction of nothing gives (enables empty reductions
      and is the default initial value).
    call, reduce, accumulate, at, reduceat: optional faster implementations of
      the corresponding methods, called with the same arguments.

  >>> add = ufunc(lambda x, y: x + y, 2, 1, identity=0)
  >>> add.reduce(jnp.array([1, 2, 3]))
  DeviceArray(6, dtype=int32)
  >>> add.outer(jnp.arange(2), jnp.arange(3))
  DeviceArray([[0, 1, 2],
               [1, 2, 3]], dtype=int32)
  """

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
               reduce=None, accumulate=None, at=None, reduceat=None):
    if not callable(func):
      raise TypeError(f"ufunc: func must be callable, got {type(func)}")
    nin, nout = int(nin), int(nout)
    if nin < 1 or nout < 1:
      raise ValueError(f"ufunc: nin and nout must be positive, got {nin} and {nout}")
    self._func = func
    self.nin, self.nout = nin, nout
    self.nargs = nin + nout if nargs is None else int(nargs)
    self.identity = identity
    self.__name__ = name or getattr(func, "__name__", "ufunc")
    self._call, self._reduce, self._accumulate = call, reduce, accumulate
    self._at, self._reduceat = at, reduceat
    self._vectorized = None

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def __hash__(self):
    return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

  def __eq__(self, other):
    return isinstance(other, ufunc) and (
        self._func, self.__name__, self.identity, self.nin, self.nout) == (
        other._func, other.__name__, other.identity, other.nin, other.nout)

  # ---- calling ----

  def __call__(self, *args, out=None, where=None):
    """`func` applied elementwise to the broadcast `args`."""
    if out is not None:
      raise NotImplementedError(f"{self.__name__}: the 'out' argument is not supported.")
    if where is not None:
      raise NotImplementedError(f"{self.__name__}: the 'where' argument is not supported.")
    if len(args) != self.nin:
      raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but "
                      f"{len(args)} were given")
    if self._call is not None:
      return self._call(*args)
    util.check_arraylike(self.__name__, *args)
    if self._vectorized is None:
      from tracejax._src.numpy.vectorize import vectorize
      self._vectorized = vectorize(self._func)
    return self._vectorized(*args)

  def _binary(self, method):
    if self.nin != 2 or self.nout != 1:
      raise ValueError(f"{method} is only supported for binary ufuncs with one output "
                       f"(nin=2, nout=1); {self.__name__} has nin={self.nin}, "
                       f"nout={self.nout}")

  def outer(self, A, B, /):
    """`func(a, b)` for every pair: the result has shape A.shape + B.shape."""
    self._binary("outer")
    util.check_arraylike(f"{self.__name__}.outer", A, B)
    A, B = util.to_array(A), util.to_array(B)
    a = util.reshape(A, util.shape(A) + (1,) * util.ndim(B))
    return self(a, B)

  # ---- folds ----

  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    """Fold `func` over `axis` from the left: func(...func(func(a0, a1), a2)..., an).

    Args:
      a: array.
      axis: an int, a tuple of ints, or None (all axes).
      dtype: the dtype to reduce in (default: `a`'s).
      keepdims: keep reduced axes as size 1.
      initial: the starting value (default: `identity`; without either the first
        element starts, and an empty axis is an error).
      where: boolean mask of the elements taking part (needs `initial` or `identity`).
    """
    self._binary("reduce")
    if out is not None:
      raise NotImplementedError(f"{self.__name__}.reduce: 'out' is not supported.")
    if self._reduce is not None and where is None:
      return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
    util.check_arraylike(f"{self.__name__}.reduce", a)
    a = util.to_array(a)
    dt = util.check_dtype(dtype, f"{self.__name__}.reduce")
    if dt is not None:
      a = util.convert(a, dt, False)
    nd = util.ndim(a)
    axes = util.canonicalize_axes(axis, nd) if axis is not None else tuple(range(nd))
    if initial is None:
      initial = self.identity
    if where is not None:
      if initial is None:
        raise ValueError(f"{self.__name__}.reduce: a where mask needs an initial value "
                         "or an identity")
      from tracejax._src.numpy import ufuncs
      a = ufuncs.where(where, a, util.convert(util.to_operand(initial), util.dtype_of(a),
                                              False))
    out = a
    # Reduce the axes one at a time from the last, so indices stay valid.
    for ax in sorted(axes, reverse=True):
      out = self._reduce_axis(out, ax, initial)
    if keepdims:
      out = util.reshape(out, tuple(1 if i in axes else d
                                    for i, d in enumerate(util.shape(a))))
    return out

  def _reduce_axis(self, a, axis, initial):
    from tracejax._src.control_flow.loops import scan
    moved = shape_ops.moveaxis(a, axis, 0)
    n = util.shape(moved)[0]
    if initial is None:
      if n == 0:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                         "has no identity")
      init, rest = moved[0], moved[1:]
    else:
      init = util.broadcast_to(util.convert(util.to_operand(initial), util.dtype_of(a),
                                            False), util.shape(moved)[1:])
      rest = moved
    dt = util.dtype_of(a)

    def step(carry, x):
      return util.convert(util.to_array(self(carry, x)), dt, False), None
    out, _ = scan(step, util.to_array(init), rest)
    return out

  def accumulate(self, a, axis=0, dtype=None, out=None):
    """The running fold along `axis`: out[i] = func(out[i-1], a[i]), out[0] = a[0]."""
    self._binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"{self.__name__}.accumulate: 'out' is not supported.")
    if self._accumulate is not None:
      return self._accumulate(a, axis=axis, dtype=dtype)
    from tracejax._src.control_flow.loops import scan
    util.check_arraylike(f"{self.__name__}.accumulate", a)
    a = util.to_array(a)
    dt = util.check_dtype(dtype, f"{self.__name__}.accumulate") or util.dtype_of(a)
    a = util.convert(a, dt, False)
    if util.ndim(a) == 0:
      raise ValueError(f"{self.__name__}.accumulate: cannot accumulate a scalar")
    axis = util.canonicalize_axis(axis, util.ndim(a))
    moved = shape_ops.moveaxis(a, axis, 0)
    if util.shape(moved)[0] == 0:
      return a

    def step(carry, x):
      y = util.convert(util.to_array(self(carry, x)), dt, False)
      return y, y
    _, rest = scan(step, moved[0], moved[1:])
    return shape_ops.moveaxis(shape_ops.concatenate([moved[:1], rest], axis=0), 0, axis)

  def at(self, a, indices, b=None, /, *, inplace=True):
    """`a` with a[indices] = func(a[indices], b) applied once per index, in order
    (so repeated indices compose); unary ufuncs take no `b`. Needs inplace=False."""
    if inplace:
      raise NotImplementedError("jax.numpy.ufunc.at: JAX arrays are immutable; pass "
                                "inplace=False to get an updated copy.")
    if self.nout != 1:
      raise ValueError(f"{self.__name__}.at is only supported for single-output ufuncs")
    if self._at is not None:
      return self._at(a, indices, b)
    from tracejax._src.control_flow.loops import scan
    util.check_arraylike(f"{self.__name__}.at", a)
    a = util.to_array(a)
    if (b is None) != (self.nin == 1):
      raise ValueError(f"{self.__name__}.at: {'no' if self.nin == 1 else 'a'} `b` "
                       f"argument is expected for nin={self.nin}")
    # One index tuple per element of the broadcast index arrays, applied in turn.
    idx = indices if isinstance(indices, tuple) else (indices,)
    idx = [util.to_array(i) for i in idx]
    bshape = util.broadcast_shapes(*(util.shape(i) for i in idx))
    flat_idx = tuple(shape_ops.ravel(util.broadcast_to(i, bshape)) for i in idx)
    count = int(np.prod(bshape, dtype=np.int64))
    dt = util.dtype_of(a)
    sub_shape = util.shape(indexing.getitem(a, tuple(i[0] for i in flat_idx))) if count \
        else ()
    if b is not None:
      bb = util.broadcast_to(util.convert(util.to_array(b), dt, False), bshape + sub_shape)
      bb = util.reshape(bb, (count,) + sub_shape)
    else:
      bb = util.to_array(np.zeros((count,), np.int8))
    if count == 0:
      return a

    def step(arr, xs):
      ix, bv = xs
      cur = indexing.getitem(arr, ix)
      new = self(cur, bv) if b is not None else self(cur)
      return arr.at[ix].set(util.convert(util.to_array(new), dt, False)), None
    out, _ = scan(step, a, (flat_idx, bb))
    return out

  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    """Reductions over the slices [indices[i], indices[i+1]) along `axis` (just
    a[indices[i]] where the next index is not larger; the last runs to the end).
    `indices` must be concrete: they fix the slices' shapes."""
    self._binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"{self.__name__}.reduceat: 'out' is not supported.")
    if self._reduceat is not None:
      return self._reduceat(a, indices, axis=axis, dtype=dtype)
    util.check_arraylike(f"{self.__name__}.reduceat", a)
    a = util.to_array(a)
    dt = util.check_dtype(dtype, f"{self.__name__}.reduceat")
    if dt is not None:
      a = util.convert(a, dt, False)
    axis = util.canonicalize_axis(axis, util.ndim(a))
    idx = concrete_or_error(np.asarray, indices, f"The indices of {self.__name__}.reduceat "
                            "fix the shapes of the slices, so they must be concrete.")
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
      raise ValueError(f"{self.__name__}.reduceat: indices must be a 1-D integer array")
    n = util.shape(a)[axis]
    if np.any((idx < 0) | (idx >= n)):
      raise IndexError(f"{self.__name__}.reduceat: index out of bounds for axis of size {n}")
    pieces = []
    for i, start in enumerate(idx):
      stop = int(idx[i + 1]) if i + 1 < len(idx) else n
      if stop <= start:
        pieces.append(shape_ops._slice_axis(a, axis, int(start), int(start) + 1))
      else:
        seg = shape_ops._slice_axis(a, axis, int(start), stop)
        pieces.append(self.reduce(seg, axis=axis, keepdims=True, initial=None)
                      if self.identity is None else
                      self.reduce(seg, axis=axis, keepdims=True))
    if not pieces:
      shape = list(util.shape(a))
      shape[axis] = 0
      return util.to_array(np.zeros(shape, dtypes.canonicalize_dtype(util.dtype_of(a))))
    return shape_ops.concatenate(pieces, axis=axis)


def frompyfunc(func, /, nin, nout, *, identity=None):
  """A `jnp.ufunc` from a Python function of scalars (NumPy's `frompyfunc`; the
  function must be traceable: it is vectorized, not called per element in Python).

  Args:
    func: function of `nin` scalars returning `nout` scalars.
    nin, nout: numbers of inputs and outputs.
    identity: the value a reduction of nothing gives.

  >>> mul = frompyfunc(lambda x, y: x * y, 2, 1, identity=1)
  >>> mul.reduce(jnp.array([2, 3, 4]))
  DeviceArray(24, dtype=int32)
  """
  return ufunc(func, nin, nout, identity=identity)


# ---- NumPy's ufuncs among the jnp functions get the ufunc methods ----
# `jnp.add.reduce`, `jnp.maximum.accumulate`, `jnp.add.at(..., inplace=False)`,
# `jnp.multiply.outer`: the jnp functions stay what they are (compiled inline
# jits) and gain the methods, fast paths where a jnp reduction exists.

def _fast_reduce(fn, with_initial=True):
  def reduce(a, axis=0, dtype=None, keepdims=False, initial=None):
    if initial is not None and not with_initial:
      return None
    kw = {"keepdims": keepdims}
    if initial is not None:
      kw["initial"] = initial
    if dtype is not None:
      kw["dtype"] = dtype
    return fn(a, axis=axis, **kw)
  return reduce


def _attach_ufunc_methods():
  from tracejax._src.numpy import reductions, ufuncs
  R = reductions
  table = {  # name: (nin, identity, reduce, accumulate, at-method name)
      "add": (2, 0, _fast_reduce(R.sum), R.cumsum, "add"),
      "multiply": (2, 1, _fast_reduce(R.prod), R.cumprod, "multiply"),
      "maximum": (2, None, _fast_reduce(lambda a, axis, dtype=None, **kw: R.max(
          a if dtype is None else util.convert(util.to_array(a), dtype), axis, **kw)),
          lambda a, axis, dtype=None: R.cummax(a, axis, dtype), "max"),
      "minimum": (2, None, _fast_reduce(lambda a, axis, dtype=None, **kw: R.min(
          a if dtype is None else util.convert(util.to_array(a), dtype), axis, **kw)),
          lambda a, axis, dtype=None: R.cummin(a, axis, dtype), "min"),
      "logical_and": (2, True, _fast_reduce(
          lambda a, axis, dtype=None, **kw: R.all(a, axis, **kw), False), None, None),
      "logical_or": (2, False, _fast_reduce(
          lambda a, axis, dtype=None, **kw: R.any(a, axis, **kw), False), None, None),
      "subtract": (2, None, None, None, "subtract"),
      "bitwise_and": (2, -1, None, None, None),
      "bitwise_or": (2, 0, None, None, None),
      "bitwise_xor": (2, 0, None, None, None),
      "logical_xor": (2, False, None, None, None),
      "logaddexp": (2, -np.inf, None, None, None),
      "logaddexp2": (2, -np.inf, None, None, None),
      "negative": (1, None, None, None, None),
  }
  for name, (nin, identity, red, acc, at_name) in table.items():
    fn = getattr(ufuncs, name)
    u = ufunc(fn, nin, 1, name=name, identity=identity, call=fn)
    if red is not None:
      def reduce_with_fallback(a, axis=0, dtype=None, keepdims=False, initial=None,
                               _red=red, _u=u):
        out = _red(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial)
        if out is None:  # this fast path takes no initial value
          saved, _u._reduce = _u._reduce, None
          try:
            return _u.reduce(a, axis, dtype, None, keepdims, initial)
          finally:
            _u._reduce = saved
        return out
      u._reduce = reduce_with_fallback
    if acc is not None:
      u._accumulate = (lambda a, axis=0, dtype=None, _acc=acc:
                       _acc(a, axis=axis, dtype=dtype))
    if at_name is not None:
      def at(a, indices, b, _m=at_name):
        return getattr(util.to_array(a).at[indices], _m)(b)
      u._at = at
    for attr in ("reduce", "accumulate", "at", "reduceat", "outer"):
      if nin == 2 or attr == "at":
        setattr(fn, attr, getattr(u, attr))
    fn.nin, fn.nout, fn.nargs, fn.identity = u.nin, u.nout, u.nargs, u.identity
    fn._ufunc = u


_attach_ufunc_methods()
