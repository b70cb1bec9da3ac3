"""Value disagreements with JAX found by tools/fuzz_vs_jax.py, run 3 (seeds 301-303).

Every expected value below was produced by real JAX 0.10.2 (/work/jaxvenv, run by hand
on the same inputs; JAX is never imported here) and is recorded as a literal. The
reproducers are /work/notes/fuzz/run3/replay_s30*_x*/repro_*.py.
"""
import ml_dtypes
import numpy as np

import tracejax as jax
import tracejax.numpy as jnp
import tracejax.scipy.linalg as jsl
import tracejax.scipy.special as jss
from tracejax import lax

INF, NAN = np.inf, np.nan


def assert_same(x, expected, dtype):
  """Exactly JAX's values (NaNs equal, signs of zero included) and dtype."""
  x = np.asarray(x)
  expected = np.asarray(expected, dtype)
  assert x.dtype == expected.dtype
  np.testing.assert_array_equal(x, expected)
  for part in ((np.real, np.imag) if np.iscomplexobj(x) else (np.real,)):
    np.testing.assert_array_equal(np.signbit(part(x)), np.signbit(part(expected)))


# ---- complex max/min reductions order lexicographically (s301 #2198) --------------------------

def test_complex_reduce_max_min_is_lexicographic():
  # XLA's own maximum ordered complex numbers differently: JAX's reduce_max/min body is
  # the elementwise max/min (real parts first, then imaginary parts).
  x0 = np.array([406.1496276855469 - 133.84063720703125j, 35.730506896972656 - 76.1922836303711j,
                 675.5932006835938 - 53.55095291137695j, 364.1912536621094 + 445.3721008300781j],
                np.complex64)
  out = jnp.nanmax(lax.tan(x0), axis=None, keepdims=True)
  assert_same(out, [complex(-0.0, 1.0)], np.complex64)
  x = np.array([0 - 1j, complex(-0.0, 1), 0 - 1j, 1 - 1j, 1 + 1j, 1 - 2j], np.complex64)
  assert_same(jnp.max(x), 1 + 1j, np.complex64)
  assert_same(jnp.min(x), complex(0, -1), np.complex64)
  assert_same(jnp.max(x.reshape(2, 3), axis=1), [complex(-0.0, 1), 1 + 1j], np.complex64)
  assert_same(jax.jit(lambda v: jnp.min(v, axis=0))(x.reshape(2, 3)),
              [complex(0, -1), complex(-0.0, 1), complex(0, -1)], np.complex64)
  assert_same(jnp.nanmax(np.array([NAN, 1 - 1j, 1 + 1j], np.complex64)), 1 + 1j, np.complex64)


# ---- complex sin/cos from real parts, as JAX lowers them (s302 #716) -------------------------

Z = np.array([-6.012155055999756 - 4.144308567047119j, 7.687492370605469 - 10.112689018249512j,
              1 + 1j, 0 + 100j, complex(-0.0, -100), 3 + 0j, 0j, 1e20 + 2j], np.complex64)
SIN_Z = [8.445340156555176 - 30.37812042236328j, 12156.4853515625 - 2042.833984375j,
         1.2984575033187866 + 0.634963870048523j, complex(0, INF), complex(0, -INF),
         complex(0.14112000167369843, -0.0), 0j, 2.470170021057129 + 2.73559308052063j]
COS_Z = [30.393396377563477 + 8.441095352172852j, 2042.833984375 + 12156.4853515625j,
         0.8337299227714539 - 0.9888976812362671j, complex(INF, 0), complex(INF, 0),
         complex(-0.9899924993515015, -0.0), 1 + 0j, 2.8376710414886475 - 2.3813118934631348j]


def test_complex_sin_cos_match_jax_lowering():
  for f in (lambda v: v, jax.jit):
    np.testing.assert_array_equal(f(jnp.sin)(Z), np.array(SIN_Z, np.complex64))
    np.testing.assert_array_equal(f(jnp.cos)(Z), np.array(COS_Z, np.complex64))
  # A zero real part gives a zero real part (sin) / imaginary part (cos), not NaN.
  assert np.asarray(jnp.sin(Z))[3].real == 0 and np.asarray(jnp.cos(Z))[3].imag == 0


