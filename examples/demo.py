"""Train a small neural network on handwritten digits with tracejax, and look inside it.

Run with `python examples/demo.py` (after `pip install -e ".[test]"`). It shows:

* `grad`/`value_and_grad`: the gradient of the training loss, in one call;
* `jit`: the whole update step (forward, backward, Adam) compiled by XLA once,
  and, on later runs, loaded from the on-disk compilation cache instead;
* `vmap`: a network written for one example, run on a batch, and per-example
  gradient norms (which training examples the model still finds hard);
* `make_jaxpr`: the loss function as the program XLA compiles, printed and drawn
  (`tracejax.experimental.jaxpr_graph`);
* an optimizer from `tracejax.example_libraries.optimizers` (Adam).

The data is scikit-learn's `load_digits` (1,797 8x8 images, shipped inside
scikit-learn: nothing is downloaded). Flags: --epochs, --batch-size, --no-plots,
--out-dir, --seed.
"""
import argparse
import os
import time

import numpy as np
# tqdm rather than rich: a single small pure-Python dependency, and its bar degrades
# to plain lines when the output is not a terminal (CI logs, the test's subprocess).
from tqdm import tqdm

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import nn, random
from tracejax.example_libraries import optimizers


# ---- the model: an MLP written for ONE example; vmap makes it work on batches ----

def init_params(key, sizes):
  params = []
  for n_in, n_out in zip(sizes[:-1], sizes[1:]):
    key, sub = random.split(key)
    w = random.normal(sub, (n_in, n_out)) * jnp.sqrt(2.0 / n_in)   # He initialisation
    params.append((w, jnp.zeros(n_out)))
  return params


def predict_one(params, x):
  """Log-probabilities of the 10 classes for one image `x` (64 pixels)."""
  for w, b in params[:-1]:
    x = nn.relu(x @ w + b)
  w, b = params[-1]
  return nn.log_softmax(x @ w + b)


predict = jax.vmap(predict_one, in_axes=(None, 0))   # a batch of images -> batch of logits


def example_loss(params, x, y):
  """Cross-entropy of one example (y: the class index)."""
  return -predict_one(params, x)[y]


def loss(params, xs, ys, l2=1e-4):
  """Mean cross-entropy of a batch, plus a small weight penalty."""
  data = jnp.mean(-jnp.take_along_axis(predict(params, xs), ys[:, None], axis=1))
  penalty = sum(jnp.sum(w ** 2) for w, _ in params)
  return data + l2 * penalty


# Per-example gradient norms: grad of the one-example loss, vmapped over the batch.
@jax.jit
def per_example_grad_norms(params, xs, ys):
  grads = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)
  return jnp.sqrt(sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1)
                      for g in jax.tree_util.tree_leaves(grads)))


@jax.jit
def evaluate(params, xs, ys):
  logp = predict(params, xs)
  nll = -jnp.mean(jnp.take_along_axis(logp, ys[:, None], axis=1))
  return nll, jnp.mean(jnp.argmax(logp, axis=1) == ys)


def make_update(opt_update, get_params):
  @jax.jit
  def update(i, opt_state, xs, ys):
    params = get_params(opt_state)
    value, grads = jax.value_and_grad(loss)(params, xs, ys)
    return value, opt_update(i, grads, opt_state)
  return update


# ---- data ----

def load_data(seed):
  from sklearn.datasets import load_digits
  digits = load_digits()
  x = (digits.data / 16.0).astype(np.float32)          # pixels are 0..16
  y = digits.target.astype(np.int32)
  order = np.random.default_rng(seed).permutation(len(x))
  x, y = x[order], y[order]
  n_val = n_test = len(x) // 6                          # ~1200 / 300 / 300
  split = len(x) - n_val - n_test
  return ((x[:split], y[:split]), (x[split:split + n_val], y[split:split + n_val]),
          (x[split + n_val:], y[split + n_val:]))


def compile_note(before, after, seconds):
  """How the first update step was obtained, from the backend's disk-cache counters."""
  if after["loaded"] > before["loaded"] and after["compiled"] == before["compiled"]:
    return f"update step loaded from the on-disk compilation cache ({seconds:.2f} s)"
  if after["compiled"] > before["compiled"]:
    if after.get("stored", 0) > before.get("stored", 0):
      return (f"update step compiled by XLA in {seconds:.2f} s and saved to the on-disk "
              "cache (the next run loads it)")
    return (f"update step compiled by XLA in {seconds:.2f} s (quicker than the cache's "
            "minimum compile time, so not written to disk)")
  return f"update step compiled by XLA in {seconds:.2f} s (on-disk cache off)"


# ---- pictures ----

