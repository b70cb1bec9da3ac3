"""`jax.checkpoint` / `jax.remat`: same values and derivatives as without it, but reverse
mode recomputes (the forward ops reappear inside the backward `checkpoint` equation),
policies choose what is saved instead, and every transformation composes with it."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.control_flow import scan
from tracejax._src.core import ir
from tracejax.ad_checkpoint import checkpoint_name, saved_residuals
from tracejax.test_util import check_grads

cp = jax.checkpoint_policies


def _count(jaxpr, name, inside=None):
  """How many `name` equations `jaxpr` holds (recursively); with `inside`, only those
  within equations of primitive `inside` (e.g. the backward `checkpoint`)."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ir.ClosedJaxpr) else jaxpr
  n = 0
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == name and inside is None:
      n += 1
    for sub in ir.subjaxprs(eqn):
      n += _count(sub, name, None if eqn.primitive.name == inside else inside)
  return n


def _eqns(jaxpr, name):
  return [e for e in jaxpr.jaxpr.eqns if e.primitive.name == name]


def _layer(w, x):
  return jnp.tanh(jnp.dot(w, x))


def _net(ws, x, policy=None, remat=True):
  layer = jax.checkpoint(_layer, policy=policy) if remat else _layer
  for w in ws:
    x = layer(w, x)
  return jnp.sum(x)


_rng = np.random.RandomState(0)
WS = [jnp.asarray(_rng.randn(4, 4).astype(np.float32) * 0.5) for _ in range(3)]
X = jnp.asarray(_rng.randn(4).astype(np.float32))


def _sin2(x):
  return jnp.sin(jnp.sin(x))


def test_values_and_jaxpr():
  f = jax.checkpoint(_sin2)
  np.testing.assert_allclose(f(X), np.sin(np.sin(np.asarray(X))), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(f)(X), np.sin(np.sin(np.asarray(X))), rtol=1e-6)
  jaxpr = jax.make_jaxpr(f)(X)
  ir.check_jaxpr(jaxpr.jaxpr)
  text = str(jaxpr)
  assert "checkpoint[ differentiated=False" in text
  assert "policy=None" in text and "prevent_cse=True" in text
  assert _count(jaxpr, "sin", inside="checkpoint") == 2


def test_grad_equals_plain_grad_and_recomputes():
  f = jax.checkpoint(_sin2)
  x = 0.7
  expected = np.cos(np.sin(x)) * np.cos(x)
  np.testing.assert_allclose(jax.grad(f)(x), expected, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(f))(x), expected, rtol=1e-6)
  plain = jax.make_jaxpr(jax.grad(_sin2))(x)
  remat = jax.make_jaxpr(jax.grad(f))(x)
  ir.check_jaxpr(remat.jaxpr)
  # Without checkpoint `sin x` is computed once and saved; with it the backward
  # checkpoint equation recomputes it from x (the only residual).
  assert _count(plain, "sin") == 1 and _count(plain, "checkpoint") == 0
  (eqn,) = _eqns(remat, "checkpoint")
  assert eqn.params["differentiated"] is True
  assert _count(remat, "sin", inside="checkpoint") == 1


def test_mlp_grads_and_policies():
  g_plain = jax.grad(lambda ws: _net(ws, X, remat=False))(WS)
  counts = {}
  for name, pol in [("none", None), ("nothing", cp.nothing_saveable),
                    ("dots", cp.dots_saveable), ("dots_nb", cp.dots_with_no_batch_dims_saveable),
                    ("everything", cp.everything_saveable)]:
    g = jax.grad(lambda ws: _net(ws, X, pol))(WS)
    for a, b in zip(g, g_plain):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    j = jax.make_jaxpr(jax.grad(lambda ws: _net(ws, X, pol)))(WS)
    counts[name] = (_count(j, "dot_general"), _count(j, "tanh"))
  j = jax.make_jaxpr(jax.grad(lambda ws: _net(ws, X, remat=False)))(WS)
  base = (_count(j, "dot_general"), _count(j, "tanh"))
  # Saving nothing recomputes the matmuls and the tanhs of every layer.
  assert counts["none"] == counts["nothing"]
  assert counts["nothing"][0] > base[0] and counts["nothing"][1] > base[1]
  # Saving the dots: no matmul is recomputed, only the cheap tanh.
  assert counts["dots"][0] == base[0] and counts["dots"][1] > base[1]
  assert counts["dots_nb"] == counts["dots"]
  # Saving everything is the plain VJP.
  assert counts["everything"] == base
  assert cp.checkpoint_dots is cp.dots_saveable
  assert cp.checkpoint_dots_with_no_batch_dims is cp.dots_with_no_batch_dims_saveable


