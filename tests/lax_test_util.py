"""Shared helpers for per-primitive tests: random inputs, tolerances, and the three checks
every primitive record runs (eager vs NumPy reference, jit vs eager, abstract eval vs actual).
"""
import ml_dtypes
import numpy as np

bfloat16 = np.dtype(ml_dtypes.bfloat16)

BOOL = [np.dtype(np.bool_)]
SIGNED = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UNSIGNED = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
INTS = SIGNED + UNSIGNED
FLOATS = [bfloat16] + [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
COMPLEX = [np.dtype(np.complex64), np.dtype(np.complex128)]
INEXACT = FLOATS + COMPLEX
NUMBER = INTS + INEXACT
ALL = BOOL + NUMBER

_TOL = {bfloat16: 2e-2, np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5,
        np.dtype(np.float64): 1e-12, np.dtype(np.complex64): 2e-5,
        np.dtype(np.complex128): 1e-12}


def tolerance(dtype, tol=None):
  dtype = np.dtype(dtype)
  if tol is None:
    return _TOL.get(dtype, 0)
  if isinstance(tol, dict):
    return tol.get(dtype, _TOL.get(dtype, 0))
  return tol


def rand(rng, shape, dtype, kind="default"):
  """A random array; `kind` in default/positive/nonzero/small/unit/int_small."""
  dtype = np.dtype(dtype)
  shape = tuple(shape)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if np.issubdtype(dtype, np.integer):
    info = np.iinfo(dtype)
    lo, hi = (max(info.min, -8), min(info.max, 8)) if kind != "positive" else (1, min(info.max, 8))
    if kind == "nonzero":
      x = rng.integers(1, hi + 1, shape)
      sign = rng.choice([-1, 1], shape) if info.min < 0 else 1
      return (x * sign).astype(dtype)
    return rng.integers(lo, hi + 1, shape).astype(dtype)
  if np.issubdtype(dtype, np.complexfloating):
    real = np.float32 if dtype == np.complex64 else np.float64
    return (rand(rng, shape, real, kind) + 1j * rand(rng, shape, real, kind)).astype(dtype)
  if kind == "positive":
    x = rng.uniform(0.1, 3.0, shape)
  elif kind == "unit":
    x = rng.uniform(-0.9, 0.9, shape)
  elif kind == "small":
    x = rng.uniform(-1.0, 1.0, shape)
  elif kind == "nonzero":
    x = rng.uniform(0.5, 3.0, shape) * rng.choice([-1, 1], shape)
  else:
    x = rng.normal(0, 2.0, shape)
  return np.asarray(x).astype(dtype)


def assert_close(actual, expected, dtype=None, tol=None, err_msg=""):
  actual = np.asarray(actual)
  expected = np.asarray(expected)
  dtype = np.dtype(dtype or expected.dtype)
  assert actual.shape == expected.shape, (actual.shape, expected.shape, err_msg)
  t = tolerance(dtype, tol)
  if np.issubdtype(dtype, np.inexact) or dtype == bfloat16:
    up = np.complex128 if np.iscomplexobj(expected) or np.iscomplexobj(actual) else np.float64
    np.testing.assert_allclose(actual.astype(up), expected.astype(up), rtol=t, atol=t,
                               equal_nan=True, err_msg=err_msg)
  else:
    np.testing.assert_array_equal(actual, expected, err_msg=err_msg)


def check_primitive(fun, reference, args, out_dtype=None, tol=None, check_jit=True,
                    check_abstract=True):
  """The three per-record checks: eager vs reference, jit vs eager, abstract eval vs actual."""
  from tracejax._src.api import make_jaxpr
  from tracejax._src.jit import jit
  eager = fun(*args)
  expected = reference(*[np.asarray(a) for a in args])
  eager_leaves = eager if isinstance(eager, (tuple, list)) else [eager]
  exp_leaves = expected if isinstance(expected, (tuple, list)) else [expected]
  for e, r in zip(eager_leaves, exp_leaves):
    r = np.asarray(r)
    assert np.dtype(e.dtype) == np.dtype(out_dtype or r.dtype), (e.dtype, out_dtype or r.dtype)
    assert_close(e, r.astype(e.dtype) if r.dtype != e.dtype else r, e.dtype, tol)
  if check_jit:
    jitted = jit(fun)(*args)
    jl = jitted if isinstance(jitted, (tuple, list)) else [jitted]
    for j, e in zip(jl, eager_leaves):
      assert j.dtype == e.dtype and j.shape == e.shape
      assert_close(j, e, e.dtype, tol)
  if check_abstract:
    closed = make_jaxpr(fun)(*args)
    for a, e in zip(closed.out_avals, eager_leaves):
      assert a.shape == e.shape and a.dtype == e.dtype, (a, e.shape, e.dtype)
  return eager
