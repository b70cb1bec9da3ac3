"""`python -m tracejax run SCRIPT [ARGS...]`: run an unmodified JAX program on tracejax.

An import hook makes `import jax` and every `jax.*` submodule resolve to the
tracejax module of the same name, then the script runs as `__main__`.
"""
import os
import runpy
import sys

USAGE = "usage: python -m tracejax run SCRIPT [ARGS...]"


def main(argv=None):
  argv = list(sys.argv[1:] if argv is None else argv)
  if len(argv) < 2 or argv[0] != "run":
    print(USAGE, file=sys.stderr)
    return 2
  script = argv[1]
  if not os.path.exists(script):
    print(f"tracejax run: no such file: {script}", file=sys.stderr)
    return 2
  from tracejax._src import jax_alias
  jax_alias.install()
  sys.argv = [script] + argv[2:]
  sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
  runpy.run_path(script, run_name="__main__")
  return 0


if __name__ == "__main__":
  sys.exit(main())
