"""Record `jax.random` outputs from real JAX as test vectors for tracejax.

Run with the separate environment that has real JAX 0.10.2 (never tracejax's own):

    /work/jaxvenv/bin/python tools/record_random_vectors.py

It writes tests/data/random_vectors.json: for each setting of
`jax_threefry_partitionable`, a table of (sampler, key, arguments) cases with the
exact bytes JAX returned: raw keys (`PRNGKey(seed)`), typed keys (`key(seed)`,
outputs that are keys recorded as their `key_data`), and cases with
`jax_enable_x64` on; plus variants of the samplers in the default stream only
(VARIANT_CASES). tests/test_random.py
replays every case through `tracejax.random` and compares.

Encoding (JSON): arguments are plain JSON values, except tuples
`{"tuple": [...]}`, arrays `{"array": [...], "dtype": "float32"}` and dtypes
`{"np_dtype": "uint8"}`. An output is `{"dtype", "shape", "hex"}`: the array's raw
little-endian bytes, so floats compare bit for bit.
"""
import json
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp
import jax.random as jr

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests", "data",
                   "random_vectors.json")


def tup(*xs):
  return {"tuple": list(xs)}


def arr(values, dtype="float32"):
  return {"array": values, "dtype": dtype}


def dt(name):
  return {"np_dtype": name}


def decode(v):
  if isinstance(v, dict):
    if "tuple" in v:
      return tuple(decode(x) for x in v["tuple"])
    if "array" in v:
      return np.asarray(v["array"], dtype=jnp.dtype(v["dtype"]))
    if "np_dtype" in v:
      return jnp.dtype(v["np_dtype"])
    return {k: decode(x) for k, x in v.items()}
  if isinstance(v, list):
    return [decode(x) for x in v]
  return v


