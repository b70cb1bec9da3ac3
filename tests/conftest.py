"""Suite-wide setup: the tests' own on-disk compilation cache.

The suite compiles thousands of small programs; its speed depends on finding them
in the on-disk cache within the run (one xdist worker loads what the other
compiled; tests that start Python subprocesses load what the parent compiled), so
the cache stays on. But it must not fill the user's `~/.cache/tracejax`: the run
gets a temporary directory, created by the first process that imports this file
(the pytest controller) and inherited through the environment by the xdist
workers and every subprocess, which share it safely (entries are written to a
temporary file and renamed). The controller removes it at the end.

Set TRACEJAX_TEST_CACHE_DIR=DIR to keep the suite's cache in DIR across runs (a
warm run is several times faster); it is then left in place.

This runs before any test module imports tracejax, which reads these variables
once at import.
"""
import os
import shutil
import sys
import tempfile

import pytest

_OWNER = "TRACEJAX_TEST_CACHE_OWNER"  # pid of the process that made the temporary dir

if os.environ.get("TRACEJAX_TEST_CACHE_DIR"):
  os.environ["TRACEJAX_CACHE_DIR"] = os.environ["TRACEJAX_TEST_CACHE_DIR"]
elif not os.environ.get(_OWNER):  # the controller (or a run without xdist)
  os.environ["TRACEJAX_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracejax-test-cache-")
  os.environ[_OWNER] = str(os.getpid())
# else: an xdist worker or a subprocess: TRACEJAX_CACHE_DIR came with the environment.

# The suite's programs compile in milliseconds; JAX's default threshold (1 s) would
# keep them all off the disk and lose the sharing described above.
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"

if "tracejax._src.config" in sys.modules:  # imported early (a plugin): update it too
  _config = sys.modules["tracejax._src.config"].config
  _config.update("tracejax_cache_dir", os.environ["TRACEJAX_CACHE_DIR"])
  _config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


@pytest.fixture
def x64():
  """Runs a test with `jax_enable_x64` on (float64 checks), restoring the flag after.

  Example:
    >>> def test_sum_in_float64(x64):   # doctest: +SKIP
    ...   assert jnp.ones(3).sum().dtype == jnp.float64
  """
  # Imported here, not at the top: this file must set the cache variables above
  # before anything imports tracejax.
  from tracejax._src.config import config
  old = config.jax_enable_x64
  config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    config.update("jax_enable_x64", old)


def pytest_unconfigure(config):
  if os.environ.get(_OWNER) == str(os.getpid()):
    shutil.rmtree(os.environ["TRACEJAX_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(params=[False, True], ids=["x64_off", "x64_on"])
def x64_mode(request):
  """Runs a test twice, with `jax_enable_x64` off and on (the param), restoring it after."""
  from tracejax._src.config import config
  old = config.jax_enable_x64
  config.update("jax_enable_x64", request.param)
  try:
    yield request.param
  finally:
    config.update("jax_enable_x64", old)
