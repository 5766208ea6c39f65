"""``capture = true``: readers' epochs run with ``next_epoch(capture=True)``, and the migrated
pipelines still give the original's data (the harness compares them on CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from dali_migrate.config import Config, ConfigError, load_config
from dali_migrate.engine import migrate_file
from dali_migrate.verify import VerifyOptions, verify_files

pytest.importorskip("nvidia.dali")

CAPTURED = "next_epoch(batch_size=batch_size, capture=True)"


def _migrated_beside_its_data(tmp_path: Path, stem: str, config: Config) -> tuple[Path, str]:
    """The fixture and its migration in a folder beside a link to the fixtures' data (they
    find it relative to their own file)."""
    (tmp_path / "data").symlink_to(FIXTURES / "data")
    folder = tmp_path / "migrate"
    folder.mkdir()
    original = folder / f"{stem}.py"
    original.write_bytes((FIXTURES / "migrate" / f"{stem}.input.py").read_bytes())
    result = migrate_file(original.read_bytes(), str(original), config)
    assert result.error is None and result.new_source is not None
    migrated = folder / f"{stem}_migrated.py"
    migrated.write_bytes(result.new_source)
    return original, result.new_source.decode()


@pytest.mark.parametrize("stem", ["shuffled_epochs", "augment_random", "train_classifier"])
def test_captured_epochs_give_the_originals_data(tmp_path, stem):
    original, code = _migrated_beside_its_data(tmp_path, stem, Config(capture=True))
    assert CAPTURED in code
    report = verify_files(original, original.with_name(f"{stem}_migrated.py"), VerifyOptions(iterations=6))
    assert not report.error
    assert report.pipelines and all(p.status == "equal" for p in report.pipelines), \
        [(p.name, p.status, p.original.error, p.migrated.error) for p in report.pipelines]


def test_without_the_setting_nothing_is_captured(tmp_path):
    _, code = _migrated_beside_its_data(tmp_path, "shuffled_epochs", Config())
    assert "capture=" not in code


def test_checkpointed_and_several_reader_pipelines_are_not_captured():
    for stem in ("resume_training", "paired_readers"):
        source = FIXTURES / "migrate" / f"{stem}.input.py"
        code = migrate_file(source.read_bytes(), source.name, Config(capture=True)).new_source.decode()
        assert "capture=True" not in code, stem


def test_the_setting_is_read_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.dali-migrate]\ncapture = true\n")
    assert load_config(tmp_path).capture is True
    (tmp_path / "pyproject.toml").write_text('[tool.dali-migrate]\ncapture = "yes"\n')
    with pytest.raises(ConfigError, match="capture must be true or false"):
        load_config(tmp_path)
