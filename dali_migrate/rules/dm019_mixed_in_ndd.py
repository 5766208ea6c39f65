"""DM019: device="mixed" in a dynamic-mode call."""

from __future__ import annotations

from .base import ValueRule


class MixedDeviceInNdd(ValueRule):
    """
    ## What it does
    Flags `device="mixed"` given to an ndd operator.

    ## Why
    `"mixed"` is a pipeline-mode device; `ndd.Device("mixed")` raises `ValueError: Invalid device
    type: mixed`. In dynamic mode `device="gpu"` selects the same hardware decoder.

    ## Example
    ```python
    images = ndd.decoders.image(jpegs, device="mixed")
    ```

    ## Use instead
    ```python
    images = ndd.decoders.image(jpegs, device="gpu")
    ```

    ## Fix safety
    Not fixed by `check`; `migrate` writes `"gpu"` for the pipelines it migrates.
    """

    code = "DM019"
    name = "mixed-in-ndd"
    message = "device=\"mixed\" in a dynamic-mode call"