def test_checkpoint_name_and_name_policies():
  def f(w, x):
    h = checkpoint_name(jnp.dot(w, x), "pre")
    return jnp.sum(jnp.sin(jnp.sin(h)))

  w = WS[0]
  g_plain = jax.grad(f)(w, X)
  text = str(jax.make_jaxpr(lambda x: checkpoint_name(x, "foo"))(1.0))
  assert "name[ name=foo ]" in text
  # The tag is an identity under every transformation.
  np.testing.assert_allclose(jax.vmap(lambda x: checkpoint_name(x, "a"))(X), X)
  np.testing.assert_allclose(jax.grad(lambda x: checkpoint_name(x * x, "a"))(3.), 6.)
  dots_in_bwd = {}
  for label, pol in [("only", cp.save_only_these_names("pre")),
                     ("but", cp.save_any_names_but_these("other")),
                     ("both", cp.save_from_both_policies(cp.nothing_saveable,
                                                         cp.save_only_these_names("pre"))),
                     ("excluded", cp.save_any_names_but_these("pre")),
                     ("none", None)]:
    g = jax.checkpoint(f, policy=pol)
    np.testing.assert_allclose(jax.grad(g)(w, X), g_plain, rtol=1e-5, atol=1e-6)
    j = jax.make_jaxpr(jax.grad(g))(w, X)
    dots_in_bwd[label] = _count(j, "dot_general", inside="checkpoint")
  # The named product is saved: the backward pass holds only the linear dot.
  assert dots_in_bwd["only"] == dots_in_bwd["but"] == dots_in_bwd["both"] == 1
  assert dots_in_bwd["excluded"] == dots_in_bwd["none"] == 2
  res = saved_residuals(jax.checkpoint(f, policy=cp.save_only_these_names("pre")), w, X)
  assert any(what == "named 'pre'" for _, what in res)
  res = saved_residuals(jax.checkpoint(f), w, X)
  assert sorted(what for _, what in res) == ["from the argument [0]", "from the argument [1]"]
  with pytest.raises(TypeError, match="name must be a string"):
    checkpoint_name(X, 3)


def test_under_scan_and_jit():
  ws = jnp.stack(WS)

  def loss(ws, remat):
    step = jax.checkpoint(_layer) if remat else _layer
    return jnp.sum(scan(lambda c, w: (step(w, c), None), X, ws)[0])

  expected = jax.grad(loss)(ws, False)
  np.testing.assert_allclose(jax.grad(loss)(ws, True), expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(loss), static_argnums=1)(ws, True), expected,
                             rtol=1e-5, atol=1e-6)
  j = jax.make_jaxpr(jax.grad(loss), static_argnums=1)(ws, True)
  ir.check_jaxpr(j.jaxpr)
  assert _count(j, "tanh", inside="checkpoint") == 1
  # checkpoint around a whole scan, and a jit inside a checkpoint.
  g = jax.checkpoint(lambda ws: loss(ws, False))
  np.testing.assert_allclose(jax.grad(g)(ws), expected, rtol=1e-5, atol=1e-6)
  h = jax.checkpoint(jax.jit(_sin2))
  np.testing.assert_allclose(jax.grad(h)(0.3), np.cos(np.sin(.3)) * np.cos(.3), rtol=1e-6)


def test_vmap():
  f = jax.checkpoint(lambda w, x: _layer(w, x) * 2.)
  xs = jnp.asarray(_rng.randn(3, 4).astype(np.float32))
  out = jax.vmap(f, in_axes=(None, 0))(WS[0], xs)
  np.testing.assert_allclose(out, np.stack([f(WS[0], x) for x in xs]), rtol=1e-6)
  assert "checkpoint[" in str(jax.make_jaxpr(jax.vmap(f, in_axes=(None, 0)))(WS[0], xs))
  gf = jax.grad(lambda w, x: jnp.sum(f(w, x)))
  per_ex = jax.vmap(gf, in_axes=(None, 0))(WS[0], xs)
  np.testing.assert_allclose(per_ex, np.stack([gf(WS[0], x) for x in xs]), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.vmap(gf, in_axes=(None, 0)))(WS[0], xs), per_ex,
                             rtol=1e-5, atol=1e-6)
  # grad of vmap
  g1 = jax.grad(lambda w: jnp.sum(jax.vmap(f, in_axes=(None, 0))(w, xs)))(WS[0])
  g2 = jax.grad(lambda w: jnp.sum(jax.vmap(_layer, in_axes=(None, 0))(w, xs) * 2.))(WS[0])
  np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)


