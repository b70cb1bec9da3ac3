"""`import tracejax.numpy` stays cheap: what the first operation does not need is
imported on first use (issue 12, "Startup").

Each check runs in a fresh interpreter and looks at `sys.modules`: scipy, the SPMD
machinery (interpreters/pxla.py, lax/parallel.py), and the jax.numpy families that a
first `jnp.add` does not use (indexing, reductions, products, sorting, linalg, fft,
...) must not be imported by `import tracejax.numpy`, by `tracejax.numpy` reached
as an attribute of `import tracejax`, or by the first operation itself; and the
names they provide must still work, be listed by `dir()` and be exported by
`from tracejax.numpy import *`.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np  # the oracle; the checks themselves run in fresh interpreters

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Modules that `import tracejax.numpy` and a first eager operation must leave out.
DEFERRED = [
    "scipy",
    "tracejax._api",
    "tracejax._src.interpreters.pxla",
    "tracejax._src.lax.parallel",
    "tracejax._src.shard_map",
    "tracejax._src.custom_derivatives",
    "tracejax._src.lax.gather",
    "tracejax._src.lax.slicing",
    "tracejax._src.lax.dot",
    "tracejax._src.lax.reductions",
    "tracejax._src.lax.sorting",
    "tracejax._src.lax.linalg",
    "tracejax._src.lax.fft",
    "tracejax._src.numpy.indexing",
    "tracejax._src.numpy.reductions",
    "tracejax._src.numpy.products",
    "tracejax._src.numpy.searching",
    "tracejax._src.numpy.sorting",
    "tracejax._src.numpy.array_api",
    "tracejax._src.numpy.array_edit",
    "tracejax._src.numpy.ufunc_class",
    "tracejax._src.numpy.index_tricks",
    "tracejax._src.numpy.einsum",
    "tracejax._src.numpy.statistics",
    "tracejax._src.numpy.polynomial",
    "tracejax.numpy.linalg",
    "tracejax.numpy.fft",
    "tracejax.random",
    "tracejax.scipy",
]


def _run(code):
  """Runs `code` in a fresh interpreter; returns the JSON it prints last."""
  env = dict(os.environ)
  env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  env["TRACEJAX_COMPILATION_CACHE"] = "0"  # the first op compiles, as in the benchmark
  proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                        text=True, env=env, cwd=REPO, timeout=120)
  assert proc.returncode == 0, proc.stderr
  return json.loads(proc.stdout.strip().splitlines()[-1])


def _loaded(names):
  return f"[m for m in {names!r} if m in sys.modules]"


def test_import_numpy_and_first_op_leave_the_rest_out():
  out = _run(f"""
      import json, sys
      import numpy as np
      import tracejax.numpy as jnp
      after_import = {_loaded(DEFERRED)}
      a = np.ones(3, np.float32)
      y = jnp.add(a, a).block_until_ready()
      z = (jnp.ones(3) * 2 + 1 - jnp.sin(jnp.zeros(3))).block_until_ready()
      after_op = {_loaded(DEFERRED)}
      print(json.dumps([after_import, after_op, np.asarray(y).tolist(),
                        np.asarray(z).tolist()]))
  """)
  after_import, after_op, y, z = out
  assert after_import == []
  assert after_op == []
  assert y == [2.0, 2.0, 2.0]
  assert z == [3.0, 3.0, 3.0]


def test_numpy_attribute_of_lazy_package_imports_only_numpy():
  # `import tracejax as jax; jax.numpy` is `import tracejax.numpy`, not the whole API.
  out = _run(f"""
      import json, sys
      import tracejax as jax
      top = sorted(m for m in sys.modules if m.startswith(("tracejax", "numpy", "jaxlib")))
      jnp = jax.numpy
      x = jnp.arange(3.0) + 1
      print(json.dumps([top, {_loaded(DEFERRED)}, jnp is sys.modules["tracejax.numpy"],
                        x.tolist()]))
  """)
  top, deferred, same, x = out
  # `import tracejax` reads the configuration only: no NumPy, no jaxlib.
  assert top == ["tracejax", "tracejax._src", "tracejax._src.config", "tracejax.config",
                 "tracejax.version"]
  assert deferred == []
  assert same
  assert x == [1.0, 2.0, 3.0]


def test_api_leaves_lax_and_scipy_until_used():
  # `jax.jit` imports the API (tracejax/_api.py), not every lax family nor SciPy.
  out = _run("""
      import json, sys
      import tracejax as jax
      y = jax.jit(lambda x: x * 2.0)(jax.numpy.ones(2)) + 1
      left_out = [m for m in ("scipy", "tracejax.lax", "tracejax._src.lax.linalg",
                              "tracejax._src.lax.convolution", "tracejax._src.control_flow")
                  if m not in sys.modules]
      cond = float(jax.lax.cond(True, lambda: 1.0, lambda: 2.0))
      print(json.dumps([left_out, y.tolist(), cond, "lax" in dir(jax), "lax" in jax.__all__]))
  """)
  left_out, y, cond, listed, exported = out
  assert left_out == ["scipy", "tracejax.lax", "tracejax._src.lax.linalg",
                      "tracejax._src.lax.convolution", "tracejax._src.control_flow"]
  assert y == [3.0, 3.0] and cond == 1.0 and listed and exported


def test_deferred_names_and_methods_work_and_are_listed():
  out = _run("""
      import json, sys
      import numpy as np
      import tracejax as jax
      import tracejax.numpy as jnp
      listed = [n in dir(jnp) for n in ("sum", "take", "sort", "linalg", "c_", "ufunc")]
      star = {}
      exec("from tracejax.numpy import *", star)
      exported = [n in star for n in ("sum", "matmul", "take", "sort", "fft", "add", "pi")]
      try:
        jnp.no_such_function
        missing = "no error"
      except AttributeError as e:
        missing = str(e)
      x = jnp.arange(6.0).reshape(2, 3)
      r = dict(
          getitem=x[1].tolist(),
          at=x.at[0, 0].set(9.0)[0].tolist(),
          iter=[row.tolist() for row in x],
          sum=x.sum().tolist(), sum_axis=x.sum(axis=0).tolist(), mean=float(x.mean()),
          max=float(jnp.max(x)), matmul=(x @ x.T).tolist(), dot=x.dot(x.T).tolist(),
          diagonal=x.diagonal().tolist(), take=x.take(jnp.array([0, 5])).tolist(),
          nonzero=[v.tolist() for v in x.nonzero()],
          sort=jnp.sort(jnp.array([3.0, 1.0, 2.0])).tolist(),
          s_=repr(jnp.s_[1:2]), logaddexp=float(jnp.logaddexp(0.0, 0.0)),
          grad=float(jax.grad(lambda v: (v @ v).sum())(jnp.ones(3))[0]),
          jit=jax.jit(lambda v: v[1:].sum() + v.at[0].add(1.0)[0])(jnp.arange(3.0)).tolist(),
          vmap=jax.vmap(lambda r: r.max())(x).tolist(),
      )
      # After the first use the real functions sit on the classes: no stand-in per call.
      from tracejax._src.numpy import indexing, reductions
      replaced = [type(x).sum is reductions.sum, type(x).__getitem__ is indexing.getitem]
      print(json.dumps([listed, exported, missing, r, replaced]))
  """)
  listed, exported, missing, r, replaced = out
  assert all(listed), listed
  assert all(exported), exported
  assert "no_such_function" in missing
  x = np.arange(6.0).reshape(2, 3)
  assert r["getitem"] == x[1].tolist()
  assert r["at"][0] == 9.0
  assert r["iter"] == x.tolist()
  assert r["sum"] == 15.0 and r["sum_axis"] == x.sum(0).tolist() and r["mean"] == 2.5
  assert r["max"] == 5.0
  assert r["matmul"] == (x @ x.T).tolist() and r["dot"] == (x @ x.T).tolist()
  assert r["diagonal"] == [0.0, 4.0] and r["take"] == [0.0, 5.0]
  assert r["nonzero"] == [v.tolist() for v in np.nonzero(x)]
  assert r["sort"] == [1.0, 2.0, 3.0]
  assert r["s_"] == repr(np.s_[1:2])
  assert abs(r["logaddexp"] - np.log(2.0)) < 1e-6
  assert r["grad"] == 2.0
  assert r["jit"] == 4.0
  assert r["vmap"] == [2.0, 5.0]
  assert replaced == [True, True]
