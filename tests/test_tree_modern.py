"""Today's pytree and typing surface: `jax.tree`, key paths, dataclass and
static registration, structure errors, `jax.typing`, `jax.Device`,
`jax.typeof` and `jax.flatten_util.ravel_pytree`.

Expected error messages are JAX 0.10.2's wording (checked against it by hand).
"""
import collections
import dataclasses
import pickle
import typing

import numpy as np
import pytest

import tracejax
import tracejax.numpy as jnp
from tracejax import tree_util as tu
from tracejax._src.test_util import check_grads
from tracejax.flatten_util import ravel_pytree
import tracejax.tree as jtree
import tracejax.typing as jtyping

Point = collections.namedtuple("Point", ["x", "y"])
Other = collections.namedtuple("Other", ["x", "y"])


class Node:
  """A custom node with aux data `meta`; 'three' gives it a third child."""

  def __init__(self, a, b, meta="m"):
    self.a, self.b, self.meta = a, b, meta

  def __repr__(self):
    return f"Node({self.a},{self.b},{self.meta})"


tu.register_pytree_node(
    Node,
    lambda n: ((n.a, n.b, 0) if n.meta == "three" else (n.a, n.b), n.meta),
    lambda meta, ch: Node(ch[0], ch[1], meta))


class Keyed:
  """Registered with keys: its children are named `.left` and `.right`."""

  def __init__(self, left, right):
    self.left, self.right = left, right

  def __eq__(self, other):
    return (type(other) is Keyed and self.left == other.left
            and self.right == other.right)


tu.register_pytree_with_keys(
    Keyed,
    lambda k: (((tu.GetAttrKey("left"), k.left),
                (tu.GetAttrKey("right"), k.right)), None),
    lambda _, ch: Keyed(*ch))


@tu.register_pytree_with_keys_class
class KeyedClass:
  def __init__(self, items):
    self.items = dict(items)

  def tree_flatten_with_keys(self):
    keys = sorted(self.items)
    return [(tu.DictKey(k), self.items[k]) for k in keys], tuple(keys)

  @classmethod
  def tree_unflatten(cls, keys, children):
    return cls(zip(keys, children))


@tu.register_dataclass
@dataclasses.dataclass
class Params:
  w: object
  b: object
  act: str = dataclasses.field(default="relu", metadata=dict(static=True))


@tu.register_dataclass
@dataclasses.dataclass(frozen=True)
class Frozen:
  x: object
  n: int = jtree.static(default=3)


@tu.register_static
class StaticCfg:
  def __init__(self, scale):
    self.scale = scale

  def __eq__(self, other):
    return isinstance(other, StaticCfg) and other.scale == self.scale

  def __hash__(self):
    return hash(self.scale)


# ---------------------------------------------------------------------------
# jax.tree
# ---------------------------------------------------------------------------

def test_tree_module_basics():
  tree = {"b": [1, (2, None)], "a": Point(3, 4)}
  leaves, treedef = jtree.flatten(tree)
  assert leaves == [3, 4, 1, 2]  # dict keys sorted
  assert jtree.leaves(tree) == leaves
  assert jtree.structure(tree) == treedef
  assert jtree.unflatten(treedef, [5, 6, 7, 8]) == {
      "a": Point(5, 6), "b": [7, (8, None)]}
  assert jtree.map(lambda x, y: x * y, tree, tree) == {
      "a": Point(9, 16), "b": [1, (4, None)]}
  assert jtree.map(lambda x: len(x), [(1, 2), (3,)],
                   is_leaf=lambda x: isinstance(x, tuple)) == [2, 1]
  assert jtree.structure([(1, 2)], is_leaf=lambda x: isinstance(x, tuple)) \
      == jtree.structure([0])
  assert jtree.leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple)) == [
      (1, 2)]


