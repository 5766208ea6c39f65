"""Jupyter notebooks: their code cells are checked and migrated as one Python module.

A pipeline is often defined in one cell and run in another, so the code cells are joined into
one module, each cell after a marker statement, and split back after the migration. IPython
syntax (``%magic``, ``!shell``, ``x = !ls``, ``obj?``) is swapped for placeholder statements
and restored byte for byte; the code under ``%%time`` and ``%%capture`` is Python like any
other; cells that start with another cell magic (``%%bash``, ``%%timeit``) are left out, and a
migration that changes a name such a cell uses is refused (``engine.migrate_file``). Outputs, metadata and markdown cells are never touched (a code cell the migration
leaves without code, and without outputs, is removed), and the JSON is written back with the
layout it was read with, so a migrated notebook diffs cleanly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from .diagnostics import Diagnostic

CELL_MARKER = "__dali_migrate_cell__({})"
MAGIC_PLACEHOLDER = "__dali_migrate_magic__({})"
_MARKER_LINE = re.compile(r"^__dali_migrate_cell__\((\d+)\)$")
_PLACEHOLDER_LINE = re.compile(r"^(\s*)__dali_migrate_magic__\((\d+)\)$")
# %magic, !shell, x = !shell, x = %magic, and help: obj? / obj??
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|[\w.]+\s*=\s*[%!]|[\w.]+\s*\?\??\s*$)")


class NotebookError(Exception):
    """The notebook cannot be worked on; nothing is written."""


@dataclass
class Layout:
    indent: int | None
    ensure_ascii: bool
    trailing_newline: bool

    def dump(self, notebook: dict) -> bytes:
        text = json.dumps(notebook, indent=self.indent, ensure_ascii=self.ensure_ascii,
                          separators=(",", ": ") if self.indent is not None else (",", ":"))
        return (text + ("\n" if self.trailing_newline else "")).encode("utf-8")


@dataclass
class CodeCells:
    """The code cells of a notebook as one module, and how to map it back."""

    notebook: dict
    layout: Layout
    source: str = ""
    cell_indexes: list[int] = field(default_factory=list)  # notebook index of each joined cell
    first_lines: list[int] = field(default_factory=list)  # 1-based line of each cell in source
    magics: list[str] = field(default_factory=list)
    opaque: list[tuple[int, str]] = field(default_factory=list)  # (index, text) of cells left out
    emptied: list[int] = field(default_factory=list)  # cells the migration left without code: removed

    _json_places: dict[tuple[int, int], tuple[int, int]] | None = field(default=None, repr=False, compare=False)

    def locate(self, diagnostic: Diagnostic) -> Diagnostic:
        """A diagnostic of the joined module, moved to its cell (1-based over all cells), with
        where it lies in the notebook's JSON text."""
        position = _cell_of(self.first_lines, diagnostic.line)
        first = self.first_lines[position]
        line = diagnostic.line - first + 1
        end_line = max(diagnostic.end_line - first + 1 if diagnostic.end_line else 0, 0)
        index = self.cell_indexes[position]
        file_line, file_column = self._in_file(index, line, diagnostic.column)
        file_end_line, file_end_column = self._in_file(index, end_line or line, diagnostic.end_column
                                                       or diagnostic.column)
        return replace(diagnostic, line=line, end_line=end_line, cell=index + 1, file_line=file_line,
                       file_column=file_column, file_end_line=file_end_line, file_end_column=file_end_column)

    def _in_file(self, index: int, line: int, column: int) -> tuple[int, int]:
        """(line, column) in the .ipynb text of ``column`` on ``line`` of cell ``index``."""
        if self._json_places is None:
            self._json_places = _json_places(self.notebook, self.layout, self.cell_indexes)
        place = self._json_places.get((index, line)) or self._json_places.get((index, 1))
        if place is None:
            return 0, 0
        file_line, start = place
        lines = _cell_text(self.notebook["cells"][index]).splitlines()
        before = lines[line - 1][:column - 1] if line <= len(lines) else ""
        escaped = json.dumps(before, ensure_ascii=self.layout.ensure_ascii)[1:-1]  # as the JSON text spells it
        return file_line, start + len(escaped) + 1


def _json_places(notebook: dict, layout: Layout, indexes: list[int]) -> dict[tuple[int, int], tuple[int, int]]:
    """(cell index, 1-based line of the cell) -> (1-based line, 0-based offset of the line's first
    character) in the notebook's JSON text. Each source line is swapped for a marker string and the notebook
    dumped with its own layout, which gives back the original text line for line."""
    marked = json.loads(json.dumps(notebook))
    for index in indexes:
        cell = marked["cells"][index]
        lines = _cell_text(cell).splitlines(keepends=True) or [""]
        markers = [f"@@dali-migrate:{index}:{number}@@" for number in range(1, len(lines) + 1)]
        cell["source"] = markers if isinstance(cell.get("source"), list) else "".join(markers)
    places: dict[tuple[int, int], tuple[int, int]] = {}
    text = layout.dump(marked).decode("utf-8")
    for file_line, content in enumerate(text.splitlines(), start=1):
        for match in re.finditer(r"@@dali-migrate:(\d+):(\d+)@@", content):
            key = (int(match.group(1)), int(match.group(2)))
            places.setdefault(key, (file_line, match.start()))
    return places


def _cell_of(first_lines: list[int], line: int) -> int:
    position = 0
    for index, first in enumerate(first_lines):
        if first <= line:
            position = index
    return position


