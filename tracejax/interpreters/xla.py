"""`jax.interpreters.xla` (2020: `jax.xla`): the array type, `xla_call`, legacy rules.

* `xla.DeviceArray` is `tracejax.Array`; `xla.xla_call_p` is the primitive that a
  nested `jit` appears as in jaxprs; `xla.apply_primitive` runs one primitive eagerly.
* Translation rules of the two older generations still register (FEATURES G-02):
  - 2020: `xla.backend_specific_translations['cpu'][p] = rule`, with
    `rule(c, *xla_ops, **params) -> XlaOp` (and `xla.translations[p] = rule` for
    every platform);
  - ~2022: `xla.register_translation(p, rule, platform='cpu')`, with
    `rule(ctx, avals_in, avals_out, *xla_ops, **params) -> [XlaOp]`.
  Each becomes an `mlir.register_lowering` rule that runs the legacy rule on the
  builder shim of `tracejax.lib.xla_bridge` (jaxlib 0.10.2 has no XlaBuilder);
  operations the shim lacks raise NotImplementedError with porting advice.
"""
# flake8: noqa: F401
import dataclasses as _dataclasses

from tracejax._src.dispatch import apply_primitive as apply_primitive
from tracejax._src.interpreters import lowering as _lowering
from tracejax._src.jit import xla_call_p as xla_call_p
from tracejax._src.runtime.array import Array as DeviceArray
from tracejax.lib import xla_bridge as _xb


@_dataclasses.dataclass(frozen=True)
class AxisEnv:
  nreps: int = 1
  names: tuple = ()
  sizes: tuple = ()


@_dataclasses.dataclass
class TranslationContext:
  """What a ~2022 translation rule receives as `ctx`."""
  builder: object
  platform: str
  axis_env: AxisEnv = AxisEnv()
  name_stack: str = ""


def _lowering_from_2020_rule(rule):
  def lower(ctx, *args, **params):
    c = _xb._JaxComputationBuilder(ctx.module_context.platform)
    return _xb._results(rule(c, *_xb._wrap_args(c, args), **params))
  return lower


def _lowering_from_2022_rule(rule):
  def lower(ctx, *args, **params):
    c = _xb._JaxComputationBuilder(ctx.module_context.platform)
    tctx = TranslationContext(c, ctx.module_context.platform)
    return _xb._results(rule(tctx, ctx.avals_in, ctx.avals_out, *_xb._wrap_args(c, args),
                             **params))
  return lower


def register_translation(prim, rule, *, platform=None):
  """Register a ~2022 XlaBuilder rule as `prim`'s lowering on `platform` (None: all)."""
  _lowering.register_lowering(prim, _lowering_from_2022_rule(rule), platform=platform)


class _TranslationTable(dict):
  """A dict of 2020 rules whose every assignment also registers the lowering."""

  def __init__(self, platform):
    super().__init__()
    self.platform = platform

  def __setitem__(self, prim, rule):
    super().__setitem__(prim, rule)
    _lowering.register_lowering(prim, _lowering_from_2020_rule(rule), platform=self.platform)


class _BackendTables(dict):
  """`backend_specific_translations`: one table per platform, created on first use."""

  def __missing__(self, platform):
    table = self[platform] = _TranslationTable(platform)
    return table


translations = _TranslationTable(None)
backend_specific_translations = _BackendTables(
    cpu=_TranslationTable("cpu"), gpu=_TranslationTable("gpu"), tpu=_TranslationTable("tpu"))
