"""Scale-out parity with JAX 0.10.2 (tracejax issue 9): the errors of pmap and of the
collectives, `jax.set_mesh` and NumPy inputs, a pmap hidden in a cond of a pmap body,
and the names of `jax.sharding`, `jax.lax`'s collectives, `mesh_utils` and
`multihost_utils`. Every expected message and sharding below was recorded from real JAX
0.10.2 on 4 CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count=4`); the
device count is fixed when the backend starts, so each group runs in a subprocess
(`run_devices`).
"""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from tests.test_pmap import ROOT, run_devices

HELPERS = """
def expect(exc, msg, fn, prefix=False):
  try:
    fn()
  except exc as e:
    got = str(e)
    ok = got.startswith(msg) if prefix else got == msg
    assert ok, f"{type(e).__name__}: {got!r}\\nwanted {msg!r}"
    return e
  raise AssertionError(f"no {exc.__name__} ({msg})")
PA = "_internal_pmap_axis_name"
"""

PMAP_ERRORS = HELPERS + """
x4 = np.ones((N, 3), np.float32)
ident = lambda v: v
# Leading sizes that the pmap's devices do not divide: JAX's IndivisibleError (a
# ValueError) over the 1-d mesh of those devices.
def indiv(m, spec, d, shape, name=PA):
  tiling = [m if k == d else 1 for k in range(len(shape))]
  return (f"Sharding NamedSharding(mesh=Mesh({name!r}: {m}, axis_types=(Auto,)), spec={spec}, "
          f"memory_kind=device) implies that array axis {d} is partitioned {m} times, but "
          f"the dimension size is {shape[d]} (full shape: {shape}, per-dimension tiling "
          f"factors: {tiling} should evenly divide the shape)")
e = expect(ValueError, indiv(4, f"P({PA!r},)", 0, (5, 3)), lambda: jax.pmap(ident)(np.ones((5, 3))))
# Staged into a jit: its shard_map's words.
expect(ValueError, "shard_map applied to the function '_fun' was given argument arrays with "
       "axis sizes that are not evenly divisible by the corresponding mesh axis sizes:\\n\\nThe "
       "mesh given has shape (4,) with corresponding axis names ('_internal_pmap_axis_name',)."
       "\\n\\nthe passed args[0] of shape float32[5,2], where args[0] is the index 0 component of "
       "_fun's varargs parameter 'flat_args', corresponds to in_specs[0] of value "
       "P('_internal_pmap_axis_name',), which maps array axis 0 (of size 5) to mesh axis "
       "'_internal_pmap_axis_name' (of size 4), but 4 does not evenly divide 5\\n\\nArray "
       "arguments' axis sizes must be evenly divisible by the mesh axis or axes indicated by "
       "the corresponding elements of the argument's in_specs entry. Consider checking that "
       "in_specs are correct, and if so consider changing the mesh axis sizes or else padding "
       "the input and adapting '_fun' appropriately.",
       lambda: jax.jit(jax.pmap(ident))(np.ones((5, 2), np.float32)))
assert type(e).__name__ == 'IndivisibleError'
expect(ValueError, indiv(2, f"P({PA!r},)", 0, (3, 3)),
       lambda: jax.pmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3))))
expect(ValueError, indiv(2, "P('i',)", 0, (3,), 'i'),
       lambda: jax.pmap(lambda a, b: a, 'i')(np.ones(2), np.ones(3)))
expect(ValueError, indiv(4, f"P(None, {PA!r})", 1, (3, 5)),
       lambda: jax.pmap(ident, in_axes=1)(np.ones((3, 5))))
expect(ValueError, indiv(2, f"P({PA!r},)", 0, (3,)),
       lambda: jax.pmap(lambda d: d['a'])({'a': np.ones(2), 'b': np.ones(3)}))
expect(ValueError, indiv(4, f"P({PA!r},)", 0, (6,)), lambda: jax.pmap(ident)(np.ones(6)))
# Other argument errors, JAX's words.
expect(ValueError, "pmap requires at least one argument with a mapped axis.",
       lambda: jax.pmap(ident, in_axes=None)(x4))
expect(ValueError, "Specified axis_size 2 doesn't match received axis_size 4.",
       lambda: jax.pmap(ident, axis_size=2)(x4))
expect(TypeError, "Expected a callable value, got 3", lambda: jax.pmap(3))
expect(TypeError, "Expected a callable value, got None", lambda: jax.pmap(None))
expect(TypeError, "pmap in_axes must be an int, None, or (nested) container with those types "
       "as leaves, but got a.", lambda: jax.pmap(ident, in_axes='a')(x4))
expect(TypeError, "pmap in_axes must be an int, None, or (nested) container with those types "
       "as leaves, but got 0.5.", lambda: jax.pmap(ident, in_axes=0.5)(x4))
TAIL = ("\\n\\nThe 'full pytree' here is the tuple of arguments passed positionally to the "
        "pmapped function, and the value of `in_axes` must be a tree prefix of that tuple. But "
        "it was not a prefix.")
CHECK = ("\\n\\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of "
         "the tuple of arguments passed positionally to the pmapped function.")
expect(ValueError, "pytree structure error: different lengths of tuple at key path\\n    pmap "
       "in_axes[0]\\nAt that key path, the prefix pytree pmap in_axes has a subtree of type "
       "tuple of length 3, but the full pytree has a subtree of the same type but of length 2."
       + TAIL + CHECK, lambda: jax.pmap(lambda a, b: a, in_axes=(0, 0, 0))(x4, x4))
expect(ValueError, "pytree structure error: different types at key path\\n    pmap in_axes[0]"
       "\\nAt that key path, the prefix pytree pmap in_axes has a subtree of type\\n    <class "
       "'list'>\\nbut at the same key path the full pytree has a subtree of different type\\n"
       "    <class 'tuple'>." + TAIL + CHECK,
       lambda: jax.pmap(lambda a, b: a, in_axes=[0, 0])(np.ones(2), np.ones(2)))
expect(ValueError, "pytree structure error: different lengths of tuple at key path\\n    pmap "
       "in_axes[0]\\nAt that key path, the prefix pytree pmap in_axes has a subtree of type "
       "tuple of length 2, but the full pytree has a subtree of the same type but of length 1."
       + TAIL + "\\n\\nWhen some arguments are passed by keyword to the pmapped function, they "
       "are not included in the comparison to `in_axes`.", lambda: jax.pmap(
           lambda a, b: a, in_axes=(0, 1))(x4, b=x4), prefix=True)
expect(ValueError, "pmapped function has static_broadcasted_argnums=(3,) but was called with "
       "only 1 positional argument. All static broadcasted arguments must be passed "
       "positionally.", lambda: jax.pmap(ident, static_broadcasted_argnums=3)(x4))
expect(ValueError, "pmapped function has static_broadcasted_argnums=(1, 4) but was called with "
       "only 2 positional arguments. All static broadcasted arguments must be passed "
       "positionally.", lambda: jax.pmap(lambda a, b: a, static_broadcasted_argnums=(1, 4))(
           np.ones(2), 1))
expect(ValueError, "Non-hashable static arguments are not supported, as this can lead to "
       "unexpected cache-misses. Static argument (index 1) of type <class 'list'> for function "
       "<lambda> is non-hashable.",
       lambda: jax.pmap(lambda a, s: a, static_broadcasted_argnums=1)(x4, [1]))
expect(ValueError, "`static_argnums` [1] and `donate_argnums` [1] cannot intersect.",
       lambda: jax.pmap(lambda a, s: a, static_broadcasted_argnums=1, donate_argnums=1))
expect(ValueError, "`static_argnums` [1] and `donate_argnums` [0, 1] cannot intersect.",
       lambda: jax.pmap(lambda a, s: a, static_broadcasted_argnums=(1,), donate_argnums=(0, 1)))
expect(ValueError, "'devices' argument to pmap must be non-empty, or None.",
       lambda: jax.pmap(ident, devices=[]))
# A mapped axis the argument lacks: JAX meets it as an IndexError (tracejax's error is both).
for f, a in ((jax.pmap(ident), np.float32(1)), (jax.pmap(ident, in_axes=2), x4)):
  for exc in (IndexError, ValueError):
    expect(exc, "pmap in_axes", lambda: f(a), prefix=True)
# What JAX accepts still runs.
close(jax.pmap(ident, axis_size=2)(np.ones(2)), np.ones(2))
close(jax.pmap(lambda a, b: a + b, in_axes=(0, None))(np.ones((2, 3)), np.ones(3)), 2 * np.ones((2, 3)))
close(jax.pmap(lambda x: x)(x=np.ones(2)), np.ones(2))
"""

