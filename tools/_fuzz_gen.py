"""Random program generator of the differential fuzzer (see tools/fuzz_vs_jax.py).

A program is a JSON-able dict::

  {"inputs": [{"dtype": "float32", "shape": [3], "kind": "normal"}, ...],
   "ops":    [{"t": "jnp.sin({0})", "a": ["x0"]}, ...],   # results are v0, v1, ...
   "out":    "v1",
   "stack":  [{"t": "vmap", "in_axes": [0], "size": 2}, {"t": "jit"}],  # inner first
   "seed":   1234}

``render`` turns it into source text defining ``main`` (used by both libraries and by
the saved reproducers); ``make_inputs`` draws the input data (NaN/inf, size-0, 0-d and
Python scalars included).  Types of intermediate values come from an ``infer``
callback (tracejax's eval_shape in the fuzzer), so the generator itself imports no
array library but NumPy.

Example::

  prog = generate(np.random.default_rng(0), infer, x64=False)
  src = render(prog)
"""
import numpy as np

from _fuzz_common import np_dtype

FLOATS = ["float32", "float32", "float32", "float16", "bfloat16", "float64"]
INTS = ["int32", "int32", "int8", "int16", "uint8", "uint32", "int64", "uint16", "uint64"]
COMPLEX = ["complex64", "complex128"]
SHAPES = [(), (), (3,), (4,), (1,), (0,), (2, 3), (3, 3), (2, 2), (2, 0), (1, 3),
          (2, 2, 2), (3, 1)]


def dclass(dtype):
  """'f' float, 'c' complex, 'i' signed int, 'u' unsigned, 'b' bool."""
  if dtype in ("bfloat16", "float16", "float32", "float64"):
    return "f"
  if dtype.startswith("float8"):
    return "f"
  if dtype.startswith("complex"):
    return "c"
  if dtype == "bool":
    return "b"
  if dtype.startswith("uint"):
    return "u"
  if dtype.startswith("int"):
    return "i"
  return "?"


# ----------------------------------------------------------------------------- inputs

def _draw_input_spec(rng, x64):
  r = rng.random()
  if r < 0.08:  # Python scalars are weakly typed inside the programs
    v = rng.choice(["f", "i", "b", "c", "nan", "inf"], p=[.4, .25, .1, .1, .1, .05])
    val = {"f": float(rng.choice([0.5, -1.5, 2.0, 0.0])), "i": int(rng.choice([3, -2, 0, 1])),
           "b": bool(rng.integers(2)), "c": [1.0, -0.5], "nan": "nan", "inf": "-inf"}[v]
    return {"py": val, "shape": [], "dtype": "py"}
  if r < 0.55:
    dt = str(rng.choice(FLOATS))
  elif r < 0.8:
    dt = str(rng.choice(INTS))
  elif r < 0.9:
    dt = "bool"
  else:
    dt = str(rng.choice(COMPLEX))
  shape = SHAPES[rng.integers(len(SHAPES))]
  kind = str(rng.choice(["normal", "normal", "special", "positive", "big"]))
  return {"dtype": dt, "shape": list(shape), "kind": kind}


def input_aval(spec):
  """(shape, dtype name) a spec has inside the program (Python scalars: 'py:<type>')."""
  if "py" in spec:
    v = spec["py"]
    t = ("complex" if isinstance(v, list) else "bool" if isinstance(v, bool) else
         "int" if isinstance(v, int) else "float")
    return (), "py:" + t
  return tuple(spec["shape"]), spec["dtype"]


def final_shapes(prog):
  """Shapes of the arguments main() receives, after every vmap layer's batch axis."""
  shapes = [list(s["shape"]) if "py" not in s else None for s in prog["inputs"]]
  for layer in prog["stack"]:
    if layer["t"] != "vmap":
      continue
    for i, ax in enumerate(layer["in_axes"]):
      if ax is None or shapes[i] is None:
        continue
      nd = len(shapes[i])
      pos = ax if ax >= 0 else nd + 1 + ax
      shapes[i].insert(pos, layer["size"])
  return shapes


def make_inputs(prog):
  """Concrete input data (list of encoded dicts, see _fuzz_common.decode_input)."""
  from _fuzz_common import encode_array
  out = []
  for i, (spec, shape) in enumerate(zip(prog["inputs"], final_shapes(prog))):
    if "py" in spec:
      out.append({"py": spec["py"]})
      continue
    rng = np.random.default_rng([prog["seed"], i])
    dt, kind, c = spec["dtype"], spec["kind"], dclass(spec["dtype"])
    n = int(np.prod(shape)) if shape else 1
    if c in "fc":
      a = rng.standard_normal(n) * 1.5
      if c == "c":
        a = a + 1j * rng.standard_normal(n)
      if kind == "positive":
        a = np.abs(a) + 0.25
      elif kind == "big":
        a = a * 300.0
      elif kind == "special" and n:
        sp = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0])
        m = rng.random(n) < 0.4
        a = np.where(m, sp[rng.integers(len(sp), size=n)], a)
    elif c == "b":
      a = rng.random(n) < 0.5
    elif c == "u":
      a = rng.integers(0, 10, size=n)
    else:
      lo, hi = (-100, 100) if kind == "big" else (-5, 6)
      if kind == "positive":
        lo, hi = 1, 6
      a = rng.integers(lo, hi, size=n)
    a = np.asarray(a).astype(np_dtype(dt) if c not in "fc" else
                             (np.complex128 if c == "c" else np.float64))
    a = a.astype(np_dtype(dt)).reshape(shape)
    out.append(encode_array(a))
  return out


# ----------------------------------------------------------------------------- ops

