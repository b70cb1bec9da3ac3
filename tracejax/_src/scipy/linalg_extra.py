"""The later names of `jax.scipy.linalg`: schur, sqrtm, polar, hessenberg,
eigh_tridiagonal, toeplitz and hilbert (re-exported by `tracejax.scipy.linalg`).

`schur` (and `sqrtm`, built on it) lowers to LAPACK's gees and, as in JAX, is not
differentiable. `hessenberg` is Householder reduction written with jnp
operations (the same reflectors as LAPACK's gehrd, so the same signs as SciPy),
hence differentiable. `eigh_tridiagonal` finds eigenvalues by bisection on Sturm
counts, all of them at once.
"""
import operator

import numpy as np

from tracejax._src import dtypes
from tracejax._src.control_flow import fori_loop, scan
from tracejax._src.custom_derivatives import custom_jvp
from tracejax._src.lax import elementwise as lax_ew
from tracejax._src.lax import linalg as lax_linalg
from tracejax._src.numpy import creation, products, reductions, shape_ops, ufuncs, util
from tracejax._src.numpy import linalg as np_linalg
from tracejax._src.scipy.linalg import _H, _check_matrix, _inexact, _is_complex

__all__ = ["eigh_tridiagonal", "hessenberg", "hilbert", "polar", "schur", "sqrtm",
           "toeplitz"]


def _real_part(x):
  return lax_ew.real(x) if _is_complex(x) else x


def _abs2(x):
  if _is_complex(x):
    re, im = lax_ew.real(x), lax_ew.imag(x)
    return ufuncs.add(ufuncs.multiply(re, re), ufuncs.multiply(im, im))
  return ufuncs.multiply(x, x)


# ---- Schur and the square root ----

def _inexact_only(name, a, empty_ok=False):
  """`a` as an array, which must be floating or complex: JAX's schur and hessenberg
  take no integers (they do not promote; its hessenberg returns matrices with no
  entries as they are)."""
  util.check_arraylike(f"jax.scipy.linalg.{name}", a)
  dt = util.dtype_of(a)
  if not dtypes.is_inexact(dt) and not (empty_ok and 0 in util.shape(a)[-2:]):
    raise TypeError(f"{name} does not accept dtype {dt.name} at position 0. Accepted "
                    "dtypes at position 0 are subtypes of floating, complexfloating.")
  return util.to_array(a)


def schur(a, output="real"):
  """Schur decomposition a = z t z^H of square matrices `a` [..., n, n] (CPU only).

  Args:
    a: [..., n, n].
    output: 'real' (for real `a`: t quasi upper triangular, with 2 x 2 blocks
      for complex-conjugate eigenvalue pairs, z orthogonal) or 'complex' (t
      upper triangular, z unitary; a real `a` is first made complex).

  Returns `(t, z)`. Not differentiable (as in JAX).

  Example:
    >>> t, z = schur(jnp.array([[1., 2.], [3., 4.]]), output='complex')
  """
  if output not in ("real", "complex"):
    raise ValueError(f"jax.scipy.linalg.schur: argument output must be 'real' or "
                     f"'complex', got {output!r}.")
  a = _inexact_only("schur", a)
  _check_matrix("jax.scipy.linalg.schur", "a", a, square=True)
  if output == "complex" and not _is_complex(a):
    a = a.astype(dtypes.to_complex_dtype(util.dtype_of(a)))
  return lax_linalg.schur(a)


