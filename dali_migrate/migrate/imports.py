"""After a migration: add the ndd import, drop DALI imports that nothing uses any more."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import libcst as cst

from ..visitors import Visitor, walk

from ..imports import DALI_ROOT, IMPORT_FROM_TYPES, IMPORT_TYPES, NDD_MODULE, dotted_name


class _NameUses(Visitor):
    """Names the module reads; an attribute (``ndd.math``) or a keyword (``f(math=1)``) is not
    a use of the name ``math``."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.not_uses: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.not_uses.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_uses.add(id(node.keyword))

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    visit_LazyImport = visit_Import  # PEP 810 ``lazy import``: LibCST's own node types
    visit_LazyImportFrom = visit_ImportFrom

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.not_uses:
            self.used.add(node.value)


def used_names(module: cst.Module) -> set[str]:
    visitor = _NameUses()
    walk(module, visitor)
    return visitor.used


def _bound_name(alias: cst.ImportAlias, is_from: bool) -> str:
    if alias.asname is not None:
        return alias.asname.name.value
    full = dotted_name(alias.name) or ""
    return full if is_from else full.split(".")[0]


def _is_dali_module(name: str) -> bool:
    return (name == DALI_ROOT or name.startswith(DALI_ROOT + ".")) and name != NDD_MODULE


def _dali_aliases(node: cst.Import | cst.ImportFrom) -> bool:
    if isinstance(node, IMPORT_FROM_TYPES):
        return not node.relative and (_is_dali_module(dotted_name(node.module) or "") or _imports_dali_package(node))
    return any(_is_dali_module(dotted_name(a.name) or "") for a in node.names)


def _imports_dali_package(node: cst.Import | cst.ImportFrom) -> bool:
    """``from nvidia import dali``."""
    return (isinstance(node, IMPORT_FROM_TYPES) and not node.relative and dotted_name(node.module) == "nvidia"
            and not isinstance(node.names, cst.ImportStar) and any(dotted_name(a.name) == "dali" for a in node.names))


