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
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "migrate"
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
    options = parser.parse_args()
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
