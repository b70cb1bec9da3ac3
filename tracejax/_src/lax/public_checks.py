"""JAX's dtype checks for the public `tracejax.lax` functions.

The lax functions of `tracejax/_src/lax/` are lenient about Python scalars: one
takes the dtype of the array operands (`add(f16_array, 2.0)` is float16), which
tracejax's own library code relies on in many places. JAX's public `jax.lax` is
strict, and so is `tracejax.lax`: each Python scalar operand gets its own default
dtype (bool, int32/int64, float32/float64, complex64/complex128 with x64 off/on,
weakly typed but for bool), and then the usual rules apply: the dtype must be one
the operator accepts, and the operands must share one dtype. So
`lax.add(f32_array, 2.0)` works with x64 off and is a TypeError with x64 on
("got float32, float64"), `lax.add(f32_array, 2)` always is, and `lax.log(2)` is
("log does not accept dtype int32").

`public(names)` wraps the public functions in thin checked versions. The fast path
(no Python scalar among the operands) costs one extra call: the lenient function
runs at once, and only a TypeError it raises about dtypes is looked at again, to
give JAX's wording. With a Python scalar the checks run first, on dtypes only.

The messages are JAX 0.10.2's wording (tests/test_lax_public_dtypes.py records them).
This module is not a lax family: it exports nothing to `tracejax.lax` by itself.
"""
import functools

import numpy as np

from tracejax._src import dtypes

__all__ = []  # not API: tracejax/lax/__init__.py applies `public` to its names

_PY = frozenset((bool, int, float, complex))  # exact types: NumPy scalars keep their own dtype

# The dtype classes JAX names in its messages.
_CLASSES = {"bool": np.bool_, "integer": np.integer, "signedinteger": np.signedinteger,
            "floating": np.floating, "complexfloating": np.complexfloating,
            "float32": np.float32, "float64": np.float64}
_F = ("floating",)
_FC = ("floating", "complexfloating")
_IFC = ("integer", "floating", "complexfloating")
_I = ("integer",)
_IB = ("integer", "bool")


def _dtype_of(x):
  """JAX's dtype of an operand (a Python scalar's default dtype), or None when `x`
  is not something this module knows how to check (lists, strings, None...)."""
  t = type(x)
  if t in _PY:
    return dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[t])
  dt = getattr(x, "dtype", None)
  if dt is None or isinstance(x, type):
    return None
  try:
    return dtypes.canonicalize_dtype(dt)
  except Exception:  # noqa: BLE001 - an exotic dtype: the lax function decides
    return None


def _dtypes_of(xs):
  dts = [_dtype_of(x) for x in xs]
  if any(d is None or d == dtypes.float0 for d in dts):
    return None  # float0 and non-arrays keep the lax function's own message
  return dts


def _check_int_range(xs, dts):
  # A Python int becomes an array of its default dtype before any other check.
  for x, dt in zip(xs, dts):
    if type(x) is int:
      info = np.iinfo(dt)
      if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} too large to convert to {dt.name}")


def _accepts(dt, accepted):
  return any(dtypes.issubdtype(dt, _CLASSES[c]) for c in accepted)


def _names(dts):
  return ", ".join(d.name for d in dts)


def _tip(tip):
  return (f" (Tip: jnp.{tip} is a similar function that does automatic type promotion on "
          "inputs).") if tip else ""


def _same_dtypes_error(name, dts, tip=None):
  return f"lax.{name} requires arguments to have the same dtypes, got {_names(dts)}." + _tip(tip)


def _elementwise_error(name, accepted, tip, dts):
  """JAX's message for operands of dtypes `dts`, or None when JAX accepts them."""
  if accepted:
    for i, dt in enumerate(dts):
      if not _accepts(dt, accepted):
        names = ", ".join(accepted)
        if len(dts) == 1:
          return (f"{name} does not accept dtype {dt.name}. Accepted dtypes are subtypes "
                  f"of {names}.")
        return (f"{name} does not accept dtype {dt.name} at position {i}. Accepted dtypes "
                f"at position {i} are subtypes of {names}.")
  if len(dts) > 1 and any(d != dts[0] for d in dts[1:]):
    return _same_dtypes_error(name, dts, tip)
  return None