def _prune(node: cst.Import | cst.ImportFrom, used: set[str]) -> cst.Import | cst.ImportFrom | None:
    if isinstance(node, IMPORT_FROM_TYPES) and isinstance(node.names, cst.ImportStar):
        return node
    is_from = isinstance(node, IMPORT_FROM_TYPES)
    kept = [
        alias for alias in node.names
        if _bound_name(alias, is_from) in used
        or (not is_from and not _is_dali_module(dotted_name(alias.name) or ""))
        or (_imports_dali_package(node) and dotted_name(alias.name) != "dali")  # ``from nvidia import x``
    ]
    if not kept:
        return None
    if len(kept) == len(node.names):
        return node
    last = kept[-1]
    if not (is_from and node.lpar):
        kept[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return node.with_changes(names=kept)


def ndd_import(alias: str = "ndd") -> cst.SimpleStatementLine:
    return cst.parse_statement(f"import {NDD_MODULE} as {alias}\n")


def has_ndd_import(module: cst.Module) -> str | None:
    for statement in _import_level(module.body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, IMPORT_TYPES):
                    for alias in small.names:
                        if dotted_name(alias.name) == NDD_MODULE and alias.asname is not None:
                            return alias.asname.name.value
    return None


def _import_level(body) -> list[cst.BaseStatement]:
    """The module's statements, with those of each import guard (``try: import nvidia.dali...``)."""
    return [inner for statement in body
            for inner in (statement.body.body if _is_import_guard(statement) else [statement])]


@dataclass
class _Pending:
    """What the migrated code needs imported, added at the first DALI import line."""

    ndd: bool
    numpy: bool
    types: list[str]
    added: list[cst.SimpleStatementLine] = field(default_factory=list)  # the ``import x`` lines written


def fix_imports(module: cst.Module, need_ndd: bool, need_numpy: bool,
                need_types: set[str] = frozenset(), need_itertools: bool = False) -> cst.Module:
    """``need_ndd``: add the ndd import even where the code does not name ``ndd`` yet.
    ``need_types``: names the migrated code takes from nvidia.dali.types (BatchInfo, ...).
    DALI imports inside a module-level ``try:`` (an optional dependency, guarded by ``except
    ImportError``) are fixed in place: the ndd import goes there, under the same guard."""
    used = used_names(module)
    bound = _top_level_bound(module)
    pending = _Pending((need_ndd or "ndd" in used) and has_ndd_import(module) is None,
                       need_numpy and "np" not in bound, sorted(set(need_types) - bound))
    body = _fixed_import_lines(module.body, used, pending)
    if pending.ndd:
        body.insert(_first_code_index(body), ndd_import())
    if pending.numpy:
        pending.added.append(_insert_after_leading_imports(body, cst.parse_statement("import numpy as np\n")))
    for added in pending.added:
        _place_as_isort(body, added)
    if need_itertools and "itertools" not in bound:
        _insert_stdlib_import(body, "itertools")
    return module.with_changes(body=body)


def _place_as_isort(body: list[cst.BaseStatement], added: cst.SimpleStatementLine) -> None:
    """An ``import x`` line written beside the DALI imports moves up, within its block of
    imports, before the first plain ``import y`` of a third-party module that sorts after it
    (``import torch``), as isort orders them."""
    index = next((i for i, statement in enumerate(body) if statement is added), None)
    if index is None:
        return
    name = _plain_import(added)
    start = index
    while start > 0 and _plain_import(body[start - 1]) is not None and not _starts_a_block(body[start]):
        start -= 1
    later = [i for i in range(start, index) if (_plain_import(body[i]) or "") > name
             and _plain_import(body[i]).split(".")[0] not in sys.stdlib_module_names]
    if not later:
        return
    target = later[0]
    del body[index]
    if added.leading_lines and index < len(body):  # its comments stay where they were
        body[index] = body[index].with_changes(leading_lines=[*added.leading_lines, *body[index].leading_lines])
    body.insert(target, added.with_changes(leading_lines=body[target].leading_lines))
    body[target + 1] = body[target + 1].with_changes(leading_lines=[])


def _starts_a_block(statement: cst.BaseStatement) -> bool:
    return any(line.comment is None for line in getattr(statement, "leading_lines", ()))


def _insert_stdlib_import(body: list[cst.BaseStatement], name: str) -> None:
    """``import name`` in alphabetical order among the module's first standard-library
    ``import x`` lines, as isort places it (at the first code line where there are none)."""
    first = _first_code_index(body)
    stdlib = []
    for index in range(first, len(body)):
        module = _plain_import(body[index])
        if module is None:
            break
        if module.split(".")[0] in sys.stdlib_module_names:
            stdlib.append((index, module))
    statement = cst.parse_statement(f"import {name}\n")
    later = [index for index, module in stdlib if module > name]
    if later:
        position = later[0]
        statement = statement.with_changes(leading_lines=body[position].leading_lines)
        body[position] = body[position].with_changes(leading_lines=[])
    else:
        position = stdlib[-1][0] + 1 if stdlib else first
    body.insert(position, statement)


def _plain_import(statement: cst.BaseStatement) -> str | None:
    """``x.y`` for an ``import x.y`` line (a ``from`` import gives ""; None: not an import)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, IMPORT_FROM_TYPES):
        return ""
    if isinstance(small, IMPORT_TYPES) and len(small.names) == 1:
        return cst.Module([]).code_for_node(small.names[0].name)
    return None


def _insert_after_leading_imports(body: list[cst.BaseStatement],
                                  statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """``import numpy as np`` where no plain DALI import line took it: the DALI imports are
    guarded (``try:``, and NumPy is no optional dependency) or not at the top level. It goes
    after the module's leading imports, before relative ones, in a section of its own after
    standard-library ones, as isort places it."""
    position = _first_code_index(body)
    while position < len(body) and _imported_module(body[position]):  # up to the project's own (relative)
        position += 1
    above = _imported_module(body[position - 1]) if position > 0 else None
    if above and above.split(".")[0] in sys.stdlib_module_names:
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    body.insert(position, statement)
    return statement


def _imported_module(statement: cst.BaseStatement) -> str | None:
    """The first module an import line names (``os`` for ``import os, sys``, "" for a relative
    import); None: not an import."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, IMPORT_FROM_TYPES):
        return dotted_name(small.module) if small.module is not None and not small.relative else ""
    if isinstance(small, IMPORT_TYPES):
        return cst.Module([]).code_for_node(small.names[0].name)
    return None


def _fixed_import_lines(statements, used: set[str], pending: _Pending, guarded: bool = False) -> list[cst.BaseStatement]:
    body: list[cst.BaseStatement] = []
    for statement in statements:
        if _is_import_guard(statement):
            inner = _fixed_import_lines(statement.body.body, used, pending, guarded=True)
            body.append(statement.with_changes(body=statement.body.with_changes(body=inner)) if inner else statement)
            continue
        if not _is_dali_import_line(statement):
            body.append(statement)
            continue
        if pending.numpy and not guarded:  # beside the DALI imports it serves
            body.append(cst.parse_statement("import numpy as np\n").with_changes(leading_lines=statement.leading_lines))
            statement = statement.with_changes(leading_lines=[])
            pending.numpy = False
            pending.added.append(body[-1])
        if pending.ndd:
            body.append(ndd_import().with_changes(leading_lines=statement.leading_lines))
            statement = statement.with_changes(leading_lines=[])
            pending.ndd = False
            pending.added.append(body[-1])
        if pending.types:
            body.append(cst.parse_statement(f"from nvidia.dali.types import {', '.join(pending.types)}\n"))
            pending.types = []
        pruned = [_prune(small, used) for small in statement.body]
        remaining = [small for small in pruned if small is not None]
        if remaining:
            body.append(statement.with_changes(body=remaining))
    return body


def _is_import_guard(statement: cst.BaseStatement) -> bool:
    """``try:`` whose body imports DALI: an optional dependency (``except ImportError:``)."""
    return (isinstance(statement, cst.Try) and isinstance(statement.body, cst.IndentedBlock)
            and any(_is_dali_import_line(inner) for inner in statement.body.body))


def _is_dali_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (*IMPORT_TYPES, *IMPORT_FROM_TYPES)) and _dali_aliases(small)
        for small in statement.body
    )


