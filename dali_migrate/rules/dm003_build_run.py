"""DM003: ``pipe.build()`` / ``pipe.run()`` plumbing."""

from __future__ import annotations

from typing import Iterator

from ..analysis import METHODS_OF_OTHER_RULES, ModuleFacts
from .base import Finding, Rule


class BuildRunPlumbing(Rule):
    """
    ## What it does
    Flags `build()`, `run()`, `schedule_run()`, `outputs()`, `share_outputs()`,
    `release_outputs()`, `reset()` and every other pipeline method that no other rule covers,
    called on a pipeline object: bound to a name or attribute (`self.pipe.reset()`), returned by
    a factory or method (`p = self.make(); p.build()`), or never bound (`train_pipe().build()`),
    and each pipeline of a loop that only builds them (`for p in (train, val): p.build()`).

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
    pipeline itself is migrated. Manual prefetch control (`schedule_run()`, `release_outputs()`)
    is removed too, with a loop that only scheduled (`for _ in range(depth): pipe.schedule_run()`):
    the iterations come out in the order they were scheduled, which is the generator's order.
    A loop that only builds pipelines (`for p in (train, val): p.build()`) builds only those
    that stay in pipeline mode, and goes when none does.
    A `reset()` standing in an `except StopIteration:` handler after the external sources ended
    an epoch (DALI's external-source docs) starts their next epoch: the generator marks where
    the sources end an epoch (`mark_epoch_ends=True`), `run()` reads one epoch at a time from
    `pipe_epoch = iter(pipe.__next__, None)`, and the reset makes that anew. `schedule_run()`
    next to `run()` (which prefetches on its own), a reset elsewhere, of a pipeline made in
    another function or read by a framework iterator too, and other methods keep the pipeline
    in pipeline mode, with a TODO.
    """

    code = "DM003"
    name = "build-run"
    message = "pipeline plumbing call"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.pipeline_method_calls:
            if site.detail not in METHODS_OF_OTHER_RULES:
                yield self.finding(site.node, f"`{site.name}.{site.detail}()`")
        for site in facts.build_loop_sites:
            yield self.finding(site.node, f"`{site.name}.build()` in a loop over pipelines")
