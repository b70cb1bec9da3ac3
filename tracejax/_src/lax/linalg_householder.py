"""Householder reductions of `jax.lax.linalg`: hessenberg, tridiagonal,
householder_product and ormqr.

These return (or consume) LAPACK's packed form: Householder vectors stored below
a diagonal of the matrix, with their scalar factors `taus`. Each lowers on CPU to
jaxlib's LAPACK FFI kernel (gehrd, sytrd/hetrd, orgqr/ungqr, ormqr/unmqr), with
the conventions of linalg.py (column-major matrices, one int32 info per matrix,
NaNs where a kernel fails). None of them is differentiable in JAX 0.10.2: their
JVP rules raise JAX's "Differentiation rule for 'X' not implemented". All of them
batch over leading dimensions, so vmap moves the mapped axes to the front.

This module imports linalg.py, never the reverse (linalg.py is imported by
jax.numpy and jax.scipy, which must not pull these in a cycle).
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.lax import linalg as _la
from tracejax._src.lax import utils
from tracejax._src.lax.utils import standard_primitive

__all__ = ["hessenberg", "hessenberg_p", "householder_product", "householder_product_p",
           "ormqr", "ormqr_p", "tridiagonal", "tridiagonal_p"]


# =============================================================================
# Shared helpers: JAX's input checks, batching, the FFI call with typed attributes
# =============================================================================

def check_ranks(name, avals, core_ranks):
  """JAX's first checks of a linalg primitive's operands (in its shape rule): each
  has at least its core rank (the matrix or vector it works on), and all have the
  same number of leading batch dimensions. Their sizes are compared later, after
  the dtypes (check_batch_sizes), as JAX does."""
  for i, (a, r) in enumerate(zip(avals, core_ranks)):
    if a.ndim < r:
      raise TypeError(f"Input {i} to {name} must have rank at least {r}, but got "
                      f"shape={a.shape}")
  nbatch = [a.ndim - r for a, r in zip(avals, core_ranks)]
  if len(set(nbatch)) > 1:
    raise TypeError(f"All inputs to {name} must have the same number of batch "
                    f"dimensions, but got {nbatch} batch dimensions for the inputs.")


def check_batch_sizes(avals, core_ranks):
  """The leading batch dimensions of all operands agree (JAX's error wording)."""
  for d in range(avals[0].ndim - core_ranks[0]):
    sizes = [a.shape[d] for a in avals]
    if len(set(sizes)) > 1:
      raise ValueError(f"Batching dimension 0_{d} corresponds to two sizes: "
                       f"{sizes[0]} and {next(s for s in sizes if s != sizes[0])}")


def check_dtypes(name, avals, complex_ok=True):
  """JAX's dtype checks: floating (or complex) operands, all of one dtype."""
  kinds = "floating, complexfloating" if complex_ok else "floating"
  for i, a in enumerate(avals):
    ok = dtypes.issubdtype(a.dtype, np.floating) or (
        complex_ok and dtypes.issubdtype(a.dtype, np.complexfloating))
    if not ok:
      raise TypeError(f"{name} does not accept dtype {a.dtype.name} at position {i}. "
                      f"Accepted dtypes at position {i} are subtypes of {kinds}.")
  utils.check_same_dtypes(f"lax.{name}", *avals)


def check_lapack(name, aval):
  # LAPACK has no half-precision kernels; JAX fails the same way when lowering.
  if aval.dtype not in _la._lapack_dtypes:
    raise NotImplementedError(f"{name}: unsupported dtype {aval.dtype.name} (LAPACK "
                              "kernels take float32, float64, complex64 and complex128).")


def batch_all(prim):
  """Batching for primitives whose operands all carry the same leading batch
  dimensions: every mapped axis moves to the front (unmapped operands are
  broadcast), and every output has it first."""
  def rule(args, dims, **params):
    size = next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)
    args = [utils.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
    out = prim.bind(*args, **params)
    return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
  batching.primitive_batchers[prim] = rule


def nan_unless_info(ctx, info, info_aval, results):
  """Under an _Emit: every (value, aval) in `results` with NaNs where info != 0."""
  with _la._Emit(ctx) as em:
    ok = _la._info_ok(em.wrap(info, info_aval))
    outs = [_la._nan_unless(ok, em.wrap(v, a)) for v, a in results]
  return [em.value(o) for o in outs]


def not_differentiable(prim):
  """A JVP rule raising JAX 0.10.2's error for a primitive it does not differentiate
  (written out, so that every primitive visibly has its rule)."""
  def rule(primals, tangents, **params):
    raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
  ad.primitive_jvps[prim] = rule


def _is_complex_dtype(dt):
  return dtypes.issubdtype(dt, np.complexfloating)


# =============================================================================
# hessenberg
# =============================================================================

def hessenberg(a):
  """Reduces square matrices to upper Hessenberg form, A = Q H Q^H (LAPACK gehrd).

  `a` is a batch of square matrices [..., n, n]. Returns `(a, taus)` in LAPACK's
  packed form: H on and above the first subdiagonal of `a`, the Householder
  vectors that make Q below it (each with an implicit leading 1), and their
  scalar factors `taus` [..., n - 1]. `householder_product(a, taus)` (with the
  vectors shifted down one row) rebuilds Q. CPU only; not differentiable.
  """
  return tuple(hessenberg_p.bind(a))


def _hessenberg_shape_rule(a):
  check_ranks("hessenberg", [a], [2])
  if a.shape[-1] != a.shape[-2]:
    raise ValueError("Argument to Hessenberg reduction must have shape [..., n, n], got "
                     f"shape {a.shape}")
  return [a.shape, a.shape[:-2] + (max(a.shape[-1] - 1, 0),)]


def _hessenberg_dtype_rule(a):
  check_dtypes("hessenberg", [a])
  check_lapack("hessenberg", a)
  return [a.dtype, a.dtype]


def _hessenberg_cpu_lowering(ctx, a):
  aval, = ctx.avals_in
  a_aval, taus_aval = ctx.avals_out
  n = aval.shape[-1]
  if 0 in aval.shape:
    return [a, _la._empty_outputs(ctx)[1]]
  info_aval = _la._info_aval(aval)
  # low = 1, high = n: reduce the whole matrix (no balancing was done).
  out, taus, info = _la._lapack_call(ctx, _la._lapack_target("gehrd", aval.dtype), [a], [aval],
                             [a_aval, taus_aval, info_aval], attrs={"low": 1, "high": n},
                             aliases={0: 0})
  return nan_unless_info(ctx, info, info_aval, [(out, a_aval), (taus, taus_aval)])


hessenberg_p = standard_primitive(_hessenberg_shape_rule, _hessenberg_dtype_rule,
                                  "hessenberg", multiple_results=True)
_la._unary_batcher(hessenberg_p)
not_differentiable(hessenberg_p)
mlir.register_lowering(hessenberg_p, _hessenberg_cpu_lowering, platform="cpu")


# =============================================================================
# tridiagonal
# =============================================================================

def tridiagonal(a, *, lower=True):
  """Reduces Hermitian (real symmetric) matrices to real symmetric tridiagonal
  form, A = Q T Q^H (LAPACK sytrd/hetrd), reading only the `lower` (or upper)
  triangle of `a` [..., n, n].

  Returns `(a, d, e, taus)` in LAPACK's packed form: `a` holds the Householder
  vectors below the first subdiagonal (`lower`) or above the first superdiagonal,
  `d` [..., n] and `e` [..., n - 1] are T's diagonal and off-diagonal (real
  dtype), `taus` [..., n - 1] the vectors' scalar factors. CPU only; not
  differentiable.
  """
  return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


def _tridiagonal_shape_rule(a, *, lower):
  check_ranks("tridiagonal", [a], [2])
  n = a.shape[-1]
  if a.shape[-2] != n or n == 0:
    raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape "
                     f"{a.shape}.")
  batch = a.shape[:-2]
  return [a.shape, batch + (n,), batch + (n - 1,), batch + (n - 1,)]


