"""Regression tests for the differential fuzzer's finds of run 6 (issue 13).

Every expected value, type or message was recorded from JAX 0.10.2 (x64 off), not
computed from it at test time. The file runs unchanged under real JAX when its imports
are swapped, apart from the half-precision cholesky, which JAX refuses with another
exception (NotImplementedError), the unsafe-scatter warning's location (JAX
attributes it to its own scatter.py; tracejax to the caller's line), and the empty
inverse FFT's transpose (JAX: ZeroDivisionError; here a ValueError, documented).
"""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.linalg as jsl
import tracejax.scipy.special as jsp

_SUB_BOOL = "sub does not accept dtype bool at position 0"


# ---- softmax of bools (seed 315, #1110) ----

@pytest.mark.parametrize("fn", [jax.nn.softmax, jax.nn.log_softmax, jsp.softmax,
                                jsp.log_softmax])
def test_softmax_of_bools_raises_as_jax(fn):
  # JAX subtracts the max with lax.sub, which refuses bools (also jitted, also empty).
  b = np.array([True, False])
  with pytest.raises(TypeError, match=_SUB_BOOL):
    fn(b)
  with pytest.raises(TypeError, match=_SUB_BOOL):
    jax.jit(fn)(b)
  with pytest.raises(TypeError, match=_SUB_BOOL):
    fn(np.zeros((0,), bool))


def test_softmax_of_bools_reports_a_bad_axis_first():
  with pytest.raises(ValueError, match="axis -1 is out of bounds for array of dimension 0"):
    jax.nn.softmax(True)
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 1"):
    jax.nn.softmax(np.array([True, False]), axis=3)
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 1"):
    jsp.softmax(np.array([True, False]), axis=3)
  with pytest.raises(ValueError, match="axis -1 is out of bounds for array of dimension 0"):
    jsp.logsumexp(1.0, axis=-1)


def test_softmax_of_bools_with_where_and_of_ints_still_work():
  b = np.array([True, False])
  np.testing.assert_allclose(jax.nn.softmax(b, where=b), [1.0, 0.0])
  out = jax.nn.log_softmax(b, where=b)
  np.testing.assert_allclose(out, [0.0, -np.inf])
  out = jax.nn.log_softmax(np.array([1, 2]))
  assert out.dtype == np.float32
  np.testing.assert_allclose(out, [-1.3132616, -0.31326163], rtol=1e-6)
  np.testing.assert_allclose(jax.nn.softmax(np.int8([1, 2])), [0.26894143, 0.7310586],
                             rtol=1e-6)


# ---- power with an integer exponent array (seed 315, #2668) ----

def test_power_of_a_weak_base_by_a_strong_integer_exponent_is_strong():
  # JAX passes an integer exponent to lax.pow unpromoted: weak only if both are weak.
  wf = jnp.asarray(2.0)
  i32 = np.array([1, 2], np.int32)
  for out in (jnp.power(wf, i32), wf ** i32, jnp.power(wf, np.array([1, 2], np.int8)),
              jnp.power(wf, np.array([1, 2], np.uint8)), jax.jit(jnp.power)(wf, i32),
              jax.vmap(lambda e: jnp.power(wf, e))(i32)):
    assert out.dtype == np.float32 and not out.weak_type
    np.testing.assert_allclose(out, [2.0, 4.0])
  out = jnp.power(jnp.asarray(1 + 1j), i32)
  assert out.dtype == np.complex64 and not out.weak_type
  # Weak exponents, bool exponents and integer bases keep their earlier types.
  assert jax.jit(jnp.power)(wf, jnp.asarray(2)).weak_type
  assert jnp.power(wf, np.array([True, False])).weak_type
  assert jnp.power(i32, wf).weak_type
  h = jnp.power(np.array([2.0, 3.0], np.float16), i32)
  assert h.dtype == np.float16 and not h.weak_type
  # The fuzzer's program: a bool to the power 3.0 (weak float), then to an int32 array.
  x0 = np.array([[1, 5, -2], [-4, 3, -3]], np.int32)
  v1 = jnp.logical_or(x0, x0) ** 3.0
  assert v1.weak_type
  v2 = jnp.power(v1, x0)
  assert v2.dtype == np.float32 and not v2.weak_type
  np.testing.assert_allclose(v2, np.ones((2, 3)))


# ---- empty half-precision SVD/QR; cholesky; cond (seed 315, #2074) ----

@pytest.mark.parametrize("dt", [np.float16, jnp.bfloat16])
@pytest.mark.parametrize("shape", [(0, 0), (2, 0), (0, 3), (3, 0, 0)])
def test_svd_and_qr_of_an_empty_half_precision_matrix(dt, shape):
  # JAX answers an empty SVD/QR without LAPACK, in any floating dtype.
  x = np.zeros(shape, dt)
  n2 = jnp.linalg.norm(x, 2, axis=(-2, -1))
  assert n2.dtype == np.dtype(dt) and n2.shape == shape[:-2]
  np.testing.assert_array_equal(np.asarray(n2, np.float32), 0)
  nn = jnp.linalg.norm(x, "nuc", axis=(-2, -1))
  np.testing.assert_array_equal(np.asarray(nn, np.float32), 0)
  s = jnp.linalg.svd(x, compute_uv=False)
  assert s.dtype == np.dtype(dt) and s.shape == shape[:-2] + (0,)
  u, s, vh = jnp.linalg.svd(x)
  m, n = shape[-2:]
  assert u.shape == shape[:-2] + (m, m) and vh.shape == shape[:-2] + (n, n)
  np.testing.assert_array_equal(np.asarray(u, np.float32),
                                np.broadcast_to(np.eye(m), u.shape))
  np.testing.assert_array_equal(np.asarray(vh, np.float32),
                                np.broadcast_to(np.eye(n), vh.shape))
  q, r = jnp.linalg.qr(x)  # mode="reduced"
  k = min(m, n)
  assert q.dtype == np.dtype(dt) and q.shape == shape[:-2] + (m, k)
  assert r.shape == shape[:-2] + (k, n)
  # The fuzzer's program: the 2-norm of a (2, 0) float16 matrix is 0.
  if shape == (2, 0) and dt is np.float16:
    out = jnp.linalg.norm(x, 2)
    assert out.dtype == np.float16 and float(out) == 0.0


