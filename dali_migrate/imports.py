"""Resolve which local names refer to DALI, from the module's import statements alone.

A cheap substitute for LibCST's QualifiedNameProvider (about ten times slower): DALI code reaches
its API through a handful of import forms, so a table of ``local name -> qualified name`` built
from the imports is enough. Names that are not imported from DALI never resolve, which is what
keeps a local ``fn`` or scikit-learn's ``Pipeline`` from being flagged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

DALI_ROOT = "nvidia.dali"
NDD_MODULE = "nvidia.dali.experimental.dynamic"

# Public re-exports: several spellings name the same object. Map each to one canonical name.
_CANONICAL_PREFIXES = {
    "nvidia.dali.pipeline.pipeline_def": "nvidia.dali.pipeline_def",
    "nvidia.dali.pipeline.experimental.pipeline_def": "nvidia.dali.pipeline_def",
    "nvidia.dali.pipeline.Pipeline": "nvidia.dali.Pipeline",
    "nvidia.dali.pipeline.DataNode": "nvidia.dali.DataNode",
    "nvidia.dali.data_node.DataNode": "nvidia.dali.DataNode",
    "nvidia.dali.plugin.pytorch.DALIGenericIterator": "nvidia.dali.plugin.pytorch.DALIGenericIterator",
}


def canonical(qualname: str) -> str:
    for prefix, replacement in _CANONICAL_PREFIXES.items():
        if qualname == prefix or qualname.startswith(prefix + "."):
            return replacement + qualname[len(prefix) :]
    return qualname


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a chain of Names and Attributes, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def code_of(node: cst.CSTNode) -> str:
    """``node`` as source code."""
    return cst.Module([]).code_for_node(node)


@dataclass
class ImportTable:
    """Local names bound by DALI imports, with the qualified name each one stands for."""

    names: dict[str, str] = field(default_factory=dict)
    ndd_alias: str | None = None
    import_nodes: list[cst.CSTNode] = field(default_factory=list)

    @property
    def uses_dali(self) -> bool:
        return bool(self.names)

    def add(self, local: str, qualname: str, node: cst.CSTNode) -> None:
        if qualname == NDD_MODULE:
            self.ndd_alias = local
            return
        if qualname == DALI_ROOT or qualname.startswith(DALI_ROOT + ".") or qualname == "nvidia":
            self.names[local] = qualname
            self.import_nodes.append(node)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The canonical qualified DALI name of an expression, or None if it is not DALI."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.names.get(head)
        if base is None:
            return None
        qualname = f"{base}.{rest}" if rest else base
        if not (qualname == DALI_ROOT or qualname.startswith(DALI_ROOT + ".")):
            return None
        return canonical(qualname)


def _module_name(node: cst.BaseExpression | None) -> str:
    return dotted_name(node) if node is not None else ""


# PEP 810 ``lazy import x`` / ``lazy from a import b``: own node types in LibCST 1.9, with the
# fields of Import / ImportFrom (a lazy import binds the same name, resolved on first use)
IMPORT_TYPES = tuple(t for t in (cst.Import, getattr(cst, "LazyImport", None)) if t is not None)
IMPORT_FROM_TYPES = tuple(t for t in (cst.ImportFrom, getattr(cst, "LazyImportFrom", None)) if t is not None)


def collect_import(table: ImportTable, node: cst.Import | cst.ImportFrom) -> None:
    if isinstance(node, IMPORT_TYPES):
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None:
                table.add(alias.asname.name.value, full, node)
            else:
                # ``import nvidia.dali.fn`` binds ``nvidia``; attribute chains then resolve.
                table.add(full.split(".")[0], full.split(".")[0], node)
                if full == NDD_MODULE:
                    table.ndd_alias = full
        return
    if node.relative or isinstance(node.names, cst.ImportStar):
        return
    module = _module_name(node.module)
    if not module.startswith(DALI_ROOT) and module != "nvidia":  # ``from nvidia import dali``
        return
    for alias in node.names:
        imported = alias.name.value
        local = alias.asname.name.value if alias.asname is not None else imported
        table.add(local, f"{module}.{imported}", node)


# Where statements nest: blocks, else/elif, except handlers, finally, match cases.
_NESTED = ("body", "orelse", "handlers", "finalbody", "cases")


def import_nodes(node) -> Iterator[cst.Import | cst.ImportFrom]:
    """Imports anywhere among the statements (also inside functions and ``try``), reached by
    walking statement blocks only: expressions cannot hold imports, and a plain walk is several
    times faster than LibCST's visitor."""
    if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        yield from (small for small in node.body if isinstance(small, (*IMPORT_TYPES, *IMPORT_FROM_TYPES)))
        return
    for name in _NESTED:
        part = getattr(node, name, None)
        if isinstance(part, (tuple, list)):
            for item in part:
                yield from import_nodes(item)
        elif isinstance(part, cst.CSTNode):
            yield from import_nodes(part)


def import_table(module: cst.Module) -> ImportTable:
    table = ImportTable()
    for statement in module.body:
        for node in import_nodes(statement):
            collect_import(table, node)
    return table
