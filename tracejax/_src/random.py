"""`jax.random`: explicit, splittable, counter-based pseudo-random numbers (FEATURES E-01).

A key is a uint32[2] array (`PRNGKey(seed)`), or, in the modern API, a typed key
array (`key(seed)`, dtype `key<fry>`) that wraps the same words. Samplers never
change a key: the same key gives the same numbers (F-08); `split` and `fold_in`
make new keys. All bits come from the Threefry functions of
`tracejax/_src/lax/random_bits.py`.

Every sampler follows JAX 0.10.2's algorithm step by step (same primitives in the
same order), so for a given key, shape and dtype it returns the same values as
JAX under either setting of `jax_threefry_partitionable`; tests/test_random.py
checks this against bits recorded from real JAX. The code below therefore reads
like JAX's `jax/_src/random.py`, with `lax` and `jnp` standing for tracejax's own.

Samplers are pure functions of lax operations: they work under `jit`, `vmap` (over
keys and parameters) and, where the sample is a differentiable function of its
parameters, `grad`. Gamma samples (and so beta, dirichlet, chisquare, t, ...) get
the implicit reparameterization gradient through the `random_gamma` primitive.

This module holds the keys, the argument helpers, and the samplers every other
distribution is built on (bits, uniform, randint, permutation/shuffle/choice,
gumbel, normal and its relatives); the other distributions (bernoulli, gamma and
everything built on it, poisson, binomial, ...) are in `random_samplers.py`, and
`tracejax/random.py` re-exports both.
"""
import functools
import inspect
import math
import operator
import types
import warnings
from collections.abc import Sequence

import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.core.avals import canonicalize_shape, get_aval
from tracejax._src.core.trace import Primitive, Tracer, concrete_or_error
from tracejax._src.jit import jit
from tracejax._src import prng as _keys
from tracejax._src.lax import elementwise as _lax_elementwise
from tracejax._src.lax import special as _lax_special
from tracejax._src.lax import misc as _lax_misc
from tracejax._src.lax import random_bits as prng
from tracejax._src.lax import reductions as _lax_reductions
from tracejax._src.lax import slicing as _lax_slicing
from tracejax._src.lax import sorting as lax_sorting
from tracejax._src.lax import structural as _lax_structural
from tracejax._src.lax.random_bits import threefry2x32_p, threefry_2x32  # noqa: F401
from tracejax._src.numpy import array_methods as _array_methods  # noqa: F401 (x + y, x[i])
from tracejax._src.numpy import creation as _jnp_creation
from tracejax._src.numpy import products as _jnp_products
from tracejax._src.numpy import reductions as _jnp_reductions
from tracejax._src.numpy import indexing as _jnp_indexing
from tracejax._src.numpy import shape_ops as _jnp_shape_ops
from tracejax._src.numpy import ufuncs as _jnp_ufuncs
from tracejax._src.numpy import util as _jnp_util


def _namespace(name, *modules):
  """The public functions of `modules` as one object, first module first.

  Lets the samplers read `lax.add(...)` / `jnp.exp(...)` as JAX's do, so each can be
  checked line by line against JAX's, without importing the public modules.
  """
  ns = types.SimpleNamespace()
  for m in modules:
    names = getattr(m, "__all__", None)
    if names is None:
      names = [k for k, v in vars(m).items() if not k.startswith("_") and
               (isinstance(v, Primitive) or getattr(v, "__module__", None) == m.__name__)]
    for k in names:
      if not hasattr(ns, k):
        setattr(ns, k, getattr(m, k))
  ns.__name__ = name
  return ns


lax = _namespace("lax", _lax_elementwise, _lax_special, _lax_structural, _lax_slicing,
                 _lax_reductions, _lax_misc)
jnp = _namespace("jnp", _jnp_creation, _jnp_ufuncs, _jnp_reductions, _jnp_shape_ops,
                 _jnp_products, _jnp_indexing)

