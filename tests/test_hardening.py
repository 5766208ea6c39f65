"""What an adversarial audit broke (issue 17): each test reproduces one failure."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from dali_migrate.cache import CACHE_FILE
from dali_migrate.cli import main

TRAIN = FIXTURES / "migrate" / "train_classifier.input.py"


@pytest.fixture
def repository(tmp_path, monkeypatch):
    monkeypatch.delenv("DALI_MIGRATE_CACHE_DIR")  # the cache beside pyproject.toml, as users have it
    project = tmp_path / "repo"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.dali-migrate]\n")
    shutil.copy(TRAIN, project / "train.py")
    return project


@pytest.mark.parametrize("linked", [CACHE_FILE, ".gitignore", None])
def test_a_cache_committed_as_a_symlink_is_never_written_through(repository, tmp_path, linked):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.txt"
    target.write_text("precious\n")
    cache = repository / ".dali-migrate-cache"
    if linked is None:  # the folder itself is a link
        cache.symlink_to(outside, target_is_directory=True)
    else:
        cache.mkdir()
        (cache / linked).symlink_to(target)
    result = CliRunner().invoke(main, ["check", str(repository)])
    assert result.exit_code == 1
    assert "cache not used" in result.output and "symbolic link" in result.output
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


def test_a_malformed_cache_entry_is_a_miss(repository):
    runner = CliRunner()
    assert runner.invoke(main, ["check", str(repository)]).exit_code == 1
    path = repository / ".dali-migrate-cache" / CACHE_FILE
    cache = json.loads(path.read_text())
    for entry in cache["entries"].values():
        entry["diagnostics"] = [{"line": "x", "bogus": 1}]
    path.write_text(json.dumps(cache))
    result = runner.invoke(main, ["check", str(repository)])
    assert result.exit_code == 1, result.output
    assert "DM001" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("where", ["cli", "pyproject"])
def test_an_unknown_rule_code_is_an_error_not_a_silent_pass(repository, where):
    arguments = ["check", str(repository)]
    if where == "cli":
        arguments += ["--select", "DM999"]
    else:
        (repository / "pyproject.toml").write_text('[tool.dali-migrate]\nselect = ["DMOO1"]\n')
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 2, result.output
    assert "unknown rule code" in result.output and "DM001" in result.output


def test_prefixes_of_rule_codes_are_accepted(repository):
    result = CliRunner().invoke(main, ["check", "--select", "DM00", "--ignore", "dm015", str(repository)])
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("comment, where", [
    ("# dali-migrate: noqa\n", "top"),
    ("  # noqa: DM001", "decorator"),
    ("  # NOQA", "def"),
])
def test_migrate_leaves_what_noqa_suppresses(tmp_path, comment, where):
    lines = TRAIN.read_text().splitlines(keepends=True)
    if where == "top":
        lines.insert(0, comment)
    else:
        index = next(i for i, line in enumerate(lines)
                     if line.startswith("@pipeline_def" if where == "decorator" else "def train_pipeline"))
        lines[index] = lines[index].rstrip("\n") + comment + "\n"
    path = tmp_path / "train.py"
    path.write_text("".join(lines))
    before = path.read_bytes()
    result = CliRunner().invoke(main, ["migrate", str(path)])
    if where == "top":
        assert path.read_bytes() == before
        assert "0 site(s) migrated" in result.output
    else:
        assert "@pipeline_def" in path.read_text()
        assert "pipeline `train_pipeline` kept: kept in pipeline mode: `# noqa` on its definition" in result.output
        assert result.exit_code == 1


def test_upper_case_noqa_silences_check(tmp_path):
    path = tmp_path / "noqa.py"
    path.write_text("from nvidia.dali import fn\n\nx = fn.resize(1)  # NOQA: DM015\n")
    assert CliRunner().invoke(main, ["check", "--no-cache", str(path)]).exit_code == 0


def test_a_fifo_named_like_source_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.py")
    shutil.copy(TRAIN, tmp_path / "train.py")
    for command in (["check", "--no-cache"], ["migrate", "--check"]):
        result = CliRunner().invoke(main, [*command, str(tmp_path / "pipe.py"), str(tmp_path / "train.py")])
        assert result.exit_code == 2, result.output
        assert "not a regular file" in result.output


def test_utf16_files_are_reported(tmp_path):
    path = tmp_path / "wide.py"
    path.write_bytes(TRAIN.read_text().encode("utf-16"))
    for command in (["check", "--no-cache"], ["migrate"]):
        result = CliRunner().invoke(main, [*command, str(path)])
        assert result.exit_code == 2, result.output
        assert "UTF-16" in result.output


def test_environments_are_skipped_inside_git_too(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for folder in (".venv/lib", "node_modules/x", "build", "src"):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(TRAIN, tmp_path / folder / "train.py")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", str(tmp_path)])
    paths = {d["path"] for d in json.loads(result.output)["diagnostics"]}
    assert {p.split("/")[-2] for p in paths} == {"src"}


def test_the_same_file_twice_counts_once(tmp_path):
    shutil.copy(TRAIN, tmp_path / "train.py")
    result = CliRunner().invoke(main, ["migrate", "--check", str(tmp_path / "train.py"),
                                       str(tmp_path / "." / "train.py")])
    assert "would migrate 1 file(s)" in result.output


def test_ctrl_c_exits_130_not_the_findings_code(tmp_path):
    import subprocess
    import sys

    shutil.copy(TRAIN, tmp_path / "train.py")
    script = ("import os, signal\nimport dali_migrate.runner as runner\nfrom dali_migrate.cli import main\n"
              "runner.run_check = lambda *a, **k: os.kill(os.getpid(), signal.SIGINT)\n"
              "main(['check', '--no-cache', 'train.py'])\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == 130, done.stderr


@pytest.mark.parametrize("name, data, message", [
    ("binary.py", b"import nvidia.dali\x00\x01\x02", "binary"),
    ("wide.py", "from nvidia.dali import fn\n".encode("utf-16"), "UTF-16"),
    ("deep.py", b"from nvidia.dali import fn\nx = " + b"(" * 2000 + b"1" + b")" * 2000 + b"\n", "nested"),
    ("broken.py", b"from nvidia.dali import fn\ndef f(:\n", "syntax error"),
])
def test_verify_screens_its_input_like_check(tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_verify_takes_batch_size_from_arg():
    pytest.importorskip("nvidia.dali")
    from dali_migrate.verify import VerifyOptions, verify_files

    report = verify_files(FIXTURES / "migrate" / "sharded_eval.input.py", None,
                          VerifyOptions(args={"batch_size": 2}, iterations=1))
    assert report.exit_code == 0, report.error
    assert [p.batch_size for p in report.pipelines] == [2]


def test_memory_is_bounded_by_refusing_huge_literals(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "data.py"
    path.write_text("import nvidia.dali.fn as fn\nTABLE = [" + "0, " * 400_000 + "]\n")
    script = ("import resource, sys\nfrom click.testing import CliRunner\nfrom dali_migrate.cli import main\n"
              f"result = CliRunner().invoke(main, ['check', '--no-cache', {str(path)!r}])\n"
              "print(result.exit_code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n"
              "print(result.output)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    code, megabytes = map(int, done.stdout.split("\n")[0].split())
    assert code == 2 and "too large to work on safely" in done.stdout
    assert megabytes < 1000, megabytes


def test_owner_and_group_are_kept_when_root_migrates(tmp_path):
    import os

    if os.geteuid() != 0:
        pytest.skip("only root can hand a file to another owner")
    path = tmp_path / "train.py"
    shutil.copy(TRAIN, path)
    os.chown(path, 4242, 4343)
    CliRunner().invoke(main, ["migrate", str(path)])
    assert "ndd.readers.File" in path.read_text()
    assert (path.stat().st_uid, path.stat().st_gid) == (4242, 4343)


def test_a_hard_linked_file_is_refused_not_split(tmp_path):
    import os

    path = tmp_path / "train.py"
    shutil.copy(TRAIN, path)
    os.link(path, tmp_path / "other_name.py")
    result = CliRunner().invoke(main, ["migrate", str(path)])
    assert result.exit_code == 2 and "hard links" in result.output
    assert path.read_bytes() == TRAIN.read_bytes()
    assert os.stat(path).st_ino == os.stat(tmp_path / "other_name.py").st_ino


@pytest.mark.parametrize("fmt", ["github", "sarif"])
def test_paths_are_escaped_in_machine_output(tmp_path, fmt):
    weird = tmp_path / "a,b:c%d 100.py"
    shutil.copy(TRAIN, weird)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--format", fmt, str(weird)])
    if fmt == "github":
        lines = [line for line in result.output.splitlines() if line.startswith("::warning")]
        assert lines and all("a%2Cb%3Ac%25d 100.py,line=" in line for line in lines)
    else:
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(result.output)["runs"][0]["results"]}
        assert len(uris) == 1 and uris.pop().endswith("a%2Cb%3Ac%25d%20100.py")


def test_syntax_errors_are_placed_where_cpython_places_them(tmp_path):
    source = "from nvidia.dali import fn\n\nx = fn.resize(1,\ny = 2\n"
    try:
        compile(source, "x.py", "exec")
    except SyntaxError as error:
        expected = f"line {error.lineno}, column {error.offset}: {error.msg}"
    path = tmp_path / "broken.py"
    path.write_text(source)
    result = CliRunner().invoke(main, ["check", "--no-cache", str(path)])
    assert result.exit_code == 2 and expected in result.output, (expected, result.output)


def test_a_file_that_could_not_be_written_counts_no_migrated_site(tmp_path):
    import os

    path = tmp_path / "train.py"
    shutil.copy(TRAIN, path)
    os.link(path, tmp_path / "other_name.py")  # refused even for root, unlike a read-only file
    result = CliRunner().invoke(main, ["migrate", str(path)])
    assert "migrated 0 file(s); 0 pipeline(s) migrated, 0 kept; 0 site(s) migrated" in result.output


def test_workers_end_when_the_run_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    parent = ("import os, sys, time\nfrom concurrent.futures import ProcessPoolExecutor\n"
              "from dali_migrate.runner import die_with_parent\n"
              "pool = ProcessPoolExecutor(max_workers=1, initializer=die_with_parent)\n"
              "print(pool.submit(os.getpid).result(), flush=True)\n"
              "pool.submit(time.sleep, 60)\ntime.sleep(60)\n")
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    worker = int(process.stdout.readline())
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        try:
            os.waitpid(worker, os.WNOHANG)  # reaped by init elsewhere; here it may be ours
        except ChildProcessError:
            pass
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the worker outlived its killed parent")


# -- item 2: the files of one migration land together -------------------------------------------

def _unit(tmp_path):
    from test_cross_module import FROM_IMPORT, _project

    root = _project(tmp_path, FROM_IMPORT)
    return root, root / "pkg" / "pipelines.py", root / "train.py"


def test_a_file_that_cannot_be_written_holds_back_its_unit(tmp_path, monkeypatch):
    import dali_migrate.runner as runner
    from dali_migrate.config import Config
    from dali_migrate.runner import run_migrate

    root, pipelines, train = _unit(tmp_path)
    before = pipelines.read_bytes(), train.read_bytes()
    monkeypatch.setattr(runner, "is_writable", lambda path: path.name != "train.py")  # root writes anything
    results = {Path(r.path).resolve(): r for r in run_migrate([root], Config(), write=True)}
    assert (pipelines.read_bytes(), train.read_bytes()) == before
    assert results[train.resolve()].error == "read-only file"
    assert "is part of the same migration and could not be written" in results[pipelines.resolve()].error
    assert not results[pipelines.resolve()].changed


def test_an_interruption_before_landing_writes_nothing(tmp_path, monkeypatch):
    import dali_migrate.files as files
    from dali_migrate.config import Config
    from dali_migrate.runner import run_migrate

    root, pipelines, train = _unit(tmp_path)
    before = pipelines.read_bytes(), train.read_bytes()
    real_stage, calls = files.stage, []

    def stage_then_interrupt(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_stage(path, data)

    monkeypatch.setattr("dali_migrate.runner.stage", stage_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_migrate([root], Config(), write=True)
    assert (pipelines.read_bytes(), train.read_bytes()) == before
    assert not [p for p in root.rglob("*.dali-migrate")]


def test_ctrl_c_while_landing_waits_until_every_file_is_renamed(tmp_path, monkeypatch):
    import os
    import signal

    import dali_migrate.files as files
    from dali_migrate.config import Config
    from dali_migrate.runner import run_migrate

    root, pipelines, train = _unit(tmp_path)
    before = pipelines.read_bytes(), train.read_bytes()
    real_replace = os.replace

    def replace_and_interrupt(source, target):
        os.kill(os.getpid(), signal.SIGINT)  # held until the renames are done
        real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", replace_and_interrupt)
    with pytest.raises((KeyboardInterrupt, SystemExit)):  # SystemExit(130) once the CLI's handler is set
        run_migrate([root], Config(), write=True)
    assert pipelines.read_bytes() != before[0] and train.read_bytes() != before[1]
    assert b"next(pipe)" in train.read_bytes()


def test_temporary_files_of_a_killed_run_are_removed(tmp_path):
    from dali_migrate.config import Config
    from dali_migrate.runner import run_migrate

    root, pipelines, train = _unit(tmp_path)
    dead = 2**22 + 12345  # above Linux's pid_max default
    stray = train.parent / f".train.py.{dead}.abc123.dali-migrate"
    stray.write_text("half a file")
    live = train.parent / f".train.py.{os_getpid()}.abc123.dali-migrate"
    live.write_text("a run in progress")
    run_migrate([root], Config(), write=True)
    assert not stray.exists() and live.exists()


def os_getpid() -> int:
    import os

    return os.getppid()  # alive, and not this process


# -- items 2 and 13: check follows the project's imports ----------------------------------------

LOADERS = '''from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def train_pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels
'''
MIGRATED_LOADERS = '''import nvidia.dali.experimental.dynamic as ndd


def train_pipe(root, *, batch_size=2):
    reader = ndd.readers.File(file_root=root)
    while True:
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            yield (labels,)
'''
IMPORTER = '''from pkg.loaders import train_pipe as make

pipe = make("images")
pipe.build()
labels, = pipe.run()
print(labels.at(0))
'''


def _importer_project(tmp_path, loaders: str, importer: str = IMPORTER):
    (tmp_path / "pyproject.toml").write_text("[tool.dali-migrate]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "loaders.py").write_text(loaders)
    (tmp_path / "train.py").write_text(importer)
    return tmp_path / "train.py"


def test_check_flags_pipeline_api_in_a_file_that_never_spells_dali(tmp_path):
    train = _importer_project(tmp_path, LOADERS)
    result = CliRunner().invoke(main, ["check", str(train)])
    assert result.exit_code == 1, result.output
    assert "train.py:4:1: DM003" in result.output and "train.py:5:11: DM003" in result.output
    assert "train.py:6:7: DM007" in result.output


@pytest.mark.parametrize("importer", [IMPORTER, IMPORTER.replace("from pkg.loaders import train_pipe as make",
                                                                  "from pkg import loaders").replace(
                                                                      "make(", "loaders.train_pipe(")],
                         ids=["from-import", "module-from-package"])
def test_check_flags_a_caller_that_uses_a_migrated_generator_as_a_pipeline(tmp_path, importer):
    train = _importer_project(tmp_path, MIGRATED_LOADERS, importer)
    result = CliRunner().invoke(main, ["check", str(train)])
    assert result.exit_code == 1, result.output
    assert "train.py:4:1: DM021" in result.output and "`.build`" in result.output
    assert "train.py:5:11: DM021" in result.output


def test_findings_that_depend_on_another_file_are_not_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("DALI_MIGRATE_CACHE_DIR")
    train = _importer_project(tmp_path, LOADERS)
    assert CliRunner().invoke(main, ["check", str(train)]).exit_code == 1
    (tmp_path / "pkg" / "loaders.py").write_text("def train_pipe(root):\n    return [root]\n")
    result = CliRunner().invoke(main, ["check", str(train)])
    assert result.exit_code == 0, result.output


def test_check_follows_a_package_import_from_inside_the_package_without_a_root(tmp_path):
    """`pkg/train.py` says `from pkg.loaders import ...` (run from the folder above): with no
    pyproject.toml or git to name the root, the folders above the importer are searched."""
    train = _importer_project(tmp_path, LOADERS)
    (tmp_path / "pyproject.toml").unlink()
    moved = tmp_path / "pkg" / "train.py"
    moved.write_text(train.read_text())
    train.unlink()
    result = CliRunner().invoke(main, ["check", str(moved)])
    assert result.exit_code == 1, result.output
    assert "train.py:4:1: DM003" in result.output


def test_an_unrelated_import_does_not_make_a_file_dali(tmp_path):
    train = _importer_project(tmp_path, LOADERS, "from pkg.loaders import os_path\nimport json\nprint(1)\n")
    assert CliRunner().invoke(main, ["check", str(train)]).exit_code == 0


# -- item 8: notebook findings point into the .ipynb text ----------------------------------------

@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_notebook_findings_point_at_the_line_of_the_ipynb_file(tmp_path, fmt):
    import re

    notebook = FIXTURES / "migrate" / "explore_notebook.input.ipynb"
    cells = json.loads(notebook.read_text())["cells"]
    result = CliRunner().invoke(main, ["check", "--format", fmt, str(notebook)])
    text_lines = notebook.read_text().splitlines()
    if fmt == "sarif":
        regions = [r["locations"][0]["physicalLocation"]["region"]
                   for r in json.loads(result.output)["runs"][0]["results"]]
        places = [(r["startLine"], r["startColumn"]) for r in regions]
    else:
        places = [(int(m.group(1)), int(m.group(2))) for m in re.finditer(r",line=(\d+),col=(\d+),", result.output)]
    checked = CliRunner().invoke(main, ["check", "--format", "json", str(notebook)])
    findings = json.loads(checked.output)["diagnostics"]
    assert len(places) == len(findings) > 5
    for (line, column), finding in zip(places, findings):
        source_line = "".join(cells[finding["cell"] - 1]["source"]).splitlines()[finding["line"] - 1]
        expected = json.dumps(source_line[finding["column"] - 1:])[1:-1]
        assert text_lines[line - 1][column - 1:].startswith(expected[:12]), (finding, text_lines[line - 1])


# -- item 14: no [fixable] on findings that migrate keeps ---------------------------------------

def test_check_does_not_promise_a_fix_that_migrate_will_not_make(tmp_path):
    kept = tmp_path / "kept.py"
    kept.write_text("from nvidia.dali import fn, pipeline_def\n\n\n"
                    "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
                    "def pipe():\n    data = fn.external_source(source=[1], batch=False)\n    return data\n\n\n"
                    "p = pipe()\np.build()\nprint(p.serialize())\n")
    migrated = CliRunner().invoke(main, ["--diff", str(kept)])
    assert "TODO(dali-migrate)" in migrated.output  # migrate keeps this pipeline
    checked = CliRunner().invoke(main, ["check", str(kept)])
    assert "DM001" in checked.output and "[fixable]" not in checked.output
    assert "--diff PATH` shows what migrate would fix" in checked.output


CLASS_BODY_NAMES = '''\
from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def labels_of(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


pipe = labels_of("/data")
pipe.build()
(labels,) = pipe.run()


class Names:
    labels = ["cat", "dog"]
    first = labels[0]

    def show(self):
        return labels.at(1)
'''


def test_a_class_body_name_does_not_end_the_module_value_its_methods_read():
    """The class body's `labels` is a list (left alone); `show` reads the module's outputs
    (rewritten): a method does not see its class body's names."""
    from dali_migrate.config import Config
    from dali_migrate.engine import migrate_source

    result = migrate_source(CLASS_BODY_NAMES.encode(), "names.py", Config())
    assert result.pipelines == [("labels_of", [])]
    code = result.new_source.decode()
    assert "    first = labels[0]\n" in code
    assert "        return np.asarray(labels.tensors[1])\n" in code
