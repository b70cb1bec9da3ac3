"""`mask` and `shapecheck`: the 2020 experimental API for shape-polymorphic functions.

A shape spec is a string such as `"n"`, `"(n, _)"`, `"(n+1,)"`, `"2*n"` or `""` (a
scalar). Its dimensions parse into polynomials over named sizes (`Poly`); `_` stands
for whatever concrete size the argument has.

`mask(fun, in_shapes, out_shape)(args, logical_env)` runs `fun` once on *padded*
arrays and gives the result for the *logical* sizes in `logical_env`: a masking
trace carries each value with its polymorphic shape, and the rules that would
otherwise read the padding (reductions, contractions, concatenation along a
polymorphic axis) mask it out or place the pieces at their logical offsets.
Elementwise work runs on the padding too; the caller ignores it.

`shapecheck(in_shapes, out_shape)(fun)` runs the same trace abstractly (staged,
nothing computed) to check that `fun` maps the input specs to the output spec.

Inside `fun`, `x.shape` is the padded (concrete) shape, not a polynomial, so code
that computes with sizes (e.g. `jnp.mean`, which divides by the padded size) sees
padded sizes. A new broadcast dimension whose size equals the padded size of a shape
variable is taken to be that variable.
"""
import functools
import re

import numpy as np

from tracejax._src import dtypes, tree_util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Trace, Tracer, current_trace, set_current_trace
from tracejax._src.interpreters import ad, staging
from tracejax._src.lax import dot as lax_dot
from tracejax._src.lax import elementwise as lx
from tracejax._src.lax import misc as lmisc
from tracejax._src.lax import reductions as lred
from tracejax._src.lax import slicing as lslice
from tracejax._src.lax import special as lspecial
from tracejax._src.lax import structural as lstruct
from tracejax._src.lax import windowed as lwin


class ShapeError(Exception):
  """Shapes do not match the polymorphic shape specs."""


# =============================================================================
# Polynomial sizes
# =============================================================================

class Poly:
  """A polynomial with integer coefficients in named sizes: `2*n + 1`, `n*m`."""
  __slots__ = ("terms",)

  def __init__(self, terms):
    # terms: {monomial: coeff}; a monomial is a sorted tuple of (name, power); () = 1.
    self.terms = {m: c for m, c in terms.items() if c != 0}

  @staticmethod
  def var(name):
    return Poly({((name, 1),): 1})

  @property
  def is_constant(self):
    return all(m == () for m in self.terms)

  @property
  def vars(self):
    return {v for m in self.terms for v, _ in m}

  def __add__(self, other):
    other = _as_poly(other)
    if other is None:
      return NotImplemented
    terms = dict(self.terms)
    for m, c in other.terms.items():
      terms[m] = terms.get(m, 0) + c
    return _simplify(Poly(terms))

  __radd__ = __add__

  def __neg__(self):
    return Poly({m: -c for m, c in self.terms.items()})

  def __sub__(self, other):
    return self + (-_as_poly(other))

  def __rsub__(self, other):
    return (-self) + other

  def __mul__(self, other):
    other = _as_poly(other)
    if other is None:
      return NotImplemented
    terms = {}
    for m1, c1 in self.terms.items():
      for m2, c2 in other.terms.items():
        powers = dict(m1)
        for v, p in m2:
          powers[v] = powers.get(v, 0) + p
        m = tuple(sorted(powers.items()))
        terms[m] = terms.get(m, 0) + c1 * c2
    return _simplify(Poly(terms))

  __rmul__ = __mul__

  def __eq__(self, other):
    other = _as_poly(other)
    return other is not None and self.terms == other.terms

  def __hash__(self):
    return hash(frozenset(self.terms.items()))

  def __int__(self):
    if not self.is_constant:
      raise TypeError(f"polymorphic size {self} is not a constant")
    return self.terms.get((), 0)

  def evaluate(self, env):
    """The value for sizes `env` (ints, or traced integers under `jit`)."""
    total = 0
    for m, c in self.terms.items():
      term = c
      for v, p in m:
        term = term * env[v] ** p if p != 1 else term * env[v]
      total = total + term
    return total

  def __repr__(self):
    if not self.terms:
      return "0"
    parts = []
    for m, c in sorted(self.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
      mono = "*".join(v if p == 1 else f"{v}**{p}" for v, p in m)
      if not mono:
        parts.append(str(c))
      elif c == 1:
        parts.append(mono)
      else:
        parts.append(f"{c}*{mono}")
    return " + ".join(parts)


def _as_poly(x):
  if isinstance(x, Poly):
    return x
  if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
    return Poly({(): int(x)})
  return None


def _simplify(p):
  """Constant polynomials become plain ints."""
  return int(p) if isinstance(p, Poly) and p.is_constant else p


def _eval_dim(d, env):
  return d.evaluate(env) if isinstance(d, Poly) else d


# =============================================================================
# Shape specs
# =============================================================================

class _Mono:
  """The `_` of a spec: whatever concrete size the value has."""

  def __repr__(self):
    return "_"


_MONO = _Mono()
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z][A-Za-z0-9_]*)|(.))")


