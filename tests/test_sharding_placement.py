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
