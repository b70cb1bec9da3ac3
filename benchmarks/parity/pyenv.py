import os, sys, gc, time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system = sys.argv[1]
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
f, host = models.mlp(jax, jnp)
args = jax.device_put(host)
jax.block_until_ready(f(*args))
print(system, "trace", sys.gettrace(), "profile", sys.getprofile(), "gc thr", gc.get_threshold(),
      "gc callbacks", gc.callbacks, "objects", len(gc.get_objects()), "switchinterval", sys.getswitchinterval())
import threading; print("threads", [t.name for t in threading.enumerate()])
def py():
  s = 0
  for i in range(200000):
    s += i * 2
  return s
ts = []
for _ in range(15):
  t0 = time.process_time(); py(); ts.append(time.process_time() - t0)
ts.sort(); print("pure python loop ms", round(ts[7]*1e3, 2))
t0 = time.process_time(); gc.collect(); print("gc.collect ms", round((time.process_time() - t0)*1e3, 2))
