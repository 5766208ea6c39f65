"""Time dali-migrate on generated corpora, next to ruff's banned-api check on the same files.

    pip install -e ".[bench]"
    python benchmarks/run.py                 # 10,000 files, ~1M lines, 1% DALI; and a DALI-heavy corpus
    python benchmarks/run.py --files 2000    # a quicker look

Prints a Markdown table (the README's "Speed" section is a copy of one run). Every command runs
`--repeat` times on the same files and the fastest run counts: the corpora are generated once,
so all runs see a warm file-system cache.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "migrate"
PROJECTS = FIXTURES.parent / "projects"
RUNNABLE = ["augment_random", "shuffled_epochs", "train_classifier", "numpy_augment"]  # verify: both run on CPU
BIN = Path(sys.executable).parent
RUFF_BANNED_API = [
    "--select", "TID251",
    "--config", 'lint.flake8-tidy-imports.banned-api."nvidia.dali".msg = "pipeline mode"',
]


def plain_module(rng: random.Random, index: int, lines: int) -> str:
    """Ordinary Python, about ``lines`` lines of whole functions, that never mentions the library."""
    parts = [f'"""Module {index}."""', "import os", "import math", ""]
    while len(parts) + 10 <= lines:
        name = f"f{index}_{len(parts)}"
        parts += [
            f"def {name}(values, scale={rng.randint(1, 9)}):",
            '    """Scale and sum."""',
            "    total = 0",
            "    for value in values:",
            "        if value > scale:",
            "            total += math.sqrt(value) * scale",
            "        else:",
            "            total -= value",
            f"    return total + len(os.sep) + {rng.random():.4f}",
            "",
        ]
    return "\n".join(parts) + "\n"


def dali_module(rng: random.Random, templates: list[str], lines: int) -> str:
    """A fixture pipeline with renamed functions, padded with plain code to ``lines`` lines."""
    text = rng.choice(templates)
    padding = plain_module(rng, rng.randint(0, 10**6), max(lines - text.count("\n"), 14))
    return text + "\n\n" + padding.split("\n", 3)[3]  # without the padding's docstring and imports


def generate(folder: Path, files: int, lines: int, dali_share: float, seed: int = 0) -> int:
    rng = random.Random(seed)
    templates = [p.read_text() for p in sorted(FIXTURES.glob("*.input.py"))]
    dali_files = 0
    for index in range(files):
        package = folder / f"pkg{index // 100:03d}"
        package.mkdir(parents=True, exist_ok=True)
        if rng.random() < dali_share:
            text, dali_files = dali_module(rng, templates, lines), dali_files + 1
        else:
            text = plain_module(rng, index, lines)
        (package / f"mod{index:05d}.py").write_text(text)
    return dali_files


def realistic(folder: Path, min_lines: int) -> int:
    """Copies of the real-project corpus (fixtures/projects: loaders, training scripts, helpers)
    and of the fixture inputs, one folder per copy, until ``min_lines``: DALI-heavy code as
    projects write it, every import resolvable inside its copy. Returns the number of copies."""
    copies, lines = 0, 0
    while lines < min_lines:
        copy = folder / f"copy{copies:03d}"
        for project in sorted(p for p in PROJECTS.iterdir() if p.is_dir()):
            shutil.copytree(project, copy / project.name)
        (copy / "examples").mkdir(parents=True)
        for source in sorted(FIXTURES.glob("*.input.py")):
            shutil.copy(source, copy / "examples" / source.name.replace(".input", ""))
        copies += 1
        lines += count_lines(copy)
    return copies


def parse_seconds(folder: Path, parser: str, repeat: int) -> float:
    """Parse every file of ``folder`` with CPython's ``ast`` or LibCST, in a fresh process."""
    code = ("import sys, pathlib, time\n"
            + ("import ast\nparse = ast.parse\n" if parser == "ast" else "import libcst\nparse = libcst.parse_module\n")
            + "files = [p.read_bytes() for p in pathlib.Path(sys.argv[1]).rglob('*.py')]\n"
            "start = time.perf_counter()\nfor data in files: parse(data)\nprint(time.perf_counter() - start)\n")
    return min(float(subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(repeat))


LARGE_PIPELINE = """\
import os

from nvidia.dali import fn, pipeline_def, types

ARRAYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "arrays")


@pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=3)
def augmented():
    images = fn.readers.numpy(file_root=ARRAYS, random_shuffle=True, seed=5)
    images = fn.resize(images, size=[224, 224])
    return fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[123.7, 116.3, 103.5],
        std=[58.4, 57.1, 57.4],
        mirror=fn.random.coin_flip(),
    )
"""


def large_arrays(folder: Path) -> Path:
    """A pipeline on camera-sized images (64 arrays of 480x640x3), where the work per call
    outweighs the Python overhead of each dynamic-mode call, unlike the fixtures' 16-pixel images."""
    import numpy as np

    rng = np.random.default_rng(0)
    (folder / "arrays").mkdir(parents=True)
    for index in range(64):
        np.save(folder / "arrays" / f"image{index:02d}.npy", rng.integers(0, 256, (480, 640, 3), dtype=np.uint8))
    source = folder / "large_arrays.py"
    source.write_text(LARGE_PIPELINE)
    return source


def with_capture(source: Path) -> Path | None:
    """``source`` migrated, with ``next_epoch(..., capture=True)``, written beside it (its data
    paths are relative to the file); None where the migration has no ``next_epoch`` call."""
    migrated = subprocess.run([str(BIN / "dali-migrate"), "-"], input=source.read_bytes(), capture_output=True).stdout
    captured = migrated.replace(b"next_epoch(batch_size=batch_size)", b"next_epoch(batch_size=batch_size, capture=True)")
    if captured == migrated:
        return None
    target = source.with_name(f"_bench_capture_{source.name}")
    target.write_bytes(captured)
    return target


def throughput(source: Path, iterations: int, migrated: Path | None = None) -> tuple[float, float] | None:
    """Batches per second of a pipeline in pipeline mode and migrated (in memory, or the file
    ``migrated``), from `verify`; None unless both ran and gave equal outputs."""
    with tempfile.TemporaryDirectory() as temp:
        report = Path(temp, "verify.json")
        command = [str(BIN / "dali-migrate"), "verify", str(source), *([str(migrated)] if migrated else []),
                   "--iterations", str(iterations), "--json", str(report)]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not report.exists():
            return None
        pipelines = [p for p in json.loads(report.read_text())["pipelines"] if p["status"] == "equal"]
    if not pipelines:
        return None
    return (sum(p["original"]["batches_per_s"] for p in pipelines) / len(pipelines),
            sum(p["migrated"]["batches_per_s"] for p in pipelines) / len(pipelines))


def throughput_row(label: str, source: Path, iterations: int) -> str:
    plain = throughput(source, iterations)
    if plain is None:
        return f"| {label} | did not run equal | | | | |"
    captured_file = with_capture(source)
    try:
        captured = throughput(source, iterations, captured_file) if captured_file else None
    finally:
        if captured_file:
            captured_file.unlink()
    capture_cells = f"{captured[1]:.1f} | {captured[1] / captured[0]:.2f}x" if captured else "n/a | n/a"
    return f"| {label} | {plain[0]:.1f} | {plain[1]:.1f} | {plain[1] / plain[0]:.2f}x | {capture_cells} |"


def print_throughput(iterations: int) -> None:
    print(f"Pipeline throughput on CPU (`dali-migrate verify`; {iterations} batches, 15 for the large images; "
          "the first batch of each side is not timed):\n")
    print("| pipeline | pipeline mode, batches/s | migrated, batches/s | ratio | migrated with "
          "`next_epoch(capture=True)`, batches/s | ratio |\n| --- | --- | --- | --- | --- | --- |")
    for name in RUNNABLE:
        print(throughput_row(f"fixture {name} (16-32 px)", FIXTURES / f"{name}.input.py", iterations))
    with tempfile.TemporaryDirectory(prefix="dali-migrate-bench-") as temp:
        print(throughput_row("large_arrays (480x640 -> 224x224, batch 8)", large_arrays(Path(temp)), 15))
    print()


def bench_realistic(folder: Path, repeat: int) -> list[tuple[str, float, int]]:
    """Rows (command, seconds, lines) on one core for the real-project corpus."""
    tool, lines = str(BIN / "dali-migrate"), count_lines(folder)
    rows = [("CPython `ast.parse` of every file", parse_seconds(folder, "ast", repeat), lines),
            ("LibCST `parse_module` of every file", parse_seconds(folder, "libcst", 1), lines)]
    ruff = shutil.which("ruff") or str(BIN / "ruff")
    if Path(ruff).exists():
        rows.append(("ruff `--select TID251` (banned-api on nvidia.dali), no cache",
                     timed([ruff, "check", "--no-cache", "--quiet", *RUFF_BANNED_API, "."], folder, repeat), lines))
    rows.append(("`dali-migrate check --no-cache -j 1`", timed([tool, "check", "--no-cache", "-j", "1", "."], folder, 1),
                 lines))
    rows.append(("`dali-migrate migrate --check -j 1`", timed([tool, "migrate", "--check", "-j", "1", "."], folder, 1),
                 lines))
    return rows


def timed(command: list[str], cwd: Path, repeat: int, env: dict | None = None) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, **(env or {})})
        best = min(best, time.perf_counter() - start)
    return best