COLLECTIVE_ERRORS = HELPERS + """
x = np.ones((N, N), np.float32)
v = np.ones(N, np.float32)
FOUND = "Found an unbound axis name: j. To fix this, please call {} under `jax.shard_map`."
ops = {'psum': lambda a: lax.psum(a, 'j'), 'pmean': lambda a: lax.pmean(a, 'j'),
       'pmax': lambda a: lax.pmax(a, 'j'), 'pmin': lambda a: lax.pmin(a, 'j'),
       'all_gather': lambda a: lax.all_gather(a, 'j'),
       'psum_scatter': lambda a: lax.psum_scatter(a, 'j', tiled=True),
       'all_to_all': lambda a: lax.all_to_all(a, 'j', 0, 0),
       'ppermute': lambda a: lax.ppermute(a, 'j', [(0, 1)]),
       'pshuffle': lambda a: lax.pshuffle(a, 'j', [1, 0, 2, 3]),
       'axis_index': lambda a: lax.axis_index('j'), 'axis_size': lambda a: lax.axis_size('j'),
       'pswapaxes': lambda a: lax.pswapaxes(a, 'j', 0),
       'pbroadcast': lambda a: lax.pbroadcast(a, 'j', 0)}
# (exception, message) per context, as JAX 0.10.2 gives them.
UNBOUND = (NameError, "unbound axis name: j")
staged = {'psum': (NameError, FOUND.format('psum')), 'pmean': (NameError, FOUND.format('psum')),
          'pmax': (NameError, FOUND.format('psum')), 'pmin': (NameError, FOUND.format('psum')),
          'ppermute': (NameError, FOUND.format('ppermute')),
          'pshuffle': (NameError, FOUND.format('ppermute')),
          'axis_index': (NameError, FOUND.format('axis_index')),
          'pbroadcast': (NameError, FOUND.format('ppermute'))}
eager = {'pmax': (NameError, FOUND.format('psum')), 'pmin': (NameError, FOUND.format('psum')),
         'ppermute': (NotImplementedError, "Evaluation rule for 'ppermute' not implemented"),
         'pshuffle': (NotImplementedError, "Evaluation rule for 'ppermute' not implemented"),
         'axis_index': (NameError, FOUND.format('axis_index')),
         'pbroadcast': (NotImplementedError, "Evaluation rule for 'pbroadcast' not implemented")}
for name, f in ops.items():
  expect(*eager.get(name, UNBOUND), lambda: f(v))
  expect(*staged.get(name, UNBOUND), lambda: jax.jit(f)(v))
  expect(*staged.get(name, UNBOUND), lambda: jax.pmap(f, 'i')(x))
expect(NameError, FOUND.format('psum').replace(': j.', ': i.'), lambda: jax.jit(lambda a: lax.psum(a, ('i', 'j')))(v))
pm = lambda f, a: jax.pmap(f, 'i')(a)
expect(ValueError, "ppermute sources and destinations must be unique, got ((0, 1), (0, 2)).",
       lambda: pm(lambda a: lax.ppermute(a, 'i', [(0, 1), (0, 2)]), v))
expect(ValueError, "ppermute sources and destinations must be unique, got ((0, 1), (2, 1)).",
       lambda: pm(lambda a: lax.ppermute(a, 'i', [(0, 1), (2, 1)]), v))
expect(ValueError, "`perm` does not represent a permutation: [0, 0, 1, 2]",
       lambda: pm(lambda a: lax.pshuffle(a, 'i', [0, 0, 1, 2]), v))
expect(ValueError, "all_to_all requires the size of the mapped axis axis_name to equal "
       "x.shape[split_axis], but they are 4 and 3 respectively.",
       lambda: pm(lambda a: lax.all_to_all(a, 'i', 0, 0), np.ones((N, 3))))
expect(ValueError, "all_to_all requires the size of the mapped axis axis_name to equal "
       "x.shape[split_axis], but they are 4 and 3 respectively.",
       lambda: jax.vmap(lambda a: lax.all_to_all(a, 'i', 0, 0), axis_name='i')(np.ones((N, 3))))
expect(ValueError, "tiled reduce_scatter operand scatter dimension size 3 must be divisible by "
       "shard_count 4", lambda: pm(lambda a: lax.psum_scatter(a, 'i', tiled=True), np.ones((N, 3))))
expect(ValueError, "reduce_scatter operand scatter dimension size 3 must match shard count 4",
       lambda: pm(lambda a: lax.psum_scatter(a, 'i'), np.ones((N, 3))))
# Axis arguments out of range: an IndexError in JAX (and still a ValueError here).
for exc in (IndexError, ValueError):
  expect(exc, "all_to_all: split_axis=2", lambda: pm(lambda a: lax.all_to_all(a, 'i', 2, 0), x), prefix=True)
  expect(exc, "psum_scatter: scatter_dimension=3", lambda: pm(
      lambda a: lax.psum_scatter(a, 'i', scatter_dimension=3), x), prefix=True)
expect(ValueError, "axis_index_groups must cover all indices exactly once", lambda: pm(
    lambda a: lax.psum(a, 'i', axis_index_groups=[[0, 0], [1, 2]]), v), prefix=True)
"""