def _detect_layout(raw: str, notebook: dict) -> Layout:
    """The json.dumps settings that reproduce ``raw``; NotebookError if none does."""
    trailing = raw.endswith("\n")
    for indent in (1, 2, 4, None, 3):
        for ensure_ascii in (False, True):
            layout = Layout(indent, ensure_ascii, trailing)
            if layout.dump(notebook) == raw.encode("utf-8"):
                return layout
    raise NotebookError("the notebook's JSON layout is not one json.dump writes; "
                        "save it from Jupyter (or nbformat) first")


def _cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# cell magics that run the rest of the cell as Python in the notebook's namespace, and whose
# own line holds no code (``%%timeit``'s can: its setup statement)
PYTHON_CELL_MAGICS = ("time", "capture")


def cell_magic(text: str) -> str | None:
    """The cell magic a cell starts with (``time`` for ``%%time``), or None."""
    stripped = text.lstrip()
    if not stripped.startswith("%%"):
        return None
    return stripped[2:].split(None, 1)[0] if stripped[2:].strip() else ""


def _is_python(text: str) -> bool:
    return cell_magic(text) in (None, *PYTHON_CELL_MAGICS)


def read_code_cells(data: bytes) -> CodeCells:
    try:
        raw = data.decode("utf-8")
        notebook = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise NotebookError(f"not a notebook: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("not a notebook: no list of cells")
    cells = CodeCells(notebook, _detect_layout(raw, notebook))
    lines: list[str] = []
    for index, cell in enumerate(notebook["cells"]):
        text = _cell_text(cell)
        if cell.get("cell_type") != "code":
            continue
        if not _is_python(text):
            cells.opaque.append((index, text))
            continue
        lines.append(CELL_MARKER.format(index))
        cells.cell_indexes.append(index)
        cells.first_lines.append(len(lines) + 1)
        lines.extend(_mask_ipython(line, cells.magics) for line in text.splitlines())
    cells.source = "\n".join(lines) + "\n"
    return cells


def _mask_ipython(line: str, magics: list[str]) -> str:
    if not _IPYTHON_LINE.search(line):
        return line
    magics.append(line)
    indent = line[: len(line) - len(line.lstrip())]
    return indent + MAGIC_PLACEHOLDER.format(len(magics) - 1)


def write_code_cells(cells: CodeCells, new_source: str) -> bytes:
    """The notebook with each joined cell's code replaced by its part of ``new_source``."""
    parts: dict[int, list[str]] = {}
    current: list[str] | None = None
    preamble: list[str] = []  # lines the codemod put above the first cell (imports)
    for line in new_source.splitlines():
        marker = _MARKER_LINE.match(line)
        if marker:
            current = parts.setdefault(int(marker.group(1)), [])
            continue
        (preamble if current is None else current).append(_unmask_ipython(line, cells.magics))
    if sorted(parts) != sorted(cells.cell_indexes):
        raise NotebookError("the cells could not be told apart after the migration")
    if preamble and cells.cell_indexes:
        parts[cells.cell_indexes[0]][:0] = preamble
    notebook = json.loads(json.dumps(cells.notebook))  # a deep copy
    cells.emptied = []
    for index, lines in parts.items():
        cell = notebook["cells"][index]
        original = _cell_text(cells.notebook["cells"][index])
        if lines == original.splitlines():
            continue  # unchanged: the source stays as it was stored, line endings and all
        if not any(line.strip() for line in lines) and not cell.get("outputs"):
            cells.emptied.append(index)  # its code went elsewhere (a pipeline inlined where it ran)
            continue
        text = "\n".join(lines) + ("\n" if original.endswith("\n") else "")
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
    notebook["cells"] = [cell for index, cell in enumerate(notebook["cells"]) if index not in cells.emptied]
    return cells.layout.dump(notebook)


def _unmask_ipython(line: str, magics: list[str]) -> str:
    placeholder = _PLACEHOLDER_LINE.match(line)
    if placeholder is None:
        if "__dali_migrate_magic__" in line:
            raise NotebookError("an IPython line could not be kept in place")
        return line
    return magics[int(placeholder.group(2))]


def cell_diff(old: CodeCells, new_data: bytes, path: str) -> str:
    """A unified diff per changed code cell: what a reviewer reads, not the JSON."""
    import difflib

    new_cells = json.loads(new_data)["cells"]
    chunks = []
    for index in old.cell_indexes:
        before = _cell_text(old.notebook["cells"][index]).splitlines(keepends=True)
        new_index = index - sum(removed < index for removed in old.emptied)
        after = [] if index in old.emptied else _cell_text(new_cells[new_index]).splitlines(keepends=True)
        if before != after:
            name = f"{path}:cell {index + 1}"
            chunks.append("".join(difflib.unified_diff(_ending(before), _ending(after), f"a/{name}", f"b/{name}")))
    return "".join(chunks)


def _ending(lines: list[str]) -> list[str]:
    return [*lines[:-1], lines[-1] if lines[-1].endswith("\n") else lines[-1] + "\n"] if lines else lines


def notebook_script(data: bytes) -> str:
    """The code cells as a plain Python script, for running a notebook outside Jupyter: cell
    magics are left out and IPython lines become comments."""
    cells = read_code_cells(data)
    lines = []
    for line in cells.source.splitlines():
        marker = _MARKER_LINE.match(line)
        if marker:
            lines.append(f"# cell {int(marker.group(1)) + 1}")
            continue
        placeholder = _PLACEHOLDER_LINE.match(line)
        if placeholder:
            line = f"{placeholder.group(1)}pass  # {cells.magics[int(placeholder.group(2))].strip()}"
        lines.append(line)
    return "\n".join(lines) + "\n"
