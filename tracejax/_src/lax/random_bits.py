"""Random bits: the `threefry2x32` hash primitive, XLA's `rng_bit_generator`, and the
Threefry PRNG built on them (seed, split, fold_in, random_bits).

`jax.random` (`tracejax/_src/random.py`) draws every sample from the functions at
the bottom of this file, so they decide which bits a key produces. They follow
JAX 0.10.2 exactly, under both settings of `jax_threefry_partitionable`:

* `False` (the 2020 stream the seed documents print): `split(key, n)` hashes the
  counters `0 .. 2n-1` and reshapes to `(n, 2)`; `random_bits` hashes
  `0 .. ceil(bits * size / 32) - 1`, the first half of the counters being the
  first words of the pairs and the second half the second words.
* `True` (the default since JAX 0.5): element `i` of the output (in row-major
  order) hashes the pair of counters `(hi32(i), lo32(i))`; split keeps both output
  words, random bits take their xor. An element's bits thus depend only on its
  index, which is what lets XLA shard the computation.

`tests/data/random_vectors.json` holds bits recorded from real JAX for both.
"""
import enum
import math

import numpy as np

from tracejax._src import dtypes
from tracejax._src.config import config
from tracejax._src.core.avals import canonicalize_shape, get_aval, raise_to_shaped
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.interpreters.lowering import hlo, ir
from tracejax._src.lax import elementwise as lax_e
from tracejax._src.lax import slicing as lax_slicing
from tracejax._src.lax import structural as lax_s
from tracejax._src.lax import utils
from tracejax._src.lax.utils import standard_primitive

__all__ = [
    "threefry2x32", "threefry2x32_p", "rng_bit_generator", "rng_bit_generator_p",
    "RandomAlgorithm",
]

_u32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _u32,
               64: np.dtype(np.uint64)}


# =============================================================================
# threefry2x32
# =============================================================================

def threefry2x32(key1, key2, x1, x2):
  """The Threefry-2x32 block cipher (20 rounds) of Salmon et al. 2011.

  Encrypts the counter pairs `(x1, x2)` under the key `(key1, key2)`; all four are
  uint32 arrays of one shape (rank-0 operands broadcast). Returns the pair of
  encrypted words `(y1, y2)`.
  """
  return tuple(threefry2x32_p.bind(key1, key2, x1, x2))


def _threefry2x32_shape_rule(*avals):
  shapes = {a.shape for a in avals if a.shape}
  if len(shapes) > 1:
    raise TypeError("threefry2x32 requires arguments of the same shape (or rank 0), got "
                    f"{', '.join(str(a.shape) for a in avals)}.")
  shape = shapes.pop() if shapes else ()
  return [shape, shape]


def _threefry2x32_dtype_rule(*avals):
  if any(a.dtype != _u32 for a in avals):
    raise TypeError("Arguments to threefry2x32 must have uint32 type, got "
                    f"{', '.join(a.dtype.name for a in avals)}.")
  return [_u32, _u32]


def _rotate_left(x, d):
  # d is a Python int: the two shifts are constants, so this is two shifts and an or.
  return lax_e.bitwise_or(lax_e.shift_left(x, np.uint32(d)),
                          lax_e.shift_right_logical(x, np.uint32(32 - d)))


def _apply_round(v, rot):
  v0 = lax_e.add(v[0], v[1])
  return [v0, lax_e.bitwise_xor(v0, _rotate_left(v[1], rot))]


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32_reference_lax(key1, key2, x1, x2):
  """Threefry-2x32 written with lax integer ops: the lowering of the primitive.

  Unrolled (five groups of four rounds, each followed by a key injection) rather
  than JAX's CPU `fori_loop`: the bits are identical and XLA fuses the unrolled
  form into one loop over the elements.
  """
  shape = _threefry2x32_shape_rule(*(_aval(v) for v in (key1, key2, x1, x2)))[0]
  key1, key2, x1, x2 = (_broadcast_to(v, shape) for v in (key1, key2, x1, x2))
  ks = [key1, key2, lax_e.bitwise_xor(lax_e.bitwise_xor(key1, key2), np.uint32(0x1BD11BDA))]
  x = [lax_e.add(x1, ks[0]), lax_e.add(x2, ks[1])]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x = _apply_round(x, r)
    x = [lax_e.add(x[0], ks[(i + 1) % 3]),
         lax_e.add(lax_e.add(x[1], ks[(i + 2) % 3]), np.uint32(i + 1))]
  return x


def _aval(x):
  return raise_to_shaped(get_aval(x))


