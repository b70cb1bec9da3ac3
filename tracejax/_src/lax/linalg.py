"""Linear algebra primitives: cholesky, triangular_solve, lu (with
lu_pivots_to_permutation), qr, eigh, svd, eig and schur, plus lu_solve built on
them.

Every primitive works on the last two dimensions of its operands and batches
over the leading ones, so vmap only moves the mapped axis to the front.

Where StableHLO has an op (cholesky, triangular_solve) it is the lowering on
every platform. The other decompositions lower, on CPU, to jaxlib's LAPACK FFI
kernels (`lapack_{s,d,c,z}<routine>_ffi`): typed FFI custom calls with
`api_version = 4`, attributes as ui8 ASCII characters in a dict
`backend_config`, matrices in column-major layout (`[1, 2, 0]` with one batch
dimension), one int32 `info` per matrix. The kernels are registered on first
use through `backend.register_lapack()` (the backend is the only module that
touches jaxlib). A kernel that reports failure gives NaNs, as JAX does: a
compiled program cannot raise.

The derivative rules are JAX's, with the papers they come from. They are
written with lax ops only (this layer sits below jax.numpy), through the small
matrix helpers that follow.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.core.trace import set_current_trace
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise as ew
from tracejax._src.lax import reductions
from tracejax._src.lax import slicing
from tracejax._src.lax import special
from tracejax._src.lax import structural
from tracejax._src.lax import utils
from tracejax._src.lax.dot import dot_general
from tracejax._src.lax.gather import GatherDimensionNumbers, gather
from tracejax._src.lax.linalg_enums import (EigImplementation, EighImplementation,
                                           SvdAlgorithm)
from tracejax._src.lax.structural import _aval, _shape
from tracejax._src.lax.utils import standard_primitive
from tracejax._src.runtime import backend

# What `tracejax.lax` (and a `lax.linalg` module) re-exports: JAX's `lax.linalg` names.
# `lu_solve` and `symmetrize` are helpers for jax.numpy/jax.scipy, importable from here.
__all__ = [
    "cholesky", "cholesky_p", "eig", "eig_p", "eigh", "eigh_p", "lu", "lu_p",
    "lu_pivots_to_permutation", "lu_pivots_to_permutation_p", "qr", "qr_p", "schur",
    "schur_p", "svd", "svd_p", "triangular_solve", "triangular_solve_p",
    "EigImplementation", "EighImplementation", "SvdAlgorithm",
]


# =============================================================================
# Helpers: argument checks, matrix algebra with lax ops, LAPACK custom calls
# =============================================================================

_lapack_dtypes = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                  np.dtype(np.complex128))


def _check_matrix(name, aval, square=False):
  """ValueError unless `aval` is a (batch of) matrix, square if asked."""
  if aval.ndim < 2:
    raise ValueError(f"{name} requires an argument with at least 2 dimensions (a batch "
                     f"of matrices [..., m, n]), got shape {aval.shape}.")
  if square and aval.shape[-1] != aval.shape[-2]:
    raise ValueError(f"{name} requires square matrices [..., n, n], got shape "
                     f"{aval.shape}.")


def _check_lapack_dtype(name, aval, empty_ok=False):
  # `empty_ok`: JAX's SVD and QR answer half-precision matrices with no rows or no
  # columns without LAPACK (an empty batch of nonempty matrices still reaches it).
  if empty_ok and 0 in aval.shape[-2:] and dtypes.issubdtype(aval.dtype, np.inexact):
    return
  if aval.dtype not in _lapack_dtypes:
    raise TypeError(f"{name} requires a float32, float64, complex64 or complex128 "
                    f"operand, got {aval.dtype.name}. (jax.numpy.linalg converts "
                    "integer inputs to floats; lax does not.)")


def _check_inexact_dtype(name, aval):
  if not dtypes.issubdtype(aval.dtype, np.inexact):
    raise TypeError(f"{name} requires a floating-point or complex operand, got "
                    f"{aval.dtype.name}.")


def _dtype(x):
  return _aval(x).dtype


def _is_complex(x):
  return dtypes.issubdtype(_dtype(x), np.complexfloating)


def _T(x):
  nd = np.ndim(x)
  return structural.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _conj(x):
  # Built from real/imag rather than lax.conj, whose abstract eval gives complex64 for
  # a complex128 operand (a bug of elementwise.py, reported).
  if not _is_complex(x):
    return x
  return ew.complex(ew.real(x), ew.neg(ew.imag(x)))


def _H(x):
  return _conj(_T(x))


def symmetrize(x):
  """(x + x^H) / 2: the Hermitian (symmetric) part of a batch of square matrices."""
  return ew.div(ew.add(x, _H(x)), 2.0)  # (a Python float: a weak x stays weak, as JAX's)


def _hermitian_from_triangle(x, lower):
  """The Hermitian matrix whose `lower` (or upper) triangle is that of `x`: what a
  decomposition reading only that triangle sees."""
  if lower:
    return ew.add(_tril(x), _H(_tril(x, -1)))
  return ew.add(_triu(x), _H(_triu(x, 1)))


def _matmul(a, b):
  """`a @ b` for matrices with equal leading (batch) dimensions."""
  nd = np.ndim(a)
  batch = tuple(range(nd - 2))
  return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def _scalar(value, dtype):
  return np.array(value, dtype)


def _tri_mask(shape, k, lower):
  """True on and below (lower) or on and above (upper) diagonal `k` of the last two dims."""
  nd = len(shape)
  rows = structural.broadcasted_iota(np.int32, shape, nd - 2)
  cols = structural.broadcasted_iota(np.int32, shape, nd - 1)
  diff = ew.sub(cols, rows)
  return ew.le(diff, np.int32(k)) if lower else ew.ge(diff, np.int32(k))


def _zeros(shape, dtype):
  return structural.full(shape, _scalar(0, dtype))


def _tril(x, k=0):
  shape = _shape(x)
  return ew.select(_tri_mask(shape, k, True), x, _zeros(shape, _dtype(x)))


def _triu(x, k=0):
  shape = _shape(x)
  return ew.select(_tri_mask(shape, k, False), x, _zeros(shape, _dtype(x)))


def _eye(shape, dtype):
  """Identity in the last two dimensions (rectangular allowed), broadcast over the rest."""
  nd = len(shape)
  rows = structural.broadcasted_iota(np.int32, shape, nd - 2)
  cols = structural.broadcasted_iota(np.int32, shape, nd - 1)
  return ew.convert_element_type(ew.eq(rows, cols), dtype)


def _diagonal(x):
  """The diagonal of square matrices [..., n, n] -> [..., n]. A select, not a product
  with the identity, so inf/nan off the diagonal do not leak into it."""
  shape = _shape(x)
  nd = len(shape)
  on_diag = ew.eq(structural.broadcasted_iota(np.int32, shape, nd - 2),
                  structural.broadcasted_iota(np.int32, shape, nd - 1))
  return reductions.reduce_sum(ew.select(on_diag, x, _zeros(shape, _dtype(x))), (nd - 1,))


def _as_dtype(x, dtype):
  return x if _dtype(x) == np.dtype(dtype) else ew.convert_element_type(x, dtype)


def _real(x):
  return ew.real(x) if _is_complex(x) else x


def _rows_of(v, m):
  """v [..., n] -> [..., m, n] with v in every row (v[..., None, :])."""
  shape = _shape(v)
  nb = len(shape) - 1
  return structural.broadcast_in_dim(v, shape[:-1] + (m, shape[-1]),
                                     tuple(range(nb)) + (nb + 1,))


def _cols_of(v, n):
  """v [..., m] -> [..., m, n] with v in every column (v[..., :, None])."""
  shape = _shape(v)
  nb = len(shape) - 1
  return structural.broadcast_in_dim(v, shape + (n,), tuple(range(nb + 1)))


def _slice_last2(x, rows, cols):
  """x[..., rows[0]:rows[1], cols[0]:cols[1]]."""
  shape = _shape(x)
  nb = len(shape) - 2
  return slicing.slice(x, (0,) * nb + (rows[0], cols[0]),
                       shape[:-2] + (rows[1], cols[1]))


def _permute_rows(x, perm):
  """x[..., perm[..., i], :] for every row i: a gather with the leading dims batched."""
  shape = _shape(x)
  if 0 in shape:
    return x  # nothing to move (and a gather cannot take a slice of an empty axis)
  nb = len(shape) - 2
  idx = structural.expand_dims(perm, (nb + 1,))
  dnums = GatherDimensionNumbers(
      offset_dims=(nb + 1,), collapsed_slice_dims=(nb,), start_index_map=(nb,),
      operand_batching_dims=tuple(range(nb)), start_indices_batching_dims=tuple(range(nb)))
  return gather(x, idx, dnums, (1,) * (nb + 1) + (shape[-1],))


def _inverse_permutation(perm):
  """inv with inv[perm[i]] = i, from a one-hot comparison (int work, m^2 per matrix)."""
  shape = _shape(perm)
  m = shape[-1]
  nb = len(shape) - 1
  sq = shape + (m,)
  hit = ew.eq(structural.broadcast_in_dim(perm, sq, tuple(range(nb + 1))),
              structural.broadcasted_iota(np.int32, sq, nb + 1))      # [.., i, j]: perm[i]==j
  i = structural.broadcasted_iota(np.int32, sq, nb)
  return reductions.reduce_sum(ew.select(hit, i, _zeros(sq, np.int32)), (nb,))


def _move_to_front(args, dims):
  (x,), (d,) = args, dims
  return utils.moveaxis(x, d, 0)


def _unary_batcher(prim):
  """Batching for the one-operand decompositions: the mapped axis becomes a leading
  batch dimension, which every output then has first."""
  def rule(args, dims, **params):
    out = prim.bind(_move_to_front(args, dims), **params)
    return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
  batching.primitive_batchers[prim] = rule


# ---- lowering: lax ops emitted in place, and the LAPACK custom calls ----

class _Emit:
  """Lax ops applied to MLIR values inside a lowering rule (special.py's _EmitTrace:
  each primitive is lowered the moment it is applied)."""

  def __init__(self, ctx):
    self.trace = special._EmitTrace(ctx.module_context)

  def wrap(self, value, aval):
    return special._EmitTracer(self.trace, value, aval)

  def value(self, x):
    return self.trace.value(x)[0]

  def __enter__(self):
    self._cm = set_current_trace(self.trace)
    self._cm.__enter__()
    return self

  def __exit__(self, *exc):
    return self._cm.__exit__(*exc)


def _column_major(ndim):
  return (ndim - 2, ndim - 1) + tuple(range(ndim - 3, -1, -1))


def _row_major(ndim):
  return tuple(range(ndim - 1, -1, -1))


def _layout_attr(layout):
  return ir.DenseIntElementsAttr.get(np.asarray(layout, np.int64).reshape(-1),
                                     type=ir.IndexType.get())


def _lapack_target(routine, dtype):
  """jaxlib's FFI target: 'getrf' -> lapack_sgetrf_ffi (s/d/c/z from the dtype)."""
  return f"lapack_{'sdcz'[_lapack_dtypes.index(np.dtype(dtype))]}{routine}_ffi"


