"""Run the rules over one file's source (check), and apply the codemod to it (migrate).

Everything here works on bytes in and results out: reading, writing and reporting belong to
the CLI and the reporters.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from .analysis import ModuleFacts, collect_facts
from .config import Config
from .diagnostics import Diagnostic, FileResult
from .imports import ImportTable
from .links import Links
from .positions import Positions, python_ast
from .prefilter import WIDE_BOMS, might_use_dali
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
        tree = python_ast(data)
    except SyntaxError as error:
        if "too many nested" in str(error.msg):
            raise SourceError(f"syntax error at line {error.lineno}: {error.msg}") from None
        return
    except (RecursionError, MemoryError):
        raise SourceError(TOO_DEEP) from None
    except ValueError:
        return  # undecodable: LibCST says so below
    _refuse_what_costs_too_much(tree, len(data))


# LibCST keeps a node object per token: about 2.5 KB and 20 us each. 300,000 syntax nodes (some
# 1 MB of dense code, such as data pasted in as a literal) cost about 6 s and 1.5 GB; more would
# take minutes and tens of GB, once per worker process.
MAX_SYNTAX_NODES = 300_000
# ``ast.walk`` meets at most 2 nodes per byte of code (``-a``: an operation and its operator; a
# name and its context in ``a,a``); 4 leaves a margin
MOST_NODES_PER_BYTE = 4


def _refuse_what_costs_too_much(tree, size: int) -> None:
    import ast
    from itertools import islice

    if size * MOST_NODES_PER_BYTE <= MAX_SYNTAX_NODES:  # too small to hold that many: no need to count
        return
    nodes = sum(1 for _ in islice(ast.walk(tree), MAX_SYNTAX_NODES + 1))
    if nodes > MAX_SYNTAX_NODES:
        raise SourceError(f"too large to work on safely: over {MAX_SYNTAX_NODES:,} syntax nodes (a large "
                          "literal of data?); move the data out of the code")


def parse(data: bytes) -> cst.Module:
    if b"\0" in data:
        raise SourceError("binary file (NUL bytes)")
    _refuse_what_crashes_libcst(data)
    try:
        return cst.parse_module(data)
    except cst.ParserSyntaxError as error:
        raise SourceError(_syntax_error(data, error)) from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as error:
        raise SourceError(f"cannot decode: {error}") from None
    except RecursionError:
        raise SourceError(TOO_DEEP) from None


def _syntax_error(data: bytes, error: cst.ParserSyntaxError) -> str:
    """Where CPython also refuses the code, its line, column and words, which editors and
    ``python`` itself show; LibCST's otherwise (a grammar newer than this interpreter's)."""
    try:
        python_ast(data)
    except SyntaxError as cpython:
        if cpython.lineno:
            return f"syntax error at line {cpython.lineno}, column {cpython.offset or 1}: {cpython.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    return f"syntax error at line {error.raw_line}, column {error.raw_column + 1}: {error.message}"


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


def _analysed_or_error(data: bytes, config: Config, imported_pipelines: frozenset[str] = frozenset(),
                       imported_classes: dict | None = None) -> Analysed:
    """``imported_classes``: local name -> the conversion of a legacy pipeline class another file
    defines; its calls here get their arguments named first, as the function it becomes takes them."""
    module = parse(data)
    if imported_classes:
        from .migrate.subclass import keyword_calls

        module = keyword_calls(module, imported_classes)
    analysed = analyse(module, config, imported_pipelines=imported_pipelines)
    if analysed.rule_errors:
        raise SourceError("; ".join(analysed.rule_errors))
    return analysed


def check_source(data: bytes, path: str, config: Config, links: Links | None = None) -> FileResult:
    """``links``: pipelines and generators this file imports from the project's modules."""
    links = links or Links()
    result = FileResult(path, linked=bool(links))
    if not links and not might_use_dali(data):
        return result
    try:
        analysed = analyse(parse(data), config, imported_pipelines=links.pipelines)
        if analysed.rule_errors:
            result.error = "; ".join(analysed.rule_errors)
        diagnostics = _value_diagnostics(data, path, config, links.generators)
        if not analysed.findings and not diagnostics:
            return result
        positions = Positions(analysed.module, [f.node for f in analysed.findings], data, analysed.facts)
    except SourceError as error:
        result.error = str(error)
        return result
    except Exception as error:  # one file's trouble must never stop the run
        result.error = _unexpected(error, "checking")
        return result
    diagnostics += [
        _diagnostic(path, positions, f.code, f.message, f.node, RULES_BY_CODE[f.code].fix)
        for f in analysed.findings
    ]
    result.diagnostics = _unsuppressed(diagnostics, _source_text(data, analysed.module))
    return result


