"""Sharding leftovers checked against JAX 0.10.2 on 8 CPU devices (2x4 and 2x2 meshes):
`jax.debug.inspect_array_sharding` under `jit` (the partitioner's layout, reported while
the program compiles), `jax.typeof(x).sharding` of arrays on Auto meshes,
`take_along_axis` on split operands (JAX's gather with batching dimensions), the
`sharding=`/`device=`/`out_sharding=` forms of the creation functions, the max-pool
gradient primitives on Explicit-typed operands, typed cotangents, and a battery of
small programs whose values, `typeof` strings and output shardings were recorded from
JAX 0.10.2 (constants below).

The device count is fixed when the backend starts, so the multi-device checks run in
one subprocess (as in tests/test_sharding_explicit.py); the single-device checks of
`take_along_axis` (values, jit, gradients, vmap) run here."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.test_util import check_grads
from tests.test_sharding_explicit import run_devices


# ---- take_along_axis: one gather with batching dimensions (single device) ----

TAKE_CASES = [((8, 8), (8, 8), 1), ((8, 8), (3, 8), 0), ((8, 1), (8, 3), 1),
              ((1, 8), (4, 8), 0), ((8, 4, 2), (1, 4, 1), 2), ((8, 4, 2), (8, 1, 3), 2),
              ((1, 8), (1, 3), 1), ((8, 1, 2), (1, 4, 2), 2), ((2, 3, 4), (2, 3, 4), -2),
              ((5,), (3,), 0), ((3, 4), (3, 2), None)]


@pytest.mark.parametrize("ashape,ishape,axis", TAKE_CASES)
def test_take_along_axis_shapes(ashape, ishape, axis):
  rng = np.random.RandomState(0)
  a = rng.randn(*ashape).astype(np.float32)
  n = a.size if axis is None else ashape[axis]
  i = rng.randint(-n, n, size=ishape).astype(np.int32)
  want = (np.take_along_axis(a, i, axis) if axis is not None else
          np.take_along_axis(a.ravel(), i.ravel(), 0))
  f = lambda a, i: jnp.take_along_axis(a, i, axis=axis)
  np.testing.assert_allclose(f(a, i), want)
  np.testing.assert_allclose(jax.jit(f)(a, i), want)
  check_grads(lambda a: f(a, i), (a,), 2, modes=("fwd", "rev"))
  batched = jax.vmap(f)(np.stack([a, a + 1]), np.stack([i, i]))
  np.testing.assert_allclose(batched[1], want + 1)


def test_take_along_axis_modes():
  x = np.arange(4.)
  np.testing.assert_allclose(jnp.take_along_axis(x, np.array([0, 7]), 0), [0., np.nan])
  np.testing.assert_allclose(jnp.take_along_axis(x, np.array([0, 7]), 0, mode="clip"),
                             [0., 3.])
  np.testing.assert_allclose(jnp.take_along_axis(x, np.array([-1, 1]), 0), [3., 1.])


# ---- everything on 8 devices, in one subprocess ----

AUDIT_8 = r"""
from tracejax.sharding import Mesh, AxisType
E = jax.make_mesh((2, 4), ('x', 'y'))
A = jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
A2 = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Auto,) * 2,
                   devices=jax.devices()[:4])
AUTO = lambda m: Mesh(m.devices, m.axis_names)   # the mesh JAX reports layouts over
rng = np.random.RandomState(0)
xn = rng.randn(8, 8).astype(np.float32)
put = lambda v, mesh, spec: jax.device_put(v, NamedSharding(mesh, spec))

# ---- 1. inspect_array_sharding under jit: the partitioner's layout ----
got = []
x = put(xn[:4, :4], A2, P('x', 'y'))
@jax.jit
def f(v):
  jax.debug.inspect_array_sharding(v, callback=lambda s: got.append(('v', s)))
  s0 = v.sum(0)
  jax.debug.inspect_array_sharding(s0, callback=lambda s: got.append(('s0', s)))
  return s0