def _is_dtype_message(msg):
  # The lenient functions' dtype errors (never their shape errors, which come first
  # in JAX too and keep their own message).
  return ("dtype" in msg or "must be integers" in msg or "integer type" in msg
          or "Integers cannot be raised" in msg)


def _retry_for_shape_error(fn, args, nops, dts, kwargs):
  """Calls `fn` with the Python scalars as NumPy arrays of their JAX dtypes, so that a
  shape error it finds is raised first (JAX checks shapes before dtypes); returns
  normally when its only complaint is about dtypes."""
  ops = [np.asarray(a, d) if type(a) in _PY else a for a, d in zip(args[:nops], dts)]
  try:
    fn(*ops, *args[nops:], **kwargs)
  except TypeError as e:
    if not _is_dtype_message(str(e)):
      raise


def _checked(fn, error, nops=None):
  """`fn` with JAX's checks: `error(dts, ops)` gives JAX's message for the operands
  `args[:nops]` (all positional arguments when None) of JAX dtypes `dts`, or None."""
  def slow(args, kwargs):
    ops = args if nops is None else args[:nops]
    dts = _dtypes_of(ops)
    if dts is None:
      return fn(*args, **kwargs)
    _check_int_range(ops, dts)
    msg = error(dts, ops)
    if msg is None:
      return fn(*args, **kwargs)
    if len(ops) > 2:  # with one or two operands a Python scalar can't mismatch in shape
      _retry_for_shape_error(fn, args, len(ops), dts, kwargs)
    raise TypeError(msg)

  def redo(e, args):
    # The lenient function raised: give JAX's message if this is a dtype error.
    if not _is_dtype_message(str(e)):
      return None
    ops = args if nops is None else args[:nops]
    dts = _dtypes_of(ops)
    return None if dts is None else error(dts, ops)

  # One and two operands (almost every function) get wrappers without *args: the
  # fast path is one type test per operand and the call.
  if nops == 1:
    def wrapper(x, *rest, **kwargs):
      if type(x) in _PY:
        return slow((x, *rest), kwargs)
      try:
        return fn(x, *rest, **kwargs)
      except TypeError as e:
        msg = redo(e, (x,))
        if msg is None:
          raise
      raise TypeError(msg)
  elif nops == 2:
    def wrapper(x, y):
      if type(x) in _PY or type(y) in _PY:
        return slow((x, y), {})
      try:
        return fn(x, y)
      except TypeError as e:
        msg = redo(e, (x, y))
        if msg is None:
          raise
      raise TypeError(msg)
  else:
    def wrapper(*args, **kwargs):
      ops = args if nops is None else args[:nops]
      for a in ops:
        if type(a) in _PY:
          return slow(args, kwargs)
      try:
        return fn(*args, **kwargs)
      except TypeError as e:
        msg = redo(e, args)
        if msg is None:
          raise
      raise TypeError(msg)
  return functools.wraps(fn)(wrapper)


def _elementwise(fn, name, accepted, tip=None, nops=None):
  return _checked(fn, lambda dts, ops: _elementwise_error(name, accepted, tip, dts), nops)


# ---- special cases: pow, integer_pow, reciprocal, select_n, select ----

def _pow_error(dts, ops):
  x, y = dts
  if not _accepts(x, _FC):
    return (f"pow does not accept dtype {x.name} at position 0. Accepted dtypes at position 0 "
            "are subtypes of floating, complexfloating.")
  if not _accepts(y, _IFC):
    return (f"pow does not accept dtype {y.name} at position 1. Accepted dtypes at position 1 "
            "are subtypes of integer, floating, complexfloating.")
  if not dtypes.issubdtype(y, np.integer) and x != y:
    return ("the first argument to pow must have an inexact dtype (float or complex), and "
            "the second argument must have an inexact or integer dtype, and two inexact "
            f"dtypes must match, but got {x.name} and {y.name} respectively.")
  return None


