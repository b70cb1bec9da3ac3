"""Training-loop steady state: parameters fed back each call (issue 14). Dispatch latency
(time for the call to return) and blocked time per step, wall and CPU."""
import os, sys, time, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
step, (p, x, y) = models.convnet(jax, jnp)
p, x, y = jax.device_put((p, x, y))
for _ in range(10):
  v, p = step(p, x, y)
jax.block_until_ready(p)
disp, tot = [], []
c0 = time.process_time()
for _ in range(n):
  t0 = time.perf_counter()
  v, p = step(p, x, y)
  t1 = time.perf_counter()
  jax.block_until_ready(v)
  t2 = time.perf_counter()
  disp.append((t1 - t0) * 1e6); tot.append((t2 - t0) * 1e6)
c1 = time.process_time()
print(f"{system:8s} feed-back convnet: dispatch median {statistics.median(disp):6.0f} us, step median {statistics.median(tot):6.0f} us, cpu/step {(c1-c0)/n*1e6:6.0f} us, loss {float(v):.6f}")
if system == "tracejax":
  print("  jit cache entries:", step._cache_size() if hasattr(step, "_cache_size") else "?")