def _lapack_call(ctx, target, operands, avals_in, avals_out, attrs=None, aliases=None):
  """Emit the custom call of a LAPACK FFI kernel; returns its results.

  Arrays of the operand's full rank (the matrices) are column-major, as LAPACK
  wants them; vectors and `info` keep the default row-major layout. `attrs` maps
  attribute names to one ASCII character each (LAPACK's job/uplo letters, sent
  as ui8), a bool (sent as a bool, e.g. ormqr's `left`) or a Python int (sent as
  i32, e.g. gehrd's `low` and `high`), as jaxlib's kernels decode them;
  `aliases` maps output index -> operand index (the kernel overwrites in place).
  """
  if ctx.module_context.platform != "cpu":
    raise NotImplementedError(f"{ctx.primitive.name} is only implemented on CPU (LAPACK); "
                              f"no lowering for platform {ctx.module_context.platform}.")
  backend.register_lapack()  # jaxlib's LAPACK targets are not registered by default
  full_rank = max(a.ndim for a in avals_in)

  def layout(a):
    return _column_major(a.ndim) if a.ndim == full_rank else _row_major(a.ndim)

  def attr(v):
    if isinstance(v, str):
      return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(v))
    if isinstance(v, (bool, np.bool_)):
      return ir.BoolAttr.get(bool(v))
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))

  config = ir.DictAttr.get({k: attr(v) for k, v in (attrs or {}).items()})
  multi = len(avals_out) > 1
  alias_attrs = [hlo.OutputOperandAlias.get([o] if multi else [], i, [])
                 for o, i in (aliases or {}).items()]
  op = hlo.CustomCallOp(
      [mlir.aval_to_ir_type(a) for a in avals_out], list(operands), target,
      api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
      backend_config=config,
      operand_layouts=ir.ArrayAttr.get([_layout_attr(layout(a)) for a in avals_in]),
      result_layouts=ir.ArrayAttr.get([_layout_attr(layout(a)) for a in avals_out]),
      output_operand_aliases=ir.ArrayAttr.get(alias_attrs) if alias_attrs else None)
  return list(op.results)


def _nan_unless(ok, x):
  """`x` where its matrix's LAPACK call succeeded (`ok`, one bool per matrix), else NaN."""
  shape, dt = _shape(x), _dtype(x)
  nan = np.array(np.nan * (1 + 1j) if dtypes.issubdtype(dt, np.complexfloating) else np.nan,
                 dt)
  ok = structural.broadcast_in_dim(ok, shape, tuple(range(np.ndim(ok))))
  return ew.select(ok, x, structural.full(shape, nan))


def _info_ok(info):
  return ew.eq(info, np.int32(0))


def _empty_outputs(ctx):
  """Outputs for an operand with no elements (LAPACK is not called): identity-like
  matrices, iota pivots/permutations (no swaps), zero vectors."""
  em = _Emit(ctx)
  outs = []
  with em:
    for a in ctx.avals_out:
      if a.ndim >= 2 and a.ndim == ctx.avals_in[0].ndim:
        outs.append(_eye(a.shape, a.dtype))
      elif dtypes.issubdtype(a.dtype, np.integer):
        outs.append(structural.broadcasted_iota(a.dtype, a.shape, a.ndim - 1))
      else:
        outs.append(_zeros(a.shape, a.dtype))
  return [em.value(o) for o in outs]


def _info_aval(aval):
  return aval.update(shape=aval.shape[:-2], dtype=np.dtype(np.int32))


# =============================================================================
# cholesky
# =============================================================================

def cholesky(x, symmetrize_input=True):
  """Cholesky decomposition A = L L^H of Hermitian (symmetric) positive-definite matrices.

  `x` is a batch of square matrices [..., n, n]. With `symmetrize_input`, `x` is
  first replaced by (x + x^H) / 2; otherwise only its lower triangle is read.
  Returns the lower-triangular L (zeros above the diagonal), with NaNs on and below
  the diagonal where the decomposition fails (a matrix that is not positive definite).
  """
  _check_matrix("cholesky", _aval(x), square=True)
  if symmetrize_input:
    x = symmetrize(x)
  return cholesky_p.bind(x)


