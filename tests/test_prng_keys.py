"""Typed PRNG key arrays (`jax.random.key`) as array leaves of dtype `key<fry>`.

Typed keys must give exactly the numbers of raw uint32 keys with the same data, pass
through every transformation as one leaf, and print and fail as JAX's do. The
literal key words below were printed by real JAX 0.10.2 (threefry partitionable).
"""
import copy
import pickle

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax, random
from tracejax._src.config import config


@pytest.fixture
def partitionable():
  old = config.jax_threefry_partitionable
  config.update("jax_threefry_partitionable", True)
  try:
    yield
  finally:
    config.update("jax_threefry_partitionable", old)


# random.split(random.key(0), 3) in JAX 0.10.2 (its default, partitionable stream).
JAX_SPLIT3 = np.array([[1797259609, 2579123966], [928981903, 3453687069],
                       [4146024105, 2718843009]], np.uint32)


def _data(k):
  return np.asarray(random.key_data(k))


# ---- what a key array is ----

def test_key_is_a_leaf_with_an_extended_dtype():
  k = random.key(0)
  ks = random.split(k, 3)
  assert k.shape == () and ks.shape == (3,) and ks.ndim == 1 and ks.size == 3
  assert str(ks.dtype) == "key<fry>" and ks.dtype == k.dtype and ks.itemsize == 8
  assert jax.dtypes.issubdtype(ks.dtype, jax.dtypes.prng_key)
  assert jax.dtypes.issubdtype(ks.dtype, jax.dtypes.extended)
  assert not jax.dtypes.issubdtype(ks.dtype, np.integer)
  assert isinstance(ks, jax.Array)
  leaves, tree = jax.tree_util.tree_flatten({"k": ks, "x": jnp.ones(2)})
  assert leaves[0] is ks and tree.num_leaves == 2
  assert jax.tree.leaves(k) == [k]
  assert jax.tree.map(lambda x: x.shape, {"k": ks}) == {"k": (3,)}
  assert str(jax.typeof(ks)) == "key<fry>[3]"
  assert repr(jax.typeof(k)) == "ShapedArray(key<fry>[])"


def test_repr_and_conversions():
  k = random.key(0)
  assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
  assert str(k) == repr(k)
  with pytest.raises(TypeError, match="PRNGKey dtype cannot be converted to a NumPy"):
    np.asarray(k)
  with pytest.raises(TypeError, match="boolean"):
    bool(k)
  with pytest.raises(TypeError, match="unhashable"):
    hash(k)
  ks = random.split(k, 3)
  assert jnp.asarray(ks) is ks
  np.testing.assert_array_equal(_data(pickle.loads(pickle.dumps(ks))), _data(ks))
  np.testing.assert_array_equal(_data(copy.deepcopy(ks)), _data(ks))


def test_key_data_wrap_key_data_round_trip():
  data = np.arange(8, dtype=np.uint32).reshape(4, 2)
  ks = random.wrap_key_data(data)
  assert ks.shape == (4,) and str(ks.dtype) == "key<fry>"
  np.testing.assert_array_equal(_data(ks), data)
  np.testing.assert_array_equal(_data(random.wrap_key_data(random.key_data(ks))), data)
  # Under jit and vmap too; a batch axis on the word axis is moved off it.
  np.testing.assert_array_equal(_data(jax.jit(random.wrap_key_data)(data)), data)
  np.testing.assert_array_equal(jax.jit(random.key_data)(ks), data)
  vk = jax.vmap(random.wrap_key_data, in_axes=1)(data.T.copy())
  np.testing.assert_array_equal(_data(vk), data)
  with pytest.raises(TypeError, match="shape to end with"):
    random.wrap_key_data(jnp.zeros(3, jnp.uint32))
  with pytest.raises(TypeError, match="uint32"):
    random.wrap_key_data(jnp.zeros((3, 2), jnp.int32))


# ---- typed keys give the numbers of raw keys ----

def test_typed_matches_raw_bit_exactly():
  k, raw = random.key(42), random.PRNGKey(42)
  np.testing.assert_array_equal(_data(k), raw)
  np.testing.assert_array_equal(_data(random.split(k, 4)), random.split(raw, 4))
  np.testing.assert_array_equal(_data(random.fold_in(k, 7)), random.fold_in(raw, 7))
  np.testing.assert_array_equal(random.bits(k, (5,)), random.bits(raw, (5,)))
  np.testing.assert_array_equal(random.normal(k, (5,)), random.normal(raw, (5,)))
  np.testing.assert_array_equal(random.uniform(k, (2, 3)), random.uniform(raw, (2, 3)))
  np.testing.assert_array_equal(random.randint(k, (4,), 0, 9), random.randint(raw, (4,), 0, 9))


def test_split_matches_jax(partitionable):
  np.testing.assert_array_equal(_data(random.split(random.key(0), 3)), JAX_SPLIT3)
  # The same numbers whichever transformation computes them.
  np.testing.assert_array_equal(_data(jax.jit(random.split, static_argnums=1)(
      random.key(0), 3)), JAX_SPLIT3)


# ---- keys through the transformations ----

