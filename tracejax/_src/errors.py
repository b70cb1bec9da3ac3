"""The errors a user sees, written as actionable sentences.

Each message says what went wrong, which value (and, while tracing a `jit`'d
function, which of its arguments) caused it, and what to do instead. The classes
are JAX's (`jax.errors.*`), with JAX's hierarchy, so `except jax.errors.X`
in a JAX program run on tracejax catches them. They print as
``jax.errors.TracerBoolConversionError: ...`` in a traceback, as JAX's do: the
class name a JAX user searches for (pickling goes through `_rebuild` in this
module, so it never needs a `jax` package).
"""

_PUBLIC_MODULE = "jax.errors"


def _rebuild(name, args):
  cls = globals()[name]
  err = cls.__new__(cls)
  Exception.__init__(err, *args)
  return err


class _JAXErrorMixin:
  """Pickles by name in this module (the printed module, `jax.errors`, may not exist)."""

  def __reduce__(self):
    return _rebuild, (type(self).__name__, self.args)


def _public(cls):
  cls.__module__ = _PUBLIC_MODULE
  return cls


# ---- where a traced value came from ----

def _describe(tracer):
  aval = getattr(tracer, "aval", None)
  if aval is None:
    return repr(tracer)
  try:
    return f"traced array with shape {aval.str_short()}"
  except Exception:  # an aval without str_short: fall back to its repr
    return f"traced value {aval!r}"


def _depends_on(trace, tracer):
  """Indices of the trace's inputs the value of `tracer` depends on, or None."""
  var = getattr(trace, "tracer_to_var", {}).get(id(tracer))
  invars = getattr(trace, "invars", None)
  if var is None or invars is None:
    return None
  needed = {id(var)}
  for eqn in reversed(getattr(trace, "eqns", ())):
    if any(id(v) in needed for v in eqn.outvars):
      needed.update(id(v) for v in eqn.invars if not hasattr(v, "val"))
  return [i for i, v in enumerate(invars) if id(v) in needed]


def origin_message(tracer):
  """A sentence naming the function being traced and the arguments `tracer` depends on.

  Uses the debug information `jit` attaches to its trace (`trace.debug_info`: the
  function's name, its source location and one name per flat input); empty when
  there is none (e.g. under `grad` or `vmap` alone, whose values are not staged).

  Args:
    tracer: the traced value that could not be made concrete.

  Example:
    >>> origin_message(object())
    ''
  """
  trace = getattr(tracer, "_trace", None)
  info = getattr(trace, "debug_info", None)
  if info is None:
    return ""
  fun_name, where, transform, arg_names = info
  msg = f"The error occurred while tracing the function {fun_name}"
  msg += f" at {where}" if where else ""
  msg += f" for {transform}."
  deps = _depends_on(trace, tracer)
  if deps is None:
    return msg
  try:
    arg_names = list(arg_names() if callable(arg_names) else arg_names)
  except Exception:  # naming is best effort: never hide the original error behind another
    arg_names = []
  names = [arg_names[i] for i in deps if i < len(arg_names)]
  if not names:
    return msg + (" This value became a tracer although it depends on no argument: "
                  "it came from a traced operation on constants.")
  if len(names) == 1:
    return msg + (" This concrete value was not available in Python because it depends "
                  f"on the value of the argument {names[0]}.")
  listed = ", ".join(names[:-1]) + " and " + names[-1]
  return msg + (" This concrete value was not available in Python because it depends on "
                f"the values of the arguments {listed}.")


def _join(*parts):
  return "\n".join(p for p in parts if p)


_STATIC_FIX = ("To branch on it, use jax.numpy.where or jax.lax.cond/while_loop; if it is "
               "a Python setting, mark the argument static (jit's static_argnums or "
               "static_argnames).")


# ---- the classes ----

@_public
class JAXTypeError(_JAXErrorMixin, TypeError):
  """Base class of tracejax's TypeErrors (as `jax.errors.JAXTypeError`)."""


