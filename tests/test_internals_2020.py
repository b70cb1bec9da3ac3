"""The 2020 internals API of "Writing custom Jaxpr interpreters": `linear_util`
(WrappedFun and generator transformations), `api_util.flatten_fun`,
`partial_eval.PartialVal` / `trace_to_jaxpr`, `core.unit` / `unitvar`; and
`check_grads` on complex functions (the autodiff cookbook's convention)."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import api_util, core, lax, tree_util
from tracejax import linear_util as lu
from tracejax.config import config
from tracejax.interpreters import partial_eval as pe
from tracejax.test_util import check_grads, check_vjp

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- linear_util ----

def test_wrap_init_binds_params():
  f = lu.wrap_init(lambda x, y, scale: (x + y) * scale, {"scale": 3})
  assert f.call_wrapped(1, 2) == 9
  assert f(1, 2) == 9
  assert "lambda" in lu.fun_name(f)


@lu.transformation
def _add_to_inputs(c, *args):
  ans = yield tuple(a + c for a in args), {}
  yield ans


@lu.transformation
def _times_output(c, *args):
  ans = yield args, {}
  yield ans * c


def test_transformations_compose_outermost_last_applied():
  f = lu.wrap_init(lambda x: x * x)
  g = _times_output(_add_to_inputs(f, 1), 10)   # 10 * f(x + 1)
  assert g.call_wrapped(2) == 90
  h = _add_to_inputs(_times_output(f, 10), 1)   # (10 * f)(x + 1): the same number
  assert h.call_wrapped(2) == 90
  k = _add_to_inputs(_add_to_inputs(f, 1), 2)   # f(x + 2 + 1)
  assert k.call_wrapped(0) == 9
  # The functional form of `transformation` gives the same thing.
  def gen(c, x):
    ans = yield (x - c,), {}
    yield -ans
  assert lu.transformation(gen, f, 1).call_wrapped(4) == -9


def test_transformation_with_aux_store():
  def gen(*args):
    ans = yield args, {}
    yield ans + 1, ("saw", len(args))
  f, aux = lu.transformation_with_aux(gen, lu.wrap_init(lambda *xs: sum(xs)))
  with pytest.raises(lu.StoreException):
    aux()
  assert f.call_wrapped(1, 2, 3) == 7
  assert aux() == ("saw", 3)
  with pytest.raises(lu.StoreException, match="occupied"):
    f.call_wrapped(1)  # a store is filled once: one WrappedFun, one call


def test_wrapped_fun_equality_hashable_partial_and_cache():
  def f(a, x):
    return a * x
  assert lu.wrap_init(f) == lu.wrap_init(f)
  assert hash(lu.wrap_init(f, {"a": 1})) == hash(lu.wrap_init(f, {"a": 1}))
  assert lu.wrap_init(f) != lu.wrap_init(lambda a, x: a * x)
  p = lu.hashable_partial(lu.wrap_init(f), 5)
  assert p.call_wrapped(2) == 10 and p == lu.hashable_partial(lu.wrap_init(f), 5)

  calls = []

  @lu.cache
  def trace_once(fun, n):
    calls.append(n)
    return fun.call_wrapped(n)

  flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(lambda x: (x, [x])),
                                                 tree_util.tree_structure((0,)))
  assert trace_once(flat, 3) == [3, 3]
  flat2, out_tree2 = api_util.flatten_fun_nokwargs(lu.wrap_init(flat.f),
                                                   tree_util.tree_structure((0,)))
  assert trace_once(flat2, 3) == [3, 3]
  assert calls == [3]                        # the second was a cache hit...
  assert out_tree2() == out_tree()           # ...that still filled the aux store
  flat3, _ = api_util.flatten_fun_nokwargs(lu.wrap_init(flat.f), tree_util.tree_structure((0,)))
  assert trace_once(flat3, 4) == [4, 4] and calls == [3, 4]  # other args: traced again


def test_merge_linear_aux():
  s1, s2 = lu.Store(), lu.Store()
  s2.store("b")
  assert lu.merge_linear_aux(lambda: s1.val, lambda: s2.val) == (False, "b")
  s1.store("a")
  with pytest.raises(lu.StoreException):
    lu.merge_linear_aux(lambda: s1.val, lambda: s2.val)


# ---- api_util ----

def test_flatten_fun_pytrees_in_and_out():
  def f(x, y, scale=1.0):
    return {"sum": (x["a"] + y) * scale, "pair": (x["b"], y)}
  args, kwargs = ({"a": 1.0, "b": 2.0}, 3.0), {"scale": 2.0}
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  flat, out_tree = api_util.flatten_fun(lu.wrap_init(f), in_tree)
  outs = flat.call_wrapped(*leaves)
  assert isinstance(outs, list) and len(outs) == 3
  assert tree_util.tree_unflatten(out_tree(), outs) == f(*args, **kwargs)


def test_flatten_fun_nokwargs_and_apply_flat_fun():
  f = lambda a, b: (a * b, [a - b])
  leaves, in_tree = tree_util.tree_flatten((2.0, 5.0))
  flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(f), in_tree)
  outs = flat.call_wrapped(*leaves)
  assert tree_util.tree_unflatten(out_tree(), outs) == (10.0, [-3.0])
  io_tree = (tree_util.tree_structure(((2.0, 5.0), {})), out_tree())
  assert api_util.apply_flat_fun(lambda a, b: [a * b, a - b], io_tree, 2.0, 5.0) == (10.0, [-3.0])
  assert api_util.apply_flat_fun_nokwargs(lambda a, b: [a * b, a - b],
                                          (in_tree, out_tree()), (2.0, 5.0)) == (10.0, [-3.0])
  with pytest.raises(TypeError):
    api_util.apply_flat_fun_nokwargs(lambda *a: [], (in_tree, out_tree()), (2.0,))


def test_flatten_fun_nokwargs2_and_argnums_partial():
  f = lambda x: ((x, x * 2), {"aux": x + 1})
  flat, trees = api_util.flatten_fun_nokwargs2(lu.wrap_init(f), tree_util.tree_structure((0,)))
  (ans, aux) = flat.call_wrapped(3)
  assert ans == [3, 6] and aux == [4]
  ans_tree, aux_tree = trees()
  assert tree_util.tree_unflatten(aux_tree, aux) == {"aux": 4}
  g, dyn = api_util.argnums_partial(lu.wrap_init(lambda a, b, c: a * 100 + b * 10 + c),
                                    (0, 2), (1, 2, 3))
  assert dyn == (1, 3)
  assert g.call_wrapped(7, 9) == 729


# ---- partial_eval.PartialVal / trace_to_jaxpr, core.unit ----

def test_partial_val_forms():
  aval = core.ShapedArray((3,), np.float32)
  u = pe.PartialVal((aval, core.unit))      # the 2020 tuple spelling
  assert u == pe.PartialVal.unknown(aval) and not u.is_known()
  assert u.get_aval() is aval and u.get_known() is None
  k = pe.PartialVal.known(2.0)
  assert k.is_known() and k.get_known() == 2.0 and k == pe.PartialVal((None, 2.0))
  assert k.get_aval().shape == ()
  pv, const = u                              # still a pair
  assert pv is aval and const is core.unit
  with pytest.raises(TypeError):
    pe.PartialVal((aval, 1.0))
  with pytest.raises(TypeError):
    pe.PartialVal(("not an aval", core.unit))
  assert repr(core.unit) == "*" and core.unitvar.aval is core.abstract_unit


def make_jaxpr2(fun):
  """The notebook's tracer: wrap_init + flatten_fun + trace_to_jaxpr at unknown avals."""
  def pv_like(x):
    aval = core.ShapedArray(np.shape(x), np.result_type(x))
    return pe.PartialVal((aval, core.unit))

  def jaxpr_const_maker(*args, **kwargs):
    wrapped = lu.wrap_init(fun)
    jax_args, in_tree = tree_util.tree_flatten((args, kwargs))
    jaxtree_fun, out_tree = api_util.flatten_fun(wrapped, in_tree)
    pvals = [pv_like(x) for x in jax_args]
    jaxpr, _, consts = pe.trace_to_jaxpr(jaxtree_fun, pvals)
    return jaxpr, consts, (in_tree, out_tree())
  return jaxpr_const_maker


