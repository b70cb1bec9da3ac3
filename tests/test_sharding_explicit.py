"""Sharding in types (mesh axes of type Explicit), shard_map's replication check
(check_vma / check_rep, pcast, axis_names / auto) and jax.debug.visualize_array_sharding,
on 8 and 4 CPU devices.

The device count is fixed when the backend starts, so the checks run in subprocesses
(as tests/test_spmd.py), many per subprocess. Values are compared with NumPy (the
unsharded computation); types, shardings, error messages and the drawn tables with
what JAX 0.10.2 gives for the same programs (recorded here as constants)."""
import json

from tests.test_pmap import run_devices as _run_devices

PRELUDE = """
import numpy as np
import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec, P,
                               ShardingTypeError)
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

def T(x):
  return str(jax.typeof(x))
"""


def run_devices(body, n, extra=""):
  return _run_devices(body, n, prelude=PRELUDE + extra)


EXPLICIT_8 = """
# ---- meshes and types ----
mesh = jax.make_mesh((2, 4), ('x', 'y'))
assert mesh.axis_types == (AxisType.Explicit, AxisType.Explicit)     # make_mesh's default
assert repr(mesh) == "Mesh(axis_sizes=(2, 4), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
assert Mesh(mesh.devices, ('x', 'y')).axis_types == (AxisType.Auto, AxisType.Auto)  # Mesh's
assert Mesh(mesh.devices, ('x', 'y'), axis_types=(AxisType.Explicit,) * 2) == mesh
xn = np.arange(32, dtype=np.float32).reshape(8, 4)
put = lambda s, v=xn: jax.device_put(v, NamedSharding(mesh, s))
a, b, c, r = put(P('x', None)), put(P(None, 'y')), put(P('x', 'y')), put(P())
ay = put(P('y', None))
assert T(a) == 'float32[8@x,4]' and T(c) == 'float32[8@x,4@y]' and T(r) == 'float32[8,4]'
assert repr(jax.typeof(c)) == 'ShapedArray(float32[8@x,4@y])'
ts = jax.typeof(a).sharding
assert ts.spec == P('x', None)
assert repr(ts) == ("NamedSharding(mesh=AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, "
                    "Explicit), device_kind=cpu, num_cores=None, platform=cpu), spec=P('x', None))")
assert ts.mesh.explicit_axes == ('x', 'y') and ts.mesh.are_all_axes_explicit
mixed = jax.make_mesh((2, 4), ('a', 'b'), axis_types=(AxisType.Explicit, AxisType.Auto))
mx = jax.device_put(xn, NamedSharding(mixed, P('a', 'b')))
assert T(mx) == 'float32[8@a,4]' and mx.sharding.spec == P('a', 'b')   # Auto axes: not typed
auto = Mesh(mesh.devices, ('x', 'y'))
assert T(jax.device_put(xn, NamedSharding(auto, P('x')))) == 'float32[8,4]'

def check(v, typ, spec, want):
  assert T(v) == typ, (T(v), typ)
  assert v.sharding == NamedSharding(mesh, spec), (v.sharding, spec)
  close(v, want)

# ---- elementwise: specs merge axis by axis ----
check(a + b, 'float32[8@x,4@y]', P('x', 'y'), xn + xn)
check(a + r, 'float32[8@x,4]', P('x', None), 2 * xn)
check(a * 2 + 1, 'float32[8@x,4]', P('x', None), 2 * xn + 1)
check(a + np.ones((8, 4), np.float32), 'float32[8@x,4]', P('x', None), xn + 1)
check(jnp.sin(c), 'float32[8@x,4@y]', P('x', 'y'), np.sin(xn))
check(c.astype(jnp.int32), 'int32[8@x,4@y]', P('x', 'y'), xn.astype(np.int32))
check(a[:, None, :] * jnp.ones((1, 3, 1)), 'float32[8@x,3,4]', P('x', None, None),
      np.broadcast_to(xn[:, None, :], (8, 3, 4)))
raises(ShardingTypeError, "add got incompatible shardings for broadcasting: ('x', None), ('y', None).",
       lambda: a + ay)
raises(ShardingTypeError, "add operation with inputs: f32[8@x,8], f32[8,8@x] produces an illegally "
       "sharded result: f32[8@x,8@x]",
       lambda: put(P('x', None), np.ones((8, 8), np.float32)) + put(P(None, 'x'), np.ones((8, 8), np.float32)))
raises(ShardingTypeError, "select cases must have the same shardings, got [NamedSharding(mesh="
       "AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit), device_kind=cpu, "
       "num_cores=None, platform=cpu), spec=P(None, 'y')), NamedSharding(mesh=AbstractMesh("
       "'x': 2, 'y': 4, axis_types=(Explicit, Explicit), device_kind=cpu, num_cores=None, "
       "platform=cpu), spec=P('x', None))].", lambda: jnp.where(a > 3, a, b))

# ---- reductions ----
check(a.sum(0), 'float32[4]', P(None), xn.sum(0))
check(a.sum(1), 'float32[8@x]', P('x'), xn.sum(1))
check(c.sum(), 'float32[]', P(), xn.sum())
check(c.max(1), 'float32[8@x]', P('x'), xn.max(1))
check(jnp.mean(c, 1), 'float32[8@x]', P('x'), xn.mean(1))
check(jnp.argmax(c, 1), 'int32[8@x]', P('x'), xn.argmax(1))
check(jnp.var(c, 0), 'float32[4@y]', P('y'), xn.var(0))
raises(ShardingTypeError, "Input should be unsharded over the axis being reduced. Got input "
       "type=float32[8@x,4@y] and axis=0", lambda: lax.cumsum(c, 0))
check(lax.cumsum(b, 0), 'float32[8,4@y]', P(None, 'y'), np.cumsum(xn, 0))
raises(ShardingTypeError, "Arguments to sort must be unsharded over the sorting dimension.",
       lambda: jnp.sort(c, axis=1))

# ---- structure ----
check(c.T, 'float32[4@y,8@x]', P('y', 'x'), xn.T)
check(a.reshape(2, 4, 4), 'float32[2@x,4,4]', P('x', None, None), xn.reshape(2, 4, 4))
check(a.reshape(32), 'float32[32@x]', P('x'), xn.reshape(32))
check(c.reshape(32), 'float32[32@(x,y)]', P(('x', 'y')), xn.reshape(32))
check(b.reshape(4, 2, 4), 'float32[4,2,4@y]', P(None, None, 'y'), xn.reshape(4, 2, 4))
check(a.reshape(8, 1, 4), 'float32[8@x,1,4]', P('x', None, None), xn.reshape(8, 1, 4))
v8 = put(P('x'), np.arange(8, dtype=np.float32))
check(v8.reshape(4, 2), 'float32[4@x,2]', P('x', None), np.arange(8.).reshape(4, 2))
for bad, shape in ((c, (8, 2, 2)), (b, (32,)), (b, (4, 8)), (put(P('y'), np.arange(8.)), (2, 4))):
  raises(ShardingTypeError, "This reshape is not supported. Please specify the sharding of the "
         "output via the `out_sharding` argument of jax.lax.reshape.", lambda: bad.reshape(shape))
rs = lax.reshape(c, (8, 2, 2), out_sharding=NamedSharding(mesh, P('x', None, None)))
check(rs, 'float32[8@x,2,2]', P('x', None, None), xn.reshape(8, 2, 2))
check(c[None].squeeze(0), 'float32[8@x,4@y]', P('x', 'y'), xn)
check(jnp.concatenate([a, a], 0), 'float32[16@x,4]', P('x', None), np.concatenate([xn, xn]))
check(jnp.broadcast_to(a, (3, 8, 4)), 'float32[3,8@x,4]', P(None, 'x', None),
      np.broadcast_to(xn, (3, 8, 4)))

# ---- dot_general ----
check(c @ r.T, 'float32[8@x,8]', P('x', None), xn @ xn.T)
check(c @ jnp.ones((4, 3)), 'float32[8@x,3]', P('x', None), xn @ np.ones((4, 3)))
check(b.T @ r, 'float32[4@y,4]', P('y', None), xn.T @ xn)
x3 = np.arange(32, dtype=np.float32).reshape(2, 4, 4)
check(jnp.einsum('bij,bjk->bik', put(P('x'), x3), put(P('x'), x3)), 'float32[2@x,4,4]',
      P('x', None, None), np.einsum('bij,bjk->bik', x3, x3))
raises(ShardingTypeError, "dot_general operation with inputs: f32[8@x,4], f32[4,8@x] produces an "
       "illegally sharded result: f32[8@x,8@x]", lambda: a @ a.T)
raises(ShardingTypeError, "Contracting dimensions are sharded and it is ambiguous how the output "
       "should be sharded. Please specify the output sharding via the `out_sharding` parameter. "
       "Got lhs_contracting_spec=('y',) and rhs_contracting_spec=('y',)", lambda: b @ b.T)
raises(ShardingTypeError, "dot_general requires contracting dimensions to have consistent "
       "sharding, got ('x',) and ('y',).", lambda: lax.dot_general(
           put(P(None, 'x'), np.ones((8, 8), np.float32)),
           put(P('y', None), np.ones((8, 8), np.float32)), (((1,), (0,)), ((), ()))))
xs = NamedSharding(mesh, P('x', None))
check(jnp.dot(c, c.T, out_sharding=xs), 'float32[8@x,8]', P('x', None), xn @ xn.T)
check(jnp.matmul(b, b.T, out_sharding=xs), 'float32[8@x,8]', P('x', None), xn @ xn.T)
check(jnp.einsum('ij,kj->ik', b, b, out_sharding=xs), 'float32[8@x,8]', P('x', None), xn @ xn.T)

# ---- under jit: the type is known while tracing; the output is laid out by it ----
seen = []
def f(u, v):
  w = u + v
  seen.append((T(u), T(w), T(w.sum(0)), T(u @ r.T)))
  return w.sum(0), jnp.tanh(u) @ jnp.ones((4, 2))
o1, o2 = jax.jit(f)(a, b)
assert seen == [('float32[8@x,4]', 'float32[8@x,4@y]', 'float32[4@y]', 'float32[8@x,8]')], seen
check(o1, 'float32[4@y]', P('y'), 2 * xn.sum(0))
check(o2, 'float32[8@x,2]', P('x', None), np.tanh(xn) @ np.ones((4, 2)))
o1, o2 = jax.jit(f)(a, b)   # cached
check(o1, 'float32[4@y]', P('y'), 2 * xn.sum(0))
raises(ShardingTypeError, "add got incompatible shardings", lambda: jax.jit(lambda u, v: u + v)(a, ay))
check(jax.jit(lambda u: jnp.dot(u, u.T, out_sharding=xs))(c), 'float32[8@x,8]', P('x', None), xn @ xn.T)
check(jax.jit(lambda u: lax.cond(True, lambda v: v * 2, lambda v: v + 1, u))(c),
      'float32[8@x,4@y]', P('x', 'y'), 2 * xn)
check(jax.vmap(lambda u: u.sum())(c), 'float32[8@x]', P('x'), xn.sum(1))

check(jax.vmap(lambda u: u * 2, in_axes=1)(c), 'float32[4@y,8@x]', P('y', 'x'), 2 * xn.T)
check(lax.scan(lambda s, _: (s * 2, None), c, None, length=3)[0], 'float32[8@x,4@y]',
      P('x', 'y'), 8 * xn)
check(lax.fori_loop(0, 3, lambda i, v: v * 2, a), 'float32[8@x,4]', P('x', None), 8 * xn)
check(jnp.clip(c, 3., 20.), 'float32[8@x,4@y]', P('x', 'y'), np.clip(xn, 3, 20))
check(jax.jvp(jnp.sin, (c,), (c,))[1], 'float32[8@x,4@y]', P('x', 'y'), np.cos(xn) * xn)

# ---- gradients: a cotangent has its primal's type ----
# eagerly, outside a mesh context, JAX 0.10.2 cannot place the output cotangent it makes
raises(ValueError, "Length of device assignment 1 is not equal to the size of the mesh 8 of aval "
       "f32[]({Explicit: ('x', 'y')}). Please enter your `jit` into a mesh context via "
       "`jax.set_mesh`.", lambda: jax.grad(lambda u: jnp.sum(jnp.sin(u)))(c))
with jax.set_mesh(mesh):
  g = jax.grad(lambda u: jnp.sum(jnp.sin(u)))(c)
check(g, 'float32[8@x,4@y]', P('x', 'y'), np.cos(xn))
check(jax.jit(jax.grad(lambda u: jnp.sum(jnp.sin(u))))(c), 'float32[8@x,4@y]', P('x', 'y'),
      np.cos(xn))
check(jax.vjp(jnp.sin, c)[1](c)[0], 'float32[8@x,4@y]', P('x', 'y'), np.cos(xn) * xn)
check_grads(lambda u: jnp.sum(jnp.tanh(u / 32) * u, axis=1), (c,), order=2, modes=["fwd", "rev"])
# a data-parallel step: batch split over 'x', weights replicated; the weights' gradient
# contracts over the split batch axis (a sum across 'x'), typed as the weights.
wn = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
w = put(P(), wn)
loss = lambda w, x: jnp.mean(jnp.tanh(x @ w) ** 2)
gw = jax.jit(jax.grad(loss))(w, put(P('x', None), xn / 32))
check(gw, 'float32[4,3]', P(None, None), jax.grad(loss)(wn, xn / 32))
def step(w, x):
  return w - 0.1 * jax.grad(loss)(w, x)
w2 = w
for _ in range(3):
  w2 = jax.jit(step)(w2, put(P('x', None), xn / 32))
w1 = wn
for _ in range(3):
  w1 = jax.jit(step)(w1, xn / 32)
check(w2, 'float32[4,3]', P(None, None), w1)

# a training step data-parallel over 'x' and model-parallel (the hidden units) over 'y':
# the second matmul contracts over 'y' and says how its result is laid out. The same
# numbers as one device, the parameters keep their types (as JAX 0.10.2 gives them).
rng = np.random.RandomState(0)
W1n, b1n = rng.randn(6, 16).astype(np.float32) * 0.3, np.zeros(16, np.float32)
W2n = rng.randn(16, 4).astype(np.float32) * 0.3
Xn, Yn = rng.randn(16, 6).astype(np.float32), rng.randint(0, 4, 16)
def mlp_loss(p, x, y, out=None):
  h = jax.nn.relu(x @ p['W1'] + p['b1'])
  logits = jnp.matmul(h, p['W2'], out_sharding=out)
  return -jnp.mean(jnp.sum(jax.nn.one_hot(y, 4) * jax.nn.log_softmax(logits), axis=-1))
def mlp_step(p, x, y, out=None):
  l, g = jax.value_and_grad(mlp_loss)(p, x, y, out)
  return l, jax.tree_util.tree_map(lambda u, v: u - 0.1 * v, p, g)
l1, p1 = jax.jit(mlp_step)({'W1': W1n, 'b1': b1n, 'W2': W2n}, Xn, Yn)
ps = {'W1': put(P(None, 'y'), W1n), 'b1': put(P('y'), b1n), 'W2': put(P('y', None), W2n)}
raises(ShardingTypeError, "Contracting dimensions are sharded and it is ambiguous",
       lambda: jax.jit(mlp_step)(ps, put(P('x', None), Xn), put(P('x'), Yn)))
l2, p2 = jax.jit(mlp_step, static_argnums=3)(ps, put(P('x', None), Xn), put(P('x'), Yn),
                                             NamedSharding(mesh, P('x', None)))
close(l2, l1)
for k, spec in (('W1', P(None, 'y')), ('b1', P('y')), ('W2', P('y', None))):
  close(p2[k], p1[k])
  assert p2[k].sharding == NamedSharding(mesh, spec), (k, p2[k].sharding)
assert [T(p2[k]) for k in ('W1', 'b1', 'W2')] == ['float32[6,16@y]', 'float32[16@y]',
                                                   'float32[16@y,4]']

# ---- the mesh context ----
assert repr(jax.sharding.get_abstract_mesh()) == 'AbstractMesh((), axis_types=())'
assert jax.sharding.get_mesh().empty
raises(ValueError, "Using PartitionSpec when you are not under a mesh context is not allowed. "
       "Please pass a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. "
       "Got P('y',)", lambda: jax.sharding.reshard(a, P('y')))
raises(ValueError, "Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed to device_put",
       lambda: jax.device_put(xn, P('x')))
check(jax.sharding.reshard(a, NamedSharding(mesh, P('y'))), 'float32[8@y,4]', P('y', None), xn)
check(jax.sharding.reshard(xn, NamedSharding(mesh, P('y'))), 'float32[8@y,4]', P('y', None), xn)
with jax.set_mesh(mesh):
  assert repr(jax.sharding.get_abstract_mesh()) == ("AbstractMesh('x': 2, 'y': 4, axis_types="
      "(Explicit, Explicit), device_kind=cpu, num_cores=None, platform=cpu)")
  assert jax.sharding.get_mesh() is mesh
  check(jax.sharding.reshard(a, P(None, 'x')), 'float32[8,4@x]', P(None, 'x'), xn)
  check(jax.jit(lambda u: jax.sharding.reshard(u, P(None, 'x')) * 2)(a), 'float32[8,4@x]',
        P(None, 'x'), 2 * xn)
  check(jnp.zeros((8, 4), out_sharding=P('x')), 'float32[8@x,4]', P('x', None), np.zeros((8, 4)))
  z = jax.device_put(xn, P('x', 'y'))
  check(z, 'float32[8@x,4@y]', P('x', 'y'), xn)
  raises(ValueError, "Resource axis: z of P('z',) is not found in mesh: ('x', 'y').",
         lambda: jax.sharding.reshard(a, P('z')))
assert jax.sharding.get_mesh().empty
jax.set_mesh(mesh)                       # as a plain call: for the rest of the thread
assert jax.sharding.get_mesh() is mesh
jax.set_mesh(None)
assert jax.sharding.get_mesh().empty

# ---- shard_map on Explicit axes: in_specs must match the arguments' types ----
sm = jax.shard_map(lambda u: lax.psum(u, 'x'), mesh=mesh, in_specs=P('x', 'y'),
                   out_specs=P(None, 'y'))
check(sm(c), 'float32[4,4@y]', P(None, 'y'), xn[:4] + xn[4:])
check(jax.jit(sm)(c), 'float32[4,4@y]', P(None, 'y'), xn[:4] + xn[4:])
raises(ValueError, "in_specs passed to shard_map: P('x', None) does not match the specs of the "
       "input: P('x', 'y') for arg: float32[8@x,4@y]. `in_specs` is an optional argument",
       lambda: jax.shard_map(lambda u: u, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(c))
raises(ValueError, "does not match the specs of the input: P(None, None) for arg: float32[8,4]",
       lambda: sm(xn))
check(jax.shard_map(lambda u: u * 2, mesh=mesh, out_specs=P('x', 'y'))(c), 'float32[8@x,4@y]',
      P('x', 'y'), 2 * xn)                                    # in_specs from the types
check(jax.shard_map(lambda u: u * 2, mesh=mesh, in_specs=P(), out_specs=P())(xn), 'float32[8,4]',
      P(), 2 * xn)

# ---- auto_axes: axes left to the partitioner inside a function ----
inner = []
def mm(u):
  inner.append(T(u))
  return u @ u.T
with jax.set_mesh(mesh):
  check(jax.sharding.auto_axes(mm, out_sharding=P('x', None))(c), 'float32[8@x,8]',
        P('x', None), xn @ xn.T)
  check(jax.jit(jax.sharding.auto_axes(mm, out_sharding=P(None, 'y')))(c), 'float32[8,8@y]',
        P(None, 'y'), xn @ xn.T)
  raises(ShardingTypeError, "produces an illegally sharded result: f32[8@x,8@x]",
         lambda: jax.sharding.auto_axes(mm, axes='y', out_sharding=P('x', None))(c))
  check(jax.reshard(a, P(None, 'y')), 'float32[8,4@y]', P(None, 'y'), xn)
assert inner == ['float32[8,4]', 'float32[8,4]', 'float32[8@x,4]'], inner
# explicit_axes: the reverse, on a mesh of Auto axes
amesh = Mesh(mesh.devices, ('x', 'y'))
inner = []
def colsum(u):
  r = u * 2
  inner.append((T(u), T(r), T(r.sum(0))))
  return r.sum(0)
with jax.set_mesh(amesh):
  ac = jax.device_put(xn, NamedSharding(amesh, P('x', 'y')))
  for fn in (jax.sharding.explicit_axes(colsum, in_sharding=P('x', 'y')),
             jax.jit(jax.sharding.explicit_axes(colsum, in_sharding=P('x', 'y')))):
    o = fn(ac)
    assert T(o) == 'float32[4]' and o.sharding == NamedSharding(amesh, P('y')), o.sharding
    close(o, 2 * xn.sum(0))
  close(jax.sharding.explicit_axes(colsum, axes='x', in_sharding=P('x', None))(xn), 2 * xn.sum(0))
  raises(ShardingTypeError, "produces an illegally sharded result: f32[8@x,8@x]",
         lambda: jax.sharding.explicit_axes(lambda w: w @ w.T, in_sharding=P('x', None))(xn))
assert inner == [('float32[8@x,4@y]', 'float32[8@x,4@y]', 'float32[4@y]')] * 2 + [
    ('float32[8@x,4]', 'float32[8@x,4]', 'float32[4]')], inner
assert jax.P is PartitionSpec

# ---- jax.debug.visualize_array_sharding: JAX's tables ----
import contextlib, io
def drawn(v, **kw):
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    jax.debug.visualize_array_sharding(v, **kw)
  return buf.getvalue()
auto2 = Mesh(mesh.devices, ('x', 'y'))
cases = {
    'x,y': jax.device_put(xn, NamedSharding(auto2, P('x', 'y'))),
    'x,None': a, 'None,y': b, 'repl': r,
    '1d x': put(P('x'), np.arange(8.)), '1d y': put(P('y'), np.arange(8.)),
    'single 1d': jnp.arange(8.), 'single 2d': jnp.ones((8, 4)),
    'pmap': jax.pmap(lambda v: v)(np.ones((8, 3), np.float32)),
}
for k, v in cases.items():
  assert drawn(v) == TABLES[k] + "\\n", (k, drawn(v), TABLES[k])
assert drawn(c, scale=2) == TABLES['x,y scale'] + "\\n"
raises(ValueError, "`visualize_sharding` only works for shapes with 1 and 2 dimensions.",
       lambda: jax.debug.visualize_array_sharding(jnp.ones((2, 2, 2))))
got = []
jax.debug.inspect_array_sharding({'u': c}, callback=got.append)
@jax.jit
def insp(u, v):
  jax.debug.inspect_array_sharding(u, callback=got.append)
  return u * 2 + v
close(insp(c, a), 2 * xn + xn)
close(jax.jit(lambda u: (jax.debug.inspect_array_sharding(u, callback=lambda s: got.append(repr(s))), u + 1)[1])(xn), xn + 1)
# Under jit JAX reports the partitioner's layout over the mesh's devices and names,
# its axes Auto.
assert got[0] == c.sharding and got[1] == NamedSharding(Mesh(mesh.devices, ('x', 'y')),
                                                       P('x', 'y')), got
assert got[2] == 'GSPMDSharding({replicated}, memory_kind=device)', got
"""

