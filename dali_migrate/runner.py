"""Read the files, hand their bytes to the engine, write results back atomically.

Files are read and prefiltered here, in the parent process: nearly every file of a large
repository never spells "dali" and costs one read. Only the rest is parsed, in worker processes
when there are enough of them, and ``check`` results are cached by content.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

from .cache import CheckCache
from .config import Config
from .diagnostics import FileResult
from .files import HardLinked, NotRegularFile, Staged, discard, discover, land, read_regular, stage
from .prefilter import might_use_dali

Work = Callable[..., FileResult]  # (data, name, config[, links=...])
Linker = Callable[[Path, bytes], object]  # what a file imports from the project (links.Links)
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
    try:
        return read_regular(path)
    except NotRegularFile as error:
        return FileResult(name, error=str(error))
    except FileNotFoundError:
        return FileResult(name, error="no such file")
    except OSError as error:
        return FileResult(name, error=f"cannot read: {error.strerror or error}")


def die_with_parent() -> None:
    """Worker processes end when the run that started them is killed (Linux): otherwise they
    outlive a ``kill -9`` of the parent and go on holding memory."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _work_one(job: tuple[Work, bytes, str, Config, object]) -> FileResult:
    work, data, name, config, links = job
    return _call(work, data, name, config, links)


def _call(work: Work, data: bytes, name: str, config: Config, links) -> FileResult:
    return work(data, name, config, links=links) if links else work(data, name, config)


class _Workers:
    """Runs ``work`` on the files that need a parse: in this process for a few, in a pool of
    processes once there are enough, started while the rest of the files are still being read."""

    def __init__(self, work: Work, config: Config, jobs: int) -> None:
        self.work, self.config, self.jobs = work, config, jobs
        self.pool = None
        self.waiting: list[tuple[int, bytes, str, object]] = []
        self.futures: list[tuple[int, bytes, str, object]] = []

    def submit(self, position: int, data: bytes, name: str, links=None) -> None:
        self.waiting.append((position, data, name, links))
        if self.pool is None and self.jobs > 1 and len(self.waiting) >= PARALLEL_THRESHOLD:
            # only where there is parallel work
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=die_with_parent)
        if self.pool is not None:
            self.futures += [(p, d, n, self.pool.submit(_work_one, (self.work, d, n, self.config, links)))
                             for p, d, n, links in self.waiting]
            self.waiting = []

    def results(self):
        """(position, data, result) in the order the files were submitted."""
        if self.pool is None:
            for position, data, name, links in self.waiting:
                yield position, data, _call(self.work, data, name, self.config, links)
            return
        with self.pool:
            for position, data, name, future in self.futures:
                try:
                    result = future.result()
                except Exception as error:  # a worker that died (a crash in native code) takes
                    # its files with it, not the run
                    result = FileResult(name, error=f"internal error: the worker process failed: "
                                                    f"{type(error).__name__}: {error}")
                yield position, data, result


def process(paths: Iterable[Path], config: Config, work: Work, options: RunOptions = RunOptions(),
            cache: CheckCache | None = None, linker: Linker | None = None) -> list[FileResult]:
    """``linker``: what each file imports from the project; a file that imports a pipeline is
    worked on even when it never spells "dali", and never from the cache (its findings depend on
    another file)."""
    files = _files(paths, config, options.shard)
    if options.on_start:
        options.on_start(len(files))
    results: dict[int, FileResult] = {}
    workers = _Workers(work, config, options.jobs)
    for position, path in enumerate(files):
        name = _display(path)
        data = _read(path, name)
        links = linker(path, data) if linker is not None and not isinstance(data, FileResult) else None
        if isinstance(data, FileResult):
            results[position] = data
        elif not links and not might_use_dali(data):
            results[position] = FileResult(name)
        elif len(data) > MAX_FILE_BYTES:
            results[position] = FileResult(name, error=f"too large to work on ({len(data) / 2**20:.1f} MiB; "
                                                        f"the limit is {MAX_FILE_BYTES // 2**20} MiB)")
        elif not links and cache is not None and (hit := cache.get(data, name)) is not None:
            results[position] = hit
        else:
            workers.submit(position, data, name, links)
            continue
        _done(options)
    for position, data, result in workers.results():
        results[position] = result
        if cache is not None and not result.linked:
            cache.put(data, result)
        _done(options)
    return [results[position] for position in range(len(files))]


