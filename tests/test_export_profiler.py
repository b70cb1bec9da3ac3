"""Tests of `tracejax.export` (serialize, deserialize in a fresh process, call under
jit/vmap/grad), `tracejax.profiler` (a trace jaxlib's profiler writes, annotations,
memory profiles), `tracejax.extend` and the extended dtypes of `tracejax.dtypes`."""
import collections
import glob
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import dtypes, export, profiler
from tracejax import extend
from tracejax._src.test_util import check_grads

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_Point = collections.namedtuple("_Point", "x y")
export.register_namedtuple_serialization(_Point, serialized_name="tests._Point")


def _f(x, y):
  return {"a": jnp.sin(x) * y, "b": jnp.sum(x ** 2)}


def _exported():
  return export.export(tracejax.jit(_f))(tracejax.ShapeDtypeStruct((3,), np.float32), 2.0)


# ---- export ----

def test_export_fields_and_call():
  exp = _exported()
  assert exp.fun_name == "_f" and exp.platforms == (export.default_export_platform(),)
  assert [a.shape for a in exp.in_avals] == [(3,), ()]
  assert [a.dtype for a in exp.out_avals] == [np.float32, np.float32]
  assert exp.in_tree == tracejax.tree_util.tree_structure(((1, 2), {}))
  assert exp.out_tree == tracejax.tree_util.tree_structure({"a": 1, "b": 2})
  assert "stablehlo.sine" in exp.mlir_module() and "func.func public @main" in exp.mlir_module()
  x = np.array([0.5, 1.0, 2.0], np.float32)
  out = exp.call(x, 2.0)
  np.testing.assert_allclose(out["a"], np.sin(x) * 2, rtol=1e-6)
  np.testing.assert_allclose(out["b"], np.sum(x ** 2), rtol=1e-6)


def test_serialize_round_trip_in_process():
  exp = _exported()
  blob = export.serialize(exp)
  assert isinstance(blob, (bytes, bytearray)) and bytes(blob) == bytes(exp.serialize())
  exp2 = export.deserialize(blob)
  assert exp2.in_avals == exp.in_avals and exp2.out_tree == exp.out_tree
  x = np.array([0.1, 0.2, 0.3], np.float32)
  np.testing.assert_allclose(exp2.call(x, 3.0)["a"], np.sin(x) * 3, rtol=1e-6)


def test_serialized_artifact_runs_in_a_fresh_process(tmp_path):
  # Closed-over constants and a namedtuple result travel with the artifact.
  c = np.array([1.0, -2.0, 3.0], np.float32)
  fn = tracejax.jit(lambda x, n: _Point(jnp.tanh(x) + c, (x * n).astype(jnp.int32)))
  exp = export.export(fn)(np.zeros(3, np.float32), tracejax.ShapeDtypeStruct((), np.float32))
  path = tmp_path / "f.bin"
  path.write_bytes(exp.serialize())
  x = np.array([0.25, 0.5, 4.0], np.float32)
  script = textwrap.dedent(f"""
      import collections, json, sys
      import numpy as np
      from tracejax import export
      Point = collections.namedtuple("Point", "x y")
      export.register_namedtuple_serialization(Point, serialized_name="tests._Point")
      exp = export.deserialize(open(sys.argv[1], "rb").read())
      out = exp.call(np.array({x.tolist()}, np.float32), np.float32(3))
      assert type(out).__name__ == "Point", type(out)
      print(json.dumps([np.asarray(out.x).tolist(), np.asarray(out.y).tolist()]))
  """)
  env = dict(os.environ, PYTHONPATH=_REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
             TF_CPP_MIN_LOG_LEVEL="3")
  res = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
  assert res.returncode == 0, res.stderr
  xs, ys = json.loads(res.stdout.strip().splitlines()[-1])
  np.testing.assert_allclose(xs, np.tanh(x) + c, rtol=1e-6)
  assert ys == (x * 3).astype(np.int32).tolist()


