"""`jax.interpreters.xla` (2020: `jax.xla`): the array type, `xla_call`, legacy rules.

* `xla.DeviceArray` is `tracejax.Array`; `xla.xla_call_p` is the primitive that a
  nested `jit` appears as in jaxprs (`xla.xla_call(fun, *args)` binds it);
  `xla.apply_primitive` runs one primitive eagerly; `xla.abstractify`,
  `xla.device_put`, `xla.pytype_aval_mappings` are the 2020 helpers of those names.
* `xla.lower_fun(fun, multiple_results)` is a translation rule lowering a primitive
  as the lax function `fun` (registered directly, without the builder shim).
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
import functools as _functools

from tracejax._src import abstract_arrays as _abstract_arrays
from tracejax._src import api as _api
from tracejax._src import jit as _jit
from tracejax._src.core import avals as _avals
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


class _LoweredFun:
  """What `xla.lower_fun(fun)` returns: a rule that the tables register as the
  lowering of `fun` itself (traced and lowered inline), not through the builder shim."""

  def __init__(self, fun, multiple_results):
    self.fun, self.multiple_results = fun, multiple_results
    self.lowering = _lowering.lower_fun(fun, multiple_results=multiple_results)

  def __call__(self, *args, **kwargs):
    raise TypeError("xla.lower_fun(...) is a translation rule: assign it to "
                    "xla.translations[prim] or xla.backend_specific_translations[platform]"
                    "[prim]; it is not called directly")


def lower_fun(fun, multiple_results=True):
  """A translation rule that lowers `prim` as `fun` (a function of arrays, traced inline).

  Args:
    fun: `fun(*arrays, **params)` written with lax/jnp operations.
    multiple_results: whether `fun` returns a list of arrays (else one array).

  >>> xla.translations[my_p] = xla.lower_fun(lambda x, y: x * y + 1,
  ...                                        multiple_results=False)  # doctest: +SKIP
  """
  return _LoweredFun(fun, multiple_results)


def _lowering_of(rule, platform):
  if isinstance(rule, _LoweredFun):
    return rule.lowering
  return _lowering_from_2020_rule(rule)


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
    _lowering.register_lowering(prim, _lowering_of(rule, self.platform), platform=self.platform)


class _BackendTables(dict):
  """`backend_specific_translations`: one table per platform, created on first use."""

  def __missing__(self, platform):
    table = self[platform] = _TranslationTable(platform)
    return table


translations = _TranslationTable(None)
backend_specific_translations = _BackendTables(
    cpu=_TranslationTable("cpu"), gpu=_TranslationTable("gpu"), tpu=_TranslationTable("tpu"))


def abstractify(x):
  """The ShapedArray of a concrete value (2020 `xla.abstractify`).

  >>> xla.abstractify(np.ones(3, np.float32))  # doctest: +SKIP
  ShapedArray(float32[3])
  """
  return _abstract_arrays.abstractify(x)


def device_put(x, device=None):
  """Put `x` on `device` (default: the default device) as a DeviceArray (2020 name).

  >>> xla.device_put(np.arange(3))  # doctest: +SKIP
  DeviceArray([0, 1, 2], dtype=int32)
  """
  return _api.device_put(x, device)


def xla_call(fun, *args, name=None, device=None, backend=None, donated_invars=None):
  """Run `fun` (a `linear_util.WrappedFun` or a callable of flat arrays) compiled, as
  the 2020 `xla.xla_call` did: the staged call appears as `xla_call` in jaxprs.

  Args:
    fun: a WrappedFun or a function of the flat `args` returning a list of arrays.
    *args: the flat array arguments.
    name, device, backend, donated_invars: accepted for the 2020 signature; `device`
      and `backend` pick where it runs.

  Returns:
    The list of flat outputs.

  >>> xla.xla_call(lu.wrap_init(lambda x: [x + 1]), np.float32(1))  # doctest: +SKIP
  [DeviceArray(2., dtype=float32)]
  """
  return list(_xla_call_jitted(fun, device, backend)(*args))


@_functools.lru_cache(maxsize=256)
def _xla_call_jitted(fun, device, backend):
  # One jit per (function, placement), so repeated calls reuse its trace and executable.
  call = getattr(fun, "call_wrapped", fun)
  return _jit.jit(lambda *xs: list(call(*xs)), device=device, backend=backend)


pytype_aval_mappings = _avals.pytype_aval_mappings
