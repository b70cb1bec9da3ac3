"""Devices and placement on 4 CPU devices (in a subprocess: the device count is fixed
when the backend starts): `.sharding`, `.committed`, `device_put`, computations running
where their committed inputs are, the incompatible-devices error, `default_device`,
`jit(device=...)`, and the device-count functions."""
import pytest

from tests.test_pmap import run_devices

PLACEMENT = """
from tracejax._src.runtime.sharding import SingleDeviceSharding
d = jax.devices()
x = jnp.arange(3.)
assert isinstance(x.sharding, SingleDeviceSharding) and x.devices() == {d[0]}
assert not x.committed and x.is_fully_replicated and x.is_fully_addressable
assert len(x.addressable_shards) == 1 and x.addressable_shards[0].device == d[0]
y = jax.device_put(x, d[2])
assert y.committed and y.devices() == {d[2]} and y.sharding == SingleDeviceSharding(d[2])
assert jax.device_put(np.ones(2)).committed is False
# eager ops and jit run where their committed inputs are
for z in [y + 1, jnp.sin(y), lax.add(y, x), jax.jit(lambda a, b: a * b)(y, x),
          jax.jit(lambda a: a * 2)(y)]:
  assert z.devices() == {d[2]} and z.committed, z.devices()
close(jax.jit(lambda a, b: a * b)(y, x), np.arange(3.) ** 2)
close(y + x, 2 * np.arange(3.))
# committed arrays on different devices: JAX's error, naming the devices
w = jax.device_put(x, d[1])
for f in [lambda: y + w, lambda: jax.jit(lambda a, b: a + b)(y, w), lambda: lax.add(y, w)]:
  try:
    f()
    raise AssertionError('no error')
  except ValueError as e:
    msg = str(e)
    assert 'incompatible devices' in msg and 'device ids [2]' in msg and 'device ids [1]' in msg, msg
# default_device: context manager and config
with jax.default_device(d[3]):
  u = jnp.ones(3) + 1
  assert u.devices() == {d[3]} and not u.committed
  assert jax.jit(lambda a: a - 1)(np.ones(2)).devices() == {d[3]}
assert (jnp.ones(3) + 1).devices() == {d[0]}
jax.config.update('jax_default_device', d[1])
try:
  assert (jnp.ones(3) * 2).devices() == {d[1]}
finally:
  jax.config.update('jax_default_device', None)
assert (jnp.ones(3) * 2).devices() == {d[0]}
# jit(device=..., backend=...)
jd = jax.jit(lambda a: a + 1, device=d[2])
r = jd(np.ones(2))
assert r.devices() == {d[2]} and r.committed
close(r, 2 * np.ones(2))
assert jax.jit(lambda a: a + 1, backend='cpu')(np.ones(2)).devices() == {d[0]}
# device functions
assert jax.device_count() == N == jax.local_device_count() == len(jax.local_devices())
assert jax.process_index() == 0 and jax.process_count() == 1
assert jax.host_id() == 0 and jax.host_count() == 1
# device_put of a pytree onto a device, and moving a committed array
t = jax.device_put({'a': np.ones(2), 'b': (x,)}, d[3])
assert t['a'].devices() == {d[3]} and t['b'][0].devices() == {d[3]}
m = jax.device_put(y, d[0])
assert m.devices() == {d[0]} and m.committed
close(m, np.arange(3.))
"""


@pytest.mark.parametrize("n", [4, 8])
def test_placement(n):
  run_devices(PLACEMENT, n)


EAGER_ON_PMAP_RESULTS = """
from tracejax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tracejax._src.runtime import sharding as sharding_mod
x = np.arange(N * 3, dtype=np.float32).reshape(N, 3) / 4.
y = jax.pmap(lambda v: v * 2)(x)
ax = '_internal_pmap_axis_name'   # JAX 0.10.2's mesh axis for a pmap given no axis name
mesh = Mesh(np.array(jax.devices(), dtype=object), (ax,))
split, rep = NamedSharding(mesh, P(ax)), NamedSharding(mesh, P())
# As JAX 0.10.2: eager ops and jit on a pmap result run as one SPMD program over its
# devices (no gather); elementwise results keep its layout, reductions over it replicate.
cases = [(y + 1, 2 * x + 1, split), (jnp.sin(y), np.sin(2 * x), split),
         (lax.add(y, y), 4 * x, split), (y * np.arange(3.), 2 * x * np.arange(3.), split),
         (jax.jit(lambda a: a * 3)(y), 6 * x, split), (y.sum(1), 2 * x.sum(1), split),
         (jnp.sum(y), 2 * x.sum(), rep), (y.sum(0), 2 * x.sum(0), rep), (y[1], 2 * x[1], rep),
         (y.T, 2 * x.T, NamedSharding(mesh, P(None, ax)))]
for z, want, s in cases:
  close(z, want)
  assert z.committed and z.devices() == set(jax.devices()), z.devices()
  assert z.sharding == s, (z.sharding, s)   # JAX 0.10.2's, spelled the same
# the pmap's axis name names the mesh axis
assert (jax.pmap(lambda v: v * 2, 'rows')(x) + 1).sharding.mesh.axis_names == ('rows',)
# a next pmap uses an eager result's buffers in place, and does not trace again
z = y + 1
moved = sharding_mod.shard_to_devices(z, z.aval, tuple(jax.devices()), True)
assert [b.unsafe_buffer_pointer() for b in moved._arrays] == \\
    [b.unsafe_buffer_pointer() for b in z._arrays]
traces = []
g = jax.pmap(lambda v: (traces.append(1), v - 1)[1])
close(g(z), 2 * x); close(g(z), 2 * x); close(g(jnp.cos(y)), np.cos(2 * x) - 1)
assert len(traces) == 1, traces
# an Array placed by a PmapSharding behaves the same; grad of an eager function of y
pa = jax.device_put(x, sharding_mod.PmapSharding(jax.devices()))
assert (pa * 2).sharding.is_equivalent_to(split, 2)
close(jax.grad(lambda a: jnp.sum(a ** 2))(y), 4 * x)
# a jitted function under vmap/jvp (its `xla_call` runs eagerly) stays on the devices too
for z, want in [(jax.vmap(jax.jit(lambda a: a * 2))(y), 4 * x),
                (jax.jvp(jax.jit(jnp.sin), (y,), (y,))[1], np.cos(2 * x) * 2 * x)]:
  close(z, want)
  assert z.sharding == split, z.sharding
# committed arrays on other devices cannot join: JAX's error, naming the devices
a = jax.device_put(np.ones(3, np.float32), jax.devices()[0])
y2 = jax.pmap(lambda v: v, devices=jax.devices()[:2])(x[:2])
for f in [lambda: y + a, lambda: jax.jit(lambda p, q: p + q)(y, a), lambda: y[:2] + y2]:
  try:
    f()
    raise AssertionError('no error')
  except ValueError as e:
    assert 'incompatible devices' in str(e), e
try:
  y + a
except ValueError as e:
  assert 'device ids [0] on platform CPU' in str(e) and 'shape float32[3]' in str(e), e
"""