# (name, sampler, key seed, positional args after the key, keyword args).
# The key is PRNGKey(seed); "split" / "fold_in" / "PRNGKey" are the key functions.
CASES = [
    # keys
    ("PRNGKey_0", "PRNGKey", None, [0], {}),
    ("PRNGKey_42", "PRNGKey", None, [42], {}),
    ("PRNGKey_neg1", "PRNGKey", None, [-1], {}),
    ("PRNGKey_big", "PRNGKey", None, [2 ** 40 + 5], {}),
    ("PRNGKey_int32max", "PRNGKey", None, [2 ** 31 - 1], {}),
    ("split_2", "split", 0, [], {}),
    ("split_5", "split", 42, [5], {}),
    ("split_3", "split", 7, [3], {}),
    ("split_shape", "split", 1, [tup(2, 3)], {}),
    ("fold_in_1", "fold_in", 0, [1], {}),
    ("fold_in_big", "fold_in", 7, [2 ** 31 + 5], {}),
    ("fold_in_0", "fold_in", 3, [0], {}),
    # bits
    ("bits_u32", "bits", 0, [], {"shape": tup(7)}),
    ("bits_u32_2d", "bits", 1, [], {"shape": tup(3, 4)}),
    ("bits_u8", "bits", 2, [], {"shape": tup(3, 5), "dtype": dt("uint8")}),
    ("bits_u16", "bits", 3, [], {"shape": tup(5,), "dtype": dt("uint16")}),
    ("bits_scalar", "bits", 4, [], {"shape": tup()}),
    ("bits_empty", "bits", 4, [], {"shape": tup(0, 3)}),
    # uniform
    ("uniform_scalar", "uniform", 0, [], {}),
    ("uniform_5", "uniform", 0, [], {"shape": tup(5)}),
    ("uniform_odd", "uniform", 1, [], {"shape": tup(3, 3)}),
    ("uniform_range", "uniform", 2, [], {"shape": tup(3, 4), "minval": -2.0, "maxval": 3.0}),
    ("uniform_bcast", "uniform", 3, [],
     {"shape": tup(3, 4), "minval": arr([0., 1., 2., 3.]), "maxval": 10.0}),
    ("uniform_f16", "uniform", 4, [], {"shape": tup(7), "dtype": dt("float16")}),
    ("uniform_bf16", "uniform", 5, [], {"shape": tup(7), "dtype": dt("bfloat16")}),
    # normal
    ("normal_10", "normal", 0, [], {"shape": tup(10)}),
    ("normal_2d", "normal", 11, [], {"shape": tup(2, 3)}),
    ("normal_scalar", "normal", 12, [], {}),
    ("normal_f16", "normal", 13, [], {"shape": tup(5), "dtype": dt("float16")}),
    ("normal_bf16", "normal", 14, [], {"shape": tup(5), "dtype": dt("bfloat16")}),
    ("normal_c64", "normal", 15, [], {"shape": tup(4), "dtype": dt("complex64")}),
    ("normal_big", "normal", 16, [], {"shape": tup(1001)}),
    # randint
    ("randint_10", "randint", 0, [], {"shape": tup(10), "minval": 0, "maxval": 10}),
    ("randint_range", "randint", 1, [], {"shape": tup(3, 4), "minval": -5, "maxval": 1000}),
    ("randint_u8", "randint", 2, [],
     {"shape": tup(9), "minval": 0, "maxval": 256, "dtype": dt("uint8")}),
    ("randint_i8", "randint", 3, [],
     {"shape": tup(9), "minval": -128, "maxval": 127, "dtype": dt("int8")}),
    ("randint_i16", "randint", 4, [],
     {"shape": tup(6), "minval": -1000, "maxval": 30000, "dtype": dt("int16")}),
    ("randint_arrays", "randint", 5, [],
     {"shape": tup(2, 3), "minval": arr([0, 10, 100], "int32"), "maxval": 1000}),
    ("randint_empty_range", "randint", 6, [], {"shape": tup(4), "minval": 5, "maxval": 3}),
    ("randint_full", "randint", 7, [],
     {"shape": tup(5), "minval": -2 ** 31, "maxval": 2 ** 31 - 1}),
    # truncated normal, bernoulli
    ("truncated_normal", "truncated_normal", 0, [-1.0, 2.0], {"shape": tup(10)}),
    ("truncated_normal_arrays", "truncated_normal", 1,
     [arr([-1., 0., 1.]), arr([0., 1., 3.])], {}),
    ("bernoulli", "bernoulli", 0, [0.3], {"shape": tup(12)}),
    ("bernoulli_array", "bernoulli", 1, [arr([0.1, 0.5, 0.9, 0.0, 1.0])], {}),
    ("bernoulli_high", "bernoulli", 2, [0.25], {"shape": tup(6), "mode": "high"}),
    ("bernoulli_default", "bernoulli", 3, [], {"shape": tup(6)}),
    # gamma family
    ("gamma_1.5", "gamma", 0, [1.5], {"shape": tup(6)}),
    ("gamma_0.3", "gamma", 1, [0.3], {"shape": tup(6)}),
    ("gamma_array", "gamma", 2, [arr([0.5, 1.0, 2.0, 5.0])], {}),
    ("loggamma_0.1", "loggamma", 3, [0.1], {"shape": tup(6)}),
    ("beta", "beta", 0, [2.0, 3.0], {"shape": tup(6)}),
    ("beta_small", "beta", 1, [0.5, 0.5], {"shape": tup(6)}),
    ("dirichlet", "dirichlet", 0, [arr([1.0, 2.0, 3.0])], {"shape": tup(4)}),
    ("t", "t", 0, [3.0], {"shape": tup(6)}),
    ("chisquare", "chisquare", 0, [3.0], {"shape": tup(6)}),
    ("f", "f", 0, [3.0, 5.0], {"shape": tup(6)}),
    ("generalized_normal", "generalized_normal", 0, [1.5], {"shape": tup(6)}),
    ("ball", "ball", 0, [3], {"shape": tup(4)}),
    # categorical, gumbel
    ("categorical", "categorical", 0, [arr([0.1, 1.0, -1.0, 2.0, 0.0])], {"shape": tup(7)}),
    ("categorical_axis0", "categorical", 1,
     [arr([[0., 1., 2., 3.], [3., 2., 1., 0.], [1., 1., 1., 1.]])], {"axis": 0}),
    ("categorical_batch", "categorical", 2,
     [arr([[0., 1., 2., 3.], [3., 2., 1., 0.], [1., 1., 1., 1.]])], {"shape": tup(5, 3)}),
    ("categorical_noreplace", "categorical", 3, [arr([0.1, 1.0, -1.0, 2.0, 0.0])],
     {"shape": tup(3), "replace": False}),
    ("gumbel", "gumbel", 0, [], {"shape": tup(6)}),
    ("gumbel_high", "gumbel", 1, [], {"shape": tup(6), "mode": "high"}),
    ("gumbel_highest", "gumbel", 2, [], {"shape": tup(6), "mode": "highest"}),
    # one-draw transforms
    ("laplace", "laplace", 0, [], {"shape": tup(6)}),
    ("logistic", "logistic", 0, [], {"shape": tup(6)}),
    ("cauchy", "cauchy", 0, [], {"shape": tup(6)}),
    ("exponential", "exponential", 0, [], {"shape": tup(6)}),
    ("exponential_f16", "exponential", 1, [], {"shape": tup(6), "dtype": dt("float16")}),
    ("pareto", "pareto", 0, [2.0], {"shape": tup(6)}),
    ("rademacher", "rademacher", 0, [], {"shape": tup(10)}),
    ("rademacher_f32", "rademacher", 1, [], {"shape": tup(10), "dtype": dt("float32")}),
    ("maxwell", "maxwell", 0, [], {"shape": tup(6)}),
    ("double_sided_maxwell", "double_sided_maxwell", 0, [1.0, 2.0], {"shape": tup(6)}),
    ("weibull_min", "weibull_min", 0, [2.0, 1.5], {"shape": tup(6)}),
    ("lognormal", "lognormal", 0, [], {"shape": tup(6)}),
    ("lognormal_sigma", "lognormal", 1, [0.5], {"shape": tup(6)}),
    ("rayleigh", "rayleigh", 0, [2.0], {"shape": tup(6)}),
    ("wald", "wald", 0, [1.5], {"shape": tup(6)}),
    ("geometric", "geometric", 0, [0.3], {"shape": tup(8)}),
    ("triangular", "triangular", 0, [0.0, 0.3, 1.0], {"shape": tup(6)}),
    # loops: poisson, binomial, multinomial
    ("poisson_3", "poisson", 0, [3.0], {"shape": tup(8)}),
    ("poisson_20", "poisson", 1, [20.0], {"shape": tup(8)}),
    ("poisson_array", "poisson", 2, [arr([0.0, 1.0, 5.0, 15.0, 100.0])], {}),
    ("binomial_inv", "binomial", 0, [10.0, 0.3], {"shape": tup(8)}),
    ("binomial_btrs", "binomial", 1, [100.0, 0.4], {"shape": tup(8)}),
    ("binomial_high_p", "binomial", 2, [20.0, 0.9], {"shape": tup(8)}),
    ("multinomial", "multinomial", 0, [10.0, arr([0.2, 0.3, 0.5])], {}),
    # permutation and choice (sorting)
    ("permutation_int", "permutation", 0, [10], {}),
    ("permutation_array", "permutation", 1, [arr([[0., 1., 2.], [3., 4., 5.], [6., 7., 8.],
                                                  [9., 10., 11.], [12., 13., 14.]])], {}),
    ("permutation_independent", "permutation", 2,
     [arr([[0., 1., 2.], [3., 4., 5.], [6., 7., 8.]])], {"axis": 1, "independent": True}),
    ("permutation_large", "permutation", 3, [2000], {}),
    ("choice_replace", "choice", 0, [10], {"shape": tup(6)}),
    ("choice_noreplace", "choice", 1, [10], {"shape": tup(6), "replace": False}),
    ("choice_p", "choice", 2, [4], {"shape": tup(8), "p": arr([0.1, 0.2, 0.3, 0.4])}),
    ("choice_p_noreplace", "choice", 3, [5],
     {"shape": tup(3), "replace": False, "p": arr([0.1, 0.2, 0.3, 0.2, 0.2])}),
    ("choice_array_axis", "choice", 4, [arr([[0., 1., 2.], [3., 4., 5.]])],
     {"shape": tup(4), "axis": 1}),
    # linear algebra
    ("multivariate_normal", "multivariate_normal", 0,
     [arr([0.0, 1.0]), arr([[1.0, 0.5], [0.5, 2.0]])], {"shape": tup(4)}),
    ("orthogonal", "orthogonal", 0, [3], {"shape": tup(2)}),
    # Added in the audit of issue 5: more keys, and scalar, odd and low-precision
    # shapes of the functions that the two streams differ in.
    ("split_1", "split", 5, [1], {}),
    ("fold_in_max", "fold_in", 2, [2 ** 32 - 1], {}),
    ("bits_u8_scalar", "bits", 5, [], {"shape": tup(), "dtype": dt("uint8")}),
    ("bits_u16_odd", "bits", 6, [], {"shape": tup(3, 3), "dtype": dt("uint16")}),
    ("uniform_bf16_range", "uniform", 6, [],
     {"shape": tup(3, 3), "dtype": dt("bfloat16"), "minval": -1.0, "maxval": 1.0}),
    ("uniform_f16_scalar", "uniform", 7, [], {"dtype": dt("float16")}),
    ("normal_1", "normal", 17, [], {"shape": tup(1)}),
    ("normal_odd_2d", "normal", 18, [], {"shape": tup(7, 13)}),
    ("normal_f16_odd", "normal", 19, [], {"shape": tup(3, 3), "dtype": dt("float16")}),
    ("randint_scalar", "randint", 8, [], {"shape": tup(), "minval": 0, "maxval": 100}),
    ("randint_u16", "randint", 9, [],
     {"shape": tup(7), "minval": 0, "maxval": 65536, "dtype": dt("uint16")}),
]

