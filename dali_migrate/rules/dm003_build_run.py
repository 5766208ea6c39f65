"""DM003: ``pipe.build()`` / ``pipe.run()`` plumbing."""

from __future__ import annotations

from typing import Iterator

from ..analysis import PLUMBING_METHODS, ModuleFacts
from .base import Finding, Rule


class BuildRunPlumbing(Rule):
    """
    ## What it does
    Flags `build()`, `run()`, `schedule_run()`, `outputs()`, `share_outputs()` and
    `release_outputs()` called on a pipeline object.

    ## Why
    A dynamic-mode pipeline needs no build step, and its data comes from iterating, not from
    `run()`.

    ## Example
    ```python
    pipe = train_pipe(root)
    pipe.build()
    for _ in range(10):
        images, labels = pipe.run()
    ```

    ## Use instead
    ```python
    pipe = train_pipe(root)
    for _ in range(10):
        images, labels = next(pipe)
    ```

    ## Fix safety
    `build()` is removed and `run()`/`outputs()`/`share_outputs()` become `next(pipe)` when the
    pipeline itself is migrated. `schedule_run()` and `release_outputs()` (manual prefetch
    control) are marked with a TODO.
    """

    code = "DM003"
    name = "build-run"
    message = "pipeline plumbing call"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.pipeline_method_sites(PLUMBING_METHODS):
            yield self.finding(site.node, f"`{site.name}.{site.detail}()`")
