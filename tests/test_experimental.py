"""The 2020 `jax.experimental` libraries (also `jax.example_libraries`): optimizers,
stax, optix and loops, against hand-written NumPy references."""
import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import ops, random
from tracejax.experimental import loops, optimizers, optix, stax
from tracejax.tree_util import tree_flatten, tree_leaves, tree_map, tree_structure

RS = np.random.RandomState(0)
PARAMS = {"w": RS.randn(3, 4).astype(np.float32), "b": RS.randn(4).astype(np.float32),
          "s": np.float32(0.7)}
GRADS = [tree_map(lambda p: np.asarray(RS.randn(*np.shape(p)), np.float32), PARAMS)
         for _ in range(3)]


def _allclose(a, b, rtol=2e-5, atol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                             rtol=rtol, atol=atol)


# ---- optimizers: NumPy references, one per optimizer, on a single array ----

def _np_sgd(lr):
  def step(i, g, st):
    return (st[0] - lr(i) * g,)
  return lambda x: (x,), step


def _np_momentum(lr, mass, nesterov=False):
  def step(i, g, st):
    x, v = st
    v = mass * v + g
    return x - lr(i) * ((mass * v + g) if nesterov else v), v
  return lambda x: (x, np.zeros_like(x)), step


def _np_adagrad(lr, mom=0.9):
  def step(i, g, st):
    x, gsq, m = st
    gsq = gsq + g * g
    m = (1 - mom) * g / np.sqrt(gsq) + mom * m
    return x - lr(i) * m, gsq, m
  return lambda x: (x, np.zeros_like(x), np.zeros_like(x)), step


def _np_rmsprop(lr, gamma=0.9, eps=1e-8):
  def step(i, g, st):
    x, avg = st
    avg = gamma * avg + (1 - gamma) * g * g
    return x - lr(i) * g / np.sqrt(avg + eps), avg
  return lambda x: (x, np.zeros_like(x)), step


def _np_rmsprop_momentum(lr, gamma=0.9, eps=1e-8, mom=0.9):
  def step(i, g, st):
    x, avg, m = st
    avg = gamma * avg + (1 - gamma) * g * g
    m = mom * m + lr(i) * g / np.sqrt(avg + eps)
    return x - m, avg, m
  return lambda x: (x, np.zeros_like(x), np.zeros_like(x)), step


def _np_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
  def step(i, g, st):
    x, m, v = st
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * g * g + b2 * v
    mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
    return x - lr(i) * mhat / (np.sqrt(vhat) + eps), m, v
  return lambda x: (x, np.zeros_like(x), np.zeros_like(x)), step


def _np_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
  def step(i, g, st):
    x, m, u = st
    m = (1 - b1) * g + b1 * m
    u = np.maximum(b2 * u, np.abs(g))
    return x - lr(i) / (1 - b1 ** (i + 1)) * m / (u + eps), m, u
  return lambda x: (x, np.zeros_like(x), np.zeros_like(x)), step


def _np_sm3(lr, mom=0.9):
  # One accumulator per axis; the per-entry accumulator is the min over the axes'.
  def init(x):
    x1 = np.atleast_1d(x)
    return x1, np.zeros_like(x1), [np.zeros(d) for d in x1.shape]

  def step(i, g, st):
    x, m, vs = st
    g = np.reshape(g, x.shape)
    acc = vs[0].reshape((-1,) + (1,) * (x.ndim - 1))
    for ax in range(1, x.ndim):
      shape = [1] * x.ndim
      shape[ax] = -1
      acc = np.minimum(acc, vs[ax].reshape(shape))
    acc = acc + g * g
    m = (1 - mom) * g / np.sqrt(acc) + mom * m
    vs = [acc.max(axis=tuple(a for a in range(x.ndim) if a != ax)) for ax in range(x.ndim)]
    return x - lr(i) * m, m, vs
  return init, step


def _const(v):
  return lambda i: v


OPTIMIZERS = [
    ("sgd", optimizers.sgd(0.1), _np_sgd(_const(0.1))),
    ("momentum", optimizers.momentum(0.1, 0.9), _np_momentum(_const(0.1), 0.9)),
    ("nesterov", optimizers.nesterov(0.1, 0.8), _np_momentum(_const(0.1), 0.8, True)),
    ("adagrad", optimizers.adagrad(0.1), _np_adagrad(_const(0.1))),
    ("adagrad_nomom", optimizers.adagrad(0.1, momentum=0.), _np_adagrad(_const(0.1), 0.)),
    ("rmsprop", optimizers.rmsprop(0.1, gamma=0.8), _np_rmsprop(_const(0.1), 0.8)),
    ("rmsprop_momentum", optimizers.rmsprop_momentum(0.1),
     _np_rmsprop_momentum(_const(0.1))),
    ("adam", optimizers.adam(0.1), _np_adam(_const(0.1))),
    ("adamax", optimizers.adamax(0.1), _np_adamax(_const(0.1))),
    ("sm3", optimizers.sm3(0.1), _np_sm3(_const(0.1))),
    ("sgd_schedule", optimizers.sgd(lambda i: 0.1 / (1. + i)),
     _np_sgd(lambda i: 0.1 / (1. + i))),
    ("adam_exp_decay", optimizers.adam(optimizers.exponential_decay(0.1, 2, 0.5)),
     _np_adam(lambda i: 0.1 * 0.5 ** (i / 2))),
]


