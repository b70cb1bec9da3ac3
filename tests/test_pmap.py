"""pmap as one replicated XLA program, and every collective under it, on 4 and 8 CPU
devices. The device count is fixed when the backend starts, so each check runs in a
subprocess (`TRACEJAX_NUM_CPU_DEVICES`), many checks per subprocess; each result is
compared with the single-device computation (NumPy, or a vmap with the axis name)."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import numpy as np
import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax._src.test_util import check_grads
from tracejax._src.runtime.sharding import PmapSharding
N = jax.device_count()
assert N == int(__import__('os').environ['TRACEJAX_NUM_CPU_DEVICES']), N
close = lambda a, b, tol=1e-5: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
"""


def run_devices(body, n, prelude=PRELUDE):
  """Run `prelude` + `body` in a fresh interpreter with `n` CPU devices (the device count
  is fixed when the backend starts); fail with its output; return its stdout."""
  env = dict(os.environ, TRACEJAX_NUM_CPU_DEVICES=str(n), PYTHONPATH=ROOT)
  code = prelude + textwrap.dedent(body) + "\nprint('BODY-OK')\n"
  p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                     timeout=300, cwd=ROOT)
  out = p.stdout + p.stderr
  assert p.returncode == 0 and "BODY-OK" in p.stdout, out[-4000:]
  return p.stdout


PMAP_BASICS = """
x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)
f = jax.pmap(lambda v: v * 2 + 1)
y = f(x)
close(y, x * 2 + 1)
# As JAX 0.10.2: a NamedSharding over a 1-d mesh of the devices (tests/test_pmap_jit.py)
assert y.sharding == jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(jax.devices()), ('_internal_pmap_axis_name',)), jax.sharding.PartitionSpec('_internal_pmap_axis_name'))
assert y.devices() == set(jax.devices())
assert [s.device for s in y.addressable_shards] == jax.devices()
assert y.addressable_shards[1].data.shape == (1, 3) and y.committed
close(y.addressable_shards[2].data, x[2:3] * 2 + 1)
# A second pmap consumes the shards in place; a cached call does not retrace.
traces = []
g = jax.pmap(lambda v: (traces.append(1), v - 1)[1])
z = g(y); z = g(y); z = g(z)
assert len(traces) == 1, traces
close(z, x * 2 - 1)
from tracejax._src.runtime.sharding import shard_to_devices
ptrs = lambda a: [b.unsafe_buffer_pointer() for b in a._arrays]
assert ptrs(shard_to_devices(y, y.aval, tuple(jax.devices()), True)) == ptrs(y)   # in place
# axis_size with no mapped argument; under disable_jit pmap still maps
close(jax.pmap(lambda c: c + lax.axis_index('i'), 'i', in_axes=None, axis_size=N)(1.),
      1. + np.arange(N))
with jax.disable_jit():
  close(jax.pmap(lambda v: v / lax.psum(v, 'i'), 'i')(x), x / x.sum(0))
# in_axes / out_axes / static_broadcasted_argnums / broadcast arguments
h = jax.pmap(lambda a, b, k: a * b + k, in_axes=(1, None, None), static_broadcasted_argnums=2)
close(h(x.T, np.float32(3.), 5), x * 3 + 5)
close(jax.pmap(lambda a: a, out_axes=1)(x), x.T)
close(jax.pmap(lambda a: lax.psum(a, 'i'), 'i', out_axes=None)(x), x.sum(0))
close(jax.pmap(lambda d: d['a'] + d['b'][0], in_axes=({'a': 0, 'b': (0,)},))(
    {'a': x, 'b': (x,)}), 2 * x)
# devices= and the size checks
rev = jax.devices()[::-1]
yr = jax.pmap(lambda v: v + lax.axis_index('i'), 'i', devices=rev)(x)
assert [s.device for s in yr.addressable_shards] == rev
close(yr, x + np.arange(N)[:, None])
try:
  jax.pmap(lambda v: v)(np.ones((N + 1, 2)))
  raise AssertionError('no error')
except ValueError as e:   # JAX 0.10.2's IndivisibleError (tests/test_scaleout_parity.py)
  assert 'implies that array axis 0 is partitioned' in str(e), e
try:
  jax.pmap(lambda v: v, devices=jax.devices()[:2])(np.ones((N, 2)))
  raise AssertionError('no error')
except ValueError as e:
  assert 'num_local_devices=2' in str(e), e
# jit inside and around pmap; vmap inside and around pmap
close(jax.pmap(jax.jit(lambda v: jnp.sin(v) + lax.psum(v, 'i')), 'i')(x),
      np.sin(x) + x.sum(0))
close(jax.jit(jax.pmap(lambda v: v - lax.pmean(v, 'i'), 'i'))(x), x - x.mean(0))
close(jax.pmap(jax.vmap(lambda v: lax.psum(v, ('i', 'j')), axis_name='j'), 'i')(x),
      np.full_like(x, x.sum()))
close(jax.vmap(jax.pmap(lambda v: v / lax.psum(v, 'i'), 'i'))(np.stack([x + 1, x + 2])),
      np.stack([(x + 1) / (x + 1).sum(0), (x + 2) / (x + 2).sum(0)]))
# nested pmap: one program over a grid of devices (tests/test_pmap_nested.py)
if N >= 4:
  xx = np.arange(8., dtype=np.float32).reshape(2, 2, 2)
  out = jax.pmap(jax.pmap(lambda v: lax.psum(v, 'j') + lax.psum(v, 'i'), 'j'), 'i')(xx)
  close(out, xx.sum(1, keepdims=True) + xx.sum(0, keepdims=True))
# the jaxpr still prints as xla_pmap
text = str(jax.make_jaxpr(lambda a: jax.pmap(lambda v: v / lax.psum(v, 'rows'), 'rows')(a))(x))
assert 'xla_pmap[ axis_name=rows' in text and 'psum[ axis_name=rows ]' in text, text
# eager ops on a pmap result run over its devices (tests/test_sharding_placement.py)
z = y + 1
close(z, x * 2 + 2)
assert z.devices() == set(jax.devices())
"""