PBROADCAST = """
x = np.arange(8., dtype=np.float32).reshape(4, 2)
close(jax.pmap(lambda v: lax.pbroadcast(v, 'i', 2), 'i')(x), np.tile(x[2], (4, 1)))
got = jax.pmap(lambda v: lax.pbroadcast((v, v > 1), 'i', 3), 'i')(np.arange(4))
assert got[0].dtype == np.arange(4).dtype or got[0].dtype == np.int32
assert got[0].tolist() == [3] * 4 and got[1].tolist() == [True] * 4 and got[1].dtype == bool
close(jax.vmap(lambda v: lax.pbroadcast(v, 'i', 1), axis_name='i')(x), np.tile(x[1], (4, 1)))
# the gradient of the copy flows back to the source member only
close(jax.pmap(jax.grad(lambda v: lax.pbroadcast(v, 'i', 0) ** 2), 'i')(np.arange(1., 5.)),
      [8., 0., 0., 0.])
"""

RAGGED = HELPERS + """
# JAX's docstring example (axis of size 2): JAX 0.10.2 has no XLA:CPU lowering for it.
op = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
out = np.zeros((2, 4), np.float32)
io = np.array([[0, 1], [0, 1]], np.int32); ss = np.array([[1, 2], [1, 1]], np.int32)
oo = np.array([[0, 0], [1, 2]], np.int32); rs = np.array([[1, 1], [2, 1]], np.int32)
f = jax.pmap(lambda *a: lax.ragged_all_to_all(*a, axis_name='i'), 'i', devices=jax.devices()[:2])
assert np.asarray(f(op, out, io, ss, oo, rs)).tolist() == [[1, 3, 0, 0], [2, 2, 4, 0]]
# N members, 2 slices per member, rows of 2: against the semantics JAX documents.
def ref(op, out, inoff, send, outoff, recv):
  n, K = inoff.shape; k = K // n
  res = out.copy()
  oo = outoff.reshape(n, n, k).transpose(1, 0, 2).reshape(n, K)   # all_to_all(tiled)
  for r in range(n):
    for i in range(K):
      src, j = i // k, r * k + i % k
      chunk = op[src][inoff[src, j]: inoff[src, j] + send[src, j]]
      assert recv[r, i] == len(chunk)
      res[r][oo[r, i]: oo[r, i] + recv[r, i]] = chunk
  return res
rng = np.random.RandomState(0)
op4 = np.arange(N * 6 * 2, dtype=np.float32).reshape(N, 6, 2)
out4 = -np.ones((N, 2 * N, 2), np.float32)
send = rng.randint(0, 3, size=(N, 2 * N)).astype(np.int32)
inoff = np.stack([np.minimum(np.cumsum(np.r_[0, s[:-1]]), 6 - s) for s in send]).astype(np.int32)
recv = send.reshape(N, N, 2).transpose(1, 0, 2).reshape(N, 2 * N)
outoff = np.zeros((N, 2 * N), np.int32)
for r in range(N):
  pos = 0
  for s_ in range(N):
    for t in range(2):
      outoff[s_, r * 2 + t] = pos; pos += send[s_, r * 2 + t]
args = (op4, out4, inoff, send, outoff, recv)
want = ref(*args)
g = lambda *a: lax.ragged_all_to_all(*a, axis_name='i')
assert np.array_equal(np.asarray(jax.pmap(g, 'i')(*args)), want)
assert np.array_equal(np.asarray(jax.jit(jax.pmap(g, 'i'))(*args)), want)
assert np.array_equal(np.asarray(jax.vmap(g, axis_name='i')(*args)), want)
# JAX 0.10.2's errors
expect(RuntimeError, "ragged_all_to_all must be used within a mapped context like vmap or "
       "shard_map.", lambda: lax.ragged_all_to_all(op[0], out[0], io[0], ss[0], oo[0], rs[0], axis_name='i'))
expect(ValueError, "ragged_all_to_all input_offsets must be integer type.",
       lambda: f(op, out, io.astype(np.float32), ss, oo, rs))
expect(ValueError, "ragged_all_to_all input_offsets must be rank 1 with positive dimension "
       "size, but got shape (1, 1)", lambda: f(op, out, io[:, :1].reshape(2, 1, 1), ss, oo, rs))
"""