@pytest.mark.parametrize("name,opt,ref", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_steps_against_numpy(name, opt, ref):
  init_fun, update_fun, get_params = opt
  state = init_fun(PARAMS)
  # The invariant params == get_params(init_fun(params)).
  p0 = get_params(state)
  assert tree_structure(p0) == tree_structure(PARAMS)
  for a, b in zip(tree_leaves(p0), tree_leaves(PARAMS)):
    np.testing.assert_array_equal(a, b)
  # Eager for the first step, jitted for the rest: the state must be a jit-able pytree.
  state = update_fun(0, GRADS[0], state)
  jupdate = jax.jit(update_fun)
  for i in (1, 2):
    state = jupdate(i, GRADS[i], state)
  got = get_params(state)
  np_init, np_step = ref
  for key in PARAMS:
    st = np_init(PARAMS[key].astype(np.float64))
    for i, g in enumerate(GRADS):
      st = np_step(i, g[key].astype(np.float64), st)
    expected = np.reshape(st[0], np.shape(PARAMS[key]))
    assert np.shape(got[key]) == np.shape(PARAMS[key])
    _allclose(got[key], expected, rtol=1e-4, atol=1e-5)


def test_optimizer_state_pytree_and_serialization():
  init_fun, update_fun, get_params = optimizers.momentum(0.1, 0.9)
  state = update_fun(0, GRADS[0], init_fun(PARAMS))
  assert isinstance(state, optimizers.OptimizerState)
  assert state._fields == ("packed_state", "tree_def", "subtree_defs")
  # Only the arrays are leaves: 3 parameters x (x, velocity).
  leaves, _ = tree_flatten(state)
  assert len(leaves) == 6
  marked = optimizers.unpack_optimizer_state(state)
  assert set(marked) == {"w", "b", "s"}
  assert all(isinstance(v, optimizers.JoinPoint) for v in marked.values())
  x, velocity = marked["w"].subtree
  _allclose(velocity, GRADS[0]["w"])
  state2 = optimizers.pack_optimizer_state(marked)
  assert state2.tree_def == state.tree_def and state2.subtree_defs == state.subtree_defs
  for a, b in zip(tree_leaves(state2), tree_leaves(state)):
    np.testing.assert_array_equal(a, b)
  with pytest.raises(TypeError):
    update_fun(1, {"w": GRADS[0]["w"]}, state)
  # example_libraries.optimizers is the same module under its 2021+ name.
  from tracejax.example_libraries import optimizers as ex_optimizers
  assert ex_optimizers.adam is optimizers.adam
  assert ex_optimizers.OptimizerState is optimizers.OptimizerState


def test_optimizer_decorator_on_custom_optimizer():
  @optimizers.optimizer
  def signsgd(step_size):
    def init(x0):
      return x0

    def update(i, g, x):
      return x - step_size * jnp.sign(g)

    def get_params(x):
      return x
    return init, update, get_params
  init_fun, update_fun, get_params = signsgd(0.5)
  p = get_params(update_fun(0, GRADS[0], init_fun(PARAMS)))
  _allclose(p["w"], PARAMS["w"] - 0.5 * np.sign(GRADS[0]["w"]))


def test_schedules():
  steps = np.arange(7)
  _allclose([optimizers.constant(0.3)(i) for i in steps], [0.3] * 7)
  _allclose([optimizers.exponential_decay(1., 4, 0.5)(i) for i in steps], 0.5 ** (steps / 4))
  _allclose([optimizers.inverse_time_decay(1., 4, 0.5)(i) for i in steps],
            1 / (1 + 0.5 * steps / 4))
  _allclose([optimizers.inverse_time_decay(1., 4, 0.5, staircase=True)(i) for i in steps],
            1 / (1 + 0.5 * np.floor(steps / 4)))
  _allclose([optimizers.polynomial_decay(1., 4, 0.1, power=2.)(i) for i in steps],
            (1 - np.minimum(steps, 4) / 4) ** 2 * 0.9 + 0.1)
  _allclose([optimizers.piecewise_constant([2, 4], [1., .5, .1])(i) for i in steps],
            [1., 1., 1., .5, .5, .1, .1])
  # Schedules work on traced step counts too.
  _allclose(jax.jit(optimizers.polynomial_decay(1., 4, 0.1))(2), 0.55)
  assert optimizers.make_schedule(0.1)(5) == 0.1
  with pytest.raises(ValueError):
    optimizers.piecewise_constant([1, 2], [1.])


def test_l2_norm_and_clip_grads():
  g = GRADS[0]
  norm = np.sqrt(sum(np.sum(np.square(v)) for v in g.values()))
  _allclose(optimizers.l2_norm(g), norm)
  clipped = optimizers.clip_grads(g, 0.5)
  _allclose(optimizers.l2_norm(clipped), 0.5)
  _allclose(clipped["w"], g["w"] * 0.5 / norm)
  unclipped = optimizers.clip_grads(g, 1e3)
  _allclose(unclipped["b"], g["b"])


def test_training_loop_decreases_loss():
  # Linear regression with a jitted adam step: the loss must fall by a large factor.
  rs = np.random.RandomState(1)
  xs = rs.randn(64, 3).astype(np.float32)
  ys = xs @ np.array([1., -2., 0.5], np.float32) + 0.3

  def loss(p):
    return jnp.mean((jnp.dot(xs, p["w"]) + p["b"] - ys) ** 2)
  init_fun, update_fun, get_params = optimizers.adam(0.1)

  @jax.jit
  def step(i, state):
    return update_fun(i, jax.grad(loss)(get_params(state)), state)
  state = init_fun({"w": jnp.zeros(3), "b": 0.})
  first = float(loss(get_params(state)))
  for i in range(100):
    state = step(i, state)
  assert float(loss(get_params(state))) < 1e-2 * first


# ---- stax ----

KEY = random.PRNGKey(0)


def test_stax_mnist_style_mlp():
  init_fun, predict = stax.serial(
      stax.Dense(32), stax.Relu, stax.Dense(16), stax.Relu, stax.Dense(10), stax.LogSoftmax)
  out_shape, params = init_fun(KEY, (-1, 28 * 28))
  assert out_shape == (-1, 10)
  assert [tuple(np.shape(l) for l in layer) for layer in params] == [
      ((784, 32), (32,)), (), ((32, 16), (16,)), (), ((16, 10), (10,)), ()]
  x = RS.rand(8, 784).astype(np.float32)
  logits = predict(params, x)
  assert logits.shape == (8, 10)
  _allclose(np.exp(np.asarray(logits)).sum(-1), np.ones(8), rtol=1e-5)
  # The same computation written out in NumPy.
  (w1, b1), _, (w2, b2), _, (w3, b3), _ = params
  h = np.maximum(x @ np.asarray(w1) + np.asarray(b1), 0)
  h = np.maximum(h @ np.asarray(w2) + np.asarray(b2), 0)
  z = h @ np.asarray(w3) + np.asarray(b3)
  _allclose(logits, z - np.log(np.exp(z).sum(-1, keepdims=True)), rtol=1e-4, atol=1e-5)
  _allclose(jax.jit(predict)(params, x), logits, rtol=1e-5, atol=1e-6)
  # Glorot-normal weights (fan_avg) and tiny normal biases, as documented.
  w = np.asarray(params[0][0])
  assert 0.5 * 2 / (784 + 32) < w.var() < 1.5 * 2 / (784 + 32)
  assert np.abs(np.asarray(params[0][1])).max() < 0.1


def test_stax_training_with_optimizers():
  init_fun, predict = stax.serial(stax.Dense(16), stax.Tanh, stax.Dense(2), stax.LogSoftmax)
  _, params = init_fun(KEY, (-1, 4))
  rs = np.random.RandomState(2)
  xs = rs.randn(32, 4).astype(np.float32)
  labels = jax.nn.one_hot((xs[:, 0] + xs[:, 1] > 0).astype(np.int32), 2)

  def loss(p):
    return -jnp.mean(jnp.sum(predict(p, xs) * labels, axis=1))
  opt_init, opt_update, get_params = optimizers.momentum(0.5, mass=0.9)

  @jax.jit
  def step(i, state):
    return opt_update(i, jax.grad(loss)(get_params(state)), state)
  state = opt_init(params)
  first = float(loss(params))
  for i in range(30):
    state = step(i, state)
  assert float(loss(get_params(state))) < 0.3 * first


def _np_conv_nhwc(x, w, stride=(1, 1), pads=((0, 0), (0, 0))):
  x = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
  kh, kw, _, o = w.shape
  n, h, wd, _ = x.shape
  oh, ow = (h - kh) // stride[0] + 1, (wd - kw) // stride[1] + 1
  out = np.zeros((n, oh, ow, o))
  for i in range(oh):
    for j in range(ow):
      patch = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
      out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
  return out


def test_stax_conv_layers():
  x = RS.randn(2, 6, 5, 3).astype(np.float32)
  init_fun, apply_fun = stax.Conv(4, (3, 2), strides=(2, 1))
  out_shape, (w, b) = init_fun(KEY, (-1, 6, 5, 3))
  assert out_shape == (-1, 2, 4, 4) and w.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
  _allclose(apply_fun((w, b), x), _np_conv_nhwc(x, np.asarray(w), (2, 1)) + np.asarray(b),
            rtol=1e-4, atol=1e-5)
  init_fun, apply_fun = stax.Conv(4, (3, 3), padding="SAME")
  out_shape, (w, b) = init_fun(KEY, (2, 6, 5, 3))
  assert out_shape == (2, 6, 5, 4)
  _allclose(apply_fun((w, b), x),
            _np_conv_nhwc(x, np.asarray(w), pads=((1, 1), (1, 1))) + np.asarray(b),
            rtol=1e-4, atol=1e-5)
  # GeneralConv with NCHW/OIHW: same numbers, other layouts.
  init_fun, apply_fun = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 2))
  out_shape, (w2, b2) = init_fun(KEY, (2, 3, 6, 5))
  assert out_shape == (2, 4, 4, 4) and w2.shape == (4, 3, 3, 2) and b2.shape == (1, 4, 1, 1)
  out = apply_fun((w2, b2), np.transpose(x, (0, 3, 1, 2)))
  ref = _np_conv_nhwc(x, np.transpose(np.asarray(w2), (2, 3, 1, 0))) + np.asarray(b2).reshape(4)
  _allclose(out, np.transpose(ref, (0, 3, 1, 2)), rtol=1e-4, atol=1e-5)


