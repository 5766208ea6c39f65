"""Migrate every project of fixtures/projects/ and tabulate what became of its pipelines.

    python scripts/corpus_table.py            # print the table
    python scripts/corpus_table.py --readme   # and replace the one in README.md

Each project (a loader module, a training script, helpers, in the shapes public loaders use) is
copied to a temporary folder and migrated there as a whole, the way a user runs
`dali-migrate migrate PROJECT`. A pipeline either migrates, stays for an external reason (the
report says "kept in pipeline mode": Triton, a TensorFlow plugin, an API that dynamic mode does
not have) or stays for a named blocker that a later version could lift. tests/test_corpus.py
holds README.md to this script's output.
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dali_migrate.config import Config
from dali_migrate.migrate.todo import KEPT
from dali_migrate.runner import run_migrate

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = ROOT / "fixtures" / "projects"
README = ROOT / "README.md"
START, END = "<!-- corpus-table:start -->", "<!-- corpus-table:end -->"


@dataclass
class Outcome:
    project: str
    files: int = 0
    lines: int = 0
    migrated: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)  # (pipeline, first reason)
    todos: int = 0
    errors: list[str] = field(default_factory=list)
    migrated_sources: dict[str, bytes] = field(default_factory=dict)  # relative path -> new text


def migrate_project(project: Path, workdir: Path) -> Outcome:
    """Migrate a copy of ``project`` in ``workdir``; the copy keeps the result."""
    copy = workdir / project.name
    shutil.copytree(project, copy)
    sources = sorted(copy.rglob("*.py"))
    outcome = Outcome(project.name, len(sources), sum(p.read_text().count("\n") for p in sources))
    for result in run_migrate([copy], Config(), write=True):
        if result.error:
            outcome.errors.append(f"{Path(result.path).name}: {result.error}")
            continue
        outcome.todos += sum(1 for d in result.diagnostics if d.fix == "todo")
        if result.changed and result.new_source is not None:
            outcome.migrated_sources[str(Path(result.path).resolve().relative_to(copy.resolve()))] = result.new_source
        for name, reasons in result.pipelines:
            if not reasons:
                outcome.migrated.append(name)
            elif reasons[0].startswith(KEPT) and not reasons[0].startswith(AUDIT_KEPT):
                outcome.external.append(name)
            else:
                outcome.blocked.append((name, _inside(reasons[0], copy)))
    return outcome


AUDIT_KEPT = f"{KEPT}: after migration"  # the audit found code that would break: a blocker


def _inside(reason: str, copy: Path) -> str:
    """A reason names files by their path from the working directory: name them inside the project."""
    return re.sub(r"\S*" + re.escape(f"{copy.parent.name}/{copy.name}/"), "", reason)


def migrate_all(workdir: Path) -> list[Outcome]:
    return [migrate_project(p, workdir) for p in sorted(PROJECTS.iterdir()) if p.is_dir()]


def table(outcomes: list[Outcome]) -> str:
    rows = [
        "| project | files | lines | pipelines | migrated | kept: external reason | kept: blocker | TODOs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        pipelines = len(o.migrated) + len(o.external) + len(o.blocked)
        rows.append(f"| {o.project} | {o.files} | {o.lines} | {pipelines} | {len(o.migrated)} | "
                    f"{len(o.external)} | {len(o.blocked)} | {o.todos} |")
    total = lambda attr: sum(len(getattr(o, attr)) for o in outcomes)  # noqa: E731
    rows.append(f"| **{len(outcomes)} projects** | {sum(o.files for o in outcomes)} | "
                f"{sum(o.lines for o in outcomes)} | {total('migrated') + total('external') + total('blocked')} | "
                f"{total('migrated')} | {total('external')} | {total('blocked')} | {sum(o.todos for o in outcomes)} |")
    blockers = [f"- {o.project}, `{name}`: {reason}" for o in outcomes for name, reason in o.blocked]
    return "\n".join(rows) + ("\n\nBlockers (the first reason of each kept pipeline):\n\n" + "\n".join(blockers)
                              if blockers else "") + "\n"


def readme_with(table_text: str, readme: str) -> str:
    head, _, rest = readme.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table_text}{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", action="store_true", help="replace the table in README.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        text = table(migrate_all(Path(workdir)))
    print(text, end="")
    if args.readme:
        README.write_text(readme_with(text, README.read_text()))


if __name__ == "__main__":
    main()