def test_tree_reduce_all_transpose():
  assert jtree.reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)}) == 6
  assert jtree.reduce(lambda a, b: a + b, [1, 2], 10) == 13
  assert jtree.reduce(lambda a, b: a + b, [1, 2], initializer=10) == 13
  assert jtree.reduce(lambda a, b: a + b, [[1], [2]],
                      is_leaf=lambda x: isinstance(x, list) and len(x) == 1
                      ) == [1, 2]
  with pytest.raises(TypeError):
    jtree.reduce(lambda a, b: a + b, [])
  assert not jtree.all([1, (0,)])
  assert jtree.all([1, (0,)], is_leaf=lambda x: isinstance(x, tuple))
  outer, inner = jtree.structure([0, 0]), jtree.structure((0, {"k": 0}))
  assert jtree.transpose(outer, inner, [(1, {"k": 2}), (3, {"k": 4})]) == (
      [1, 3], {"k": [2, 4]})


def test_reduce_associative():
  assert jtree.reduce_associative(lambda a, b: a + b, [1, (2, 3), {"x": 4}]) \
      == 10
  # The combination is a balanced tree: ((1 2) (3 4)) 5.
  assert jtree.reduce_associative(lambda a, b: f"({a} {b})", list("12345")) \
      == "(((1 2) (3 4)) 5)"
  assert tu.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
  with pytest.raises(TypeError, match="Must specify identity"):
    tu.tree_reduce_associative(lambda a, b: a + b, [])


def test_broadcast():
  full = [(3, 4), {"a": [5, 6], "b": 7}]
  assert jtree.broadcast([1, 2], full) == [(1, 1), {"a": [2, 2], "b": 2}]
  assert tu.tree_broadcast(1, {"a": [1, 2]}) == {"a": [1, 1]}
  assert jtree.broadcast([None, 2], [(3, 4), 5],
                         is_leaf=lambda x: x is None) == [(None, None), 2]
  with pytest.raises(ValueError, match=(
      r"different lengths of tuple at key path\n    broadcast_prefix "
      r"prefix_tree\n")):
    jtree.broadcast((1, 2), (1, 2, 3))


def test_with_path_functions():
  tree = {"b": [1, (2, None)], "a": Point(3, 4),
          "c": collections.OrderedDict([("z", 5), ("y", 6)]),
          "d": collections.defaultdict(list, {2: 7, 1: 8})}
  path_leaves, treedef = jtree.flatten_with_path(tree)
  assert treedef == jtree.structure(tree)
  assert [x for _, x in path_leaves] == jtree.leaves(tree)
  assert [tu.keystr(p) for p, _ in path_leaves] == [
      "['a'].x", "['a'].y", "['b'][0]", "['b'][1][0]", "['c']['z']",
      "['c']['y']", "['d'][1]", "['d'][2]"]
  assert path_leaves[0][0] == (tu.DictKey("a"), tu.GetAttrKey("x"))
  assert jtree.leaves_with_path(tree) == path_leaves
  out = jtree.map_with_path(lambda p, x: tu.keystr(p, simple=True,
                                                   separator="/"), tree)
  assert out["b"] == ["b/0", ("b/1/0", None)] and out["a"] == Point("a/x",
                                                                     "a/y")
  # is_leaf, with and without the path.
  pl = jtree.leaves_with_path((1, [2]), is_leaf=lambda p, x: x == [2],
                              is_leaf_takes_path=True)
  assert pl == [((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1),), [2])]
  assert jtree.leaves_with_path((1, [2]), is_leaf=lambda x: x == [2]) == pl
  out = jtree.map_with_path(lambda p, x, y: (len(p), x + y), (1, [2]),
                            (10, [20]))
  assert out == ((1, 11), [(2, 22)])


def test_paths_of_custom_nodes():
  pl = tu.tree_leaves_with_path([Node(1, 2), Keyed(3, 4),
                                 KeyedClass({"q": 5, "p": 6})])
  assert [tu.keystr(p) for p, _ in pl] == [
      "[0][<flat index 0>]", "[0][<flat index 1>]", "[1].left", "[1].right",
      "[2]['p']", "[2]['q']"]
  assert [x for _, x in pl] == [1, 2, 3, 4, 6, 5]
  assert tu.tree_map(lambda x: x * 10, Keyed(1, 2)) == Keyed(10, 20)
  p = tu.Partial(max, 1, key=2)
  assert [tu.keystr(path) for path, _ in tu.tree_leaves_with_path(p)] == [
      "[<flat index 0>][0]", "[<flat index 1>]['key']"]