def test_half_precision_cholesky_is_refused_as_the_other_lapack_calls():
  # JAX's CPU cholesky is LAPACK's potrf: no float16/bfloat16, even for an empty matrix
  # (JAX: NotImplementedError "Unsupported dtype float16" in the lowering; tracejax: a
  # TypeError naming the operation, the documented `lapack-half-precision` difference).
  for x in (np.eye(2, dtype=np.float16), np.zeros((0, 0), np.float16),
            np.eye(2, dtype=jnp.bfloat16)):
    with pytest.raises(TypeError, match="cholesky requires a float32, float64"):
      jnp.linalg.cholesky(x)
    with pytest.raises(TypeError, match="cholesky requires a float32, float64"):
      jsl.cholesky(x)
  np.testing.assert_allclose(jnp.linalg.cholesky(np.eye(2, dtype=np.float32)), np.eye(2))


def test_cond_rejects_empty_and_one_dimensional_inputs_as_jax():
  for shape in ((0, 0), (2, 0), (3, 0, 0)):
    with pytest.raises(ValueError, match=r"jnp.linalg.cond: input array must not be "
                       r"empty; got arr.shape=\(" + ", ".join(map(str, shape))):
      jnp.linalg.cond(np.zeros(shape, np.float32))
  with pytest.raises(ValueError, match="must not be empty"):
    jnp.linalg.cond(np.zeros((0, 0), np.float32), 1)
  with pytest.raises(ValueError, match=r"input array must be at least 2D; got "
                     r"arr.shape=\(3,\)"):
    jnp.linalg.cond(np.ones(3, np.float32))
  # An empty batch of non-empty matrices is not an error: an empty float32 result
  # (JAX 0.10.2: shape (0,) for an int32 (0, 2, 2), in every norm), also under jit/vmap
  for p in (None, 2, -2, "fro", 1, np.inf, "nuc"):
    r = jnp.linalg.cond(np.zeros((0, 2, 2), np.int32), p)
    assert r.shape == (0,) and r.dtype == np.float32, p
  assert jnp.linalg.cond(np.zeros((2, 0, 3, 3), np.float32)).shape == (2, 0)
  assert jax.jit(jnp.linalg.cond)(np.zeros((0, 2, 2), np.float32)).shape == (0,)
  assert jax.vmap(jnp.linalg.cond)(np.zeros((0, 2, 2), np.float32)).shape == (0,)


# ---- unique of complex inputs and weak inputs (seed 315, #1434) ----

def test_unique_of_a_weak_complex_scalar_has_a_weak_cotangent():
  # JAX replaces complex NaNs with a strong nan+0j first (a `where`), whose transposed
  # conversion makes the cotangent weak again; real inputs take no such step.
  x = 1 - 0.5j
  for kw, val in (({"size": 3, "fill_value": 0}, 1), ({"size": 3}, 3), ({"size": 1}, 1)):
    g = jax.grad(lambda d: jnp.sum(jnp.real(jnp.unique(d, **kw))))(x)
    assert g.dtype == np.complex64 and g.weak_type, kw
    np.testing.assert_allclose(g, val)
  g = jax.grad(lambda d: jnp.sum(jnp.unique(d, size=3)))(2.0)
  assert g.dtype == np.float32 and not g.weak_type
  np.testing.assert_allclose(g, 3.0)
  out = jnp.unique(x, size=3)
  assert out.dtype == np.complex64 and not out.weak_type


def test_unique_default_fill_keeps_a_weak_type():
  out = jnp.unique(jnp.asarray(2.0), size=3)
  assert out.weak_type
  np.testing.assert_allclose(out, [2.0, 2.0, 2.0])
  out = jnp.unique(jnp.asarray(2.0), size=3, fill_value=0)
  assert not out.weak_type
  np.testing.assert_allclose(out, [2.0, 0.0, 0.0])


def test_unique_makes_every_complex_nan_one_value():
  c = np.array([complex(np.nan, 1), complex(1, np.nan), 1, 1j], np.complex64)
  vals, idx, inv, counts = jnp.unique(c, return_index=True, return_inverse=True,
                                      return_counts=True)
  np.testing.assert_array_equal(vals, np.array([1j, 1, complex(np.nan, 0)], np.complex64))
  np.testing.assert_array_equal(idx, [3, 2, 0])
  np.testing.assert_array_equal(inv, [2, 2, 1, 0])
  np.testing.assert_array_equal(counts, [1, 1, 2])


# ---- run 7 (seeds 316-317) ----

def test_grad_of_a_0d_pad_is_strong():
  # JAX's pad transpose always pads the cotangent with a strong zero (nothing to undo
  # here), so grad's weak seed comes back strong (seed 316, #39).
  z = jnp.zeros((), jnp.float32)
  g = jax.grad(lambda d: jnp.sum(jax.lax.pad(d, z, [])))(2.0)
  assert g.dtype == np.float32 and not g.weak_type and float(g) == 1.0
  g = jax.grad(lambda d: jnp.sum(jax.lax.pad(d, z, [(1, 0, 0)])))(jnp.full((1,), 2.0))
  assert not g.weak_type
  np.testing.assert_allclose(g, [1.0])


def test_a_failed_computation_raises_jax_runtime_error_on_fetch():
  # XLA's CPU FFT refuses the column-major layout LAPACK's getrf asks of its input; the
  # failure surfaces when the result is fetched, as JaxRuntimeError (seed 317, #709).
  def f(v0):
    v1 = jnp.fft.irfftn(v0)
    return jnp.linalg.solve(v1, v1)
  x = np.array([[0.5, 0.25], [0.125, 1.0]], np.float32)
  with pytest.raises(jax.errors.JaxRuntimeError, match="RET_CHECK failure"):
    np.asarray(jax.jit(f)(x))


