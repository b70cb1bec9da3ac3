"""`jit(jnp.fft.fftn)` of f32[256, 256, 16]: a 3-D complex FFT (complex64 result).

Issue 10's benchmark for `jax.numpy.fft`: the time is in XLA's FFT, so this
checks that tracejax's program is the same as JAX's (one convert to complex64
and one 3-D fft, no transposes or copies around it).
  --mode worker: steady state, µs per call, blocked on every result.
NumPy column: `np.fft.fftn` of the same float32 array (pocketfft, complex64).
"""
import _harness as H

SHAPE = (256, 256, 16)


def _build(ctx):
  np = ctx.np
  x = np.random.RandomState(0).randn(*SHAPE).astype(np.float32)
  if ctx.system == "numpy":
    return np.fft.fftn, x
  ctx.require("jax.jit", "jax.device_put", "jnp.fft.fftn")
  jax = ctx.jax
  return jax.jit(ctx.jnp.fft.fftn), jax.device_put(x)


def setup(ctx):
  f, x = _build(ctx)
  for _ in range(5):
    ctx.block(f(x))
  out = ctx.block(f(x))
  assert str(out.dtype) == "complex64", out.dtype
  # |X| summed: the checksum of a complex result (its real part alone loses half).
  ctx.check(ctx.np.abs(ctx.np.asarray(out)))
  return f, x


def measure(ctx, state):
  f, x = state
  n = H.int_arg(ctx, "--calls", 10)
  block = ctx.block
  t0 = H.perf_counter()
  for _ in range(n):
    block(f(x))
  t1 = H.perf_counter()
  return [H.metric("fft.steady", "jit jnp.fft.fftn f32[256,256,16], steady, blocked",
                   (t1 - t0) / n * 1e6, "us")]


if __name__ == "__main__":
  raise SystemExit(H.main(setup=setup, measure=measure))
