"""Shardings and SPMD programs on 4 and 8 CPU devices: Mesh/NamedSharding/PartitionSpec,
device_put to a sharding, jit with in_shardings/out_shardings (XLA's partitioner),
with_sharding_constraint, shard_map with collectives over mesh axes, eager ops on
sharded arrays, and the error cases. The device count is fixed when the backend starts,
so the checks run in subprocesses (as tests/test_pmap.py), many per subprocess; every
result is compared with the unsharded (NumPy or single-device) computation."""
from tests.test_pmap import run_devices as _run_devices

PRELUDE = """
import numpy as np
import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.sharding import Mesh, NamedSharding, PartitionSpec, P, SingleDeviceSharding
from tracejax._src.test_util import check_grads
N = jax.device_count()
assert N == int(__import__('os').environ['TRACEJAX_NUM_CPU_DEVICES']), N
close = lambda a, b, tol=1e-5: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)

def raises(exc, text, f):
  try:
    f()
  except exc as e:
    assert text in str(e), (text, str(e))
    return
  raise AssertionError(f"no {exc.__name__} ({text})")
"""


def run_devices(body, n):
  return _run_devices(body, n, prelude=PRELUDE)


SHARDINGS_2X2 = """
mesh = jax.make_mesh((2, 2), ('x', 'y'))
assert mesh.shape == {'x': 2, 'y': 2} and mesh.size == 4 and mesh.axis_names == ('x', 'y')
assert repr(P('x', None)) == "P('x', None)" and P('x') != P('x', None)
from tracejax.experimental import mesh_utils
assert mesh_utils.create_device_mesh((2, 2)).shape == (2, 2)
# make_mesh's axes are Explicit by default (JAX 0.10.2), Mesh's Auto
assert Mesh(mesh_utils.create_device_mesh((2, 2)), ('x', 'y')) != mesh
assert Mesh(mesh_utils.create_device_mesh((2, 2)), ('x', 'y'),
            axis_types=(jax.sharding.AxisType.Explicit,) * 2) == mesh
xn = np.arange(32, dtype=np.float32).reshape(4, 8)
s = NamedSharding(mesh, P('x', 'y'))
x = jax.device_put(xn, s)
close(x, xn)
assert x.sharding == s and x.committed and not s.is_fully_replicated
assert not x.is_fully_replicated and x.devices() == set(mesh.devices.flat)
assert jax.sharding.reshard(xn, NamedSharding(mesh, P())).is_fully_replicated
assert s.shard_shape(xn.shape) == (2, 4)
shards = x.addressable_shards
assert [sh.device for sh in shards] == list(mesh.devices.flat)
for sh in shards:
  close(sh.data, xn[sh.index])
assert shards[1].index == (slice(0, 2), slice(4, 8)) and shards[2].index == (slice(2, 4), slice(0, 4))
r = jax.device_put(xn, NamedSharding(mesh, P('x')))
assert [sh.replica_id for sh in r.addressable_shards] == [0, 1, 0, 1]
assert NamedSharding(mesh, P()).is_fully_replicated

# jit with NamedSharding inputs: same numbers as unsharded code; output shardings as
# JAX documents them (what XLA's propagation chose, as a NamedSharding over the mesh).
y = jax.jit(lambda a: jnp.sin(a) * 2)(x)
close(y, np.sin(xn) * 2)
assert y.sharding == NamedSharding(mesh, P('x', 'y')), y.sharding
t = jax.jit(lambda a: a.sum(0))(x)
close(t, xn.sum(0))
assert t.sharding == NamedSharding(mesh, P('y')), t.sharding
tot = jax.jit(jnp.sum)(x)
close(tot, xn.sum())
assert tot.sharding == NamedSharding(mesh, P()), tot.sharding
# in_shardings / out_shardings given: NumPy inputs are laid out, outputs as asked
f = jax.jit(lambda a, b: a @ b, in_shardings=(NamedSharding(mesh, P('x', None)),
                                              NamedSharding(mesh, P(None, 'y'))),
            out_shardings=NamedSharding(mesh, P('x', 'y')))
bn = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
bn = np.concatenate([bn, bn[:, :1]], 1)
o = f(xn, bn)
close(o, xn @ bn, 1e-4)
assert o.sharding == NamedSharding(mesh, P('x', 'y'))
o2 = f(xn, bn)   # cached: jaxlib's C++ path
close(o2, xn @ bn, 1e-4)
rep = jax.jit(lambda a: a + 1, out_shardings=NamedSharding(mesh, P()))(x)
assert rep.sharding.is_fully_replicated and all(sh.replica_id == i for i, sh in enumerate(rep.addressable_shards))
close(rep, xn + 1)
# a PartitionSpec alone, inside `with mesh:`
with mesh:
  g = jax.jit(lambda a: a * 3, in_shardings=P('x'), out_shardings=P(None, 'y'))
  close(g(xn), xn * 3)
  assert g(xn).sharding == NamedSharding(mesh, P(None, 'y'))
# cached calls run in C++ without tracing again
traces = []
h = jax.jit(lambda a: (traces.append(1), a - 1)[1])
for _ in range(3):
  z = h(x)
assert len(traces) == 1 and z.sharding == s
close(z, xn - 1)

# eager ops on sharded arrays run sharded, with the right numbers
e = x * 2 + 1
close(e, xn * 2 + 1)
assert e.sharding == s, e.sharding
close(jnp.sum(x, axis=1), xn.sum(1))
close(jnp.dot(x, bn), xn @ bn, 1e-4)

# with_sharding_constraint names Auto axes only (JAX 0.10.2: Explicit axes change with
# `reshard`), so this part uses a mesh with Auto axes over the same devices
raises(ValueError, "can only refer to Auto axes of the mesh",
       lambda: lax.with_sharding_constraint(xn, NamedSharding(mesh, P('x'))))
amesh = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
sa = NamedSharding(amesh, P('x', 'y'))
xa = jax.device_put(xn, sa)
# under jit, the layout of the value; eagerly, a move
c = jax.jit(lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(amesh, P(None, 'x'))))
co = c(xa)
close(co, xn * 2)
assert co.sharding == NamedSharding(amesh, P(None, 'x')), co.sharding
assert c(xn).sharding == NamedSharding(amesh, P(None, 'x'))   # NumPy in, same layout out
assert 'sharding_constraint' in str(jax.make_jaxpr(lambda a: lax.with_sharding_constraint(a, sa))(xn))
ce = lax.with_sharding_constraint(xn, NamedSharding(amesh, P('y')))
assert ce.sharding == NamedSharding(amesh, P('y'))
close(ce, xn)
# its derivative and batching rules
close(jax.grad(lambda a: jnp.sum(lax.with_sharding_constraint(a, sa) ** 2))(xn), 2 * xn)
close(jax.jit(jax.grad(lambda a: jnp.sum(lax.with_sharding_constraint(a * a, sa))))(xa), 2 * xn)
check_grads(lambda a: lax.with_sharding_constraint(jnp.sin(a), sa), (xn / 10,), order=2,
            modes=["fwd", "rev"])
vb = jax.vmap(lambda a: lax.with_sharding_constraint(a * 2, NamedSharding(amesh, P('x'))))(
    np.stack([xn, xn + 1]))
close(vb, np.stack([xn * 2, xn * 2 + 2]))

# errors, in JAX's words
raises(ValueError, "implies that array axis 0 is partitioned 2 times, but does not evenly "
       "divide the dimension size 3", lambda: jax.device_put(np.zeros((3, 4)), s))
raises(ValueError, "Resource axis: z of P('z',) is not found in mesh: ('x', 'y')",
       lambda: NamedSharding(mesh, P('z')))
raises(ValueError, "has duplicate entries for `x`", lambda: NamedSharding(mesh, P('x', 'x')))
raises(ValueError, "is only valid for values of rank at least 2, but was applied to a value "
       "of rank 1", lambda: jax.device_put(np.zeros(4), s))
raises(ValueError, "One of pjit arguments with pytree key path args[0] is incompatible with "
       "its sharding annotation", lambda: jax.jit(lambda a: a, in_shardings=s)(np.zeros(4)))
raises(ValueError, "implies that array axis 0 is partitioned 2 times, but the dimension size "
       "is 3", lambda: jax.jit(lambda a: a, in_shardings=s)(np.zeros((3, 4))))
raises(ValueError, "One of with_sharding_constraint arguments is incompatible",
       lambda: lax.with_sharding_constraint(np.zeros(4), sa))
raises(ValueError, "Mesh requires the ndim of its first argument",
       lambda: Mesh(mesh_utils.create_device_mesh((2, 2)), ('x',)))
raises(ValueError, "must be >= the product of mesh_shape (3, 2)",
       lambda: jax.make_mesh((3, 2), ('x', 'y')))
raises(ValueError, "Received incompatible devices",
       lambda: jax.jit(lambda a, b: a + b)(x, jax.device_put(xn, NamedSharding(
           jax.make_mesh((2, 2), ('x', 'y'), devices=jax.devices()[::-1]), P('x')))))
"""

