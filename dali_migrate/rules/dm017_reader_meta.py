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
    steps = reader.get_metadata()["epoch_size"] // batch_size
    ```

    ## Fix safety
    Not fixed automatically: the reader lives inside the migrated generator. Marked with a
    TODO.
    """

    code = "DM017"
    name = "reader-meta"
    message = "reader metadata through the pipeline; use `reader.get_metadata()`"
    fix = "never"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for site in facts.pipeline_method_sites(frozenset({"epoch_size", "reader_meta"})):
            yield self.finding(site.node, f"`{site.name}.{site.detail}()`")