UNARY = [
    "jnp.sin", "jnp.cos", "jnp.tan", "jnp.tanh", "jnp.exp", "jnp.log", "jnp.sqrt", "jnp.abs",
    "jnp.negative", "jnp.square", "jnp.reciprocal", "jnp.floor", "jnp.ceil", "jnp.round",
    "jnp.sign", "jnp.expm1", "jnp.log1p", "jnp.arctan", "jnp.sinh", "jnp.cosh", "jnp.arcsin",
    "jnp.arccos", "jnp.arcsinh", "jnp.arctanh", "jnp.exp2", "jnp.cbrt", "jnp.rint",
    "jnp.isnan", "jnp.isfinite", "jnp.isinf", "jnp.signbit", "jnp.conj", "jnp.real",
    "jnp.imag", "jnp.log2", "jnp.log10", "jnp.trunc", "jnp.positive", "jnp.logical_not",
    "jnp.invert", "jnp.angle", "jnp.fabs", "jnp.sinc", "jnp.nan_to_num", "jnp.deg2rad",
    "jax.nn.relu", "jax.nn.sigmoid", "jax.nn.softplus", "jax.nn.silu", "jax.nn.gelu",
    "jax.nn.elu", "jax.nn.leaky_relu", "jax.nn.relu6", "jax.nn.log_sigmoid",
    "jax.nn.hard_tanh", "jax.nn.celu", "jax.nn.selu", "jax.nn.soft_sign",
    "lax.rsqrt", "lax.erf", "lax.erfc", "lax.lgamma", "lax.digamma", "lax.erf_inv",
    "lax.logistic", "lax.neg", "lax.exp", "lax.is_finite", "lax.population_count",
    "lax.stop_gradient", "jax.scipy.special.expit", "jax.scipy.special.logit",
    "jax.scipy.special.gammaln", "jax.scipy.special.ndtr", "jax.scipy.special.xlogy",
    "jnp.ravel", "jnp.transpose", "jnp.flip", "jnp.sort", "jnp.argsort", "jnp.cumsum",
    "jnp.cumprod", "jnp.ptp", "jnp.count_nonzero", "jnp.atleast_2d", "jnp.iscomplex",
    "jnp.isreal", "jnp.copy", "jnp.asarray", "jnp.array", "jnp.zeros_like", "jnp.ones_like",
    # (second round, seeds 200+: more lax elementwise, nn activations, fft shifts)
    "lax.abs", "lax.sign", "lax.floor", "lax.round", "lax.tan", "lax.asinh", "lax.acosh",
    "lax.expm1", "lax.log1p", "lax.square", "lax.cbrt", "lax.bitwise_not", "lax.clz",
    "lax.bessel_i0e", "lax.bessel_i1e", "lax.real", "lax.imag", "lax.conj", "lax.tanh",
    "jax.nn.hard_sigmoid", "jax.nn.hard_swish", "jax.nn.mish", "jax.nn.squareplus",
    "jax.nn.sparse_plus", "jax.nn.swish", "jnp.fft.ifftshift", "jnp.i0", "jnp.sinc",
    "jax.scipy.special.erfc", "jax.scipy.special.i0e", "jax.scipy.special.entr",
]
BINARY = [
    "jnp.add", "jnp.subtract", "jnp.multiply", "jnp.divide", "jnp.floor_divide",
    "jnp.remainder", "jnp.power", "jnp.maximum", "jnp.minimum", "jnp.arctan2", "jnp.hypot",
    "jnp.greater", "jnp.less_equal", "jnp.equal", "jnp.not_equal", "jnp.logical_and",
    "jnp.logical_or", "jnp.logical_xor", "jnp.bitwise_and", "jnp.bitwise_or",
    "jnp.bitwise_xor", "jnp.left_shift", "jnp.right_shift", "jnp.copysign", "jnp.nextafter",
    "jnp.fmod", "jnp.float_power", "jnp.heaviside", "jnp.logaddexp", "jnp.fmax", "jnp.fmin",
    "jnp.true_divide", "jnp.mod", "jnp.ldexp", "jnp.gcd", "jnp.lcm",
    "lax.add", "lax.mul", "lax.max", "lax.min", "lax.sub", "lax.div", "lax.rem", "lax.pow",
    "lax.atan2", "lax.nextafter", "lax.eq", "lax.lt",
    "jax.scipy.special.xlogy", "jax.scipy.special.xlog1py",
    "lax.shift_left", "lax.shift_right_logical", "lax.shift_right_arithmetic", "lax.igamma",
    "lax.complex", "lax.bitwise_and", "lax.ne", "lax.ge", "jnp.polyval", "jnp.isclose",
    "jax.scipy.special.gammainc", "jax.scipy.special.zeta",
]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", ">", "<=", "==", "!=", "&", "|", "^",
             "<<", ">>"]
REDUCTIONS = ["jnp.sum", "jnp.mean", "jnp.max", "jnp.min", "jnp.prod", "jnp.var", "jnp.std",
              "jnp.argmax", "jnp.argmin", "jnp.any", "jnp.all", "jnp.nansum", "jnp.nanmax",
              "jnp.nanmean", "jnp.median", "jax.nn.logsumexp", "jax.scipy.special.logsumexp",
              "jnp.amax", "jnp.count_nonzero"]
AXIS_OPS = ["jnp.cumsum", "jnp.cumprod", "jax.nn.softmax", "jax.nn.log_softmax", "jnp.sort",
            "jnp.argsort", "jnp.flip", "jnp.diff", "jnp.expand_dims", "lax.cummax",
            "lax.cumsum", "jnp.fft.fft", "jnp.fft.ifft", "jnp.fft.rfft", "jnp.fft.irfft",
            "jnp.fft.fftshift", "jax.nn.standardize", "jnp.nancumsum", "jnp.cumulative_sum",
            "lax.cumprod", "lax.cummin", "lax.cumlogsumexp", "jnp.fft.hfft", "jnp.fft.ihfft",
            "jnp.fft.ifftshift", "jnp.nancumprod", "jnp.cumulative_prod"]
