"""Partial evaluation with partial values: the 2020 `pe.trace_to_jaxpr` API.

A `PartialVal` is a pair `(aval, const)`: *unknown* `(aval, unit)` stands for
an argument known only by shape and dtype, *known* `(None, value)` for one
whose value is given. `trace_to_jaxpr(fun, pvals)` runs `fun` once: work that
depends only on known values happens now (in the caller's trace), the rest is
staged into a jaxpr over the unknown arguments. It returns

    (jaxpr, out_pvals, consts)

where `consts` are the values of the jaxpr's constvars (known values and outer
tracers that staged work reads), and an output that came out known is returned
in `out_pvals` while the jaxpr outputs `unitvar` (printed `*`) in its place,
unless `instantiate` asks for it to be staged as well.

The machinery is the known/unknown split of reverse mode (`PartialEvalTrace`
in ad.py) over a staging trace (staging.py); only the 2020 packaging is here.
"""
from tracejax._src import dtypes
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import current_trace, set_current_trace
from tracejax._src.interpreters import staging
from tracejax._src.interpreters.ad import PartialEvalTrace


class PartialVal(tuple):
  """`(aval, unit)` for an unknown value, `(None, const)` for a known one."""
  __slots__ = ()

  def __new__(cls, xs):
    pv, const = xs
    if pv is not None and not isinstance(pv, avals_mod.AbstractValue):
      raise TypeError(f"PartialVal: expected an abstract value or None, got {pv!r}")
    if pv is not None and const is not ir.unit:
      raise TypeError("PartialVal: an unknown value (aval given) must have const "
                      f"core.unit, got {const!r}")
    return tuple.__new__(cls, (pv, const))

  @classmethod
  def known(cls, const):
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval):
    return PartialVal((aval, ir.unit))

  def is_known(self):
    return self[0] is None

  def get_known(self):
    """The value if known, else None."""
    return self[1] if self[0] is None else None

  def get_aval(self):
    """The aval: given for an unknown value, computed for a known one."""
    pv, const = self
    if pv is None:
      return avals_mod.raise_to_shaped(avals_mod.get_aval(const))
    return pv

  def __repr__(self):
    pv, const = self
    return f"PartialVal.known({const!r})" if pv is None else f"PartialVal.unknown({pv})"


def _canonical(aval):
  """Avals built by hand from NumPy dtypes (float64 from `np.result_type(1.0)`) must
  follow the x64 setting, as the values traced through them will."""
  if isinstance(aval, avals_mod.ShapedArray):
    return aval.update(dtype=dtypes.canonicalize_dtype(aval.dtype))
  return aval


def _call(fun, args):
  call_wrapped = getattr(fun, "call_wrapped", None)
  return call_wrapped(*args) if call_wrapped is not None else fun(*args)


def trace_to_jaxpr(fun, pvals, instantiate=False, stage_out=False, bottom=False,
                   **_):
  """Trace flat `fun` (a WrappedFun, or a callable) at `pvals`; see the module doc.

  `instantiate` (a bool or one per output) stages known outputs too, as constvars
  or literals. `stage_out` and `bottom` are accepted for 2020 callers: tracing
  always stages into a fresh jaxpr."""
  pvals = [p if isinstance(p, PartialVal) else PartialVal(p) for p in pvals]
  parent = current_trace()
  unknowns = staging.DynamicJaxprTrace(parent)
  trace = PartialEvalTrace(parent, unknowns)
  args = [p.get_known() if p.is_known() else unknowns.new_arg(_canonical(p.get_aval()))
          for p in pvals]
  with set_current_trace(trace):
    outs = list(_call(fun, args))
  if isinstance(instantiate, bool):
    instantiate = [instantiate] * len(outs)
  staged = [trace.is_unknown(o) or inst for o, inst in zip(outs, instantiate)]
  jaxpr, consts = unknowns.to_jaxpr([o for o, s in zip(outs, staged) if s])
  it = iter(jaxpr.outvars)
  outvars = [next(it) if s else ir.unitvar for s in staged]
  jaxpr = ir.Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns)
  jaxpr, _ = staging.dce_jaxpr(jaxpr)
  out_pvals = [PartialVal.unknown(v.aval) if s else PartialVal.known(o)
               for o, v, s in zip(outs, outvars, staged)]
  return jaxpr, out_pvals, tuple(consts)  # a tuple, as the seeds print it: `()`


def trace_to_jaxpr_dynamic(fun, in_avals):
  """Stage all of flat `fun` (a WrappedFun, or a callable) at `in_avals`.

  Returns `(jaxpr, out_avals, consts)` (the 2021 signature)."""
  jaxpr, consts = staging.trace_to_jaxpr(lambda *xs: list(_call(fun, xs)),
                                         [_canonical(a) for a in in_avals])
  return jaxpr, [v.aval for v in jaxpr.outvars], consts


def convert_constvars_jaxpr(jaxpr):
  """The same program with its constvars moved to the front of its invars."""
  return ir.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars,
                  jaxpr.eqns)