def plot_history(history, path):
  import matplotlib
  matplotlib.use("Agg")                                  # files only, no display needed
  from matplotlib import pyplot as plt
  epochs = np.arange(1, len(history["train_loss"]) + 1)
  fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
  ax1.plot(epochs, history["train_loss"], "o-", label="training")
  ax1.plot(epochs, history["val_loss"], "s-", label="validation")
  ax1.set(xlabel="epoch", ylabel="cross-entropy", title="Loss", yscale="log")
  ax2.plot(epochs, history["train_acc"], "o-", label="training")
  ax2.plot(epochs, history["val_acc"], "s-", label="validation")
  ax2.set(xlabel="epoch", ylabel="accuracy", title="Accuracy", ylim=(0.5, 1.005))
  for ax in (ax1, ax2):
    ax.grid(alpha=0.3)
    ax.legend()
  fig.suptitle("tracejax: MLP on scikit-learn digits")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=20)
  parser.add_argument("--batch-size", type=int, default=64)
  parser.add_argument("--no-plots", action="store_true", help="write no pictures")
  parser.add_argument("--out-dir", default=".", help="where the pictures go")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  if args.epochs < 1 or args.batch_size < 1:
    parser.error("--epochs and --batch-size must be positive")
  start = time.perf_counter()

  print(f"tracejax {jax.__version__} on {jax.default_backend()}: {jax.devices()}")
  (x_train, y_train), (x_val, y_val), (x_test, y_test) = load_data(args.seed)
  print(f"digits: {len(x_train)} training, {len(x_val)} validation, {len(x_test)} test "
        f"images of {x_train.shape[1]} pixels\n")

  params = init_params(random.PRNGKey(args.seed), [64, 128, 64, 10])
  opt_init, opt_update, get_params = optimizers.adam(3e-3)
  opt_state = opt_init(params)
  update = make_update(opt_update, get_params)

  # The program jit compiles: the loss, traced at a batch's shapes.
  xb, yb = x_train[:args.batch_size], y_train[:args.batch_size]
  loss_jaxpr = jax.make_jaxpr(loss)(params, xb, yb)
  print("jaxpr of the loss (what XLA compiles, before differentiation):")
  print(loss_jaxpr, "\n")

  from tracejax._src.runtime import backend
  rng = np.random.default_rng(args.seed)
  n_batches = len(x_train) // args.batch_size           # drop the ragged last batch:
  history = {k: [] for k in ("train_loss", "train_acc", "val_loss", "val_acc")}
  step = 0                                               # one shape, one compilation
  for epoch in range(1, args.epochs + 1):
    order = rng.permutation(len(x_train))
    bar = tqdm(total=n_batches, desc=f"epoch {epoch:2d}/{args.epochs}", unit="batch",
               leave=True, mininterval=0.2)
    for b in range(n_batches):
      idx = order[b * args.batch_size:(b + 1) * args.batch_size]
      if step == 0:
        before, t0 = backend.disk_cache_stats(), time.perf_counter()
        value, opt_state = update(step, opt_state, x_train[idx], y_train[idx])
        jax.block_until_ready(value)
        bar.write(compile_note(before, backend.disk_cache_stats(), time.perf_counter() - t0))
      else:
        value, opt_state = update(step, opt_state, x_train[idx], y_train[idx])
      step += 1
      if b % 5 == 0:  # fetching the loss waits for the step: not at every batch
        bar.set_postfix(loss=f"{float(value):.4f}", refresh=False)
      bar.update(1)
    params = get_params(opt_state)
    train_loss, train_acc = evaluate(params, x_train, y_train)
    val_loss, val_acc = evaluate(params, x_val, y_val)
    for k, v in zip(history, (train_loss, train_acc, val_loss, val_acc)):
      history[k].append(float(v))
    bar.set_postfix({"loss": f"{float(train_loss):.4f}", "acc": f"{float(train_acc):.3f}",
                     "val_loss": f"{float(val_loss):.4f}", "val_acc": f"{float(val_acc):.3f}"})
    bar.close()

  norms = np.asarray(per_example_grad_norms(params, x_train, y_train))
  hardest = np.argsort(norms)[::-1][:5]
  print(f"\nper-example gradient norms (vmap of grad): median {np.median(norms):.2e}, "
        f"largest {norms[hardest[0]]:.2e}; hardest training examples: "
        + ", ".join(f"#{i} (a {y_train[i]})" for i in hardest))

  test_loss, test_acc = evaluate(params, x_test, y_test)
  pictures = []
  if not args.no_plots:
    os.makedirs(args.out_dir, exist_ok=True)
    curves = os.path.join(args.out_dir, "demo_training.png")
    plot_history(history, curves)
    from tracejax.experimental import jaxpr_graph
    graph = os.path.join(args.out_dir, "demo_loss_jaxpr.png")
    jaxpr_graph.render(loss_jaxpr, graph, name="loss(params, xs, ys)")
    pictures = [curves, graph]
  print(f"test accuracy: {float(test_acc):.4f} (test loss {float(test_loss):.4f}) "
        f"after {args.epochs} epochs in {time.perf_counter() - start:.1f} s")
  for p in pictures:
    print(f"wrote {os.path.abspath(p)}")
  return float(test_acc)


if __name__ == "__main__":
  main()