def _cholesky_shape_rule(x):
  _check_matrix("cholesky", x, square=True)
  return x.shape


def _cholesky_dtype_rule(x):
  # Like LAPACK's potrf (what JAX calls on CPU), no half precision, even empty.
  _check_lapack_dtype("cholesky", x)
  return x.dtype


def _cholesky_jvp(primals, tangents):
  # Forward-mode rule of https://arxiv.org/pdf/1602.07527.pdf:
  # dL = L phi(L^-1 dA L^-H), phi taking the lower triangle with a halved diagonal.
  x, = primals
  sigma_dot, = tangents
  L = cholesky_p.bind(x)
  dt = _dtype(L)
  # Only the lower triangle of x is read: the tangent that matters is the Hermitian
  # matrix made of it (the same tangent when x was symmetrized).
  sigma_dot = _hermitian_from_triangle(sigma_dot, lower=True)
  tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True,
                         conjugate_a=True, lower=True)
  inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
  shape = _shape(L)
  phi = ew.div(_tril(inner), ew.add(_eye(shape, dt), _scalar(1, dt)))
  return L, _matmul(L, phi)


def _cholesky_lowering(ctx, x):
  aval, = ctx.avals_in
  l = hlo.cholesky(x, lower=True)
  # XLA leaves the upper triangle unspecified: the primitive promises zeros there. Where
  # XLA finds a pivot <= 0 (not positive definite) its lower triangle is all NaN; NaN
  # or inf entries just propagate. Both are JAX 0.10.2's results (fuzzer seed 201).
  with _Emit(ctx) as em:
    out = _tril(em.wrap(l, aval))
  return [em.value(out)]


cholesky_p = standard_primitive(_cholesky_shape_rule, _cholesky_dtype_rule, "cholesky")
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
_unary_batcher(cholesky_p)
mlir.register_lowering(cholesky_p, _cholesky_lowering)


# =============================================================================
# triangular_solve
# =============================================================================

def triangular_solve(a, b, left_side=False, lower=False, transpose_a=False,
                     conjugate_a=False, unit_diagonal=False):
  """Solves op(A) X = B (`left_side`) or X op(A) = B for X, with A triangular.

  `a` is a batch of square matrices [..., m, m] of which only the `lower` (or
  upper) triangle is read; op(A) transposes it if `transpose_a` and conjugates
  it if `conjugate_a` (a no-op for real A); `unit_diagonal` assumes ones on the
  diagonal without reading it. `b` is [..., m, n] (`left_side`) or [..., n, m],
  or one dimension less, a vector, which is then solved as one column (row).
  """
  a_aval, b_aval = _aval(a), _aval(b)
  conjugate_a = bool(conjugate_a) and dtypes.issubdtype(a_aval.dtype, np.complexfloating)
  singleton = b_aval.ndim == a_aval.ndim - 1
  if singleton:
    b = structural.expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
  out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                unit_diagonal=bool(unit_diagonal))
  if singleton:
    out = structural.squeeze(out, (-1 if left_side else -2,))
  return out


def _triangular_solve_shape_rule(a, b, *, left_side, **_):
  if a.ndim < 2:
    raise TypeError(f"triangular_solve requires a.ndim to be at least 2, got {a.ndim}.")
  if b.ndim < 2:
    raise TypeError(f"triangular_solve requires b.ndim to be at least 2, got {b.ndim}.")
  if a.shape[-1] != a.shape[-2]:
    raise TypeError("triangular_solve requires the last two dimensions of a to be equal "
                    f"in size, got a.shape of {a.shape}.")
  if a.shape[:-2] != b.shape[:-2]:
    raise TypeError("triangular_solve requires both arguments to have the same number of "
                    f"dimensions and equal batch dimensions, got {a.shape} and {b.shape}.")
  common = -2 if left_side else -1
  if a.shape[-1] != b.shape[common]:
    raise TypeError("Incompatible shapes for arguments to triangular_solve: "
                    f"{a.shape} and {b.shape} (left_side={left_side}).")
  return b.shape


def _triangular_solve_dtype_rule(a, b, **_):
  _check_inexact_dtype("triangular_solve", a)
  utils.check_same_dtypes("triangular_solve", a, b)
  return b.dtype


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  # d(A^-1 B) = -A^-1 dA A^-1 B = -A^-1 dA X (and X dA A^-1 on the right), with dA
  # restricted to the triangle that is read.
  m, n = _shape(b)[-2:]
  k = 1 if unit_diagonal else 0
  g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
  g_a = ew.neg(g_a)
  g_a = _T(g_a) if transpose_a else g_a
  g_a = _conj(g_a) if conjugate_a else g_a

  def a_inverse(rhs):
    return triangular_solve(a, rhs, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal)

  # A triangular solve costs about as much as a product: take the cheaper order.
  if left_side:
    return a_inverse(_matmul(g_a, ans)) if m > n else _matmul(a_inverse(g_a), ans)
  return a_inverse(_matmul(ans, g_a)) if m < n else _matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
  return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  # Linear in b only (like div in its numerator): the cotangent of b solves the
  # transposed system. The conjugation stays: JAX's cotangents are not conjugated.
  assert not ad.is_undefined_primal(a) and ad.is_undefined_primal(b)
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                 transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                 unit_diagonal=unit_diagonal)
  return [None, ct_b]


def _triangular_solve_batch(args, dims, *, left_side, **params):
  a, b = args
  da, db = dims
  if da is None:
    # One A for every problem: fold the mapped axis of b into its free dimension
    # (columns for a left solve, rows for a right one) and do a single solve.
    if left_side:
      b = utils.moveaxis(b, db, -1)
      s = _shape(b)
      flat = structural.reshape(b, s[:-2] + (s[-2] * s[-1],))
      out = triangular_solve_p.bind(a, flat, left_side=left_side, **params)
      return structural.reshape(out, s), len(s) - 1
    b = utils.moveaxis(b, db, -2)
    s = _shape(b)
    flat = structural.reshape(b, s[:-3] + (s[-3] * s[-2], s[-1]))
    out = triangular_solve_p.bind(a, flat, left_side=left_side, **params)
    return structural.reshape(out, s), len(s) - 2
  size = next(_shape(x)[d] for x, d in zip(args, dims) if d is not None)
  a = utils.bdim_at_front(a, da, size)
  b = utils.bdim_at_front(b, db, size)
  return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


