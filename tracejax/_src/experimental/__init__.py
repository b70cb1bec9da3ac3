"""Implementations of the 2020 `jax.experimental` libraries: `loops`, `optimizers`,
`optix` and `stax` (the last two also served as `jax.example_libraries`)."""