def _checked_pow(fn, pow_p):
  checked = _checked(fn, _pow_error, nops=2)

  @functools.wraps(fn)
  def pow(x, y):
    if type(x) in _PY and type(y) in _PY:
      dts = _dtypes_of((x, y))
      _check_int_range((x, y), dts)
      msg = _pow_error(dts, (x, y))
      if msg is not None:
        raise TypeError(msg)
      # Both weakly typed (JAX: `pow(2.0, 2)` is ~float32): bind them as they are,
      # where the lenient wrapper would give the exponent a strong dtype.
      return pow_p.bind(x, y)
    return checked(x, y)
  return pow


def _aval_str(x, dt):
  weak = "~" if dtypes.is_weakly_typed(x) else ""
  return f"{weak}{dt.name}[{','.join(str(d) for d in np.shape(x))}]"


def _integer_pow_error(y_of):
  def error(dts, ops):
    msg = _elementwise_error("integer_pow", _IFC, None, dts[:1])
    if msg is not None:
      return msg
    y = y_of(ops)
    if dtypes.issubdtype(dts[0], np.integer) and isinstance(y, (int, np.integer)) and y < 0:
      return (f"Integers cannot be raised to negative powers, got "
              f"integer_pow({_aval_str(ops[0], dts[0])}, {y})")
    return None
  return error


def _checked_integer_pow(fn):
  # Only `x` is an operand; the exponent `y` is static (the lax function checks it).
  error = _integer_pow_error(lambda ops: ops[1])

  @functools.wraps(fn)
  def integer_pow(x, y):
    if type(x) in _PY:
      dts = _dtypes_of((x,))
      _check_int_range((x,), dts)
      msg = error(dts, (x, y))
      if msg is not None:
        raise TypeError(msg)
      return fn(x, y)
    try:
      return fn(x, y)
    except TypeError as e:
      dts = _dtypes_of((x,)) if _is_dtype_message(str(e)) else None
      msg = None if dts is None else error(dts, (x, y))
      if msg is None:
        raise
    raise TypeError(msg)
  return integer_pow


def _select_n_error(dts, ops):
  which, cases = dts[0], dts[1:]
  if any(c != cases[0] for c in cases[1:]):
    return _same_dtypes_error("select", cases, "where")
  if which != np.bool_ and not dtypes.issubdtype(which, np.integer):
    return f"select `which` must be boolean or integer type, got {which.name}."
  if which == np.bool_ and len(cases) > 2:
    return "select with boolean `which` cannot have > 2 cases."
  return None


def _checked_select_n(fn):
  checked = _checked(fn, _select_n_error)

  @functools.wraps(fn)
  def select_n(which, *cases):
    if not cases:
      raise ValueError("select_n() must have at least one case")
    return checked(which, *cases)
  return select_n


def _checked_select(fn, select_n):
  # select(pred, on_true, on_false) is select_n(pred, on_false, on_true): the message
  # names the cases in that order, as JAX's does.
  @functools.wraps(fn)
  def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)
  return select


# ---- pad, concatenate, dynamic_slice and dynamic_update_slice ----

def _checked_pad(fn):
  @functools.wraps(fn)
  def pad(operand, padding_value, padding_config):
    if type(padding_value) in _PY or type(operand) in _PY:
      dts = _dtypes_of((operand, padding_value))
      if dts is not None:
        _check_int_range((operand, padding_value), dts)
        if dts[0] != dts[1]:
          raise TypeError("pad operand and padding_value must be same dtype: got "
                          f"{dts[0].name} and {dts[1].name}.")
    elif hasattr(padding_value, "shape") and np.ndim(padding_value) != 0:
      raise ValueError("padding_value must be a scalar; got "
                       f"np.shape(padding_value)={tuple(np.shape(padding_value))}")
    return fn(operand, padding_value, padding_config)
  return pad


def _checked_concatenate(fn):
  @functools.wraps(fn)
  def concatenate(operands, dimension):
    try:
      return fn(operands, dimension)
    except TypeError as e:
      if not _is_dtype_message(str(e)):
        raise
      dts = _dtypes_of(list(operands))
      if dts is None or all(d == dts[0] for d in dts):
        raise
    raise TypeError(_same_dtypes_error("concatenate", dts, "concatenate"))
  return concatenate