SMAP = HELPERS + """
from tracejax.sharding import AxisType, NamedSharding, PartitionSpec as P
assert jax.NamedSharding is NamedSharding and jax.Shard is jax.sharding.Shard
x = np.arange(8.)
expect(ValueError, "The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter into a "
       "mesh context", lambda: jax.smap(lambda b: b * 2, in_axes=0, out_axes=0, axis_name='x')(x))
m1 = jax.make_mesh((4,), ('x',), axis_types=(AxisType.Auto,))
with jax.set_mesh(m1):
  sm = lambda f, i, o: jax.smap(f, in_axes=i, out_axes=o, axis_name='x')
  r = sm(lambda b: b * lax.axis_index('x'), 0, 0)(x)
  assert r.tolist() == [0.0, 0.0, 2.0, 3.0, 8.0, 10.0, 18.0, 21.0] and r.sharding == NamedSharding(m1, P('x'))
  r = jax.jit(sm(lambda b: b * lax.axis_index('x'), 0, 0))(x)
  assert r.tolist() == [0.0, 0.0, 2.0, 3.0, 8.0, 10.0, 18.0, 21.0] and r.sharding == NamedSharding(m1, P('x'))
  r = sm(lambda b: lax.psum(b.sum(), 'x'), 0, None)(x)
  assert float(r) == 28.0 and r.sharding == NamedSharding(m1, P())
  r = sm(lambda a, b: a + b, (0, None), 0)(x, 1.)
  assert r.tolist() == (x + 1).tolist() and r.sharding == NamedSharding(m1, P('x'))
  r = sm(lambda b: b * 2, 1, 1)(x.reshape(2, 4))
  assert r.tolist() == (2 * x).reshape(2, 4).tolist() and r.sharding == NamedSharding(m1, P(None, 'x'))
  r = jax.smap(in_axes=0, out_axes=0, axis_name='x')(lambda b: b + 1)(x)
  assert r.tolist() == (x + 1).tolist()
  expect(TypeError, "smap axis_name should be a `str` or a `Hashable`, but got ('x',)",
         lambda: jax.smap(lambda b: b, in_axes=0, out_axes=0, axis_name=('x',)))
  expect(TypeError, "smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of entries "
         "corresponding to the positional arguments passed to the function, but got [0].",
         lambda: jax.smap(lambda b: b, in_axes=[0], out_axes=0, axis_name='x'))
  expect(TypeError, "smap out_axes must be an int, None, or (nested) container with those types "
         "as leaves, but got a.", lambda: jax.smap(lambda b: b, in_axes=0, out_axes='a', axis_name='x'))
m2 = jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
with jax.set_mesh(m2):   # manual over 'x' only
  r = jax.smap(lambda b: b * lax.axis_index('x'), in_axes=0, out_axes=0, axis_name='x')(x)
  assert r.tolist() == [0.0, 0.0, 0.0, 0.0, 4.0, 5.0, 6.0, 7.0] and r.sharding == NamedSharding(m2, P('x'))
m3 = jax.make_mesh((4,), ('x',), axis_types=(AxisType.Explicit,))
with jax.set_mesh(m3):   # in_axes inferred from the arguments' types
  xs = jax.device_put(x, P('x'))
  r = jax.smap(lambda b: b * lax.axis_index('x'), out_axes=0, axis_name='x')(xs)
  assert r.tolist() == [0.0, 0.0, 2.0, 3.0, 8.0, 10.0, 18.0, 21.0] and r.sharding == NamedSharding(m3, P('x'))
  expect(ValueError, "in_specs passed to shard_map: P('x',) does not match the specs of the input: "
         "P(None,) for arg: float32[8].", lambda: jax.smap(lambda b: b, in_axes=0, out_axes=0,
                                                           axis_name='x')(x), prefix=True)
"""