def test_key_entries():
  keys = [tu.SequenceKey(0), tu.DictKey("a"), tu.GetAttrKey("x"),
          tu.FlattenedIndexKey(3)]
  assert [repr(k) for k in keys] == [
      "SequenceKey(idx=0)", "DictKey(key='a')", "GetAttrKey(name='x')",
      "FlattenedIndexKey(key=3)"]
  assert [str(k) for k in keys] == ["[0]", "['a']", ".x", "[<flat index 3>]"]
  assert tu.keystr(keys) == "[0]['a'].x[<flat index 3>]"
  assert tu.keystr(keys, simple=True, separator="/") == "0/a/x/3"
  assert tu.keystr(()) == ""
  for k in keys:
    assert pickle.loads(pickle.dumps(k)) == k
    assert hash(type(k)(*[getattr(k, a) for a in k.__match_args__])) == hash(k)
  assert tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
  assert tu.SequenceKey(np.int32(2)).idx == 2
  with pytest.raises(TypeError, match="idx must be an int"):
    tu.SequenceKey("a")
  with pytest.raises(TypeError, match="name must be a str"):
    tu.GetAttrKey(1)
  with pytest.raises(TypeError):
    tu.SequenceKey(0) < tu.SequenceKey(1)  # noqa: B015  (no ordering)


# ---------------------------------------------------------------------------
# register_dataclass, register_static, Partial
# ---------------------------------------------------------------------------

def test_register_dataclass_decorator():
  p = Params(1.0, 2.0)
  leaves, treedef = tu.tree_flatten(p)
  assert leaves == [1.0, 2.0]
  assert treedef.node_data() == (Params, ("relu",))
  assert treedef.unflatten([3.0, 4.0]) == Params(3.0, 4.0)
  assert tu.tree_structure(Params(1, 2, "tanh")) != treedef
  assert [tu.keystr(q) for q, _ in tu.tree_leaves_with_path(p)] == [".w",
                                                                    ".b"]
  assert tu.tree_map(lambda v: v + 1, Frozen(1)) == Frozen(2)
  assert tu.tree_leaves(Frozen(1, n=5)) == [1]


def test_register_dataclass_under_transformations():
  def loss(p, x):
    y = p.w * x + p.b
    return jnp.sum(jnp.tanh(y) if p.act == "tanh" else y ** 2)

  p = Params(jnp.array([1.0, 2.0]), jnp.array(0.5), "tanh")
  x = jnp.array([0.3, -0.2])
  g = tracejax.grad(loss)(p, x)
  assert isinstance(g, Params) and g.act == "tanh"
  t = np.tanh(np.array([1.0, 2.0]) * np.array([0.3, -0.2]) + 0.5)
  np.testing.assert_allclose(g.w, (1 - t ** 2) * np.array([0.3, -0.2]),
                             rtol=1e-5)
  np.testing.assert_allclose(g.b, np.sum(1 - t ** 2), rtol=1e-5)
  jitted = tracejax.jit(loss)
  np.testing.assert_allclose(jitted(p, x), loss(p, x), rtol=1e-6)
  # The static field takes part in the cache key: a new value retraces.
  np.testing.assert_allclose(jitted(Params(p.w, p.b, "sq"), x),
                             np.sum((np.array([0.3, -0.4]) + 0.5) ** 2),
                             rtol=1e-6)
  out = tracejax.vmap(lambda q: q.w * 2)(Params(jnp.ones((3, 2)),
                                                jnp.zeros(3)))
  assert out.shape == (3, 2)


