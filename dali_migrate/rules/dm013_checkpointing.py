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
    Dynamic mode checkpoints readers, not pipelines: `ndd.checkpoint.Checkpoint` registers each
    reader (`register(reader, name)`), then `collect()`/`save(path)`/`load(path)`. Pipeline
    checkpoint bytes do not load into ndd readers.

    ## Example
    ```python
    pipe = train_pipe(enable_checkpointing=True)
    state = pipe.checkpoint()
    ```

    ## Use instead
    ```python
    ckpt = ndd.checkpoint.Checkpoint()
    ckpt.register(reader, "train")
    ckpt.save("ckpt_{}.json")
    ```

    ## Fix safety
    Not fixed automatically; old checkpoints cannot be carried over. Marked with a TODO.
    """

    code = "DM013"
    name = "checkpointing"
    message = "pipeline checkpointing; use `ndd.checkpoint.Checkpoint`"
    fix = "never"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for arg in facts.pipeline_arguments():
            if keyword_is_true(arg, "enable_checkpointing") or keyword_is_true(arg, "checkpoint"):
                yield self.finding(arg)
        for site in facts.pipeline_method_sites(frozenset({"checkpoint"})):
            yield self.finding(site.node, f"`{site.name}.checkpoint()`")