# Sampler variants (scalar shapes, low precision, array parameters, other
# modes): recorded in the default stream only. A sampler's code is the same in
# both streams (only the bits under it differ, and those are checked by the
# cases above and each sampler's base case in both), and the samplers with
# rejection loops cost a second or more of XLA compilation each in the tests.
VARIANT_CASES = [
    ("truncated_normal_scalar", "truncated_normal", 2, [-0.5, 0.5], {}),
    ("truncated_normal_f16", "truncated_normal", 3, [-2.0, 1.0],
     {"shape": tup(5), "dtype": dt("float16")}),
    ("bernoulli_scalar", "bernoulli", 4, [0.7], {}),
    ("bernoulli_bcast", "bernoulli", 5, [arr([[0.2], [0.8]])], {"shape": tup(2, 3)}),
    ("gamma_scalar", "gamma", 4, [2.0], {}),
    ("gamma_tiny", "gamma", 5, [0.01], {"shape": tup(5)}),
    ("gamma_f16", "gamma", 6, [2.0], {"shape": tup(4), "dtype": dt("float16")}),
    ("loggamma_tiny", "loggamma", 7, [1e-3], {"shape": tup(5)}),
    ("beta_arrays", "beta", 2, [arr([0.5, 1.0, 2.0]), arr([[1.0], [3.0]])], {}),
    ("dirichlet_batch", "dirichlet", 1, [arr([[1.0, 2.0], [0.5, 0.5], [3.0, 1.0]])],
     {"shape": tup(2, 3)}),
    ("dirichlet_small", "dirichlet", 2, [arr([0.05, 0.1, 0.2])], {"shape": tup(3)}),
    ("t_array", "t", 1, [arr([1.0, 2.5, 10.0])], {}),
    ("generalized_normal_p2", "generalized_normal", 1, [2.0], {"shape": tup(5)}),
    ("generalized_normal_p05", "generalized_normal", 2, [0.5], {"shape": tup(4)}),
    ("ball_p1", "ball", 1, [2], {"p": 1, "shape": tup(3)}),
    ("categorical_mode_high", "categorical", 4, [arr([0.5, -1.0, 2.0])],
     {"shape": tup(5), "mode": "high"}),
    ("gumbel_scalar", "gumbel", 3, [], {}),
    ("gumbel_f16", "gumbel", 4, [], {"shape": tup(5), "dtype": dt("float16")}),
    ("laplace_bf16", "laplace", 1, [], {"shape": tup(5), "dtype": dt("bfloat16")}),
    ("logistic_f16", "logistic", 1, [], {"shape": tup(5), "dtype": dt("float16")}),
    ("cauchy_scalar", "cauchy", 1, [], {}),
    ("pareto_array", "pareto", 1, [arr([1.0, 2.0, 5.0])], {}),
    ("rademacher_i8", "rademacher", 2, [], {"shape": tup(7), "dtype": dt("int8")}),
    ("maxwell_2d", "maxwell", 1, [], {"shape": tup(2, 3)}),
    ("double_sided_maxwell_array", "double_sided_maxwell", 1, [arr([0.0, 1.0]), 2.0],
     {"shape": tup(3)}),
    ("weibull_min_array", "weibull_min", 1, [arr([1.0, 2.0]), 0.5], {"shape": tup(3, 2)}),
    ("lognormal_f16", "lognormal", 2, [0.5], {"shape": tup(4), "dtype": dt("float16")}),
    ("rayleigh_array", "rayleigh", 1, [arr([1.0, 2.0, 3.0])], {}),
    ("wald_array", "wald", 1, [arr([0.5, 1.0, 3.0])], {}),
    ("geometric_array", "geometric", 1, [arr([0.1, 0.5, 0.9])], {}),
    ("triangular_array", "triangular", 1, [0.0, arr([0.2, 0.5, 0.8]), 1.0], {}),
    ("poisson_scalar", "poisson", 3, [4.0], {}),
    ("binomial_arrays", "binomial", 3, [arr([5.0, 50.0, 500.0]), arr([0.1, 0.5, 0.95])], {}),
    ("binomial_edges", "binomial", 4,
     [arr([float("nan"), -1.0, float("inf"), 5.0, 5.0, 0.0]),
      arr([0.5, 0.5, 0.5, float("nan"), 0.0, 0.5])], {}),
    ("multinomial_batch", "multinomial", 1,
     [arr([5.0, 20.0]), arr([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])], {}),
    ("permutation_axis1", "permutation", 4,
     [arr([[0., 1., 2., 3.], [4., 5., 6., 7.], [8., 9., 10., 11.]])], {"axis": 1}),
    ("choice_2d_shape", "choice", 5, [10], {"shape": tup(2, 3)}),
    ("choice_noreplace_axis", "choice", 6,
     [arr([[0., 1., 2., 3., 4.], [5., 6., 7., 8., 9.]])],
     {"shape": tup(3), "replace": False, "axis": 1}),
    ("multivariate_normal_svd", "multivariate_normal", 1,
     [arr([0.0, 1.0]), arr([[1.0, 0.5], [0.5, 2.0]])], {"shape": tup(3), "method": "svd"}),
    ("multivariate_normal_eigh", "multivariate_normal", 2,
     [arr([0.0, 1.0]), arr([[1.0, 0.5], [0.5, 2.0]])], {"shape": tup(3), "method": "eigh"}),
    ("multivariate_normal_batch", "multivariate_normal", 3,
     [arr([[0.0, 1.0], [2.0, 3.0], [-1.0, 0.0]]), arr([[2.0, 0.3], [0.3, 1.0]])], {}),
    ("orthogonal_rect", "orthogonal", 1, [2], {"m": 4}),
]