def test_unsafe_scatter_casts_warn_as_jax():
  # JAX 0.10.2 warns (FutureWarning) when standard promotion would not cast the update
  # to the array's dtype, and casts anyway.
  import warnings
  x = jnp.arange(3)
  msg = ("scatter inputs have incompatible types: cannot safely cast value from "
         "dtype=float32 to dtype=int32 with jax_numpy_dtype_promotion=standard. In future "
         "JAX releases this will result in an error.")
  with pytest.warns(FutureWarning) as rec:
    out = x.at[0].set(1.5)
  assert str(rec[0].message) == msg and rec[0].filename == __file__
  np.testing.assert_array_equal(out, [1, 1, 2])
  for f, src, dst in ((lambda: x.at[0].add(1.5), "float32", "int32"),
                      (lambda: x.astype(jnp.float16).at[0].set(np.float32(1.5)),
                       "float32", "float16"),
                      (lambda: (x > 0).at[0].set(2), "int32", "bool"),
                      (lambda: jax.jit(lambda a: a.at[0].mul(2.0))(x), "float32", "int32")):
    with pytest.warns(FutureWarning, match=f"from dtype={src} to dtype={dst} "):
      f()
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    # Safe: a weak int into uint8 (even -1, which wraps to 255), narrower ints, a weak
    # float into bfloat16, and reading.
    u8 = x.astype(jnp.uint8)
    np.testing.assert_array_equal(u8.at[0].set(-1), [255, 1, 2])
    x.at[0].set(np.int8(1))
    x.astype(jnp.bfloat16).at[0].set(1.5)
    x.at[0].get()


def test_gamma_sample_derivative_sums_the_series_to_convergence():
  # JAX sums the igamma series until it converges (seed 317 #2793: grad of a bfloat16
  # gamma sample at alpha ~ 1.3e9). Values recorded from JAX 0.10.2 (float32).
  a = np.float32([1e6, 1.3e9, 3e5, 1e6])
  x = np.float32([999453.5, 1299980288.0, 299500.0, 1000500.0])
  np.testing.assert_allclose(lax_random_gamma_grad(a, x),
                             [0.999931275844574, 4.33168888092041, 0.9992201328277588,
                              1.0552763938903809], rtol=1e-5)
  np.testing.assert_allclose(jax.lax.igamma(a[:1], x[:1]), [0.34336942434310913], rtol=1e-5)
  np.testing.assert_allclose(jax.lax.igamma_grad_a(a[:1], x[:1]),
                             [-0.00040362164145335555], rtol=1e-4)


def lax_random_gamma_grad(a, x):
  return jax.lax.random_gamma_grad(a, x)


def test_an_empty_read_of_a_traced_array_still_depends_on_it():
  # JAX's gather of an empty selection depends on its operand, so reverse mode through
  # a gamma sampler's derivative raises even for empty arrays (seed 316 #4289).
  k = jax.random.PRNGKey(1)
  p = jax.nn.softmax(jnp.arange(2))

  def f(x):
    v = jax.random.choice(jax.random.PRNGKey(33), x, (2,), p=p)
    return jnp.sum(jax.random.beta(k, jnp.abs(v) + 0.5, 2.0))

  x0 = np.zeros((2, 0), np.float32)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                     "lax.while_loop"):
    jax.hessian(jax.grad(f))(x0)
  assert jax.hessian(f)(x0).shape == (2, 0, 2, 0)
  g = jax.grad(lambda x: jnp.sum(x[jnp.array([0, 1])]))(x0)
  assert g.shape == (2, 0) and g.dtype == np.float32
  out = jax.jit(lambda x: x[:, jnp.array([0, 0, 0])] if x.shape[1] else x[jnp.array([1])])(
      x0)
  assert out.shape == (1, 0)


# ---- run 8 (seeds 318-319) ----

def test_squareplus_keeps_a_weak_type_and_refuses_lists():
  # seed 319 #1502: JAX promotes with its weak type (a Python int gives a weak float).
  out = jax.nn.squareplus(3)
  assert out.dtype == np.float32 and out.weak_type
  np.testing.assert_allclose(out, 3.3027756, rtol=1e-6)
  assert not jax.nn.squareplus(np.int32(3)).weak_type
  with pytest.raises(TypeError, match="squareplus requires ndarray or scalar arguments, "
                     "got <class 'list'> at position 0"):
    jax.nn.squareplus([1.0, 2.0])


def test_xlogy_derivative_of_an_integer_y_raises_jax_message():
  # JAX's JVP rule applies lax.log to y as given (seed 318 #2435, there in dead code).
  x = np.array([0.5, 0.25], np.float32)
  msg = ("log does not accept dtype int32. Accepted dtypes are subtypes of floating, "
         "complexfloating.")
  with pytest.raises(TypeError, match=msg):
    jax.jvp(lambda x: jsp.xlogy(x, 1), (x,), (x,))
  with pytest.raises(TypeError, match="log1p does not accept dtype int32. Accepted"):
    jax.grad(lambda x: jsp.xlog1py(x, jnp.zeros(2, jnp.int32) + 1).sum())(x)
  np.testing.assert_allclose(jax.grad(lambda y: jsp.xlogy(2.0, y))(1.0), 2.0)


# ---- run 9 (seeds 320-321) ----

def test_unique_of_an_empty_weak_array_stays_weak():
  # seed 321 #2648: JAX fills an empty input's result with full_like (its weak type).
  e = jnp.zeros((0,), jnp.int32) // 0.5
  assert e.weak_type
  for kw in ({"size": 2, "fill_value": 0}, {"size": 2, "fill_value": np.float32(1)}, {}):
    assert jnp.unique(e, **kw).weak_type, kw
  assert not jnp.unique(np.zeros((0,), np.float32), size=2, fill_value=0).weak_type


def test_take_from_an_empty_axis_checks_the_indices_as_jax():
  # seed 320 #3839: JAX refuses non-empty indices into an empty axis even when the
  # result is empty (another axis has size 0), and refuses modes it does not know.
  a = np.zeros((0, 0), np.float32)
  for mode in (None, "clip", "wrap", "fill"):
    for axis in (0, 1):
      with pytest.raises(IndexError, match=r"Cannot do a non-empty jnp.take\(\) from an "
                         "empty axis"):
        jnp.take(a, jnp.array([0, 1]), axis=axis, mode=mode)
    assert jnp.take(a, jnp.array([], jnp.int32), axis=0, mode=mode).shape == (0, 0)
  assert jnp.take(np.zeros((2, 0)), jnp.array([0, 1]), axis=0).shape == (2, 0)
  with pytest.raises(ValueError, match="Invalid mode 'promise_in_bounds' for np.take"):
    jnp.take(np.zeros(3), jnp.array([0]), mode="promise_in_bounds")


