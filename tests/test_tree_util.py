"""Tests for tracejax.tree_util (pytree flattening, structures and maps)."""
import re
import collections
import functools
import pickle

import numpy as np
import pytest

from tracejax import tree_util
from tracejax.tree_util import (
    Partial, PyTreeDef, all_leaves, build_tree, keystr, tree_all,
    tree_flatten, tree_flatten_with_path, tree_leaves, tree_map,
    tree_map_with_path, tree_multimap, tree_reduce, tree_structure,
    tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf,
    treedef_tuple)

Point = collections.namedtuple("Point", ["x", "y"])
ATuple = collections.namedtuple("ATuple", ["foo", "bar"])
AnotherTuple = collections.namedtuple("AnotherTuple", ["foo", "bar"])


class RegisteredSpecial:
  """A custom node registered with register_pytree_node."""

  def __init__(self, x, y):
    self.x, self.y = x, y

  def __eq__(self, other):
    return (type(other) is RegisteredSpecial
            and self.x == other.x and self.y == other.y)

  def __repr__(self):
    return f"RegisteredSpecial(x={self.x!r}, y={self.y!r})"


tree_util.register_pytree_node(
    RegisteredSpecial,
    lambda s: ((s.x, s.y), None),
    lambda aux, children: RegisteredSpecial(*children))


@tree_util.register_pytree_node_class
class Special:
  """A custom node registered as a class, with static aux data `name`."""

  def __init__(self, x, y, name="s"):
    self.x, self.y, self.name = x, y, name

  def tree_flatten(self):
    return (self.x, self.y), self.name

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children, name=aux)

  def __eq__(self, other):
    return (type(other) is Special and self.x == other.x
            and self.y == other.y and self.name == other.name)

  def __repr__(self):
    return f"Special({self.x!r}, {self.y!r}, name={self.name!r})"


class AnObject:
  """An unregistered class: a leaf."""

  def __init__(self, v):
    self.v = v


class ListSubclass(list):
  pass


# Pytrees for round-trip tests; each must compare equal after a round trip.
TREES = [
    (),
    (1,),
    ((),),
    [],
    [1, 2],
    {},
    {"a": 1},
    None,
    (None,),
    [None, 1, (None,)],
    1.,
    ((1, "foo"), [0.3]),
    {"b": 2., "a": 1., "c": (3., [4.])},
    Point(1., 2.),
    Point(Point(1, 2), (3, 4)),
    collections.OrderedDict([("foo", 34), ("baz", 101), ("something", -42)]),
    collections.defaultdict(dict, [("foo", 34), ("baz", 101)]),
    RegisteredSpecial(1, (2, 3)),
    Special(1, [2, {"z": 3}], name="n"),
    [RegisteredSpecial(Point(1, None), Special(2, 3))],
    AnObject(3),
    ListSubclass([1, 2]),
]


# ---------------------------------------------------------------------------
# Seed oracle: JAX documentation (2020).
# ---------------------------------------------------------------------------

def test_seed_list_of_tuple():
  flat, tree = tree_flatten([1., (2., 3.)])
  assert flat == [1.0, 2.0, 3.0]
  assert repr(tree) == "PyTreeDef(list, [*,PyTreeDef(tuple, [*,*])])"
  assert str(tree) == repr(tree)


def test_seed_dict_sorted():
  flat, tree = tree_flatten((1., {"b": 2., "a": 3.}))
  assert flat == [1.0, 3.0, 2.0]
  assert repr(tree) == (
      "PyTreeDef(tuple, [*,PyTreeDef(dict[['a', 'b']], [*,*])])")
  out = tree_unflatten(tree, flat)
  assert out == (1.0, {"a": 3.0, "b": 2.0})
  # The dict is rebuilt in sorted key order.
  assert list(out[1]) == ["a", "b"]


def test_seed_none():
  flat, tree = tree_flatten(None)
  assert flat == []
  assert repr(tree) == "PyTreeDef(None, [])"
  assert tree_unflatten(tree, []) is None