# The same functions on typed keys (`jax.random.key(seed)`); an output that is a key
# array is recorded as its `key_data`. Most share a program with a raw-key case above.
TYPED_CASES = [
    ("typed_key", "key", None, [7], {}),
    ("typed_split_2", "split", 3, [], {}),
    ("typed_split_3", "split", 0, [3], {}),
    ("typed_split_shape", "split", 1, [tup(2, 2)], {}),
    ("typed_fold_in", "fold_in", 1, [11], {}),
    ("typed_bits", "bits", 0, [], {"shape": tup(7)}),
    ("typed_uniform", "uniform", 0, [], {"shape": tup(5)}),
    ("typed_normal", "normal", 0, [], {"shape": tup(10)}),
    ("typed_randint", "randint", 0, [], {"shape": tup(10), "minval": 0, "maxval": 10}),
    ("typed_gamma", "gamma", 0, [1.5], {"shape": tup(6)}),
    ("typed_permutation", "permutation", 0, [10], {}),
    ("typed_categorical", "categorical", 0, [arr([0.1, 1.0, -1.0, 2.0, 0.0])],
     {"shape": tup(7)}),
]

X64_CASES = [
    ("x64_PRNGKey_big", "PRNGKey", None, [2 ** 40 + 5], {}),
    ("x64_PRNGKey_neg1", "PRNGKey", None, [-1], {}),
    ("x64_bits_u64", "bits", 0, [], {"shape": tup(5), "dtype": dt("uint64")}),
    ("x64_uniform_f64", "uniform", 1, [], {"shape": tup(5), "dtype": dt("float64")}),
    ("x64_normal_f64", "normal", 2, [], {"shape": tup(5), "dtype": dt("float64")}),
    ("x64_normal_default", "normal", 3, [], {"shape": tup(3)}),
    ("x64_randint_i64", "randint", 4, [],
     {"shape": tup(5), "minval": -2 ** 40, "maxval": 2 ** 40, "dtype": dt("int64")}),
    ("x64_exponential", "exponential", 5, [], {"shape": tup(4)}),
    ("x64_gamma", "gamma", 6, [2.5], {"shape": tup(4)}),
    ("x64_rademacher", "rademacher", 7, [], {"shape": tup(6)}),
    ("x64_split_3", "split", 8, [3], {}),
    ("x64_fold_in", "fold_in", 9, [2 ** 32 - 2], {}),
    ("x64_bits_u64_scalar", "bits", 10, [], {"shape": tup(), "dtype": dt("uint64")}),
    ("x64_bits_u64_2d", "bits", 11, [], {"shape": tup(3, 3), "dtype": dt("uint64")}),
    ("x64_uniform_f64_range", "uniform", 12, [],
     {"shape": tup(3, 3), "dtype": dt("float64"), "minval": -3.0, "maxval": 2.0}),
    ("x64_uniform_f32", "uniform", 13, [], {"shape": tup(5), "dtype": dt("float32")}),
    ("x64_normal_c128", "normal", 14, [], {"shape": tup(3), "dtype": dt("complex128")}),
    ("x64_randint_default", "randint", 15, [], {"shape": tup(5), "minval": 0, "maxval": 100}),
    ("x64_normal_c128_scalar", "normal", 31, [], {"dtype": dt("complex128")}),
]