__all__ = [
    "PRNGKey", "key", "key_data", "key_impl", "wrap_key_data", "split", "fold_in",
    "clone", "bits", "uniform", "randint", "normal", "truncated_normal",
    "multivariate_normal", "choice", "permutation", "shuffle", "lognormal", "gumbel",
    "threefry_2x32", "threefry2x32_p", "PRNGKeyArray", "KeyArray", "default_prng_impl",
    "key_dtype",
]

UINT_DTYPES = prng.UINT_DTYPES


# =============================================================================
# Internal jit: keyed on the flags that change the traced program
# =============================================================================

def _jit(static_argnums=(), static_argnames=()):
  """`jit` for the samplers: its cache also keys on `jax_threefry_partitionable` and
  `jax_enable_x64`, which change the traced program without changing the argument
  types (flipping the stream setting must give the other stream at once)."""
  def deco(fun):
    def traced(*args, _flags, **kwargs):
      del _flags  # only part of the cache key
      # JAX's samplers broadcast parameters of lower rank (loc, scale, ...) under
      # JAX's default policy, 'allow': no rank-promotion warning for the user.
      with config._override("jax_numpy_rank_promotion", "allow"):
        return fun(*args, **kwargs)
    traced.__name__ = traced.__qualname__ = fun.__name__
    jitted = jit(traced, static_argnums=static_argnums,
                 static_argnames=tuple(static_argnames) + ("_flags",))

    @functools.wraps(fun)
    def call(*args, **kwargs):
      return jitted(*args, **kwargs,
                    _flags=(config.jax_threefry_partitionable, config.jax_enable_x64))
    return call
  return deco


# =============================================================================
# Keys
# =============================================================================

# The key dtype, key arrays and their wrap/unwrap primitives live in prng.py: keys
# are array leaves of the extended dtype `key<fry>` (see its docstring).
KeyTy = _keys.KeyTy
PRNGKeyArray = _keys.PRNGKeyArray
KeyArray = PRNGKeyArray  # the name of the 2022 API
_key_dtype = _keys.key_dtype()


def default_prng_impl():
  """The name of the default PRNG implementation: `'threefry2x32'`."""
  return "threefry2x32"


def key_dtype(impl=None):
  """The dtype of typed keys (`key<fry>`).

  >>> key_dtype()
  key<fry>
  """
  return _keys.key_dtype(impl)


def _check_impl(impl):
  _keys.key_dtype(impl)


_check_key_data = _keys._check_key_data


def _check_prng_key(name, key, allow_batched=False):
  """(uint32 key data, whether `key` was a typed key) for a sampler's `key` argument."""
  if _keys.is_key(key):
    data, typed = _keys.unwrap(key), True
  elif _jnp_util.is_arraylike(key):
    data, typed = key, False
    if not _jnp_util.is_array(data):
      data = jnp.asarray(data)
    _check_key_data(data)
  else:
    raise TypeError(f"unexpected PRNG key type {type(key)}")
  if not allow_batched and np.ndim(data) > 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{tuple(np.shape(data))[:-1]} != (). Use jax.vmap for batching.")
  return data, typed


def _return_keys(typed, data):
  return _keys.wrap(data) if typed else data