def test_higher_order_and_check_grads(x64):
  f = jax.checkpoint(lambda x: jnp.sin(x) * jnp.exp(jnp.cos(x)))
  g = lambda x: jnp.sin(x) * jnp.exp(jnp.cos(x))
  for x in (0.3, -1.2):
    np.testing.assert_allclose(jax.grad(jax.grad(f))(x), jax.grad(jax.grad(g))(x),
                               rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.grad(jax.grad(f)))(x), jax.grad(jax.grad(g))(x),
                               rtol=1e-12)
  x = jnp.asarray(np.linspace(-1., 1., 3))
  check_grads(f, (x,), order=2, modes=("fwd", "rev"))
  check_grads(lambda w, x: jax.checkpoint(_layer, policy=cp.dots_saveable)(w, x),
              (np.asarray(WS[0], np.float64), x[:3].tolist() + [0.5]), order=2)
  # hessian = jacfwd(jacrev): forward over reverse through the recomputation
  h = jax.hessian(lambda x: jnp.sum(f(x)))(x)
  np.testing.assert_allclose(h, jax.hessian(lambda x: jnp.sum(g(x)))(x), rtol=1e-12)


def test_jvp_linearize_vjp_pytrees_and_closures():
  def f(p, x):
    return {"y": jnp.tanh(p["a"] * x), "z": (jnp.sin(p["b"]) * x).sum()}

  p = {"a": jnp.arange(3.), "b": jnp.ones(3)}
  x = jnp.full(3, 0.5)
  fc = jax.checkpoint(f)
  t = ({"a": jnp.ones(3), "b": jnp.full(3, 2.)}, jnp.ones(3))
  for a, b in zip(jax.tree_leaves(jax.jvp(fc, (p, x), t)), jax.tree_leaves(jax.jvp(f, (p, x), t))):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  _, lin = jax.linearize(fc, p, x)
  _, lin0 = jax.linearize(f, p, x)
  for a, b in zip(jax.tree_leaves(lin(*t)), jax.tree_leaves(lin0(*t))):
    np.testing.assert_allclose(a, b, rtol=1e-6)
  out, vjp = jax.vjp(fc, p, x)
  ct = {"y": jnp.ones(3), "z": 2.}
  for a, b in zip(jax.tree_leaves(vjp(ct)), jax.tree_leaves(jax.vjp(f, p, x)[1](ct))):
    np.testing.assert_allclose(a, b, rtol=1e-6)

  # Closing over a tracer of an outer transformation.
  def outer(s):
    return jax.checkpoint(lambda y: jnp.sin(s * y) * s)(2.)
  np.testing.assert_allclose(jax.grad(outer)(0.4),
                             2. * np.cos(.8) * .4 + np.sin(.8), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(outer))(0.4), jax.grad(outer)(0.4), rtol=1e-6)


def test_api_forms_and_errors():
  @jax.checkpoint
  def f1(x):
    return jnp.sin(x)

  @jax.remat(prevent_cse=False, policy=cp.dots_saveable)
  def f2(x, n):
    return jnp.sin(x) * n

  assert float(f1(0.)) == 0.
  assert float(f2(1., n=2.)) == pytest.approx(2 * np.sin(1.))
  assert jax.remat is jax.checkpoint and jax.api.remat is jax.checkpoint
  assert jax.ad_checkpoint.checkpoint is jax.checkpoint

  def g(x, mode):
    return jnp.sin(x) if mode == "sin" else jnp.cos(x)   # Python control flow on a static

  gc = jax.checkpoint(g, static_argnums=(1,))
  assert float(jax.grad(gc)(0., "sin")) == pytest.approx(1.)
  assert float(jax.grad(gc)(0., "cos")) == pytest.approx(0.)
  assert float(jax.checkpoint(g, static_argnums=-1)(0., "cos")) == pytest.approx(1.)
  assert float(jax.remat(f1, concrete=False)(0.)) == 0.
  with pytest.raises(ValueError, match="static_argnums"):
    jax.remat(g, concrete=True)
  with pytest.raises(TypeError, match="policy"):
    jax.checkpoint(f1, policy="dots")
  with pytest.raises(TypeError, match="static_argnums"):
    jax.checkpoint(g, static_argnums="1")
  with pytest.raises(ValueError, match="out of range"):
    jax.checkpoint(g, static_argnums=(3,))(0., "sin")
  with pytest.raises(TypeError, match="valid JAX type"):
    jax.checkpoint(g)(0., "sin")


