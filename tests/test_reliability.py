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
