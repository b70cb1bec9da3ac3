"""Pytrees: flattening nested containers into leaves plus a structure.

A pytree is a nested structure of containers (tuples, lists, dicts, None,
namedtuples, OrderedDicts, defaultdicts and registered custom node types)
whose non-container elements are leaves.  `tree_flatten` splits a pytree into
its list of leaves and a `PyTreeDef` describing the structure, and
`tree_unflatten` puts them back together.

Flattening runs on every call of a jitted function, so the hot path is kept
small: node kinds are looked up by exact `type(x)` in a dict, the structure is
stored as nested plain tuples, and `PyTreeDef` caches its hash.

Structure representation (`PyTreeDef._node`):
  * a leaf is `None`;
  * every other node is a tuple `(node_type, aux_data, children)`, where
    `children` is a tuple of nodes.  `aux_data` is `None` for tuples, lists,
    namedtuples and None; the sorted key tuple for dicts; the key tuple (in
    insertion order) for OrderedDicts; `(default_factory, sorted keys)` for
    defaultdicts; and whatever the flatten function returned for custom nodes.
Two structures are equal exactly when these nested tuples are equal, which
compares node types by identity and aux data with `==`.
"""
import collections
import dataclasses
import difflib
import functools
import operator
import typing

__all__ = [
    "PyTreeDef", "Partial",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
    "tree_map", "tree_multimap", "tree_reduce", "tree_all", "tree_transpose",
    "treedef_children", "treedef_is_leaf", "treedef_is_strict_leaf",
    "treedef_tuple", "build_tree", "all_leaves", "broadcast_prefix",
    "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
    "keystr", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey",
    "KeyEntry", "KeyPath",
]

_NoneType = type(None)

# Node kinds.  Small ints so that the hot path compares cheaply.
_K_LEAF = 0
_K_NONE = 1
_K_TUPLE = 2
_K_LIST = 3
_K_DICT = 4
_K_NAMEDTUPLE = 5
_K_ORDEREDDICT = 6
_K_DEFAULTDICT = 7
_K_CUSTOM = 8

_BUILTIN_KINDS = {
    _NoneType: _K_NONE,
    tuple: _K_TUPLE,
    list: _K_LIST,
    dict: _K_DICT,
    collections.OrderedDict: _K_ORDEREDDICT,
    collections.defaultdict: _K_DEFAULTDICT,
}

# Exact type -> kind.  Seeded with the built-in node types and custom
# registrations; every other type is classified (leaf or namedtuple) on first
# sight and cached here, so classification costs one dict lookup afterwards.
_kind_cache = dict(_BUILTIN_KINDS)
_kind_get = _kind_cache.get

# Custom node type -> (flatten_func, unflatten_func, flatten_with_keys_func).
_registry = {}

_NONE_NODE = (_NoneType, None, ())

# Types registered by `register_dataclass` (only their error wording differs).
_dataclass_nodes = set()


def _classify(t):
  """Kind of a type not seen before: a namedtuple class or a leaf type."""
  # Like JAX, any tuple subclass carrying `_fields` counts as a namedtuple;
  # other subclasses of node types (dict, list, ...) are leaves.
  if issubclass(t, tuple) and hasattr(t, "_fields"):
    k = _K_NAMEDTUPLE
  else:
    k = _K_LEAF
  _kind_cache[t] = k
  return k


def _kind_of(t):
  k = _kind_get(t)
  return _classify(t) if k is None else k


def _sorted_keys(d):
  """Dict keys in the canonical (sorted) order used for flattening."""
  try:
    return tuple(sorted(d))
  except TypeError:
    # Keys of mixed, mutually unorderable types: order by type name first so
    # the result is still deterministic where the values themselves compare.
    try:
      return tuple(sorted(d, key=lambda k: (type(k).__qualname__, k)))
    except TypeError:
      return tuple(sorted(d, key=lambda k: (type(k).__qualname__, repr(k))))


# ---------------------------------------------------------------------------
# Flattening (hot path).
# ---------------------------------------------------------------------------

def _flatten(x, append, is_leaf):
  """Appends the leaves of `x` via `append` and returns its structure node."""
  t = type(x)
  k = _kind_get(t)
  if k is None:
    k = _classify(t)
  if k == _K_LEAF or (is_leaf is not None and is_leaf(x)):
    append(x)
    return None
  if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
    # Children that are plain leaves are handled inline (no recursive call):
    # `append(c)` returns None, so the `and` chain appends and yields None.
    return (t, None, tuple([
        None if (_kind_get(type(c)) == _K_LEAF and append(c) is None)
        else _flatten(c, append, is_leaf) for c in x]))
  if k == _K_DICT:
    keys = _sorted_keys(x)
    # Same inline-leaf shortcut as for sequences.
    return (t, keys, tuple([
        None if (_kind_get(type(v := x[key])) == _K_LEAF and append(v) is None)
        else _flatten(v, append, is_leaf) for key in keys]))
  if k == _K_NONE:
    return _NONE_NODE
  if k == _K_ORDEREDDICT:
    keys = tuple(x)
    return (t, keys, tuple([_flatten(x[key], append, is_leaf) for key in keys]))
  if k == _K_DEFAULTDICT:
    keys = _sorted_keys(x)
    return (t, (x.default_factory, keys),
            tuple([_flatten(x[key], append, is_leaf) for key in keys]))
  children, aux = _registry[t][0](x)
  return (t, aux, tuple([_flatten(c, append, is_leaf) for c in children]))