def count_lines(folder: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in folder.rglob("*.py"))


def bench_corpus(label: str, folder: Path, repeat: int, rows: list) -> None:
    tool = str(BIN / "dali-migrate")
    cache = folder.parent / f"{folder.name}-cache"
    env = {"DALI_MIGRATE_CACHE_DIR": str(cache)}
    cores = os.cpu_count() or 1
    rows.append((label, "dali-migrate check, one process, no cache",
                 timed([tool, "check", "--no-cache", "-j", "1", "."], folder, repeat)))
    rows.append((label, f"dali-migrate check, -j {cores}, no cache",
                 timed([tool, "check", "--no-cache", "."], folder, repeat)))
    shutil.rmtree(cache, ignore_errors=True)
    subprocess.run([tool, "check", "."], cwd=folder, stdout=subprocess.DEVNULL, env={**os.environ, **env})
    rows.append((label, "dali-migrate check, warm cache", timed([tool, "check", "."], folder, repeat, env)))
    rows.append((label, "dali-migrate migrate --check (no writes)",
                 timed([tool, "migrate", "--check", "."], folder, repeat)))
    ruff = shutil.which("ruff") or str(BIN / "ruff")
    if Path(ruff).exists():
        rows.append((label, "ruff check --select TID251 (banned-api nvidia.dali), no cache",
                     timed([ruff, "check", "--no-cache", "--quiet", *RUFF_BANNED_API, "."], folder, repeat)))
        rows.append((label, "ruff check --select TID251, warm cache",
                     timed([ruff, "check", "--quiet", *RUFF_BANNED_API, "."], folder, repeat)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=100, help="lines per file")
    parser.add_argument("--heavy-files", type=int, default=300, help="files of the DALI-heavy corpus")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--real-lines", type=int, default=100_000, help="lines of the real-project corpus")
    parser.add_argument("--iterations", type=int, default=50, help="batches per throughput measurement")
    parser.add_argument("--throughput-only", action="store_true", help="only the pipeline throughput table")
    options = parser.parse_args()
    if options.throughput_only:
        print_throughput(options.iterations)
        return
    with tempfile.TemporaryDirectory(prefix="dali-migrate-bench-") as temp:
        real = Path(temp, "real")
        copies = realistic(real, options.real_lines)
        files = len(list(real.rglob("*.py")))
        real_rows = bench_realistic(real, options.repeat)
        single = next(p for p in sorted(real.rglob("*.py")) if b"pipeline_def" in p.read_bytes())
        single_seconds = timed([str(BIN / "dali-migrate"), "check", "--no-cache", str(single)], real, options.repeat)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}\n")
    print(f"Real-project corpus: {copies} copies of fixtures/projects and the fixture inputs, {files} files, "
          f"{real_rows[0][2]:,} lines; one core.\n")
    print("| command | seconds | lines/s |\n| --- | --- | --- |")
    for command, seconds, lines in real_rows:
        print(f"| {command} | {seconds:.2f} | {lines / seconds:,.0f} |")
    print(f"| `dali-migrate check` on one small file ({single.name}, startup included) | {single_seconds:.2f} | |\n")
    print_throughput(options.iterations)
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="dali-migrate-bench-") as temp:
        large, heavy = Path(temp, "large"), Path(temp, "heavy")
        dali = generate(large, options.files, options.lines, 0.01)
        generate(heavy, options.heavy_files, options.lines, 1.0, seed=1)
        large_label = f"{options.files} files, {count_lines(large):,} lines, {dali} use DALI"
        heavy_label = f"{options.heavy_files} files, {count_lines(heavy):,} lines, all use DALI"
        bench_corpus(large_label, large, options.repeat, rows)
        bench_corpus(heavy_label, heavy, options.repeat, rows)
        small = next(heavy.rglob("*.py"))
        rows.append(("one small file", "dali-migrate check (startup, parse, rules)",
                     timed([str(BIN / "dali-migrate"), "check", "--no-cache", str(small)], heavy, options.repeat)))
        plain = next(p for p in large.rglob("*.py") if b"dali" not in p.read_bytes())
        rows.append(("one small file", "dali-migrate check, file without DALI",
                     timed([str(BIN / "dali-migrate"), "check", str(plain)], large, options.repeat)))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}\n")
    print("| corpus | command | seconds |\n| --- | --- | --- |")
    for corpus, command, seconds in rows:
        print(f"| {corpus} | {command} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