def test_register_dataclass_explicit_fields_and_errors():
  @dataclasses.dataclass
  class B:
    x: object
    y: object
    z: int = dataclasses.field(default=0, init=False)

  assert tu.register_dataclass(B, data_fields=["x"], meta_fields=["y"],
                               drop_fields=["z"]) is B
  assert tu.tree_leaves(B(1, 2)) == [1]
  assert tu.tree_structure(B(1, 2)).unflatten([5]) == B(5, 2)

  class Plain:
    def __init__(self, x, y):
      self.x, self.y = x, y

  tu.register_dataclass(Plain, data_fields=["x"], meta_fields=["y"])
  out = tu.tree_map(lambda v: v * 2, Plain(3, "s"))
  assert (out.x, out.y) == (6, "s")

  @dataclasses.dataclass
  class C:
    x: object
    y: object

  with pytest.raises(ValueError, match=(
      r"^data_fields and meta_fields must include all dataclass fields with "
      r"``init=True`` and only them. Missing fields: \{'y'\}. Add them to "
      r"drop_fields to suppress this error. Unexpected fields: \{'q'\}.$")):
    tu.register_dataclass(C, data_fields=["x", "q"], meta_fields=[])
  with pytest.raises(ValueError, match="must not overlap. Overlapping fields"):
    tu.register_dataclass(C, data_fields=["x"], meta_fields=["x", "y"])
  with pytest.raises(TypeError, match="must both be specified"):
    tu.register_dataclass(C, data_fields=["x"])

  class NotDC:
    pass

  with pytest.raises(TypeError, match="required when nodetype is not a "
                                      "dataclass"):
    tu.register_dataclass(NotDC)
  with pytest.raises(ValueError, match="Duplicate custom dataclass"):
    tu.register_dataclass(Params)


def test_register_static():
  cfg = StaticCfg(3.0)
  leaves, treedef = tu.tree_flatten([cfg, 1.0])
  assert leaves == [1.0]
  assert treedef.unflatten([2.0])[0] is cfg
  assert tu.tree_structure(StaticCfg(3.0)) == tu.tree_structure(cfg)
  assert tu.tree_structure(StaticCfg(4.0)) != tu.tree_structure(cfg)
  assert tu.tree_structure(cfg).node_data() == (StaticCfg, cfg)
  traces = []

  @tracejax.jit
  def f(c, x):
    traces.append(1)
    return x * c.scale

  np.testing.assert_allclose(f(cfg, jnp.ones(2)), [3.0, 3.0])
  np.testing.assert_allclose(f(StaticCfg(3.0), jnp.ones(2)), [3.0, 3.0])
  np.testing.assert_allclose(f(StaticCfg(5.0), jnp.ones(2)), [5.0, 5.0])
  assert len(traces) == 2


def test_partial():
  p = tu.Partial(lambda a, b: a * b, jnp.array(3.0))
  assert tu.tree_leaves(p)[0] is p.args[0]
  np.testing.assert_allclose(tracejax.jit(lambda q, x: q(x))(p, 2.0), 6.0)
  g = tracejax.grad(lambda q: q(2.0))(p)
  assert isinstance(g, tu.Partial)
  np.testing.assert_allclose(g.args[0], 2.0)
  # Equality and hashing are functools.partial's: by identity.
  q = tu.Partial(max, 1)
  assert q == q and q != tu.Partial(max, 1) and hash(q) == hash(q)
  assert tu.tree_structure(q) == tu.tree_structure(tu.Partial(max, 2))


# ---------------------------------------------------------------------------
# Structure errors (JAX 0.10.2's wording).
# ---------------------------------------------------------------------------

_TYPES = ("pytree structure error: different types at key path\n    {path}\n"
          "At that key path, the prefix pytree {name} has a subtree of type\n"
          "    {a}\nbut at the same key path the full pytree has a subtree of "
          "different type\n    {b}.")