def _parse_dim(text, spec):
  text = text.strip()
  if text == "_":
    return _MONO
  if not text:
    raise ValueError(f"empty dimension in shape spec {spec!r}")
  toks = [m.groups() for m in _TOKEN.finditer(text) if m.group(0).strip()]
  pos = 0

  def factor():
    nonlocal pos
    if pos >= len(toks):
      raise ValueError(f"unexpected end of shape spec {spec!r}")
    num, name, op = toks[pos]
    pos += 1
    if num is not None:
      return int(num)
    if name is not None:
      return Poly.var(name)
    if op == "(":
      v = expr()
      if pos >= len(toks) or toks[pos][2] != ")":
        raise ValueError(f"unbalanced parenthesis in shape spec {spec!r}")
      pos += 1
      return v
    if op == "-":
      return -_as_poly(factor())
    raise ValueError(f"unexpected {op!r} in shape spec {spec!r}")

  def term():
    nonlocal pos
    v = factor()
    while pos < len(toks) and toks[pos][2] == "*":
      pos += 1
      v = _as_poly(v) * factor()
    return v

  def expr():
    nonlocal pos
    v = term()
    while pos < len(toks) and toks[pos][2] in ("+", "-"):
      op = toks[pos][2]
      pos += 1
      t = term()
      v = _as_poly(v) + t if op == "+" else _as_poly(v) - t
    return v

  v = expr()
  if pos != len(toks):
    raise ValueError(f"could not parse dimension {text!r} of shape spec {spec!r}")
  return _simplify(v) if isinstance(v, Poly) else v


def parse_spec(spec=""):
  """A shape spec string -> tuple of dims (ints, `Poly`s, or `_`).

  >>> parse_spec("(n, 2*m+1, _)")
  (n, 2*m + 1, _)
  """
  if not isinstance(spec, str):
    raise TypeError(f"shape spec must be a string, got {spec!r}")
  s = spec.strip()
  if s.startswith("(") and s.endswith(")") and _balanced(s[1:-1]):
    s = s[1:-1]
  if not s.strip():
    return ()
  parts = _split_top(s)
  if parts and not parts[-1].strip():
    parts = parts[:-1]  # "(n,)"
  return tuple(_parse_dim(p, spec) for p in parts)


def _balanced(s):
  depth = 0
  for ch in s:
    depth += {"(": 1, ")": -1}.get(ch, 0)
    if depth < 0:
      return False
  return depth == 0


def _split_top(s):
  parts, depth, cur = [], 0, ""
  for ch in s:
    if ch == "," and depth == 0:
      parts.append(cur)
      cur = ""
      continue
    depth += {"(": 1, ")": -1}.get(ch, 0)
    cur += ch
  parts.append(cur)
  return parts


