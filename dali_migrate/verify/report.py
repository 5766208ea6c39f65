"""The verify report: a rich table on the terminal, JSON for machines."""

from __future__ import annotations

import json
from typing import TextIO

from . import PipelineReport, VerifyReport

MAX_LISTED = 20


def report_json(report: VerifyReport) -> dict:
    return {
        "exit_code": report.exit_code,
        "error": report.error,
        "pipelines": [_pipeline_json(p) for p in report.pipelines],
    }


def _pipeline_json(p: PipelineReport) -> dict:
    sides = {}
    for label, side in (("original", p.original), ("migrated", p.migrated)):
        batches, samples = side.throughput(p.batch_size)
        sides[label] = {"ok": side.ok, "error": side.error, "kind": side.kind, "seconds": side.seconds,
                        "batches_per_s": batches, "samples_per_s": samples}
    return {
        "pipeline": p.name, "status": p.status, "batch_size": p.batch_size,
        "comparison": "exact" if p.rng_aligned else "statistical",
        "random_ops": p.random_ops, "note": p.note, **sides,
        "mismatches": [m.__dict__ for m in p.comparison.mismatches] if p.comparison else [],
        "outputs": [o.__dict__ for o in p.comparison.outputs.values()] if p.comparison else [],
    }


def write_verify_report(report: VerifyReport, stream: TextIO, json_path: str | None) -> None:
    if json_path == "-":
        stream.write(json.dumps(report_json(report), indent=2) + "\n")
        return
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(report_json(report), handle, indent=2)
    _write_table(report, stream)


def _write_table(report: VerifyReport, stream: TextIO) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=stream, highlight=False, soft_wrap=True)
    if report.error:
        console.print(f"[red]could not run[/]: {escape(report.error)}")
        return
    for p in report.pipelines:
        colour = {"equal": "green", "different": "red"}.get(p.status, "yellow")
        kind = "exact (RNG streams aligned)" if p.rng_aligned else (
            "statistical only (RNG streams not aligned; give the pipeline a seed= to compare exactly)")
        compared = f" - comparison: {kind}" if p.comparison is not None else ""  # none where a side failed
        console.print(f"[bold]{p.name}[/]: [{colour}]{p.status}[/]{compared}")
        if p.note:
            console.print(f"  note: {escape(p.note)}")
        for label, side in (("original", p.original), ("migrated", p.migrated)):
            if not side.ok:
                console.print(f"  {label}: [yellow]{side.kind}[/] {escape(side.error)}")
        if p.comparison is None:
            continue
        table = Table("output", "samples", "mismatches", "max abs diff")
        for o in p.comparison.outputs.values():
            table.add_row(str(o.output), str(o.samples), str(o.mismatches), f"{o.max_abs_diff:.3g}")
        console.print(table)
        for m in p.comparison.mismatches[:MAX_LISTED]:
            where = f"iteration {m.iteration}, output {m.output}" + (f", sample {m.sample}" if m.sample is not None else "")
            console.print(f"  [red]{m.what}[/] at {where}: {escape(m.detail)}")
        if len(p.comparison.mismatches) > MAX_LISTED:
            console.print(f"  ... and {len(p.comparison.mismatches) - MAX_LISTED} more (see --json)")
        for label, side in (("original", p.original), ("migrated", p.migrated)):
            batches, samples = side.throughput(p.batch_size)
            console.print(f"  {label}: {batches:.1f} batches/s, {samples:.1f} samples/s")
