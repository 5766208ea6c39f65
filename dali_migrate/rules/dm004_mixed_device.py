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


def _device_names(calls) -> set[str]:
    return {arg.value.value for call in calls for arg in call.node.args
            if arg.keyword is not None and arg.keyword.value == "device" and isinstance(arg.value, cst.Name)}


class _MixedAssigned(cst.CSTVisitor):
    """``decoder_device = "cpu" if dali_cpu else "mixed"``: the "mixed" strings given to names."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.strings: list[cst.SimpleString] = []
        self.assigned: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
        if targets & self.names:
            found = _MixedStrings()
            node.value.visit(found)
            self.strings += found.strings
            self.assigned |= targets & self.names if found.strings else set()


class _MixedStrings(cst.CSTVisitor):
    def __init__(self) -> None:
        self.strings: list[cst.SimpleString] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value == "mixed":
            self.strings.append(node)


def mixed_device_strings(function: cst.CSTNode, calls) -> tuple[list[cst.SimpleString], set[str]]:
    """The "mixed" literals a graph assigns to names it passes as ``device=``, and those names."""
    names = _device_names(calls)
    if not names:  # the common case: no walk over the graph
        return [], set()
    visitor = _MixedAssigned(names)
    function.visit(visitor)
    return visitor.strings, visitor.assigned


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

    Also flags `"mixed"` given to a variable that the graph passes as `device=`
    (`decoder_device = "cpu" if dali_cpu else "mixed"`).

    ## Fix safety
    Safe: the same backend runs. A variable that holds `"mixed"` is fixed where the graph uses
    it only as `device=`; otherwise the pipeline keeps a TODO.
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
        for graph in facts.graphs:
            strings, _ = mixed_device_strings(graph.node, [c for c in facts.calls if c.graph is graph])
            yield from (self.finding(string) for string in strings)
