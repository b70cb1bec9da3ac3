"""The sharding-in-types rules (sharding_explicit.py) of the indexing, windowed and
convolution families: slicing, padding, `gather` and the scatters,
`dynamic_update_slice`, `top_k`, `conv_general_dilated`, `bitcast_convert_type`,
`split`/`stack`/`unstack`, `reduce_window*` and the max-pool gradient's
`select_and_*`. `RULES` maps primitive names to them; `sharding_explicit.install` adds
it to its table. Each rule takes (primitive, operand avals, operand specs (None:
untyped), params[, result avals]) and gives one spec per result, as JAX's rules do."""
from tracejax._src.sharding_explicit import (ShardedShapedArray, ShardingTypeError, _full,
                                             _merge, _size_of, _typed_str)

def _entry_fmt(e):
  return e if isinstance(e, str) else repr(tuple(e))


def _varying_out_shape(name, a, spec, out_shape):
  """The operand's spec, kept by an operation that changes axis sizes (slicing, padding,
  windows): an axis whose size changes must stay divisible by its mesh axes (JAX shards
  nothing unevenly at the top level either)."""
  for n_in, n_out, e in zip(a.shape, out_shape, spec):
    if n_in != n_out and e is not None and n_out % _size_of(a.mesh, e):
      raise ShardingTypeError(
          f"{name} on sharded dims where out dim ({n_out}) is not divisible by mesh axes "
          f"({_size_of(a.mesh, e)}) with spec ({_entry_fmt(e)}) is not implemented. Got "
          f"input type={a.str_short(True)} and output shape={tuple(int(d) for d in out_shape)}")
  return spec


def _keep_shape_checked(name):
  def rule(prim, avals, specs, params, outs):
    s = specs[0] or (None,) * len(avals[0].shape)
    if type(avals[0]) is not ShardedShapedArray:
      return [s] * len(outs)
    return [_varying_out_shape(name, avals[0], s, o.shape) for o in outs]
  rule.with_outs = True
  return rule


def _gather(prim, avals, specs, params, outs):
  """JAX's gather rule: a dimension the index vector slices into must be taken whole or
  be unsplit; batched dimensions must agree; the indices are split along their batch
  dimensions only. The result's offset dimensions take the operand's spec, the others
  the indices'."""
  op, idx = avals[0], avals[1]
  dn, sizes = params["dimension_numbers"], params["slice_sizes"]
  os, ispec = _full(op, specs[0]), list(_full(idx, specs[1]))
  nout = len(outs[0].shape)
  if all(e is None for e in os) and all(e is None for e in ispec):
    return [(None,) * nout]
  ok = all(sizes[i] == op.shape[i] or os[i] is None for i in dn.start_index_map)
  ok = ok and all(ispec[i] == os[o] or os[o] is None or ispec[i] is None
                  for o, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
  ok = ok and all(e is None for i, e in enumerate(ispec)
                  if i not in dn.start_indices_batching_dims)
  if not ok:
    raise ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={op!r}, indices={idx!r}")
  for o, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
    ispec[i] = ispec[i] or os[o]
  window = iter([i for i in range(len(sizes)) if i not in dn.collapsed_slice_dims and
                 i not in dn.operand_batching_dims])
  rest = iter(ispec)
  return [tuple(os[next(window)] if d in dn.offset_dims else next(rest)
                for d in range(nout))]


_gather.with_outs = True


def _scatter(prim, avals, specs, params):
  """JAX's scatter rule (gather's, inverted): batch dimensions of operand, indices and
  updates agree; a window dimension the updates cover whole has one spec on both sides,
  one they update in part is unsplit on both; the dimensions the index vector positions
  into are unsplit in the operand, and the query dimensions of indices and updates are
  unsplit. The result takes the operand's spec, filled in from the others'."""
  op, idx, upd = avals[:3]
  dn = params["dimension_numbers"]
  os, ispec, us = _full(op, specs[0]), _full(idx, specs[1]), _full(upd, specs[2])
  if all(e is None for e in os + ispec + us):
    return [(None,) * len(op.shape)]
  ivd = len(idx.shape) - 1
  in_upd = list(range(ivd))
  for w in dn.update_window_dims:
    in_upd.insert(w, None)
  upd_batch = tuple(in_upd.index(i) for i in dn.scatter_indices_batching_dims)
  op_window = [i for i in range(len(op.shape)) if i not in dn.inserted_window_dims and
               i not in dn.operand_batching_dims]
  ok = all(len({e for e in t if e is not None}) <= 1 for t in zip(
      (os[d] for d in dn.operand_batching_dims),
      (ispec[d] for d in dn.scatter_indices_batching_dims), (us[d] for d in upd_batch)))
  ok = ok and all((upd.shape[u] == op.shape[o] and us[u] == os[o]) or
                  (us[u] is None and os[o] is None)
                  for u, o in zip(dn.update_window_dims, op_window))
  ok = ok and all(os[i] is None for i in dn.inserted_window_dims)
  ok = ok and all(e is None for i, e in enumerate(us)
                  if i not in upd_batch and i not in dn.update_window_dims)
  ok = ok and all(e is None for i, e in enumerate(ispec[:ivd])
                  if i not in dn.scatter_indices_batching_dims)
  ok = ok and ispec[ivd] is None
  if not ok:
    raise ShardingTypeError(
        "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
        "the scatter update as out sharding could not be resolved unambiguously (or would "
        f"require collectives on inputs). Got operand={op!r}, indices={idx!r}, "
        f"updates={upd!r}")
  out = list(os)
  for o, i, u in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, upd_batch):
    if out[o] is None:
      out[o] = ispec[i] or us[u]
  for u, o in zip(dn.update_window_dims, op_window):
    if out[o] is None:
      out[o] = us[u]
  return [tuple(out)]


