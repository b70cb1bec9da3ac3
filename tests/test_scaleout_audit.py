"""Acceptance audit of issue 9 (devices, pmap, collectives, multi-process helpers): each
check pins a behaviour where tracejax differed from JAX 0.10.2 and was fixed; values are
compared with NumPy (or the single-device computation), errors with the messages JAX
0.10.2 gives (recorded with `XLA_FLAGS=--xla_force_host_platform_device_count=4`).
Each script runs on 4 CPU devices in a subprocess (tests/test_pmap.py `run_devices`)."""
from tests.test_pmap import run_devices

PLACEMENT_AND_PMAP_API = """
import warnings
from tracejax.sharding import NamedSharding, PartitionSpec as P, Mesh, SingleDeviceSharding
from tracejax.experimental import multihost_utils as mu
d = jax.devices()

def raises(exc, words, f):
  try:
    f()
  except exc as e:
    for w in words:
      assert w in str(e), (w, str(e))
    return
  raise AssertionError('no error: ' + repr(words))

# jit(device=)/jit(backend=) win over committed inputs (JAX 0.10.2 moves them there)
w = jax.device_put(np.arange(4.), d[3])
y = jax.device_put(np.arange(4.), d[2])
r = jax.jit(lambda q: q + 1, device=d[2])(w)
assert r.devices() == {d[2]} and r.committed
close(r, np.arange(4.) + 1)
assert jax.jit(lambda q: q + 1, backend='cpu')(y).devices() == {d[0]}
raises(ValueError, ["can't specify both a device and a backend for jit",
                    "backend='cpu'"], lambda: jax.jit(lambda q: q, device=d[1], backend='cpu'))
raises(RuntimeError, ["Unknown backend tpu. Available backends are ['cpu']"],
       lambda: jax.jit(lambda q: q + 1, backend='tpu')(np.ones(2)))
# mixing committed arrays stays an error naming the devices
raises(ValueError, ['Received incompatible devices for jitted computation', 'device ids [2]',
                    'device ids [3]'], lambda: y + w)

# jit of pmap: one program over the pmap's devices; a committed single-device argument
# cannot join it (JAX: "... with device ids [1] ... inside jit with device ids [0, 1, 2, 3]")
x = np.arange(N * 6, dtype=np.float32).reshape(N, 2, 3)
jp = jax.jit(jax.pmap(lambda a: a * 2))
raises(ValueError, ['Received incompatible devices for jitted computation',
                    'with device ids [1] on platform CPU', 'device ids [0, 1, 2, 3]'],
       lambda: jp(jax.device_put(x, d[1])))
close(jp(x), x * 2)
close(jp(jnp.asarray(x)), x * 2)

# pmap(...).lower(): a Lowered whose compile() runs; trace(); eval_shape()
pf = jax.pmap(lambda a: a * 2)
low = pf.lower(x)
assert type(low).__name__ == 'Lowered' and 'func' in low.as_text()
close(low.compile()(x), x * 2)
assert 'xla_pmap' in str(jax.pmap(lambda a: lax.psum(a, 'i'), 'i').trace(x).jaxpr)
es = pf.eval_shape(x)
assert es.shape == x.shape and es.dtype == np.float32, es
close(jax.pmap(lambda a, k: a * k, static_broadcasted_argnums=1).lower(x, 3).compile()(x),
      x * 3)
pf(x); pf.clear_cache(); close(pf(x), x * 2)

# donate_argnums: the donated Array is deleted after the call (as JAX)
a = jax.pmap(lambda v: v)(x)
b = jax.pmap(lambda v: v + 1, donate_argnums=0)(a)
close(b, x + 1)
assert a.is_deleted()
raises(RuntimeError, ['deleted'], lambda: np.asarray(a))
keep = jax.pmap(lambda v: v)(x)
jax.pmap(lambda v, u: v + u, donate_argnums=(1,))(keep, keep + 0)
assert not keep.is_deleted()

# an empty mapped axis is a clear ValueError (was an IndexError)
raises(ValueError, ['size at least 1'], lambda: jax.pmap(lambda v: v)(np.ones((0, 2))))
# device_put with something that is not a device: ValueError, as JAX
raises(ValueError, ['Received invalid value'], lambda: jax.device_put(np.ones(2), 'cpu:1'))
assert repr(SingleDeviceSharding(d[1])) == \\
    'SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)', repr(SingleDeviceSharding(d[1]))

# multihost_utils with one process
v = np.arange(6.).reshape(3, 2)
close(mu.broadcast_one_to_all(v, is_source=False), v)   # JAX: the value itself
mesh = Mesh(np.array(d).reshape(2, 2), ('a', 'b'))
g = mu.host_local_array_to_global_array(np.arange(16.).reshape(4, 4), mesh, P('a'))
assert g.sharding == NamedSharding(mesh, P('a')) and g.shape == (4, 4)
close(g, np.arange(16.).reshape(4, 4))
h = mu.global_array_to_host_local_array({'g': g}, mesh, {'g': P('a', 'b')})['g']
assert h.sharding == NamedSharding(mesh, P('a', 'b'))
close(h, np.arange(16.).reshape(4, 4))
s = NamedSharding(mesh, P('a', 'b'))
full = np.arange(16.).reshape(4, 4)
assert s.addressable_devices_indices_map((4, 4)) == s.devices_indices_map((4, 4))
assert SingleDeviceSharding(d[2]).addressable_devices_indices_map((3,)) == {d[2]: (slice(None),)}
parts = [jax.device_put(full[i], dev) for dev, i in s.addressable_devices_indices_map((4, 4)).items()]
close(jax.make_array_from_single_device_arrays((4, 4), s, parts), full)
raises(ValueError, ['If `dtype` is provided to `jax.make_array_from_callback`, it must match',
                    'Got dtype=float32 and shard dtype=int32'],
       lambda: jax.make_array_from_callback((4,), NamedSharding(mesh, P('a')),
                                            lambda i: np.arange(4)[i], dtype=np.float32))
close(jax.make_array_from_callback((4,), NamedSharding(mesh, P('a')),
                                   lambda i: np.arange(4.)[i], dtype=np.float32), np.arange(4.))

# device_put: a pytree prefix of devices; donate=; may_alias=False copies
p1, p2 = jax.device_put((np.ones(2), {'k': np.ones(3)}), (d[1], d[2]))
assert p1.devices() == {d[1]} and p2['k'].devices() == {d[2]} and p2['k'].committed
src = jax.device_put(np.arange(3.), d[0])
moved = jax.device_put(src, d[1], donate=True)
assert moved.devices() == {d[1]} and src.is_deleted()
same = jax.device_put(np.arange(3.), d[1])
assert jax.device_put(same, d[1]) is same and jax.device_put(same, d[1], may_alias=False) is not same
# jit with SingleDeviceShardings: a program on that device (committed inputs move there)
r3 = jax.jit(lambda q: q * 2, in_shardings=SingleDeviceSharding(d[3]))(y)
assert r3.devices() == {d[3]}
close(r3, np.arange(4.) * 2)
assert jax.jit(lambda q: q * 2, out_shardings=SingleDeviceSharding(d[3]))(np.ones(2)).devices() == {d[3]}
# x.device: a property (the device, or the sharding of a multi-device array); the
# older method form x.device() still gives the device
assert y.device == d[2] and y.device() == d[2]
assert isinstance(jax.pmap(lambda v: v)(np.ones((N, 2))).device, jax.sharding.Sharding)
# process helpers; pmap ignores jax.default_device (the first local devices, in order)
assert jax.process_indices() == [0]
raises(ValueError, ['Unknown process_index 5'], lambda: jax.local_devices(process_index=5))
with jax.default_device(d[1]):
  assert [s.device for s in jax.pmap(lambda v: v + 1)(np.ones((2, 2))).addressable_shards] == d[:2]
# make_jaxpr(axis_env=): collectives that need the axis size trace outside a pmap
txt = str(jax.make_jaxpr(lambda v: lax.all_gather(v, 'i'), axis_env=[('i', 4)])(np.ones(2)))
assert 'all_gather' in txt, txt
_, shp = jax.make_jaxpr(lambda v: lax.all_gather(v, 'i'), axis_env=[('i', 4)],
                        return_shape=True)(np.ones(2, np.float32))
assert shp.shape == (4, 2), shp
"""


