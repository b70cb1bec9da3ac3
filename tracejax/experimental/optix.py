"""A composable gradient processing and optimization library for JAX (2020).

This module only re-exports; the implementation is `tracejax/_src/experimental/optix.py`.
"""
# flake8: noqa: F401
from tracejax._src.experimental.optix import (
    AddNoiseState as AddNoiseState,
    ApplyEvery as ApplyEvery,
    ClipByGlobalNormState as ClipByGlobalNormState,
    ClipState as ClipState,
    InitUpdate as InitUpdate,
    ScaleByAdamState as ScaleByAdamState,
    ScaleByRStdDevState as ScaleByRStdDevState,
    ScaleByRmsState as ScaleByRmsState,
    ScaleByScheduleState as ScaleByScheduleState,
    ScaleState as ScaleState,
    TraceState as TraceState,
    adam as adam,
    add_noise as add_noise,
    apply_every as apply_every,
    apply_updates as apply_updates,
    chain as chain,
    clip as clip,
    clip_by_global_norm as clip_by_global_norm,
    global_norm as global_norm,
    momentum as momentum,
    noisy_sgd as noisy_sgd,
    rmsprop as rmsprop,
    scale as scale,
    scale_by_adam as scale_by_adam,
    scale_by_rms as scale_by_rms,
    scale_by_schedule as scale_by_schedule,
    scale_by_stddev as scale_by_stddev,
    sgd as sgd,
    trace as trace,
)
