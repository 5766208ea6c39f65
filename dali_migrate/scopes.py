"""What a block of code binds and loads, and which names are a function's own: read by the
check path (``analysis``) and by the migration alike, so kept free of the migration's imports."""

from __future__ import annotations

import libcst as cst

from .visitors import Visitor, walk


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


def name_assignment(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """``(name, value)`` for ``name = value`` (one target, a plain name), given as its small
    statement or as a line holding only it; None for anything else."""
    if isinstance(statement, cst.SimpleStatementLine):
        statement = statement.body[0] if len(statement.body) == 1 else None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0].target,
                                                                                         cst.Name):
        return statement.targets[0].target.value, statement.value
    return None


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


class _OwnNames(ScopeNames):
    """``ScopeNames`` of one scope: not the bodies of the functions, classes, lambdas and
    comprehensions inside it, which have names of their own."""

    def __init__(self) -> None:
        super().__init__()
        self.declared: set[str] = set()

    def visit_Param(self, node: cst.Param) -> None:
        self._bind(node.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            self.bound.add(cst.Module([]).code_for_node(node.name).split(".")[0])

    def visit_Global(self, node: cst.Global) -> None:
        self.declared |= {item.name.value for item in node.names}

    visit_Nonlocal = visit_Global

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def _comprehension(self, node) -> bool:
        return False

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def function_locals(function: cst.FunctionDef) -> set[str]:
    """The names local to ``function``: its parameters and what its own body binds, less the
    names it declares ``global`` or ``nonlocal``."""
    found = _OwnNames()
    walk(function.params, found)
    walk(function.body, found)
    return found.bound - found.declared


def class_locals(node: cst.ClassDef) -> set[str]:
    """The names a class body binds (its attributes and methods), less those it declares
    ``global`` or ``nonlocal``."""
    found = _OwnNames()
    walk(node.body, found)
    return found.bound - found.declared
