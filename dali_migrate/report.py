"""Output formats. The only module that knows about rich."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import TextIO

from . import __version__
from .diagnostics import Diagnostic, FileResult

FORMATS = ("text", "json", "github", "sarif")


def _console(stream: TextIO):
    from rich.console import Console

    return Console(file=stream, highlight=False, soft_wrap=True)


def _all_diagnostics(results: list[FileResult]) -> list[Diagnostic]:
    return [d for r in results for d in r.diagnostics]


def write_statistics(results: list[FileResult], stream: TextIO) -> None:
    """One line per rule: how many findings, the code, the rule's message (ruff's --statistics)."""
    from .rules import RULES_BY_CODE

    counts = Counter(d.code for d in _all_diagnostics(results))
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        stream.write(f"{count:>6}  {code}  {RULES_BY_CODE[code].message}\n")
    for r in results:
        if r.error:
            stream.write(f"{r.path}: error {r.error}\n")


def write_check_report(results: list[FileResult], fmt: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    diagnostics = _all_diagnostics(results)
    if fmt == "json":
        stream.write(json.dumps(_json_report(results), indent=2) + "\n")
    elif fmt == "github":
        for d in diagnostics:
            line, column, end_line, end_column = _in_file(d)
            stream.write(f"::warning file={_gh_property(d.path)},line={line},col={column},"
                         f"endLine={end_line},endColumn={end_column},title={d.code}::{_gh_escape(d.message)}\n")
        for r in results:
            if r.error:
                stream.write(f"::error file={_gh_property(r.path)}::{_gh_escape(r.error)}\n")
    elif fmt == "sarif":
        stream.write(json.dumps(sarif_report(results), indent=2) + "\n")
    else:
        _text_report(results, stream)


# Fewer files than this finish before a bar is worth drawing.
PROGRESS_MIN_FILES = 200


def progress_callbacks(stream: TextIO, enabled: bool = True):
    """(on_start, on_file) that draw a progress bar on an interactive terminal, outside CI, for
    long runs; (None, None) otherwise, so pipes and CI logs stay clean."""
    import os

    if not enabled or os.environ.get("CI") or not getattr(stream, "isatty", lambda: False)():
        return None, None
    from rich.progress import Progress

    bar = Progress(console=_console(stream), transient=True)
    task = None

    def on_start(total: int) -> None:
        nonlocal task
        if total >= PROGRESS_MIN_FILES:
            bar.start()
            task = bar.add_task("files", total=total)

    def on_file() -> None:
        if task is not None:
            bar.advance(task)
            if bar.finished:
                bar.stop()

    return on_start, on_file


def _gh_property(text: str) -> str:
    """A workflow command's property value: ``:`` and ``,`` end it, a newline ends the command."""
    return _gh_escape(text).replace(":", "%3A").replace(",", "%2C")


def _gh_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _in_file(d: Diagnostic) -> tuple[int, int, int, int]:
    """Where an annotation points in the file itself: notebooks by their JSON text."""
    if d.file_line:
        return d.file_line, d.file_column, d.file_end_line, d.file_end_column
    return d.line, d.column, d.end_line or d.line, d.end_column or d.column


def _json_report(results: list[FileResult]) -> dict:
    return {
        "version": __version__,
        "diagnostics": [
            {"path": d.path, "line": d.line, "column": d.column, "end_line": d.end_line,
             "end_column": d.end_column, "code": d.code, "message": d.message, "fix": d.fix,
             "cell": d.cell}
            for d in _all_diagnostics(results)
        ],
        "errors": [{"path": r.path, "message": r.error} for r in results if r.error],
    }


def _uri(path: str) -> str:
    """A relative URI reference (RFC 3986) for a path: SARIF's ``uri`` format."""
    from urllib.parse import quote

    return quote(path.replace("\\", "/"), safe="/")


def _region(d: Diagnostic) -> dict:
    line, column, end_line, end_column = _in_file(d)
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def sarif_report(results: list[FileResult]) -> dict:
    from .rules import ALL_RULES

    rules = [
        {"id": rule.code, "name": rule.name, "shortDescription": {"text": rule.message},
         "fullDescription": {"text": rule.doc_sections().get("What it does", rule.message)},
         "help": {"text": rule.explained()}}
        for rule in ALL_RULES
    ]
    index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    sarif_results = [
        {"ruleId": d.code, "ruleIndex": index[d.code], "level": "warning",
         "message": {"text": d.message},
         "locations": [{"physicalLocation": {
             "artifactLocation": {"uri": _uri(d.path)},
             "region": _region(d)}}]}
        for d in _all_diagnostics(results)
    ]
    notifications = [
        {"level": "error", "message": {"text": f"{r.path}: {r.error}"}} for r in results if r.error
    ]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "dali-migrate", "version": __version__,
                                "informationUri": "https://github.com/NVIDIA/DALI", "rules": rules}},
            "results": sarif_results,
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
        }],
    }


