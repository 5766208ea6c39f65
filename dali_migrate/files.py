"""Finding the files to work on, and writing them back safely."""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
SKIPPED_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules",
                "site-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache", "build", "dist"}


class NotRegularFile(OSError):
    pass


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file. A FIFO or device named like a source file would block or
    never end: it raises NotRegularFile without a read."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise NotRegularFile("not a regular file (a FIFO, socket or device); skipped")
        return handle.read()


def discover(paths: Iterable[Path], exclude: tuple[str, ...] = ()) -> Iterator[Path]:
    """Source files under ``paths`` (files named on the command line are taken as given),
    honouring .gitignore inside git work trees and the ``exclude`` globs, in a stable order."""
    seen: set[str] = set()
    for path in paths:
        candidates = _walk(path) if path.is_dir() else [path]
        for candidate in candidates:
            key = os.path.realpath(candidate)  # ``a.py`` and ``./a.py`` are one file
            if key in seen or (exclude and _excluded(candidate, exclude)):
                continue
            seen.add(key)
            yield candidate


def _excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    return any(
        fnmatch.fnmatch(text, pattern)
        or fnmatch.fnmatch(path.name, pattern)
        or any(fnmatch.fnmatch(part, pattern) for part in path.parts)
        for pattern in patterns
    )


def _walk(folder: Path) -> list[Path]:
    tracked = _git_files(folder)
    if tracked is not None:
        return tracked
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        found.extend(Path(os.path.join(root, name)) for name in sorted(files) if name.endswith(SOURCE_SUFFIXES))
    return found


def _git_files(folder: Path) -> list[Path] | None:
    """Files git tracks or would track (not ignored) under ``folder``; None outside a work tree."""
    try:
        result = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            cwd=folder, capture_output=True, check=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    names = [n for n in result.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return sorted(
        folder / name
        for name in names
        if name.endswith(SOURCE_SUFFIXES) and not _in_skipped_dir(name) and (folder / name).is_file()
    )


def _in_skipped_dir(name: str) -> bool:
    """Environments and build output are skipped inside git work trees too, ignored or not."""
    return any(part in SKIPPED_DIRS for part in name.split("/")[:-1])


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader sees either the old or the new file."""
    land([stage(path, data)])


@dataclass(frozen=True)
class Staged:
    """New content written next to its target, waiting to be renamed over it."""

    temp: str
    target: Path


TEMP_SUFFIX = ".dali-migrate"


def stage(path: Path, data: bytes) -> Staged:
    """Write ``data`` to a temporary file beside ``path``, ready for :func:`land`.

    The temporary file lives in the same folder (``os.replace`` is atomic only within one file
    system) and takes the original's permission bits, owner and group (a run as root in a
    container must not hand a bind-mounted repository's files to root). Symbolic links are
    written through. A file with hard links is refused: replacing it would cut the links.
    Temporary files that a killed run left beside ``path`` are removed first.
    """
    target = path.resolve()
    existing = target.stat() if target.exists() else None
    if existing is not None and existing.st_nlink > 1:
        raise HardLinked(f"it has {existing.st_nlink} hard links, which replacing it would break; "
                         "migrate a copy, or remove the other links")
    _remove_strays(target)
    mode = existing.st_mode & 0o7777 if existing is not None else _default_mode()
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if existing is not None and hasattr(os, "chown"):
            _keep_owner(temp_name, existing)
        os.chmod(temp_name, mode)
    except BaseException:
        discard([Staged(temp_name, target)])
        raise
    return Staged(temp_name, target)


def land(staged: list[Staged]) -> None:
    """Rename every staged file over its target. Ctrl-C and SIGTERM wait until all are renamed:
    the files of one migration (a pipeline and the modules that import it) land together."""
    with _signals_held():
        for item in staged:
            os.replace(item.temp, item.target)


def discard(staged: list[Staged]) -> None:
    for item in staged:
        try:
            os.unlink(item.temp)
        except FileNotFoundError:
            pass


@contextmanager
def _signals_held():
    """Ctrl-C and SIGTERM are recorded, then delivered once the block is done (Python-level
    handlers: a signal mask would not stop the signal going to another thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in held}
    for number in held:
        signal.signal(number, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)
        for number in caught:
            signal.raise_signal(number)


def _remove_strays(target: Path) -> None:
    """``.<name>.<pid>.<random>.dali-migrate`` files whose run is gone (killed before it landed)."""
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and n.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.unlink(target.parent / name)
            except OSError:
                pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: not ours to judge
    return True


class HardLinked(OSError):
    pass


def _keep_owner(temp_name: str, original: os.stat_result) -> None:
    written = os.stat(temp_name)
    if (written.st_uid, written.st_gid) == (original.st_uid, original.st_gid):
        return
    try:
        os.chown(temp_name, original.st_uid, original.st_gid)
    except PermissionError:
        pass  # not root: the file is ours already, and the group is the best we can do


def _default_mode() -> int:
    """What ``open()`` would give a new file: 0o666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