def finalize_spec(spec, shape):
  """Fill the `_` dims of a parsed spec from a concrete shape."""
  if len(spec) != len(shape):
    raise ShapeError(f"shape spec {_spec_str(spec)} has rank {len(spec)}, but the value has "
                     f"shape {tuple(shape)}")
  return tuple(s if d is _MONO else d for d, s in zip(spec, shape)) if spec else ()


def _spec_str(spec):
  return "(" + ", ".join(map(str, spec)) + ("," if len(spec) == 1 else "") + ")"


def _bind_shapes(specs, shapes):
  """Padded sizes of the shape variables, solved from the padded argument shapes."""
  env = {}
  pending = []
  for spec, shape in zip(specs, shapes):
    for d, s in zip(spec, shape):
      if isinstance(d, Poly):
        pending.append((d, s))
      elif d is not _MONO and d != s:
        raise ShapeError(f"dimension {d} of a shape spec does not match the argument's size {s}")
  progress = True
  while pending and progress:
    progress, rest = False, []
    for d, s in pending:
      unknown = d.vars - set(env)
      if not unknown:
        if d.evaluate(env) != s:
          raise ShapeError(f"padded sizes disagree: {d} should be {d.evaluate(env)}, got {s}")
        progress = True
      elif len(unknown) == 1 and _is_linear_in(d, next(iter(unknown))):
        v = next(iter(unknown))
        coeff = d.terms[((v, 1),)]
        rest_val = int(_eval_dim(_simplify(d - Poly({((v, 1),): coeff})), env))
        if (s - rest_val) % coeff:
          raise ShapeError(f"padded size {s} is not of the form {d}")
        env[v] = (s - rest_val) // coeff
        progress = True
      else:
        rest.append((d, s))
    pending = rest
  if pending:
    unknown = sorted(set().union(*(d.vars for d, _ in pending)) - set(env))
    raise ShapeError(f"cannot determine the padded sizes of {unknown} from the arguments")
  return env


def _is_linear_in(p, v):
  return all(dict(m).get(v, 0) <= 1 and (dict(m).get(v, 0) == 0 or len(m) == 1)
             for m in p.terms)


# =============================================================================
# The masking trace
# =============================================================================

def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


class MaskTracer(Tracer):
  """A padded value and its polymorphic (logical) shape."""
  __slots__ = ("val", "poly_shape")

  def __init__(self, trace, val, poly_shape):
    self._trace, self.val, self.poly_shape = trace, val, tuple(poly_shape)

  @property
  def aval(self):
    return _aval(self.val)


class MaskTrace(Trace):
  """Runs primitives on padded values; `masking_rules` keep the padding out of results."""

  def __init__(self, parent, logical_env, padded_env):
    self.parent, self.logical_env, self.padded_env = parent, logical_env, padded_env
    self.level = parent.level + 1
    self._by_size = {}
    for v, s in padded_env.items():
      self._by_size.setdefault(s, Poly.var(v))

  def size_to_dim(self, s):
    """A concrete size of a value made inside `fun` (e.g. a broadcast to `x.shape`)."""
    return self._by_size.get(s, s)

  def to_mask(self, x):
    if isinstance(x, MaskTracer) and x._trace is self:
      return x.val, x.poly_shape
    return x, tuple(self.size_to_dim(s) for s in _aval(x).shape)

  def logical(self, d):
    return _eval_dim(d, self.logical_env)

  def process_primitive(self, primitive, args, params):
    if not any(isinstance(x, MaskTracer) and x._trace is self for x in args):
      with set_current_trace(self.parent):
        return primitive.bind(*args, **params)
    if primitive.call_primitive and "call_jaxpr" in params:
      with set_current_trace(self):
        return ir.eval_jaxpr(params["call_jaxpr"], [], *args)
    if primitive.name in ("custom_jvp_call", "custom_vjp_call") and "call" in params:
      with set_current_trace(self):
        return params["call"](*args)
    vals, shapes = zip(*[self.to_mask(x) for x in args])
    rule = masking_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Masking rule for '{primitive.name}' not implemented")
    with set_current_trace(self.parent):
      out, out_shape = rule(self, list(vals), list(shapes), **params)
    if primitive.multiple_results:
      return [MaskTracer(self, o, s) for o, s in zip(out, out_shape)]
    return MaskTracer(self, out, out_shape)