def test_call_under_jit_and_vmap():
  exp = export.deserialize(_exported().serialize())
  xs = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
  got = tracejax.jit(exp.call)(xs[0], 2.0)
  np.testing.assert_allclose(got["a"], np.sin(xs[0]) * 2, rtol=1e-6)
  # Nested twice in one program: the module is inlined under fresh names.
  two = tracejax.jit(lambda x: exp.call(x, 1.0)["b"] + exp.call(2 * x, 1.0)["b"])(xs[0])
  np.testing.assert_allclose(two, 5 * np.sum(xs[0] ** 2), rtol=1e-5)
  out = tracejax.vmap(exp.call, in_axes=(0, None))(xs, 2.0)
  for i in range(2):
    np.testing.assert_allclose(out["a"][i], np.sin(xs[i]) * 2, rtol=1e-6)
    np.testing.assert_allclose(out["b"][i], np.sum(xs[i] ** 2), rtol=1e-6)


def test_grad_needs_a_serialized_vjp():
  exp = _exported()
  loss = lambda e: (lambda x: e.call(x, 2.0)["b"] + jnp.sum(e.call(x, 2.0)["a"]))
  x = np.array([0.3, -0.2, 0.9], np.float32)
  want = 2 * x + 2 * np.cos(x)
  assert exp.has_vjp()   # made in this process: differentiates through the function
  np.testing.assert_allclose(tracejax.grad(loss(exp))(x), want, rtol=1e-5)
  no_vjp = export.deserialize(exp.serialize())
  assert not no_vjp.has_vjp()
  with pytest.raises(ValueError, match="vjp_order"):
    tracejax.grad(loss(no_vjp))(x)
  with_vjp = export.deserialize(exp.serialize(vjp_order=1))
  np.testing.assert_allclose(tracejax.jit(tracejax.grad(loss(with_vjp)))(x), want, rtol=1e-5)
  check_grads(lambda x: with_vjp.call(x, 2.0)["a"], (x,), order=1, modes=("rev",),
              atol=2e-2, rtol=2e-2)


def test_export_errors():
  exp = _exported()
  with pytest.raises(ValueError, match="must be the result of `jit`"):
    export.export(lambda x: x)(1.0)
  with pytest.raises(ValueError, match="Shape mismatch for args\\[0\\]"):
    exp.call(np.ones(4, np.float32), 2.0)
  with pytest.raises(ValueError, match="Dtype mismatch for args\\[0\\]"):
    exp.call(np.ones(3, np.int32), 2.0)
  with pytest.raises(ValueError, match="pytree structure"):
    exp.call(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="bad magic"):
    export.deserialize(b"not an artifact")
  with pytest.raises(ValueError, match="unknown platform"):
    export.export(tracejax.jit(_f), platforms=["gpu9"])
  Box = type("Box", (), {})
  tracejax.tree_util.register_pytree_node(Box, lambda b: ((), None), lambda a, c: Box())
  box_exp = export.export(tracejax.jit(lambda x, b: x))(1.0, Box())
  with pytest.raises(ValueError, match="register_pytree_node_serialization"):
    box_exp.serialize()
  cb = tracejax.jit(lambda x: tracejax.pure_callback(
      np.sin, tracejax.ShapeDtypeStruct((), np.float32), x))
  with pytest.raises(ValueError, match="host callback"):
    export.export(cb)(np.float32(1))


# ---- profiler ----

def test_trace_writes_an_xplane(tmp_path):
  @profiler.annotate_function
  def work(x):
    return jnp.sin(x) @ x

  with profiler.trace(str(tmp_path), create_perfetto_trace=True):
    with profiler.StepTraceAnnotation("train", step_num=1):
      with profiler.TraceAnnotation("inner", note="hello"):
        work(jnp.ones((8, 8))).block_until_ready()
  files = glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))
  assert len(files) == 1 and os.path.getsize(files[0]) > 0
  assert glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "perfetto_trace.json.gz"))
  data = profiler.ProfileData.from_file(files[0])
  names = {e.name for p in data.planes for line in p.lines for e in line.events}
  assert {"train", "inner", "test_trace_writes_an_xplane.<locals>.work"} <= names


def test_start_stop_trace_errors(tmp_path):
  profiler.start_trace(tmp_path)
  try:
    with pytest.raises(RuntimeError, match="already been started"):
      profiler.start_trace(tmp_path)
  finally:
    profiler.stop_trace()
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  assert glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))


def test_device_memory_profile(tmp_path):
  keep = jnp.ones((256, 256)) + 1
  data = profiler.device_memory_profile()
  assert isinstance(data, bytes) and len(data) > 0
  path = tmp_path / "mem.prof"
  profiler.save_device_memory_profile(str(path))
  assert path.stat().st_size > 0
  del keep


