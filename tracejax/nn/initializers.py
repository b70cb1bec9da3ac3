"""`jax.nn.initializers`: common neural network layer initializers, consistent with
definitions used in Keras and Sonnet.

This module only re-exports; the implementations live in `tracejax/_src/nn/initializers.py`.
"""
# flake8: noqa: F401
from tracejax._src.nn.initializers import (
    Initializer as Initializer,
    constant as constant,
    delta_orthogonal as delta_orthogonal,
    glorot_normal as glorot_normal,
    glorot_uniform as glorot_uniform,
    he_normal as he_normal,
    he_uniform as he_uniform,
    kaiming_normal as kaiming_normal,
    kaiming_uniform as kaiming_uniform,
    lecun_normal as lecun_normal,
    lecun_uniform as lecun_uniform,
    normal as normal,
    ones as ones,
    orthogonal as orthogonal,
    truncated_normal as truncated_normal,
    uniform as uniform,
    variance_scaling as variance_scaling,
    xavier_normal as xavier_normal,
    xavier_uniform as xavier_uniform,
    zeros as zeros,
)
