"""jaxlib's C++ fast path for cached multi-device calls (jit with shardings, pmap, jit of
pmap outputs): arguments already laid out as the program takes them go straight to the
program, with no Python call per argument (`_shard_arg_fallback`, as real JAX makes none
in the same steady state); arguments laid out otherwise are re-laid out, on every call,
with correct results. Also copies of sharded arrays and shardings (as JAX 0.10.2)."""
from test_pmap import run_devices

BODY = """
import copy, pickle
from tracejax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tracejax._src.runtime import backend
calls = []
orig = backend._shard_arg_fallback
backend._shard_arg_fallback = lambda x, s, *a: (calls.append(1), orig(x, s, *a))[1]

def count():
  n = len(calls); calls.clear(); return n

mesh = Mesh(np.array(jax.devices()), ('x',))
mesh_y = Mesh(np.array(jax.devices()), ('y',))
a = np.arange(N * N * 2, dtype=np.float32).reshape(N * 2, N)
sx = NamedSharding(mesh, P('x'))
f = jax.jit(lambda v: v * 2 + 1, in_shardings=sx, out_shardings=sx)
# Laid out as f takes it (P('x') on the same devices, whatever the mesh's axis name):
# no fallback at all. Laid out otherwise (replicated, split on axis 1): right answers
# on every call, the first and the cached ones.
for s, fallback_free in ((sx, True), (NamedSharding(mesh_y, P('y')), True),
                         (NamedSharding(mesh, P()), False),
                         (NamedSharding(mesh, P(None, 'x')), False)):
  x = jax.device_put(a, s)
  count()
  for _ in range(4):
    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), a * 2 + 1)
    assert y.sharding == sx, y.sharding
  if fallback_free:
    assert count() == 0, s

g = jax.jit(lambda v, w: (v * w).sum(0))
for s in (sx, NamedSharding(mesh, P())):
  x = jax.device_put(a, s)
  for _ in range(3):
    close(g(x, x), (a * a).sum(0))
assert count() == 0

p = jax.pmap(lambda v: v * 3)
b = np.arange(N * 3, dtype=np.float32).reshape(N, 3)
z = p(b)
count()
for _ in range(3):
  z = p(z)
np.testing.assert_array_equal(np.asarray(z), b * 81)
assert count() == 0
for s in (NamedSharding(mesh, P()), sx):   # other layouts of pmap's input
  x = jax.device_put(b, s)
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(p(x)), b * 3)
h = jax.jit(lambda v: v + 1)
count()
for _ in range(3):
  w = h(z)
np.testing.assert_array_equal(np.asarray(w), b * 81 + 1)
assert count() == 0

# Copies keep the layout (JAX 0.10.2); shardings copy as themselves; pickling a
# sharding fails on its devices, as in JAX ("cannot pickle 'Device' object").
x = jax.device_put(a, sx)
for c in (copy.copy(x), copy.deepcopy(x), x.copy()):
  assert c.sharding == sx and c.committed
  np.testing.assert_array_equal(np.asarray(c), a)
x.delete()
assert copy.deepcopy(sx) == sx and copy.copy(sx) == sx
try:
  pickle.dumps(sx)
  raise AssertionError("pickled")
except TypeError as e:
  assert "Device" in str(e), e
assert sx.num_devices == N and sx.device_set == set(jax.devices())
"""


def test_sharded_fast_path_4_devices():
  run_devices(BODY, 4)


def test_sharded_fast_path_8_devices():
  run_devices(BODY, 8)


def test_no_partitioner_notice_on_stderr():
  # JAX (on Shardy) prints nothing when a sharded program compiles; XLA's notice that
  # GSPMD (our partitioner) is deprecated must not reach the user either.
  import os
  import subprocess
  import sys
  from test_pmap import ROOT
  code = ("import numpy as np, tracejax as jax\n"
          "from tracejax.sharding import NamedSharding, PartitionSpec as P\n"
          "s = NamedSharding(jax.make_mesh((4,), ('x',)), P('x'))\n"
          "print(jax.jit(lambda v: v.sum(), in_shardings=s)(np.arange(8.)))\n"
          "print(jax.pmap(lambda v: jax.lax.psum(v, 'i'), axis_name='i')(np.ones(4)))\n")
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                     env=dict(os.environ, TRACEJAX_NUM_CPU_DEVICES="4", PYTHONPATH=ROOT),
                     timeout=300, cwd=ROOT)
  assert p.returncode == 0, p.stderr[-3000:]
  assert p.stdout.split() == ["28.0", "[4.", "4.", "4.", "4.]"], p.stdout
  assert "GSPMD" not in p.stderr and "Shardy" not in p.stderr, p.stderr[-3000:]