def _np_conv_transpose_1d_full(x, w, stride):
  # conv_transpose with transpose_kernel=False scatters each input through the kernel
  # reversed: out[i * s + k - 1 - a] += x[i] * w[a].
  n, length, _ = x.shape
  k, _, o = w.shape
  out = np.zeros((n, (length - 1) * stride + k, o))
  for i in range(length):
    for a in range(k):
      out[:, i * stride + k - 1 - a, :] += x[:, i, :] @ w[a]
  return out


def test_stax_conv_transpose_layers():
  x = RS.randn(2, 4, 3).astype(np.float32)
  init_fun, apply_fun = stax.Conv1DTranspose(5, (3,), strides=(2,))
  out_shape, (w, b) = init_fun(KEY, (-1, 4, 3))
  assert out_shape == (-1, 9, 5) and w.shape == (3, 3, 5)
  full = _np_conv_transpose_1d_full(x, np.asarray(w, np.float64), 2)
  _allclose(apply_fun((w, b), x), full + np.asarray(b), rtol=1e-4, atol=1e-5)
  init_fun, apply_fun = stax.Conv1DTranspose(5, (3,), strides=(2,), padding="SAME")
  out_shape, _ = init_fun(KEY, (-1, 4, 3))
  assert out_shape == (-1, 8, 5)
  _allclose(apply_fun((w, b), x), full[:, :8] + np.asarray(b), rtol=1e-4, atol=1e-5)
  # 2-D: a separable check against the 1-D reference with a kernel of width 1.
  init_fun, apply_fun = stax.ConvTranspose(5, (3, 1), strides=(2, 1))
  out_shape, (w2, b2) = init_fun(KEY, (-1, 4, 1, 3))
  assert out_shape == (-1, 9, 1, 5)
  full = _np_conv_transpose_1d_full(x, np.asarray(w2, np.float64)[:, 0], 2)
  _allclose(apply_fun((w2, b2), x[:, :, None, :])[:, :, 0], full + np.asarray(b2)[:, :, 0],
            rtol=1e-4, atol=1e-5)
  assert stax.ConvTranspose(4, (3, 3), (2, 2), "SAME")[0](KEY, (-1, 8, 8, 3))[0] == \
      (-1, 16, 16, 4)


