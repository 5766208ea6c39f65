"""Fixture pairs: input -> expected output and expected diagnostics; second runs change nothing."""

from __future__ import annotations

import libcst as cst
import pytest

from conftest import FIXTURES, LOADER_MODULE, MIGRATE_FIXTURES, covered_by_todo, diagnostics_text, expected_path, fixture_stem
from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_file
from dali_migrate.notebook import read_code_cells

IDS = [fixture_stem(p) for p in MIGRATE_FIXTURES]
CONFIG = Config(loader_import=LOADER_MODULE)


def _migrate(path):
    result = migrate_file(path.read_bytes(), path.name, CONFIG)
    assert result.error is None
    return result


@pytest.mark.parametrize("source", MIGRATE_FIXTURES, ids=IDS)
def test_output_matches_expected(source):
    expected = expected_path(source).read_bytes()
    result = _migrate(source)
    assert (result.new_source or source.read_bytes()) == expected


@pytest.mark.parametrize("source", MIGRATE_FIXTURES, ids=IDS)
def test_diagnostics_match_expected(source):
    expected = source.with_name(f"{fixture_stem(source)}.diagnostics.txt").read_text()
    assert diagnostics_text(_migrate(source).diagnostics) == expected


@pytest.mark.parametrize("source", MIGRATE_FIXTURES, ids=IDS)
def test_migrated_output_parses_and_second_run_is_a_no_op(source):
    migrated = _migrate(source).new_source
    assert migrated is not None
    cst.parse_module(migrated)
    again = migrate_file(migrated, source.name, CONFIG)
    assert again.error is None
    assert not again.changed


@pytest.mark.parametrize("source", MIGRATE_FIXTURES, ids=IDS)
def test_check_on_migrated_code_reports_only_todo_sites(source):
    result = _migrate(source)
    code = result.new_source
    if source.suffix == ".ipynb":  # the cells' code, in one module
        code = read_code_cells(code).source.encode()
    lines = code.decode().splitlines()
    remaining = check_source(code, source.name, Config()).diagnostics
    uncovered = [d for d in remaining if not covered_by_todo(lines, d.line)]
    assert uncovered == []
    if not any(d.fix == "todo" for d in result.diagnostics):
        assert remaining == []


def test_the_loader_module_beside_the_fixtures_is_the_one_the_tool_writes():
    from dali_migrate.migrate.torch_loader import module_source

    assert (FIXTURES / "migrate" / f"{LOADER_MODULE}.py").read_text() == module_source(jax=True)