MLP_STEP = """
rng = np.random.RandomState(0)
W1, b1 = rng.randn(4, 8).astype(np.float32) * .3, np.zeros(8, np.float32)
W2, b2 = rng.randn(8, 1).astype(np.float32) * .3, np.zeros(1, np.float32)
params = (W1, b1, W2, b2)
X = rng.randn(N * 4, 4).astype(np.float32)
Y = rng.randn(N * 4, 1).astype(np.float32)

def loss(p, x, y):
  w1, c1, w2, c2 = p
  h = jnp.tanh(x @ w1 + c1)
  return jnp.mean((h @ w2 + c2 - y) ** 2)

def step(p, x, y):
  g = jax.grad(loss)(p, x, y)
  return [w - 0.1 * gw for w, gw in zip(p, g)]

def pstep(p, x, y):
  g = jax.grad(loss)(p, x, y)
  g = lax.pmean(g, 'batch')
  return [w - 0.1 * gw for w, gw in zip(p, g)]

single = jax.jit(step)(params, X, Y)
rep = [np.broadcast_to(w, (N,) + w.shape) for w in params]
par = jax.pmap(pstep, 'batch')(rep, X.reshape(N, 4, 4), Y.reshape(N, 4, 1))
for a, b in zip(par, single):
  for k in range(N):
    close(np.asarray(a)[k], b, 1e-5)
"""


