"""`jax.scipy.special`, part 2: the functions computed by series, continued fractions
and recurrences (exponential integrals, erfcx, Dawson, Fresnel, sine/cosine integrals,
Spence, Owen's T, the hypergeometric functions, Bessel J_n, spherical harmonics and
the Faddeeva function).

Each one is a composition of jnp/lax operations. The iterative kernels run a fixed
number of steps (a `fori_loop`, so they jit and vmap with static shapes), and their
derivatives come from closed forms through `custom_jvp` rather than from
differentiating the loop: the closed forms are exact where the loop's derivative
would only be as good as its truncation.
"""
import math

import numpy as np

from tracejax._src.control_flow.loops import fori_loop, while_loop
from tracejax._src.custom_derivatives import custom_jvp
from tracejax._src.lax import special as lax_special
from tracejax._src.scipy.special import _promote_inexact, ndtr


def _jnp():
  import tracejax.numpy as jnp
  return jnp


def _is64(x):
  return x.dtype == np.float64


_EULER = 0.57721566490153286061


def _c(x, v):
  """The Python scalar `v` as a 0-d array of x's dtype."""
  return _jnp().asarray(v, x.dtype)


def _tiny(x):
  return _c(x, np.finfo(x.dtype).tiny * 1e4)


def _arrays(fun):
  """Call `fun` with its arguments as arrays: custom_jvp may hand a rule the raw Python
  scalar a transformation started from."""
  import functools

  @functools.wraps(fun)
  def wrapped(*args):
    jnp = _jnp()
    return fun(*[jnp.asarray(a) for a in args])
  return wrapped


def _arrays_jvp(rule):
  import functools

  @functools.wraps(rule)
  def wrapped(primals, tangents):
    jnp = _jnp()
    return rule([jnp.asarray(a) for a in primals], tangents)
  return wrapped


# ---- complex arithmetic on (re, im) pairs: keeps real inputs real ----

