"""Pipelines used from other files stay in pipeline mode, so that no caller is broken."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config
from dali_migrate.runner import run_migrate

IMAGES = str((FIXTURES / "data" / "images").resolve())
PIPELINES = f'''from nvidia.dali import fn, pipeline_def

ROOT = {IMAGES!r}


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def local_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


def first_labels():
    pipe = local_pipe(ROOT)
    pipe.build()
    return pipe.run()[0].as_array().ravel().tolist()
'''


def _project(tmp_path: Path, caller: str) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "pipelines.py").write_text(PIPELINES)
    (tmp_path / "train.py").write_text(caller)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


FROM_IMPORT = '''from pkg.pipelines import ROOT, first_labels, train_pipe

pipe = train_pipe(ROOT)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist(), first_labels())
'''
MODULE_IMPORT = '''import pkg.pipelines as pipelines

pipe = pipelines.train_pipe(pipelines.ROOT)
pipe.build()
print(pipe.run()[0].as_array().ravel().tolist(), pipelines.first_labels())
'''


@pytest.mark.parametrize("caller", [FROM_IMPORT, MODULE_IMPORT], ids=["from-import", "module-import"])
@pytest.mark.parametrize("given", ["folder", "single file"])
def test_a_pipeline_imported_elsewhere_is_kept_and_the_project_still_runs(tmp_path, caller, given):
    root = _project(tmp_path, caller)
    before = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True)
    assert before.returncode == 0, before.stderr
    target = root if given == "folder" else root / "pkg" / "pipelines.py"
    results = run_migrate([target], Config(), write=True)
    assert all(r.error is None for r in results)
    migrated = (root / "pkg" / "pipelines.py").read_text()
    assert "def local_pipe(root, *, batch_size=2, num_threads=1):" in migrated  # nobody imports it
    assert "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\ndef train_pipe(root):" in migrated
    assert "DM001 `train_pipe` is used from train.py" in migrated
    after = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout


def test_a_name_that_is_not_imported_from_the_module_does_not_keep_it(tmp_path):
    root = _project(tmp_path, "train_pipe = 'a string of my own'\nprint(train_pipe)\n")
    run_migrate([root], Config(), write=True)
    migrated = (root / "pkg" / "pipelines.py").read_text()
    assert "def train_pipe(root, *, batch_size=2, num_threads=1):" in migrated
    assert "TODO" not in migrated
