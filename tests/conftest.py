from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MIGRATE_FIXTURES = sorted((FIXTURES / "migrate").glob("*.input.py"))
CHECK_FIXTURES = sorted((FIXTURES / "check").glob("*.py"))


def fixture_stem(path: Path) -> str:
    return path.name[: -len(".input.py")]


def diagnostics_text(diagnostics) -> str:
    return "".join(f"{d.line}:{d.column} {d.code} {d.fix}\n" for d in diagnostics)


@pytest.fixture
def repo_root() -> Path:
    return ROOT
