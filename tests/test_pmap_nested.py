"""Nested pmap (`pmap(pmap(f, 'j'), 'i')`) as one replicated XLA program over a grid of
devices, on 4 and 8 CPU devices (each check in a subprocess: the device count is fixed
when the backend starts). Every result is compared with the single-device computation
(the same body under `vmap(vmap(..., axis_name='j'), axis_name='i')`, or NumPy)."""
import pytest

from tests.test_pmap import run_devices

NESTED = """
from tracejax.sharding import NamedSharding
from tracejax._src.runtime import backend, sharding as sharding_mod
I, J = 2, N // 2
x = (np.arange(I * J * 3, dtype=np.float32).reshape(I, J, 3) + 1.) / 10.
vv = lambda f: jax.vmap(jax.vmap(f, axis_name='j'), axis_name='i')
pp = lambda f: jax.pmap(jax.pmap(f, 'j'), 'i')
perm = [(k, (k + 1) % J) for k in range(J)]

def body(v):
  return (v + lax.psum(v, 'i') * 10 + lax.psum(v, 'j') * 100 + lax.psum(v, ('i', 'j')) * 1000,
          lax.pmean(v, 'j'), lax.pmean(v, ('i', 'j')), lax.pmax(v, 'i'), lax.pmin(v, 'j'),
          lax.axis_index('i'), lax.axis_index('j'),
          lax.all_gather(v, 'i'), lax.all_gather(v, 'j', tiled=True),
          lax.all_gather(v, ('i', 'j')), lax.ppermute(v, 'j', perm))

out = pp(body)(x)
ref = vv(body)(x)
for a, b in zip(out, ref):
  close(a, b)
# and by hand
close(out[0], x + 10 * x.sum(0, keepdims=True) + 100 * x.sum(1, keepdims=True)
      + 1000 * x.sum((0, 1), keepdims=True), 1e-4)
close(out[5], np.broadcast_to(np.arange(I)[:, None], (I, J)))
close(out[6], np.broadcast_to(np.arange(J)[None, :], (I, J)))
close(out[9], np.broadcast_to(x.reshape(1, 1, I * J, 3), (I, J, I * J, 3)))

# The result is laid out over I*J devices as an (I, J) grid: each device holds its own
# (1, 1, ...) block (no gather), replica a*J + b at grid position (a, b).
r = out[0]
s = r.sharding
assert isinstance(s, NamedSharding) and s.mesh.axis_names == ('i', 'j'), s
assert s.mesh.devices.shape == (I, J) and list(s.mesh.devices.flat) == jax.devices()[:I * J]
assert r.devices() == set(jax.devices()[:I * J]) and r.committed
sh = r.addressable_shards
assert [q.device for q in sh] == jax.devices()[:I * J] and sh[0].data.shape == (1, 1, 3)
close(sh[J + 1].data, np.asarray(r)[1:2, 1:2])

# One program: I*J replicas; psum over 'j' combines the J devices of an outer member,
# over 'i' the I devices of an inner position.
texts = [e.text for e in backend._exe_cache.values() if 'pmap_body' in e.text]
t = texts[-1]
assert 'mhlo.num_replicas = %d' % (I * J) in t, t[:400]
groups_j = np.arange(I * J).reshape(I, J).tolist()
groups_i = np.arange(I * J).reshape(I, J).T.tolist()
assert ('dense<%s>' % groups_j).replace(' ', '') in t.replace(' ', ''), groups_j
assert ('dense<%s>' % groups_i).replace(' ', '') in t.replace(' ', ''), groups_i

# cached calls do not retrace, and a nested pmap consumes its own results in place
traces = []
g = pp(lambda v: (traces.append(1), v * 2)[1])
y = g(x); y2 = g(y); y3 = g(y2)
assert len(traces) == 1, traces
close(y3, x * 8)
c = g._pmapped._cache
entry = next(iter(c.values()))
assert sharding_mod.put_sharded(y, y.aval, entry.compiled.in_shardings[0]) is y
t = [e.text for e in backend._exe_cache.values() if 'mhlo.num_replicas = %d' % (I * J) in e.text][-1]
assert 'all_gather' not in t   # each device gets and gives its own block

# work around the inner pmap, in the outer body (redundant on the inner devices)
h = lambda v: jax.pmap(lambda w: w * lax.psum(w, 'i'), 'j')(jnp.sin(v)) + lax.pmean(v, 'i')
close(jax.pmap(h, 'i')(x), jax.vmap(
    lambda v: jax.vmap(lambda w: w * lax.psum(w, 'i'), axis_name='j')(jnp.sin(v))
    + lax.pmean(v, 'i'), axis_name='i')(x))
# inner in_axes/out_axes, a broadcast argument, jit inside and around the inner pmap
k = lambda v, c: jax.pmap(lambda a, b: a * b + lax.psum(a, 'j'), 'j', in_axes=(1, None))(v.T, c)
c0 = np.float32(3.)
close(jax.pmap(k, 'i', in_axes=(0, None))(x, c0),
      jax.vmap(lambda v, c: jax.vmap(lambda a, b: a * b + lax.psum(a, 'j'), axis_name='j',
                                     in_axes=(1, None))(v.T, c), axis_name='i',
               in_axes=(0, None))(x, c0))
close(jax.pmap(jax.pmap(lambda v: lax.psum(v, 'j'), 'j', out_axes=None), 'i')(x), x.sum(1))
close(jax.pmap(jax.jit(jax.pmap(jax.jit(lambda v: jnp.cos(v) * lax.psum(v, ('i', 'j'))), 'j')), 'i')(x),
      np.cos(x) * x.sum((0, 1)), 1e-5)

# eager ops on the result keep the grid sharding, as jit does
e = r * 2 + 1
close(e, np.asarray(r) * 2 + 1, 1e-4)
assert e.sharding.mesh == s.mesh and e.sharding.is_equivalent_to(s, 3), e.sharding
assert jax.jit(jnp.sin)(r).sharding.is_equivalent_to(s, 3)

# gradients (psum's transpose is psum) and JVPs agree with the single-device ones
for f in [lambda v: jnp.sin(v) * lax.psum(v, 'j'),
          lambda v: lax.pmean(v ** 2, ('i', 'j')) * v,
          lambda v: lax.all_gather(v, 'i').sum(0) * v]:
  gp = jax.grad(lambda a: jnp.sum(pp(f)(a) ** 2))(x)
  gv = jax.grad(lambda a: jnp.sum(vv(f)(a) ** 2))(x)
  close(gp, gv, 1e-4)
  t1 = np.ones_like(x)
  close(jax.jvp(pp(f), (x,), (t1,))[1], jax.jvp(vv(f), (x,), (t1,))[1], 1e-4)
check_grads(pp(lambda v: jnp.sin(v) * lax.psum(v, 'i')), (x,), order=1, modes=['fwd', 'rev'],
            atol=3e-2, rtol=3e-2)
# vmap of a nested pmap
xb = np.stack([x, 2 * x])
close(jax.vmap(pp(lambda v: v / lax.psum(v, ('i', 'j'))))(xb), xb / xb.sum((1, 2), keepdims=True))

# the size checks, in JAX's words
try:
  pp(lambda v: v)(np.ones((I + 1, N, 2), np.float32))
  raise AssertionError('no error')
except ValueError as err:
  assert 'logical devices' in str(err) and 'num_replicas=%d' % ((I + 1) * N) in str(err), err
try:
  jax.pmap(jax.pmap(lambda v: v, 'j'), 'i', devices=jax.devices()[:I])(x)
  raise AssertionError('no error')
except ValueError as err:
  assert 'Nested pmap with explicit devices' in str(err), err
"""

