"""Collectives over named axes bound by vmap (the semantics pmap shares)."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax._src.lax import parallel as P

X = jnp.arange(4.)


def test_psum_pmean_pmax_axis_index():
  np.testing.assert_allclose(jax.vmap(lambda v: v / P.psum(v, "i"), axis_name="i")(X),
                             np.arange(4.) / 6.)
  np.testing.assert_array_equal(jax.vmap(lambda v: P.axis_index("i"), axis_name="i")(X),
                                [0, 1, 2, 3])
  np.testing.assert_allclose(jax.vmap(lambda v: P.pmax(v, "i") + P.pmean(v, "i"),
                                      axis_name="i")(X), [4.5] * 4)
  np.testing.assert_allclose(jax.jit(jax.vmap(lambda v: v - P.pmean(v, "i"),
                                              axis_name="i"))(X), [-1.5, -.5, .5, 1.5])


def test_all_gather_and_ppermute():
  out = jax.vmap(lambda v: P.all_gather(v, "i"), axis_name="i")(X)
  np.testing.assert_array_equal(out, np.tile(np.arange(4.), (4, 1)))
  out = jax.vmap(lambda v: P.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
                 axis_name="i")(X)
  np.testing.assert_array_equal(out, [3., 0., 1., 2.])


def test_nested_names_and_grad():
  out = jax.vmap(jax.vmap(lambda a: P.psum(a, "i"), axis_name="j"), axis_name="i")(
      jnp.ones((2, 3)))
  np.testing.assert_array_equal(out, 2 * np.ones((2, 3)))
  g = jax.grad(lambda x: jnp.sum(jax.vmap(lambda v: v * P.psum(v, "i"), axis_name="i")(x)))(X)
  np.testing.assert_allclose(g, [12.] * 4)
  out = jax.vmap(lambda v: jax.jit(lambda u: u * P.axis_index("i"))(v), axis_name="i")(X)
  np.testing.assert_array_equal(out, [0., 1., 4., 9.])


def test_transposes_follow_jax():
  # psum's transpose is psum: per member, d psum(v) / dv summed over the members = 4.
  np.testing.assert_allclose(jax.vmap(jax.grad(lambda v: P.psum(v, "i")), axis_name="i")(X),
                             [4.] * 4)
  # all_gather's transpose is psum_scatter, and the reverse
  ct = jax.vmap(jax.grad(lambda v: jnp.sum(P.all_gather(v, "i") * jnp.arange(4.))),
                axis_name="i")(X)
  np.testing.assert_allclose(ct, 4 * np.arange(4.))
  y = jnp.arange(16.).reshape(4, 4)
  np.testing.assert_allclose(jax.vmap(lambda v: P.psum_scatter(v, "i"), axis_name="i")(y),
                             np.asarray(y).sum(0))
  np.testing.assert_allclose(jax.vmap(lambda v: P.pshuffle(v, "i", [3, 2, 1, 0]),
                                      axis_name="i")(X), [3., 2., 1., 0.])


def test_unbound_name():
  with pytest.raises(NameError, match="unbound axis name"):
    P.psum(1., "q")


def test_pmap_single_device_semantics_and_printing():
  from tracejax._src.pmap import pmap
  np.testing.assert_array_equal(pmap(lambda x: x / P.psum(x, "i"), axis_name="i")(jnp.ones(1)),
                                [1.])
  text = str(jax.make_jaxpr(lambda a: pmap(lambda x: x / P.psum(x, "rows"),
                                           axis_name="rows")(a))(jnp.ones((1, 3))))
  assert "xla_pmap[ axis_name=rows" in text and "psum[ axis_name=rows ]" in text
  assert "mapped_invars=(True,)" in text
  g = jax.grad(lambda a: jnp.sum(pmap(lambda x: x * P.psum(x, "i"), axis_name="i")(a)))(
      jnp.ones((1, 3)))
  np.testing.assert_array_equal(g, 2 * np.ones((1, 3)))
  out = jax.vmap(pmap(lambda x: x * 2., axis_name="i"))(jnp.ones((2, 1, 3)))
  np.testing.assert_array_equal(out, 2 * np.ones((2, 1, 3)))
  with pytest.raises(ValueError, match="logical devices"):
    pmap(lambda x: x)(jnp.ones(jax.device_count() + 1))