def _top_level_bound(module: cst.Module) -> set[str]:
    names = set()
    for statement in _import_level(module.body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, IMPORT_TYPES):
                    names |= {_bound_name(a, False) for a in small.names}
                elif isinstance(small, IMPORT_FROM_TYPES) and not isinstance(small.names, cst.ImportStar):
                    names |= {_bound_name(a, True) for a in small.names}
    return names


def _first_code_index(body: list[cst.BaseStatement]) -> int:
    """After the module docstring and ``from __future__`` imports."""
    index = 0
    for index, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body[0]
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                continue
            if isinstance(small, IMPORT_FROM_TYPES) and dotted_name(small.module) == "__future__":
                continue
        return index
    return len(body)


def insert_after_imports(module: cst.Module, statements: list[cst.BaseStatement]) -> cst.Module:
    """``statements`` after the module's leading docstring and imports, two blank lines apart."""
    body = list(module.body)
    index = _after_imports(body)
    blank = [cst.EmptyLine(), cst.EmptyLine()]
    placed = [statement.with_changes(leading_lines=blank) if i == 0 else statement
              for i, statement in enumerate(statements)]
    if index < len(body):
        following = body[index]
        lines = list(following.leading_lines)
        while lines and lines[0].comment is None:  # two blank lines replace the blank ones, comments stay
            lines.pop(0)
        body[index] = following.with_changes(leading_lines=[*blank, *lines])
    return module.with_changes(body=[*body[:index], *placed, *body[index:]])


def add_local_import(module: cst.Module, statement: str) -> cst.Module:
    """``statement`` (an import of one of the project's modules) after the module's imports, in
    a block of its own as isort places first-party imports."""
    body = list(module.body)
    index = _after_imports(body)
    separated = index > 0 and _is_import_line(body[index - 1])
    line = cst.parse_statement(statement).with_changes(leading_lines=[cst.EmptyLine()] if separated else [])
    return module.with_changes(body=[*body[:index], line, *body[index:]])


def add_third_party_import(module: cst.Module, statement: str | cst.SimpleStatementLine) -> cst.Module:
    """``statement`` at the end of the module's leading imports, in their block."""
    line = cst.parse_statement(statement) if isinstance(statement, str) else statement
    body = list(module.body)
    index = _after_imports(body)
    if index > 0 and _is_import_line(body[index - 1]):
        line = line.with_changes(leading_lines=[])
    elif index < len(body):  # no imports: the line takes the place, and the comments, of what follows
        line = line.with_changes(leading_lines=body[index].leading_lines)
        body[index] = body[index].with_changes(leading_lines=[cst.EmptyLine()])
    return module.with_changes(body=[*body[:index], line, *body[index:]])


def _after_imports(body: list[cst.BaseStatement]) -> int:
    """Where code goes after the leading docstring and imports (before the next cell's marker)."""
    index = _first_code_index(body)
    while index < len(body) and (_is_import_line(body[index]) or _is_cell_marker(body[index])):
        index += 1
    while index > 0 and _is_cell_marker(body[index - 1]):  # the next cell's marker stays with it
        index -= 1
    return index


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (*IMPORT_TYPES, *IMPORT_FROM_TYPES)) for small in statement.body)


def _is_cell_marker(statement: cst.BaseStatement) -> bool:
    """``__dali_migrate_cell__(N)``: where notebook.py joined a notebook's cells."""
    if not (isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr)):
        return False
    call = statement.body[0].value
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value.startswith("__dali_migrate")
