"""jit's C++ dispatch path (jaxlib's PjitFunction) agrees with the Python path.

A cached call never enters Python, so everything that must change what runs
(flags, pytree structure, transformations) is checked here by flipping it after
the fast path has been populated.
"""
import collections

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import jit, random, tree_util
from tracejax._src.config import config


def test_outputs_are_device_arrays_with_weak_types():
  f = jit(lambda x: x * 2)
  for _ in range(3):
    out = f(2.)
    assert isinstance(out, tracejax.Array) and type(out) is tracejax.DeviceArray
    assert out.aval.weak_type and out.dtype == np.float32
    assert repr(out) == "DeviceArray(4., dtype=float32)"
  strong = f(np.float32(2.))
  assert not strong.aval.weak_type


def test_two_jits_of_one_function_share_a_cache():
  traces = []

  def f(x):
    traces.append(1)
    return x + 1

  assert float(jit(f)(1.)) == 2.
  assert float(jit(f)(2.)) == 3.
  assert len(traces) == 1
  jit(f)(jnp.ones(3))
  assert len(traces) == 2


class Point:
  def __init__(self, x, y, tag):
    self.x, self.y, self.tag = x, y, tag


tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), p.tag),
                               lambda tag, xy: Point(*xy, tag))


def test_registered_pytree_nodes_in_and_out():
  traces = []

  @jit
  def f(p):
    traces.append(p.tag)
    return Point(p.y, p.x * 2, p.tag)

  for i in range(3):
    out = f(Point(jnp.float32(i), jnp.ones(2), "a"))
    assert isinstance(out, Point) and out.tag == "a"
    np.testing.assert_allclose(out.y, 2. * i)
  assert traces == ["a"]
  out = f(Point(1., jnp.ones(2), "b"))  # new aux data: retrace
  assert traces == ["a", "b"] and out.tag == "b"


def test_dicts_namedtuples_and_none_leaves():
  Pair = collections.namedtuple("Pair", "a b")
  f = jit(lambda d: {"s": d["x"] + d["y"].a, "n": None, "t": Pair(d["y"].b, 1.)})
  for _ in range(2):
    out = f({"y": Pair(jnp.ones(2), 3.), "x": jnp.arange(2.)})
    np.testing.assert_allclose(out["s"], [1., 2.])
    assert out["n"] is None and isinstance(out["t"], Pair)


def test_numpy_and_scalar_arguments():
  f = jit(lambda x, y: x * y)
  for _ in range(3):
    out = f(np.arange(3.), 2)
    assert out.dtype == np.float32  # float64 NumPy input narrowed without x64
    np.testing.assert_allclose(out, [0., 2., 4.])
  np.testing.assert_array_equal(f(np.arange(3), 2), [0, 2, 4])


def test_x64_flag_is_part_of_the_key():
  f = jit(lambda x: x + 1)
  assert f(1.).dtype == np.float32
  with config._override("jax_enable_x64", True):
    assert f(1.).dtype == np.float64
  assert f(1.).dtype == np.float32


def test_prng_stream_flag_is_part_of_the_key():
  f = jit(lambda k: random.uniform(k, (3,)))
  key = random.PRNGKey(0)
  a = np.asarray(f(key))
  with config._override("jax_threefry_partitionable", not config.jax_threefry_partitionable):
    b = np.asarray(f(key))
    np.testing.assert_array_equal(b, random.uniform(key, (3,)))
  assert not np.array_equal(a, b)
  np.testing.assert_array_equal(f(key), a)


def test_debug_nans_after_the_fast_path_is_cached():
  f = jit(lambda x: jnp.log(x))
  for _ in range(2):
    f(jnp.array(-1.))  # a NaN, silently
  with config._override("jax_debug_nans", True):
    with pytest.raises(FloatingPointError, match="nan"):
      f(jnp.array(-1.))


def test_disable_jit_after_the_fast_path_is_cached():
  calls = []

  @jit
  def f(x):
    calls.append(type(x))
    return x + 1

  f(jnp.ones(2))
  f(jnp.ones(2))
  assert len(calls) == 1
  with config._override("jax_disable_jit", True):
    f(jnp.ones(2))
  assert calls[-1] is tracejax.DeviceArray