def test_trace_to_jaxpr_all_unknown_matches_make_jaxpr():
  f = lambda x, y: {"out": jnp.exp(jnp.tanh(x)) * y}
  x, y = np.ones(5, np.float32), np.float32(2.0)
  jaxpr, consts, (in_tree, out_tree) = make_jaxpr2(f)(x, y)
  core.check_jaxpr(jaxpr)
  assert consts == ()
  assert [e.primitive.name for e in jaxpr.eqns] == \
      [e.primitive.name for e in jax.make_jaxpr(f)(x, y).eqns]
  outs = core.eval_jaxpr(jaxpr, consts, x, y)
  np.testing.assert_allclose(tree_util.tree_unflatten(out_tree, outs)["out"],
                             f(x, y)["out"], rtol=1e-6)


def test_trace_to_jaxpr_canonicalizes_float64_avals():
  # np.result_type(1.0) is float64; with x64 off the jaxpr is float32, as the values are.
  jaxpr, _, _ = make_jaxpr2(lambda x: jnp.sin(x))(1.0)
  assert jaxpr.invars[0].aval.dtype == np.float32 == jaxpr.outvars[0].aval.dtype


def test_trace_to_jaxpr_known_inputs_are_evaluated_not_staged():
  def f(x, y):
    k = jnp.sin(x) * 2.0             # known: computed now, becomes a constant
    return [k * y, jnp.cos(x), y]    # unknown, known, unknown (an input)
  x, y = np.full(2, 0.5, np.float32), np.arange(6, dtype=np.float32).reshape(3, 2)
  pvals = [pe.PartialVal.known(x), pe.PartialVal.unknown(core.ShapedArray((3, 2), np.float32))]
  jaxpr, out_pvals, consts = pe.trace_to_jaxpr(lu.wrap_init(f), pvals)
  core.check_jaxpr(jaxpr)
  assert [e.primitive.name for e in jaxpr.eqns] == ["mul"]  # sin/cos ran eagerly
  # (a known non-scalar becomes a constvar; a known scalar would be an inline literal)
  assert len(jaxpr.invars) == 1 and len(consts) == 1
  np.testing.assert_allclose(consts[0], np.broadcast_to(np.sin(x) * 2.0, consts[0].shape),
                             rtol=1e-6)
  assert [p.is_known() for p in out_pvals] == [False, True, False]
  np.testing.assert_allclose(out_pvals[1].get_known(), np.cos(x), rtol=1e-6)
  assert jaxpr.outvars[1] is core.unitvar and "*" in str(jaxpr)
  outs = core.eval_jaxpr(jaxpr, consts, y)   # unitvar evaluates to unit
  assert outs[1] is core.unit
  np.testing.assert_allclose(outs[0], np.sin(x) * 2.0 * y, rtol=1e-6)
  np.testing.assert_allclose(outs[2], y)
  # instantiate stages the known output too (as a constvar or literal)
  jaxpr, out_pvals, consts = pe.trace_to_jaxpr(lu.wrap_init(f), pvals, instantiate=True)
  core.check_jaxpr(jaxpr)
  assert not any(p.is_known() for p in out_pvals)
  outs = core.eval_jaxpr(jaxpr, consts, y)
  np.testing.assert_allclose(outs[1], np.cos(x), rtol=1e-6)
  # a plain callable works as well as a WrappedFun
  jaxpr2, _, _ = pe.trace_to_jaxpr(f, pvals, instantiate=[False, True, False])
  assert jaxpr2.outvars[0] is not core.unitvar and jaxpr2.outvars[1] is not core.unitvar


