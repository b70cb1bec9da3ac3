"""Print the CompileOptions each system builds for a 1-device CPU jit (run under both)."""
import sys, os
os.environ.setdefault("JAX_PLATFORMS", "cpu")
system = sys.argv[1]
if system == "jax":
  import jax
  from jax._src import compiler, xla_bridge
  from jax._src.lib import xla_client as xc
  dev = jax.devices()[0]
  opts = compiler.get_compile_options(num_replicas=1, num_partitions=1,
                                      device_assignment=[dev], backend=xla_bridge.get_backend())
else:
  from tracejax._src.runtime import backend
  from jaxlib import xla_client as xc
  opts = backend._compile_options()
def dump(obj, prefix):
  for k in sorted(dir(obj)):
    if k.startswith("_"): continue
    try:
      v = getattr(obj, k)
    except Exception as e:
      v = f"<{type(e).__name__}>"
    if callable(v): continue
    if k in ("executable_build_options", "debug_options"):
      dump(v, prefix + k + "."); continue
    print(f"{prefix}{k} = {v!r}"[:300])
dump(opts, "")
print("serialized len", len(opts.SerializeAsString()))
open(f"opts_{system}.bin", "wb").write(opts.SerializeAsString())
