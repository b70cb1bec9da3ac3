"""`jax.lib.xla_bridge` (2020): backends and devices, plus the legacy builder shim.

`get_backend()` returns the PJRT client (`.platform`, `.devices()`, ...) and the
device queries match `tracejax.devices()` & co.

jaxlib 0.10.2 no longer has an XlaBuilder (`xla_client.ops` and
`xla_client.XlaBuilder` are gone), yet the 2020 and 2022 primitive documents
write translation rules against one: `c.Add(c.Mul(x, y), z)` (2020) and
`xla_client.ops.Add(xla_client.ops.Mul(x, y), z)` (2022). So the adapters in
`tracejax.interpreters.xla` hand those rules `_JaxComputationBuilder` (the
class name 2020 JAX used here, which the seeds' tracing helpers print as
`<JaxComputationBuilder>`) and `_XlaOp` values that emit StableHLO. Only the
operations those documents need are emulated: elementwise arithmetic and math,
comparisons, select, constants, broadcast, reshape, convert. Anything else
raises a NotImplementedError that says how to port the rule to
`mlir.register_lowering`.
"""
import types as _types

import numpy as _np

from tracejax._src import api as _api
from tracejax._src.dtypes import canonicalize_dtype as canonicalize_dtype
from tracejax._src.interpreters import lowering as _lowering
from tracejax._src.interpreters.lowering import hlo as _hlo, ir as _ir
from tracejax._src.runtime import backend as _backend

# ---- backends and devices (2020 names) ----

devices = _api.devices
local_devices = _api.local_devices
device_count = _api.device_count
local_device_count = _api.local_device_count
default_backend = _api.default_backend
process_index = _api.process_index
process_count = _api.process_count
host_id = _api.host_id
host_count = _api.host_count


def get_backend(platform=None):
  """The PJRT client of `platform` (default: the default backend)."""
  return _backend.get_client(platform)


# ---- the XlaBuilder shim behind the legacy translation-rule adapters ----

def _port_advice(what):
  return NotImplementedError(
      f"{what} is not available: jaxlib 0.10.2 has no XlaBuilder, and tracejax emulates "
      "only elementwise operations, comparisons, Select, constants, Broadcast, Reshape "
      "and ConvertElementType for legacy translation rules. Write the rule as "
      "`mlir.register_lowering(prim, lambda ctx, *xs: [hlo.add(...)])` instead "
      "(from tracejax.interpreters import mlir).")


class _Shape:
  """What `XlaBuilder.GetShape(op)` returned: dimensions and element type."""

  def __init__(self, shape, dtype):
    self._shape, self._dtype = tuple(shape), _np.dtype(dtype)

  def dimensions(self):
    return self._shape

  def rank(self):
    return len(self._shape)

  def element_type(self):
    return self._dtype

  numpy_dtype = element_type

  def __repr__(self):
    return f"{self._dtype.name}[{','.join(map(str, self._shape))}]"


class _XlaOp:
  """A legacy XlaOp: wraps the StableHLO value that a legacy rule computes with."""
  __slots__ = ("value", "builder")

  def __init__(self, value, builder):
    self.value, self.builder = value, builder

  @property
  def type(self):
    return _ir.RankedTensorType(self.value.type)

  def __repr__(self):
    return f"<XlaOp {self.type}>"


def _unwrap(x):
  if isinstance(x, _XlaOp):
    return x.value
  raise TypeError(f"expected an XlaOp from the legacy translation rule, got {x!r}")


def _broadcast_scalars(a, b):
  """XLA broadcast a rank-0 operand implicitly; StableHLO needs it spelled out."""
  ta, tb = a.type, b.type
  if ta.shape == tb.shape:
    return a.value, b.value
  if ta.rank == 0:
    t = _ir.RankedTensorType.get(tb.shape, ta.element_type)
    return _hlo.broadcast_in_dim(t, a.value, _ir.DenseI64ArrayAttr.get([])), b.value
  if tb.rank == 0:
    t = _ir.RankedTensorType.get(ta.shape, tb.element_type)
    return a.value, _hlo.broadcast_in_dim(t, b.value, _ir.DenseI64ArrayAttr.get([]))
  raise TypeError(f"legacy translation rule combined operands of shapes {ta.shape} and "
                  f"{tb.shape}; only equal shapes or a scalar operand are supported")


def _binary(fn):
  def op(x, y):
    return _XlaOp(fn(*_broadcast_scalars(x, y)), x.builder or y.builder)
  return op


def _unary(fn):
  return lambda x: _XlaOp(fn(x.value), x.builder)


def _compare(direction):
  def op(x, y):
    a, b = _broadcast_scalars(x, y)
    return _XlaOp(_hlo.compare(a, b, _hlo.ComparisonDirectionAttr.get(direction)), x.builder)
  return op


def _constant(builder, value, dtype=None):
  return _XlaOp(_lowering.ir_constant(_np.asarray(value, dtype)), builder)


