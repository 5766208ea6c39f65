"""DM022: EvalContext held across yield."""

from __future__ import annotations

from .base import ValueRule


class ContextAcrossYield(ValueRule):
    """
    ## What it does
    Flags a `yield` inside `with <ndd.EvalContext>:`.

    ## Why
    `EvalContext` is a thread-local stack. Held across `yield`, it stays current for the caller
    and for other generators; when two of them (train and validation) interleave, they leave it
    out of order (`AssertionError` in `EvalContext.__exit__`) and one runs on the other's device.

    ## Example
    ```python
    with ndd.EvalContext(device_id=device_id):
        for jpegs, labels in reader.next_epoch(batch_size=batch_size):
            yield ndd.decoders.image(jpegs), labels
    ```

    ## Use instead
    ```python
    context = ndd.EvalContext(device_id=device_id)
    for jpegs, labels in reader.next_epoch(batch_size=batch_size):
        with context:
            images = ndd.decoders.image(jpegs)
        yield images, labels
    ```

    ## Fix safety
    Not fixed: reported for a person.
    """

    code = "DM022"
    name = "context-across-yield"
    message = "EvalContext held across yield"
