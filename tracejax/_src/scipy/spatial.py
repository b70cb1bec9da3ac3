"""`jax.scipy.spatial.transform`: 3-D rotations (`Rotation`) and their interpolation (`Slerp`).

A `Rotation` is a NamedTuple holding unit quaternions `quat` in SciPy's order
(x, y, z, w: scalar last), shape (4,) for one rotation or (..., 4) for many; as a
pytree it passes through `jit` and `vmap`. Conversions follow SciPy: rotation
vectors and modified Rodrigues parameters use the canonical quaternion (w >= 0);
`from_matrix` is Shepperd's method (the largest of four candidates); `as_euler`
is the quaternion method of Bernardes and Viollet (2022) that SciPy uses, with
the third angle set to 0 at gimbal lock. `r1 * r2` applies r2 first.
"""
import re
from typing import Any, NamedTuple

import numpy as np

from tracejax._src import dtypes
from tracejax._src.numpy import util
import tracejax.numpy as jnp

__all__ = ["Rotation", "Slerp"]


def _as_float(x, fun_name):
  util.check_arraylike_or_list(fun_name, x)
  (x,) = util.promote_dtypes_inexact(util.to_array(x))
  return x


def _check_last(x, n, fun_name, what):
  if x.ndim < 1 or x.shape[-1] != n:
    raise ValueError(f"Rotation.{fun_name}: expected {what} of shape (..., {n}), got {x.shape}")


def _normalize(q):
  return q / jnp.linalg.norm(q, axis=-1, keepdims=True)


def _canonical(q):
  """q or -q, whichever has w > 0 (or, for w == 0, a positive first nonzero entry)."""
  x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
  flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
  return jnp.where(flip[..., None], -q, q)


def _compose(p, q):
  """Quaternion product p q (rotation q first, then p)."""
  pv, pw = p[..., :3], p[..., 3:]
  qv, qw = q[..., :3], q[..., 3:]
  v = pw * qv + qw * pv + jnp.cross(pv, qv)
  w = pw * qw - jnp.sum(pv * qv, -1, keepdims=True)
  return jnp.concatenate([v, w], -1)


def _elementary_quat(axis, angle):
  """Quaternions of rotations by `angle` (shape (N,)) about basis axis 0, 1 or 2."""
  half = angle / 2
  zero = jnp.zeros_like(half)
  parts = [zero, zero, zero]
  parts[axis] = jnp.sin(half)
  return jnp.stack(parts + [jnp.cos(half)], -1)


_AXES = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq, fun_name, max_len=3):
  if not isinstance(seq, str) or not 1 <= len(seq) <= max_len:
    raise ValueError(f"Rotation.{fun_name}: expected a sequence of 1 to {max_len} axes, "
                     f"got {seq!r}")
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError(f"Rotation.{fun_name}: expected axes from 'xyz' (extrinsic) or 'XYZ' "
                     f"(intrinsic), not both, got {seq!r}")
  if any(a == b for a, b in zip(seq[:-1], seq[1:])):
    raise ValueError(f"Rotation.{fun_name}: expected consecutive axes to be different, "
                     f"got {seq!r}")
  return [_AXES[c] for c in seq.lower()], extrinsic


def _wrap(a):
  return jnp.where(a < -np.pi, a + 2 * np.pi, jnp.where(a > np.pi, a - 2 * np.pi, a))


