"""Regenerate fixtures/migrate/*.expected.py and *.diagnostics.txt from the inputs.

Run after an intended change to the codemod, then review `git diff fixtures/` line by line:
the expected files are the specification the tests hold the codemod to.
"""

from __future__ import annotations

from pathlib import Path

from dali_migrate.config import Config
from dali_migrate.engine import check_file, migrate_file
from dali_migrate.migrate.torch_loader import module_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# as `dali-migrate` runs on a script: DALITorchLoader imported from a module beside it
FIXTURE_CONFIG = Config(loader_import="dali_torch_loader")


def diagnostics_text(diagnostics) -> str:
    return "".join(f"{'' if d.cell is None else f'cell {d.cell}:'}{d.line}:{d.column} {d.code} {d.fix}\n"
                   for d in diagnostics)


def main() -> None:
    folder = FIXTURES / "migrate"
    for source in sorted([*folder.glob("*.input.py"), *folder.glob("*.input.ipynb")]):
        stem = source.name[: source.name.index(".input.")]
        data = source.read_bytes()
        result = migrate_file(data, source.name, FIXTURE_CONFIG)
        assert result.error is None, (source, result.error)
        source.with_name(source.name.replace(".input.", ".expected.")).write_bytes(result.new_source or data)
        (source.parent / f"{stem}.diagnostics.txt").write_text(diagnostics_text(result.diagnostics))
    # one module serves every fixture, the JAX ones too
    (folder / "dali_torch_loader.py").write_text(module_source(jax=True))
    for source in sorted((FIXTURES / "check").glob("*.py")):
        result = check_file(source.read_bytes(), source.name, Config())
        source.with_suffix(".check.txt").write_text(diagnostics_text(result.diagnostics))
    print("fixtures updated; review `git diff fixtures/`")


if __name__ == "__main__":
    main()