def test_trace_to_jaxpr_closes_over_outer_tracers():
  # The inner jaxpr reads an outer tracer as a constvar; its value flows back out.
  def g(a, x):
    jaxpr, _, consts = pe.trace_to_jaxpr(
        lu.wrap_init(lambda y: [jnp.sin(y) * a]),
        [pe.PartialVal.unknown(core.ShapedArray((), np.float32))])
    assert len(consts) == 1
    return core.eval_jaxpr(jaxpr, consts, x)[0]
  a, x = np.float32(1.5), np.float32(0.3)
  np.testing.assert_allclose(jax.grad(g)(a, x), np.sin(x), rtol=1e-6)
  np.testing.assert_allclose(jax.jit(g)(a, x), a * np.sin(x), rtol=1e-6)


def _inverse(fun):
  """The notebook's `inverse` interpreter: walk the jaxpr backwards."""
  registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}

  def wrapped(x):
    jaxpr, consts, _ = make_jaxpr2(fun)(x)
    env = {core.unitvar: core.unit}
    env.update(zip(jaxpr.outvars, [x]))
    env.update(zip(jaxpr.constvars, consts))
    for eqn in jaxpr.eqns[::-1]:
      (out,) = [env[v] for v in eqn.outvars]
      env[eqn.invars[0]] = registry[eqn.primitive](out)
    return env[jaxpr.invars[0]]
  return wrapped


