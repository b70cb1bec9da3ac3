"""`jnp.einsum`: opt_einsum chooses the contraction order, lax.dot_general does each step.

`opt_einsum.contract_path(..., einsum_call=True)` turns a multi-operand
einsum into a sequence of one- and two-operand contractions. Each two-operand
step is one `dot_general` (shared indices kept in the output are its batch
dimensions, the others its contracting dimensions), preceded by taking
diagonals of repeated indices and summing out indices no one else needs,
and followed by a transpose into the step's output order.
"""
import opt_einsum
from opt_einsum import parser as opt_parser

from tracejax._src.lax import dot as lax_dot
from tracejax._src.lax import reductions as lax_red
from tracejax._src.numpy import products, shape_ops, util


def einsum(*operands, optimize="greedy", precision=None, preferred_element_type=None,
           _use_xeinsum=False, out_sharding=None):
  """Evaluate the Einstein summation convention on the operands.

  Supports NumPy's subscripts grammar including `...` and the interleaved
  `einsum(op0, sublist0, op1, sublist1, ..., [sublistout])` form. `out_sharding=` as
  for `jnp.dot`.
  """
  if out_sharding is not None:
    from tracejax._src import sharding_explicit  # above jax.numpy's modules
    return sharding_explicit.with_out_sharding(lambda: einsum(
        *operands, optimize=optimize, precision=precision,
        preferred_element_type=preferred_element_type), out_sharding, "einsum")
  if not operands:
    raise ValueError("No input operands")
  if isinstance(operands[0], str):
    subscripts, arrays = operands[0], list(operands[1:])
  else:
    subscripts, arrays = opt_parser.convert_interleaved_input(operands)
    arrays = list(arrays)
  util.check_arraylike_or_list("einsum", *arrays)
  # As JAX's einsum: the operands only change dtype (each keeps its weak type, so no
  # weak-to-strong conversion whose transpose would re-weaken a cotangent), and the
  # result is converted to the promoted type at the end (strong with a preferred type).
  arrays = [util.to_operand(x) for x in arrays]
  dt, weak = util._result_dtype(arrays) if len(arrays) > 1 else (
      util.dtype_of(arrays[0]), util.is_weak(arrays[0]))
  arrays = [util.to_array(x if util.dtype_of(x) == dt else util.convert(x, dt, util.is_weak(x)))
            for x in arrays]
  if optimize is True or optimize is None:
    optimize = "optimal" if optimize is True else "greedy"
  elif optimize is False:
    optimize = "greedy"  # same result; pairwise steps are what we know how to lower
  _, contractions = opt_einsum.contract_path(
      subscripts, *[util.shape(x) for x in arrays], einsum_call=True, shapes=True,
      optimize=optimize)
  kw = dict(precision=precision, preferred_element_type=preferred_element_type)
  for contract_inds, _, einsum_str, _, _ in contractions:
    inputs, out_names = einsum_str.split("->")
    in_names = inputs.split(",")
    # opt_einsum lists the indices in decreasing order, and pops in that order.
    ops = [arrays.pop(i) for i in contract_inds]
    if len(ops) == 1:
      result = _unary(ops[0], in_names[0], out_names)
    elif len(ops) == 2:
      result = _binary(ops[0], in_names[0], ops[1], in_names[1], out_names, kw)
    else:
      raise NotImplementedError(f"einsum: contraction of {len(ops)} operands at once")
    arrays.append(result)
  assert len(arrays) == 1
  if preferred_element_type is not None:
    return util.convert(arrays[0], util.dtype_of(arrays[0]), False)
  return util.convert(arrays[0], dt, weak)


def einsum_path(subscripts, *operands, optimize="greedy"):
  """The contraction order opt_einsum chooses (as `np.einsum_path` reports it)."""
  return opt_einsum.contract_path(subscripts, *operands, optimize=optimize)


def _take_diagonals(x, names):
  """Take the diagonal of every index repeated within `names`."""
  while True:
    dup = next((c for c in names if names.count(c) > 1), None)
    if dup is None:
      return x, names
    i = names.index(dup)
    j = names.index(dup, i + 1)
    x = products.diagonal(x, 0, i, j)  # the diagonal axis goes last
    names = "".join(c for k, c in enumerate(names) if k not in (i, j)) + dup


def _sum_out(x, names, keep):
  """Sum over the indices of `names` not in `keep`."""
  axes = tuple(i for i, c in enumerate(names) if c not in keep)
  if not axes:
    return x, names
  x = lax_red.reduce_sum(x, axes)
  return x, "".join(c for c in names if c in keep)


def _to_order(x, names, out_names):
  perm = tuple(names.index(c) for c in out_names)
  return shape_ops.transpose(x, perm) if perm != tuple(range(len(perm))) else x


def _unary(x, names, out_names):
  x, names = _take_diagonals(x, names)
  x, names = _sum_out(x, names, set(out_names))
  return _to_order(x, names, out_names)


def _binary(lhs, lhs_names, rhs, rhs_names, out_names, kw):
  lhs, lhs_names = _take_diagonals(lhs, lhs_names)
  rhs, rhs_names = _take_diagonals(rhs, rhs_names)
  # Indices of one operand that appear nowhere else are summed out first.
  lhs, lhs_names = _sum_out(lhs, lhs_names, set(rhs_names) | set(out_names))
  rhs, rhs_names = _sum_out(rhs, rhs_names, set(lhs_names) | set(out_names))
  shared = [c for c in lhs_names if c in rhs_names]
  batch = [c for c in shared if c in out_names]
  contract = [c for c in shared if c not in out_names]
  # A size-1 axis against a larger one (ellipsis broadcasting) is broadcast first.
  lhs = _broadcast_shared(lhs, lhs_names, rhs, rhs_names, shared)
  rhs = _broadcast_shared(rhs, rhs_names, lhs, lhs_names, shared)
  free = lambda names: "".join(c for c in names if c not in shared)  # noqa: E731
  if ("".join(batch) + free(lhs_names) + free(rhs_names) != out_names and
      "".join(batch) + free(rhs_names) + free(lhs_names) == out_names):
    # The operands the other way round give the output order with no transpose (as
    # JAX's einsum; the rounding of each element then matches JAX's too).
    lhs, lhs_names, rhs, rhs_names = rhs, rhs_names, lhs, lhs_names
    shared = [c for c in lhs_names if c in rhs_names]
  dims = ((tuple(lhs_names.index(c) for c in contract),
           tuple(rhs_names.index(c) for c in contract)),
          (tuple(lhs_names.index(c) for c in batch),
           tuple(rhs_names.index(c) for c in batch)))
  out = lax_dot.dot_general(lhs, rhs, dims, **kw)
  names = ("".join(batch) + "".join(c for c in lhs_names if c not in shared)
           + "".join(c for c in rhs_names if c not in shared))
  return _to_order(out, names, out_names)


def _broadcast_shared(x, names, other, other_names, shared):
  s, o = util.shape(x), util.shape(other)
  target = list(s)
  for c in shared:
    i, j = names.index(c), other_names.index(c)
    if s[i] == 1 and o[j] != 1:
      target[i] = o[j]
  return x if tuple(target) == s else util.broadcast_to(x, tuple(target))