MLP_GRID = """
# A data-parallel training step over a 2-d grid of devices (gradients averaged over both
# axes) equals the single-device step.
I, J = 2, N // 2
rng = np.random.RandomState(0)
params = [rng.randn(4, 8).astype(np.float32) * .3, np.zeros(8, np.float32),
          rng.randn(8, 1).astype(np.float32) * .3, np.zeros(1, np.float32)]
X = rng.randn(N * 2, 4).astype(np.float32)
Y = rng.randn(N * 2, 1).astype(np.float32)

def loss(p, x, y):
  h = jnp.tanh(x @ p[0] + p[1])
  return jnp.mean((h @ p[2] + p[3] - y) ** 2)

def step(p, x, y, avg=None):
  g = jax.grad(loss)(p, x, y)
  if avg is not None:
    g = lax.pmean(g, avg)
  return [w - 0.1 * gw for w, gw in zip(p, g)]

single = jax.jit(step)(params, X, Y)
grid = jax.pmap(jax.pmap(lambda p, x, y: step(p, x, y, ('i', 'j')), 'j', in_axes=(None, 0, 0)),
                'i', in_axes=(None, 0, 0))
out = grid(params, X.reshape(I, J, 2, 4), Y.reshape(I, J, 2, 1))
for a, b in zip(out, single):
  assert a.shape == (I, J) + b.shape
  for k in range(I):
    for l in range(J):
      close(np.asarray(a)[k, l], b, 1e-5)
"""

THREE_LEVELS = """
# pmap(pmap(pmap)) on a 2x2x2 grid; collectives over each axis and pairs of them
x = np.arange(8 * 2, dtype=np.float32).reshape(2, 2, 2, 2) / 8.
body = lambda v: (lax.psum(v, 'k') + 10 * lax.psum(v, 'i') + 100 * lax.psum(v, ('i', 'k')),
                  lax.axis_index('i') * 4 + lax.axis_index('j') * 2 + lax.axis_index('k'),
                  lax.all_gather(v, 'j'))
p = jax.pmap(jax.pmap(jax.pmap(body, 'k'), 'j'), 'i')(x)
v = jax.vmap(jax.vmap(jax.vmap(body, axis_name='k'), axis_name='j'), axis_name='i')(x)
for a, b in zip(p, v):
  close(a, b)
close(p[1], np.arange(8).reshape(2, 2, 2))
assert p[0].devices() == set(jax.devices())
"""


@pytest.mark.parametrize("n", [4, 8])
def test_nested_pmap(n):
  # One interpreter per device count (starting one costs seconds): the grid MLP step on
  # 4 devices, three levels of pmap on 8.
  run_devices(NESTED + (MLP_GRID if n == 4 else THREE_LEVELS), n)