def test_jaxpr_interpreter_under_transformations():
  f = lambda x: jnp.exp(jnp.tanh(x))
  f_inv = _inverse(f)
  np.testing.assert_allclose(f_inv(f(1.0)), 1.0, rtol=1e-5)
  text = str(jax.make_jaxpr(f_inv)(f(1.0)))
  assert "log" in text and "atanh" in text
  ys = (np.arange(5, dtype=np.float32) + 1.0) / 5.0
  out = jax.jit(jax.vmap(jax.grad(f_inv)))(ys)
  expected = 1.0 / (ys * (1.0 - np.log(ys) ** 2))  # d/dy atanh(log y)
  np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_trace_to_jaxpr_dynamic():
  fun, out_tree = api_util.flatten_fun_nokwargs(
      lu.wrap_init(lambda x: (jnp.sin(x), x * 2.0)), tree_util.tree_structure((0,)))
  jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(
      fun, [core.ShapedArray((2,), np.float32)])
  core.check_jaxpr(jaxpr)
  assert [a.shape for a in out_avals] == [(2,), (2,)] and list(consts) == []
  assert out_tree().num_leaves == 2
  closed = pe.convert_constvars_jaxpr(jaxpr)
  assert closed.constvars == [] and len(closed.invars) == 1


def test_alias_imports_of_2020_internals(tmp_path):
  script = tmp_path / "uses_internals.py"
  script.write_text(textwrap.dedent("""
    import jax.api_util
    import jax.linear_util
    from jax import api_util, core
    from jax import linear_util as lu
    from jax.interpreters import partial_eval as pe
    import tracejax
    assert api_util is tracejax.api_util and jax.api_util is api_util
    assert lu is tracejax.linear_util and jax.linear_util is lu
    assert pe.PartialVal((core.ShapedArray((), "float32"), core.unit)).get_aval().shape == ()
    assert core.unitvar is tracejax.core.unitvar
    print("ok")
  """))
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  r = subprocess.run([sys.executable, "-m", "tracejax", "run", str(script)], env=env,
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "ok"


# ---- check_grads / check_vjp with complex numbers ----

Z = np.array([0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j])

COMPLEX_FUNS = {
    # holomorphic
    "square_sin": lambda z: z ** 2 * jnp.sin(z),
    "exp_recip": lambda z: jnp.exp(z) / (z + 2.0),
    # not holomorphic
    "conj": lambda z: jnp.conj(z) * (1.0 + 2.0j),
    "abs2": lambda z: jnp.sum(jnp.abs(z) ** 2),                 # C -> R
    "real_times": lambda z: jnp.real(z) * z,
    "mixed": lambda z: jnp.sum(jnp.imag(z) * jnp.conj(z) ** 2),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FUNS))
def test_check_grads_complex_inputs(name, x64):
  check_grads(COMPLEX_FUNS[name], (Z,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["square_sin", "abs2", "mixed"])
def test_check_grads_complex64(name):
  check_grads(COMPLEX_FUNS[name], (Z.astype(np.complex64),), order=1, modes=("fwd", "rev"))


def test_check_grads_real_to_complex(x64):
  x = np.array([0.3, -1.2, 0.8])
  check_grads(lambda x: lax.complex(x, x ** 2) * (0.5 - 1.0j), (x,), order=2)


def test_cookbook_convention_of_grad():
  # grad of a real-valued function of z = x + iy is d0 u - i d1 u: 2 conj(z) for |z|^2.
  z = np.complex64(3.0 + 4.0j)
  np.testing.assert_allclose(jax.grad(lambda z: jnp.abs(z) ** 2)(z), 6.0 - 8.0j, rtol=1e-6)
  # holomorphic: the complex derivative
  np.testing.assert_allclose(jax.grad(lambda z: z ** 2, holomorphic=True)(z), 2 * z, rtol=1e-6)


def test_check_vjp_rejects_wrong_complex_vjps(x64):
  f = lambda z: z ** 2 * jnp.sin(z)
  right = lambda z: jax.vjp(f, z)
  check_vjp(f, right, (Z,))

  def conjugated(z):  # the classic mistake: J^H c instead of the cookbook's vjp
    out, vjp_fun = jax.vjp(f, z)
    return out, lambda c: tuple(np.conj(g) for g in vjp_fun(np.conj(c)))
  with pytest.raises(AssertionError):
    check_vjp(f, conjugated, (Z,))

  g = lambda z: jnp.conj(z)
  def no_conj(z):  # treats conj as if it were the identity
    return g(z), lambda c: (c,)
  with pytest.raises(AssertionError):
    check_vjp(g, no_conj, (Z,))


def test_check_vjp_float32_tolerance_is_float32s():
  # Second-order checks of a float32 loss (the autodiff cookbook's check_grads on its
  # logistic regression): finite differences with eps=1e-4 are good to ~1e-3 in
  # float32, so the comparison must use float32's tolerance, not float64's.
  inputs = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15],
                     [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]], np.float32)
  targets = np.array([True, True, False, True])

  def loss(W, b):
    preds = 0.5 * (jnp.tanh((jnp.dot(inputs, W) + b) / 2) + 1)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

  for seed in range(4):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal(3).astype(np.float32)
    b = np.float32(rng.standard_normal())
    check_grads(loss, (W, b), order=2)