def test_lowering_barrier_and_dce():
  f = jax.checkpoint(_sin2)
  text = jax.jit(jax.grad(f)).lower(1.).as_text()
  assert "stablehlo.optimization_barrier" in text
  text = jax.jit(jax.grad(jax.checkpoint(_sin2, prevent_cse=False))).lower(1.).as_text()
  assert "optimization_barrier" not in text
  assert "optimization_barrier" not in jax.jit(f).lower(1.).as_text()   # no recomputation

  # Unused outputs of a checkpoint drop with the work that only they needed.
  both = jax.checkpoint(lambda x: (jnp.sin(x), jnp.cos(x)))
  j = jax.make_jaxpr(lambda x: both(x)[0])(1.)
  (eqn,) = _eqns(j, "checkpoint")
  assert len(eqn.outvars) == 1 and _count(j, "cos") == 0
  j = jax.make_jaxpr(lambda x: both(x)[0] * 0 + 1.)(1.)
  ir.check_jaxpr(j.jaxpr)


def test_nested_checkpoint():
  inner = jax.checkpoint(_sin2)
  outer = jax.checkpoint(lambda x: inner(jnp.cos(x)) * x)
  plain = lambda x: _sin2(jnp.cos(x)) * x
  for order_f, order_p in [(jax.grad(outer), jax.grad(plain)),
                           (jax.grad(jax.grad(outer)), jax.grad(jax.grad(plain)))]:
    np.testing.assert_allclose(order_f(0.6), order_p(0.6), rtol=1e-5)
    np.testing.assert_allclose(jax.jit(order_f)(0.6), order_p(0.6), rtol=1e-5)


def test_custom_rules_inside_and_2020_partial_eval():
  @jax.custom_vjp
  def f(x):
    return jnp.sin(x)
  f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, g: (2. * g * c,))

  @jax.custom_jvp
  def h(x):
    return jnp.sin(x)
  h.defjvp(lambda p, t: (jnp.sin(p[0]), 3. * t[0]))

  # custom_vjp's rule runs only while linearizing: the checkpoint hands it the
  # partial-evaluation trace, and its bwd ends up inside the backward checkpoint.
  x = 0.5
  want = 2 * np.cos(np.sin(x)) * 2 * np.cos(x)
  np.testing.assert_allclose(jax.grad(jax.checkpoint(lambda x: f(f(x))))(x), want, rtol=1e-6)
  np.testing.assert_allclose(jax.jit(jax.grad(jax.checkpoint(lambda x: f(f(x)))))(x), want,
                             rtol=1e-6)
  np.testing.assert_allclose(jax.grad(jax.checkpoint(lambda x: h(h(x))))(x), 9., rtol=1e-6)

  # 2020 partial evaluation: the unknown part becomes one checkpoint equation that
  # recomputes `sin a` from the known input instead of saving it.
  from tracejax.interpreters import partial_eval as pe
  from tracejax._src.core.avals import ShapedArray
  g = jax.checkpoint(lambda a, b: (jnp.sin(a), jnp.sin(a) * b))
  jaxpr, pvals, _ = pe.trace_to_jaxpr(
      g, [pe.PartialVal.known(1.), pe.PartialVal.unknown(ShapedArray((), np.float32))])
  assert pvals[0].is_known() and not pvals[1].is_known()
  np.testing.assert_allclose(pvals[0].get_known(), np.sin(1.), rtol=1e-6)
  (eqn,) = jaxpr.eqns
  assert eqn.primitive.name == "checkpoint" and eqn.params["differentiated"]
  assert _count(jaxpr, "sin", inside="checkpoint") == 1


def test_jacrev_of_checkpointed_identity():
  # Found by tools/fuzz_vs_jax.py: an input passed straight through came back as an
  # internal buffer (no full aval); JAX gives the identity matrix.
  import tracejax as jax
  out = jax.jacrev(jax.checkpoint(lambda x: x))(np.ones(3, np.float32))
  np.testing.assert_array_equal(np.asarray(out), np.eye(3, dtype=np.float32))
