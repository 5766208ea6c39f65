"""Names in code: what a block binds and loads, and fresh names that clash with none."""

from __future__ import annotations

import libcst as cst

from ..visitors import Visitor, walk


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
    found: set[str] = set()
    not_variables: set[int] = set()

    class Collector(Visitor):
        def visit_Arg(self, arg: cst.Arg) -> None:
            if arg.keyword is not None:
                not_variables.add(id(arg.keyword))

        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            not_variables.add(id(attribute.attr))

        def visit_Name(self, name: cst.Name) -> None:
            if id(name) not in not_variables:
                found.add(name.value)

    walk(node, Collector())
    return found


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... whichever is not taken; it is taken from now on."""
    name, counter = base, 1
    while name in taken:
        name, counter = f"{base}_{counter}", counter + 1
    taken.add(name)
    return name


class ScopeNames(Visitor):
    """Names a block binds and loads, and whether it leaves through return/yield/global."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.loaded: set[str] = set()
        self.not_loads: set[int] = set()  # Name nodes that are targets, attributes, keywords
        self.escapes = False

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_loads:
            self.loaded.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_loads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_loads.add(id(node.keyword))

    def _bind(self, target: cst.BaseExpression) -> None:
        for name in target_names(target):
            self.bound.add(name.value)
            self.not_loads.add(id(name))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound |= {name.value for name in target_names(node.target)}  # also a load

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name)

    def visit_Return(self, node: cst.Return) -> None:
        self.escapes = True

    def visit_Yield(self, node: cst.Yield) -> None:
        self.escapes = True

    def visit_Global(self, node: cst.Global) -> None:
        self.escapes = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.escapes = True


def target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def assigned_targets(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The single targets an assignment target stands for: ``a, (b.x, *c)`` -> ``a``, ``b.x``, ``c``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [leaf for element in target.elements for leaf in assigned_targets(element.value)]
    return [target]


def all_params(params: cst.Parameters) -> list[cst.Param]:
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def scope_names(nodes) -> ScopeNames:
    names = ScopeNames()
    for node in nodes:
        walk(node, names)
    return names
