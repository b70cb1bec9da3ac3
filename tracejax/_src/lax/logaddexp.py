"""log(exp(x) + exp(y)) and log2(2**x + 2**y) without overflow: the one implementation
behind jnp.logaddexp/logaddexp2 and lax.cumlogsumexp (its windowed reduction and JVP).

Each is a custom_jvp of a stable formula: the tangent is the softmax-weighted sum
w_x t_x + w_y t_y with w = exp(x - out) (exp2 for base 2), which splits evenly at
x == y and, with +inf zeroed first, gives the weight 1 where inf - inf would be NaN.
The custom_jvp also keeps second derivatives on this rule (the select of the formula
would leak NaN cotangents where x = y = inf). custom_derivatives sits above lax, so
each custom_jvp is made on first use.
"""
import numpy as np

from tracejax._src import dtypes
from tracejax._src.lax import elementwise as ew
from tracejax._src.lax.structural import _aval, full_like


def _const(x, value):
  # A weakly typed 0-d `x` keeps its weak type through the formula's constants (as
  # in JAX, whose jnp.logaddexp(1., 2.) is weak); otherwise they are strong scalars.
  aval = _aval(x)
  if aval.weak_type and aval.shape == ():
    return full_like(x, value)
  return np.array(value, aval.dtype)


def _wrap_between(x, a):
  """`x` moved by a multiple of 2a into [-a, a)."""
  a, two_a = _const(x, a), _const(x, 2 * a)
  r = ew.rem(ew.add(x, a), two_a)   # in (-2a, 2a): the sign of x + a
  r = ew.select(ew.lt(r, _const(r, 0)), ew.add(r, two_a), r)
  return ew.sub(r, a)


def _formula(x, y, exp, scale, half_period):
  """amax + scale * log1p(exp(-|x - y|)); `scale` None for 1, `exp` exp or exp2."""
  dtype = _aval(x).dtype
  if not dtypes.is_inexact(dtype):
    raise ValueError(f"logaddexp requires floating-point or complex inputs; got {dtype}")
  amax = ew.max(x, y)
  scaled = (lambda v: v) if scale is None else (lambda v: ew.mul(_const(v, scale), v))
  if dtypes.is_complex(dtype):
    # amax is the larger by lax.max's lexicographic order, so exp(x + y - 2 amax) (the
    # other one over amax) has modulus <= 1; the imaginary part of the result is then
    # brought back into [-half_period, half_period), as in JAX.
    delta = ew.sub(ew.add(x, y), ew.mul(amax, _const(amax, 2)))
    out = ew.add(amax, scaled(ew.log1p(exp(delta))))
    return ew.complex(ew.real(out), _wrap_between(ew.imag(out), half_period))
  delta = ew.sub(x, y)
  # delta is NaN when both are the same infinity (or either is NaN): x + y is then
  # that infinity (or NaN).
  return ew.select(ew.ne(delta, delta), ew.add(x, y),
                   ew.add(amax, scaled(ew.log1p(exp(ew.neg(ew.abs(delta)))))))


def _logaddexp(x, y):
  return _formula(x, y, ew.exp, None, np.pi)


def _logaddexp2(x, y):
  return _formula(x, y, ew.exp2, 1 / np.log(2), np.pi / np.log(2))


def _posinf_to_zero(x):
  # complex values: those whose real part is +inf (exp of them is the overflow)
  re = ew.real(x) if dtypes.is_complex(_aval(x).dtype) else x
  return ew.select(ew.eq(re, _const(re, np.inf)), full_like(x, 0), x)


def _jvp_rule(fun, exp):
  def rule(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = fun(x, y)   # through the custom_jvp again: higher derivatives use this rule
    fout = _posinf_to_zero(out)
    wx = exp(ew.sub(_posinf_to_zero(x), fout))
    wy = exp(ew.sub(_posinf_to_zero(y), fout))
    return out, ew.add(ew.mul(tx, wx), ew.mul(ty, wy))
  return rule


_custom = {}


def _with_jvp(formula, exp):
  fun = _custom.get(formula)
  if fun is None:
    from tracejax._src.custom_derivatives import custom_jvp
    fun = _custom[formula] = custom_jvp(formula)
    fun.defjvp(_jvp_rule(fun, exp))
  return fun


def logaddexp(x, y):
  """log(exp(x) + exp(y)) of two arrays of one inexact dtype, without overflow.

  >>> logaddexp(np.float32(1000), np.float32(1000))   # 1000 + log(2)  # doctest: +SKIP
  """
  return _with_jvp(_logaddexp, ew.exp)(x, y)


def logaddexp2(x, y):
  """log2(2**x + 2**y) of two arrays of one inexact dtype, without overflow.

  >>> logaddexp2(np.float32(3), np.float32(3))   # 4.0  # doctest: +SKIP
  """
  return _with_jvp(_logaddexp2, ew.exp2)(x, y)