def _dynamic_update_slice(prim, avals, specs, params):
  op, upd = avals[0], avals[1]
  same = (type(op) is ShardedShapedArray) == (type(upd) is ShardedShapedArray) and (
      type(op) is not ShardedShapedArray or (op.mesh == upd.mesh and op.spec == upd.spec))
  if not same:
    raise ShardingTypeError(
        "dynamic_update_slice operand sharding must be equal to update sharding, got "
        f"operand sharding {_typed_str(op)} and update sharding {_typed_str(upd)}.")
  return [_full(op, specs[0])]


def _top_k(prim, avals, specs, params):
  a = avals[0]
  s = _full(a, specs[0])
  if s and s[-1] is not None:
    raise ShardingTypeError(
        "The input should be unsharded over the axis along which to compute the top_k "
        f"values. Got input type={a} and axis={len(a.shape) - 1}")
  return [s, s]


def _conv(prim, avals, specs, params, outs):
  """JAX's rule: the kernel unsplit and the input's feature dimension unsplit; the result
  is then laid out as the input (its batch, and spatial dimensions that stay divisible)."""
  lhs = avals[0]
  ls = _full(lhs, specs[0])
  rs = specs[1]
  feature = params["dimension_numbers"].lhs_spec[1]
  if (rs is not None and any(e is not None for e in rs)) or ls[feature] is not None:
    raise ShardingTypeError("Please specify the output sharding via `out_sharding` "
                            "parameter of `conv_general_dilated`")
  if type(lhs) is not ShardedShapedArray:
    return [ls]
  return [_varying_out_shape("conv_general_dilated", lhs, ls, outs[0].shape)]


_conv.with_outs = True


def _bitcast(prim, avals, specs, params, outs):
  a = avals[0]
  s = _full(a, specs[0])
  nd = len(outs[0].shape)
  return [s + (None,) if nd > len(s) else s[:nd]]


_bitcast.with_outs = True


def _split(prim, avals, specs, params, outs):
  return _keep_shape_checked("split")(prim, avals, specs, params, outs)


_split.with_outs = True


def _stack(prim, avals, specs, params):
  nd = len(avals[0].shape)
  merged = _merge(prim.name, [_full(a, s) for a, s in zip(avals, specs)], nd)
  ax = params["axis"]
  return [merged[:ax] + (None,) + merged[ax:]]


def _unstack(prim, avals, specs, params):
  s, ax = _full(avals[0], specs[0]), params["axis"]
  if s[ax] is not None:
    raise ShardingTypeError(f"unstack of an axis split over mesh axes {_entry_fmt(s[ax])} "
                            f"is not supported. Got input type={avals[0]} and axis={ax}")
  return [s[:ax] + s[ax + 1:]] * avals[0].shape[ax]


def _reduce_window(prim, avals, specs, params, outs):
  """The variadic `reduce_window` (operands, then their init values): each result is
  laid out as its operand, an axis whose size changes staying divisible."""
  n = len(avals) // 2
  res = []
  for a, s, o in zip(avals[:n], specs[:n], outs):
    s = _full(a, s)
    res.append(_varying_out_shape("reduce_window", a, s, o.shape)
               if type(a) is ShardedShapedArray else s)
  return res


_reduce_window.with_outs = True


def _select_and_scatter_add(prim, avals, specs, params):
  """The max-pool gradient (source, operand): the result has the operand's shape, and
  its sharding, as in JAX."""
  return [_full(avals[1], specs[1])]


def _select_and_scatter(prim, avals, specs, params):
  """`select_and_scatter` (operand, source, init): the operand's sharding."""
  return [_full(avals[0], specs[0])]


def _select_and_gather_add(prim, avals, specs, params, outs):
  """The max-pool JVP (tangents, operand): the tangents must be laid out as the operand
  (as in JAX; an untyped one is taken as laid out so), and the result is laid out as
  the windowed reduction of the operand."""
  t, x = avals
  if type(t) is ShardedShapedArray and type(x) is ShardedShapedArray and \
      (t.mesh != x.mesh or t.spec != x.spec):
    raise ShardingTypeError(
        "select_and_gather_add tangents and operand shardings must match, got "
        f"{t.sharding!r} and {x.sharding!r}.")
  a, s = (x, specs[1]) if type(x) is ShardedShapedArray else (t, specs[0])
  s = _full(a, s)
  if type(a) is not ShardedShapedArray:
    return [s]
  return [_varying_out_shape("select_and_gather_add", a, s, outs[0].shape)]


_select_and_gather_add.with_outs = True


RULES = {
    # JAX keeps the operand's spec through slicing and padding (an axis whose size
    # changes must stay divisible).
    "slice": _keep_shape_checked("slicing"), "pad": _keep_shape_checked("padding"),
    "dynamic_slice": _keep_shape_checked("dynamic_slice"),
    "gather": _gather, "dynamic_update_slice": _dynamic_update_slice,
    "top_k": _top_k, "conv_general_dilated": _conv,
    "bitcast_convert_type": _bitcast, "split": _split, "stack": _stack,
    "unstack": _unstack,
    "reduce_window_sum": _keep_shape_checked("reduce_window"),
    "reduce_window_max": _keep_shape_checked("reduce_window"),
    "reduce_window_min": _keep_shape_checked("reduce_window"),
    "reduce_window": _reduce_window,
    "select_and_scatter_add": _select_and_scatter_add,
    "select_and_scatter": _select_and_scatter,
    "select_and_gather_add": _select_and_gather_add,
    "scatter": _scatter,
}
RULES.update({name: _scatter for op in ("add", "sub", "mul", "min", "max", "apply")
              for name in (f"scatter-{op}", f"scatter_{op}")})
