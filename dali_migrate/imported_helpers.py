"""Graph helpers that a module imports from another file of its project.

``from augment import random_transform`` and, in a graph, ``mt = random_transform(size)``,
where ``augment.py`` builds the matrix with ``fn.transforms.rotation(angle=fn.random.uniform(...))``:
the graph cannot be migrated on its own. The generator would hand the helper ndd Batches, on
which ``fn.*`` fails, and the helper's random operators would take no batch size and no RNG.
Such graphs are kept, with a TODO naming the helper and its file.

Modules are looked up the way Python would find them for a script run from the importing
file's folder or from a folder above it, up to the project root (at most three folders up
without one). A module not found there (an installed library, DALI itself) is not read.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .files import read_regular
from .values import _dotted as dotted, imports_of

OPERATOR_MODULES = ("nvidia.dali.fn", "nvidia.dali.ops", "nvidia.dali.math", "nvidia.dali.auto_aug")
_MAX_LEVELS_UP = 3


def imported_graph_helpers(tree: ast.Module, path: Path, root: Path | None) -> dict[str, str]:
    """The names the module calls that are functions of project files running DALI operators:
    local dotted name (``random_transform``, ``augment.random_transform``) -> the file, as
    the importing file's folder names it."""
    found: dict[str, str] = {}
    folder = path.resolve().parent
    folders = _search_folders(folder, root)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            found |= _from_import(node, folder, folders)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module = _module_file(alias.name, folders)
                local = alias.asname or alias.name
                if module is not None and (alias.asname or "." not in alias.name):
                    found |= {f"{local}.{name}": _shown(module, folder) for name in _operator_functions(module)}
    return found


def _from_import(node: ast.ImportFrom, folder: Path, folders: list[Path]) -> dict[str, str]:
    if node.level:
        base = folder
        for _ in range(node.level - 1):
            base = base.parent
        folders = [base]
    found: dict[str, str] = {}
    module = _module_file(node.module, folders) if node.module else None
    helpers = _operator_functions(module) if module is not None else set()
    for alias in node.names:
        local = alias.asname or alias.name
        if alias.name in helpers:
            found[local] = _shown(module, folder)
            continue
        submodule = _module_file(f"{node.module}.{alias.name}" if node.module else alias.name, folders)
        if submodule is not None:
            found |= {f"{local}.{name}": _shown(submodule, folder) for name in _operator_functions(submodule)}
    return found


def _search_folders(folder: Path, root: Path | None) -> list[Path]:
    folders = [folder]
    stop = root.resolve() if root is not None else None
    while folder.parent != folder and (stop is None and len(folders) <= _MAX_LEVELS_UP
                                       or stop is not None and folder != stop and stop in folder.parents):
        folder = folder.parent
        folders.append(folder)
    return folders


def _module_file(dotted: str, folders: list[Path]) -> Path | None:
    parts = dotted.split(".")
    if parts[0] in ("nvidia", "numpy", "torch"):
        return None
    for folder in folders:
        for candidate in (folder.joinpath(*parts).with_suffix(".py"), folder.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def _shown(module: Path, folder: Path) -> str:
    """``module`` as the importing file's ``folder`` names it."""
    try:
        return module.resolve().relative_to(folder).as_posix()
    except ValueError:
        return module.name


_cache: dict[tuple[Path, int, int], frozenset[str]] = {}


def _operator_functions(module: Path) -> frozenset[str]:
    """Top-level functions of ``module`` that call DALI operators, directly or through each other."""
    stat = module.stat()
    key = (module.resolve(), stat.st_mtime_ns, stat.st_size)
    if key not in _cache:
        _cache[key] = _read_operator_functions(module)
    return _cache[key]


def _read_operator_functions(module: Path) -> frozenset[str]:
    try:
        tree = ast.parse(read_regular(module))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    imports = imports_of(tree)
    functions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    called = {name: _called_names(function, imports) for name, function in functions.items()}
    running = {name for name, calls in called.items() if any(c.startswith(OPERATOR_MODULES) for c in calls)}
    while True:
        more = {name for name, calls in called.items() if name not in running and calls & running}
        if not more:
            return frozenset(running)
        running |= more


def _called_names(function: ast.AST, imports: dict[str, str]) -> set[str]:
    """What ``function`` calls, with its first part spelled out through the imports."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            parts = dotted(node.func)
            if parts:
                first, _, rest = parts.partition(".")
                names.add(".".join(filter(None, [imports.get(first, first), rest])))
    return names

