"""What a file imports from the project's own modules: pipelines and migrated generators.

``check train.py`` must see that ``from loaders import train_pipe`` names a pipeline (so
``pipe.build()`` there is pipeline-mode API that ``migrate`` would change) or a generator that a
migration made (so ``pipe.build()`` there fails at run time), even when train.py never spells
"dali". Imports are read with a regular expression (most files never reach a parser); each
imported module is read and parsed once per run, with CPython's ``ast``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

from .files import read_regular
from .prefilter import might_use_dali

FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#;\\]|\\\n)+)", re.M)
IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*(?:#.*)?$", re.M)
IMPORTED_NAME = re.compile(r"(\w+)(?:\s+as\s+(\w+))?")


@dataclass(frozen=True)
class Links:
    """How the importing file spells what it imports (``train_pipe``, ``loaders.train_pipe``)."""

    pipelines: frozenset[str] = frozenset()
    generators: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.pipelines or self.generators)


@dataclass(frozen=True)
class Exports:
    pipelines: frozenset[str] = frozenset()
    generators: frozenset[str] = frozenset()


NOTHING = Exports()


class ProjectLinks:
    """Follows imports of the project's modules. ``find_root`` gives where absolute imports start;
    it is asked only when an absolute import is resolved (it may run ``git``)."""

    def __init__(self, find_root: Callable[[], Path | None]) -> None:
        self._find_root = find_root
        self._exports: dict[Path, Exports] = {}
        self._modules: dict[tuple[Path, int, str], Path | None] = {}
        self._folders: dict[Path, Path] = {}

    @cached_property
    def root(self) -> Path | None:
        root = self._find_root()
        return root.resolve() if root is not None else None

    def links(self, path: Path, data: bytes) -> Links:
        pipelines: set[str] = set()
        generators: set[str] = set()
        importer = self._resolved(path)
        for dots, module, names in FROM_IMPORT.findall(data):
            self._from_import(importer, len(dots), module.decode("ascii", "replace"),
                              names.decode("utf-8", "replace"), pipelines, generators)
        for module, alias in IMPORT.findall(data):
            dotted = module.decode("ascii", "replace")
            exports = self.exports(self.module_file(importer, 0, dotted))
            spelled = alias.decode("ascii") if alias else dotted
            pipelines |= {f"{spelled}.{name}" for name in exports.pipelines}
            generators |= {f"{spelled}.{name}" for name in exports.generators}
        return Links(frozenset(pipelines), frozenset(generators))

    def imported_modules(self, path: Path, data: bytes) -> set[Path]:
        """The project's module files that the imports of ``path`` reach, ``from pkg import mod``
        included."""
        importer = self._resolved(path)
        found: set[Path | None] = set()
        for dots, module, names in FROM_IMPORT.findall(data):
            dotted = module.decode("ascii", "replace")
            found.add(self.module_file(importer, len(dots), dotted))
            for name, _ in IMPORTED_NAME.findall(names.decode("utf-8", "replace").strip("()")):
                found.add(self.module_file(importer, len(dots), f"{dotted}.{name}" if dotted else name))
        for module, _ in IMPORT.findall(data):
            found.add(self.module_file(importer, 0, module.decode("ascii", "replace")))
        found.discard(None)
        return found

    def _resolved(self, path: Path) -> Path:
        """``path.resolve()``, with each folder resolved once per run (a run checks many files of
        few folders, and resolving walks every component)."""
        if path.is_symlink():
            return path.resolve()
        folder = self._folders.get(path.parent)
        if folder is None:
            folder = self._folders[path.parent] = path.parent.resolve()
        return folder / path.name

    def _from_import(self, importer: Path, dots: int, module: str, names: str, pipelines: set[str],
                     generators: set[str]) -> None:
        exports = self.exports(self.module_file(importer, dots, module))
        for name, alias in IMPORTED_NAME.findall(names.strip("()")):
            local = alias or name
            if name in exports.pipelines:
                pipelines.add(local)
            elif name in exports.generators:
                generators.add(local)
            else:  # ``from . import loaders``: a module of the package
                submodule = self.exports(self.module_file(importer, dots, f"{module}.{name}" if module else name))
                pipelines |= {f"{local}.{n}" for n in submodule.pipelines}
                generators |= {f"{local}.{n}" for n in submodule.generators}

    def module_file(self, importer: Path, dots: int, dotted: str) -> Path | None:
        key = (importer.parent, dots, dotted)
        if key not in self._modules:
            self._modules[key] = self._find(importer, dots, dotted)
        return self._modules[key]

    def _find(self, importer: Path, dots: int, dotted: str) -> Path | None:
        parts = [part for part in dotted.split(".") if part]
        for base in self._bases(importer, dots):
            stem = base.joinpath(*parts)
            candidates = [stem / "__init__.py"] + ([stem.with_name(stem.name + ".py")] if parts else [])
            for candidate in reversed(candidates):
                if candidate.is_file():
                    return candidate.resolve()
        return None

    def _bases(self, importer: Path, dots: int):
        """Folders a module path starts from: the package for a relative import; otherwise the
        importer's folder, then each folder above it up to the project root (all of them without
        one; the root is looked up only if needed), then the root's ``src/``."""
        if dots:
            base = importer.parent
            for _ in range(dots - 1):
                base = base.parent
            yield base
            return
        yield importer.parent
        # the folder a script runs from is on the path: the importer's own, or one above it
        for folder in importer.parent.parents:
            yield folder
            if folder == self.root:
                break
        if self.root is not None:
            yield self.root / "src"

    def exports(self, module: Path | None) -> Exports:
        if module is None:
            return NOTHING
        if module not in self._exports:
            self._exports[module] = _read_exports(module)
        return self._exports[module]


def _read_exports(module: Path) -> Exports:
    try:
        data = read_regular(module)
    except OSError:
        return NOTHING
    if not might_use_dali(data):
        return NOTHING
    from .positions import python_ast  # LibCST comes with it: only for a module that uses DALI

    try:
        tree = python_ast(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NOTHING
    generators: frozenset[str] = frozenset()
    if b"dynamic" in data:
        from .values import build_model, generator_functions

        generators = frozenset(generator_functions(build_model(tree)))
    return Exports(frozenset(_pipelines(tree)), generators)


def _pipelines(tree: ast.Module) -> list[str]:
    """Top-level ``@pipeline_def`` functions and ``Pipeline`` subclasses."""
    names = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and any(
                _ends_with(d.func if isinstance(d, ast.Call) else d, "pipeline_def") for d in statement.decorator_list):
            names.append(statement.name)
        elif isinstance(statement, ast.ClassDef) and any(_ends_with(b, "Pipeline") for b in statement.bases):
            names.append(statement.name)
    return names


def _ends_with(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)