def test_seed_leaf():
  flat, tree = tree_flatten(1.)
  assert flat == [1.0]
  assert repr(tree) == "*"


def test_seed_namedtuple():
  flat, tree = tree_flatten(Point(1., 2.))
  assert flat == [1.0, 2.0]
  assert repr(tree) == f"PyTreeDef(namedtuple[{Point!r}], [*,*])"


def test_repr_registered_class():
  _, tree = tree_flatten(RegisteredSpecial(1., 2.))
  assert repr(tree) == f"PyTreeDef({RegisteredSpecial!r}[None], [*,*])"
  _, tree = tree_flatten(Special(1., 2., name="abc"))
  assert repr(tree) == f"PyTreeDef({Special!r}['abc'], [*,*])"


# ---------------------------------------------------------------------------
# Round trips and structure queries.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("tree", TREES, ids=lambda t: re.sub(r" at 0x[0-9a-f]+", "", repr(t)))
def test_round_trip(tree):
  leaves, treedef = tree_flatten(tree)
  assert isinstance(treedef, PyTreeDef)
  out = tree_unflatten(treedef, leaves)
  if isinstance(tree, AnObject):
    assert out is tree
  else:
    assert out == tree
    assert type(out) is type(tree)
  assert treedef.num_leaves == len(leaves)
  assert tree_leaves(tree) == leaves
  assert tree_structure(tree) == treedef
  # Unflatten accepts any iterable of leaves.
  assert tree_structure(treedef.unflatten(iter(leaves))) == treedef


def test_round_trip_keeps_container_types():
  od = collections.OrderedDict([("b", 1), ("a", 2)])
  leaves, treedef = tree_flatten(od)
  assert leaves == [1, 2]  # insertion order, not sorted
  out = treedef.unflatten(leaves)
  assert type(out) is collections.OrderedDict and list(out) == ["b", "a"]

  dd = collections.defaultdict(list, {"b": 1, "a": 2})
  leaves, treedef = tree_flatten(dd)
  assert leaves == [2, 1]  # sorted keys, like dict
  out = treedef.unflatten(leaves)
  assert type(out) is collections.defaultdict
  assert out.default_factory is list and out == dd

  p = Point(1, (2, 3))
  out = tree_structure(p).unflatten([4, 5, 6])
  assert type(out) is Point and out == Point(4, (5, 6))


def test_leaves_types():
  x = np.arange(3)
  obj = AnObject(1)
  leaves = tree_leaves([x, obj, 1, 2.5, "s", None, ListSubclass([7])])
  assert leaves[0] is x and leaves[1] is obj
  assert leaves[2:5] == [1, 2.5, "s"]
  assert leaves[5] == [7] and type(leaves[5]) is ListSubclass


def test_none_is_node_without_leaves():
  assert tree_leaves([None, None, {"a": None}]) == []
  assert tree_map(lambda x: x + 1, [None, 1]) == [None, 2]
  assert tree_structure([None]) != tree_structure([1])


def test_num_nodes_and_children():
  treedef = tree_structure([1., (2., 3.)])
  assert treedef.num_leaves == 3
  assert treedef.num_nodes == 5
  children = treedef_children(treedef)
  assert [repr(c) for c in children] == ["*", "PyTreeDef(tuple, [*,*])"]
  assert children[1].num_leaves == 2
  assert tree_structure(1).children() == []
  assert tree_structure(None).num_nodes == 1
  assert tree_structure({"a": (1, 2), "b": None}).num_nodes == 5


def test_treedef_is_leaf():
  assert treedef_is_leaf(tree_structure(1))
  assert treedef_is_leaf(tree_structure(None))
  assert not treedef_is_leaf(tree_structure((1,)))
  assert not treedef_is_leaf(tree_structure([1, 2]))


