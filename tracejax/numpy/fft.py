"""`jax.numpy.fft`: discrete Fourier transforms of device arrays.

This module only re-exports; the implementations live in
`tracejax/_src/numpy/fft.py`, on the `fft` primitive of `tracejax/_src/lax/fft.py`.
"""
# flake8: noqa: F401
from tracejax._src.numpy.fft import (
    fft, fft2, fftfreq, fftn, fftshift, hfft, ifft, ifft2, ifftn, ifftshift, ihfft,
    irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn,
)
