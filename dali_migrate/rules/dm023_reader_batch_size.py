"""DM023: batch_size given to an ndd reader constructor."""

from __future__ import annotations

from .base import ValueRule


class ReaderBatchSize(ValueRule):
    """
    ## What it does
    Flags `batch_size=` passed to an `ndd.readers.*` constructor.

    ## Why
    Dynamic-mode readers take the batch size per epoch; in the constructor it is a TypeError.

    ## Example
    ```python
    reader = ndd.readers.File(file_root=root, batch_size=32)
    ```

    ## Use instead
    ```python
    reader = ndd.readers.File(file_root=root)
    for jpegs, labels in reader.next_epoch(batch_size=32):
        ...
    ```

    ## Fix safety
    Not fixed: reported for a person.
    """

    code = "DM023"
    name = "reader-batch-size"
    message = "batch_size given to an ndd reader constructor"