def _done(options: RunOptions) -> None:
    if options.on_file:
        options.on_file()


def check_file(data: bytes, path: str, config: Config, links=None) -> FileResult:
    # LibCST is imported only when a file needs a parse
    from .engine import check_file as check

    return check(data, path, config, links)


def migrate_file(data: bytes, path: str, config: Config, keep: dict[str, str] | None = None,
                 imported: dict | None = None) -> FileResult:
    """``config.root``: the project root (run_migrate sets it), where the loader module may go."""
    from .engine import migrate_file as migrate
    from .loader_module import place

    loader = place(Path(path), data, config)
    result = migrate(data, path, replace(config, loader_import=loader.module), keep, imported)
    if result.changed and result.imports_loader:
        result.loader_file = str(loader.file)
    return result


def run_check(paths: Iterable[Path], config: Config, options: RunOptions = RunOptions()) -> list[FileResult]:
    cache = CheckCache.open(options.cache_dir, config) if options.cache_dir else None
    if cache is not None and cache.refused:
        import sys

        sys.stderr.write(f"dali-migrate: cache not used: {cache.refused}\n")
        cache = None
    paths = list(paths)
    from .links import ProjectLinks

    links = ProjectLinks(lambda: _project_root(paths, config)).links
    results = process(paths, config, check_file, options, cache, links)
    if cache is not None:
        cache.save()
    return results


class _ImportIndex:
    """Which project files mention which of the exported names, from one read of each file; a
    file is an importer of a module when its imports reach that module (see links.py)."""

    def __init__(self, names: set[str], files: list[Path], root: Path | None) -> None:
        from .links import ProjectLinks

        self.links = ProjectLinks(lambda: root)
        self.mentions: dict[str, list[tuple[Path, bytes]]] = {name: [] for name in names}
        any_name = re.compile(rb"\b(" + b"|".join(re.escape(n.encode()) for n in sorted(names)) + rb")\b")
        for path in files:
            if path.suffix not in (".py", ".pyi", ".ipynb"):
                continue
            try:
                data = read_regular(path)
            except OSError:
                continue
            for name in {match.decode() for match in any_name.findall(data)}:
                self.mentions[name].append((path, data))

    def importers(self, name: str, module_stem: str, own: Path) -> list[Path]:
        """Files that name ``name`` and import a module called ``module_stem`` (taken to use it)."""
        imports_module = re.compile(rb"^[ \t]*(?:from|import)[ \t]+[\w.]*\b" + re.escape(module_stem.encode())
                                    + rb"\b", re.M)
        own = own.resolve()
        return [path for path, data in self.mentions.get(name, [])
                if path.resolve() != own and imports_module.search(data)
                and own in self.links.imported_modules(path, data)]


def _migrate_helpers(results: list[FileResult], run_files: list[Path], config: Config,
                     reruns: dict[int, tuple]) -> list[set[int]]:
    """Functions of other files that migrated outputs are passed to (see helper_modules.py)."""
    from .helper_modules import migrate_helpers

    def importer_index(names: set[str]):
        index = _ImportIndex(names, _project_files(config.root, config, run_files), config.root)
        return lambda name, path: index.importers(name, path.stem, path)

    def remigrate(position: int, file_config: Config) -> FileResult:
        keep, imported = reruns.get(position, (None, None))
        return migrate_file(read_regular(run_files[position]), results[position].path, file_config, keep, imported)

    return migrate_helpers(results, run_files, config, config.root, importer_index, remigrate)