masking_rules = {}  # prim -> rule(trace, padded_vals, poly_shapes, **params) -> (out, poly_shape)


def _is_poly(d):
  return isinstance(d, Poly)


def _is_one(d):
  return not _is_poly(d) and d == 1


def _valid_mask(trace, val, axes):
  """Boolean array of `val`'s padded shape: True inside the logical sizes along `axes`."""
  shape = _aval(val).shape
  mask = None
  for ax, d in axes:
    idx = lstruct.broadcasted_iota(np.int32, shape, ax)
    m = lx.lt(idx, lx.convert_element_type(_as_array(trace.logical(d)), np.int32))
    mask = m if mask is None else lx.and_(mask, m)
  return mask


def _as_array(x):
  return x if isinstance(x, Tracer) else np.asarray(x, np.int32)


def _fill(val, mask, fill):
  a = _aval(val)
  return lx.select_n(mask, lstruct.full(a.shape, fill, a.dtype), val)


def _elementwise_rule(prim):
  def rule(trace, vals, shapes, **params):
    ranked = [s for v, s in zip(vals, shapes) if len(s)]
    out_shape = tuple(ranked[0]) if ranked else ()
    for s in ranked[1:]:
      # Equal ranks, and size-1 axes broadcast (as jnp leaves them to the lax ops).
      if len(s) != len(out_shape) or any(
          a != b and not _is_one(a) and not _is_one(b) for a, b in zip(out_shape, s)):
        raise ShapeError(f"{prim.name} got incompatible shapes {_spec_str(out_shape)} and "
                         f"{_spec_str(s)}")
      out_shape = tuple(b if _is_one(a) else a for a, b in zip(out_shape, s))
    out = prim.bind(*vals, **params)
    if prim.multiple_results:
      return out, [out_shape] * len(out)
    return out, out_shape
  masking_rules[prim] = rule


def _identity_for(prim, dtype):
  dtype = np.dtype(dtype)
  if prim in (lred.reduce_sum_p,):
    return 0
  if prim in (lred.reduce_prod_p,):
    return 1
  if prim in (lred.reduce_and_p,):
    return True
  if prim in (lred.reduce_or_p, lred.reduce_xor_p):
    return False
  lowest = prim in (lred.reduce_max_p, lred.argmax_p)
  if dtypes.issubdtype(dtype, np.inexact):
    return -np.inf if lowest else np.inf
  if dtype == np.bool_:
    return not lowest
  info = np.iinfo(dtype)
  return info.min if lowest else info.max


def _reduction_rule(prim):
  def rule(trace, vals, shapes, axes, **params):
    (x,), (shape,) = vals, shapes
    poly_axes = [(a, shape[a]) for a in axes if _is_poly(shape[a])]
    if poly_axes:
      x = _fill(x, _valid_mask(trace, x, poly_axes), _identity_for(prim, _aval(x).dtype))
    out = prim.bind(x, axes=axes, **params)
    return out, tuple(d for i, d in enumerate(shape) if i not in axes)
  masking_rules[prim] = rule


def _cumulative_rule(prim, identity_prim):
  def rule(trace, vals, shapes, axis, reverse):
    (x,), (shape,) = vals, shapes
    if reverse and _is_poly(shape[axis]):
      # From the end, the padding would flow into the logical entries: neutralize it.
      x = _fill(x, _valid_mask(trace, x, [(axis, shape[axis])]),
                _identity_for(identity_prim, _aval(x).dtype))
    return prim.bind(x, axis=axis, reverse=reverse), shape
  masking_rules[prim] = rule