def test_treedef_tuple():
  tds = [tree_structure(1), tree_structure([2, 3]), tree_structure(None)]
  td = treedef_tuple(tds)
  assert td == tree_structure((1, [2, 3], None))
  assert td.num_leaves == 3
  assert hash(td) == hash(tree_structure((1, [2, 3], None)))


def test_build_tree():
  treedef = tree_structure((1, [2, 3], {"a": 4}))
  out = build_tree(treedef, ["x", ["y", "z"], ["w"]])
  assert out == ("x", ["y", "z"], {"a": "w"})
  # Leaf positions take the value as it is, even if it is itself iterable.
  assert build_tree(tree_structure([1, 2]), [(1, 2), "ab"]) == [(1, 2), "ab"]
  with pytest.raises(ValueError):
    build_tree(treedef, ["x", ["y"], ["w"]])


def test_all_leaves():
  assert all_leaves([1, 2.5, np.zeros(2), "s"])
  assert not all_leaves([1, (2,)])
  assert not all_leaves([None])
  assert all_leaves([1, (2,)], is_leaf=lambda x: isinstance(x, tuple))


def test_compose():
  outer = tree_structure((1, 2))
  inner = tree_structure([1, {"a": 2}])
  composed = outer.compose(inner)
  assert composed == tree_structure(([1, {"a": 2}], [3, {"a": 4}]))
  assert composed.num_leaves == 4


# ---------------------------------------------------------------------------
# Treedef equality, hashing, pickling.
# ---------------------------------------------------------------------------

def test_treedef_equality_and_hash():
  a = tree_structure((np.zeros(2), {"x": 1, "y": [2, 3]}))
  b = tree_structure((5, {"y": ["p", "q"], "x": 0.}))
  assert a == b and not (a != b)
  assert hash(a) == hash(b)
  assert len({a, b}) == 1
  assert {a: 1}[b] == 1

  different = [
      tree_structure((1, {"x": 1, "z": [2, 3]})),   # different dict keys
      tree_structure((1, {"x": 1, "y": (2, 3)})),   # tuple vs list
      tree_structure((1, {"x": 1, "y": [2, 3, 4]})),  # arity
      tree_structure([1, {"x": 1, "y": [2, 3]}]),
      tree_structure((1, {"x": None, "y": [2, 3]})),  # None vs leaf
      tree_structure(1),
  ]
  for d in different:
    assert a != d and not (a == d)
  assert len(set(different)) == len(different)
  assert a != "not a treedef"


def test_treedef_equality_aux_data():
  assert (tree_structure(Special(1, 2, name="a"))
          == tree_structure(Special(3, 4, name="a")))
  assert (tree_structure(Special(1, 2, name="a"))
          != tree_structure(Special(1, 2, name="b")))
  assert (tree_structure(Point(1, 2))
          != tree_structure(ATuple(1, 2)))
  assert tree_structure(Point(1, 2)) != tree_structure((1, 2))
  od1 = collections.OrderedDict([("a", 1), ("b", 2)])
  od2 = collections.OrderedDict([("b", 1), ("a", 2)])
  assert tree_structure(od1) != tree_structure(od2)
  assert tree_structure(od1) != tree_structure({"a": 1, "b": 2})


def test_treedef_unhashable_aux_data():
  # Aux data only needs `==` for equality; hashing falls back gracefully.
  a = tree_structure(Special(1, 2, name=["unhashable"]))
  b = tree_structure(Special(1, 2, name=["unhashable"]))
  assert a == b and hash(a) == hash(b)
  assert a != tree_structure(Special(1, 2, name=["other"]))


def test_treedef_pickle():
  treedef = tree_structure((1, {"a": [2, Point(3, 4)]}, None))
  out = pickle.loads(pickle.dumps(treedef))
  assert out == treedef and hash(out) == hash(treedef)
  assert out.unflatten(range(4)) == (0, {"a": [1, Point(2, 3)]}, None)


# ---------------------------------------------------------------------------
# Unflatten errors.
# ---------------------------------------------------------------------------

