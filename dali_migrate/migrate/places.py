"""Where nodes stand in a module: the function around them, their order, their nesting."""

from __future__ import annotations

import libcst as cst

from ..visitors import Visitor, walk

NESTING = (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Match)


class MadeNodes:
    """Nodes a transformer wrote and must recognise later, by identity, each with what it
    stands for. It holds them: once a node is freed, CPython may give its ``id()`` to a node
    made after it, which a dict or set of ids would then take for it."""

    def __init__(self) -> None:
        self._nodes: dict[int, tuple[cst.CSTNode, object]] = {}

    def add(self, node: cst.CSTNode, value: object = None) -> None:
        self._nodes[id(node)] = (node, value)

    def get(self, node: cst.CSTNode) -> object:
        held, value = self._nodes.get(id(node), (None, None))
        return value if held is node else None

    def __contains__(self, node: cst.CSTNode) -> bool:
        return self._nodes.get(id(node), (None,))[0] is node

    def values_by_id(self) -> dict[int, object]:
        """For code that looks nodes up by ``id()`` while this holds them."""
        return {key: value for key, (_, value) in self._nodes.items()}


class Places(Visitor):
    """For each wanted node: its innermost function (None at module level), its order in the
    module, and whether it stands directly in that function's body, outside any loop, branch,
    ``with`` or ``try``: there, of two bindings of a name, the later one is the one in force."""

    def __init__(self, wanted: set[int]) -> None:
        self.wanted = wanted
        self.functions: list[cst.FunctionDef | None] = [None]
        self.classes: list[cst.ClassDef | None] = [None]
        self.nesting: list[int] = [0]  # compound statements open inside each function
        self.counter = 0
        self.found: dict[int, tuple[cst.FunctionDef | None, int, bool, cst.ClassDef | None]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.counter += 1
        if id(node) in self.wanted:
            self.found[id(node)] = (self.functions[-1], self.counter, self.nesting[-1] == 0, self.classes[-1])
        if isinstance(node, cst.ClassDef):
            self.classes.append(node)
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node)
            self.nesting.append(0)
        elif isinstance(node, NESTING):
            self.nesting[-1] += 1
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.ClassDef):
            self.classes.pop()
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()
            self.nesting.pop()
        elif isinstance(original_node, NESTING):
            self.nesting[-1] -= 1

    def scope(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.found[id(node)][0]

    def order(self, node: cst.CSTNode) -> int:
        return self.found[id(node)][1]

    def top_level(self, node: cst.CSTNode) -> bool:
        return self.found[id(node)][2]

    def owner_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose body (or a method of which) holds ``node``."""
        return self.found[id(node)][3]


class _NodeIds(Visitor):
    def __init__(self) -> None:
        self.ids: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.ids.add(id(node))
        return True


def node_ids(node: cst.CSTNode) -> set[int]:
    """The ``id()`` of ``node`` and of every node inside it."""
    collector = _NodeIds()
    walk(node, collector)
    return collector.ids