def tree_flatten(tree, is_leaf=None):
  """Flattens a pytree into a list of leaves and a `PyTreeDef`.

  Args:
    tree: the pytree to flatten.
    is_leaf: optional predicate; subtrees for which it returns True are
      treated as leaves and not descended into.

  Returns:
    A pair `(leaves, treedef)`.
  """
  leaves = []
  node = _flatten(tree, leaves.append, is_leaf)
  return leaves, _make_treedef(node, len(leaves))


def tree_leaves(tree, is_leaf=None):
  """Returns the list of leaves of `tree`, in flattening order."""
  leaves = []
  _flatten(tree, leaves.append, is_leaf)
  return leaves


def tree_structure(tree, is_leaf=None):
  """Returns the `PyTreeDef` describing the structure of `tree`."""
  return tree_flatten(tree, is_leaf)[1]


# ---------------------------------------------------------------------------
# Unflattening.
# ---------------------------------------------------------------------------

def _build(t, aux, vals):
  """Rebuilds one node of type `t` from its aux data and child values."""
  k = _kind_of(t)
  if k == _K_TUPLE:
    return tuple(vals)
  if k == _K_LIST:
    return list(vals)
  if k == _K_DICT:
    return dict(zip(aux, vals))
  if k == _K_NONE:
    return None
  if k == _K_NAMEDTUPLE:
    return t(*vals)
  if k == _K_ORDEREDDICT:
    return collections.OrderedDict(zip(aux, vals))
  if k == _K_DEFAULTDICT:
    return collections.defaultdict(aux[0], zip(aux[1], vals))
  return _registry[t][1](aux, tuple(vals))


def _unflatten(node, nxt):
  """Rebuilds a (non-leaf) node, drawing leaves from the callable `nxt`."""
  t, aux, children = node
  vals = [nxt() if c is None else _unflatten(c, nxt) for c in children]
  # The common container types are built inline; the rest go via `_build`.
  if t is tuple:
    return tuple(vals)
  if t is list:
    return vals
  if t is dict:
    return dict(zip(aux, vals))
  return _build(t, aux, vals)


def tree_unflatten(treedef, leaves):
  """Rebuilds a pytree with structure `treedef` from an iterable of leaves."""
  return treedef.unflatten(leaves)


# ---------------------------------------------------------------------------
# Structure helpers used by PyTreeDef.
# ---------------------------------------------------------------------------

def _count_leaves(node):
  if node is None:
    return 1
  return sum([1 if c is None else _count_leaves(c) for c in node[2]])


def _count_nodes(node):
  if node is None:
    return 1
  return 1 + sum([1 if c is None else _count_nodes(c) for c in node[2]])


def _structural_hash(node):
  """Hash of a structure whose aux data is not all hashable."""
  if node is None:
    return 0
  t, aux, children = node
  try:
    h = hash(aux)
  except TypeError:
    h = 0  # Unhashable aux: equal structures still hash equal.
  return hash((t, h, tuple([_structural_hash(c) for c in children])))


def _repr_node(node):
  if node is None:
    return "*"
  t, aux, children = node
  k = _kind_of(t)
  if k == _K_NONE:
    head = "None"
  elif k == _K_TUPLE:
    head = "tuple"
  elif k == _K_LIST:
    head = "list"
  elif k == _K_DICT:
    head = f"dict[{list(aux)!r}]"
  elif k == _K_NAMEDTUPLE:
    head = f"namedtuple[{t!r}]"
  else:
    # OrderedDict, defaultdict and custom nodes print like JAX's registered
    # Python nodes: the type, then the aux data in brackets.
    head = f"{t!r}[{aux!r}]"
  return f"PyTreeDef({head}, [{','.join(map(_repr_node, children))}])"


class _Mismatch(Exception):
  """Internal: a structure mismatch found by `flatten_up_to`.

  Carries two renderings of the same mismatch: `args[0]` in the wording of
  today's jaxlib (what `PyTreeDef.flatten_up_to` raises) and `legacy` in the
  wording of the 2020 jaxlib, which `tree_map` appends to its message so that
  programs matching either wording keep working.
  """

  def __init__(self, message, legacy=None):
    super().__init__(message)
    self.legacy = message if legacy is None else legacy


_NONE_PREFIX_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be "
    "a tree-prefix of non-None values. To obtain the previous behavior, you can "
    "usually write:\n  jax.tree.map(lambda x, y: None if x is None else f(x, y), "
    "a, b, is_leaf=lambda x: x is None)")