def test_unflatten_wrong_number_of_leaves():
  treedef = tree_structure([1, (2, 3)])
  with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; "
                     "expected 3, got 2") as e:
    treedef.unflatten([1, 2])
  assert "PyTreeDef(list, [*,PyTreeDef(tuple, [*,*])])" in str(e.value)
  with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; "
                     "expected 3, got 4"):
    tree_unflatten(treedef, [1, 2, 3, 4])


# ---------------------------------------------------------------------------
# tree_map with several trees, and flatten_up_to errors.
# ---------------------------------------------------------------------------

def test_tree_map_single():
  assert tree_map(lambda x: x * 2, [1, (2, {"a": 3})]) == [2, (4, {"a": 6})]
  assert tree_map(lambda x: x, None) is None
  assert tree_map(lambda x: x + 1, Special(1, 2)) == Special(2, 3)


def test_tree_map_several_trees():
  x = ((1, 2), {"a": 3, "b": [4]})
  y = ((10, 20), {"b": [40], "a": 30})
  z = ((100, 200), {"a": 300, "b": [400]})
  out = tree_map(lambda a, b, c: a + b + c, x, y, z)
  assert out == ((111, 222), {"a": 333, "b": [444]})
  assert tree_multimap(lambda a, b: a * b, [1, 2], [3, 4]) == [3, 8]


def test_tree_map_rest_deeper_below_leaves():
  # Leaves of the first tree may correspond to whole subtrees of the rest.
  out = tree_map(lambda a, b: (a, b), [1, 2], [(3, 4), {"k": 5}])
  assert out == [(1, (3, 4)), (2, {"k": 5})]
  out = tree_map(lambda a, b: b, (1, None), ([1, 2], None))
  assert out == ([1, 2], None)


def test_tree_map_is_leaf():
  tree = [(1, 2), (3, 4), 5]
  out = tree_map(lambda x: "L" if isinstance(x, tuple) else x, tree,
                 is_leaf=lambda x: isinstance(x, tuple))
  assert out == ["L", "L", 5]
  out = tree_map(lambda a, b: (a, b), tree, [[7, 8], (9,), 10],
                 is_leaf=lambda x: isinstance(x, tuple))
  assert out == [((1, 2), [7, 8]), ((3, 4), (9,)), (5, 10)]


@pytest.mark.parametrize("first, other, msg", [
    ([1, 2], (1, 2),
     "Custom node type mismatch; expected type: <class 'list'>; "
     "value: (1, 2)."),
    ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
    ([1, 2], [1], "List arity mismatch: 1 != 2; list: [1]."),
    ((1, 2), 2, "Custom node type mismatch; expected type: <class 'tuple'>; "
     "value: 2."),
    ({"a": 1, "b": 2}, {"a": 1, "c": 3},
     "Dict key mismatch; expected keys: ['a', 'b']; dict: {'a': 1, 'c': 3}."),
    (None, 2, "Expected None, got 2."),
    (ATuple(1, (2, 3)), [1, 2], "Expected named tuple, got [1, 2]."),
    (ATuple(1, (2, 3)), AnotherTuple(1, (2, 3)),
     "Named tuple type mismatch: expected type: "),
    (RegisteredSpecial(1, 2), (1, 2),
     "Custom node type mismatch; expected type: "),
    (Special(1, 2, name="a"), Special(1, 2, name="b"),
     "Mismatch custom node data: 'b' != 'a'"),
])
def test_tree_map_mismatch_errors(first, other, msg):
  with pytest.raises(ValueError) as e:
    tree_map(lambda a, b: a, first, other)
  text = str(e.value)
  assert msg in text
  # Both structures are named, expected before actual.
  assert f"expected tree structure: {tree_structure(first)}" in text
  assert f"actual tree structure:   {tree_structure(other)}" in text


def test_flatten_up_to():
  treedef = tree_structure((1, [2, 3]))
  assert treedef.flatten_up_to(((1, 2), [None, {"a": 3}])) == [
      (1, 2), None, {"a": 3}]
  with pytest.raises(ValueError, match="List arity mismatch"):
    treedef.flatten_up_to((1, [2]))


