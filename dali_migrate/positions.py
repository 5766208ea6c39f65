"""Line and column of the nodes a report names, without generating code for the whole module.

LibCST's PositionProvider regenerates the whole module to count characters: on DALI files that
was nearly half the time of a check. Only the top-level statements that hold a reported node
need it. Where each of those starts comes from Python's own parser (``ast``, written in C): its
first line, less the comment and blank lines LibCST attaches to the statement. Anything ``ast``
cannot parse (a newer grammar than this Python's) falls back to the whole-module provider.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider


@lru_cache(maxsize=8)
def python_ast(source: bytes) -> ast.Module:
    """CPython's own parse of ``source``, made once per file: the engine screens every file with
    it before LibCST sees it, and the positions of its findings come from it. PEP 810's
    ``lazy import`` (Python 3.15) is read as a plain import where this Python does not know it:
    it binds the same names."""
    try:
        return ast.parse(source)
    except SyntaxError:
        if b"lazy" not in source:
            raise
        plain = LAZY_IMPORT.sub(rb"\1\2", source)  # line numbers stay; columns move on those lines
        if plain == source:
            raise
        return ast.parse(plain)


LAZY_IMPORT = re.compile(rb"^([ \t]*)lazy[ \t]+((?:import|from)[ \t])", re.M)


def _statement_first_lines(module: cst.Module, source: bytes) -> list[int] | None:
    """The 1-based first line (leading comments included) of each top-level statement."""
    try:
        tree = python_ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    code_lines = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None) or []
        code_lines.append(min([node.lineno, *(d.lineno for d in decorators)]))
    first_lines = []
    index = 0
    for statement in module.body:
        if index >= len(code_lines):
            return None
        first_lines.append(code_lines[index] - len(statement.leading_lines))
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return first_lines if index == len(code_lines) else None


class Positions:
    """``positions[node]`` -> CodeRange, for the nodes named when it was made. ``top_level``
    (the analysis's ``ModuleFacts.top_level``) says which top-level statement holds each node."""

    def __init__(self, module: cst.Module, nodes: list[cst.CSTNode], source: bytes | None = None,
                 top_level: dict[int, int] | None = None) -> None:
        self.ranges: dict[int, CodeRange] = {}
        first_lines = _statement_first_lines(module, source) if source is not None and top_level else None
        statements = {top_level.get(id(node), -1) for node in nodes} if first_lines else {-1}
        if -1 in statements:  # no source, no ast, or a node the analysis did not see
            self.ranges = {id(n): r for n, r in _whole_module(module).items()}
            return
        wanted = {id(node) for node in nodes}
        for position in sorted(statements):
            self._add_statement(module, module.body[position], first_lines[position] - 1, wanted)

    def _add_statement(self, module: cst.Module, statement, line_offset: int, wanted: set[int]) -> None:
        alone = module.with_changes(body=[statement], header=[], footer=[])
        for node, span in _whole_module(alone).items():
            if id(node) in wanted:
                self.ranges[id(node)] = CodeRange(
                    CodePosition(span.start.line + line_offset, span.start.column),
                    CodePosition(span.end.line + line_offset, span.end.column),
                )

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        return self.ranges[id(node)]


def _whole_module(module: cst.Module):
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
