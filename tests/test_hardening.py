"""What an adversarial audit broke (issue 17): each test reproduces one failure."""

from __future__ import annotations

import json
import shutil

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
