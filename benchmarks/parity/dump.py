"""python dump.py tracejax|jax OUTDIR: write StableHLO / optimized HLO of both models."""
import os, sys, time
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
system, out = sys.argv[1], sys.argv[2]
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
else:
  import jax, jax.numpy as jnp
import models
os.makedirs(out, exist_ok=True)
BUILD = {
    "mlp": lambda: models.mlp(jax, jnp), "mlp_tanh": lambda: models.mlp(jax, jnp, "tanh"),
    "convnet": lambda: models.convnet(jax, jnp),
    "plain_lse_tanh": lambda: models.mlp_plain(jax, jnp, "logsumexp", "tanh"),
    "plain_lsm_tanh": lambda: models.mlp_plain(jax, jnp, "log_softmax", "tanh"),
    "plain_hand_relu": lambda: models.mlp_plain(jax, jnp, "hand", "relu"),
    "plain_lse_relu": lambda: models.mlp_plain(jax, jnp, "logsumexp", "relu"),
    "convnet_bench": lambda: models.convnet_bench(jax, jnp),
}
for _v in ("vmap_take", "onehot", "take", "index", "l2", "vmap_grad_update"):
  BUILD["v_" + _v] = (lambda v: lambda: models.mlp_variant(jax, jnp, v))(_v)
BUILD["vmap_wx"] = lambda: models.mlp_vmap_wx(jax, jnp)
BUILD["convnet_vmap"] = lambda: models.convnet_vmap(jax, jnp)
BUILD["bench_mlp"] = lambda: models.bench_mlp(jax, jnp)
BUILD["bench_vmap_grad"] = lambda: models.bench_mlp(jax, jnp, True)
for _v in ("maxpool", "avgpool", "sumpool", "batchnorm", "tanh", "gelu", "elu", "softplus",
           "sigmoid", "leakyrelu", "relu", "valid"):
  BUILD["s_" + _v] = (lambda v: lambda: models.stax_variant(jax, jnp, v))(_v)
names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(BUILD)
for name in names:
  f, args = BUILD[name]()
  lo = f.lower(*args)
  open(f"{out}/{name}.stablehlo.txt", "w").write(lo.as_text())
  c = lo.compile()
  open(f"{out}/{name}.hlo.txt", "w").write(c.as_text())
  args = jax.device_put(args)
  r = f(*args); jax.block_until_ready(r)
  ts = []
  for _ in range(int(os.environ.get('REPS', 7))):
    t = time.perf_counter()
    for _ in range(20):
      jax.block_until_ready(f(*args))
    ts.append((time.perf_counter() - t) / 20 * 1e6)
  ts.sort()
  if ts: print(name, "median us", ts[len(ts)//2], "min", ts[0])