PRESERVE = {  # dtype-preserving bodies for control flow
    "f": ["jnp.sin", "jnp.cos", "jnp.negative", "jnp.square", "jnp.tanh",
          "(lambda v: v * 2)", "jnp.abs", "jnp.exp"],
    "c": ["jnp.sin", "jnp.negative", "jnp.square", "(lambda v: v * 2)", "jnp.conj"],
    "i": ["jnp.negative", "jnp.abs", "jnp.square", "(lambda v: v * 2)", "(lambda v: v + 1)"],
    "u": ["jnp.square", "(lambda v: v * 2)", "(lambda v: v + 1)"],
    "b": ["jnp.logical_not", "(lambda v: v)"],
}
DTYPES_ALL = FLOATS + INTS + COMPLEX + ["bool"]


def _lit(rng, cls=None):
  c = cls or str(rng.choice(["i", "f", "f", "b", "c", "s"]))
  if c == "i":
    return str(int(rng.choice([0, 1, 2, -3, 7])))
  if c == "b":
    return str(bool(rng.integers(2)))
  if c == "c":
    return "(1-2j)"
  if c == "s":
    return str(rng.choice(["float('nan')", "float('inf')", "-0.0", "np.float32(2)",
                           "np.int32(3)", "np.float16(1.5)"]))
  return str(float(rng.choice([0.5, -1.5, 2.0, 0.0, 1e-3, 3.0])))


class _Pool:
  def __init__(self, rng, avals):
    self.rng = rng
    self.avals = avals  # name -> (shape, dtype)

  def pick(self, pred=lambda s, d: True):
    names = [n for n, (s, d) in self.avals.items() if pred(s, d)]
    if not names:
      return None
    # favour recent values so programs chain
    w = np.arange(1, len(names) + 1, dtype=float) ** 1.5
    return names[self.rng.choice(len(names), p=w / w.sum())]

  def shape(self, n):
    return self.avals[n][0]

  def dtype(self, n):
    return self.avals[n][1]


def _arr(s, d):
  return not d.startswith("py:")


def _axis(rng, nd, allow_none=True):
  if nd == 0 or (allow_none and rng.random() < 0.25):
    return None if allow_none else 0
  return int(rng.integers(-nd, nd))


def _index_expr(rng, shape):
  """A random index expression for an array of ``shape`` (may be out of bounds)."""
  nd = len(shape)
  opts = ["...", "None", "..., None"]
  if nd >= 1:
    n0 = shape[0]
    opts += ["1:", "::-1", ":-1", "::2"]
    if n0 > 0:
      i = int(rng.integers(-n0, n0))
      # A list index goes inside a tuple: a bare list (x[[-1, 0]]) is a TypeError in
      # JAX 0.10.2 (and here), so it is drawn only rarely, as a misuse check.
      opts += [str(i), f"jnp.array([0, {i}])", f"np.array([{i}, 0])", "([-1, 0],)",
               f"{-n0 - 1}", "jnp.array(-1)"]
      if rng.random() < 0.1:
        opts.append("[-1, 0]")
    opts += ["jnp.array([1, -4])", "([True] * %d,)" % n0]
  if nd >= 2:
    opts += ["..., 0", ":, ::-1", "0, :", "..., [0, -1]", ":, None, 0"]
  return str(rng.choice(opts))


def gen_op(rng, P, x64):
  """One random op record, or None when no value in the pool fits."""
  r = rng.random()
  any_arr = lambda s, d: _arr(s, d)
  if r < 0.18:
    a = P.pick()
    return {"t": f"{rng.choice(UNARY)}({{0}})", "a": [a]}
  if r < 0.36:
    a = P.pick()
    sa = P.shape(a)
    same = P.pick(lambda s, d: tuple(s) == tuple(sa) or s == ())
    q = rng.random()
    if q < 0.3 or same is None:
      lit = _lit(rng)
      if rng.random() < 0.5:
        return {"t": f"({{0}} {rng.choice(OPERATORS)} {lit})", "a": [a]}
      return {"t": f"{rng.choice(BINARY)}({{0}}, {lit})", "a": [a]}
    if q < 0.6:
      return {"t": f"({{0}} {rng.choice(OPERATORS)} {{1}})", "a": [a, same]}
    return {"t": f"{rng.choice(BINARY)}({{0}}, {{1}})", "a": [a, same]}
  if r < 0.46:
    a = P.pick(any_arr) or P.pick()
    nd = len(P.shape(a))
    fn = rng.choice(REDUCTIONS)
    ax = _axis(rng, nd)
    kw = f", axis={ax}" if rng.random() < 0.8 else ""
    if rng.random() < 0.3 and "arg" not in fn and "count" not in fn:
      kw += ", keepdims=True"
    if fn in ("jnp.var", "jnp.std") and rng.random() < 0.3:
      kw += ", ddof=1"
    return {"t": f"{fn}({{0}}{kw})", "a": [a]}
  if r < 0.53:
    a = P.pick(lambda s, d: _arr(s, d) and len(s) >= 1) or P.pick()
    nd = len(P.shape(a))
    fn = str(rng.choice(AXIS_OPS))
    ax = _axis(rng, max(nd, 1), allow_none=False)
    if fn == "jnp.diff":
      return {"t": f"jnp.diff({{0}}, n={int(rng.integers(1, 4))}, axis={ax})", "a": [a]}
    if fn == "jnp.expand_dims":
      return {"t": f"jnp.expand_dims({{0}}, {int(rng.integers(-nd - 1, nd + 1))})", "a": [a]}
    if fn in ("jnp.fft.fftshift", "jnp.fft.ifftshift") and rng.random() < 0.5:
      return {"t": f"jnp.fft.fftshift({{0}})", "a": [a]}
    if fn.startswith("lax.cum"):
      return {"t": f"{fn}({{0}}, axis={ax % max(nd, 1)}, reverse={bool(rng.integers(2))})",
              "a": [a]}
    if fn.startswith("jnp.fft") and rng.random() < 0.3:
      return {"t": f"{fn}({{0}}, n={int(rng.integers(1, 5))}, axis={ax})", "a": [a]}
    if fn in ("jnp.cumulative_sum", "jnp.cumulative_prod"):
      return {"t": f"{fn}({{0}}, axis={ax}, "
                   f"include_initial={bool(rng.integers(2))})", "a": [a]}
    return {"t": f"{fn}({{0}}, axis={ax})", "a": [a]}
  if r < 0.63:
    return _shape_op(rng, P)
  if r < 0.72:
    return _index_op(rng, P)
  if r < 0.80:
    return _control_op(rng, P)
  if r < 0.86:
    return _linalg_op(rng, P)
  if r < 0.91:
    return _random_op(rng, P)
  if r < 0.95:
    return _lax_op(rng, P)
  return _misc_op(rng, P, x64)