def _broadcast_to(x, shape):
  if np.shape(x) == tuple(shape):
    return x
  return lax_s.broadcast_in_dim(x, shape, ())


threefry2x32_p = standard_primitive(_threefry2x32_shape_rule, _threefry2x32_dtype_rule,
                                    "threefry2x32", multiple_results=True,
                                    weak_type_rule=lambda *a, **k: False)
ad.defjvp_zero(threefry2x32_p)  # integer in, integer out: no derivative
utils.defbroadcasting(threefry2x32_p)  # all four operands broadcast to the batch
mlir.register_lowering(threefry2x32_p,
                       mlir.lower_fun(_threefry2x32_reference_lax, multiple_results=True))


# =============================================================================
# rng_bit_generator
# =============================================================================

class RandomAlgorithm(enum.IntEnum):
  """Which PRNG algorithm `rng_bit_generator` uses."""
  RNG_DEFAULT = 0
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self):
    return self.name


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT):
  """XLA's stateless RngBitGenerator: returns `(new_key, bits)`.

  `key` is a uint32[4] (or uint64[2]) state; `bits` has `shape` and an unsigned
  `dtype`. The bits are the platform's and may differ between CPU and GPU, which is
  why `jax.random` uses `threefry2x32` instead.
  """
  shape = canonicalize_shape(shape)
  dtypes.check_user_dtype_supported(dtype, "rng_bit_generator")
  dtype = dtypes.canonicalize_dtype(dtype)
  if dtype not in UINT_DTYPES.values():
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                        algorithm=RandomAlgorithm(algorithm)))


def _rbg_shape_rule(key, *, shape, dtype, algorithm):
  if not ((key.shape == (4,) and key.dtype == _u32) or
          (key.shape == (2,) and key.dtype == np.uint64)):
    raise TypeError("rng_bit_generator requires a uint32[4] or uint64[2] key, got "
                    f"{key.dtype.name}{list(key.shape)}.")
  return [key.shape, tuple(shape)]


def _rbg_dtype_rule(key, *, shape, dtype, algorithm):
  return [key.dtype, np.dtype(dtype)]


def _rbg_batch_rule(args, dims, *, shape, dtype, algorithm):
  (key,), (bdim,) = args, dims
  # XLA's op takes one state: a batch of keys is a batch of independent calls.
  key = utils.moveaxis(key, bdim, 0)
  outs = [rng_bit_generator_p.bind(lax_slicing.index_in_dim(key, i, 0, keepdims=False),
                                   shape=shape, dtype=dtype, algorithm=algorithm)
          for i in range(key.shape[0])]
  stack = lambda xs: lax_s.concatenate([lax_s.expand_dims(x, (0,)) for x in xs], 0)
  return [stack([o[0] for o in outs]), stack([o[1] for o in outs])], [0, 0]


def _rbg_lowering(ctx, key, *, shape, dtype, algorithm):
  key_aval, = ctx.avals_in
  u32, u64 = ir.IntegerType.get_unsigned(32), ir.IntegerType.get_unsigned(64)
  # The HLO op wants a u64[2] state; the uint32[4] form keeps keys usable with x64 off.
  if key_aval.dtype == _u32:
    key = hlo.bitcast_convert(ir.RankedTensorType.get([2], u64),
                              hlo.reshape(ir.RankedTensorType.get([2, 2], u32), key))
  # RngBitGenerator makes no u8/u16 on every backend: draw u32 and truncate.
  rbg_dtype = dtype if dtype.itemsize >= 4 else _u32
  algo = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT", RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
          RandomAlgorithm.RNG_PHILOX: "PHILOX"}[algorithm]
  out_key, bits = hlo.RngBitGeneratorOp(
      key.type, ir.RankedTensorType.get(list(shape), mlir.dtype_to_ir_type(rbg_dtype)),
      hlo.RngAlgorithmAttr.get(algo), key).results
  if key_aval.dtype == _u32:
    out_key = hlo.reshape(ir.RankedTensorType.get([4], u32),
                          hlo.bitcast_convert(ir.RankedTensorType.get([2, 2], u32), out_key))
  if rbg_dtype != dtype:
    bits = hlo.convert(mlir.aval_to_ir_type(ctx.avals_out[1]), bits)
  return [out_key, bits]


rng_bit_generator_p = standard_primitive(_rbg_shape_rule, _rbg_dtype_rule,
                                         "rng_bit_generator", multiple_results=True,
                                         weak_type_rule=lambda *a, **k: False)
