"""The two models of issue 14, written once for both systems (pass the module)."""
import os

import numpy as np


def _sgd_step(jax, loss):
  """The jitted SGD step (learning rate 0.01) of `loss`: (p, x, y) -> (loss, new p)."""
  def step(p, x, y):
    v, g = jax.value_and_grad(loss)(p, x, y)
    return v, jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
  return jax.jit(step)


def mlp(jax, jnp, act="relu", batch=128, sizes=(784, 512, 512, 10)):
  from importlib import import_module
  stax = import_module(jax.__name__ + ".example_libraries.stax")
  layers = []
  for n in sizes[1:-1]:
    layers += [stax.Dense(n), stax.Relu if act == "relu" else stax.Tanh]
  layers += [stax.Dense(sizes[-1]), stax.LogSoftmax]
  init_fun, apply_fun = stax.serial(*layers)
  rng = np.random.RandomState(0)
  params = []
  for m, n in zip(sizes[:-1], sizes[1:]):
    params += [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))]
    if n != sizes[-1]:
      params += [()]
  params += [()]
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  y = np.eye(sizes[-1], dtype=np.float32)[rng.randint(0, sizes[-1], batch)]

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(apply_fun(p, x) * y, axis=1))
  return jax.jit(jax.value_and_grad(loss)), (params, x, y)


def convnet(jax, jnp, batch=32):
  from importlib import import_module
  stax = import_module(jax.__name__ + ".example_libraries.stax")
  init_fun, apply_fun = stax.serial(
      stax.Conv(16, (3, 3), padding="SAME"), stax.Relu,
      stax.Conv(32, (3, 3), strides=(2, 2), padding="SAME"), stax.Relu,
      stax.Flatten, stax.Dense(10), stax.LogSoftmax)
  rng = np.random.RandomState(0)
  params = [
      ((rng.randn(3, 3, 1, 16) / 3.0).astype(np.float32), np.zeros((1, 1, 1, 16), np.float32)), (),
      ((rng.randn(3, 3, 16, 32) / 12.0).astype(np.float32), np.zeros((1, 1, 1, 32), np.float32)), (),
      (), ((rng.randn(14 * 14 * 32, 10) / np.sqrt(6272)).astype(np.float32), np.zeros(10, np.float32)), ()]
  x = rng.randn(batch, 28, 28, 1).astype(np.float32)
  y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, batch)]

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(apply_fun(p, x) * y, axis=1))

  return _sgd_step(jax, loss), (params, x, y)


def mlp_plain(jax, jnp, ce="logsumexp", act="tanh", batch=128, sizes=(784, 512, 512, 10)):
  """Hand-written MLP (jnp.dot + bias), like benchmarks/workloads/mlp.py, with softmax CE."""
  rng = np.random.RandomState(0)
  params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  y = np.eye(sizes[-1], dtype=np.float32)[rng.randint(0, sizes[-1], batch)]
  f = {"tanh": jnp.tanh, "relu": jax.nn.relu}[act]

  def loss(p, x, y):
    h = x
    for w, b in p[:-1]:
      h = f(jnp.dot(h, w) + b)
    w, b = p[-1]
    logits = jnp.dot(h, w) + b
    if ce == "logsumexp":
      logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
    elif ce == "log_softmax":
      logp = jax.nn.log_softmax(logits)
    else:  # by hand
      m = jnp.max(logits, axis=1, keepdims=True)
      logp = logits - m - jnp.log(jnp.sum(jnp.exp(logits - m), axis=1, keepdims=True))
    return -jnp.mean(jnp.sum(logp * y, axis=1))
  return jax.jit(jax.value_and_grad(loss)), (params, x, y)


