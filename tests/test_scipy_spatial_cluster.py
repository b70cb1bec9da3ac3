"""jax.scipy.spatial.transform (Rotation, Slerp) and jax.scipy.cluster.vq against SciPy.

Rotations are checked in float64 (x64 fixture) against scipy.spatial.transform,
including the gimbal-lock branches of as_euler; jit and vmap go through the
Rotation pytree; gradients through rotation-vector and Euler conversions.
"""
import warnings

import numpy as np
import pytest
import scipy.cluster.vq as osp_vq
from scipy.spatial.transform import Rotation as SR
from scipy.spatial.transform import Slerp as SSlerp

from tracejax._src.api import vmap
from tracejax._src.jit import jit
from tracejax._src.test_util import check_grads
import tracejax.numpy as jnp
import tracejax.random as jrandom
import tracejax.scipy as jsp
from tracejax.scipy.cluster import vq as jvq
from tracejax.scipy.spatial.transform import Rotation, Slerp

TOL = dict(atol=1e-9, rtol=1e-9)


def _quats(n=6, seed=0):
  return np.random.default_rng(seed).standard_normal((n, 4))


def test_conversions(x64):
  q = _quats()
  sr = SR.from_quat(q)
  rv = np.random.default_rng(1).standard_normal((6, 3))
  m = sr.as_matrix()
  # The branches of Shepperd's method: a half turn, a tiny turn, and generic matrices.
  special = np.stack([SR.from_rotvec([a, 0.0, 0.0]).as_matrix() for a in (np.pi, 1e-5)])

  @jit
  def conversions(q, rv, m, special):
    r = Rotation.from_quat(q)
    return dict(
        quat=r.as_quat(), canonical=r.as_quat(canonical=True),
        scalar_first=r.as_quat(scalar_first=True), matrix=r.as_matrix(),
        rotvec=r.as_rotvec(), rotvec_deg=r.as_rotvec(degrees=True), mrp=r.as_mrp(),
        magnitude=r.magnitude(), inv=r.inv().as_quat(),
        from_matrix=Rotation.from_matrix(m).as_quat(),
        from_special=Rotation.from_matrix(special).as_quat(),
        from_rotvec=Rotation.from_rotvec(rv).as_quat(),
        from_tiny_rotvec=Rotation.from_rotvec(rv * 1e-5).as_quat(),
        from_rotvec_deg=Rotation.from_rotvec(rv, degrees=True).as_quat(),
        from_mrp=Rotation.from_mrp(rv).as_quat())
  got = conversions(q, rv, m, special)
  want = dict(
      quat=sr.as_quat(), canonical=sr.as_quat(canonical=True),
      scalar_first=sr.as_quat(scalar_first=True), matrix=sr.as_matrix(),
      rotvec=sr.as_rotvec(), rotvec_deg=sr.as_rotvec(degrees=True), mrp=sr.as_mrp(),
      magnitude=sr.magnitude(), inv=sr.inv().as_quat(),
      from_matrix=SR.from_matrix(m).as_quat(), from_special=SR.from_matrix(special).as_quat(),
      from_rotvec=SR.from_rotvec(rv).as_quat(),
      from_tiny_rotvec=SR.from_rotvec(rv * 1e-5).as_quat(),
      from_rotvec_deg=SR.from_rotvec(rv, degrees=True).as_quat(),
      from_mrp=SR.from_mrp(rv).as_quat())
  for k, w in want.items():
    np.testing.assert_allclose(got[k], w, err_msg=k, **TOL)
  np.testing.assert_allclose(Rotation.identity(3).as_quat(), SR.identity(3).as_quat())
  np.testing.assert_allclose(Rotation.from_quat(q[0]).as_matrix(), sr[0].as_matrix(), **TOL)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "YXY"])
def test_euler(x64, seq):
  rng = np.random.default_rng(2)
  q = _quats()
  angles = rng.uniform(-3, 3, (6, 3))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # SciPy warns at gimbal lock
    locked = SR.from_euler(seq, [[0.3, lock, 0.2] for lock in (0.0, np.pi / 2, np.pi)])
    want_locked = locked.as_euler(seq)

  @jit
  def euler(q, angles, locked):
    return (Rotation.from_quat(q).as_euler(seq), Rotation.from_euler(seq, angles).as_quat(),
            Rotation.from_euler(seq, angles[0], degrees=True).as_quat(),
            Rotation.from_quat(locked).as_euler(seq))
  got = euler(q, angles, locked.as_quat())
  np.testing.assert_allclose(got[0], SR.from_quat(q).as_euler(seq), **TOL)
  np.testing.assert_allclose(got[1], SR.from_euler(seq, angles).as_quat(), **TOL)
  np.testing.assert_allclose(got[2], SR.from_euler(seq, angles[0], degrees=True).as_quat(), **TOL)
  np.testing.assert_allclose(got[3], want_locked, atol=1e-6)


