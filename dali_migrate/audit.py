"""The audit of a migrated module: what it still says in pipeline mode, and the dynamic-mode
mistakes it would make, read with the same models as ``check``.

A migration is only reported when its output passes: every pipeline-mode finding left in the
output sits under a ``# TODO(dali-migrate)`` comment (or a ``noqa``), and the ndd value model
finds no mistake in it (no comment excuses those: a kept pipeline has no ndd values, and a
comment left by an earlier run must not let a later one through). A problem names the generator functions its values came from, so that
the engine can keep exactly those pipelines in pipeline mode and migrate again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from .config import Config
from .positions import Positions
from .suppress import parse_suppressions
from .values import build_model

TODO_MARK = "TODO(dali-migrate)"


@dataclass(frozen=True)
class AuditProblem:
    code: str
    message: str
    line: int
    statement: str  # the line of the migrated code, as a person would look for it
    origins: frozenset[str]  # functions whose values (or body) the problem is in
    excusable: bool = True  # a pipeline-mode finding, which a TODO comment above may excuse

    def describe(self) -> str:
        return f"`{self.statement}` would fail ({self.code}: {self.message})"


def audit(new_source: bytes, new_module: cst.Module, config: Config) -> list[AuditProblem]:
    from .engine import analyse

    text = new_source.decode(new_module.encoding, "replace")
    lines = text.splitlines()
    tree = ast.parse(new_source)
    suppressions = parse_suppressions(text)
    # (code, message, line, origins, whether a TODO comment above excuses it)
    found: list[tuple[str, str, int, frozenset[str], bool]] = []
    for problem in build_model(tree).problems:  # a mistake in ndd code: no comment excuses it
        found.append((problem.code, problem.message, problem.line, problem.origins, False))
    analysed = analyse(new_module, config)
    if analysed.findings:
        positions = Positions(new_module, [f.node for f in analysed.findings], new_source,
                              analysed.facts.top_level)
        enclosing = _enclosing_functions(tree)
        for finding in analysed.findings:
            line = positions[finding.node].start.line
            found.append((finding.code, finding.message, line, enclosing(line), True))
    problems: dict[tuple[str, int], AuditProblem] = {}
    for code, message, line, origins, excusable in found:
        if (excusable and covered_by_todo(lines, line)) or suppressions.suppressed(code, line, line):
            continue
        statement = _shortened(_without_comment(lines[line - 1]).strip())
        problems.setdefault((code, line), AuditProblem(code, message, line, statement, origins, excusable))
    return sorted(problems.values(), key=lambda p: (p.line, p.code))


def _without_comment(line: str) -> str:
    """The code of a line; a ``#`` inside a string stays."""
    import io
    import tokenize

    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return line


def _shortened(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _enclosing_functions(tree: ast.Module):
    spans = [(node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]

    def enclosing(line: int) -> frozenset[str]:
        return frozenset(name for first, last, name in spans if first <= line <= last)

    return enclosing


def _todo_above(lines: list[str], index: int) -> bool:
    probe = index - 1
    while probe >= 0 and lines[probe].lstrip().startswith(("#", "@")):
        if TODO_MARK in lines[probe]:
            return True
        probe -= 1
    return False


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def covered_by_todo(lines: list[str], line: int) -> bool:
    """A TODO comment sits above ``line``'s statement or above one of its enclosing blocks."""
    index = line - 1
    if index >= len(lines):
        return False
    if _todo_above(lines, index):
        return True
    depth = _indent(lines[index])
    for probe in range(index - 1, -1, -1):
        text = lines[probe]
        if text.strip() and not text.lstrip().startswith("#") and _indent(text) < depth:
            if _todo_above(lines, probe):
                return True
            depth = _indent(text)
    return False
