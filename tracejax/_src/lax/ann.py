"""Approximate nearest-neighbour search helpers: `approx_max_k`, `approx_min_k`
(the primitive `approx_top_k_p`).

XLA's approximate top-k is a TPU algorithm; on other backends XLA itself falls back
to an exact sort, and so does tracejax: the results are the exact top k (which meet
any recall target). With `aggregate_to_topk=False` XLA may return more candidates
than k; tracejax returns exactly the k best, a valid answer of that contract.
"""
import functools

import numpy as np

from tracejax._src import dispatch
from tracejax._src.core.avals import ShapedArray
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir

__all__ = ["approx_max_k", "approx_min_k", "approx_top_k_p"]


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` largest values of `operand` along `reduction_dimension`, in decreasing order,
  and their int32 indices.

  Args:
    operand: a floating-point array.
    k: how many values to return.
    reduction_dimension: the axis to search.
    recall_target: the fraction of the true top k an accelerator may settle for (the
      CPU result is exact).
    reduction_input_size_override: the logical size of the axis when `operand` is a
      shard of a larger one (it must not be smaller than the axis).
    aggregate_to_topk: whether to reduce the candidates to exactly k, sorted.

  >>> approx_max_k(jnp.array([3., 1., 4., 1., 5.]), 2)
  (DeviceArray([5., 4.], dtype=float32), DeviceArray([4, 2], dtype=int32))
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, True,
                       reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """The `k` smallest values of `operand` along `reduction_dimension`, in increasing
  order, and their int32 indices. Arguments as for `approx_max_k`.

  >>> approx_min_k(jnp.array([3., 1., 4., 1., 5.]), 2)[1]
  DeviceArray([1, 3], dtype=int32)
  """
  return _approx_top_k(operand, k, reduction_dimension, recall_target, False,
                       reduction_input_size_override, aggregate_to_topk)


def _approx_top_k(operand, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
  return tuple(approx_top_k_p.bind(
      operand, k=int(k), reduction_dimension=int(reduction_dimension),
      recall_target=float(recall_target), is_max_k=bool(is_max_k),
      reduction_input_size_override=int(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk)))


def _abstract_eval(operand, *, k, reduction_dimension, recall_target, is_max_k,
                   reduction_input_size_override, aggregate_to_topk):
  if not np.issubdtype(operand.dtype, np.floating):
    raise ValueError("operand must be a floating type")
  ndim = len(operand.shape)
  if not -ndim <= reduction_dimension < ndim:
    raise ValueError(f"reduction_dimension {reduction_dimension} is out of bounds for an "
                     f"operand of rank {ndim}.")
  dim = reduction_dimension % ndim
  n = operand.shape[dim]
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if k > n:
    raise ValueError(f"k must be smaller than or equal to the size of the reduction "
                     f"dimension: k={k}, dimension size={n}")
  if not 0 < recall_target <= 1:
    raise ValueError(f"recall_target must be in (0, 1], got {recall_target}")
  if 0 <= reduction_input_size_override < n:
    raise ValueError("reduction_input_size_override must not be smaller than the size of "
                     f"the reduction dimension, got {reduction_input_size_override} < {n}")
  shape = operand.shape[:dim] + (k,) + operand.shape[dim + 1:]
  return [ShapedArray(shape, operand.dtype, operand.weak_type),
          ShapedArray(shape, np.dtype(np.int32))]


def _exact(operand, *, k, reduction_dimension, is_max_k, **_):
  """The exact top (or bottom) k along the axis, by lax.top_k."""
  from tracejax._src.lax import elementwise, sorting
  x = operand if is_max_k else elementwise.neg(operand)
  vals, idx = sorting.top_k(x, k, axis=reduction_dimension)
  return [vals if is_max_k else elementwise.neg(vals), idx]


approx_top_k_p = Primitive("approx_top_k")
approx_top_k_p.multiple_results = True
approx_top_k_p.def_impl(functools.partial(dispatch.apply_primitive, approx_top_k_p))
approx_top_k_p.def_abstract_eval(_abstract_eval)


def _jvp(primals, tangents, **params):
  # The composition's derivative: the tangent at the selected indices.
  outs, t_outs = ad.jvp_flat(lambda x: _exact(x, **params), primals, tangents)
  return outs, t_outs


def _batch(args, dims, *, reduction_dimension, **params):
  (x,), (d,) = args, dims
  ndim = np.ndim(x) - 1
  rd = reduction_dimension % ndim
  rd = rd + (d <= rd)
  return approx_top_k_p.bind(x, reduction_dimension=rd, **params), [d, d]


ad.primitive_jvps[approx_top_k_p] = _jvp
batching.primitive_batchers[approx_top_k_p] = _batch
mlir.register_lowering(approx_top_k_p, mlir.lower_fun(_exact, multiple_results=True))
