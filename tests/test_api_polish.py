"""Small API surfaces as JAX 0.10.2 has them: `ShapeDtypeStruct`, `jax.errors.JaxRuntimeError`
and the module names of lowered `jit`s.

Expected strings were read off JAX 0.10.2 (/work/jaxvenv) for the same calls.
"""
import copy
import pickle

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import errors
from tracejax.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding

S = tracejax.ShapeDtypeStruct


# ---- ShapeDtypeStruct ----

def test_shape_dtype_struct_repr_and_attributes():
  s = S((2, 3), jnp.float32)
  assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
  assert s.weak_type is False and s.sharding is None
  assert (s.shape, s.dtype, s.ndim, s.size, len(s)) == ((2, 3), np.dtype("float32"), 2, 6, 2)
  assert repr(S([2, 3], jnp.float32, weak_type=True)) == (
      "ShapeDtypeStruct(shape=(2, 3), dtype=float32, weak_type=True)")
  dev = SingleDeviceSharding(tracejax.devices()[0])
  s2 = S((2,), jnp.float32, sharding=dev, weak_type=True)
  assert s2.sharding == dev
  assert repr(s2) == (f"ShapeDtypeStruct(shape=(2,), dtype=float32, sharding={dev!r}, "
                      "weak_type=True)")
  assert repr(S((), "int64")) == "ShapeDtypeStruct(shape=(), dtype=int64)"  # not canonicalized
  with pytest.raises(TypeError, match="unsized"):
    len(S((), jnp.float32))


def test_shape_dtype_struct_partition_spec_needs_a_mesh():
  s = S((2,), jnp.float32, sharding=P("x"))
  with pytest.raises(TypeError, match="context mesh cannot be empty"):
    s.sharding
  mesh = tracejax.make_mesh((1,), ("x",))
  with tracejax.set_mesh(mesh):
    assert s.sharding == NamedSharding(mesh, P("x"))
    assert repr(s) == ("ShapeDtypeStruct(shape=(2,), dtype=float32, sharding=NamedSharding("
                       "mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), "
                       "memory_kind=device))")


def test_shape_dtype_struct_equality_immutability_update():
  a = S((2,), jnp.float32)
  assert a == S((2,), np.float32) and hash(a) == hash(S((2,), np.float32))
  assert a != S((2,), jnp.float32, weak_type=True)          # as JAX: weak_type counts
  dev = SingleDeviceSharding(tracejax.devices()[0])
  assert a != S((2,), jnp.float32, sharding=dev)
  assert S((2,), jnp.float32, sharding=dev) == S((2,), jnp.float32, sharding=dev)
  assert len({a, S((2,), np.float32), a.update(weak_type=True)}) == 2
  with pytest.raises(RuntimeError, match=r"Cannot reassign attributes \(shape\)"):
    a.shape = (3,)
  assert a.update(shape=(3,), dtype=jnp.int32) == S((3,), jnp.int32)
  assert a.update(weak_type=True).weak_type and not a.weak_type
  assert a.update(sharding=dev).update(sharding=None) == a
  with pytest.raises(TypeError, match="unexpected keyword arguments \\['shap'\\]"):
    a.update(shap=(3,))
  for c in (pickle.loads(pickle.dumps(a.update(weak_type=True))), copy.copy(a),
            copy.deepcopy(a)):
    assert type(c) is S and c.shape == a.shape and c.dtype == a.dtype
  assert pickle.loads(pickle.dumps(a.update(weak_type=True))).weak_type


def test_shape_dtype_struct_bad_arguments():
  with pytest.raises(ValueError, match="dtype must be specified"):
    S((2,), None)
  with pytest.raises(ValueError, match="sharding should be an instance of"):
    S((2,), jnp.float32, sharding=3)
  with pytest.raises(TypeError):   # weak_type and sharding are keyword-only, as in JAX
    S((2,), jnp.float32, True)


def test_shape_dtype_struct_from_transformations():
  assert repr(tracejax.eval_shape(lambda x: x * 2, 1.0)) == (
      "ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)")
  assert repr(tracejax.eval_shape(lambda x: x * 2, jnp.ones(3))) == (
      "ShapeDtypeStruct(shape=(3,), dtype=float32)")
  _, shape = tracejax.make_jaxpr(lambda x: x * 2, return_shape=True)(1.0)
  assert shape.weak_type
  # a struct with a sharding still stands in for an argument
  dev = SingleDeviceSharding(tracejax.devices()[0])
  spec = S((2,), jnp.float32, sharding=dev)
  compiled = tracejax.jit(lambda x: x * 2).lower(spec).compile()
  np.testing.assert_array_equal(np.asarray(compiled(jnp.ones(2))), [2.0, 2.0])
  assert tracejax.eval_shape(lambda x: x.sum(), spec) == S((), jnp.float32)


