"""DM013: pipeline checkpointing."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule
from .dm011_conditionals import keyword_is_true


class Checkpointing(Rule):
    """
    ## What it does
    Flags `enable_checkpointing=True`, `checkpoint=` restores and `pipe.checkpoint()`.

    ## Why
    Dynamic mode checkpoints readers and RNGs, not pipelines: `ndd.checkpoint.Checkpoint`
    registers each of them (`register(reader, name)`), then `collect()` and `serialize()`, or
    `deserialize(state)` before the first epoch to resume. Pipeline checkpoint bytes do not load
    into ndd readers.

    ## Example
    ```python
    pipe = train_pipe(root, enable_checkpointing=True)
    state = pipe.checkpoint()
    resumed = train_pipe(root, enable_checkpointing=True, checkpoint=state)
    ```

    ## Use instead
    ```python
    pipe_checkpoint = ndd.checkpoint.Checkpoint()
    pipe = train_pipe(root, checkpoint=pipe_checkpoint)
    pipe_checkpoint.collect()
    state = pipe_checkpoint.serialize()
    resumed_checkpoint = ndd.checkpoint.Checkpoint()
    resumed_checkpoint.deserialize(state)
    resumed = train_pipe(root, checkpoint=resumed_checkpoint)
    ```
    The migrated generator takes `checkpoint=None` and registers its readers and RNGs with it
    before its first epoch.

    ## Fix safety
    Fixed where each checkpointed pipeline is created by `pipe = f(...)` in the function that
    calls `state = pipe.checkpoint()`. A restore from a state this module did not make gets a
    TODO: checkpoints saved by pipeline mode do not load. `pipe.checkpoint(filename)`,
    pipelines with `external_source` (ndd keeps no state of the source) and restored pipelines
    not bound to a name keep their pipeline, with a TODO.
    """

    code = "DM013"
    name = "checkpointing"
    message = "pipeline checkpointing; use `ndd.checkpoint.Checkpoint`"
    fix = "sometimes"
    safety = "behaviour change"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for arg in facts.pipeline_arguments():
            if keyword_is_true(arg, "enable_checkpointing") or keyword_is_true(arg, "checkpoint"):
                yield self.finding(arg)
        for site in facts.pipeline_method_sites(frozenset({"checkpoint"})):
            yield self.finding(site.node, f"`{site.name}.checkpoint()`")