def test_stax_pooling():
  x = RS.randn(2, 4, 6, 3).astype(np.float32)
  blocks = x.reshape(2, 2, 2, 3, 2, 3)
  for layer, ref in ((stax.MaxPool, blocks.max((2, 4))), (stax.SumPool, blocks.sum((2, 4))),
                     (stax.AvgPool, blocks.mean((2, 4)))):
    init_fun, apply_fun = layer((2, 2), strides=(2, 2))
    assert init_fun(KEY, (-1, 4, 6, 3)) == ((-1, 2, 3, 3), ())
    _allclose(apply_fun((), x), ref, rtol=1e-5)
  # Stride defaults to 1; 'SAME' AvgPool averages over the in-bounds elements only.
  init_fun, apply_fun = stax.AvgPool((3, 3), padding="SAME")
  assert init_fun(KEY, (-1, 4, 6, 3))[0] == (-1, 4, 6, 3)
  ref = np.zeros_like(x)
  for i in range(4):
    for j in range(6):
      ref[:, i, j] = x[:, max(i - 1, 0):i + 2, max(j - 1, 0):j + 2].mean((1, 2))
  _allclose(apply_fun((), x), ref, rtol=1e-5)
  # spec names the layout: NCHW pools the last two axes.
  init_fun, apply_fun = stax.MaxPool((2, 2), strides=(2, 2), spec="NCHW")
  xt = np.transpose(x, (0, 3, 1, 2))
  assert init_fun(KEY, xt.shape)[0] == (2, 3, 2, 3)
  _allclose(apply_fun((), xt), np.transpose(blocks.max((2, 4)), (0, 3, 1, 2)))
  # Max-pool gradients route to the maxima.
  g = np.asarray(jax.grad(lambda v: stax.MaxPool((2, 2), (2, 2))[1]((), v).sum())(x))
  np.testing.assert_array_equal(g.reshape(2, 2, 2, 3, 2, 3).sum((2, 4)), np.ones((2, 2, 3, 3)))


def test_stax_batchnorm():
  x = RS.randn(4, 3, 3, 5).astype(np.float32) * 2 + 1
  init_fun, apply_fun = stax.BatchNorm()
  out_shape, (beta, gamma) = init_fun(KEY, x.shape)
  assert out_shape == x.shape and beta.shape == (5,) and gamma.shape == (5,)
  np.testing.assert_array_equal(beta, 0)
  np.testing.assert_array_equal(gamma, 1)
  beta, gamma = np.arange(5.).astype(np.float32), np.full(5, 2., np.float32)
  ref = (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-5) * gamma + beta
  _allclose(apply_fun((beta, gamma), x), ref, rtol=1e-4, atol=1e-4)
  init_fun, apply_fun = stax.BatchNorm(axis=0, center=False)
  out_shape, (beta, gamma) = init_fun(KEY, (-1, 5))
  assert beta == () and gamma.shape == (5,)
  y = x[:, 0, 0]
  _allclose(apply_fun((beta, gamma), y), (y - y.mean(0)) / np.sqrt(y.var(0) + 1e-5),
            rtol=1e-4, atol=1e-4)