TABLES = {
    'x,y': '┌───────┬───────┬───────┬───────┐\n│       │       │       │       │\n│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n│       │       │       │       │\n│       │       │       │       │\n├───────┼───────┼───────┼───────┤\n│       │       │       │       │\n│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n│       │       │       │       │\n│       │       │       │       │\n└───────┴───────┴───────┴───────┘',
    'x,None': '┌───────────┐\n│           │\n│CPU 0,1,2,3│\n│           │\n│           │\n├───────────┤\n│           │\n│CPU 4,5,6,7│\n│           │\n│           │\n└───────────┘',
    'None,y': '┌───────┬───────┬───────┬───────┐\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│CPU 0,4│CPU 1,5│CPU 2,6│CPU 3,7│\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n└───────┴───────┴───────┴───────┘',
    '1d x': '┌───────────┬───────────┐\n│CPU 0,1,2,3│CPU 4,5,6,7│\n└───────────┴───────────┘',
    '1d y': '┌───────┬───────┬───────┬───────┐\n│CPU 0,4│CPU 1,5│CPU 2,6│CPU 3,7│\n└───────┴───────┴───────┴───────┘',
    'single 1d': '┌───────┐\n│ CPU 0 │\n└───────┘',
    'single 2d': '┌──────────┐\n│          │\n│          │\n│          │\n│          │\n│  CPU 0   │\n│          │\n│          │\n│          │\n│          │\n└──────────┘',
    'repl': '┌───────────────────┐\n│                   │\n│                   │\n│                   │\n│                   │\n│CPU 0,1,2,3,4,5,6,7│\n│                   │\n│                   │\n│                   │\n│                   │\n└───────────────────┘',
    'pmap': '┌───────┐\n│ CPU 0 │\n├───────┤\n│ CPU 1 │\n├───────┤\n│ CPU 2 │\n├───────┤\n│ CPU 3 │\n├───────┤\n│ CPU 4 │\n├───────┤\n│ CPU 5 │\n├───────┤\n│ CPU 6 │\n├───────┤\n│ CPU 7 │\n└───────┘',
    'x,y scale': '┌───────┬───────┬───────┬───────┐\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n├───────┼───────┼───────┼───────┤\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n│       │       │       │       │\n└───────┴───────┴───────┴───────┘',
}

