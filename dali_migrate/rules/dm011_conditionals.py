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
    `if` on a Batch is decided once for the whole batch, and an ndd Tensor has no truth value
    of its own (`bool()` of a False Tensor is True), which silently gives other data.

    ## Example
    ```python
    @pipeline_def(enable_conditionals=True)
    def pipe():
        ...
        if brightness > 100:
            images = fn.flip(images, vertical=1)
        return images
    ```

    ## Use instead
    ```python
    def per_sample_if(brightness, images):  # one sample
        if bool(np.asarray(brightness > 100)):
            images = ndd.flip(images, vertical=1)
        return images
    images = ndd.batch([per_sample_if(*sample) for sample in zip(brightness, images)])
    ```

    ## Fix safety
    Fixed for `if`/`elif`/`else` statements at the top level of the graph, nested `if`s and
    `and`/`or`/`not` in their conditions included: operators give the same values on one
    sample as on a batch. A random operator in the top-level `if`'s own condition draws for
    every sample in both modes: the condition is computed for the batch before the function.
    Left with a TODO: random operators or readers inside a branch or an `elif` condition
    (pipeline mode draws only for the samples that reach it), `and`/`or`/`not` on DataNodes
    outside an `if`, `return` inside a branch, GPU operators inside a branch, and an `if` on
    a DataNode without `enable_conditionals=True`.
    """

    code = "DM011"
    name = "conditionals"
    message = "`enable_conditionals=True`: `if` on DataNodes is per-sample"
    fix = "sometimes"

    def check(self, facts: ModuleFacts) -> Iterator[Finding]:
        for arg in facts.pipeline_arguments():
            if keyword_is_true(arg, "enable_conditionals"):
                yield self.finding(arg)