_BUILTIN_NAMES = {_K_TUPLE: "tuple", _K_LIST: "list", _K_DICT: "dict"}


def _node_children(x, k, t):
  """(aux, children) of `x`, a node of kind `k` and type `t`; not for leaves."""
  if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
    return None, list(x)
  if k == _K_DICT:
    keys = _sorted_keys(x)
    return keys, [x[key] for key in keys]
  if k == _K_NONE:
    return None, []
  if k == _K_ORDEREDDICT:
    keys = tuple(x)
    return keys, [x[key] for key in keys]
  if k == _K_DEFAULTDICT:
    keys = _sorted_keys(x)
    return (x.default_factory, keys), [x[key] for key in keys]
  children, aux = _registry[t][0](x)
  return aux, list(children)


def _aux_differs(a, b):
  """`a != b` for aux data, treating a failing comparison as a difference."""
  try:
    return bool(a != b)
  except Exception:  # e.g. arrays in aux data: ambiguous truth value
    return a is not b


def _flatten_up_to(node, x, out):
  """Appends to `out` the subtrees of `x` found at the leaves of `node`."""
  if node is None:
    out.append(x)
    return
  t, aux, children = node
  k = _kind_of(t)
  xt = type(x)
  if k == _K_NONE:
    if x is not None:
      raise _Mismatch(f"Expected None, got {x!r}.{_NONE_PREFIX_HINT}",
                      f"Expected None, got {x!r}.")
    return
  if k == _K_NAMEDTUPLE:
    if _kind_of(xt) != _K_NAMEDTUPLE:
      raise _Mismatch(f"Expected named tuple, got {x!r}.")
    if xt is not t:
      raise _Mismatch(
          f"Named tuple type mismatch: expected type: {t!r}, tuple: {x!r}.")
  elif xt is not t:
    legacy = f"Custom node type mismatch; expected type: {t!r}; value: {x!r}."
    if k in _BUILTIN_NAMES:
      raise _Mismatch(f"Expected {_BUILTIN_NAMES[k]}, got {x!r}.", legacy)
    raise _Mismatch(
        f"Custom node type mismatch: expected type: {t!r}, value: {x!r}.",
        legacy)
  x_aux, x_children = _node_children(x, k, t)
  if k == _K_TUPLE or k == _K_LIST or k == _K_NAMEDTUPLE:
    if len(x_children) != len(children):
      what = {_K_TUPLE: "Tuple", _K_LIST: "List",
              _K_NAMEDTUPLE: "Named tuple"}[k]
      noun = "list" if k == _K_LIST else "tuple"
      raise _Mismatch(f"{what} arity mismatch: {len(x_children)} != "
                      f"{len(children)}; {noun}: {x!r}.")
  elif k == _K_DICT:
    if x_aux != aux:
      raise _Mismatch(
          f"Dict key mismatch; expected keys: {list(aux)!r}; "
          f"present keys: {list(x_aux)!r}.",
          f"Dict key mismatch; expected keys: {list(aux)!r}; dict: {x!r}.")
  else:
    # OrderedDict, defaultdict and custom nodes: aux data first, then arity
    # (the order today's jaxlib checks them in).
    if _aux_differs(aux, x_aux):
      what = "custom dataclass" if t in _dataclass_nodes else "custom"
      modern = (f"Mismatch {what} node data: {aux!r} != {x_aux!r}; "
                f"value: {x!r}.")
      if k == _K_ORDEREDDICT or (k == _K_DEFAULTDICT and aux[1] != x_aux[1]):
        keys = aux[1] if k == _K_DEFAULTDICT else aux
        legacy = (f"{t.__name__} key mismatch; expected keys: {list(keys)!r}; "
                  f"dict: {x!r}.")
      else:
        legacy = (f"Mismatch custom node data: {x_aux!r} != {aux!r}; "
                  f"value: {x!r}.")
      raise _Mismatch(modern, legacy)
    if len(x_children) != len(children):
      raise _Mismatch(f"Custom type arity mismatch: {len(x_children)} != "
                      f"{len(children)}; value: {x!r}.")
  for c, xc in zip(children, x_children):
    _flatten_up_to(c, xc, out)


def _from_iterable_tree(node, xs):
  if node is None:
    return xs
  t, aux, children = node
  xs = list(xs)
  if len(xs) != len(children):
    raise ValueError(f"Arity mismatch between trees: expected {len(children)} "
                     f"children for {_repr_node(node)}, got {len(xs)}.")
  return _build(t, aux, [_from_iterable_tree(c, x)
                         for c, x in zip(children, xs)])


def _compose(outer, inner):
  if outer is None:
    return inner
  t, aux, children = outer
  return (t, aux, tuple([_compose(c, inner) for c in children]))