ad.defjvp_zero(rng_bit_generator_p)
batching.primitive_batchers[rng_bit_generator_p] = _rbg_batch_rule
mlir.register_lowering(rng_bit_generator_p, _rbg_lowering)


# =============================================================================
# The Threefry PRNG: seed, split, fold_in, random_bits on raw uint32[2] keys.
# These are functions of lax ops, so jit, vmap (over keys) and grad see through them.
# =============================================================================

def _key_words(key):
  return (lax_slicing.index_in_dim(key, 0, 0, keepdims=False),
          lax_slicing.index_in_dim(key, 1, 0, keepdims=False))


def threefry_seed(seed):
  """The uint32[2] key of an integer scalar `seed`: a 64-bit seed bitcast to two words
  (high word first); a 32-bit seed gets a zero high word."""
  if np.shape(seed):
    raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
  dt = _aval(seed).dtype
  if not dtypes.issubdtype(dt, np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  if dt.itemsize > 4:
    hi = lax_e.convert_element_type(
        lax_e.shift_right_logical(seed, np.array(32, dt)), _u32)
  else:
    # A logical shift by the full width gives 0 in XLA: the high word of a 32-bit seed.
    hi = lax_s.full((), 0, _u32)
  # int -> uint32 conversion wraps, keeping the low 32 bits (-1 -> 0xFFFFFFFF).
  lo = lax_e.convert_element_type(seed, _u32)
  return lax_s.concatenate([lax_s.expand_dims(hi, (0,)), lax_s.expand_dims(lo, (0,))], 0)


def threefry_2x32(keypair, count):
  """Hash the uint32 array `count` under `keypair` (JAX's `threefry_2x32`).

  The flattened counts are cut in two halves (an odd count is padded with a
  trailing 0) which are hashed as the pairs `(first[i], second[i])`; the two output
  words are concatenated back in the same layout.
  """
  key1, key2 = _key_words(keypair)
  if _aval(count).dtype != _u32:
    raise TypeError(f"threefry_2x32 requires uint32 counts, got {_aval(count).dtype}")
  flat = lax_s.reshape(count, (math.prod(np.shape(count)),))
  n = flat.shape[0]
  odd = n % 2
  if odd:
    flat = lax_s.concatenate([flat, lax_s.full((1,), 0, _u32)], 0)
  half = flat.shape[0] // 2
  x1 = lax_slicing.slice(flat, (0,), (half,))
  x2 = lax_slicing.slice(flat, (half,), (2 * half,))
  y1, y2 = threefry2x32(key1, key2, x1, x2)
  out = lax_s.concatenate([y1, y2], 0)
  if odd:
    out = lax_slicing.slice(out, (0,), (n,))
  return lax_s.reshape(out, np.shape(count))


def threefry_2x32_iota(keypair, n):
  """`threefry_2x32(keypair, iota(n))`, the counters of the 2020 stream, written
  without the concatenate of the two output halves.

  Output word `j` of the first half is the first word of the pair `(j, j + half)`,
  and of the second half the second word of the pair `(j - half, j)`, so each word
  is one hash of its own pair and a select. Hashing a pair once and concatenating
  the halves costs the same at runtime (XLA fuses the concatenate into its consumer
  and evaluates the hash of the operand it picks, per word), but a concatenate in a
  loop that also combines another one (randint's two draws, the real and imaginary
  parts of a complex normal) makes LLVM compile ten times longer (2 s instead of
  0.2 s for randint).
  """
  key1, key2 = _key_words(keypair)
  half = (n + 1) // 2
  j = lax_s.iota(_u32, n)
  first = lax_e.lt(j, np.full((n,), half, _u32))
  x1 = lax_e.select(first, j, lax_e.sub(j, np.full((n,), half, _u32)))
  x2 = lax_e.add(x1, np.full((n,), half, _u32))
  if n % 2:
    # An odd count is padded with a trailing 0: the last pair is (half - 1, 0).
    x2 = lax_e.select(lax_e.eq(x2, np.full((n,), n, _u32)), np.zeros((n,), _u32), x2)
  y1, y2 = threefry2x32(key1, key2, x1, x2)
  return lax_e.select(first, y1, y2)


def iota_2x32_shape(shape):
  """The row-major index of every element of `shape` as two uint32 arrays (hi, lo):
  the counters of the partitionable stream."""
  shape = tuple(shape)
  size = math.prod(shape)
  if size > 2 ** 32:
    # The high words would be nonzero; more than 2**32 draws in one call (16 GiB of
    # uint32) is beyond any device we run on.
    raise NotImplementedError("random bits arrays of more than 2**32 elements")
  lo = lax_s.iota(_u32, size)
  if len(shape) != 1:
    lo = lax_s.reshape(lo, shape)
  hi = lax_s.full(shape, 0, _u32)
  return hi, lo


def threefry_split(key, shape):
  """`prod(shape)` new keys from `key`, as a uint32 array of shape `(*shape, 2)`."""
  shape = tuple(int(d) for d in shape)
  if config.jax_threefry_partitionable:
    # Key i is both words of the hash of counter i. Hashed once per output word and
    # picked with a select, not concatenated: see threefry_2x32_iota for why.
    k1, k2 = _key_words(key)
    out_shape, dims = (*shape, 2), tuple(range(len(shape)))
    counts1, counts2 = (lax_s.broadcast_in_dim(c, out_shape, dims)
                        for c in iota_2x32_shape(shape))
    b1, b2 = threefry2x32(k1, k2, counts1, counts2)
    first = lax_e.eq(lax_s.broadcasted_iota(_u32, out_shape, len(shape)),
                     np.zeros(out_shape, _u32))
    return lax_e.select(first, b1, b2)
  num = math.prod(shape)
  return lax_s.reshape(threefry_2x32_iota(key, num * 2), (*shape, 2))


def threefry_fold_in(key, data):
  """A new key from `key` and the uint32 scalar `data` (the same in both streams)."""
  return threefry_2x32(key, threefry_seed(data))


def threefry_random_bits(key, bit_width, shape):
  """Uniform random bits: an array of `shape` of the unsigned dtype of `bit_width`."""
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  shape = tuple(int(d) for d in shape)
  dtype = UINT_DTYPES[bit_width]
  if config.jax_threefry_partitionable:
    k1, k2 = _key_words(key)
    counts1, counts2 = iota_2x32_shape(shape)
    bits1, bits2 = threefry2x32(k1, k2, counts1, counts2)
    if bit_width == 64:
      hi = lax_e.convert_element_type(bits1, dtype)
      lo = lax_e.convert_element_type(bits2, dtype)
      return lax_e.bitwise_or(lax_e.shift_left(hi, np.array(32, dtype)), lo)
    bits = lax_e.bitwise_xor(bits1, bits2)
    return bits if bit_width == 32 else lax_e.convert_element_type(bits, dtype)
  return _threefry_random_bits_original(key, bit_width, shape)


def _threefry_random_bits_original(key, bit_width, shape):
  size = math.prod(shape)
  max_count = -(-bit_width * size // 32)  # ceil: the number of 32-bit words needed
  uint32max = int(np.iinfo(np.uint32).max)
  nblocks, rem = divmod(max_count, uint32max)
  if not nblocks:
    bits = threefry_2x32_iota(key, rem)
  else:  # over 2**32 - 1 words: one fresh key per block of counters
    from tracejax._src.api import vmap
    keys = threefry_split(key, (nblocks + 1,))
    subkeys = lax_slicing.slice(keys, (0, 0), (nblocks, 2))
    last_key = lax_slicing.index_in_dim(keys, nblocks, 0, keepdims=False)
    blocks = vmap(threefry_2x32, in_axes=(0, None))(subkeys, lax_s.iota(_u32, uint32max))
    last = threefry_2x32_iota(last_key, rem)
    bits = lax_s.concatenate([lax_s.reshape(blocks, (nblocks * uint32max,)), last], 0)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    half = bits.shape[0] // 2
    hi = lax_e.convert_element_type(lax_slicing.slice(bits, (0,), (half,)), dtype)
    lo = lax_e.convert_element_type(lax_slicing.slice(bits, (half,), (2 * half,)), dtype)
    bits = lax_e.bitwise_or(lax_e.shift_left(hi, np.array(32, dtype)), lo)
  elif bit_width in (8, 16):
    # Each word gives 32 // bit_width values, least significant first: the
    # little-endian view of the words as uint8/uint16 (bits.view(dtype)[:size]).
    per = 32 // bit_width
    shifts = lax_e.mul(np.uint32(bit_width), lax_s.broadcasted_iota(_u32, (per, 1), 0))
    words = lax_s.broadcast_in_dim(bits, (per, max_count), (1,))
    parts = lax_e.bitwise_and(lax_e.shift_right_logical(words, lax_s.broadcast_in_dim(
        shifts, (per, max_count), (0, 1))), np.uint32(np.iinfo(dtype).max))
    parts = lax_s.reshape(parts, (max_count * per,), (1, 0))
    bits = lax_slicing.slice(lax_e.convert_element_type(parts, dtype), (0,), (size,))
  return lax_s.reshape(bits, shape)
