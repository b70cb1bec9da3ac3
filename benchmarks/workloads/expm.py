"""`jit(jax.scipy.linalg.expm)` of a batch of matrices, f32[32, 64, 64], steady state.

The matrices are standard normal / 8 (1-norms about 6, so the single-precision
algorithm takes the degree-7 Padé approximant with one or two squarings), drawn
from one NumPy seed so every system computes the same thing. NumPy column:
`scipy.linalg.expm` on the same batch (it takes [..., n, n] arrays), no jit.
  --mode worker: steady state, µs per call, blocked on every result.
"""
import _harness as H

SHAPE = (32, 64, 64)


def init(np):
  rng = np.random.RandomState(0)
  return (rng.randn(*SHAPE) / 8).astype(np.float32)


def setup(ctx):
  a = init(ctx.np)
  if ctx.system == "numpy":
    import scipy.linalg
    f = scipy.linalg.expm
  else:
    import importlib
    try:  # `import jax` does not import jax.scipy: import it the way a user would
      importlib.import_module(ctx.jax.__name__ + ".scipy.linalg")
    except ImportError:
      pass
    ctx.require("jax.jit", "jax.scipy.linalg.expm")
    f = ctx.jax.jit(ctx.jax.scipy.linalg.expm)
    a = ctx.jax.device_put(a)
  for _ in range(10):
    ctx.block(f(a))
  ctx.check(f(a))
  return f, a


def measure(ctx, state):
  f, a = state
  n = H.int_arg(ctx, "--calls", 20)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(a))
  t1 = H.perf_counter()
  return [H.metric("expm.steady", "jit(scipy.linalg.expm) f32[32,64,64], steady, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