# ---- run 9 (seeds 320-321), continued ----

def _loop_abs(x):
  return jax.lax.while_loop(lambda st: st[0] < 3, lambda st: (st[0] + 1, jnp.abs(st[1])),
                            (0, x))[1]


@pytest.mark.parametrize("fn", [jnp.fmin, jnp.fmax, jnp.copysign,
                                lambda a, b: jnp.where(a < 1, a, b)])
def test_empty_select_of_a_while_output_needs_no_loop_transpose(fn):
  # seed 320 #1772: jacrev(lambda x: fmin(x, while_loop(...x...))) of an empty array:
  # JAX's jnp functions built on its internal where return the first operand for an
  # empty result, so the while's output needs no cotangent: (2, 0, 2, 0) float16 zeros.
  x = np.zeros((2, 0), np.float16)
  j = jax.jacrev(lambda v: fn(v, _loop_abs(v)))(x)
  assert j.shape == (2, 0, 2, 0) and j.dtype == np.float16
  assert jax.grad(lambda v: jnp.sum(fn(v, _loop_abs(v))))(x).shape == (2, 0)
  # the loop's output in the selected operand, or any non-empty array, still raises
  # (copysign reads only the sign of its second operand: no cotangent reaches it)
  cases = [(lambda v: fn(_loop_abs(v), v), x), (lambda v: jnp.minimum(v, _loop_abs(v)), x)]
  if fn is not jnp.copysign:
    cases.append((lambda v: fn(v, _loop_abs(v)), np.zeros(2, np.float16)))
  for g, v in cases:
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
      jax.jacrev(g)(v)


# ---- run 10 (seeds 322-323) ----

def test_vjp_of_a_jit_keeps_the_jit_output_weak_types():
  # seed 322 #653: vjp(jit(jacrev(lambda x: lax.pow(x, x))), 2.0). The jitted gradient
  # is weakly typed (its final add_any takes its first operand's type) while the eager
  # one is not; JAX runs the known part of a jit under vjp as a jit, so its primal
  # outputs keep the jit's types: weak, 6.772589 and cotangent 6.733495 (x64 off).
  f = lambda x: jax.lax.pow(x, x)
  assert not jax.grad(f)(2.0).weak_type
  assert jax.jit(jax.grad(f))(2.0).weak_type
  out, pull = jax.vjp(jax.jit(jax.jacrev(f)), 2.0)
  (ct,) = pull(jnp.ones_like(out) * 0.5)
  assert out.weak_type and ct.weak_type
  np.testing.assert_allclose(out, 6.772589, rtol=1e-6)
  np.testing.assert_allclose(ct, 6.733495, rtol=1e-6)
  assert jax.vjp(jax.jit(jax.grad(f)), 2.0)[0].weak_type
  assert not jax.vjp(jax.grad(f), 2.0)[0].weak_type


def test_scan_transpose_keeps_an_unused_outputs_cotangent_symbolic():
  # seed 322 #1620: jacrev(jacfwd(lambda x: lax.map(jnp.square, x))) at a -inf input.
  # The transposed scan multiplied the instantiated zero cotangent of the unused primal
  # output by its residual (0 * -inf = nan); JAX transposes with it symbolically zero.
  x = np.array([1.0, -np.inf], np.float32)
  f = lambda v: jax.lax.map(jnp.square, v)
  want = np.zeros((2, 2, 2), np.float32)
  want[0, 0, 0] = want[1, 1, 1] = 2.
  np.testing.assert_array_equal(jax.jacrev(jax.jacfwd(f))(x), want)
  np.testing.assert_array_equal(jax.jacfwd(jax.jacfwd(f))(x), want)
  t0 = np.array([1., 0.], np.float32)
  g = lambda v: jax.jvp(f, (v,), (t0,))[1]
  np.testing.assert_array_equal(jax.jacrev(g)(x), [[2., 0.], [0., 0.]])


@pytest.mark.parametrize("mode", ["constant", "edge", "symmetric", "reflect", "wrap",
                                  "linear_ramp", "maximum", "mean", "median", "empty"])
def test_pad_of_a_0d_array_returns_it_and_grad_stays_weak(mode):
  # seed 322 #2410: JAX's jnp.pad returns a 0-d array itself (there is no axis to pad),
  # so grad of a weak scalar through it is weak: 1.0, weak_type=True.
  g = jax.grad(lambda d: jnp.sum(jnp.pad(d, 2, mode=mode)))(0.0)
  assert g.weak_type and float(g) == 1.0
  out = jnp.pad(np.float32(3.0), 1, mode=mode)
  assert out.shape == () and isinstance(out, jax.Array)
  assert mode == "empty" or float(out) == 3.0


def test_pad_of_a_0d_array_with_a_function_mode_is_jaxs_width_error():
  # ...but JAX's function mode re-checks the (empty) widths it kept for nd=0 and
  # refuses them, whatever pad_width was (recorded from JAX 0.10.2).
  fn = lambda vector, widths, axis, kwargs: vector
  for width in (0, 1, ((1, 2),)):
    with pytest.raises(ValueError, match=r"jnp.pad: pad_width with nd=0 has unsupported "
                       r"shape \(0,\). Valid shapes are \(0, 2\), \(1, 2\), \(2,\), "
                       r"\(1,\), or \(\)."):
      jnp.pad(np.float32(3.0), width, mode=fn)
  np.testing.assert_array_equal(jnp.pad(np.arange(2.0), 1, mode=fn), [0., 0., 1., 0.])