def test_apply_compose_mean_slerp(x64):
  q = _quats()
  sr = SR.from_quat(q)
  v = np.random.default_rng(3).standard_normal((6, 3))
  w = np.linspace(0.1, 1.0, 6)

  @jit
  def ops(q, v, w):
    r = Rotation.from_quat(q)
    return dict(apply=r.apply(v), apply_inv=r.apply(v, inverse=True), apply_one=r[0].apply(v),
                apply_vec=r.apply(v[0]), compose=(r * r[::-1]).as_quat(),
                mean=r.mean().as_quat(canonical=True),
                mean_w=r.mean(w).as_quat(canonical=True),
                concat=Rotation.concatenate([r[:2], r[3]]).as_quat())
  got = ops(q, v, w)
  want = dict(apply=sr.apply(v), apply_inv=sr.apply(v, inverse=True), apply_one=sr[0].apply(v),
              apply_vec=sr.apply(v[0]), compose=(sr * sr[::-1]).as_quat(),
              mean=sr.mean().as_quat(canonical=True), mean_w=sr.mean(w).as_quat(canonical=True),
              concat=SR.concatenate([sr[:2], sr[3]]).as_quat())
  for k, want_k in want.items():
    np.testing.assert_allclose(got[k], want_k, err_msg=k, **TOL)
  r = Rotation.from_quat(q)
  assert len(r) == 6 and not r.single and r[0].single
  with pytest.raises(TypeError):
    len(r[0])
  times = np.array([0.0, 1.0, 2.5, 4.0, 5.0, 7.0])
  s, ss = Slerp.init(times, r), SSlerp(times, sr)
  t = np.array([0.0, 0.3, 1.0, 2.0, 4.9, 7.0])
  np.testing.assert_allclose(jit(lambda t: s(t).as_quat())(t), ss(t).as_quat(), **TOL)
  np.testing.assert_allclose(jit(lambda t: s(t).as_quat())(3.3), ss(3.3).as_quat(), **TOL)


def test_rotation_float32_transforms_errors():
  rot = Rotation.from_euler("z", 90.0, degrees=True)
  assert rot.quat.dtype == np.float32
  np.testing.assert_allclose(rot.apply(jnp.array([1.0, 0.0, 0.0])), [0.0, 1.0, 0.0], atol=1e-6)
  qs = _quats(4).astype(np.float32)
  mats = vmap(lambda q: Rotation.from_quat(q).as_matrix())(qs)
  np.testing.assert_allclose(mats, SR.from_quat(qs).as_matrix(), atol=1e-5)
  out = jit(lambda r: (r * r.inv()).as_rotvec())(Rotation.from_quat(qs))
  np.testing.assert_allclose(out, np.zeros((4, 3)), atol=1e-5)
  r = Rotation.random(jrandom.PRNGKey(0), 5)
  np.testing.assert_allclose(jnp.linalg.norm(r.quat, axis=-1), np.ones(5), rtol=1e-6)
  check_grads(lambda v: Rotation.from_rotvec(v).as_matrix(), (np.array([0.3, -0.2, 0.5]),),
              order=1, atol=2e-2, rtol=2e-2)
  check_grads(lambda a: Rotation.from_euler("zyx", a).as_quat(), (np.array([0.3, -0.2, 0.5]),),
              order=1, atol=2e-2, rtol=2e-2)
  with pytest.raises(ValueError, match="xyz"):
    Rotation.from_euler("xYz", jnp.zeros(3))
  with pytest.raises(ValueError, match="shape"):
    Rotation.from_quat(jnp.ones(3))
  with pytest.raises(ValueError, match="consecutive"):
    Rotation.from_euler("xxy", jnp.zeros(3))


def test_vq():
  assert jsp.cluster.vq is jvq
  rng = np.random.default_rng(4)
  obs = rng.standard_normal((10, 3)).astype(np.float32)
  book = rng.standard_normal((4, 3)).astype(np.float32)
  code, dist = jit(jvq.vq)(obs, book)
  want = osp_vq.vq(obs, book)
  np.testing.assert_array_equal(code, want[0])
  np.testing.assert_allclose(dist, want[1], rtol=1e-5)
  code1, dist1 = jvq.vq(obs[:, 0], book[:, 0])
  want1 = osp_vq.vq(obs[:, 0], book[:, 0])
  np.testing.assert_array_equal(code1, want1[0])
  np.testing.assert_allclose(dist1, want1[1], rtol=1e-5)
  codes = vmap(lambda o: jvq.vq(o, book)[0])(np.stack([obs, obs[::-1]]))
  np.testing.assert_array_equal(codes[1], want[0][::-1])
  with pytest.raises(ValueError, match="same rank"):
    jvq.vq(obs, book[:, 0])
