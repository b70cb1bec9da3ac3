"""String forms of arrays: array_repr and array_str (NumPy's formatting of the value)."""
import numpy as np

from tracejax._src.core.trace import concrete_or_error
from tracejax._src.numpy import util


def _value(a):
  return concrete_or_error(np.asarray, util.to_operand(a), "Printing needs a concrete array.")


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
  """The repr of the array's value, as NumPy writes it."""
  return np.array_repr(_value(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
  """The str of the array's value, as NumPy writes it."""
  return np.array_str(_value(a), max_line_width, precision, suppress_small)