def test_jit_takes_and_returns_keys():
  ks = random.split(random.key(1), 3)
  f = jax.jit(lambda ks, i: (ks[i], random.split(ks[0])[1], ks[1:], ks.reshape(3, 1).T))
  for _ in range(2):  # the second call runs the cached program
    a, b, c, d = f(ks, 2)
    np.testing.assert_array_equal(_data(a), _data(ks)[2])
    np.testing.assert_array_equal(_data(b), _data(random.split(ks[0]))[1])
    np.testing.assert_array_equal(_data(c), _data(ks)[1:])
    assert d.shape == (1, 3)
    np.testing.assert_array_equal(_data(d)[0], _data(ks))
  seen = []

  def g(k):
    seen.append(str(jax.typeof(k)))
    return k
  np.testing.assert_array_equal(_data(jax.jit(g)(ks)), _data(ks))
  assert seen == ["key<fry>[3]"]
  k = random.key(3)
  np.testing.assert_array_equal(_data(jax.jit(lambda: k)()), _data(k))  # a constant
  # donated key arguments, and keys out of an eagerly run checkpoint
  donated = jax.jit(lambda k: random.split(k), donate_argnums=0)(random.key(3))
  np.testing.assert_array_equal(_data(donated), _data(random.split(k)))
  np.testing.assert_array_equal(_data(jax.checkpoint(lambda k: random.split(k))(k)),
                                _data(random.split(k)))
  out = jax.eval_shape(lambda k: random.split(k, 4), k)
  assert out.shape == (4,) and str(out.dtype) == "key<fry>"
  jaxpr = str(jax.make_jaxpr(lambda k: random.normal(k))(k))
  assert "key<fry>[]" in jaxpr or "random_unwrap" in jaxpr


def test_vmap_over_keys_matches_a_loop():
  ks = random.split(random.key(5), 4)
  out = jax.vmap(lambda k: random.normal(k, (2,)))(ks)
  expected = np.stack([random.normal(k, (2,)) for k in ks])
  np.testing.assert_array_equal(out, expected)
  new = jax.vmap(lambda k: random.split(k)[1])(ks)
  assert new.shape == (4,) and str(new.dtype) == "key<fry>"
  np.testing.assert_array_equal(_data(new), np.stack([_data(random.split(k)[1]) for k in ks]))
  # out_axes of a key result count key axes only; an unbatched key is broadcast.
  sp = jax.vmap(lambda k: random.split(k, 3), out_axes=-1)(ks)
  assert sp.shape == (3, 4)
  np.testing.assert_array_equal(_data(sp), np.swapaxes(_data(jax.vmap(
      lambda k: random.split(k, 3))(ks)), 0, 1))
  k0 = random.key(0)
  b = jax.vmap(lambda x: k0, axis_size=2)(jnp.ones(2))
  np.testing.assert_array_equal(_data(b), np.zeros((2, 2), np.uint32))


def test_grad_of_functions_taking_keys():
  k = random.key(0)
  n = float(random.normal(k))
  g = jax.grad(lambda x, k: x * random.normal(k))(2.0, k)
  np.testing.assert_allclose(g, n, rtol=1e-6)
  h = jax.hessian(lambda k, x: jnp.sum(x ** 2 * random.normal(k, x.shape)), argnums=1)(
      k, jnp.ones(2))
  np.testing.assert_allclose(np.diag(h), 2 * np.asarray(random.normal(k, (2,))), rtol=1e-6)
  g = jax.grad(lambda p: p["w"] * random.normal(p["k"]), allow_int=True)({"w": 2.0, "k": k})
  assert g["k"].dtype == jax.dtypes.float0 and g["k"].shape == ()
  np.testing.assert_allclose(g["w"], n, rtol=1e-6)
  with pytest.raises(TypeError, match="key<fry>"):
    jax.grad(lambda k: 1.0)(k)
  ct = jax.vjp(lambda k, x: x * random.normal(k), k, 1.0)[1](1.0)
  assert ct[0].dtype == jax.dtypes.float0
  np.testing.assert_allclose(ct[1], n, rtol=1e-6)
  (pk, px), (tk, tx) = jax.jvp(lambda k, x: (k, x * random.normal(k)), (k, 1.0),
                               (np.zeros((), jax.dtypes.float0), 1.0))
  assert str(pk.dtype) == "key<fry>" and tk.dtype == jax.dtypes.float0
  np.testing.assert_allclose(tx, n, rtol=1e-6)
  g = jax.grad(jax.checkpoint(lambda x, k: x * random.normal(k)))(2.0, k)
  np.testing.assert_allclose(g, n, rtol=1e-6)