def _migrate_across_files(results: list[FileResult], run_files: list[Path], project_files: list[Path],
                          config: Config, root: Path | None, reruns: dict[int, tuple]) -> list[set[int]]:
    """A pipeline used from other files is migrated with them when they are all in the run and
    their uses can be migrated; otherwise it stays in pipeline mode (see crossmodule.py).
    Returns the units: positions of files that must be written together."""
    exporting = [(position, path, result) for position, (path, result) in enumerate(zip(run_files, results))
                 if result.changed and result.exported and path.suffix != ".ipynb"]
    if not exporting:
        return []
    from . import crossmodule  # LibCST: not for runs that meet no DALI file

    index = _ImportIndex({name for _, _, result in exporting for name in result.exported}, project_files, root)
    in_run = {path.resolve(): position for position, path in enumerate(run_files)}
    relative = lambda path: _relative(path, root)  # noqa: E731
    exporters = [_exporter(position, path, result, index, in_run, config, relative)
                 for position, path, result in exporting]
    exporters = [e for e in exporters if e.users]
    imported = crossmodule.settle(
        exporters, root, relative,
        lambda importer, plans: migrate_file(read_regular(importer), str(importer), config, None, plans))
    for exporter in exporters:
        if exporter.keep:
            path = run_files[exporter.position]
            reruns[exporter.position] = (exporter.keep, imported.get(path))
            results[exporter.position] = migrate_file(read_regular(path), results[exporter.position].path, config,
                                                      *reruns[exporter.position])
    kept_positions = {e.position for e in exporters if e.keep}
    for importer, plans in imported.items():
        position = in_run[importer.resolve()]
        if position not in kept_positions:
            reruns[position] = (None, plans)
            results[position] = migrate_file(read_regular(importer), results[position].path, config, None, plans)
    return [{e.position, *(in_run[u.resolve()] for users in e.users.values() for u in users if u.resolve() in in_run)}
            for e in exporters]


def _exporter(position: int, path: Path, result: FileResult, index: _ImportIndex, in_run: dict[Path, int],
              config: Config, relative):
    from . import crossmodule

    exporter = crossmodule.Exporter(path, position, {})
    for name in result.exported:
        users = index.importers(name, path.stem, path)
        if users:
            exporter.users[name] = users
    if not exporter.users:
        return exporter
    exporter.plans, exporter.returning, refused = crossmodule.defined_plans(read_regular(path), config,
                                                                            set(exporter.users))
    for name, users in exporter.users.items():
        outside = [u for u in users if u.resolve() not in in_run or u.suffix != ".py"]
        if outside:
            exporter.keep[name] = (f"`{name}` is used from {relative(outside[0])}"
                                   f"{f' and {len(outside) - 1} more' if len(outside) > 1 else ''}, which "
                                   "this run does not migrate: pass it too, or migrate those uses by hand")
        elif name in refused:
            exporter.keep[name] = f"`{name}` is used from {relative(users[0])}: {refused[name]}"
        elif name not in exporter.plans:
            exporter.keep[name] = (f"`{name}` is used from {relative(users[0])}: only `@pipeline_def` functions, "
                                   "and functions that return a pipeline of one of them, are migrated with their "
                                   "importers; migrate those uses together by hand")
    return exporter


