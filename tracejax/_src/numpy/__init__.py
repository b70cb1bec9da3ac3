"""The implementation of `tracejax.numpy` (public names re-exported there)."""