def _checked_full(fn):
  @functools.wraps(fn)
  def full(shape, fill_value, dtype=None, **kwargs):
    if fill_value is None:  # JAX asks for the dtype of None first
      raise ValueError("Invalid argument to dtype: None.")
    return fn(shape, fill_value, dtype, **kwargs)
  return full


def _index_dtypes(start_indices):
  if hasattr(start_indices, "dtype") and not isinstance(start_indices, type):
    if np.ndim(start_indices) != 1:
      return None  # the lax function's own error
    return [dtypes.canonicalize_dtype(start_indices.dtype)]
  try:
    return _dtypes_of(list(start_indices))
  except TypeError:  # not a sequence: the lax function's own error
    return None


def _check_index_dtypes(name, dts, colon):
  if dts and (any(d != dts[0] for d in dts[1:]) or not dtypes.issubdtype(dts[0], np.integer)):
    raise TypeError(f"index arguments to {name} must be integers of the same type, "
                    f"got{':' if colon else ''} {_names(dts)}")


def _check_update_dtype(operand, update):
  dts = _dtypes_of((operand, update))
  if dts is not None and dts[0] != dts[1]:
    raise TypeError(_same_dtypes_error("dynamic_update_slice", dts))


def _update_error(e, operand, update):
  # The lenient function's message for an update of another dtype, in JAX's words.
  if "dtype" in str(e):
    _check_update_dtype(operand, update)


def _checked_dynamic_slice(fn):
  @functools.wraps(fn)
  def dynamic_slice(operand, start_indices, slice_sizes):
    _check_index_dtypes("dynamic_slice", _index_dtypes(start_indices), True)
    return fn(operand, start_indices, slice_sizes)
  return dynamic_slice


def _checked_dynamic_slice_in_dim(fn):
  # The other axes start at a zero of the index's own dtype: one integer index is enough.
  @functools.wraps(fn)
  def wrapper(operand, start_index, *args, **kwargs):
    _check_index_dtypes("dynamic_slice", _dtypes_of([start_index]), True)
    return fn(operand, start_index, *args, **kwargs)
  return wrapper


def _checked_dynamic_update_slice(fn):
  @functools.wraps(fn)
  def dynamic_update_slice(operand, update, start_indices):
    if type(update) in _PY and np.ndim(operand) == 0:
      _check_update_dtype(operand, update)
    _check_index_dtypes("dynamic_update_slice", _index_dtypes(start_indices), False)
    try:
      return fn(operand, update, start_indices)
    except TypeError as e:
      _update_error(e, operand, update)
      raise
  return dynamic_update_slice


def _checked_dynamic_update_in_dim(fn):
  @functools.wraps(fn)
  def wrapper(operand, update, index, *args, **kwargs):
    if type(update) in _PY:
      _check_update_dtype(operand, update)
    _check_index_dtypes("dynamic_update_slice", _dtypes_of([index]), False)
    try:
      return fn(operand, update, index, *args, **kwargs)
    except TypeError as e:
      _update_error(e, operand, update)
      raise
  return wrapper


# ---- the table ----

# public name: (JAX's name in messages, accepted dtype classes or None for all, the
# jnp function of the tip or None, the number of leading operand arguments)
_ELEMENTWISE = {}
for _n in ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "exp2",
           "expm1", "log", "log1p", "logistic", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh"):
  _ELEMENTWISE[_n] = (_n, _FC, None, 1)
for _n in ("bessel_i0e", "bessel_i1e", "cbrt", "ceil", "digamma", "erf", "erf_inv", "erfc",
           "floor", "is_finite", "lgamma", "round", "reduce_precision"):
  _ELEMENTWISE[_n] = (_n, _F, None, 1)
for _n in ("neg", "sign", "square"):
  _ELEMENTWISE[_n] = (_n, _IFC, None, 1)
