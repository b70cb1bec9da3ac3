"""A short tour of tracejax: jit, jaxprs, jax.numpy, and what compilation caching buys.

Run with `python examples/demo.py` (after `pip install -e ".[test]"`).
"""
import time

import numpy as np

import tracejax as jax
import tracejax.numpy as jnp


def simpson(f, a, b, n=1000):
  """Simpson's rule for the integral of f over [a, b] with n (even) intervals."""
  x = a + (b - a) * jnp.arange(n + 1) / n
  w = np.ones(n + 1, np.float32)
  w[1:-1:2], w[2:-1:2] = 4.0, 2.0          # 1 4 2 4 ... 2 4 1
  return (b - a) / (3 * n) * jnp.sum(f(x) * w)


def damped_wave(x):
  return jnp.exp(-0.5 * x) * jnp.sin(3.0 * x)


def integral(a, b):
  return simpson(damped_wave, a, b)


def exact(a, b):
  # Antiderivative of exp(-x/2) sin(3x): -exp(-x/2) (0.5 sin 3x + 3 cos 3x) / 9.25
  F = lambda x: -np.exp(-0.5 * x) * (0.5 * np.sin(3 * x) + 3 * np.cos(3 * x)) / 9.25
  return F(b) - F(a)


def timed(f, *args):
  start = time.perf_counter()
  out = jax.block_until_ready(f(*args))
  return out, (time.perf_counter() - start) * 1e3


def main():
  print(f"tracejax {jax.__version__} on {jax.default_backend()}: {jax.devices()}\n")

  # 1. jax.numpy runs eagerly, one small compiled XLA program per operation.
  x = jnp.arange(5.0)
  print("jnp:", damped_wave(x))

  # 2. The jaxpr: what jit traces a function into (here at abstract float32 scalars).
  print("\njaxpr of damped_wave:")
  print(jax.make_jaxpr(damped_wave)(1.0))

  # 3. jit: the first call traces and compiles; later calls with the same shapes and
  #    dtypes only dispatch the cached executable.
  fast = jax.jit(integral)
  first, t_first = timed(fast, 0.0, 2.0)
  second, t_second = timed(fast, 0.0, 2.0)
  third, t_third = timed(fast, 1.0, 4.0)     # new values, same types: still cached
  print(f"\nintegral over [0, 2]: {float(first):.6f} (exact {exact(0.0, 2.0):.6f})")
  print(f"integral over [1, 4]: {float(third):.6f} (exact {exact(1.0, 4.0):.6f})")
  print(f"first call {t_first:.1f} ms (trace, then compile or load from the disk cache), "
        f"cached calls {t_second:.2f} ms and {t_third:.2f} ms")
  _, t_eager = timed(integral, 0.0, 2.0)
  print(f"the same integral op by op, without jit (each operation compiled on first "
        f"use): {t_eager:.2f} ms")
  assert abs(float(first) - exact(0.0, 2.0)) < 1e-4


if __name__ == "__main__":
  main()