def _triangular_solve_lowering(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
  if conjugate_a and not transpose_a:
    # StableHLO only conjugates together with a transpose (ADJOINT): conjugate first.
    a = hlo.complex(hlo.real(a), hlo.negate(hlo.imag(a)))
    conjugate_a = False
  if not transpose_a:
    kind = "NO_TRANSPOSE"
  else:
    kind = "ADJOINT" if conjugate_a else "TRANSPOSE"
  return [hlo.triangular_solve(a, b, left_side, lower, unit_diagonal,
                               hlo.TransposeAttr.get(kind))]


def _triangular_solve_cpu_lowering(ctx, a, b, *, left_side, lower, transpose_a,
                                   conjugate_a, unit_diagonal):
  # On CPU, LAPACK's trsm (as JAX): plain substitution. XLA's own expander inverts
  # diagonal blocks first, so an infinite pivot gives NaNs where substitution gives
  # 0 (e.g. in inv of a matrix holding inf).
  a_aval, b_aval = ctx.avals_in
  if a_aval.dtype not in _lapack_dtypes:
    return _triangular_solve_lowering(ctx, a, b, left_side=left_side, lower=lower,
                                      transpose_a=transpose_a, conjugate_a=conjugate_a,
                                      unit_diagonal=unit_diagonal)
  if 0 in a_aval.shape or 0 in b_aval.shape:
    return [b]  # nothing to solve (the result has no elements or b's shape)
  if conjugate_a and not transpose_a:
    a = hlo.complex(hlo.real(a), hlo.negate(hlo.imag(a)))
    conjugate_a = False
  trans = ("C" if conjugate_a else "T") if transpose_a else "N"
  out, = _lapack_call(ctx, _lapack_target("trsm", a_aval.dtype), [a, b], [a_aval, b_aval],
                      [ctx.avals_out[0]], attrs={"side": "L" if left_side else "R",
                                                 "uplo": "L" if lower else "U",
                                                 "trans_x": trans,
                                                 "diag": "U" if unit_diagonal else "N"},
                      aliases={0: 1})
  return [out]


triangular_solve_p = standard_primitive(_triangular_solve_shape_rule,
                                        _triangular_solve_dtype_rule, "triangular_solve")
ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
batching.primitive_batchers[triangular_solve_p] = _triangular_solve_batch
mlir.register_lowering(triangular_solve_p, _triangular_solve_lowering)
mlir.register_lowering(triangular_solve_p, _triangular_solve_cpu_lowering, platform="cpu")


# =============================================================================
# lu_pivots_to_permutation
# =============================================================================

def lu_pivots_to_permutation(pivots, permutation_size):
  """The permutation that the row swaps `pivots` (int32 [..., k], 0-based, as `lu`
  returns them: row i was swapped with row pivots[i], in order) apply to
  `permutation_size` rows: int32 [..., permutation_size]."""
  return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def _lu_pivots_to_permutation_shape_rule(pivots, *, permutation_size):
  if pivots.ndim < 1:
    raise ValueError("lu_pivots_to_permutation requires pivots of rank >= 1, got shape "
                     f"{pivots.shape}.")
  if permutation_size < pivots.shape[-1]:
    raise ValueError(f"lu_pivots_to_permutation: permutation_size {permutation_size} must "
                     f"be at least the number of pivots, got pivots of shape "
                     f"{pivots.shape}.")
  return pivots.shape[:-1] + (permutation_size,)


def _lu_pivots_to_permutation_dtype_rule(pivots, *, permutation_size):
  if pivots.dtype != np.int32:
    raise TypeError("lu_pivots_to_permutation requires int32 pivots, got "
                    f"{pivots.dtype.name}.")
  return pivots.dtype


def _swaps_to_permutation(pivots, m):
  """Under an _Emit: apply the swaps to iota rows, one pivot per iteration of a while
  loop (a sequence of swaps is inherently sequential). Batches are flattened."""
  shape = _shape(pivots)
  batch, k = shape[:-1], shape[-1]
  b = int(np.prod(batch, dtype=np.int64))
  perm = structural.broadcasted_iota(np.int32, (b, m), 1)
  if k == 0 or m == 0 or b == 0:
    return structural.reshape(perm, batch + (m,))
  piv = structural.reshape(pivots, (b, k))
  cols = structural.broadcasted_iota(np.int32, (b, m), 1)
  zero = np.int32(0)

  def cond(i, perm):
    return ew.lt(i, np.int32(k))

  def body(i, perm):
    j = slicing.dynamic_slice(piv, (zero, i), (b, 1))        # the row swapped with i
    x = slicing.dynamic_slice(perm, (zero, i), (b, 1))       # perm[i]
    at_j = ew.eq(cols, structural.broadcast_in_dim(j, (b, m), (0, 1)))
    y = reductions.reduce_sum(ew.select(at_j, perm, _zeros((b, m), np.int32)), (1,))
    perm = slicing.dynamic_update_slice(perm, structural.reshape(y, (b, 1)), (zero, i))
    perm = ew.select(at_j, structural.broadcast_in_dim(x, (b, m), (0, 1)), perm)
    return ew.add(i, np.int32(1)), perm

  _, perm = special._while(cond, body, [np.int32(0), perm])
  return structural.reshape(perm, batch + (m,))


def _lu_pivots_to_permutation_lowering(ctx, pivots, *, permutation_size):
  with _Emit(ctx) as em:
    out = _swaps_to_permutation(em.wrap(pivots, ctx.avals_in[0]), permutation_size)
  return [em.value(out)]


lu_pivots_to_permutation_p = standard_primitive(
    _lu_pivots_to_permutation_shape_rule, _lu_pivots_to_permutation_dtype_rule,
    "lu_pivots_to_permutation")
ad.defjvp_zero(lu_pivots_to_permutation_p)
_unary_batcher(lu_pivots_to_permutation_p)
mlir.register_lowering(lu_pivots_to_permutation_p, _lu_pivots_to_permutation_lowering)


# =============================================================================
# lu
# =============================================================================

def lu(x):
  """LU decomposition with partial pivoting: P A = L U.

  `x` is a batch of matrices [..., m, n]. Returns `(lu, pivots, permutation)`:
  `lu` holds L (unit diagonal, not stored) below the diagonal and U on and
  above it; `pivots` (int32 [..., min(m, n)], 0-based) are the row swaps in
  order; `permutation` (int32 [..., m]) is the same as a permutation, so that
  A[..., permutation, :] == L @ U.
  """
  lu_, pivots, permutation = lu_p.bind(x)
  return lu_, pivots, permutation


def _lu_shape_rule(x):
  _check_matrix("lu", x)
  *batch, m, n = x.shape
  return [x.shape, tuple(batch) + (min(m, n),), tuple(batch) + (m,)]


def _lu_dtype_rule(x):
  _check_lapack_dtype("lu", x)
  return [x.dtype, np.dtype(np.int32), np.dtype(np.int32)]


def _lu_jvp(primals, tangents):
  # Differentiation of Matrix Functionals Using Triangular Factorization (de Hoog,
  # Anderssen, Lukas): with LU = PA, inv(L) dL + dU inv(U) = inv(L) P dA inv(U),
  # so dL = L tril(inv(L) P dA inv(U), -1) and dU = triu(inv(L) P dA inv(U)) U.
  a, = primals
  a_dot, = tangents
  lu_, pivots, permutation = lu_p.bind(a)
  shape = _shape(a)
  batch, (m, n) = shape[:-2], shape[-2:]
  dt = _dtype(a)
  k = min(m, n)
  nd = len(shape)
  zero = _scalar(0, dt)
  x = _permute_rows(a_dot, permutation)

  l_pad = [(0, 0, 0)] * nd
  l_pad[-1] = (0, m - k, 0)
  l = structural.pad(_tril(_slice_last2(lu_, (0, m), (0, k)), -1), zero, l_pad)
  l = ew.add(l, _eye(batch + (m, m), dt))
  u_pad = [(0, 0, 0)] * nd
  u_pad[-2] = (0, n - k, 0)
  u = structural.pad(_triu(_slice_last2(lu_, (0, k), (0, n))), zero, u_pad)
  if n > k:  # a wide matrix: complete U to a square invertible matrix
    u_eye = structural.pad(_eye(batch + (n - k, n - k), dt), zero,
                           [(0, 0, 0)] * (nd - 2) + [(k, 0, 0), (k, 0, 0)])
    u = ew.add(u, u_eye)

  la = triangular_solve(l, x, left_side=True, transpose_a=False, lower=True,
                        unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
  l_dot = _matmul(l, _tril(lau, -1))
  u_dot = _matmul(_triu(lau), u)
  lu_dot = ew.add(l_dot, u_dot)
  return (lu_, pivots, permutation), (lu_dot, ad.zero_tangent_of(_aval(pivots)),
                                      ad.zero_tangent_of(_aval(permutation)))


def _lu_cpu_lowering(ctx, x):
  aval, = ctx.avals_in
  lu_aval, piv_aval, perm_aval = ctx.avals_out
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  lu_, piv, info = _lapack_call(ctx, _lapack_target("getrf", aval.dtype), [x], [aval],
                                [lu_aval, piv_aval, _info_aval(aval)], aliases={0: 0})
  with _Emit(ctx) as em:
    piv = ew.sub(em.wrap(piv, piv_aval), np.int32(1))   # LAPACK pivots are 1-based
    # info > 0 only says U is exactly singular: the factorization is still valid.
    ok = ew.ge(em.wrap(info, _info_aval(aval)), np.int32(0))
    lu_ = _nan_unless(ok, em.wrap(lu_, lu_aval))
    perm = _swaps_to_permutation(piv, aval.shape[-2])
  return [em.value(lu_), em.value(piv), em.value(perm)]


lu_p = standard_primitive(_lu_shape_rule, _lu_dtype_rule, "lu",
                          multiple_results=True)
ad.primitive_jvps[lu_p] = _lu_jvp
_unary_batcher(lu_p)
mlir.register_lowering(lu_p, _lu_cpu_lowering, platform="cpu")


def lu_solve(lu, permutation, b, trans=0):
  """Solve A X = B given `lu(A)`: `lu` [..., m, m] and `permutation` [..., m] from
  `lu`, `b` [..., m, k] with the same leading dimensions. `trans` 0 solves A X = B,
  1 solves A^T X = B and 2 solves A^H X = B. Differentiable in all of lu and b."""
  lu_shape, b_shape = _shape(lu), _shape(b)
  if len(lu_shape) < 2 or lu_shape[-1] != lu_shape[-2]:
    raise ValueError("lu_solve: the last two dimensions of the LU decomposition must be "
                     f"equal, got shape {lu_shape}.")
  if b_shape[:-2] != lu_shape[:-2] or b_shape[-2] != lu_shape[-1]:
    raise ValueError(f"lu_solve: b must have shape [..., m, k] with the batch dimensions "
                     f"of lu {lu_shape}, got {b_shape}.")
  if trans == 0:
    x = _permute_rows(b, permutation)
    x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(lu, x, left_side=True, lower=False)
  if trans in (1, 2):
    conj = trans == 2
    x = triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True,
                         conjugate_a=conj)
    x = triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True,
                         transpose_a=True, conjugate_a=conj)
    return _permute_rows(x, _inverse_permutation(permutation))
  raise ValueError(f"lu_solve: 'trans' must be 0, 1 or 2, got {trans!r}.")