def _value_diagnostics(data: bytes, path: str, config: Config,
                       imported_generators: frozenset[str] = frozenset()) -> list[Diagnostic]:
    """Dynamic-mode mistakes, from the ndd value model: only in code that uses ndd, or that
    imports generators from a module that does."""
    from .rules import VALUE_RULES

    rules = [rule for rule in VALUE_RULES if config.enabled(rule.code)]
    if (b"dynamic" not in data and not imported_generators) or not rules:
        return []
    from .values import build_model

    model = build_model(python_ast(data), imported_generators)
    lines = data.splitlines()
    diagnostics = []
    for rule in rules:
        for problem in rule().check_values(model):
            node = problem.node
            diagnostics.append(Diagnostic(
                path, node.lineno, _column(lines, node.lineno, node.col_offset), rule.code,
                f"{rule.message}: {problem.message}", rule.fix, node.end_lineno or node.lineno,
                _column(lines, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)))
    return list(dict.fromkeys(diagnostics))


def _column(lines: list[bytes], line: int, byte_offset: int) -> int:
    """``ast`` counts UTF-8 bytes; reports count characters, from 1."""
    return len(lines[line - 1][:byte_offset].decode("utf-8", "replace")) + 1


@dataclass
class _Migrated:
    """A migration and the module it was computed on: the original, or its normalized form."""

    migration: "MigrationResult"
    subject: Analysed
    normalized: "NormalizedModule | None" = None
    kept: dict[str, list[str]] = field(default_factory=dict)  # normalized graphs left as written, why


def _migrate(original: Analysed, config: Config, keep: dict[str, str], imported: dict | None = None,
             normalized_forms: dict | None = None) -> _Migrated:
    """Migrate, with ``with pipe:`` graphs in decorator form where that is possible. A graph
    whose normalized form cannot be migrated either is left as it was written.
    ``normalized_forms``: the normalized modules, analysed, of earlier tries on the same module
    (by the graphs skipped), reused: only what is kept changes between the audit's tries."""
    from .migrate import migrate_module
    from .migrate.normalize import normalize_with_graphs
    from .migrate.places import node_ids

    normalized_forms = {} if normalized_forms is None else normalized_forms

    skip: set[int] = set()
    reasons: dict[int, list] = {}
    kept: dict[str, list[str]] = {}
    while config.enabled("DM002"):
        key = (frozenset(skip), frozenset(imported or {}), frozenset(keep or {}))
        if key not in normalized_forms:
            normalized = normalize_with_graphs(original.module, skip, frozenset(keep or {}),
                                               has_with=original.facts.with_statements > 0)
            subject = None if normalized is None or not (normalized.graphs or normalized.hoists) else analyse(
                normalized.module, config, normalized.imports(), frozenset(imported or {}))
            normalized_forms[key] = (normalized, subject)
        normalized, subject = normalized_forms[key]
        if normalized is None:
            break
        reasons |= normalized.reasons
        if not normalized.graphs and not normalized.hoists:
            break
        left_reasons = _reasons_of_graphs_left(original, subject, normalized, reasons)
        migration = migrate_module(subject.module, subject.facts, subject.findings, left_reasons, keep=keep,
                                   imported=imported, loader_import=config.loader_import,
                                   handled_helpers=config.handled_helpers, capture=config.capture,
                                   imported_graph_helpers=dict(config.imported_graph_helpers))
        blocked = [g for g in normalized.graphs if g.function.name.value not in migration.migrated_pipelines]
        # a pipeline bound to a name for its iterator and then kept: the statement stays as written
        unbound = [h.statement for h in normalized.hoists if h.factory not in migration.migrated_pipelines]
        skip |= {id(statement) for statement in unbound}
        if unbound and not blocked:
            continue
        if not blocked:
            converted = set().union(*(node_ids(g.original_statement) for g in normalized.graphs))
            return _Migrated(migration, subject, normalized, _with_graphs_left(kept, original, reasons, converted))
        skip |= {id(g.original_statement) for g in blocked}
        reasons |= {id(g.reason_anchor): migration.blockers.get(g.function.name.value, []) for g in blocked}
        kept |= {_graph_label(g): [b.message for b in migration.blockers.get(g.function.name.value, [])]
                 for g in blocked}
    kept = _with_graphs_left(kept, original, reasons, set())
    return _Migrated(migrate_module(original.module, original.facts, original.findings, reasons, keep, imported,
                                    config.loader_import, config.handled_helpers, config.capture,
                                    dict(config.imported_graph_helpers)), original, None, kept)