NESTED_IN_COND = HELPERS + """
MSG = ("The context mesh AbstractMesh({!r}: {}, axis_types=(Manual,), device_kind=cpu, "
       "num_cores=None, platform=cpu) should match the mesh passed to shard_map Mesh({!r}: {}, "
       "axis_types=(Auto,))")
inner = jax.pmap(lambda z: z * 2)
y = np.ones((N, 1, 3), np.float32)
bodies = {
    'cond': lambda v: lax.cond(True, inner, lambda w: w, v),
    'cond_traced_pred': lambda v: lax.cond(v.sum() > 0, inner, lambda w: w, v),
    'while': lambda v: lax.while_loop(lambda c: c[0] < 1, lambda c: (c[0] + 1, inner(c[1])), (0, v))[1],
    'scan': lambda v: lax.scan(lambda c, _: (inner(c), None), v, None, length=1)[0],
}
for name, body in bodies.items():
  expect(ValueError, MSG.format(PA, N, PA, 1), lambda: jax.pmap(body)(y))
expect(ValueError, MSG.format('i', 2, PA, 2),
       lambda: jax.pmap(lambda v: lax.cond(True, inner, lambda w: w, v), 'i')(np.ones((2, 2, 3))))
# Outside a pmap body a pmap under cond/scan still runs (as in JAX).
close(jax.jit(lambda v: lax.cond(True, inner, lambda w: w, v))(np.ones((N, 2))), 2 * np.ones((N, 2)))
close(lax.cond(True, inner, lambda w: w, np.ones((N, 2))), 2 * np.ones((N, 2)))
close(lax.scan(lambda c, _: (inner(c), None), np.ones((N, 2)), None, length=2)[0], 4 * np.ones((N, 2)))
"""