COLLECTIVES = """
x = np.arange(1, N * 3 + 1, dtype=np.float32).reshape(N, 3) / 7.

def both(f, *args, **kw):
  '''pmap and named-axis vmap of `f` agree; returns the pmap result.'''
  args = args or (x,)
  p = jax.pmap(f, 'i', **kw)(*args)
  v = jax.vmap(f, axis_name='i', **kw)(*args)
  close(p, v)
  return p

close(both(lambda v: lax.psum(v, 'i')), np.broadcast_to(x.sum(0), x.shape))
close(both(lambda v: lax.pmean(v, 'i')), np.broadcast_to(x.mean(0), x.shape))
close(both(lambda v: lax.pmax(v, 'i')), np.broadcast_to(x.max(0), x.shape))
close(both(lambda v: lax.pmin(v, 'i')), np.broadcast_to(x.min(0), x.shape))
close(both(lambda v: lax.axis_index('i') + 0 * v[0]), np.arange(N))
close(both(lambda v: lax.all_gather(v, 'i')), np.broadcast_to(x, (N,) + x.shape))
close(both(lambda v: lax.all_gather(v, 'i', axis=1)), np.broadcast_to(x.T, (N, 3, N)))
close(both(lambda v: lax.all_gather(v, 'i', tiled=True)), np.broadcast_to(x.reshape(-1), (N, N * 3)))
y = np.arange(N * N * 2, dtype=np.float32).reshape(N, N, 2)
close(both(lambda v: lax.psum_scatter(v, 'i'), y), y.sum(0))
y2 = np.arange(N * 2 * N, dtype=np.float32).reshape(N, 2 * N)
close(both(lambda v: lax.psum_scatter(v, 'i', tiled=True), y2), y2.sum(0).reshape(N, 2))
close(both(lambda v: lax.all_to_all(v, 'i', 0, 0), y), np.swapaxes(y, 0, 1))
y3 = np.arange(N * 2 * N, dtype=np.float32).reshape(N, 2, N)
both(lambda v: lax.all_to_all(v, 'i', 1, 0), y3)
both(lambda v: lax.all_to_all(v, 'i', 1, 1), y3)
close(both(lambda v: lax.pswapaxes(v, 'i', 0), y), np.swapaxes(y, 0, 1))
perm = [(k, (k + 1) % N) for k in range(N)]
close(both(lambda v: lax.ppermute(v, 'i', perm)), np.roll(x, 1, 0))
close(both(lambda v: lax.ppermute(v, 'i', [(0, 1)])), np.concatenate([np.zeros((1, 3)), x[:1], np.zeros((N - 2, 3))]))
shuf = list(range(N))[::-1]
close(both(lambda v: lax.pshuffle(v, 'i', shuf)), x[::-1])
# several axis names at once (pmap over vmap), and psum of a constant
close(jax.pmap(jax.vmap(lambda v: lax.psum(v, ('i', 'j')), axis_name='j'), 'i')(y),
      np.broadcast_to(y.sum((0, 1)), y.shape))
close(jax.pmap(lambda v: v * lax.psum(1, 'i'), 'i')(x), x * N)
close(jax.pmap(jax.vmap(lambda v: lax.pmax(v, ('i', 'j')), axis_name='j'), 'i')(y),
      np.broadcast_to(y.max((0, 1)), y.shape))
for names, ref in [(('i', 'j'), y.reshape(N * N, 2)),
                   (('j', 'i'), y.transpose(1, 0, 2).reshape(N * N, 2))]:
  for tiled in (False, True):
    g = lambda v: lax.all_gather(v, names, tiled=tiled)
    out = jax.pmap(jax.vmap(g, axis_name='j'), 'i')(y)
    close(out, np.broadcast_to(ref.reshape(-1) if tiled else ref, (N, N) + out.shape[2:]))
    close(out, jax.vmap(jax.vmap(g, axis_name='j'), axis_name='i')(y))

# gradients: psum's transpose is psum (as in JAX)
w = np.arange(1, N + 1, dtype=np.float32)
gp = jax.grad(lambda a: jnp.sum(jax.pmap(lambda v, c: lax.psum(v, 'i') * c, 'i')(a, w)))(np.ones(N, np.float32))
close(gp, np.full(N, w.sum()))
close(jax.pmap(jax.grad(lambda v: lax.psum(v, 'i')), 'i')(np.arange(N, dtype=np.float32)),
      np.full(N, N))   # JAX's numbers (psum's transpose is psum)
for f in [lambda v: jnp.sin(v) * lax.psum(v, 'i'),
          lambda v: lax.pmean(v ** 2, 'i'),
          lambda v: lax.all_gather(v, 'i') * 2.,
          lambda v: lax.ppermute(v, 'i', perm) * v,
          lambda v: lax.all_to_all(v.reshape(N, -1), 'i', 0, 0) ** 2]:
  pf = jax.pmap(f, 'i')
  xs = (np.arange(N * N, dtype=np.float32).reshape(N, N) + 1.) / 10.
  check_grads(pf, (xs,), order=1, modes=['fwd', 'rev'], atol=3e-2, rtol=3e-2)
  # JVP under pmap agrees with JVP of the named-axis vmap
  t = np.ones_like(xs)
  close(jax.jvp(pf, (xs,), (t,))[1], jax.jvp(jax.vmap(f, axis_name='i'), (xs,), (t,))[1], 1e-4)
# As in JAX, pmax and pmin have no differentiation rule (tests/test_scaleout_audit.py)
try:
  jax.grad(lambda v: jax.pmap(lambda u: lax.pmax(u, 'i') * u, 'i')(v).sum())(x)
  raise AssertionError('no error')
except NotImplementedError as e:
  assert "Differentiation rule for 'pmax' not implemented" in str(e), e
check_grads(jax.pmap(lambda v: lax.psum_scatter(v, 'i') * 2., 'i'), (y / 32.,), order=1,
            modes=['fwd', 'rev'], atol=5e-2, rtol=5e-2)
"""


