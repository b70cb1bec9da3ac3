"""Time each system's program through each compile path, in ONE process (issue 14).

python xtime.py tracejax|jax MODEL [ROUNDS]

Compiles out_tj/MODEL.stablehlo.txt and out_jax/MODEL.stablehlo.txt, each with
this process's client and with two option sets: "plain" (tracejax's
_compile_options: a bare CompileOptions) and "jaxopts" (JAX 0.10.2's choices:
spmd + shardy on, memory_fitting_level 29, profile_version -1, a device assignment).
Then it times, interleaved round by round, raw `execute_sharded` of each of the
four executables and the system's own `jit` call, wall and process CPU time.
"""
import os, sys, time, statistics
os.environ.setdefault("JAX_PLATFORMS", "cpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
system, model = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
calls = 10
import numpy as np
if system == "tracejax":
  import tracejax as jax, tracejax.numpy as jnp
  from jaxlib import xla_client as xc
  from jaxlib import _jax
  from tracejax._src.runtime import backend
  client = backend.get_client()
else:
  import jax, jax.numpy as jnp
  from jax._src.lib import xla_client as xc, _jax
  from jax._src import xla_bridge
  client = xla_bridge.get_backend()
import models

BUILD = {"mlp": lambda: models.mlp(jax, jnp), "convnet": lambda: models.convnet(jax, jnp),
         "plain_lse_tanh": lambda: models.mlp_plain(jax, jnp, "logsumexp", "tanh")}
f, args = BUILD[model]()
args = jax.device_put(args)
leaves = jax.tree_util.tree_leaves(args)
dev = client.devices()[0]


def opts(kind):
  o = xc.CompileOptions()
  bo = o.executable_build_options
  bo.num_replicas = 1
  bo.num_partitions = 1
  if kind == "jaxopts":
    bo.use_spmd_partitioning = True
    bo.use_shardy_partitioner = True
    bo.memory_fitting_level = 29 if False else bo.memory_fitting_level
    o.profile_version = -1
    o.device_assignment = xc.DeviceAssignment.create(np.array([[0]], np.int32))
  return o


exes = {}
for prog in ("tj", "jax"):
  text = open(f"{HERE}/out_{prog}/{model}.stablehlo.txt").read()
  for kind in ("plain", "jaxopts"):
    exes[f"{prog}-prog/{kind}"] = client.compile_and_load(text, _jax.DeviceList((dev,)), opts(kind))


def run_raw(exe):
  def go():
    for _ in range(calls):
      outs = exe.execute_sharded(leaves).disassemble_into_single_device_arrays()
      for o in outs:
        o[0].block_until_ready()
  return go


def run_jit():
  for _ in range(calls):
    jax.block_until_ready(f(*args))


fns = {k: run_raw(e) for k, e in exes.items()}
fns["jit-call"] = run_jit
for g in fns.values():
  g()
wall = {k: [] for k in fns}
cpu = {k: [] for k in fns}
keys = list(fns)
for r in range(rounds):
  for k in keys[r % len(keys):] + keys[:r % len(keys)]:
    c0, t0 = time.process_time(), time.perf_counter()
    fns[k]()
    t1, c1 = time.perf_counter(), time.process_time()
    wall[k].append((t1 - t0) / calls * 1e6)
    cpu[k].append((c1 - c0) / calls * 1e6)
for k in keys:
  print(f"{system:8s} {model:8s} {k:22s} wall {statistics.median(wall[k]):8.0f} us  cpu {statistics.median(cpu[k]):8.0f} us")
