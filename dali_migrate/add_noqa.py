"""``check --add-noqa``: a ``# noqa: DMxxx`` comment on every finding, for staged roll-outs.

Each finding's codes go at the end of the first line of its statement span that does not end
inside a string (a comment there would be part of the string). A line that already has a
``# noqa: ...`` gets the new codes merged into it. A second run finds nothing to add: the
findings are suppressed.
"""

from __future__ import annotations

import io
import re
import tokenize

from .diagnostics import Diagnostic
from .suppress import _LINE_NOQA


def with_noqa(text: str, diagnostics: list[Diagnostic]) -> str:
    """``text`` with the codes of ``diagnostics`` (line numbers of ``text``) in noqa comments."""
    lines = text.splitlines(keepends=True)
    in_string = _lines_ending_in_strings(text)
    codes_by_line: dict[int, set[str]] = {}
    for d in diagnostics:
        last = max(d.end_line or d.line, d.line)
        line = next((n for n in range(d.line, last + 1) if n not in in_string), None)
        if line is not None and line <= len(lines):
            codes_by_line.setdefault(line, set()).add(d.code)
    for number, codes in codes_by_line.items():
        lines[number - 1] = _with_codes(lines[number - 1], codes)
    return "".join(lines)


def _with_codes(line: str, codes: set[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    match = _LINE_NOQA.search(body)
    if match is not None:
        if not match.group("codes"):
            return line  # a bare noqa silences everything already
        merged = sorted({*re.split(r"[\s,]+", match.group("codes")), *codes} - {""})
        return f"{body[:match.start()]}# noqa: {', '.join(merged)}{body[match.end():]}{ending}"
    return f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}{ending}"


def _lines_ending_in_strings(text: str) -> set[int]:
    """Lines whose end lies inside a string token (a triple-quoted string spanning lines)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", None) == token.type:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside


def add_noqa(data: bytes, path: str, diagnostics: list[Diagnostic]) -> bytes:
    """The file's new bytes: Python in its own encoding and line endings; a notebook cell by
    cell, its JSON written back in the layout it was read with."""
    if path.endswith(".ipynb"):
        return _notebook_with_noqa(data, diagnostics)
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    bom = text.startswith("\ufeff")
    new = with_noqa(text[1:] if bom else text, diagnostics)
    return (("\ufeff" if bom else "") + new).encode(encoding)


def _notebook_with_noqa(data: bytes, diagnostics: list[Diagnostic]) -> bytes:
    from .notebook import _cell_text, read_code_cells

    cells = read_code_cells(data)
    by_cell: dict[int, list[Diagnostic]] = {}
    for d in diagnostics:
        if d.cell is not None:
            by_cell.setdefault(d.cell - 1, []).append(d)
    for index, found in by_cell.items():
        cell = cells.notebook["cells"][index]
        text = with_noqa(_cell_text(cell), found)
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell.get("source"), list) else text
    return cells.layout.dump(cells.notebook)
