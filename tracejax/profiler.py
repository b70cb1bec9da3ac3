"""`jax.profiler`: traces written by XLA's profiler, annotations, memory profiles.

This module only re-exports; the implementation is `tracejax/_src/profiler.py`.
"""
# flake8: noqa: F401
from tracejax._src.profiler import (
    ProfileData as ProfileData,
    ProfileEvent as ProfileEvent,
    ProfileOptions as ProfileOptions,
    ProfilePlane as ProfilePlane,
    StepTraceAnnotation as StepTraceAnnotation,
    TraceAnnotation as TraceAnnotation,
    annotate_function as annotate_function,
    device_memory_profile as device_memory_profile,
    register_subprocess as register_subprocess,
    save_device_memory_profile as save_device_memory_profile,
    start_server as start_server,
    start_trace as start_trace,
    stop_server as stop_server,
    stop_trace as stop_trace,
    trace as trace,
)
