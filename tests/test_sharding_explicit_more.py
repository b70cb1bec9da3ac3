"""Sharding in types, continued (see tests/test_sharding_explicit.py): what JAX 0.10.2
does inside `jax.set_mesh` and with typed PRNG keys, on 8 CPU devices.

* `lax.with_sharding_constraint` inside `jax.set_mesh` of an all-Explicit mesh is an
  assertion on the type (AssertionError when the specs differ, the value unchanged
  when they agree); outside it naming Explicit axes stays a ValueError;
* `jit` inside `jax.set_mesh(mesh)` runs over the mesh even with no array argument
  (results NamedShardings over it; committed single-device arguments and `device=` are
  errors, in JAX's words); a legacy `with mesh:` does not do that;
* untyped results of a program over an all-Explicit mesh are replicated over it;
* typed key arrays laid out by a split NamedSharding go through `jit` and `vmap`, and
  their type is split as their data's (`key<fry>[8@x]`);
* inside `jit`, `jax.typeof(arg).sharding` of an argument on an Auto mesh names the mesh;
* inside `jax.set_mesh` of an Explicit mesh, loop carries and cond branches compare an
  untyped value as a replicated one (JAX's TypeErrors), while the library's own loops
  keep their carries' types.

Values are compared with the same computation on one device; types, shardings and
messages with what JAX 0.10.2 gives (recorded here)."""
from tests.test_sharding_explicit import run_devices