SET_MESH_NUMPY = """
from tracejax.sharding import AxisType, NamedSharding, PartitionSpec as P
a = np.arange(8.).reshape(2, 4).astype(np.float32)
def spec(r):
  assert r.committed and isinstance(r.sharding, NamedSharding), r.sharding
  return r.sharding.spec
for t in (AxisType.Explicit, AxisType.Auto):
  mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ('x', 'y'), axis_types=(t,) * 2)
  ex = t == AxisType.Explicit
  F = lambda *s: P(*s) if ex else P()   # JAX: on Auto meshes XLA's replicated layout, P()
  with jax.set_mesh(mesh):
    # An uncommitted NumPy input is of no mesh: a unary op, a reduction, a transpose or a
    # dot of such inputs is laid out replicated, P(); ops that take the context mesh when
    # no operand has one (broadcasting n-ary ops, broadcast_in_dim, iota, concatenate,
    # select_n) give its type, P(None, ...).
    want = {
        'sin': (lambda: jnp.sin(a), P()), 'sqrt': (lambda: jnp.sqrt(a), P()),
        'sum': (lambda: jnp.sum(a), P()), 'sum0': (lambda: jnp.sum(a, 0), P()),
        'mean': (lambda: jnp.mean(a), P()), 'argmax': (lambda: jnp.argmax(a), P()),
        'matmul': (lambda: jnp.matmul(a, a.T), P()), 'sort': (lambda: jnp.sort(a), P()),
        'sin3d': (lambda: jnp.sin(np.ones((2, 2, 2), np.float32)), P()),
        'scalar': (lambda: jnp.sin(np.float32(2)), P()),
        'add_scalar': (lambda: jnp.add(a, 1.), F(None, None)),
        'mul_aa': (lambda: jnp.multiply(a, a), F(None, None)),
        'where': (lambda: jnp.where(a > 1, a, a), F(None, None)),
        'gt': (lambda: jnp.sin(a) > 0, F(None, None)),
        'concat': (lambda: jnp.concatenate([a, a]), F(None, None)),
        'stack': (lambda: jnp.stack([a, a]), F(None, None, None)),
        'expand': (lambda: jnp.expand_dims(a, 0), F(None, None, None)),
        'ones': (lambda: jnp.ones(3), F(None,)), 'zeros': (lambda: jnp.zeros((2, 4)), F(None, None)),
        'full': (lambda: jnp.full((2,), 3.), F(None,)), 'arange': (lambda: jnp.arange(4), F(None,)),
        'eye': (lambda: jnp.eye(2), F(None, None)), 'linspace': (lambda: jnp.linspace(0, 1, 4), F(None,)),
        'jit_sin': (lambda: jax.jit(jnp.sin)(a), P()),
        'jit_id': (lambda: jax.jit(lambda v: v)(a), P()),
        'jit_T': (lambda: jax.jit(lambda v: v.T)(a), P()),
        'jit_sum1': (lambda: jax.jit(lambda v: v.sum(1))(a), P()),
        'jit_cast': (lambda: jax.jit(lambda v: v.astype(np.int32))(a), P()),
        'jit_dot': (lambda: jax.jit(lambda v: v @ v.T)(a), P()),
        'jit_v2': (lambda: jax.jit(lambda v: v * 2)(a), F(None, None)),
        'jit_vv': (lambda: jax.jit(lambda v: v * v)(a), F(None, None)),
        'jit_bcast': (lambda: jax.jit(lambda v: v[None])(a), F(None, None, None)),
        'jit_ones': (lambda: jax.jit(lambda v: jnp.ones(3))(a), F(None,)),
        'jit_pair0': (lambda: jax.jit(lambda v: (v, jnp.ones(3)))(a)[0], P()),
        'jit_noargs': (lambda: jax.jit(lambda: jnp.ones(3))(), F(None,)),
        'jit_iota': (lambda: jax.jit(lambda: jnp.arange(3))(), F(None,)),
        'jit_const': (lambda: jax.jit(lambda: jnp.asarray(np.ones(3)))(), P()),
        'jit_scalar': (lambda: jax.jit(lambda v: v + 1)(1.), P()),
        'random': (lambda: jax.random.normal(jax.random.key(0), (3,)), F(None,)),
        'sin_uncommitted': (lambda: jnp.sin(jax.device_put(a)), P()),
        # jnp.array/asarray of host data commit it to the mesh, replicated (P()); on an
        # Explicit mesh it then has the mesh's type, so the ops after it are typed.
        'asarray': (lambda: jnp.asarray(a), P()), 'array': (lambda: jnp.array(a), P()),
        'asarray_list': (lambda: jnp.asarray([1., 2.]), P()), 'array_scalar': (lambda: jnp.array(1.), P()),
        'asarray_dtype': (lambda: jnp.asarray(a, dtype=np.int32), P()),
        'array_ndmin': (lambda: jnp.array(a[0], ndmin=2), F(None, None)),
        'sin_asarray': (lambda: jnp.sin(jnp.asarray(a)), F(None, None)),
        'neg_asarray': (lambda: -jnp.asarray(a), F(None, None)),
        'index_asarray': (lambda: jnp.asarray(a)[0], F(None,)),
        'at_asarray': (lambda: jnp.asarray(a).at[0].set(1.), F(None, None)),
    }
    for name, (fn, s) in want.items():
      got = spec(fn())
      assert got == s, (t, name, got, s)
    # device_put without a sharding stays uncommitted on one device; asarray of an Array
    # returns it as is; jnp.array copies it onto the mesh.
    u = jax.device_put(a)
    assert type(u.sharding).__name__ == 'SingleDeviceSharding' and not u.committed
    assert jnp.asarray(u) is u
    assert spec(jnp.array(u)) == P()
    assert jnp.array(jnp.asarray(a)).sharding.mesh == mesh
    close(jnp.sin(a), np.sin(a)); close(jnp.arange(4), np.arange(4)); close(jnp.add(a, 1.), a + 1)
  # After the block: one device again.
  assert type(jnp.sin(a).sharding).__name__ == 'SingleDeviceSharding'
# A jitted function first traced under one mesh and called under another (random.normal's
# inner jits are cached): each call is laid out for its own context.
m_e = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)
m_a = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ('x', 'y'), axis_types=(AxisType.Auto,) * 2)
for m, s in ((None, None), (m_e, P(None,)), (m_a, P()), (m_e, P(None,)), (None, None)):
  if m is None:
    r = jax.random.normal(jax.random.key(0), (3,))
    assert type(r.sharding).__name__ == 'SingleDeviceSharding'
    continue
  with jax.set_mesh(m):
    r = jax.random.normal(jax.random.key(0), (3,))
    assert r.sharding == NamedSharding(m, s), (m, r.sharding)
    r = jnp.arange(5)
    assert r.sharding == NamedSharding(m, P(None,) if m is m_e else P()), r.sharding
"""

