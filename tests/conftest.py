from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# as `dali-migrate` runs on a script: DALITorchLoader imported from the module beside it
# (fixtures/migrate/dali_torch_loader.py, written by scripts/update_fixtures.py)
LOADER_MODULE = "dali_torch_loader"
MIGRATE_FIXTURES = sorted([*(FIXTURES / "migrate").glob("*.input.py"), *(FIXTURES / "migrate").glob("*.input.ipynb")])
CHECK_FIXTURES = sorted((FIXTURES / "check").glob("*.py"))


def package_project(root: Path, pipelines: str, caller: str) -> Path:
    """A git work tree with ``pkg/pipelines.py`` and the ``train.py`` that imports it."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "pipelines.py").write_text(pipelines)
    (root / "train.py").write_text(caller)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def run_script(root: Path, script: str = "train.py") -> str:
    """What ``script`` prints, run in ``root``; it must succeed."""
    done = subprocess.run([sys.executable, script], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


# a two-output pipeline over the bundled images, for tests that append a program body
IMAGES_PIPELINE = f'''import numpy as np
from nvidia.dali import fn, pipeline_def

IMAGES = {str(FIXTURES / "data" / "images")!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def images_pipeline(root):
    jpegs, labels = fn.readers.file(file_root=root)
    images = fn.resize(fn.decoders.image(jpegs), resize_x=8, resize_y=8)
    return images, labels


'''
# migrated code as the audit reads it: a generator of two ndd Batches, ``gen``
NDD_GENERATOR = '''from nvidia.dali.experimental.dynamic import as_batch as ndd_batch


def graph():
    while True:
        yield ndd_batch(), ndd_batch()


gen = graph()
'''


def fixture_stem(path: Path) -> str:
    return path.name[: path.name.index(".input.")]


def expected_path(source: Path) -> Path:
    """``x.input.py`` -> ``x.expected.py``; ``x.input.ipynb`` -> ``x.expected.ipynb``."""
    return source.with_name(source.name.replace(".input.", ".expected."))


def diagnostics_text(diagnostics) -> str:
    return "".join(f"{'' if d.cell is None else f'cell {d.cell}:'}{d.line}:{d.column} {d.code} {d.fix}\n"
                   for d in diagnostics)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Each test gets a cache folder of its own: no test sees another's results."""
    monkeypatch.setenv("DALI_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def unwrapped_todos(text: str) -> str:
    """``text`` with each TODO that migrate wrapped to the line length back on one line."""
    import re

    return re.sub(r"\n[ \t]*#   ", " ", text)


def _todo_above(lines: list[str], index: int) -> bool:
    probe = index - 1
    while probe >= 0 and lines[probe].lstrip().startswith(("#", "@")):
        if "TODO(dali-migrate)" in lines[probe]:
            return True
        probe -= 1
    return False


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def covered_by_todo(lines: list[str], line: int) -> bool:
    """A TODO comment sits above ``line``'s statement or above one of its enclosing blocks."""
    index = line - 1
    if index >= len(lines):
        return False
    if _todo_above(lines, index):
        return True
    depth = _indent(lines[index])
    for probe in range(index - 1, -1, -1):
        text = lines[probe]
        if text.strip() and not text.lstrip().startswith("#") and _indent(text) < depth:
            if _todo_above(lines, probe):
                return True
            depth = _indent(text)
    return False


def printed_by(folder: Path, **programs: str) -> dict[str, str]:
    """What each program (name -> source) prints, run from ``folder``; each must succeed."""
    import subprocess
    import sys

    printed = {}
    for name, source in programs.items():
        (folder / f"{name}.py").write_text(source)
        done = subprocess.run([sys.executable, f"{name}.py"], cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        printed[name] = done.stdout
    return printed


# A per-sample source whose epochs end with StopIteration, as PhysicsNeMo-style datapipes feed
# their pipelines (tests/test_outside_state.py, tests/test_datapipe_epochs.py)
WINDOWS_SOURCE = '''class Windows:
    def __init__(self, n, batch_size):
        self.n, self.batch_size = n, batch_size

    def __call__(self, sample_info):
        if sample_info.iteration >= self.n // self.batch_size:
            raise StopIteration
        return np.full((2,), sample_info.idx_in_epoch + 10 * sample_info.epoch_idx, dtype=np.float32)

    def __len__(self):
        return self.n
'''