SHARD_MAP_CHECKS_4 = """
from functools import partial
from tracejax.experimental.shard_map import shard_map as exp_shard_map
mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('x', 'y'))
xn = np.arange(16, dtype=np.float32).reshape(4, 4)
sm = lambda f, i, o, **kw: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)
HEAD = ("shard_map applied to the function 'body' was given out_specs which require replication "
        "which can't be statically inferred given the mesh:\\n\\nThe mesh given has shape (2, 2) "
        "with corresponding axis names ('x', 'y').\\n\\n")
TAIL = ("\\n\\nCheck if these output values are meant to be replicated over those mesh axes. If "
        "not, consider revising the corresponding out_specs entries. If so, consider disabling "
        "the check by passing the check_vma=False argument to `jax.shard_map`.")
NOT_X = ("out_specs is P() which implies that the corresponding output value is only varying "
         "across mesh axes {} and not {x}, but it was inferred to be possibly varying over {x}")

def body(b):
  return b * 2
raises(ValueError, HEAD + NOT_X + TAIL, lambda: sm(body, P('x'), P())(xn))
def body(b):
  return b * 2
raises(ValueError, HEAD + "out_specs is P(None, 'y') which implies that the corresponding output "
       "value is replicated across mesh axis 'x', but could not infer replication over any "
       "axes" + TAIL, lambda: sm(body, P('x', 'y'), P(None, 'y'))(xn))
def body(b):
  return lax.psum(b, 'x')
raises(ValueError, HEAD + "out_specs is P() which implies that the corresponding output value is "
       "only varying across mesh axes {} and not {y}, but it was inferred to be possibly varying "
       "over {y}" + TAIL, lambda: sm(body, P('x', 'y'), P())(xn))
# two outputs: one bullet each
def body(b):
  return b, b + 1
raises(ValueError, "* out_specs[0] is P() which implies", lambda: sm(body, P('x'), (P(), P()))(xn))
# under jit too (the check runs while tracing)
raises(ValueError, NOT_X, lambda: jax.jit(sm(lambda b: b * 2, P('x'), P()))(xn))
# psum, pmean, pmax, pmin make a value invariant over their axes; collectives that move data
# (all_gather, ppermute), axis_index and pcast(to='varying') make it varying
close(sm(lambda b: lax.psum(b, 'x'), P('x'), P())(xn), xn[:2] + xn[2:])
close(sm(lambda b: lax.pmax(b, 'x'), P('x'), P())(xn), np.maximum(xn[:2], xn[2:]))
close(sm(lambda b: lax.pmean(b, ('x', 'y')), P('x', 'y'), P())(xn),
      (xn[:2, :2] + xn[:2, 2:] + xn[2:, :2] + xn[2:, 2:]) / 4)
close(sm(lambda b: lax.psum(b, 'x'), P(), P())(xn), 2 * xn)    # psum of an invariant value
close(sm(lambda b: b * 2, P(), P())(xn), 2 * xn)               # never varying
close(jax.jit(sm(lambda b: lax.psum(jnp.sin(b), 'x') * 2, P('x'), P()))(xn),
      2 * (np.sin(xn[:2]) + np.sin(xn[2:])), 1e-5)
for fn in (lambda b: lax.all_gather(b, 'x', tiled=True), lambda b: b * 0 + lax.axis_index('x'),
           lambda b: lax.ppermute(b, 'x', [(0, 1), (1, 0)]),
           lambda b: lax.pcast(b, 'x', to='varying')):
  raises(ValueError, NOT_X, lambda: sm(fn, P(), P())(xn))      # the input: invariant
close(sm(lambda b: lax.pcast(b, 'x', to='varying'), P(), P('x'))(xn), np.concatenate([xn, xn]))
raises(ValueError, "Got unexpected `to` value. Allowed `to` values are:",
       lambda: sm(lambda b: lax.pcast(b, 'x', to='foo'), P('x'), P())(xn))
raises(TypeError, "must be a tuple or a str", lambda: lax.pcast(xn, {'x'}, to='varying'))
# pcast is the identity on values and derivatives
check_grads(lambda v: sm(lambda b: lax.psum(jnp.sin(lax.pcast(b, 'x', to='varying')) *
                                            lax.axis_index('x'), 'x'), P(), P())(v),
            (xn / 16,), order=2, modes=["fwd", "rev"])
close(jax.grad(lambda v: sm(lambda b: lax.psum(jnp.sum(lax.pcast(b, 'x', to='varying') ** 2),
                                               'x'), P(), P())(v))(xn), 4 * xn)
# check_vma=False (and 2020's check_rep=False): no check; the value is member 0's, as in JAX
close(sm(lambda b: b * 2, P('x'), P(), check_vma=False)(xn), xn[:2] * 2)
close(exp_shard_map(lambda b: b * 2, mesh, in_specs=P('x'), out_specs=P(), check_rep=False)(xn),
      xn[:2] * 2)
raises(ValueError, "replicated across mesh axis 'x'", lambda: exp_shard_map(
    lambda b: b * 2, mesh, in_specs=P('x', 'y'), out_specs=P(None, 'y'))(xn))

# axis_names (today) / auto (the experimental spelling): the other axes are not manual
close(sm(lambda b: b * lax.axis_index('x'), P('x'), P('x'), axis_names={'x'})(xn),
      np.concatenate([0 * xn[:2], xn[2:]]))
close(jax.jit(sm(lambda b: lax.psum(b, 'x'), P('x'), P(), axis_names={'x'}))(xn), xn[:2] + xn[2:])
close(exp_shard_map(lambda b: lax.psum(b, 'x'), mesh, in_specs=P('x'), out_specs=P(),
                    auto=frozenset({'y'}))(xn), xn[:2] + xn[2:])
raises(ValueError, "shard_map in_specs argument must refer to an axis marked as manual "
       "(frozenset({'x'})), but:\\n\\n  in_specs refers to 'y'",
       lambda: sm(lambda b: b, P('y'), P('y'), axis_names={'x'})(xn))
raises(NameError, "Found an unbound axis name: y. To fix this, please call pvary under `jax.shard_map`.", lambda: sm(lambda b: lax.psum(b, 'y'), P('x'), P('x'),
                                                     axis_names={'x'})(xn))
close(jax.grad(lambda v: jnp.sum(sm(lambda b: jnp.sin(b) * 2, P('x'), P('x'),
                                    axis_names={'x'})(v)))(xn), 2 * np.cos(xn))
"""