def test_check_grads_python_float_arguments():
  # A Python float computes in float32 (x64 off): float32's tolerance applies.
  check_grads(lambda x: jnp.sin(x) * x ** 2, (1.0,), order=2)
  check_grads(lambda x, y: jnp.exp(x) * y ** 3, (0.3, 1.7), order=2)


# ---- issue 10 item 8: the seeds' defaults and the 2020 messages ----

def test_default_flags_are_the_seeds():
  code = ("import warnings, tracejax as jax, tracejax.numpy as jnp; from tracejax import random\n"
          "print(jax.config.jax_threefry_partitionable, jax.config.jax_numpy_rank_promotion)\n"
          "print(' '.join(repr(float(v)) for v in random.normal(random.PRNGKey(0), (10,))))\n"
          "with warnings.catch_warnings(record=True) as w:\n"
          "  warnings.simplefilter('always')\n"
          "  jnp.ones((2, 3)) + jnp.ones(3)\n"
          "print(len(w))\n")
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_THREEFRY_PARTITIONABLE", "JAX_NUMPY_RANK_PROMOTION")}
  r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  flags, values, nwarn = r.stdout.strip().split("\n", 2)
  assert flags == "False allow"
  np.testing.assert_allclose(  # the quickstart's numbers (001:L16-21)
      np.array(values.split(), float),
      [-0.372111, 0.26423106, -0.18252774, -0.7368198, -0.44030386, -0.15214427,
       -0.6713536, -0.5908642, 0.73168874, 0.5673025], rtol=2e-6, atol=2e-7)
  assert nwarn == "0"


def test_rank_promotion_warn_once_per_call_site():
  import warnings
  old = config.jax_numpy_rank_promotion
  config.update("jax_numpy_rank_promotion", "warn")
  try:
    def f(x, y):
      return x + y   # one call site, traced for three shapes and run eagerly
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      # Not (4, 3): the warning is emitted when tracing, and test_numpy_basics expects
      # an untraced jnp.add of (4, 3) and (3,) under "warn" in the same worker.
      for n in (2, 3, 5):
        jax.jit(f)(np.ones((n, 3)), np.ones(3))
        f(jnp.ones((n, 3)), jnp.ones(3))
    msgs = [str(x.message) for x in w if "rank promotion" in str(x.message)]
    assert len(msgs) == 1 and "add on shapes (2, 3) (3,)" in msgs[0]
    assert w[0].filename == __file__  # attributed to the user's line
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      jnp.ones((2, 3)) * jnp.ones(3)   # another call site warns again
    assert len(w) == 1
  finally:
    config.update("jax_numpy_rank_promotion", old)


def test_control_flow_messages_are_2020s():
  with pytest.raises(TypeError, match=re.escape(
      "true_fun and false_fun output must have identical types, got\n"
      "ShapedArray(float32[])\nand\nShapedArray(int32[]).")):
    lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), jnp.float32(1))
  with pytest.raises(TypeError, match=re.escape(
      "true_fun and false_fun output must have same type structure, got "
      "PyTreeDef(tuple, [*,*]) and *.")):
    lax.cond(True, 1.0, lambda x: (x, x), 1.0, lambda x: x)   # the 2020 5-argument form
  with pytest.raises(TypeError, match=re.escape("scan body output must be a pair, got "
                                                "ShapedArray(float32[]).")):
    lax.scan(lambda c, x: c, jnp.float32(0), jnp.ones(3))
  with pytest.raises(TypeError, match=re.escape(
      "scan carry output and input must have identical types, got\nShapedArray(int32[])\n"
      "and\nShapedArray(float32[]).")):
    lax.scan(lambda c, x: (c.astype(jnp.int32), x), jnp.float32(0), jnp.ones(3))
  with pytest.raises(TypeError, match=re.escape(
      "cond_fun must return a boolean scalar, but got output type(s) "
      "[ShapedArray(bool[2])].")):
    lax.while_loop(lambda x: x < 1, lambda x: x, jnp.ones(2))
  with pytest.raises(TypeError, match=re.escape(
      "cond_fun must return a boolean scalar, but got output type(s) "
      "[ShapedArray(float32[])].")):
    lax.while_loop(lambda x: x, lambda x: x, jnp.float32(1))
  with pytest.raises(TypeError, match="cond_fun must return a boolean scalar, but got pytree"):
    lax.while_loop(lambda x: (x < 1, x < 2), lambda x: x, jnp.float32(1))
  with pytest.raises(TypeError, match=re.escape(
      "body_fun output and input must have identical types, got\nShapedArray(int32[])\n"
      "and\nShapedArray(float32[]).")):
    lax.while_loop(lambda x: x < 1, lambda x: x.astype(jnp.int32), jnp.float32(0))
  with pytest.raises(TypeError, match="must have identical types"):   # fori_loop too
    jax.jit(lambda n: lax.fori_loop(0, n, lambda i, x: x.astype(jnp.int32), 1.0))(3)