def _seed_array(seed, ctor_name):
  if _keys.is_key(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use jax.vmap for batching")
  if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
    # As JAX: a Python int goes through int64, so with x64 off a seed beyond 32
    # bits wraps to its low word instead of overflowing.
    v = int(np.int64(seed)) if isinstance(seed, int) else int(seed)
    bits64 = config.jax_enable_x64 and (isinstance(seed, int) or np.dtype(type(seed)).itemsize > 4)
    hi = (v >> 32) & 0xFFFFFFFF if bits64 else 0
    return jnp.asarray(np.array([hi, v & 0xFFFFFFFF], np.uint32))
  seed = seed if _jnp_util.is_array(seed) else jnp.asarray(seed)
  return _seed_jit(seed)


_seed_jit = _jit()(prng.threefry_seed)


def PRNGKey(seed, *, impl=None):
  """A raw PRNG key (uint32[2]) from an integer `seed`.

  A 64-bit seed is bitcast to two uint32 words (high word first); a 32-bit seed
  gets a zero high word: `PRNGKey(0)` is `[0, 0]`. Use `key(seed)` for a typed key.
  """
  _check_impl(impl)
  return _seed_array(seed, "PRNGKey")


def key(seed, *, impl=None):
  """A typed PRNG key (a scalar of dtype `key<fry>`) from an integer `seed`."""
  _check_impl(impl)
  return _keys.wrap(_seed_array(seed, "key"))


def key_data(keys):
  """The uint32 words underlying `keys` (raw keys are returned as they are)."""
  data, _ = _check_prng_key("key_data", keys, allow_batched=True)
  return data


def wrap_key_data(key_bits_array, *, impl=None):
  """A typed key array over the uint32 data `key_bits_array` (shape `(..., 2)`)."""
  _check_impl(impl)
  data = key_bits_array
  if _keys.is_key(data):
    raise TypeError("wrap_key_data expects uint32 key data, got a key array (dtype "
                    f"{data.dtype})")
  if not _jnp_util.is_array(data) and not isinstance(data, Tracer):
    data = jnp.asarray(data)
  _check_key_data(data)
  return _keys.wrap(data)


def key_impl(keys):
  """The name of the PRNG implementation of `keys`: always `'threefry2x32'`."""
  _check_prng_key("key_impl", keys, allow_batched=True)
  return "threefry2x32"


def clone(key):
  """The same key (keys are values here; kept for JAX's key-reuse API)."""
  return key


_split_jit = _jit(static_argnums=(1,))(prng.threefry_split)
_fold_in_jit = _jit()(prng.threefry_fold_in)


def _split(key, num=2):
  """Split raw key data inside samplers: `(*shape, 2)` new raw keys."""
  shape = tuple(num) if isinstance(num, Sequence) else (num,)
  return prng.threefry_split(key, shape)


def split(key, num=2):
  """Split a key into `num` new keys (`num` may be a shape).

  `key, subkey = split(key)`; `split(key, 3)` has shape (3, 2) for a raw key
  and (3,) for a typed key.
  """
  data, typed = _check_prng_key("split", key)
  shape = tuple(num) if isinstance(num, Sequence) else (num,)
  shape = tuple(operator.index(d) for d in shape)
  return _return_keys(typed, _split_jit(data, shape))


def fold_in(key, data):
  """A new key made from `key` and the integer `data` (e.g. a step counter)."""
  kdata, typed = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of"
                    f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
  return _return_keys(typed, _fold_in_jit(kdata, _as_uint32(data)))


def _as_uint32(x):
  # Python ints go through int64 (wrapping modulo 2**32), as jnp.asarray(x, 'uint32')
  # does in JAX; arrays convert (integer conversion wraps).
  if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
    return np.uint32(int(x) & 0xFFFFFFFF)
  x = x if _jnp_util.is_array(x) else jnp.asarray(x)
  return lax.convert_element_type(x, np.uint32)


def _random_bits(key, bit_width, shape):
  return prng.threefry_random_bits(key, bit_width, shape)


# =============================================================================
# Argument helpers
# =============================================================================

def _user_dtype(dtype, default, stacklevel=4):
  """The canonical dtype of a `dtype=` argument (None: `default`). With x64 off a
  64-bit request becomes 32-bit, with JAX's truncation warning."""
  if dtype is None:
    dtype = default
  dtypes.check_user_dtype_supported(dtype, None, stacklevel=stacklevel)
  return dtypes.canonicalize_dtype(dtype)


def _shape_arg(shape):
  return canonicalize_shape(shape)


def _check_shape(name, shape, *param_shapes):
  if param_shapes:
    shape_ = lax.broadcast_shapes(shape, *param_shapes)
    if tuple(shape) != shape_:
      raise ValueError(
          f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
          "the result of broadcasting the shapes must equal the shape argument, but got "
          f"result {shape_} for shape argument {tuple(shape)}.")


def _check_broadcast_shapes(name, shape, *args):
  arg_shapes = [np.shape(a) for a in args]
  if shape is None:
    return lax.broadcast_shapes(*arg_shapes) if arg_shapes else ()
  shape = _shape_arg(shape)
  _check_shape(name, shape, *arg_shapes)
  return shape


def _isnan(x):
  return lax.ne(x, x)


def _const(x, v):
  return np.array(v, get_aval(x).dtype)


def _check_float(name, dtype, what="a float"):
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dtype}")


