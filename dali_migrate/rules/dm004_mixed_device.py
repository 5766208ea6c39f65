"""DM004: ``device="mixed"``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import ModuleFacts
from .base import Finding, Rule


def is_mixed_device(arg: cst.Arg) -> bool:
    return (
        arg.keyword is not None
        and arg.keyword.value == "device"
        and isinstance(arg.value, cst.SimpleString)
        and arg.value.evaluated_value == "mixed"
    )


class MixedDevice(Rule):
    """
    ## What it does
    Flags `device="mixed"` on a DALI operator.

    ## Why
    `"mixed"` is a pipeline-mode placement (CPU input, GPU output). Dynamic mode says
    `device="gpu"` and picks the hybrid backend itself.

    ## Example
    ```python
    images = fn.decoders.image(jpegs, device="mixed")
    ```

    ## Use instead
    ```python
    images = ndd.decoders.image(jpegs, device="gpu")
    ```

    ## Fix safety
    Safe: the same backend runs.
    """

    code = "DM004"
    name = "mixed-device"
    message = '`device="mixed"` is pipeline-only; use `device="gpu"`'
    fix = "always"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            for arg in call.node.args:
                if is_mixed_device(arg):
                    yield self.finding(arg)