class PyTreeDef:
  """The structure of a pytree: its node types, aux data and arities.

  Instances are immutable, hashable and compare equal when the structures
  are the same (node types by identity, aux data by `==`), so they serve as
  cache keys for `jit`.
  """
  __slots__ = ("_node", "_num_leaves", "_num_nodes", "_hash")

  def __init__(self, node, num_leaves=-1):
    self._node = node
    self._num_leaves = num_leaves
    self._num_nodes = -1
    self._hash = None

  @property
  def num_leaves(self):
    """Number of leaves in the structure."""
    n = self._num_leaves
    if n < 0:
      n = self._num_leaves = _count_leaves(self._node)
    return n

  @property
  def num_nodes(self):
    """Number of nodes in the structure, leaves included."""
    n = self._num_nodes
    if n < 0:
      n = self._num_nodes = _count_nodes(self._node)
    return n

  def children(self):
    """Treedefs of the immediate children (an empty list for a leaf)."""
    if self._node is None:
      return []
    return [PyTreeDef(c) for c in self._node[2]]

  def node_data(self):
    """`(node_type, aux_data)` of the root node, or None for a leaf.

    A dict's aux data is its list of (sorted) keys, as in JAX.

    Example:
      >>> tree_structure({"b": 1, "a": 2}).node_data()
      (<class 'dict'>, ['a', 'b'])
    """
    node = self._node
    if node is None:
      return None
    if node[0] is dict:
      return dict, list(node[1])
    return node[0], node[1]

  @staticmethod
  def from_node_data_and_children(registry, node_data, children):
    """Builds a treedef from a root's `node_data()` and its children treedefs.

    The inverse of `node_data()`/`children()`.  `registry` is accepted for
    JAX compatibility (tracejax has a single registry, `default_registry`).
    A `node_data` of None gives a leaf.

    Example:
      >>> td = tree_structure({"a": (1, 2)})
      >>> PyTreeDef.from_node_data_and_children(
      ...     default_registry, td.node_data(), td.children()) == td
      True
    """
    del registry  # one registry only
    if node_data is None:
      return PyTreeDef(None, 1)
    t, aux = node_data
    children = list(children)
    if not isinstance(t, type) or _kind_of(t) == _K_LEAF:
      raise ValueError(f"from_node_data_and_children: {t!r} is not a pytree "
                       "node type.")
    if _kind_of(t) == _K_DICT:
      aux = tuple(aux)
    for c in children:
      if not isinstance(c, PyTreeDef):
        raise TypeError("from_node_data_and_children: children must be "
                        f"PyTreeDefs, got {c!r}.")
    return PyTreeDef((t, aux, tuple([c._node for c in children])),
                     sum(c.num_leaves for c in children))

  def walk(self, f_node, f_leaf, leaves):
    """Folds this structure bottom-up over `leaves`.

    Each leaf position becomes `f_leaf(leaf)` (the leaf itself when `f_leaf`
    is None); each node becomes `f_node(tuple_of_child_results, aux_data)`,
    with `aux_data` as in `node_data()`.

    Example:
      >>> tree_structure([1, (2, 3)]).walk(lambda xs, _: sum(xs), None,
      ...                                  [1, 2, 3])
      6
    """
    it = iter(leaves)

    def go(node):
      if node is None:
        x = next(it)
        return x if f_leaf is None else f_leaf(x)
      t, aux, children = node
      vals = tuple([go(c) for c in children])
      return f_node(vals, list(aux) if t is dict else aux)

    try:
      return go(self._node)
    except StopIteration:
      raise ValueError(f"Too few leaves for PyTreeDef; expected "
                       f"{self.num_leaves}.") from None

  def unflatten(self, leaves):
    """Rebuilds a pytree with this structure from an iterable of leaves."""
    if type(leaves) is not list and type(leaves) is not tuple:
      leaves = list(leaves)
    n = self.num_leaves
    if len(leaves) != n:
      few = "few" if len(leaves) < n else "many"
      raise ValueError(f"Too {few} leaves for PyTreeDef; expected {n}, got "
                       f"{len(leaves)}. PyTreeDef: {self}")
    node = self._node
    if node is None:
      return leaves[0]
    return _unflatten(node, iter(leaves).__next__)

  def flatten_up_to(self, tree):
    """Flattens `tree` only as deep as this structure goes.

    `tree` must have this structure, except that each leaf position may hold
    an arbitrary subtree; those subtrees are returned in leaf order.  Raises
    ValueError describing the first mismatch if `tree` does not match.

    Example:
      >>> tree_structure((1, [2, 3])).flatten_up_to(((1, 2), [None, {"a": 3}]))
      [(1, 2), None, {'a': 3}]
    """
    out = []
    try:
      _flatten_up_to(self._node, tree, out)
    except _Mismatch as e:
      raise ValueError(str(e)) from None
    return out

  def compose(self, inner):
    """The structure obtained by replacing every leaf of self by `inner`."""
    return PyTreeDef(_compose(self._node, inner._node),
                     self.num_leaves * inner.num_leaves)

  def from_iterable_tree(self, xs):
    """Builds a pytree from nested iterables `xs` following this structure."""
    return _from_iterable_tree(self._node, xs)

  def __eq__(self, other):
    if self is other:
      return True
    if not isinstance(other, PyTreeDef):
      return NotImplemented
    # Cheap early exit when both hashes are already known.
    if (self._hash is not None and other._hash is not None
        and self._hash != other._hash):
      return False
    return self._node == other._node

  def __ne__(self, other):
    eq = self.__eq__(other)
    return eq if eq is NotImplemented else not eq

  def __hash__(self):
    h = self._hash
    if h is None:
      try:
        h = hash(self._node)
      except TypeError:
        h = _structural_hash(self._node)
      self._hash = h
    return h

  def __repr__(self):
    return _repr_node(self._node)

  def __reduce__(self):
    # Rebuild from the node so that the cached, id-based hash is not carried
    # into another process.
    return PyTreeDef, (self._node,)


