"""``migrate --report FILE.json|FILE.md``: what a migration did, for bots and pull requests.

The JSON form follows ``data/report.schema.json`` (shipped with the package); the Markdown form
is meant for a pull request's body. Both come from the same dictionary.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from . import __version__
from .diagnostics import FileResult
from .files import atomic_write

SCHEMA = "report.schema.json"


def report_data(results: list[FileResult], wrote: bool) -> dict:
    from .optable import load_op_table

    files = [_file_entry(r) for r in results if r.changed or r.error or r.pipelines or r.diagnostics]
    pipelines = [p for f in files for p in f["pipelines"]]
    rules: dict[str, dict[str, int]] = {}
    for f in files:
        for code, counts in f["rules"].items():
            total = rules.setdefault(code, {"migrated": 0, "todo": 0})
            total["migrated"] += counts["migrated"]
            total["todo"] += counts["todo"]
    return {
        "tool": "dali-migrate",
        "version": __version__,
        "dali_version": load_op_table().dali_version,
        "written": wrote,
        "summary": {
            "files_changed": sum(1 for f in files if f["changed"]),
            "pipelines_migrated": sum(1 for p in pipelines if p["status"] == "migrated"),
            "pipelines_kept": sum(1 for p in pipelines if p["status"] == "kept"),
            "todos": sum(len(f["todos"]) for f in files),
            "errors": sum(1 for f in files if f["error"]),
            "safety": dict(Counter(p["safety"] for p in pipelines if p["status"] == "migrated")),
        },
        "rules": rules,
        "files": files,
    }


def _file_entry(result: FileResult) -> dict:
    landed = [] if result.error else result.diagnostics
    rules: dict[str, dict[str, int]] = {}
    for d in landed:
        counts = rules.setdefault(d.code, {"migrated": 0, "todo": 0})
        counts["migrated" if d.fix == "fixed" else "todo"] += 1
    return {
        "path": result.path,
        "changed": result.changed,
        "error": result.error,
        "pipelines": [_pipeline_entry(result, name, reasons) for name, reasons in result.pipelines],
        "todos": [{"code": d.code, "line": d.line, "column": d.column, "cell": d.cell, "message": d.message}
                  for d in landed if d.fix == "todo"],
        "rules": rules,
    }


def _pipeline_entry(result: FileResult, name: str, reasons: list[str]) -> dict:
    if reasons:
        return {"name": name, "status": "kept", "safety": None, "why": None, "reasons": reasons}
    level, why = result.safety.get(name, ("exact", "the same data, bit for bit"))
    return {"name": name, "status": "migrated", "safety": level, "why": why, "reasons": [],
            "inlined": name in result.inlined}


def markdown(data: dict) -> str:
    summary = data["summary"]
    lines = [
        "## dali-migrate",
        "",
        f"{summary['pipelines_migrated']} pipeline(s) migrated to DALI dynamic mode, {summary['pipelines_kept']} "
        f"kept in pipeline mode, {summary['todos']} TODO(s) left, in {summary['files_changed']} changed file(s) "
        f"(dali-migrate {data['version']}, DALI {data['dali_version']}).",
        "",
        "| file | pipeline | outcome | safety |",
        "| --- | --- | --- | --- |",
    ]
    for f in data["files"]:
        for p in f["pipelines"]:
            outcome = "migrated" if p["status"] == "migrated" else f"kept: {p['reasons'][0]}"
            safety = f"{p['safety']}: {p['why']}" if p["safety"] else ""
            lines.append(f"| `{f['path']}` | `{p['name']}` | {_cell(outcome)} | {_cell(safety)} |")
        if f["error"]:
            lines.append(f"| `{f['path']}` | | error: {_cell(f['error'])} | |")
    todos = [(f["path"], t) for f in data["files"] for t in f["todos"]]
    if todos:
        lines += ["", "<details><summary>TODOs left for a person</summary>", ""]
        lines += [f"- `{path}:{t['line']}` {t['code']}: {_cell(t['message'])}" for path, t in todos]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(results: list[FileResult], path: Path, wrote: bool) -> None:
    data = report_data(results, wrote)
    text = markdown(data) if path.suffix.lower() in (".md", ".markdown") else json.dumps(data, indent=2) + "\n"
    atomic_write(path, text.encode("utf-8"))
