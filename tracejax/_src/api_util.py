"""Pytree plumbing for WrappedFuns (`jax.api_util`, the 2020 internals API).

Transformations work on flat lists of arrays; users write functions of pytrees.
`flatten_fun(f, in_tree)` bridges the two: the result takes the flat leaves of
`(args, kwargs)` and returns a flat list, and its second result is a thunk that
gives the output's tree once the function has been called:

    flat_f, out_tree = flatten_fun(lu.wrap_init(f), in_tree)
    outs = flat_f.call_wrapped(*leaves)
    result = tree_unflatten(out_tree(), outs)
"""
import numpy as np

from tracejax._src import linear_util as lu
from tracejax._src import tree_util


def _flatten_fun(in_tree, *args_flat):
  py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_flat)
  ans = yield py_args, py_kwargs
  yield tree_util.tree_flatten(ans)


def flatten_fun(f, in_tree):
  """`f` of pytrees -> `(f of the leaves of (args, kwargs) -> leaves, out_tree thunk)`."""
  return lu.transformation_with_aux(_flatten_fun, f, in_tree)


def _flatten_fun_nokwargs(in_tree, *args_flat):
  py_args = tree_util.tree_unflatten(in_tree, args_flat)
  ans = yield py_args, {}
  yield tree_util.tree_flatten(ans)


def flatten_fun_nokwargs(f, in_tree):
  """Like `flatten_fun` with `in_tree` the tree of the positional args tuple only."""
  return lu.transformation_with_aux(_flatten_fun_nokwargs, f, in_tree)


def split_aux(out):
  """Split the `(output, aux)` pair of a `has_aux` function, or raise JAX's TypeError.

  A list of two is accepted as JAX does; anything else (a bare array would otherwise be
  unpacked along its first axis) is an error naming what the function must return.

  >>> split_aux((1.0, {"n": 2}))
  (1.0, {'n': 2})
  """
  if not (isinstance(out, (tuple, list)) and len(out) == 2):
    raise TypeError("expected function with aux output to return a two-element tuple, but "
                    f"got type {type(out)} with value {out}")
  return out[0], out[1]


def check_callable(fun):
  """Raise JAX's TypeError when a transformation is applied to a non-callable.

  >>> check_callable(len) is None
  True
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun!r}")


# NumPy kinds with no XLA element type: object, str, bytes, datetime64, timedelta64.
_NON_NUMERIC_KINDS = frozenset("OUSMm")


def check_array_dtype(x):
  """Raise JAX's TypeError for a NumPy array/scalar of a non-numeric dtype; return `x`.

  Without this check such values reach jaxlib and fail with its raw transfer error.

  >>> check_array_dtype(np.ones(2)).shape
  (2,)
  """
  dt = getattr(x, "dtype", None)
  if isinstance(x, (np.ndarray, np.generic)) and dt.kind in _NON_NUMERIC_KINDS:
    raise TypeError(f"Dtype {dt} is not a valid JAX array type. Only arrays of numeric types "
                    "are supported by JAX.")
  return x


def _flatten_fun_nokwargs2(in_tree, *args_flat):
  py_args = tree_util.tree_unflatten(in_tree, args_flat)
  pair = yield py_args, {}
  ans, aux = split_aux(pair)
  ans_flat, ans_tree = tree_util.tree_flatten(ans)
  aux_flat, aux_tree = tree_util.tree_flatten(aux)
  yield (ans_flat, aux_flat), (ans_tree, aux_tree)


def flatten_fun_nokwargs2(f, in_tree):
  """For `f` returning `(ans, aux)`: flat `(ans leaves, aux leaves)`; the thunk gives
  both trees."""
  return lu.transformation_with_aux(_flatten_fun_nokwargs2, f, in_tree)


def apply_flat_fun(fun, io_tree, *py_args):
  """Call flat `fun` on pytree args: `io_tree = (in_tree of (args, {}), out_tree)`."""
  in_tree_expected, out_tree = io_tree
  args, in_tree = tree_util.tree_flatten((py_args, {}))
  if in_tree != in_tree_expected:
    raise TypeError(f"Expected {in_tree_expected}, got {in_tree}")
  return tree_util.tree_unflatten(out_tree, fun(*args))


def apply_flat_fun_nokwargs(fun, io_tree, py_args):
  """Like `apply_flat_fun` with `in_tree` the tree of the args tuple only."""
  in_tree_expected, out_tree = io_tree
  args, in_tree = tree_util.tree_flatten(py_args)
  if in_tree != in_tree_expected:
    raise TypeError(f"Expected {in_tree_expected}, got {in_tree}")
  return tree_util.tree_unflatten(out_tree, fun(*args))


def _argnums_partial(dyn_argnums, fixed_args, *dyn_args, **kwargs):
  it = iter(dyn_args)
  args = [next(it) if i in dyn_argnums else fixed_args[i].val
          for i in range(len(fixed_args))]
  ans = yield args, kwargs
  yield ans


class _Fixed:
  """A positional argument held fixed by `argnums_partial`, compared by identity
  (arrays do not hash) so that cached WrappedFuns stay distinct."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val

  def __hash__(self):
    return id(self.val)

  def __eq__(self, other):
    return isinstance(other, _Fixed) and self.val is other.val


def argnums_partial(f, dyn_argnums, args):
  """`(f of the args at dyn_argnums only, those args)`: the others are fixed to `args`."""
  dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
  n = len(args)
  dyn_argnums = tuple(sorted({i % n if n else i for i in dyn_argnums}))
  fixed = tuple(None if i in dyn_argnums else _Fixed(a) for i, a in enumerate(args))
  dyn_args = tuple(args[i] for i in dyn_argnums)
  return lu.transformation(_argnums_partial, f, frozenset(dyn_argnums), fixed), dyn_args
