"""Regenerate fixtures/migrate/*.expected.py and *.diagnostics.txt from the inputs.

Run after an intended change to the codemod, then review `git diff fixtures/` line by line:
the expected files are the specification the tests hold the codemod to.
"""

from __future__ import annotations

from pathlib import Path

from dali_migrate.config import Config
from dali_migrate.engine import check_source, migrate_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def diagnostics_text(diagnostics) -> str:
    return "".join(f"{d.line}:{d.column} {d.code} {d.fix}\n" for d in diagnostics)


def main() -> None:
    for source in sorted((FIXTURES / "migrate").glob("*.input.py")):
        stem = source.name[: -len(".input.py")]
        data = source.read_bytes()
        result = migrate_source(data, source.name, Config())
        assert result.error is None, (source, result.error)
        (source.parent / f"{stem}.expected.py").write_bytes(result.new_source or data)
        (source.parent / f"{stem}.diagnostics.txt").write_text(diagnostics_text(result.diagnostics))
    for source in sorted((FIXTURES / "check").glob("*.py")):
        result = check_source(source.read_bytes(), source.name, Config())
        source.with_suffix(".check.txt").write_text(diagnostics_text(result.diagnostics))
    print("fixtures updated; review `git diff fixtures/`")


if __name__ == "__main__":
    main()