def _solve(a, b):
  """A^-1 B for square A [..., m, m] and B [..., m, k] with equal leading dims."""
  lu_, _, perm = lu(a)
  return lu_solve(lu_, perm, b)


# =============================================================================
# qr
# =============================================================================

def qr(x, full_matrices=True):
  """QR decomposition A = Q R, Q unitary (orthogonal) and R upper triangular.

  `x` is a batch of matrices [..., m, n]. With `full_matrices`, Q is [..., m, m]
  and R [..., m, n]; otherwise Q is [..., m, k] and R [..., k, n], k = min(m, n).
  """
  q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
  return q, r


def _qr_shape_rule(x, *, full_matrices):
  _check_matrix("qr", x)
  *batch, m, n = x.shape
  k = m if full_matrices else min(m, n)
  return [tuple(batch) + (m, k), tuple(batch) + (k, n)]


def _qr_dtype_rule(x, *, full_matrices):
  _check_lapack_dtype("qr", x, empty_ok=True)
  return [x.dtype, x.dtype]


def _qr_jvp_tall(q, r, dx):
  # See j-towns.github.io/papers/qr-derivative.pdf (m >= n, reduced Q).
  dt = _dtype(q)
  dx_rinv = triangular_solve(r, dx)  # a right-side solve: dX R^-1
  qt_dx_rinv = _matmul(_H(q), dx_rinv)
  qt_dx_rinv_lower = _tril(qt_dx_rinv, -1)
  do = ew.sub(qt_dx_rinv_lower, _H(qt_dx_rinv_lower))  # skew-Hermitian
  if _is_complex(q):
    # The diagonal of dO is imaginary for complex inputs.
    imag_diag = ew.sub(qt_dx_rinv, _as_dtype(ew.real(qt_dx_rinv), dt))
    do = ew.add(do, ew.mul(_eye(_shape(do), dt), imag_diag))
  dq = ew.add(_matmul(q, ew.sub(do, qt_dx_rinv)), dx_rinv)
  dr = _matmul(ew.sub(qt_dx_rinv, do), r)
  return dq, dr


def _qr_jvp(primals, tangents, *, full_matrices):
  x, = primals
  dx, = tangents
  q, r = qr_p.bind(x, full_matrices=False)
  m, n = _shape(x)[-2:]
  if m > n and full_matrices:
    raise NotImplementedError(
        "Unimplemented case of QR decomposition derivative: full_matrices=True with more "
        "rows than columns (the extra columns of Q are not determined by A). Use "
        "full_matrices=False (jnp.linalg.qr mode='reduced').")
  if m >= n:
    dq, dr = _qr_jvp_tall(q, r, dx)
  else:
    # A wide A = [X | Y] with X square: Q R_X = X fixes Q, and R_Y = Q^H Y, so
    # dR_Y = Q^H (dY - dQ R_Y).
    r_x, r_y = _slice_last2(r, (0, m), (0, m)), _slice_last2(r, (0, m), (m, n))
    dx_x, dx_y = _slice_last2(dx, (0, m), (0, m)), _slice_last2(dx, (0, m), (m, n))
    dq, dr_x = _qr_jvp_tall(q, r_x, dx_x)
    dr_y = _matmul(_H(q), ew.sub(dx_y, _matmul(dq, r_y)))
    dr = structural.concatenate([dr_x, dr_y], len(_shape(x)) - 1)
  return (q, r), (dq, dr)


def _qr_cpu_lowering(ctx, x, *, full_matrices):
  aval, = ctx.avals_in
  q_aval, r_aval = ctx.avals_out
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  *batch, m, n = aval.shape
  k = min(m, n)
  tau_aval = aval.update(shape=tuple(batch) + (k,))
  a, taus = _lapack_call(ctx, _lapack_target("geqrf", aval.dtype), [x], [aval],
                         [aval, tau_aval], aliases={0: 0})
  orgqr = _lapack_target("ungqr" if dtypes.issubdtype(aval.dtype, np.complexfloating)
                         else "orgqr", aval.dtype)
  em = _Emit(ctx)
  a_t = em.wrap(a, aval)
  # geqrf leaves R in the upper triangle and the Householder vectors below it;
  # orgqr turns the vectors (in a matrix of Q's shape) into Q.
  with em:
    if m < n:
      q_in = _slice_last2(a_t, (0, m), (0, m))
    elif not full_matrices or m == n:
      q_in = a_t
    else:
      pad = [(0, 0, 0)] * (len(batch) + 1) + [(0, m - n, 0)]
      q_in = structural.pad(a_t, _scalar(0, aval.dtype), pad)
  q, = _lapack_call(ctx, orgqr, [em.value(q_in), taus], [q_aval, tau_aval], [q_aval],
                    aliases={0: 0})
  with em:
    r = a_t if (m < n or full_matrices) else _slice_last2(a_t, (0, n), (0, n))
    r = _triu(r)
  return [q, em.value(r)]


qr_p = standard_primitive(_qr_shape_rule, _qr_dtype_rule, "qr",
                          multiple_results=True)
ad.primitive_jvps[qr_p] = _qr_jvp
_unary_batcher(qr_p)
mlir.register_lowering(qr_p, _qr_cpu_lowering, platform="cpu")


# =============================================================================
# eigh
# =============================================================================

