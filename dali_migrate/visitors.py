"""Base classes for every LibCST visitor and transformer of the tool.

LibCST looks up ``visit_<Type>``/``leave_<Type>`` by name for every node, and calls a hook for
every attribute of every node (``visit_<Type>_<attribute>``), which no visitor here defines.
A handler table cached per class and node type, and no attribute hooks, make each walk markedly
cheaper (a third of a migration's time went to those lookups and hooks).

``walk`` runs a read-only visitor without LibCST's traversal, which rebuilds (and validates)
every node it passes even when nothing changes: the same calls in the same order, about four
times faster.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache

import libcst as cst


@lru_cache(maxsize=4096)  # classes made inside functions must not pile up
def handler(visitor: type, prefix: str, node_type: type):
    return getattr(visitor, f"{prefix}{node_type.__name__}", None)


class Visitor(cst.CSTVisitor):
    def on_visit(self, node: cst.CSTNode) -> bool:
        visit = handler(type(self), "visit_", type(node))
        return visit is None or visit(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        leave = handler(type(self), "leave_", type(original_node))
        if leave is not None:
            leave(self, original_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


class Transformer(cst.CSTTransformer):
    def on_visit(self, node: cst.CSTNode) -> bool:
        visit = handler(type(self), "visit_", type(node))
        return visit is None or visit(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        leave = handler(type(self), "leave_", type(original_node))
        return updated_node if leave is None else leave(self, original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


def walk(node: cst.CSTNode, visitor: Visitor) -> None:
    """``node.visit(visitor)`` for a visitor that changes nothing."""
    if visitor.on_visit(node):
        visited, understood = _child_fields(type(node))
        if not understood:
            _visit_children_as_libcst_does(node, visitor)
        else:
            for name in visited:
                child = getattr(node, name)
                if isinstance(child, (list, tuple)):
                    for item in child:
                        if _is_node_type(type(item)):
                            walk(item, visitor)
                elif _is_node_type(type(child)):
                    walk(child, visitor)
    visitor.on_leave(node)


@lru_cache(maxsize=None)
def _is_node_type(kind: type) -> bool:
    """``isinstance(x, cst.CSTNode)`` by type: CSTNode is an ABC, whose checks cost most of a walk."""
    return issubclass(kind, cst.CSTNode)


@lru_cache(maxsize=None)
def _child_fields(node_type: type) -> tuple[tuple[str, ...], bool]:
    """The fields LibCST visits, in its order, and whether that is all of them: False when a
    field left out is declared to hold nodes (a LibCST this walk does not know).
    A node's ``_visit_and_replace_children`` passes each field's name to a ``visit_*`` helper,
    in the order it visits them, and the compiler keeps those names as constants in the order
    they are written."""
    fields = dataclasses.fields(node_type)
    names = {f.name for f in fields}
    constants = node_type._visit_and_replace_children.__code__.co_consts
    visited = tuple(dict.fromkeys(c for c in constants if isinstance(c, str) and c in names))
    return visited, not any(_may_hold_nodes(f.type) for f in fields if f.name not in visited)


def _may_hold_nodes(annotation) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, cst.CSTNode) or issubclass(annotation, (list, tuple))
    if typing.get_origin(annotation) is typing.Literal:
        return False
    arguments = typing.get_args(annotation)
    return any(_may_hold_nodes(a) for a in arguments) if arguments else True  # a name in quotes: unknown


def _visit_children_as_libcst_does(node: cst.CSTNode, visitor: Visitor) -> None:
    for child in node.children:
        child.visit(visitor)
