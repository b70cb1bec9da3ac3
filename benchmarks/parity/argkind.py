"""Steady-state step with device arrays vs NumPy arrays as arguments (issue 14)."""
import os, sys, time, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system, model = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
f, host = {"mlp": lambda: models.mlp(jax, jnp), "convnet": lambda: models.convnet(jax, jnp)}[model]()
dev = jax.device_put(host)
calls = 10
res = {"device": [], "numpy": []}
cpu = {"device": [], "numpy": []}
for _ in range(3):
  jax.block_until_ready(f(*dev)); jax.block_until_ready(f(*host))
for r in range(rounds):
  for k in (("device", "numpy") if r % 2 else ("numpy", "device")):
    a = dev if k == "device" else host
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
      jax.block_until_ready(f(*a))
    t1, c1 = time.perf_counter(), time.process_time()
    res[k].append((t1 - t0) / calls * 1e6); cpu[k].append((c1 - c0) / calls * 1e6)
for k in res:
  print(f"{system:8s} {model} args={k:6s} wall {statistics.median(res[k]):7.0f} us cpu {statistics.median(cpu[k]):7.0f} us")