out = f(x)
close(out, xn[:4, :4].sum(0))
assert got == [('v', NamedSharding(A2, P('x', 'y'))), ('s0', NamedSharding(A2, P('y')))], got
assert repr(got[1][1]) == ("NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Auto, Auto)), "
                           "spec=P('y',), memory_kind=device)"), got
f(x); assert len(got) == 2          # compiled once: no callback on later calls
# Explicit axes: the same, over the mesh's names with Auto axes (as JAX reports them)
got = []
c = put(xn, E, P('x', 'y'))
jax.jit(lambda v: (jax.debug.inspect_array_sharding(v, callback=got.append), v * 2)[1])(c)
assert got == [NamedSharding(AUTO(E), P('x', 'y'))], got
# one device: replicated, at lowering; shard_map bodies: P() over the mesh
got = []
jax.jit(lambda v: (jax.debug.inspect_array_sharding(v, callback=got.append), v)[1])(np.ones(3))
assert repr(got[0]) == "GSPMDSharding({replicated}, memory_kind=device)", got
m1 = Mesh(np.array(jax.devices()), ('d',))
got = []
sm = jax.jit(jax.shard_map(lambda v: (jax.debug.inspect_array_sharding(v, callback=got.append), v)[1],
                           mesh=m1, in_specs=P('d'), out_specs=P('d')))
close(sm(np.arange(8.)), np.arange(8.))
assert got == [NamedSharding(m1, P())], got
# in_shardings give the mesh; AOT: the callback runs when compiling, not lowering
got = []
h = jax.jit(lambda v: (jax.debug.inspect_array_sharding(jnp.sin(v), callback=got.append), v * 2)[1],
            in_shardings=NamedSharding(m1, P('d')))
close(h(np.arange(8.)), 2 * np.arange(8.))
assert got == [NamedSharding(m1, P('d'))], got
got = []
lo = jax.jit(lambda v: (jax.debug.inspect_array_sharding(v, callback=got.append), v)[1]).lower(
    put(np.arange(8.), m1, P('d')))
assert got == []
lo.compile()
assert got == [NamedSharding(m1, P('d'))], got
# under grad and vmap (inside jit)
got = []
xa = put(xn[:4, :4], A2, P('x', 'y'))
def loss(v):
  jax.debug.inspect_array_sharding(v, callback=got.append)
  return jnp.sum(v ** 2)
close(jax.jit(jax.grad(loss))(xa), 2 * xn[:4, :4])
close(jax.jit(jax.vmap(loss))(xa), (xn[:4, :4] ** 2).sum(1))
assert got == [NamedSharding(A2, P('x', 'y'))] * 2, got

# ---- 2. typeof(x).sharding on Auto meshes (and pmap results) ----
t = jax.typeof(xa)
assert str(t) == 'float32[4,4]' and repr(t) == 'ShapedArray(float32[4,4])'
assert repr(t.sharding) == ("NamedSharding(mesh=AbstractMesh('x': 2, 'y': 2, axis_types=(Auto, "
                            "Auto), device_kind=cpu, num_cores=None, platform=cpu), "
                            "spec=P(None, None))"), repr(t.sharding)
assert t.sharding.mesh.axis_types == (AxisType.Auto,) * 2 and t.sharding.mesh.are_all_axes_auto
pm = jax.pmap(lambda a: a)(np.ones((8, 2), np.float32))
assert repr(jax.typeof(pm).sharding.mesh) == ("AbstractMesh('_internal_pmap_axis_name': 8, "
                                             "axis_types=(Auto,), device_kind=cpu, "
                                             "num_cores=None, platform=cpu)")
assert jax.typeof(jnp.ones(3)).sharding.mesh.empty if hasattr(
    jax.typeof(jnp.ones(3)).sharding.mesh, 'empty') else True
assert T(put(xn, E, P('x'))) == 'float32[8@x,8]'