def _concrete_int(x, what):
  return concrete_or_error(operator.index, x, f"The error occurred in {what}")


def _sort_key_val(keys, values, dimension=-1):
  return lax_sorting.sort_key_val(keys, values, dimension)


def _top_k_indices(x, k):
  """Indices of the `k` largest entries along the last axis (ties: lowest index first)."""
  return lax_sorting.top_k(x, k)[1]


def _linalg():
  # Imported on first use: `import tracejax.random` need not load the LAPACK bindings.
  from tracejax._src.numpy import linalg
  return linalg


def _searchsorted_left(sorted_arr, query):
  """`jnp.searchsorted(sorted_arr, query)` (side='left') for a 1-D `sorted_arr`: the
  number of entries strictly below each query, by bisection (log2(n) gathers)."""
  n = sorted_arr.shape[0]
  lo = jnp.zeros(np.shape(query), np.int32)
  hi = jnp.full(np.shape(query), n, np.int32)
  for _ in range(max(1, int(n).bit_length())):
    active = lo < hi
    mid = lax.div(lo + hi, np.int32(2))
    below = sorted_arr[jnp.minimum(mid, n - 1)] < query
    go_right = active & below
    lo = jnp.where(go_right, mid + 1, lo)
    hi = jnp.where(active & ~below, mid, hi)
  return lo


# =============================================================================
# bits, uniform, randint
# =============================================================================

def bits(key, shape=(), dtype=None):
  """Uniform random bits of an unsigned integer `dtype` (default uint32)."""
  key, _ = _check_prng_key("bits", key)
  dtype = _user_dtype(dtype, dtypes.default_uint_dtype())
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = _shape_arg(shape)
  return _bits(key, shape, dtype.itemsize * 8)


@_jit(static_argnums=(1, 2))
def _bits(key, shape, bit_width):
  return _random_bits(key, bit_width, shape)


def uniform(key, shape=(), dtype=None, minval=0., maxval=1.):
  """Uniform floats in [minval, maxval) of `shape` and float `dtype`."""
  key, _ = _check_prng_key("uniform", key)
  dtype = _user_dtype(dtype, float)
  shape = _shape_arg(shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
  return _uniform(key, minval, maxval, shape, dtype)


@_jit(static_argnums=(3, 4))
def _uniform(key, minval, maxval, shape, dtype):
  _check_shape("uniform", shape)
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError("uniform only accepts floating point dtypes.")
  minval = lax.convert_element_type(minval, dtype)
  maxval = lax.convert_element_type(maxval, dtype)
  minval = lax.broadcast_to_rank(minval, len(shape))
  maxval = lax.broadcast_to_rank(maxval, len(shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  if nbits not in (8, 16, 32, 64):
    raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
  rng_bits = 8 if nmant < 8 else nbits
  bits_ = _random_bits(key, rng_bits, shape)
  uint_dtype = UINT_DTYPES[nbits]
  if rng_bits != nbits:
    bits_ = lax.convert_element_type(bits_, uint_dtype)
  # The top `nmant` random bits as the mantissa of a float in [1, 2), minus 1: exactly
  # m * 2**-nmant, so each of the 2**nmant values is equally likely.
  float_bits = lax.shift_right_logical(bits_, np.array(rng_bits - nmant, uint_dtype))
  float_bits = lax.bitwise_or(float_bits, np.array(1.0, dtype).view(uint_dtype))
  floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.array(1., dtype))
  # minval/maxval may broadcast (size-1 axes): jnp arithmetic, same primitives.
  return jnp.maximum(minval, jnp.reshape(floats * (maxval - minval) + minval, shape))


def _convert_and_clip_integer(val, dtype):
  min_val = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(val.dtype).min))
  max_val = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(val.dtype).max))
  return jnp.clip(val, np.array(min_val, val.dtype), np.array(max_val, val.dtype)).astype(dtype)


