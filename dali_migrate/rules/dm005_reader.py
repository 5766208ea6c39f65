"""DM005: functional readers (``fn.readers.file``)."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from .base import Finding, Rule


class FunctionalReader(Rule):
    """
    ## What it does
    Flags readers called as functions: `fn.readers.file(...)`, `fn.readers.tfrecord(...)`,
    and deprecated spellings such as `fn.file_reader(...)`.

    ## Why
    Readers are stateful. In dynamic mode they are objects of PascalCase classes
    (`ndd.readers.File`), created once and iterated per epoch with
    `reader.next_epoch(batch_size=...)`. `batch_size`, `preserve` and `bytes_per_sample_hint`
    are not constructor arguments (a TypeError).

    ## Example
    ```python
    jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, seed=7)
    ```

    ## Use instead
    ```python
    reader = ndd.readers.File(file_root=root, random_shuffle=True, seed=7)
    for jpegs, labels in reader.next_epoch(batch_size=batch_size):
        ...
    ```

    ## Fix safety
    Pipeline `run()` and a loop over `next_epoch` give the same batches, across epoch
    boundaries too (checked with and without `pad_last_batch`). With several readers, each
    wraps into its next epoch on its own in pipeline mode, so each becomes an endless stream of
    batches (`itertools.chain` over its epochs) and the streams are zipped. A reader that is
    not assigned at the top of the graph is marked with a TODO.
    """

    code = "DM005"
    name = "functional-reader"
    message = "functional reader; dynamic-mode readers are stateful objects"
    fix = "sometimes"
    safety = "equivalent"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if call.op is not None and call.op.is_reader and call.qualname.startswith("nvidia.dali.fn."):
                target = facts.optable.ndd_target(call.op)
                detail = f"use `ndd.{target}`" if target else "no ndd reader class"
                yield self.finding(call.node, detail)