# ---- 3. take_along_axis on split operands: JAX's gather rule ----
idx = np.argsort(-xn, axis=1).astype(np.int32)
tal = lambda a, i, ax: jax.jit(lambda a, i: jnp.take_along_axis(a, i, axis=ax))(a, i)
want1, want0 = np.take_along_axis(xn, idx, 1), np.take_along_axis(xn, idx, 0)
r = tal(put(xn, E, P('x', None)), idx, 1)
assert T(r) == 'float32[8@x,8]' and r.sharding.spec == P('x', None); close(r, want1)
r = tal(put(xn, E, P('x', None)), put(idx, E, P('x', None)), 1)
assert T(r) == 'float32[8@x,8]'; close(r, want1)
r = tal(put(xn, E, P(None, 'y')), put(idx, E, P(None, 'y')), 0)
assert T(r) == 'float32[8,8@y]'; close(r, want0)
r = tal(put(xn, E, P()), put(idx, E, P(None, 'y')), 0)
assert T(r) == 'float32[8,8@y]'; close(r, want0)
r = jnp.take_along_axis(put(np.ones((8, 4, 2), np.float32), E, P('x', 'y')),
                        np.zeros((8, 4, 1), np.int32), axis=2)
assert T(r) == 'float32[8@x,4@y,1]'
msg = ("Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather indexing "
       "as out sharding could not be resolved unambiguously (or would require collectives on "
       "inputs). Got operand=ShapedArray(float32[8@x,8]), indices=ShapedArray(int32[8@x,8,1])")
raises(ShardingTypeError, msg, lambda: tal(put(xn, E, P('x', None)), put(idx, E, P('x', None)), 0))
raises(ShardingTypeError, "indices=ShapedArray(int32[8,8@y,1])",
       lambda: tal(put(xn, E, P('x', None)), put(idx, E, P(None, 'y')), 1))

# ---- 4. creation functions: sharding= / device= / out_sharding= ----
s = NamedSharding(E, P('x'))
r = lax.full((8, 4), 2., sharding=s)        # concrete: placed, committed, strongly typed
assert T(r) == 'float32[8@x,4]' and r.sharding == s and r.committed; close(r, np.full((8, 4), 2.))
r = lax.full((8, 4), 2, jnp.int32, sharding=NamedSharding(A, P('x')))
assert T(r) == 'int32[8,4]' and r.sharding.spec == P('x') and r.committed
r = jax.jit(lambda: lax.full((8, 4), 1., sharding=s))()   # ignored under jit (as JAX)
assert T(r) == '~float32[8,4]' and not r.committed
r = jnp.full((8, 4), 3., device=s)
assert T(r) == 'float32[8@x,4]' and r.committed; close(r, np.full((8, 4), 3.))
for fn, v in ((jnp.zeros, 0.), (jnp.ones, 1.), (jnp.empty, 0.)):
  r = fn((8, 4), device=NamedSharding(A, P('x')))
  assert T(r) == 'float32[8,4]' and r.sharding.spec == P('x'); close(r, np.full((8, 4), v))
  r = jax.jit(lambda: fn((8, 4), device=s))()              # concrete device: ignored in jit
  assert type(r.sharding).__name__ == 'SingleDeviceSharding' and not r.committed
r = jnp.eye(8, device=s)
assert T(r) == 'float32[8@x,8]'; close(r, np.eye(8))
r = jax.jit(lambda: jnp.eye(8, device=s))()                 # eye/linspace: a device_put
assert T(r) == 'float32[8@x,8]' and r.sharding.spec == P('x', None)
r = jnp.linspace(0., 1., 8, device=s)
assert T(r) == 'float32[8@x]'; close(r, np.linspace(0., 1., 8))
r, step = jnp.linspace(0., 1., 8, retstep=True, device=s)
assert T(r) == 'float32[8@x]'; close(step, 1 / 7)
raises(ValueError, "PartitionSpec passed to jnp.zeros cannot contain axis names that are of type "
       "Auto or Manual. Got PartitionSpec: P('x',) with axis name: x of type: AxisType.Auto.",
       lambda: jnp.zeros((8, 4), out_sharding=NamedSharding(A, P('x'))))
raises(ValueError, "PartitionSpec passed to full cannot", lambda: jnp.full((8, 4), 1.,
       out_sharding=NamedSharding(A, P('x'))))