def _concatenate_rule(trace, vals, shapes, dimension):
  ranks = {len(s) for s in shapes}
  if len(ranks) != 1:
    raise ShapeError(f"concatenate of operands of different ranks: {shapes}")
  for s in shapes[1:]:
    for i, (a, b) in enumerate(zip(shapes[0], s)):
      if i != dimension and a != b:
        raise ShapeError(f"concatenate got incompatible shapes {_spec_str(shapes[0])} and "
                         f"{_spec_str(s)} along dimension {i}")
  out_dim = functools.reduce(lambda a, b: _simplify(_as_poly(a) + b),
                             [s[dimension] for s in shapes])
  out_shape = tuple(out_dim if i == dimension else d for i, d in enumerate(shapes[0]))
  if not any(_is_poly(s[dimension]) for s in shapes):
    return lstruct.concatenate(vals, dimension), out_shape
  # Each operand goes at the logical end of the ones before it; later operands overwrite
  # the padding of earlier ones, and the padded total leaves room for every update.
  a0 = _aval(vals[0])
  padded = list(a0.shape)
  padded[dimension] = sum(_aval(v).shape[dimension] for v in vals)
  out = lstruct.full(tuple(padded), 0, a0.dtype)
  offset = np.int32(0)
  for v, s in zip(vals, shapes):
    starts = [np.int32(0)] * len(padded)
    starts[dimension] = offset
    out = lslice.dynamic_update_slice(out, v, starts)
    size = trace.logical(s[dimension])
    offset = lx.add(_as_array(offset), lx.convert_element_type(_as_array(size), np.int32))
  return out, out_shape


def _broadcast_in_dim_rule(trace, vals, shapes, shape, broadcast_dimensions, **params):
  (x,), (xs,) = vals, shapes
  out = lstruct.broadcast_in_dim_p.bind(x, shape=shape,
                                        broadcast_dimensions=broadcast_dimensions, **params)
  out_shape = [trace.size_to_dim(s) for s in shape]
  for src, dst in enumerate(broadcast_dimensions):
    if xs[src] != 1 or shape[dst] == 1:
      out_shape[dst] = xs[src]
  return out, tuple(out_shape)


def _transpose_rule(trace, vals, shapes, permutation):
  (x,), (xs,) = vals, shapes
  return lstruct.transpose_p.bind(x, permutation=permutation), tuple(xs[p] for p in permutation)


def _squeeze_rule(trace, vals, shapes, dimensions):
  (x,), (xs,) = vals, shapes
  return (lstruct.squeeze_p.bind(x, dimensions=dimensions),
          tuple(d for i, d in enumerate(xs) if i not in dimensions))


def _reshape_rule(trace, vals, shapes, new_sizes, dimensions=None, **params):
  (x,), (xs,) = vals, shapes
  out = lstruct.reshape_p.bind(x, new_sizes=new_sizes, dimensions=dimensions, **params)
  if not any(_is_poly(d) for d in xs):
    return out, tuple(new_sizes)
  # Only reshapes that add or drop unit dimensions keep the polymorphic sizes in place.
  nontrivial_in = [d for d in xs if d != 1]
  nontrivial_out = [i for i, s in enumerate(new_sizes) if s != 1]
  padded_in = [s for s, d in zip(_aval(x).shape, xs) if d != 1]
  if dimensions is not None or [new_sizes[i] for i in nontrivial_out] != padded_in:
    raise NotImplementedError("Masking rule for 'reshape' only supports adding or removing "
                              "unit dimensions of a polymorphic shape")
  out_shape = [1] * len(new_sizes)
  for i, d in zip(nontrivial_out, nontrivial_in):
    out_shape[i] = d
  return out, tuple(out_shape)


