"""Compiled memory stats and HLO fingerprint of each program under each option set."""
import os, sys
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
system = sys.argv[1]
if system == "tracejax":
  from tracejax._src.runtime import backend
  from jaxlib import xla_client as xc, _jax
  client = backend.get_client()
else:
  from jax._src import xla_bridge
  from jax._src.lib import xla_client as xc, _jax
  client = xla_bridge.get_backend()
dev = client.devices()[0]
def opts(kind):
  o = xc.CompileOptions()
  bo = o.executable_build_options
  if kind == "jaxopts":
    bo.use_spmd_partitioning = True
    bo.use_shardy_partitioner = True
    o.profile_version = -1
    o.device_assignment = xc.DeviceAssignment.create(np.array([[0]], np.int32))
  return o
import hashlib, re
def fp(e):
  t = e.hlo_modules()[0].to_string()
  t = re.sub(r", metadata=\{[^}]*\}", "", t)
  t = re.sub(r"%[A-Za-z_0-9.-]+", "%V", t)
  t = re.sub(r"\b[A-Za-z_][A-Za-z_0-9.]*: ([a-z0-9]+\[)", r"A: \1", t)
  t = "\n".join(l for l in t.splitlines() if not l.startswith("HloModule") and not l.startswith("ENTRY"))
  return hashlib.sha1(t.encode()).hexdigest()[:10]
for model in sys.argv[2:]:
  for prog in ("tj", "jax"):
    text = open(f"out_{prog}/{model}.stablehlo.txt").read()
    for kind in ("plain", "jaxopts"):
      e = client.compile_and_load(text, _jax.DeviceList((dev,)), opts(kind))
      m = e.get_compiled_memory_stats()
      print(system, model, prog, kind, "temp", m.temp_size_in_bytes, "arg", m.argument_size_in_bytes,
            "out", m.output_size_in_bytes, "alias", m.alias_size_in_bytes,
            "gen", m.generated_code_size_in_bytes, "hlo-fingerprint", fp(e))