raises(ValueError, "PartitionSpec passed to jnp.zeros_like cannot",
       lambda: jnp.zeros_like(np.ones((8, 4)), out_sharding=NamedSharding(A, P('x'))))
raises(ValueError, "PartitionSpec passed to dot_general cannot", lambda: jnp.dot(
    put(xn, A, P('x')), xn, out_sharding=NamedSharding(A, P('x', None))))
raises(ValueError, "Only one of `device` or `out_sharding` can be set",
       lambda: jnp.zeros(8, device=s, out_sharding=s))
xe = put(xn, E, P('x', 'y'))
with jax.set_mesh(E):
  r = jnp.zeros((8, 8), out_sharding=P('x', 'y'))
  assert T(r) == 'float32[8@x,8@y]'
  r = jax.jit(lambda: jnp.ones((8, 4), out_sharding=P(None, 'y')))()
  assert T(r) == 'float32[8,4@y]'; close(r, np.ones((8, 4)))
  r = lax.full((8, 8), 2., sharding=P('x'))
  assert T(r) == 'float32[8@x,8]'
  # a type's sharding (jax.typeof(x).sharding) types the result, under jit too
  r = jax.jit(lambda v: lax.full((8, 8), 2., sharding=jax.typeof(v).sharding))(xe)
  assert T(r) == '~float32[8@x,8@y]'
  for make in (lambda v: jnp.zeros((8, 8), out_sharding=jax.typeof(v).sharding),
               lambda v: jnp.zeros((8, 8), device=jax.typeof(v).sharding),
               lambda v: lax.full_like(v, 2., sharding=jax.typeof(v).sharding)):
    assert T(jax.jit(make)(xe)) == 'float32[8@x,8@y]'
  assert T(jnp.zeros((8, 8), out_sharding=jax.typeof(xe).sharding)) == 'float32[8@x,8@y]'
  r = lax.full_like(np.ones((8, 8)), 2., sharding=NamedSharding(E, P('y')))
  assert T(r) == 'float32[8@y,8]' and r.committed
  # out_sharding= on the shape functions and contractions
  xr = put(xn, E, P('x', None))
  cases = [
      (lambda: jnp.reshape(xe, (64,), out_sharding=P('x')), 'float32[64@x]', xn.reshape(64)),
      (lambda: jnp.ravel(xe, out_sharding=P('x')), 'float32[64@x]', xn.ravel()),
      (lambda: jnp.broadcast_to(xn[0], (8, 8), out_sharding=P('x', 'y')), 'float32[8@x,8@y]',
       np.broadcast_to(xn[0], (8, 8))),
      (lambda: lax.broadcast(xe, (2,), out_sharding=P(None, 'x', 'y')), 'float32[2,8@x,8@y]',
       np.broadcast_to(xn, (2, 8, 8))),
      (lambda: lax.broadcast_in_dim(xe, (8, 8, 2), (0, 1), out_sharding=P('x', 'y', None)),
       'float32[8@x,8@y,2]', np.broadcast_to(xn[..., None], (8, 8, 2))),
      (lambda: lax.broadcasted_iota(jnp.int32, (8, 4), 0, out_sharding=P('x', 'y')),
       'int32[8@x,4@y]', np.broadcast_to(np.arange(8)[:, None], (8, 4))),
      (lambda: lax.dot(xe, xe, out_sharding=P('x', None)), 'float32[8@x,8]', xn @ xn),
      (lambda: jnp.tensordot(xe, xe, 1, out_sharding=P('x', None)), 'float32[8@x,8]', xn @ xn),
      (lambda: lax.reduce_sum(xe, (0,), out_sharding=P('y')), 'float32[8@y]', xn.sum(0)),
      (lambda: jnp.repeat(xr, 2, axis=0, out_sharding=P('x', None)), 'float32[16@x,8]',
       np.repeat(xn, 2, 0)),
  ]
  for i, (mk, typ, want) in enumerate(cases):
    r = mk()
    assert T(r) == typ, (i, T(r), typ)
    close(r, want, 1e-4)
    assert T(jax.jit(mk)()) == typ, i