def _tridiagonal_dtype_rule(a, *, lower):
  check_dtypes("tridiagonal", [a])
  check_lapack("tridiagonal", a)
  real = dtypes.to_real_dtype(a.dtype)
  return [a.dtype, real, real, a.dtype]


def _tridiagonal_cpu_lowering(ctx, a, *, lower):
  aval, = ctx.avals_in
  if 0 in aval.shape:  # an empty batch
    return _la._empty_outputs(ctx)
  info_aval = _la._info_aval(aval)
  routine = "hetrd" if _is_complex_dtype(aval.dtype) else "sytrd"
  outs = _la._lapack_call(ctx, _la._lapack_target(routine, aval.dtype), [a], [aval],
                  list(ctx.avals_out) + [info_aval], attrs={"uplo": "L" if lower else "U"},
                  aliases={0: 0})
  return nan_unless_info(ctx, outs[-1], info_aval, list(zip(outs[:-1], ctx.avals_out)))


tridiagonal_p = standard_primitive(_tridiagonal_shape_rule, _tridiagonal_dtype_rule,
                                   "tridiagonal", multiple_results=True)
_la._unary_batcher(tridiagonal_p)
not_differentiable(tridiagonal_p)
mlir.register_lowering(tridiagonal_p, _tridiagonal_cpu_lowering, platform="cpu")


# =============================================================================
# householder_product
# =============================================================================

