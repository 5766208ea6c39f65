"""DM016: per-operator arguments that only mean something in a pipeline."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule

PIPELINE_ONLY_ARGS = ("preserve", "bytes_per_sample_hint")


class PipelineOnlyOpArguments(Rule):
    """
    ## What it does
    Flags `preserve=`, `bytes_per_sample_hint=` on any op, `seed=` on ops other than readers
    and `name=` on ops.

    ## Why
    ndd rejects `preserve` and `bytes_per_sample_hint` (a TypeError); a random op's stream
    comes from `rng=`, not `seed=`, and any other op ignores a seed (DALI warns so) where ndd
    rejects it (a TypeError); `name=` only served pipeline lookups (`reader_name=`,
    `epoch_size("Reader")`).

    ## Example
    ```python
    flip = fn.random.coin_flip(probability=0.5, seed=123, preserve=True)
    ```

    ## Use instead
    ```python
    flip = ndd.random.coin_flip(probability=0.5, batch_size=batch_size,
                                rng=ndd.random.RNG(seed=123))
    ```

    ## Fix safety
    `preserve`, `bytes_per_sample_hint`, `name` and a seed of an op that draws no random
    numbers are dropped (no effect on data). A random
    op's `seed=S` becomes its own `rng=ndd.random.RNG(seed=S)`, created once; the numbers differ
    from the pipeline's, as for every migrated random op.
    """

    code = "DM016"
    name = "pipeline-only-op-args"
    message = "argument without meaning in dynamic mode"
    fix = "always"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.op is None or not call.qualname.startswith("nvidia.dali.fn."):
                continue
            for arg in call.node.args:
                if arg.keyword is None:
                    continue
                keyword = arg.keyword.value
                if keyword in PIPELINE_ONLY_ARGS or keyword == "name":
                    yield self.finding(arg, f"`{keyword}=` (the migration drops it)")
                elif keyword == "seed" and call.op.random:
                    yield self.finding(arg, "`seed=` becomes `rng=ndd.random.RNG(seed=...)`")
                elif keyword == "seed" and call.op.kind != "reader":
                    yield self.finding(arg, "`seed=` on an operator that draws no random numbers, which DALI "
                                            "ignores and ndd rejects (the migration drops it)")