@pytest.mark.parametrize("prefix, full, expected", [
    ((1, 2), [1, 2], _TYPES.format(path="tree_map tree", name="tree_map tree",
                                   a="<class 'tuple'>", b="<class 'list'>")),
    ([1, {"a": (1, 2)}], [1, {"a": [1, 2]}],
     _TYPES.format(path="tree_map tree[1]['a']", name="tree_map tree",
                   a="<class 'tuple'>", b="<class 'list'>")),
    ((1, None), (1, 2), _TYPES.format(
        path="tree_map tree[1]", name="tree_map tree",
        a="<class 'NoneType'>", b="<class 'int'>")),
    (Point(1, 2), Other(1, 2), _TYPES.format(
        path="tree_map tree", name="tree_map tree", a=repr(Point),
        b=repr(Other))),
    ([Params(1, (2, 3))], [Params(1, (2,))],
     "pytree structure error: different lengths of tuple at key path\n"
     "    tree_map tree[0].b\nAt that key path, the prefix pytree tree_map "
     "tree has a subtree of type tuple of length 2, but the full pytree has a "
     "subtree of the same type but of length 1."),
    ({"a": 1}, {"a": 1, "b": 2},
     "pytree structure error: different numbers of pytree children at key "
     "path\n    tree_map tree\nAt that key path, the prefix pytree tree_map "
     "tree has a subtree of type\n    <class 'dict'>\nwith 1 child keys\n"
     "    a\nbut at the same key path the full pytree has a subtree of the "
     "same type but with 2 child keys\n    a b\nso the symmetric difference "
     "on key sets is\n    b"),
    (Node(1, 2), Node(1, 2, "x"),
     "pytree structure error: different pytree metadata at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has "
     "a subtree of type\n    " + repr(Node) + "\nwith metadata\n    m\nbut at "
     "the same key path the full pytree has a subtree of the same type but "
     "with metadata\n    x\nso the diff in the metadata at these pytree nodes "
     "is\n    - m\n    + x"),
    ({"a": 1}, {"b": 1},
     "pytree structure error: different pytree metadata at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has "
     "a subtree of type\n    <class 'dict'>\nwith metadata\n    ('a',)\nbut "
     "at the same key path the full pytree has a subtree of the same type but "
     "with metadata\n    ('b',)\nso the diff in the metadata at these pytree "
     "nodes is\n    - ('a',)\n    ?   ^\n\n    + ('b',)\n    ?   ^\n"),
])
def test_tree_map_structure_errors(prefix, full, expected):
  with pytest.raises(ValueError) as e:
    jtree.map(lambda *xs: 0, prefix, full)
  assert str(e.value).startswith(expected + "\n"), str(e.value)
  # The mismatch is found whichever of the rest trees holds it.
  with pytest.raises(ValueError) as e:
    jtree.map(lambda *xs: 0, prefix, prefix, full)
  assert str(e.value).startswith(expected + "\n")


def test_tree_map_with_path_error_name():
  with pytest.raises(ValueError, match=r"at key path\n    tree_map_with_path "
                                       r"tree\n"):
    tu.tree_map_with_path(lambda *xs: 0, (1, 2), (1, 2, 3))


@pytest.mark.parametrize("prefix, full, expected", [
    ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
    ((1, 2), [1, 2], "Expected tuple, got [1, 2]."),
    ({"a": 1}, [1], "Expected dict, got [1]."),
    ({"a": 1}, {"b": 1},
     "Dict key mismatch; expected keys: ['a']; present keys: ['b']."),
    (Point(1, 2), (1, 2), "Expected named tuple, got (1, 2)."),
    (Point(1, 2), Other(1, 2), f"Named tuple type mismatch: expected type: "
                               f"{Point!r}, tuple: Other(x=1, y=2)."),
    (collections.OrderedDict(a=1), {"a": 1},
     "Custom node type mismatch: expected type: <class "
     "'collections.OrderedDict'>, value: {'a': 1}."),
    (collections.defaultdict(list, a=1), collections.defaultdict(dict, a=1),
     "Mismatch custom node data: (<class 'list'>, ('a',)) != (<class 'dict'>, "
     "('a',)); value: defaultdict(<class 'dict'>, {'a': 1})."),
    (Node(1, 2), Node(1, 2, "three"),
     "Mismatch custom node data: 'm' != 'three'; value: Node(1,2,three)."),
    (Params(1, 2), Params(1, 2, "q"),
     "Mismatch custom dataclass node data: ('relu',) != ('q',); value: "
     "Params(w=1, b=2, act='q')."),
    (None, 1, "Expected None, got 1.\n\nIn previous releases of JAX, "
              "flatten-up-to used to consider None to be a tree-prefix of "
              "non-None values."),
])
def test_flatten_up_to_errors(prefix, full, expected):
  with pytest.raises(ValueError) as e:
    tu.tree_structure(prefix).flatten_up_to(full)
  assert str(e.value).startswith(expected)


