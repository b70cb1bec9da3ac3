"""`xla_computation` (HLO of a function, via StableHLO and XLA's MLIR-to-HLO conversion)
and `soft_pmap`.

The HLO is checked structurally (parameters, tuple result, cross-replica groups as the
2020 documentation prints them for `axis_env=[('i', 4), ('j', 2)]`), and the StableHLO
it came from is compiled and run against NumPy.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import api, lax
from tracejax._src import dispatch
from tracejax._src.api import ShapeDtypeStruct, grad, vmap
from tracejax._src.custom_transforms import custom_transforms, defjvp
from tracejax._src.runtime import backend
from tracejax._src.xla_computation import replica_groups, soft_pmap, xla_computation

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_stablehlo(comp, out_avals, *args):
  """Compile the computation's StableHLO and run it (single replica)."""
  exe = backend.compile(comp.as_stablehlo_text(), out_avals)
  bufs = [dispatch.to_buffer(np.asarray(a), dispatch.arg_aval(np.asarray(a))) for a in args]
  return [np.asarray(o) for o in exe.execute(bufs)]


def test_hlo_text_structure_and_values():
  def f(x):
    return jnp.sin(jnp.cos(x))

  c = xla_computation(f)(3.)
  text = c.as_hlo_text()
  assert text.startswith("HloModule xla_computation_f")
  assert "f32[] parameter(0)" in text
  assert "cosine" in text and "sine" in text
  assert "ROOT tuple" in text and "(f32[]) tuple(" in text   # results are a tuple
  assert c.name() == "xla_computation_f"
  assert str(c.program_shape()) == "(p0: f32[]) -> (f32[])"
  out, = run_stablehlo(c, [ShapeDtypeStruct((), np.float32)], np.float32(3.))
  np.testing.assert_allclose(out, np.sin(np.cos(np.float32(3.))), rtol=1e-6)


def test_other_views_of_the_module():
  c = xla_computation(lambda x, y: (x + y, x * y))(np.ones(3, np.float32), 2.)
  proto = c.as_serialized_hlo_module_proto()
  assert isinstance(proto, bytes) and b"xla_computation__lambda_" in proto
  assert c.as_hlo_dot_graph().startswith("digraph")
  assert "ENTRY" in c.get_hlo_module().to_string()
  assert "ENTRY" in c.as_hlo_module().to_string()
  assert "stablehlo.add" in c.as_stablehlo_text()
  assert "xla_computation__lambda_" in repr(c)


def test_psum_axis_env_replica_groups():
  def f(x):
    return x - lax.psum(x, "i")
  text = xla_computation(f, axis_env=[("i", 4)])(2).as_hlo_text()
  assert "s32[] parameter(0)" in text
  assert "all-reduce(" in text and "replica_groups={{0,1,2,3}}" in text
  assert "subtract" in text

  def g(x):
    return lax.psum(x, "i"), lax.psum(x, "j"), lax.psum(x, ("i", "j"))
  text = xla_computation(g, axis_env=[("i", 4), ("j", 2)])(5.).as_hlo_text()
  assert "replica_groups={{0,2,4,6},{1,3,5,7}}" in text     # over i: same j
  assert "replica_groups={{0,1},{2,3},{4,5},{6,7}}" in text  # over j: same i
  assert "replica_groups={{0,1,2,3,4,5,6,7}}" in text
  assert "(f32[], f32[], f32[]) tuple(" in text


def test_replica_groups_hand_derived():
  env = (("a", 2), ("b", 3))
  assert replica_groups(env, ("a",)).tolist() == [[0, 3], [1, 4], [2, 5]]
  assert replica_groups(env, ("b",)).tolist() == [[0, 1, 2], [3, 4, 5]]
  assert replica_groups(env, ("b", "a")).tolist() == [[0, 3, 1, 4, 2, 5]]


def test_other_collectives_under_axis_env():
  def f(x):
    return (lax.axis_index("i"), lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]),
            lax.pmean(x, "i"), lax.pmax(x, "i"), lax.pmin(x, "i"))
  text = xla_computation(f, axis_env=[("i", 3)])(1.).as_hlo_text()
  assert "replica-id()" in text and "remainder" in text
  assert "source_target_pairs={{0,1},{1,2},{2,0}}" in text
  assert "maximum" in text and "minimum" in text
  assert text.count("all-reduce(") == 3     # pmean: one psum over a static count (JAX)

  def g(x):
    return lax.ppermute(x, "j", [(0, 1), (1, 0)]), lax.axis_index("i")
  text = xla_computation(g, axis_env=[("i", 2), ("j", 2)])(1.).as_hlo_text()
  assert "source_target_pairs={{0,1},{1,0},{2,3},{3,2}}" in text
  assert "divide" in text                                   # replica id // 2


def test_unbound_axis_is_an_error():
  with pytest.raises(NameError, match="unbound axis name"):
    xla_computation(lambda x: lax.psum(x, "k"), axis_env=[("i", 2)])(1.)
  with pytest.raises(NameError, match="unbound axis name"):
    xla_computation(lambda x: lax.psum(x, "i"))(1.)