def _sqrt_upper_triangular(t):
  """R upper triangular with R @ R == t, for upper triangular complex t [..., n, n]
  (Björck and Hammarling 1983): r_jj = sqrt(t_jj), then column by column,
  (R[:j, :j] + r_jj I) r[:j, j] = t[:j, j], an upper triangular solve masked to
  the leading j rows so every step has the same shapes."""
  shape = util.shape(t)
  n = shape[-1]
  dt = util.dtype_of(t)
  diag = ufuncs.sqrt(products.diagonal(t, axis1=-2, axis2=-1))
  rows = creation.arange(n, dtype=np.int32)
  eye = creation.eye(n, dtype=dt)
  r = ufuncs.multiply(shape_ops.expand_dims(diag, -1), eye)

  def column(j, r):
    lead = ufuncs.less(rows, j)                                  # rows (and cols) < j
    block = ufuncs.logical_and(lead[:, None], lead[None, :])
    r_jj = reductions.sum(ufuncs.where(ufuncs.equal(rows, j), diag, 0), axis=-1)
    m = ufuncs.where(block, r, 0)
    shift = ufuncs.where(lead, shape_ops.expand_dims(r_jj, -1), creation.ones((), dt))
    m = ufuncs.add(m, ufuncs.multiply(eye, shape_ops.expand_dims(shift, -2)))
    on_col = ufuncs.equal(rows, j)
    t_col = reductions.sum(ufuncs.where(on_col[None, :], t, 0), axis=-1)   # t[..., :, j]
    rhs = ufuncs.where(lead, t_col, 0)
    x = lax_linalg.triangular_solve(m, shape_ops.expand_dims(rhs, -1), left_side=True,
                                    lower=False)[..., 0]
    upd = ufuncs.logical_and(lead[:, None], on_col[None, :])
    return ufuncs.where(upd, shape_ops.expand_dims(x, -1), r)

  return fori_loop(1, n, column, r)


def sqrtm(A, blocksize=1):
  """The principal square root of square matrices `A` [..., n, n] (CPU only).

  Computed from the complex Schur form A = Z T Z^H as Z R Z^H with R @ R == T
  (Björck-Hammarling). The result is complex, as in JAX. Matrices with
  eigenvalues on the closed negative real axis (no principal root, or a
  singular one) give infs/NaNs. Not differentiable (the Schur form is not).

  Args:
    A: [..., n, n].
    blocksize: SciPy's blocking (a speed option only); any positive integer,
      the result is the same.

  Example:
    >>> sqrtm(jnp.array([[4., 0.], [0., 9.]]))     # diag(2, 3), complex
  """
  try:
    blocksize = operator.index(blocksize)
  except TypeError:
    raise TypeError("jax.scipy.linalg.sqrtm: argument blocksize must be an integer, got "
                    f"{blocksize!r}.") from None
  if blocksize < 1:
    raise ValueError(f"jax.scipy.linalg.sqrtm: argument blocksize must be >= 1, got "
                     f"{blocksize}.")
  A, = _inexact("jax.scipy.linalg.sqrtm", A)   # (an integer matrix has a root too)
  t, z = schur(A, output="complex")
  if util.shape(t)[-1] == 0:
    return t
  r = _sqrt_upper_triangular(t)
  return products.matmul(products.matmul(z, r), _H(z))


# ---- polar ----

def polar(a, side="right", *, method="svd", eps=None, max_iterations=None):
  """Polar decomposition a = u p (side 'right') or a = p u (side 'left').

  Args:
    a: [..., m, n].
    side: 'right' (p is [..., n, n]) or 'left' (p is [..., m, m]).
    method: 'svd' or 'qdwh'; both give the same decomposition here, computed
      from the SVD a = W S V^H (u = W V^H, p = V S V^H or W S W^H). `eps` and
      `max_iterations` tune QDWH's iteration and are unused.

  Returns `(u, p)`: u has orthonormal columns (rows if m < n), p is Hermitian
  positive semi-definite.

  Example:
    >>> u, p = polar(jnp.array([[1., 2.], [3., 4.]]))
  """
  del eps, max_iterations
  if side not in ("right", "left"):
    raise ValueError(f"jax.scipy.linalg.polar: argument side must be 'right' or 'left', "
                     f"got {side!r}.")
  if method not in ("svd", "qdwh"):
    raise ValueError(f"jax.scipy.linalg.polar: argument method must be 'svd' or 'qdwh', "
                     f"got {method!r}.")
  util.check_arraylike("jax.scipy.linalg.polar", a)
  if not dtypes.is_inexact(util.dtype_of(a)):
    # (JAX's message: from finfo of the dtype, which the default eps reads)
    raise ValueError(f"data type {util.dtype_of(a).type} not inexact")
  a = util.to_array(a)
  _check_matrix("jax.scipy.linalg.polar", "a", a)
  w, s, vh = lax_linalg.svd(a, full_matrices=False)
  u = products.matmul(w, vh)
  s = s.astype(util.dtype_of(a))
  if side == "right":
    p = products.matmul(_H(vh), ufuncs.multiply(shape_ops.expand_dims(s, -1), vh))
  else:
    p = products.matmul(ufuncs.multiply(w, shape_ops.expand_dims(s, -2)), _H(w))
  return u, p


