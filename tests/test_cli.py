"""The command line through click's runner: exit codes, formats, config, in-place writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, unwrapped_todos
import dali_migrate
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
    assert "left.py: pipeline `TwoFlips` migrated" in result.output
    assert "left.py: pipeline `FedPipe` kept: `FedPipe` not migrated: `iter_setup`: " \
           "`self.feed_input(self.data, [])`: feed a name" in result.output
    assert "left.py: pipeline `graph_pipe` kept: `with graph_pipe:` binds `labels`, which the code after it " \
           "reads" in result.output
    again = runner.invoke(main, ["migrate", "--exit-zero", str(tmp_path)])
    assert again.exit_code == 0, again.output
    assert "migrated 0 file(s)" in again.output


# -- ruff's conventions (issue 16) -----------------------------------------------------------------

def test_check_statistics_counts_findings_per_rule(runner, project):
    listed = runner.invoke(main, ["check", "--format", "json", str(project)])
    expected = {}
    for d in json.loads(listed.output)["diagnostics"]:
        expected[d["code"]] = expected.get(d["code"], 0) + 1
    result = runner.invoke(main, ["check", "--statistics", str(project)])
    assert result.exit_code == 1
    counted = {line.split()[1]: int(line.split()[0]) for line in result.output.splitlines()}
    assert counted == expected and len(counted) > 2


def test_check_reads_stdin_under_the_name_it_is_given(runner):
    result = runner.invoke(main, ["check", "-", "--stdin-filename", "src/train.py"], input=TRAIN.read_bytes())
    assert result.exit_code == 1
    assert result.output.startswith("src/train.py:12:1: DM001")
    clean = runner.invoke(main, ["check", "-", "--stdin-filename", "x.py"], input=b"print('no dali here')\n")
    assert clean.exit_code == 0 and clean.output == ""


def test_check_output_file_holds_the_report(runner, project, tmp_path):
    out = tmp_path / "report.sarif"
    result = runner.invoke(main, ["check", "--format", "sarif", "--output-file", str(out), str(project)])
    assert result.exit_code == 1 and result.output == ""
    assert json.loads(out.read_text())["runs"][0]["results"]


def test_exit_non_zero_on_fix(runner, tmp_path):
    shutil.copy(TRAIN, tmp_path / "train.py")
    result = runner.invoke(main, ["migrate", "--exit-zero", "--exit-non-zero-on-fix", str(tmp_path)])
    assert result.exit_code == 1, result.output
    again = runner.invoke(main, ["migrate", "--exit-zero", "--exit-non-zero-on-fix", str(tmp_path)])
    assert again.exit_code == 0, again.output  # nothing left to rewrite


def test_check_and_migrate_never_import_dali(tmp_path):
    """The core install has no DALI: both commands must work where importing it fails."""
    import subprocess
    import sys

    shutil.copy(TRAIN, tmp_path / "train.py")
    code = ("import sys; sys.modules['nvidia'] = None; sys.modules['nvidia.dali'] = None\n"
            "from dali_migrate.cli import main\n"
            "main([sys.argv[1], '--exit-zero', *sys.argv[2:]])\n")
    for command in (["check", "--no-cache"], ["migrate"]):
        done = subprocess.run([sys.executable, "-c", code, command[0], *command[1:], str(tmp_path)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    assert "ndd.readers.File" in (tmp_path / "train.py").read_text()


def test_the_github_action_installs_without_dali_and_annotates():
    import yaml

    from conftest import ROOT

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    runs = [step.get("run", "") for step in action["runs"]["steps"]]
    install = next(r for r in runs if "pip install" in r)
    assert "[" not in install and "dali-cuda" not in install  # no extra, no DALI
    assert any("dali-migrate check --format github" in r for r in runs)


# -- PEP 810 lazy imports (issue 16, item 7) ----------------------------------------------------------

LAZY = b"""lazy import numpy as np
lazy from nvidia.dali import fn, pipeline_def


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def pipe(root):
    jpegs, labels = fn.readers.file(file_root=root)
    return labels