def _make_treedef(node, num_leaves):
  # Skips __init__'s argument handling; this runs on every tree_flatten.
  td = _new_treedef(PyTreeDef)
  td._node = node
  td._num_leaves = num_leaves
  td._num_nodes = -1
  td._hash = None
  return td


_new_treedef = object.__new__


# ---------------------------------------------------------------------------
# Tree operations.
# ---------------------------------------------------------------------------

def _flatten_rest_up_to(treedef, tree, rest, is_leaf, name):
  """`treedef.flatten_up_to(r)` for each r in `rest`, with JAX's errors.

  On a mismatch the ValueError first locates it by key path in the wording
  of today's JAX ("pytree structure error: ... at key path\n    {name}[0]
  ..."), then repeats it in the 2020 wording together with both structures.
  """
  out = []
  for r in rest:
    subtrees = []
    try:
      _flatten_up_to(treedef._node, r, subtrees)
    except _Mismatch as e:
      located = _prefix_error(tree, r, is_leaf, name)
      head = str(e) if located is None else located
      raise ValueError(
          f"{head}\n{e.legacy}\n  expected tree structure: {treedef}\n"
          f"  actual tree structure:   {tree_structure(r)}") from None
    out.append(subtrees)
  return out


def tree_map(f, tree, *rest, is_leaf=None):
  """Maps `f` over the leaves of `tree` (and the matching leaves of `rest`).

  Args:
    f: function of `1 + len(rest)` arguments, called once per leaf.
    tree: the pytree whose structure the result has.
    *rest: pytrees with the structure of `tree`, or one in which leaves of
      `tree` correspond to whole subtrees (passed to `f` unchanged).
    is_leaf: optional predicate marking subtrees of `tree` as leaves.

  Returns:
    A pytree like `tree` holding `f(leaf, *matching_rest_leaves)`.  A
    structure mismatch raises ValueError naming its key path.

  Example:
    >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)},
    ...          {"a": 10, "b": (20, 30)})
    {'a': 11, 'b': (22, 33)}
  """
  leaves, treedef = tree_flatten(tree, is_leaf)
  if not rest:
    return treedef.unflatten([f(x) for x in leaves])
  all_leaves_ = [leaves] + _flatten_rest_up_to(treedef, tree, rest, is_leaf,
                                               "tree_map tree")
  return treedef.unflatten([f(*xs) for xs in zip(*all_leaves_)])


def tree_multimap(f, tree, *rest, is_leaf=None):
  """Old name of `tree_map` with several trees."""
  return tree_map(f, tree, *rest, is_leaf=is_leaf)


class _Missing:
  def __repr__(self):
    return "<missing>"


_no_initializer = _Missing()


def tree_reduce(function, tree, initializer=_no_initializer, is_leaf=None):
  """`functools.reduce` over the leaves of `tree`."""
  leaves = tree_leaves(tree, is_leaf)
  if initializer is _no_initializer:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
  """True if every leaf of `tree` is truthy."""
  return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
  """Turns an outer-of-inner pytree into an inner-of-outer pytree.

  `pytree_to_transpose` must have the structure `outer_treedef` composed with
  `inner_treedef`.  `inner_treedef` may be None, in which case it is taken
  from the first outer leaf.
  """
  flat, treedef = tree_flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(
        outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  inner_size = inner_treedef.num_leaves
  outer_size = outer_treedef.num_leaves
  expected = outer_treedef.compose(inner_treedef)
  if treedef.num_leaves != inner_size * outer_size or treedef != expected:
    raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
  lol = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
  subtrees = [outer_treedef.unflatten(col) for col in zip(*lol)]
  if not subtrees:
    # No outer leaves: every inner position gets an empty outer tree.
    subtrees = [outer_treedef.unflatten([])] * inner_size
  return inner_treedef.unflatten(subtrees)


def treedef_children(treedef):
  """Treedefs of the children of the root node of `treedef`."""
  return treedef.children()


def treedef_is_leaf(treedef):
  """True if `treedef` is a single node (a leaf, or an empty node like None)."""
  return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef):
  """True if `treedef` is exactly one leaf."""
  return treedef._node is None


