"""Loops is an experimental module for syntactic sugar for loops and control-flow.

This module only re-exports; the implementation is `tracejax/_src/experimental/loops.py`.
"""
# flake8: noqa: F401
from tracejax._src.experimental.loops import (
    Scope as Scope,
)
