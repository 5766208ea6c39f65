"""Read the files, hand their bytes to the engine, write results back atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

from .config import Config
from .diagnostics import FileResult
from .engine import check_source, migrate_source
from .files import atomic_write, discover


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _read(path: Path) -> bytes:
    return path.read_bytes()


def process(paths: Iterable[Path], config: Config, work: Callable[[bytes, str, Config], FileResult]) -> list[FileResult]:
    results = []
    for path in discover(paths, config.exclude):
        name = _display(path)
        if not path.exists():
            results.append(FileResult(name, error="no such file"))
            continue
        try:
            data = _read(path)
        except OSError as error:
            results.append(FileResult(name, error=f"cannot read: {error.strerror or error}"))
            continue
        results.append(work(data, name, config))
    return results


def run_check(paths: Iterable[Path], config: Config) -> list[FileResult]:
    return process(paths, config, check_source)


def run_migrate(paths: Iterable[Path], config: Config, write: bool) -> list[FileResult]:
    results = process(paths, config, migrate_source)
    if write:
        for result in results:
            if result.changed and result.error is None:
                _write(result)
    return results


def is_writable(path: Path) -> bool:
    return os.access(path.resolve(), os.W_OK)


def _write(result: FileResult) -> None:
    path = Path(result.path)
    if not is_writable(path):
        result.error, result.changed = "read-only file", False
        return
    try:
        atomic_write(path, result.new_source)
    except OSError as error:
        result.error, result.changed = f"cannot write: {error.strerror or error}", False