def householder_product(a, taus):
  """The product of Householder reflectors, Q = H_1 H_2 ... H_k (LAPACK orgqr/ungqr).

  `a` [..., m, n] (m >= n) holds the Householder vectors below its diagonal (as
  `jnp.linalg.qr`'s geqrf leaves them, each with an implicit leading 1); `taus`
  [..., k], k <= n, their scalar factors, H_i = I - tau_i v_i v_i^H. Returns the
  first n columns of Q, [..., m, n]. CPU only; not differentiable.
  """
  return householder_product_p.bind(a, taus)


def _householder_product_shape_rule(a, taus):
  check_ranks("householder_product", [a, taus], [2, 1])
  m, n = a.shape[-2:]
  if m < n:
    raise ValueError("The first argument to householder_product must have at least as "
                     f"many rows as columns, got shape {a.shape}")
  if taus.shape[-1] > min(m, n):
    raise ValueError("The second argument to householder_product must not have more rows "
                     "than the minimum of the first argument's rows and columns.")
  return a.shape


def _householder_product_dtype_rule(a, taus):
  check_dtypes("householder_product", [a, taus])
  check_batch_sizes([a, taus], [2, 1])
  check_lapack("householder_product", a)
  return a.dtype


def _householder_product_cpu_lowering(ctx, a, taus):
  a_aval, taus_aval = ctx.avals_in
  if 0 in a_aval.shape:
    return [a]
  routine = "ungqr" if _is_complex_dtype(a_aval.dtype) else "orgqr"
  return _la._lapack_call(ctx, _la._lapack_target(routine, a_aval.dtype), [a, taus],
                  [a_aval, taus_aval], [ctx.avals_out[0]], aliases={0: 0})


householder_product_p = standard_primitive(_householder_product_shape_rule,
                                           _householder_product_dtype_rule,
                                           "householder_product")
batch_all(householder_product_p)
not_differentiable(householder_product_p)
mlir.register_lowering(householder_product_p, _householder_product_cpu_lowering,
                       platform="cpu")


# =============================================================================
# ormqr
# =============================================================================

def ormqr(a, taus, c, *, left=True, transpose=False):
  """Multiplies `c` by the Q of Householder reflectors without forming Q (LAPACK
  ormqr/unmqr): Q C (`left`) or C Q, with Q^H instead of Q if `transpose` (the
  conjugate transpose for complex inputs).

  `a` [..., m, k'] and `taus` [..., k] are as for `householder_product` (Q is
  m x m, the product of the first k reflectors); `c` is [..., m, p] (`left`) or
  [..., p, m]. Returns an array of `c`'s shape. CPU only; not differentiable.
  """
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr_shape_rule(a, taus, c, *, left, transpose):
  check_ranks("ormqr", [a, taus, c], [2, 1, 2])
  m = a.shape[-2]
  if left and c.shape[-2] != m:
    raise ValueError("ormqr with left=True expects c to have the same number of rows as "
                     f"the Householder matrix a. Got a shape {a.shape} and c shape "
                     f"{c.shape}.")
  if not left and c.shape[-1] != m:
    raise ValueError("ormqr with left=False expects c to have the same number of columns "
                     f"as the Householder matrix a has rows. Got a shape {a.shape} and c "
                     f"shape {c.shape}.")
  # JAX lets this through to LAPACK, which would then read reflectors past the end of
  # `a`: refused here instead.
  if taus.shape[-1] > min(m, a.shape[-1]):
    raise ValueError("ormqr expects taus to have at most as many elements as the "
                     f"Householder matrix a has rows and columns. Got a shape {a.shape} "
                     f"and taus shape {taus.shape}.")
  return c.shape


def _ormqr_dtype_rule(a, taus, c, *, left, transpose):
  check_dtypes("ormqr", [a, taus, c])
  check_batch_sizes([a, taus, c], [2, 1, 2])
  check_lapack("ormqr", a)
  return c.dtype


def _ormqr_cpu_lowering(ctx, a, taus, c, *, left, transpose):
  a_aval, taus_aval, c_aval = ctx.avals_in
  if 0 in c_aval.shape:
    return [c]
  if a_aval.shape[-1] == 0 or taus_aval.shape[-1] == 0:
    return [c]  # no reflectors: Q = I
  routine = "unmqr" if _is_complex_dtype(a_aval.dtype) else "ormqr"
  return _la._lapack_call(ctx, _la._lapack_target(routine, a_aval.dtype), [a, taus, c],
                  [a_aval, taus_aval, c_aval], [ctx.avals_out[0]],
                  attrs={"left": bool(left), "transpose": bool(transpose)}, aliases={0: 2})


ormqr_p = standard_primitive(_ormqr_shape_rule, _ormqr_dtype_rule, "ormqr")
batch_all(ormqr_p)
not_differentiable(ormqr_p)
mlir.register_lowering(ormqr_p, _ormqr_cpu_lowering, platform="cpu")