def treedef_tuple(treedefs):
  """The treedef of a tuple whose elements have the given treedefs."""
  treedefs = tuple(treedefs)
  return PyTreeDef((tuple, None, tuple([td._node for td in treedefs])),
                   sum(td.num_leaves for td in treedefs))


def build_tree(treedef, xs):
  """Builds a pytree of structure `treedef` from nested iterables `xs`.

  At each node of `treedef`, `xs` is an iterable of the children; at each
  leaf, the value of `xs` is used as it is.
  """
  return treedef.from_iterable_tree(xs)


def all_leaves(iterable, is_leaf=None):
  """True if every element of `iterable` is a leaf."""
  if is_leaf is None:
    return all(_kind_of(type(x)) == _K_LEAF for x in iterable)
  return all(_kind_of(type(x)) == _K_LEAF or is_leaf(x) for x in iterable)


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None):
  """Leaves of `prefix_tree`, each repeated once per leaf of its subtree in
  `full_tree`.

  Example:
    >>> broadcast_prefix((0, None), ([1, 2], {"a": 3}),
    ...                  is_leaf=lambda x: x is None)
    [0, 0, None]
  """
  leaves, treedef = tree_flatten(prefix_tree, is_leaf)
  subtrees, = _flatten_rest_up_to(treedef, prefix_tree, (full_tree,), is_leaf,
                                  "broadcast_prefix prefix_tree")
  result = []
  for x, subtree in zip(leaves, subtrees):
    result.extend([x] * len(tree_leaves(subtree)))
  return result


# ---------------------------------------------------------------------------
# Registration of custom node types.
# ---------------------------------------------------------------------------

def register_pytree_node(nodetype, flatten_func, unflatten_func,
                         flatten_with_keys_func=None):
  """Registers `nodetype` as a pytree node type.

  Args:
    nodetype: the class to register (instances of subclasses stay leaves).
    flatten_func: `x -> (children, aux_data)`; `aux_data` must be hashable
      and comparable with `==`, since treedefs are cache keys.
    unflatten_func: `(aux_data, children) -> x`.
    flatten_with_keys_func: optional `x -> (((key, child), ...), aux_data)`
      used by `tree_flatten_with_path`.
  """
  if nodetype in _registry or nodetype in _BUILTIN_KINDS:
    raise ValueError(
        f"Duplicate custom PyTreeDef type registration for {nodetype}.")
  _registry[nodetype] = (flatten_func, unflatten_func, flatten_with_keys_func)
  # Overrides a cached leaf/namedtuple classification of this type.
  _kind_cache[nodetype] = _K_CUSTOM
  for hook in _registration_hooks:
    hook(nodetype, flatten_func, unflatten_func)


# Called with (nodetype, flatten_func, unflatten_func) for every registration, past
# and future: jit mirrors the registry into jaxlib's C++ one, which its fast
# dispatch path flattens arguments with.
_registration_hooks = []


def add_registration_hook(hook):
  for t, (flatten_func, unflatten_func, _) in _registry.items():
    hook(t, flatten_func, unflatten_func)
  _registration_hooks.append(hook)