def _broadcast(x, sizes):
  """Broadcast(x, sizes): prepend dimensions `sizes` (the XLA semantics)."""
  t = x.type
  out = _ir.RankedTensorType.get(tuple(sizes) + tuple(t.shape), t.element_type)
  dims = list(range(len(sizes), len(sizes) + t.rank))
  return _XlaOp(_hlo.broadcast_in_dim(out, x.value, _ir.DenseI64ArrayAttr.get(dims)),
                x.builder)


def _reshape(x, *args):
  new_sizes = args[-1]  # Reshape(op, new_sizes) or Reshape(op, dimensions, new_sizes)
  out = _ir.RankedTensorType.get(tuple(new_sizes), x.type.element_type)
  return _XlaOp(_hlo.reshape(out, x.value), x.builder)


def _convert(x, new_element_type):
  out = _ir.RankedTensorType.get(x.type.shape, _lowering.dtype_to_ir_type(new_element_type))
  return _XlaOp(_hlo.convert(out, x.value), x.builder)


def _select(pred, on_true, on_false):
  return _XlaOp(_hlo.select(pred.value, on_true.value, on_false.value), on_true.builder)


def _get_shape(x):
  t = x.type
  for dtype, make in _lowering._ir_type_makers.items():
    if make() == t.element_type:
      return _Shape(t.shape, dtype)
  return _Shape(t.shape, _np.float32)


def _tuple(*ops):
  ops = ops[-1] if len(ops) == 1 and isinstance(ops[-1], (list, tuple)) else ops
  return _XlaTuple(ops)


class _XlaTuple(tuple):
  """`c.Tuple(a, b)`: the several results of a multiple-results primitive."""


# name -> function of XlaOps (the 2022 `xla_client.ops.Name(x, y)` form)
_OPS = {
    "Add": _binary(_hlo.add), "Sub": _binary(_hlo.subtract),
    "Mul": _binary(_hlo.multiply), "Div": _binary(_hlo.divide),
    "Rem": _binary(_hlo.remainder), "Max": _binary(_hlo.maximum),
    "Min": _binary(_hlo.minimum), "Pow": _binary(_hlo.power),
    "Atan2": _binary(_hlo.atan2), "And": _binary(_hlo.and_),
    "Or": _binary(_hlo.or_), "Xor": _binary(_hlo.xor),
    "Neg": _unary(_hlo.negate), "Exp": _unary(_hlo.exponential),
    "Log": _unary(_hlo.log), "Sin": _unary(_hlo.sine), "Cos": _unary(_hlo.cosine),
    "Tanh": _unary(_hlo.tanh), "Sqrt": _unary(_hlo.sqrt), "Rsqrt": _unary(_hlo.rsqrt),
    "Abs": _unary(_hlo.abs), "Floor": _unary(_hlo.floor), "Ceil": _unary(_hlo.ceil),
    "Sign": _unary(_hlo.sign), "Not": _unary(_hlo.not_),
    "Log1p": _unary(_hlo.log_plus_one), "Expm1": _unary(_hlo.exponential_minus_one),
    "Logistic": _unary(_hlo.logistic),
    "Eq": _compare("EQ"), "Ne": _compare("NE"), "Lt": _compare("LT"),
    "Le": _compare("LE"), "Gt": _compare("GT"), "Ge": _compare("GE"),
    "Select": _select, "Broadcast": _broadcast, "Reshape": _reshape,
    "ConvertElementType": _convert, "Tuple": _tuple,
}


class _OpsNamespace(_types.SimpleNamespace):
  """`xla_client.ops` (2022): free functions; constants take the builder first."""

  def __getattr__(self, name):
    if name.startswith("_"):  # protocol probes (copy, pickle) want AttributeError
      raise AttributeError(name)
    raise _port_advice(f"xla_client.ops.{name}")


ops = _OpsNamespace(**_OPS, Constant=_constant, ConstantLiteral=_constant)


class _JaxComputationBuilder:
  """The builder `c` a 2020 translation rule receives: `c.Add(x, y)`, `c.Constant(v)`."""

  def __init__(self, platform):
    self.platform = platform

  def __getattr__(self, name):
    fn = _OPS.get(name)
    if fn is None:
      if name.startswith("_"):  # protocol probes (copy, pickle) want AttributeError
        raise AttributeError(name)
      raise _port_advice(f"XlaBuilder method {name}")
    return fn

  def Constant(self, value, dtype=None):
    return _constant(self, value, dtype)

  ConstantLiteral = Constant

  def ConstantScalar(self, value, dtype):
    return _constant(self, value, dtype)

  def ConstantF32Scalar(self, value):
    return _constant(self, value, _np.float32)

  def ConstantS32Scalar(self, value):
    return _constant(self, value, _np.int32)

  def GetShape(self, op):
    return _get_shape(op)

  def __repr__(self):
    return "<JaxComputationBuilder>"


def _wrap_args(builder, args):
  return [_XlaOp(a, builder) for a in args]


def _results(out):
  """A legacy rule's result (one op, a Tuple, or a list of ops) as a list of values."""
  if isinstance(out, _XlaOp):
    return [out.value]
  return [_unwrap(o) for o in out]