def test_scan_cond_while_with_keys():
  k = random.key(7)
  ks = random.split(k, 3)
  # keys as the carry, and stacked as outputs
  carry, ys = lax.scan(lambda c, _: (random.split(c)[0], c), k, None, length=3)
  c = k
  for i in range(3):
    np.testing.assert_array_equal(_data(ys)[i], _data(c))
    c = random.split(c)[0]
  np.testing.assert_array_equal(_data(carry), _data(c))
  # keys as the scanned-over xs
  total, _ = lax.scan(lambda s, kk: (s + random.normal(kk), None), 0.0, ks)
  np.testing.assert_allclose(total, sum(float(random.normal(kk)) for kk in ks), rtol=1e-6)
  out = lax.cond(False, lambda a: a, lambda a: random.fold_in(a, 1), k)
  np.testing.assert_array_equal(_data(out), _data(random.fold_in(k, 1)))
  pred = jnp.array([True, False, True])
  sel = jax.vmap(lambda p, a: lax.cond(p, lambda a: a, lambda a: random.fold_in(a, 1), a))(
      pred, ks)
  for i in range(3):
    want = ks[i] if pred[i] else random.fold_in(ks[i], 1)
    np.testing.assert_array_equal(_data(sel)[i], _data(want))
  w = lax.fori_loop(0, 3, lambda i, c: random.fold_in(c, i), k)
  c = k
  for i in range(3):
    c = random.fold_in(c, i)
  np.testing.assert_array_equal(_data(w), _data(c))
  vw = jax.vmap(lambda kk, n: lax.while_loop(
      lambda s: s[1] < n, lambda s: (random.split(s[0])[0], s[1] + 1), (kk, 0))[0])(
          ks, jnp.array([0, 1, 2]))
  np.testing.assert_array_equal(_data(vw)[0], _data(ks[0]))
  np.testing.assert_array_equal(_data(vw)[2], _data(random.split(random.split(ks[2])[0])[0]))


def test_device_put_and_methods():
  ks = random.split(random.key(2), 4)
  d = jax.device_put(ks, jax.devices()[0])
  assert str(d.dtype) == "key<fry>" and d.shape == (4,)
  np.testing.assert_array_equal(_data(d), _data(ks))
  assert ks.devices() == {jax.devices()[0]}
  assert len(ks) == 4 and [k.shape for k in ks] == [()] * 4
  np.testing.assert_array_equal(ks == ks, [True] * 4)
  np.testing.assert_array_equal(ks[0] != ks, [False, True, True, True])
  assert ks.reshape(2, 2).shape == (2, 2) and ks.reshape(4, 1).squeeze().shape == (4,)
  assert ks.reshape(2, 2).T.shape == (2, 2) and ks.ravel().shape == (4,)
  np.testing.assert_array_equal(_data(ks.reshape(2, 2).T), _data(ks).reshape(2, 2, 2)
                                .transpose(1, 0, 2))
  np.testing.assert_array_equal(_data(ks[jnp.array([3, 0])]), _data(ks)[[3, 0]])
  np.testing.assert_array_equal(jax.jit(lambda a: a == ks)(ks), [True] * 4)


def test_jnp_functions_that_take_keys():
  k = random.key(0)
  ks = random.split(k, 3)
  d = _data(ks)
  np.testing.assert_array_equal(_data(jnp.stack([ks, ks], axis=-1)), np.stack([d, d], 1))
  np.testing.assert_array_equal(_data(jnp.concatenate([ks, ks[:1]])), d[[0, 1, 2, 0]])
  pred = np.array([True, False, True])
  np.testing.assert_array_equal(_data(jnp.where(pred, ks, k)), np.where(pred[:, None], d, 0))
  assert jnp.broadcast_to(k, (2, 2)).shape == (2, 2) and jnp.expand_dims(ks, -1).shape == (3, 1)
  out = jax.jit(lambda ks: jnp.stack(list(ks)[::-1]))(ks)
  np.testing.assert_array_equal(_data(out), d[::-1])
  # optax's tree_split_key_like: one key per leaf, unflattened from a key array
  tree = jax.tree.unflatten(jax.tree.structure({"a": 1, "b": 2}), random.split(k, 2))
  assert str(tree["b"].dtype) == "key<fry>" and tree["b"].shape == ()
  # optax's MultiSteps: jnp.astype(jnp.where(emit, new, old), old.dtype) on every leaf
  assert jnp.astype(ks, ks.dtype) is ks and ks.astype(ks.dtype) is ks
  out = jax.jit(lambda e, a, b: jnp.astype(jnp.where(e, a, b), a.dtype))(True, ks, ks[::-1])
  np.testing.assert_array_equal(_data(out), d)
  with pytest.raises(TypeError, match="cannot convert a key array"):
    jnp.astype(ks, jnp.uint32)
  with pytest.raises(TypeError, match="cannot be combined"):
    jnp.stack([k, jnp.zeros(())])


def test_arithmetic_on_keys_is_an_error():
  k = random.key(0)
  for f in (lambda: k + 1, lambda: k * k, lambda: -k, lambda: jnp.add(k, k),
            lambda: lax.add(k, k), lambda: jnp.sum(random.split(k)),
            lambda: jax.jit(lambda a: a + 1)(k), lambda: k.astype(jnp.float32)):
    with pytest.raises(TypeError):
      f()
  with pytest.raises(TypeError, match="scalar seed, but was given a PRNG key"):
    random.key(k)
  with pytest.raises(ValueError, match="single key"):
    random.normal(random.split(k, 2))
