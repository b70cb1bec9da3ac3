"""Fixed-seed slice of the differential fuzzer that needs no real JAX.

Programs come from tools/_fuzz_gen.py (the generator of tools/fuzz_vs_jax.py) and are
checked against tracejax itself: jit equals eager, vmap equals a Python loop over the
batch, and on smooth programs grad/jvp equal finite differences (check_grads, fwd and
rev, order 2, float64).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))

import _fuzz_common as C  # noqa: E402
import _fuzz_gen as G  # noqa: E402
import fuzz_vs_jax as F  # noqa: E402

from tracejax._src.test_util import check_grads  # noqa: E402

NS = C.bind_library("tracejax")
SEED = 20261125


def _infer(prog):
  return C.infer_avals(NS, prog, G.render)


def _programs(tag, n):
  out = []
  for i in range(n):
    rng = np.random.default_rng([SEED, tag, i])
    out.append(G.generate(rng, _infer, x64=False, max_ops=4, p_keep_error=0.0))
  return out


def _run(prog):
  return C.run_program(NS, G.render(prog), G.make_inputs(prog), timeout=60)


def test_generator_is_deterministic_and_renders():
  a = _programs(0, 3)
  b = _programs(0, 3)
  assert a == b
  for p in a:
    src = G.render(p)
    assert "def f0(" in src and "main = f" in src
    assert len(G.make_inputs(p)) == len(p["inputs"])


def test_jit_equals_eager():
  checked = 0
  for prog in _programs(1, 10):
    prog = dict(prog, stack=[])
    eager = _run(prog)
    jitted = _run(dict(prog, stack=[{"t": "jit"}]))
    if not eager["ok"]:
      continue  # eager errors are checked against JAX by the fuzzer itself
    if any(leaf.get("weak") in (None, "host") for leaf in eager["leaves"]):
      # A NumPy result: eagerly the program ran NumPy itself (x0[0] of a float64 input
      # is NumPy indexing), which jit traces with tracejax's dtypes (so in JAX too).
      continue
    checked += 1
    assert F.compare(eager, jitted) is None, (G.render(prog), eager, jitted)
  assert checked >= 6


def _loop_vmap(prog, size):
  """Runs f0 on each batch slice (axis 0 of every array input) and stacks the results."""
  axes = [None if "py" in s else 0 for s in prog["inputs"]]
  vprog = dict(prog, stack=[{"t": "vmap", "in_axes": axes, "size": size}])
  inputs = G.make_inputs(vprog)
  src = C.PRELUDE + G.render(dict(prog, stack=[]))
  g = dict(NS)
  exec(compile(src, "<loop>", "exec"), g)
  per = []
  for b in range(size):
    args = [C.decode_input(d) if ax is None else C.decode_input(d)[b]
            for d, ax in zip(inputs, axes)]
    per.append([np.asarray(l) for l in NS["jax"].tree_util.tree_leaves(g["main"](*args))])
  expected = [np.stack([p[k] for p in per]) for k in range(len(per[0]))]
  got = C.run_program(NS, G.render(vprog), inputs, timeout=60)
  return expected, got


def test_vmap_equals_python_loop():
  checked = 0
  for prog in _programs(2, 10):
    if all("py" in s for s in prog["inputs"]):
      continue
    try:
      expected, got = _loop_vmap(prog, 2)
    except Exception:
      continue  # the per-example program raises; nothing to compare
    checked += 1
    assert got["ok"], (G.render(prog), got)
    assert len(got["leaves"]) == len(expected)
    for e, leaf in zip(expected, got["leaves"]):
      v = C.decode_input(leaf)
      assert v.shape == e.shape and v.dtype == e.dtype, G.render(prog)
      if v.dtype.kind in "fc" or v.dtype.name == "bfloat16":
        tol = 1e-2 if v.dtype.itemsize <= 2 else 1e-5
        np.testing.assert_allclose(v.astype(np.complex128), e.astype(np.complex128),
                                   rtol=tol, atol=tol, err_msg=G.render(prog))
      else:
        np.testing.assert_array_equal(v, e, err_msg=G.render(prog))
  assert checked >= 4


def test_grad_matches_finite_differences(x64):
  checked = 0
  for i in range(4):
    rng = np.random.default_rng([SEED, 3, i])
    prog = G.generate_smooth(rng, _infer, dtype="float64")
    g = dict(NS)
    exec(compile(C.PRELUDE + G.render(prog), "<smooth>", "exec"), g)
    args = [C.decode_input(d) for d in G.make_inputs(prog)]
    check_grads(g["main"], args, order=2, modes=("fwd", "rev"))
    checked += 1
  assert checked == 4


def test_grad_transform_stack_matches_check(x64):
  """grad of _sc(f) under jit and vmap equals the per-example gradient."""
  rng = np.random.default_rng([SEED, 4])
  prog = G.generate_smooth(rng, _infer, dtype="float64")
  axes = [0] * len(prog["inputs"])
  stacked = dict(prog, stack=[{"t": "grad", "arg": 0}, {"t": "jit"},
                              {"t": "vmap", "in_axes": axes, "size": 2}])
  got = C.run_program(NS, G.render(stacked), G.make_inputs(stacked))
  assert got["ok"], got
  inputs = G.make_inputs(stacked)
  one = dict(prog, stack=[{"t": "grad", "arg": 0}])
  for b in range(2):
    sl = [C.encode_array(C.decode_input(d)[b]) for d in inputs]
    ref = C.run_program(NS, G.render(one), sl)
    assert ref["ok"], ref
    np.testing.assert_allclose(C.decode_input(got["leaves"][0])[b],
                               C.decode_input(ref["leaves"][0]), rtol=1e-9, atol=1e-12)


def test_compare_categories():
  ok = lambda a: {"ok": True, "leaves": [dict(C.encode_array(np.asarray(a)), weak=False)]}
  err = lambda name, mro: {"ok": False, "exc": name, "mro": mro, "msg": ""}
  assert F.compare(ok(np.float32([1, 2])), ok(np.float32([1, 2]))) is None
  assert F.compare(ok(np.float32([1, 2])), ok(np.float32([1, 3]))) == "value"
  assert F.compare(ok(np.float32([1, np.nan])), ok(np.float32([1, 2]))) == "value-nan"
  assert F.compare(ok(np.float32([1])), ok(np.int32([1]))) == "dtype"
  assert F.compare(ok(np.float32([1])), ok(np.float32([1, 1]))) == "shape"
  assert F.compare(err("ConcretizationTypeError", ["ConcretizationTypeError", "TypeError"]),
                   err("TypeError", ["TypeError"])) is None
  assert F.compare(err("TypeError", ["TypeError"]),
                   ok(np.float32(1))).startswith("tracejax-accepts:TypeError")
  weak = ok(np.float32(1))
  weak["leaves"][0]["weak"] = True
  assert F.compare(weak, ok(np.float32(1))) == "weak_type"


def test_minimiser_shrinks_programs():
  prog = {"inputs": [{"dtype": "float32", "shape": [3], "kind": "special"},
                     {"dtype": "int32", "shape": [2], "kind": "normal"}],
          "ops": [{"t": "jnp.sin({0})", "a": ["x0"]}, {"t": "jnp.cos({0})", "a": ["x1"]},
                  {"t": "({0} * 2)", "a": ["v0"]}],
          "out": "v2", "stack": [{"t": "jit"}, {"t": "vmap", "in_axes": [0, None], "size": 2}],
          "seed": 1}

  class FakeRunner:  # "disagrees" whenever the program still multiplies by 2
    def classify(self, p):
      return ("value" if any("* 2" in op["t"] for op in p["ops"]) else None), None, None

  small, used = F.minimise(FakeRunner(), prog, "value")
  assert [op["t"] for op in small["ops"]] == ["({0} * 2)"]
  assert small["stack"] == [] and len(small["inputs"]) == 1
  assert used <= 40