def test_conv_of_bools_is_an_or_of_ands():
  # seed 325 #3163: JAX 0.10.2 convolves bool arrays (XLA's pred convolution: each output
  # is True where some window position has both operands True); tracejax refused them.
  x = np.array([[[True, False, False, False, True]]])
  k = np.array([[[True, False, True]]])
  conv = lambda a, b, pad: jax.lax.conv_general_dilated(a, b, (1,), pad)
  for f in (conv, jax.jit(conv, static_argnums=2)):
    out = f(x, k, "SAME")
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [[[False, True, False, True, False]]])
    np.testing.assert_array_equal(f(x, k, "VALID"), [[[True, False, True]]])
    np.testing.assert_array_equal(f(x, np.array([[[True, True, False]]]), "VALID"),
                                  [[[True, False, False]]])
  v = np.array([[4, 9, 7], [1, 2, 0], [6, 0, 8]], np.uint32) > np.array(
      [[6, 8, 4], [0, 0, 8], [4, 3, 8]], np.uint32)
  out = jax.lax.conv_general_dilated(v[None], jnp.ones((2, 3, 2), v.dtype), (1,), "SAME")
  np.testing.assert_array_equal(out, np.ones((1, 2, 3), bool))
  batched = jax.vmap(lambda a: conv(a, k, "VALID"))(np.stack([x, ~x]))
  np.testing.assert_array_equal(batched[1], conv(~x, k, "VALID"))


def test_scatter_of_a_host_float_into_ints_converts_as_xla():
  # seed 324 #5429: count_nonzero(...).at[[0, 0]].set(complex64 nan): JAX writes 0 (XLA's
  # conversion: real part, NaN to 0, saturation at the bounds); NumPy's cast gave the
  # minimum. JAX 0.10.2, x64 off, values for every integer dtype:
  a = np.array([-1.5, 300.5, np.nan, np.inf, -np.inf, 3e10, -3e10, 2.7, -2.7], np.float32)
  want = {np.uint8: [0, 255, 0, 255, 0, 255, 0, 2, 0],
          np.int8: [-1, 127, 0, 127, -128, 127, -128, 2, -2],
          np.int32: [-1, 300, 0, 2147483647, -2147483648, 2147483647, -2147483648, 2, -2],
          np.uint32: [0, 300, 0, 4294967295, 0, 4294967295, 0, 2, 0]}
  for dt, w in want.items():
    np.testing.assert_array_equal(jnp.zeros(9, dt).at[:].set(a), np.array(w, dt))
  v = jnp.count_nonzero(np.ones((3, 1), np.float32), axis=0)
  out = v.at[np.array([0, 0])].set(np.array(complex(np.nan, 0), np.complex64))
  assert out.dtype == np.int32 and out.tolist() == [0]
  z = jnp.zeros(1, jnp.int32)
  assert z.at[0].set(np.complex64(complex(-np.inf, 1))).tolist() == [-2147483648]


def test_power_with_a_python_bool_exponent_is_integer_pow():
  # seed 325 #4624: value_and_grad of sum(power(x, False)) at [nan, 0.5, -0.]: JAX stages
  # integer_pow(x, 0) for a Python bool (an int to it), whose derivative is 0 everywhere;
  # a NumPy bool takes the general pow (nan at nan and -0.).
  x = np.array([np.nan, 0.5, -0.0], np.float16)
  g = jax.grad(lambda v: jnp.power(v, False).sum())(x)
  np.testing.assert_array_equal(g, [0., 0., 0.])
  np.testing.assert_array_equal(jax.grad(lambda v: jnp.power(v, True).sum())(x), [1, 1, 1])
  g = jax.grad(lambda v: jnp.power(v, np.bool_(False)).sum())(x)
  np.testing.assert_array_equal(np.isnan(g), [True, False, True])
  assert jnp.power(2, True).weak_type and int(jnp.power(2, True)) == 2
  assert jnp.power(np.array([True, False]), True).tolist() == [1, 0]


def test_xlog1py_rule_computes_its_primal_through_itself():
  # seed 324 #6316: grad of the primal output of jvp(xlog1py(x, x)) at a weak complex
  # scalar: JAX's rule gets its primal from xlog1py itself, so the outer derivative uses
  # the rule again: 1.591972-0.248439j, weak (x64 off).
  import tracejax.scipy.special as sp
  x0 = 1 - 0.5j
  f = lambda d: sp.xlog1py(d, d)
  jv = lambda d: jax.jvp(f, (d,), (jnp.ones_like(d) * 0.5,))
  g = jax.grad(lambda d: jnp.real(jv(d)[0]) + jnp.real(jv(d)[1]))(x0)
  assert g.weak_type and g.dtype == np.complex64
  np.testing.assert_allclose(g, 1.591972 - 0.248439j, rtol=1e-5)
  assert jax.grad(lambda d: jnp.real(jax.jvp(lambda e: sp.xlogy(e, e), (d,),
                                              (0.5 + 0j,))[0]))(x0).weak_type


def test_an_empty_fill_read_does_not_depend_on_the_array():
  # seed 324 #6830: vjp of irfftn(x).at[None].get(mode='fill') for an empty x: JAX's
  # 'fill' read of nothing is the fill value broadcast, so no cotangent reaches the
  # inverse FFT (whose transpose has no 1/n scale when empty); other reads gather.
  x = np.zeros((2, 0), np.float32)
  for read in (lambda v: v.at[None].get(mode="fill", fill_value=2),
               lambda v: v.at[jnp.array([0, 1])].get(mode="fill"),
               lambda v: v.at[:, 1:].get(mode="fill")):
    out, pull = jax.vjp(lambda v: read(jnp.fft.irfftn(v)), x)
    assert 0 in out.shape
    (ct,) = pull(jnp.ones_like(out))
    assert ct.shape == (2, 0) and ct.dtype == np.float32
  for read in (lambda v: v[None], lambda v: v.at[None].get(mode="clip")):
    out, pull = jax.vjp(lambda v: read(jnp.fft.irfftn(v)), x)
    with pytest.raises(ValueError, match="invalid number of FFT data points"):
      pull(jnp.ones_like(out))   # (JAX: ZeroDivisionError, documented)


def test_polyval_of_no_coefficients_still_depends_on_them():
  # seed 325 #6843 (x64): jvp of digamma(polyval([], 0)): JAX's scan over no coefficients
  # gives 0 whose tangent is a real zero, so digamma's pole makes it nan (nan, nan).
  e = np.zeros((0,), np.float32)
  p, t = jax.jvp(lambda d: jax.lax.digamma(jnp.polyval(d, 0)), (e,), (e,))
  assert np.isnan(p) and np.isnan(t)
  for x in (0, 2.0, np.inf, np.array([1., np.inf])):
    r = jnp.polyval(e, x)
    assert not r.weak_type and r.dtype == np.float32 and not np.any(r)
  assert float(jax.grad(lambda x: jnp.polyval(e, x))(np.inf)) == 0.0


