"""`jax.config`: the configuration flags, in both of the seeds' spellings.

* 2020: `from jax.config import config; config.update("jax_enable_x64", True)`
  (this module's attribute `config` is the Config object).
* modern: `jax.config.update("jax_enable_x64", True)` and
  `jax.config.jax_enable_x64` (`tracejax.config` is this module, whose
  `update`/`read` and unknown attributes forward to the same Config object).

The flags themselves, their environment variables and validation live in
`tracejax._src.config`; nothing is stored here, so both spellings always agree.
"""
import sys as _sys
import types as _types

from tracejax._src.config import config as config
from tracejax._src.config import (
    debug_nans as debug_nans,
    disable_jit as disable_jit,
    enable_x64 as enable_x64,
    numpy_rank_promotion as numpy_rank_promotion,
)

update = config.update
read = config.read
parse_flags_with_absl = config.parse_flags_with_absl
config_with_absl = config.config_with_absl


def __getattr__(name):
  # `jax.config.jax_enable_x64`, `jax.config.values`, ...: everything that is not
  # a module attribute is read from the Config object, so reads see updates.
  try:
    return getattr(config, name)
  except AttributeError:
    raise AttributeError(f"module 'tracejax.config' has no attribute {name!r}") from None


def __dir__():
  return sorted(set(globals()) | set(config._flags))


class _ConfigModule(_types.ModuleType):
  """Makes `jax.config.jax_enable_x64 = True` an update, not a module attribute.

  A plain module would silently store the value beside the flag, which would then
  never take effect; routing known flag names to `config.update` keeps one truth.
  """

  def __setattr__(self, name, value):
    if name in config._flags:
      config.update(name, value)
    else:
      super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _ConfigModule