def test_tuple_args_static_argnums_kwargs_return_shape():
  def f(x, n, y=None):
    return {"a": x ** n + y, "b": (x * 2.,)}

  c, shape = xla_computation(f, static_argnums=1, tuple_args=True, return_shape=True)(
      np.ones(3, np.float32), 3, y=np.float32(2.))
  text = c.as_hlo_text()
  assert "(f32[3]{0}, f32[]) parameter(0)" in text         # one tuple parameter
  assert "get-tuple-element" in text
  assert "parameter(1)" not in text
  assert shape == {"a": ShapeDtypeStruct((3,), np.float32),
                   "b": (ShapeDtypeStruct((3,), np.float32),)}
  c2 = xla_computation(f, static_argnums=(1,))(np.ones(3, np.float32), 2, y=np.float32(1.))
  outs = run_stablehlo(c2, [ShapeDtypeStruct((3,), np.float32)] * 2,
                       np.arange(3, dtype=np.float32), np.float32(1.))
  np.testing.assert_allclose(outs[0], np.arange(3.) ** 2 + 1)
  np.testing.assert_allclose(outs[1], np.arange(3.) * 2)


def test_abstract_arguments_closures_and_transformations():
  w = np.arange(6, dtype=np.float32).reshape(3, 2)
  c = xla_computation(lambda x: jnp.dot(x, w))(ShapeDtypeStruct((4, 3), np.float32))
  text = c.as_hlo_text()
  assert "f32[4,3]{1,0} parameter(0)" in text and "parameter(1)" not in text  # w embedded
  x = np.ones((4, 3), np.float32)
  out, = run_stablehlo(c, [ShapeDtypeStruct((4, 2), np.float32)], x)
  np.testing.assert_allclose(out, x @ w)

  f = custom_transforms(lambda x: jnp.sin(x))
  defjvp(f, lambda g, ans, x: g * jnp.cos(x))
  c = xla_computation(vmap(grad(f)))(np.zeros(3, np.float32))
  out, = run_stablehlo(c, [ShapeDtypeStruct((3,), np.float32)],
                       np.array([0., 1., 2.], np.float32))
  np.testing.assert_allclose(out, np.cos([0., 1., 2.]), rtol=1e-6)


def test_bad_input():
  with pytest.raises(TypeError, match="callable"):
    xla_computation(3)
  with pytest.raises(TypeError, match="axis_env"):
    xla_computation(jnp.sin, axis_env=[("i",)])
  with pytest.raises(TypeError, match="positive integer"):
    xla_computation(jnp.sin, axis_env=[("i", 0)])
  with pytest.raises(ValueError, match="twice"):
    xla_computation(jnp.sin, axis_env=[("i", 2), ("i", 3)])
  with pytest.raises(TypeError, match="static_argnums"):
    xla_computation(jnp.sin, static_argnums="a")
  with pytest.raises(TypeError, match="tuple_args must be a bool"):
    xla_computation(jnp.sin, tuple_args=None)
  with pytest.raises(ValueError, match="static_argnums"):
    xla_computation(jnp.sin, static_argnums=3)(1.)
  with pytest.raises(TypeError, match="not a valid JAX type"):
    xla_computation(lambda s: s)("abc")


# ---- soft_pmap ----

def test_soft_pmap_one_device():
  x = np.arange(1., 5., dtype=np.float32)
  out = soft_pmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(x)
  np.testing.assert_allclose(np.asarray(out), x / x.sum(), rtol=1e-6)
  out = soft_pmap(lambda v, b: v * b + lax.axis_index("i"), "i", in_axes=(0, None))(x, 2.)
  np.testing.assert_allclose(np.asarray(out), 2 * x + np.arange(4))
  loop = np.stack([np.sin(v) for v in x])
  np.testing.assert_allclose(np.asarray(soft_pmap(jnp.sin)(x)), loop, rtol=1e-6)
  with pytest.raises(ValueError, match="0 or None"):
    soft_pmap(jnp.sin, in_axes=1)
  with pytest.raises(ValueError, match="inconsistent sizes"):
    soft_pmap(lambda a, b: a + b)(np.ones(2), np.ones(3))


def test_soft_pmap_several_devices():
  code = """
import numpy as np, tracejax, tracejax.numpy as jnp
from tracejax import lax, soft_pmap
assert tracejax.device_count() == 4
f = soft_pmap(lambda v: v - lax.pmean(v, 'i') + lax.axis_index('i'), 'i')
for n in (4, 8, 2):
  x = np.arange(float(n), dtype=np.float32) ** 2
  np.testing.assert_allclose(np.asarray(f(x)), x - x.mean() + np.arange(n), rtol=1e-5)
try:
  f(np.ones(6, np.float32))
except ValueError as e:
  assert 'divisible' in str(e)
else:
  raise AssertionError('no error')
print('ok')
"""
  env = dict(os.environ, TRACEJAX_NUM_CPU_DEVICES="4")
  r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                     text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "ok" in r.stdout


def test_public_names():
  assert api.xla_computation is tracejax.xla_computation is xla_computation
  assert api.soft_pmap is tracejax.soft_pmap is soft_pmap