# ---- issue 10 item 9: the 2020 internals ----

def test_jax_util_helpers():
  from tracejax import util
  add3 = util.partial(lambda x, y: x + y, 3)
  assert add3(4) == 7 and add3.__name__ == "<lambda>"
  assert util.curry(lambda x, y, z: x * 100 + y * 10 + z)(1)(2, 3) == 123
  assert util.safe_map(lambda a, b: a - b, [3, 4], [1, 1]) == [2, 3]
  with pytest.raises(AssertionError):
    util.safe_zip([1, 2], [1])
  assert util.unzip2([(1, "a"), (2, "b")]) == ([1, 2], ["a", "b"])
  assert util.unzip3([(1, 2, 3)]) == ([1], [2], [3])
  assert util.prod([2, 3, 4]) == 24 and util.prod([]) == 1
  assert util.split_list([1, 2, 3, 4, 5], [1, 2]) == [[1], [2, 3], [4, 5]]
  assert util.concatenate([[1], (2, 3), []]) == [1, 2, 3]
  assert util.subvals((1, 2, 3), [(1, "b")]) == (1, "b", 3)
  assert util.split_dict({"a": 1, "b": 2}, ["b", "a"]) == [2, 1]
  with pytest.raises(ValueError):
    util.split_dict({"a": 1, "b": 2}, ["a"])
  t, f, merge = util.split_merge(lambda x: x % 2 == 0, [1, 2, 3, 4])
  assert (t, f) == ([2, 4], [1, 3]) and merge(["x", "y"], ["p", "q"]) == ["p", "x", "q", "y"]
  assert util.partition_list([True, False, True], "abc") == (["b"], ["a", "c"]) or \
      util.partition_list([True, False, True], "abc") == [["b"], ["a", "c"]]
  assert util.wrap_name("f", "jit") == "jit(f)"
  assert util.extend_name_stack("jit(f)/", "vmap(g)") == "jit(f)/vmap(g)/"
  a = [1]
  assert util.WrapHashably(a) == util.WrapHashably(a) != util.WrapHashably([1])
  assert hash(util.WrapHashably(a)) == hash(util.WrapHashably(a))
  assert util.Hashable((1, 2)) == util.Hashable((1, 2)) and len({util.Hashable(3),
                                                                 util.Hashable(3)}) == 1
  fns = util.get_module_functions(np)
  assert fns["sin"] is np.sin and fns["concatenate"] is np.concatenate and "pi" not in fns


def test_jax_util_toposort_and_cache():
  from tracejax import util

  class Node:
    def __init__(self, name, *parents):
      self.name, self.parents = name, list(parents)
  a = Node("a")
  b = Node("b", a)
  c = Node("c", a, b)
  d = Node("d", c, b)
  order = util.toposort([d])
  assert [n.name for n in order] == ["a", "b", "c", "d"]
  util.check_toposort(order)
  with pytest.raises(AssertionError):
    util.check_toposort([b, a])
  a.parents.append(d)  # a cycle
  with pytest.raises(ValueError, match="cycle"):
    util.toposort([d])

  calls = []

  @util.cache()
  def square(x):
    calls.append(x)
    return x * x
  assert square(3) == 9 and square(3) == 9 and calls == [3]
  from tracejax._src.config import enable_x64
  with enable_x64():  # the dtype policy is part of the key
    assert square(3) == 9
  assert calls == [3, 3]

  @util.memoize
  def ident(x):
    calls.append(("m", x))
    return x
  ident(1), ident(1)
  assert calls.count(("m", 1)) == 1


