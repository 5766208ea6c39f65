"""DM009: the legacy object API (``ops.Resize(...)`` and friends)."""

from __future__ import annotations

from typing import Iterator

from ..analysis import ModuleFacts
from ..optable import OPS_PREFIX
from .base import Finding, Rule


class LegacyOpsApi(Rule):
    """
    ## What it does
    Flags operator objects of the legacy API: `ops.readers.File(...)`, `ops.Resize(...)`,
    old names such as `ops.FileReader` and `ops.ImageDecoder`.

    ## Why
    Dynamic mode has no public operator classes: each operator is a function
    (`ndd.resize`), and readers are the only objects (`ndd.readers.File`).

    ## Example
    ```python
    self.decode = ops.ImageDecoder(device="mixed")
    ...
    images = self.decode(jpegs)
    ```

    ## Use instead
    ```python
    images = ndd.decoders.image(jpegs, device="gpu")
    ```

    ## Fix safety
    In a `Pipeline` subclass made of `__init__` (which starts with `super().__init__(...)` and
    sets `self.name = ops.X(...)` or plain values) and `define_graph`, every operator object
    becomes one call per use, its constructor's arguments merged with the call's, and the
    class is migrated as a pipeline (see DM002). Old names (`ops.FileReader`,
    `ops.ImageDecoder`) take their current `fn` form. Operator objects anywhere else, a random
    operator or reader called twice, or a class that does more, keep a TODO naming the ndd
    function.
    """

    code = "DM009"
    name = "legacy-ops"
    message = "legacy `ops` API"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for call in facts.calls:
            if not call.qualname.startswith(OPS_PREFIX) or call.op is None:
                continue
            target = facts.optable.ndd_target(call.op)
            detail = f"use `ndd.{target}`" if target else "no ndd equivalent"
            yield self.finding(call.node, f"`ops.{call.op.ops_class}`, {detail}")