# ---- Hessenberg ----

def _householder(col, k, rows):
  """LAPACK larfg's reflector for col[k+1:] (col [..., n], k traced): returns (v, tau,
  beta) with v zero up to k, v[k+1] = 1, so that (I - tau v v^H)^H col[k+1:] is
  beta e_1."""
  dt = util.dtype_of(col)
  below = ufuncs.greater(rows, k + 1)
  at = ufuncs.equal(rows, k + 1)
  alpha = reductions.sum(ufuncs.where(at, col, 0), axis=-1)
  xnorm2 = reductions.sum(ufuncs.where(below, _abs2(col), 0), axis=-1)
  alpha_re = _real_part(alpha)
  norm = ufuncs.sqrt(ufuncs.add(_abs2(alpha), xnorm2))
  beta = ufuncs.where(ufuncs.greater_equal(alpha_re, 0), ufuncs.negative(norm), norm)
  trivial = ufuncs.equal(xnorm2, 0)
  if _is_complex(col):
    trivial = ufuncs.logical_and(trivial, ufuncs.equal(lax_ew.imag(alpha), 0))
  # Where the reflector is the identity, divide by something harmless (no NaN, so
  # derivatives through the unselected branch stay finite).
  beta_safe = ufuncs.where(trivial, creation.ones((), beta.dtype), beta).astype(dt)
  denom = ufuncs.where(trivial, creation.ones((), dt), ufuncs.subtract(alpha, beta_safe))
  tau = ufuncs.where(trivial, creation.zeros((), dt),
                     ufuncs.divide(ufuncs.subtract(beta_safe, alpha), beta_safe))
  v = ufuncs.where(below, ufuncs.divide(col, shape_ops.expand_dims(denom, -1)), 0)
  v = ufuncs.where(at, creation.ones((), dt), v)
  return v, tau


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """Hessenberg form a = q h q^H of square matrices `a` [..., n, n].

  h is zero below its first subdiagonal, q is unitary (orthogonal). Computed
  with Householder reflections (LAPACK gehrd's, so h matches SciPy's), in jnp
  operations: differentiable, batched.

  Args:
    a: [..., n, n].
    calc_q: also return q.

  Returns `h`, or `(h, q)` with `calc_q`.

  Example:
    >>> h, q = hessenberg(a, calc_q=True); jnp.allclose(q @ h @ q.T, a)
  """
  del overwrite_a, check_finite
  a = _inexact_only("hessenberg", a, empty_ok=True)
  _check_matrix("jax.scipy.linalg.hessenberg", "a", a, square=True)
  n = util.shape(a)[-1]
  dt = util.dtype_of(a)
  rows = creation.arange(n, dtype=np.int32)
  q = util.broadcast_to(creation.eye(n, dtype=dt), util.shape(a))
  if n == 0:
    return (a, q) if calc_q else a

  def step(k, carry):
    h, q = carry
    col = reductions.sum(ufuncs.where(ufuncs.equal(rows, k), h, 0), axis=-1)  # h[..., :, k]
    v, tau = _householder(col, k, rows)
    tau = shape_ops.expand_dims(tau, (-1, -2))
    v_col = shape_ops.expand_dims(v, -1)
    v_h = _H(v_col)
    # h <- H^H h H and q <- q H, with H = I - tau v v^H.
    h = ufuncs.subtract(h, ufuncs.multiply(_conj(tau), products.matmul(v_col,
                                                                       products.matmul(v_h, h))))
    h = ufuncs.subtract(h, ufuncs.multiply(tau, products.matmul(products.matmul(h, v_col),
                                                                v_h)))
    q = ufuncs.subtract(q, ufuncs.multiply(tau, products.matmul(products.matmul(q, v_col),
                                                                v_h)))
    return h, q

  # n - 1 reflectors, as gehrd: the last only makes a complex subdiagonal entry real.
  h, q = fori_loop(0, max(n - 1, 0), step, (a, q))
  h = creation.triu(h, -1)
  return (h, q) if calc_q else h