SET_MESH = """
from tracejax import random
mesh = jax.make_mesh((2, 4), ('x', 'y'))
auto = jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
xn = np.arange(32, dtype=np.float32).reshape(8, 4)
a = jax.device_put(xn, NamedSharding(mesh, P('x', None)))
NS = lambda *spec: NamedSharding(mesh, P(*spec))

# ---- with_sharding_constraint: an assertion on all-Explicit meshes ----
ASSERT = ("`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
          "`Explicit`. The array sharding: {} did not match the sharding provided: {}. Please "
          "use `jax.sharding.reshard` to shard your input to the sharding you want.")
with jax.set_mesh(mesh):
  raises(AssertionError, ASSERT.format("P('x', None)", "P('y', None)"),
         lambda: jax.jit(lambda v: lax.with_sharding_constraint(v, P('y')))(a))
  raises(AssertionError, ASSERT.format("P('x', None)", "P('y', None)"),
         lambda: lax.with_sharding_constraint(a, NamedSharding(mesh, P('y'))))
  raises(AssertionError, ASSERT.format("P('x', None)", "P(('x', 'y'), None)"),
         lambda: jax.jit(lambda v: lax.with_sharding_constraint(v, P(('x', 'y'))))(a))
  raises(AssertionError, ASSERT.format("P(None, None)", "P('x', None)"),   # untyped: replicated
         lambda: jax.jit(lambda: lax.with_sharding_constraint(jnp.ones((8, 4)), P('x')))())
  y = jax.jit(lambda v: lax.with_sharding_constraint(v * 2, P('x')))(a)
  assert T(y) == 'float32[8@x,4]' and y.sharding == NS('x', None), (T(y), y.sharding)
  close(y, xn * 2)
  y = jax.jit(lambda v: lax.with_sharding_constraint((v, v.sum(0)), (P('x'), P())))(a)
  assert T(y[1]) == 'float32[4]'
  assert lax.with_sharding_constraint(xn, P()) is xn          # passed through, as in JAX
# Outside jax.set_mesh (and in a legacy `with mesh:`), naming Explicit axes is an error.
AUTO_ONLY = "The spec of NamedSharding passed to with_sharding_constraint can only refer to Auto axes"
raises(ValueError, AUTO_ONLY, lambda: lax.with_sharding_constraint(a, NamedSharding(mesh, P('x'))))
with mesh:
  raises(ValueError, AUTO_ONLY, lambda: jax.jit(lambda v: lax.with_sharding_constraint(v, P('y')))(a))

# ---- jit inside jax.set_mesh runs over the mesh ----
f = jax.jit(lambda: jnp.zeros((8, 4)))
key_f = jax.jit(lambda: random.normal(random.key(0), (8, 4)))
want_normal = np.asarray(key_f())                                 # one device
assert type(key_f().sharding).__name__ == 'SingleDeviceSharding'
with jax.set_mesh(mesh):
  z = jax.jit(lambda: jnp.zeros((8, 4), out_sharding=P('x')))()
  assert T(z) == 'float32[8@x,4]' and z.sharding == NS('x', None) and z.committed
  for _ in range(2):   # the second call is jaxlib's C++ fast path
    z = f()
    assert T(z) == 'float32[8,4]' and z.sharding == NS(None, None) and z.committed, z.sharding
    assert len(z.addressable_shards) == 8
  r = key_f()
  assert r.sharding == NS(None, None), r.sharding
  close(r, want_normal)
  s = jax.jit(lambda c: c * jnp.ones((8, 4)))(2.0)
  assert s.sharding == NS(None, None)
  close(s, np.full((8, 4), 2.0))
  n = jax.jit(lambda v: v * 2)(xn)
  assert n.sharding == NS(None, None)
  close(n, xn * 2)
  on3 = jax.device_put(xn, jax.devices()[3])
  raises(ValueError, "Received incompatible devices for jitted computation. Got argument 0 of "
         "<lambda> with shape float32[8,4] and with device ids [3] on platform CPU and jit's "
         "context mesh with device ids [0, 1, 2, 3, 4, 5, 6, 7] on platform CPU",
         lambda: jax.jit(lambda v: v + 1)(on3))
  raises(ValueError, "Mesh context manager should not be used with jit when backend or device "
         "is also specified as an argument to jit.",
         lambda: jax.jit(lambda: jnp.zeros(3), device=jax.devices()[1])())
for _ in range(2):   # outside again: one device (the C++ cache is keyed by the mesh)
  z = f()
  assert type(z.sharding).__name__ == 'SingleDeviceSharding' and not z.committed
with jax.set_mesh(auto):   # Auto axes: XLA's layout (replicated here), over the mesh
  z = f()
  assert z.sharding == NamedSharding(auto, P()), z.sharding
with mesh:                 # a legacy mesh context: one device and no abstract mesh, as in JAX
  assert type(f().sharding).__name__ == 'SingleDeviceSharding'
  assert repr(jax.sharding.get_abstract_mesh()) == 'AbstractMesh((), axis_types=())'
  assert jax.sharding.get_mesh().empty
with jax.set_mesh(mesh), auto:   # ... and inside jax.set_mesh, that mesh stays the context
  assert f().sharding == NS(None, None) and jax.sharding.get_mesh() is mesh
sub = Mesh(np.array(jax.devices()[4:]).reshape(2, 2), ('x', 'y'),
           axis_types=(AxisType.Explicit,) * 2)
with jax.set_mesh(sub):
  z = f()
  assert z.sharding == NamedSharding(sub, P(None, None)) and z.devices() == set(jax.devices()[4:])

# ---- inside jit, the type of an argument on an Auto mesh names that mesh ----
seen = []
u = jax.device_put(xn, NamedSharding(auto, P('x', None)))
got = jax.jit(lambda v: (seen.append(jax.typeof(v).sharding), v * 2)[1])(u)
assert repr(seen[0]) == ("NamedSharding(mesh=AbstractMesh('x': 2, 'y': 4, axis_types=(Auto, "
                         "Auto), device_kind=cpu, num_cores=None, platform=cpu), spec=P(None, "
                         "None))"), seen
assert T(got) == 'float32[8,4]' and got.sharding.mesh == auto
close(got, xn * 2)

# ---- untyped results over an all-Explicit mesh are replicated ----
def chol(v):   # (no sharding rule for cholesky: its result is untyped)
  return jnp.linalg.cholesky(v[:, :, None] * v[:, None, :] + 100 * jnp.eye(4))
got = jax.jit(chol)(a)
assert T(got) == 'float32[8,4,4]' and got.sharding == NS(None, None, None), got.sharding
close(got, jax.jit(chol)(xn), 1e-4)
got = jax.jit(lambda v: jnp.fft.fft(v))(a)    # fft keeps the operand's type, as in JAX
assert T(got) == 'complex64[8@x,4]' and got.sharding == NS('x', None)
close(got, np.fft.fft(xn), 1e-4)

# ---- loops and conds: inside jax.set_mesh untyped values are replicated ones ----
CARRY = ("{} body function carry input and carry output must have equal types, but they "
         "differ:\\n\\nThe input carry {} has type float32[8,4] but the corresponding output "
         "carry component has type float32[8@x,4].\\n\\nRevise the function so that all output "
         "types match the corresponding input types.")
scan0 = lambda v: lax.scan(lambda c, x: (c + v, None), jnp.zeros((8, 4)), None, length=3)[0]
fori0 = lambda v: lax.fori_loop(0, 3, lambda i, c: c + v, jnp.zeros((8, 4)))
while0 = lambda v: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + v),
                                  (0, jnp.zeros((8, 4))))[1]
cond0 = lambda v: lax.cond(True, lambda: v, lambda: jnp.zeros((8, 4)))
for fn, want in ((scan0, 3 * xn), (fori0, 3 * xn), (while0, 3 * xn), (cond0, xn)):
  got = jax.jit(fn)(a)     # no mesh set: an untyped value agrees with any type
  assert T(got) == 'float32[8@x,4]', T(got)
  close(got, want)
with jax.set_mesh(mesh):
  raises(TypeError, CARRY.format("scan", "c"), lambda: jax.jit(scan0)(a))
  raises(TypeError, CARRY.format("scan", "component loop_carry[1]"), lambda: jax.jit(fori0)(a))
  raises(TypeError, CARRY.format("while_loop", "component c[1]"), lambda: jax.jit(while0)(a))
  raises(TypeError, "The output of true_fun has type float32[8@x,4] but the corresponding "
         "output of false_fun has type float32[8,4].", lambda: jax.jit(cond0)(a))
  # Typed carries, and the loops inside the library's functions, keep their types.
  sc = lambda v: lax.scan(lambda c, x: (c * 1.5 + jnp.sin(c), c.sum()), v, None, length=3)
  for fn in (lambda v: lax.fori_loop(0, 3, lambda i, c: c * jnp.cos(c), v),
             lambda v: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, v))[1],
             lambda v: jnp.cumsum(v, axis=1), lambda v: jnp.cumprod(v / 31 + 1, axis=1),
             lambda v: lax.associative_scan(jnp.add, v, axis=1), lambda v: jax.nn.softmax(v),
             lambda v: jax.grad(lambda u: sc(u)[0].sum())(v / 31),
             lambda v: jax.grad(lambda u: jax.checkpoint(lambda w: sc(w)[0])(u).sum())(v / 31),
             lambda v: jax.grad(lambda u: lax.fori_loop(0, 3, lambda i, c: c * jnp.cos(c), u).sum())(v / 31),
             lambda v: jax.grad(lambda u: lax.cond(True, jnp.sin, lambda w: w * 2, u).sum())(v),
             lambda v: jax.jvp(lambda u: sc(u / 31)[0], (v,), (v,))[1]):
    got = jax.jit(fn)(a)
    assert T(got) == 'float32[8@x,4]', T(got)
    close(got, jax.jit(fn)(xn), 1e-4)
"""

