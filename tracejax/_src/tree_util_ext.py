"""Today's pytree API on top of the core in `tree_util`.

One-level flattening, `is_tree_node`, `tree_broadcast`,
`tree_reduce_associative`, dataclass and static-type registration
(`register_dataclass`, `register_static`, `static_field` = `jax.tree.static`)
and `default_registry`.  Everything here is built from `tree_util`'s
registry and node helpers, so nodes registered either way behave the same
in `jit`, key paths and structure errors.
"""
import dataclasses

from tracejax._src.tree_util import (
    _BUILTIN_KINDS, _K_CUSTOM, _K_LEAF, _K_LIST, _K_NAMEDTUPLE, _kind_of,
    _dataclass_nodes, _keyed_children, _no_initializer, _node_children,
    _registry,
    GetAttrKey, broadcast_prefix, register_pytree_node, tree_flatten,
    tree_flatten_with_path, tree_leaves, tree_structure)

__all__ = [
    "flatten_one_level", "flatten_one_level_with_keys", "is_tree_node",
    "tree_broadcast", "tree_reduce_associative", "static_field",
    "register_dataclass", "register_static", "default_registry",
]


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
  """Expands `prefix_tree` to the structure of `full_tree`.

  Each leaf of `prefix_tree` is copied to every leaf of the matching subtree
  of `full_tree`.

  Args:
    prefix_tree: a pytree whose structure is a prefix of `full_tree`'s.
    full_tree: the pytree whose structure the result takes.
    is_leaf: optional predicate marking subtrees of `prefix_tree` as leaves.

  Example:
    >>> tree_broadcast([1, 2], [(3, 4), {"a": [5, 6], "b": 7}])
    [(1, 1), {'a': [2, 2], 'b': 2}]
  """
  return tree_structure(full_tree).unflatten(
      broadcast_prefix(prefix_tree, full_tree, is_leaf))


# ---------------------------------------------------------------------------
# One-level flattening, node queries, associative reduction.
# ---------------------------------------------------------------------------

def flatten_one_level(tree):
  """Splits the root node of `tree` into its children and aux data.

  Raises ValueError if `tree` is a leaf.  A namedtuple's aux data is its
  class.

  Example:
    >>> flatten_one_level({"b": 1, "a": [2]})
    (([2], 1), ('a', 'b'))
  """
  t = type(tree)
  k = _kind_of(t)
  if k == _K_LEAF:
    raise ValueError(f"can't tree-flatten type: {t}")
  if k == _K_CUSTOM:
    return _registry[t][0](tree)
  aux, children = _node_children(tree, k, t)
  if k == _K_NAMEDTUPLE:
    aux = t
  if k == _K_LIST or k == _K_NAMEDTUPLE:
    return children, aux
  return tuple(children), aux


def flatten_one_level_with_keys(tree):
  """Like `flatten_one_level`, with `(key, child)` pairs as children.

  Example:
    >>> flatten_one_level_with_keys([5, 6])
    (((SequenceKey(idx=0), 5), (SequenceKey(idx=1), 6)), None)
  """
  t = type(tree)
  k = _kind_of(t)
  if k == _K_LEAF:
    raise ValueError(f"can't tree-flatten type: {t}")
  aux, keys, children = _keyed_children(tree, k, t)
  if k == _K_NAMEDTUPLE:
    aux = t
  return tuple(zip(keys, children)), aux


def is_tree_node(typ):
  """True if instances of the type `typ` are pytree nodes (not leaves).

  Example:
    >>> is_tree_node(tuple), is_tree_node(int)
    (True, False)
  """
  if not isinstance(typ, type):
    raise TypeError(f"is_tree_node: typ must be a type, got {typ!r}.")
  return _kind_of(typ) != _K_LEAF


def tree_reduce_associative(operation, tree, *, identity=_no_initializer,
                            is_leaf=None):
  """Reduces the leaves of `tree` with an associative `operation`.

  The leaves are combined pairwise in a balanced tree (depth log2(n)),
  which is the same result as a left fold only because `operation` is
  associative.

  Args:
    operation: associative binary function.
    tree: the pytree to reduce.
    identity: value returned for a tree without leaves (required then).
    is_leaf: optional predicate marking subtrees as leaves.

  Example:
    >>> tree_reduce_associative(lambda a, b: a + b, [1, (2, 3), {"x": 4}])
    10
  """
  seq = tree_leaves(tree, is_leaf)
  if not seq:
    if identity is _no_initializer:
      raise TypeError(
          "Must specify identity for parallel reduction of empty sequence.")
    return identity
  while len(seq) > 1:
    pairs = [operation(seq[i], seq[i + 1]) for i in range(0, len(seq) - 1, 2)]
    if len(seq) % 2:
      pairs.append(seq[-1])
    seq = pairs
  return seq[0]


# ---------------------------------------------------------------------------
# Dataclasses and static types.
# ---------------------------------------------------------------------------

def static_field(**kwargs):
  """A `dataclasses.field` marked static for `register_dataclass`.

  Takes the arguments of `dataclasses.field`; `metadata` gets
  `static=True` added.  Exported as `jax.tree.static`.

  Example:
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...   x: object
    ...   name: str = static_field(default="add")
    >>> tree_leaves(Op(1.0))
    [1.0]
  """
  metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)


