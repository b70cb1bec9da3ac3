"""`jax.scipy.signal`: convolutions, detrending and spectral analysis."""
# flake8: noqa: F401
from tracejax._src.scipy.signal import (
    convolve as convolve,
    convolve2d as convolve2d,
    correlate as correlate,
    correlate2d as correlate2d,
    csd as csd,
    detrend as detrend,
    fftconvolve as fftconvolve,
    istft as istft,
    stft as stft,
    welch as welch,
)
