"""The PyTorch loader module: written once per project, imported by every migrated file, reused
by later runs; the migrated project runs and prints what the original printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from dali_migrate.cli import main
from dali_migrate.migrate.torch_loader import module_source

TRAINING = FIXTURES / "migrate" / "torch_training.input.py"
IMAGES = (FIXTURES / "data" / "images").resolve()


def _loaders_module() -> str:
    """The training fixture as a module of a package: no `__main__` guard, images by absolute path."""
    source = TRAINING.read_text()
    source = source.replace('os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "images")',
                            repr(str(IMAGES)))
    return source[: source.index('if __name__ == "__main__":')]


def _package_project(root: Path, pyproject: str = "") -> Path:
    (root / "pyproject.toml").write_text(pyproject)
    for folder in ("mypkg", "mypkg/data"):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "__init__.py").write_text("")
    (root / "mypkg" / "data" / "loaders.py").write_text(_loaders_module())
    (root / "train.py").write_text("from mypkg.data.loaders import main\n\nif __name__ == \"__main__\":\n    main()\n")
    return root


def _migrate(*args: str):
    return CliRunner().invoke(main, list(args))


def _run(root: Path) -> str:
    done = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_package_gets_one_loader_module_in_its_top_package_and_runs_as_before(tmp_path):
    pytest.importorskip("torch")
    root = _package_project(tmp_path)
    before = _run(root)
    result = _migrate(str(root / "mypkg"))
    assert result.exit_code == 0, result.output
    loader = root / "mypkg" / "dali_torch_loader.py"
    assert loader.read_text() == module_source()
    migrated = (root / "mypkg" / "data" / "loaders.py").read_text()
    assert "from mypkg.dali_torch_loader import DALITorchLoader\n" in migrated
    assert "class DALITorchLoader" not in migrated
    assert "created: the loader (PyTorch) that migrated files import" in result.output
    assert _run(root) == before
    again = _migrate(str(root))
    assert again.exit_code == 0 and "migrated 0 file(s)" in again.output
    assert loader.read_text() == module_source()


def test_scripts_in_one_folder_share_one_module_and_diff_shows_it_without_writing(tmp_path):
    for name in ("train_a.py", "train_b.py"):
        (tmp_path / name).write_text(TRAINING.read_text())
    shown = _migrate("--diff", str(tmp_path))
    assert any(line.startswith("+++ b/") and line.endswith("/dali_torch_loader.py")
               for line in shown.output.splitlines())
    assert shown.output.count("class DALITorchLoader") == 1  # the new module's diff, not the scripts'
    assert not (tmp_path / "dali_torch_loader.py").exists()
    assert _migrate(str(tmp_path)).exit_code == 0
    assert (tmp_path / "dali_torch_loader.py").read_text() == module_source()
    for name in ("train_a.py", "train_b.py"):
        assert "from dali_torch_loader import DALITorchLoader\n" in (tmp_path / name).read_text()


def test_a_file_of_that_name_that_is_not_the_loader_stops_its_importers(tmp_path):
    root = _package_project(tmp_path)
    (root / "mypkg" / "dali_torch_loader.py").write_text("VALUE = 1\n")
    before = (root / "mypkg" / "data" / "loaders.py").read_bytes()
    result = _migrate(str(root / "mypkg"))
    assert result.exit_code == 2  # an error
    assert "does not define DALITorchLoader" in result.output
    assert (root / "mypkg" / "data" / "loaders.py").read_bytes() == before
    assert (root / "mypkg" / "dali_torch_loader.py").read_text() == "VALUE = 1\n"


def test_loader_module_from_pyproject(tmp_path):
    root = _package_project(tmp_path, '[tool.dali-migrate]\nloader-module = "mypkg.data.dali_loader"\n')
    assert _migrate(str(root / "mypkg")).exit_code == 0
    assert (root / "mypkg" / "data" / "dali_loader.py").read_text() == module_source()
    loaders = (root / "mypkg" / "data" / "loaders.py").read_text()
    assert "from mypkg.data.dali_loader import DALITorchLoader\n" in loaders
    assert not (root / "mypkg" / "dali_torch_loader.py").exists()


def test_a_configured_module_in_a_missing_folder_changes_nothing(tmp_path):
    root = _package_project(tmp_path, '[tool.dali-migrate]\nloader-module = "mypkg.nowhere.dali_loader"\n')
    before = (root / "mypkg" / "data" / "loaders.py").read_bytes()
    result = _migrate(str(root / "mypkg"))
    assert result.exit_code == 2 and "does not exist" in result.output
    assert (root / "mypkg" / "data" / "loaders.py").read_bytes() == before


def test_loader_module_must_be_a_dotted_name(tmp_path):
    root = _package_project(tmp_path, '[tool.dali-migrate]\nloader-module = "my-pkg/loader.py"\n')
    result = _migrate(str(root / "mypkg"))
    assert result.exit_code != 0 and "loader-module must be a dotted module name" in result.output


def test_a_loader_from_an_earlier_version_serves_readers_but_not_epochs_the_sources_end(tmp_path):
    earlier = module_source().replace("reader_meta=None", "reader_meta")  # it required a reader's metadata
    (tmp_path / "dali_torch_loader.py").write_text(earlier)
    (tmp_path / "by_sources.py").write_text((FIXTURES / "migrate" / "source_epochs.input.py").read_text())
    (tmp_path / "by_reader.py").write_text(TRAINING.read_text())
    before = (tmp_path / "by_sources.py").read_bytes()
    result = _migrate(str(tmp_path))
    assert result.exit_code == 2, result.output
    assert "written by an older dali-migrate" in result.output
    assert (tmp_path / "by_sources.py").read_bytes() == before
    assert "from dali_torch_loader import DALITorchLoader\n" in (tmp_path / "by_reader.py").read_text()
    assert (tmp_path / "dali_torch_loader.py").read_text() == earlier


# what a loader module of an earlier dali-migrate lacked, the fixture that needs it, what migrate says
EARLIER_LOADERS = {
    "size": ((", size=None, last_batch_padded=False", ""), "legacy_iterator_size",
             "cannot count epochs of DALIGenericIterator's size="),
    "pipelines": (("self.pipelines", "self.pipeline_list"), "pipelines_per_gpu",
                  "cannot step a list of pipelines together"),
}


@pytest.mark.parametrize("mode", sorted(EARLIER_LOADERS))
def test_a_loader_from_an_earlier_version_lacking_a_mode_leaves_the_file(tmp_path, mode):
    (old, new), stem, message = EARLIER_LOADERS[mode]
    earlier = module_source().replace(old, new)
    assert earlier != module_source()
    (tmp_path / "dali_torch_loader.py").write_text(earlier)
    (tmp_path / "train.py").write_text((FIXTURES / "migrate" / f"{stem}.input.py").read_text())
    before = (tmp_path / "train.py").read_bytes()
    result = _migrate(str(tmp_path))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert (tmp_path / "train.py").read_bytes() == before
