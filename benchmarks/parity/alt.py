"""python alt.py WORKLOAD [ROUNDS]: tracejax, jax and jax2 workers alternating (run.py's
machinery) on cpu_wrap.py, wall and CPU medians."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import run as R
os.environ.setdefault("JAX_PLATFORMS", "cpu")
wl = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
spec = R.Spec(wl, os.path.abspath(os.path.join(os.path.dirname(__file__), "cpu_wrap.py")),
              rounds=rounds, args=["--workload", wl, "--calls", "10"])
res = R.Results()
systems = ["tracejax", "jax", R.NOISE]
R.run_worker_spec(spec, systems, res, lambda s: None)
print(R.table(res, systems))
for n in R.notes(res):
  print(n)