# ---------------------------------------------------------------------------
# tree_transpose, tree_reduce, tree_all.
# ---------------------------------------------------------------------------

def test_tree_transpose():
  outer = tree_structure([1, 2, 3])
  inner = tree_structure((1, {"a": 2}))
  tree = [(1, {"a": 2}), (3, {"a": 4}), (5, {"a": 6})]
  out = tree_transpose(outer, inner, tree)
  assert out == ([1, 3, 5], {"a": [2, 4, 6]})
  # Transposing back gives the original.
  assert tree_transpose(inner, outer, out) == tree
  # The inner structure may be inferred.
  assert tree_transpose(outer, None, tree) == out


def test_tree_transpose_mismatch():
  outer = tree_structure([1, 2])
  inner = tree_structure((1, 2))
  with pytest.raises(TypeError, match="Mismatch"):
    tree_transpose(outer, inner, [(1, 2), (3, 4, 5)])
  with pytest.raises(TypeError, match="Mismatch"):
    tree_transpose(outer, inner, [(1, 2), [3, 4]])


def test_tree_reduce():
  tree = [1, (2, {"a": 3, "b": None}), Special(4, 5)]
  assert tree_reduce(lambda a, b: a + b, tree) == 15
  assert tree_reduce(lambda a, b: a + b, tree, 100) == 115
  assert tree_reduce(lambda a, b: a + b, [], 7) == 7
  with pytest.raises(TypeError):
    tree_reduce(lambda a, b: a + b, [])
  assert tree_reduce(lambda a, b: a + [b], [(1, 2), (3,)], [],
                     is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3,)]


def test_tree_all():
  assert tree_all([True, (1, {"a": np.bool_(True)})])
  assert not tree_all([True, (0, {"a": True})])
  assert tree_all(None)
  assert tree_all([])


# ---------------------------------------------------------------------------
# Partial.
# ---------------------------------------------------------------------------

def _f(a, b, *, c=0):
  return a * 100 + b * 10 + c


def _g(a, b):
  return a - b


def test_partial_flatten_unflatten_call():
  p = Partial(_f, 1, c=3)
  assert p(2) == 123
  leaves, treedef = tree_flatten(p)
  assert leaves == [1, 3]
  q = treedef.unflatten([4, 5])
  assert isinstance(q, Partial)
  assert q.func is _f and q.args == (4,) and q.keywords == {"c": 5}
  assert q(6) == 465
  # tree_map maps over the bound arguments only.
  assert tree_map(lambda x: x + 1, p)(2) == 224


def test_partial_treedef_equality():
  a = tree_structure(Partial(_f, np.zeros(2), c=1.))
  b = tree_structure(Partial(_f, np.ones(2), c=2.))
  assert a == b and hash(a) == hash(b)
  assert a != tree_structure(Partial(_g, np.zeros(2), c=1.))
  assert a != tree_structure(Partial(_f, np.zeros(2)))
  assert a != tree_structure(Partial(_f, np.zeros(2), 1., c=1.))


def test_partial_of_partial():
  inner = functools.partial(_f, 1)
  p = Partial(inner, 2)
  assert p() == 120
  leaves, treedef = tree_flatten(p)
  # The inner partial's arguments are static; only the outer ones are leaves.
  assert leaves == [2]
  assert treedef.unflatten([3])() == 130
  assert treedef == tree_structure(Partial(inner, 5))


def test_partial_with_no_args():
  p = Partial(_g)
  leaves, treedef = tree_flatten(p)
  assert leaves == []
  assert treedef.unflatten([])(5, 2) == 3


# ---------------------------------------------------------------------------
# Registration and is_leaf.
# ---------------------------------------------------------------------------