SHARD_MAP_2X2 = """
from functools import partial
from tracejax.experimental.shard_map import shard_map as exp_shard_map
# Auto axes: NumPy arguments are split by in_specs (on Explicit axes, as in JAX, their
# type would have to match: tests/test_sharding_explicit.py)
mesh = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(jax.sharding.AxisType.Auto,) * 2)
xn = np.arange(32, dtype=np.float32).reshape(4, 8)
x = jax.device_put(xn, NamedSharding(mesh, P('x', 'y')))
blocks = lambda v: [[v[2 * i:2 * i + 2, 4 * j:4 * j + 4] for j in range(2)] for i in range(2)]
B = blocks(xn)

# psum over 'x': the sum of the two row blocks, one per column block
f = jax.shard_map(lambda b: lax.psum(b, 'x'), mesh=mesh, in_specs=P('x', 'y'),
                  out_specs=P(None, 'y'))
want = np.concatenate([B[0][0] + B[1][0], B[0][1] + B[1][1]], 1)
for out in (f(x), f(xn), jax.jit(f)(x), jax.jit(f)(xn)):
  close(out, want)
assert f(x).sharding == NamedSharding(mesh, P(None, 'y')), f(x).sharding
assert jax.jit(f)(x).sharding == NamedSharding(mesh, P(None, 'y'))
assert jax.jit(f)(xn).sharding == NamedSharding(mesh, P(None, 'y'))   # NumPy in: SPMD too
# nested in another jit, under pmap-free vmap: lowered as named vmaps on one device
close(jax.jit(lambda v: jax.vmap(f)(v))(np.stack([xn, xn])), np.stack([want, want]))
jp = str(jax.make_jaxpr(f)(xn))
assert 'shard_map' in jp and 'psum' in jp, jp
# the experimental spelling, and check_rep / check_vma accepted
g = exp_shard_map(lambda b: b * 2, mesh, in_specs=(P('x', 'y'),), out_specs=P('x', 'y'),
                  check_rep=False)
close(g(xn), xn * 2)
close(jax.shard_map(lambda b: b + 1, mesh=mesh, in_specs=P('x'), out_specs=P('x'),
                    check_vma=False)(xn), xn + 1)
inf = jax.shard_map(lambda b: lax.psum(b, 'x'), mesh=mesh, out_specs=P(None, 'y'))  # in_specs inferred
close(inf(x), want)

# axis_index, all_gather, ppermute, psum over both axes, pmean, all_to_all
idx = jax.shard_map(lambda b: jnp.zeros_like(b) + lax.axis_index('x') * 10 + lax.axis_index('y'),
                    mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x', 'y'))
want_idx = np.repeat(np.repeat(np.array([[0., 1.], [10., 11.]]), 2, 0), 4, 1)
close(idx(xn), want_idx); close(jax.jit(idx)(x), want_idx)
# all_gather's result still counts as varying over 'y' (JAX): the check is turned off
ag = jax.shard_map(lambda b: lax.all_gather(b, 'y', axis=1, tiled=True), mesh=mesh,
                   in_specs=P('x', 'y'), out_specs=P('x', None), check_vma=False)
close(ag(x), xn); close(jax.jit(ag)(xn), xn)
pp = jax.shard_map(lambda b: lax.ppermute(b, 'x', [(0, 1), (1, 0)]), mesh=mesh,
                   in_specs=P('x'), out_specs=P('x'))
close(pp(x), np.concatenate([xn[2:], xn[:2]])); close(jax.jit(pp)(xn), np.concatenate([xn[2:], xn[:2]]))
tot = jax.shard_map(lambda b: lax.psum(jnp.sum(b), ('x', 'y')), mesh=mesh,
                    in_specs=P('x', 'y'), out_specs=P())
close(tot(x), xn.sum()); close(jax.jit(tot)(xn), xn.sum())
pm = jax.shard_map(lambda b: lax.pmean(b, 'y'), mesh=mesh, in_specs=P(None, 'y'),
                   out_specs=P(None, None))
close(pm(x), (xn[:, :4] + xn[:, 4:]) / 2 * np.ones((1, 1)))
rs = jax.shard_map(lambda b: lax.psum_scatter(b, 'x', scatter_dimension=0, tiled=True),
                   mesh=mesh, in_specs=P(None, 'y'), out_specs=P('x', 'y'))
close(rs(x), xn * 2); close(jax.jit(rs)(xn), xn * 2)
a2a = jax.shard_map(lambda b: lax.all_to_all(b, 'x', 0, 0), mesh=mesh, in_specs=P('x'),
                    out_specs=P('x'))
close(a2a(x), xn[[0, 2, 1, 3]]); close(jax.jit(a2a)(xn), xn[[0, 2, 1, 3]])
# a replicated (unsplit) argument next to a split one; pytrees in and out
ff = jax.shard_map(lambda d, w: {'o': d['a'] @ w}, mesh=mesh,
                   in_specs=({'a': P('x')}, P()), out_specs={'o': P('x')})
wn = np.ones((8, 3), np.float32)
close(ff({'a': xn}, wn)['o'], xn @ wn)
# decorator form, inside `with mesh:`
with mesh:
  @partial(jax.shard_map, in_specs=P('y'), out_specs=P('y'))
  def dec(b):
    return b * 4
close(dec(np.arange(8.)), np.arange(8.) * 4)

# gradients through shard_map (psum's transpose is psum) and vmap of shard_map
loss = jax.shard_map(lambda b: lax.psum(jnp.sum(b ** 2), ('x', 'y')), mesh=mesh,
                     in_specs=P('x', 'y'), out_specs=P())
close(jax.grad(loss)(xn), 2 * xn)
close(jax.jit(jax.grad(loss))(x), 2 * xn)
w_loss = jax.shard_map(lambda b, w: lax.psum(jnp.sum(jnp.tanh(b @ w)), 'x'), mesh=mesh,
                       in_specs=(P('x'), P()), out_specs=P())
wn2 = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
gw = jax.grad(w_loss, argnums=1)(xn / 30, wn2)
close(gw, jax.grad(lambda a, w: jnp.sum(jnp.tanh(a @ w)), argnums=1)(xn / 30, wn2), 1e-4)
check_grads(lambda b: jax.shard_map(lambda v: jnp.sin(v) * lax.psum(v, 'x'), mesh=mesh,
                                    in_specs=P('x'), out_specs=P('x'))(b),
            (xn / 40,), order=2, modes=["fwd", "rev"])
vm = jax.vmap(f)(np.stack([xn, 2 * xn]))
close(vm, np.stack([want, 2 * want]))

# errors, in JAX's words
raises(ValueError, "not evenly divisible by the corresponding mesh axis sizes",
       lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(np.zeros((3, 4))))
raises(ValueError, "in_specs refers to 'z'",
       lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P('z'), out_specs=P('x'))(np.zeros((4, 4))))
raises(ValueError, "in_specs entry which is too long",
       lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P('x', None), out_specs=P('x'))(np.zeros(4)))
raises(ValueError, "out_specs refers to 'q'",
       lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P('x'), out_specs=P('q'))(np.zeros(4)))
"""