def eigh(x, lower=True, symmetrize_input=True, *, implementation=None):
  """Eigendecomposition of Hermitian (real symmetric) matrices: A = V diag(w) V^H.

  `x` is a batch of square matrices [..., n, n]. With `symmetrize_input`, `x` is
  first replaced by (x + x^H) / 2; otherwise only the `lower` (or upper) triangle
  is read. Returns `(v, w)`: the eigenvectors as the columns of `v` (same dtype as
  `x`) and the eigenvalues `w` in ascending order (the real dtype), so that
  x @ v[..., :, i] == w[..., i] * v[..., :, i]. NaNs where LAPACK fails.
  `implementation` (an EighImplementation) must be None or QR on CPU, as in JAX.
  """
  if implementation == EighImplementation.JACOBI:
    raise NotImplementedError("Jacobi implementation is not supported on CPU")
  if implementation == EighImplementation.QDWH:
    raise NotImplementedError("QDWH implementation is only supported on TPU")
  _check_matrix("eigh", _aval(x), square=True)
  if symmetrize_input:
    x = symmetrize(x)
  v, w = eigh_p.bind(x, lower=bool(lower))
  return v, w


def _eigh_shape_rule(x, *, lower):
  _check_matrix("eigh", x, square=True)
  return [x.shape, x.shape[:-1]]


def _eigh_dtype_rule(x, *, lower):
  _check_lapack_dtype("eigh", x)
  return [x.dtype, dtypes.to_real_dtype(x.dtype)]


def _eigh_jvp(primals, tangents, *, lower):
  # First-order perturbation theory for distinct eigenvalues (see
  # https://people.maths.ox.ac.uk/gilesm/files/NA-08-01.pdf): with
  # dA' = V^H dA V, dw = Re diag(dA') and dV = V (F o dA'), F_ij = 1/(w_j - w_i).
  a, = primals
  a_dot, = tangents
  v, w_real = eigh_p.bind(a, lower=lower)
  # Only one triangle of a is read: differentiate along the Hermitian matrix it makes.
  a_dot = _hermitian_from_triangle(a_dot, lower)
  dt = _dtype(a)
  shape = _shape(a)
  n = shape[-1]
  w = _as_dtype(w_real, dt)
  eye = _eye(shape, dt)
  # 1 / (w_j - w_i) off the diagonal, 0 on it, with no division by zero there.
  f = ew.sub(ew.div(_scalar(1, dt), ew.add(eye, ew.sub(_rows_of(w, n), _cols_of(w, n)))),
             eye)
  vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
  dv = _matmul(v, ew.mul(f, vdag_adot_v))
  dw = _real(_diagonal(vdag_adot_v))
  return (v, w_real), (dv, dw)


def _eigh_cpu_lowering(ctx, x, *, lower):
  aval, = ctx.avals_in
  v_aval, w_aval = ctx.avals_out
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  routine = "heevd" if dtypes.issubdtype(aval.dtype, np.complexfloating) else "syevd"
  info_aval = _info_aval(aval)
  v, w, info = _lapack_call(ctx, _lapack_target(routine, aval.dtype), [x], [aval],
                            [v_aval, w_aval, info_aval],
                            attrs={"mode": "V", "uplo": "L" if lower else "U"},
                            aliases={0: 0})
  with _Emit(ctx) as em:
    ok = _info_ok(em.wrap(info, info_aval))
    v = _nan_unless(ok, em.wrap(v, v_aval))
    w = _nan_unless(ok, em.wrap(w, w_aval))
  return [em.value(v), em.value(w)]


eigh_p = standard_primitive(_eigh_shape_rule, _eigh_dtype_rule, "eigh", multiple_results=True)
ad.primitive_jvps[eigh_p] = _eigh_jvp
_unary_batcher(eigh_p)
mlir.register_lowering(eigh_p, _eigh_cpu_lowering, platform="cpu")


# =============================================================================
# svd
# =============================================================================

def svd(x, full_matrices=True, compute_uv=True, *, algorithm=None):
  """Singular value decomposition A = U diag(s) V^H.

  `x` is a batch of matrices [..., m, n]; k = min(m, n). Returns the singular
  values `s` [..., k] (descending, real dtype) if not `compute_uv`, else
  `(u, s, vh)` with u [..., m, m] and vh [..., n, n] (`full_matrices`) or
  u [..., m, k] and vh [..., k, n]. NaNs where LAPACK fails. `algorithm` (an
  SvdAlgorithm) picks the LAPACK driver, as in JAX: gesdd (divide and conquer) for
  None, DEFAULT and DIVIDE_AND_CONQUER, gesvd for QR (the same factors up to rounding,
  and the signs of singular vector pairs); JACOBI and POLAR are not implemented on
  CPU, as in JAX.

  >>> u, s, vh = svd(jnp.array([[3., 0.], [0., 4.]]), algorithm=SvdAlgorithm.QR)
  >>> s
  DeviceArray([4., 3.], dtype=float32)
  """
  if algorithm is not None and algorithm not in (
      SvdAlgorithm.DEFAULT, SvdAlgorithm.QR, SvdAlgorithm.DIVIDE_AND_CONQUER):
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented "
                              "on CPU.")
  out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                   **_svd_algorithm_param(algorithm))
  if compute_uv:
    s, u, vh = out
    return u, s, vh
  s, = out
  return s


def _svd_algorithm_param(algorithm):
  """svd_p's `algorithm` parameter: bound only when it picks gesvd (QR), so jaxprs of
  the default keep the 2020 form, svd[compute_uv full_matrices]."""
  return {"algorithm": SvdAlgorithm.QR} if algorithm == SvdAlgorithm.QR else {}


def _svd_uv_shapes(shape, full_matrices):
  *batch, m, n = shape
  k = min(m, n)
  batch = tuple(batch)
  if full_matrices:
    return batch + (m, m), batch + (n, n)
  return batch + (m, k), batch + (k, n)


def _svd_shape_rule(x, *, full_matrices, compute_uv, algorithm=None):
  _check_matrix("svd", x)
  *batch, m, n = x.shape
  s = tuple(batch) + (min(m, n),)
  return [s, *_svd_uv_shapes(x.shape, full_matrices)] if compute_uv else [s]


