from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MIGRATE_FIXTURES = sorted([*(FIXTURES / "migrate").glob("*.input.py"), *(FIXTURES / "migrate").glob("*.input.ipynb")])
CHECK_FIXTURES = sorted((FIXTURES / "check").glob("*.py"))


def fixture_stem(path: Path) -> str:
    return path.name[: path.name.index(".input.")]


def expected_path(source: Path) -> Path:
    """``x.input.py`` -> ``x.expected.py``; ``x.input.ipynb`` -> ``x.expected.ipynb``."""
    return source.with_name(source.name.replace(".input.", ".expected."))


def diagnostics_text(diagnostics) -> str:
    return "".join(f"{'' if d.cell is None else f'cell {d.cell}:'}{d.line}:{d.column} {d.code} {d.fix}\n"
                   for d in diagnostics)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Each test gets a cache folder of its own: no test sees another's results."""
    monkeypatch.setenv("DALI_MIGRATE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def repo_root() -> Path:
    return ROOT
