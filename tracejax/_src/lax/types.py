"""The type names of today's lax: annotations (`DotDimensionNumbers`, `PrecisionLike`,
`ConvGeneralDilatedDimensionNumbers`) and the small value classes that select
numerics (`DotAlgorithm`, `DotAlgorithmPreset`, `Tolerance`, `AccuracyMode`).

This module imports nothing from the other lax families (dot.py and elementwise.py
import it), so every family can accept these values.
"""
import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, NamedTuple, Union

import numpy as np

__all__ = ["AccuracyMode", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm",
           "DotAlgorithmPreset", "DotDimensionNumbers", "PrecisionLike",
           "RaggedDotDimensionNumbers", "Tolerance"]

# ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


class DotAlgorithm(NamedTuple):
  """How a dot product computes: the precision of each operand, the accumulation type,
  and how many passes of the native multiply it may use.

  Passed as `precision=` to `dot_general`/`dot`. XLA:CPU computes in the accumulation
  type of the algorithm's dtypes: tracejax checks the fields and computes the product at
  the operands' own precision (the most accurate choice the CPU offers).

  >>> DotAlgorithm(np.float32, np.float32, np.float32).accumulation_type
  <class 'numpy.float32'>
  """
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms (`precision=DotAlgorithmPreset.F32_F32_F32`): the operand
  and accumulation types, by name. `DEFAULT` leaves the choice to the compiler.

  >>> DotAlgorithmPreset.BF16_BF16_F32.accumulation_type
  dtype('float32')
  """
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name

  @property
  def accumulation_type(self):
    """The dtype the products are summed in (None for DEFAULT and the ANY presets)."""
    name = self.name.split("_FAST")[0].split("_X")[0]
    acc = name.rsplit("_", 1)[-1]
    return _PRESET_DTYPES.get(acc)

  @property
  def supported_lhs_types(self):
    """The operand dtypes the preset is defined for (None: any)."""
    first = self.name.split("_")[0]
    if first == "ANY":
      return ("float8_e4m3fn", "float8_e5m2")
    t = _PRESET_DTYPES.get(first)
    return None if t is None else (t,)

  supported_rhs_types = supported_lhs_types

  @property
  def supported_output_types(self):
    acc = self.accumulation_type
    return None if acc is None else (acc,)


def _preset_dtypes():
  import ml_dtypes
  return {"F16": np.dtype(np.float16), "BF16": np.dtype(ml_dtypes.bfloat16),
          "TF32": np.dtype(np.float32), "F32": np.dtype(np.float32),
          "F64": np.dtype(np.float64)}


_PRESET_DTYPES = _preset_dtypes()


# A precision argument: None, a name, a Precision (or a pair), or a dot algorithm.
PrecisionLike = Union[None, str, Any, tuple[str, str], tuple[Any, Any], DotAlgorithm,
                      DotAlgorithmPreset]

# A conv's dimension numbers: three layout strings ('NCHW', 'OIHW', 'NCHW'), a
# ConvDimensionNumbers, or None (the default layouts).
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], Any, None]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """The dimension numbers of `ragged_dot_general`.

  Attributes:
    dot_dimension_numbers: `((lhs_contracting, rhs_contracting), (lhs_batch,
      rhs_batch))`, as for `dot_general`.
    lhs_ragged_dimensions: the one lhs dimension split into groups by `group_sizes`.
    rhs_group_dimensions: the rhs dimension indexing the groups (empty when the ragged
      dimension is a contracting or batch dimension).

  >>> RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0]).lhs_ragged_dimensions
  (0,)
  """
  dot_dimension_numbers: Any
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]

  def __post_init__(self):
    (lc, rc), (lb, rb) = self.dot_dimension_numbers
    object.__setattr__(self, "dot_dimension_numbers",
                       ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(self.lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(self.rhs_group_dimensions))


@dataclasses.dataclass(frozen=True)
class Tolerance:
  """An accuracy request for a transcendental function (`lax.exp(x, accuracy=...)`):
  absolute and relative error bounds and units in the last place.

  >>> Tolerance(atol=1e-6).rtol
  0.0
  """
  atol: float = 0.0
  rtol: float = 0.0
  ulps: int = 0

  def __post_init__(self):
    if self.atol < 0 or self.rtol < 0 or self.ulps < 0:
      raise ValueError(f"Tolerance fields must be nonnegative, got {self}.")


class AccuracyMode(enum.Enum):
  """Named accuracy requests for transcendental functions: HIGHEST or DEFAULT.

  >>> AccuracyMode.HIGHEST.value
  1
  """
  HIGHEST = 1
  DEFAULT = 2


def check_accuracy(name, accuracy):
  """TypeError unless `accuracy` is None, a Tolerance or an AccuracyMode.

  XLA:CPU has one implementation of each transcendental function, already the most
  accurate it offers, so a valid request changes nothing in the program."""
  if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
    raise TypeError(f"{name}: accuracy must be None, a lax.Tolerance or a "
                    f"lax.AccuracyMode, got {accuracy!r}.")
