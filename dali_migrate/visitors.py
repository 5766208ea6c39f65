"""Base classes for every LibCST visitor and transformer of the tool.

LibCST looks up ``visit_<Type>``/``leave_<Type>`` by name for every node, and calls a hook for
every attribute of every node (``visit_<Type>_<attribute>``), which no visitor here defines.
A handler table cached per class and node type, and no attribute hooks, make each walk markedly
cheaper (a third of a migration's time went to those lookups and hooks).
"""

from __future__ import annotations

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
