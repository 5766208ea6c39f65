"""DM017: ``epoch_size`` / ``reader_meta`` lookups by reader name."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule


class ReaderMeta(Rule):
    """
    ## What it does
    Flags `pipe.epoch_size(...)` and `pipe.reader_meta(...)`.

    ## Why
    In dynamic mode the reader object itself answers: `reader.get_metadata()` gives
    `epoch_size`, `epoch_size_padded`, `number_of_shards`, `shard_id`, ... An ndd epoch ends on
    its own, so loops over `range(epoch_size // batch_size)` become loops over
    `reader.next_epoch(...)`.

    ## Example
    ```python
    steps = pipe.epoch_size("Reader") // batch_size
    ```

    ## Use instead
    ```python
    pipe = train(root, batch_size=batch_size, yield_reader_meta=True)
    pipe_reader_meta = next(pipe)  # the pipeline's own reader's get_metadata()
    steps = pipe_reader_meta["epoch_size_padded"] // batch_size
    ```
    `pipe.epoch_size(name)` is the *padded* epoch size (`epoch_size_padded`), which differs
    from `epoch_size` when shards are padded.

    ## Fix safety
    The reader lives inside the migrated generator: the callers that look its metadata up pass
    `yield_reader_meta=True`, and the generator's first `next()` gives the reader's
    `get_metadata()` (the reader is made with `max_batch_size=batch_size`, so that it can
    answer before its first epoch and still give the same batches). It does so where the
    lookup is in the function that creates the pipeline and the reader name matches the
    reader's `name=`. A pipeline defined in another module gets a second reader with the same
    arguments at the call, where those are the pipeline's parameters bound to plain names or
    literals. Anything else is marked with a TODO that says which condition failed.
    """

    code = "DM017"
    name = "reader-meta"
    message = "reader metadata through the pipeline; use `reader.get_metadata()`"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.pipeline_method_sites(frozenset({"epoch_size", "reader_meta"})):
            yield self.finding(site.node, f"`{site.name}.{site.detail}()`")
