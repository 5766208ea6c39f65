"""Sources held by the object whose method builds the graph (DM012), as NeMo's DALI datasets
write them: ``self.source = ManifestSource(...)`` in ``__init__``, then, in a ``with self.pipe:``
block of the same method, ``fn.external_source(source=self.source, ...)``.

What the source is comes from its one assignment in the class. The migrated generator reads
``self.source`` once, before its loop, as pipeline mode read it once, when the graph was built.
"""

from __future__ import annotations

import libcst as cst

from ..analysis import ModuleFacts
from ..visitors import Visitor, walk
from .names import all_params, assigned_targets
from .places import node_ids


class SelfSourceNotFollowed(Exception):
    pass


def assigned_value(source: cst.BaseExpression, graph: cst.FunctionDef,
                   facts: ModuleFacts) -> cst.BaseExpression | None:
    """What the class assigns to ``self.<attribute>``, where ``source`` is an attribute of the
    first parameter of the method the graph is in: its one assignment, ``self.x = Class(...)``.
    None where ``source`` is no such attribute."""
    if not (isinstance(source, cst.Attribute) and isinstance(source.value, cst.Name)):
        return None
    found = _method_of(graph, facts)
    params = all_params(found[1].params) if found else []
    if not params or params[0].name.value != source.value.value:
        return None
    cls = found[0]
    assignments = _Assignments(source.attr.value)
    walk(cls, assignments)
    if len(assignments.found) != 1 or not isinstance(assignments.found[0], cst.Call):
        how = (f"{len(assignments.found)} times" if len(assignments.found) != 1
               else "to something other than `SourceClass(...)`")
        raise SelfSourceNotFollowed(f"`{cls.name.value}` sets `{_spelled(source)}` {how}: what the graph "
                                    "took when the pipeline was built cannot be told; set it once, as "
                                    f"`{_spelled(source)} = SourceClass(...)`")
    return assignments.found[0]


def _spelled(source: cst.Attribute) -> str:
    return f"{source.value.value}.{source.attr.value}"


def _method_of(graph: cst.FunctionDef, facts: ModuleFacts) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
    """The module's class and method the graph is in (the method itself, or a function in it)."""
    for classes in facts.module_classes.values():
        for cls in classes:
            for method in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
                if method is graph or id(graph) in node_ids(method):
                    return cls, method
    return None


class _Assignments(Visitor):
    """Every binding of ``<name>.<attribute>`` in a class: its value for ``=``, None for
    anything else (``+=``, unpacking, ``del``, an annotation without a value)."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.found: list[cst.BaseExpression | None] = []

    def _targets(self, target: cst.BaseExpression) -> bool:
        return any(isinstance(t, cst.Attribute) and t.attr.value == self.attribute for t in assigned_targets(target))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._targets(target.target):
                plain = isinstance(target.target, cst.Attribute)
                self.found.append(node.value if plain and len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._targets(node.target):
            self.found.append(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._targets(node.target):
            self.found.append(None)

    def visit_Del(self, node: cst.Del) -> None:
        if self._targets(node.target):
            self.found.append(None)

    def visit_For(self, node: cst.For) -> None:
        if self._targets(node.target):
            self.found.append(None)