COLLECTIVES = """
from functools import partial
from tracejax.sharding import Mesh, PartitionSpec as P
d = jax.devices()
mesh = Mesh(np.array(d), ('i',))
smap = lambda f: jax.jit(jax.shard_map(lambda a: f(a[0])[None], mesh=mesh, in_specs=P('i'),
                                       out_specs=P('i')))

def raises(exc, words, f):
  try:
    f()
  except exc as e:
    for w in words:
      assert w in str(e), (w, str(e))
    return
  raise AssertionError('no error: ' + repr(words))

def each(f, x, ref):
  # the same values under pmap, vmap with the axis name, and shard_map
  close(jax.pmap(f, 'i')(x), ref)
  close(jax.vmap(f, axis_name='i')(x), ref)
  close(smap(f)(x), ref)

x = (np.arange(N * N * 2, dtype=np.float32).reshape(N, N, 2) % 7) + 1

# all_to_all(tiled=True): member i gets block i of every member's split axis
t00 = np.stack([np.concatenate([x[j][i:i + 1] for j in range(N)]) for i in range(N)])
each(lambda a: lax.all_to_all(a, 'i', 0, 0, tiled=True), x, t00)
t01 = np.stack([np.concatenate([x[j][i:i + 1] for j in range(N)], axis=1) for i in range(N)])
each(lambda a: lax.all_to_all(a, 'i', 0, 1, tiled=True), x, t01)
assert jax.pmap(lambda a: lax.all_to_all(a, 'i', 0, 1, tiled=True), 'i')(x).shape == (N, 1, 8)
# (JAX 0.10.2's values: member 1 of the 0/0 case is [[3,4],[4,5],[5,6],[6,7]])
close(jax.pmap(lambda a: lax.all_to_all(a, 'i', 0, 0, tiled=True), 'i')(x)[1],
      [[3., 4.], [4., 5.], [5., 6.], [6., 7.]])
raises(ValueError, ['has to be divisible by the size of the named axis'],
       lambda: jax.pmap(lambda a: lax.all_to_all(a[:2], 'i', 0, 0, tiled=True), 'i')(x))
f = jax.pmap(lambda a: jnp.sin(lax.all_to_all(a, 'i', 0, 0, tiled=True)), 'i')
check_grads(f, (x / 7.,), order=1, modes=['fwd', 'rev'], atol=2e-2, rtol=2e-2)
# negative axes count from the end
close(jax.pmap(lambda a: lax.all_gather(a, 'i', axis=-1), 'i')(x[:, 0]),
      np.broadcast_to(x[:, 0].T, (N, 2, N)))
close(jax.pmap(lambda a: lax.psum_scatter(a, 'i', scatter_dimension=-2), 'i')(x), x.sum(0))

# axis_index over several names: row-major, the first name slowest
xi = np.zeros((N, 2), np.float32)
close(jax.vmap(jax.vmap(lambda a: lax.axis_index(('j', 'i')), axis_name='j'), axis_name='i')(xi),
      [[0, 4], [1, 5], [2, 6], [3, 7]])   # JAX 0.10.2's numbers
close(jax.pmap(jax.pmap(lambda a: a * 0 + lax.axis_index(('i', 'j')), 'j'), 'i')(np.zeros((2, 2))),
      [[0, 1], [2, 3]])
# all_to_all over two names under nested vmaps (as JAX) and nested pmaps
x4 = np.arange(32, dtype=np.float32).reshape(2, 2, 4, 2)
a2a = lambda a: lax.all_to_all(a, ('i', 'j'), 0, 0)
want = np.swapaxes(x4.reshape(4, 4, 2), 0, 1).reshape(2, 2, 4, 2)
close(jax.vmap(jax.vmap(a2a, axis_name='j'), axis_name='i')(x4), want)
close(jax.pmap(jax.pmap(a2a, 'j'), 'i')(x4), want)
m2 = Mesh(np.array(d).reshape(2, 2), ('a', 'b'))
sm2 = jax.jit(jax.shard_map(lambda a: a * 0 + lax.axis_index(('a', 'b')), mesh=m2,
                            in_specs=P('a', 'b'), out_specs=P('a', 'b')))
close(sm2(np.zeros((4, 4))), np.kron(np.arange(4.).reshape(2, 2), np.ones((2, 2))))

# psum of booleans counts them as int32 (JAX converts first)
xb = np.arange(N * 2, dtype=np.float32).reshape(N, 2) > 2
for r in (jax.pmap(lambda a: lax.psum(a, 'i'), 'i')(xb),
          jax.vmap(lambda a: lax.psum(a, 'i'), axis_name='i')(xb)):
  assert r.dtype == np.int32, r.dtype
  close(r, np.broadcast_to(xb.sum(0), (N, 2)))
assert jax.pmap(lambda a: lax.pmax(a, 'i'), 'i')(xb).dtype == np.bool_

# axis_index_groups (pmap and shard_map; vmap: NotImplementedError, as JAX)
v = np.arange(N * 2, dtype=np.float32).reshape(N, 2)
G = [[0, 1], [2, 3]]
pg = lambda f: jax.pmap(f, 'i')(v)
grp = np.concatenate([np.broadcast_to(v[:2].sum(0), (2, 2)), np.broadcast_to(v[2:].sum(0), (2, 2))])
close(pg(lambda a: lax.psum(a, 'i', axis_index_groups=G)), grp)
close(smap(lambda a: lax.psum(a, 'i', axis_index_groups=G))(v), grp)
close(pg(lambda a: lax.pmean(a, 'i', axis_index_groups=G)), grp / 2)   # JAX: [[1,2],[1,2],[5,6],[5,6]]
close(pg(lambda a: lax.pmax(a, 'i', axis_index_groups=[[0, 2], [1, 3]])),
      [[4, 5], [6, 7], [4, 5], [6, 7]])
close(pg(lambda a: lax.all_gather(a, 'i', tiled=True, axis_index_groups=[[0, 3], [2, 1]])),
      [[0, 1, 6, 7], [4, 5, 2, 3], [4, 5, 2, 3], [0, 1, 6, 7]])          # JAX's numbers
close(pg(lambda a: lax.psum_scatter(a, 'i', axis_index_groups=G)), [2, 4, 10, 12])
close(pg(lambda a: lax.psum_scatter(a, 'i', tiled=True, axis_index_groups=G)), [[2], [4], [10], [12]])
close(pg(lambda a: lax.all_to_all(a, 'i', 0, 0, axis_index_groups=G)),
      [[0, 2], [1, 3], [4, 6], [5, 7]])
gg = jax.grad(lambda a: jax.pmap(lambda b: lax.psum(b, 'i', axis_index_groups=[[0, 2], [1, 3]])
                                 * jnp.arange(2.), 'i')(a).sum())(v)
close(gg, np.broadcast_to([0., 2.], (N, 2)))   # JAX's numbers (the transpose is psum too)
raises(NotImplementedError, ['axis_index_groups not supported in vmap'],
       lambda: jax.vmap(lambda a: lax.psum(a, 'i', axis_index_groups=G), axis_name='i')(v))
raises(ValueError, ['axis_index_groups must cover all indices exactly once'],
       lambda: pg(lambda a: lax.psum(a, 'i', axis_index_groups=[[0, 1], [1, 2]])))
raises(ValueError, ['axis_index_groups must cover all indices exactly once'],
       lambda: pg(lambda a: lax.psum(a, 'i', axis_index_groups=[[0, 1], [2]])))
txt = str(jax.make_jaxpr(jax.pmap(lambda a: lax.psum(a, 'i', axis_index_groups=G), 'i'))(v))
assert 'axis_index_groups=((0, 1), (2, 3))' in txt, txt

# collectives inside scan / cond / while under vmap(axis_name=...) (JAX 0.10.2's numbers)
xs3 = np.arange(12.).reshape(4, 3)
close(jax.vmap(lambda u: lax.scan(lambda c, e: (c + lax.psum(e, 'i'), None), 0., u)[0],
               axis_name='i')(xs3), [66.] * 4)
close(jax.vmap(lambda u: lax.cond(u.sum() > 0, lambda: lax.psum(u, 'i'), lambda: u),
               axis_name='i')(xs3), np.broadcast_to(xs3.sum(0), (4, 3)))
close(jax.vmap(lambda u: lax.while_loop(lambda c: c[0] < 3, lambda c: (
    c[0] + 1, c[1] + lax.psum(c[1], 'i')), (0, u))[1], axis_name='i')(xs3),
      [[558, 683, 808], [561, 686, 811], [564, 689, 814], [567, 692, 817]])
close(jax.vmap(lambda u: lax.fori_loop(0, 2, lambda i, c: c + lax.axis_index('i'), u),
               axis_name='i')(xs3), xs3 + 2 * np.arange(4.)[:, None])
# gradients through such a loop: under pmap, outside it, and with the named vmap
sc = lambda u: lax.scan(lambda c, e: (c * e + lax.psum(e, 'i'), None), jnp.ones(3), u)[0].sum()
xg = (np.arange(24, dtype=np.float32).reshape(4, 2, 3) % 5) / 3. + 0.1
ref = [[[4.1667, 4.1667, 2.5], [6.5, 8.1667, 8.1667]], [[4.5, 2.8333, 2.8333], [6.8333, 8.5, 8.5]],
       [[3.1667, 3.1667, 3.1667], [7.1667, 8.8333, 8.8333]], [[3.5, 3.5, 3.5], [7.5, 9.1667, 7.5]]]
close(jax.grad(lambda a: jax.pmap(sc, 'i')(a).sum())(xg), ref, 1e-4)
close(jax.pmap(jax.grad(sc), 'i')(xg), ref, 1e-4)
close(jax.vmap(jax.grad(sc), axis_name='i')(xg), ref, 1e-4)
scv = lambda u: lax.scan(lambda c, e: (c * e + lax.psum(e, 'i'), None),
                         lax.pcast(jnp.ones(3), 'i', to='varying'), u)[0].sum()
close(jax.grad(lambda a: smap(lambda b: scv(b))(a).sum())(xg), ref, 1e-4)

# pmax / pmin have no differentiation rule (JAX's NotImplementedError)
for name, op in (('pmax', lax.pmax), ('pmin', lax.pmin)):
  raises(NotImplementedError, [f"Differentiation rule for '{name}' not implemented"],
         lambda: jax.pmap(jax.grad(lambda a: op(a, 'i').sum()), 'i')(v))
  raises(NotImplementedError, [f"Differentiation rule for '{name}' not implemented"],
         lambda: jax.grad(lambda a: jax.pmap(lambda b: op(b, 'i'), 'i')(a).sum())(v))
"""


def test_placement_pmap_api_multihost():
  run_devices(PLACEMENT_AND_PMAP_API, 4)


def test_collectives_tiled_groups_names():
  run_devices(COLLECTIVES, 4)