def _conj(x):
  if not _is_complex(x):
    return x
  return lax_ew.complex(lax_ew.real(x), lax_ew.neg(lax_ew.imag(x)))


# ---- tridiagonal eigenvalues ----

def _sturm_count(d, e2, x, pivmin):
  """The number of eigenvalues below each x [..., k] of the symmetric tridiagonal
  matrix with diagonal d [..., n] and squared off-diagonal e2 [..., n-1]: the number
  of negative pivots of the LDL^T factorization of T - x I."""
  d_t = shape_ops.moveaxis(d, -1, 0)                       # [n, ...]
  # e2 with a zero in front: pivot i divides e2[i - 1] by pivot i - 1.
  e2_t = shape_ops.moveaxis(shape_ops.concatenate([ufuncs.multiply(d[..., :1], 0), e2],
                                                  axis=-1), -1, 0)

  def body(carry, de):
    q, count = carry
    di, ei2 = de
    q = ufuncs.subtract(ufuncs.subtract(shape_ops.expand_dims(di, -1), x),
                        ufuncs.divide(shape_ops.expand_dims(ei2, -1), q))
    # A zero pivot is moved off zero (LAPACK's pivmin), so the next division is finite.
    q = ufuncs.where(ufuncs.less(ufuncs.abs(q), pivmin), ufuncs.negative(pivmin), q)
    return (q, ufuncs.add(count, ufuncs.less(q, 0).astype(np.int32))), None

  ones = ufuncs.add(ufuncs.multiply(x, 0), 1)
  zeros = ufuncs.multiply(x, 0).astype(np.int32)
  (_, count), _ = scan(body, (ones, zeros), (d_t, e2_t))
  return count


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None):
  """Eigenvalues (ascending) and optionally eigenvectors of the Hermitian tridiagonal
  matrix with diagonal `d` and off-diagonal `e`.

  Args:
    d: [..., n] real diagonal.
    e: [..., n - 1] off-diagonal (real or complex: T[i+1, i] = e[i],
      T[i, i+1] = conj(e[i])).
    eigvals_only: return only the eigenvalues (found by bisection on Sturm
      counts); otherwise `(w, v)` with the eigenvectors in v's columns (from a
      dense Hermitian eigensolver).
    select: 'a' (all) or 'i' (the eigenvalues with indices select_range =
      (lo, hi), inclusive, static). 'v' (a value range) would need a
      data-dependent output size and is not supported (as in JAX).
    tol: accepted for compatibility; the bisection always runs to machine
      precision (a fixed number of halvings, so the program has static shapes).

  Example:
    >>> eigh_tridiagonal(jnp.array([1., 2., 3.]), jnp.array([1., 1.]), eigvals_only=True)
  """
  d, = _inexact("jax.scipy.linalg.eigh_tridiagonal", d)
  e, = _inexact("jax.scipy.linalg.eigh_tridiagonal", e)
  if _is_complex(d):
    raise TypeError("jax.scipy.linalg.eigh_tridiagonal: argument d (the diagonal of a "
                    "Hermitian matrix) must be real.")
  if util.ndim(d) < 1 or util.shape(e) != util.shape(d)[:-1] + (max(util.shape(d)[-1] - 1,
                                                                    0),):
    raise ValueError("jax.scipy.linalg.eigh_tridiagonal: arguments d and e must have "
                     "shapes [..., n] and [..., n - 1], got "
                     f"{util.shape(d)} and {util.shape(e)}.")
  n = util.shape(d)[-1]
  real = util.dtype_of(d)
  if dtypes.to_real_dtype(util.dtype_of(e)) != real:
    real = dtypes.result_type(real, dtypes.to_real_dtype(util.dtype_of(e)))
    d = d.astype(real)
  if select == "a":
    lo_i, hi_i = 0, n - 1
  elif select == "i":
    try:
      lo_i, hi_i = (operator.index(v) for v in select_range)
    except TypeError:
      raise TypeError("jax.scipy.linalg.eigh_tridiagonal: with select='i', argument "
                      "select_range must be a pair of integers (lo, hi), got "
                      f"{select_range!r}.") from None
    if not 0 <= lo_i <= hi_i < n:
      raise ValueError(f"jax.scipy.linalg.eigh_tridiagonal: select_range {select_range} "
                       f"must satisfy 0 <= lo <= hi < {n}.")
  elif select == "v":
    raise NotImplementedError("jax.scipy.linalg.eigh_tridiagonal: select='v' (a value "
                              "range) gives a data-dependent number of eigenvalues and "
                              "is not supported; use select='a' or 'i'.")
  else:
    raise ValueError("jax.scipy.linalg.eigh_tridiagonal: argument select must be 'a', 'i' "
                     f"or 'v', got {select!r}.")
  del tol
  if not eigvals_only:
    v, w = lax_linalg.eigh(_tridiagonal_lower(d, e), lower=True, symmetrize_input=False)
    return w[..., lo_i:hi_i + 1], v[..., :, lo_i:hi_i + 1]
  if n == 0:
    return d

  # Bisection has no useful derivative (it would differentiate the search's end
  # points): the tangent is first-order perturbation theory, dw_k = v_k^H dT v_k,
  # with the eigenvectors from a dense solve (valid for distinct eigenvalues).
  @custom_jvp
  def eigvals(d, e):
    return _bisect_eigvals(d, e, lo_i, hi_i)

  @eigvals.defjvp
  def eigvals_jvp(primals, tangents):
    d, e = primals
    dd, de = tangents
    w = eigvals(d, e)
    v, _ = lax_linalg.eigh(_tridiagonal_lower(d, e), lower=True, symmetrize_input=False)
    v = v[..., :, lo_i:hi_i + 1]                                    # [..., n, k]
    dw = reductions.sum(ufuncs.multiply(_abs2(v), shape_ops.expand_dims(dd, -1)), axis=-2)
    # T[i + 1, i] = e[i] and T[i, i + 1] = conj(e[i]): 2 Re(conj(v[i + 1]) de[i] v[i]).
    cross = ufuncs.multiply(_conj(v[..., 1:, :]), v[..., :-1, :])
    cross = _real_part(ufuncs.multiply(cross, shape_ops.expand_dims(de, -1)))
    dw = ufuncs.add(dw, ufuncs.multiply(reductions.sum(cross, axis=-2), 2))
    return w, dw.astype(util.dtype_of(w))

  return eigvals(d, e)


