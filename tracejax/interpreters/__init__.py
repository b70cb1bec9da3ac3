"""`jax.interpreters`: the transformations' rule tables, for users who add primitives.

Submodules: `ad` (JVP and transpose rules), `batching` (vmap rules),
`partial_eval` (staging), `mlir` (lowering rules, the modern interface), `pxla`
(the pmap array type and primitive, 2020) and
`xla` (the array type, `xla_call`, and the 2020/2022 translation-rule adapters).
They are imported with the package so that `jax.interpreters.ad` works as an
attribute, as the seeds use it.
"""
from tracejax.interpreters import ad as ad
from tracejax.interpreters import batching as batching
from tracejax.interpreters import mlir as mlir
from tracejax.interpreters import partial_eval as partial_eval
from tracejax.interpreters import pxla as pxla
from tracejax.interpreters import xla as xla
