"""Implementation of `jax.nn`: `functions` (activations, softmax, one_hot) and
`initializers`."""
