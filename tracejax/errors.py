"""`jax.errors`: the exception types a user may catch.

Re-exports only; see `tracejax/_src/errors.py` (messages and advice) and the
runtime's `JaxRuntimeError` (an error raised by XLA while compiling or running).
Traceback filtering (the `jax_traceback_filtering` flag) lives in
`tracejax/_src/traceback_util.py`.
"""
# flake8: noqa: F401
from tracejax._src.errors import (
    ConcretizationTypeError as ConcretizationTypeError,
    JAXIndexError as JAXIndexError,
    JAXTypeError as JAXTypeError,
    KeyReuseError as KeyReuseError,
    NonConcreteShapeError as NonConcreteShapeError,
    TracerArrayConversionError as TracerArrayConversionError,
    TracerBoolConversionError as TracerBoolConversionError,
    TracerIntegerConversionError as TracerIntegerConversionError,
    UnexpectedTracerError as UnexpectedTracerError,
)
from tracejax._src.runtime.backend import JaxRuntimeError as JaxRuntimeError
from tracejax._src.core.ir import JaxprTypeError as JaxprTypeError
from tracejax._src.extend import (
    InconclusiveDimensionOperation as InconclusiveDimensionOperation)
from tracejax._src.numpy.indexing import (
    NonConcreteBooleanIndexError as NonConcreteBooleanIndexError)