def test_stax_combinators():
  x = RS.randn(3, 5).astype(np.float32)
  # A residual block: FanOut -> parallel(main, Identity) -> FanInSum.
  init_fun, apply_fun = stax.serial(
      stax.FanOut(2), stax.parallel(stax.serial(stax.Dense(5), stax.Relu), stax.Identity),
      stax.FanInSum)
  out_shape, params = init_fun(KEY, (-1, 5))
  assert out_shape == (-1, 5)
  (w, b), _ = params[1][0]
  _allclose(apply_fun(params, x), np.maximum(x @ np.asarray(w) + np.asarray(b), 0) + x,
            rtol=1e-5, atol=1e-6)
  init_fun, apply_fun = stax.serial(
      stax.FanOut(3), stax.parallel(stax.Dense(2), stax.Dense(3), stax.Identity),
      stax.FanInConcat())
  out_shape, params = init_fun(KEY, (-1, 5))
  assert out_shape == (-1, 10)
  assert apply_fun(params, x).shape == (3, 10)
  _allclose(apply_fun(params, x)[:, 5:], x)
  init_fun, apply_fun = stax.FanInConcat(axis=0)
  assert init_fun(KEY, [(2, 5), (3, 5)])[0] == (5, 5)
  # parallel takes and returns sequences.
  init_fun, apply_fun = stax.parallel(stax.Tanh, stax.Exp)
  shapes, _ = init_fun(KEY, [(3,), (4,)])
  assert tuple(shapes) == ((3,), (4,))
  a, e = apply_fun(((), ()), [x[0, :3], x[1, :4]])
  _allclose(a, np.tanh(x[0, :3]))
  _allclose(e, np.exp(x[1, :4]), rtol=1e-6)
  # shape_dependent builds the layer from the input shape.
  init_fun, apply_fun = stax.shape_dependent(lambda shape: stax.Dense(2 * shape[-1]))
  out_shape, params = init_fun(KEY, (-1, 5))
  assert out_shape == (-1, 10) and apply_fun(params, x).shape == (3, 10)
  # Flatten keeps the batch axis.
  assert stax.Flatten[0](KEY, (-1, 2, 3, 4)) == ((-1, 24), ())
  assert stax.Flatten[1]((), np.zeros((2, 3, 4))).shape == (2, 12)


def test_stax_elementwise_layers_and_aliases():
  x = np.linspace(-2, 2, 7).astype(np.float32)
  for layer, f in ((stax.Relu, jax.nn.relu), (stax.Sigmoid, jax.nn.sigmoid),
                   (stax.Elu, jax.nn.elu), (stax.LeakyRelu, jax.nn.leaky_relu),
                   (stax.Selu, jax.nn.selu), (stax.Gelu, jax.nn.gelu),
                   (stax.Softplus, jax.nn.softplus), (stax.Softmax, jax.nn.softmax),
                   (stax.LogSoftmax, jax.nn.log_softmax), (stax.Tanh, jnp.tanh),
                   (stax.Exp, jnp.exp)):
    assert layer[0](KEY, (7,)) == ((7,), ())
    _allclose(layer[1]((), x), f(x))
  init_fun, apply_fun = stax.elementwise(jax.nn.leaky_relu, negative_slope=0.5)
  _allclose(apply_fun((), x), np.where(x >= 0, x, 0.5 * x))
  assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
  assert stax.logsoftmax is jax.nn.log_softmax
  from tracejax.example_libraries import stax as ex_stax
  assert ex_stax.serial is stax.serial and ex_stax.Dense is stax.Dense


def test_stax_dropout():
  x = np.ones((50, 40), np.float32)
  init_fun, apply_fun = stax.Dropout(0.75)
  assert init_fun(KEY, (-1, 40)) == ((-1, 40), ())
  out = np.asarray(apply_fun((), x, rng=random.PRNGKey(1)))
  # `rate` is the probability of keeping a unit; kept units are scaled by 1 / rate.
  assert set(np.unique(out)) <= {0., np.float32(1 / 0.75)}
  assert 0.7 < (out != 0).mean() < 0.8
  with pytest.raises(ValueError, match="PRNG key"):
    apply_fun((), x)
  _, apply_test = stax.Dropout(0.75, mode="test")
  np.testing.assert_array_equal(apply_test((), x, rng=KEY), x)
  # serial hands each layer its own key.
  _, apply_fun = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))
  out = np.asarray(apply_fun(((), ()), x, rng=KEY))
  assert 0.2 < (out != 0).mean() < 0.3


def test_stax_under_rank_promotion_raise():
  with jax.numpy_rank_promotion("raise"):
    init_fun, apply_fun = stax.serial(
        stax.Conv(3, (2, 2), padding="SAME"), stax.BatchNorm(), stax.Relu,
        stax.AvgPool((2, 2), padding="SAME"), stax.Flatten, stax.Dense(4), stax.LogSoftmax)
    out_shape, params = init_fun(KEY, (-1, 4, 4, 2))
    assert out_shape == (-1, 4)
    # The check happens while tracing: make_jaxpr suffices and compiles nothing.
    jaxpr = jax.make_jaxpr(apply_fun)(params, np.ones((2, 4, 4, 2), np.float32))
    assert jaxpr.out_avals[0].shape == (2, 4)


# ---- optix ----

GRAD_TREE = {"w": np.array([0.1, 0.4, -0.3], np.float32), "b": np.array(-1., np.float32)}
PARAM_TREE = {"w": np.array([1., -2., 3.], np.float32), "b": np.array(0.5, np.float32)}