def test_complex_sin_in_while_loop_overflow_signs():
  x0 = np.array([[-2.803863758966839 + 0.0956236387725577j, -0.20613315572853338 + 0.9285128910108155j,
                  -1.4458689559416318 - 0.8452501436072213j],
                 [-1.9884505693505656 - 1.5076143403379196j, -1.920160936495574 + 0.8502526333798436j,
                  -1.3497695329565516 - 0.6703355293840614j],
                 [0.028804888108126182 + 1.227500580274581j, -0.08930757244690199 - 0.3932811842246299j,
                  3.406614811749077 - 1.504961889468321j]], np.complex128)

  def f(x):
    v0 = x @ jnp.swapaxes(x, -1, -2)
    return lax.while_loop(lambda st: st[0] < 3, lambda st: (st[0] + 1, jnp.sin(st[1])),
                          (0, v0))[1]
  out = np.asarray(f(x0))
  assert out.dtype == np.complex64
  np.testing.assert_array_equal(out, np.array(
      [[1.2201987504959106 + 0.014736958779394627j, complex(-INF, -INF), complex(INF, INF)],
       [complex(-INF, -INF), complex(-INF, INF), 18885362 + 11094687j],
       [complex(-INF, INF), 18885094 + 11095230j, complex(NAN, NAN)]], np.complex64))


# ---- logit is a custom_jvp with derivative g / (x (1 - x)) (s302 #2518) ----------------------

def test_logit_derivative_at_the_ends_is_inf():
  out, fn = jax.vjp(jss.logit, 0.0)
  ct = fn(jnp.ones_like(out) * 0.5)[0]
  assert float(out) == -INF and float(ct) == INF
  assert out.weak_type and ct.weak_type
  t = jax.jvp(jss.logit, (np.array([0., .3, 1.], np.float32),), (np.ones(3, np.float32),))[1]
  assert_same(t, [INF, 4.761904716491699, INF], np.float32)
  assert_same(jax.grad(jax.grad(jss.logit))(0.3), -9.070293426513672, np.float32)
  assert_same(jax.vmap(jax.grad(jss.logit))(np.array([0., .3, 1.], ml_dtypes.bfloat16)),
              [INF, 4.75, INF], ml_dtypes.bfloat16)


# ---- softmax differentiates its composition by default (s302 #662) ---------------------------

X_BF16 = np.array([[0.07568359375, 0.41015625, 2.359375], [-2.296875, 1.5703125, -1.09375],
                   [2.34375, -0.50390625, -3.484375]], np.float32).astype(ml_dtypes.bfloat16)
T_BF16 = (np.arange(9).reshape(3, 3) / 4 - 1).astype(ml_dtypes.bfloat16)


def test_softmax_has_no_custom_jvp_by_default():
  # JAX 0.10.2's jax_softmax_custom_jvp is False: softmax's vjp is that of
  # exp(x - stop_gradient(max)) / sum, which rounds differently in bfloat16.
  assert "custom_jvp" not in str(jax.make_jaxpr(jax.nn.softmax)(np.zeros(3, np.float32)))
  ct = jax.vjp(lambda x: jax.nn.softmax(x, axis=0), X_BF16)[1](T_BF16)[0]
  assert_same(ct, np.array([-0.1259765625, -0.1435546875, -0.0234375, -0.00531005859375,
                            0.06884765625, 0.0223388671875, 0.1328125, 0.07421875,
                            0.004150390625], np.float32).reshape(3, 3), ml_dtypes.bfloat16)


