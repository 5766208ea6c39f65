"""Bad input gets a clear message and is never changed; formatting survives a migration."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from dali_migrate.cli import main
from dali_migrate.config import Config
from dali_migrate.engine import migrate_source

TRAIN = (FIXTURES / "migrate" / "train_classifier.input.py").read_bytes()


def _run(paths):
    return CliRunner().invoke(main, ["migrate", *map(str, paths)])


@pytest.mark.parametrize("name, data, message", [
    ("syntax.py", b"from nvidia.dali import fn\ndef broken(:\n", "syntax error"),
    ("latin.py", b"# uses nvidia.dali\nx = '\xff\xfe'\n", "cannot decode"),
    ("binary.py", b"nvidia.dali\x00\x01\x02", "binary file"),
])
def test_bad_files_are_reported_and_left_alone_while_the_run_goes_on(tmp_path, name, data, message):
    bad = tmp_path / name
    bad.write_bytes(data)
    good = tmp_path / "train.py"
    good.write_bytes(TRAIN)
    result = _run([bad, good])
    assert result.exit_code == 2
    assert message in result.output
    assert bad.read_bytes() == data
    assert good.read_bytes() != TRAIN  # the run went on


def test_empty_and_non_dali_files_stay_byte_identical(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_bytes(b"")
    other = tmp_path / "other.py"
    other.write_bytes(b"import os\r\nprint(os.sep)  # comment\r\n")
    assert _run([tmp_path]).exit_code == 0
    assert empty.read_bytes() == b""
    assert other.read_bytes() == b"import os\r\nprint(os.sep)  # comment\r\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write read-only files")
def test_read_only_file_is_reported(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    path.chmod(stat.S_IRUSR)
    result = _run([path])
    assert result.exit_code == 2 and "read-only" in result.output
    assert path.read_bytes() == TRAIN


def test_read_only_file_is_reported_even_as_root(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    import dali_migrate.runner as runner

    monkeypatch.setattr(runner, "is_writable", lambda path: False)
    result = _run([path])
    assert result.exit_code == 2 and "read-only" in result.output
    assert path.read_bytes() == TRAIN


def test_permissions_are_kept_and_no_temp_file_is_left(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    path.chmod(0o640)
    assert _run([path]).exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_symlink_is_written_through(tmp_path):
    target = tmp_path / "real.py"
    target.write_bytes(TRAIN)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert _run([link]).exit_code == 0
    assert link.is_symlink()
    assert b"ndd.readers.File" in target.read_bytes()


def test_crlf_tabs_and_encoding_cookie_are_preserved():
    source = (b"# -*- coding: latin-1 -*-\r\n# caf\xe9\r\nfrom nvidia.dali import fn, pipeline_def\r\n\r\n"
              b"@pipeline_def(batch_size=2, num_threads=1, device_id=None)\r\ndef p():\r\n"
              b"\tdata = fn.random.uniform(range=[0, 1])  # draw\r\n\treturn data\r\n")
    result = migrate_source(source, "p.py", Config())
    assert result.error is None
    new = result.new_source
    assert new.startswith(b"# -*- coding: latin-1 -*-\r\n# caf\xe9\r\n")
    assert b"\n" not in new.replace(b"\r\n", b"")
    assert b"\t\tdata = ndd.random.uniform(range=[0, 1], batch_size=batch_size, rng=rng)  # draw\r\n" in new


def test_crash_in_a_fix_is_reported_and_nothing_is_written(tmp_path, monkeypatch):
    import dali_migrate.migrate as migrate

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(migrate, "migrate_module", explode)
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    result = _run([path])
    assert result.exit_code == 2 and "internal error while migrating: RuntimeError: boom" in result.output
    assert path.read_bytes() == TRAIN


def test_crash_in_a_rule_names_the_rule(tmp_path, monkeypatch):
    from dali_migrate.rules.dm004_mixed_device import MixedDevice

    monkeypatch.setattr(MixedDevice, "check", lambda self, facts: 1 / 0)
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 2 and "internal error in rule DM004" in result.output


def test_utf8_bom_is_kept():
    result = migrate_source(b"\xef\xbb\xbf" + TRAIN, "bom.py", Config())
    assert result.error is None
    assert result.new_source.startswith(b"\xef\xbb\xbf\"\"\"Train a tiny classifier")
    assert result.new_source.count(b"\xef\xbb\xbf") == 1


@pytest.mark.parametrize("expression, message", [
    ("(" * 3000 + "1" + ")" * 3000, "too many nested parentheses"),  # crashes LibCST's parser
    ("1+" * 20000 + "1", "too deeply nested"),
    ("a." * 5000 + "b", "too deeply nested"),
])
@pytest.mark.parametrize("command", ["check", "migrate"])
def test_deeply_nested_code_is_one_files_error_not_a_crash(tmp_path, expression, message, command):
    deep = tmp_path / "deep.py"
    deep.write_text(f"import nvidia.dali.fn as fn\nx = {expression}\n")
    before = deep.read_bytes()
    good = tmp_path / "train.py"
    good.write_bytes(TRAIN)
    result = CliRunner().invoke(main, [command, "-j", "1", str(deep), str(good)])
    assert result.exit_code == 2 and message in result.output
    assert deep.read_bytes() == before
    # the run went on
    assert "train.py" in result.output if command == "check" else good.read_bytes() != TRAIN


def test_code_as_deep_as_python_allows_is_checked(tmp_path):
    """190 nested lists: valid Python, and too deep for a LibCST traversal, which takes
    several frames per level; the analysis walks it with one."""
    deep = tmp_path / "deep.py"
    deep.write_text("import nvidia.dali.fn as fn\nx = fn.cast(" + "[" * 190 + "]" * 190 + ")\n")
    result = CliRunner().invoke(main, ["check", "-j", "1", str(deep)])
    assert result.exit_code == 1 and "DM015" in result.output and "error" not in result.output


def test_huge_files_are_refused_unless_they_never_mention_dali(tmp_path, monkeypatch):
    import dali_migrate.runner as runner

    monkeypatch.setattr(runner, "MAX_FILE_BYTES", 1000)
    huge = tmp_path / "generated.py"
    huge.write_bytes(TRAIN + b"# padding\n" * 200)
    plain = tmp_path / "plain.py"
    plain.write_bytes(b"x = 1\n" * 1000)
    result = _run([huge, plain])
    assert result.exit_code == 2 and "generated.py: error too large to work on" in result.output
    assert "plain.py" not in result.output
    assert huge.read_bytes() == TRAIN + b"# padding\n" * 200


def test_unreadable_file_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    from pathlib import Path

    locked = tmp_path / "locked.py"
    locked.write_bytes(TRAIN)
    good = tmp_path / "train.py"
    good.write_bytes(TRAIN)
    from dali_migrate import runner

    real_read = runner.read_regular

    def read_regular(path):
        if Path(path).name == "locked.py":
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(runner, "read_regular", read_regular)
    result = _run([locked, good])
    assert result.exit_code == 2 and "locked.py: error cannot read: Permission denied" in result.output
    assert b"ndd.readers.File" in good.read_bytes()


def test_an_interrupted_run_leaves_each_file_old_or_new(tmp_path, monkeypatch):
    import dali_migrate.files as files

    paths = [tmp_path / f"train{i}.py" for i in range(3)]
    for path in paths:
        path.write_bytes(TRAIN)
    real_replace, calls = os.replace, []

    def replace_then_interrupt(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        from dali_migrate.runner import run_migrate

        run_migrate(paths, Config(), write=True)
    contents = [p.read_bytes() for p in paths]
    assert contents[0] != TRAIN and b"ndd.readers.File" in contents[0]  # new
    assert contents[1] == TRAIN and contents[2] == TRAIN  # old
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]  # no temp file left


@pytest.mark.parametrize("flag", ["--diff", "--check"])
def test_diff_and_check_never_write(tmp_path, flag):
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    before = path.stat().st_mtime_ns
    result = CliRunner().invoke(main, ["migrate", flag, str(path)])
    assert result.exit_code == 1
    assert path.read_bytes() == TRAIN and path.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_comments_inside_calls_and_untouched_formatting_survive():
    source = (b"from nvidia.dali import fn, pipeline_def\n\n\nCONSTANT   =  [1,2,  3]  # odd spacing stays\n\n\n"
              b"@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
              b"def p(root):\n"
              b"    jpegs, labels = fn.readers.file(\n"
              b"        file_root=root,  # where the data is\n"
              b"        # a comment on its own line\n"
              b"        random_shuffle=False,\n"
              b"    )\n"
              b"    images = fn.decoders.image(jpegs,  # decode\n"
              b"                               device='mixed')  # on the GPU\n"
              b"    return images, labels\n")
    new = migrate_source(source, "p.py", Config()).new_source
    for kept in (b"CONSTANT   =  [1,2,  3]  # odd spacing stays\n", b"file_root=root,  # where the data is\n",
                 b"# a comment on its own line\n", b"jpegs,  # decode\n", b"device='gpu')  # on the GPU\n"):
        assert kept in new