def _slice_rule(trace, vals, shapes, start_indices, limit_indices, strides):
  (x,), (xs,) = vals, shapes
  padded = _aval(x).shape
  out_shape = []
  for i, d in enumerate(xs):
    st = 1 if strides is None else strides[i]
    if _is_poly(d):
      # A unit-stride slice of a polymorphic axis reads as relative to the logical end:
      # x[k:limit] of a padded size P keeps n - k - (P - limit) logical entries, which
      # stay a prefix of the result (how shifts such as jnp.cumsum's are written).
      if st != 1:
        raise NotImplementedError("Masking rule for 'slice' with a stride along a "
                                  "polymorphic dimension is not implemented")
      out_shape.append(_simplify(_as_poly(d) - start_indices[i] - (padded[i] - limit_indices[i])))
    else:
      out_shape.append(max(0, -(-(limit_indices[i] - start_indices[i]) // st)))
  return (lslice.slice_p.bind(x, start_indices=start_indices, limit_indices=limit_indices,
                              strides=strides), tuple(out_shape))


def _dot_general_rule(trace, vals, shapes, dimension_numbers, **params):
  (lhs, rhs), (ls, rs) = vals, shapes
  (lc, rc), (lb, rb) = dimension_numbers
  for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
    if ls[a] != rs[b]:
      raise ShapeError(f"dot_general got incompatible sizes {ls[a]} and {rs[b]}")
  poly_l = [(a, ls[a]) for a in lc if _is_poly(ls[a])]
  poly_r = [(b, rs[b]) for b in rc if _is_poly(rs[b])]
  if poly_l:  # zero both sides' padding: 0 * (garbage) could still be nan
    lhs = _fill(lhs, _valid_mask(trace, lhs, poly_l), 0)
    rhs = _fill(rhs, _valid_mask(trace, rhs, poly_r), 0)
  out = lax_dot.dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers, **params)
  lfree = [d for i, d in enumerate(ls) if i not in lc and i not in lb]
  rfree = [d for i, d in enumerate(rs) if i not in rc and i not in rb]
  return out, tuple([ls[a] for a in lb] + lfree + rfree)


# ---- the rule table ----

def _fill_rules():
  import types
  skip = {"bitcast_convert_type"}
  for mod in (lx, lspecial):  # the two elementwise families
    for name in dir(mod):
      p = getattr(mod, name)
      if name.endswith("_p") and hasattr(p, "bind") and not isinstance(p, types.ModuleType) \
          and p.name not in skip:
        _elementwise_rule(p)
  _elementwise_rule(ad.add_any_p)
  _elementwise_rule(lmisc.stop_gradient_p)
  for p in (lred.reduce_sum_p, lred.reduce_max_p, lred.reduce_min_p, lred.reduce_prod_p,
            lred.reduce_and_p, lred.reduce_or_p, lred.reduce_xor_p, lred.argmax_p,
            lred.argmin_p):
    _reduction_rule(p)
  _cumulative_rule(lwin.cumsum_p, lred.reduce_sum_p)
  _cumulative_rule(lwin.cumprod_p, lred.reduce_prod_p)
  _cumulative_rule(lwin.cummax_p, lred.reduce_max_p)
  _cumulative_rule(lwin.cummin_p, lred.reduce_min_p)
  masking_rules[lstruct.concatenate_p] = _concatenate_rule
  masking_rules[lstruct.broadcast_in_dim_p] = _broadcast_in_dim_rule
  masking_rules[lstruct.transpose_p] = _transpose_rule
  masking_rules[lstruct.squeeze_p] = _squeeze_rule
  masking_rules[lstruct.reshape_p] = _reshape_rule
  masking_rules[lslice.slice_p] = _slice_rule
  masking_rules[lax_dot.dot_general_p] = _dot_general_rule


_fill_rules()


def _run_masked(flat_fun, args, poly_shapes, logical_env, padded_env):
  trace = MaskTrace(current_trace(), logical_env, padded_env)
  ins = [MaskTracer(trace, x, s) for x, s in zip(args, poly_shapes)]
  with set_current_trace(trace):
    outs = flat_fun(*ins)
  vals, shapes = zip(*[trace.to_mask(o) for o in outs]) if outs else ((), ())
  return list(vals), list(shapes)


def _flatten_specs(specs, what):
  leaves, tree = tree_util.tree_flatten(specs, is_leaf=lambda s: isinstance(s, str))
  for s in leaves:
    if not isinstance(s, str):
      raise TypeError(f"{what} must contain shape spec strings, got {s!r}")
  return [parse_spec(s) for s in leaves], tree


def _flat_fun(fun, in_tree, out_store):
  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    leaves, tree = tree_util.tree_flatten(out)
    out_store.append(tree)
    return leaves
  return flat


def _check_out(out_specs, out_spec_tree, out_tree, shapes, what):
  if out_spec_tree is None:
    return
  if out_tree != out_spec_tree:
    raise TypeError(f"{what}: the output's pytree structure {out_tree} does not match "
                    f"out_shape's {out_spec_tree}")
  for spec, shape in zip(out_specs, shapes):
    if len(spec) != len(shape) or any(
        d is not _MONO and _simplify(_as_poly(d)) != _simplify(_as_poly(s))
        for d, s in zip(spec, shape)):
      raise ShapeError(f"{what}: the output has shape {_spec_str(shape)}, but out_shape "
                       f"says {_spec_str(spec)}")


def mask(fun, in_shapes, out_shape=None):
  """Make `fun` work on padded arrays, computing the result for given logical sizes.

  Args:
    fun: a function of arrays.
    in_shapes: one shape spec string per positional argument (a list, or any pytree
      matching the arguments), e.g. `['n']` or `['(n, _)', 'm']`.
    out_shape: the output's shape spec(s), checked against what `fun` produces.

  Returns:
    `masked_fun(args, logical_env)`: `args` is the list of padded arguments (their
    shapes bind the padded sizes), `logical_env` a dict of the logical sizes, e.g.
    `dict(n=3)`. The result is padded; entries past the logical sizes are unspecified.

  Example:
    >>> padded_sum = mask(jnp.sum, ['n'], '')
    >>> padded_sum([jnp.array([3, 1, 4, 1, 5])], dict(n=3))   # 3 + 1 + 4
    DeviceArray(8, dtype=int32)
  """
  if not callable(fun):
    raise TypeError(f"mask: fun must be callable, got {fun!r}")
  if isinstance(in_shapes, str):
    in_shapes = [in_shapes]
  if not isinstance(in_shapes, (list, tuple)):
    raise TypeError(f"mask: in_shapes must be a list of shape specs, one per argument, got "
                    f"{in_shapes!r}")
  in_shapes = list(in_shapes)
  in_specs, in_tree = _flatten_specs(in_shapes, "mask: in_shapes")
  if out_shape is not None:
    out_specs, out_spec_tree = _flatten_specs(out_shape, "mask: out_shape")
  else:
    out_specs, out_spec_tree = None, None

  def masked_fun(args, logical_env):
    if not isinstance(logical_env, dict):
      raise TypeError(f"mask: logical_env must be a dict of sizes, got {logical_env!r}")
    if not isinstance(args, (list, tuple)):
      args = [args]
    args_flat, args_tree = tree_util.tree_flatten(list(args))
    if args_tree != in_tree:
      raise TypeError(f"mask: the arguments' pytree structure {args_tree} does not match "
                      f"in_shapes {in_tree}")
    shapes = [np.shape(x) if not isinstance(x, Tracer) else x.shape for x in args_flat]
    specs = [finalize_spec(s, sh) for s, sh in zip(in_specs, shapes)]
    padded_env = _bind_shapes(specs, shapes)
    missing = set(padded_env) - set(logical_env)
    if missing:
      raise ValueError(f"mask: logical_env has no size for {sorted(missing)}")
    for v, size in logical_env.items():
      if v in padded_env and not isinstance(size, Tracer) and int(size) > padded_env[v]:
        raise ValueError(f"mask: logical size {v}={int(size)} exceeds its padded size "
                         f"{padded_env[v]}")
    store = []
    flat = _flat_fun(lambda *a: fun(*a), args_tree, store)
    outs, out_shapes = _run_masked(flat, args_flat, specs, logical_env, padded_env)
    out_tree = store[0]
    _check_out(out_specs, out_spec_tree, out_tree, out_shapes, "mask")
    for o, s in zip(outs, out_shapes):
      want = tuple(_eval_dim(d, padded_env) for d in s)
      if tuple(_aval(o).shape) != want:
        raise ShapeError(f"mask: padded output shape {_aval(o).shape} is not {want}")
    return tree_util.tree_unflatten(out_tree, outs)

  masked_fun.__name__ = f"masked_{getattr(fun, '__name__', 'fun')}"
  return masked_fun


# Padded sizes that stand for the shape variables while shapecheck traces: distinct
# primes, so a size computed inside the function maps back to its variable.
_PROBE_SIZES = (1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049, 1051, 1061, 1063, 1069)
_PROBE_MONO = 7


def shapecheck(in_shapes, out_shape, fun=None):
  """Check, without computing anything, that `fun` maps `in_shapes` to `out_shape`.

  Used as a decorator: `@shapecheck(['n'], '2*n')` on `def f(x): ...`. Returns `fun`
  unchanged, or raises `ShapeError` when the output shape differs from `out_shape`.

  Args:
    in_shapes: one shape spec per argument, e.g. `['(n, _)', 'n']`.
    out_shape: the expected output spec(s), e.g. `'2*n'`.
    fun: the function (omit to get a decorator).

  Example:
    >>> @shapecheck(['n'], '2*n')
    ... def f(x):
    ...   return jnp.concatenate([x, x])
  """
  if fun is None:
    return functools.partial(shapecheck, in_shapes, out_shape)
  if not callable(fun):
    raise TypeError(f"shapecheck: fun must be callable, got {fun!r}")
  if isinstance(in_shapes, str):
    in_shapes = [in_shapes]
  in_specs, in_tree = _flatten_specs(list(in_shapes), "shapecheck: in_shapes")
  out_specs, out_spec_tree = _flatten_specs(out_shape, "shapecheck: out_shape")
  names = sorted(set().union(*[d.vars for s in in_specs for d in s if _is_poly(d)]))
  if len(names) > len(_PROBE_SIZES):
    raise ValueError(f"shapecheck supports at most {len(_PROBE_SIZES)} shape variables")
  env = dict(zip(names, _PROBE_SIZES))
  specs = [tuple(_PROBE_MONO if d is _MONO else d for d in s) for s in in_specs]
  avals = [avals_mod.ShapedArray(tuple(_eval_dim(d, env) for d in s), np.float32)
           for s in specs]
  store, shapes_out = [], []
  flat = _flat_fun(fun, in_tree, store)

  def traced(*xs):
    outs, shapes = _run_masked(flat, xs, specs, env, env)
    shapes_out.extend(shapes)
    return outs

  try:
    staging.trace_to_jaxpr(traced, avals)
  except (TypeError, ValueError) as e:
    # e.g. adding arrays of sizes n and m: jnp's broadcasting rejects the probe sizes.
    raise ShapeError(f"shapecheck: {fun.__name__ if hasattr(fun, '__name__') else fun} "
                     f"does not type-check for input shapes {in_shapes} (traced with sizes "
                     f"{env}): {e}") from e
  _check_out(out_specs, out_spec_tree, store[0], shapes_out, "shapecheck")
  return fun
