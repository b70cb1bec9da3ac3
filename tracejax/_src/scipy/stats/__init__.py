"""jax.scipy.stats: log densities and distribution functions."""
