"""Compare two runs output by output, sample by sample, collecting every difference."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Mismatch:
    iteration: int
    output: int
    sample: int | None
    what: str  # "outputs" | "samples" | "shape" | "dtype" | "layout" | "values"
    detail: str


@dataclass
class OutputSummary:
    output: int
    samples: int = 0
    max_abs_diff: float = 0.0
    mismatches: int = 0


@dataclass
class Comparison:
    mismatches: list[Mismatch] = field(default_factory=list)
    outputs: dict[int, OutputSummary] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not self.mismatches


def compare_runs(original: list, migrated: list, rtol: float, atol: float) -> Comparison:
    result = Comparison()
    for iteration, (left, right) in enumerate(zip(original, migrated)):
        if len(left) != len(right):
            result.mismatches.append(Mismatch(iteration, -1, None, "outputs",
                                              f"{len(left)} outputs != {len(right)} outputs"))
        for index, (a, b) in enumerate(zip(left, right)):
            summary = result.outputs.setdefault(index, OutputSummary(index))
            _compare_output(result, summary, iteration, index, a, b, rtol, atol)
    if len(original) != len(migrated):
        result.mismatches.append(Mismatch(min(len(original), len(migrated)), -1, None, "outputs",
                                          f"{len(original)} iterations != {len(migrated)} iterations"))
    return result


def _compare_output(result, summary, iteration, index, a, b, rtol, atol) -> None:
    before = len(result.mismatches)
    if a["layout"] != b["layout"]:
        result.mismatches.append(Mismatch(iteration, index, None, "layout", f"{a['layout']!r} != {b['layout']!r}"))
    left, right = a["samples"], b["samples"]
    if len(left) != len(right):
        result.mismatches.append(Mismatch(iteration, index, None, "samples", f"{len(left)} samples != {len(right)} samples"))
    for sample, (x, y) in enumerate(zip(left, right)):
        summary.samples += 1
        mismatch = _compare_sample(x, y, rtol, atol)
        if mismatch is not None:
            what, detail, diff = mismatch
            result.mismatches.append(Mismatch(iteration, index, sample, what, detail))
            summary.max_abs_diff = max(summary.max_abs_diff, diff)
        elif x.dtype.kind == "f":
            summary.max_abs_diff = max(summary.max_abs_diff, _max_abs_diff(x, y))
    summary.mismatches += len(result.mismatches) - before


def _max_abs_diff(x: np.ndarray, y: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    return float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64))))


def _compare_sample(x: np.ndarray, y: np.ndarray, rtol: float, atol: float):
    if x.shape != y.shape:
        return "shape", f"{x.shape} != {y.shape}", 0.0
    if x.dtype != y.dtype:
        return "dtype", f"{x.dtype} != {y.dtype}", 0.0
    if x.dtype.kind == "f":
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            diff = _max_abs_diff(x, y)
            return "values", f"max abs diff {diff:.6g} (rtol={rtol}, atol={atol})", diff
        return None
    if not np.array_equal(x, y):
        differing = int(np.count_nonzero(x != y))
        return "values", f"{differing} of {x.size} elements differ", float("nan") if x.dtype.kind not in "iub" else _max_abs_diff(x, y)
    return None


def compare_statistically(original: list, migrated: list, tolerance: float = 0.25) -> Comparison:
    """For random streams that are not aligned: shapes are not compared, only each output's
    dtype, mean and spread over all iterations (a clearly weaker check)."""
    result = Comparison()
    outputs = min(len(original[0]), len(migrated[0])) if original and migrated else 0
    for index in range(outputs):
        left = [s for it in original for s in it[index]["samples"]]
        right = [s for it in migrated for s in it[index]["samples"]]
        result.outputs[index] = OutputSummary(index, samples=len(left))
        problem = _statistics_differ(left, right, tolerance)
        if problem:
            result.mismatches.append(Mismatch(0, index, None, "statistics", problem))
            result.outputs[index].mismatches += 1
    return result


def _statistics_differ(left: list, right: list, tolerance: float) -> str | None:
    if {s.dtype for s in left} != {s.dtype for s in right}:
        return f"dtypes differ: {sorted({str(s.dtype) for s in left})} vs {sorted({str(s.dtype) for s in right})}"
    a = np.concatenate([np.ravel(s) for s in left]).astype(np.float64)
    b = np.concatenate([np.ravel(s) for s in right]).astype(np.float64)
    if a.size == 0 or b.size == 0:
        return None if a.size == b.size else "one side is empty"
    scale = max(float(np.std(a)), float(np.std(b)), 1e-12)
    if abs(float(np.mean(a)) - float(np.mean(b))) > tolerance * scale:
        return f"means differ: {np.mean(a):.4g} vs {np.mean(b):.4g}"
    if abs(float(np.std(a)) - float(np.std(b))) > tolerance * scale:
        return f"spreads differ: {np.std(a):.4g} vs {np.std(b):.4g}"
    return None