# ---- jax.errors.JaxRuntimeError ----

def test_jax_runtime_error_as_jax():
  E = errors.JaxRuntimeError
  assert E.__module__ == "jax.errors" and E.__name__ == "JaxRuntimeError"
  assert issubclass(E, RuntimeError)
  x = jnp.ones(2)
  x.delete()
  with pytest.raises(E, match="deleted or donated buffer"):
    x.block_until_ready()
  # pickles without a `jax` package (as a worker process's error travels back)
  err = E("boom")
  back = pickle.loads(pickle.dumps(err))
  assert type(back) is E and back.args == ("boom",) and repr(back) == "JaxRuntimeError('boom')"
  assert back.__dict__ == err.__dict__
  assert tracejax.errors.JaxprTypeError.__mro__[1] is TypeError
  assert issubclass(tracejax.errors.InconclusiveDimensionOperation, Exception)


# ---- module names of lowered functions ----

def _module_line(text):
  return next(ln for ln in text.splitlines() if ln.startswith("module @"))


def test_jit_module_names_as_jax():
  assert _module_line(tracejax.jit(lambda x: x).lower(1.0).as_text()).startswith(
      "module @jit__lambda ")

  def f(x):
    return x

  assert _module_line(tracejax.jit(f).lower(1.0).as_text()).startswith("module @jit_f ")
  for name, expected in [("a-b", '@"jit_a-b"'), ("a.b", "@jit_a.b"), ("a b<c>", "@jit_a_b_c"),
                         ("a(b)", "@jit_a_b"), ("<<a", "@jit___a"), ("", "@jit ")]:
    f.__name__ = name
    assert _module_line(tracejax.jit(f).lower(1.0).as_text()).startswith(
        "module " + expected), name
  hlo = tracejax.jit(lambda x: x).lower(1.0).compile().as_text()
  assert hlo.startswith("HloModule jit__lambda,")
  exp = tracejax.export.export(tracejax.jit(lambda x: x))(S((), jnp.float32))
  assert _module_line(exp.mlir_module()).startswith("module @jit__lambda ")


# ---- internals that libraries built on JAX (flax) import ----

def test_library_internals_flax_needs():
  import importlib
  from tracejax._src import core as src_core, dtypes as src_dtypes, traceback_util
  import tracejax.core as jcore
  # `tracejax._src.core` is one module in JAX: its names resolve in the core package here.
  assert src_core.ShapedArray is importlib.import_module("tracejax._src.core.avals").ShapedArray
  assert src_core.Primitive is jcore.Primitive
  with pytest.raises(AttributeError):
    src_core.no_such_name
  # version gates: the JAX API level tracejax implements
  assert tracejax.__version_info__ == (0, 10, 2)
  assert importlib.import_module("tracejax.version").__version_info__ == (0, 10, 2)
  # extended dtypes: typed keys' dtype is an ExtendedDType; DType annotates dtypes
  assert isinstance(tracejax.random.key(0).dtype, src_dtypes.ExtendedDType)
  assert src_dtypes.DType is np.dtype
  # jnp.ndarray is tracejax.Array (keys and tracers included)
  assert jnp.ndarray is tracejax.Array
  assert isinstance(tracejax.random.key(0), jnp.ndarray)
  seen = []
  tracejax.jit(lambda x: seen.append(isinstance(x, jnp.ndarray)) or x)(1.)
  assert seen == [True]
  # a library's own files can be filtered from tracebacks like tracejax's
  import os, tempfile
  d = tempfile.mkdtemp()
  f = os.path.join(d, "lib.py")
  assert not traceback_util.is_internal_file(f)
  traceback_util.register_exclusion(d)
  try:
    assert traceback_util.is_internal_file(f)
  finally:
    traceback_util._excluded_paths.remove(os.path.abspath(d))
    traceback_util._internal_cache.clear()


def test_opaque_trace_state_names_the_trace():
  import tracejax.core as jcore
  outer = jcore.get_opaque_trace_state(convention="flax")
  assert outer == jcore.get_opaque_trace_state()
  inside = []
  tracejax.jit(lambda x: inside.append(jcore.get_opaque_trace_state()) or x)(1.)
  tracejax.grad(lambda x: inside.append(jcore.get_opaque_trace_state()) or x)(1.)
  assert all(s != outer for s in inside)
  assert inside[0] != inside[1]
