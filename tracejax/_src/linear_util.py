"""Wrapped functions with stacked transformations (`jax.linear_util`, the 2020 API).

A `WrappedFun` is a Python callable plus a stack of *transformations*, each a
generator that sees the arguments on the way in and the result on the way out:

    @transformation
    def scale(factor, *args):
      ans = yield args, {}        # call the function below with (args, kwargs)
      yield ans * factor          # ...and return this instead of its result

    fun = scale(wrap_init(f), 2.0)
    fun.call_wrapped(x)           # == 2.0 * f(x)

A `transformation_with_aux` generator yields `(ans, aux)` last; `aux` goes into
a `Store` that the caller reads after the call (how `flatten_fun` hands back the
output tree). Transformations compose without calling anything, so the result
is also a hashable description of the computation (`cache` memoizes on it).
The name is historical: the functions are "linear" in that each is called once.
"""
import functools
import weakref

from tracejax._src import util


class StoreException(Exception):
  pass


class _Empty:
  __slots__ = ()

  def __repr__(self):
    return "<empty>"


_EMPTY = _Empty()


class Store:
  """A box filled once per call by a transformation with aux output."""
  __slots__ = ("_val",)

  def __init__(self):
    self._val = _EMPTY

  def store(self, val):
    if self._val is not _EMPTY:
      raise StoreException("Store occupied")
    self._val = val

  def reset(self):
    self._val = _EMPTY

  @property
  def val(self):
    if self._val is _EMPTY:
      raise StoreException("Store empty: the function has not been called yet")
    return self._val

  def __bool__(self):
    return self._val is not _EMPTY

  def __repr__(self):
    return f"Store({self._val!r})"


class WrappedFun:
  """`f` with `transforms` (outermost first) and keyword `params` always passed to `f`."""
  __slots__ = ("f", "transforms", "stores", "params", "__weakref__")

  def __init__(self, f, transforms, stores, params):
    self.f, self.transforms, self.stores = f, tuple(transforms), tuple(stores)
    self.params = tuple(params)

  @property
  def __name__(self):
    return getattr(self.f, "__name__", "<unnamed wrapped function>")

  def wrap(self, gen, gen_static_args, out_store):
    """A new WrappedFun with `gen` as its outermost transformation."""
    return WrappedFun(self.f, ((gen, tuple(gen_static_args)),) + self.transforms,
                      (out_store,) + self.stores, self.params)

  def populate_stores(self, stores):
    """Copy aux values from another call's stores (used when a call is cached)."""
    for mine, theirs in zip(self.stores, stores):
      if mine is not None:
        mine.store(theirs.val)

  def call_wrapped(self, *args, **kwargs):
    """Run the transformations' entry halves, `f`, then their exit halves."""
    stack = []
    for (gen, static_args), store in zip(self.transforms, self.stores):
      g = gen(*(static_args + tuple(args)), **kwargs)
      args, kwargs = next(g)
      stack.append((g, store))
    ans = self.f(*args, **dict(self.params, **kwargs))
    for g, store in reversed(stack):
      ans = g.send(ans)
      if store is not None:
        ans, aux = ans
        store.store(aux)
      g.close()  # a generator yields exactly twice; anything after is never run
    return ans

  __call__ = call_wrapped  # convenient, though 2020 code always says call_wrapped

  def __repr__(self):
    names = [getattr(g, "__name__", repr(g)) for g, _ in self.transforms]
    return f"Wrapped function:\n  {', '.join(names) or '(no transformations)'}\n  {self.f!r}"

  def _key(self):
    return (self.f, self.transforms, self.params)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, WrappedFun) and self._key() == other._key()


def wrap_init(f, params=None):
  """The WrappedFun of a plain Python callable (keyword `params` are bound)."""
  params = () if params is None else tuple(sorted(dict(params).items()))
  return WrappedFun(f, (), (), params)


def transformation(gen, fun=None, *gen_static_args):
  """Apply generator transformation `gen` to `fun`.

  As a decorator (`@transformation` over `gen`) it returns `t(fun, *static_args)`."""
  if fun is None:
    return functools.wraps(gen)(functools.partial(transformation, gen))
  return fun.wrap(gen, gen_static_args, None)


def transformation_with_aux(gen, fun=None, *gen_static_args):
  """Like `transformation`; returns `(wrapped, aux_thunk)`: `aux_thunk()` after a call."""
  if fun is None:
    return functools.wraps(gen)(functools.partial(transformation_with_aux, gen))
  out_store = Store()
  return fun.wrap(gen, gen_static_args, out_store), lambda: out_store.val


def fun_name(f):
  return util.fun_name(f.f if isinstance(f, WrappedFun) else f)


def _prepend_args(static_args, *args, **kwargs):
  ans = yield static_args + args, kwargs
  yield ans


def hashable_partial(fun, *static_args):
  """`fun` with `static_args` (hashable) prepended to the arguments of every call."""
  return fun.wrap(_prepend_args, (tuple(static_args),), None)


def merge_linear_aux(aux1, aux2):
  """Of two aux thunks exactly one was filled (the branch that ran); return its value."""
  try:
    out1 = aux1()
  except StoreException:
    try:
      out2 = aux2()
    except StoreException:
      raise StoreException("neither store occupied") from None
    return False, out2
  try:
    aux2()
  except StoreException:
    return True, out1
  raise StoreException("both stores occupied")


def cache(call):
  """Memoize `call(fun: WrappedFun, *args)` on `fun` and the (hashable) args.

  Entries live as long as `fun.f` does; a cached hit replays the aux stores."""
  caches = weakref.WeakKeyDictionary()

  def memoized(fun, *args):
    try:
      per_f = caches.setdefault(fun.f, {})
    except TypeError:  # f cannot be weakly referenced: no caching
      return call(fun, *args)
    key = (fun.transforms, fun.params, args)
    try:
      hit = per_f.get(key)
    except TypeError:  # an unhashable static argument: no caching
      return call(fun, *args)
    if hit is None:
      ans = call(fun, *args)
      per_f[key] = (ans, fun.stores)
      return ans
    ans, stores = hit
    fun.populate_stores(stores)
    return ans

  memoized.cache_clear = caches.clear
  return memoized
