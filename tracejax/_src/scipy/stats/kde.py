"""`jax.scipy.stats.gaussian_kde`: a Gaussian kernel density estimate, as a pytree."""
import numpy as np

from tracejax._src import tree_util


def _jnp():
  import tracejax.numpy as jnp
  return jnp


@tree_util.register_pytree_node_class
class gaussian_kde:
  """Kernel density estimate with Gaussian kernels (SciPy's `gaussian_kde`, as JAX has it:
  an immutable pytree, so it can be passed through `jit` and `vmap`).

  Args:
    dataset: the data points, shape (d, n) (a 1-D array is n points in one dimension).
    bw_method: None or 'scott' (n_eff**(-1/(d+4))), 'silverman'
      ((n_eff (d+2)/4)**(-1/(d+4))), a scalar factor, or a callable taking the kde and
      returning the factor.
    weights: optional non-negative weights of the points (normalized to sum to 1).

  Attributes: dataset, weights, covariance (the kernel covariance), inv_cov, d, n,
  neff (the effective number of points, 1 / sum(weights**2)).

  >>> kde = gaussian_kde(jnp.array([0., 1., 3.]))
  >>> kde.evaluate(jnp.array([0.5]))
  DeviceArray([0.21316576], dtype=float32)
  """

  def __init__(self, dataset, bw_method=None, weights=None):
    jnp = _jnp()
    from tracejax._src.scipy.special import _promote_inexact
    dataset, = _promote_inexact(dataset)
    dataset = jnp.atleast_2d(dataset)
    if dataset.ndim != 2:
      raise ValueError(f"gaussian_kde: dataset must be 1-D or 2-D, got shape {dataset.shape}")
    d, n = dataset.shape
    if n < 2:
      raise ValueError("gaussian_kde: dataset needs more than one point")
    if weights is None:
      weights = jnp.full((n,), 1. / n, dataset.dtype)
    else:
      weights = jnp.atleast_1d(jnp.asarray(weights, dataset.dtype))
      if weights.shape != (n,):
        raise ValueError(f"gaussian_kde: weights must have shape ({n},), got "
                         f"{weights.shape}")
      weights = weights / jnp.sum(weights)
    neff = 1 / jnp.sum(weights ** 2)
    self.dataset, self.weights, self.neff = dataset, weights, neff
    self.d, self.n = d, n
    self.set_bandwidth(bw_method)

  def set_bandwidth(self, bw_method=None):
    """Set the bandwidth factor (as SciPy: in place) and recompute `covariance` and
    `inv_cov`.

    Args:
      bw_method: None or 'scott', 'silverman', a scalar factor, or a callable taking the
        kde and returning the factor.

    >>> kde = gaussian_kde(jnp.array([0., 1., 3.]))
    >>> kde.set_bandwidth(0.5)
    >>> kde.covariance
    DeviceArray([[0.5833334]], dtype=float32)
    """
    jnp = _jnp()
    d, dataset, weights, neff = self.d, self.dataset, self.weights, self.neff
    if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
      factor = jnp.power(neff, -1. / (d + 4))
    elif isinstance(bw_method, str) and bw_method == "silverman":
      factor = jnp.power(neff * (d + 2) / 4., -1. / (d + 4))
    elif callable(bw_method):
      factor = jnp.asarray(bw_method(self), dataset.dtype)
    elif isinstance(bw_method, str):
      raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a scalar "
                       f"or a callable, got {bw_method!r}")
    else:
      factor = jnp.asarray(bw_method, dataset.dtype)
      if factor.ndim != 0:
        raise ValueError("gaussian_kde: a numeric bw_method must be a scalar")
    mean = jnp.sum(dataset * weights, axis=1, keepdims=True)
    dev = dataset - mean
    # SciPy's weighted, unbiased data covariance, scaled by factor**2.
    data_cov = (dev * weights) @ dev.T / (1 - jnp.sum(weights ** 2))
    self.covariance = data_cov * factor ** 2
    self.inv_cov = jnp.linalg.inv(self.covariance)

  def tree_flatten(self):
    return ((self.neff, self.dataset, self.weights, self.covariance, self.inv_cov),
            (self.d, self.n))

  @classmethod
  def tree_unflatten(cls, aux, children):
    obj = object.__new__(cls)
    obj.neff, obj.dataset, obj.weights, obj.covariance, obj.inv_cov = children
    obj.d, obj.n = aux
    return obj

  def _points(self, points):
    jnp = _jnp()
    points = jnp.atleast_2d(jnp.asarray(points, self.dataset.dtype))
    if points.shape[0] != self.d:
      if points.shape[1] == self.d and points.ndim == 2:
        points = points.T
      else:
        raise ValueError(f"gaussian_kde: points have dimension {points.shape[0]}, the "
                         f"data have dimension {self.d}")
    return points

  def _log_kernel_sums(self, points, cov, centers, weights):
    """log sum_i weights_i N(points_j; centers_i, cov) for every point j."""
    jnp = _jnp()
    from tracejax._src.scipy.special import logsumexp
    chol = jnp.linalg.cholesky(cov)
    diff = points[:, :, None] - centers[:, None, :]          # (d, m, n)
    flat = diff.reshape(self.d, -1)
    from tracejax._src.scipy.linalg import solve_triangular
    white = solve_triangular(chol, flat, lower=True).reshape(diff.shape)
    energy = 0.5 * jnp.sum(white * white, axis=0)               # (m, n)
    log_norm = jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * self.d * np.log(2 * np.pi)
    return logsumexp(-energy, axis=1, b=weights[None, :]) - log_norm

  def evaluate(self, points):
    """The density estimate at `points` ((d, m), or (m,) when d = 1).

    >>> gaussian_kde(jnp.array([0., 1., 3.])).evaluate(jnp.array([0.5]))
    DeviceArray([0.21316576], dtype=float32)
    """
    return _jnp().exp(self.logpdf(points))

  __call__ = evaluate

  def pdf(self, x):
    """Same as `evaluate`.

    >>> gaussian_kde(jnp.array([0., 1., 3.])).pdf(jnp.array([0.5]))
    DeviceArray([0.21316576], dtype=float32)
    """
    return self.evaluate(x)

  def logpdf(self, x):
    """The log of the density estimate at `x`, computed with logsumexp.

    >>> gaussian_kde(jnp.array([0., 1., 3.])).logpdf(jnp.array([0.5]))
    DeviceArray([-1.5456854], dtype=float32)
    """
    points = self._points(x)
    return self._log_kernel_sums(points, self.covariance, self.dataset, self.weights)

  def integrate_gaussian(self, mean, cov):
    """Integral of the estimate times the Gaussian N(mean, cov).

    >>> gaussian_kde(jnp.array([0., 1., 3.])).integrate_gaussian(jnp.array([0.]),
    ...                                                          jnp.eye(1))
    DeviceArray(0.16680169, dtype=float32)
    """
    jnp = _jnp()
    mean = jnp.atleast_1d(jnp.asarray(mean, self.dataset.dtype))
    cov = jnp.atleast_2d(jnp.asarray(cov, self.dataset.dtype))
    if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
      raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape "
                       f"({self.d},) and cov ({self.d}, {self.d})")
    total = self._log_kernel_sums(mean[:, None], self.covariance + cov, self.dataset,
                                  self.weights)
    return jnp.exp(total[0])

  def integrate_box_1d(self, low, high):
    """Probability mass of a one-dimensional estimate between `low` and `high`.

    >>> gaussian_kde(jnp.array([0., 1., 3.])).integrate_box_1d(-jnp.inf, jnp.inf)
    DeviceArray(1., dtype=float32)
    """
    jnp = _jnp()
    from tracejax._src.scipy.special import ndtr
    if self.d != 1:
      raise ValueError("gaussian_kde.integrate_box_1d: the data must be one-dimensional")
    sd = jnp.sqrt(self.covariance[0, 0])
    data = self.dataset[0]
    lo = (jnp.asarray(low, data.dtype) - data) / sd
    hi = (jnp.asarray(high, data.dtype) - data) / sd
    return jnp.sum(self.weights * (ndtr(hi) - ndtr(lo)))

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Probability mass in a box. Only one-dimensional boxes are supported (the
    multivariate normal CDF has no closed form); use `integrate_box_1d`, as in JAX.

    >>> gaussian_kde(jnp.array([0., 1., 3.])).integrate_box(jnp.array([-jnp.inf]),
    ...                                                     jnp.array([jnp.inf]))
    DeviceArray(1., dtype=float32)
    """
    del maxpts
    if self.d != 1:
      raise NotImplementedError("gaussian_kde.integrate_box: only 1-D boxes are "
                                "supported; use integrate_box_1d")
    jnp = _jnp()
    return self.integrate_box_1d(jnp.ravel(jnp.asarray(low_bounds))[0],
                                 jnp.ravel(jnp.asarray(high_bounds))[0])

  def integrate_kde(self, other):
    """Integral of the product of this estimate and another of the same dimension.

    >>> k = gaussian_kde(jnp.array([0., 1., 3.]))
    >>> k.integrate_kde(k)
    DeviceArray(0.15771432, dtype=float32)
    """
    jnp = _jnp()
    if other.d != self.d:
      raise ValueError("gaussian_kde.integrate_kde: the estimates differ in dimension")
    logs = self._log_kernel_sums(other.dataset, self.covariance + other.covariance,
                                 self.dataset, self.weights)
    return jnp.sum(other.weights * jnp.exp(logs))

  def resample(self, key, shape=()):
    """Draw samples from the estimate: shape (d,) + shape.

    Args:
      key: a PRNG key; shape: the sample shape (tuple).

    >>> kde = gaussian_kde(jnp.array([0., 1., 3.]))
    >>> kde.resample(jax.random.PRNGKey(0), (4,)).shape
    (1, 4)
    """
    jnp = _jnp()
    from tracejax import random
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    k_idx, k_norm = random.split(key)
    idx = random.choice(k_idx, self.n, shape=shape, p=self.weights)
    noise = random.multivariate_normal(k_norm, jnp.zeros((self.d,), self.dataset.dtype),
                                       self.covariance, shape=shape)
    pts = jnp.take(self.dataset, idx, axis=1)         # (d,) + shape
    return pts + jnp.moveaxis(noise, -1, 0)