# Default stream only, as VARIANT_CASES.
X64_VARIANT_CASES = [
    ("x64_truncated_normal", "truncated_normal", 16, [-1.0, 2.0], {"shape": tup(5)}),
    ("x64_bernoulli", "bernoulli", 17, [], {"shape": tup(6)}),
    ("x64_beta", "beta", 18, [2.0, 3.0], {"shape": tup(4)}),
    ("x64_dirichlet", "dirichlet", 19, [arr([1.0, 2.0, 3.0], "float64")], {"shape": tup(2)}),
    ("x64_loggamma", "loggamma", 20, [0.1], {"shape": tup(4)}),
    ("x64_gumbel", "gumbel", 21, [], {"shape": tup(5)}),
    ("x64_gumbel_highest", "gumbel", 22, [], {"shape": tup(5), "mode": "highest"}),
    ("x64_laplace", "laplace", 23, [], {"shape": tup(5)}),
    ("x64_poisson", "poisson", 24, [5.0], {"shape": tup(6)}),
    ("x64_binomial", "binomial", 25, [30.0, 0.4], {"shape": tup(6)}),
    ("x64_categorical", "categorical", 26, [arr([0.1, 1.0, -1.0], "float64")],
     {"shape": tup(6)}),
    ("x64_choice_p", "choice", 27, [4], {"shape": tup(6), "p": arr([0.1, 0.2, 0.3, 0.4])}),
    ("x64_permutation", "permutation", 28, [10], {}),
    ("x64_geometric", "geometric", 29, [0.3], {"shape": tup(6)}),
    ("x64_t", "t", 30, [4.0], {"shape": tup(4)}),
]