# *_like of committed arrays keep their sharding (a mesh's only when the shape is kept)
xa8 = put(xn, A, P('x'))
for fn in (jnp.zeros_like, jnp.ones_like, jnp.empty_like, lambda v: jnp.full_like(v, 3.)):
  r = fn(xa8)
  assert r.sharding == xa8.sharding and r.committed
d2 = jax.device_put(xn, jax.devices()[2])
assert jnp.zeros_like(d2).devices() == {jax.devices()[2]} and jnp.zeros_like(d2).committed
assert jnp.zeros_like(d2, shape=(2, 2)).devices() == {jax.devices()[2]}
assert not jnp.zeros_like(xa8, shape=(2, 2)).committed
assert lax.full_like(xa8, 2.).sharding == xa8.sharding
assert not jnp.zeros_like(jnp.ones(3)).committed

# ---- 5. max-pool gradient primitives on Explicit-typed operands ----
from tracejax._src.lax import windowed
maxpool = lambda v: windowed._reduce_window_max(v, (1, 2, 2, 1), (1, 2, 2, 1), 'VALID')
minpool = lambda v: windowed._reduce_window_min(v, (1, 2, 2, 1), (1, 1, 1, 1), 'SAME')
pn = rng.randn(8, 8, 4, 4).astype(np.float32)
def np_maxpool_grad(a):
  g = np.zeros_like(a)
  for n in range(8):
    for i in range(4):
      for j in range(2):
        for c in range(4):
          w = a[n, 2 * i:2 * i + 2, 2 * j:2 * j + 2, c]
          k = np.unravel_index(np.argmax(w), w.shape)
          g[n, 2 * i + k[0], 2 * j + k[1], c] += 1
  return g
for spec, typ in ((P('x'), '8@x,8,4,4'), (P('x', None, None, 'y'), '8@x,8,4,4@y'),
                  (P(None, 'y'), '8,8@y,4,4'), (P('x', 'y'), '8@x,8@y,4,4')):
  pv = put(pn, E, spec)
  g = jax.jit(jax.grad(lambda v: maxpool(v).sum()))(pv)         # select_and_scatter_add
  assert T(g) == f'float32[{typ}]', (spec, T(g))
  close(g, np_maxpool_grad(pn))
  with jax.set_mesh(E):   # eager grad: its seed needs the mesh (JAX's rule)
    ge = jax.grad(lambda v: maxpool(v).sum())(pv)
  assert T(ge) == f'float32[{typ}]'
  close(ge, np_maxpool_grad(pn))
  pr, tg = jax.jit(lambda v: jax.jvp(maxpool, (v,), (v,)))(pv)   # select_and_gather_add
  assert T(tg) == T(pr) == 'float32[' + typ.replace('8,4,4', '4,2,4', 1).replace(
      '8@y,4,4', '4@y,2,4') + ']', (spec, T(tg), T(pr))
  close(tg, pr)
  gm = jax.jit(jax.grad(lambda v: minpool(v).sum()))(pv)
  assert T(gm) == f'float32[{typ}]', (spec, T(gm))
  hv = jax.jit(lambda v: jax.jvp(jax.grad(lambda w: (maxpool(w) ** 2).sum()), (v,), (v,)))(pv)
  assert T(hv[1]) == f'float32[{typ}]'
raises(ShardingTypeError, "select_and_gather_add tangents and operand shardings must match",
       lambda: windowed.select_and_gather_add_p.bind(
           put(pn, E, P('x')), put(pn, E, P(None, 'y')), select_prim=lax.ge_p,
           window_dimensions=(1, 2, 2, 1), window_strides=(1, 2, 2, 1),
           padding=((0, 0),) * 4, base_dilation=(1,) * 4, window_dilation=(1,) * 4))