def _svd_dtype_rule(x, *, full_matrices, compute_uv, algorithm=None):
  _check_lapack_dtype("svd", x, empty_ok=True)
  real = dtypes.to_real_dtype(x.dtype)
  return [real, x.dtype, x.dtype] if compute_uv else [real]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, algorithm=None):
  # Distinct nonzero singular values (https://people.maths.ox.ac.uk/gilesm/files/
  # NA-08-01.pdf, with the extra terms of rectangular and complex matrices).
  A, = primals
  dA, = tangents
  shape = _shape(A)
  batch, (m, n) = shape[:-2], shape[-2:]
  k = min(m, n)
  if compute_uv and full_matrices and m != n:
    raise NotImplementedError(
        "Singular value decomposition JVP not implemented for full matrices of a "
        "non-square matrix (the extra singular vectors are not determined by A); use "
        "full_matrices=False.")
  s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True,
                        **_svd_algorithm_param(algorithm))
  dt = _dtype(A)
  Ut, V = _H(U), _H(Vt)
  dS = _matmul(_matmul(Ut, dA), V)
  ds = _real(_diagonal(dS))
  if not compute_uv:
    return (s,), (ds,)

  s_c = _as_dtype(s, dt)
  eye = _eye(batch + (k, k), dt)
  # F[i, j] = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it, in s's real dtype, with
  # s_j^2 - s_i^2 as (s_j + s_i)(s_j - s_i). The diagonal is a select, not JAX's
  # 1 / (0 + 1) - 1: the same values, but in a second derivative the latter passes F's
  # diagonal cotangent (~ s * dS, large) on to s as +-2 s_i times it, terms that cancel
  # only after they have swallowed s's other cotangents (a float32 grad of a vjp
  # through lstsq came out ~5e-3 where JAX has ~1e-5 and the exact answer is 0).
  rdt = _dtype(s)
  on_diag = ew.eq(structural.broadcasted_iota(np.int32, batch + (k, k), len(batch)),
                  structural.broadcasted_iota(np.int32, batch + (k, k), len(batch) + 1))
  s_row, s_col = _rows_of(s, k), _cols_of(s, k)           # s_j and s_i
  s_diffs = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))
  eye_r = ew.convert_element_type(on_diag, rdt)
  f = ew.select(on_diag, structural.full_like(s_diffs, 0),
                ew.div(_scalar(1, rdt), ew.add(s_diffs, eye_r)))
  f = _as_dtype(f, dt)
  dSS = ew.mul(_rows_of(s_c, k), dS)   # dS diag(s)
  SdS = ew.mul(_cols_of(s_c, k), dS)   # diag(s) dS
  s_zeros = _as_dtype(ew.eq(s, _scalar(0, _dtype(s))), dt)
  s_inv = ew.sub(ew.div(_scalar(1, dt), ew.add(s_c, s_zeros)), s_zeros)
  s_inv_mat = ew.mul(eye, _rows_of(s_inv, k))
  dUdV_diag = ew.mul(ew.mul(_scalar(0.5, dt), ew.sub(dS, _H(dS))), s_inv_mat)
  dU = _matmul(U, ew.add(ew.mul(f, ew.add(dSS, _H(dSS))), dUdV_diag))
  dV = _matmul(V, ew.mul(f, ew.add(SdS, _H(SdS))))
  if m > n:
    proj = ew.sub(_eye(batch + (m, m), dt), _matmul(U, Ut))
    dU = ew.add(dU, ew.div(_matmul(proj, _matmul(dA, V)), _rows_of(s_c, m)))
  if n > m:
    proj = ew.sub(_eye(batch + (n, n), dt), _matmul(V, Vt))
    dV = ew.add(dV, ew.div(_matmul(proj, _matmul(_H(dA), U)), _rows_of(s_c, n)))
  return (s, U, Vt), (ds, dU, _H(dV))


def _svd_cpu_lowering(ctx, x, *, full_matrices, compute_uv, algorithm=None):
  aval, = ctx.avals_in
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  s_aval = ctx.avals_out[0]
  u_shape, vt_shape = _svd_uv_shapes(aval.shape, full_matrices)
  u_aval, vt_aval = aval.update(shape=u_shape), aval.update(shape=vt_shape)
  info_aval = _info_aval(aval)
  # The job letter (gesdd and gesvd alike): 'A' all of U and V, 'S' the first k
  # columns, 'N' neither (U and V are then still outputs of the kernel, unwritten).
  mode = "N" if not compute_uv else ("A" if full_matrices else "S")
  driver = "gesvd" if algorithm == SvdAlgorithm.QR else "gesdd"
  _, s, u, vt, info = _lapack_call(ctx, _lapack_target(driver, aval.dtype), [x], [aval],
                                   [aval, s_aval, u_aval, vt_aval, info_aval],
                                   attrs={"mode": mode}, aliases={0: 0})
  with _Emit(ctx) as em:
    ok = _info_ok(em.wrap(info, info_aval))
    outs = [_nan_unless(ok, em.wrap(s, s_aval))]
    if compute_uv:
      outs += [_nan_unless(ok, em.wrap(u, u_aval)), _nan_unless(ok, em.wrap(vt, vt_aval))]
  return [em.value(o) for o in outs]


svd_p = standard_primitive(_svd_shape_rule, _svd_dtype_rule, "svd", multiple_results=True)
ad.primitive_jvps[svd_p] = _svd_jvp
_unary_batcher(svd_p)
mlir.register_lowering(svd_p, _svd_cpu_lowering, platform="cpu")


# =============================================================================
# eig
# =============================================================================

def eig(x, compute_left_eigenvectors=True, compute_right_eigenvectors=True,
        enable_eigvec_derivs=False, implementation=None, use_magma=None):
  """Eigendecomposition of general square matrices (CPU only).

  `x` is a batch of square matrices [..., n, n]. Returns a list: the eigenvalues
  `w` [..., n], then the left eigenvectors `vl` (columns, vl^H A = diag(w) vl^H)
  if asked, then the right ones `vr` (A vr = vr diag(w)) if asked. All are
  complex and in LAPACK's order (unsorted), with LAPACK geev's normalization:
  each eigenvector has unit 2-norm and its largest-magnitude component is real.

  The eigenvalues are always differentiable. The eigenvectors are only with
  `enable_eigvec_derivs=True`, as in JAX: their derivative (taken in geev's
  normalization) is only valid when the eigenvalues are distinct and no
  eigenvector has two components tied for the largest magnitude, which cannot be
  checked while tracing. `implementation` and `use_magma` choose GPU kernels in
  JAX; tracejax has only LAPACK and accepts them for compatibility.
  """
  del use_magma  # GPU-only choice in JAX
  # JAX on CPU takes None or EigImplementation.LAPACK (not the string 'lapack').
  if implementation is not None and implementation != EigImplementation.LAPACK:
    raise ValueError("Only the lapack implementation is supported on CPU.")
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs))


def _eig_shape_rule(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
  _check_matrix("eig", x, square=True)
  n_vecs = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
  return [x.shape[:-1]] + [x.shape] * n_vecs


def _eig_dtype_rule(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
  _check_lapack_dtype("eig", x)
  n_vecs = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
  return [dtypes.to_complex_dtype(x.dtype)] * (1 + n_vecs)


def _eig_tangents(w, v, da):
  """(dw, dv) of A v_j = w_j v_j, for distinct eigenvalues, in geev's gauge.

  With P = V^-1 dA V, first-order perturbation theory gives dw = diag(P) and
  dv_j = u_j + c_j v_j, u = V (F o P), F_ij = 1 / (w_j - w_i) off the diagonal
  (https://people.maths.ox.ac.uk/gilesm/files/NA-08-01.pdf, sec. 3.1). The free
  multiple c_j of v_j is what the normalization fixes: a unit norm keeps
  Re(v_j^H dv_j) = 0, so Re c_j = -Re(v_j^H u_j); a real largest component v_kj
  keeps Im(dv_kj) = 0, so Im c_j = -Im(u_kj) / v_kj. The two conditions
  decouple because v_kj is real.
  """
  dt = _dtype(v)
  shape = _shape(v)
  nd, n = len(shape), shape[-1]
  p = _matmul(_solve(v, da), v)
  dw = _diagonal(p)
  eye = _eye(shape, dt)
  # 1 / (w_j - w_i) off the diagonal, 0 on it (no division by zero there).
  f = ew.sub(ew.div(_scalar(1, dt), ew.add(eye, ew.sub(_rows_of(w, n), _cols_of(w, n)))),
             eye)
  u = _matmul(v, ew.mul(f, p))
  re_c = ew.neg(ew.real(reductions.reduce_sum(ew.mul(_conj(v), u), (nd - 2,))))
  # Row k_j of column j: the largest |v_kj| (the first of ties, like geev's search).
  k = reductions.argmax(ew.abs(v), nd - 2, np.int32)
  at_k = ew.eq(structural.broadcasted_iota(np.int32, shape, nd - 2),
               structural.broadcast_in_dim(k, shape, tuple(range(nd - 2)) + (nd - 1,)))
  zeros = _zeros(shape, dt)

  def pick(x):  # x[..., k_j, j] for every column j
    return reductions.reduce_sum(ew.select(at_k, x, zeros), (nd - 2,))

  im_c = ew.neg(ew.div(ew.imag(pick(u)), ew.real(pick(v))))
  dv = ew.add(u, ew.mul(v, _rows_of(ew.complex(re_c, im_c), n)))
  return dw, dv


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs):
  a, = primals
  da, = tangents
  vectors = compute_left_eigenvectors or compute_right_eigenvectors
  if vectors and not enable_eigvec_derivs:
    raise NotImplementedError(
        "The derivatives of the eigenvectors of eig are only valid for inputs with "
        "distinct eigenvalues (and no eigenvector with two components tied for the "
        "largest magnitude), which cannot be checked while tracing; pass "
        "enable_eigvec_derivs=True to lax.linalg.eig to opt in. The eigenvalues "
        "(jnp.linalg.eigvals) are always differentiable. See "
        "https://github.com/google/jax/issues/2748.")
  # The right eigenvectors are needed for every tangent, asked for or not.
  outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                    compute_right_eigenvectors=True,
                    enable_eigvec_derivs=enable_eigvec_derivs)
  w, vr = outs[0], outs[-1]
  da = _as_dtype(da, _dtype(vr))
  if not vectors:
    # dw = diag(V^-1 dA V) (eqn 4.60 of https://arxiv.org/abs/1701.00392).
    vinv_da = _solve(vr, da)
    return [w], [reductions.reduce_sum(ew.mul(vinv_da, _T(vr)), (len(_shape(a)) - 1,))]
  dw, dvr = _eig_tangents(w, vr, da)
  primals_out, tangents_out = [w], [dw]
  if compute_left_eigenvectors:
    # vl^H A = diag(w) vl^H says A^H vl = vl diag(conj w): the left eigenvectors are
    # the right ones of A^H, normalized the same way by geev.
    _, dvl = _eig_tangents(_conj(w), outs[1], _H(da))
    primals_out.append(outs[1])
    tangents_out.append(dvl)
  if compute_right_eigenvectors:
    primals_out.append(vr)
    tangents_out.append(dvr)
  return primals_out, tangents_out