# ---- run 12 (seeds 326-327) ----

def test_cond_forwards_an_operand_every_branch_returns():
  # seed 326 #2809: checkpoint(value_and_grad(f)) at 1 - 0.5j, where f passes x through
  # lax.cond(True, identity, identity) into checkpoint(sin): JAX forwards the cond's
  # operand (no cond output, so no transposed identity cond types the cotangent):
  # 0.948864 and 0.609259+0.438487j, both strong.
  def f(d):
    v = jax.lax.cond(True, lambda v: v, lambda v: v, d)
    return 0.0 + jnp.sum(jnp.real(jax.checkpoint(jnp.sin)(v)))
  val, g = jax.checkpoint(jax.value_and_grad(f))(1 - 0.5j)
  assert not val.weak_type and not g.weak_type and g.dtype == np.complex64
  np.testing.assert_allclose(val, 0.948864, rtol=1e-5)
  np.testing.assert_allclose(g, 0.609259 + 0.438487j, rtol=1e-5)
  jaxpr = jax.make_jaxpr(lambda a, b: jax.lax.cond(a > 0, lambda v, w: (w, v + 1),
                                                    lambda v, w: (w, v), a, b))(1., 2.)
  assert jaxpr.jaxpr.outvars[0] is jaxpr.jaxpr.invars[1]      # b itself
  assert len(jaxpr.jaxpr.eqns[-1].outvars) == 1                # only the computed one


def test_a_cond_of_forwarded_outputs_only_runs_only_for_its_effects(capsys):
  # Every output forwarded: nothing to compute, so eagerly no cond runs, and the
  # operand itself comes back; a branch with an effect (a debug print) still runs.
  x = jnp.arange(3.0)
  assert jax.lax.cond(True, lambda v: v, lambda v: v, x) is x

  def noisy(v):
    jax.debug.print("ran {}", v.sum())
    return v
  for pred, printed in ((True, "ran 3.0\n"), (False, "")):
    assert jax.lax.cond(pred, noisy, lambda v: v, x) is x
    assert capsys.readouterr().out == printed


def test_an_update_of_nothing_leaves_x_exactly_as_it_was():
  # seed 328 #554: bits.at[1:].mul(float) of a (1,) uint32 array: JAX returns x itself
  # (1421395077); combining in float32 and casting back rounded it (1421395072). A
  # non-empty update does round-trip every element in JAX too.
  v = jnp.array([1421395077, 5], jnp.uint32)
  with pytest.warns(FutureWarning):
    assert v.at[2:].mul(2.5).tolist() == [1421395077, 5]
    assert v.at[v > 1e10].mul(2.5).tolist() == [1421395077, 5]
    assert v.at[1].mul(2.5).tolist() == [1421395072, 12]
    assert v.at[v > 100].mul(2.5).tolist() == [3553487616, 5]
    assert v[:1].at[1:].mul(jnp.exp(v[:1]), mode="clip").tolist() == [1421395077]


def test_a_fill_read_is_a_new_array_under_vmap():
  # seed 329 #353 (x64): vmap(lambda v: v.at[...].get(mode='fill')) of a NumPy input: JAX
  # gathers for every 'fill' read, so the result is an Array (other reads of `...` hand
  # the NumPy input back in JAX, a documented host passthrough).
  x = np.array([[[-0.475], [-1.067], [1.249]]], np.float16)
  for read in (lambda v: v.at[...].get(mode="fill", fill_value=7),
               lambda v: v.at[:].get(mode="fill")):
    out = jax.vmap(read)(x)
    assert isinstance(out, jax.Array) and out.dtype == np.float16 and not out.weak_type
    np.testing.assert_array_equal(out, x)


# ---- run 14 (seeds 330-331) ----

def test_polyval_of_no_bool_coefficients_stays_bool_and_expm_refuses_half():
  # seed 330 #1745: polyval([], []) of bools is bool (the exact zero sums keep y's dtype);
  # #2061: JAX's expm refuses float16/bfloat16, also for an empty matrix.
  import ml_dtypes
  import tracejax.scipy.linalg as jsl_
  e = np.zeros((0,), bool)
  assert jnp.polyval(e, e).dtype == np.bool_
  assert jnp.polyval(np.zeros(0, np.int32), 3).dtype == np.int32
  for dt in (ml_dtypes.bfloat16, np.float16):
    for n in (0, 2):
      with pytest.raises(TypeError, match=r"A.dtype=(bfloat16|float16) is not supported."):
        jsl_.expm(np.eye(n).astype(dt))
  assert jsl_.expm(np.eye(2, dtype=np.int32)).dtype == np.float32