p = pipe("images")
p.build()
print(np.asarray(p.run()[0].as_tensor()))
"""


def test_lazy_imports_are_resolved_by_check(runner, tmp_path):
    path = tmp_path / "lazy.py"
    path.write_bytes(LAZY)
    result = runner.invoke(main, ["check", "--no-cache", str(path)])
    assert result.exit_code == 1
    assert "lazy.py:5:1: DM001" in result.output and "lazy.py:7:21: DM005" in result.output


def test_lazy_imports_are_migrated_and_pruned(runner, tmp_path):
    path = tmp_path / "lazy.py"
    path.write_bytes(LAZY)
    result = runner.invoke(main, ["migrate", str(path)])
    assert result.exit_code == 0, result.output
    migrated = path.read_text()
    assert migrated.startswith("lazy import numpy as np\nimport nvidia.dali.experimental.dynamic as ndd\n")
    assert "nvidia.dali import" not in migrated and "reader.next_epoch(batch_size=batch_size)" in migrated
    assert runner.invoke(main, ["migrate", str(path)]).output.count("migrated 0 file(s)") == 1  # idempotent


# -- safety levels and the migration report (issue 16, items 1 and 2) ----------------------------------

def test_every_rule_has_a_safety_level_shown_by_rules_and_explain(runner):
    from dali_migrate.rules import ALL_RULES
    from dali_migrate.rules.base import SAFETY_LEVELS

    listing = runner.invoke(main, ["rules"]).output
    for rule in ALL_RULES:
        assert rule.safety in SAFETY_LEVELS
        assert (rule.safety == "none") == (rule.fix == "never"), rule.code
        assert f"safety: {rule.safety}" in next(line for line in listing.splitlines() if line.startswith(rule.code))
    assert "Safety level: equivalent" in runner.invoke(main, ["explain", "DM006"]).output


def _report_project(tmp_path):
    tmp_path.mkdir()
    for stem in ("train_classifier", "augment_random", "left_for_a_person", "explore_notebook"):
        source = next((FIXTURES / "migrate").glob(f"{stem}.input.*"))
        shutil.copy(source, tmp_path / f"{stem}{source.suffix}")
    return tmp_path


def test_the_json_report_validates_against_its_schema(runner, tmp_path):
    import jsonschema

    from dali_migrate.migration_report import SCHEMA

    project = _report_project(tmp_path / "project")
    report = tmp_path / "report.json"
    result = runner.invoke(main, ["migrate", "--exit-zero", "--report", str(report), str(project)])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    schema = json.loads((Path(dali_migrate.__file__).parent / "data" / SCHEMA).read_text())
    jsonschema.validate(data, schema)
    pipelines = {p["name"]: p for f in data["files"] for p in f["pipelines"]}
    assert pipelines["train_pipeline"]["status"] == "migrated"
    assert pipelines["train_pipeline"]["safety"] == "equivalent"  # its reader shuffles
    assert pipelines["handed_on"]["status"] == "kept" and pipelines["handed_on"]["reasons"]
    assert data["summary"]["todos"] == sum(len(f["todos"]) for f in data["files"]) > 0
    assert any(t["cell"] for f in data["files"] for t in f["todos"]) or any(
        f["path"].endswith(".ipynb") for f in data["files"])
    assert data["dali_version"].startswith("2.")


def test_the_markdown_report_is_a_pull_request_body(runner, tmp_path):
    project = _report_project(tmp_path / "project")
    report = tmp_path / "report.md"
    runner.invoke(main, ["migrate", "--exit-zero", "--report", str(report), str(project)])
    text = report.read_text()
    assert text.startswith("## dali-migrate\n")
    assert "| `" in text and "train_pipeline` | migrated | equivalent:" in text
    assert "<summary>TODOs left for a person</summary>" in text


def test_exact_only_keeps_what_would_not_be_bit_identical(runner, tmp_path):
    project = _report_project(tmp_path / "project")
    report = tmp_path / "report.json"
    result = runner.invoke(main, ["migrate", "--exit-zero", "--exact-only", "--report", str(report), str(project)])
    assert result.exit_code == 0, result.output
    pipelines = [p for f in json.loads(report.read_text())["files"] for p in f["pipelines"]]
    assert pipelines and all(p["safety"] in (None, "exact") for p in pipelines)
    kept = [p for p in pipelines if any("--exact-only" in r for r in p["reasons"])]
    assert kept, pipelines
    assert "`--exact-only`, and its migration is equivalent" in unwrapped_todos(
        (project / "train_classifier.py").read_text())


# -- check --add-noqa (issue 16, item 4) ----------------------------------------------------------------

def test_add_noqa_silences_every_finding_once_in_scripts_and_notebooks(runner, tmp_path):
    shutil.copy(TRAIN, tmp_path / "train.py")
    shutil.copy(FIXTURES / "migrate" / "explore_notebook.input.ipynb", tmp_path / "explore.ipynb")
    assert runner.invoke(main, ["check", "--no-cache", str(tmp_path)]).exit_code == 1
    first = runner.invoke(main, ["check", "--no-cache", "--add-noqa", str(tmp_path)])
    assert first.exit_code == 0 and "Added noqa comments for 0" not in first.output
    after = runner.invoke(main, ["check", "--no-cache", str(tmp_path)])
    assert after.exit_code == 0, after.output
    snapshot = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    again = runner.invoke(main, ["check", "--no-cache", "--add-noqa", str(tmp_path)])
    assert "Added noqa comments for 0 finding line(s)." in again.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == snapshot  # idempotent
    notebook = json.loads((tmp_path / "explore.ipynb").read_text())
    assert any("# noqa: DM" in line for cell in notebook["cells"] for line in cell["source"])


def test_add_noqa_merges_codes_and_never_writes_into_a_string():
    from dali_migrate.add_noqa import with_noqa
    from dali_migrate.diagnostics import Diagnostic

    text = 'x = fn.op(a, doc="""one\ntwo""")  # noqa: DM015\ny = 1\n'
    found = [Diagnostic("f.py", 1, 5, "DM009", "m", "", end_line=2), Diagnostic("f.py", 2, 1, "DM003", "m", "")]
    assert with_noqa(text, found) == 'x = fn.op(a, doc="""one\ntwo""")  # noqa: DM003, DM009, DM015\ny = 1\n'


def test_migrate_stdin_round_trip(runner):
    """Editors pipe a buffer through `dali-migrate -`: the migrated code comes back on stdout."""
    import subprocess
    import sys

    expected = (FIXTURES / "migrate" / "train_classifier.expected.py").read_bytes()
    done = subprocess.run([sys.executable, "-m", "dali_migrate", "-", "--stdin-filename", "train.py"],
                          input=TRAIN.read_bytes(), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == expected
    assert b"pipeline `train_pipeline` migrated" in done.stderr
    plain = b"print('no dali here')\r\n"
    done = subprocess.run([sys.executable, "-m", "dali_migrate", "-"], input=plain, capture_output=True)
    assert done.returncode == 0 and done.stdout == plain  # byte for byte


def test_a_reader_shuffled_with_its_own_seed_is_exact(runner, tmp_path):
    """An ndd reader given the same explicit seed reads the same order (checked on DALI 2.4)."""
    source = ("from nvidia.dali import fn, pipeline_def\n\n\n"
              "@pipeline_def(batch_size=2, num_threads=1, device_id=None)\n"
              "def pipe(shuffle_seed):\n"
              "    jpegs, labels = fn.readers.file(file_root='images', random_shuffle=True, seed=SEED)\n"
              "    return labels\n\n\n"
              "p = pipe(7)\np.build()\nprint(p.run()[0].as_array())\n")
    (tmp_path / "own.py").write_text(source.replace("SEED", "shuffle_seed"))
    (tmp_path / "derived.py").write_text(source.replace(", seed=SEED", ""))
    report = tmp_path / "report.json"
    runner.invoke(main, ["migrate", "--exit-zero", "--report", str(report), str(tmp_path / "own.py"),
                         str(tmp_path / "derived.py")])
    safety = {f["path"].rsplit("/", 1)[-1]: f["pipelines"][0]["safety"] for f in json.loads(report.read_text())["files"]}
    assert safety == {"own.py": "exact", "derived.py": "equivalent"}