@_public
class JAXIndexError(_JAXErrorMixin, IndexError):
  """Base class of tracejax's IndexErrors (as `jax.errors.JAXIndexError`)."""


@_public
class ConcretizationTypeError(JAXTypeError):
  """A concrete Python value was needed from an abstract (traced) value.

  Example:
    >>> import tracejax
    >>> try:
    ...   tracejax.jit(lambda x: float(x))(1.0)
    ... except ConcretizationTypeError as e:
    ...   print(str(e).splitlines()[0])
    Abstract tracer value encountered where concrete value is expected: traced array with shape float32[]
  """

  def __init__(self, tracer, context=""):
    super().__init__(_join(
        "Abstract tracer value encountered where concrete value is expected: "
        + _describe(tracer),
        context,
        origin_message(tracer),
        "Make the value static (jit's static_argnums/static_argnames), or compute with "
        "jax.numpy/jax.lax on the traced value instead of Python."))


@_public
class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` (an `if`, `while`, `and`...) of a traced value."""

  def __init__(self, tracer):
    JAXTypeError.__init__(self, _join(
        f"Attempted boolean conversion of {_describe(tracer)}.",
        origin_message(tracer),
        _STATIC_FIX))


@_public
class TracerIntegerConversionError(JAXTypeError):
  """`int()`/`__index__` of a traced value (e.g. a shape or a Python index)."""

  def __init__(self, tracer):
    super().__init__(_join(
        f"The __index__() or __int__() method was called on {_describe(tracer)}.",
        origin_message(tracer),
        "Shapes, Python indices and loop bounds must be concrete: pass the argument as "
        "static (static_argnums/static_argnames), or use x.astype(int) to convert dtypes."))


@_public
class TracerArrayConversionError(JAXTypeError):
  """`numpy.asarray` (or another NumPy function) applied to a traced value."""

  def __init__(self, tracer):
    super().__init__(_join(
        f"The numpy.ndarray conversion method __array__() was called on {_describe(tracer)}.",
        origin_message(tracer),
        "A traced value cannot become a NumPy array: use jax.numpy instead of numpy "
        "inside transformed functions (or jax.pure_callback to run NumPy code)."))


@_public
class UnexpectedTracerError(JAXTypeError):
  """A tracer escaped the transformation that created it."""

  def __init__(self, tracer):
    super().__init__(
        f"Encountered an unexpected tracer: {tracer!r}. A function transformed by JAX "
        "had a side effect that saved one of its traced values (for example in a global "
        "variable or a Python container) and the value was used after the "
        "transformation finished. Return the value from the function instead.")


@_public
class NonConcreteBooleanIndexError(JAXIndexError):
  """A boolean mask index whose values are unknown while tracing (data-dependent shape)."""

  def __init__(self, aval):
    super().__init__(
        f"Array boolean indices must be concrete; got {aval}. The result's shape would "
        "depend on the mask's values: use jnp.where(mask, x, fill) or the `size=` "
        "argument of jnp.nonzero instead.")


@_public
class KeyReuseError(JAXTypeError):
  """A PRNG key was used twice where fresh randomness was intended.

  Args:
    message: what was reused, and where.

  Example:
    >>> str(KeyReuseError("key k used twice"))
    'key k used twice'
  """

  def __init__(self, message):
    super().__init__(message)


class NonConcreteShapeError(_JAXErrorMixin, TypeError):
  """A shape that depends on a traced value (tracejax-only: JAX raises a plain TypeError)."""

  def __init__(self, shape):
    super().__init__(
        f"Shapes must be 1D sequences of concrete values of integer type, got {shape}.\n"
        "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
        "subfunctions." + _shape_origin(shape))


def _shape_origin(shape):
  try:
    tracer = next(d for d in shape if hasattr(d, "_trace"))
  except (TypeError, StopIteration):
    return ""
  origin = origin_message(tracer)
  return "\n" + origin if origin else ""


NonConcreteShapeError.__module__ = "tracejax.errors"  # its public home