# ---- 6. cotangents have their primal's type (JAX's transpose rules) ----
with jax.set_mesh(E):
  xe, xr = put(xn, E, P('x', 'y')), put(xn, E, P('x', None))
  for fun, arg, typ, want in [
      (lambda v: v.sum(), xe, 'float32[8@x,8@y]', np.ones_like(xn)),
      (lambda v: v.sum(0).sum(), xe, 'float32[8@x,8@y]', np.ones_like(xn)),
      (lambda v: (v.T * 2).sum(), xe, 'float32[8@x,8@y]', 2 * np.ones_like(xn)),
      (lambda v: (v[:, None, :] * jnp.ones((1, 3, 1))).sum(), xe, 'float32[8@x,8@y]',
       3 * np.ones_like(xn)),
      (lambda v: v[:4].sum(), xr, 'float32[8@x,8]', np.r_[np.ones((4, 8)), np.zeros((4, 8))]),
      (lambda v: jnp.concatenate([v, v], 1).sum(), xr, 'float32[8@x,8]', 2 * np.ones_like(xn)),
      (lambda v: jnp.mean(v ** 2), xe, 'float32[8@x,8@y]', 2 * xn / 64)]:
    g = jax.jit(jax.grad(fun))(arg)
    assert T(g) == typ, (T(g), typ)
    close(g, want)

# ---- 7. the battery: small programs on Explicit and Auto meshes (JAX 0.10.2's answers) ----
xr, xc, xe = put(xn, E, P('x', None)), put(xn, E, P(None, 'y')), put(xn, E, P('x', 'y'))
yn = rng.randn(8, 4).astype(np.float32)
J = jax.jit
with jax.set_mesh(E):
  battery = [
      (lambda: xe + xr, 'float32[8@x,8@y]', P('x', 'y'), xn + xn),
      (lambda: J(lambda a: a.sum(0))(xe), 'float32[8@y]', P('y'), xn.sum(0)),
      (lambda: J(lambda a: a.mean(1, keepdims=True))(xe), 'float32[8@x,1]', P('x', None),
       xn.mean(1, keepdims=True)),
      (lambda: J(lambda a: jnp.argmax(a, axis=1))(xr), 'int32[8@x]', P('x'), xn.argmax(1)),
      (lambda: J(lambda a, b: a @ b)(xr, yn), 'float32[8@x,4]', P('x', None), xn @ yn),
      (lambda: J(lambda a, b: jnp.dot(a, b, out_sharding=P('x', None)))(xc, put(yn, E, P('x'))),
       'float32[8@x,4]', P('x', None), xn @ yn),
      (lambda: J(lambda a: a.reshape(64))(xr), 'float32[64@x]', P('x'), xn.reshape(64)),
      (lambda: J(lambda a: a.reshape(2, 4, 8))(xr), 'float32[2@x,4,8]', P('x', None, None),
       xn.reshape(2, 4, 8)),
      (lambda: J(lambda a: a.T)(xe), 'float32[8@y,8@x]', P('y', 'x'), xn.T),
      (lambda: J(lambda a, b: jnp.concatenate([a, b], 0))(xr, xr), 'float32[16@x,8]',
       P('x', None), np.concatenate([xn, xn])),
      (lambda: J(lambda a: lax.cond(a.sum() > 0, lambda v: v * 2, lambda v: v - 1, a))(xe),
       'float32[8@x,8@y]', P('x', 'y'), xn * 2 if xn.sum() > 0 else xn - 1),
      (lambda: J(lambda a: lax.fori_loop(0, 3, lambda i, v: v + i, a))(xr), 'float32[8@x,8]',
       P('x', None), xn + 3),
      (lambda: J(lambda a: a[jnp.array([0, 3, 5])])(xc), 'float32[3,8@y]', P(None, 'y'),
       xn[[0, 3, 5]]),
      (lambda: J(lambda a: a.at[:, 1].add(1.))(xr), 'float32[8@x,8]', P('x', None),
       xn + np.eye(8)[1]),
      (lambda: J(lambda a: jnp.sort(a, 1))(xr), 'float32[8@x,8]', P('x', None), np.sort(xn, 1)),
      (lambda: J(lambda a: jnp.cumsum(a, 1))(xr), 'float32[8@x,8]', P('x', None),
       np.cumsum(xn, 1)),
      (lambda: J(lambda a: jnp.pad(a, ((0, 0), (1, 1))))(xr), 'float32[8@x,10]', P('x', None),
       np.pad(xn, ((0, 0), (1, 1)))),
      (lambda: J(lambda a: jax.nn.softmax(a, axis=-1))(xr), 'float32[8@x,8]', P('x', None),
       np.exp(xn) / np.exp(xn).sum(1, keepdims=True)),
      (lambda: J(lambda a: jax.device_put(a * 2, NamedSharding(E, P(None, 'x'))))(xe),
       'float32[8,8@x]', P(None, 'x'), 2 * xn),
      (lambda: J(lambda a: jnp.zeros_like(a, shape=(8, 2)))(xe), 'float32[8,2]', P(None, None),
       np.zeros((8, 2))),
      (lambda: J(lambda k, a: jax.random.uniform(k, a.shape) * 0 + a)(jax.random.key(1), xr),
       'float32[8@x,8]', P('x', None), xn),
      (lambda: J(lambda a: a.at[jnp.array([1, 2])].get(out_sharding=P(None, 'y')))(xr),
       'float32[2,8@y]', P(None, 'y'), xn[[1, 2]]),
      (lambda: J(lambda a: a.at[jnp.array([1, 2])].set(0., out_sharding=P('x', None)))(xc),
       'float32[8@x,8]', P('x', None), np.where(np.isin(np.arange(8), [1, 2])[:, None], 0, xn)),
      (lambda: J(lambda a: jnp.einsum('ij,jk->ik', a, a, out_sharding=P('x', None)))(xc),
       'float32[8@x,8]', P('x', None), xn @ xn),
  ]
  for i, (mk, typ, spec, want) in enumerate(battery):
    r = mk()
    assert T(r) == typ and getattr(r.sharding, "spec", None) == spec, (i, T(r), r.sharding, typ)
    close(r, want, 1e-4)
  raises(ShardingTypeError, "All operands should have the same sharding. Got shardings "
         "NamedSharding(mesh=AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit), "
         "device_kind=cpu, num_cores=None, platform=cpu), spec=P('x', None)), NamedSharding(",
         lambda: J(lambda a, b: jnp.concatenate([a, b], 1))(xr, xc))
  raises(ShardingTypeError, "dynamic_update_slice operand sharding must be equal to update "
         "sharding, got operand sharding float32[8@x,8]({Explicit: ('x', 'y')}) and update "
         "sharding float32[8,2]({Explicit: ('x', 'y')}).",
         lambda: J(lambda a: lax.dynamic_update_slice(a, jnp.zeros((8, 2)), (0, 2)))(xr))
  raises(ShardingTypeError, "Contracting dimensions are sharded",
         lambda: J(lambda a, b: a @ b)(xc, put(yn, E, P('y'))))
  raises(ShardingTypeError, "Arguments to sort must be unsharded over the sorting dimension",
         lambda: J(lambda a: jnp.sort(a, 0))(xr))
