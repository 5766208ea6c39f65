"""The command line through click's runner: exit codes, formats, config, in-place writes."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from dali_migrate.cli import main

TRAIN = FIXTURES / "migrate" / "train_classifier.input.py"


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def project(tmp_path):
    shutil.copy(TRAIN, tmp_path / "train.py")
    shutil.copy(FIXTURES / "check" / "lookalikes.py", tmp_path / "other.py")
    return tmp_path


def test_check_exit_codes(runner, project):
    assert runner.invoke(main, ["check", str(project / "other.py")]).exit_code == 0
    result = runner.invoke(main, ["check", str(project)])
    assert result.exit_code == 1
    assert "train.py:12:1: DM001" in result.output
    assert runner.invoke(main, ["check", "--exit-zero", str(project)]).exit_code == 0


def test_check_json_and_github(runner, project):
    report = json.loads(runner.invoke(main, ["check", "--format", "json", str(project)]).output)
    assert {d["code"] for d in report["diagnostics"]} >= {"DM001", "DM005", "DM006"}
    github = runner.invoke(main, ["check", "--format", "github", str(project)]).output
    assert "::warning file=" in github and "title=DM001::" in github


def test_sarif_is_valid_against_the_schema(runner, project):
    jsonschema = pytest.importorskip("jsonschema")
    sarif = json.loads(runner.invoke(main, ["check", "--format", "sarif", str(project)]).output)
    schema = json.loads((FIXTURES / "schemas" / "sarif-2.1.0-subset.json").read_text())
    jsonschema.validate(sarif, schema)
    assert sarif["runs"][0]["results"][0]["ruleId"].startswith("DM")


def test_pyproject_configuration(runner, project):
    (project / "pyproject.toml").write_text('[tool.dali-migrate]\nignore = ["DM015", "DM006"]\nexclude = ["other.py"]\n')
    report = json.loads(runner.invoke(main, ["check", "--format", "json", str(project)]).output)
    codes = {d["code"] for d in report["diagnostics"]}
    assert codes and not codes & {"DM015", "DM006"}


def test_bad_configuration_is_a_usage_error(runner, project):
    (project / "pyproject.toml").write_text('[tool.dali-migrate]\nselct = ["DM001"]\n')
    result = runner.invoke(main, ["check", str(project)])
    assert result.exit_code == 2
    assert "unknown [tool.dali-migrate] keys: selct" in result.output


def test_default_command_migrates_in_place(runner, project):
    before_other = (project / "other.py").read_bytes()
    result = runner.invoke(main, [str(project)])
    assert result.exit_code == 0, result.output
    assert "import nvidia.dali.experimental.dynamic as ndd" in (project / "train.py").read_text()
    assert (project / "other.py").read_bytes() == before_other
    assert "migrated 1 file(s)" in result.output


def test_diff_and_check_never_write(runner, project):
    before = (project / "train.py").read_bytes()
    diff = runner.invoke(main, ["--diff", str(project / "train.py")])
    assert diff.exit_code == 1
    assert "+import nvidia.dali.experimental.dynamic as ndd" in diff.output
    assert runner.invoke(main, ["migrate", "--check", str(project)]).exit_code == 1
    assert (project / "train.py").read_bytes() == before


def test_rules_and_explain(runner):
    listing = runner.invoke(main, ["rules"]).output
    assert "DM001" in listing and "DM017" in listing
    explained = runner.invoke(main, ["explain", "dm004"])
    assert "## Use instead" in explained.output
    assert runner.invoke(main, ["explain", "DM999"]).exit_code == 2


def test_verify_command_json(runner, tmp_path):
    pytest.importorskip("nvidia.dali")
    out = tmp_path / "report.json"
    result = runner.invoke(main, ["verify", str(FIXTURES / "migrate" / "sharded_eval.input.py"),
                                  "--iterations", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["pipelines"][0]["status"] == "equal"
    assert report["pipelines"][0]["original"]["batches_per_s"] > 0


def test_migrate_names_each_pipeline_and_exits_1_on_todos(runner, tmp_path):
    shutil.copy(TRAIN, tmp_path / "train.py")
    shutil.copy(FIXTURES / "migrate" / "left_for_a_person.input.py", tmp_path / "left.py")
    result = runner.invoke(main, ["migrate", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "train.py: pipeline `train_pipeline` migrated" in result.output
    assert "left.py: pipeline `handed_on` kept: kept in pipeline mode: after migration `return " \
           "batch.as_tensor()` would fail" in result.output
    assert "left.py: pipeline `TwoFlips` kept: `TwoFlips` not migrated: `self.coin` is called twice" in result.output
    assert "left.py: pipeline `graph_pipe` kept: graph not migrated automatically" in result.output
    again = runner.invoke(main, ["migrate", "--exit-zero", str(tmp_path)])
    assert again.exit_code == 0, again.output
    assert "migrated 0 file(s)" in again.output
