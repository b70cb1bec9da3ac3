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


# ---- the rest of the 2020 `jax.util` (JAX 0.1.62), which 2020 programs import ----

def partial(fun, *args, **kwargs):
  """`functools.partial` that keeps `fun`'s name and docstring (the 2020 `jax.util.partial`).

  >>> add3 = partial(lambda x, y: x + y, 3)
  >>> add3(4)
  7
  """
  wrapped = functools.partial(fun, *args, **kwargs)
  try:
    functools.update_wrapper(wrapped, fun)
  except (AttributeError, TypeError):
    pass
  wrapped._bound_args = args
  return wrapped


def curry(fun):
  """`curry(f)(*a)` is `partial(f, *a)`: the 2020 decorator for partially applied rules.

  >>> curry(lambda x, y: x - y)(10)(3)
  7
  """
  return partial(partial, fun)


def concatenate(xs):
  """One list of the items of the iterables `xs`, in order.

  >>> concatenate([[1, 2], (3,), []])
  [1, 2, 3]
  """
  out = []
  for x in xs:
    out.extend(x)
  return out


def subvals(lst, replace):
  """A tuple of `lst` with `(index, value)` pairs of `replace` substituted.

  >>> subvals((1, 2, 3), [(0, 'a'), (2, 'c')])
  ('a', 2, 'c')
  """
  out = list(lst)
  for i, v in replace:
    out[i] = v
  return tuple(out)


def split_dict(dct, names):
  """The values of `dct` at `names`, in order; `dct` must hold exactly those keys.

  Consumes `dct` (its entries are popped), as the 2020 helper does.

  >>> split_dict({'a': 1, 'b': 2}, ['b', 'a'])
  [2, 1]
  """
  out = [dct.pop(name) for name in names]
  if dct:
    raise ValueError(f"split_dict: unexpected keys {sorted(map(str, dct))}")
  return out


def split_merge(predicate, xs):
  """Split `xs` by `predicate` into (true items, false items, merge).

  `merge(new_trues, new_falses)` interleaves replacement lists back in the
  original order.

  >>> t, f, merge = split_merge(lambda x: x > 0, [1, -2, 3])
  >>> t, f, merge(['a', 'b'], ['c'])
  ([1, 3], [-2], ['a', 'c', 'b'])
  """
  sides = [bool(predicate(x)) for x in xs]
  trues = [x for x, s in zip(xs, sides) if s]
  falses = [x for x, s in zip(xs, sides) if not s]

  def merge(new_trues, new_falses):
    it_t, it_f = iter(new_trues), iter(new_falses)
    out = [next(it_t) if s else next(it_f) for s in sides]
    sentinel = object()
    assert next(it_t, sentinel) is sentinel and next(it_f, sentinel) is sentinel
    return out
  return trues, falses, merge


def toposort(end_nodes):
  """All nodes reachable from `end_nodes` through their `.parents`, parents first.

  Raises ValueError on a cycle.

  >>> class N:
  ...   def __init__(self, name, *parents): self.name, self.parents = name, list(parents)
  >>> a = N('a'); b = N('b', a); c = N('c', a, b)
  >>> [n.name for n in toposort([c])]
  ['a', 'b', 'c']
  """
  order, state = [], {}  # state: id -> 1 while on the DFS path, 2 when finished
  for root in end_nodes:
    if id(root) in state:
      continue
    stack = [(root, iter(root.parents))]
    state[id(root)] = 1
    while stack:
      node, parents = stack[-1]
      for p in parents:
        s = state.get(id(p))
        if s == 1:
          raise ValueError("toposort: the graph has a cycle")
        if s is None:
          state[id(p)] = 1
          stack.append((p, iter(p.parents)))
          break
      else:
        stack.pop()
        state[id(node)] = 2
        order.append(node)
  return order


def check_toposort(nodes):
  """Assert that every node of `nodes` comes after all of its `.parents`."""
  seen = set()
  for node in nodes:
    assert all(id(p) in seen for p in node.parents), "nodes are not topologically sorted"
    seen.add(id(node))


def cache(max_size=4096):
  """Memoize a function on its (hashable) arguments and the x64 flag (2020 `jax.util.cache`).

  >>> @cache()
  ... def square(x): return x * x
  >>> square(3)
  9
  """
  def wrap(f):
    @functools.lru_cache(maxsize=max_size)
    def cached(_x64, *args, **kwargs):
      return f(*args, **kwargs)

    @functools.wraps(f)
    def memoized(*args, **kwargs):
      # The result may depend on the dtype policy, so the flag is part of the key.
      from tracejax._src.config import config
      return cached(config.jax_enable_x64, *args, **kwargs)
    memoized.cache_clear = cached.cache_clear
    memoized.cache_info = cached.cache_info
    return memoized
  return wrap


memoize = cache(max_size=None)


class WrapHashably:
  """Hashed and compared by the identity of the wrapped value (e.g. an unhashable array).

  >>> a = [1]; WrapHashably(a) == WrapHashably(a)
  True
  """
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val

  def __hash__(self):
    return id(self.val)

  def __eq__(self, other):
    return isinstance(other, WrapHashably) and self.val is other.val


class Hashable:
  """Hashed and compared by the value it wraps.

  >>> Hashable((1, 2)) == Hashable((1, 2))
  True
  """
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = val

  def __hash__(self):
    return hash(self.val)

  def __eq__(self, other):
    return isinstance(other, Hashable) and self.val == other.val


def get_module_functions(module):
  """A dict name -> function of the public functions (and NumPy ufuncs) of `module`.

  >>> import math
  >>> get_module_functions(math)['sqrt'](4.0)
  2.0
  """
  import types
  out = {}
  for name in dir(module):
    if name.startswith("__"):
      continue
    attr = getattr(module, name, None)
    # Functions, builtins and ufuncs, and NumPy 2's function objects (array-function
    # dispatchers): every callable that is not a class or a module.
    if callable(attr) and not isinstance(attr, (type, types.ModuleType)):
      out[name] = attr
  return out


def wrap_name(name, transform_name):
  """`transform_name(name)`, the name of a transformed function in name stacks.

  >>> wrap_name('f', 'jit')
  'jit(f)'
  """
  return f"{transform_name}({name})"


def extend_name_stack(stack, name=""):
  """The name stack `stack` with `name` pushed (2020 form: 'outer/inner/').

  >>> extend_name_stack('jit(f)/', 'vmap(g)')
  'jit(f)/vmap(g)/'
  """
  return f"{stack}{name}/"
