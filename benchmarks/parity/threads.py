import os, sys
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system = sys.argv[1]
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
f, host = models.mlp(jax, jnp)
dev = jax.device_put(host)
for _ in range(20):
  jax.block_until_ready(f(*dev))
import collections
names = collections.Counter()
for t in os.listdir(f"/proc/{os.getpid()}/task"):
  names[open(f"/proc/{os.getpid()}/task/{t}/comm").read().strip()] += 1
print(system, sum(names.values()), dict(names))
print(sorted(m for m in sys.modules if m.split(".")[0] in ("scipy", "numpy", "ml_dtypes", "opt_einsum"))[:5], len(sys.modules))