def _eig_cpu_lowering(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                      enable_eigvec_derivs):
  aval, = ctx.avals_in
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  cdt = dtypes.to_complex_dtype(aval.dtype)
  w_aval = aval.update(shape=aval.shape[:-1], dtype=cdt)
  vec_aval = aval.update(dtype=cdt)
  info_aval = _info_aval(aval)
  attrs = {"compute_left": "V" if compute_left_eigenvectors else "N",
           "compute_right": "V" if compute_right_eigenvectors else "N"}
  target = _lapack_target("geev", aval.dtype)
  em = _Emit(ctx)
  if dtypes.issubdtype(aval.dtype, np.complexfloating):
    w, vl, vr, info = _lapack_call(ctx, target, [x], [aval],
                                   [w_aval, vec_aval, vec_aval, info_aval], attrs=attrs)
    w = em.wrap(w, w_aval)
  else:
    # The real kernel returns the real and imaginary parts of the eigenvalues (and
    # already unpacks the eigenvectors into complex matrices).
    wr_aval = aval.update(shape=aval.shape[:-1])
    wr, wi, vl, vr, info = _lapack_call(ctx, target, [x], [aval],
                                        [wr_aval, wr_aval, vec_aval, vec_aval, info_aval],
                                        attrs=attrs)
    with em:
      w = ew.complex(em.wrap(wr, wr_aval), em.wrap(wi, wr_aval))
  with em:
    ok = _info_ok(em.wrap(info, info_aval))
    outs = [_nan_unless(ok, w)]
    if compute_left_eigenvectors:
      outs.append(_nan_unless(ok, em.wrap(vl, vec_aval)))
    if compute_right_eigenvectors:
      outs.append(_nan_unless(ok, em.wrap(vr, vec_aval)))
  return [em.value(o) for o in outs]


eig_p = standard_primitive(_eig_shape_rule, _eig_dtype_rule, "eig", multiple_results=True)
ad.primitive_jvps[eig_p] = _eig_jvp
_unary_batcher(eig_p)
mlir.register_lowering(eig_p, _eig_cpu_lowering, platform="cpu")



# =============================================================================
# schur
# =============================================================================

def schur(x, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
  """Schur decomposition A = Z T Z^H of square matrices (CPU only, LAPACK gees).

  `x` is a batch of square matrices [..., n, n]. T is upper triangular for
  complex `x`; for real `x` it is the real Schur form (quasi upper triangular,
  with 2 x 2 blocks for pairs of complex eigenvalues) and Z is orthogonal.
  Returns `(T, Z)`, or `T` alone without `compute_schur_vectors`. NaNs where
  LAPACK fails. Ordering the eigenvalues (`sort_eig_vals`, `select_callable`)
  is not available in jaxlib's kernel. Not differentiable.
  """
  if sort_eig_vals or select_callable is not None:
    raise NotImplementedError("schur: ordering the eigenvalues (sort_eig_vals, "
                              "select_callable) is not supported by jaxlib's LAPACK kernel.")
  out = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors))
  return tuple(out) if compute_schur_vectors else out[0]


def _schur_shape_rule(x, *, compute_schur_vectors):
  _check_matrix("schur", x, square=True)
  return [x.shape, x.shape] if compute_schur_vectors else [x.shape]


def _schur_dtype_rule(x, *, compute_schur_vectors):
  _check_lapack_dtype("schur", x)
  return [x.dtype] * (2 if compute_schur_vectors else 1)


def _schur_cpu_lowering(ctx, x, *, compute_schur_vectors):
  aval, = ctx.avals_in
  if 0 in aval.shape:
    return _empty_outputs(ctx)
  info_aval = _info_aval(aval)
  vec_aval = aval.update(shape=aval.shape[:-1])
  attrs = {"mode": "V" if compute_schur_vectors else "N", "sort": "N"}
  target = _lapack_target("gees", aval.dtype)
  if dtypes.issubdtype(aval.dtype, np.complexfloating):
    # T, Z, the eigenvalues, the number of selected eigenvalues, info.
    t, z, _, _, info = _lapack_call(ctx, target, [x], [aval],
                                    [aval, aval, vec_aval, info_aval, info_aval],
                                    attrs=attrs, aliases={0: 0})
  else:
    # T, Z, the real and imaginary parts of the eigenvalues, selected count, info.
    t, z, _, _, _, info = _lapack_call(ctx, target, [x], [aval],
                                       [aval, aval, vec_aval, vec_aval, info_aval,
                                        info_aval], attrs=attrs, aliases={0: 0})
  with _Emit(ctx) as em:
    ok = _info_ok(em.wrap(info, info_aval))
    outs = [_nan_unless(ok, em.wrap(t, aval))]
    if compute_schur_vectors:
      outs.append(_nan_unless(ok, em.wrap(z, aval)))
  return [em.value(o) for o in outs]


def _schur_jvp(primals, tangents, *, compute_schur_vectors):
  # As in JAX: the Schur form has no derivative rule (the real form's 2 x 2 blocks and
  # Z are not smooth functions of A where eigenvalues meet).
  raise NotImplementedError(
      "The Schur decomposition (lax.linalg.schur, jax.scipy.linalg.schur and sqrtm, "
      "which uses it) is not differentiable, as in JAX.")


schur_p = standard_primitive(_schur_shape_rule, _schur_dtype_rule, "schur", multiple_results=True)
ad.primitive_jvps[schur_p] = _schur_jvp
_unary_batcher(schur_p)
mlir.register_lowering(schur_p, _schur_cpu_lowering, platform="cpu")

