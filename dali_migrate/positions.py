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


def _ast_statements(module: cst.Module, source: bytes) -> list[list[ast.stmt]] | None:
    """The ``ast`` statements of each LibCST top-level statement (a line ``a; b`` holds two)."""
    try:
        tree = python_ast(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    grouped, index = [], 0
    for statement in module.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        grouped.append(tree.body[index:index + count])
        index += count
    return grouped if index == len(tree.body) and all(grouped) else None


def _first_line(statement: cst.CSTNode, parts: list[ast.stmt]) -> int:
    """The 1-based first line of ``statement``, leading comments included."""
    node = parts[0]
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)]) - len(statement.leading_lines)


_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+\Z", re.S)


class Positions:
    """``positions[node]`` -> CodeRange, for the nodes named when it was made. ``order`` (the
    analysis's ``ModuleFacts``) says which top-level statement holds each node, and where the
    node comes among the nodes of its kind there."""

    def __init__(self, module: cst.Module, nodes: list[cst.CSTNode], source: bytes | None = None,
                 order=None) -> None:
        self.ranges: dict[int, CodeRange] = {}
        grouped = _ast_statements(module, source) if source is not None and order is not None else None
        by_statement: dict[int, list[cst.CSTNode]] = {}
        for node in nodes:
            by_statement.setdefault(order.top_level.get(id(node), -1) if grouped else -1, []).append(node)
        if -1 in by_statement:  # no source, no ast, or a node the analysis did not see
            self.ranges = {id(n): r for n, r in _whole_module(module).items()}
            return
        lines = _LINE.findall(source.decode(module.encoding, "replace"))
        for index, wanted in sorted(by_statement.items()):
            statement = _AstStatement(grouped[index], lines)
            if not self._add_from_ast(module, statement, index, wanted, order):
                first_line = _first_line(module.body[index], grouped[index])
                self._add_statement(module, module.body[index], first_line - 1, {id(n) for n in wanted})

    def _add_from_ast(self, module: cst.Module, statement: "_AstStatement", index: int,
                      wanted: list[cst.CSTNode], order) -> bool:
        found: dict[int, CodeRange] = {}
        for node in wanted:
            kind = order_kind(node)
            if kind is None or order.kind_totals.get((index, kind)) != len(statement.nodes(kind)):
                return False
            span = statement.span(module, node, kind, statement.nodes(kind)[order.ordinals[id(node)]])
            if span is None:
                return False
            found[id(node)] = span
        self.ranges.update(found)
        return True

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


# -- positions from ``ast`` ----------------------------------------------------------------
# The node kinds a report names most (calls, decorators, classes, keyword arguments, ...) have
# one counterpart each in ``ast``, which carries its own positions. The analysis counts, in
# LibCST's visiting order, the nodes of each kind in every top-level statement; ``ast``'s
# nodes of that kind sorted by where they start are in the same order. A statement whose
# counts differ, or whose text does not match, goes through LibCST's provider instead.


def order_kind(node: cst.CSTNode) -> str | None:
    """The kind under which the analysis counts ``node``, or None when ``ast`` has no
    one-to-one counterpart for it."""
    kind = _KINDS.get(type(node))
    if kind == "keyword" and node.keyword is None and node.star != "**":
        return None  # a positional argument: ``ast`` has no node for it
    return kind


_KINDS = {cst.Call: "Call", cst.Subscript: "Subscript", cst.Decorator: "Decorator", cst.ClassDef: "ClassDef",
          cst.FunctionDef: "FunctionDef", cst.Arg: "keyword", cst.With: "With", cst.Comparison: "Compare"}


_AST_KINDS = {ast.Call: "Call", ast.Subscript: "Subscript", ast.ClassDef: "ClassDef", ast.FunctionDef: "FunctionDef",
              ast.AsyncFunctionDef: "FunctionDef", ast.keyword: "keyword", ast.With: "With", ast.AsyncWith: "With",
              ast.Compare: "Compare"}


def _ast_nodes(statements: list[ast.stmt]) -> dict[str, list[ast.AST]]:
    """The nodes of each kind in ``statements``, in the order they start (an outer node first)."""
    found: dict[str, list[ast.AST]] = {}
    for statement in statements:
        for node in ast.walk(statement):
            kind = _AST_KINDS.get(type(node))
            if kind is not None:
                found.setdefault(kind, []).append(node)
            if kind in ("ClassDef", "FunctionDef") and node.decorator_list:
                found.setdefault("Decorator", []).extend(node.decorator_list)
    for nodes in found.values():
        nodes.sort(key=lambda n: (n.lineno, n.col_offset, -n.end_lineno, -n.end_col_offset))
    return found


class _AstStatement:
    """The ``ast`` statements that make up one LibCST top-level statement, and their source."""

    def __init__(self, statements: list[ast.stmt], lines: list[str]) -> None:
        self.statements = statements
        self.lines = lines
        self.by_kind: dict[str, list[ast.AST]] | None = None

    def nodes(self, kind: str) -> list[ast.AST]:
        if self.by_kind is None:
            self.by_kind = _ast_nodes(self.statements)
        return self.by_kind.get(kind, [])

    def column(self, line: int, byte_offset: int) -> int:
        text = self.lines[line - 1]
        return byte_offset if text.isascii() else len(text.encode("utf-8")[:byte_offset].decode("utf-8", "replace"))

    def text(self, start: CodePosition, end: CodePosition) -> str:
        if start.line == end.line:
            return self.lines[start.line - 1][start.column:end.column]
        middle = self.lines[start.line:end.line - 1]
        return "".join([self.lines[start.line - 1][start.column:], *middle, self.lines[end.line - 1][:end.column]])

    def span(self, module: cst.Module, node: cst.CSTNode, kind: str, found: ast.AST) -> CodeRange | None:
        start = CodePosition(found.lineno, self.column(found.lineno, found.col_offset))
        end = CodePosition(found.end_lineno, self.column(found.end_lineno, found.end_col_offset))
        if kind == "Decorator":
            line = self.lines[start.line - 1][:start.column].rstrip(" \t")
            return CodeRange(CodePosition(start.line, len(line) - 1), end) if line.endswith("@") else None
        if kind in ("ClassDef", "FunctionDef", "With"):
            head = self.lines[start.line - 1][start.column:]
            return CodeRange(start, end) if head.startswith(("class", "def", "async", "with")) else None
        bare = node.with_changes(lpar=[], rpar=[]) if kind != "keyword" else node.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        # nested lines are indented relative to their block in LibCST's code: compare without blanks
        same = _squeezed(module.code_for_node(bare)) == _squeezed(self.text(start, end))
        return CodeRange(start, end) if same else None


def _squeezed(text: str) -> str:
    return "".join(text.split())