def test_explicit_sharding_8_devices():
  run_devices(EXPLICIT_8, 8, extra=f"TABLES = {json.dumps(TABLES)}\n")


def test_shard_map_replication_checks_4_devices():
  run_devices(SHARD_MAP_CHECKS_4, 4)


# More primitives' sharding rules, against JAX 0.10.2's types and messages for the same
# programs (recorded here; values against NumPy).
GATHER_MSG = ("Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
              "indexing as out sharding could not be resolved unambiguously (or would require "
              "collectives on inputs). Got operand=ShapedArray(float32[8@x,4]), indices=")
SCATTER_MSG = ("Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
               "the scatter update as out sharding could not be resolved unambiguously (or would "
               "require collectives on inputs). Got operand=ShapedArray(float32[8@x,4]), "
               "indices=ShapedArray(int32[1]), updates=ShapedArray(float32[4])")
RULES_8 = """
mesh = jax.make_mesh((2, 4), ('x', 'y'))
xn = np.arange(32, dtype=np.float32).reshape(8, 4)
put = lambda s, v=xn: jax.device_put(v, NamedSharding(mesh, s))
a, b, c = put(P('x', None)), put(P(None, 'y')), put(P('x', 'y'))
J = jax.jit
rs = lambda v, s: jax.sharding.reshard(v, NamedSharding(mesh, s))
def check(v, typ, want):
  assert T(v) == typ, (T(v), typ)
  close(v, want)
idx = jnp.array([0, 2])

# ---- indexing: a concrete sharded array is read by a gather (JAX's route) ----
raises(ShardingTypeError, GATHER_MSG + "ShapedArray(int32[1])", lambda: a[0])
raises(ShardingTypeError, GATHER_MSG + "ShapedArray(int32[1])", lambda: a[1:3])
raises(ShardingTypeError, GATHER_MSG + "ShapedArray(int32[2,1])", lambda: a[idx])
raises(ShardingTypeError, "could not be resolved unambiguously", lambda: c[:, 0])
check(b[0], 'float32[4@y]', xn[0])
check(a[:, 1], 'float32[8@x]', xn[:, 1])
check(a[:, 1:3], 'float32[8@x,2]', xn[:, 1:3])
check(b[2:6], 'float32[4,4@y]', xn[2:6])
check(b[idx], 'float32[2,4@y]', xn[[0, 2]])
check(a[:, idx], 'float32[8@x,2]', xn[:, [0, 2]])
# under jit a static index is a slice: one that leaves a split axis indivisible is an error
raises(ShardingTypeError, "slicing on sharded dims where out dim (1) is not divisible by mesh "
       "axes (2) with spec (x) is not implemented. Got input type=f32[8@x,4] and output "
       "shape=(1, 4)", lambda: J(lambda u: u[0])(a))
raises(ShardingTypeError, "slicing on sharded dims where out dim (1) is not divisible by mesh "
       "axes (4) with spec (y) is not implemented. Got input type=f32[8@x,4@y] and output "
       "shape=(8, 1)", lambda: J(lambda u: u[:, 0])(c))
raises(ShardingTypeError, "dynamic_slice on sharded dims where out dim (1) is not divisible",
       lambda: J(lambda u, i: u[i])(a, 1))
check(J(lambda u: u[2:4])(a), 'float32[2@x,4]', xn[2:4])
check(J(lambda u, i: u[i])(b, 1), 'float32[4@y]', xn[1])
check(lax.dynamic_slice(b, (2, 0), (2, 4)), 'float32[2,4@y]', xn[2:4])
check(lax.slice(a, (2, 0), (8, 4)), 'float32[6@x,4]', xn[2:])
raises(ShardingTypeError, "padding on sharded dims where out dim (9) is not divisible by mesh "
       "axes (2) with spec (x) is not implemented. Got input type=f32[8@x,4] and output "
       "shape=(9, 4)", lambda: lax.pad(a, 0., ((1, 0, 0), (0, 0, 0))))
check(lax.pad(a, 0., ((1, 1, 0), (0, 0, 0))), 'float32[10@x,4]', np.pad(xn, ((1, 1), (0, 0))))

# ---- scatter (.at[]) under jit: updates are laid out as x[idx] ----
raises(ShardingTypeError, SCATTER_MSG, lambda: J(lambda u: u.at[0].set(1.))(a))
check(J(lambda u: u.at[0].set(1.))(b), 'float32[8,4@y]', np.concatenate([np.ones((1, 4)), xn[1:]]))
check(J(lambda u: u.at[:, 1].set(1.))(a), 'float32[8@x,4]',
      np.where(np.arange(4) == 1, 1., xn))
raises(ShardingTypeError, "Got operand=ShapedArray(float32[8,4@y]), indices=ShapedArray(int32[1]), "
       "updates=ShapedArray(float32[8])", lambda: J(lambda u: u.at[:, 1].set(1.))(b))
raises(ShardingTypeError, "indices=ShapedArray(int32[2,1]), updates=ShapedArray(float32[2,4])",
       lambda: J(lambda u: u.at[idx].add(1.))(a))
want = xn.copy(); want[[0, 2]] += 1
check(J(lambda u: u.at[idx].add(1.))(b), 'float32[8,4@y]', want)
check(J(lambda u: u.at[idx].add(jnp.ones((2, 4))))(b), 'float32[8,4@y]', want)
want = xn.copy(); want[:, [0, 2]] += 1
check(J(lambda u: u.at[:, idx].add(1.))(a), 'float32[8@x,4]', want)
raises(ValueError, "Incompatible types for broadcasting: input type=float32[2@x,4] and requested "
       "type=float32[2,4@y]", lambda: b.at[idx].add(put(P('x', None), np.ones((2, 4), np.float32))))
want = xn.copy(); want[[0, 2]] += 1
check(b.at[idx].add(put(P(None, 'y'), np.ones((2, 4), np.float32))), 'float32[8,4@y]', want)

# ---- dynamic_update_slice: the update must have the operand's sharding ----
raises(ShardingTypeError, "dynamic_update_slice operand sharding must be equal to update sharding, "
       "got operand sharding float32[8@x,4]({Explicit: ('x', 'y')}) and update sharding "
       "float32[2,4]({}).", lambda: lax.dynamic_update_slice(a, jnp.ones((2, 4)), (2, 0)))
raises(ShardingTypeError, "got operand sharding float32[8,4@y]({Explicit: ('x', 'y')}) and update "
       "sharding float32[2,4@x]({Explicit: ('x', 'y')}).", lambda: lax.dynamic_update_slice(
           b, put(P(None, 'x'), np.ones((2, 4), np.float32)), (2, 0)))
want = xn.copy(); want[2:4] = 1
check(lax.dynamic_update_slice(b, put(P(None, 'y'), np.ones((2, 4), np.float32)), (2, 0)),
      'float32[8,4@y]', want)

# ---- creation from a typed array keeps its sharding ----
check(jnp.zeros_like(c), 'float32[8@x,4@y]', np.zeros((8, 4)))
check(jnp.ones_like(a), 'float32[8@x,4]', np.ones((8, 4)))
check(jnp.full_like(b, 3.), 'float32[8,4@y]', np.full((8, 4), 3.))
check(jnp.zeros_like(c, dtype=jnp.int32), 'int32[8@x,4@y]', np.zeros((8, 4)))
check(jnp.zeros_like(c, shape=(3,)), 'float32[3]', np.zeros(3))
assert c.sharding == jnp.zeros_like(c).sharding
with jax.set_mesh(mesh):
  check(J(jnp.zeros_like)(c), 'float32[8@x,4@y]', np.zeros((8, 4)))

# ---- cumulative, sort, top_k, bitcast ----
raises(ShardingTypeError, "Input should be unsharded over the axis being reduced. Got input "
       "type=float32[8@x,4@y] and axis=0", lambda: jnp.cumsum(c, 0))
raises(ShardingTypeError, "Got input type=float32[8@x,4] and axis=0", lambda: jnp.cumprod(a, 0))
check(jnp.cumsum(a, 1), 'float32[8@x,4]', np.cumsum(xn, 1))
check(jnp.argsort(-a, 1), 'int32[8@x,4]', np.argsort(-xn, 1))
v, i = lax.top_k(a, 2)
check(v, 'float32[8@x,2]', -np.sort(-xn, 1)[:, :2]); check(i, 'int32[8@x,2]', np.argsort(-xn, 1)[:, :2])
raises(ShardingTypeError, "The input should be unsharded over the axis along which to compute the "
       "top_k values. Got input type=float32[8,4@y] and axis=1", lambda: lax.top_k(b, 2))
check(lax.bitcast_convert_type(c, jnp.int32), 'int32[8@x,4@y]', xn.view(np.int32))
check(lax.bitcast_convert_type(c, jnp.int16), 'int16[8@x,4@y,2]', xn.view(np.int16).reshape(8, 4, 2))

# ---- convolution (batch-split input, replicated kernel) and windows ----
x4 = np.arange(8 * 3 * 16, dtype=np.float32).reshape(8, 3, 4, 4) / 100
w4 = np.linspace(-1, 1, 5 * 3 * 9, dtype=np.float32).reshape(5, 3, 3, 3)
ref = lax.conv_general_dilated(x4, w4, (1, 1), 'SAME')
check(lax.conv_general_dilated(put(P('x'), x4), w4, (1, 1), 'SAME'), 'float32[8@x,5,4,4]', ref)
check(lax.conv_general_dilated(put(P(('x', 'y')), x4), w4, (1, 1), 'SAME'),
      'float32[8@(x,y),5,4,4]', ref)
check(J(lambda u: lax.conv_general_dilated(u, w4, (2, 2), 'SAME'))(put(P('x'), x4)),
      'float32[8@x,5,2,2]', lax.conv_general_dilated(x4, w4, (2, 2), 'SAME'))
for lhs, rhs in ((put(P(None, 'x'), x4[:, :2]), w4[:, :2]),
                 (put(P('x'), x4), put(P('x'), w4[:4]))):
  raises(ShardingTypeError, "Please specify the output sharding via `out_sharding` parameter of "
         "`conv_general_dilated`", lambda: lax.conv_general_dilated(lhs, rhs, (1, 1), 'SAME'))
check(lax.reduce_window(a, 0., lax.add, (1, 2), (1, 2), 'VALID'), 'float32[8@x,2]',
      xn.reshape(8, 2, 2).sum(2))
check(lax.reduce_window(b, -jnp.inf, lax.max, (2, 1), (2, 1), 'VALID'), 'float32[4,4@y]',
      xn.reshape(4, 2, 4).max(1))

# ---- control flow: results typed by the bodies; carries and branches must agree ----
check(lax.while_loop(lambda v: v.sum() < 1000, lambda v: v * 2, c), 'float32[8@x,4@y]', 4 * xn)
raises(TypeError, "while_loop body function carry input and carry output must have equal types, "
       "but they differ:\\n\\nThe input carry v has type float32[8@x,4@y] but the corresponding "
       "output carry component has type float32[8@x,4].\\n\\nRevise the function so that all "
       "output types match the corresponding input types.",
       lambda: lax.while_loop(lambda v: v.sum() < 1000, lambda v: rs(v * 2, P('x')), c))
raises(TypeError, "scan body function carry input and carry output must have equal types, but "
       "they differ:\\n\\nThe input carry s has type float32[8@x,4] but the corresponding output "
       "carry component has type float32[8,4].",
       lambda: lax.scan(lambda s, _: (rs(s * 2, P()), None), a, None, length=3))
raises(TypeError, "The input carry component loop_carry[1] has type float32[8@x,4] but the "
       "corresponding output carry component has type float32[8@y,4].",
       lambda: lax.fori_loop(0, 3, lambda i, v: rs(v * 2, P('y')), a))
raises(TypeError, "cond branches must have equal output types but they differ.\\n\\ntrue_fun is "
       "<lambda> at", lambda: J(lambda p, u: lax.cond(p, lambda v: v * 2,
                                                     lambda v: rs(v, P('x')), u))(True, c))
raises(TypeError, "The output of true_fun has type float32[8@x,4@y] but the corresponding output "
       "of false_fun has type float32[8,4].\\n\\nRevise true_fun and/or false_fun so that all "
       "output types match.", lambda: lax.cond(True, lambda v: v * 2, lambda v: rs(v, P()), c))
raises(TypeError, "switch branches must have equal output types but they differ.", lambda: J(
    lambda i, u: lax.switch(i, [lambda v: v * 2, lambda v: rs(v, P('y'))], u))(0, c))
# a branch value of no mesh (jnp.zeros) agrees with any: the result takes the typed one's
for args in ((lambda v: v * 2, lambda v: jnp.zeros((8, 4))),
             (lambda v: jnp.zeros((8, 4)), lambda v: v * 2)):
  check(J(lambda p, u: lax.cond(p, *args, u))(False, c), 'float32[8@x,4@y]',
        np.zeros((8, 4)) if args[1](xn).sum() == 0 else 2 * xn)
s, ys = lax.scan(lambda s, x: (s + x, s * x), put(P('y'), np.ones(4, np.float32)), b)
check(s, 'float32[4@y]', 1 + xn.sum(0))
check(ys, 'float32[8,4@y]', np.stack([(1 + xn[:k].sum(0)) * xn[k] for k in range(8)]))
s, ys = lax.scan(lambda s, _: (s * 2, s.sum(0)), c, None, length=3)
check(s, 'float32[8@x,4@y]', 8 * xn)
check(ys, 'float32[3,4@y]', np.stack([2 ** k * xn.sum(0) for k in range(3)]))
raises(ValueError, "0th dimension of all xs should be replicated. Got P('x', 'y')",
       lambda: lax.scan(lambda s, x: (s + x.sum(), x * 2), 0., c))
"""


def test_explicit_sharding_rules_8_devices():
  run_devices(RULES_8, 8, extra=f"GATHER_MSG = {GATHER_MSG!r}\nSCATTER_MSG = {SCATTER_MSG!r}\n")