def _run(transform, grads_seq, params=PARAM_TREE, jit=False):
  init_fn, update_fn = transform
  state = init_fn(params)
  update_fn = jax.jit(update_fn) if jit else update_fn
  outs = []
  for g in grads_seq:
    updates, state = update_fn(g, state)
    outs.append(updates)
  return outs, state


def _grad_seq(n):
  rs = np.random.RandomState(3)
  return [tree_map(lambda p: np.asarray(rs.randn(*np.shape(p)), np.float32), PARAM_TREE)
          for _ in range(n)]


def test_optix_stateless_transforms():
  (u,), _ = _run(optix.clip(0.25), [GRAD_TREE])
  _allclose(u["w"], np.clip(GRAD_TREE["w"], -0.25, 0.25))
  _allclose(u["b"], -0.25)
  (u,), _ = _run(optix.scale(-0.1), [GRAD_TREE])
  _allclose(u["w"], -0.1 * GRAD_TREE["w"])
  norm = np.sqrt(0.01 + 0.16 + 0.09 + 1.)
  (u,), _ = _run(optix.clip_by_global_norm(0.5), [GRAD_TREE])
  _allclose(u["w"], GRAD_TREE["w"] * 0.5 / norm)
  _allclose(optix.global_norm(u), 0.5)
  (u,), _ = _run(optix.clip_by_global_norm(10.), [GRAD_TREE])
  _allclose(u["b"], -1.)


def test_optix_stateful_transforms_against_numpy():
  gs = _grad_seq(3)
  g64 = [{k: v.astype(np.float64) for k, v in g.items()} for g in gs]
  outs, state = _run(optix.scale_by_adam(b1=0.8, b2=0.9, eps=1e-6), gs, jit=True)
  assert isinstance(state, optix.ScaleByAdamState) and int(state.count) == 3
  for k in PARAM_TREE:
    mu = nu = 0.
    for t, g in enumerate(g64):
      mu = 0.2 * g[k] + 0.8 * mu
      nu = 0.1 * g[k] ** 2 + 0.9 * nu
      _allclose(outs[t][k], (mu / (1 - 0.8 ** (t + 1))) /
                (np.sqrt(nu / (1 - 0.9 ** (t + 1))) + 1e-6), rtol=1e-4)
  outs, state = _run(optix.scale_by_rms(decay=0.8), gs)
  for k in PARAM_TREE:
    nu = 0.
    for t, g in enumerate(g64):
      nu = 0.2 * g[k] ** 2 + 0.8 * nu
      _allclose(outs[t][k], g[k] / np.sqrt(nu + 1e-8), rtol=1e-4)
  outs, state = _run(optix.scale_by_stddev(decay=0.8), gs)
  assert isinstance(state, optix.ScaleByRStdDevState)
  for k in PARAM_TREE:
    mu = nu = 0.
    for t, g in enumerate(g64):
      mu = 0.2 * g[k] + 0.8 * mu
      nu = 0.2 * g[k] ** 2 + 0.8 * nu
      _allclose(outs[t][k], g[k] / np.sqrt(nu - mu ** 2 + 1e-8), rtol=1e-3)
  for nesterov in (False, True):
    outs, _ = _run(optix.trace(decay=0.9, nesterov=nesterov), gs)
    for k in PARAM_TREE:
      tr = 0.
      for t, g in enumerate(g64):
        tr = g[k] + 0.9 * tr
        _allclose(outs[t][k], g[k] + 0.9 * tr if nesterov else tr, rtol=1e-5)
  outs, state = _run(optix.scale_by_schedule(lambda c: 0.5 ** c), gs)
  assert isinstance(state, optix.ScaleByScheduleState) and int(state.count) == 3
  for t, g in enumerate(g64):
    _allclose(outs[t]["w"], 0.5 ** t * g["w"])


def test_optix_apply_every_and_add_noise():
  gs = _grad_seq(6)
  outs, state = _run(optix.apply_every(k=3), gs)
  assert isinstance(state, optix.ApplyEvery)
  for t in range(6):
    expected = sum(g["w"] for g in gs[t - 2:t + 1]) if t % 3 == 2 else np.zeros(3)
    _allclose(outs[t]["w"], expected, rtol=1e-5)
  zeros = tree_map(np.zeros_like, PARAM_TREE)
  outs, state = _run(optix.add_noise(eta=0.5, gamma=0.55, seed=0), [zeros, zeros])
  assert isinstance(state, optix.AddNoiseState) and int(state.count) == 2
  # Deterministic in the seed; the noise shrinks as (1 + t) ** -gamma.
  outs2, _ = _run(optix.add_noise(eta=0.5, gamma=0.55, seed=0), [zeros, zeros])
  np.testing.assert_array_equal(outs[1]["w"], outs2[1]["w"])
  assert not np.allclose(outs[0]["w"], outs[1]["w"])
  big = {"w": np.zeros(20000, np.float32)}
  (u,), _ = _run(optix.add_noise(eta=0.5, gamma=0.55, seed=1), [big], params=big)
  np.testing.assert_allclose(np.asarray(u["w"]).std(), 0.5, rtol=0.03)