SHARDING_NAMES = HELPERS + """
from tracejax import sharding as S
from tracejax.sharding import AbstractMesh, AxisType
import tracejax.experimental.shard_map, tracejax.distributed
from tracejax.experimental import mesh_utils, multihost_utils
# JAX 0.10.2's public names of these modules (dir(), recorded) are all here.
JAX_NAMES = {
    S: "AbstractDevice AbstractMesh AxisType ManualAxisType Mesh NamedSharding PartitionSpec "
       "Sharding SingleDeviceSharding auto_axes explicit_axes get_abstract_mesh get_mesh "
       "make_single_device_sharding reshard set_mesh use_abstract_mesh",
    tracejax.distributed: "initialize is_initialized shutdown",
    mesh_utils: "create_device_mesh create_hybrid_device_mesh device_kind_handler_dict",
    multihost_utils: "ProcessFailureError assert_equal broadcast_one_to_all "
       "global_array_to_host_local_array host_local_array_to_global_array live_devices "
       "process_allgather reached_preemption_sync_point sync_global_devices",
    lax: "psum pmean pmax pmin all_gather psum_scatter all_to_all ppermute pshuffle pswapaxes "
         "axis_index axis_size pbroadcast ragged_all_to_all",
    tracejax.experimental.shard_map: "jshmap traceback_util",
}
for mod, names in JAX_NAMES.items():
  missing = [n for n in names.split() if n not in dir(mod)]
  assert not missing, (mod.__name__, missing)

# jax.experimental.shard_map.shard_map: deprecated (a DeprecationWarning on access).
import warnings
with warnings.catch_warnings(record=True) as w:
  warnings.simplefilter('always')
  sm = tracejax.experimental.shard_map.shard_map
assert [str(x.message) for x in w] == ["jax.experimental.shard_map is deprecated in v0.8.0. "
                                       "Used jax.shard_map instead."], w
assert w[0].category is DeprecationWarning and sm is jax.shard_map

d = S.AbstractDevice(device_kind='cpu', num_cores=None, platform='cpu')
assert repr(d) == 'AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)'
assert d == S.AbstractDevice('cpu', None, 'cpu') and hash(d) == hash(S.AbstractDevice('cpu', None, 'cpu'))
m = S.ManualAxisType(varying=frozenset({'x'}))
assert repr(m) == "ManualAxisType(varying=frozenset({'x'}), unreduced=frozenset(), reduced=frozenset())"
assert repr(S.ManualAxisType()) == "ManualAxisType(varying=frozenset(), unreduced=frozenset(), reduced=frozenset())"
assert S.ManualAxisType(varying={'x'}) is m
expect(ValueError, "varying and unreduced cannot have common mesh axes. Got varying={'x'} and unreduced={'x'}",
       lambda: S.ManualAxisType(varying={'x'}, unreduced={'x'}))
expect(ValueError, "varying and reduced cannot have common mesh axes. Got varying={'x'} and reduced={'x'}",
       lambda: S.ManualAxisType(varying={'x'}, reduced={'x'}))
expect(TypeError, "", lambda: S.ManualAxisType({'x'}), prefix=True)
assert repr(S.make_single_device_sharding(jax.devices()[1])) == \\
    "SingleDeviceSharding(device=CpuDevice(id=1), memory_kind=device)"
assert S.make_single_device_sharding(jax.devices()[1], memory_kind='device') == \\
    S.SingleDeviceSharding(jax.devices()[1])

am = AbstractMesh((2, 2), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)
assert repr(am) == "AbstractMesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))"
assert repr(AbstractMesh((), ())) == "AbstractMesh((), axis_types=())"
expect(ValueError, "Expected mesh of type `jax.sharding.AbstractMesh`. Got type:",
       lambda: S.use_abstract_mesh(jax.make_mesh((2, 2), ('x', 'y'))), prefix=True)
with S.use_abstract_mesh(am):
  assert S.get_abstract_mesh() is am
  z = AbstractMesh((4,), ('z',), axis_types=(AxisType.Explicit,))
  with S.use_abstract_mesh(z):
    assert S.get_abstract_mesh() is z
  assert S.get_abstract_mesh() is am
  with S.use_abstract_mesh(AbstractMesh((), ())):
    assert S.get_abstract_mesh().empty
assert repr(S.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
am8 = AbstractMesh((8,), ('x',), axis_types=(AxisType.Explicit,))
with jax.set_mesh(jax.make_mesh((2, 2), ('x', 'y'), axis_types=(AxisType.Explicit,) * 2)):
  expect(ValueError, "use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
         "AbstractMesh('x': 8, axis_types=(Explicit,)) with size=8 and prev mesh: "
         "AbstractMesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit), device_kind=cpu, "
         "num_cores=None, platform=cpu) with size=4", lambda: S.use_abstract_mesh(am8).__enter__())
  assert S.get_abstract_mesh().size == 4

# mesh_utils
ids = lambda a: [d.id for d in np.ravel(a)]
expect(ValueError, "Device cpu:0 does not have attribute slice_index. See `process_is_granule` option.",
       lambda: mesh_utils.create_hybrid_device_mesh((4,), (1,)))
expect(ValueError, "Number of slices 1 must equal the product of dcn_mesh_shape (2,)",
       lambda: mesh_utils.create_hybrid_device_mesh((2,), (2,), process_is_granule=True))
h = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1), process_is_granule=True)
assert h.shape == (2, 2) and ids(h) == [0, 1, 2, 3]
expect(ValueError, "Number of devices 4 must equal the product of mesh_shape (3, 2)",
       lambda: mesh_utils.create_device_mesh((3, 2)))
assert mesh_utils.device_kind_handler_dict == {} or isinstance(mesh_utils.device_kind_handler_dict, dict)
mesh_utils.device_kind_handler_dict['cpu'] = lambda shape, devs, contiguous_submeshes=False: \\
    np.array(devs[::-1], dtype=object).reshape(shape)
try:
  assert ids(mesh_utils.create_device_mesh((2, 2))) == [3, 2, 1, 0]
finally:
  del mesh_utils.device_kind_handler_dict['cpu']
assert ids(mesh_utils.create_device_mesh((2, 2))) == [0, 1, 2, 3]

# multihost_utils in one process: no preemption point; live_devices needs jax.distributed.
assert multihost_utils.reached_preemption_sync_point(0) is False
def live():
  with multihost_utils.live_devices(jax.devices()):
    pass
expect(RuntimeError, "Distributed JAX not initialized.", live)
e = multihost_utils.ProcessFailureError({jax.devices()[0]})
assert e.failed_devices == {jax.devices()[0]} and str(e) == "Devices failed: {CpuDevice(id=0)}"
assert jax.config.jax_enable_preemption_service is True
"""


