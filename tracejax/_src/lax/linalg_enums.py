"""The enums of `jax.lax.linalg` that choose an algorithm or a kernel.

They live in a module of their own, importing nothing, so that both linalg.py
(whose svd, eigh and eig take them) and the modules that extend it can use them
without an import cycle. The member names and values are JAX 0.10.2's: user code
compares and constructs them (`SvdAlgorithm("QR")`).
"""
import enum

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm"]


class EigImplementation(enum.Enum):
  """Kernel for the general eigendecomposition (`lax.linalg.eig`). Only LAPACK
  exists on CPU; CUSOLVER and MAGMA are GPU kernels in JAX."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """Algorithm for the Hermitian eigendecomposition (`lax.linalg.eigh`). On CPU only
  QR (LAPACK's syevd/heevd) is available; JACOBI is a GPU kernel and QDWH a TPU one."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """Algorithm for the singular value decomposition (`lax.linalg.svd`). On CPU,
  DEFAULT, QR and DIVIDE_AND_CONQUER are LAPACK kernels; JACOBI and POLAR are not
  implemented there (as in JAX)."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"