DATA_PARALLEL_8 = """
# A data-parallel MLP training step with jit + NamedSharding equals the single-device
# step (8 devices: a batch axis over all of them, parameters replicated).
mesh = jax.make_mesh((N,), ('batch',))
rng = np.random.RandomState(0)
params = [(rng.randn(6, 16).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
          (rng.randn(16, 1).astype(np.float32) * 0.3, np.zeros(1, np.float32))]
xs = rng.randn(8 * N, 6).astype(np.float32)
ys = rng.randn(8 * N, 1).astype(np.float32)

def loss(p, x, y):
  h = jnp.tanh(x @ p[0][0] + p[0][1])
  return jnp.mean((h @ p[1][0] + p[1][1] - y) ** 2)

def step(p, x, y):
  g = jax.grad(loss)(p, x, y)
  return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

single = jax.jit(step)(params, xs, ys)
data = NamedSharding(mesh, P('batch'))
repl = NamedSharding(mesh, P())
sharded_step = jax.jit(step, in_shardings=(repl, data, data), out_shardings=repl)
p2 = params
for _ in range(2):
  p2 = sharded_step(p2, jax.device_put(xs, data), jax.device_put(ys, data))
p1 = params
for _ in range(2):
  p1 = jax.jit(step)(p1, xs, ys)
for a, b in zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(p2)):
  close(a, b, 1e-5)
  assert b.sharding == repl
# the same step written with shard_map and pmean of the gradients
def local_step(p, x, y):
  g = jax.grad(loss)(p, x, y)
  g = lax.pmean(g, 'batch')
  return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
sm_step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P('batch'), P('batch')),
                                out_specs=P()))
p3 = sm_step(params, jax.device_put(xs, data), jax.device_put(ys, data))
for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(p3)):
  close(a, b, 1e-5)
# a 2x4 mesh: rows over one axis, features over the other
mesh2 = jax.make_mesh((2, 4), ('a', 'b'))
xn = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
m = jax.jit(lambda u: jnp.tanh(u) @ u.T, in_shardings=NamedSharding(mesh2, P('a', 'b')))(xn)
close(m, np.tanh(xn) @ xn.T, 1e-5)
r = jax.shard_map(lambda b: lax.psum(b, 'b'), mesh=mesh2, in_specs=P('a', 'b'),
                  out_specs=P('a'))(jax.device_put(xn, NamedSharding(mesh2, P('a', 'b'))))
assert str(jax.typeof(r)) == 'float32[8@a,2]', jax.typeof(r)   # typed by out_specs
close(r, sum(np.split(xn, 4, axis=1)))
"""


def test_shardings_and_jit_2x2():
  run_devices(SHARDINGS_2X2, 4)


def test_shard_map_2x2():
  run_devices(SHARD_MAP_2X2, 4)


def test_data_parallel_step_8_devices():
  run_devices(DATA_PARALLEL_8, 8)