def _shape_op(rng, P):
  a = P.pick(any_arr := (lambda s, d: _arr(s, d))) or P.pick()
  s = P.shape(a)
  nd = len(s)
  k = rng.integers(14)
  if k == 0:
    return {"t": "jnp.reshape({0}, (-1,))", "a": [a]}
  if k == 1 and nd >= 2:
    perm = [int(p) for p in rng.permutation(nd)]
    return {"t": f"jnp.transpose({{0}}, {tuple(perm)})", "a": [a]}
  if k == 2:
    b = P.pick(lambda s2, d: _arr(s2, d) and tuple(s2[1:]) == tuple(s[1:]) and len(s2) == nd)
    if nd >= 1 and b:
      return {"t": "jnp.concatenate([{0}, {1}], axis=0)", "a": [a, b]}
    return {"t": "jnp.stack([{0}, {0}])", "a": [a]}
  if k == 3:
    return {"t": f"jnp.tile({{0}}, {int(rng.integers(0, 3))})", "a": [a]}
  if k == 4:
    return {"t": f"jnp.repeat({{0}}, {int(rng.integers(0, 3))}, axis={_axis(rng, nd)})",
            "a": [a]}
  if k == 5:
    return {"t": f"jnp.broadcast_to({{0}}, (2,) + jnp.shape({{0}}))", "a": [a]}
  if k == 6 and nd >= 1:
    return {"t": f"jnp.roll({{0}}, {int(rng.integers(-3, 4))}, axis={_axis(rng, nd)})",
            "a": [a]}
  if k == 7:
    mode = rng.choice(["constant", "edge", "reflect", "wrap", "mean", "symmetric",
                       "maximum", "linear_ramp"])
    return {"t": f"jnp.pad({{0}}, {int(rng.integers(0, 3))}, mode='{mode}')", "a": [a]}
  if k == 8:
    return {"t": f"jnp.clip({{0}}, {_lit(rng, 'i')}, {_lit(rng, 'f')})", "a": [a]}
  if k == 9:
    return {"t": f"{{0}}.astype(jnp.{rng.choice(DTYPES_ALL)})", "a": [a]}
  if k == 10 and nd >= 2:
    return {"t": "jnp.swapaxes({0}, 0, -1)", "a": [a]}
  if k == 11:
    b = P.pick(lambda s2, d: tuple(s2) == tuple(s) or s2 == ())
    c = P.pick(lambda s2, d: tuple(s2) == tuple(s) or s2 == ())
    return {"t": "jnp.where({0}, {1}, {2})", "a": [a, b, c]}
  if k == 12 and nd >= 1:
    return {"t": f"lax.rev({{0}}, (0,))", "a": [a]}
  if k == 13 and nd >= 2:
    return {"t": str(rng.choice(["jnp.triu({0})", "jnp.tril({0}, -1)", "jnp.diagonal({0})",
                                 "jnp.trace({0})"])), "a": [a]}
  return {"t": "jnp.squeeze({0})", "a": [a]}


def _index_op(rng, P):
  a = P.pick(lambda s, d: _arr(s, d)) or P.pick()
  s = P.shape(a)
  idx = _index_expr(rng, s)
  k = rng.integers(8)
  if k <= 2:
    return {"t": f"{{0}}[{idx}]", "a": [a]}
  if k <= 5:
    meth = rng.choice(["set", "add", "mul", "min", "max", "set", "add"])
    v = P.pick(lambda s2, d: s2 == ())
    val = "{1}" if v and rng.random() < 0.5 else _lit(rng)
    args = [a, v] if val == "{1}" else [a]
    extra = rng.choice(["", "", ", mode='drop'", ", mode='clip'", ", mode='promise_in_bounds'"])
    return {"t": f"{{0}}.at[{idx}].{meth}({val}{extra})", "a": args}
  if k == 6:
    return {"t": f"{{0}}.at[{idx}].get(mode='fill', fill_value={_lit(rng, 'i')})", "a": [a]}
  if len(s) >= 1:
    n = int(rng.integers(0, 4))
    q = rng.integers(5)
    if q == 0:
      return {"t": f"lax.dynamic_slice_in_dim({{0}}, {int(rng.integers(-3, 4))}, "
                   f"{min(n, s[0])})", "a": [a]}
    if q == 1:
      return {"t": f"jnp.where({{0}}, size={n}, fill_value=-1)[0]", "a": [a]}
    if q == 2:
      return {"t": f"jnp.nonzero({{0}}, size={n})[0]", "a": [a]}
    if q == 3:
      return {"t": f"jnp.take({{0}}, jnp.array([0, -1, 2]), axis=0, mode="
                   f"'{rng.choice(['clip', 'fill', 'wrap'])}')", "a": [a]}
    return {"t": f"jnp.argwhere({{0}}, size={n})", "a": [a]}
  return {"t": f"{{0}}[{idx}]", "a": [a]}


