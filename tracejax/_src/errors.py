"""The errors a user sees, written as actionable sentences."""


class JAXTypeError(TypeError):
  pass


class ConcretizationTypeError(JAXTypeError):
  """A concrete Python value was needed from an abstract (traced) value."""

  def __init__(self, tracer, context=""):
    msg = (f"Abstract tracer value encountered where concrete value is expected: {tracer}\n"
           f"{context}\n" if context else
           f"Abstract tracer value encountered where concrete value is expected: {tracer}\n")
    msg += ("The function to be transformed can't be traced at the required level of "
            "abstraction. If using `jit`, try using `static_argnums` or applying `jit` "
            "to smaller subfunctions instead.")
    super().__init__(msg)


class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` (an `if`, `while`, `and`...) of a traced value."""

  def __init__(self, tracer):
    TypeError.__init__(
        self,
        "Abstract value passed to `bool`, which requires a concrete value. "
        "The function to be transformed can't be traced at the required level of "
        "abstraction. If using `jit`, try using `static_argnums` or applying `jit` "
        f"to smaller subfunctions instead.\nThe traced value was {tracer}.")


class TracerIntegerConversionError(ConcretizationTypeError):
  def __init__(self, tracer):
    TypeError.__init__(
        self,
        f"Abstract value passed to `int` or `__index__`, which requires a concrete value: "
        f"{tracer}. If using `jit`, try using `static_argnums` or applying `jit` to "
        "smaller subfunctions instead.")


class TracerArrayConversionError(JAXTypeError):
  def __init__(self, tracer):
    super().__init__(
        f"The numpy.ndarray conversion method __array__() was called on {tracer}. "
        "A traced array cannot be converted to a NumPy array: use jax.numpy "
        "functions instead of numpy functions inside transformed code.")


class UnexpectedTracerError(Exception):
  """A tracer escaped the transformation that created it."""

  def __init__(self, tracer):
    super().__init__(
        f"Encountered an unexpected tracer: {tracer}. A function transformed by JAX "
        "had a side effect that saved one of its traced values (for example in a global "
        "variable or a Python container) and the value was used after the "
        "transformation finished. Return the value from the function instead.")


class NonConcreteShapeError(TypeError):
  """A shape that depends on a traced value."""

  def __init__(self, shape):
    super().__init__(
        f"Shapes must be 1D sequences of concrete values of integer type, got {shape}.\n"
        "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
        "subfunctions.")
