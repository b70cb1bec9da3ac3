"""`jax.scipy.fft`: discrete cosine transforms."""
# flake8: noqa: F401
from tracejax._src.scipy.fft import (
    dct as dct,
    dctn as dctn,
    idct as idct,
    idctn as idctn,
)