def convnet_bench(jax, jnp):
  """benchmarks/workloads/convnet.py's step."""
  import importlib.util, os
  spec = importlib.util.spec_from_file_location(
      "convnet_wl", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads", "convnet.py"))
  sys_path = __import__("sys").path
  sys_path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads"))
  m = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(m)
  return m.make_step(jax, jnp), m.init(np)


def mlp_variant(jax, jnp, variant, batch=128, sizes=(784, 512, 512, 10)):
  """MLP 784-512-512-10 in other common styles (issue 14 screening).

  vmap_take: predict written for one example and vmapped, integer labels via
             take_along_axis (the demo's style);
  onehot:    jax.nn.one_hot of integer labels, log_softmax;
  take:      batched predict, integer labels via take_along_axis;
  index:     batched predict, logp[jnp.arange(B), labels];
  l2:        one-hot CE plus an L2 penalty on the weights;
  tanh_lse:  tanh layers, logsumexp CE, at batch 128.
  """
  nn = jax.nn
  rng = np.random.RandomState(0)
  params = [(rng.randn(m, n).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  labels = rng.randint(0, sizes[-1], batch).astype(np.int32)

  def predict_one(p, x):
    for w, b in p[:-1]:
      x = nn.relu(x @ w + b)
    w, b = p[-1]
    return nn.log_softmax(x @ w + b)

  def predict(p, x):
    for w, b in p[:-1]:
      x = nn.relu(jnp.dot(x, w) + b)
    w, b = p[-1]
    return nn.log_softmax(jnp.dot(x, w) + b)

  if variant == "vmap_take":
    def loss(p, x, y):
      logp = jax.vmap(predict_one, in_axes=(None, 0))(p, x)
      return jnp.mean(-jnp.take_along_axis(logp, y[:, None], axis=1))
  elif variant == "onehot":
    def loss(p, x, y):
      return -jnp.mean(jnp.sum(predict(p, x) * nn.one_hot(y, sizes[-1]), axis=1))
  elif variant == "take":
    def loss(p, x, y):
      return jnp.mean(-jnp.take_along_axis(predict(p, x), y[:, None], axis=1))
  elif variant == "index":
    def loss(p, x, y):
      return -jnp.mean(predict(p, x)[jnp.arange(batch), y])
  elif variant == "l2":
    def loss(p, x, y):
      data = -jnp.mean(jnp.sum(predict(p, x) * nn.one_hot(y, sizes[-1]), axis=1))
      return data + 1e-4 * sum(jnp.sum(w ** 2) for w, _ in p)
  elif variant == "vmap_grad_update":
    def loss(p, x, y):
      logp = jax.vmap(predict_one, in_axes=(None, 0))(p, x)
      return jnp.mean(-jnp.take_along_axis(logp, y[:, None], axis=1))
    return _sgd_step(jax, loss), (params, x, labels)
  else:
    raise ValueError(variant)
  return jax.jit(jax.value_and_grad(loss)), (params, x, labels)


def stax_variant(jax, jnp, layer, batch=32):
  """A stax convnet with one extra layer kind (issue 14 screening): conv, LAYER, conv,
  relu, flatten, dense, logsoftmax; value_and_grad + SGD."""
  from importlib import import_module
  stax = import_module(jax.__name__ + ".example_libraries.stax")
  extra = {"maxpool": stax.MaxPool((2, 2), strides=(2, 2)),
           "avgpool": stax.AvgPool((2, 2), strides=(2, 2)),
           "sumpool": stax.SumPool((2, 2), strides=(2, 2)),
           "batchnorm": stax.BatchNorm(), "tanh": stax.Tanh, "gelu": stax.Gelu,
           "elu": stax.Elu, "softplus": stax.Softplus, "sigmoid": stax.Sigmoid,
           "leakyrelu": stax.LeakyRelu, "relu": stax.Relu, "valid": None}[layer]
  layers = [stax.Conv(16, (3, 3), padding="VALID" if layer == "valid" else "SAME")]
  layers += [extra] if extra is not None else [stax.Relu]
  layers += [stax.Conv(32, (3, 3), strides=(2, 2), padding="SAME"), stax.Relu, stax.Flatten,
             stax.Dense(64), stax.Relu, stax.Dense(10), stax.LogSoftmax]
  init_fun, apply_fun = stax.serial(*layers)
  random = import_module(jax.__name__ + ".random")
  _, params = init_fun(random.PRNGKey(0), (batch, 28, 28, 1))
  params = jax.tree_util.tree_map(lambda a: np.asarray(a), params)
  rng = np.random.RandomState(0)
  x = rng.randn(batch, 28, 28, 1).astype(np.float32)
  y = np.eye(10, dtype=np.float32)[rng.randint(0, 10, batch)]

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(apply_fun(p, x) * y, axis=1))

  return _sgd_step(jax, loss), (params, x, y)


def bench_mlp(jax, jnp, per_example=False):
  """benchmarks/workloads/mlp.py's step (or per_example_grads.py's)."""
  import sys
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workloads"))
  import mlp as m
  if per_example:
    params, x, y = m.init(np, batch=32)
    return jax.jit(jax.vmap(jax.grad(m.make_loss(jnp)), in_axes=(None, 0, 0))), (params, x, y)
  return jax.jit(jax.value_and_grad(m.make_loss(jnp))), m.init(np)


def convnet_vmap(jax, jnp, batch=32):
  """The stax convnet applied per example (x[None]) under vmap (issue 14 screening)."""
  from importlib import import_module
  stax = import_module(jax.__name__ + ".example_libraries.stax")
  _, apply_fun = stax.serial(
      stax.Conv(16, (3, 3), padding="SAME"), stax.Relu,
      stax.Conv(32, (3, 3), strides=(2, 2), padding="SAME"), stax.Relu,
      stax.Flatten, stax.Dense(10), stax.LogSoftmax)
  _, (params, x, y) = convnet(jax, jnp, batch)
  labels = np.argmax(y, axis=1).astype(np.int32)

  def loss(p, x, y):
    logp = jax.vmap(lambda xi: apply_fun(p, xi[None])[0])(x)
    return jnp.mean(-jnp.take_along_axis(logp, y[:, None], axis=1))

  return _sgd_step(jax, loss), (params, x, labels)


def mlp_vmap_wx(jax, jnp, batch=128, sizes=(784, 512, 512, 10)):
  """The per-example MLP with W[out, in] @ x (column convention), vmapped."""
  nn = jax.nn
  rng = np.random.RandomState(0)
  params = [(rng.randn(n, m).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32))
            for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.randn(batch, sizes[0]).astype(np.float32)
  y = np.eye(sizes[-1], dtype=np.float32)[rng.randint(0, sizes[-1], batch)]

  def predict_one(p, x):
    for w, b in p[:-1]:
      x = nn.relu(w @ x + b)
    w, b = p[-1]
    return nn.log_softmax(w @ x + b)

  def loss(p, x, y):
    return -jnp.mean(jnp.sum(jax.vmap(predict_one, in_axes=(None, 0))(p, x) * y, axis=1))
  return jax.jit(jax.value_and_grad(loss)), (params, x, y)