KEYS = """
from tracejax import random
mesh = jax.make_mesh((2, 4), ('x', 'y'))
auto = jax.make_mesh((2, 4), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
ks1 = random.split(random.key(0), 8)           # one device
normal = lambda k: jax.vmap(lambda kk: random.normal(kk, (3,)))(k)
want_normal, want_split = np.asarray(normal(ks1)), np.asarray(random.key_data(jax.vmap(random.split)(ks1)))
want_fold = np.asarray(random.key_data(jax.vmap(lambda k: random.fold_in(k, 3))(ks1)))
for m, explicit in ((mesh, True), (auto, False)):
  ks = jax.device_put(ks1, NamedSharding(m, P('x')))
  assert ks.sharding == NamedSharding(m, P('x')), ks.sharding
  assert T(ks) == ('key<fry>[8@x]' if explicit else 'key<fry>[8]'), T(ks)
  assert T(random.key_data(ks)) == ('uint32[8@x,2]' if explicit else 'uint32[8,2]')
  for fn in (jax.jit(normal), normal):
    got = fn(ks)
    assert T(got) == ('float32[8@x,3]' if explicit else 'float32[8,3]'), T(got)
    assert got.sharding.spec in (P('x', None), P('x')), got.sharding
    close(got, want_normal)
  ident = jax.jit(lambda k: k)(ks)
  assert T(ident) == T(ks) and ident.sharding == NamedSharding(m, P('x'))
  close(random.key_data(ident), random.key_data(ks1))
  sp = jax.jit(jax.vmap(random.split))(ks)
  assert T(sp) == ('key<fry>[8@x,2]' if explicit else 'key<fry>[8,2]'), T(sp)
  assert sp.sharding.spec in (P('x', None), P('x')), sp.sharding
  close(random.key_data(sp), want_split)
  fo = jax.jit(jax.vmap(lambda k: random.fold_in(k, 3)))(ks)
  assert T(fo) == T(ks) and fo.sharding.spec == P('x')
  close(random.key_data(fo), want_fold)
  ks2 = jax.device_put(random.split(random.key(1), (8, 4)), NamedSharding(m, P('x', 'y')))
  u = jax.jit(jax.vmap(jax.vmap(random.uniform)))(ks2)
  assert T(u) == ('float32[8@x,4@y]' if explicit else 'float32[8,4]')
  assert u.sharding.spec == P('x', 'y')
  close(u, jax.vmap(jax.vmap(random.uniform))(random.split(random.key(1), (8, 4))))
with jax.set_mesh(mesh):   # keys made inside: replicated over the mesh
  k = jax.jit(lambda: random.split(random.key(0), 8))()
  assert T(k) == 'key<fry>[8]' and k.sharding == NamedSharding(mesh, P(None)), k.sharding
"""