def _with_graphs_left(kept: dict[str, list[str]], original: Analysed, reasons: dict[int, list],
                      converted: set[int]) -> dict[str, list[str]]:
    """``kept``, and each graph left as written (not ``converted``) with its reasons."""
    kept = dict(kept)
    for graph in (g for g in original.facts.graphs if g.kind != "decorator" and id(g.node) not in converted):
        label = _written_graph_label(graph, original.facts)
        if label not in kept:
            kept[label] = [b.message for b in reasons.get(id(graph.node), [])] or [
                "graph not migrated automatically: rewrite it as a generator of ndd calls"]
    return kept


def _reasons_of_graphs_left(original: Analysed, subject: Analysed, normalized, reasons: dict[int, list]) -> dict:
    """The blockers of graphs an earlier try kept, for the same graphs in the normalized module,
    where they are left as written (as new nodes): matched in module order."""
    from .migrate.places import node_ids

    converted = set().union(*(node_ids(g.original_statement) for g in normalized.graphs))
    before = [g for g in original.facts.graphs if g.kind != "decorator" and id(g.node) not in converted]
    after = [g for g in subject.facts.graphs if g.kind != "decorator"]
    if len(before) != len(after):
        return {}
    return {id(new.node): reasons[id(old.node)] for old, new in zip(before, after) if id(old.node) in reasons}


def _written_graph_label(graph, facts) -> str:
    """A subclass's name for its ``define_graph``; the pipeline variable of a ``with`` graph."""
    for site in facts.pipeline_subclass_defs:
        if any(statement is graph.node for statement in site.node.body.body):
            return site.name
    return graph.name


def _graph_label(graph) -> str:
    """How a person names a normalized graph: its class, or the pipeline variable of its ``with``."""
    if isinstance(graph.original_node, cst.ClassDef):
        return graph.original_node.name.value
    return graph.variable or graph.function.name.value


def _labels(migrated: _Migrated) -> dict[str, str]:
    """Synthesized graph function -> the name a person knows the pipeline by."""
    return {g.function.name.value: _graph_label(g) for g in (migrated.normalized.graphs if migrated.normalized else [])}


def pipeline_outcomes(migrated: _Migrated) -> list[tuple[str, list[str]]]:
    """Each pipeline of the module with why it stays in pipeline mode; no reasons: migrated."""
    labels = _labels(migrated)
    migration = migrated.migration
    outcomes = [(labels.get(name, name), []) for name in migration.migrated_pipelines]
    outcomes += [(labels.get(name, name), [b.message for b in blockers]) for name, blockers in migration.blockers.items()]
    outcomes += [(label, why) for label, why in migrated.kept.items() if label not in dict(outcomes)]
    return [(label, _external_first(why)) for label, why in outcomes]


def _external_first(reasons: list[str]) -> list[str]:
    """A reason outside the user's code (Triton, a TensorFlow plugin) is named before blockers."""
    from .migrate.todo import KEPT

    return sorted(reasons, key=lambda reason: not reason.startswith(KEPT))


def _safety_by_label(migrated: _Migrated) -> dict[str, tuple[str, str]]:
    labels = _labels(migrated)
    return {labels.get(name, name): level for name, level in migrated.migration.safety.items()}


def _kept_by_noqa(original: Analysed, data: bytes, suppressions) -> dict[str, str]:
    """``# noqa: DM001`` (or a bare ``# noqa``) on a pipeline's decorator or ``def`` line keeps
    it, as ruff's fixes leave a suppressed violation alone."""
    from .migrate.todo import KEPT

    graphs = [g for g in original.facts.graphs if g.kind == "decorator"]
    if not graphs or not suppressions.line_codes:
        return {}
    nodes = [node for g in graphs for node in (g.node.decorators[0], g.node.name)]
    positions = Positions(original.module, nodes, data, original.facts)
    kept = {}
    for graph in graphs:  # from the first decorator to the ``def`` line
        first, last = positions[graph.node.decorators[0]].start.line, positions[graph.node.name].start.line
        if suppressions.suppressed("DM001", first, last):
            kept[graph.name] = f"{KEPT}: `# noqa` on its definition"
    return kept


