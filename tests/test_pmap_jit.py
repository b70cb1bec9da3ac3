"""pmap inside another program (jit of pmap; pmap under grad-of-jit, scan and cond inside
jit; pmap in a cond inside a pmap body) as ONE multi-device SPMD program, as JAX 0.10.2
runs it: `mhlo.num_partitions` = the device count and the pmap body as XLA manual code
(interpreters/pmap_spmd.py), not a vmap on one device. Each script runs with 4 CPU
devices (tests/test_pmap.py `run_devices`) and compares every result with the
single-device computation (NumPy), its `.sharding` with JAX's, and counts the SPMD
programs compiled."""
import pytest

from tests.test_pmap import PRELUDE, run_devices

SPY = PRELUDE + """
from tracejax._src.interpreters import pxla
from tracejax.sharding import Mesh, NamedSharding, PartitionSpec as P
progs = []   # (name, device count) of each SPMD program compiled
_orig = pxla.compile_lowered_spmd
def _spy(low, *a, **k):
  progs.append((low.name, len(low.devices)))
  return _orig(low, *a, **k)
pxla.compile_lowered_spmd = _spy
def named(name, spec, devices=None):
  devs = np.array(jax.devices() if devices is None else devices)
  return NamedSharding(Mesh(devs, (name,)), spec)
def spmd(f, *args):
  # f(*args) compiled as one SPMD program over the N devices
  jax.clear_caches()
  progs.clear()
  out = f(*args)
  assert progs and progs[-1][1] == N, progs
  return out
x = np.arange(N * 3, dtype=np.float32).reshape(N, 3)
"""

JIT_OF_PMAP = """
f = jax.pmap(lambda v: lax.psum(v, 'i') * 2, axis_name='i')
y = spmd(jax.jit(f), x)
close(y, np.broadcast_to(x.sum(0) * 2, x.shape))
# As JAX 0.10.2: the result of pmap and of jit(pmap) is split over a mesh named 'i'
assert y.sharding == named('i', P('i')), y.sharding
assert f(x).sharding == named('i', P('i')), f(x).sharding
assert jax.pmap(lambda v: v)(x).sharding == named('_internal_pmap_axis_name',
                                                 P('_internal_pmap_axis_name'))
text = jax.jit(f).lower(x).as_text()
assert 'mhlo.num_partitions = 4' in text, text
assert 'SPMDFullToShardShape' in text and 'SPMDShardToFullShape' in text, text
assert 'tensor<1x3xf32>' in text and 'all_reduce' in text, text   # per-device blocks
assert '{devices=[4,1]0,1,2,3}' in text, text   # the argument arrives split
assert 'num_replicas = 1' in text and 'dot_general' not in text
# the jaxpr still shows the pmap as xla_pmap
assert 'xla_pmap[ axis_name=i' in str(jax.make_jaxpr(jax.jit(f))(x))
# a second pmap (and jit(pmap)) consumes the result in place; cached calls
z = jax.pmap(lambda v: v - 1)(y)
close(z, np.asarray(y) - 1)
close(spmd(jax.jit(f), y), np.broadcast_to(np.asarray(y).sum(0) * 2, x.shape))
# a pmap's result and a NumPy value, both mapped: the program takes both split
jh = jax.jit(jax.pmap(lambda a, b: a + b, 'i'))
for i in range(2):
  close(jh(y, x + i), np.asarray(y) + x + i)
assert jh.lower(y, x).as_text().count('{devices=[4,1]0,1,2,3}"}') >= 2
# in_axes=None (replicated), out_axes=None and 1, static_broadcasted_argnums
k = jax.pmap(lambda v, w: (v * w, lax.psum(v, 'i')), 'i', in_axes=(0, None),
             out_axes=(0, None))
a, b = spmd(jax.jit(k), x, np.float32(3.))
close(a, x * 3); close(b, x.sum(0))
assert a.sharding == named('i', P('i')) and b.sharding == named('i', P()), (a.sharding, b.sharding)
h = jax.pmap(lambda a, b, k: a * b + k + lax.psum(a, 'i'), 'i', in_axes=(1, None, None),
             static_broadcasted_argnums=2, out_axes=1)
o = spmd(jax.jit(h, static_argnums=2), x.T, np.float32(3.), 5)
close(o, (x * 3 + 5 + x.sum(0)).T)
assert o.sharding == named('i', P(None, 'i')), o.sharding
close(spmd(jax.jit(lambda a, b: h(a, b, 7)), x.T, np.float32(2.)), (x * 2 + 7 + x.sum(0)).T)
# devices= in reverse order: member i on device N-1-i
rev = jax.devices()[::-1]
o = spmd(jax.jit(jax.pmap(lambda v: v + lax.axis_index('i'), 'i', devices=rev)), x)
close(o, x + np.arange(N)[:, None])
assert [s.device for s in o.addressable_shards] == rev
# two pmaps and other ops in one jit; scalars per member reduced after the pmap
f1 = jax.pmap(lambda v: v * 2, 'i')
f2 = jax.pmap(lambda v: v - lax.pmean(v, 'j'), 'j')
close(spmd(jax.jit(lambda a: f2(f1(a)) + 1), x), 2 * x - 2 * x.mean(0) + 1)
s = spmd(jax.jit(lambda a: jnp.mean(jax.pmap(lambda v: jnp.sum(v))(a))), x)
close(s, x.sum(1).mean())
assert s.sharding.is_fully_replicated
# the same scalar reduction after a shard_map (the same manual computation)
from tracejax.experimental.shard_map import shard_map
mesh = Mesh(np.array(jax.devices()), ('x',))
sm = shard_map(lambda blk: jnp.sum(blk).reshape(1), mesh=mesh, in_specs=P('x'),
               out_specs=P('x'))
close(spmd(jax.jit(lambda a: jnp.sum(sm(a))), x), x.sum())
# too large an axis: the pmap's own error
try:
  jax.jit(jax.pmap(lambda v: v))(np.ones((N + 1, 2)))
  raise AssertionError('no error')
except ValueError as e:   # JAX 0.10.2's (its shard_map's) words: test_scaleout_parity.py
  assert 'not evenly divisible by the corresponding mesh axis sizes' in str(e), e
"""