def _tridiagonal_lower(d, e):
  """The lower triangle of the Hermitian tridiagonal matrix (d on the diagonal, e
  below it: T[i + 1, i] = e[i]), all that eigh reads."""
  n = util.shape(d)[-1]
  dt = util.dtype_of(e) if _is_complex(e) else util.dtype_of(d)
  e_pad = shape_ops.concatenate([e.astype(dt), ufuncs.multiply(d[..., :1], 0).astype(dt)],
                                axis=-1)
  return ufuncs.add(ufuncs.multiply(shape_ops.expand_dims(d.astype(dt), -1),
                                    creation.eye(n, dtype=dt)),
                    ufuncs.multiply(shape_ops.expand_dims(e_pad, -2),
                                    creation.eye(n, k=-1, dtype=dt)))


def _bisect_eigvals(d, e, lo_i, hi_i):
  """Eigenvalues lo_i..hi_i (ascending) of the tridiagonal matrix, by bisection on
  Sturm counts, all at once: every step halves each eigenvalue's interval."""
  n = util.shape(d)[-1]
  real = util.dtype_of(d)
  e2 = _abs2(e).astype(real)
  # Gershgorin bounds hold every eigenvalue.
  abs_e = ufuncs.sqrt(e2)
  zero = ufuncs.multiply(d[..., :1], 0)
  pad_e = shape_ops.concatenate([zero, abs_e, zero], axis=-1)
  radius = ufuncs.add(pad_e[..., :-1], pad_e[..., 1:])
  lo = reductions.min(ufuncs.subtract(d, radius), axis=-1, keepdims=True)
  hi = reductions.max(ufuncs.add(d, radius), axis=-1, keepdims=True)
  finfo = dtypes.finfo(real)
  scale = ufuncs.maximum(ufuncs.abs(lo), ufuncs.abs(hi))
  # The smallest pivot magnitude allowed (LAPACK's pivmin), so no division is by 0.
  max_e2 = reductions.max(e2, axis=-1, keepdims=True) if n > 1 else zero
  pivmin = ufuncs.multiply(ufuncs.maximum(max_e2, 1), float(finfo.tiny))
  # Widen by a little so the ends are strictly outside the spectrum.
  pad_w = ufuncs.add(ufuncs.multiply(scale, 2 * n * float(finfo.eps)), pivmin)
  lo, hi = ufuncs.subtract(lo, pad_w), ufuncs.add(hi, pad_w)
  k = creation.arange(lo_i, hi_i + 1, dtype=np.int32)
  shape_k = util.shape(lo)[:-1] + (hi_i - lo_i + 1,)
  lo_k, hi_k = util.broadcast_to(lo, shape_k), util.broadcast_to(hi, shape_k)
  # Enough halvings to get from the Gershgorin width to the spacing of floats.
  steps = int(finfo.nmant) + 8 + int(np.ceil(np.log2(max(n, 1))))

  def bisect(_, lh):
    lo_k, hi_k = lh
    mid = ufuncs.multiply(ufuncs.add(lo_k, hi_k), 0.5)
    below = _sturm_count(d, e2, mid, pivmin)          # eigenvalues < mid
    go_left = ufuncs.greater(below, k)                 # eigenvalue k is < mid
    return ufuncs.where(go_left, lo_k, mid), ufuncs.where(go_left, mid, hi_k)

  lo_k, hi_k = fori_loop(0, steps, bisect, (lo_k, hi_k))
  return ufuncs.multiply(ufuncs.add(lo_k, hi_k), 0.5)