def test_generic_reduce_window_is_strong_and_python_scalar_inits_keep_their_dtype():
  # seed 331 #361 (x64): a user computation's reduce_window is strongly typed in JAX,
  # whatever its operand; a monoid (add/max/min from their identity) follows its operand.
  from tracejax import lax
  window = lambda init, op: lambda v: lax.reduce_window(v - 1.5, init, op, (2,), (1,),
                                                         "VALID")
  x = jnp.arange(4)  # int32 - 1.5: a weakly typed float32 operand
  assert (x - 1.5).weak_type
  cases = [(window(1.0, lax.mul), False, [0.75, -0.25, 0.75]),
           (window(0.0, lax.add), True, [-2.0, 0.0, 2.0]),
           (window(-np.inf, lax.max), True, [-0.5, 0.5, 1.5])]
  for fn, weak, expected in cases:
    for h in (fn, jax.jit(fn)):
      r = h(x)
      assert r.dtype == np.float32 and r.weak_type == weak
      np.testing.assert_allclose(r, expected)
  # An init built inside jit is a tracer to JAX, so JAX takes the generic primitive
  # (strong), also for a complex operand (seed 331 #361's program, x64 off here).
  inner = lambda v: lax.reduce_window(v - (1 - 2j), jnp.asarray(np.inf, jnp.complex64),
                                      lax.min, (2,), (1,), "VALID")
  assert inner(x).weak_type and not jax.jit(inner)(x).weak_type
  # A Python scalar init keeps its default dtype (float32 here), as in JAX: an int32
  # operand with 1. is a dtype error, unless the init is a monoid's identity.
  msg = (r"reduce_window got inconsistent dtypes for operands and init_values: got "
         r"operand dtypes \[dtype\('int32'\)\] and init_value dtypes "
         r"\[dtype\('float32'\)\]")
  for h in (lambda v: lax.reduce_window(v, 1., lax.mul, (2,), (1,), "VALID"),
            lambda v: lax.reduce_window(v, 0., lax.max, (2,), (1,), "VALID")):
    with pytest.raises(TypeError, match=msg):
      h(x)
    with pytest.raises(TypeError, match=msg):
      jax.jit(h)(x)
  np.testing.assert_array_equal(lax.reduce_window(x, 0., lax.add, (2,), (1,), "VALID"),
                                [1, 3, 5])
  np.testing.assert_array_equal(lax.reduce_window(x, -np.inf, lax.max, (2,), (1,),
                                                  "VALID"), [1, 2, 3])


# ---- run 15 (seeds 332-333) ----

_X16 = np.array([[[1.8427734375, -0.7138671875], [-0.94580078125, 0.3994140625]],
                 [[-1.1943359375, -2.486328125], [-0.32666015625, 1.38671875]]], np.float16)


@pytest.mark.parametrize("jit", [False, True])
def test_an_explicit_half_precision_dtype_accumulates_in_it(jit):
  # seed 332 #2252: JAX's sum/prod/mean accumulate float16 in float32 only when no
  # dtype is given; nanmean passes its dtype, so it sums in float16 (-2.037109375,
  # where the float32 sum rounds to -2.0390625).
  w = jax.jit if jit else (lambda f: f)
  assert float(w(jnp.sum)(_X16)) == -2.0390625
  assert float(w(lambda v: jnp.sum(v, dtype=jnp.float16))(_X16)) == -2.037109375
  assert float(w(lambda v: jnp.nansum(v, dtype=jnp.float16))(_X16)) == -2.037109375
  r = w(lambda v: jnp.nanmean(v, keepdims=True))(_X16)
  assert r.shape == (1, 1, 1) and r.dtype == np.float16
  assert float(r[0, 0, 0]) == -0.254638671875
  assert float(w(jnp.mean)(_X16)) == -0.2548828125


def test_an_empty_gathered_read_is_free_of_the_array():
  # seed 332 #2088: vjp of irfft(x[([],)]) for an empty x: JAX reads an index array
  # (or mask) of an empty result as zeros free of x, so no cotangent reaches the
  # inverse FFT; integer and slice reads, jnp.take with indices and jnp.take from an
  # empty axis still depend on x (the transpose of the empty irfft then raises).
  import ml_dtypes
  x = np.zeros((0,), ml_dtypes.bfloat16)
  for read in (lambda v: v[([True] * 0,)], lambda v: v[jnp.array([], int)],
               lambda v: v[np.zeros(0, bool)],
               lambda v: jnp.take_along_axis(v, jnp.array([], int), 0)):
    out, pull = jax.vjp(lambda v: jnp.fft.irfft(read(v), axis=0), x)
    assert out.shape == (0,) and out.dtype == np.float32
    (ct,) = pull(jnp.ones_like(out))
    assert ct.shape == (0,) and ct.dtype == ml_dtypes.bfloat16
  for read in (lambda v: v[1:], lambda v: jnp.take(v, jnp.array([], int)),
               lambda v: jnp.take(v.reshape(0, 1), jnp.array([0, 0]), axis=1)):
    out, pull = jax.vjp(lambda v: jnp.fft.irfft(read(v), axis=0), np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="invalid number of FFT data points"):
      pull(jnp.ones_like(out))   # (JAX: ZeroDivisionError, documented)


def test_take_along_an_empty_axis_gives_strong_zeros():
  # JAX: zeros of the array's dtype, whatever the indices (no IndexError), strong even
  # for a weakly typed array.
  from tracejax import lax
  x = lax.broadcast(1.0, (2, 0))
  assert x.weak_type
  for arr in (np.zeros((2, 0), np.float32), x):
    r = jnp.take_along_axis(arr, np.zeros((2, 3), np.int32), axis=1)
    assert r.shape == (2, 3) and r.dtype == np.float32 and not r.weak_type
    np.testing.assert_array_equal(r, np.zeros((2, 3)))


def test_half_precision_svd_and_qr_skip_lapack_only_for_matrices_with_no_entries():
  # seed 333 #3895 (x64): svd of an empty batch of 2x2 bfloat16 matrices reaches LAPACK
  # in JAX, which refuses bfloat16 (JAX: NotImplementedError "Unsupported dtype
  # bfloat16"; here the TypeError naming the dtypes LAPACK takes); a matrix with no
  # rows or no columns is answered without it, in both.
  import ml_dtypes
  for dt in (ml_dtypes.bfloat16, np.float16):
    for fn in (lambda a: jnp.linalg.svd(a, compute_uv=False), jnp.linalg.qr,
               jnp.linalg.pinv, jnp.linalg.matrix_rank,
               lambda a: jnp.linalg.norm(a, 2, axis=(-2, -1))):
      with pytest.raises(TypeError, match="requires a float32, float64, complex64 or "
                         "complex128 operand"):
        fn(np.zeros((0, 2, 2), dt))
    s = jnp.linalg.svd(np.zeros((3, 0, 2), dt), compute_uv=False)
    assert s.shape == (3, 0) and s.dtype == dt
    q, r = jnp.linalg.qr(np.zeros((2, 0, 0), dt))
    assert q.shape == r.shape == (2, 0, 0) and q.dtype == dt