# ---------------------------------------------------------------------------
# PyTreeDef and structure helpers.
# ---------------------------------------------------------------------------

def test_treedef_methods():
  tree = {"b": (1, [2, 3]), "a": None}
  td = tu.tree_structure(tree)
  assert (td.num_leaves, td.num_nodes) == (3, 7)
  assert td.node_data() == (dict, ["a", "b"])
  kids = td.children()
  assert kids == [tu.tree_structure(None), tu.tree_structure((1, [2, 3]))]
  assert tu.treedef_children(td) == kids
  rebuilt = tu.PyTreeDef.from_node_data_and_children(
      tu.default_registry, td.node_data(), kids)
  assert rebuilt == td and hash(rebuilt) == hash(td)
  for t in [Point(1, 2), collections.OrderedDict(b=1, a=2), Node(1, 2),
            Params(1, 2), (1,)]:
    d = tu.tree_structure(t)
    assert tu.PyTreeDef.from_node_data_and_children(
        tu.default_registry, d.node_data(), d.children()) == d
  assert tu.tree_structure(5).node_data() is None
  assert td.walk(lambda xs, aux: (aux, xs), lambda x: x * 10, [1, 2, 3]) == (
      ["a", "b"], ((None, ()), (None, (10, (None, (20, 30))))))
  assert td.flatten_up_to({"a": None, "b": ("x", [(1,), {}])}) == [
      "x", (1,), {}]
  assert pickle.loads(pickle.dumps(td)) == td
  assert tu.treedef_is_leaf(tu.tree_structure(None))
  assert tu.treedef_is_leaf(tu.tree_structure(1))
  assert not tu.treedef_is_leaf(td)
  assert tu.treedef_tuple([tu.tree_structure(1), td]) == tu.tree_structure(
      (1, tree))
  assert td != 1


def test_one_level_and_node_queries():
  assert tu.flatten_one_level({"b": 1, "a": [2]}) == (([2], 1), ("a", "b"))
  assert tu.flatten_one_level(Point(1, 2)) == ([1, 2], Point)
  assert tu.flatten_one_level(None) == ((), None)
  assert tu.flatten_one_level(Node(1, 2)) == ((1, 2), "m")
  with pytest.raises(ValueError, match="can't tree-flatten type: <class "
                                       "'int'>"):
    tu.flatten_one_level(3)
  assert tu.flatten_one_level_with_keys(Point(1, 2)) == (
      ((tu.GetAttrKey("x"), 1), (tu.GetAttrKey("y"), 2)), Point)
  assert [tu.is_tree_node(t) for t in (tuple, list, dict, type(None), Point,
                                       collections.OrderedDict, tu.Partial,
                                       Params, int, np.ndarray)] == [
      True] * 8 + [False, False]
  assert tu.all_leaves([1, np.ones(2)]) and not tu.all_leaves([1, None])
  assert not tu.all_leaves([1, (2,)])
  reg = tu.default_registry
  assert reg.flatten({"a": 1}) == tu.tree_flatten({"a": 1})
  assert reg.flatten_one_level(3) is None


def test_dict_keys_sorted_and_containers():
  tree = {"b": 1, "a": 2, "c": {"z": 3, "y": 4}}
  assert tu.tree_leaves(tree) == [2, 1, 4, 3]
  od = collections.OrderedDict([("b", 1), ("a", 2)])
  assert tu.tree_leaves(od) == [1, 2]  # insertion order
  dd = collections.defaultdict(list, {"b": 1, "a": 2})
  out = tu.tree_map(lambda x: x, dd)
  assert type(out) is collections.defaultdict and out.default_factory is list
  assert tu.tree_leaves([None, (None,)]) == []
  assert tu.tree_map(lambda x, y: (x, y), [1, 3], [2, None]) == [(1, 2),
                                                                 (3, None)]