# ---- special matrices ----

def toeplitz(c, r=None):
  """The Toeplitz matrix with first column `c` and first row `r`.

  Args:
    c: [..., m], the first column (leading dimensions batch).
    r: [..., n], the first row; its first entry is ignored (c[0] is used).
      Default: conj(c), giving a Hermitian matrix.

  Example:
    >>> toeplitz(jnp.array([1, 2, 3]), jnp.array([1, 4, 5]))
  """
  util.check_arraylike_or_list("jax.scipy.linalg.toeplitz", c)
  c = util.to_array(c)
  if r is None:
    r = _conj(c)
  else:
    util.check_arraylike_or_list("jax.scipy.linalg.toeplitz", r)
  c, r = (util.to_array(x) for x in util.promote_dtypes(c, r))
  c, r = shape_ops.atleast_1d(c), shape_ops.atleast_1d(r)
  batch = util.broadcast_shapes(util.shape(c)[:-1], util.shape(r)[:-1])
  m, n = util.shape(c)[-1], util.shape(r)[-1]
  c = util.broadcast_to(c, batch + (m,))
  r = util.broadcast_to(r, batch + (n,))
  # T[i, j] = v[n - 1 + i - j] with v = (r[n-1], ..., r[1], c[0], ..., c[m-1]).
  v = shape_ops.concatenate([shape_ops.flip(r[..., 1:], -1), c], axis=-1)
  idx = (n - 1) + np.arange(m)[:, None] - np.arange(n)[None, :]
  return v[..., idx]


def hilbert(n):
  """The n x n Hilbert matrix, H[i, j] = 1 / (i + j + 1), in the default float dtype.

  Example:
    >>> hilbert(3)[0]       # [1., 1/2, 1/3]
  """
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"jax.scipy.linalg.hilbert: argument n must be an integer, got "
                    f"{n!r}.") from None
  if n < 0:
    raise ValueError(f"jax.scipy.linalg.hilbert: argument n must be >= 0, got {n}.")
  a = creation.arange(n, dtype=dtypes.canonicalize_dtype(np.float64))
  return ufuncs.divide(1, ufuncs.add(ufuncs.add(a[:, None], a[None, :]), 1))
