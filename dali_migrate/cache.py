"""A cache of ``check`` results keyed by file content, for warm pre-commit and CI runs.

Only files that pass the text prefilter are cached: for the others the prefilter is as cheap as
a lookup. An entry is valid for the same bytes, the same tool (its version and the size and
modification time of its sources, so an edited rule invalidates it) and the same selection of
rules. The cache is one JSON file in ``.dali-migrate-cache/`` beside the configuration's pyproject.toml
(or the working directory; ``DALI_MIGRATE_CACHE_DIR`` names another folder), replaced atomically; concurrent runs may lose each other's
entries, never corrupt them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from . import __version__
from .config import Config
from .diagnostics import Diagnostic, FileResult
from .files import atomic_write

CACHE_FILE = "check-v1.json"
DEFAULT_FOLDER = ".dali-migrate-cache"
FOLDER_VARIABLE = "DALI_MIGRATE_CACHE_DIR"


def _tool_fingerprint() -> str:
    package = Path(__file__).resolve().parent
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json"):
            stat = path.stat()
            digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


def _salt(config: Config) -> str:
    from importlib.metadata import version

    return f"{_tool_fingerprint()}|libcst={version('libcst')}|select={sorted(config.select)}|ignore={sorted(config.ignore)}"


class CheckCache:
    def __init__(self, path: Path, salt: str, entries: dict, refused: str | None = None) -> None:
        self.path = path
        self.salt = salt
        self.entries = entries
        self.dirty = False
        self.refused = refused  # why this cache is neither read nor written, said once

    @classmethod
    def open(cls, folder: Path, config: Config) -> "CheckCache":
        salt = _salt(config)
        path = folder / CACHE_FILE
        refused = _not_ours(folder)
        return cls(path, salt, {} if refused else _load(path, salt), refused)

    @staticmethod
    def key(data: bytes, name: str) -> str:
        kind = "ipynb" if name.endswith(".ipynb") else "py"
        return f"{kind}:{hashlib.blake2b(data, digest_size=20).hexdigest()}"

    def get(self, data: bytes, name: str) -> FileResult | None:
        entry = self.entries.get(self.key(data, name))
        if entry is None:
            return None
        try:
            diagnostics = [Diagnostic(path=name, **fields) for fields in entry["diagnostics"]]
            error = entry["error"]
            if not (error is None or isinstance(error, str)) or not all(
                    isinstance(d.line, int) and isinstance(d.code, str) and isinstance(d.message, str)
                    for d in diagnostics):
                return None
        except (TypeError, KeyError, AttributeError):
            return None  # a malformed entry is a miss, whatever wrote it
        return FileResult(name, diagnostics=diagnostics, error=error)

    def put(self, data: bytes, result: FileResult) -> None:
        if result.error is not None and result.error.startswith("internal error"):
            return  # a bug of the tool, not a property of the bytes: ask again next time
        diagnostics = [{k: v for k, v in asdict(d).items() if k != "path"} for d in result.diagnostics]
        self.entries[self.key(data, result.path)] = {"diagnostics": diagnostics, "error": result.error}
        self.dirty = True

    def save(self) -> None:
        if not self.dirty or self.refused:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if _not_ours(self.path.parent):  # made a link between open and save
                return
            ignore = self.path.parent / ".gitignore"
            if not ignore.exists():
                _write_new(ignore, b"# created by dali-migrate\n*\n")
            merged = {**_load(self.path, self.salt), **self.entries}
            payload = json.dumps({"salt": self.salt, "entries": merged}, separators=(",", ":"))
            atomic_write(self.path, payload.encode("utf-8"))
        except OSError:
            pass  # a cache that cannot be written only costs time


def _not_ours(folder: Path) -> str | None:
    """Why the cache folder is not one dali-migrate made: a repository under check could
    commit the folder, its cache file or its .gitignore as a symbolic link to make a write land
    anywhere. Nothing in it is followed through a link."""
    for path in (folder, folder / CACHE_FILE, folder / ".gitignore"):
        if path.is_symlink():
            return f"{path} is a symbolic link"
        if path != folder and path.exists() and not path.is_file():
            return f"{path} is not a regular file"
    if folder.exists() and not folder.is_dir():
        return f"{folder} is not a folder"
    return None


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path``; fail rather than follow a link or overwrite what appeared meanwhile."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _load(path: Path, salt: str) -> dict:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            raw = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("salt") != salt or not isinstance(raw.get("entries"), dict):
        return {}
    return raw["entries"]
