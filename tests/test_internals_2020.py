"""The 2020 internals API of "Writing custom Jaxpr interpreters": `linear_util`
(WrappedFun and generator transformations), `api_util.flatten_fun`,
`partial_eval.PartialVal` / `trace_to_jaxpr`, `core.unit` / `unitvar`; and
`check_grads` on complex functions (the autodiff cookbook's convention)."""
import os
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

@pytest.fixture
def x64():
  old = config.jax_enable_x64
  config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


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