def _cmul(a, b):
  return (a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


def _cdiv(a, b):
  den = b[0] * b[0] + b[1] * b[1]
  return ((a[0] * b[0] + a[1] * b[1]) / den, (a[1] * b[0] - a[0] * b[1]) / den)


def _cadd(a, b):
  return (a[0] + b[0], a[1] + b[1])


# ---- the two kernels Fresnel and the sine/cosine integrals share ----

def _weighted_taylor(x, u, terms, even_term, odd_term):
  """The even and odd terms of the Taylor series of cos/sin at `u`, each reweighted:
  (sum_n even_term(p_n, n, nf), sum_n odd_term(q_n, nf)) over n < `terms`, where
  p_n = (-1)^n u^(2n) / (2n)!, q_n = p_n u / (2n + 1) and nf is n in x's dtype."""
  jnp = _jnp()

  def step(n, carry):
    p, even, odd = carry
    nf = n.astype(x.dtype)
    even = even + even_term(p, n, nf)
    q = p * u / (2 * nf + 1)
    odd = odd + odd_term(q, nf)
    return -q * u / (2 * nf + 2), even, odd
  _, even, odd = fori_loop(0, terms, step,
                           (jnp.ones_like(x), jnp.zeros_like(x), jnp.zeros_like(x)))
  return even, odd


def _lentz_complex(x, b, db, a_of, start, stop):
  """Lentz's method on (re, im) pairs for h = 1 / (b + a_1 / (b_1 + a_2 / (b_2 + ...))):
  b_k = b_(k-1) + db (a real step), a_k = a_of(k) real, k over [start, stop).
  Returns the last h as a pair."""
  jnp = _jnp()
  one, zero = jnp.ones_like(x), jnp.zeros_like(x)
  h = _cdiv((one, zero), b)

  def step(k, carry):
    br, bi, cr, ci, dr, di, hr, hi = carry
    a = a_of(k)
    br = br + db
    d = _cdiv((one, zero), _cadd((a * dr, a * di), (br, bi)))
    c = _cadd((br, bi), _cdiv((a, zero), (cr, ci)))
    h = _cmul((hr, hi), _cmul(c, d))
    return br, bi, c[0], c[1], d[0], d[1], h[0], h[1]
  out = fori_loop(start, stop, step, (b[0], b[1], one / _tiny(x), zero, h[0], h[1], h[0], h[1]))
  return out[6], out[7]


# =============================================================================
# Exponential integrals: exp1, expi, expn
# =============================================================================

def _expn_series(n, x, terms):
  """E_n(x) for 0 < x <= 1 (n >= 1 an integer-valued float): the power series, whose
  k = n - 1 term carries the log and digamma (Numerical Recipes' expint)."""
  jnp = _jnp()
  nm1 = n - 1
  safe_nm1 = jnp.where(nm1 == 0, jnp.ones_like(nm1), nm1)
  ans = jnp.where(nm1 == 0, -jnp.log(x) - _EULER, 1. / safe_nm1)
  psi = lax_special.digamma(jnp.maximum(n, 1.))

  def body(i, carry):
    fact, ans = carry
    i = i.astype(x.dtype)
    fact = -fact * x / i
    den = i - nm1
    safe_den = jnp.where(den == 0, jnp.ones_like(den), den)
    term = jnp.where(den == 0, fact * (-jnp.log(x) + psi), -fact / safe_den)
    return fact, ans + term
  return fori_loop(1, terms + 1, body, (jnp.ones_like(x), ans))[1]


def _expn_cf(n, x, iters):
  """E_n(x) for x > 1 by the continued fraction (modified Lentz, fixed steps)."""
  jnp = _jnp()
  nm1 = n - 1
  b = x + n
  c = jnp.ones_like(x) / _tiny(x)
  d = 1. / b
  h = d

  def body(i, carry):
    b, c, d, h = carry
    i = i.astype(x.dtype)
    an = -i * (nm1 + i)
    b = b + 2.
    d = 1. / (an * d + b)
    c = b + an / c
    return b, c, d, h * c * d
  h = fori_loop(1, iters + 1, body, (b, c, d, h))[3]
  return h * jnp.exp(-x)


def _expn_impl(n, x):
  jnp = _jnp()
  # SciPy truncates a non-integer order (with a warning) rather than rejecting it.
  n = jnp.trunc(n)
  big = _is64(x)
  small = x <= 1
  xs = jnp.where(small & (x > 0), x, jnp.full_like(x, 0.5))
  xl = jnp.where(small, jnp.full_like(x, 2.), x)
  n_pos = jnp.maximum(n, 1.)
  out = jnp.where(small, _expn_series(n_pos, xs, 30 if big else 16),
                  _expn_cf(n_pos, xl, 120 if big else 50))
  # E_0(x) = exp(-x) / x; E_n(0) = 1 / (n - 1) for n > 1 and inf for n <= 1.
  e0 = jnp.exp(-x) / x
  out = jnp.where(n == 0, e0, out)
  at0 = jnp.where(n > 1, 1. / jnp.maximum(n - 1, 1.), jnp.inf)
  out = jnp.where(x == 0, at0, out)
  bad = (n < 0) | (x < 0) | jnp.isnan(x) | jnp.isnan(n)
  return jnp.where(bad, jnp.nan, out)


@custom_jvp
@_arrays
def _expn(n, x):
  return _expn_impl(n, x)


@_expn.defjvp
@_arrays_jvp
def _expn_jvp(primals, tangents):
  jnp = _jnp()
  n, x = primals
  _, tx = tangents
  y = _expn(n, x)
  # d/dx E_n = -E_{n-1}, and d/dx E_0 = -E_0 (1 + 1/x).
  dy = jnp.where(n == 0, -y * (1 + 1. / x), -_expn(jnp.maximum(n - 1, 0.), x))
  return y, dy * tx


def expn(n, x):
  """The generalized exponential integral E_n(x) = int_1^inf exp(-x t) / t**n dt, for
  integer n >= 0 and x >= 0 (NaN elsewhere, as in SciPy).

  Args:
    n: order; a non-integer order is truncated toward zero, as SciPy does.
    x: argument.

  >>> expn(2, 1.)
  DeviceArray(0.14849551, dtype=float32)
  """
  n, x = _promote_inexact(n, x)
  return _expn(n, x)


def exp1(x):
  """The exponential integral E_1(x) = int_1^inf exp(-x t) / t dt (NaN for x < 0, inf
  at 0, as SciPy's real exp1).

  >>> exp1(1.)
  DeviceArray(0.21938394, dtype=float32)
  """
  x, = _promote_inexact(x)
  return _expn(_jnp().ones_like(x), x)


def _ei_pos(x):
  """Ei(x) for x > 0: the power series (all terms positive) below a threshold, the
  asymptotic series e^x/x sum k!/x^k above it."""
  jnp = _jnp()
  big = _is64(x)
  cut = 40. if big else 20.
  xs = jnp.where(x < cut, x, jnp.ones_like(x))

  def series(k, carry):
    term, acc = carry
    k = k.astype(x.dtype)
    term = term * xs / k
    return term, acc + term / k
  s = fori_loop(1, (160 if big else 70) + 1, series, (jnp.ones_like(x), jnp.zeros_like(x)))[1]
  small = _EULER + jnp.log(xs) + s
  xl = jnp.where(x < cut, jnp.full_like(x, cut), x)

  def asym(k, carry):
    term, acc = carry
    term = term * k.astype(x.dtype) / xl
    return term, acc + term
  a = fori_loop(1, (40 if big else 20) + 1, asym, (jnp.ones_like(x), jnp.ones_like(x)))[1]
  large = jnp.exp(xl) / xl * a
  return jnp.where(x < cut, small, large)


@custom_jvp
@_arrays
def _expi(x):
  jnp = _jnp()
  pos = _ei_pos(jnp.where(x > 0, x, jnp.ones_like(x)))
  neg = -_expn_impl(jnp.ones_like(x), jnp.where(x < 0, -x, jnp.ones_like(x)))
  out = jnp.where(x > 0, pos, neg)
  return jnp.where(x == 0, -jnp.inf, out)


@_expi.defjvp
@_arrays_jvp
def _expi_jvp(primals, tangents):
  x, = primals
  return _expi(x), _jnp().exp(x) / x * tangents[0]


def expi(x):
  """The exponential integral Ei(x) = -PV int_{-x}^inf exp(-t) / t dt (-inf at 0).

  >>> expi(1.)
  DeviceArray(1.8951178, dtype=float32)
  """
  x, = _promote_inexact(x)
  return _expi(x)


# =============================================================================
# erfcx and Dawson's integral
# =============================================================================

def _erfcx_pos(x):
  """erfcx for x >= 0: exp(x^2) erfc(x) below 2, the continued fraction above."""
  jnp = _jnp()
  big = _is64(x)
  xs = jnp.where(x < 2, x, jnp.zeros_like(x))
  direct = jnp.exp(xs * xs) * lax_special.erfc(xs)
  xl = jnp.where(x < 2, jnp.full_like(x, 2.), x)
  # Evaluated from the tail: f = x + (k/2) / f, k = N .. 1.
  n = 90 if big else 40

  def body(i, f):
    k = (n - i).astype(x.dtype)
    return xl + 0.5 * k / f
  f = fori_loop(0, n, body, xl)
  cf = _c(x, 1 / np.sqrt(np.pi)) / f
  return jnp.where(x < 2, direct, cf)


@custom_jvp
@_arrays
def _erfcx(x):
  jnp = _jnp()
  ax = jnp.abs(x)
  pos = _erfcx_pos(ax)
  # erfcx(-x) = 2 exp(x^2) - erfcx(x).
  return jnp.where(x >= 0, pos, 2 * jnp.exp(x * x) - pos)


@_erfcx.defjvp
@_arrays_jvp
def _erfcx_jvp(primals, tangents):
  x, = primals
  y = _erfcx(x)
  return y, (2 * x * y - _c(x, 2 / np.sqrt(np.pi))) * tangents[0]


def erfcx(x):
  """The scaled complementary error function exp(x**2) * erfc(x), accurate for large x.

  >>> erfcx(1.)
  DeviceArray(0.42758358, dtype=float32)
  """
  x, = _promote_inexact(x)
  return _erfcx(x)


@custom_jvp
@_arrays
def _dawsn(x):
  jnp = _jnp()
  big = _is64(x)
  cut = 6.5 if big else 4.5
  ax = jnp.abs(x)
  xs = jnp.where(ax < cut, ax, jnp.zeros_like(ax))
  x2 = xs * xs

  # F(x) = exp(-x^2) sum_n x^(2n+1) / (n! (2n+1)): positive terms, no cancellation.
  def series(n, carry):
    p, acc = carry
    n = n.astype(x.dtype)
    p = p * x2 / n
    return p, acc + p / (2 * n + 1)
  s = fori_loop(1, (140 if big else 60) + 1, series, (jnp.ones_like(x), jnp.ones_like(x)))[1]
  small = jnp.exp(-x2) * xs * s
  xl = jnp.where(ax < cut, jnp.full_like(ax, cut), ax)
  inv2 = 1. / (2 * xl * xl)

  # F(x) ~ 1/(2x) sum_k (2k-1)!! / (2x^2)^k.
  def asym(k, carry):
    t, acc = carry
    t = t * (2 * k.astype(x.dtype) - 1) * inv2
    return t, acc + t
  a = fori_loop(1, (45 if big else 18) + 1, asym, (jnp.ones_like(x), jnp.ones_like(x)))[1]
  large = a / (2 * xl)
  return jnp.sign(x) * jnp.where(ax < cut, small, large)


@_dawsn.defjvp
@_arrays_jvp
def _dawsn_jvp(primals, tangents):
  x, = primals
  y = _dawsn(x)
  return y, (1 - 2 * x * y) * tangents[0]


def dawsn(x):
  """Dawson's integral F(x) = exp(-x**2) int_0^x exp(t**2) dt.

  >>> dawsn(1.)
  DeviceArray(0.5380795, dtype=float32)
  """
  x, = _promote_inexact(x)
  return _dawsn(x)


# =============================================================================
# Fresnel integrals and the sine/cosine integrals
# =============================================================================

@custom_jvp
@_arrays
def _fresnel(x):
  jnp = _jnp()
  big = _is64(x)
  ax = jnp.abs(x)
  cut = 1.5
  xs = jnp.where(ax < cut, ax, jnp.zeros_like(ax))
  t = 0.5 * np.pi * xs * xs

  # C = sum (-1)^n t^(2n) x / ((2n)! (4n+1)), S = sum (-1)^n t^(2n+1) x / ((2n+1)! (4n+3)).
  cs, ss = _weighted_taylor(x, t, 20 if big else 12, lambda p, n, nf: p / (4 * nf + 1),
                            lambda q, nf: q / (4 * nf + 3))
  cs, ss = cs * xs, ss * xs
  # Above the cut: the continued fraction of erfc at the complex point, by Lentz's method
  # in (re, im) pairs (Numerical Recipes' frenel).
  xl = jnp.where(ax < cut, jnp.full_like(ax, 2.), ax)
  pix2 = np.pi * xl * xl
  zero = jnp.zeros_like(x)

  def a_of(k):
    n = 2 * k.astype(x.dtype) + 1
    return -n * (n + 1)
  h = _cmul(_lentz_complex(x, (jnp.ones_like(x), -pix2), 4, a_of, 0, 60 if big else 25),
            (xl, -xl))
  half = 0.5 * pix2
  e = (jnp.cos(half), jnp.sin(half))
  one_minus = _cadd((jnp.ones_like(x), zero), _cmul(e, (-h[0], -h[1])))
  res = _cmul((jnp.full_like(x, 0.5), jnp.full_like(x, 0.5)), one_minus)
  c_val = jnp.where(ax < cut, cs, res[0])
  s_val = jnp.where(ax < cut, ss, res[1])
  sgn = jnp.sign(x)
  return sgn * s_val, sgn * c_val


@_fresnel.defjvp
@_arrays_jvp
def _fresnel_jvp(primals, tangents):
  jnp = _jnp()
  x, = primals
  s, c = _fresnel(x)
  arg = 0.5 * np.pi * x * x
  return (s, c), (jnp.sin(arg) * tangents[0], jnp.cos(arg) * tangents[0])


def fresnel(x):
  """The Fresnel integrals (S(x), C(x)): S = int_0^x sin(pi t**2 / 2) dt and
  C = int_0^x cos(pi t**2 / 2) dt, in SciPy's order.

  >>> s, c = fresnel(1.)
  >>> s, c
  (DeviceArray(0.43825915, dtype=float32), DeviceArray(0.7798934, dtype=float32))
  """
  x, = _promote_inexact(x)
  return _fresnel(x)


@custom_jvp
@_arrays
def _sici(x):
  jnp = _jnp()
  big = _is64(x)
  ax = jnp.abs(x)
  cut = 4.
  xs = jnp.where(ax < cut, ax, jnp.ones_like(ax))

  # Si = sum (-1)^k t^(2k+1) / ((2k+1) (2k+1)!), Ci = g + log t + sum_{k>=1} (-1)^k
  # t^(2k) / (2k (2k)!).
  ci_s, si_s = _weighted_taylor(
      x, xs, 30 if big else 18, lambda p, k, kf: jnp.where(k > 0, p / jnp.maximum(2 * kf, 1.), 0.),
      lambda q, kf: q / (2 * kf + 1))
  ci_s = ci_s + _EULER + jnp.log(xs)
  # Above the cut: E_1(i t) by its continued fraction (Numerical Recipes' cisi).
  xl = jnp.where(ax < cut, jnp.full_like(ax, cut), ax)
  h = _lentz_complex(x, (jnp.ones_like(x), xl), 2, lambda i: -jnp.square(i.astype(x.dtype) - 1),
                     2, (45 if big else 25) + 2)
  h = _cmul((jnp.cos(xl), -jnp.sin(xl)), h)
  si_l = _c(x, np.pi / 2) + h[1]
  ci_l = -h[0]
  si = jnp.sign(x) * jnp.where(ax < cut, si_s, si_l)
  ci = jnp.where(ax < cut, ci_s, ci_l)
  ci = jnp.where(x == 0, -jnp.inf, ci)
  return si, ci


@_sici.defjvp
@_arrays_jvp
def _sici_jvp(primals, tangents):
  jnp = _jnp()
  x, = primals
  si, ci = _sici(x)
  safe = jnp.where(x == 0, jnp.ones_like(x), x)
  dsi = jnp.where(x == 0, jnp.ones_like(x), jnp.sin(safe) / safe)
  return (si, ci), (dsi * tangents[0], jnp.cos(x) / x * tangents[0])


def sici(x):
  """The sine and cosine integrals (Si(x), Ci(x)): Si = int_0^x sin(t)/t dt and
  Ci = gamma + log|x| + int_0^x (cos(t) - 1)/t dt (SciPy's real values; Ci(0) = -inf).

  >>> si, ci = sici(1.)
  >>> si, ci
  (DeviceArray(0.9460831, dtype=float32), DeviceArray(0.33740395, dtype=float32))
  """
  x, = _promote_inexact(x)
  return _sici(x)


# =============================================================================
# Spence's function (the dilogarithm)
# =============================================================================

def _li2_bernoulli(u, terms=10):
  """Li2(z) with u = -log(1 - z), |u| <= log 2: sum_n B_n u^(n+1) / (n+1)!."""
  import fractions
  # Even Bernoulli numbers B_2 .. B_2terms, exact at trace time.
  b = [fractions.Fraction(1)]
  for m in range(1, 2 * terms + 1):
    b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
  u2 = u * u
  acc = u - 0.25 * u2
  p = u
  for k in range(1, terms + 1):
    p = p * u2
    acc = acc + float(b[2 * k] / math.factorial(2 * k + 1)) * p
  return acc


@custom_jvp
@_arrays
def _spence(x):
  jnp = _jnp()
  pi2_6 = np.pi ** 2 / 6
  one = jnp.ones_like(x)
  # x in [0.5, 2]: Li2(1 - x) directly, with u = -log(x).
  mid_x = jnp.where((x >= 0.5) & (x <= 2), x, one)
  mid = _li2_bernoulli(-jnp.log(mid_x))
  # x in [0, 0.5): Li2(1 - x) = pi^2/6 - log(x) log(1 - x) - Li2(x).
  lo_x = jnp.where(x < 0.5, jnp.clip(x, 0.25, 0.5), one)
  lo_x = jnp.where((x > 0) & (x < 0.5), x, lo_x)
  lo = pi2_6 - jnp.log(lo_x) * jnp.log1p(-lo_x) - _li2_bernoulli(-jnp.log1p(-lo_x))
  lo = jnp.where(x == 0, _c(x, pi2_6), lo)
  # x > 2: Li2(z) = -pi^2/6 - log(-z)^2 / 2 - Li2(1/z), z = 1 - x.
  hi_x = jnp.where(x > 2, x, 3 * one)
  lg = jnp.log(hi_x - 1)
  hi = -pi2_6 - 0.5 * lg * lg - _li2_bernoulli(jnp.log1p(-1. / hi_x))
  out = jnp.where(x < 0.5, lo, jnp.where(x > 2, hi, mid))
  return jnp.where(x < 0, jnp.nan, out)


@_spence.defjvp
@_arrays_jvp
def _spence_jvp(primals, tangents):
  jnp = _jnp()
  x, = primals
  y = _spence(x)
  safe = jnp.where(x == 1, jnp.full_like(x, 2.), x)
  d = jnp.where(x == 1, -jnp.ones_like(x), jnp.log(safe) / (1 - safe))
  return y, d * tangents[0]


def spence(x):
  """Spence's function int_1^x log(t) / (1 - t) dt = Li2(1 - x), for x >= 0 (NaN below,
  as SciPy's real spence).

  >>> spence(0.)   # pi**2 / 6
  DeviceArray(1.644934, dtype=float32)
  """
  x, = _promote_inexact(x)
  return _spence(x)


# =============================================================================
# Owen's T function
# =============================================================================

def _owens_t_quad(h, a, nodes):
  """T(h, a) for 0 <= a <= 1 by Gauss-Legendre on (1/2pi) int_0^a e^{-h^2(1+x^2)/2} /
  (1 + x^2) dx."""
  jnp = _jnp()
  t, w = np.polynomial.legendre.leggauss(nodes)
  t = jnp.asarray((t + 1) / 2, h.dtype)
  w = jnp.asarray(w / 2, h.dtype)
  xs = a[..., None] * t
  f = jnp.exp(-0.5 * jnp.square(h[..., None]) * (1 + xs * xs)) / (1 + xs * xs)
  return a * jnp.sum(w * f, axis=-1) / (2 * np.pi)


@custom_jvp
@_arrays
def _owens_t(h, a):
  jnp = _jnp()
  nodes = 48 if _is64(h) else 24
  ah, aa = jnp.abs(h), jnp.abs(a)
  small = aa <= 1
  a_s = jnp.where(small, aa, jnp.ones_like(aa))
  direct = _owens_t_quad(ah, a_s, nodes)
  # |a| > 1: T(h, a) = (Q(h) + Q(ah))/2 - Q(h) Q(ah) - T(ah, 1/a), Q the normal tail.
  a_l = jnp.where(small, jnp.full_like(aa, 2.), aa)
  qh = ndtr(-ah)
  qah = ndtr(-ah * a_l)
  recip = _owens_t_quad(ah * a_l, 1. / a_l, nodes)
  other = 0.5 * (qh + qah) - qh * qah - recip
  out = jnp.sign(a) * jnp.where(small, direct, other)
  return jnp.where(jnp.isinf(a) & (h == 0), jnp.sign(a) * 0.25, out)


@_owens_t.defjvp
@_arrays_jvp
def _owens_t_jvp(primals, tangents):
  jnp = _jnp()
  from tracejax._src.lax import special as ls
  h, a = primals
  th, ta = tangents
  y = _owens_t(h, a)
  phi = jnp.exp(-0.5 * h * h) / np.sqrt(2 * np.pi)
  dh = -phi * ls.erf(a * h / np.sqrt(2.)) / 2
  da = jnp.exp(-0.5 * h * h * (1 + a * a)) / (2 * np.pi * (1 + a * a))
  return y, dh * th + da * ta


def owens_t(h, a):
  """Owen's T function T(h, a) = (1/2pi) int_0^a exp(-h**2 (1 + x**2) / 2) / (1 + x**2) dx.

  >>> owens_t(0.5, 0.3)
  DeviceArray(0.04078671, dtype=float32)
  """
  h, a = _promote_inexact(h, a)
  return _owens_t(h, a)


# =============================================================================
# Hypergeometric series 1F1 and 2F1
# =============================================================================

def _hyp_series(nums, dens, x, max_iter):
  """sum_k prod (num)_k / prod (den)_k x^k / k!, with its partial derivatives in every
  num, den and x, summed until the terms stop mattering (at most `max_iter` terms).

  The derivative of each term is carried along: d t_k / d num = t_k sum_{j<k}
  1/(num + j), d t_k / d den = -t_k sum_{j<k} 1/(den + j), d t_k / dx = k t_k / x
  (carried as its own recurrence so that x = 0 is fine).
  """
  jnp = _jnp()
  eps = np.finfo(x.dtype).eps
  p, q = len(nums), len(dens)
  zero, one = jnp.zeros_like(x), jnp.ones_like(x)
  init = (jnp.asarray(0, np.int32), one, one, zero, zero,
          tuple(zero for _ in range(p)), tuple(zero for _ in range(q)),
          tuple(zero for _ in range(p)), tuple(zero for _ in range(q)))

  def cond(c):
    k, t, s, dt, sx = c[:5]
    small = (jnp.abs(t) <= eps * jnp.abs(s)) & (jnp.abs(dt) <= eps * jnp.abs(sx))
    return (k < max_iter) & jnp.any(~small & jnp.isfinite(s))

  def body(c):
    k, t, s, dt, sx, hn, hd, sn, sd = c
    kf = k.astype(x.dtype)
    num = one
    for a in nums:
      num = num * (a + kf)
    den = kf + 1
    for b in dens:
      den = den * (b + kf)
    rho = num / den
    hn = tuple(hn[i] + 1. / (nums[i] + kf) for i in range(p))
    hd = tuple(hd[i] + 1. / (dens[i] + kf) for i in range(q))
    dt = (dt * x + t) * rho
    t = t * rho * x
    s = s + t
    sx = sx + dt
    sn = tuple(sn[i] + t * hn[i] for i in range(p))
    sd = tuple(sd[i] - t * hd[i] for i in range(q))
    return k + 1, t, s, dt, sx, hn, hd, sn, sd
  out = while_loop(cond, body, init)
  return out[2], out[4], out[7], out[8]


def _make_hyp(p, q, max_iter):
  @custom_jvp
  @_arrays
  def f(*args):
    return _hyp_series(args[:p], args[p:p + q], args[-1], max_iter)[0]

  @f.defjvp
  @_arrays_jvp
  def f_jvp(primals, tangents):
    s, sx, sn, sd = _hyp_series(primals[:p], primals[p:p + q], primals[-1], max_iter)
    partials = list(sn) + list(sd) + [sx]
    tan = sum(d * t for d, t in zip(partials, tangents))
    return s, tan
  return f


_hyp11_series = _make_hyp(1, 1, 5000)
_hyp21_series = _make_hyp(2, 1, 20000)


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function 1F1(a; b; x) = sum (a)_k / (b)_k x^k / k!.

  Negative x goes through Kummer's transformation e^x 1F1(b - a; b; -x), so the summed
  series has no cancellation when b > a. Differentiable in a, b and x.

  >>> hyp1f1(1., 2., 1.)   # (e - 1)
  DeviceArray(1.7182819, dtype=float32)
  """
  jnp = _jnp()
  a, b, x = _promote_inexact(a, b, x)
  neg = x < 0
  aa = jnp.where(neg, b - a, a)
  return jnp.where(neg, jnp.exp(x), jnp.ones_like(x)) * _hyp11_series(aa, b, jnp.abs(x))


def _rgamma(x):
  """1 / Gamma(x), 0 at the poles."""
  jnp = _jnp()
  from tracejax._src.scipy.special import gammasgn
  pole = (x <= 0) & (x == jnp.floor(x))
  safe = jnp.where(pole, jnp.ones_like(x), x)
  return jnp.where(pole, jnp.zeros_like(x), gammasgn(safe) * jnp.exp(-lax_special.lgamma(safe)))


def _gamma_ratio(p, q, r, t):
  """Gamma(p) Gamma(q) / (Gamma(r) Gamma(t)), signs included."""
  from tracejax._src.scipy.special import gamma
  return gamma(p) * gamma(q) * _rgamma(r) * _rgamma(t)


def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function 2F1(a, b; c; x) for real x <= 1.

  x < 0 goes through Pfaff's transformation (1 - x)^-a 2F1(a, c - b; c; x / (x - 1)),
  the series is summed for 0 <= x < 1 (after Euler's transformation where that makes
  its terms decay faster; above 0.9 the connection formula in 1 - x is used when
  c - a - b is not within 0.05 of an integer), and x = 1 uses Gauss's theorem (inf where
  c - a - b <= 0). Differentiable in a, b, c and x. With c - a - b near an integer the
  plain series is used up to x -> 1, where it converges slowly.

  >>> hyp2f1(1., 1., 2., 0.5)   # -log(1 - x) / x
  DeviceArray(1.3862944, dtype=float32)
  """
  jnp = _jnp()
  a, b, c, x = _promote_inexact(a, b, c, x)
  neg = x < 0
  z = jnp.where(neg, x / (x - 1), x)
  b1 = jnp.where(neg, c - b, b)
  pre = jnp.where(neg, jnp.power(1 - x, -a), jnp.ones_like(x))
  # Euler: 2F1(a, b; c; z) = (1 - z)^(c - a - b) 2F1(c - a, c - b; c; z).
  s = c - a - b1
  euler = s < 0
  a2 = jnp.where(euler, c - a, a)
  b2 = jnp.where(euler, c - b1, b1)
  # Near z = 1 the series converges slowly; where c - a - b is not (close to) an integer,
  # use the connection formula in 1 - z instead:
  #   F = A1 F(a, b; a+b-c+1; 1-z) + A2 (1-z)^(c-a-b) F(c-a, c-b; c-a-b+1; 1-z).
  near_int = jnp.abs(s - jnp.round(s)) < 0.05
  use_conn = (z > 0.9) & (z < 1) & ~near_int
  direct = ~use_conn
  zs = jnp.where(direct & (z < 1), z, jnp.zeros_like(z))
  series = _hyp21_series(jnp.where(direct, a2, 1.), jnp.where(direct, b2, 1.),
                         jnp.where(direct, c, 2.), zs)
  series = series * jnp.where(euler & direct, jnp.power(1 - zs, s), jnp.ones_like(zs))
  w = jnp.where(use_conn, 1 - z, jnp.zeros_like(z))
  sc = jnp.where(use_conn, s, 0.5 * jnp.ones_like(s))
  a1 = _gamma_ratio(c, sc, c - a, c - b1)
  a2c = _gamma_ratio(c, -sc, a, b1)
  f1 = _hyp21_series(jnp.where(use_conn, a, 1.), jnp.where(use_conn, b1, 1.),
                     jnp.where(use_conn, 1 - sc, 2.), w)
  f2 = _hyp21_series(jnp.where(use_conn, c - a, 1.), jnp.where(use_conn, c - b1, 1.),
                     jnp.where(use_conn, 1 + sc, 2.), w)
  conn = a1 * f1 + a2c * jnp.power(w, sc) * f2
  out = pre * jnp.where(use_conn, conn, series)
  lg = lax_special.lgamma
  from tracejax._src.scipy.special import gammasgn
  s_safe = jnp.where(c - a - b > 0, c - a - b, jnp.ones_like(c))
  gauss = (gammasgn(c) * gammasgn(s_safe) * gammasgn(c - a) * gammasgn(c - b)
           * jnp.exp(lg(c) + lg(s_safe) - lg(c - a) - lg(c - b)))
  at1 = jnp.where(c - a - b > 0, gauss, jnp.inf)
  out = jnp.where(x == 1, at1, out)
  return jnp.where(x > 1, jnp.nan, out)


# =============================================================================
# Bessel functions of the first kind, spherical harmonics, the Faddeeva function
# =============================================================================

def bessel_jn(z, *, v, n_iter=50):
  """Bessel functions of the first kind J_0(z) ... J_v(z), stacked on a new leading axis
  (shape `(v + 1,) + z.shape`), as JAX's `bessel_jn`.

  Miller's backward recurrence J_{k-1} = (2k/z) J_k - J_{k+1} from order
  `max(n_iter, v + 20)`, normalized by J_0 + 2 sum J_{2k} = 1 and rescaled as it goes to
  avoid overflow; accurate while |z| stays below about half the starting order.

  Args:
    z: the argument (real).
    v: the largest order, a static non-negative int.
    n_iter: the starting order of the recurrence (static int).

  >>> bessel_jn(jnp.array([1.]), v=1)[:, 0]
  DeviceArray([0.7651977, 0.4400506], dtype=float32)
  """
  jnp = _jnp()
  if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
    raise ValueError(f"bessel_jn: v must be a non-negative int, got {v!r}")
  if isinstance(n_iter, bool) or not isinstance(n_iter, (int, np.integer)) or n_iter < 1:
    raise ValueError(f"bessel_jn: n_iter must be a positive int, got {n_iter!r}")
  z, = _promote_inexact(z)
  v = int(v)
  start = max(int(n_iter), v + 20)
  start += start % 2
  az = jnp.abs(z)
  safe = jnp.where(az == 0, jnp.ones_like(az), az)
  big = _c(z, 1e10 if not _is64(z) else 1e100)
  jp1, j = jnp.zeros_like(z), jnp.full_like(z, 1e-20 if not _is64(z) else 1e-200)
  total = jnp.zeros_like(z)
  stored = [jnp.zeros_like(z) for _ in range(v + 1)]
  if start <= v:
    stored[start] = j
  for k in range(start, 0, -1):
    jm1 = (2. * k / safe) * j - jp1
    jp1, j = j, jm1
    if (k - 1) % 2 == 0 and k - 1 > 0:
      total = total + 2 * j
    if k - 1 <= v:
      stored[k - 1] = j
    # Rescale everything kept so far when the values grow large.
    f = jnp.where(jnp.abs(j) > big, 1. / big, jnp.ones_like(j))
    j, jp1, total = j * f, jp1 * f, total * f
    stored = [s * f for s in stored]
  total = total + j
  out = []
  for n, s in enumerate(stored):
    val = s / total
    val = val * jnp.where(z < 0, (-1.) ** n, 1.)
    out.append(jnp.where(z == 0, 1. if n == 0 else 0., val))
  return jnp.stack(out)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """Spherical harmonics Y_n^m(theta, phi) (SciPy's `sph_harm_y`: theta the polar angle,
  phi the azimuth, Condon-Shortley phase included), a complex array.

  Args:
    n: degree (integers >= 0); m: order (integers, |m| <= n).
    theta: polar angle in [0, pi]; phi: azimuthal angle in [0, 2 pi].
    diff_n: derivatives are not offered (must be None or 0, as in JAX).
    n_max: static bound on `n` (the recurrence runs to it); if None, `n` must be concrete
      and its maximum is used. Degrees above `n_max` are clipped to it.

  >>> sph_harm_y(jnp.array([0]), jnp.array([0]), jnp.array([0.3]), jnp.array([0.]))
  DeviceArray([0.2820948+0.j], dtype=complex64)
  """
  jnp = _jnp()
  if diff_n not in (None, 0):
    raise NotImplementedError("sph_harm_y: derivatives (diff_n) are not supported")
  if n_max is None:
    try:
      n_max = int(np.max(np.asarray(n)))
    except Exception:
      raise TypeError("sph_harm_y: n must be concrete when n_max is None; pass a static "
                      "n_max to trace over n") from None
  n_max = int(n_max)
  theta, phi = _promote_inexact(theta, phi)
  n = jnp.asarray(n)
  m = jnp.asarray(m)
  shape = jnp.broadcast_shapes(n.shape, m.shape, theta.shape, phi.shape)
  theta, phi = jnp.broadcast_to(theta, shape), jnp.broadcast_to(phi, shape)
  nf = jnp.minimum(jnp.broadcast_to(n, shape).astype(theta.dtype), float(n_max))
  mf = jnp.broadcast_to(m, shape).astype(theta.dtype)
  am = jnp.abs(mf)
  x, s = jnp.cos(theta), jnp.sin(theta)
  # Normalized P_|m|^|m|: 1/sqrt(4 pi) times -sqrt((2k+1)/(2k)) sin(theta) for k <= |m|.
  pmm = jnp.full_like(x, 1 / np.sqrt(4 * np.pi))
  for k in range(1, n_max + 1):
    pmm = jnp.where(k <= am, -np.sqrt((2 * k + 1) / (2 * k)) * s * pmm, pmm)
  p1, p2 = jnp.zeros_like(x), jnp.zeros_like(x)
  result = jnp.where(nf == 0, pmm, jnp.zeros_like(x))
  for l in range(0, n_max + 1):
    lf = float(l)
    a_l = jnp.sqrt((4 * lf * lf - 1) / jnp.maximum(lf * lf - am * am, 1.))
    a_lm1 = jnp.sqrt((4 * (lf - 1) ** 2 - 1) / jnp.maximum((lf - 1) ** 2 - am * am, 1.))
    prev2 = jnp.where(l - 1 > am, p2 / a_lm1, jnp.zeros_like(x))
    cur = jnp.where(l == am, pmm, jnp.where(l > am, a_l * (x * p1 - prev2), jnp.zeros_like(x)))
    result = jnp.where(nf == l, cur, result)
    p1, p2 = cur, p1
  ctype = jnp.result_type(theta.dtype, np.complex64)
  re = result * jnp.cos(am * phi)
  im = result * jnp.sin(am * phi)
  # Y_n^{-m} = (-1)^m conj(Y_n^m).
  neg = mf < 0
  sign = jnp.where(neg & (jnp.mod(am, 2.) == 1), -1., 1.)
  re = re * sign
  im = jnp.where(neg, -im, im) * sign
  out = re.astype(ctype) + 1j * im.astype(ctype)
  return jnp.where(am > nf, jnp.zeros_like(out), out)


def _weideman(n):
  """Coefficients of Weideman's (1994) rational expansion of the Faddeeva function."""
  m = 2 * n
  k = np.arange(-m + 1, m)
  big_l = np.sqrt(n / np.sqrt(2))
  t = big_l * np.tan(k * np.pi / m / 2)
  f = np.concatenate([[0.], np.exp(-t * t) * (big_l ** 2 + t * t)])
  a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
  return np.flipud(a[1:n + 1]), big_l


def wofz(z):
  """The Faddeeva function w(z) = exp(-z**2) erfc(-i z), complex.

  Weideman's rational expansion in the upper half plane (relative error about 1e-13 in
  complex128, 1e-6 in complex64) and w(z) = 2 exp(-z**2) - w(-z) below it.

  >>> wofz(jnp.array([1. + 1j]))
  DeviceArray([0.30474418+0.20821894j], dtype=complex64)
  """
  jnp = _jnp()
  z = jnp.asarray(z)
  if not jnp.issubdtype(z.dtype, np.inexact):
    z = z.astype(jnp.result_type(float))
  ctype = jnp.result_type(z.dtype, np.complex64)
  z = z.astype(ctype)
  n = 32 if ctype == np.complex128 else 16
  a, big_l = _weideman(n)
  neg = jnp.imag(z) < 0
  zz = jnp.where(neg, -z, z)
  den = big_l - 1j * zz
  big_z = (big_l + 1j * zz) / den
  p = jnp.zeros_like(zz)
  for c in a:
    p = p * big_z + c
  w = 2 * p / (den * den) + (1 / np.sqrt(np.pi)) / den
  return jnp.where(neg, 2 * jnp.exp(-z * z) - w, w)