AUDIT_ROUNDS = 4


def _audited_migration(original: Analysed, data: bytes, config: Config, keep: dict[str, str],
                       imported: dict) -> tuple[_Migrated, dict[str, str]]:
    """Migrate, audit the output, and keep in pipeline mode every pipeline whose migrated code
    fails the audit, until it passes. Returns the migration and the imported pipelines whose
    uses here failed (their home module must keep them)."""
    from .audit import audit

    blocked_imports: dict[str, str] = {}
    normalized_forms: dict = {}
    for _ in range(AUDIT_ROUNDS):
        migrated = _migrate(original, config, keep, imported, normalized_forms)
        if config.exact_only and _keep_inexact(migrated, keep):
            continue
        new_data = migrated.migration.module.bytes
        if new_data == data:
            return migrated, blocked_imports
        _never_write_what_does_not_parse(new_data)
        generators = frozenset(imported) - set(migrated.migration.imports_blocked)  # imports migrated here
        problems = audit(new_data, migrated.migration.module.encoding, data, generators)
        if not problems:
            return migrated, blocked_imports
        blamed = _blamed(problems, migrated.migration.migrated_pipelines, set(imported))
        if not blamed:
            raise SourceError(f"the migrated code failed its audit: line {problems[0].line}: "
                              f"{problems[0].describe()}")
        for name, why in blamed.items():
            if name in imported:
                blocked_imports[name] = why
                del imported[name]
            else:
                keep[name] = why
    raise SourceError("the migrated code did not pass its audit")


def _inline_one_shots(migration, data: bytes) -> list[str]:
    """A notebook's generators made and advanced once, inlined where the batch is taken (their
    names); the audited generator form stays if the inlined module does not pass the audit too.
    The streams it made once get their set-up where they are made (``stream_setup``)."""
    from .migrate.one_shot import inline_one_shots
    from .migrate.stream_setup import hoist_stream_setups

    module, inlined = inline_one_shots(migration.module, migration.migrated_pipelines)
    if inlined and _passes_the_audit(module, data):
        migration.module = module
    else:
        inlined = []
    streams = [name for name in migration.migrated_pipelines if name not in inlined]
    module, hoisted = hoist_stream_setups(migration.module, streams)
    if hoisted and _passes_the_audit(module, data):
        migration.module = module
    return inlined


def _passes_the_audit(module, data: bytes) -> bool:
    from .audit import audit

    new_data = module.bytes  # generated once: both checks read it
    try:
        _never_write_what_does_not_parse(new_data)
    except SourceError:
        return False
    return not audit(new_data, module.encoding, data)


def _never_write_what_does_not_parse(new_data: bytes) -> None:
    """CPython's parse, which the audit then reads: the same one, made once."""
    try:
        python_ast(new_data)
    except (SyntaxError, ValueError) as error:
        raise SourceError(f"internal error: the migrated code does not parse ({error})") from None


def _keep_inexact(migrated: _Migrated, keep: dict[str, str]) -> bool:
    """``--exact-only``: pipelines whose migration would not give bit-identical data stay."""
    from .migrate.todo import KEPT

    inexact = {name: f"{KEPT}: `--exact-only`, and its migration is {level}: {why}"
               for name, (level, why) in migrated.migration.safety.items() if level != "exact"}
    keep.update(inexact)
    return bool(inexact)