@pytest.mark.parametrize("n", [4, 8])
def test_pmap_basics(n):
  run_devices(PMAP_BASICS, n)


def test_pmap_mlp_step_matches_single_device():
  run_devices(MLP_STEP, 4)


@pytest.mark.parametrize("n", [4, 8])
def test_collectives_under_pmap(n):
  run_devices(COLLECTIVES, n)


def test_collective_lowering_ops():
  out = run_devices("""
from tracejax._src.runtime import backend
body = lambda v: (lax.psum(v, 'i'), lax.all_gather(v, 'i'), lax.psum_scatter(v, 'i', tiled=True),
                  lax.all_to_all(v, 'i', 0, 0), lax.ppermute(v, 'i', [(0, 1)]), lax.axis_index('i'))
f = jax.pmap(body, 'i')
x = np.ones((N, N), np.float32)
f(x)
texts = [e.text for e in backend._exe_cache.values()]
t = [s for s in texts if 'pmap_' in s][-1]
for op in ['stablehlo.all_reduce', 'stablehlo.all_gather', 'stablehlo.reduce_scatter',
           'stablehlo.all_to_all', 'stablehlo.collective_permute', 'stablehlo.replica_id',
           'mhlo.num_replicas = %d' % N]:
  assert op in t, (op, t)
""", 4)


def test_one_device_pmap_result_reads_back():
  # optax's conditionality test: a pmap over the one default device returns arrays over
  # a one-device mesh that bool(), printing, eager ops, jit and a second pmap all read.
  import numpy as np
  import tracejax as jax
  import tracejax.numpy as jnp
  f = jax.pmap(lambda x, y: (x + 1, jnp.isfinite(y)), axis_name="i")
  a, b = f(jnp.zeros((1,)), jnp.zeros((1,)))
  assert bool(b) and str(a) == "[1.]"
  np.testing.assert_array_equal(a + 1, [2.])
  np.testing.assert_array_equal(jax.jit(lambda v: v * 2)(a), [2.])
  np.testing.assert_array_equal(f(a, a)[0], [2.])
