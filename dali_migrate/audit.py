"""The audit of a migrated module: the dynamic-mode mistakes it would make, read with the model
that ``check`` uses for DM018-DM024.

A migration is only reported when the ndd value model finds no mistake in its output. A problem
names the generator functions its values came from, so that the engine can keep exactly those
pipelines in pipeline mode and migrate again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .positions import python_ast
from .suppress import parse_suppressions
from .values import build_model


@dataclass(frozen=True)
class AuditProblem:
    code: str
    message: str
    line: int
    statement: str  # the line of the migrated code, as a person would look for it
    origins: frozenset[str]  # functions whose values (or body) the problem is in

    def describe(self) -> str:
        return f"`{self.statement}` would fail ({self.code}: {self.message})"


def audit(new_source: bytes, encoding: str = "utf-8", original: bytes = b"",
          imported_generators: frozenset[str] = frozenset()) -> list[AuditProblem]:
    """The ndd value model's problems in the migrated module, less what ``noqa`` silences.
    No TODO comment excuses them: a kept pipeline has no ndd values, and a comment left by an
    earlier run must not let a later one through. (Pipeline-mode calls left in migrated code
    show up as DataNodes reaching ndd calls or yields.) Where the original never spelled
    ``.tensors``, every ``.tensors``/``.slice`` of the output was written by the migration and
    must apply to a value the model shows to be an ndd Batch. ``imported_generators``: local
    names of pipelines other files define and migrate, now generator functions."""
    text = new_source.decode(encoding, "replace")
    lines = text.splitlines()
    suppressions = parse_suppressions(text)
    problems: dict[tuple[str, int], AuditProblem] = {}
    strict = not _spells_batch_api(original)
    tree = python_ast(new_source)
    found = [*build_model(tree, imported_generators, strict=strict).problems, *_new_undefined_names(text, tree, original),
             *_refused_calls(tree, original)]
    for problem in found:
        if suppressions.suppressed(problem.code, problem.line, problem.line):
            continue
        statement = _shortened(_without_comment(lines[problem.line - 1]).strip())
        problems.setdefault((problem.code, problem.line),
                            AuditProblem(problem.code, problem.message, problem.line, statement, problem.origins))
    return sorted(problems.values(), key=lambda p: (p.line, p.code))


@dataclass(frozen=True)
class _Undefined:
    code: str
    message: str
    line: int
    origins: frozenset[str]


def _new_undefined_names(text: str, tree: ast.Module, original: bytes) -> list[_Undefined]:
    """Names the migrated module reads and nothing binds, that the original did not read
    unbound: a NameError the migration would write (blamed on the functions around it)."""
    from .undefined_names import undefined_names

    new = undefined_names(text, tree)
    if not new:
        return []
    try:
        before = set(undefined_names(original.decode("utf-8", "replace"), python_ast(original))) if original else set()
    except (SyntaxError, ValueError):
        return []
    enclosing = _enclosing_functions(tree)
    return [_Undefined("DM001", f"`{name}` is not defined there (a NameError)", line, enclosing(line))
            for name, line in sorted(new.items()) if name not in before]


def _refused_calls(tree: ast.Module, original: bytes) -> list[_Undefined]:
    """Calls of the module's own functions that the signatures the migration gave them refuse
    (a TypeError), blamed on the function called and the functions around the call."""
    from .call_signatures import refused_calls

    try:
        before = python_ast(original) if original else None
    except (SyntaxError, ValueError):
        return []
    enclosing = _enclosing_functions(tree)
    return [_Undefined("DM001", f"`{name}(...)` {why} (a TypeError)", line, enclosing(line) | {name})
            for name, line, why in refused_calls(tree, before)]


def _spells_batch_api(source: bytes) -> bool:
    """Whether the code (not its comments: the TODOs of an earlier run quote them) itself uses
    ``.tensors`` or ``.slice``."""
    if b".tensors" not in source and b".slice" not in source:
        return False
    try:
        tree = python_ast(source)
    except (SyntaxError, ValueError):
        return True
    return any(isinstance(node, ast.Attribute) and node.attr in ("tensors", "slice") for node in ast.walk(tree))


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
