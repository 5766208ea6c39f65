"""DM011: ``enable_conditionals=True``."""

from __future__ import annotations

from typing import Iterator

import libcst as cst

from ..analysis import ModuleFacts
from .base import Finding, Rule


def keyword_is_true(arg: cst.Arg, keyword: str) -> bool:
    return (
        arg.keyword is not None
        and arg.keyword.value == keyword
        and not (isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None"))
    )


class Conditionals(Rule):
    """
    ## What it does
    Flags pipelines built with `enable_conditionals=True`.

    ## Why
    With conditionals, an `if` on a DataNode is decided per sample. In dynamic mode a Python
    `if` on a Batch is decided once for the whole batch, which silently gives other data.

    ## Example
    ```python
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = fn.random.uniform(range=[0, 1])
        if x > 0.5:
            x = x * 2
        return x
    ```

    ## Use instead
    A per-sample loop, or masking: `x = x * (1 + (x > 0.5))`.

    ## Fix safety
    Not fixed automatically; the pipeline keeps its form and is marked with a TODO.
    """

    code = "DM011"
    name = "conditionals"
    message = "`enable_conditionals=True`: `if` on DataNodes is per-sample"
    fix = "never"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for arg in facts.pipeline_arguments():
            if keyword_is_true(arg, "enable_conditionals"):
                yield self.finding(arg)
