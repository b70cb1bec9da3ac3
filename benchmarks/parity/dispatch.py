"""Dispatch latency of the jitted step (time to return, not blocked), after the previous
call is done; and whether tracejax's call takes jaxlib's C++ fast path."""
import os, sys, time, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system, model = sys.argv[1], sys.argv[2]
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
f, host = {"mlp": lambda: models.mlp(jax, jnp), "convnet": lambda: models.convnet(jax, jnp)}[model]()
args = host if os.environ.get("HOSTARGS") else jax.device_put(host)
for _ in range(5):
  jax.block_until_ready(f(*args))
ds = []
for _ in range(200):
  t0 = time.perf_counter()
  r = f(*args)
  t1 = time.perf_counter()
  jax.block_until_ready(r)
  ds.append((t1 - t0) * 1e6)
print(system, model, "dispatch median us", round(statistics.median(ds), 1), "p10", round(sorted(ds)[20], 1))
if system == "tracejax":
  print("cache size", getattr(f, "_cache_size", lambda: "?")())