def test_register_pytree_node_class():
  s = Special([1, 2], {"a": 3}, name="q")
  leaves, treedef = tree_flatten(s)
  assert leaves == [1, 2, 3]
  out = treedef.unflatten([4, 5, 6])
  assert out == Special([4, 5], {"a": 6}, name="q")


def test_subclass_of_registered_type_is_leaf():
  class SubSpecial(Special):
    pass
  s = SubSpecial(1, 2)
  assert tree_leaves(s) == [s]
  assert tree_leaves(ListSubclass([1, 2]))[0] == [1, 2]


def test_duplicate_registration():
  with pytest.raises(ValueError, match="Duplicate"):
    tree_util.register_pytree_node(Special, lambda x: ((), None),
                                   lambda a, c: Special(1, 2))
  with pytest.raises(ValueError, match="Duplicate"):
    tree_util.register_pytree_node(list, lambda x: ((), None),
                                   lambda a, c: [])


def test_register_after_seen_as_leaf():
  class Late:
    def __init__(self, v):
      self.v = v
  obj = Late((1, 2))
  assert tree_leaves(obj) == [obj]
  tree_util.register_pytree_node(Late, lambda x: ((x.v,), None),
                                 lambda aux, ch: Late(*ch))
  assert tree_leaves(obj) == [1, 2]


def test_is_leaf():
  tree = {"a": (1, 2), "b": [3, (4, 5)], "c": None}
  is_tuple = lambda x: isinstance(x, tuple)
  leaves, treedef = tree_flatten(tree, is_leaf=is_tuple)
  assert leaves == [(1, 2), 3, (4, 5)]
  assert treedef.unflatten(leaves) == tree
  assert tree_leaves(tree, is_leaf=lambda x: x is None) == [1, 2, 3, 4, 5, None]
  # is_leaf applies to the root too.
  assert tree_leaves(tree, is_leaf=lambda x: isinstance(x, dict)) == [tree]
  assert tree_structure([1, 2], is_leaf=lambda x: True) == tree_structure(0)


def test_is_leaf_not_descended():
  calls = []
  def is_leaf(x):
    calls.append(x)
    return isinstance(x, list)
  tree_flatten(([1, (2,)], 3), is_leaf=is_leaf)
  # The list is a leaf, so its elements are never visited.
  assert not any(c == (2,) for c in calls)


# ---------------------------------------------------------------------------
# Key paths.
# ---------------------------------------------------------------------------

def test_tree_flatten_with_path():
  tree = [1, {"a": Point(2, 3), "b": None}, Special(4, 5)]
  path_leaves, treedef = tree_flatten_with_path(tree)
  assert treedef == tree_structure(tree)
  assert [leaf for _, leaf in path_leaves] == tree_leaves(tree)
  assert [keystr(p) for p, _ in path_leaves] == [
      "[0]", "[1]['a'].x", "[1]['a'].y",
      "[2][<flat index 0>]", "[2][<flat index 1>]"]
  assert keystr(path_leaves[1][0], simple=True, separator="/") == "1/a/x"
  out = tree_map_with_path(lambda p, x: keystr(p), {"k": (1, 2)})
  assert out == {"k": ("['k'][0]", "['k'][1]")}


# ---------------------------------------------------------------------------
# Speed: flattening is on the hot path of every jit call.
# ---------------------------------------------------------------------------

def test_flatten_speed_sanity():
  import timeit
  arrays = [np.zeros(3) for _ in range(10)]
  t3 = tuple(arrays[:3])
  d10 = {f"k{i}": a for i, a in enumerate(arrays)}
  n = 2000
  per_t3 = min(timeit.repeat(lambda: tree_flatten(t3), number=n, repeat=3)) / n
  per_d10 = min(timeit.repeat(lambda: tree_flatten(d10), number=n,
                              repeat=3)) / n
  # Generous bounds (targets are a few us and <10 us) so loaded CI machines
  # do not flake; a regression to slow generic code would still trip them.
  assert per_t3 < 50e-6, per_t3
  assert per_d10 < 100e-6, per_d10