def _control_op(rng, P):
  a = P.pick(lambda s, d: _arr(s, d)) or P.pick()
  s, d = P.shape(a), P.dtype(a)
  body = PRESERVE.get(dclass(d), ["(lambda v: v)"])
  u1, u2 = rng.choice(body), rng.choice(body)
  k = rng.integers(8)
  n = int(rng.integers(0, 4))
  if k == 0:
    return {"t": f"lax.cond(jnp.sum(jnp.real({{0}})) > 0, {u1}, {u2}, {{0}})", "a": [a]}
  if k == 1 and len(s) >= 1:
    rev = bool(rng.integers(2))
    pick = int(rng.integers(2))
    return {"t": f"lax.scan(lambda c, xi: (c + {u1}(xi), c * 2), jnp.zeros_like({{0}}[0]), "
                 f"{{0}}, reverse={rev})[{pick}]", "a": [a]}
  if k == 2:
    return {"t": f"lax.fori_loop(0, {n}, lambda i, v: {u1}(v), {{0}})", "a": [a]}
  if k == 3:
    return {"t": f"lax.while_loop(lambda st: st[0] < {n}, lambda st: (st[0] + 1, {u1}(st[1])),"
                 f" (0, {{0}}))[1]", "a": [a]}
  if k == 4 and len(s) >= 1:
    return {"t": f"lax.map({u1}, {{0}})", "a": [a]}
  if k == 5:
    return {"t": f"lax.switch({n}, [{u1}, {u2}], {{0}})", "a": [a]}
  if k == 6:
    return {"t": f"jax.checkpoint({u1})({{0}})", "a": [a]}
  if len(s) >= 1:
    return {"t": f"lax.scan(lambda c, xi: (c, {u1}(xi)), 0, {{0}}, length={s[0]})[1]",
            "a": [a]}
  return {"t": f"lax.cond(True, {u1}, {u2}, {{0}})", "a": [a]}


def _linalg_op(rng, P):
  sq = P.pick(lambda s, d: len(s) >= 2 and s[-1] == s[-2] and dclass(d) in "fc")
  m2 = P.pick(lambda s, d: len(s) >= 2 and dclass(d) in "fc")
  if sq is None and m2 is None:
    a = P.pick(lambda s, d: len(s) >= 1) or P.pick()
    return {"t": str(rng.choice(["jnp.outer({0}, {0})", "jnp.dot({0}, {0})",
                                 "jnp.linalg.norm({0})", "jnp.vdot({0}, {0})",
                                 "jnp.inner({0}, {0})"])), "a": [a]}
  if sq is not None and rng.random() < 0.7:
    n = P.shape(sq)[-1]
    spd = f"({{0}} @ jnp.swapaxes({{0}}, -1, -2).conj() + {n} * jnp.eye({n}))"
    t = str(rng.choice([
        "jnp.linalg.det({0})", "jnp.linalg.inv({0})", "jnp.linalg.slogdet({0})[1]",
        "jnp.linalg.solve({0}, {0})", f"jnp.linalg.cholesky({spd})",
        f"jnp.linalg.eigvalsh({spd})", "jnp.linalg.svd({0}, compute_uv=False)",
        "jnp.linalg.norm({0}, 'fro')", "jnp.linalg.norm({0}, 2)",
        f"jnp.linalg.matrix_power({{0}}, {int(rng.integers(0, 4))})",
        "jnp.abs(jnp.linalg.qr({0})[1])", "jnp.linalg.pinv({0})", "jnp.linalg.matrix_rank({0})",
        f"jax.scipy.linalg.solve_triangular(jnp.triu({{0}}) + {n} * jnp.eye({n}), {{0}})",
        "jnp.linalg.eigvals({0})", f"jnp.linalg.eigh({spd})[0]", "jnp.fft.fft2({0})",
        "jnp.fft.rfftn({0})", "jnp.fft.ifftn({0})", "jax.scipy.linalg.expm({0})",
        "jnp.linalg.lstsq({0}, {0})[0]",
    ]))
    return {"t": t, "a": [sq]}
  a = m2
  t = str(rng.choice(["({0} @ jnp.swapaxes({0}, -1, -2))", "jnp.einsum('...ij,...kj->...ik', {0}, {0})",
                      "jnp.matmul(jnp.swapaxes({0}, -1, -2), {0})",
                      "jnp.tensordot({0}, {0}, axes=2)", "jnp.linalg.norm({0}, axis=-1)",
                      "jnp.kron({0}, {0})", "jnp.fft.fft2({0})", "jnp.fft.irfftn({0})"]))
  return {"t": t, "a": [a]}