# ---- extend ----

def test_extend_core_and_primitives():
  core, prims = extend.core, extend.core.primitives
  closed = tracejax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
  assert isinstance(closed, core.ClosedJaxpr)
  assert [e.primitive for e in closed.jaxpr.eqns] == [prims.sin_p, prims.mul_p]
  np.testing.assert_allclose(core.jaxpr_as_fun(closed)(0.5)[0], np.sin(0.5) * 2, rtol=1e-6)
  assert list(core.jaxprs_in_params({"j": closed, "k": (closed.jaxpr, 1)})) == \
      [closed.jaxpr, closed.jaxpr]
  a = core.ShapedArray = tracejax.core.ShapedArray((4, 3), np.float32)
  assert core.mapped_aval(4, 0, a).shape == (3,)
  assert core.unmapped_aval(5, 2, a).shape == (4, 3, 5)
  v, w = core.gensym()(a), core.gensym()(a)
  eqn = core.new_jaxpr_eqn([v], [w], prims.sin_p, {})
  core.check_jaxpr(core.Jaxpr([], [v], [w], [eqn]))
  assert np.ndarray in core.array_types and type(jnp.ones(2)) in core.array_types
  assert core.primal_dtype_to_tangent_dtype(np.int32) == dtypes.float0
  seen = {}

  def probe(x):
    seen["jit"] = core.unsafe_am_i_under_a_jit_DO_NOT_USE()
    seen["vmap"] = core.unsafe_am_i_under_a_vmap_DO_NOT_USE()
    seen["axes"] = core.unsafe_get_axis_names_DO_NOT_USE()
    return x
  tracejax.jit(tracejax.vmap(probe, axis_name="i"))(jnp.ones(2))
  assert seen == {"jit": True, "vmap": True, "axes": ["i"]}
  assert not core.unsafe_am_i_under_a_jit_DO_NOT_USE()


def test_extend_linear_util_and_backend():
  lu = extend.linear_util
  f = lu.wrap_init(lambda x: x + 1)
  g = lu.transformation2(lambda inner, k, x: k * inner(x), f, 10)
  assert g.call_wrapped(1) == 20
  h, aux = lu.transformation_with_aux2(lambda inner, store, x: (store.store(x), inner(x))[1], f)
  assert h.call_wrapped(4) == 5 and aux() == 4
  be = extend.backend
  assert be.get_backend().platform == tracejax.default_backend()
  assert tracejax.default_backend() in be.backends()
  assert be.get_default_device() == tracejax.devices()[0]
  be.clear_backends()
  assert int(tracejax.jit(lambda x: x + 1)(1)) == 2


def test_extend_mlir_portable_artifact():
  text = tracejax.jit(lambda x: x * 2).lower(np.ones(2, np.float32)).as_text()
  blob = extend.mlir.serialize_portable_artifact(text, None)
  assert isinstance(blob, bytes)
  back = extend.mlir.deserialize_portable_artifact(blob)
  assert "stablehlo.multiply" in back


# ---- dtypes ----

def test_extended_dtypes():
  key = tracejax.random.key(0)
  assert dtypes.issubdtype(key.dtype, dtypes.prng_key)
  assert dtypes.issubdtype(key.dtype, dtypes.extended)
  assert not dtypes.issubdtype(key.dtype, np.floating)
  assert not dtypes.issubdtype(np.float32, dtypes.prng_key)
  assert not dtypes.issubdtype(np.float32, dtypes.extended)
  assert dtypes.issubdtype(dtypes.prng_key, dtypes.extended)
  assert dtypes.issubdtype(np.float32, np.floating)
  assert dtypes.canonicalize_dtype(key.dtype, allow_extended_dtype=True) == key.dtype
  with pytest.raises(ValueError, match="extended dtype"):
    dtypes.canonicalize_dtype(key.dtype)
  assert dtypes.itemsize_bits(np.float32) == 32 and dtypes.itemsize_bits(np.bool_) == 8
  assert dtypes.itemsize_bits(jnp.int4) == 4
  with pytest.raises(ValueError):
    dtypes.itemsize_bits(key.dtype)
  assert issubclass(dtypes.TypePromotionError, ValueError)
  assert dtypes.scalar_type_of(np.float32(1)) is float
  assert dtypes.result_type(np.int8, 1.0) == np.float32