def run_case(fn_name, seed, args, kwargs, typed=False):
  fn = getattr(jr, fn_name)
  args, kwargs = decode(args), decode(kwargs)
  if fn_name in ("PRNGKey", "key"):
    out = fn(*args)
  else:
    out = fn((jr.key if typed else jr.PRNGKey)(seed), *args, **kwargs)
  if jax.dtypes.issubdtype(out.dtype, jax.dtypes.prng_key):
    out = jr.key_data(out)
  return out


def encode_out(x):
  x = np.asarray(x)
  return {"dtype": str(x.dtype), "shape": list(x.shape), "hex": x.tobytes().hex()}


def record(cases, partitionable, x64, typed=False, default_stream_only=False):
  jax.config.update("jax_threefry_partitionable", partitionable)
  jax.config.update("jax_enable_x64", x64)
  out = []
  for name, fn_name, seed, args, kwargs in cases:
    try:
      value = encode_out(run_case(fn_name, seed, args, kwargs, typed))
    except Exception as e:  # a case JAX itself rejects is recorded as such
      value = {"error": f"{type(e).__name__}: {e}"}
    case = {"name": name, "fn": fn_name, "seed": seed, "args": args, "kwargs": kwargs,
            "partitionable": partitionable, "x64": x64, "out": value}
    if typed:
      case["typed"] = True
    if default_stream_only:
      case["default_stream_only"] = True
    out.append(case)
  return out


def main():
  assert jax.__version__ == "0.10.2", jax.__version__
  cases = []
  for partitionable in (True, False):
    cases += record(CASES, partitionable, False)
    cases += record(TYPED_CASES, partitionable, False, typed=True)
    cases += record(X64_CASES, partitionable, True)
  cases += record(VARIANT_CASES, True, False, default_stream_only=True)
  cases += record(X64_VARIANT_CASES, True, True, default_stream_only=True)
  data = {"jax_version": jax.__version__, "backend": jax.default_backend(),
          "cases": cases}
  os.makedirs(os.path.dirname(OUT), exist_ok=True)
  with open(OUT, "w") as fh:
    json.dump(data, fh, indent=0, sort_keys=True)
    fh.write("\n")
  errors = [c["name"] for c in cases if "error" in c["out"]]
  print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}"
        + (f"; JAX rejected: {errors}" if errors else ""), file=sys.stderr)


if __name__ == "__main__":
  main()