def test_scipy_schur_hessenberg_polar_take_no_integers():
  # Recorded from JAX 0.10.2: schur and hessenberg do not promote integers (hessenberg
  # returns matrices with no entries as they are); polar fails reading finfo of the
  # dtype; sqrtm promotes.
  import tracejax.scipy.linalg as jsl_
  msg = ("{} does not accept dtype int32 at position 0. Accepted dtypes at position 0 are "
         "subtypes of floating, complexfloating.")
  for name in ("schur", "hessenberg"):
    for shape in ((2, 2), (0, 2, 2)):
      with pytest.raises(TypeError, match=msg.format(name)):
        getattr(jsl_, name)(np.ones(shape, np.int32))
  h, q = jsl_.hessenberg(np.zeros((2, 0, 0), np.int32), calc_q=True)
  assert h.shape == q.shape == (2, 0, 0) and h.dtype == q.dtype == np.int32
  with pytest.raises(ValueError, match="data type <class 'numpy.int32'> not inexact"):
    jsl_.polar(np.eye(2, dtype=np.int32))
  r = jsl_.sqrtm(np.eye(2, dtype=np.int32))
  assert r.dtype == np.complex64
  np.testing.assert_allclose(r, np.eye(2))


# ---- run 16 (seeds 334-335) ----

def test_zeta_of_an_integer_order_is_not_differentiated_in_it():
  # seed 334 #4558: jvp in q of zeta(False, q) at q = -5.159 (recorded from JAX 0.10.2):
  # JAX's custom_jvp takes x before promotion, so a bool/int x has no tangent and its
  # series is differentiated in q only: -1 (zeta(0, q) = 1/2 - q); a float x = 0. has
  # a zero tangent, and 0 * log(negative) makes the tangent NaN there, in both.
  from tracejax.scipy.special import zeta
  q = np.float32(-5.159082889556885)
  for x, want in ((False, -1.0), (0, -1.0), (0.0, np.nan), (2, 494.50488)):
    for f in (lambda d: jax.jvp(lambda e: zeta(x, e), (d,), (np.float32(1),)),
              jax.jit(lambda d: jax.jvp(lambda e: zeta(x, e), (d,), (np.float32(1),)))):
      _, t = f(q)
      np.testing.assert_allclose(t, want, rtol=1e-5)
  np.testing.assert_allclose(jax.grad(lambda d: zeta(2, d))(np.float32(2.5)), -0.23620406,
                             rtol=1e-6)


# ---- run 17 (seeds 336-337) ----

def test_squareplus_of_integers_squares_in_their_dtype():
  # seed 337 #2285 (x64): squareplus(int8 98) is NaN in JAX 0.10.2: 98 ** 2 wraps around
  # in int8 (-124), + 4 is -120, and its square root is NaN. Float results elsewhere.
  for f in (jax.nn.squareplus, jax.jit(jax.nn.squareplus)):
    r = f(np.int8(98))
    assert r.dtype == np.float32 and not r.weak_type and np.isnan(r)
    r = f(np.array([1, 2], np.uint8))
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, [1.618034, 2.4142137], rtol=1e-6)
  r = jax.nn.squareplus(3)
  assert r.weak_type and r.dtype == np.float32
  np.testing.assert_allclose(r, 3.3027756, rtol=1e-6)
  assert float(jax.nn.squareplus(np.int8(98), 2.5)) != float(jax.nn.squareplus(98.0, 2.5))


def test_an_integer_set_of_a_float_passes_through_the_promoted_dtype():
  # seed 336 #2975: JAX's x.at[i].set(2.) of a uint32 x combines in float32 and casts
  # back, so every element passes through float32 (recorded from JAX 0.10.2).
  x = jnp.array([[1, 2, 3], [8271619, 3430187372, 2359847070]], jnp.uint32)
  for f in (lambda v: v.at[np.array([-2, 0])].set(2.0), lambda v: v.at[0, 1].set(2.0)):
    for g in (f, jax.jit(f)):
      r = g(x)
      assert r.dtype == np.uint32
      np.testing.assert_array_equal(r[1], [8271619, 3430187264, 2359847168])
  np.testing.assert_array_equal(x.astype(jnp.int32).at[0].set(2.0)[1],
                                [8271619, -864779904, -1935120256])
  np.testing.assert_array_equal(x.at[0].set(np.uint32(2))[1], x[1])   # same dtype: exact


def test_an_empty_where_select_of_a_host_value_is_an_array():
  # seed 338 #1086: jacrev in x0 of fmin(x1, x0).at[..., None].set(0.) for an empty int32
  # NumPy x1 and float16 x0: the empty fmin is x1 broadcast, an Array (JAX: a float16
  # (0, 0) jacobian), not the NumPy array.
  x0, x1 = np.zeros((0,), np.float16), np.zeros((0,), np.int32)
  r = jax.jacrev(lambda a: jnp.fmin(x1, a).at[..., None].set(0.0))(x0)
  assert r.shape == (0, 0)
  assert r.dtype == np.float16
  for fn in (jnp.fmin, jnp.fmax):
    out, _ = jax.vjp(lambda a: fn(x1, a), x0)
    assert isinstance(out, jax.Array) and out.dtype == np.float16


# ---- run 20 (seeds 342-343) ----

def test_dot_general_of_mixed_dtypes_contracts_in_the_more_precise_one():
  # seed 342 #293: lax.dot_general of uint32 and int16 is uint32 in JAX 0.10.2 (XLA's
  # rule: complex, float range, mantissa, bit width, signedness), not their promotion.
  from tracejax import lax
  x = np.array([[3, 0], [6, 0]], np.uint32)
  y = np.array([[-3, 3], [-1, 3]], np.int16)
  r = lax.dot_general(x, y, (((1,), (1,)), ((), ())))
  assert r.dtype == np.uint32
  np.testing.assert_array_equal(r, np.array([[-9, -3], [-18, -6]]).astype(np.uint32))
  for a, b, want in ((np.int32, np.uint32, np.int32), (np.float16, jnp.bfloat16, jnp.bfloat16),
                     (np.bool_, np.float16, np.float16), (np.int8, np.uint16, np.uint16),
                     (np.float32, np.complex64, np.complex64), (np.uint8, np.int8, np.int8)):
    out = lax.dot_general(np.ones((2, 2), a), np.ones((2, 2), b), (((1,), (0,)), ((), ())))
    assert out.dtype == want, (a, b, out.dtype)