def test_pmap_argument_errors_as_jax():
  run_devices(PMAP_ERRORS, 4)


def test_collective_errors_as_jax():
  run_devices(COLLECTIVE_ERRORS, 4)


def test_pbroadcast():
  run_devices(PBROADCAST, 4)


def test_ragged_all_to_all():
  run_devices(RAGGED, 4)


def test_smap_and_top_level_names():
  run_devices(SMAP, 4)


def test_pmap_hidden_in_cond_of_a_pmap_body_is_an_error():
  run_devices(NESTED_IN_COND, 4)


def test_set_mesh_numpy_inputs_as_jax():
  run_devices(SET_MESH_NUMPY, 4)


def test_sharding_mesh_utils_multihost_names():
  run_devices(SHARDING_NAMES, 4)


# ---- multihost_utils across processes (jax.distributed) ----

WORKER = r"""
import json, os, signal, sys, time
os.environ["TRACEJAX_NUM_CPU_DEVICES"] = "2"
import tracejax as jax
from tracejax.experimental import multihost_utils as mu
pid, n, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(f"127.0.0.1:{port}", n, pid, initialization_timeout=30)
res = {}
with mu.live_devices(jax.devices()) as devs:
  res["live"] = [d.id for d in devs]
try:
  with mu.live_devices(jax.devices()):
    raise KeyError("inside")
except KeyError as e:
  res["reraised"] = str(e)
for name, devs in (("empty", []), ("nolocal", [d for d in jax.devices() if d.process_index != pid])):
  try:
    with mu.live_devices(devs):
      pass
  except ValueError as e:
    res[name] = str(e)
# A preemption notice (SIGTERM) to process 0 at step 3: every process reaches the same
# sync step, after it.
hit = None
for step in range(60):
  if pid == 0 and step == 3:
    os.kill(os.getpid(), signal.SIGTERM)
  if mu.reached_preemption_sync_point(step):
    hit = step
    break
  time.sleep(0.1)
res["hit"] = hit
mu.sync_global_devices("end")
jax.distributed.shutdown()
res["after"] = mu.reached_preemption_sync_point(5)
print("RESULT " + json.dumps(res), flush=True)
"""


def test_multihost_preemption_and_live_devices_across_processes(tmp_path):
  script = tmp_path / "worker.py"
  script.write_text(WORKER)
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2", TRACEJAX_TRY_GPU="0")
  procs = [subprocess.Popen([sys.executable, str(script), str(pid), "2", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=ROOT, text=True) for pid in range(2)]
  results = []
  try:
    for p in procs:
      so, se = p.communicate(timeout=120)
      lines = [l for l in so.splitlines() if l.startswith("RESULT ")]
      assert p.returncode == 0 and lines, f"rc={p.returncode}\n{so}\n{se[-3000:]}"
      results.append(json.loads(lines[-1][len("RESULT "):]))
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.wait()
  for r in results:
    assert r["live"] == results[0]["live"] and len(r["live"]) == 4
    assert r["reraised"] == "'inside'"
    assert r["empty"] == "No devices provided."
    assert r["nolocal"] == "Provided devices do not have any local devices."
    assert r["after"] is False
  hits = [r["hit"] for r in results]
  assert hits[0] is not None and hits[0] > 3 and hits[0] == hits[1], hits