def randint(key, shape, minval, maxval, dtype=None):
  """Uniform integers in [minval, maxval) of `shape` and integer `dtype`.

  Draws twice the bits of `dtype` per value and reduces them modulo the span, as
  JAX does (unbiased up to (span**2) / 2**(2 * nbits)).
  """
  key, _ = _check_prng_key("randint", key)
  dtype = _user_dtype(dtype, int)
  shape = _shape_arg(shape)
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  info = dtypes.iinfo(dtype)
  dtype_for_sampling = dtype
  if info.bits < 32:
    # Sample in 32 bits so that the small dtype's whole range is unbiased.
    dtype_for_sampling = np.dtype("int32")
    minval = jnp.clip(jnp.asarray(minval).astype("int32"), int(info.min), int(info.max))
    maxval = jnp.clip(jnp.asarray(maxval).astype("int32"), int(info.min), int(info.max) + 1)
  return _randint(key, minval, maxval, shape, dtype_for_sampling).astype(dtype)


@_jit(static_argnums=(3, 4))
def _randint(key, minval, maxval, shape, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  _jnp_util.check_arraylike("randint", minval, maxval)
  minval = jnp.asarray(minval)
  maxval = jnp.asarray(maxval)
  if not dtypes.issubdtype(minval.dtype, np.integer):
    minval = minval.astype(int)
  if not dtypes.issubdtype(maxval.dtype, np.integer):
    maxval = maxval.astype(int)
  # randint(key, shape, 0, 256, 'uint8'): maxval past the dtype's max widens the span.
  maxval_out_of_range = lax.gt(
      maxval, _convert_and_clip_integer(jnp.array(dtypes.iinfo(dtype).max, dtype),
                                        maxval.dtype))
  minval = _convert_and_clip_integer(minval, dtype)
  maxval = _convert_and_clip_integer(maxval, dtype)
  # The elementwise ops below are strict about shapes: give the bounds the full shape
  # (the values are those of JAX's size-1 broadcasting).
  minval = jnp.broadcast_to(minval, shape)
  maxval = jnp.broadcast_to(maxval, shape)
  maxval_out_of_range = jnp.broadcast_to(maxval_out_of_range, shape)
  nbits = dtypes.iinfo(dtype).bits
  if nbits not in (8, 16, 32, 64):
    raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
  k1, k2 = _unstack_keys(_split(key))
  higher_bits = _random_bits(k1, nbits, shape)
  lower_bits = _random_bits(k2, nbits, shape)
  unsigned_dtype = UINT_DTYPES[nbits]
  span = lax.convert_element_type(lax.sub(maxval, minval), unsigned_dtype)
  # maxval <= minval: span 1, so minval is always returned (jax issue #222).
  span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
  # Out-of-range maxval: one more value (wrapping to 0 means the whole range).
  span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                    lax.add(span, _const(span, 1)), span)
  # (hi * 2**nbits + lo) % span without overflow: 2**nbits % span as (2**(nbits/2))**2.
  multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), span)
  multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
  random_offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                          lax.rem(lower_bits, span))
  random_offset = lax.rem(random_offset, span)
  return lax.add(minval, lax.convert_element_type(random_offset, dtype))


def _unstack_keys(keys):
  """The keys of a `(n, 2)` key array as a list."""
  return [lax.index_in_dim(keys, i, 0, keepdims=False) for i in range(keys.shape[0])]


# =============================================================================
# gumbel (also choice's sampler without replacement)
# =============================================================================

