"""jax.scipy: SciPy's special functions, distributions and linear algebra on tracejax."""
