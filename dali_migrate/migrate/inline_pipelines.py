"""Pipelines made inside a PyTorch iterator's arguments, as DALI's PyTorch documentation writes
them::

    train_data = DALIGenericIterator([get_dali_pipeline(batch_size=16)], ["data", "label"],
                                     reader_name="Reader")

The call is first bound to a name of its own, the form the migration follows::

    pipe = get_dali_pipeline(batch_size=16)
    train_data = DALIGenericIterator([pipe], ["data", "label"], reader_name="Reader")

Only where that changes nothing: the iterator call is the whole value of a plain statement
(an assignment, a ``return``, an expression), so the pipeline was made every time the statement
ran, and first, as it is now; and the name is used nowhere else in the module. Where the
pipeline is then not migrated, the engine leaves the statement as it was written.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..analysis import single_element
from ..imports import ImportTable
from ..visitors import Transformer
from .names import unique_name

ITERATORS = frozenset({"nvidia.dali.plugin.pytorch.DALIGenericIterator",
                       "nvidia.dali.plugin.pytorch.DALIClassificationIterator"})


@dataclass
class Hoist:
    statement: cst.BaseStatement  # the statement as written, in the original module
    factory: str  # the pipeline function (or class) called
    added: cst.SimpleStatementLine  # ``pipe = factory(...)``, in the new module
    name: cst.Name  # the name that took the call's place in the statement, in the new module


def hoist_inline_pipelines(module: cst.Module, imports: ImportTable, factories: set[str],
                           taken: set[str], skip: set[int]) -> tuple[cst.Module, list[Hoist], list[tuple[int, int]]]:
    """The module with each such pipeline bound first, what was done, and the line shifts that
    map the new module's lines back to the original's (``NormalizedModule.original_line``)."""
    hoister = _Hoister(imports, factories, taken, skip)
    new_module = module.visit(hoister)
    if not hoister.hoists:
        return module, [], []
    positions = MetadataWrapper(new_module, unsafe_skip_copy=True).resolve(PositionProvider)
    shifts = []
    for hoist in hoister.hoists:
        added = positions[hoist.added]
        lines = added.end.line - added.start.line + 1
        # the added lines push the statement down; the call they took leaves the statement
        shifts += [(added.end.line, -lines), (positions[hoist.name].start.line, lines - 1)]
    return new_module, hoister.hoists, shifts


class _Hoister(Transformer):
    def __init__(self, imports: ImportTable, factories: set[str], taken: set[str], skip: set[int]) -> None:
        self.imports = imports
        self.factories = factories
        self.taken = taken
        self.skip = skip
        self.hoists: list[Hoist] = []
        self.scopes: list[set[str]] = [set()]  # the names bound here so far, per function

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.scopes.pop()
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self._hoisted(original_node.body, updated_node.body))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        return updated_node.with_changes(body=self._hoisted(original_node.body, updated_node.body))

    def _hoisted(self, originals, statements) -> list[cst.BaseStatement]:
        body: list[cst.BaseStatement] = []
        for original, statement in zip(originals, statements):
            call = None if id(original) in self.skip else self._inline_pipeline(statement)
            if call is None:
                body.append(statement)
                continue
            name = cst.Name(unique_name("pipe", self.taken | self.scopes[-1]))
            self.scopes[-1].add(name.value)
            target = cst.AssignTarget(cst.Name(name.value))
            added = cst.SimpleStatementLine(body=[cst.Assign(targets=[target], value=call)],
                                            leading_lines=statement.leading_lines)
            rewritten = statement.with_changes(leading_lines=[]).visit(_Replace(call, name))
            self.hoists.append(Hoist(original, call.func.value, added, name))
            body += [added, rewritten]
        return body

    def _inline_pipeline(self, statement: cst.BaseStatement) -> cst.Call | None:
        """The pipeline call ``statement`` makes inside its iterator call, if it is one to bind."""
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        value = getattr(small, "value", None) if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return, cst.Expr)) else None
        if not isinstance(value, cst.Call) or self.imports.resolve(value.func) not in ITERATORS:
            return None
        pipelines = _pipelines_argument(value)
        inner = single_element(pipelines) if pipelines is not None else None
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value in self.factories:
            return inner
        return None


def _pipelines_argument(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value in ("pipelines", "pipeline"):
            return arg.value
    return None


class _Replace(Transformer):
    def __init__(self, target: cst.Call, name: cst.Name) -> None:
        self.target = target
        self.name = name

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        return self.name if original_node is self.target else updated_node