def gumbel(key, shape=(), dtype=None, mode=None):
  """Standard Gumbel samples: -log(-log(U)).

  mode 'low' (default) resolves the left tail to float precision; 'high' and
  'highest' spend more bits on it.
  """
  key, _ = _check_prng_key("gumbel", key)
  dtype = _user_dtype(dtype, float)
  _check_float("gumbel", dtype)
  shape = _shape_arg(shape)
  if mode is None:
    mode = "low"
  if mode not in ("highest", "high", "low"):
    raise ValueError("Must provide valid mode for gumbel got: %s" % mode)
  return _gumbel(key, shape, dtype, mode)


def _safe_int_to_float(bits_, dtype):
  # Two uint32 words as a 64-bit fixed-point fraction, rounded to float32 without
  # losing the leading zeros (the far left tail of the Gumbel).
  finfo = dtypes.finfo(dtype)
  hiclz, loclz = _unstack_keys(lax.clz(bits_))
  hi, lo = _unstack_keys(bits_)
  u32 = np.uint32
  mantissa = lax.bitwise_or(
      lax.shift_left(hi, hiclz),
      jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                lax.shift_right_logical(lo, u32(finfo.bits) - hiclz)))
  mantissa = lax.shift_right_logical(mantissa, u32(finfo.bits - finfo.nmant - 1))
  mantissa = lax.bitwise_and(mantissa, u32((1 << finfo.nmant) - 1))
  exp = lax.shift_left(u32(-finfo.minexp) - jnp.where(hiclz == 32, 32 + loclz, hiclz),
                       u32(finfo.nmant))
  exp = lax.bitwise_and(exp, u32((1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1))))
  return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), dtype)


