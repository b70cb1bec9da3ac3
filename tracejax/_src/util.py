"""Small list and function helpers shared by every layer (no tracejax imports)."""
import functools
import math

unsafe_map, unsafe_zip = map, zip


def safe_map(f, *args):
  """`map` that insists its arguments have equal lengths, returning a list."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    assert len(arg) == n, f"length mismatch: {list(map(len, args))}"
  return list(map(f, *args))


def safe_zip(*args):
  """`zip` that insists its arguments have equal lengths, returning a list."""
  args = list(map(list, args))
  n = len(args[0])
  for arg in args[1:]:
    assert len(arg) == n, f"length mismatch: {list(map(len, args))}"
  return list(zip(*args))


def unzip2(pairs):
  xs, ys = [], []
  for x, y in pairs:
    xs.append(x)
    ys.append(y)
  return xs, ys


def unzip3(triples):
  xs, ys, zs = [], [], []
  for x, y, z in triples:
    xs.append(x)
    ys.append(y)
    zs.append(z)
  return xs, ys, zs


def split_list(xs, ns):
  """Split `xs` into consecutive pieces of lengths `ns`, plus the remainder."""
  xs = list(xs)
  out = []
  for n in ns:
    out.append(xs[:n])
    xs = xs[n:]
  out.append(xs)
  return out


def partition_list(bs, xs):
  """Split `xs` into (those where `bs` is False, those where it is True)."""
  assert len(bs) == len(xs)
  lists = [], []
  for b, x in zip(bs, xs):
    lists[bool(b)].append(x)
  return lists


def merge_lists(bs, l0, l1):
  """Inverse of `partition_list`."""
  i0, i1 = iter(l0), iter(l1)
  out = [next(i1) if b else next(i0) for b in bs]
  sentinel = object()
  assert next(i0, sentinel) is sentinel and next(i1, sentinel) is sentinel
  return out


def prod(xs):
  return math.prod(xs)


def canonicalize_axis(axis, ndim, argname="axis"):
  """Normalize a possibly negative axis, raising a clear error when out of range."""
  try:
    axis = int(axis.__index__())
  except (AttributeError, TypeError):
    raise TypeError(f"{argname} must be an integer, got {axis!r}") from None
  if not -ndim <= axis < ndim:
    raise ValueError(f"{argname} {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else axis


def wraps(wrapped, namestr=None, docstr=None):
  """Like functools.wraps, tolerant of callables without the usual attributes."""
  def decorator(f):
    try:
      name = getattr(wrapped, "__name__", repr(wrapped))
      f.__name__ = namestr.format(fun=name) if namestr else name
      f.__qualname__ = getattr(wrapped, "__qualname__", f.__name__)
      f.__module__ = getattr(wrapped, "__module__", None)
      doc = getattr(wrapped, "__doc__", None) or ""
      f.__doc__ = docstr.format(fun=name, doc=doc) if docstr else doc
      f.__wrapped__ = wrapped
    except Exception:
      pass
    return f
  return decorator


def fun_name(f):
  if isinstance(f, functools.partial):
    return fun_name(f.func)
  return getattr(f, "__name__", type(f).__name__)


class HashableFunction:
  """A function wrapper hashed and compared by a key, for caches keyed on closures."""
  __slots__ = ("f", "key")

  def __init__(self, f, key):
    self.f, self.key = f, key

  def __call__(self, *args, **kw):
    return self.f(*args, **kw)

  def __hash__(self):
    return hash(self.key)

  def __eq__(self, other):
    return isinstance(other, HashableFunction) and self.key == other.key