def register_pytree_node_class(cls):
  """Class decorator registering `cls` via its `tree_flatten` method and its
  `tree_unflatten(aux_data, children)` classmethod."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"),
                       cls.tree_unflatten)
  return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func,
                              flatten_func=None):
  """Registers `nodetype` with a flatten function that also names children.

  `flatten_with_keys` returns `(((key, child), ...), aux_data)`; the plain
  flatten function is derived from it unless `flatten_func` is given.
  """
  if flatten_func is None:
    def flatten_func(x):
      key_children, aux = flatten_with_keys(x)
      return [c for _, c in key_children], aux
  register_pytree_node(nodetype, flatten_func, unflatten_func,
                       flatten_with_keys)


def register_pytree_with_keys_class(cls):
  """Class decorator: like `register_pytree_node_class`, using the class's
  `tree_flatten_with_keys` method (and `tree_flatten` if it defines one)."""
  flatten_func = (operator.methodcaller("tree_flatten")
                  if hasattr(cls, "tree_flatten") else None)
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten_func)
  return cls


# ---------------------------------------------------------------------------
# Partial.
# ---------------------------------------------------------------------------

class _HashableCallableShim:
  """Wraps a functools.partial so Partial does not merge it into itself.

  functools.partial flattens nested partials, which would turn the inner
  partial's (static) arguments into children of the outer Partial; wrapping
  keeps the inner partial as static aux data, compared by equality.
  """
  __slots__ = ("fun",)

  def __init__(self, fun):
    self.fun = fun

  def __call__(self, *args, **kw):
    return self.fun(*args, **kw)

  def __hash__(self):
    return hash(self.fun)

  def __eq__(self, other):
    if isinstance(other, _HashableCallableShim):
      return self.fun == other.fun
    return self.fun == other

  def __repr__(self):
    return repr(self.fun)


class Partial(functools.partial):
  """A functools.partial that is a pytree.

  The wrapped function is static (aux data, so it takes part in treedef
  equality and hashing); the bound positional and keyword arguments are the
  children.  That makes a Partial usable as an argument of a jitted function.
  """

  def __new__(klass, func, *args, **kw):
    if isinstance(func, functools.partial):
      func = _HashableCallableShim(func)
    return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)


# ---------------------------------------------------------------------------
# Key paths.
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
  """Path entry for an element of a tuple or list: `SequenceKey(idx=0)`."""
  idx: int

  def __post_init__(self):
    object.__setattr__(self, "idx", _int_key(self.idx, "SequenceKey", "idx"))

  def __str__(self):
    return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
  """Path entry for a value of a dict-like node: `DictKey(key='a')`."""
  key: object

  def __str__(self):
    return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
  """Path entry for a named field (namedtuple fields, dataclass attributes)."""
  name: str

  def __post_init__(self):
    if not isinstance(self.name, str):
      raise TypeError(f"GetAttrKey: name must be a str, got {self.name!r}.")

  def __str__(self):
    return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
  """Path entry for a child of a custom node registered without keys."""
  key: int

  def __post_init__(self):
    object.__setattr__(self, "key",
                       _int_key(self.key, "FlattenedIndexKey", "key"))

  def __str__(self):
    return f"[<flat index {self.key}>]"


def _int_key(v, cls, field):
  if type(v) is int:
    return v
  try:
    return operator.index(v)
  except TypeError:
    raise TypeError(f"{cls}: {field} must be an int, got {v!r}.") from None


# Type annotations of JAX's API: a key path is a tuple of key entries.
KeyEntry = typing.TypeVar("KeyEntry", bound=typing.Hashable)
KeyPath = typing.Tuple[KeyEntry, ...]


def _key_simple_str(key):
  if isinstance(key, SequenceKey):
    return str(key.idx)
  if isinstance(key, DictKey):
    return str(key.key)
  if isinstance(key, GetAttrKey):
    return key.name
  if isinstance(key, FlattenedIndexKey):
    return str(key.key)
  return str(key)


def keystr(keys, *, simple=False, separator=""):
  """Renders a key path as a string.

  Args:
    keys: a key path (tuple of SequenceKey, DictKey, GetAttrKey, ...).
    simple: if True, each entry is written bare (`0`, `a`, `x`) instead of
      in its indexing form (`[0]`, `['a']`, `.x`).
    separator: string placed between entries.

  Example:
    >>> path = (SequenceKey(0), DictKey("a"), GetAttrKey("x"))
    >>> keystr(path), keystr(path, simple=True, separator="/")
    ("[0]['a'].x", '0/a/x')
  """
  if simple:
    return separator.join(_key_simple_str(k) for k in keys)
  return separator.join(str(k) for k in keys)


def _keyed_children(x, k, t):
  """(aux, keys, children) of `x`, a node of kind `k` and type `t`."""
  if k == _K_TUPLE or k == _K_LIST:
    children = list(x)
    return None, [SequenceKey(i) for i in range(len(children))], children
  if k == _K_NAMEDTUPLE:
    return None, [GetAttrKey(name) for name in t._fields], list(x)
  if k == _K_CUSTOM:
    with_keys = _registry[t][2]
    if with_keys is not None:
      key_children, aux = with_keys(x)
      key_children = list(key_children)
      return (aux, [kc[0] for kc in key_children],
              [kc[1] for kc in key_children])
    aux, children = _node_children(x, k, t)
    return aux, [FlattenedIndexKey(i) for i in range(len(children))], children
  aux, children = _node_children(x, k, t)
  if k == _K_NONE:
    return aux, [], children
  dict_keys = aux[1] if k == _K_DEFAULTDICT else aux
  return aux, [DictKey(key) for key in dict_keys], children


def _flatten_with_path(x, path, out, is_leaf, takes_path):
  t = type(x)
  k = _kind_of(t)
  if k == _K_LEAF or (is_leaf is not None and (
      is_leaf(path, x) if takes_path else is_leaf(x))):
    out.append((path, x))
    return None
  aux, keys, children = _keyed_children(x, k, t)
  return (t, aux, tuple([_flatten_with_path(c, path + (key,), out, is_leaf,
                                            takes_path)
                         for key, c in zip(keys, children)]))


def tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """Like `tree_flatten`, but each leaf comes with its key path.

  Args:
    tree: the pytree to flatten.
    is_leaf: optional predicate marking subtrees as leaves; called as
      `is_leaf(x)`, or `is_leaf(path, x)` if `is_leaf_takes_path`.
    is_leaf_takes_path: whether `is_leaf` also receives the key path.

  Returns:
    `([(path, leaf), ...], treedef)`, where each `path` is a tuple of key
    entries (SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey or the keys
    of a node registered with `register_pytree_with_keys`).

  Example:
    >>> tree_flatten_with_path({"a": [1, 2]})[0]
    [((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
  """
  out = []
  node = _flatten_with_path(tree, (), out, is_leaf, is_leaf_takes_path)
  return out, _make_treedef(node, len(out))


def tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """`(path, leaf)` pairs of `tree`, in flattening order.

  Arguments as for `tree_flatten_with_path`.

  Example:
    >>> tree_leaves_with_path((1, None, [2]))
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=2), SequenceKey(idx=0)), 2)]
  """
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
  """Like `tree_map`, but `f` also receives each leaf's key path first.

  Args:
    f: called as `f(path, leaf, *matching_rest_leaves)`.
    tree, rest, is_leaf: as for `tree_map`.
    is_leaf_takes_path: whether `is_leaf` is called as `is_leaf(path, x)`.

  Example:
    >>> tree_map_with_path(lambda p, x: keystr(p), {"k": (1, 2)})
    {'k': ("['k'][0]", "['k'][1]")}
  """
  path_leaves, treedef = tree_flatten_with_path(tree, is_leaf,
                                                is_leaf_takes_path)
  paths = [p for p, _ in path_leaves]
  leaves = [x for _, x in path_leaves]
  if not rest:
    return treedef.unflatten([f(p, x) for p, x in zip(paths, leaves)])
  if is_leaf is not None and is_leaf_takes_path:
    pred = _path_predicate(is_leaf)
  else:
    pred = is_leaf
  all_leaves_ = [leaves] + _flatten_rest_up_to(
      treedef, tree, rest, pred, "tree_map_with_path tree")
  return treedef.unflatten([f(p, *xs) for p, *xs in zip(paths, *all_leaves_)])


class _path_predicate:
  """Marks an `is_leaf(path, x)` predicate for `_prefix_error`."""
  __slots__ = ("fn",)

  def __init__(self, fn):
    self.fn = fn


# ---------------------------------------------------------------------------
# Locating structure mismatches by key path (the errors of today's JAX).
# ---------------------------------------------------------------------------

def _prefix_error(prefix, full, is_leaf, name):
  """Message for the first place where `prefix` is not a prefix of `full`.

  Walks both values together, as deep as `prefix` goes (`is_leaf` applies to
  `prefix`), and describes the first difference in node type, length, number
  of children or aux data, naming its key path.  None if there is none.
  """
  takes_path = isinstance(is_leaf, _path_predicate)
  pred = is_leaf.fn if takes_path else is_leaf

  def go(p, f, path):
    tp = type(p)
    kp = _kind_of(tp)
    if kp == _K_LEAF or (pred is not None and (
        pred(path, p) if takes_path else pred(p))):
      return None
    where = f"{name}{keystr(path)}"
    tf = type(f)
    if tp is not tf:
      return (f"pytree structure error: different types at key path\n"
              f"    {where}\n"
              f"At that key path, the prefix pytree {name} has a subtree of "
              f"type\n    {tp}\nbut at the same key path the full pytree has "
              f"a subtree of different type\n    {tf}.")
    p_aux, p_keys, p_children = _keyed_children(p, kp, tp)
    f_aux, f_keys, f_children = _keyed_children(f, kp, tp)
    if (kp == _K_TUPLE or kp == _K_LIST) and len(p_children) != len(f_children):
      return (f"pytree structure error: different lengths of {tp.__name__} at "
              f"key path\n    {where}\n"
              f"At that key path, the prefix pytree {name} has a subtree of "
              f"type {tp.__name__} of length {len(p_children)}, but the full "
              f"pytree has a subtree of the same type but of length "
              f"{len(f_children)}.")
    if len(p_children) != len(f_children):
      pk = [_key_simple_str(k) for k in p_keys]
      fk = [_key_simple_str(k) for k in f_keys]
      diff = [k for k in pk if k not in fk] + [k for k in fk if k not in pk]
      return (f"pytree structure error: different numbers of pytree children "
              f"at key path\n    {where}\n"
              f"At that key path, the prefix pytree {name} has a subtree of "
              f"type\n    {tp}\nwith {len(pk)} child keys\n    {' '.join(pk)}\n"
              f"but at the same key path the full pytree has a subtree of the "
              f"same type but with {len(fk)} child keys\n    {' '.join(fk)}\n"
              f"so the symmetric difference on key sets is\n"
              f"    {' '.join(diff)}")
    if _aux_differs(p_aux, f_aux):
      pa, fa = str(p_aux), str(f_aux)
      diff = "\n".join("    " + line for line in difflib.ndiff([pa], [fa]))
      return (f"pytree structure error: different pytree metadata at key "
              f"path\n    {where}\n"
              f"At that key path, the prefix pytree {name} has a subtree of "
              f"type\n    {tp}\nwith metadata\n    {pa}\n"
              f"but at the same key path the full pytree has a subtree of the "
              f"same type but with metadata\n    {fa}\n"
              f"so the diff in the metadata at these pytree nodes is\n{diff}")
    for key, pc, fc in zip(p_keys, p_children, f_children):
      err = go(pc, fc, path + (key,))
      if err is not None:
        return err
    return None

  try:
    return go(prefix, full, ())
  except Exception:  # a misbehaving flatten function: keep the plain message
    return None