def _blamed(problems, migrated: list[str], imported: set[str]) -> dict[str, str]:
    """Pipeline -> why it stays: those whose values or code each problem is in; every pipeline
    of the module when a problem names none of them."""
    from .migrate.todo import KEPT

    candidates = set(migrated) | imported
    blamed: dict[str, list] = {}
    for problem in problems:
        for name in (problem.origins & candidates) or candidates:
            blamed.setdefault(name, []).append(problem)
    return {name: f"{KEPT}: after migration {found[0].describe()}" for name, found in blamed.items()}


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
        source = data if self.normalized is None else migrated.subject.module.bytes
        self.positions = Positions(migrated.subject.module, nodes, source, migrated.subject.facts)
        self.synthesized: dict[int, cst.CSTNode] = {}
        self.collapsed: dict[int, cst.CSTNode] = {}  # id(node in a converted subclass) -> the class
        if self.normalized is not None:
            graphs = self.normalized.graphs
            self.synthesized = {id(g.function.decorators[0]): g.original_node for g in graphs}
            for graph in (g for g in graphs if g.collapsed):
                self.collapsed.update(dict.fromkeys(_node_ids(graph.function), graph.original_node))
            self.original_positions = Positions(original.module, [g.original_node for g in graphs], data,
                                                original.facts)

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
    migrated, and so is a base class merged into its subclasses; their findings, from the
    original, are what the conversion fixed."""
    classes = [g.original_node for g in migrated.normalized.graphs if g.collapsed] if migrated.normalized else []
    if not classes:
        return []
    removed = set(migrated.normalized.removed_bases)
    bases = [s for s in original.module.body if isinstance(s, cst.ClassDef) and s.name.value in removed]
    inside = set().union(*(_node_ids(c) for c in classes))
    gone = set().union(*(_node_ids(c) for c in bases))  # merged into the classes: every finding is fixed
    legacy = [f for f in original.findings if (f.code == "DM009" and id(f.node) in inside) or id(f.node) in gone]
    positions = Positions(original.module, [f.node for f in legacy], data, original.facts)
    return [_diagnostic(path, positions, f.code, f.message, f.node, "fixed") for f in legacy]


def _imported_graph_helpers(data: bytes, path: str, config: Config) -> tuple[tuple[str, str], ...]:
    from .imported_helpers import imported_graph_helpers

    if path in ("-", "<stdin>") or not Path(path).exists():
        return ()
    try:
        tree = python_ast(data)
    except (SyntaxError, ValueError):  # a notebook's JSON: its cells import nothing from files here
        return ()
    return tuple(sorted(imported_graph_helpers(tree, Path(path), config.root).items()))


def migrate_source(data: bytes, path: str, config: Config, keep: dict[str, str] | None = None,
                   imported: dict | None = None) -> FileResult:
    """The migrated bytes (``new_source``, None when unchanged), with what was fixed and left.
    ``keep``: top-level pipeline names that other files use, to leave in pipeline mode.
    ``imported``: local name -> the plan of a pipeline that another file defines and migrates."""
    result = FileResult(path)
    if not imported and not might_use_dali(data):
        return result
    try:
        classes = {local: plan.subclass for local, plan in (imported or {}).items() if plan.subclass is not None}
        original = _analysed_or_error(data, config, frozenset(imported or {}), classes)
        suppressions = parse_suppressions(_source_text(data, original.module))
        # a file calling another file's migrating pipeline has no finding of its own there, but
        # its calls and uses of that pipeline must be migrated, or block it
        if (not original.findings and not imported) or suppressions.whole_file:
            return result
        keep = {**_kept_by_noqa(original, data, suppressions), **(keep or {})}
        config = replace(config, imported_graph_helpers=_imported_graph_helpers(data, path, config))
        migrated, audit_blocked = _audited_migration(original, data, config, keep, dict(imported or {}))
        if config.one_shot and is_notebook(path):
            labels = _labels(migrated)
            result.inlined = [labels.get(name, name) for name in _inline_one_shots(migrated.migration, data)]
        result.imports_blocked = {**migrated.migration.imports_blocked, **audit_blocked}
        result.pipelines = pipeline_outcomes(migrated)
        result.safety = _safety_by_label(migrated)
        new_data = migrated.migration.module.bytes
        if new_data != data:
            from .migrate.wrap import wrap_long_lines

            new_data = wrap_long_lines(data, migrated.migration.module, config.line_length, new_data)
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
        # a base class merged into its derived classes is gone: its importers must be looked at too
        removed_bases = migrated.normalized.removed_bases if migrated.normalized else []
        result.exported = [*migrated.migration.exported, *removed_bases]
        result.imports_loader = migrated.migration.imports_loader
        result.loader_for_jax = migrated.migration.loader_for_jax
        result.loader_modes = migrated.migration.loader_modes
        result.helper_requests = migrated.migration.helper_requests
    return result


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return list(dict.fromkeys(diagnostics))


def unified_diff(old: bytes, new: bytes, path: str) -> str:
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}"))


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def _wide_encoding(data: bytes, path: str) -> FileResult | None:
    """UTF-16 and UTF-32 text never spells b"dali", so the prefilter would skip it in silence."""
    if data.startswith(WIDE_BOMS):
        return FileResult(path, error="UTF-16/32 encoded (byte order mark): save it as UTF-8 to check or "
                                      "migrate it")
    return None


def check_file(data: bytes, path: str, config: Config, links: Links | None = None) -> FileResult:
    """``check_source`` for Python files and the code cells of notebooks."""
    if (wide := _wide_encoding(data, path)) is not None:
        return wide
    if not is_notebook(path):
        return check_source(data, path, config, links)
    from .notebook import NotebookError, read_code_cells

    result = FileResult(path, linked=bool(links))
    if not links and not might_use_dali(data):
        return result
    try:
        cells = read_code_cells(data)
    except NotebookError as error:
        result.error = str(error)
        return result
    inner = check_source(cells.source.encode("utf-8"), path, config, links)
    result.error = _cell_error(cells, inner.error)
    result.diagnostics = [cells.locate(d) for d in inner.diagnostics]
    return result


def migrate_file(data: bytes, path: str, config: Config, keep: dict[str, str] | None = None,
                 imported: dict | None = None) -> FileResult:
    """``migrate_source`` for Python files and the code cells of notebooks."""
    if (wide := _wide_encoding(data, path)) is not None:
        return wide
    if not is_notebook(path):
        return migrate_source(data, path, config, keep, imported)
    from .notebook import NotebookError, cell_diff, read_code_cells, write_code_cells

    result = FileResult(path)
    if not might_use_dali(data):
        return result
    try:
        cells = read_code_cells(data)
        inner = migrate_source(cells.source.encode("utf-8"), path, config)
        if inner.new_source:
            _refuse_what_opaque_cells_use(cells, config)
        new_data = write_code_cells(cells, inner.new_source.decode("utf-8")) if inner.new_source else data
    except NotebookError as error:
        result.error = str(error)
        return result
    result.error = _cell_error(cells, inner.error)
    result.diagnostics = [cells.locate(d) for d in inner.diagnostics]
    result.pipelines, result.safety, result.inlined = inner.pipelines, inner.safety, inner.inlined
    result.imports_loader = inner.imports_loader
    result.loader_for_jax = inner.loader_for_jax
    result.loader_modes = inner.loader_modes
    if inner.error is None and new_data != data:
        result.changed, result.new_source = True, new_data
        result.diff = cell_diff(cells, new_data, path)
    return result


# cell magics whose cells are another language or written to a file: DALI's names in them are text
NOT_RUN_HERE = frozenset({"bash", "sh", "script", "html", "HTML", "javascript", "js", "latex", "markdown",
                          "svg", "perl", "ruby", "writefile", "file", "system"})


# line magics that run the Python statement they are given
PYTHON_LINE_MAGICS = frozenset({"time", "timeit", "prun", "debug", "memit", "lprun"})


def _refuse_what_opaque_cells_use(cells, config: Config) -> None:
    """Code the tool does not read as Python, under a cell magic (``%%timeit``, ``%%prun``) or a
    line magic (``%timeit pipe.run()``), must not use a name whose meaning the migration changes
    (a pipeline, its variable, its outputs): its ``pipe.run()`` would meet a generator."""
    from .notebook import NotebookError, cell_magic

    opaque = [(f"cell {index + 1} runs under `%%{cell_magic(text)}`", text) for index, text in cells.opaque
              if cell_magic(text) not in NOT_RUN_HERE]
    opaque += [(f"`{line.strip()}` runs a line magic", line) for line in cells.magics
               if (magic := re.search(r"%(\w+)", line)) and magic.group(1) in PYTHON_LINE_MAGICS]
    if not opaque:
        return
    facts = analyse(parse(cells.source.encode("utf-8")), config).facts
    changed = (facts.pipeline_var_names() | facts.pipeline_functions | set(facts.pipeline_helpers) | facts.tensorlists
               | facts.output_tuples_seen | set(facts.output_origin))
    for where, text in opaque:
        used = sorted(changed & set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)))
        if used:
            raise NotebookError(f"{where}, which dali-migrate does not read as Python, and uses `{used[0]}`, "
                                "which the migration changes; make it plain Python (code under `%%time` is "
                                "read as Python), then migrate again")


def _cell_error(cells, error: str | None) -> str | None:
    """Errors name lines of the joined cells; say which cell and line they are."""
    if error is None:
        return None
    match = re.search(r"line (\d+), column (\d+)", error)
    if match is None:
        return error
    located = cells.locate(Diagnostic("", int(match.group(1)), int(match.group(2)), "", "", ""))
    return error.replace(match.group(0), f"cell {located.cell}, line {located.line}, column {located.column}")
