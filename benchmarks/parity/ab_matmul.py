"""A/B in one process: vmap(predict_one) with `x @ w` (1-D x) vs `(x[None] @ w)[0]`.

The second is what tracejax's matmul did for a 1-D operand before issue 14's fix
(a unit axis added, then squeezed), so this times the old and the new program
side by side, alternating, wall and process CPU time.
python ab_matmul.py tracejax|jax [ROUNDS]
"""
import os, sys, time, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
system = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
import numpy as np
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
nn = jax.nn
sizes, batch = (784, 512, 512, 10), 128
rng = np.random.RandomState(0)
params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
          for m, n in zip(sizes[:-1], sizes[1:])]
x = rng.randn(batch, 784).astype(np.float32)
y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, batch)]


def make(mm):
  def predict_one(p, x):
    for w, b in p[:-1]:
      x = nn.relu(mm(x, w) + b)
    w, b = p[-1]
    return nn.log_softmax(mm(x, w) + b)

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(jax.vmap(predict_one, in_axes=(None, 0))(p, x) * y, axis=1))
  return jax.jit(jax.value_and_grad(loss))


fns = {"vec @ w": make(lambda x, w: x @ w), "(x[None] @ w)[0]": make(lambda x, w: (x[None] @ w)[0])}
args = jax.device_put((params, x, y))
for f in fns.values():
  for _ in range(5):
    jax.block_until_ready(f(*args))
wall = {k: [] for k in fns}; cpu = {k: [] for k in fns}
keys = list(fns)
for r in range(rounds):
  for k in (keys if r % 2 else keys[::-1]):
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(10):
      jax.block_until_ready(fns[k](*args))
    t1, c1 = time.perf_counter(), time.process_time()
    wall[k].append((t1 - t0) / 10 * 1e6); cpu[k].append((c1 - c0) / 10 * 1e6)
for k in keys:
  print(f"{system:8s} {k:18s} wall {statistics.median(wall[k]):7.0f} us  cpu {statistics.median(cpu[k]):7.0f} us")
print(f"{system:8s} ratio unit-axis/plain: wall {statistics.median(wall[keys[1]]) / statistics.median(wall[keys[0]]):.3f}"
      f"  cpu {statistics.median(cpu[keys[1]]) / statistics.median(cpu[keys[0]]):.3f}")
