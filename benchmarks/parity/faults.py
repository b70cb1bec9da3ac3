"""Per-call user/system CPU time, minor page faults and context switches of the
steady-state step (load-independent counters; issue 14)."""
import os, sys, time, resource, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system, model = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
build = {"mlp": lambda: models.mlp(jax, jnp), "convnet": lambda: models.convnet(jax, jnp),
         "vmap": lambda: models.mlp_variant(jax, jnp, "vmap_take")}[model]
f, host = build()
args = jax.device_put(host)
for _ in range(20):
  jax.block_until_ready(f(*args))
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
for _ in range(n):
  jax.block_until_ready(f(*args))
t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_SELF)
per = lambda a: (getattr(r1, a) - getattr(r0, a)) / n
print(f"{system:8s} {model:7s} wall {(t1-t0)/n*1e6:7.0f} us user {per('ru_utime')*1e6:6.0f} us sys {per('ru_stime')*1e6:5.0f} us "
      f"minflt {per('ru_minflt'):6.1f} vcsw {per('ru_nvcsw'):5.1f} ivcsw {per('ru_nivcsw'):5.1f}")
