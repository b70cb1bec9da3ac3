"""A directory that `python -m tracejax run` puts first on `PYTHONPATH`.

It holds only `sitecustomize.py`, which Python's `site` module imports at the
start of every interpreter: child processes of a `run` (pytest-xdist workers,
`subprocess` calls of `sys.executable`) get the `jax` alias hook that way. The
directory is a package only so that setuptools ships it inside tracejax; nothing
imports it as `tracejax._alias_site`.
"""
