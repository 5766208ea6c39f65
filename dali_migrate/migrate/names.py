"""Names in code: what a block binds and loads, and fresh names that clash with none."""

from __future__ import annotations

import libcst as cst

from ..scopes import ScopeNames, all_params, assigned_targets, scope_names, target_names
from ..imports import dotted_name
from ..visitors import Transformer, Visitor, walk

__all__ = ["ScopeNames", "all_params", "all_names", "assigned_targets", "scope_names", "target_names",
           "unique_name", "variable_name_nodes", "variable_names"]


def all_names(node: cst.CSTNode) -> set[str]:
    """Every identifier in ``node``: what a new name must not clash with."""
    found: set[str] = set()

    class Collector(Visitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    walk(node, Collector())
    return found


def variable_names(node: cst.CSTNode) -> set[str]:
    """The identifiers in ``node`` that a new variable could clash with: all but keyword
    argument names (``f(source=...)``) and attribute names (``self.source``)."""
    return {name.value for name in variable_name_nodes(node)}


def variable_name_nodes(node: cst.CSTNode) -> list[cst.Name]:
    """The ``Name`` nodes of ``variable_names``, in the order of the code."""
    found: list[cst.Name] = []
    not_variables: set[int] = set()

    class Collector(Visitor):
        def visit_Arg(self, arg: cst.Arg) -> None:
            if arg.keyword is not None:
                not_variables.add(id(arg.keyword))

        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            not_variables.add(id(attribute.attr))

        def visit_Name(self, name: cst.Name) -> None:
            if id(name) not in not_variables:
                found.append(name)

    walk(node, Collector())
    return found


def calls_named(node: cst.CSTNode, names: set[str]) -> list[cst.Call]:
    """The calls inside ``node`` of a function spelled as one of ``names`` (``f``, ``mod.f``)."""
    found: list[cst.Call] = []

    class Calls(Visitor):
        def visit_Call(self, call: cst.Call) -> None:
            if dotted_name(call.func) in names:
                found.append(call)

    walk(node, Calls())
    return found


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... whichever is not taken; it is taken from now on."""
    name, counter = base, 1
    while name in taken:
        name, counter = f"{base}_{counter}", counter + 1
    taken.add(name)
    return name


class VariableRenamer(Transformer):
    """``old`` -> ``new`` for variables: not keyword names of calls, nor attribute names."""

    def __init__(self, renames: dict[str, str]) -> None:
        super().__init__()
        self.renames = renames
        self.fixed: set[int] = set()

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.fixed.add(id(node.keyword))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.fixed.add(id(node.attr))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.renames.get(original_node.value)
        if new is None or id(original_node) in self.fixed:
            return updated_node
        return updated_node.with_changes(value=new)


def renamed(node: cst.CSTNode, renames: dict[str, str]):
    return node.visit(VariableRenamer(renames)) if renames else node


def is_docstring(statement: cst.BaseStatement) -> bool:
    """A string standing alone as a statement: the docstring, where it comes first."""
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def split_docstring(body: list[cst.BaseStatement]) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """(the docstring statement, if the body begins with one; the statements after it)."""
    return (body[:1], body[1:]) if body and is_docstring(body[0]) else ([], body)