TRANSFORMS = """
f = jax.pmap(lambda v: jnp.sin(v) * lax.psum(v, 'i'), axis_name='i')
loss = lambda a: jnp.sum(f(a))
ref = lambda a: np.cos(a) * a.sum(0) + np.sin(a).sum(0)   # d/da sum(sin(a) * colsum(a))
close(jax.grad(jax.jit(loss))(x), ref(x), 1e-4)
close(spmd(jax.jit(jax.grad(jax.jit(loss))), x), ref(x), 1e-4)
# grad with respect to a replicated (in_axes=None) argument, inside jit
g = jax.pmap(lambda v, w: jnp.tanh(v * w) * lax.psum(v, 'i'), 'i', in_axes=(0, None))
lw = lambda w, a: jnp.sum(g(a, w))
dw = spmd(jax.jit(jax.grad(lw)), np.float32(0.3), x)
t = np.tanh(x * 0.3)
close(dw, np.sum((1 - t ** 2) * x * x.sum(0)), 1e-3)
# scan and cond inside jit
def body(c, _):
  return jax.pmap(lambda v: v * 0.5 + lax.psum(v, 'i') * 0.1, 'i')(c), c.sum()
c, ys = spmd(jax.jit(lambda a: lax.scan(body, a, None, length=3)), x)
r, rs = x, []
for _ in range(3):
  rs.append(r.sum()); r = r * 0.5 + r.sum(0) * 0.1
close(c, r); close(ys, np.array(rs), 1e-4)
assert c.sharding == named('i', P('i')), c.sharding
pf = jax.pmap(lambda v: lax.psum(v, 'i'), 'i')
o = spmd(jax.jit(lambda p, a: lax.cond(p, pf, lambda v: v, a)), True, x)
close(o, np.broadcast_to(x.sum(0), x.shape))
o = spmd(jax.jit(lambda p, a: lax.cond(p, pf, lambda v: v, a)), False, x)
close(o, x)
# the same scan and cond eagerly (no jit): each still one SPMD program (dispatch.py)
c, ys = spmd(lambda a: lax.scan(body, a, None, length=3), x)
close(c, r); close(ys, np.array(rs), 1e-4)
assert c.sharding == named('i', P('i')), c.sharding
o = spmd(lambda a: lax.cond(True, pf, lambda v: v, a), x)
close(o, np.broadcast_to(x.sum(0), x.shape))
# a nested pmap under jit: one program over the 2 x 2 grid
xx = np.arange(8., dtype=np.float32).reshape(2, 2, 2)
pp = jax.pmap(jax.pmap(lambda v: lax.psum(v, 'j') + lax.psum(v, 'i') * lax.axis_index('j'),
                       'j'), 'i')
want = xx.sum(1, keepdims=True) + xx.sum(0, keepdims=True) * np.arange(2)[None, :, None]
o = spmd(jax.jit(pp), xx)
close(o, want); close(pp(xx), want)
assert o.sharding == pp(xx).sharding, (o.sharding, pp(xx).sharding)
# a pmap inside a cond inside a pmap body: JAX 0.10.2's error (test_scaleout_parity.py)
pc = jax.pmap(lambda v: lax.cond(v.sum() > 20, lambda u: jax.pmap(lambda w: w * 2)(
    u.reshape(1, -1))[0], lambda u: u, v), 'i')
try:
  pc(x)
  raise AssertionError('no error')
except ValueError as e:
  assert "should match the mesh passed to shard_map" in str(e), e
# PRNG keys (raw and typed) through jit(pmap)
from tracejax import random
kf = jax.pmap(lambda k: random.normal(k, (2,)))
for ks in (random.split(random.PRNGKey(0), N), random.split(random.key(0), N)):
  close(spmd(jax.jit(kf), ks), kf(ks))
ks = random.split(random.key(1), N)
sk = spmd(jax.jit(jax.pmap(random.split)), ks)
assert sk.shape == (N, 2) and sk.sharding == named('_internal_pmap_axis_name',
                                                   P('_internal_pmap_axis_name')), sk.sharding
np.testing.assert_array_equal(random.key_data(sk), random.key_data(jax.pmap(random.split)(ks)))
# vmap of jit(pmap)
fv = jax.jit(jax.pmap(lambda v: v / lax.psum(v, 'i'), 'i'))
xs = np.stack([x + 1, x + 2])
close(jax.vmap(fv)(xs), xs / xs.sum(1, keepdims=True))
"""


@pytest.mark.parametrize("body", [JIT_OF_PMAP, TRANSFORMS], ids=["jit_of_pmap", "transforms"])
def test_pmap_in_jit(body):
  run_devices(body, 4, prelude=SPY)