# ---------------------------------------------------------------------------
# jax.typing, jax.Device, jax.typeof
# ---------------------------------------------------------------------------

def test_typing_and_device():
  for v in (jnp.ones(2), np.ones(2), np.float32(1), np.bool_(True), True, 1,
            1.0, 1j):
    assert isinstance(v, jtyping.ArrayLike)
  assert not isinstance("a", jtyping.ArrayLike)
  assert not isinstance([1.0], jtyping.ArrayLike)
  # DTypeLike holds `type[Any]`, which isinstance cannot check (as in JAX):
  # check its members instead.
  from tracejax._src.typing import SupportsDType
  members = typing.get_args(jtyping.DTypeLike)
  assert str in members and np.dtype in members and SupportsDType in members
  assert isinstance(jnp.ones(1), SupportsDType)
  assert isinstance(tracejax.ShapeDtypeStruct((1,), np.int8), SupportsDType)
  assert not isinstance(1.0, SupportsDType)
  assert isinstance(tracejax.devices()[0], tracejax.Device)
  assert isinstance(jnp.ones(1).devices().pop(), tracejax.Device)


def test_typeof():
  from tracejax._src.core.avals import ShapedArray
  assert tracejax.typeof(jnp.ones(3)) == ShapedArray((3,), np.float32)
  assert tracejax.typeof(1.0) == ShapedArray((), np.float32, weak_type=True)
  assert tracejax.typeof(1) == ShapedArray((), np.int32, weak_type=True)
  assert tracejax.typeof(True) == ShapedArray((), np.bool_)
  assert tracejax.typeof(np.ones((2, 3), np.int8)) == ShapedArray((2, 3),
                                                                  np.int8)
  assert tracejax.typeof(np.float64(1)) == ShapedArray((), np.float32)
  assert tracejax.typeof(tracejax.ShapeDtypeStruct((2,), np.float32)) == \
      ShapedArray((2,), np.float32)
  assert tracejax.typeof(jnp.ones(3)).shape == (3,)
  seen = []

  def f(x):
    seen.append(tracejax.typeof(x))
    return x * 2

  tracejax.jit(f)(jnp.ones((2, 2)))
  tracejax.vmap(f)(jnp.ones((4, 3)))
  tracejax.grad(lambda x: f(x).sum())(jnp.ones(5))
  assert seen == [ShapedArray((2, 2), np.float32),
                  ShapedArray((3,), np.float32),
                  ShapedArray((5,), np.float32)]
  for bad in ([1.0], "a", None):
    with pytest.raises(TypeError, match="is not a valid JAX type"):
      tracejax.typeof(bad)


# ---------------------------------------------------------------------------
# ravel_pytree
# ---------------------------------------------------------------------------

def test_ravel_pytree_round_trip():
  rng = np.random.RandomState(0)
  tree = {"a": rng.randn(2, 3).astype(np.float32),
          "b": (np.arange(3, dtype=np.int32), np.float32(2.5)), "c": None}
  flat, unravel = ravel_pytree(tree)
  expected = np.concatenate([tree["a"].ravel(), np.arange(3.0), [2.5]])
  assert flat.dtype == np.float32 and flat.shape == (10,)
  np.testing.assert_allclose(flat, expected, rtol=1e-6)
  back = unravel(flat)
  assert tu.tree_structure(back) == tu.tree_structure(tree)
  np.testing.assert_allclose(back["a"], tree["a"], rtol=1e-6)
  assert back["b"][0].dtype == np.int32 and back["b"][1].shape == ()
  np.testing.assert_array_equal(back["b"][0], [0, 1, 2])
  # unravel casts back to each leaf's dtype (truncating toward zero).
  back = unravel(flat + 0.75)
  np.testing.assert_array_equal(back["b"][0], [0, 1, 2])
  np.testing.assert_allclose(back["b"][1], 3.25)
  # Equal unravel functions for equal structures (usable as static args).
  assert ravel_pytree(tree)[1] == unravel
  assert hash(ravel_pytree(tree)[1]) == hash(unravel)