@_jit(static_argnums=(1, 2, 3))
def _gumbel(key, shape, dtype, mode):
  _check_shape("gumbel", shape)
  info = dtypes.finfo(dtype)
  if dtype == np.float32 and mode == "highest":
    bits_ = _random_bits(key, info.bits, (2,) + shape)
    neg = lax.bitwise_not(bits_)
    lo_bits = neg[1]
    # 1 - bits in u64 fixed point.
    carry = jnp.stack([(lo_bits == np.uint32(0xFFFFFFFF)).astype(np.uint32),
                       jnp.ones_like(lo_bits)])
    neg = neg + carry
    flip_mask = bits_[0] < np.uint32(1 << (info.bits - 1))
    x = _safe_int_to_float(jnp.where(flip_mask, bits_, neg), np.float32)
    # log1p on (0, 0.5), log on [0.5, 1).
    return jnp.where(flip_mask, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
  if mode in ("high", "highest"):
    high, low = _unstack_keys(_uniform(key, 0., 1., (2,) + shape, dtype))
    x = jnp.where(high >= 0.5, high, high + 2 ** -(info.nmant) * low + info.tiny)
    return -jnp.log(-jnp.log1p(-x))
  return -jnp.log(-jnp.log(_uniform(key, info.tiny, 1., shape, dtype)))


# =============================================================================
# permutation, shuffle, choice
# =============================================================================

def permutation(key, x, axis=0, independent=False):
  """A random permutation of `arange(x)` (integer `x`) or of `x` along `axis`.

  With `independent=True` each slice along the other axes is permuted on its own.
  """
  key, _ = _check_prng_key("permutation", key)
  _jnp_util.check_arraylike("permutation", x)
  axis = _jnp_util.canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.issubdtype(dtypes.dtype(x), np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = concrete_or_error(int, x, "argument x of jax.random.permutation()")
    return _shuffle(key, jnp.arange(r), axis)
  x = x if _jnp_util.is_array(x) else jnp.asarray(x)
  if independent or np.ndim(x) == 1:
    return _shuffle(key, x, axis)
  ind = _shuffle(key, jnp.arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis, unique_indices=True)


def shuffle(key, x, axis=0):
  """`x` shuffled along `axis` (deprecated in JAX in favour of `permutation`)."""
  warnings.warn("jax.random.shuffle is deprecated and will be removed in a future release. "
                "Use jax.random.permutation with independent=True.", FutureWarning,
                stacklevel=2)
  key, _ = _check_prng_key("shuffle", key)
  x = x if _jnp_util.is_array(x) else jnp.asarray(x)
  return _shuffle(key, x, _jnp_util.canonicalize_axis(axis, np.ndim(x)))


@_jit(static_argnums=(2,))
def _shuffle(key, x, axis):
  # Sorting by random 32-bit keys is a uniform permutation once all keys differ; a
  # fixed number of rounds with fresh keys makes a collision negligible (exponent 3
  # of tjablin@'s analysis, as JAX and TensorFlow use).
  exponent = 3
  uint32max = np.iinfo(np.uint32).max
  num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
  for _ in range(num_rounds):
    key, subkey = _unstack_keys(_split(key))
    sort_keys = _random_bits(subkey, 32, x.shape)
    _, x = _sort_key_val(sort_keys, x, axis)
  return x


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Random samples from `a` (an array, or `arange(a)` for an integer `a`).

  With replacement: uniform indices, or inverse-CDF indices for probabilities `p`.
  Without: a permutation prefix, or the Gumbel top-k trick when `p` is given.
  """
  key, _ = _check_prng_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  _jnp_util.check_arraylike("choice", a)
  arr = a if _jnp_util.is_array(a) else jnp.asarray(a)
  if arr.ndim == 0:
    n_inputs = concrete_or_error(int, a, "The error occurred in jax.random.choice()")
  else:
    axis = _jnp_util.canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  shape = tuple(shape)
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(key, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    _jnp_util.check_arraylike("choice", p)
    p_arr, = _jnp_util.promote_dtypes_inexact(p)
    p_arr = _jnp_util.to_array(p_arr)
    if p_arr.shape != (n_inputs,):
      raise ValueError(
          "p must be None or a 1D vector with the same size as a.shape[axis]. "
          f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(key, shape, dtype=p_cuml.dtype))
      ind = _searchsorted_left(p_cuml, r).astype(int)
    else:
      # Gumbel top-k: the k largest of log p + Gumbel noise are a sample without
      # replacement with probabilities p.
      g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
      ind = _top_k_indices(g, n_draws).astype(int)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


# =============================================================================
# normal, multivariate_normal, truncated_normal, lognormal
# =============================================================================

def normal(key, shape=(), dtype=None):
  """Standard normal samples of `shape` and float (or complex) `dtype`."""
  key, _ = _check_prng_key("normal", key)
  shape = _shape_arg(shape)
  dtype = _user_dtype(dtype, float)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, "
                     f"got {dtype}")
  return _normal(key, shape, dtype)


@_jit(static_argnums=(1, 2))
def _normal(key, shape, dtype):
  if dtypes.issubdtype(dtype, np.complexfloating):
    sqrt2 = np.array(np.sqrt(2), dtype)
    key_re, key_im = _unstack_keys(_split(key))
    real_dtype = np.array(0, dtype).real.dtype
    _re = _normal_real(key_re, shape, real_dtype).astype(dtype)
    _im = _normal_real(key_im, shape, real_dtype).astype(dtype)
    return (_re + 1j * _im) / sqrt2
  return _normal_real(key, shape, dtype)


@_jit(static_argnums=(1, 2))
def _normal_real(key, shape, dtype):
  _check_shape("normal", shape)
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  hi = np.array(1., dtype)
  u = _uniform(key, lo, hi, shape, dtype)
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
  """Samples of N(mean, cov); `cov` is factored by `method` ('cholesky', 'svd', 'eigh')."""
  key, _ = _check_prng_key("multivariate_normal", key)
  mean, cov = _jnp_util.promote_dtypes_inexact(mean, cov)
  mean, cov = _jnp_util.to_array(mean), _jnp_util.to_array(cov)
  if method not in {"svd", "eigh", "cholesky"}:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  dtype = mean.dtype if dtype is None else _user_dtype(dtype, float)
  _check_float("multivariate_normal", dtype)
  if shape is not None:
    shape = _shape_arg(shape)
  return _multivariate_normal(key, mean, cov, shape, dtype, method)


@_jit(static_argnums=(3, 4, 5))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
  if not np.ndim(mean) >= 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{np.ndim(cov)}")
  n = mean.shape[-1]
  if np.shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                     f"but got cov.shape == {np.shape(cov)}.")
  if shape is None:
    shape = lax.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  if method == "svd":
    u, s, _ = _linalg().svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = _linalg().eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = _linalg().cholesky(cov)
  normal_samples = _normal(key, shape + mean.shape[-1:], dtype)
  from tracejax._src.numpy.einsum import einsum
  with config._override("jax_numpy_rank_promotion", "allow"):
    return mean + einsum("...ij,...j->...i", factor, normal_samples)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
  """Standard normal samples restricted to (lower, upper), by inverting the CDF."""
  if shape is not None:
    shape = _shape_arg(shape)
  key, _ = _check_prng_key("truncated_normal", key)
  dtype = _user_dtype(dtype, float)
  _check_float("truncated_normal", dtype)
  return _truncated_normal(key, lower, upper, shape, dtype)


@_jit(static_argnums=(3, 4))
def _truncated_normal(key, lower, upper, shape, dtype):
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(lower), np.shape(upper))
  else:
    _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  a = lax.erf(lower / sqrt2)
  b = lax.erf(upper / sqrt2)
  u = _uniform(key, a, b, shape, dtype)
  out = sqrt2 * lax.erf_inv(u)
  # Clamp into the open interval: rounding (or u == a) must not reach the bounds.
  return jnp.clip(
      out,
      lax.nextafter(lax.stop_gradient(lower), np.array(np.inf, dtype=dtype)),
      lax.nextafter(lax.stop_gradient(upper), np.array(-np.inf, dtype=dtype)))


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
  """exp(sigma * N(0, 1)) samples."""
  key, _ = _check_prng_key("lognormal", key)
  dtype = _user_dtype(dtype, float)
  if not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"dtype argument to `lognormal` must be a float or complex dtype, "
                     f"got {dtype}")
  shape = _check_broadcast_shapes("lognormal", shape, sigma)
  return _lognormal(key, sigma, shape, dtype)


@_jit(static_argnums=(2, 3))
def _lognormal(key, sigma, shape, dtype):
  sigma = lax.convert_element_type(sigma, dtype)
  scaled_norm = _normal(key, shape, dtype) * sigma
  return lax.exp(scaled_norm)


# =============================================================================
# out_sharding= (JAX 0.10.2's samplers take it; one device here)
# =============================================================================

def _out_sharding_arg(fun):
  """`fun` with JAX's keyword-only `out_sharding=` argument.

  The argument is checked as JAX checks it (None, a `NamedSharding` -- a real one or
  a type's `jax.typeof(x).sharding` -- or a `PartitionSpec` inside a mesh) and the
  sample is laid out by it; the values do not depend on it. The signature shows the
  argument, as libraries (optax) look for it with `inspect.signature`.
  """
  @functools.wraps(fun)
  def sampler(*args, out_sharding=None, **kwargs):
    sharding = _jnp_creation.canonicalize_out_sharding(out_sharding, fun.__name__)
    return _jnp_creation.apply_out_sharding(fun(*args, **kwargs), sharding)
  sig = inspect.signature(fun)
  sampler.__signature__ = sig.replace(parameters=[*sig.parameters.values(), inspect.Parameter(
      "out_sharding", inspect.Parameter.KEYWORD_ONLY, default=None)])
  return sampler


bits = _out_sharding_arg(bits)
uniform = _out_sharding_arg(uniform)
randint = _out_sharding_arg(randint)
gumbel = _out_sharding_arg(gumbel)
permutation = _out_sharding_arg(permutation)
normal = _out_sharding_arg(normal)
multivariate_normal = _out_sharding_arg(multivariate_normal)
truncated_normal = _out_sharding_arg(truncated_normal)
lognormal = _out_sharding_arg(lognormal)