def _random_op(rng, P):
  a = P.pick(lambda s, d: _arr(s, d)) or P.pick()
  key = f"jax.random.PRNGKey({int(rng.integers(0, 100))})"
  if rng.random() < 0.3:
    key = f"jax.random.fold_in({key}, {int(rng.integers(0, 10))})"
  if rng.random() < 0.2:
    key = f"jax.random.split({key})[1]"
  k = rng.integers(9)
  shp = "jnp.shape({0})"
  t = ["jax.random.normal(%s, %s)" % (key, shp),
       "jax.random.uniform(%s, %s, minval=-1.0, maxval=2.0)" % (key, shp),
       "jax.random.bernoulli(%s, 0.3, %s)" % (key, shp),
       "jax.random.randint(%s, %s, -3, 7)" % (key, shp),
       "jax.random.permutation(%s, {0})" % key,
       "jax.random.categorical(%s, {0})" % key,
       "jax.random.gumbel(%s, %s)" % (key, shp),
       "({0} * jax.random.normal(%s, %s, jnp.float16))" % (key, shp),
       "jax.random.choice(%s, {0}, (2,))" % key][k]
  if rng.random() < 0.4:  # (second round: the other distributions, parameters from {0})
    pos = "(jnp.abs(jnp.real({0})) + 0.5)"
    t = str(rng.choice([
        "jax.random.exponential(%s, %s)" % (key, shp), "jax.random.laplace(%s, %s)" % (key, shp),
        "jax.random.logistic(%s, %s)" % (key, shp), "jax.random.cauchy(%s, %s)" % (key, shp),
        "jax.random.rademacher(%s, %s)" % (key, shp), "jax.random.bits(%s, %s)" % (key, shp),
        "jax.random.truncated_normal(%s, -1.0, {0})" % key,
        "jax.random.gamma(%s, %s)" % (key, pos), "jax.random.beta(%s, %s, 2.0)" % (key, pos),
        "jax.random.poisson(%s, %s)" % (key, pos), "jax.random.t(%s, %s)" % (key, pos),
        "jax.random.dirichlet(%s, %s)" % (key, pos),
        "jax.random.permutation(%s, {0}, axis=-1)" % key,
        "jax.random.choice(%s, 4, (3,), replace=False)" % key,
        "jax.random.choice(%s, {0}, (2,), p=jax.nn.softmax(jnp.arange(jnp.shape({0})[0])))" % key,
        "jax.random.normal(%s, %s, jnp.float64)" % (key, shp),
        "jax.random.uniform(%s, %s, jnp.bfloat16)" % (key, shp),
    ]))
  return {"t": t, "a": [a]}