def test_ravel_pytree_dtypes():
  flat, un = ravel_pytree([np.array([1, 2], np.int8), np.array([3], np.uint8)])
  assert flat.dtype == np.int16
  out = un(jnp.array([1, 2, 300], jnp.int16))
  assert out[1].dtype == np.uint8 and int(out[1][0]) == 44  # wraps as JAX
  assert ravel_pytree([True, np.array([1.5])])[0].dtype == np.float32
  assert ravel_pytree([jnp.ones(2, jnp.bfloat16),
                       jnp.ones(1, jnp.float16)])[0].dtype == np.float32
  flat, un = ravel_pytree([jnp.ones(2, jnp.complex64), jnp.ones(1)])
  assert flat.dtype == np.complex64
  out = un(jnp.array([1 + 1j, 2, 3 + 2j], jnp.complex64))
  assert out[1].dtype == np.float32 and float(out[1][0]) == 3.0
  # Weak types: kept when nothing is converted, as in JAX.
  assert ravel_pytree(3.0)[0].aval.weak_type
  assert ravel_pytree([1, 2])[0].aval.weak_type
  assert not ravel_pytree([1.0, 2])[0].aval.weak_type
  flat, un = ravel_pytree({})
  assert flat.shape == (0,) and flat.dtype == np.float32 and un(flat) == {}


def test_ravel_pytree_errors():
  _, un = ravel_pytree({"a": jnp.ones((2, 2)), "b": 1.0})
  with pytest.raises(ValueError, match=r"expected a flat array of shape "
                                       r"\(5,\), got an array of shape \(3,\)"):
    un(jnp.ones(3))
  with pytest.raises(TypeError, match="unravel function given array of dtype "
                                      "int32, but expected dtype float32"):
    un(jnp.ones(5, jnp.int32))
  assert un(jnp.ones((5, 1)))["a"].shape == (2, 2)


def test_ravel_pytree_x64(x64):
  flat, un = ravel_pytree([np.ones(2), 1])
  assert flat.dtype == np.float64
  assert ravel_pytree({})[0].dtype == np.float32
  assert un(flat)[1].dtype == np.int64


def test_ravel_pytree_transformations():
  tree = {"w": jnp.array([[1.0, -2.0], [0.5, 3.0]]), "b": jnp.array([0.1, 0.2])}
  flat, unravel = ravel_pytree(tree)

  def loss(v):
    t = unravel(v)
    return jnp.sum(jnp.sin(t["w"]) * t["b"]) + jnp.sum(t["b"] ** 3)

  check_grads(loss, (flat,), order=2, modes=("fwd", "rev"))
  check_grads(lambda t: jnp.sum(ravel_pytree(t)[0] ** 3), (tree,), order=2,
              modes=("fwd", "rev"))
  np.testing.assert_allclose(tracejax.jit(loss)(flat), loss(flat), rtol=1e-6)
  jitted_flat = tracejax.jit(lambda t: ravel_pytree(t)[0])(tree)
  np.testing.assert_allclose(jitted_flat, flat)
  batch = np.stack([np.asarray(flat) + i for i in range(3)])
  np.testing.assert_allclose(tracejax.vmap(loss)(batch),
                             [loss(b) for b in batch], rtol=1e-5)
  batched_tree = {"w": jnp.ones((3, 2, 2)), "b": jnp.arange(6.0).reshape(3, 2)}
  out = tracejax.vmap(lambda t: ravel_pytree(t)[0])(batched_tree)
  np.testing.assert_allclose(out, np.stack([
      np.concatenate([np.arange(2.0 * i, 2.0 * i + 2), np.ones(4)])
      for i in range(3)]))
  # Mixed dtypes: the integer leaves get no gradient.
  fm, um = ravel_pytree([jnp.array([1, 2], jnp.int32), jnp.array([0.5])])
  g = tracejax.grad(lambda v: jnp.sum(um(v)[1] ** 2) + jnp.sum(um(v)[0]))(fm)
  np.testing.assert_allclose(g, [0.0, 0.0, 1.0])