# Auto meshes: untyped, laid out by the partitioner (values as unsharded code)
ar, ac = put(xn, A, P('x', None)), put(xn, A, P(None, 'y'))
for mk, want in [(lambda: J(lambda a, b: a @ b)(ar, yn), xn @ yn),
                 (lambda: J(lambda a: jnp.sort(a, 0))(ar), np.sort(xn, 0)),
                 (lambda: J(lambda a, b: jnp.concatenate([a, b], 1))(ar, ac),
                  np.concatenate([xn, xn], 1)),
                 (lambda: J(lambda a: lax.scan(lambda c, r: (c + r, c.sum()), jnp.zeros(8), a))(ac)[0],
                  xn.sum(0)),
                 (lambda: J(lambda a, i: jnp.take_along_axis(a, i, 1))(ar, idx), want1)]:
  r = mk()
  assert str(jax.typeof(r)).count('@') == 0 and isinstance(r.sharding, NamedSharding)
  close(r, want, 1e-4)
raises(ValueError, "PartitionSpec passed to broadcasted_iota cannot contain axis names",
       lambda: lax.broadcasted_iota(jnp.int32, (8, 4), 0, out_sharding=NamedSharding(A, P('x'))))
"""


def test_sharding_audit_8_devices():
  run_devices(AUDIT_8, 8)
