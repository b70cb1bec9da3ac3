"""`jax.ad_checkpoint`: rematerialization (`checkpoint`/`remat`), its saving policies and
`checkpoint_name`. Re-exports only; the implementation is `tracejax/_src/ad_checkpoint.py`.
"""
# flake8: noqa: F401
from tracejax._src.ad_checkpoint import (
    checkpoint as checkpoint,
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
    name_p as name_p,
    print_saved_residuals as print_saved_residuals,
    remat as remat,
    saved_residuals as saved_residuals,
)
