"""Where the PyTorch loader that stands in for ``DALIGenericIterator`` lives: one module per
project, written once, imported by every migrated file that needs it.

The default place, for a file that ``migrate`` rewrites:

- in a package (its folder has ``__init__.py``): the top package of that chain,
  ``from <top>.dali_torch_loader import DALITorchLoader``;
- a script (it has an ``if __name__ == "__main__":`` guard), a notebook, a file at the project
  root or a file outside any project: next to it, ``from dali_torch_loader import ...``;
- any other file (a folder without ``__init__.py`` below the root, imported from scripts at the
  root as ``common.data_layer``): the project root, since those scripts put it on ``sys.path``.
  The root is the folder of pyproject.toml, else the git work tree, else the one folder the
  run was given.

``loader-module = "pkg.data.dali_torch_loader"`` in ``[tool.dali-migrate]`` names one module for
the whole project instead (under the root, or under ``root/src`` where the package lives there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .config import Config
from .files import read_regular

DEFAULT_NAME = "dali_torch_loader"
_MAIN_GUARD = re.compile(rb"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)


@dataclass(frozen=True)
class LoaderPlace:
    module: str  # as migrated files import it
    file: Path


def place(path: Path, data: bytes, config: Config) -> LoaderPlace:
    """``config.root``: the project root (the runner sets it for migrate runs)."""
    if config.loader_module:
        return _configured(config.loader_module, config.root or Path.cwd())
    folder = path.resolve().parent
    top = _top_package(folder)
    if top is not None:
        return LoaderPlace(f"{top.name}.{DEFAULT_NAME}", top / f"{DEFAULT_NAME}.py")
    root = config.root.resolve() if config.root is not None else None
    if root is not None and root in folder.parents and path.suffix == ".py" and not _MAIN_GUARD.search(data):
        return LoaderPlace(DEFAULT_NAME, root / f"{DEFAULT_NAME}.py")
    return LoaderPlace(DEFAULT_NAME, folder / f"{DEFAULT_NAME}.py")


def _configured(module: str, root: Path) -> LoaderPlace:
    relative = Path(*module.split(".")).with_suffix(".py")
    top = module.split(".")[0]
    base = root / "src" if (root / "src" / top).is_dir() and not (root / top).exists() else root
    return LoaderPlace(module, base / relative)


def _top_package(folder: Path) -> Path | None:
    if not (folder / "__init__.py").is_file():
        return None
    while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder if folder.name.isidentifier() else None


def existing_loader(path: Path) -> bytes | None:
    """The text of the module at ``path`` (None: there is no regular file to read)."""
    try:
        return read_regular(path)
    except OSError:  # NotRegularFile too
        return None


def defines_class(text: bytes, class_name: str) -> bool:
    """The module defines ``class_name`` (a loader module written before, or the user's own)."""
    return re.search(rb"^class\s+" + re.escape(class_name.encode()) + rb"\b", text, re.MULTILINE) is not None


# What loaders an earlier dali-migrate wrote could not do: mode -> (the mark of it in the
# module's source, what a loader without it cannot do)
MODES = {
    "sources": (rb"\breader_meta\s*=\s*None\b", "end epochs where the sources end them (DALIGenericIterator "
                "without reader_name)"),
    "size": (rb"\bsize=None\b", "count epochs of DALIGenericIterator's size="),
    "pipelines": (rb"\bself\.pipelines\b", "step a list of pipelines together"),
}


def lacking(text: bytes, modes: frozenset[str]) -> list[str]:
    """What the loader module (``text``) cannot do of what ``modes`` need."""
    return [MODES[mode][1] for mode in sorted(modes) if re.search(MODES[mode][0], text) is None]
