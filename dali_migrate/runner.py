"""Read the files, hand their bytes to the engine, write results back atomically.

Files are read and prefiltered here, in the parent process: nearly every file of a large
repository never spells "dali" and costs one read. Only the rest is parsed, in worker processes
when there are enough of them, and ``check`` results are cached by content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from .cache import CheckCache
from .config import Config
from .diagnostics import FileResult
from .files import atomic_write, discover
from .prefilter import might_use_dali

Work = Callable[[bytes, str, Config], FileResult]
# Below this many files to parse, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 8
# Past this size a file is generated code, not a pipeline someone wrote; parsing it would hold
# the run up for minutes. It is still prefiltered: one that never mentions DALI passes quietly.
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class RunOptions:
    jobs: int = 1
    shard: tuple[int, int] = (1, 1)  # the K-th of N, 1-based
    cache_dir: Path | None = None  # None: no cache
    on_file: Callable[[], None] | None = None  # called once per file done (progress)
    on_start: Callable[[int], None] | None = None  # called with the number of files


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); ValueError with a message for anything else."""
    index, sep, count = text.partition("/")
    if not sep or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
        raise ValueError(f"--shard takes K/N with 1 <= K <= N, got {text!r}")
    return int(index), int(count)


def _display(path: Path) -> str:
    if not path.is_absolute():
        return str(path)  # as the user named it, joined with what discovery found
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _files(paths: Iterable[Path], config: Config, shard: tuple[int, int]) -> list[Path]:
    files = list(discover(paths, config.exclude))
    index, count = shard
    return files[index - 1 :: count] if count > 1 else files


def _read(path: Path, name: str) -> bytes | FileResult:
    if not path.exists():
        return FileResult(name, error="no such file")
    try:
        return path.read_bytes()
    except OSError as error:
        return FileResult(name, error=f"cannot read: {error.strerror or error}")


def _work_one(job: tuple[Work, bytes, str, Config]) -> FileResult:
    work, data, name, config = job
    return work(data, name, config)


def process(paths: Iterable[Path], config: Config, work: Work, options: RunOptions = RunOptions(),
            cache: CheckCache | None = None) -> list[FileResult]:
    files = _files(paths, config, options.shard)
    if options.on_start:
        options.on_start(len(files))
    results: dict[int, FileResult] = {}
    pending: list[tuple[int, bytes, str]] = []
    for position, path in enumerate(files):
        name = _display(path)
        data = _read(path, name)
        if isinstance(data, FileResult):
            results[position] = data
        elif not might_use_dali(data):
            results[position] = FileResult(name)
        elif len(data) > MAX_FILE_BYTES:
            results[position] = FileResult(name, error=f"too large to work on ({len(data) / 2**20:.1f} MiB; "
                                                        f"the limit is {MAX_FILE_BYTES // 2**20} MiB)")
        elif cache is not None and (hit := cache.get(data, name)) is not None:
            results[position] = hit
        else:
            pending.append((position, data, name))
            continue
        _done(options)
    for (position, data, name), result in zip(pending, _run(pending, config, work, options)):
        results[position] = result
        if cache is not None:
            cache.put(data, result)
        _done(options)
    return [results[position] for position in range(len(files))]


def _done(options: RunOptions) -> None:
    if options.on_file:
        options.on_file()


def _run(pending: list[tuple[int, bytes, str]], config: Config, work: Work, options: RunOptions):
    jobs = [(work, data, name, config) for _, data, name in pending]
    if options.jobs <= 1 or len(jobs) < PARALLEL_THRESHOLD:
        return map(_work_one, jobs)
    from concurrent.futures import ProcessPoolExecutor  # only where there is parallel work

    workers = min(options.jobs, len(jobs))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_work_one, jobs, chunksize=max(1, len(jobs) // (workers * 4))))


def check_file(data: bytes, path: str, config: Config) -> FileResult:
    from .engine import check_file as check  # LibCST is imported only when a file needs a parse

    return check(data, path, config)


def migrate_file(data: bytes, path: str, config: Config) -> FileResult:
    from .engine import migrate_file as migrate

    return migrate(data, path, config)


def run_check(paths: Iterable[Path], config: Config, options: RunOptions = RunOptions()) -> list[FileResult]:
    cache = CheckCache.open(options.cache_dir, config) if options.cache_dir else None
    results = process(paths, config, check_file, options, cache)
    if cache is not None:
        cache.save()
    return results


def run_migrate(paths: Iterable[Path], config: Config, write: bool,
                options: RunOptions = RunOptions()) -> list[FileResult]:
    results = process(paths, config, migrate_file, options)
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
