"""Large runs: parallel workers, shards, the result cache, the progress bar, pre-commit."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dali_migrate.runner as runner
from conftest import FIXTURES, ROOT
from dali_migrate.config import Config
from dali_migrate.report import progress_callbacks
from dali_migrate.runner import RunOptions, parse_shard, run_check, run_migrate

SOURCES = sorted((FIXTURES / "migrate").glob("*.input.py"))


@pytest.fixture
def corpus(tmp_path) -> Path:
    """DALI files among many files that never mention it."""
    folder = tmp_path / "repo"
    for index in range(3):
        for source in SOURCES:
            target = folder / f"pkg{index}" / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    for index in range(40):
        (folder / "plain" / f"m{index}.py").parent.mkdir(parents=True, exist_ok=True)
        (folder / "plain" / f"m{index}.py").write_text(f"def f{index}(x):\n    return x + {index}\n")
    return folder


def _summary(results):
    return [(r.path, r.error, [(d.line, d.column, d.code, d.message) for d in r.diagnostics]) for r in results]


def test_parallel_check_and_migrate_give_what_one_process_gives(corpus):
    assert len(list(corpus.rglob("*.input.py"))) >= runner.PARALLEL_THRESHOLD
    one = run_check([corpus], Config(), RunOptions(jobs=1))
    four = run_check([corpus], Config(), RunOptions(jobs=4))
    assert _summary(four) == _summary(one)
    assert sum(len(r.diagnostics) for r in one) > 100
    sources_one = [r.new_source for r in run_migrate([corpus], Config(), write=False, options=RunOptions(jobs=1))]
    sources_four = [r.new_source for r in run_migrate([corpus], Config(), write=False, options=RunOptions(jobs=4))]
    assert sources_four == sources_one and any(sources_one)


def test_shards_split_the_files_without_overlap(corpus):
    every = {r.path for r in run_check([corpus], Config())}
    shards = [{r.path for r in run_check([corpus], Config(), RunOptions(shard=(k, 3)))} for k in (1, 2, 3)]
    assert set().union(*shards) == every
    assert sum(len(s) for s in shards) == len(every)
    assert max(len(s) for s in shards) - min(len(s) for s in shards) <= 1


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard_is_refused(text):
    with pytest.raises(ValueError, match="K/N"):
        parse_shard(text)


class _CountingCheck:
    def __init__(self, monkeypatch):
        self.calls = 0
        original = runner.check_file

        def counting(data, path, config):
            self.calls += 1
            return original(data, path, config)

        monkeypatch.setattr(runner, "check_file", counting)


def test_warm_run_reuses_results_and_a_change_invalidates_them(corpus, tmp_path, monkeypatch):
    counter = _CountingCheck(monkeypatch)
    options = RunOptions(cache_dir=tmp_path / "cache")
    cold = run_check([corpus], Config(), options)
    parsed = counter.calls
    assert parsed == len(list(corpus.rglob("*.input.py")))  # plain files never reach a parse
    warm = run_check([corpus], Config(), options)
    assert counter.calls == parsed  # nothing parsed again
    assert _summary(warm) == _summary(cold)
    edited = next(corpus.rglob("train_classifier.input.py"))
    edited.write_text(edited.read_text().replace("crop=32", "crop=16"))
    run_check([corpus], Config(), options)
    assert counter.calls == parsed + 1
    run_check([corpus], Config(ignore=frozenset({"DM015"})), options)  # other rules: other results
    assert counter.calls == 2 * parsed + 1
    assert (tmp_path / "cache" / ".gitignore").read_text().strip().endswith("*")


def test_internal_errors_are_not_cached_and_a_corrupt_cache_is_ignored(tmp_path, monkeypatch):
    from dali_migrate.rules.dm004_mixed_device import MixedDevice

    counter = _CountingCheck(monkeypatch)
    bad = tmp_path / "bad.py"
    bad.write_text("import nvidia.dali\ndef broken(:\n")
    options = RunOptions(cache_dir=tmp_path / "cache")
    for _ in range(2):  # a syntax error belongs to the bytes: cached
        assert run_check([bad], Config(), options)[0].error.startswith("syntax error")
    assert counter.calls == 1
    crashing = tmp_path / "crashing.py"
    shutil.copy(SOURCES[0], crashing)
    monkeypatch.setattr(MixedDevice, "check", lambda self, facts: 1 / 0)
    for _ in range(2):  # a crash of a rule is the tool's: asked again
        assert run_check([crashing], Config(), options)[0].error.startswith("internal error in rule DM004")
    assert counter.calls == 3
    monkeypatch.undo()
    (tmp_path / "cache").mkdir(exist_ok=True)
    (tmp_path / "cache" / "check-v1.json").write_text("{not json")
    good = tmp_path / "good.py"
    shutil.copy(SOURCES[0], good)
    assert run_check([good], Config(), options)[0].diagnostics
    assert json.loads((tmp_path / "cache" / "check-v1.json").read_text())["entries"]


def test_progress_bar_only_on_an_interactive_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("CI", raising=False)
    assert progress_callbacks(io.StringIO()) == (None, None)  # a pipe
    on_start, on_file = progress_callbacks(Terminal())
    assert on_start is not None and on_file is not None
    monkeypatch.setenv("CI", "true")
    assert progress_callbacks(Terminal()) == (None, None)


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("pre-commit") is None and not (Path(sys.executable).parent / "pre-commit").exists(),
                    reason="pre-commit is not installed")
def test_pre_commit_hooks_run_check_and_fix(tmp_path):
    """The published hooks (.pre-commit-hooks.yaml), run by pre-commit on a staged file. The
    hooks run the dali-migrate installed here (language: system), so no network is needed."""
    import yaml

    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    subprocess.run([pre_commit, "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")], check=True)
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    bin_dir = str(Path(sys.executable).parent)
    for hook in hooks:
        hook.update(language="system", entry=f"{bin_dir}/{hook['entry']}")
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "ci@example.com")
    _git(repo, "config", "user.name", "CI")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}))
    shutil.copy(SOURCES[0], repo / "train.py")
    shutil.copy(FIXTURES / "migrate" / "explore_notebook.input.ipynb", repo / "explore.ipynb")
    (repo / "notes.txt").write_text("fn.readers.file is mentioned here, but this is not Python\n")
    _git(repo, "add", ".")

    def run_hook(hook_id: str) -> subprocess.CompletedProcess:
        return subprocess.run([pre_commit, "run", hook_id, "--all-files"], cwd=repo, capture_output=True,
                              text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)})

    checked = run_hook("dali-migrate-check")
    assert checked.returncode == 1 and "train.py:" in checked.stdout and "DM001" in checked.stdout
    assert "explore.ipynb:cell 4:1:1: DM001" in checked.stdout
    assert "notes.txt" not in checked.stdout
    fixed = run_hook("dali-migrate")
    assert fixed.returncode == 1  # pre-commit fails a hook that changed files
    assert "ndd.readers.File" in (repo / "train.py").read_text()
    assert "ndd.readers.File" in (repo / "explore.ipynb").read_text()
    assert run_hook("dali-migrate").returncode == 0  # and the second run changes nothing


def test_a_worker_that_dies_costs_its_files_not_the_run(corpus, monkeypatch):
    """A native crash in a worker process breaks the pool: the files are reported, the run ends."""
    import os as os_module

    def crash_on_train(data, path, config):
        if "train_classifier" in path:
            os_module._exit(1)  # what a segfault in native code looks like to the pool
        return runner.check_file(data, path, config)

    results = runner.process([corpus], Config(), crash_on_train, RunOptions(jobs=2))
    assert len(results) == len(list(corpus.rglob("*.py")))
    failed = [r for r in results if r.error]
    assert failed and all("the worker process failed" in r.error for r in failed)


@pytest.mark.parametrize("command", [["check"], ["migrate", "--check"]])
def test_a_run_that_meets_no_dali_file_does_not_import_libcst(tmp_path, command):
    """Importing LibCST costs more than the whole run on a few plain files (pre-commit)."""
    (tmp_path / "plain.py").write_text("def add(a, b):\n    return a + b\n")
    code = ("import sys; from click.testing import CliRunner; from dali_migrate.cli import main; "
            f"CliRunner().invoke(main, {[*command, str(tmp_path)]!r}); print('libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()
    assert out == "False"
