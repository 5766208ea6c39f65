"""pytest plugin: assert in one line that a migration gives the same data as the original.

    def test_my_pipeline_migration(dali_equivalence):
        dali_equivalence("pipelines/train.py", "pipelines/train_ndd.py", iterations=5)

Registered through the ``pytest11`` entry point, so installing dali-migrate is enough.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def assert_equivalent(original, migrated=None, **options) -> None:
    """Raise AssertionError naming every difference (or why a side could not run)."""
    from . import VerifyOptions, verify_files
    from .report import report_json

    report = verify_files(Path(original), Path(migrated) if migrated else None, VerifyOptions(**options))
    if report.exit_code == 0:
        return
    lines = [report.error] if report.error else []
    for pipeline in report_json(report)["pipelines"]:
        lines.append(f"{pipeline['pipeline']}: {pipeline['status']}")
        for side in ("original", "migrated"):
            if not pipeline[side]["ok"]:
                lines.append(f"  {side}: {pipeline[side]['error']}")
        for m in pipeline["mismatches"][:20]:
            lines.append(f"  {m['what']} at iteration {m['iteration']}, output {m['output']}, sample {m['sample']}: {m['detail']}")
    raise AssertionError("\n".join(lines))


@pytest.fixture
def dali_equivalence():
    return assert_equivalent
