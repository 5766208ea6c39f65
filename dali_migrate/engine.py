"""Run the rules over one file's source (check), and apply the codemod to it (migrate).

Everything here works on bytes in and results out: reading, writing and reporting belong to
the CLI and the reporters.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from .analysis import ModuleFacts, collect_facts
from .config import Config
from .diagnostics import Diagnostic, FileResult
from .imports import ImportTable
from .positions import Positions, python_ast
from .prefilter import might_use_dali
from .rules import ALL_RULES, RULES_BY_CODE, Finding
from .suppress import parse_suppressions

if TYPE_CHECKING:
    from .migrate import MigrationResult
    from .migrate.normalize import NormalizedModule

class SourceError(Exception):
    """The file cannot be worked on (syntax error, undecodable bytes); nothing is written."""


TOO_DEEP = "too deeply nested to work on safely"


def _refuse_what_crashes_libcst(data: bytes) -> None:
    """LibCST's native parser crashes the process on nesting that CPython refuses (more than
    200 brackets), and recurses without bound on very long chains. CPython's own parser, in C
    and much faster, finds both first. Other syntax errors are left to LibCST to report: it may
    know a newer grammar than this interpreter."""
    try:
        python_ast(data)
    except SyntaxError as error:
        if "too many nested" in str(error.msg):
            raise SourceError(f"syntax error at line {error.lineno}: {error.msg}") from None
    except (RecursionError, MemoryError):
        raise SourceError(TOO_DEEP) from None
    except ValueError:
        pass  # undecodable: LibCST says so below


def parse(data: bytes) -> cst.Module:
    if b"\0" in data:
        raise SourceError("binary file (NUL bytes)")
    _refuse_what_crashes_libcst(data)
    try:
        return cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        raise SourceError(f"syntax error at line {error.raw_line}, column {error.raw_column + 1}: {error.message}") from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        raise SourceError(f"cannot decode: {error}") from None
    except RecursionError:
        raise SourceError(TOO_DEEP) from None


def _unexpected(error: Exception, doing: str) -> str:
    if isinstance(error, RecursionError):
        return TOO_DEEP
    return f"internal error while {doing}: {type(error).__name__}: {error}"


@dataclass
class Analysed:
    module: cst.Module
    facts: ModuleFacts
    findings: list[Finding]
    rule_errors: list[str]


def analyse(module: cst.Module, config: Config, imports: ImportTable | None = None,
            imported_pipelines: frozenset[str] = frozenset()) -> Analysed:
    facts = collect_facts(module, imports=imports, imported_pipelines=imported_pipelines)
    findings: list[Finding] = []
    errors: list[str] = []
    if facts.uses_dali or imported_pipelines:
        for rule_class in ALL_RULES:
            if not config.enabled(rule_class.code):
                continue
            try:
                findings.extend(rule_class().check(facts))
            except Exception as error:  # a broken rule must not stop the run
                errors.append(f"internal error in rule {rule_class.code}: {type(error).__name__}: {error}")
    return Analysed(module, facts, findings, errors)


def _diagnostic(path: str, positions, code: str, message: str, node: cst.CSTNode, fix: str) -> Diagnostic:
    span = positions[node]
    return Diagnostic(path, span.start.line, span.start.column + 1, code, message, fix,
                      span.end.line, span.end.column + 1)


def _source_text(data: bytes, module: cst.Module) -> str:
    return data.decode(module.encoding, "replace")


def _unsuppressed(diagnostics: list[Diagnostic], text: str) -> list[Diagnostic]:
    suppressions = parse_suppressions(text)
    kept = [d for d in diagnostics if not suppressions.suppressed(d.code, d.line, d.end_line or d.line)]
    return sorted(kept, key=lambda d: (d.line, d.column, d.code))


def _analysed_or_error(data: bytes, config: Config, imported_pipelines: frozenset[str] = frozenset()) -> Analysed:
    analysed = analyse(parse(data), config, imported_pipelines=imported_pipelines)
    if analysed.rule_errors:
        raise SourceError("; ".join(analysed.rule_errors))
    return analysed


def check_source(data: bytes, path: str, config: Config) -> FileResult:
    result = FileResult(path)
    if not might_use_dali(data):
        return result
    try:
        analysed = analyse(parse(data), config)
        if analysed.rule_errors:
            result.error = "; ".join(analysed.rule_errors)
        if not analysed.findings:
            return result
        positions = Positions(analysed.module, [f.node for f in analysed.findings], data, analysed.facts.top_level)
    except SourceError as error:
        result.error = str(error)
        return result
    except Exception as error:  # one file's trouble must never stop the run
        result.error = _unexpected(error, "checking")
        return result
    diagnostics = [
        _diagnostic(path, positions, f.code, f.message, f.node, RULES_BY_CODE[f.code].fix)
        for f in analysed.findings
    ]
    result.diagnostics = _unsuppressed(diagnostics, _source_text(data, analysed.module))
    return result


@dataclass
class _Migrated:
    """A migration and the module it was computed on: the original, or its normalized form."""

    migration: "MigrationResult"
    subject: Analysed
    normalized: "NormalizedModule | None" = None


def _migrate(original: Analysed, config: Config, keep: dict[str, str], imported: dict | None = None) -> _Migrated:
    """Migrate, with ``with pipe:`` graphs in decorator form where that is possible. A graph
    whose normalized form cannot be migrated either is left as it was written."""
    from .migrate import migrate_module
    from .migrate.normalize import normalize_with_graphs

    skip: set[int] = set()
    reasons: dict[int, list] = {}
    while config.enabled("DM002"):
        normalized = normalize_with_graphs(original.module, skip)
        if normalized is None:
            break
        reasons |= normalized.reasons
        if not normalized.graphs:
            break
        subject = analyse(normalized.module, config, normalized.imports(), frozenset(imported or {}))
        migration = migrate_module(subject.module, subject.facts, subject.findings, keep=keep, imported=imported)
        blocked = [g for g in normalized.graphs if g.function.name.value not in migration.migrated_pipelines]
        if not blocked:
            return _Migrated(migration, subject, normalized)
        skip |= {id(g.original_statement) for g in blocked}
        reasons |= {id(g.reason_anchor): migration.blockers.get(g.function.name.value, []) for g in blocked}
    return _Migrated(migrate_module(original.module, original.facts, original.findings, reasons, keep, imported),
                     original)


def _node_ids(node: cst.CSTNode) -> set[int]:
    from .migrate.places import node_ids

    return node_ids(node)


class _Locator:
    """Positions of migration diagnostics in the file as the user wrote it."""

    def __init__(self, original: Analysed, migrated: _Migrated, data: bytes) -> None:
        self.normalized = migrated.normalized
        migration = migrated.migration
        nodes = [f.node for f in migration.fixed] + [t.node for t in migration.todos]
        # the normalized module has no source bytes of its own: positions come from its code
        source = data if self.normalized is None else None
        self.positions = Positions(migrated.subject.module, nodes, source, migrated.subject.facts.top_level)
        self.synthesized: dict[int, cst.CSTNode] = {}
        self.collapsed: dict[int, cst.CSTNode] = {}  # id(node in a converted subclass) -> the class
        if self.normalized is not None:
            graphs = self.normalized.graphs
            self.synthesized = {id(g.function.decorators[0]): g.original_node for g in graphs}
            for graph in (g for g in graphs if g.collapsed):
                self.collapsed.update(dict.fromkeys(_node_ids(graph.function), graph.original_node))
            self.original_positions = Positions(original.module, [g.original_node for g in graphs], data,
                                                original.facts.top_level)

    def diagnostic(self, path: str, code: str, message: str, node: cst.CSTNode, fix: str) -> Diagnostic:
        original = self.synthesized.get(id(node))
        if original is not None:  # the decorator stands for ``Pipeline(...)`` + ``with``, or a subclass
            what = "subclass" if isinstance(original, cst.ClassDef) else "object with a `with pipe:` graph"
            return _diagnostic(path, self.original_positions, "DM002", f"`Pipeline` {what}", original, fix)
        if id(node) in self.collapsed:  # inside a converted subclass: its lines are gone
            return _diagnostic(path, self.original_positions, code, message, self.collapsed[id(node)], fix)
        diagnostic = _diagnostic(path, self.positions, code, message, node, fix)
        if self.normalized is None:
            return diagnostic
        line = self.normalized.original_line
        return replace(diagnostic, line=line(diagnostic.line), end_line=line(diagnostic.end_line))


def _legacy_ops_converted(original: Analysed, migrated: _Migrated, data: bytes, path: str) -> list[Diagnostic]:
    """The legacy operator objects of a converted subclass are gone from the module that was
    migrated; their findings, from the original, are what the conversion fixed."""
    classes = [g.original_node for g in migrated.normalized.graphs if g.collapsed] if migrated.normalized else []
    if not classes:
        return []
    inside = set().union(*(_node_ids(c) for c in classes))
    legacy = [f for f in original.findings if f.code == "DM009" and id(f.node) in inside]
    positions = Positions(original.module, [f.node for f in legacy], data, original.facts.top_level)
    return [_diagnostic(path, positions, f.code, f.message, f.node, "fixed") for f in legacy]


def migrate_source(data: bytes, path: str, config: Config, keep: dict[str, str] | None = None,
                   imported: dict | None = None) -> FileResult:
    """The migrated bytes (``new_source``, None when unchanged), with what was fixed and left.
    ``keep``: top-level pipeline names that other files use, to leave in pipeline mode.
    ``imported``: local name -> the plan of a pipeline that another file defines and migrates."""
    result = FileResult(path)
    if not imported and not might_use_dali(data):
        return result
    try:
        original = _analysed_or_error(data, config, frozenset(imported or {}))
        if not original.findings:
            return result
        migrated = _migrate(original, config, keep or {}, imported)
        result.imports_blocked = migrated.migration.imports_blocked
        new_data = migrated.migration.module.bytes
        cst.parse_module(new_data)  # never write something that does not parse
    except SourceError as error:
        result.error = str(error)
        return result
    except Exception as error:  # a crash in a fix must never leave a half-written file
        result.error = _unexpected(error, "migrating")
        return result
    try:
        locate = _Locator(original, migrated, data).diagnostic
        migration = migrated.migration
        diagnostics = [locate(path, f.code, f.message, f.node, "fixed") for f in migration.fixed]
        diagnostics += [locate(path, t.code, t.message, t.node, "todo") for t in migration.todos]
        diagnostics += _legacy_ops_converted(original, migrated, data, path)
    except Exception as error:
        result.error = _unexpected(error, "locating diagnostics")
        return result
    result.diagnostics = _unsuppressed(_dedupe(diagnostics), _source_text(data, original.module))
    if new_data != data:
        result.changed = True
        result.new_source = new_data
        result.diff = unified_diff(data, new_data, path)
        result.exported = migrated.migration.exported
    return result


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return list(dict.fromkeys(diagnostics))


def unified_diff(old: bytes, new: bytes, path: str) -> str:
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}"))


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def check_file(data: bytes, path: str, config: Config) -> FileResult:
    """``check_source`` for Python files and the code cells of notebooks."""
    if not is_notebook(path):
        return check_source(data, path, config)
    from .notebook import NotebookError, read_code_cells

    result = FileResult(path)
    if not might_use_dali(data):
        return result
    try:
        cells = read_code_cells(data)
    except NotebookError as error:
        result.error = str(error)
        return result
    inner = check_source(cells.source.encode("utf-8"), path, config)
    result.error = _cell_error(cells, inner.error)
    result.diagnostics = [cells.locate(d) for d in inner.diagnostics]
    return result


def migrate_file(data: bytes, path: str, config: Config, keep: dict[str, str] | None = None,
                 imported: dict | None = None) -> FileResult:
    """``migrate_source`` for Python files and the code cells of notebooks."""
    if not is_notebook(path):
        return migrate_source(data, path, config, keep, imported)
    from .notebook import NotebookError, cell_diff, read_code_cells, write_code_cells

    result = FileResult(path)
    if not might_use_dali(data):
        return result
    try:
        cells = read_code_cells(data)
        inner = migrate_source(cells.source.encode("utf-8"), path, config)
        new_data = write_code_cells(cells, inner.new_source.decode("utf-8")) if inner.new_source else data
    except NotebookError as error:
        result.error = str(error)
        return result
    result.error = _cell_error(cells, inner.error)
    result.diagnostics = [cells.locate(d) for d in inner.diagnostics]
    if inner.error is None and new_data != data:
        result.changed, result.new_source = True, new_data
        result.diff = cell_diff(cells, new_data, path)
    return result


def _cell_error(cells, error: str | None) -> str | None:
    """Errors name lines of the joined cells; say which cell and line they are."""
    import re

    if error is None:
        return None
    match = re.search(r"line (\d+), column (\d+)", error)
    if match is None:
        return error
    located = cells.locate(Diagnostic("", int(match.group(1)), int(match.group(2)), "", "", ""))
    return error.replace(match.group(0), f"cell {located.cell}, line {located.line}, column {located.column}")