def test_optix_chain_apply_updates_and_aliases():
  gs = _grad_seq(3)
  init_fn, update_fn = optix.chain(optix.clip(0.25), optix.scale(-0.1))
  state = init_fn(PARAM_TREE)
  assert isinstance(state, list) and len(state) == 2
  updates, state = update_fn(GRAD_TREE, state)
  _allclose(updates["w"], -0.1 * np.clip(GRAD_TREE["w"], -0.25, 0.25))
  new = optix.apply_updates(PARAM_TREE, updates)
  assert tree_structure(new) == tree_structure(PARAM_TREE)
  _allclose(new["w"], PARAM_TREE["w"] + np.asarray(updates["w"]))
  with pytest.raises(ValueError):
    optix.apply_updates(PARAM_TREE, {"w": GRAD_TREE["w"]})
  with pytest.raises(ValueError):
    optix.apply_updates(PARAM_TREE, {"w": np.zeros(2), "b": np.zeros(())})
  # Aliases are chains of the transforms above.
  (u,), _ = _run(optix.sgd(0.1), gs[:1])
  _allclose(u["w"], -0.1 * gs[0]["w"])
  outs, _ = _run(optix.sgd(0.1, momentum=0.9, nesterov=True), gs[:2], jit=True)
  tr = gs[1]["w"] + 0.9 * gs[0]["w"]  # the trace after two steps (the first is g0)
  _allclose(outs[1]["w"], -0.1 * (gs[1]["w"] + 0.9 * tr), rtol=1e-5)
  (u,), _ = _run(optix.adam(0.1), gs[:1])
  _allclose(u["w"], -0.1 * np.sign(gs[0]["w"]), rtol=1e-4)
  (u,), _ = _run(optix.rmsprop(0.1, decay=0.9), gs[:1])
  _allclose(u["w"], -0.1 * gs[0]["w"] / np.sqrt(0.1 * gs[0]["w"] ** 2 + 1e-8), rtol=1e-4)
  (u,), _ = _run(optix.rmsprop(0.1, centered=True), gs[:1])
  _allclose(u["w"], -0.1 * gs[0]["w"] / np.sqrt(0.09 * gs[0]["w"] ** 2 + 1e-8), rtol=1e-3)
  init_fn, update_fn = optix.noisy_sgd(0.1, seed=0)
  assert len(init_fn(PARAM_TREE)) == 3


def test_optix_training_loop():
  rs = np.random.RandomState(4)
  xs = rs.randn(32, 3).astype(np.float32)
  ys = xs @ np.array([2., -1., 0.5], np.float32)

  def loss(p):
    return jnp.mean((jnp.dot(xs, p["w"]) - ys) ** 2)
  init_fn, update_fn = optix.chain(optix.clip_by_global_norm(10.), optix.scale_by_adam(),
                                   optix.scale(-0.1))

  @jax.jit
  def step(p, s):
    updates, s = update_fn(jax.grad(loss)(p), s)
    return optix.apply_updates(p, updates), s
  p = {"w": jnp.zeros(3)}
  s = init_fn(p)
  first = float(loss(p))
  for _ in range(60):
    p, s = step(p, s)
  assert float(loss(p)) < 1e-2 * first


# ---- loops ----

def _seed_loop_example():
  # jax.experimental.loops module docstring (seed 001, L5354-5365)
  with loops.Scope() as s:
    s.arr = jnp.zeros(5)  # Create the mutable state of the loop as `scope` fields.
    for i in s.range(s.arr.shape[0]):
      s.arr = ops.index_update(s.arr, i, s.arr[i] + 2.)
      for _ in s.cond_range(i % 2 == 0):  # Conditionals as loops with 0 or 1 iterations
        s.arr = ops.index_update(s.arr, i, s.arr[i] + 1.)
    return s.arr


def _prims(jaxpr):
  out = set()
  for eqn in jaxpr.eqns:
    out.add(eqn.primitive.name)
    for v in eqn.params.values():
      for sub in (v if isinstance(v, (tuple, list)) else (v,)):
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          out |= _prims(inner)
  return out


def test_loops_seed_example_eager_jit_and_jaxpr():
  expected = [3., 2., 3., 2., 3.]
  np.testing.assert_array_equal(_seed_loop_example(), expected)
  np.testing.assert_array_equal(jax.jit(_seed_loop_example)(), expected)
  prims = _prims(jax.make_jaxpr(_seed_loop_example)().jaxpr)
  assert {"scan", "cond"} <= prims


def test_loops_range_semantics_and_transformations():
  def f(x):
    with loops.Scope() as s:
      s.acc = x
      s.total = 0.
      for i in s.range(1, 8, 3):  # 1, 4, 7
        s.total += s.acc * i
        s.acc = s.acc * 2.
      return s.total + s.acc
  # total = x*1 + 2x*4 + 4x*7 = 37 x; acc = 8 x
  _allclose(f(1.5), 45 * 1.5)
  _allclose(jax.jit(f)(1.5), 45 * 1.5)
  _allclose(jax.grad(f)(1.5), 45.)
  _allclose(jax.vmap(f)(np.array([1., 2.], np.float32)), [45., 90.])
  _allclose(jax.jvp(f, (1.5,), (1.,))[1], 45.)
  assert "scan" in _prims(jax.make_jaxpr(f)(1.).jaxpr)

  def g(n_steps_neg):
    with loops.Scope() as s:
      s.out = jnp.zeros(4)
      for i in s.range(3, -1, -1):  # negative step
        s.out = s.out.at[i].set(n_steps_neg * i)
      for i in s.range(0):  # empty range: state untouched
        s.out = s.out + 100.
      return s.out
  _allclose(g(2.), [0., 2., 4., 6.])
  _allclose(jax.jit(g)(2.), [0., 2., 4., 6.])

  def nested(x):
    # Nested ranges, closed-over values of the enclosing transformation, pytree fields.
    with loops.Scope() as s:
      s.pair = (jnp.zeros((3, 2)), x)
      for i in s.range(3):
        for j in s.range(2):
          m, c = s.pair
          s.pair = (m.at[i, j].set(x * i + j + c), c)
      return s.pair[0]
  expected = np.arange(3)[:, None] * 2. + np.arange(2)[None, :] + 2.
  _allclose(nested(2.), expected)
  _allclose(jax.jit(nested)(2.), expected)
  _allclose(jax.grad(lambda x: nested(x).sum())(2.), 2 * (0 + 1 + 2) + 6)


