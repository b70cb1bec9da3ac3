"""`jax.extend`: interfaces for libraries that extend tracejax (new primitives and
transformations, backends, lowering).

Submodules: `core` (primitives, jaxprs, trace helpers; `core.primitives` lists the
primitives), `linear_util`, `backend`, `mlir` (portable StableHLO artifacts),
`random` (the threefry PRNG primitives). Re-exports only.
"""
# flake8: noqa: F401
from tracejax.extend import backend as backend
from tracejax.extend import core as core
from tracejax.extend import linear_util as linear_util
from tracejax.extend import mlir as mlir
from tracejax.extend import random as random