def test_cached_jit_under_transformations():
  f = jit(lambda x: jnp.sin(x) * x)
  x = jnp.arange(3.)
  f(x), f(x)
  expected = np.cos(np.arange(3.)) * np.arange(3.) + np.sin(np.arange(3.))
  np.testing.assert_allclose(tracejax.grad(lambda x: f(x).sum())(x), expected, rtol=1e-6)
  np.testing.assert_allclose(tracejax.vmap(f)(x), f(x))
  assert "xla_call" in str(tracejax.make_jaxpr(f)(x))
  # Concrete arguments inside a trace still go through Python (and stage the call).
  assert "xla_call" in str(tracejax.make_jaxpr(lambda y: f(x) + y)(1.))


def test_leaked_tracer_argument():
  leaked = []
  tracejax.grad(lambda x: leaked.append(x) or x)(1.)
  f = jit(lambda x: x + 1)
  f(1.)
  with pytest.raises(tracejax.errors.UnexpectedTracerError):
    f(leaked[0])


def test_eager_jnp_functions_keep_their_errors_and_jaxprs():
  with pytest.raises(TypeError, match="add requires ndarray or scalar arguments"):
    jnp.add("a", 1)
  jaxpr = str(tracejax.make_jaxpr(jnp.add)(1., jnp.ones(2)))
  assert "xla_call" not in jaxpr and "add" in jaxpr
  np.testing.assert_allclose(jnp.add([1., 2.], 1), [2., 3.])


def test_aot_and_cache_methods():
  f = jit(lambda x: x)
  assert "func.func public @main" in f.lower(1.).as_text()
  assert f.eval_shape(jnp.ones(2)).shape == (2,)
  f(2.)
  f.clear_cache()
  assert float(f(2.)) == 2.
  assert f.__name__ == "<lambda>"


def test_jit_of_a_bound_method_and_as_a_method():
  class Model:
    def __init__(self, scale):
      self.scale = scale

    def apply(self, x):
      return x * self.scale

  np.testing.assert_allclose(jit(Model(3.).apply)(jnp.ones(2)), [3., 3.])

  class Static:
    f = jit(lambda self, x: x + 1)
  # Like JAX, a jitted function looked up on a class binds `self` (here a non-array: error).
  with pytest.raises(TypeError, match="not a valid JAX type"):
    Static().f(1.)


def test_ordered_and_default_dicts_keep_their_leaf_order():
  f = jit(lambda d: {k: v * 2 for k, v in d.items()})
  od = collections.OrderedDict([("b", jnp.ones(2)), ("a", jnp.zeros(3))])
  dd = collections.defaultdict(list, {"z": jnp.ones(1), "a": jnp.zeros(2)})
  for _ in range(3):
    out = f(od)
    assert out["b"].shape == (2,) and out["a"].shape == (3,)
    out = f(dd)
    assert out["z"].shape == (1,) and out["a"].shape == (2,)
  assert tracejax.block_until_ready(od) is od


def test_array_protocols():
  import copy
  import pickle
  x = jnp.arange(4.)
  np.testing.assert_array_equal(np.from_dlpack(x), [0., 1., 2., 3.])
  for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x), copy.copy(x)):
    assert type(y) is tracejax.DeviceArray and y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)
  with pytest.raises(TypeError):
    hash(x)
  assert not np.asarray(x).flags.writeable
  assert tracejax.block_until_ready(x) is x


def test_eager_reductions_with_static_arguments():
  a = jnp.arange(12.).reshape(3, 4)
  x = np.arange(12.).reshape(3, 4)
  for _ in range(2):  # the second call takes the cached C++ path
    np.testing.assert_allclose(jnp.sum(a, 0), x.sum(0))
    np.testing.assert_allclose(a.sum(axis=1, keepdims=True), x.sum(1, keepdims=True))
    np.testing.assert_allclose(jnp.sum(a, where=a > 5), x.sum(where=x > 5))
    np.testing.assert_allclose(jnp.max(a, initial=100.), 100.)
    np.testing.assert_allclose(jnp.std(a, ddof=1), x.std(ddof=1), rtol=1e-6)
    np.testing.assert_array_equal(jnp.argmax(a, 1), x.argmax(1))
    np.testing.assert_array_equal(jnp.where(a > 5, a, 0.), np.where(x > 5, x, 0.))
  assert jnp.sum(a, dtype=jnp.int32).dtype == np.int32
  assert "reduce_sum" in str(tracejax.make_jaxpr(lambda x: jnp.sum(x, 0))(a))
  assert "xla_call" not in str(tracejax.make_jaxpr(lambda x: jnp.sum(x, 0))(a))
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.sum(a, axis=5)