def test_loops_cond_range_and_while_range():
  def cond_usage(v):
    with loops.Scope() as s:
      s.field = v
      for _ in s.cond_range(s.field < 0.):
        s.field = - s.field
      return s.field
  assert float(cond_usage(-3.)) == 3. and float(cond_usage(2.)) == 2.
  _allclose(jax.jit(cond_usage)(-3.), 3.)
  _allclose(jax.vmap(cond_usage)(np.array([-1., 2.], np.float32)), [1., 2.])
  _allclose(jax.grad(cond_usage)(-3.), -1.)
  assert "cond" in _prims(jax.make_jaxpr(cond_usage)(1.).jaxpr)

  def while_usage(start, end):
    with loops.Scope() as s:
      s.idx = start
      s.x = 1.
      for _ in s.while_range(lambda: s.idx < end):
        s.idx += 1
        s.x = s.x * 2.
      return s.idx, s.x
  assert [float(v) for v in while_usage(2, 7)] == [7., 32.]
  assert [float(v) for v in jax.jit(while_usage)(2, 7)] == [7., 32.]
  idx, x = jax.vmap(while_usage, in_axes=(0, None))(np.array([2, 5]), 7)
  np.testing.assert_array_equal(idx, [7, 7])
  np.testing.assert_array_equal(x, [32., 4.])
  assert "while" in _prims(jax.make_jaxpr(while_usage)(2, 7).jaxpr)

  def while_float(x):
    with loops.Scope() as s:
      s.x = x
      for _ in s.while_range(lambda: s.x < 100.):
        s.x = s.x * 2.
      return s.x
  _allclose(jax.jvp(while_float, (3.,), (1.,)), (192., 64.))

  def mixed(x):
    # Fields start unbatched and become batched inside the bodies under vmap.
    with loops.Scope() as s:
      s.t = 0.
      for i in s.range(3):
        s.t += x * i
      for _ in s.cond_range(x > 1.):
        s.t += 10.
      s.n = 0
      for _ in s.while_range(lambda: s.n < x):
        s.n += 1
      return s.t, s.n
  t, n = jax.vmap(mixed)(np.array([0.5, 2., 3.5], np.float32))
  _allclose(t, [1.5, 16., 20.5])
  np.testing.assert_array_equal(n, [1, 2, 4])
  with pytest.raises(Exception):
    jax.grad(while_float)(3.)  # reverse mode through while_loop is not supported


def test_loops_checked_errors():
  def exit_with_break():
    with loops.Scope() as s:
      s.x = 0.
      for _ in s.range(5):
        s.x += 1.
        break
    return s.x
  with pytest.raises(ValueError, match="exited prematurely"):
    exit_with_break()

  def exit_with_return():
    with loops.Scope() as s:
      s.x = 0.
      for _ in s.range(5):
        return s.x
  with pytest.raises(ValueError, match="exited prematurely"):
    exit_with_return()

  def new_state():
    with loops.Scope() as s:
      s.x = 0.
      for _ in s.range(5):
        s.y = 1.
  with pytest.raises(ValueError, match="New mutable state 'y'"):
    new_state()

  def cond_modifies_scope():
    with loops.Scope() as s:
      s.x = 0.

      def cond():
        s.x = 5.
        return s.x < 3.
      for _ in s.while_range(cond):
        s.x += 1.
  with pytest.raises(ValueError, match="modifies scope.x"):
    cond_modifies_scope()

  def cond_uses_index():
    with loops.Scope() as s:
      s.x = 0.
      for i in s.cond_range(True):
        s.x += i
  with pytest.raises(ValueError, match="index"):
    cond_uses_index()

  def user_exception():
    with loops.Scope() as s:
      s.x = 0.
      for _ in s.range(5):
        raise KeyError("from the body")
  with pytest.raises(KeyError, match="from the body"):
    user_exception()

  with pytest.raises(TypeError):
    with loops.Scope() as s:
      s.x = 0.
      for _ in s.range(2.5):
        pass
  with pytest.raises(Exception):
    jax.jit(lambda n: _range_of(n))(3)
  with pytest.raises(AttributeError, match="uninitialized"):
    loops.Scope().missing
  # After all these errors the trace context is clean: eager and jit still work.
  _allclose(jnp.sin(1.), np.sin(1.))
  np.testing.assert_array_equal(jax.jit(_seed_loop_example)(), [3., 2., 3., 2., 3.])


def _range_of(n):
  with loops.Scope() as s:
    s.x = 0
    for _ in s.range(n):  # a traced bound: must be an integer literal
      s.x += 1
    return s.x