def _relative(path: Path, root: Path | None) -> str:
    """A caller's path as the project names it."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix() if root else _display(path)
    except ValueError:
        return _display(path)


def _project_root(paths: list[Path], config: Config) -> Path | None:
    """The folder of the configuration's pyproject.toml, else the git work tree, else the one
    folder the run was given (``dali-migrate path/to/project``): its scripts put it on
    ``sys.path``, so modules of its folders without ``__init__.py`` import from there."""
    found = config.root or _git_top(paths[0] if paths else Path.cwd())
    if found is None and len(paths) == 1 and paths[0].is_dir():
        return paths[0].resolve()
    return found


def _project_files(root: Path | None, config: Config, run_files: list[Path]) -> list[Path]:
    """Where callers may live: the run's files and the project's, .gitignore honoured."""
    extra = list(discover([root], config.exclude)) if root is not None else []
    seen = {p.resolve() for p in run_files}
    return [*run_files, *(p for p in extra if p.resolve() not in seen)]


def _git_top(path: Path) -> Path | None:
    import subprocess

    folder = path if path.is_dir() else path.parent
    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder or Path.cwd(),
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def run_migrate(paths: Iterable[Path], config: Config, write: bool,
                options: RunOptions = RunOptions()) -> list[FileResult]:
    paths = list(paths)
    config = replace(config, root=_project_root(paths, config))
    results = process(paths, config, migrate_file, options)
    units: list[set[int]] = []
    reruns: dict[int, tuple] = {}  # position -> (keep, imported): what its last migration was given
    needs_files = any(r.exported for r in results) or any(r.helper_requests for r in results)
    run_files = _files(paths, config, options.shard) if needs_files else []
    if any(r.exported for r in results):
        units = _migrate_across_files(results, run_files, _project_files(config.root, config, run_files), config,
                                      config.root, reruns)
    if any(r.helper_requests for r in results):
        units += _migrate_helpers(results, run_files, config, reruns)
    units += _loader_modules(results)
    if write:
        _write_all(results, units)
    return results


def _loader_modules(results: list[FileResult]) -> list[set[int]]:
    """Appends a result that creates each loader module the migrated files import and that does
    not exist yet; returns the units (each module with its importers: written together or not at
    all). A file of that name that is not the loader fails its importers."""
    users: dict[str, list[int]] = {}
    for position, result in enumerate(results):
        if result.changed and result.loader_file:
            users.setdefault(result.loader_file, []).append(position)
    if not users:
        return []
    from .engine import unified_diff
    from .loader_module import existing_loader
    from .migrate.torch_loader import module_source

    units = []
    for file, positions in users.items():
        for_jax = any(results[position].loader_for_jax for position in positions)
        path = Path(file)
        if path.exists():
            text = existing_loader(path)  # read once for all its importers
            for position in positions:
                problem = _existing_loader_problem(path, text, results[position])
                if problem:
                    results[position].error, results[position].changed = problem, False
            continue
        source = module_source(jax=for_jax).encode("utf-8")
        name = _display(path)
        results.append(FileResult(name, changed=True, new_source=source, created=True,
                                  diff=unified_diff(b"", source, name)))
        units.append({*positions, len(results) - 1})
    return units


def _existing_loader_problem(path: Path, text: bytes | None, result: FileResult) -> str | None:
    """Why the loader module already at ``path`` (``text``) cannot serve ``result`` (None: it can)."""
    from .loader_module import defines_class, lacking
    from .migrate.torch_loader import CLASS_NAME, JAX_CLASS_NAME

    if text is None or not defines_class(text, CLASS_NAME):
        return (f"the loader module {_display(path)} exists and does not define {CLASS_NAME}: rename it, "
                "or name another module with loader-module in [tool.dali-migrate]")
    if result.loader_for_jax and not defines_class(text, JAX_CLASS_NAME):
        return (f"the loader module {_display(path)} has no {JAX_CLASS_NAME} (it was written for PyTorch "
                "alone): delete it and run migrate again on every file that imports it")
    missing = lacking(text, result.loader_modes)
    if missing:
        return (f"the loader module {_display(path)} was written by an older dali-migrate and cannot "
                f"{' or '.join(missing)}: delete it and run migrate again to write the current one")
    return None


def is_writable(path: Path) -> bool:
    return os.access(path.resolve(), os.W_OK)


def _write_all(results: list[FileResult], units: list[set[int]]) -> None:
    """Every file is written to a temporary file first; only then are they renamed, all of them
    at once (an interruption before that leaves the repository as it was). A file that cannot be
    written holds back the other files of its unit: a migrated pipeline without its migrated
    importers would fail."""
    staged: list[Staged] = []
    try:
        for unit in _whole_units(results, units):
            _stage_unit([results[position] for position in unit], staged)
        land(staged)
    except BaseException:
        discard(staged)
        raise


def _whole_units(results: list[FileResult], units: list[set[int]]) -> list[list[int]]:
    """Overlapping units joined; every other changed file a unit of its own."""
    joined: list[set[int]] = []
    for unit in units:
        overlapping = [u for u in joined if u & unit]
        joined = [u for u in joined if not u & unit] + [set(unit).union(*overlapping)]
    placed = set().union(*joined)
    joined += [{position} for position in range(len(results)) if position not in placed]
    return [sorted(p for p in unit if results[p].changed and results[p].error is None) for unit in joined]


def _stage_unit(unit: list[FileResult], staged: list[Staged]) -> None:
    """Stages every file of ``unit`` onto ``staged``, or none of them."""
    first = len(staged)
    for result in unit:
        failure = _stage(result, staged)
        if failure is None:
            continue
        discard(staged[first:])
        del staged[first:]
        result.error, result.changed = failure, False
        for other in unit:
            if other is not result and other.changed:
                other.error, other.changed = (f"not written: {result.path} is part of the same migration and "
                                              f"could not be written ({failure})"), False
        return


def _stage(result: FileResult, staged: list[Staged]) -> str | None:
    path = Path(result.path)
    if result.created and not path.parent.is_dir():
        return f"its folder {_display(path.parent)} does not exist"
    if result.created and not is_writable(path.parent):
        return "read-only folder"
    if not result.created and not is_writable(path):
        return "read-only file"
    try:
        staged.append(stage(path, result.new_source))
    except HardLinked as error:
        return f"not written: {error}"
    except OSError as error:
        return f"cannot write: {error.strerror or error}"
    return None