class Rotation(NamedTuple):
  """Rotations in 3 dimensions, stored as unit quaternions (x, y, z, w).

  Build one with a `from_*` constructor, `identity` or `random`; e.g.
  `Rotation.from_euler('z', 90, degrees=True).apply(jnp.array([1., 0., 0.]))` is
  approximately [0, 1, 0].
  """
  quat: Any

  # ---- constructors ----

  @classmethod
  def from_quat(cls, quat):
    """Rotations from quaternions (x, y, z, w), normalized. Example: `Rotation.from_quat(q)`."""
    quat = _as_float(quat, "from_quat")
    _check_last(quat, 4, "from_quat", "quaternions")
    return cls(_normalize(quat))

  @classmethod
  def from_rotvec(cls, rotvec, degrees=False):
    """Rotations from rotation vectors (axis * angle, radians unless `degrees`).

    Example: `Rotation.from_rotvec(jnp.array([0., 0., jnp.pi / 2]))`."""
    rotvec = _as_float(rotvec, "from_rotvec")
    _check_last(rotvec, 3, "from_rotvec", "rotation vectors")
    if degrees:
      rotvec = jnp.deg2rad(rotvec)
    angle = jnp.linalg.norm(rotvec, axis=-1, keepdims=True)
    small = angle <= 1e-3
    a2 = angle * angle
    safe = jnp.where(small, 1.0, angle)
    # sin(a/2)/a, by its Taylor series near 0 where the quotient loses precision.
    scale = jnp.where(small, 0.5 - a2 / 48 + a2 * a2 / 3840, jnp.sin(safe / 2) / safe)
    return cls(jnp.concatenate([scale * rotvec, jnp.cos(angle / 2)], -1))

  @classmethod
  def from_mrp(cls, mrp):
    """Rotations from modified Rodrigues parameters (axis * tan(angle / 4)).

    Example: `Rotation.from_mrp(jnp.array([0., 0., 1.]))` (half a turn about z)."""
    mrp = _as_float(mrp, "from_mrp")
    _check_last(mrp, 3, "from_mrp", "MRPs")
    s = jnp.sum(mrp * mrp, -1, keepdims=True)
    return cls(jnp.concatenate([2 * mrp / (1 + s), (1 - s) / (1 + s)], -1))

  @classmethod
  def from_matrix(cls, matrix):
    """Rotations from 3x3 rotation matrices, shape (3, 3) or (N, 3, 3).

    Example: `Rotation.from_matrix(jnp.eye(3))`."""
    m = _as_float(matrix, "from_matrix")
    if m.ndim < 2 or m.shape[-2:] != (3, 3):
      raise ValueError(f"Rotation.from_matrix: expected matrices of shape (..., 3, 3), got "
                       f"{m.shape}")
    tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    diag = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], tr], -1)
    choice = jnp.argmax(diag, -1)
    # Shepperd: four candidate quaternions (scaled), each accurate when its
    # leading entry is the largest; pick that one.
    cands = []
    for i in range(3):
      j, k = (i + 1) % 3, (i + 2) % 3
      q = [None] * 4
      q[i] = 1 - tr + 2 * m[..., i, i]
      q[j] = m[..., j, i] + m[..., i, j]
      q[k] = m[..., k, i] + m[..., i, k]
      q[3] = m[..., k, j] - m[..., j, k]
      cands.append(jnp.stack(q, -1))
    cands.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                            m[..., 1, 0] - m[..., 0, 1], 1 + tr], -1))
    q = cands[3]
    for i in range(3):
      q = jnp.where((choice == i)[..., None], cands[i], q)
    return cls(_normalize(q))

  @classmethod
  def from_euler(cls, seq, angles, degrees=False):
    """Rotations from Euler angles about the axes of `seq`.

    Args:
      seq: 1 to 3 axes; lowercase 'xyz' are extrinsic (fixed frame), uppercase 'XYZ'
        intrinsic (rotating frame).
      angles: shape (..., len(seq)) (a scalar too for one axis); one rotation per
        leading index.
      degrees: angles in degrees.

    Example: `Rotation.from_euler('ZYX', jnp.array([90., 0., 0.]), degrees=True)`.
    """
    axes, extrinsic = _parse_seq(seq, "from_euler")
    angles = _as_float(angles, "from_euler")
    if angles.ndim == 0 and len(axes) == 1:
      angles = angles[None]
    if angles.ndim == 0 or angles.shape[-1] != len(axes):
      raise ValueError(f"Rotation.from_euler: expected angles of shape (..., {len(axes)}) for "
                       f"seq {seq!r}, got {angles.shape}")
    if degrees:
      angles = jnp.deg2rad(angles)
    q = _elementary_quat(axes[0], angles[..., 0])
    for n, ax in enumerate(axes[1:], 1):
      e = _elementary_quat(ax, angles[..., n])
      q = _compose(e, q) if extrinsic else _compose(q, e)
    return cls(q)

  @classmethod
  def identity(cls, num=None, dtype=float):
    """The identity rotation (one, or `num` of them). Example: `Rotation.identity(2)`."""
    dtype = dtypes.canonicalize_dtype(dtype)
    q = jnp.zeros((4,) if num is None else (num, 4), dtype)
    return cls(q.at[..., 3].set(1))

  @classmethod
  def random(cls, random_key, num=None):
    """Rotations uniform over SO(3): normalized Gaussian quaternions.

    Example: `Rotation.random(jax.random.PRNGKey(0), 5)`."""
    from tracejax._src import random as jrandom
    shape = (4,) if num is None else (num, 4)
    return cls.from_quat(jrandom.normal(random_key, shape))

  @classmethod
  def concatenate(cls, rotations):
    """One Rotation holding all of `rotations` (a sequence of Rotation)."""
    return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

  # ---- conversions ----

  def as_quat(self, canonical=False, scalar_first=False):
    """The quaternions; `canonical` picks w >= 0; `scalar_first` orders them (w, x, y, z)."""
    q = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(q, 1, -1) if scalar_first else q

  def as_matrix(self):
    """The rotation matrices, shape (3, 3) or (N, 3, 3)."""
    x, y, z, w = (self.quat[..., i] for i in range(4))
    xx, yy, zz, ww = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww]]
    return jnp.stack([jnp.stack(r, -1) for r in rows], -2)

  def as_rotvec(self, degrees=False):
    """Rotation vectors (axis * angle, angle in [0, pi])."""
    q = _canonical(self.quat)
    angle = 2 * jnp.arctan2(jnp.linalg.norm(q[..., :3], axis=-1), q[..., 3])[..., None]
    small = angle <= 1e-3
    a2 = angle * angle
    safe = jnp.where(small, 1.0, angle)
    scale = jnp.where(small, 2 + a2 / 12 + 7 * a2 * a2 / 2880, safe / jnp.sin(safe / 2))
    v = scale * q[..., :3]
    return jnp.rad2deg(v) if degrees else v

  def as_mrp(self):
    """Modified Rodrigues parameters (of the canonical quaternion: norm <= 1)."""
    q = _canonical(self.quat)
    return q[..., :3] / (1 + q[..., 3:])

  def as_euler(self, seq, degrees=False):
    """Euler angles for the 3 axes of `seq` (see `from_euler`), each in [-pi, pi].

    The middle angle is in [0, pi] for symmetric sequences ('zxz') and [-pi/2, pi/2]
    otherwise; at gimbal lock the third angle is 0.
    """
    axes, extrinsic = _parse_seq(seq, "as_euler")
    if len(axes) != 3:
      raise ValueError(f"Rotation.as_euler: expected 3 axes, got {seq!r}")
    if not extrinsic:
      axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
      k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    q = self.quat
    if symmetric:
      a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
    else:
      a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
      c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
    second = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    case1 = jnp.abs(second) <= eps
    case2 = jnp.abs(second - np.pi) <= eps
    half_sum = jnp.arctan2(b, a)
    half_diff = jnp.arctan2(d, c)
    first_i, third_i = (0, 2) if extrinsic else (2, 0)
    out = [None, second, None]
    out[first_i] = half_sum - half_diff
    out[third_i] = half_sum + half_diff
    # Gimbal lock: the third angle is 0 and the first carries the whole rotation.
    locked = case1 | case2
    lock0 = jnp.where(case1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    out[0], out[2] = jnp.where(locked, lock0, out[0]), jnp.where(locked, 0.0, out[2])
    if not symmetric:
      out[third_i] = out[third_i] * sign
      out[1] = out[1] - np.pi / 2
    angles = jnp.stack([_wrap(a_) for a_ in out], -1)
    return jnp.rad2deg(angles) if degrees else angles

  # ---- operations ----

  def apply(self, vectors, inverse=False):
    """Rotate `vectors` (shape (..., 3), broadcast against the rotations); `inverse` applies
    the inverse rotation."""
    vectors = _as_float(vectors, "apply")
    _check_last(vectors, 3, "apply", "vectors")
    m = self.as_matrix()
    if inverse:
      m = jnp.swapaxes(m, -1, -2)
    return jnp.einsum("...ij,...j->...i", m, vectors)

  def inv(self):
    """The inverse rotations."""
    return Rotation(self.quat * jnp.asarray([-1, -1, -1, 1], self.quat.dtype))

  def magnitude(self):
    """The rotation angles in radians, in [0, pi]."""
    return 2 * jnp.arctan2(jnp.linalg.norm(self.quat[..., :3], axis=-1),
                           jnp.abs(self.quat[..., 3]))

  def mean(self, weights=None):
    """The weighted mean rotation (Markley et al.): the top eigenvector of sum w q q^T."""
    q = self.quat.reshape(-1, 4)
    w = (jnp.ones(q.shape[0], q.dtype) if weights is None
         else _as_float(weights, "mean").reshape(-1))
    k = jnp.einsum("n,ni,nj->ij", w, q, q)
    _, vecs = jnp.linalg.eigh(k)
    return Rotation(vecs[:, -1])

  @property
  def single(self):
    """Whether this holds one rotation (quat of shape (4,))."""
    return self.quat.ndim == 1

  def __len__(self):
    if self.quat.ndim == 1:
      raise TypeError("Single rotation has no len")
    return self.quat.shape[0]

  def __getitem__(self, indexer):
    if self.quat.ndim == 1:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __mul__(self, other):
    """Composition: (self * other).apply(v) == self.apply(other.apply(v))."""
    if not isinstance(other, Rotation):
      return NotImplemented
    return Rotation(_compose(self.quat, other.quat))


class Slerp(NamedTuple):
  """Spherical linear interpolation of rotations at increasing key times.

  Build with `Slerp.init(times, rotations)`; call with times in [times[0], times[-1]].
  """
  times: Any
  timedelta: Any
  rotations: Any
  rotvecs: Any

  @classmethod
  def init(cls, times, rotations):
    """Key times (1-D, increasing) and as many key rotations.

    Example: `Slerp.init(jnp.array([0., 1.]), Rotation.from_euler('z', [0., 90.], True))`."""
    if not isinstance(rotations, Rotation):
      raise TypeError("Slerp.init: rotations must be a Rotation")
    if rotations.single:
      raise ValueError("Slerp.init: rotations must be a sequence of rotations")
    if len(rotations) < 2:
      raise ValueError("Slerp.init: at least 2 rotations are needed")
    times = _as_float(times, "Slerp.init")
    if times.ndim != 1:
      raise ValueError(f"Slerp.init: expected times to be 1-D, got shape {times.shape}")
    if times.shape[0] != len(rotations):
      raise ValueError(f"Slerp.init: expected as many rotations ({len(rotations)}) as times "
                       f"({times.shape[0]})")
    timedelta = jnp.diff(times)
    rotvecs = (rotations[:-1].inv() * rotations[1:]).as_rotvec()
    return cls(times, timedelta, rotations, rotvecs)

  def __call__(self, times):
    """The interpolated rotations at `times` (a scalar gives a single rotation)."""
    t = _as_float(times, "Slerp")
    scalar = t.ndim == 0
    t = jnp.atleast_1d(t)
    n = self.times.shape[0]
    ind = jnp.clip(jnp.searchsorted(self.times, t) - 1, 0, n - 2)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    step = Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    out = self.rotations[ind] * step
    return out[0] if scalar else out
