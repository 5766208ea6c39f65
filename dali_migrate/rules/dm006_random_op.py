"""DM006: random operators that rely on the pipeline's batch size and seed."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule


class RandomOpBatchSize(Rule):
    """
    ## What it does
    Flags random operators (`fn.random.*`, `fn.random_resized_crop`, `fn.noise.*`, ... as the
    op table marks them) in pipeline code.

    ## Why
    In a pipeline, a random op inherits the batch size and its random stream from the pipeline
    (`seed=`). Dynamic mode has no pipeline to inherit from: an op without data inputs needs an
    explicit `batch_size=`, and reproducibility needs an explicit `rng=ndd.random.RNG(seed)`.

    ## Example
    ```python
    flip = fn.random.coin_flip(probability=0.5)
    ```

    ## Use instead
    ```python
    rng = ndd.random.RNG(seed=seed)  # once, from the pipeline seed
    flip = ndd.random.coin_flip(probability=0.5, batch_size=batch_size, rng=rng)
    ```

    ## Fix safety
    The migrated code is reproducible, but an RNG seeded with S draws different numbers than a
    pipeline seeded with S. `dali-migrate verify` aligns the two streams to compare exactly.
    """

    code = "DM006"
    name = "random-op"
    message = "random op needs an explicit `batch_size=` and `rng=` in dynamic mode"
    fix = "always"
    safety = "equivalent"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.op is not None and call.op.random and call.qualname.startswith("nvidia.dali.fn."):
                yield self.finding(call.node, f"`fn.{call.op.fn}`")