def _lax_op(rng, P):
  """Structured lax ops (second round): slicing, padding, dot_general, reductions,
  windows, convolutions, sorting, broadcasting."""
  a = P.pick(lambda s, d: _arr(s, d)) or P.pick()
  s = tuple(P.shape(a))
  nd = len(s)
  k = int(rng.integers(16))
  if k == 0:
    return {"t": f"lax.pad({{0}}, jnp.zeros((), jnp.asarray({{0}}).dtype), "
                 f"{[(int(rng.integers(-1, 2)), int(rng.integers(0, 2)), int(rng.integers(0, 2)))] * nd})",
            "a": [a]}
  if k == 1 and nd >= 1:
    start = [int(rng.integers(0, max(n, 1))) for n in s]
    return {"t": f"lax.slice({{0}}, {tuple(start)}, {tuple(s)})", "a": [a]}
  if k == 2 and nd >= 1:
    upd = P.pick(lambda s2, d: len(s2) == nd and all(x <= y for x, y in zip(s2, s)))
    if upd is not None and rng.random() < 0.7:
      idx = [int(rng.integers(-1, 3)) for _ in s]
      return {"t": f"lax.dynamic_update_slice({{0}}, {{1}}.astype(jnp.asarray({{0}}).dtype), "
                   f"{tuple(idx)})", "a": [a, upd]}
    return {"t": f"lax.dynamic_index_in_dim({{0}}, {int(rng.integers(-2, 4))}, keepdims="
                 f"{bool(rng.integers(2))})", "a": [a]}
  if k == 3 and nd >= 1:
    b = P.pick(lambda s2, d: len(s2) >= 1 and s2[-1] == s[-1] and _arr(s2, d))
    return {"t": f"lax.dot_general({{0}}, {{1}}, ((({nd - 1},), ({len(P.shape(b)) - 1},)), "
                 f"((), ())))", "a": [a, b]}
  if k == 4:
    fn = rng.choice(["reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                     "reduce_or", "reduce_xor"])
    axes = tuple(sorted(set(int(rng.integers(0, nd)) for _ in range(nd)))) if nd else ()
    return {"t": f"lax.{fn}({{0}}, {axes})", "a": [a]}
  if k == 5 and nd >= 1:
    fn = rng.choice(["argmax", "argmin"])
    return {"t": f"lax.{fn}({{0}}, {int(rng.integers(0, nd))}, jnp.int32)", "a": [a]}
  if k == 6 and nd >= 1:
    if rng.random() < 0.5:
      return {"t": f"lax.sort({{0}}, dimension={int(rng.integers(-nd, nd))})", "a": [a]}
    return {"t": "lax.sort_key_val({0}, jnp.arange(jnp.size({0})).reshape(jnp.shape({0})))[1]",
            "a": [a]}
  if k == 7:
    return {"t": f"lax.broadcast_in_dim({{0}}, (2,) + {s}, {tuple(range(1, nd + 1))})",
            "a": [a]}
  if k == 8 and nd >= 1:
    b = P.pick(lambda s2, d: tuple(s2[1:]) == s[1:] and len(s2) == nd)
    return {"t": "lax.concatenate([{0}, {1}.astype(jnp.asarray({0}).dtype)], 0)", "a": [a, b]}
  if k == 9:
    return {"t": f"lax.reshape({{0}}, {(int(np.prod(s)),)})", "a": [a]}
  if k == 10:
    return {"t": f"lax.expand_dims({{0}}, ({int(rng.integers(0, nd + 1))},))", "a": [a]}
  if k == 11:
    return {"t": "lax.select_n(jnp.asarray({0}) > 0, {0}, jnp.zeros_like({0}))", "a": [a]}
  if k == 12 and nd >= 1:
    fn = str(rng.choice(["lax.add", "lax.max", "lax.min"]))
    init = {"lax.add": "0", "lax.max": "-jnp.inf", "lax.min": "jnp.inf"}[fn]
    w = tuple(int(rng.integers(1, 3)) for _ in s)
    pad = str(rng.choice(["VALID", "SAME"]))
    # the init as a typed array, or (as user code writes it) a Python scalar
    init = (init if rng.random() < 0.3 else f"jnp.asarray({init}, jnp.asarray({{0}}).dtype)")
    return {"t": f"lax.reduce_window({{0}}, {init}, {fn}, {w}, {(1,) * nd}, '{pad}')",
            "a": [a]}
  if k == 13 and nd == 2:
    return {"t": f"lax.conv_general_dilated({{0}}[None], jnp.ones((2,) + {s[:1]} + (2,), "
                 f"jnp.asarray({{0}}).dtype), (1,), '{rng.choice(['SAME', 'VALID'])}')",
            "a": [a]}
  if k == 14:
    return {"t": f"lax.reduce_precision({{0}}, {int(rng.integers(2, 9))}, "
                 f"{int(rng.integers(1, 11))})", "a": [a]}
  if nd >= 2:
    return {"t": f"lax.transpose({{0}}, {tuple(int(p) for p in rng.permutation(nd))})",
            "a": [a]}
  return {"t": "lax.squeeze(jnp.asarray({0})[None], (0,))", "a": [a]}


def _misc_op(rng, P, x64):
  a = P.pick()
  k = rng.integers(10)
  if k == 0:
    return {"t": f"jnp.full_like({{0}}, {_lit(rng)})", "a": [a]}
  if k == 1:
    return {"t": f"lax.integer_pow({{0}}, {int(rng.integers(-2, 4))})", "a": [a]}
  if k == 2:
    return {"t": f"lax.convert_element_type({{0}}, jnp.{rng.choice(DTYPES_ALL)})", "a": [a]}
  if k == 3:
    return {"t": f"jnp.searchsorted(jnp.sort(jnp.ravel({{0}})), {_lit(rng, 'f')})", "a": [a]}
  if k == 4:
    return {"t": f"lax.top_k(jnp.ravel({{0}}), {int(rng.integers(0, 3))})[0]", "a": [a]}
  if k == 5:
    return {"t": f"jnp.unique({{0}}, size={int(rng.integers(1, 4))}, fill_value=0)", "a": [a]}
  if k == 6:
    return {"t": f"lax.clamp({_lit(rng, 'f')}, {{0}}, 1.0)", "a": [a]}
  if k == 7:
    return {"t": "lax.select({0} > 0, {0}, jnp.zeros_like({0}))", "a": [a]}
  if k == 8:
    return {"t": f"jax.nn.one_hot({{0}}, {int(rng.integers(0, 4))})", "a": [a]}
  return {"t": "jnp.linspace(0.0, 1.0, 3) * jnp.sum({0})", "a": [a]}


# ----------------------------------------------------------------------------- stack

TRANSFORMS = ["jit", "vmap", "grad", "jvp", "vjp", "jacfwd", "jacrev", "value_and_grad",
              "hessian", "checkpoint"]
T_WEIGHTS = np.array([24, 24, 12, 8, 8, 7, 7, 4, 2, 4], dtype=float)


def gen_stack(rng, prog):
  depth = int(rng.choice([0, 1, 2, 3], p=[.12, .38, .33, .17]))
  stack = []
  avals = [input_aval(s) for s in prog["inputs"]]
  inexact = [i for i, (s, d) in enumerate(avals)
             if dclass(d.replace("py:", "")) in "fc" or d == "py:float" or d == "py:complex"]
  ndims = [len(s) for s, _ in avals]
  for _ in range(depth):
    t = str(rng.choice(TRANSFORMS, p=T_WEIGHTS / T_WEIGHTS.sum()))
    layer = {"t": t}
    if t == "vmap":
      axes = []
      for i, (s, d) in enumerate(avals):
        if d.startswith("py:") or rng.random() < 0.3:
          axes.append(None)
        else:
          axes.append(int(rng.integers(-ndims[i] - 1, ndims[i] + 1)) if rng.random() < .3 else 0)
      if all(a is None for a in axes) and rng.random() < 0.9:
        cand = [i for i, (s, d) in enumerate(avals) if not d.startswith("py:")]
        if cand:
          axes[cand[0]] = 0
      for i, a in enumerate(axes):
        if a is not None:
          ndims[i] += 1
      layer["in_axes"] = axes
      layer["size"] = int(rng.choice([1, 2, 3, 0], p=[.2, .4, .3, .1]))
      if rng.random() < 0.15:
        layer["out_axes"] = -1
    elif t not in ("jit", "checkpoint"):
      if inexact and rng.random() < 0.93:
        layer["arg"] = int(rng.choice(inexact))
      else:
        layer["arg"] = int(rng.integers(len(avals)))
    stack.append(layer)
  return stack


def render(prog):
  """Source text defining ``main`` for ``prog`` (names: jax, jnp, lax, np)."""
  names = [f"x{i}" for i in range(len(prog["inputs"]))]
  lines = [f"def f0({', '.join(names)}):"]
  for k, op in enumerate(prog["ops"]):
    lines.append(f"  v{k} = " + op["t"].format(*op["a"]))
  lines.append(f"  return {prog['out']}")
  for k, layer in enumerate(prog["stack"], start=1):
    t, prev = layer["t"], f"f{k - 1}"
    i = layer.get("arg", 0)
    call = f"{prev}(*a[:{i}], d, *a[{i + 1}:])"
    if t == "jit":
      lines.append(f"f{k} = jax.jit({prev})")
    elif t == "checkpoint":
      lines.append(f"f{k} = jax.checkpoint({prev})")
    elif t == "disable_jit":  # (never generated: the fuzzer's rerun of a difference)
      lines.append(f"f{k} = jax.disable_jit()({prev})")
    elif t == "vmap":
      ax = "(" + "".join(f"{a}, " for a in layer["in_axes"]) + ")"
      oa = f", out_axes={layer['out_axes']}" if "out_axes" in layer else ""
      lines.append(f"f{k} = jax.vmap({prev}, in_axes={ax}{oa})")
    elif t in ("jacfwd", "jacrev", "hessian"):
      lines.append(f"f{k} = jax.{t}({prev}, argnums={i})")
    elif t in ("grad", "value_and_grad"):
      lines += [f"def f{k}(*a):", f"  return jax.{t}(lambda d: _sc({call}))(a[{i}])"]
    elif t == "jvp":
      lines += [f"def f{k}(*a):",
                f"  return jax.jvp(lambda d: {call}, (a[{i}],), (jnp.ones_like(a[{i}]) * 0.5,))"]
    elif t == "vjp":
      lines += [f"def f{k}(*a):", f"  o, fn = jax.vjp(lambda d: {call}, a[{i}])",
                "  return o, fn(_cot(o))[0]"]
  lines.append(f"main = f{len(prog['stack'])}")
  return "\n".join(lines) + "\n"


def generate(rng, infer, x64, max_ops=6, p_keep_error=0.12):
  """A random program.  ``infer(prog)`` returns {name: (shape, dtype)} or raises."""
  n_in = int(rng.choice([1, 2, 3], p=[.5, .35, .15]))
  inputs = [_draw_input_spec(rng, x64) for _ in range(n_in)]
  prog = {"inputs": inputs, "ops": [], "out": "x0", "stack": [],
          "seed": int(rng.integers(2 ** 31))}
  avals = {f"x{i}": input_aval(s) for i, s in enumerate(inputs)}
  n_ops = int(rng.integers(1, max_ops + 1))
  tries = 0
  while len(prog["ops"]) < n_ops and tries < 4 * max_ops:
    tries += 1
    op = gen_op(rng, _Pool(rng, avals), x64)
    if op is None:
      continue
    cand = dict(prog, ops=prog["ops"] + [op], out=f"v{len(prog['ops'])}")
    try:
      new = infer(cand)
    except Exception:
      if rng.random() < p_keep_error:  # keep as the last op: error agreement is tested too
        prog = cand
        break
      continue
    prog = cand
    avals.update(new)
  prog["stack"] = gen_stack(rng, prog)
  return prog


# ----------------------------------------------------------------------------- smooth

SMOOTH_UNARY = ["jnp.sin", "jnp.cos", "jnp.tanh", "jax.nn.sigmoid", "jax.nn.softplus",
                "(lambda v: jnp.exp(jnp.tanh(v)))", "jnp.square", "(lambda v: v * 0.5)",
                "jnp.cumsum", "jnp.ravel", "jnp.flip", "jnp.sinh", "jnp.arctan",
                "(lambda v: jnp.log1p(jnp.square(v)))", "jax.nn.gelu", "jax.nn.silu"]
SMOOTH_OTHER = ["jnp.sum({0}, axis=0)", "jnp.mean({0})", "jnp.sum({0} * {0}, axis=-1)",
                "jnp.dot(jnp.ravel({0}), jnp.ravel({0}))", "jax.nn.logsumexp({0})",
                "jax.nn.softmax({0})", "jnp.stack([{0}, jnp.sin({0})])", "({0} * {1})",
                "({0} + {1})", "({0} - 2.0 * {1})", "jnp.where({0} > 10.0, {0}, {1})",
                "lax.scan(lambda c, xi: (c * 0.5 + jnp.sin(xi), c), jnp.zeros_like({0}[0]), "
                "{0})[1]", "lax.fori_loop(0, 2, lambda i, v: jnp.sin(v) + v, {0})",
                "lax.cond(True, jnp.sin, jnp.cos, {0})", "jnp.cumprod(jnp.tanh({0}) + 1.5)",
                "{0}.at[0].add(jnp.sum({1}))", "{0}[::-1]", "jnp.concatenate([{0}, {1}])"]


def generate_smooth(rng, infer, dtype="float32", max_ops=4):
  """A random program of smooth float ops on non-empty float inputs (for grad checks)."""
  n_in = int(rng.integers(1, 3))
  shape = [[3], [2, 2], [4]][rng.integers(3)]
  inputs = [{"dtype": dtype, "shape": list(shape), "kind": "normal"} for _ in range(n_in)]
  prog = {"inputs": inputs, "ops": [], "out": "x0", "stack": [],
          "seed": int(rng.integers(2 ** 31))}
  avals = {f"x{i}": input_aval(s) for i, s in enumerate(inputs)}
  for _ in range(4 * max_ops):
    if len(prog["ops"]) >= max_ops:
      break
    P = _Pool(rng, avals)
    a = P.pick(lambda s, d: len(s) >= 1)
    b = P.pick(lambda s, d: tuple(s) == tuple(P.shape(a)))
    if rng.random() < 0.5:
      op = {"t": f"{rng.choice(SMOOTH_UNARY)}({{0}})", "a": [a]}
    else:
      op = {"t": str(rng.choice(SMOOTH_OTHER)), "a": [a, b]}
    cand = dict(prog, ops=prog["ops"] + [op], out=f"v{len(prog['ops'])}")
    try:
      new = infer(cand)
    except Exception:
      continue
    if not new[cand["out"]][0]:  # keep non-scalar values chainable; scalars end
      prog = cand
      break
    prog = cand
    avals.update(new)
  return prog