AOT_SHARDED = """
from tracejax.sharding import NamedSharding, PartitionSpec as P, AxisType
from tracejax._src.runtime.sharding import SingleDeviceSharding
mesh = jax.make_mesh((N,), ('x',), axis_types=(AxisType.Auto,))
s, r = NamedSharding(mesh, P('x')), NamedSharding(mesh, P())
xn = np.arange(2 * N, dtype=np.float32) / 3.
f = jax.jit(lambda a, b: a * 2 + b, in_shardings=(s, None), out_shardings=s)
lo = f.lower(xn, 1.0)
text = lo.as_text()
assert 'mhlo.num_partitions = %d' % N in text and 'mhlo.sharding = "{devices=[%d]' % N in text, text
assert 'mhlo.sharding' in f.trace(xn, 1.0).lower().as_text()
c = lo.compile()
(i0, i1), kw = c.input_shardings
assert i0 == s and i1.is_equivalent_to(r, 0) and kw == {} and c.output_shardings == s
for arg in [xn, jnp.asarray(xn), jax.device_put(xn, s)]:   # placed, or used in place
  out = c(arg, 1.0)
  close(out, xn * 2 + 1)
  assert out.sharding == s
# a committed argument laid out otherwise: JAX's error
for bad in [jax.device_put(xn, r), jax.device_put(xn, jax.devices()[1])]:
  try:
    c(bad, 1.0)
    raise AssertionError('no error')
  except ValueError as e:
    m = str(e)
    assert 'compiled for input shardings that disagree' in m and 'Argument a with shape' in m \\
        and 'Required sharding: ' + repr(s) in m, m
# sharded arguments alone make the lowered program the SPMD one the call runs
xs = jax.device_put(xn, s)
g = jax.jit(lambda a: jnp.sin(a) + 1)
lo2 = g.lower(xs)
assert 'mhlo.num_partitions = %d' % N in lo2.as_text()
c2 = lo2.compile()
assert c2.input_shardings[0][0] == s
for arg in [xs, xn]:
  close(c2(arg), np.sin(xn) + 1)
  assert c2(arg).sharding.is_equivalent_to(g(xs).sharding, 1)
# a pmap result, and a ShapeDtypeStruct with a sharding, as arguments
y = jax.pmap(lambda v: v * 2)(xn.reshape(N, 2))
c3 = jax.jit(lambda a: a + 1).lower(y).compile()
close(c3(y), xn.reshape(N, 2) * 2 + 1)
assert c3(y).devices() == set(jax.devices())
assert 'mhlo.num_partitions' in jax.jit(lambda a: a + 1).lower(y).as_text()
c4 = jax.jit(lambda a: a * 2).lower(jax.ShapeDtypeStruct((2 * N,), np.float32, sharding=s)).compile()
assert c4.input_shardings[0][0] == s
close(c4(xn), 2 * xn)
# a single-device program: committed elsewhere is an error, uncommitted elsewhere moves
c1 = jax.jit(lambda a: a + 1).lower(xn).compile()
assert c1.input_shardings[0][0] == SingleDeviceSharding(jax.devices()[0])
assert c1.output_shardings == SingleDeviceSharding(jax.devices()[0])
try:
  c1(jax.device_put(xn, jax.devices()[1]))
  raise AssertionError('no error')
except ValueError as e:
  assert 'Passed sharding: SingleDeviceSharding' in str(e), e
with jax.default_device(jax.devices()[2]):
  u = jnp.asarray(xn)
assert not u.committed and c1(u).devices() == {jax.devices()[0]}
close(c1(u), xn + 1)
# lowered for a committed argument: compiled for its device, as the call would run
x2 = jax.device_put(xn, jax.devices()[2])
c5 = jax.jit(lambda a: a + 1).lower(x2).compile()
assert c5.input_shardings[0][0] == SingleDeviceSharding(jax.devices()[2])
assert c5(x2).devices() == {jax.devices()[2]} == c5(xn).devices()
with jax.default_device(jax.devices()[3]):
  c6 = jax.jit(lambda a: a * 2).lower(xn).compile()
assert c6(xn).devices() == {jax.devices()[3]}
"""


@pytest.mark.parametrize("n", [4, 8])
def test_eager_ops_on_pmap_results(n):
  run_devices(EAGER_ON_PMAP_RESULTS, n)


def test_aot_stages_with_shardings():
  run_devices(AOT_SHARDED, 4)