EAGER_SET_MESH = """
# Eager ops (not jitted) inside jax.set_mesh run over the mesh, as JAX 0.10.2 (recorded)
m = jax.make_mesh((8,), ('x',))
with jax.set_mesh(m):
  a = jnp.zeros((8, 4))
  assert a.sharding == NamedSharding(m, P(None, None)) and T(a) == 'float32[8,4]', a.sharding
  d = a + 1
  assert d.sharding == NamedSharding(m, P(None, None)) and float(d.sum()) == 32.0
  assert jnp.arange(8).sharding == NamedSharding(m, P(None,))
  k = jax.random.normal(jax.random.key(0), (4,))
  assert k.sharding == NamedSharding(m, P(None,))
  np.testing.assert_array_equal(k, jax.random.normal(jax.random.key(0), (4,)))
  e = jnp.ones((8, 4), out_sharding=P('x')) * 2
  assert e.sharding == NamedSharding(m, P('x', None)) and T(e) == 'float32[8@x,4]'
  raises(ValueError, "jit's context mesh",
         lambda: jnp.sin(jax.device_put(np.ones(4), jax.devices()[1])))
ma = jax.make_mesh((8,), ('x',), axis_types=(AxisType.Auto,))
with jax.set_mesh(ma):
  assert jnp.zeros((8, 4)).sharding == NamedSharding(ma, P())
assert type(jnp.zeros(3).sharding).__name__ == 'SingleDeviceSharding'
"""


def test_eager_ops_inside_set_mesh_8_devices():
  run_devices(EAGER_SET_MESH, 8)


def test_set_mesh_jit_and_constraints_8_devices():
  run_devices(SET_MESH, 8)


def test_typed_keys_on_split_shardings_8_devices():
  run_devices(KEYS, 8)