def test_lax_linalg_2020_module():
  # `from jax import lax_linalg` (2020): the same primitives as jax.lax.linalg, with the
  # 2020 return forms: lu -> (lu, pivots), eig -> (w, vl, vr), eigh -> (v, w)
  from tracejax import lax_linalg
  assert jax.lax_linalg is lax_linalg and lax_linalg.lu_p is lax.linalg.lu_p
  a = np.array([[1., 2.], [3., 4.]], np.float32)
  out = lax_linalg.lu(a)
  assert len(out) == 2
  lu_, piv = out
  np.testing.assert_array_equal(piv, [1, 1])
  np.testing.assert_allclose(lu_, [[3., 4.], [1 / 3, 2 / 3]], rtol=1e-6)
  l, u = np.tril(lu_, -1) + np.eye(2), np.triu(lu_)
  np.testing.assert_allclose(l @ u, a[::-1], rtol=1e-6)
  lu_j, piv_j = jax.jit(lax_linalg.lu)(a)
  np.testing.assert_array_equal(piv_j, piv)
  pivs = jax.vmap(lambda m: lax_linalg.lu(m)[1])(np.stack([np.eye(2), a[::-1]]))
  np.testing.assert_array_equal(pivs, [[0, 1], [0, 1]])
  w, vl, vr = lax_linalg.eig(np.diag(np.float32([2., 3.])))
  np.testing.assert_allclose(w, [2, 3])
  assert w.dtype == np.complex64 and vl.shape == vr.shape == (2, 2)
  s = np.array([[2., 1.], [1., 2.]], np.float32)
  v, ev = lax_linalg.eigh(s)
  np.testing.assert_allclose(ev, [1., 3.], rtol=1e-6)
  np.testing.assert_allclose(s @ v, v * ev, atol=1e-6)
  u, sv, vh = lax_linalg.svd(s)
  np.testing.assert_allclose(sv, [3., 1.], rtol=1e-6)
  np.testing.assert_allclose(lax_linalg.cholesky(s), np.linalg.cholesky(s), rtol=1e-6)
  q, r = lax_linalg.qr(s)
  np.testing.assert_allclose(q @ r, s, atol=1e-6)
  x = lax_linalg.triangular_solve(np.triu(s), np.float32([[1., 2.]]), lower=False)
  np.testing.assert_allclose(x @ np.triu(s), [[1., 2.]], rtol=1e-6)
  check_grads(lambda m: lax_linalg.lu(m)[0], (a,), order=1, modes=["fwd", "rev"])


def test_abstract_arrays_names():
  from tracejax import abstract_arrays as aa
  assert aa.ShapedArray is core.ShapedArray and aa.ConcreteArray is core.ConcreteArray
  assert aa.make_shaped_array(np.ones((2, 3))) == aa.ShapedArray((2, 3), np.float32)
  assert aa.abstractify(1.0) == aa.ShapedArray((), np.float32, weak_type=True)
  assert aa.abstractify(jnp.ones(3, jnp.int32)) == aa.ShapedArray((3,), np.int32)
  assert aa.raise_to_shaped(aa.ConcreteArray(np.ones(2, np.float32))) == \
      aa.ShapedArray((2,), np.float32)
  assert aa.canonicalize_shape([2, np.int64(3)]) == (2, 3)
  assert np.ndarray in aa.array_types and np.float32 in aa.array_types
  assert np.int8 in aa.array_types and np.bool_ in aa.array_types
  u = aa.UnshapedArray(np.float64)
  assert repr(u) == "UnshapedArray(float32)" and u == aa.UnshapedArray(np.float32)
  assert hash(u) == hash(aa.UnshapedArray(np.float32)) and u.str_short() == "float32"
  with pytest.raises(AttributeError, match="no shape"):
    u.shape
  z = aa.zeros_like_shaped_array(aa.ShapedArray((2,), np.int32))
  assert z.dtype == np.int32 and not z.any()
  np.testing.assert_array_equal(aa.zeros_like_array(np.ones((2, 2))), np.zeros((2, 2)))


