"""Version numbers (`jax.version`).

`__version__` is tracejax's own release. `__version_info__` is the JAX API level that
tracejax implements, as a tuple: libraries written for JAX gate features on
`jax.__version_info__` (flax: `> (0, 4, 25)`), and tracejax offers the API of JAX
0.10.2, so that is what they must see.

  >>> from tracejax import version
  >>> version.__version_info__
  (0, 10, 2)
"""
__version__ = "0.1.0"
__version_info__ = (0, 10, 2)
_jax_api_version = "0.10.2"