def test_softmax_custom_jvp_flag():
  jax.config.update("jax_softmax_custom_jvp", True)
  try:
    ct = jax.vjp(lambda x: jax.nn.softmax(x, axis=0), X_BF16)[1](T_BF16)[0]
    assert "custom_jvp" in str(jax.make_jaxpr(jax.nn.softmax)(np.zeros(3, np.float32)))
  finally:
    jax.config.update("jax_softmax_custom_jvp", False)
  assert_same(ct, np.array([-0.1259765625, -0.142578125, -0.025390625, -0.005279541015625,
                            0.068359375, 0.022216796875, 0.1328125, 0.07421875,
                            0.004150390625], np.float32).reshape(3, 3), ml_dtypes.bfloat16)


# ---- expm follows JAX's scaling and degree choice step for step (s303 #1867) -----------------

A = np.array([[1.8538026809692383, 0.8016641139984131, 1.1336891651153564],
              [3.1036648750305176, 2.3336904048919678, 2.09779953956604]], np.float32)
M = A @ A.T


def test_expm_matches_jax_algorithm():
  expect = np.array([[10907472896.0, 21045131264.0], [21045137408.0, 40604979200.0]], np.float32)
  assert_same(jsl.expm(jnp.asarray(A) @ jnp.swapaxes(jnp.asarray(A), -1, -2)), expect,
              np.float32)
  assert_same(jax.jit(jsl.expm)(M), expect, np.float32)
  assert_same(jax.grad(lambda m: jsl.expm(m).sum())(M),
              [[20826554368.0, 38970327040.0], [38970327040.0, 72850210816.0]], np.float32)
  C = np.array([[0.3 + 1j, -2], [1.5j, 0.7 - 0.2j]], np.complex64)
  np.testing.assert_array_equal(jsl.expm(C), np.array(
      [[1.408851981163025 - 0.9585393071174622j, -3.281942844390869 + 0.46078136563301086j],
       [0.3455859124660492 + 2.461456775665283j, 1.788771629333496 - 3.0198609828948975j]],
      np.complex64))
  assert_same(jsl.expm(np.stack([M, M / 100, -M / 3])), np.array(
      [10907472896.0, 21045131264.0, 21045137408.0, 40604979200.0, 1.06065034866333,
       0.11353988945484161, 0.11353988200426102, 1.2208702564239502, 0.742353618144989,
       -0.3846147358417511, -0.3846147954463959, 0.19961069524288177],
      np.float32).reshape(3, 2, 2), np.float32)


# ---- jnp leaves size-1 axes to the lax operators (s302 #662) ----------------------------------

def test_binary_ops_only_promote_rank_so_derivatives_sum_where_jax_does():
  # JAX's jnp brings operands to a common rank only; lax.add/div/... broadcast size-1
  # axes themselves, so a derivative sums over such an axis at the operator (before
  # later products), which changes bfloat16 rounding. Second derivative of softmax:
  def f1(x):
    o, fn = jax.vjp(lambda d: jax.nn.softmax(d, axis=0), x)
    return o, fn(jnp.ones_like(o) * 0.5)[0]
  g = jax.grad(lambda d: sum(jnp.sum(leaf) for leaf in f1(d)))(X_BF16)
  assert_same(g, np.array([0.0, -0.00122833251953125, -0.013671875, 0.0, -0.00390625,
                           -0.00043487548828125, 0.0, -0.00048828125,
                           -3.9577484130859375e-05], np.float32).reshape(3, 3),
              ml_dtypes.bfloat16)
  jaxpr = str(jax.make_jaxpr(lambda a, b: a + b)(np.ones((2, 3), np.float32),
                                                 np.ones(3, np.float32)))
  assert "shape=(1, 3)" in jaxpr and "shape=(2, 3)" not in jaxpr
  a = np.linspace(-1, 2, 6).reshape(2, 3).astype(ml_dtypes.bfloat16)
  b = np.array([[3., 0.7, 1.3]]).astype(ml_dtypes.bfloat16)
  assert_same(jax.grad(lambda b: jnp.sum(a / b * a))(b), [[-0.18359375, -4.3125, -2.40625]],
              ml_dtypes.bfloat16)