_ELEMENTWISE.update({
    "abs": ("abs", ("floating", "complexfloating", "signedinteger"), None, 1),
    "bitwise_not": ("not", _IB, None, 1), "not_": ("not", _IB, None, 1),
    "clz": ("clz", _I, None, 1), "population_count": ("population_count", _I, None, 1),
    "real": ("real", ("complexfloating",), None, 1),
    "imag": ("imag", ("complexfloating",), None, 1),
    "conj": ("conj", ("float32", "complexfloating", "float64"), None, 1),
    "add": ("add", _IFC, "add", 2), "sub": ("sub", _IFC, "subtract", 2),
    "mul": ("mul", _IFC, "multiply", 2), "div": ("div", _IFC, "divide", 2),
    "rem": ("rem", ("integer", "floating"), None, 2),
    "max": ("max", None, "maximum", 2), "min": ("min", None, "minimum", 2),
    "eq": ("eq", None, "equal", 2), "ne": ("ne", None, "not_equal", 2),
    "lt": ("lt", ("integer", "floating", "bool"), None, 2),
    "le": ("le", ("integer", "floating", "bool"), None, 2),
    "gt": ("gt", ("integer", "floating", "bool"), None, 2),
    "ge": ("ge", ("integer", "floating", "bool"), None, 2),
    "atan2": ("atan2", _FC, "arctan2", 2), "nextafter": ("nextafter", _F, "nextafter", 2),
    "complex": ("complex", ("float32", "float64"), None, 2),
    "igamma": ("igamma", _F, None, 2), "igammac": ("igammac", _F, None, 2),
    "igamma_grad_a": ("igamma_grad_a", _F, None, 2), "polygamma": ("polygamma", _F, None, 2),
    "zeta": ("zeta", _F, None, 2), "mulhi": ("mulhi", _I, None, 2),
    "shift_left": ("shift_left", _I, "left_shift", 2),
    "shift_right_arithmetic": ("shift_right_arithmetic", _I, "right_shift", 2),
    "shift_right_logical": ("shift_right_logical", _I, "right_shift", 2),
    "bitwise_and": ("and", _IB, None, 2), "and_": ("and", _IB, None, 2),
    "bitwise_or": ("or", _IB, None, 2), "or_": ("or", _IB, None, 2),
    "bitwise_xor": ("xor", _IB, None, 2), "xor": ("xor", _IB, None, 2),
    "betainc": ("regularized_incomplete_beta", _F, None, 3),
    "clamp": ("clamp", None, None, 3),
})


def public(names):
  """The checked versions of the lax functions in `names` (a name -> object mapping,
  e.g. the lenient functions collected from `tracejax/_src/lax/`); names this module
  has no checks for are left out.

  Args:
    names: the namespace to wrap; it is not modified.

  >>> from tracejax._src.lax import elementwise
  >>> checked = public({"add": elementwise.add})
  >>> checked["add"](2, 3.0)
  Traceback (most recent call last):
  TypeError: lax.add requires arguments to have the same dtypes, got int32, float32. ...
  """
  out = {}
  for name, (jname, accepted, tip, nops) in _ELEMENTWISE.items():
    if callable(names.get(name)):
      out[name] = _elementwise(names[name], jname, accepted, tip, nops)
  if callable(names.get("pow")) and "pow_p" in names:
    out["pow"] = _checked_pow(names["pow"], names["pow_p"])
  if callable(names.get("integer_pow")):
    out["integer_pow"] = _checked_integer_pow(names["integer_pow"])
  if callable(names.get("reciprocal")):
    out["reciprocal"] = _checked(names["reciprocal"], _integer_pow_error(lambda ops: -1),
                                 nops=1)
  if callable(names.get("select_n")):
    out["select_n"] = _checked_select_n(names["select_n"])
    if callable(names.get("select")):
      out["select"] = _checked_select(names["select"], out["select_n"])
  wrappers = {"pad": _checked_pad, "concatenate": _checked_concatenate, "full": _checked_full,
              "dynamic_slice": _checked_dynamic_slice,
              "dynamic_slice_in_dim": _checked_dynamic_slice_in_dim,
              "dynamic_index_in_dim": _checked_dynamic_slice_in_dim,
              "dynamic_update_slice": _checked_dynamic_update_slice,
              "dynamic_update_slice_in_dim": _checked_dynamic_update_in_dim,
              "dynamic_update_index_in_dim": _checked_dynamic_update_in_dim}
  for name, wrap in wrappers.items():
    if callable(names.get(name)):
      out[name] = wrap(names[name])
  return out