def _text_report(results: list[FileResult], stream: TextIO) -> None:
    """Coloured by rich on a terminal; plain lines otherwise (much faster for long reports)."""
    diagnostics = _all_diagnostics(results)
    lines = []
    for d in diagnostics:
        # no per-finding "[fixable]": whether migrate fixes a finding depends on the whole
        # pipeline (one blocker keeps it all), which only a migration finds out
        lines.append((f"{d.location}: ", ("red", d.code), f" {d.message}"))
    for r in results:
        if r.error:
            lines.append((f"{r.path}: ", ("red", "error"), f" {r.error}"))
    if diagnostics:
        files = sum(1 for r in results if r.diagnostics)
        lines.append((f"Found {len(diagnostics)} pipeline-mode use{'s' if len(diagnostics) != 1 else ''} "
                      f"in {files} file(s).",))
        if any(d.fix in ("always", "sometimes") for d in diagnostics):
            lines.append((("dim", "`dali-migrate --diff PATH` shows what migrate would fix; "
                                  "what it cannot, it keeps with a TODO."),))
    if getattr(stream, "isatty", lambda: False)():
        console = _console(stream)
        for parts in lines:
            console.print(*[_styled(part) for part in parts], sep="")
    else:
        stream.write("".join("".join(p if isinstance(p, str) else p[1] for p in parts) + "\n" for parts in lines))


def _styled(part):
    from rich.text import Text

    return Text(part) if isinstance(part, str) else Text(part[1], style=part[0])


def _markup_escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def write_migration_report(results: list[FileResult], stream: TextIO, show_diff: bool, wrote: bool) -> None:
    console = _console(stream)
    if show_diff:
        for r in results:
            if r.diff:
                stream.write(r.diff)
    # a file that could not be written (read-only, hard-linked) migrated nothing
    landed = _all_diagnostics([r for r in results if not r.error])
    fixed = Counter(d.code for d in landed if d.fix == "fixed")
    todo = Counter(d.code for d in landed if d.fix == "todo")
    for d in landed:
        if d.fix == "todo":
            console.print(f"[bold]{d.location}[/]: [yellow]TODO {d.code}[/] {_markup_escape(d.message)}")
    for r in results:
        if r.error:
            console.print(f"[bold]{r.path}[/]: [red]error[/] {_markup_escape(r.error)} (file left unchanged)")
    for r in results:
        for name, reasons in r.pipelines if not r.error else []:
            if reasons:
                more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
                console.print(f"[bold]{r.path}[/]: pipeline `{name}` [yellow]kept[/]: "
                              f"{_markup_escape(reasons[0])}{more}")
            else:
                level, why = r.safety.get(name, ("exact", ""))
                safety = f" ({level}: {_markup_escape(why)})" if level != "exact" else ""
                inlined = " (run once: inlined where it ran)" if name in r.inlined else ""
                console.print(f"[bold]{r.path}[/]: pipeline `{name}` [green]migrated[/]{inlined}{safety}")
    for r in results:
        if r.created and r.changed:
            console.print(f"[bold]{r.path}[/]: {'created' if wrote else 'would create'}: the loader (PyTorch"
                          f"{', JAX' if b'class DALIJaxLoader' in (r.new_source or b'') else ''}) that migrated "
                          "files import in place of DALIGenericIterator")
    changed = sum(1 for r in results if r.changed and not r.created)
    verb = "migrated" if wrote else "would migrate"
    outcomes = [reasons for r in results if not r.error for _, reasons in r.pipelines]
    console.print(f"{verb} {changed} file(s); {sum(not o for o in outcomes)} pipeline(s) migrated, "
                  f"{sum(bool(o) for o in outcomes)} kept; {sum(fixed.values())} site(s) migrated, "
                  f"{sum(todo.values())} left with a TODO; {sum(1 for r in results if r.error)} error(s)")
    codes = sorted(set(fixed) | set(todo))
    if not codes:
        return
    from .rules import RULES_BY_CODE  # imports LibCST: only when there is something to name

    for code in codes:
        console.print(f"  {code} {RULES_BY_CODE[code].name}: {fixed.get(code, 0)} migrated, {todo.get(code, 0)} TODO")