def register_dataclass(nodetype, data_fields=None, meta_fields=None,
                       drop_fields=()):
  """Registers a dataclass (or any class built from keyword fields) as a node.

  Data fields become children (with `GetAttrKey` paths); meta fields become
  aux data, so they take part in treedef equality and must be hashable.
  Unflattening calls `nodetype(**fields)`.

  Args:
    nodetype: the class.  Usable as a decorator (below `@dataclass`).
    data_fields: names of the child fields.  With `meta_fields` both None,
      `nodetype` must be a dataclass and its fields are split by their
      metadata: `dataclasses.field(metadata=dict(static=True))` fields are
      meta fields, the others data fields.
    meta_fields: names of the static fields.
    drop_fields: `init=True` dataclass fields to leave out of both lists.

  Returns:
    `nodetype`.

  Example:
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...   w: object
    ...   b: object
    ...   act: str = dataclasses.field(default="relu",
    ...                                metadata=dict(static=True))
    >>> tree_flatten(Params(1.0, 2.0))[0]
    [1.0, 2.0]
  """
  if not isinstance(nodetype, type):
    raise TypeError(f"register_dataclass: nodetype must be a class, got "
                    f"{nodetype!r}.")
  is_dc = dataclasses.is_dataclass(nodetype)
  if data_fields is None and meta_fields is None:
    if not is_dc:
      raise TypeError("register_dataclass: data_fields and meta_fields are "
                      "required when nodetype is not a dataclass. Got "
                      f"nodetype={nodetype!r}.")
    data_fields, meta_fields = [], []
    for field in dataclasses.fields(nodetype):
      static = field.metadata.get("static", False)
      (meta_fields if static else data_fields).append(field.name)
  elif data_fields is None or meta_fields is None:
    raise TypeError("register_dataclass: data_fields and meta_fields must "
                    "both be specified when either is specified. Got "
                    f"data_fields={data_fields!r} meta_fields={meta_fields!r}.")
  if isinstance(data_fields, str) or isinstance(meta_fields, str):
    raise TypeError("register_dataclass: data_fields and meta_fields must be "
                    "sequences of field names, not a string.")
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
  overlap = set(data_fields) & set(meta_fields)
  if overlap:
    raise ValueError("data_fields and meta_fields must not overlap. "
                     f"Overlapping fields: {overlap}.")
  if is_dc:
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
    init_fields.difference_update(drop_fields)
    given = set(data_fields) | set(meta_fields)
    if given != init_fields:
      msg = ("data_fields and meta_fields must include all dataclass fields "
             "with ``init=True`` and only them.")
      if init_fields - given:
        msg += (f" Missing fields: {init_fields - given}. Add them to "
                "drop_fields to suppress this error.")
      if given - init_fields:
        msg += f" Unexpected fields: {given - init_fields}."
      raise ValueError(msg)
  if nodetype in _registry or nodetype in _BUILTIN_KINDS:
    raise ValueError("Duplicate custom dataclass PyTreeDef type registration "
                     f"for {nodetype}.")

  def flatten(x):
    return ([getattr(x, n) for n in data_fields],
            tuple([getattr(x, n) for n in meta_fields]))

  def flatten_with_keys(x):
    return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
            tuple([getattr(x, n) for n in meta_fields]))

  def unflatten(meta, data):
    kwargs = dict(zip(meta_fields, meta))
    kwargs.update(zip(data_fields, data))
    return nodetype(**kwargs)

  register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
  _dataclass_nodes.add(nodetype)
  return nodetype


def register_static(cls):
  """Registers `cls` as a node without children: its instances are static.

  The whole instance becomes aux data, so two trees are equal in structure
  only if their instances compare equal, and `jit` treats them like static
  arguments (they must be hashable).  Usable as a decorator.

  Example:
    >>> @register_static
    ... class Config:
    ...   def __init__(self, n): self.n = n
    ...   def __eq__(self, o): return isinstance(o, Config) and o.n == self.n
    ...   def __hash__(self): return hash(self.n)
    >>> tree_leaves([Config(3), 1.0])
    [1.0]
  """
  if not isinstance(cls, type):
    raise TypeError(f"register_static: cls must be a class, got {cls!r}.")
  register_pytree_node(cls, lambda x: ((), x), lambda aux, _: aux,
                       lambda x: ((), x))
  return cls


# ---------------------------------------------------------------------------
# The registry object.
# ---------------------------------------------------------------------------

class _PyTreeRegistry:
  """The pytree registry as an object, as JAX exposes `default_registry`.

  tracejax has one registry; this object is a view of it (the functions of
  this module), for code that calls `default_registry.flatten(...)` or
  passes it to `PyTreeDef.from_node_data_and_children`.
  """

  def flatten(self, tree, leaf_predicate=None):
    """`tree_flatten(tree, is_leaf=leaf_predicate)`."""
    return tree_flatten(tree, leaf_predicate)

  def flatten_with_path(self, tree, leaf_predicate=None):
    """`tree_flatten_with_path(tree, is_leaf=leaf_predicate)`."""
    return tree_flatten_with_path(tree, leaf_predicate)

  def flatten_one_level(self, tree):
    """`flatten_one_level(tree)`, or None if `tree` is a leaf."""
    try:
      return flatten_one_level(tree)
    except ValueError:
      return None

  def flatten_one_level_with_keys(self, tree):
    """`flatten_one_level_with_keys(tree)`, or None if `tree` is a leaf."""
    try:
      return flatten_one_level_with_keys(tree)
    except ValueError:
      return None

  def is_node(self, typ):
    """`is_tree_node(typ)`."""
    return is_tree_node(typ)

  def register_node(self, nodetype, to_iterable, from_iterable,
                    to_iterable_with_keys=None):
    """`register_pytree_node(nodetype, to_iterable, from_iterable, ...)`."""
    register_pytree_node(nodetype, to_iterable, from_iterable,
                         to_iterable_with_keys)

  def register_dataclass_node(self, nodetype, data_fields, meta_fields):
    """`register_dataclass(nodetype, data_fields, meta_fields)`."""
    register_dataclass(nodetype, data_fields, meta_fields)

  def __repr__(self):
    return "<tracejax pytree registry>"


default_registry = _PyTreeRegistry()