def test_eval_shape_is_a_2020_shape_dtype_struct():
  out = jax.eval_shape(lambda x, y: (jnp.dot(x, y), x.sum()), jnp.ones((3, 4)),
                       jnp.ones((4, 5)))
  s, t = out
  assert isinstance(s, jax.ShapeDtypeStruct)
  assert (s.shape, s.dtype, s.ndim, s.size, len(s)) == ((3, 5), np.float32, 2, 15, 3)
  assert repr(s) == "ShapeDtypeStruct(shape=(3, 5), dtype=float32)"
  assert t.shape == () and t.size == 1
  with pytest.raises(TypeError, match="unsized"):
    len(t)
  # A ShapeDtypeStruct stands in for an argument (of eval_shape, jit's lower, ...).
  assert jax.eval_shape(jnp.sin, s).shape == (3, 5)


def test_device_array_delete_and_copy():
  import copy
  x = jnp.arange(3.0)
  y = copy.copy(x)
  z = copy.deepcopy({"a": x})["a"]
  w = x.copy()
  for v in (y, z, w):
    assert type(v) is type(x) and v is not x
    np.testing.assert_array_equal(v, [0.0, 1.0, 2.0])
  assert copy.copy(jnp.asarray(1.0) * 2).weak_type == (jnp.asarray(1.0) * 2).weak_type
  f = jax.jit(lambda a: a * 2)
  f(x)
  assert not x.is_deleted()
  x.delete()
  assert x.is_deleted() and x.shape == (3,)
  msg = re.escape("Array has been deleted with shape=float32[3].")
  for use in (lambda: print(x), lambda: x + 1, lambda: f(x), lambda: np.asarray(x),
              lambda: copy.copy(x), lambda: float(x[0]), lambda: jnp.sum(x)):
    with pytest.raises(RuntimeError, match=msg):
      use()
  np.testing.assert_array_equal(y, [0.0, 1.0, 2.0])   # the copies are independent


def test_interpreters_xla_and_pxla_names():
  from tracejax.interpreters import pxla, xla
  assert xla.DeviceArray is type(jnp.ones(2))
  assert pxla.ShardedDeviceArray is xla.DeviceArray
  assert isinstance(jax.pmap(lambda v: v * 2)(np.ones((1, 2))), pxla.ShardedDeviceArray)
  out = xla.xla_call(lu.wrap_init(lambda x: [x + 1.0]), np.float32(1))
  assert float(out[0]) == 2.0
  jaxpr = jax.make_jaxpr(lambda x: xla.xla_call(lambda y: [y * 2], x)[0])(1.0)
  assert [e.primitive.name for e in jaxpr.jaxpr.eqns] == ["xla_call"]
  np.testing.assert_allclose(pxla.xla_pmap(lambda x: [x * 2], np.arange(1.0), axis_name="i")[0],
                             [0.0])
  assert xla.abstractify(np.ones(3, np.float32)) == core.ShapedArray((3,), np.float32)
  np.testing.assert_array_equal(xla.device_put(np.arange(3)), [0, 1, 2])
  # xla.lower_fun: a translation rule that lowers a primitive as a lax function.
  p = core.Primitive("fma_2020")
  p.def_impl(lambda x, y: x * y + 1)
  p.def_abstract_eval(lambda x, y: x)
  xla.translations[p] = xla.lower_fun(lambda x, y: x * y + 1, multiple_results=False)
  assert float(jax.jit(lambda a, b: p.bind(a, b))(np.float32(2), np.float32(3))) == 7.0
  with pytest.raises(TypeError, match="translation rule"):
    xla.lower_fun(lambda x: x)(None, None)


def test_lax_all_to_all_and_pswapaxes():
  x = np.arange(3 * 3 * 2, dtype=np.float32).reshape(3, 3, 2)
  y = jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")(x)
  # member i receives slice i of every member, stacked along the new axis 1
  np.testing.assert_array_equal(y, np.transpose(x, (1, 2, 0)))
  z = jax.jit(jax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i"))(x)
  np.testing.assert_array_equal(z, np.swapaxes(x, 0, 1))
  w = np.arange(18.0, dtype=np.float32).reshape(3, 2, 3)
  g = jax.grad(lambda a: (jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 1),
                                   axis_name="i")(a) * w).sum())(x)
  np.testing.assert_array_equal(g, np.transpose(w, (2, 0, 1)))
  x2 = np.arange(18.0).reshape(2, 3, 3)
  nested = jax.vmap(jax.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="j"),
                    axis_name="i", in_axes=1)(x2)
  np.testing.assert_array_equal(nested, np.transpose(x2, (2, 0, 1)))
  with pytest.raises(ValueError, match=r"x.shape\[split_axis\], but they are 3 and 2"):
    jax.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(np.ones((3, 2)))
  assert jax.host_ids() == [0] and jax.partial is not None
